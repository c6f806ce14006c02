//! `argoexec run --runtime containerd` refuses the docker executor before anything starts
//! (its wait drives the node's Docker Engine, which a containerd node does not have). The
//! runs themselves on containerd are the other `run_*` suites under
//! `ARGOEXEC_RUNTIME=containerd` (scripts/test.sh).

use std::process::Command;

#[test]
fn the_docker_executor_is_refused_on_a_containerd_node_saying_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_argoexec"))
        .args([
            "run",
            "--runtime",
            "containerd",
            "--executor",
            "docker",
            "--argo-version",
            "3.3",
            "examples/hello-world.yaml",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        // An unreachable socket: the refusal must come before the node is contacted.
        .args(["--containerd-socket", "/nonexistent/containerd.sock"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the docker executor cannot run on a containerd node")
            && err.contains("/var/run/docker.sock")
            && err.contains("--executor emissary"),
        "{err}"
    );
}
