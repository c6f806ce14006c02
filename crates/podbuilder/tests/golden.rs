//! Golden pods: each workflow under `golden/*.workflow.yaml` rendered for every Argo version
//! (and, for v3.3, every executor) and compared with `golden/<name>.v<version>.<executor>.yaml`
//! (the pod, then `---` and the `<pod>` ConfigMap when something was offloaded). Regenerate
//! with `UPDATE_GOLDEN=1` and review the diff by hand against docs/compatibility.md and
//! argo-2026-contract.md §1.1/§2 before committing.

use argoexec_core::{ArgoVersion, ExecutorKind};
use argoexec_podbuilder::workflow::Workflow;
use argoexec_podbuilder::{BuildOptions, ControllerConfig, build_pod};
use std::path::Path;

const CONFIG: &str = "kind: ConfigMap\ndata:\n  instanceID: ci\n  images: |\n    nginx:1: {command: [nginx], args: [-g, daemon off;]}\n";

/// A fixed trace context, so v4.1 pods render the same every time.
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn render(wf: &Workflow, config: &ControllerConfig, version: ArgoVersion, executor: ExecutorKind) -> String {
    let template = wf.pod_template(None).unwrap();
    let opts = BuildOptions {
        argo_version: version,
        instance_id: config.instance_id.clone(),
        trace_parent: Some(TRACEPARENT.into()),
        ..Default::default()
    };
    match build_pod(&wf.meta, &template, "node-1", config, executor, &opts) {
        Ok(b) => {
            let mut out = serde_saphyr::to_string(&b.pod).unwrap();
            if let Some(cm) = &b.config_map {
                out.push_str("---\n");
                out.push_str(&serde_saphyr::to_string(cm).unwrap());
            }
            out
        }
        Err(e) => format!("error: {e}\n"),
    }
}

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
        for version in ArgoVersion::ALL {
            let executors: &[ExecutorKind] = if version.has_legacy_executors() {
                &ExecutorKind::ALL
            } else {
                &[ExecutorKind::Emissary]
            };
            for &k in executors {
                let got = render(&wf, &config, version, k);
                let golden = dir.join(format!("{stem}.v{version}.{k}.yaml"));
                if update {
                    std::fs::write(&golden, &got).unwrap();
                } else if std::fs::read_to_string(&golden).ok().as_deref() != Some(got.as_str()) {
                    mismatched.push(golden.display().to_string());
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 36,
        "expected at least 4 workflows × 9 renders, checked {checked}"
    );
    assert!(
        mismatched.is_empty(),
        "rendered pods differ from the golden files (UPDATE_GOLDEN=1 to regenerate): {mismatched:#?}"
    );
}

/// Asking a v3.5+ controller for a legacy executor is an error naming the version.
#[test]
fn legacy_executors_exist_only_in_3_3() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let wf = Workflow::from_yaml(&std::fs::read_to_string(dir.join("hello.workflow.yaml")).unwrap()).unwrap();
    let (config, _) = ControllerConfig::from_configmap_yaml(CONFIG).unwrap();
    for v in [
        ArgoVersion::V3_5,
        ArgoVersion::V3_7,
        ArgoVersion::V4_0,
        ArgoVersion::V4_1,
    ] {
        for k in [
            ExecutorKind::Docker,
            ExecutorKind::Kubelet,
            ExecutorKind::K8sApi,
            ExecutorKind::Pns,
        ] {
            let e = render(&wf, &config, v, k);
            assert!(
                e.starts_with("error:")
                    && e.contains(&format!("Argo {v}"))
                    && e.contains("--argo-version 3.3"),
                "{e}"
            );
        }
    }
}
