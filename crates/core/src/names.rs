//! Container names, checked before they become paths.
//!
//! Kubernetes requires every container name to be a DNS-1123 label (at most 63 lowercase
//! alphanumerics or `-`, starting and ending with an alphanumeric). The executor turns names
//! into paths (`/var/run/argo/ctr/<name>/`), so a name such as `../x`, `a/b` or `.` must be
//! refused *before* any path is built from it: the pod builder refuses such a template, the
//! emissary wrapper refuses such an `ARGO_CONTAINER_NAME`, and init/wait refuse a template
//! naming such a container.

use crate::template::{INIT, Template, WAIT};

/// Longest DNS-1123 label.
pub const MAX_LABEL: usize = 63;

/// A name that cannot be a container name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid container name {name:?} ({role}): {reason}")]
pub struct InvalidName {
    /// The name as given.
    pub name: String,
    /// Where it came from (`ARGO_CONTAINER_NAME`, `containerSet.containers[1]`, …).
    pub role: String,
    /// Why it is refused.
    pub reason: String,
}

/// Why `name` is not a DNS-1123 label, or `None` when it is one.
pub fn label_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if name.len() > MAX_LABEL {
        return Some(format!("must be no more than {MAX_LABEL} characters"));
    }
    let ok_char = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = name.as_bytes();
    if !b.iter().all(|c| ok_char(*c) || *c == b'-') || !ok_char(b[0]) || !ok_char(b[b.len() - 1]) {
        return Some(
            "a container name must be a lowercase RFC 1123 label: lower case alphanumeric characters or '-', \
             starting and ending with an alphanumeric character (regex '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .into(),
        );
    }
    None
}

/// Check one container name.
///
/// # Errors
/// [`InvalidName`] naming `role` and the rule broken.
pub fn check_container_name(name: &str, role: &str) -> Result<(), InvalidName> {
    match label_problem(name) {
        None => Ok(()),
        Some(reason) => Err(InvalidName {
            name: name.to_string(),
            role: role.to_string(),
            reason,
        }),
    }
}

/// Check every container name a template gives: container-set containers (and the names
/// their `dependencies` refer to) and sidecars. They must be DNS-1123 labels, unique, and
/// not `init` or `wait` (the executor's own containers). A plain container or script main
/// is always named `main` whatever its `name` says, so that name is not checked.
///
/// # Errors
/// The first [`InvalidName`].
pub fn check_template(t: &Template) -> Result<(), InvalidName> {
    let mut seen: Vec<String> = Vec::new();
    let mut check = |n: &str, role: String| -> Result<(), InvalidName> {
        check_container_name(n, &role)?;
        let reserved = n == INIT || n == WAIT;
        if reserved || seen.iter().any(|s| s == n) {
            return Err(InvalidName {
                name: n.to_string(),
                role,
                reason: if reserved {
                    "the names init and wait belong to the executor's own containers".into()
                } else {
                    "another container of the template has the same name".into()
                },
            });
        }
        seen.push(n.to_string());
        Ok(())
    };
    match &t.container_set {
        Some(cs) => {
            for (i, c) in cs.containers.iter().enumerate() {
                check(&c.container.name, format!("containerSet.containers[{i}].name"))?;
            }
            for (i, c) in cs.containers.iter().enumerate() {
                for (j, d) in c.dependencies.iter().enumerate() {
                    check_container_name(d, &format!("containerSet.containers[{i}].dependencies[{j}]"))?;
                }
            }
        }
        None => check(crate::template::MAIN, "main".into())?,
    }
    for (i, s) in t.sidecars.iter().enumerate() {
        check(&s.container.name, format!("sidecars[{i}].name"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        for ok in ["main", "a", "a-b", "0", "x1-2y", &"a".repeat(63)] {
            assert_eq!(label_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            ".",
            "..",
            "A",
            "-a",
            "a-",
            "a_b",
            "a.b",
            &"a".repeat(64),
        ] {
            assert!(label_problem(bad).is_some(), "{bad:?} accepted");
        }
        let e = check_container_name("../x", "ARGO_CONTAINER_NAME")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"../x\"") && e.contains("ARGO_CONTAINER_NAME") && e.contains("RFC 1123"),
            "{e}"
        );
    }

    #[test]
    fn templates() {
        let t = |j: &str| Template::from_json(j).unwrap();
        assert!(check_template(&t(r#"{"container": {"name": "Not/A/Label", "image": "x"}}"#)).is_ok());
        let cs = |names: &str| {
            t(&format!(
                r#"{{"containerSet": {{"containers": [{names}]}}, "sidecars": [{{"name": "side", "image": "x"}}]}}"#
            ))
        };
        assert!(
            check_template(&cs(
                r#"{"name": "a", "image": "x"}, {"name": "b", "image": "x", "dependencies": ["a"]}"#
            ))
            .is_ok()
        );
        for (names, needle) in [
            (
                r#"{"name": "a/b", "image": "x"}"#,
                "containerSet.containers[0].name",
            ),
            (
                r#"{"name": "a", "image": "x"}, {"name": ".", "image": "x"}"#,
                "containerSet.containers[1].name",
            ),
            (r#"{"name": "wait", "image": "x"}"#, "executor's own"),
            (
                r#"{"name": "a", "image": "x"}, {"name": "a", "image": "x"}"#,
                "same name",
            ),
            (r#"{"name": "side", "image": "x"}"#, "same name"),
            (
                r#"{"name": "a", "image": "x", "dependencies": ["../b"]}"#,
                "dependencies[0]",
            ),
        ] {
            let e = check_template(&cs(names)).unwrap_err().to_string();
            assert!(e.contains(needle), "{names}: {e}");
        }
        let e = check_template(&t(
            r#"{"container": {"image": "x"}, "sidecars": [{"name": "../x", "image": "x"}]}"#,
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("sidecars[0].name"), "{e}");
        let e = check_template(&t(
            r#"{"container": {"image": "x"}, "sidecars": [{"name": "main", "image": "x"}]}"#,
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("same name"), "{e}");
    }
}
