//! `watch_events`: a pod watch stream and the project's code on both sides of it.
//!
//! The project has no watch-line decoder of its own: the k8sapi backend reads the stream
//! with kube-rs, whose per-line decoding is `serde_json` into `kube_core::WatchEvent<Pod>`
//! (done here the same way, line by line). What the project does with the events is fuzzed:
//! the pod-state verdicts of `argoexec_kube::podstate` (`evaluate`, `state_of`,
//! `container_names`, `is_terminal`, `deadline_exceeded`) that the k8sapi and kubelet
//! backends' `wait` relies on, for every `ADDED`/`MODIFIED`/`DELETED` pod; and on the server
//! side, the node server's watch filter: the first line is a label selector, the second a
//! field selector (`Selector::labels`/`fields`, as in `?labelSelector=&fieldSelector=`),
//! matched against every event's object.
//!
//! Checks: no panic; every name asked is either exited or pending, never both; a terminal
//! pod leaves nothing pending; `done()` is "nothing pending or the deadline passed";
//! a terminated container is reported with its exit code.

#![no_main]

use argoexec_kube::podstate::{
    ContainerState, container_names, deadline_exceeded, evaluate, is_terminal, state_of,
};
use argoexec_node_server::selector::Selector;
use k8s_openapi::api::core::v1::Pod;
use kube_core::WatchEvent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let labels = Selector::labels(lines.next().unwrap_or(""));
    let fields = Selector::fields(lines.next().unwrap_or(""));
    if let Ok(f) = &fields {
        let _ = f.pinned_name();
    }
    let mut resource_version = String::new();
    for line in lines.take(64) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            let object = &v["object"];
            if let Ok(s) = &labels {
                let _ = s.matches(object);
            }
            if let Ok(s) = &fields {
                let _ = s.matches(object);
            }
        }
        match serde_json::from_str::<WatchEvent<Pod>>(line) {
            Ok(WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p)) => {
                resource_version = p.metadata.resource_version.clone().unwrap_or_default();
                check_pod(&p);
            }
            Ok(WatchEvent::Bookmark(b)) => resource_version = b.metadata.resource_version,
            Ok(WatchEvent::Error(s)) => {
                let _ = (s.code == 410, &s.message);
            }
            Err(_) => {}
        }
    }
    let _ = resource_version;
});

fn check_pod(pod: &Pod) {
    let mut names = container_names(pod);
    names.extend(["main", "wait", ""].map(String::from));
    let e = evaluate(pod, &names);
    assert_eq!(e.exits.len() + e.pending.len(), names.len());
    for n in &names {
        let exited = e.exits.iter().filter(|x| &x.name == n).count();
        let pending = e.pending.iter().filter(|(p, _)| p == n).count();
        let asked = names.iter().filter(|x| *x == n).count();
        assert_eq!(exited + pending, asked, "{n} lost or doubled");
        assert!(exited == 0 || pending == 0, "{n} both exited and pending");
        if let ContainerState::Terminated { exit_code, .. } = state_of(pod, n) {
            assert!(
                e.exits
                    .iter()
                    .any(|x| &x.name == n && x.exit_code == Some(exit_code))
            );
        }
    }
    if is_terminal(pod) {
        assert!(
            e.pending.is_empty(),
            "a terminal pod left {:?} pending",
            e.pending
        );
    }
    assert_eq!(e.deadline_exceeded, deadline_exceeded(pod));
    assert_eq!(e.done(), e.pending.is_empty() || e.deadline_exceeded);
    let _ = e.describe_pending();
}
