//! `argoexec run` of HTTP-template entrypoints: the task set and the agent pod on the run's
//! node (`argoexec agent init|main` in the executor image, `restartPolicy: OnFailure`, the
//! workflow's service account with its token Secret mounted, the deploy kit's agent role),
//! the step's result read back from the task set's status. The shipped example calls a
//! local server; failure by status and a plugin step nobody takes end as Argo's do; the
//! project's hello plugin (argoexec-plugin-hello:dev, a sidecar) answers its template with
//! the token `agent init` wrote and declines another.

mod run_support;

use argoexec_testkit::web::WebServer;
use run_support::*;
use serde_json::Value;

#[test]
fn the_http_example_posts_and_returns_the_body() {
    if !docker_available() {
        return;
    }
    let web = WebServer::http();
    let url = format!("url={}/echo", web.url());
    let r = run_file(
        &example("http/http-template.yaml"),
        "emissary",
        &["-p", &url],
        None,
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    let echo: Value = serde_json::from_str(r.result().expect("outputs.result")).unwrap();
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["body"], r#"{"from": "argoexec-rs"}"#);
    assert_eq!(echo["headers"]["content-type"], "application/json");
    assert_eq!(r.json["report"]["via"], "WorkflowTaskSet", "{}", r.dump());
}

#[test]
fn failures_end_as_argo_s() {
    if !docker_available() {
        return;
    }
    let web = WebServer::http();
    let wf = format!(
        r#"{{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {{"generateName": "http-fail-"}},
        "spec": {{"entrypoint": "call", "templates": [{{"name": "call", "http": {{"url": "{}/status/418"}}}}]}}}}"#,
        web.url()
    );
    let r = run_yaml(&wf, "emissary", &[]);
    assert_eq!(r.phase(), "Failed", "{}", r.dump());
    assert_eq!(r.message(), "received non-2xx response code: 418");
    assert_eq!(r.result(), Some("status 418"));
    let wf = r#"{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"generateName": "plugin-"},
        "spec": {"entrypoint": "p", "templates": [{"name": "p", "plugin": {"hello": {"text": "hi"}}}]}}"#;
    let r = run_yaml(wf, "emissary", &[]);
    assert_eq!(r.phase(), "Failed", "{}", r.dump());
    assert_eq!(r.message(), "no plugin executed the template");
}

#[test]
fn the_hello_plugin_answers_its_template_and_declines_another() {
    if !docker_available() {
        return;
    }
    let plugin = example("http/hello-plugin.yaml");
    let plugin = plugin.to_str().unwrap();
    let r = run_file(
        &example("http/plugin-template.yaml"),
        "emissary",
        &["--executor-plugin", plugin],
        None,
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(
        r.result(),
        Some("hello, argoexec-rs"),
        "the token matched and the plugin answered"
    );
    let wf = r#"{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"generateName": "other-"},
        "spec": {"entrypoint": "p", "templates": [{"name": "p", "plugin": {"other": {}}}]}}"#;
    let r = run_yaml(wf, "emissary", &["--executor-plugin", plugin]);
    assert_eq!(r.phase(), "Failed", "{}", r.dump());
    assert_eq!(r.message(), "no plugin executed the template", "declined");
}
