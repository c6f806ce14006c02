//! Golden pods: each workflow under `golden/*.workflow.yaml` rendered for every executor and
//! compared with `golden/<name>.<executor>.yaml`. Regenerate with `UPDATE_GOLDEN=1` and review
//! the diff by hand against argo-executors.md §5.2 before committing.

use argoexec_core::ExecutorKind;
use argoexec_podbuilder::workflow::Workflow;
use argoexec_podbuilder::{BuildOptions, ControllerConfig, build_pod};
use std::path::Path;

const CONFIG: &str =
    "kind: ConfigMap\ndata:\n  images: |\n    nginx:1: {command: [nginx], args: [-g, daemon off;]}\n";

#[test]
fn golden_pods() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let (config, _) = ControllerConfig::from_configmap_yaml(CONFIG).unwrap();
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut checked = 0;
    let mut mismatched = Vec::new();
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    for wf_path in inputs
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".workflow.yaml"))
    {
        let stem = wf_path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".workflow.yaml")
            .to_string();
        let wf = Workflow::from_yaml(&std::fs::read_to_string(wf_path).unwrap()).unwrap();
        let template = wf.pod_template(None).unwrap();
        for k in ExecutorKind::ALL {
            let got = match build_pod(
                &wf.meta,
                &template,
                "node-1",
                &config,
                k,
                &BuildOptions::default(),
            ) {
                Ok(pod) => serde_saphyr::to_string(&pod).unwrap(),
                Err(e) => format!("error: {e}\n"),
            };
            let golden = dir.join(format!("{stem}.{k}.yaml"));
            if update {
                std::fs::write(&golden, &got).unwrap();
            } else if std::fs::read_to_string(&golden).ok().as_deref() != Some(got.as_str()) {
                mismatched.push(golden.display().to_string());
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 15,
        "expected at least 3 workflows × 5 executors, checked {checked}"
    );
    assert!(
        mismatched.is_empty(),
        "rendered pods differ from the golden files (UPDATE_GOLDEN=1 to regenerate): {mismatched:#?}"
    );
}
