//! `argoexec agent main`: watch the workflow's `WorkflowTaskSet`, run each task once on a
//! bounded number of workers, hand the results to the [`crate::patch`] batcher, and stop
//! when the controller labels the set completed or deletes it (contract §1.4; Argo v4.1.2
//! `AgentExecutor.Agent`).
//!
//! Argo watches with `metadata.name=<workflow>` and no resource version, starting over from
//! scratch whenever the watch ends. Here the set is listed once (same field selector, so the
//! same `list`/`watch` rules of Argo's agent role suffice), then watched from the list's
//! resource version, resumed from the last one seen, listed again only on 410 Gone.
//!
//! Beyond Argo: a task whose node already has a final result in `status.nodes` is not run
//! again, so a restarted agent container (`restartPolicy: OnFailure`) does not repeat the
//! HTTP calls already made; a task whose template cannot be read fails alone (Argo cannot
//! decode the whole set); on SIGTERM or an error the results not yet patched are patched
//! before exit; a worker that panics fails its node instead of leaving it pending.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argoexec_core::task_set::{self, NodeResult, phase};
use argoexec_core::template::Template;
use argoexec_kube::retry::{Backoff, retry, status};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, WatchEvent, WatchParams};
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::AgentConfig;
use crate::http::HttpRunner;
use crate::patch::{Patcher, Stats};
use crate::plugin::{PluginRunner, Retry, WorkflowMeta};

/// Why the agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The controller labelled the set completed.
    Completed,
    /// The set was deleted.
    Deleted,
    /// The process was asked to stop (SIGTERM); pending results were patched.
    Signal,
}

/// Why the agent failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Listing or watching the task set failed for good (403: the agent role's rule).
    #[error("cannot {verb} {plural} in namespace {namespace} (field selector metadata.name={name})", plural = task_set::PLURAL)]
    Api {
        /// `list` or `watch`.
        verb: &'static str,
        /// The namespace.
        namespace: String,
        /// The task set's name.
        name: String,
        /// The API's error.
        #[source]
        source: kube::Error,
    },
    /// The HTTP client could not be built.
    #[error("cannot set up HTTP tasks")]
    Http(#[source] crate::http::ClientError),
    /// The plugin client could not be built.
    #[error("cannot set up the plugin client")]
    Plugin(#[source] reqwest::Error),
}

/// The task-set resource for the dynamic API.
pub fn task_set_resource() -> ApiResource {
    ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: task_set::API_VERSION.into(),
        kind: task_set::KIND.into(),
        plural: task_set::PLURAL.into(),
    }
}

/// What a worker needs.
struct Runners {
    http: HttpRunner,
    plugins: PluginRunner,
}

/// The state of one agent.
struct Dispatcher {
    runners: Arc<Runners>,
    workers: Arc<Semaphore>,
    seen: Arc<Mutex<HashSet<String>>>,
    results: mpsc::UnboundedSender<(String, NodeResult)>,
    requeue: mpsc::UnboundedSender<(String, Template)>,
    tasks: JoinSet<()>,
}

