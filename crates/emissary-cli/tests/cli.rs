//! The per-pod copy's command line, run as the controller and the kubelet run it. (The
//! wrapper's behaviour is tested end to end in `crates/cli/tests/emissary.rs`, which runs this
//! program from beside `argoexec`; this target also makes `cargo test --workspace` build it
//! there.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_argoexec-emissary");

#[test]
fn version_and_help() {
    let out = Command::new(BIN).arg("version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("argoexec-emissary "));
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && help.contains("emissary") && help.contains("kill"),
        "{help}"
    );
}

#[test]
fn refuses_what_it_does_not_have_with_usage_exit_2() {
    for args in [
        &["wait"][..],
        &["kill", "TERM", "1"],
        &["emissary", "--"],
        &["emissary", "--bogus", "--", "x"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("Usage:"), "{args:?}: {stderr}");
    }
}

#[test]
fn kill_signals_a_process_and_names_a_missing_one() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let k = Command::new(BIN)
        .args(["kill", "15", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.wait().unwrap().signal(), Some(15));
    let out = Command::new(BIN)
        .args(["kill", "15", "1073741823"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("cannot send SIGTERM to 1073741823"), "{stderr}");
}
