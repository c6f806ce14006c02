//! Plugin calls against the scripted plugin routes of [`WebServer`]: the bearer token and
//! workflow sent, a 503 tried 5 times and its body the message, another status a failure
//! naming it, a requeue asked for by an unfinished node, and no plugin taking the template.

use std::time::Duration;

use argoexec_agent::config::PluginEndpoint;
use argoexec_agent::plugin::{PluginRunner, Retry, WorkflowMeta};
use argoexec_core::template::Template;
use argoexec_testkit::web::WebServer;

fn runner(web: &WebServer, behaviours: &[&str]) -> PluginRunner {
    let plugins = behaviours
        .iter()
        .map(|b| PluginEndpoint {
            name: format!("{b}-executor-plugin"),
            address: format!("{}/plugin/{b}", web.url()),
            token: format!("t-{b}"),
        })
        .collect();
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "default".into(),
        uid: "u".into(),
    };
    let fast = Retry {
        attempts: 5,
        first_wait: Duration::from_millis(5),
        timeout: Duration::from_secs(10),
    };
    PluginRunner::new(plugins, wf, fast).unwrap()
}

fn template(name: &str) -> Template {
    Template::from_json(&format!(
        r#"{{"name":"{name}","plugin":{{"hello":{{"text":"hi"}}}}}}"#
    ))
    .unwrap()
}

#[tokio::test]
async fn the_first_plugin_with_a_node_answers() {
    let web = WebServer::http();
    let (node, requeue) = runner(&web, &["decline", "mine"]).execute(&template("t")).await;
    assert_eq!(node.phase, "Succeeded");
    assert_eq!(
        node.outputs.unwrap().result.as_deref(),
        Some("t-mine|wf|t"),
        "token, workflow, template"
    );
    assert_eq!(requeue, None);
    let (node, _) = runner(&web, &["decline"]).execute(&template("t")).await;
    assert_eq!(
        (node.phase.as_str(), node.message.as_str()),
        ("Failed", "no plugin executed the template")
    );
}

#[tokio::test]
async fn busy_is_retried_and_other_statuses_fail() {
    let web = WebServer::http();
    let (node, _) = runner(&web, &["busy", "mine"]).execute(&template("t")).await;
    assert_eq!((node.phase.as_str(), node.message.as_str()), ("Failed", "busy"));
    assert_eq!(web.plugin_calls("busy"), 5, "5 attempts");
    assert_eq!(
        web.plugin_calls("mine"),
        0,
        "a failing plugin ends the offer, as Argo"
    );
    let (node, _) = runner(&web, &["odd"]).execute(&template("t")).await;
    assert_eq!(node.message, "500 Internal Server Error: unknown behaviour odd");
}

#[tokio::test]
async fn an_unfinished_node_is_requeued() {
    let web = WebServer::http();
    let r = runner(&web, &["requeue"]);
    let (node, requeue) = r.execute(&template("t")).await;
    assert_eq!(
        (node.phase.as_str(), node.message.as_str()),
        ("Running", "working")
    );
    assert_eq!(requeue, Some(Duration::from_millis(200)));
    let (node, requeue) = r.execute(&template("t")).await;
    assert_eq!(node.phase, "Succeeded");
    assert_eq!(requeue, None);
}
