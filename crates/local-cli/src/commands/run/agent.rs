//! `argoexec run` of an `http:` or `plugin:` entrypoint, as Argo's controller runs one
//! (contract §1.4): the workflow's `WorkflowTaskSet` with the step's task, the agent pod of
//! the pod builder (`argoexec agent init|main` in the executor image, `restartPolicy:
//! OnFailure`) running as the workflow's service account under the deploy kit's agent role,
//! with that account's token Secret mounted as the controller mounts it. The step's result
//! is read back from the task set's status; then the set is labelled completed, as the
//! controller does when the workflow ends, and the agent exits.
//!
//! The agent patches every second here (a controller's default is its 10 s requeue time),
//! so a run ends soon after its call. Executor plugins come from `--executor-plugin FILE`
//! (Argo's `ExecutorPlugin` manifest, or the ConfigMap `argo executor-plugin build` makes of
//! it), each a sidecar of the agent pod; without any, a `plugin:` step fails with Argo's
//! `no plugin executed the template`.

use std::time::Duration;

use anyhow::Context;
use argoexec_core::task_set::{self, COMPLETED_LABEL, NodeResult};
use argoexec_node_server::NodeServer;
use argoexec_podbuilder::build::agent::{AgentPlugin, AgentPodInfo, agent_pod, task_set};
use futures::TryStreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::outcome::{Outcome, Phase};
use super::session::Session;

/// How the patch period is set on a local run.
const PATCH_RATE: &str = "1s";

/// Whether the template runs in the agent pod rather than a pod of its own.
pub fn is_agent_template(t: &argoexec_core::Template) -> bool {
    t.http.is_some() || t.plugin.is_some()
}

/// Run the step in an agent pod on `server`; its outcome.
///
/// # Errors
/// The node refusing an object, the pod not starting, the watch failing.
pub async fn run(
    server: NodeServer,
    plan: &crate::commands::plan::Plan,
    args: &super::Args,
) -> anyhow::Result<Outcome> {
    let (executor_image, log_level, keep) = (&args.executor_image, &args.executor_loglevel, args.keep);
    let plugins = plugins_from(&args.executor_plugins)?;
    let wf = &plan.wf.meta;
    let sa = plan
        .wf
        .service_account_name
        .clone()
        .unwrap_or_else(|| "default".into());
    let client = super::objects::admin_client(&server).await?;
    let mut info = AgentPodInfo::new(&sa);
    info.patch_rate = PATCH_RATE.into();
    create_token_secret(&server, &client, &wf.namespace, &sa, &info.token_secret).await?;
    server.rbac().load_str(
        &super::kit::agent_rbac(&wf.namespace, &sa)?,
        "the deploy kit's agent role (deploy/rbac/agent.yaml)",
    )?;
    let node_id = wf.name.clone();
    let set = task_set(wf, [(node_id.clone(), plan.template.clone())].into());
    let sets: Api<DynamicObject> = Api::namespaced_with(client, &wf.namespace, &resource());
    let obj: DynamicObject = serde_json::from_value(serde_json::to_value(&set)?)?;
    sets.create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("create WorkflowTaskSet {}", wf.name))?;
    let opts = plan.build_options(executor_image, log_level)?;
    let pod = agent_pod(wf, &plugins, &info, &opts)?;
    tracing::info!(pod = ?pod.metadata.name, "agent pod");
    let session = Session::start_loaded(server, pod).await?;
    let result = tokio::select! {
        r = result_of(&sets, &wf.name, &node_id) => r,
        status = session.finished() => {
            let message = Session::start_failure(&status)
                .unwrap_or_else(|| format!("the agent pod ended {} before reporting", status.phase.unwrap_or_default()));
            session.cleanup().await?;
            return Ok(error_outcome(message));
        }
    };
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            session.cleanup().await?;
            return Err(e);
        }
    };
    // The workflow is done: the controller labels the set completed and the agent ends.
    let label = Patch::Merge(json!({"metadata": {"labels": {COMPLETED_LABEL: "true"}}}));
    if let Err(e) = sets.patch(&wf.name, &PatchParams::default(), &label).await {
        session.cleanup().await?;
        return Err(e).context("label the WorkflowTaskSet completed");
    }
    // Main ends by itself; plugin sidecars never do (Argo's controller deletes the pod).
    let mut status = session.status();
    let main_done = status.wait_for(|st| {
        argoexec_node::status::all(st)
            .any(|c| c.name == "main" && c.state.as_ref().is_some_and(|s| s.terminated.is_some()))
    });
    if tokio::time::timeout(Duration::from_secs(30), main_done)
        .await
        .is_err()
    {
        tracing::warn!("the agent did not end within 30 s of the completed label");
    }
    if keep {
        session.keep();
    } else {
        session.cleanup().await?;
    }
    Ok(outcome_of(result))
}

