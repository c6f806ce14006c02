//! `template.resource.flags`: the kubectl flags Argo users pass, parsed into [`Flags`].
//!
//! Argo appends them to its embedded kubectl's command line; here each supported flag maps
//! onto the API call, and any other flag is refused naming it (rather than silently ignored).
//! Words that are not flags are resource references, as kubectl reads them:
//! `TYPE NAME…`, `TYPE/NAME…` or `TYPE` with `--selector` (Argo's examples patch
//! `pod {{pod.name}}` and delete `configmap --selector …`).

use crate::ResourceError;

/// `--dry-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    /// Act.
    #[default]
    None,
    /// `--dry-run=server`: the API server validates and answers, nothing is stored.
    Server,
}

/// `--validate`, as the API server's `fieldValidation` (applied on patch and apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Validate {
    /// `--validate` / `=true` / `=strict` (kubectl's default).
    #[default]
    Strict,
    /// `=warn`.
    Warn,
    /// `=false` / `=ignore`.
    Ignore,
}

/// The parsed flags.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Flags {
    /// `-n`, `--namespace`.
    pub namespace: Option<String>,
    /// `--server-side` (apply).
    pub server_side: bool,
    /// `--force-conflicts` (server-side apply).
    pub force_conflicts: bool,
    /// `--field-manager`.
    pub field_manager: Option<String>,
    /// `--validate`.
    pub validate: Validate,
    /// `--dry-run`.
    pub dry_run: DryRun,
    /// `--ignore-not-found` (get; delete always ignores a missing object, as Argo passes it).
    pub ignore_not_found: bool,
    /// `-l`, `--selector`.
    pub selector: Option<String>,
    /// `--cascade`: background (default), foreground or orphan.
    pub cascade: Option<String>,
    /// `--grace-period`.
    pub grace_period: Option<u32>,
    /// `--wait` (delete; default true: wait until the objects are gone).
    pub wait: bool,
    /// `--save-config` (create: record the last-applied annotation).
    pub save_config: bool,
    /// The non-flag words (resource references).
    pub args: Vec<String>,
}

fn parse_bool(flag: &str, v: &str) -> Result<bool, ResourceError> {
    argoexec_core::env::parse_bool(v).ok_or_else(|| ResourceError::Flag {
        flag: flag.to_string(),
        reason: format!("{v:?} is not a boolean"),
    })
}

fn bad(flag: &str, reason: impl Into<String>) -> ResourceError {
    ResourceError::Flag {
        flag: flag.to_string(),
        reason: reason.into(),
    }
}

const BOOLS: &[&str] = &[
    "server-side",
    "force-conflicts",
    "overwrite",
    "ignore-not-found",
    "wait",
    "save-config",
    "record",
];

impl Flags {
    /// Parse the template's flags.
    ///
    /// # Errors
    /// [`ResourceError::Flag`] naming an unsupported flag or a bad value.
    pub fn parse(words: &[String]) -> Result<Self, ResourceError> {
        let mut f = Flags {
            wait: true,
            ..Default::default()
        };
        let mut it = words.iter();
        while let Some(word) = it.next() {
            let Some(body) = word.strip_prefix('-').filter(|b| !b.is_empty()) else {
                f.args.push(word.clone());
                continue;
            };
            let body = body.strip_prefix('-').unwrap_or(body);
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let name = match name {
                "n" => "namespace",
                "l" => "selector",
                other => other,
            };
            if BOOLS.contains(&name) || name == "validate" || name == "dry-run" {
                f.set_bool_like(word, name, inline.as_deref())?;
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => it.next().cloned().ok_or_else(|| bad(word, "needs a value"))?,
            };
            match name {
                "namespace" => f.namespace = Some(value),
                "field-manager" => f.field_manager = Some(value),
                "selector" => f.selector = Some(value),
                "cascade" => match value.as_str() {
                    "background" | "true" => f.cascade = Some("Background".into()),
                    "foreground" => f.cascade = Some("Foreground".into()),
                    "orphan" | "false" => f.cascade = Some("Orphan".into()),
                    _ => return Err(bad(word, "expected background, foreground or orphan")),
                },
                "grace-period" => {
                    let n: i64 = value.parse().map_err(|_| bad(word, "not a number of seconds"))?;
                    // kubectl: negative means the object's default.
                    f.grace_period = u32::try_from(n).ok();
                }
                _ => return Err(unsupported(word)),
            }
        }
        Ok(f)
    }

