//! A template too large for `ARGO_TEMPLATE` (Linux caps one environment string at 128 KiB,
//! Argo #7586): the pod builder offloads it to a ConfigMap that init mounts and copies to
//! `/var/run/argo/template`; the step runs to `Succeeded` with every executor kind that
//! reads the template differently (the emissary's wrapper, wait from the file under docker,
//! wait under k8sapi), and `argoexec render` shows no `ARGO_TEMPLATE` then. A small template
//! keeps the variable (Argo compatibility).

mod run_support;

use std::process::Command;

use run_support::{docker_available, only, run_yaml};

/// A script workflow whose source is a comment of `pad` bytes plus a line printing the
/// staged script's size and whether the template reached main as a file or in the env.
fn script_workflow(pad: usize) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  generateName: bigtpl-\nspec:\n  entrypoint: main\n  templates:\n    - name: main\n      script:\n        image: busybox\n        command: [sh]\n        source: |\n          # {}\n          echo \"$(wc -c < \"$0\") ${{ARGO_TEMPLATE:+env}}$(test -s /var/run/argo/template && echo file)\"\n",
        "x".repeat(pad)
    )
}

/// `argoexec render` of `yaml` with `executor`.
fn render(yaml: &str, executor: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("wf.yaml");
    std::fs::write(&p, yaml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_argoexec"))
        .arg("render")
        .arg(&p)
        .args(["--executor", executor])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_200_kib_script_runs_from_a_config_map() {
    if !docker_available() {
        return;
    }
    let y = script_workflow(200 * 1024);
    // The staged script: "# " + pad + "\n" + the echo line.
    let source_len = 2 + 200 * 1024 + 1 + y.lines().last().unwrap().trim_start().len() + 1;
    for ex in only(&["emissary", "docker", "k8sapi"]) {
        let rendered = render(&y, ex);
        let (pod, cm) = rendered
            .split_once("\n---\n")
            .expect("the pod, then its ConfigMap");
        assert!(
            !pod.contains("ARGO_TEMPLATE"),
            "{ex}: ARGO_TEMPLATE still in the pod"
        );
        assert!(
            pod.contains("argo-template") && pod.contains("/argo/template"),
            "{ex}: {pod}"
        );
        assert!(
            cm.contains("kind: ConfigMap") && cm.contains("-template"),
            "{ex}: {cm}"
        );
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            r.result(),
            Some(format!("{source_len} file").as_str()),
            "{ex}: the whole source ran, and the template reached main as a file: {}",
            r.dump()
        );
    }
}

#[test]
fn a_small_template_keeps_argo_template() {
    if !docker_available() {
        return;
    }
    let y = script_workflow(1000);
    let rendered = render(&y, "emissary");
    assert!(!rendered.contains("\n---\n"), "no ConfigMap: {rendered}");
    assert_eq!(
        rendered.matches("name: ARGO_TEMPLATE").count(),
        3,
        "init, wait and main: {rendered}"
    );
    let r = run_yaml(&y, "emissary", &[]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert!(
        r.result().is_some_and(|s| s.ends_with(" envfile")),
        "env and file: {}",
        r.dump()
    );
}
