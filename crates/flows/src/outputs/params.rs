//! Output parameters from `valueFrom.path`.
//!
//! Base-layer paths are read through the seam, volume paths through the `/mainctrfs` mirror,
//! resolved *in root* there (`openat2(RESOLVE_IN_ROOT)`): `..` and symlinks resolve as they
//! do in main's mount layout, so a link to `/etc/shadow` or `../../etc/passwd` inside a volume
//! can never reach the wait container's own files — its target is looked for among main's
//! volumes and is "not found" when it lies on main's image layer instead.
//!
//! Every path follows [`argoexec_core::param_file`]: only a regular file of at most 1 MiB is a
//! value, opened without blocking (a FIFO is refused at once), never read past the limit; all
//! values of a step together are bounded by the same limit. Bytes that are not UTF-8 are kept
//! as Argo keeps them (each invalid byte becomes U+FFFD) with a warning naming the parameter.
//!
//! When the file is missing or unreadable the parameter's `valueFrom.default` is used (it may
//! be `""`); without one the step fails with an error naming the parameter and the path. A
//! file that exists but cannot be a value (wrong type, too large) fails the step even when
//! there is a default: the default stands for "no output", not for a broken one. One
//! trailing newline is trimmed. Parameters without `valueFrom.path` are left as they are.

use std::path::Path;

use argoexec_core::param_file::{self, MAX_PARAMETER_BYTES, ParamFileError};
use argoexec_core::template::{MAIN, Parameter};
use argoexec_runtime::{ErrorKind, RuntimeExecutor};

use crate::{FlowError, StepContext, blocking};

/// Why a parameter file could not be read.
struct ReadError {
    /// `true` for a file that exists but cannot be a value (no default applies).
    invalid: bool,
    message: String,
}

/// Resolve every output parameter. Returns the resolved parameters and the errors of those
/// that could not be resolved (those are left out).
pub async fn capture<R: RuntimeExecutor>(ctx: &StepContext, runtime: &R) -> (Vec<Parameter>, Vec<FlowError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in &ctx.template.outputs.parameters {
        let Some(path) = p.value_from.as_ref().and_then(|v| v.path.clone()) else {
            out.push(p.clone());
            continue;
        };
        match read(ctx, runtime, Path::new(&path)).await {
            Ok(bytes) => {
                let (value, bad) = param_file::to_value(&bytes);
                if let Some(at) = bad {
                    tracing::warn!(
                        parameter = %p.name, %path, offset = at,
                        "output parameter file is not valid UTF-8; each invalid byte becomes U+FFFD, as in Argo"
                    );
                }
                let mut p = p.clone();
                p.value = Some(super::trim_one_newline(value));
                out.push(p);
            }
            Err(e) => match p.value_from.as_ref().and_then(|v| v.default.clone()) {
                Some(default) if !e.invalid => {
                    tracing::info!(parameter = %p.name, %path, reason = %e.message, "using the parameter's default");
                    let mut p = p.clone();
                    p.value = Some(default);
                    out.push(p);
                }
                _ => errors.push(FlowError::OutputParameter {
                    name: p.name.clone(),
                    message: e.message,
                }),
            },
        }
    }
    if let Some(e) = over_total(&out) {
        errors.push(e);
    }
    (out, errors)
}

/// The step's parameters together must fit the task result too.
fn over_total(params: &[Parameter]) -> Option<FlowError> {
    let total: usize = params
        .iter()
        .filter_map(|p| p.value.as_ref())
        .map(String::len)
        .sum();
    if total as u64 <= MAX_PARAMETER_BYTES {
        return None;
    }
    let mut sizes: Vec<(usize, &str)> = params
        .iter()
        .filter_map(|p| Some((p.value.as_ref()?.len(), p.name.as_str())))
        .collect();
    sizes.sort_by(|a, b| b.cmp(a));
    let largest: Vec<String> = sizes
        .iter()
        .take(3)
        .map(|(n, name)| format!("{name:?} {n} bytes"))
        .collect();
    Some(FlowError::OutputParameter {
        name: sizes.first().map(|s| s.1.to_string()).unwrap_or_default(),
        message: format!(
            "the output parameters add up to {total} bytes (largest: {}), above the {MAX_PARAMETER_BYTES}-byte (1 MiB) \
             limit for one step (the task result carrying them must fit etcd's 1.5 MiB request); save large values as \
             output artifacts instead",
            largest.join(", ")
        ),
    })
}

