//! The kubelet-compatible endpoint (k8s-wire-protocols §1): `/healthz`, `/pods`,
//! `/containerLogs/{ns}/{pod}/{ctr}` and `/exec/{ns}/{pod}[/{uid}]/{ctr}`, with the
//! kubelet's webhook authentication (401 `Unauthorized`) and SubjectAccessReview
//! authorization on `nodes/<subresource>` (fine-grained `pods`/`healthz` first, then
//! `proxy`; 403 `Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[…])`).
//! Errors are plain text, never Status JSON (except in band on channel 3 of an exec).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderValue, Method};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::{Attributes, Decision, Rbac, Subject, Tokens, tokens::bearer};
use crate::counts::Counts;
use crate::exec::{self, ExecSpec};
use crate::faults::Faults;
use crate::http::{
    Handler, Query, Req, Resp, full, is_websocket, json as json_resp, kubelet_error, streaming,
};
use crate::logs::{self, LogOptions};
use crate::pods::Pods;
use crate::status::KubeletError;
use crate::store::Store;

/// Shared state of the kubelet endpoint.
pub struct Kubelet {
    /// Objects (the kubelet's pod manager view is the API's pods on this node).
    pub store: Arc<Store>,
    /// Pods on the node.
    pub pods: Arc<Pods>,
    /// Tokens (the TokenReview).
    pub tokens: Arc<Tokens>,
    /// Policy (the SubjectAccessReview).
    pub rbac: Arc<Rbac>,
    /// Request counters.
    pub counts: Arc<Counts>,
    /// Injected faults.
    faults: Arc<Faults>,
    /// Past `/pods` answers with their time, kept when `kubelet-stale` is injected.
    history: Mutex<VecDeque<(Instant, Arc<Value>)>>,
}

impl Kubelet {
    /// The endpoint's state.
    pub fn new(
        store: Arc<Store>,
        pods: Arc<Pods>,
        tokens: Arc<Tokens>,
        rbac: Arc<Rbac>,
        counts: Arc<Counts>,
        faults: Arc<Faults>,
    ) -> Self {
        Self {
            store,
            pods,
            tokens,
            rbac,
            counts,
            faults,
            history: Mutex::new(VecDeque::new()),
        }
    }

    /// With `kubelet-stale`: record the pod list after every change, so `/pods` can answer
    /// with the one as it was that long ago (a kubelet whose status manager lags).
    pub async fn record_history(self: Arc<Self>, shutdown: CancellationToken) {
        let Some(age) = self.faults.spec.kubelet_stale else {
            return;
        };
        let mut rx = match self
            .store
            .watch(&crate::registry::PODS, Some(self.store.version()))
        {
            Ok((_, rx)) => rx,
            Err(_) => return,
        };
        loop {
            self.remember(age);
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = rx.recv() => if matches!(r, Err(tokio::sync::broadcast::error::RecvError::Closed)) { return },
            }
        }
    }

    fn remember(&self, age: Duration) {
        let now = Instant::now();
        let list = Arc::new(self.current_pod_list());
        let mut h = self.history.lock().unwrap_or_else(|p| p.into_inner());
        h.push_back((now, list));
        // Keep one entry older than `age` (the answer) and everything newer.
        while h.len() > 1 && h.get(1).is_some_and(|(t, _)| now.duration_since(*t) >= age) {
            h.pop_front();
        }
    }
}

impl Handler for Kubelet {
    fn handle(self: Arc<Self>, req: Req) -> Pin<Box<dyn Future<Output = Resp> + Send>> {
        Box::pin(async move { self.route(req).await.unwrap_or_else(|e| kubelet_error(&e)) })
    }
}

/// The kubelet's verb for an HTTP method.
fn verb(m: &Method) -> &'static str {
    match *m {
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "get",
    }
}

/// Subresources checked for a path, in order (any allow wins).
fn subresources(path: &str) -> &'static [&'static str] {
    let is = |p: &str| path == p || path.starts_with(&format!("{p}/"));
    if is("/stats") {
        &["stats"]
    } else if is("/metrics") {
        &["metrics"]
    } else if is("/logs") {
        &["log"]
    } else if is("/pods") || is("/runningpods") {
        &["pods", "proxy"]
    } else if is("/healthz") {
        &["healthz", "proxy"]
    } else if is("/configz") {
        &["configz", "proxy"]
    } else {
        &["proxy"]
    }
}

