//! `nativeSidecar` end to end (argoexec-rs): wait (or the init-less supervisor) runs as a
//! sidecar container — an init container with `restartPolicy: Always` — which the local node
//! starts before main and stops with SIGTERM once the app containers have ended; wait then
//! finishes its outputs within the grace period and exits 0.

mod run_support;

use run_support::{config_map, docker_available, run_yaml, wf};

const NATIVE: &str = "  nativeSidecar: |\n    enabled: true\n";

const TEMPLATE: &str = r#"inputs:
  artifacts:
    - name: greeting
      path: /in/greeting.txt
      raw: {data: "hello"}
outputs:
  parameters:
    - name: seen
      valueFrom: {path: /tmp/seen.txt}
  artifacts:
    - name: made
      path: /tmp/made.txt
sidecars:
  - name: side
    image: busybox:latest
    command: [sh, -c, "sleep 600"]
script:
  image: busybox:latest
  command: [sh]
  source: |
    cat /in/greeting.txt > /tmp/seen.txt
    echo made > /tmp/made.txt
    echo "native result"
"#;

fn run(extra: &str, name: &str) -> run_support::RunResult {
    let dir = tempfile::tempdir().unwrap();
    let cm = config_map(&dir, &format!("{NATIVE}{extra}"));
    run_yaml(
        &wf(name, TEMPLATE),
        "emissary",
        &["--config", &cm, "--argo-version", "4.1"],
    )
}

fn check(r: &run_support::RunResult, aux: &str) {
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.result(), Some("native result"), "{}", r.dump());
    assert_eq!(r.param("seen").as_deref(), Some("hello"), "{}", r.dump());
    let made = r.artifact("made").expect("the artifact saved");
    assert!(made.exists(), "{}", r.dump());
    // The auxiliary reported, then waited for the node's SIGTERM and exited 0.
    assert_eq!(r.exit_of(aux), Some(0), "{}", r.dump());
    assert_eq!(
        r.json["report"]["completedLabels"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        "true"
    );
}

#[test]
fn wait_as_a_sidecar_container() {
    if !docker_available() {
        return;
    }
    check(&run("", "native-legacy"), "wait");
}

#[test]
fn the_supervisor_as_a_sidecar_container() {
    if !docker_available() {
        return;
    }
    check(
        &run("  initlessPod: |\n    enabled: true\n", "native-initless"),
        "supervisor",
    );
}