/// The plugin sidecars of `files`: each an `ExecutorPlugin` (`spec.sidecar.container`) or
/// its ConfigMap (`data["sidecar.container"]`, YAML); a container without a name is
/// `<plugin>-executor-plugin`, as Argo's plugin build names it.
///
/// # Errors
/// A file that cannot be read or is neither form.
pub fn plugins_from(files: &[std::path::PathBuf]) -> anyhow::Result<Vec<AgentPlugin>> {
    let mut plugins = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?;
        for doc in super::objects::documents(&text, &f.display().to_string())? {
            let name = doc["metadata"]["name"].as_str().unwrap_or("plugin").to_string();
            let mut container: Value = match doc["kind"].as_str() {
                Some("ExecutorPlugin") => doc["spec"]["sidecar"]["container"].clone(),
                Some("ConfigMap") => {
                    let raw = doc["data"]["sidecar.container"].as_str().unwrap_or_default();
                    serde_saphyr::from_str(raw)
                        .with_context(|| format!("{}: data[sidecar.container]", f.display()))?
                }
                other => anyhow::bail!(
                    "{}: {other:?} is not an ExecutorPlugin or its ConfigMap",
                    f.display()
                ),
            };
            anyhow::ensure!(
                container.is_object(),
                "{}: plugin {name} has no sidecar container",
                f.display()
            );
            if container["name"].as_str().is_none_or(str::is_empty) {
                let base = name.strip_suffix("-executor-plugin").unwrap_or(&name);
                container["name"] = json!(format!("{base}-executor-plugin"));
            }
            let container = serde_json::from_value(container)
                .with_context(|| format!("{}: plugin {name}'s sidecar container", f.display()))?;
            plugins.push(AgentPlugin { container });
        }
    }
    Ok(plugins)
}

/// `argoexec render` of an agent template: the task set and the agent pod a controller
/// with default settings (10 s patch rate, no plugins) creates.
///
/// # Errors
/// Bad build options, or a value that cannot be serialised.
pub fn render(plan: &crate::commands::plan::Plan, executor_image: &str) -> anyhow::Result<String> {
    let wf = &plan.wf.meta;
    let sa = plan.wf.service_account_name.as_deref().unwrap_or("default");
    let set = task_set(wf, [(wf.name.clone(), plan.template.clone())].into());
    let opts = plan.build_options(executor_image, "info")?;
    let pod = agent_pod(wf, &[], &AgentPodInfo::new(sa), &opts)?;
    let mut out = serde_saphyr::to_string(&set).context("cannot serialise the task set")?;
    out.push_str("---\n");
    out.push_str(&serde_saphyr::to_string(&pod).context("cannot serialise the pod")?);
    Ok(out)
}

/// The account's token Secret, as the cluster keeps it for a service account (the agent
/// pod mounts it instead of a projected token).
async fn create_token_secret(
    server: &NodeServer,
    client: &kube::Client,
    ns: &str,
    sa: &str,
    name: &str,
) -> anyhow::Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "annotations": {"kubernetes.io/service-account.name": sa}},
        "type": "kubernetes.io/service-account-token",
        "stringData": {"token": server.issue_token(ns, sa, None), "ca.crt": server.ca_pem(), "namespace": ns},
    }))?;
    Api::<Secret>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("create the service account's token Secret {name}"))?;
    Ok(())
}