impl Kubelet {
    fn authorize(&self, who: &Subject, verb: &str, path: &str) -> Result<(), KubeletError> {
        let subs = subresources(path);
        for sub in subs {
            let a = Attributes {
                verb,
                group: "",
                resource: "nodes",
                subresource: Some(sub),
                namespace: None,
                name: Some(self.pods.node_name()),
                path,
            };
            if let Decision::Allow(_) = self.rbac.authorize(who, &a) {
                return Ok(());
            }
        }
        Err(KubeletError::new(
            403,
            format!(
                "Forbidden (user={}, verb={verb}, resource=nodes, subresource(s)=[{}])\n",
                who.user,
                subs.join(" ")
            ),
        ))
    }

    async fn route(self: Arc<Self>, req: Req) -> Result<Resp, KubeletError> {
        let path = req.uri().path().to_string();
        let segs: Vec<String> = path.trim_matches('/').split('/').map(str::to_string).collect();
        let auth = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let Some(who) = bearer(auth).and_then(|t| self.tokens.review(t)) else {
            self.counts.add(None, "kubelet", "unauthenticated", &path);
            return Err(KubeletError::new(401, "Unauthorized"));
        };
        let v = verb(req.method());
        let path_pod = match segs.first().map(String::as_str) {
            Some("containerLogs" | "exec" | "run" | "attach") if segs.len() >= 3 => {
                Some(format!("{}/{}", segs[1], segs[2]))
            }
            _ => None,
        };
        let pod_key = who
            .pod
            .as_ref()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .or(path_pod);
        self.counts.add(pod_key, "kubelet", v, &path);
        self.authorize(&who, v, &path)?;
        let q = Query::of(&req);
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        match segs.as_slice() {
            ["healthz", ..] => Ok(full(200, "text/plain; charset=utf-8", "ok")),
            ["pods"] => {
                if req.method() != Method::GET {
                    let mut r = full(405, "text/plain; charset=utf-8", "405: Method Not Allowed");
                    r.headers_mut()
                        .insert(http::header::ALLOW, HeaderValue::from_static("GET"));
                    return Ok(r);
                }
                Ok(json_resp(200, &self.pod_list()))
            }
            ["containerLogs", ns, pod, ctr] => {
                if req.method() != Method::GET {
                    let mut r = full(405, "text/plain; charset=utf-8", "405: Method Not Allowed");
                    r.headers_mut()
                        .insert(http::header::ALLOW, HeaderValue::from_static("GET"));
                    return Ok(r);
                }
                self.logs(ns, pod, ctr, &q)
            }
            ["exec", ns, pod, ctr] => self.exec(req, ns, pod, None, ctr, &q).await,
            ["exec", ns, pod, uid, ctr] => self.exec(req, ns, pod, Some(uid), ctr, &q).await,
            ["containerLogs", ..] => Err(KubeletError::new(
                400,
                r#"{"message": "Missing container name."}"#,
            )),
            _ => Err(KubeletError::new(404, "404 page not found\n")),
        }
    }

    /// The node's pods as a v1 PodList (as they were `kubelet-stale` ago, when injected).
    fn pod_list(&self) -> Value {
        if let Some(age) = self.faults.spec.kubelet_stale {
            let h = self.history.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            let old = h
                .iter()
                .rev()
                .find(|(t, _)| now.duration_since(*t) >= age)
                .or(h.front());
            if let Some((_, old)) = old {
                self.faults.stale_answer();
                return (**old).clone();
            }
        }
        self.current_pod_list()
    }

    /// The node's pods as a v1 PodList, with the kubelet's config annotations.
    fn current_pod_list(&self) -> Value {
        let (items, _) = self.store.list(&crate::registry::PODS, None);
        let items: Vec<Value> = items
            .iter()
            .map(|p| {
                let mut p = (**p).clone();
                let seen = p["metadata"]["creationTimestamp"].clone();
                p["metadata"]["annotations"]["kubernetes.io/config.source"] = json!("api");
                p["metadata"]["annotations"]["kubernetes.io/config.seen"] = seen;
                p
            })
            .collect();
        json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
    }

