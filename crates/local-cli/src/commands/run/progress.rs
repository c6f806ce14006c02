//! Text-mode progress of `argoexec run`: one stderr line per pod phase change and per
//! container transition (started, exited with code and reason), from the node's live status.

use std::collections::HashMap;

use argoexec_node::status::all;
use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use tokio::sync::watch;

/// Print transitions until the status channel closes or the pod is terminal.
pub async fn follow(pod: String, mut rx: watch::Receiver<PodStatus>) {
    let mut phase = String::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    loop {
        let status = rx.borrow_and_update().clone();
        for c in all(&status) {
            let label = describe(c);
            if seen.get(&c.name) != Some(&label) {
                if !label.starts_with("waiting") {
                    eprintln!("  {:<10} {label}", c.name);
                }
                seen.insert(c.name.clone(), label);
            }
        }
        let p = status.phase.clone().unwrap_or_default();
        if p != phase {
            eprintln!("pod {pod}: {p}");
            phase = p;
        }
        if argoexec_node::status::is_terminal(status.phase.as_deref()) || rx.changed().await.is_err() {
            return;
        }
    }
}

fn describe(c: &ContainerStatus) -> String {
    let Some(s) = &c.state else {
        return "waiting".into();
    };
    if let Some(t) = &s.terminated {
        let reason = t.reason.as_deref().unwrap_or("");
        return format!("exited {} ({reason})", t.exit_code);
    }
    if s.running.is_some() {
        return "running".into();
    }
    format!(
        "waiting ({})",
        s.waiting.as_ref().and_then(|w| w.reason.as_deref()).unwrap_or("")
    )
}
