//! Arguments offloaded to a file: `ARGO_CONTAINER_ARGS_FILE` (Argo v4.1, AW#15265).
//!
//! A v4.1 controller that finds a user container's `args` too large for the pod spec clears
//! them and mounts their JSON array (from the `<pod>` ConfigMap) at the path this variable
//! names. The wrapper then, as Argo's emissary does:
//! 1. reads the file, which must hold a JSON array of strings, and appends its elements to
//!    the command's arguments (after those given on the command line);
//! 2. replaces every argument longer than [`MAX_ARG_LEN`] bytes (131072, Argo's
//!    `MaxEnvVarLen`, which is also Linux's limit for one `execve` string) by
//!    `@/tmp/argo_arg_<i>.txt`, after writing the argument to that file (mode 0644). `<i>`
//!    counts the arguments from 0, the command itself not included: the first argument after
//!    the program is `argo_arg_0`. The program must understand the `@file` convention.
//!
//! Step 2 only runs when the variable is set, as in Argo. An unset or empty variable leaves
//! the command alone. Any failure (a missing file, anything but an array of strings, an
//! unwritable `/tmp`) is a wrapper failure: exit 64, with a message naming the variable and
//! the file. `/tmp` is re-rooted with the other fixed paths under `ARGOEXEC_PATH_ROOT`.

use crate::error::SupervisorError;
use argoexec_core::PodPaths;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The variable naming the file with the offloaded arguments.
pub const ARGS_FILE_ENV: &str = "ARGO_CONTAINER_ARGS_FILE";
/// The longest argument passed as is; longer ones go to a file (Argo: `MaxEnvVarLen`).
pub const MAX_ARG_LEN: usize = 128 * 1024;
/// Where long arguments are written (in-pod path, re-rooted in tests).
pub const LARGE_ARG_DIR: &str = "/tmp";

/// `/tmp/argo_arg_<index>.txt` under `paths`' root.
pub fn large_arg_file(paths: &PodPaths, index: usize) -> PathBuf {
    paths.rooted(LARGE_ARG_DIR).join(format!("argo_arg_{index}.txt"))
}

/// Apply `ARGO_CONTAINER_ARGS_FILE` (`args_file`, the variable's value if set) to `command`
/// (the program first, then its arguments).
///
/// # Errors
/// [`SupervisorError::ArgsFile`], [`SupervisorError::ArgsFileJson`] or
/// [`SupervisorError::LargeArg`].
pub fn apply(
    paths: &PodPaths,
    args_file: Option<&Path>,
    command: &mut Vec<OsString>,
) -> Result<(), SupervisorError> {
    let Some(file) = args_file.filter(|f| !f.as_os_str().is_empty()) else {
        return Ok(());
    };
    tracing::info!(args_file = %file.display(), "reading the container's arguments from a file");
    let text = std::fs::read(file).map_err(|source| SupervisorError::ArgsFile {
        var: ARGS_FILE_ENV,
        path: file.to_path_buf(),
        source,
    })?;
    let extra: Vec<String> =
        serde_json::from_slice(&text).map_err(|source| SupervisorError::ArgsFileJson {
            var: ARGS_FILE_ENV,
            path: file.to_path_buf(),
            source,
        })?;
    tracing::info!(count = extra.len(), "loaded the container's arguments");
    command.extend(extra.into_iter().map(OsString::from));
    let program = 1.min(command.len());
    offload_large(paths, &mut command[program..])
}

/// Replace each argument longer than [`MAX_ARG_LEN`] by `@<file>`, writing it to the file.
fn offload_large(paths: &PodPaths, args: &mut [OsString]) -> Result<(), SupervisorError> {
    for (index, arg) in args.iter_mut().enumerate() {
        if arg.len() <= MAX_ARG_LEN {
            continue;
        }
        let path = large_arg_file(paths, index);
        write_arg(&path, arg.as_bytes()).map_err(|source| SupervisorError::LargeArg {
            index,
            path: path.clone(),
            source,
        })?;
        tracing::info!(
            index,
            bytes = arg.len(),
            path = %path.display(),
            "offloaded a large argument to a file; the program must accept @file arguments"
        );
        let mut replaced = OsString::from("@");
        replaced.push(&path);
        *arg = replaced;
    }
    Ok(())
}

fn write_arg(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(path)?;
    f.write_all(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn unset_or_empty_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        let long = "x".repeat(MAX_ARG_LEN + 1);
        let mut c = cmd(&["prog", &long]);
        apply(&paths, None, &mut c).unwrap();
        apply(&paths, Some(Path::new("")), &mut c).unwrap();
        assert_eq!(
            c,
            cmd(&["prog", &long]),
            "no offload without the variable, as in Argo"
        );
    }

    #[test]
    fn file_arguments_are_appended_and_long_ones_offloaded() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        let at_limit = "a".repeat(MAX_ARG_LEN);
        let over = "b".repeat(MAX_ARG_LEN + 1);
        let file = d.path().join("args.json");
        std::fs::write(
            &file,
            serde_json::to_string(&["--flag", &at_limit, &over]).unwrap(),
        )
        .unwrap();
        let mut c = cmd(&["prog", "first"]);
        apply(&paths, Some(&file), &mut c).unwrap();
        // Arguments count from 0 after the program: first=0, --flag=1, at_limit=2, over=3.
        let written = large_arg_file(&paths, 3);
        assert!(written.ends_with("tmp/argo_arg_3.txt"), "{}", written.display());
        let mut want_arg = OsString::from("@");
        want_arg.push(&written);
        assert_eq!(
            c,
            vec![
                OsString::from("prog"),
                "first".into(),
                "--flag".into(),
                at_limit.into(),
                want_arg
            ]
        );
        assert_eq!(std::fs::read_to_string(&written).unwrap(), over);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&written).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & !0o644, 0, "{mode:o}: at most 0644, as Argo writes it");
        assert!(
            !large_arg_file(&paths, 2).exists(),
            "an argument at the limit stays"
        );
    }

    #[test]
    fn bad_files_name_the_variable_and_the_file() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        let missing = d.path().join("missing.json");
        let e = apply(&paths, Some(&missing), &mut cmd(&["prog"])).unwrap_err();
        assert!(matches!(e, SupervisorError::ArgsFile { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains(ARGS_FILE_ENV) && msg.contains(&missing.display().to_string()),
            "{msg}"
        );
        assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
        for bad in [r#"{"a":1}"#, r#"["ok", 3]"#, "not json"] {
            let f = d.path().join("bad.json");
            std::fs::write(&f, bad).unwrap();
            let e = apply(&paths, Some(&f), &mut cmd(&["prog"])).unwrap_err();
            assert!(matches!(e, SupervisorError::ArgsFileJson { .. }), "{bad}: {e:?}");
            let msg = e.to_string();
            assert!(msg.contains(ARGS_FILE_ENV) && msg.contains("bad.json"), "{msg}");
        }
    }
}