    fn find(&self, ns: &str, pod: &str) -> Result<Arc<Value>, KubeletError> {
        self.store
            .get(&crate::registry::PODS, ns, pod)
            .ok_or_else(|| KubeletError::new(404, format!("pod \"{pod}\" does not exist")))
    }

    fn logs(&self, ns: &str, pod: &str, ctr: &str, q: &Query) -> Result<Resp, KubeletError> {
        let opts = LogOptions::parse(q).map_err(|e| {
            if e.code == 422 {
                KubeletError::new(422, r#"{"message": "Invalid request."}"#)
            } else {
                KubeletError::new(400, r#"{"message": "Unable to decode query."}"#)
            }
        })?;
        let p = self.find(ns, pod)?;
        let known = ["containers", "initContainers"]
            .iter()
            .filter_map(|k| p["spec"][*k].as_array())
            .flatten()
            .any(|c| c["name"] == ctr);
        if !known {
            return Err(KubeletError::new(
                404,
                format!("container \"{ctr}\" not found in pod \"{pod}\""),
            ));
        }
        let id = logs::validate(&p, ctr, opts.previous).map_err(|m| KubeletError::new(400, m))?;
        Ok(streaming(
            200,
            "text/plain",
            logs::stream(self.pods.runtime().as_ref(), &id, &opts),
        ))
    }

    async fn exec(
        &self,
        req: Req,
        ns: &str,
        pod: &str,
        uid: Option<&str>,
        ctr: &str,
        q: &Query,
    ) -> Result<Resp, KubeletError> {
        let one = |k: &str| q.get(k) == Some("1");
        let spec = ExecSpec {
            container_id: String::new(),
            command: q.all("command"),
            stdin: one("input"),
            stdout: one("output"),
            stderr: one("error"),
            tty: one("tty"),
        };
        if !(spec.stdin || spec.stdout || spec.stderr) {
            return Err(KubeletError::new(
                400,
                "you must specify at least 1 of stdin, stdout, stderr",
            ));
        }
        let p = self
            .find(ns, pod)
            .map_err(|_| KubeletError::new(404, "pod does not exist"))?;
        let pod_uid = p["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let not_found = || KubeletError::new(500, format!("container not found (\"{ctr}\")"));
        if uid.is_some_and(|u| u != pod_uid) {
            return Err(not_found());
        }
        let running = ["containerStatuses", "initContainerStatuses"]
            .iter()
            .filter_map(|k| p["status"][*k].as_array())
            .flatten()
            .any(|c| c["name"] == ctr && c["state"]["running"].is_object());
        let id = self
            .pods
            .container_id(&pod_uid, ctr)
            .await
            .filter(|_| running)
            .ok_or_else(not_found)?;
        let spec = ExecSpec {
            container_id: id,
            ..spec
        };
        let start = self.pods.runtime().exec(&spec.container_id, spec.request());
        if crate::spdy::is_spdy(&req) {
            if !crate::spdy::offers_v4(&req) {
                return Err(KubeletError::new(
                    403,
                    "unable to upgrade: no common stream protocol",
                ));
            }
            tokio::spawn(crate::spdy::session(req, start, spec, None));
            return Ok(crate::spdy::switching());
        }
        if !is_websocket(&req) {
            return Err(KubeletError::new(500, "Upgrade request required"));
        }
        let Some(proto) = exec::negotiate(&req) else {
            return Err(KubeletError::new(403, "websocket: no common subprotocol"));
        };
        let resp = exec::switching(&req, proto);
        let silent = self.faults.drop_exec_status();
        tokio::spawn(exec::session(req, proto, start, spec, None, silent));
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_to_subresources() {
        assert_eq!(subresources("/pods"), &["pods", "proxy"]);
        assert_eq!(subresources("/healthz/ping"), &["healthz", "proxy"]);
        assert_eq!(subresources("/containerLogs/a/b/c"), &["proxy"]);
        assert_eq!(subresources("/exec/a/b/c"), &["proxy"]);
        assert_eq!(subresources("/podsx"), &["proxy"]);
        assert_eq!(verb(&Method::POST), "create");
        assert_eq!(verb(&Method::GET), "get");
    }
}
