//! The wait loop against a scripted API server (a `tower` service behind `kube::Client`):
//! a watch answered with 410 Expired is followed by a fresh read, a forbidden watch falls
//! back to polling, a Modified event meeting the condition ends the wait without another
//! read, a Deleted event ends it with an error. Each test checks the exact requests made.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argoexec_resource::ResourceError;
use argoexec_resource::condition::Condition;
use argoexec_resource::target::{ObjectRef, Target};
use argoexec_resource::wait::{Conditions, wait};
use kube::client::Body;
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::json;

type Script = Arc<Mutex<VecDeque<(u16, String)>>>;

/// A client answering each request with the next scripted (status, body), recording
/// `GET` or `WATCH` (with the resourceVersion) per request.
fn client(script: Vec<(u16, String)>) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
    let script: Script = Arc::new(Mutex::new(script.into()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let service = tower::service_fn(move |req: http::Request<Body>| {
        let uri = req.uri().to_string();
        let entry = if uri.contains("watch=true") {
            let rv = uri
                .split("resourceVersion=")
                .nth(1)
                .map(|s| s.split('&').next().unwrap_or(""))
                .unwrap_or("");
            format!("WATCH {rv}")
        } else {
            "GET".to_string()
        };
        seen2.lock().unwrap().push(entry);
        let (status, body) = script.lock().unwrap().pop_front().expect("an unscripted request");
        async move {
            Ok::<_, std::convert::Infallible>(
                http::Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(body.into_bytes()))
                    .unwrap(),
            )
        }
    });
    (kube::Client::new(service, "default"), seen)
}

fn cm(rv: &str, ready: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cm", "namespace": "default", "resourceVersion": rv}, "data": {"ready": ready}})
}

fn get(rv: &str, ready: &str) -> (u16, String) {
    (200, cm(rv, ready).to_string())
}

fn events(evs: &[serde_json::Value]) -> (u16, String) {
    (200, evs.iter().map(|e| format!("{e}\n")).collect())
}

fn obj() -> ObjectRef {
    ObjectRef {
        target: Target {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "ConfigMap"),
                "configmaps",
            ),
            namespaced: true,
        },
        namespace: Some("default".into()),
        name: "cm".into(),
    }
}

fn ready() -> Conditions {
    Conditions {
        success: Condition::parse("data.ready == yes").unwrap(),
        failure: Condition::default(),
    }
}

#[tokio::test]
async fn expired_watch_reads_again() {
    let expired = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "too old resource version", "reason": "Expired", "code": 410}});
    let (c, seen) = client(vec![get("1", "no"), events(&[expired]), get("5", "yes")]);
    let done = wait(&c, &obj(), &ready(), Duration::from_secs(60)).await.unwrap();
    assert_eq!(done["metadata"]["resourceVersion"], "5");
    assert_eq!(*seen.lock().unwrap(), ["GET", "WATCH 1", "GET"]);
}

#[tokio::test]
async fn forbidden_watch_polls() {
    let forbidden = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "configmaps is forbidden: cannot watch", "reason": "Forbidden", "code": 403});
    let (c, seen) = client(vec![
        get("1", "no"),
        (403, forbidden.to_string()),
        get("2", "no"),
        get("3", "yes"),
    ]);
    let done = wait(&c, &obj(), &ready(), Duration::from_millis(5))
        .await
        .unwrap();
    assert_eq!(done["metadata"]["resourceVersion"], "3");
    assert_eq!(*seen.lock().unwrap(), ["GET", "WATCH 1", "GET", "GET"]);
}

#[tokio::test]
async fn a_modified_event_ends_the_wait_and_the_watch_resumes_from_the_last_version() {
    let (c, seen) = client(vec![
        get("1", "no"),
        events(&[json!({"type": "MODIFIED", "object": cm("2", "no")})]),
        events(&[json!({"type": "MODIFIED", "object": cm("3", "yes")})]),
    ]);
    let done = wait(&c, &obj(), &ready(), Duration::from_secs(60)).await.unwrap();
    assert_eq!(done["metadata"]["resourceVersion"], "3");
    assert_eq!(*seen.lock().unwrap(), ["GET", "WATCH 1", "WATCH 2"]);
}

#[tokio::test]
async fn deletion_while_waiting_is_an_error() {
    let (c, _) = client(vec![
        get("1", "no"),
        events(&[json!({"type": "DELETED", "object": cm("2", "no")})]),
    ]);
    let e = wait(&c, &obj(), &ready(), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(e, ResourceError::Deleted { .. }), "{e}");
    let missing = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "configmaps \"cm\" not found", "reason": "NotFound", "code": 404});
    let (c, _) = client(vec![(404, missing.to_string())]);
    let e = wait(&c, &obj(), &ready(), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the resource configmap./cm in namespace default has been deleted while its status was still being checked"
    );
}
