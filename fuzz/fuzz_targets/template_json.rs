//! `template_json`: an executor template (`ARGO_TEMPLATE`, `/var/run/argo/template`) from
//! arbitrary JSON, and everything a parsed template feeds.
//!
//! Checks, on any input: no panic, and for every template that parses
//! - `to_json` output parses back to an equal template (unknown fields survive the round trip);
//! - `load_template` with `ARGO_TEMPLATE` agrees with `Template::from_json`;
//! - the template's rules run (main names and mounts, base-layer paths, archive kinds,
//!   location kinds, `secret_refs`, `child` locations, container-set retries and
//!   `parse_go_duration` delays) and every in-pod staging path derived from a template path
//!   stays under its directory (`/mainctrfs`, `/var/run/argo/outputs/...`);
//! - the controller side accepts or refuses it without panicking: `validate` for every
//!   executor, `resolve_choice(auto)` and `build_pod` for one executor.
//!
//! The raw text is also given to `parse_go_duration` directly.

#![no_main]

use std::path::{Path, PathBuf};

use argoexec_core::template::container::parse_go_duration;
use argoexec_core::{ExecutorKind, PodPaths, Template};
use argoexec_podbuilder::{BuildOptions, ControllerConfig, ExecutorChoice, WorkflowMeta};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.len() <= 64 {
        let _ = parse_go_duration(text);
    }
    let Ok(t) = Template::from_json(text) else {
        return;
    };
    let json = t.to_json();
    let back = Template::from_json(&json).expect("to_json output parses");
    assert_eq!(back, t, "a JSON round trip changed the template: {json}");

    let root = PodPaths::new("/nonexistent-fuzz-root");
    let get = |k: &str| (k == "ARGO_TEMPLATE").then(|| text.to_string());
    if !text.trim().is_empty() {
        let (loaded, _) = argoexec_core::env::load_template(&root, get, None).expect("ARGO_TEMPLATE parses");
        assert_eq!(loaded, t);
    }

    exercise(&t, &root);

    for kind in ExecutorKind::ALL {
        let _ = argoexec_podbuilder::validate::validate(&t, kind);
    }
    let config = ControllerConfig::default();
    let (kind, _why) = argoexec_podbuilder::resolve_choice(ExecutorChoice::Auto, &t, &config);
    let kind = ExecutorKind::ALL.get(data.len() % 6).copied().unwrap_or(kind);
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "ns".into(),
        uid: "uid".into(),
        labels: Default::default(),
    };
    let _ = argoexec_podbuilder::build_pod(&wf, &t, "wf-1", &config, kind, &BuildOptions::default());
});

fn exercise(t: &Template, root: &PodPaths) {
    let names = t.main_container_names();
    assert!(!names.is_empty());
    for n in &names {
        let _ = t.container_set_node(n);
    }
    let _ = t.main_volume_mounts();
    let _ = t.has_capturable_result();
    let _ = t.archive_logs();

    let mut paths: Vec<&str> = Vec::new();
    for a in t.inputs.artifacts.iter().chain(&t.outputs.artifacts) {
        let _ = a.archive_kind();
        let _ = a.is_supplied();
        let _ = a.location.kind_name();
        let _ = a.location.secret_refs();
        let _ = a.location.child(&a.name);
        paths.extend(a.path.as_deref());
    }
    for p in t.inputs.parameters.iter().chain(&t.outputs.parameters) {
        paths.extend(p.value_from.as_ref().and_then(|v| v.path.as_deref()));
    }
    if let Some(a) = &t.archive_location {
        let _ = a.location.secret_refs();
        let _ = a.location.child("main.log");
    }
    if let Some(rs) = t.container_set.as_ref().and_then(|c| c.retry_strategy.as_ref()) {
        let _ = rs.retries();
        let _ = rs.delay();
        if let Some(d) = &rs.duration {
            let _ = parse_go_duration(d);
        }
    }
    for p in paths {
        let p = Path::new(p);
        let _ = t.overlapping_volume(p);
        let _ = t.is_base_layer_path(p);
        let under = |got: PathBuf, dir: &str| {
            assert!(
                got.starts_with(root.rooted(dir)),
                "{p:?} staged at {got:?}, outside {dir}"
            );
        };
        under(root.mainctrfs(p), "/mainctrfs");
        under(root.staged_parameter(p), "/var/run/argo/outputs/parameters");
        under(root.staged_artifact(p), "/var/run/argo/outputs");
    }
}
