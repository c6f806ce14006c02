//! A template too large for `ARGO_TEMPLATE` (Linux caps one environment string at 128 KiB,
//! Argo #7586): the pod builder offloads it as Argo v3.6+ does — `ARGO_TEMPLATE=offloaded` on
//! init, the JSON in the `<pod>` ConfigMap (key `ARGO_TEMPLATE`) at `/argo/config` — and init
//! copies it to `/var/run/argo/template`; the step runs to `Succeeded` with every executor
//! kind that reads the template differently (the emissary's wrapper, wait from the file under
//! docker, wait under k8sapi). A small template stays in the variable: on init only for a
//! v4.1 pod, on every container for a v3.5 one.

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

/// `argoexec render` of `yaml` with `executor` (and more arguments).
fn render(yaml: &str, executor: &str, extra: &[&str]) -> String {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("wf.yaml");
    std::fs::write(&p, yaml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_argoexec"))
        .arg("render")
        .arg(&p)
        .args(["--executor", executor])
        .args(extra)
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
        let rendered = render(&y, ex, &[]);
        let (pod, cm) = rendered
            .split_once("\n---\n")
            .expect("the pod, then its ConfigMap");
        assert_eq!(
            pod.matches("name: ARGO_TEMPLATE").count(),
            1,
            "{ex}: init only: {pod}"
        );
        assert!(pod.contains("value: offloaded"), "{ex}");
        assert!(
            pod.contains("argo-env-config") && pod.contains("/argo/config"),
            "{ex}: {pod}"
        );
        assert!(
            cm.contains("kind: ConfigMap") && cm.contains("ARGO_TEMPLATE:"),
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
fn a_small_template_stays_in_argo_template() {
    if !docker_available() {
        return;
    }
    let y = script_workflow(1000);
    for (version, copies, seen) in [("4.1", 1, " file"), ("3.5", 3, " envfile")] {
        let rendered = render(&y, "emissary", &["--argo-version", version]);
        assert!(
            !rendered.contains("\n---\n"),
            "{version}: no ConfigMap: {rendered}"
        );
        assert_eq!(
            rendered.matches("name: ARGO_TEMPLATE").count(),
            copies,
            "{version}: {rendered}"
        );
        let r = run_yaml(&y, "emissary", &["--argo-version", version]);
        assert_eq!(r.phase(), "Succeeded", "{version}: {}", r.dump());
        assert!(
            r.result().is_some_and(|s| s.ends_with(seen)),
            "{version}: main sees the template as{seen}: {}",
            r.dump()
        );
    }
}
