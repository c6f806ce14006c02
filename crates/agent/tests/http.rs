//! HTTP tasks against a real local HTTP and HTTPS server ([`WebServer`]): success and the
//! body as the result, failure by status and by condition, the time-out, redirects (followed,
//! and too many), the body limit, a refused connection, and TLS: a self-signed server
//! refused, accepted with `insecureSkipVerify`, and trusted through the agent's CA directory.
//! No API server is involved (no secret headers here; tests/agent.rs has them).

use std::path::Path;

use argoexec_agent::http::HttpRunner;
use argoexec_core::task_set::NodeResult;
use argoexec_core::template::HttpTemplate;
use argoexec_testkit::web::WebServer;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

/// A runner whose secret API is never called.
fn runner(max_body: usize, ca_dir: &Path) -> HttpRunner {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    HttpRunner::new(
        kube::Api::<Secret>::namespaced(client, "default"),
        max_body,
        ca_dir,
    )
    .unwrap()
}

async fn call(h: Value) -> NodeResult {
    runner(1 << 20, Path::new("/nonexistent")).execute(&task(h)).await
}

fn task(h: Value) -> HttpTemplate {
    serde_json::from_value(h).unwrap()
}

fn result(r: &NodeResult) -> &str {
    r.outputs
        .as_ref()
        .and_then(|o| o.result.as_deref())
        .unwrap_or("<none>")
}

#[tokio::test]
async fn success_sends_method_headers_and_body_and_keeps_the_response() {
    let web = WebServer::http();
    let r = call(json!({"method": "POST", "url": format!("{}/echo", web.url()),
        "headers": [{"name": "X-Trace", "value": "t1"}], "body": "{\"a\":1}"}))
    .await;
    assert_eq!(r.phase, "Succeeded", "{r:?}");
    let echo: Value = serde_json::from_str(result(&r)).unwrap();
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["headers"]["x-trace"], "t1");
    assert_eq!(echo["body"], "{\"a\":1}");
    let r = call(json!({"url": format!("{}/echo", web.url()), "bodyFrom": {"bytes": "AAEC"}})).await;
    let echo: Value = serde_json::from_str(result(&r)).unwrap();
    assert_eq!(echo["method"], "GET", "an empty method is GET");
    assert_eq!(echo["body"], "\u{0}\u{1}\u{2}");
}

#[tokio::test]
async fn failure_by_status_and_by_condition() {
    let web = WebServer::http();
    let r = call(json!({"url": format!("{}/status/503", web.url())})).await;
    assert_eq!(
        (r.phase.as_str(), r.message.as_str()),
        ("Failed", "received non-2xx response code: 503")
    );
    assert_eq!(result(&r), "status 503");
    let r = call(json!({"url": format!("{}/status/404", web.url()),
        "successCondition": "response.statusCode == 404 && response.body contains \"404\""}))
    .await;
    assert_eq!(r.phase, "Succeeded", "a condition may accept a 404: {r:?}");
    let r = call(json!({"url": format!("{}/echo", web.url()),
        "successCondition": "response.headers[\"Content-Type\"][0] == \"text/html\""}))
    .await;
    assert_eq!(r.phase, "Failed");
    assert!(r.message.ends_with("evaluated false"), "{}", r.message);
}

#[tokio::test]
async fn timeout_bounds_the_whole_call() {
    let web = WebServer::http();
    let started = std::time::Instant::now();
    let r = call(json!({"url": format!("{}/slow/20000", web.url()), "timeoutSeconds": 1})).await;
    assert_eq!(r.phase, "Failed");
    assert!(
        r.message
            .contains("context deadline exceeded (timeoutSeconds: 1)"),
        "{}",
        r.message
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "ended by the deadline, not the server"
    );
    let r = call(json!({"url": format!("{}/slow/10", web.url()), "timeoutSeconds": 5})).await;
    assert_eq!(r.phase, "Succeeded");
}

#[tokio::test]
async fn redirects_are_followed_up_to_ten() {
    let web = WebServer::http();
    let r = call(json!({"method": "POST", "url": format!("{}/redirect/3", web.url()), "body": "x"})).await;
    assert_eq!(r.phase, "Succeeded", "{r:?}");
    let echo: Value = serde_json::from_str(result(&r)).unwrap();
    assert_eq!(echo["path"], "/echo");
    assert_eq!(
        echo["method"], "GET",
        "a 302 after a POST is a GET, as Go's client does"
    );
    // Go's limit, exactly: the 9th redirect is followed, the 10th ends the call.
    let r = call(json!({"url": format!("{}/redirect/8", web.url())})).await;
    assert_eq!(r.phase, "Succeeded", "9 redirects: {r:?}");
    let r = call(json!({"url": format!("{}/redirect/9", web.url())})).await;
    assert_eq!(r.phase, "Failed");
    assert!(r.message.contains("stopped after 10 redirects"), "{}", r.message);
}

#[tokio::test]
async fn a_body_over_the_limit_fails_with_the_limit_named() {
    let web = WebServer::http();
    let d = tempfile::tempdir().unwrap();
    let small = runner(1000, d.path());
    let r = small
        .execute(&task(json!({"url": format!("{}/big/1000", web.url())})))
        .await;
    assert_eq!(result(&r).len(), 1000);
    let r = small
        .execute(&task(json!({"url": format!("{}/big/5000000", web.url())})))
        .await;
    assert_eq!(r.phase, "Failed");
    assert!(
        r.message.contains("larger than 1000 bytes") && r.message.contains("ARGOEXEC_AGENT_MAX_BODY_BYTES")
    );
    assert!(r.outputs.is_none());
}

#[tokio::test]
async fn a_refused_connection_names_the_request() {
    let port = argoexec_testkit::free_port();
    let r = call(json!({"url": format!("http://127.0.0.1:{port}/x")})).await;
    assert_eq!(r.phase, "Failed");
    assert!(
        r.message
            .starts_with(&format!("Get \"http://127.0.0.1:{port}/x\": ")),
        "{}",
        r.message
    );
    let r = call(json!({"url": "http://127.0.0.1:1/", "method": "BAD METHOD"})).await;
    assert!(r.message.contains("invalid method"), "{}", r.message);
}

#[tokio::test]
async fn self_signed_servers_need_insecure_or_the_ca_directory() {
    let web = WebServer::https();
    let url = format!("{}/echo", web.url());
    let r = call(json!({"url": url})).await;
    assert_eq!(r.phase, "Failed", "verified by default: {r:?}");
    assert!(r.message.to_lowercase().contains("certificate"), "{}", r.message);
    let r = call(json!({"url": url, "insecureSkipVerify": true})).await;
    assert_eq!(r.phase, "Succeeded", "{r:?}");
    // The controller's argo-workflows-agent-ca-certificates mount, as a Secret volume lays it out.
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("..data")).unwrap();
    std::fs::write(d.path().join("ca.crt"), web.ca_pem().unwrap()).unwrap();
    let r = runner(1 << 20, d.path())
        .execute(&task(json!({"url": url})))
        .await;
    assert_eq!(r.phase, "Succeeded", "trusted through the CA directory: {r:?}");
}
