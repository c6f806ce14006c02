//! `pods` and its subresources on the API endpoint: create/get/list/watch/patch/delete,
//! `pods/log` (container defaulting, the kubelet's validation as a 400 Status, then the
//! stream) and `pods/exec` over WebSocket (v5/v4; errors after the upgrade in band).

use std::sync::Arc;

use serde_json::Value;

use super::{Api, Target, objects, patching};
use crate::exec::{self, ExecSpec};
use crate::http::{Query, Req, Resp, is_websocket, json as json_resp, streaming};
use crate::logs::{self, LogOptions};
use crate::registry::PODS as POD_TYPE;
use crate::status::{ApiError, PODS};
use crate::subresource::Write;

/// Route a `pods` request.
pub(super) async fn handle(
    api: Arc<Api>,
    req: Req,
    t: Target,
    verb: &'static str,
    q: Query,
) -> Result<Resp, ApiError> {
    let ns = t.namespace.clone();
    match (verb, ns.as_deref(), t.name.as_deref(), t.subresource.as_deref()) {
        ("list" | "watch", _, None, None) => objects::list_or_watch(&api, &req, &POD_TYPE, &t, verb, &q),
        ("get", Some(ns), Some(n), None | Some("status")) => objects::get(&api, &req, &POD_TYPE, &t, ns, n),
        ("create", Some(ns), None, None) => {
            let body = objects::object_body(req).await?;
            let o = api.pods.create(ns, body)?;
            Ok(json_resp(201, &o))
        }
        ("patch", Some(ns), Some(n), None) => {
            let target = (&*POD_TYPE, &t);
            let (_, o) =
                patching::patch(&api, req, &q, target, (ns, n), Write::Main, None, check_pod_patch).await?;
            Ok(json_resp(200, &o))
        }
        ("delete", Some(ns), Some(n), None) => {
            let grace = match q.int("gracePeriodSeconds") {
                Ok(g) => g,
                Err(k) => return Err(ApiError::bad_request(format!("invalid {k}"))),
            };
            let body = crate::http::read_body(req, objects::MAX_BODY)
                .await
                .unwrap_or_default();
            let from_body = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|b| b["gracePeriodSeconds"].as_i64());
            let o = api.pods.delete(ns, n, grace.or(from_body))?;
            Ok(json_resp(200, &o))
        }
        ("get", Some(ns), Some(n), Some("log")) => log(&api, ns, n, &q).await,
        ("get" | "create", Some(ns), Some(n), Some("exec")) => exec(&api, req, ns, n, &q).await,
        _ => {
            crate::http::drain(req).await;
            Err(ApiError::method_not_allowed(verb))
        }
    }
}

/// Pod updates may change metadata only (status is a subresource and was kept).
fn check_pod_patch(before: &Value, after: &mut Value) -> Result<(), ApiError> {
    if after["spec"] != before["spec"] {
        let name = before["metadata"]["name"].as_str().unwrap_or("");
        return Err(ApiError::invalid(
            &PODS,
            name,
            "spec",
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative) (the local node allows metadata changes only)",
        ));
    }
    Ok(())
}

/// The container a log or exec request means (`container` or the only one).
fn container_of(pod: &Value, q: &Query) -> Result<String, ApiError> {
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let names: Vec<String> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| pod["spec"][*k].as_array())
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    match q.get("container").filter(|c| !c.is_empty()) {
        Some(c) if names.iter().any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let main: Vec<&String> = pod["spec"]["containers"]
                .as_array()
                .map(|v| v.len())
                .map(|n| names.iter().take(n).collect())
                .unwrap_or_default();
            match main.as_slice() {
                [one] => Ok((*one).clone()),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    main.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
                ))),
            }
        }
    }
}