/// Run the agent until the set completes, is deleted, or `shutdown` resolves.
///
/// # Errors
/// [`AgentError`] when the API or the clients fail for good.
pub async fn run(
    client: kube::Client,
    config: &AgentConfig,
    stats: Arc<Stats>,
    shutdown: impl Future<Output = ()>,
) -> Result<Stop, AgentError> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &config.namespace, &task_set_resource());
    let http = HttpRunner::new(
        Api::namespaced(client, &config.namespace),
        config.max_body,
        &config.ca_dir,
    )
    .map_err(AgentError::Http)?;
    let workflow = WorkflowMeta {
        name: config.workflow_name.clone(),
        namespace: config.namespace.clone(),
        uid: config.workflow_uid.clone(),
    };
    let plugins =
        PluginRunner::new(config.plugins.clone(), workflow, Retry::default()).map_err(AgentError::Plugin)?;
    let (results, results_rx) = mpsc::unbounded_channel();
    let (requeue, mut requeue_rx) = mpsc::unbounded_channel();
    let patcher = Patcher::new(
        api.clone(),
        config.workflow_name.clone(),
        config.patch_rate,
        stats,
    );
    let patcher = tokio::spawn(patcher.run(results_rx));
    let mut d = Dispatcher {
        runners: Arc::new(Runners { http, plugins }),
        workers: Arc::new(Semaphore::new(config.workers.max(1))),
        seen: Arc::default(),
        results,
        requeue,
        tasks: JoinSet::new(),
    };
    tracing::info!(workflow = %config.workflow_name, workers = config.workers, patch_rate = ?config.patch_rate,
        plugins = config.plugins.len(), "agent started");
    let outcome = {
        let follow = follow(&api, config, &mut d, &mut requeue_rx);
        tokio::pin!(follow);
        tokio::select! {
            r = &mut follow => r,
            () = shutdown => Ok(Stop::Signal),
        }
    };
    d.tasks.abort_all();
    let Dispatcher { results, requeue, .. } = d;
    drop((results, requeue));
    if matches!(outcome, Ok(Stop::Completed | Stop::Deleted)) {
        // Nobody reads the results any more (Argo drops them too).
        patcher.abort();
    } else {
        // A signal or an error: the patcher patches what is pending once its senders are
        // gone, so a restarted agent does not repeat calls whose results were in hand.
        let _ = tokio::time::timeout(Duration::from_secs(20), patcher).await;
    }
    tracing::info!(?outcome, "agent ends");
    outcome
}

/// List, then watch from the list's version; re-list only when the version is gone.
async fn follow(
    api: &Api<DynamicObject>,
    config: &AgentConfig,
    d: &mut Dispatcher,
    requeue_rx: &mut mpsc::UnboundedReceiver<(String, Template)>,
) -> Result<Stop, AgentError> {
    let name = &config.workflow_name;
    let selector = format!("metadata.name={name}");
    let api_err = |verb| {
        move |source| AgentError::Api {
            verb,
            namespace: config.namespace.clone(),
            name: name.clone(),
            source,
        }
    };
    'list: loop {
        let lp = ListParams::default().fields(&selector);
        let list = match retry(&Backoff::DEFAULT, || api.list(&lp)).await {
            Ok(l) => l,
            // An API outage is waited out, as the watch's is.
            Err(e) if argoexec_kube::retry::is_transient(&e) => {
                tracing::warn!(error = %e, "list failed, trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue 'list;
            }
            Err(e) => return Err(api_err("list")(e)),
        };
        for obj in &list.items {
            if let Some(stop) = d.consider(obj) {
                return Ok(stop);
            }
        }
        let mut version = list.metadata.resource_version.unwrap_or_default();
        loop {
            let wp = WatchParams::default().fields(&selector).timeout(290);
            let stream = match api.watch(&wp, &version).await {
                Ok(s) => s,
                Err(e) if status(&e) == Some(410) => continue 'list,
                Err(e) if argoexec_kube::retry::is_transient(&e) => {
                    tracing::warn!(error = %e, "watch failed, trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => return Err(api_err("watch")(e)),
            };
            let mut stream = stream.boxed();
            loop {
                let event = tokio::select! {
                    ev = stream.try_next() => ev,
                    Some((node, template)) = requeue_rx.recv() => {
                        d.dispatch(node, template);
                        continue;
                    }
                    // Finished workers are collected so the set does not grow for ever.
                    Some(_) = d.tasks.join_next(), if !d.tasks.is_empty() => continue,
                };
                match event {
                    Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                        if let Some(v) = o.metadata.resource_version.clone() {
                            version = v;
                        }
                        if let Some(stop) = d.consider(&o) {
                            return Ok(stop);
                        }
                    }
                    Ok(Some(WatchEvent::Deleted(_))) => return Ok(Stop::Deleted),
                    Ok(Some(WatchEvent::Bookmark(b))) => version = b.metadata.resource_version,
                    Ok(Some(WatchEvent::Error(e))) if e.code == 410 => continue 'list,
                    Ok(Some(WatchEvent::Error(e))) => {
                        tracing::warn!(code = e.code, message = %e.message, "watch error event, listing again");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue 'list;
                    }
                    // The server's time-out: watch again at once.
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "watch stream broke, resuming");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        break;
                    }
                }
            }
        }
    }
}