async fn read<R: RuntimeExecutor>(ctx: &StepContext, runtime: &R, path: &Path) -> Result<Vec<u8>, ReadError> {
    if ctx.template.is_base_layer_path_in(path, ctx.env.layout) {
        return runtime
            .get_file_contents(MAIN, path)
            .await
            .map_err(|e| ReadError {
                invalid: e.kind() == ErrorKind::Invalid,
                message: e.to_string(),
            });
    }
    let root = ctx.paths.mainctrfs_root();
    let p = path.to_path_buf();
    blocking(move || Ok(read_mirrored(&root, &p)))
        .await
        .unwrap_or_else(|e| {
            Err(ReadError {
                invalid: false,
                message: e.to_string(),
            })
        })
}

/// Read a volume path through the mirror, in-root (see the module docs).
fn read_mirrored(root: &Path, path: &Path) -> Result<Vec<u8>, ReadError> {
    let file = argoexec_archive::open_read_in_root(root, path).map_err(|e| {
        let message = if e.is_not_found() {
            match argoexec_archive::link_target_in_root(root, path) {
                Some(target) => format!(
                    "{} is a symbolic link to {}, which is not on a volume of the main container: wait reads volumes \
                     through /mainctrfs, where a link resolves among main's volumes only (never in the wait \
                     container's own filesystem)",
                    path.display(),
                    target.display()
                ),
                None => format!("{}: no such file on the main container's volumes", path.display()),
            }
        } else {
            e.to_string()
        };
        ReadError {
            invalid: false,
            message,
        }
    })?;
    param_file::read_bounded(path, file).map_err(|e| ReadError {
        invalid: !matches!(e, ParamFileError::Io { .. }),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, value: &str) -> Parameter {
        serde_json::from_value(serde_json::json!({"name": name, "value": value})).unwrap()
    }

    #[test]
    fn the_sum_of_values_is_bounded() {
        let half = "x".repeat(600 * 1024);
        assert!(over_total(&[param("a", &half)]).is_none());
        let e = over_total(&[param("a", &half), param("b", &half), param("c", "1")])
            .unwrap()
            .to_string();
        assert!(
            e.contains("add up to 1228801 bytes")
                && e.contains("\"a\" 614400 bytes")
                && e.contains("artifacts"),
            "{e}"
        );
    }

    #[test]
    fn mirrored_reads_stay_among_mains_volumes() {
        let d = std::env::temp_dir().join(format!("argoexec-params-test-{}", std::process::id()));
        let root = d.join("mainctrfs");
        std::fs::create_dir_all(root.join("mnt/vol")).unwrap();
        std::fs::write(root.join("mnt/vol/p"), b"v\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("mnt/vol/abs")).unwrap();
        std::os::unix::fs::symlink("/mnt/vol/p", root.join("mnt/vol/inside")).unwrap();
        assert_eq!(
            read_mirrored(&root, Path::new("/mnt/vol/inside")).ok(),
            Some(b"v\n".to_vec())
        );
        assert_eq!(
            read_mirrored(&root, Path::new("/mnt/vol/x/../p")).ok(),
            Some(b"v\n".to_vec())
        );
        // /etc/hostname exists in this (wait's) filesystem, yet is never what the link reads.
        let e = read_mirrored(&root, Path::new("/mnt/vol/abs")).err().unwrap();
        assert!(
            !e.invalid && e.message.contains("is a symbolic link to /etc/hostname"),
            "{}",
            e.message
        );
        let e = read_mirrored(&root, Path::new("/mnt/vol")).err().unwrap();
        assert!(e.invalid && e.message.contains("a directory"), "{}", e.message);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