async fn log(api: &Arc<Api>, ns: &str, name: &str, q: &Query) -> Result<Resp, ApiError> {
    let pod = api
        .store
        .get(&POD_TYPE, ns, name)
        .ok_or_else(|| ApiError::not_found(&PODS, name))?;
    let container = container_of(&pod, q)?;
    let opts = LogOptions::parse(q).map_err(|e| {
        if e.code == 422 {
            ApiError::new(
                422,
                "Invalid",
                format!("PodLogOptions \"{name}\" is invalid: {}", e.message),
            )
        } else {
            ApiError::bad_request(e.message)
        }
    })?;
    let id = logs::validate(&pod, &container, opts.previous).map_err(ApiError::bad_request)?;
    let s = logs::stream(api.pods.runtime().as_ref(), &id, &opts);
    Ok(streaming(200, "text/plain", s))
}

async fn exec(api: &Arc<Api>, req: Req, ns: &str, name: &str, q: &Query) -> Result<Resp, ApiError> {
    let pod = api
        .store
        .get(&POD_TYPE, ns, name)
        .ok_or_else(|| ApiError::not_found(&PODS, name))?;
    let container = container_of(&pod, q)?;
    let spec = ExecSpec {
        container_id: String::new(),
        command: q.all("command"),
        stdin: q.flag("stdin"),
        stdout: q.flag("stdout"),
        stderr: q.flag("stderr"),
        tty: q.flag("tty"),
    };
    if !(spec.stdin || spec.stdout || spec.stderr) {
        return Err(ApiError::bad_request(
            "you must specify at least 1 of stdin, stdout, stderr",
        ));
    }
    if spec.command.is_empty() {
        return Err(ApiError::bad_request(
            "you must specify at least one command for the container",
        ));
    }
    let spdy = crate::spdy::is_spdy(&req);
    if !is_websocket(&req) && !spdy {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    if spdy && !crate::spdy::offers_v4(&req) {
        return Err(ApiError::new(
            403,
            "Forbidden",
            "unable to upgrade: no common stream protocol; the server offers v4.channel.k8s.io",
        ));
    }
    let proto = if spdy { None } else { exec::negotiate(&req) };
    if !spdy && proto.is_none() {
        return Err(ApiError::new(
            403,
            "Forbidden",
            "no common WebSocket subprotocol; the server offers v5.channel.k8s.io, v4.channel.k8s.io",
        ));
    }
    let proto = proto.flatten();
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let running = pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .chain(pod["status"]["initContainerStatuses"].as_array())
        .flatten()
        .any(|c| c["name"] == container.as_str() && c["state"]["running"].is_object());
    let id = api.pods.container_id(&uid, &container).await;
    let (pre, id) = match (running, id) {
        (true, Some(id)) => (None, id),
        _ => (
            Some(exec::internal_status(&format!(
                "unable to upgrade connection: container not found (\"{container}\")"
            ))),
            String::new(),
        ),
    };
    let spec = ExecSpec {
        container_id: id,
        ..spec
    };
    let start = api.pods.runtime().exec(&spec.container_id, spec.request());
    if spdy {
        let resp = crate::spdy::switching();
        tokio::spawn(crate::spdy::session(req, start, spec, pre));
        return Ok(resp);
    }
    let resp = exec::switching(&req, proto);
    let silent = api.faults.drop_exec_status();
    tokio::spawn(exec::session(req, proto, start, spec, pre, silent));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Query {
        Query::from_uri(&format!("/x?{s}").parse().unwrap())
    }

    #[test]
    fn container_defaulting_matches_the_api_server() {
        let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}});
        assert_eq!(container_of(&one, &q("")).unwrap(), "main");
        let two = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}, {"name": "wait"}], "initContainers": [{"name": "init"}]}});
        assert_eq!(
            container_of(&two, &q("")).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [main wait]"
        );
        assert_eq!(container_of(&two, &q("container=init")).unwrap(), "init");
        assert_eq!(
            container_of(&two, &q("container=x")).unwrap_err().message,
            "container x is not valid for pod p"
        );
    }
}
