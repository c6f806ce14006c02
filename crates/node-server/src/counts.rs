//! Request counts per pod, by endpoint, verb and path: what the backends' tests and
//! benchmarks read to check how many calls a step made. A request is counted against the
//! pod its token is bound to (a pod's projected service-account token), else against the
//! pod its path names, else under `-`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

/// One counted call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CallKey {
    /// `api` or `kubelet`.
    pub endpoint: &'static str,
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, `patch`, `delete`, …).
    pub verb: String,
    /// The URL path without the query.
    pub path: String,
}

/// Counters for every pod.
#[derive(Default)]
pub struct Counts {
    map: Mutex<BTreeMap<String, BTreeMap<CallKey, u64>>>,
}

/// One row of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CountRow {
    /// `namespace/pod` or `-`.
    pub pod: String,
    /// The call.
    #[serde(flatten)]
    pub call: CallKey,
    /// How many times.
    pub count: u64,
}

impl Counts {
    /// Count one request.
    pub fn add(&self, pod: Option<String>, endpoint: &'static str, verb: &str, path: &str) {
        let key = CallKey {
            endpoint,
            verb: verb.to_string(),
            path: path.to_string(),
        };
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry(pod.unwrap_or_else(|| "-".into()))
            .or_default()
            .entry(key)
            .or_default() += 1;
    }

    /// Every counter, optionally only for `pod` (`namespace/name`).
    pub fn snapshot(&self, pod: Option<&str>) -> Vec<CountRow> {
        let m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        m.iter()
            .filter(|(p, _)| pod.is_none_or(|want| want == p.as_str()))
            .flat_map(|(p, calls)| {
                calls.iter().map(|(k, n)| CountRow {
                    pod: p.clone(),
                    call: k.clone(),
                    count: *n,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_accumulate_per_pod_and_call() {
        let c = Counts::default();
        c.add(Some("ns/p".into()), "api", "watch", "/api/v1/namespaces/ns/pods");
        c.add(Some("ns/p".into()), "api", "watch", "/api/v1/namespaces/ns/pods");
        c.add(None, "kubelet", "get", "/pods");
        let rows = c.snapshot(Some("ns/p"));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].count, 2);
        assert_eq!(c.snapshot(None).len(), 2);
    }
}
