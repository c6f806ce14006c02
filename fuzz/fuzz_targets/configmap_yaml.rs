//! `configmap_yaml`: the `workflow-controller-configmap` parser
//! (`ControllerConfig::from_configmap_yaml`, crates/podbuilder/src/config.rs) in both shapes,
//! and everything the parsed configuration feeds.
//!
//! The first byte picks how the rest is used:
//! - `0`: as the YAML text of `data.config` (shape 1: one key holding a document);
//! - `1`: as the YAML text of one per-field key (shape 2), the key named by the first line;
//! - otherwise: as the whole ConfigMap manifest.
//!
//! Checks: no panic, hang or runaway allocation (YAML aliases, deep nesting, nested YAML
//! in strings); a parsed configuration then goes through `select_executor`, the
//! `artifactRepository` → archive location resolution, `resolve_choice(auto)` and
//! `build_pod` of a small script template (the config's `executor`, `mainContainer` and
//! `images` merge into the pod) for its executor.

#![no_main]

use std::collections::BTreeMap;

use argoexec_core::{ExecutorKind, Template};
use argoexec_podbuilder::{
    BuildOptions, ControllerConfig, ExecutorChoice, WorkflowMeta, repository, resolve_choice, select_executor,
};
use libfuzzer_sys::fuzz_target;

const TEMPLATE: &str = r#"{"name":"t","script":{"image":"busybox","source":"echo hi"},
  "outputs":{"parameters":[{"name":"p","valueFrom":{"path":"/tmp/p"}}],
             "artifacts":[{"name":"a","path":"/tmp/a"}]}}"#;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let manifest = match mode {
        0 => wrap("config", text),
        1 => {
            let (key, value) = text.split_once('\n').unwrap_or((text, ""));
            wrap(key, value)
        }
        _ => text.to_string(),
    };
    let Ok((config, _warnings)) = ControllerConfig::from_configmap_yaml(&manifest) else {
        return;
    };

    let labels: BTreeMap<String, String> = [("team", "a"), ("app", "b")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let choice = select_executor(&config, &labels, None)
        .map(|(c, _)| c)
        .unwrap_or(ExecutorChoice::Fixed(ExecutorKind::Emissary));

    let mut template = Template::from_json(TEMPLATE).expect("the fixed template parses");
    if let Some(repo) = &config.artifact_repository {
        let parsed = repository::parse(repo);
        let resolved = repository::archive_location(repo, "wf", "ns", "wf-1");
        // the config map parser already accepted the repository
        assert!(parsed.is_ok(), "accepted, then refused: {parsed:?}");
        if let Err(e) = &resolved {
            assert!(e.starts_with("key format placeholder"), "{e}");
        }
        if let Ok(loc) = resolved {
            template.archive_location = Some(loc);
        }
    }
    let (kind, _why) = resolve_choice(choice, &template, &config);
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "ns".into(),
        uid: "uid".into(),
        labels,
    };
    let _ = argoexec_podbuilder::build_pod(&wf, &template, "wf-1", &config, kind, &BuildOptions::default());
});

/// A ConfigMap (written as JSON, which is YAML) whose `data` has `key: value`.
fn wrap(key: &str, value: &str) -> String {
    let data = serde_json::json!({ key: value });
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"workflow-controller-configmap"}},"data":{data}}}"#
    )
}