impl Dispatcher {
    /// Start the set's new tasks; a reason to stop when it is completed.
    fn consider(&mut self, obj: &DynamicObject) -> Option<Stop> {
        // Read in place: every status patch brings the whole set (results included) back.
        let completed = obj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(task_set::COMPLETED_LABEL));
        if completed.map(String::as_str) == Some("true") {
            return Some(Stop::Completed);
        }
        let value = &obj.data;
        let done: HashSet<&str> = value
            .pointer("/status/nodes")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, r)| {
                task_set::is_final_phase(r.get("phase").and_then(Value::as_str).unwrap_or_default())
            })
            .map(|(id, _)| id.as_str())
            .collect();
        let tasks = value.pointer("/spec/tasks").and_then(Value::as_object);
        for (node, raw) in tasks.into_iter().flatten() {
            if done.contains(node.as_str()) || !self.mark_seen(node) {
                continue;
            }
            match serde_json::from_value::<Template>(raw.clone()) {
                Ok(t) => self.start(node.clone(), t),
                Err(e) => {
                    let r = error(format!("error processing task: cannot read its template: {e}"));
                    let _ = self.results.send((node.clone(), r));
                }
            }
        }
        None
    }

    /// Whether `node` was not seen before (and is now).
    fn mark_seen(&self, node: &str) -> bool {
        self.seen
            .lock()
            .map(|mut s| s.insert(node.to_string()))
            .unwrap_or(false)
    }

    /// A requeued task: run it again with its old template, as Argo does.
    fn dispatch(&mut self, node: String, template: Template) {
        if self.mark_seen(&node) {
            self.start(node, template);
        }
    }

    fn start(&mut self, node: String, template: Template) {
        let (runners, workers, seen) = (self.runners.clone(), self.workers.clone(), self.seen.clone());
        let (results, requeue) = (self.results.clone(), self.requeue.clone());
        self.tasks.spawn(async move {
            let Ok(_permit) = workers.acquire_owned().await else {
                return;
            };
            tracing::info!(%node, "processing task");
            // A panicking task fails alone where panics unwind; the image's build aborts, and
            // the whole agent then ends with exit 64 as Argo's does (argoexec_core::panic).
            let run = std::panic::AssertUnwindSafe(runners.run(&template));
            let (result, again) = futures::FutureExt::catch_unwind(run).await.unwrap_or_else(|_| {
                (
                    error("error processing task: the agent's worker panicked".into()),
                    None,
                )
            });
            tracing::info!(%node, phase = %result.phase, "task done");
            if !result.phase.is_empty() {
                let _ = results.send((node.clone(), result));
            }
            if let Some(after) = again {
                drop(_permit);
                tokio::time::sleep(after).await;
                if let Ok(mut s) = seen.lock() {
                    s.remove(&node);
                }
                let _ = requeue.send((node, template));
            }
        });
    }
}

impl Runners {
    /// One task's result, and when to run it again.
    async fn run(&self, template: &Template) -> (NodeResult, Option<Duration>) {
        if let Some(h) = &template.http {
            (self.http.execute(h).await, None)
        } else if template.plugin.is_some() {
            self.plugins.execute(template).await
        } else {
            let kind = type_of(template);
            (
                error(format!(
                    "error processing task: agent cannot execute: unknown task type: {kind}"
                )),
                None,
            )
        }
    }
}

/// Argo's name of a template's type (`Container`, `Steps`, …), for the unknown-type error.
fn type_of(t: &Template) -> &'static str {
    let known = [
        (t.container.is_some(), "Container"),
        (t.container_set.is_some(), "ContainerSet"),
        (t.script.is_some(), "Script"),
        (t.resource.is_some(), "Resource"),
        (t.data.is_some(), "Data"),
        (t.extra.contains_key("steps"), "Steps"),
        (t.extra.contains_key("dag"), "DAG"),
        (t.extra.contains_key("suspend"), "Suspend"),
    ];
    known.iter().find(|(has, _)| *has).map_or("", |(_, name)| name)
}

fn error(message: String) -> NodeResult {
    NodeResult {
        phase: phase::ERROR.into(),
        message,
        ..NodeResult::default()
    }
}
