//! `argoexec run` on bad input: each case is a clear message on stderr, a JSON `Error` on
//! stdout with `-o json`, exit status 2, and nothing left running.

mod run_support;

use run_support::{RunResult, docker_available, run_file, run_yaml};

fn assert_refused(r: &RunResult, needle: &str) {
    assert_eq!(r.code, 2, "{}", r.dump());
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    assert!(
        r.message().contains(needle),
        "message should mention {needle:?}: {}",
        r.dump()
    );
    assert!(
        r.stderr.contains(needle),
        "stderr should mention {needle:?}: {}",
        r.dump()
    );
}

#[test]
fn missing_file() {
    if !docker_available() {
        return;
    }
    let r = run_file(
        std::path::Path::new("/nonexistent/wf.yaml"),
        "emissary",
        &[],
        None,
    );
    assert_refused(&r, "/nonexistent/wf.yaml");
}

#[test]
fn not_a_workflow() {
    if !docker_available() {
        return;
    }
    let r = run_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\n",
        "emissary",
        &[],
    );
    assert_refused(&r, "ConfigMap");
    let r = run_yaml(": : not yaml [", "emissary", &[]);
    assert_eq!((r.code, r.phase()), (2, "Error"), "{}", r.dump());
}

#[test]
fn unknown_entrypoint_template() {
    if !docker_available() {
        return;
    }
    let y = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: nope\n  templates:\n    - {name: main, container: {image: busybox, command: [echo]}}\n";
    let r = run_yaml(y, "emissary", &[]);
    assert_refused(&r, "nope");
}

#[test]
fn image_not_present_locally() {
    if !docker_available() {
        return;
    }
    let y = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: main\n  templates:\n    - {name: main, container: {image: 'registry.invalid/none:1', command: [echo]}}\n";
    for ex in ["emissary", "docker"] {
        let r = run_yaml(y, ex, &[]);
        assert_refused(&r, "registry.invalid/none:1");
        assert!(
            r.message().contains("\"main\""),
            "names the container: {}",
            r.dump()
        );
    }
}

#[test]
fn unresolved_reference_and_bad_parameter() {
    if !docker_available() {
        return;
    }
    let y = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: main\n  templates:\n    - {name: main, container: {image: busybox, command: [echo, '{{inputs.parameters.missing}}']}}\n";
    let r = run_yaml(y, "emissary", &[]);
    assert_refused(&r, "inputs.parameters.missing");
    let r = run_yaml(y, "emissary", &["-p", "novalue"]);
    assert_eq!((r.code, r.phase()), (2, "Error"), "{}", r.dump());
}

#[test]
fn steps_entrypoint_is_refused() {
    if !docker_available() {
        return;
    }
    let y = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: s\n  templates:\n    - name: s\n      steps: [[{name: a, template: main}]]\n    - {name: main, container: {image: busybox, command: [echo]}}\n";
    let r = run_yaml(y, "emissary", &[]);
    assert_refused(&r, "steps");
}

#[test]
fn pns_refuses_a_base_layer_artifact_with_a_volume_beneath() {
    if !docker_available() {
        return;
    }
    // §5.4: pns reads through main's root, where a volume mounted below the artifact is not
    // visible; the pod is refused before it runs, naming the volume.
    let y = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: m\n  templates:\n    - name: m\n      volumes: [{name: v, emptyDir: {}}]\n      container: {image: busybox, command: [sh, -c], args: ['true'], volumeMounts: [{name: v, mountPath: /out/sub}]}\n      outputs: {artifacts: [{name: a, path: /out}]}\n";
    let r = run_yaml(y, "pns", &[]);
    assert_refused(&r, "volume \"v\" is mounted beneath it");
}

#[test]
fn container_named_like_a_path_is_refused() {
    if !docker_available() {
        return;
    }
    // Kubernetes requires DNS-1123 labels; the executor would turn the name into
    // /var/run/argo/ctr/<name>/. Refused before any container is created.
    let cs = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: m\n  templates:\n    - name: m\n      containerSet:\n        containers:\n          - {name: main, image: busybox, command: ['true']}\n          - {name: 'a/b', image: busybox, command: ['true']}\n";
    assert_refused(&run_yaml(cs, "emissary", &[]), "invalid container name \"a/b\"");
    let side = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: m\n  templates:\n    - name: m\n      container: {image: busybox, command: ['true']}\n      sidecars: [{name: '../x', image: busybox, command: ['true']}]\n";
    assert_refused(&run_yaml(side, "docker", &[]), "invalid container name \"../x\"");
}

#[test]
fn invalid_config_map_values_name_the_key() {
    if !docker_available() {
        return;
    }
    let y = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n  entrypoint: m\n  templates:\n    - {name: m, container: {image: busybox, command: ['true']}}\n";
    for (data, needle) in [
        ("  kubeletPort: \"ten\"\n", "key kubeletPort"),
        (
            "  containerRuntimeExecutor: rkt\n",
            "key containerRuntimeExecutor",
        ),
        (
            "  containerRuntimeExecutors: |\n    - {name: pns, selector: {matchExpressions: [{key: a, operator: Like}]}}\n",
            "key containerRuntimeExecutors[0].selector.matchExpressions[0].operator",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cm = run_support::config_map(&dir, data);
        assert_refused(&run_yaml(y, "emissary", &["--config", &cm]), needle);
    }
}
