//! The `workflows.argoproj.io/kill-cmd-<container>` pod annotation: the command that is
//! exec'd into a container to signal it, instead of the default
//! (`/var/run/argo/argoexec kill N 1`, or `/bin/sh -c "kill -N 1"`).
//!
//! The value is a JSON array of strings. As in Argo, every `%d` in an argument is replaced by
//! the signal number (15 for SIGTERM, then 9 for SIGKILL after the grace period). A command
//! with no `%d` is run **as is** for both signals — a documented, deliberate behaviour (a
//! sidecar's own shutdown command, e.g. `["/usr/bin/envoy-shutdown"]`, needs no number) —
//! and [`KillCommand::substituted`] is false so callers can warn that SIGKILL will run the
//! same command. A value that is not a non-empty JSON array of strings is an error naming the
//! annotation: the command the user asked for cannot be run, and guessing another is worse.

use std::collections::BTreeMap;

/// The annotation key prefix; the container name follows.
pub const KILL_CMD_PREFIX: &str = "workflows.argoproj.io/kill-cmd-";

/// A kill command from the annotation, ready to exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillCommand {
    /// The argv, `%d` replaced.
    pub argv: Vec<String>,
    /// Whether any `%d` was replaced (false: the same command for every signal).
    pub substituted: bool,
}

/// A malformed kill-command annotation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "annotation {key}: {reason} (expected a JSON array of strings such as [\"/bin/sh\", \"-c\", \"kill -%d 1\"]), got {value:?}"
)]
pub struct KillCmdError {
    /// The annotation key.
    pub key: String,
    /// The value as given.
    pub value: String,
    /// What is wrong.
    pub reason: String,
}

/// The kill command for `container` and `signal` from the pod's annotations, or `None` when
/// the container has no annotation.
///
/// # Errors
/// [`KillCmdError`] when the annotation is not a non-empty JSON array of strings.
pub fn kill_command(
    annotations: &BTreeMap<String, String>,
    container: &str,
    signal: i32,
) -> Result<Option<KillCommand>, KillCmdError> {
    let key = format!("{KILL_CMD_PREFIX}{container}");
    let Some(value) = annotations.get(&key) else {
        return Ok(None);
    };
    let bad = |reason: String| KillCmdError {
        key: key.clone(),
        value: value.clone(),
        reason,
    };
    let argv: Vec<String> =
        serde_json::from_str(value).map_err(|e| bad(format!("not a JSON array of strings: {e}")))?;
    if argv.first().is_none_or(|a| a.is_empty()) {
        return Err(bad("the command is empty".into()));
    }
    let n = signal.to_string();
    let substituted = argv.iter().any(|a| a.contains("%d"));
    Ok(Some(KillCommand {
        argv: argv.into_iter().map(|a| a.replace("%d", &n)).collect(),
        substituted,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(ctr: &str, v: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(format!("{KILL_CMD_PREFIX}{ctr}"), v.to_string())])
    }

    #[test]
    fn substitution_and_commands_without_a_number() {
        let a = ann("side", r#"["/bin/sh", "-c", "kill -%d 1; echo %d"]"#);
        assert_eq!(
            kill_command(&a, "main", 15),
            Ok(None),
            "another container's annotation"
        );
        let k = kill_command(&a, "side", 9).unwrap().unwrap();
        assert_eq!(k.argv, ["/bin/sh", "-c", "kill -9 1; echo 9"]);
        assert!(k.substituted);
        let a = ann("side", r#"["/bin/stop-gracefully", "--now"]"#);
        for sig in [15, 9] {
            let k = kill_command(&a, "side", sig).unwrap().unwrap();
            assert_eq!(k.argv, ["/bin/stop-gracefully", "--now"], "run as is for {sig}");
            assert!(!k.substituted);
        }
    }

    #[test]
    fn malformed_values_name_the_annotation() {
        for (v, why) in [
            ("kill -%d 1", "not a JSON array"),
            (r#"{"cmd": "x"}"#, "not a JSON array"),
            ("[1, 2]", "not a JSON array"),
            ("[]", "empty"),
            (r#"[""]"#, "empty"),
        ] {
            let e = kill_command(&ann("side", v), "side", 15).unwrap_err().to_string();
            assert!(
                e.contains("annotation workflows.argoproj.io/kill-cmd-side") && e.contains(why),
                "{v}: {e}"
            );
        }
    }
}
