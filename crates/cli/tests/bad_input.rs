//! Bad bootstrap input: each gives a clear message, exit 64 and the termination log.

mod common;

use common::argoexec;
use std::process::Command;

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let d = tempfile::tempdir().unwrap();
    let mut c = Command::new(argoexec());
    c.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("ARGOEXEC_PATH_ROOT", d.path());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let log = std::fs::read_to_string(d.path().join("dev/termination-log")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        log,
    )
}

#[test]
fn missing_pod_name() {
    for cmd in ["init", "wait"] {
        let (code, stderr, log) = run(&[cmd], &[("ARGO_TEMPLATE", "{}")]);
        assert_eq!(code, 64, "{cmd}");
        assert!(
            stderr.contains("ARGO_POD_NAME") && log.contains("ARGO_POD_NAME"),
            "{cmd}: {stderr} / {log}"
        );
    }
}

#[test]
fn malformed_template() {
    let (code, stderr, log) = run(
        &["wait"],
        &[("ARGO_POD_NAME", "p"), ("ARGO_TEMPLATE", "{\"name\": ")],
    );
    assert_eq!(code, 64);
    assert!(
        log.contains("malformed template from ARGO_TEMPLATE"),
        "{stderr} / {log}"
    );
}

#[test]
fn unknown_and_unbuilt_executors() {
    let (code, _, log) = run(
        &["wait"],
        &[
            ("ARGO_POD_NAME", "p"),
            ("ARGO_TEMPLATE", "{}"),
            ("ARGO_CONTAINER_RUNTIME_EXECUTOR", "rkt"),
        ],
    );
    assert_eq!(code, 64);
    assert!(
        log.contains("ARGO_CONTAINER_RUNTIME_EXECUTOR") && log.contains("rkt"),
        "{log}"
    );
    let (code, _, log) = run(
        &["wait"],
        &[
            ("ARGO_POD_NAME", "p"),
            ("ARGO_TEMPLATE", "{}"),
            ("ARGO_CONTAINER_RUNTIME_EXECUTOR", "pns"),
            ("ARGO_NAMESPACE", "default"),
            ("ARGOEXEC_PNS_PROC", "/nonexistent-proc"),
        ],
    );
    assert_eq!(code, 64);
    assert!(log.contains("cannot list /nonexistent-proc"), "{log}");
    // No namespace at all (no ARGO_NAMESPACE, no service-account file): said at once.
    let (code, _, log) = run(
        &["wait"],
        &[
            ("ARGO_POD_NAME", "p"),
            ("ARGO_TEMPLATE", "{}"),
            ("ARGO_CONTAINER_RUNTIME_EXECUTOR", "k8sapi"),
        ],
    );
    assert_eq!(code, 64);
    assert!(
        log.contains("ARGO_NAMESPACE is unset") && log.contains("namespace"),
        "{log}"
    );
}

#[test]
fn required_input_artifact_missing_fails_init() {
    let (code, _, log) = run(
        &["init"],
        &[
            ("ARGO_POD_NAME", "p"),
            (
                "ARGO_TEMPLATE",
                r#"{"inputs": {"artifacts": [{"name": "in", "path": "/x"}]}}"#,
            ),
        ],
    );
    assert_eq!(code, 64);
    assert!(log.contains("\"in\"") && log.contains("not supplied"), "{log}");
}

#[test]
fn init_installs_emissary_and_version_and_kill() {
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(argoexec())
        .arg("init")
        .env("ARGOEXEC_PATH_ROOT", d.path())
        .env("ARGO_POD_NAME", "p")
        .env("ARGO_TEMPLATE", r#"{"name": "t", "custom": {"kept": true}}"#)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    let bin = d.path().join("var/run/argo/argoexec");
    assert_eq!(
        std::fs::metadata(&bin).unwrap().permissions().mode() & 0o777,
        0o555
    );
    let tpl = d.path().join("var/run/argo/template");
    assert_eq!(
        std::fs::metadata(&tpl).unwrap().permissions().mode() & 0o777,
        0o444
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tpl).unwrap()).unwrap();
    assert_eq!(
        v["custom"]["kept"], true,
        "unknown fields survive into the template file"
    );
    assert!(
        std::fs::read(&bin).unwrap() == std::fs::read(common::wrapper()).unwrap(),
        "init installs the per-pod copy, argoexec-emissary"
    );
    let ver = Command::new(&bin).arg("version").output().unwrap();
    assert!(String::from_utf8_lossy(&ver.stdout).contains("argoexec-emissary"));
    // Both the copy and argoexec itself answer the controller's kill exec.
    for program in [bin.clone(), argoexec().into()] {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let k = Command::new(&program)
            .args(["kill", "15", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(k.success(), "{}", program.display());
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(15));
    }
}

#[test]
fn json_log_format() {
    let (_, stderr, _) = run(&["--log-format", "json", "wait"], &[("ARGO_TEMPLATE", "{}")]);
    // Every line is JSON: the start line, then the error.
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.first().map(|v| v["message"].clone()),
        Some("argoexec-rs executor starting".into()),
        "{stderr}"
    );
    assert_eq!(
        lines.first().map(|v| v["level"].clone()),
        Some("INFO".into()),
        "{stderr}"
    );
    assert!(lines.iter().any(|v| v["level"] == "ERROR"), "{stderr}");
}