    fn set_bool_like(&mut self, word: &str, name: &str, v: Option<&str>) -> Result<(), ResourceError> {
        match name {
            "validate" => {
                self.validate = match v.unwrap_or("strict") {
                    "true" | "strict" => Validate::Strict,
                    "warn" => Validate::Warn,
                    "false" | "ignore" => Validate::Ignore,
                    _ => return Err(bad(word, "expected true, false, strict, warn or ignore")),
                };
            }
            "dry-run" => {
                self.dry_run = match v.unwrap_or("client") {
                    "none" => DryRun::None,
                    "server" => DryRun::Server,
                    _ => {
                        return Err(bad(
                            word,
                            "client-side dry run is not supported (nothing would exist to wait for or read outputs from); use --dry-run=server",
                        ));
                    }
                };
            }
            _ => {
                let on = match v {
                    None => true,
                    Some(v) => parse_bool(word, v)?,
                };
                match name {
                    "server-side" => self.server_side = on,
                    "force-conflicts" => self.force_conflicts = on,
                    "ignore-not-found" => self.ignore_not_found = on,
                    "wait" => self.wait = on,
                    "save-config" => self.save_config = on,
                    // --overwrite (apply: always overwrites) and --record (deprecated) change nothing.
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

fn unsupported(word: &str) -> ResourceError {
    bad(
        word,
        "not supported by argoexec-rs's resource templates (supported: --namespace/-n, --server-side, \
         --force-conflicts, --field-manager, --validate, --dry-run=server, --ignore-not-found, --selector/-l, \
         --cascade, --grace-period, --wait, --save-config, --overwrite, --record)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Result<Flags, ResourceError> {
        Flags::parse(&words.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn common_flags() {
        let f = p(&[
            "--validate=false",
            "--server-side",
            "--force-conflicts=true",
            "--field-manager",
            "me",
            "-n",
            "team",
            "--overwrite",
            "--dry-run=server",
            "--ignore-not-found",
        ])
        .unwrap();
        assert_eq!(f.validate, Validate::Ignore);
        assert!(f.server_side && f.force_conflicts && f.ignore_not_found);
        assert_eq!(f.field_manager.as_deref(), Some("me"));
        assert_eq!(f.namespace.as_deref(), Some("team"));
        assert_eq!(f.dry_run, DryRun::Server);
        assert!(f.wait, "delete waits by default");
        let f = p(&[
            "configmap",
            "--selector",
            "app=x",
            "--cascade=orphan",
            "--grace-period=0",
            "--wait=false",
        ])
        .unwrap();
        assert_eq!(f.args, ["configmap"]);
        assert_eq!(f.selector.as_deref(), Some("app=x"));
        assert_eq!(f.cascade.as_deref(), Some("Orphan"));
        assert_eq!(f.grace_period, Some(0));
        assert!(!f.wait);
        let f = p(&["pod", "my-pod", "--namespace=other", "-l", "a=b"]).unwrap();
        assert_eq!(f.args, ["pod", "my-pod"]);
        assert_eq!(f.namespace.as_deref(), Some("other"));
        assert_eq!(f.selector.as_deref(), Some("a=b"));
    }

    #[test]
    fn refused_flags_are_named() {
        for (words, flag) in [
            (&["--force"][..], "--force"),
            (&["-o", "yaml"][..], "-o"),
            (&["--server-side=maybe"][..], "--server-side=maybe"),
            (&["--dry-run=client"][..], "--dry-run=client"),
            (&["--dry-run"][..], "--dry-run"),
            (&["--namespace"][..], "--namespace"),
            (&["--kubeconfig=/x"][..], "--kubeconfig=/x"),
            (&["--cascade=sideways"][..], "--cascade=sideways"),
        ] {
            let e = p(words).unwrap_err();
            assert!(
                matches!(&e, ResourceError::Flag { flag: f, .. } if f == flag),
                "{words:?}: {e}"
            );
            assert!(e.to_string().contains(flag), "{e}");
        }
    }
}