/// The node's final result, from a watch of the set (resumed from the last version seen
/// when the server ends it, so a long call or a requeued plugin is waited for).
async fn result_of(sets: &Api<DynamicObject>, name: &str, node: &str) -> anyhow::Result<NodeResult> {
    let wp = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut version = "0".to_string();
    loop {
        let mut stream = Box::pin(
            sets.watch(&wp, &version)
                .await
                .context("watch the WorkflowTaskSet")?,
        );
        while let Some(ev) = stream.try_next().await.context("watch the WorkflowTaskSet")? {
            let o = match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => o,
                WatchEvent::Deleted(_) => {
                    anyhow::bail!("WorkflowTaskSet {name} was deleted before the step's result")
                }
                WatchEvent::Bookmark(b) => {
                    version = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(e) => anyhow::bail!("watch of WorkflowTaskSet {name}: {}", e.message),
            };
            version = o.metadata.resource_version.clone().unwrap_or(version);
            let v = serde_json::to_value(&o)?;
            let r = v
                .pointer(&format!("/status/nodes/{node}"))
                .cloned()
                .unwrap_or(Value::Null);
            if let Ok(r) = serde_json::from_value::<NodeResult>(r)
                && r.is_done()
            {
                return Ok(r);
            }
        }
    }
}

fn outcome_of(r: NodeResult) -> Outcome {
    let phase = match r.phase.as_str() {
        task_set::phase::SUCCEEDED => Phase::Succeeded,
        task_set::phase::FAILED => Phase::Failed,
        _ => Phase::Error,
    };
    Outcome {
        phase,
        message: Some(r.message).filter(|m| !m.is_empty()),
        outputs: r.outputs.unwrap_or_default(),
        report_via: "WorkflowTaskSet",
        ..error_outcome(String::new())
    }
}

fn error_outcome(message: String) -> Outcome {
    Outcome {
        phase: Phase::Error,
        message: Some(message).filter(|m| !m.is_empty()),
        exit_code: None,
        outputs: Default::default(),
        report_via: "none",
        completed_labels: Vec::new(),
        task_result: None,
        containers: Vec::new(),
        requests: Vec::new(),
        faults: None,
        terminated_seen: Default::default(),
        artifact_gc: None,
    }
}

fn resource() -> ApiResource {
    ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: task_set::API_VERSION.into(),
        kind: task_set::KIND.into(),
        plural: task_set::PLURAL.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_from_both_forms() {
        let d = tempfile::tempdir().unwrap();
        let cm = d.path().join("cm.yaml");
        std::fs::write(
            &cm,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello-executor-plugin}\n\
             data:\n  sidecar.container: |\n    image: hello:1\n    ports: [{containerPort: 4355}]\n",
        )
        .unwrap();
        let ep = d.path().join("ep.yaml");
        std::fs::write(
            &ep,
            "kind: ExecutorPlugin\nmetadata: {name: hi}\nspec: {sidecar: {container: {name: hi-sidecar, image: hi:1}}}\n",
        )
        .unwrap();
        let p = plugins_from(&[cm, ep]).unwrap();
        assert_eq!(
            p[0].container.name, "hello-executor-plugin",
            "named as Argo's build names it"
        );
        assert_eq!(p[0].container.ports.as_ref().unwrap()[0].container_port, 4355);
        assert_eq!(p[1].container.name, "hi-sidecar");
        let bad = d.path().join("bad.yaml");
        std::fs::write(&bad, "kind: Pod\nmetadata: {name: x}\n").unwrap();
        let e = plugins_from(&[bad]).unwrap_err().to_string();
        assert!(e.contains("is not an ExecutorPlugin"), "{e}");
    }
}