#[test]
fn emissary_accepts_the_command_line_the_pod_builder_writes() {
    // v3.5 and v3.7+ command lines, from argoexec and from the per-pod copy.
    let v35: &[&str] = &["emissary", "--loglevel", "info", "--log-format", "text", "--"];
    let v37: &[&str] = &[
        "emissary",
        "--loglevel",
        "warning",
        "--log-format",
        "json",
        "--gloglevel",
        "0",
        "--",
    ];
    for program in [common::wrapper(), argoexec().into()] {
        for flags in [v35, v37] {
            let d = tempfile::tempdir().unwrap();
            let out = Command::new(&program)
                .args(flags)
                .args(["sh", "-c", "exit 4"])
                .env("ARGOEXEC_PATH_ROOT", d.path())
                .env("ARGO_CONTAINER_NAME", "main")
                .env("ARGO_TEMPLATE", "{}")
                .output()
                .unwrap();
            let what = format!(
                "{} {flags:?}: {}",
                program.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(4), "{what}");
            assert_eq!(
                std::fs::read_to_string(d.path().join("var/run/argo/ctr/main/exitcode")).unwrap(),
                "4",
                "{what}"
            );
        }
    }
}

#[test]
fn the_per_pod_copy_refuses_what_it_does_not_have() {
    let out = Command::new(common::wrapper()).arg("wait").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown subcommand \"wait\"") && stderr.contains("per-pod copy"),
        "{stderr}"
    );
    let out = Command::new(common::wrapper())
        .args(["kill", "TERM", "1"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn argoexec_hands_the_local_tools_over_and_names_what_is_missing() {
    // In the workspace build argoexec-local sits beside argoexec: `argoexec render` works.
    let out = Command::new(argoexec())
        .args(["render", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Usage"),
        "help of render"
    );
    // A copy of argoexec alone (as in the image) says where the local tools are.
    let d = tempfile::tempdir().unwrap();
    let lone = d.path().join("argoexec");
    std::fs::copy(argoexec(), &lone).unwrap();
    let out = Command::new(&lone)
        .args(["run", "x.yaml"])
        .env("PATH", d.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains("argoexec-local") && stderr.contains("in-pod"),
        "{stderr}"
    );
    let out = Command::new(argoexec()).arg("bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn emissary_refuses_a_container_name_that_is_a_path() {
    for name in ["../x", "a/b", ".", "Main"] {
        let d = tempfile::tempdir().unwrap();
        let out = Command::new(argoexec())
            .args(["emissary", "--", "sh", "-c", "touch ran"])
            .current_dir(d.path())
            .env("ARGOEXEC_PATH_ROOT", d.path())
            .env("ARGO_CONTAINER_NAME", name)
            .env("ARGO_TEMPLATE", "{}")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{name}: {stderr}");
        let log = std::fs::read_to_string(d.path().join("dev/termination-log")).unwrap_or_default();
        assert!(
            log.contains(&format!("invalid container name {name:?} (ARGO_CONTAINER_NAME)")),
            "{name}: {log}"
        );
        assert!(!d.path().join("ran").exists(), "{name}: the command ran");
        // Nothing was created from the name: not ctr/<name>, not the directory it points at.
        let var_run_argo = d.path().join("var/run/argo");
        let made: Vec<_> = walk(&var_run_argo);
        assert!(made.is_empty(), "{name}: created {made:?}");
    }
}

#[test]
fn wait_refuses_a_template_naming_a_container_like_a_path() {
    let tpl = r#"{"containerSet": {"containers": [{"name": "main", "image": "x"}, {"name": "../../x", "image": "x"}]}}"#;
    let (code, stderr, log) = run(&["wait"], &[("ARGO_POD_NAME", "p"), ("ARGO_TEMPLATE", tpl)]);
    assert_eq!(code, 64, "{stderr}");
    assert!(
        log.contains(r#"invalid container name "../../x" (containerSet.containers[1].name)"#),
        "{log}"
    );
}

/// Every path under `dir` (none when it does not exist).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        out.extend(walk(&e.path()));
    }
    out
}

#[test]
fn bad_transfer_settings_are_named() {
    let loc = r#"{"s3": {"endpoint": "127.0.0.1:9", "insecure": true, "bucket": "b", "key": "k"}}"#;
    for (var, value, want) in [
        (
            "ARGOEXEC_ARTIFACT_S3_CHECKSUM",
            "md5",
            "expected sha256, crc64nvme or none",
        ),
        ("ARGOEXEC_ARTIFACT_PARALLELISM", "0", "expected 1 to 64"),
        ("ARGOEXEC_ARTIFACT_PART_SIZE", "1Mi", "at least 5Mi"),
    ] {
        let (code, stderr, _) = run(&["artifact", "put", loc, "/etc/hostname"], &[(var, value)]);
        assert_eq!(code, 64, "{var}: {stderr}");
        assert!(
            stderr.contains(&format!("{var}=\"{value}\"")) && stderr.contains(want),
            "{var}: {stderr}"
        );
    }
}
