//! Executor-plugin tasks (`template.plugin`), as Argo's agent calls its plugin sidecars
//! (contract §1.4; Argo v4.1.2 `workflow/util/plugin/plugin.go` and `executePluginTemplate`).
//!
//! The template is offered to each plugin in `ARGO_PLUGIN_NAMES` order as
//! `POST <address>/api/v1/template.execute` with the plugin's bearer token and
//! `{"workflow":{"metadata":{name,namespace,uid}},"template":…}`; the first answer carrying a
//! `node` is the result. An answer without one (`{}`) means "not mine"; a 404 means the
//! plugin does not implement the method, and it is not asked again for the agent's life.
//! A `requeue` (Go duration) asks for the task to be run again later unless the node
//! succeeded. Each attempt has 30 s; transient failures (no connection, a time-out, 503) are
//! tried 5 times with waits of about 1, 2, 4 and 8 s. When no plugin answers with a node the
//! task fails with `no plugin executed the template`.
//!
//! Unlike Argo, an answer whose node has no phase is a failure naming the plugin (Argo
//! drops it, and the node stays pending for ever).

use std::sync::Mutex;
use std::time::Duration;

use argoexec_core::task_set::{NodeResult, phase};
use argoexec_core::template::Template;
use argoexec_core::template::container::parse_go_duration;
use serde::Deserialize;
use serde_json::json;

use crate::config::PluginEndpoint;

/// The method path every executor plugin serves.
pub const EXECUTE_PATH: &str = "/api/v1/template.execute";

/// Retries of one call: attempts, the first wait, its factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// Attempts in all.
    pub attempts: u32,
    /// The wait after the first failure (doubled each time, 20 % jitter).
    pub first_wait: Duration,
    /// Each attempt's time limit.
    pub timeout: Duration,
}

impl Default for Retry {
    /// Argo's: 5 attempts from 1 s, 30 s each.
    fn default() -> Self {
        Self {
            attempts: 5,
            first_wait: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
        }
    }
}

/// The workflow a plugin is told about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowMeta {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
}

/// A plugin's answer.
#[derive(Debug, Default, Deserialize)]
struct Reply {
    #[serde(default)]
    node: Option<NodeResult>,
    #[serde(default)]
    requeue: Option<String>,
}

/// Runs plugin tasks against the pod's plugin sidecars.
#[derive(Debug)]
pub struct PluginRunner {
    plugins: Vec<PluginEndpoint>,
    /// Plugins that answered 404: not asked again.
    unsupported: Mutex<Vec<bool>>,
    client: reqwest::Client,
    retry: Retry,
    workflow: WorkflowMeta,
}

/// One call's outcome.
enum Call {
    Node(Box<NodeResult>, Option<Duration>),
    NotMine,
    Unsupported,
}

impl PluginRunner {
    /// A runner for `plugins` (plain HTTP on localhost, as Argo's sidecars serve).
    ///
    /// # Errors
    /// reqwest's, when the client cannot be built.
    pub fn new(
        plugins: Vec<PluginEndpoint>,
        workflow: WorkflowMeta,
        retry: Retry,
    ) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(retry.timeout)
            .no_proxy()
            .user_agent(concat!("argoexec-rs/", env!("CARGO_PKG_VERSION"), " agent"))
            .build()?;
        Ok(Self {
            unsupported: Mutex::new(vec![false; plugins.len()]),
            plugins,
            client,
            retry,
            workflow,
        })
    }

    /// Offer `template` to each plugin; the result and, when asked for, when to run it again.
    pub async fn execute(&self, template: &Template) -> (NodeResult, Option<Duration>) {
        let body = json!({
            "workflow": {"metadata": {"name": self.workflow.name, "namespace": self.workflow.namespace,
                                      "uid": self.workflow.uid}},
            "template": template,
        });
        for (i, p) in self.plugins.iter().enumerate() {
            if self.unsupported.lock().map(|u| u[i]).unwrap_or(false) {
                continue;
            }
            match self.call(p, &body).await {
                Ok(Call::Node(node, requeue)) => return (*node, requeue),
                Ok(Call::NotMine) => {}
                Ok(Call::Unsupported) => {
                    tracing::info!(plugin = %p.name, "plugin does not serve {EXECUTE_PATH}; not asked again");
                    if let Ok(mut u) = self.unsupported.lock() {
                        u[i] = true;
                    }
                }
                Err(message) => return (failed(message), None),
            }
        }
        (failed("no plugin executed the template".into()), None)
    }

    async fn call(&self, p: &PluginEndpoint, body: &serde_json::Value) -> Result<Call, String> {
        let url = format!("{}{EXECUTE_PATH}", p.address.trim_end_matches('/'));
        let mut wait = self.retry.first_wait;
        let mut attempt = 1;
        loop {
            match self.once(p, &url, body).await {
                Err(Attempt::Transient(message)) if attempt < self.retry.attempts => {
                    tracing::warn!(plugin = %p.name, attempt, %message, "plugin call failed, retrying");
                    tokio::time::sleep(wait + wait.mul_f64(0.2 * argoexec_kube::retry::jitter_sample()))
                        .await;
                    wait *= 2;
                    attempt += 1;
                }
                Err(Attempt::Transient(message) | Attempt::Final(message)) => return Err(message),
                Ok(call) => return Ok(call),
            }
        }
    }

    async fn once(&self, p: &PluginEndpoint, url: &str, body: &serde_json::Value) -> Result<Call, Attempt> {
        let resp = self
            .client
            .post(url)
            .bearer_auth(&p.token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| Attempt::Transient(format!("Post {url:?}: {}", argoexec_kube::chain(&e))))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| Attempt::Transient(format!("Post {url:?}: {}", argoexec_kube::chain(&e))))?;
        match status.as_u16() {
            200 => {}
            404 => return Ok(Call::Unsupported),
            503 => return Err(Attempt::Transient(text)),
            _ => return Err(Attempt::Final(format!("{status}: {text}"))),
        }
        if text.trim().is_empty() {
            return Err(Attempt::Final("EOF".into()));
        }
        let reply: Reply = serde_json::from_str(&text).map_err(|e| Attempt::Final(e.to_string()))?;
        let Some(mut node) = reply.node else {
            return Ok(Call::NotMine);
        };
        if node.phase.is_empty() {
            node = failed(format!("plugin {} answered a node without a phase", p.name));
        }
        let requeue = reply
            .requeue
            .as_deref()
            .and_then(parse_go_duration)
            .filter(|d| !d.is_zero() && node.phase != phase::SUCCEEDED);
        Ok(Call::Node(Box::new(node), requeue))
    }
}

/// One attempt's failure.
enum Attempt {
    /// Another attempt may succeed.
    Transient(String),
    /// It will not.
    Final(String),
}

fn failed(message: String) -> NodeResult {
    NodeResult {
        phase: phase::FAILED.into(),
        message,
        ..NodeResult::default()
    }
}
