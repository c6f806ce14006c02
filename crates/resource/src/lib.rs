//! `argoexec-resource`: Argo's resource templates (`argoexec resource ACTION`) over kube-rs.
//!
//! [`run`] is what the binary calls: the report handshake around [`execute`], which
//! 1. parses the action, the flags ([`flags`]) and both conditions ([`condition`]) — a bad
//!    one is an error before anything is created — and refuses `delete` with conditions or
//!    output parameters (as Argo);
//! 2. stages `template.resource.manifest` to the manifest path (or reads the
//!    `manifestFrom` artifact, [`manifest`]) and reads its YAML documents;
//! 3. resolves each object's kind by discovery ([`target`]) and acts on each document in
//!    order ([`action`], [`apply`]); objects named in flags (`pod NAME`, `configmap
//!    --selector …`) for patch, get and delete;
//! 4. for a single object: waits for the conditions ([`wait`]), then evaluates the output
//!    parameters ([`outputs`]: `jsonPath` with kubectl's templates, [`jsonpath`]; `jqFilter`
//!    with jaq, [`jq`]).
//!
//! Several documents: every one is acted on in order, as kubectl does with a multi-document
//! file. Argo ≥ v3.2 then fails the step while parsing kubectl's output (AW#7721) even
//! though all objects were acted on; here the step succeeds, and conditions or output
//! parameters with several objects are refused before anything is done. A failure part-way
//! names the objects already acted on ([`ResourceError::Partial`]).
//!
//! `setOwnerReference`: nothing to do here. Argo's controller (every version from v2.12 to
//! v4.1.2, `executeResource` in `workflow/controller/operator.go`) adds the Workflow owner
//! reference to the manifest before building the pod; the executor keeps it as it is.

pub mod action;
pub mod apply;
pub mod condition;
pub mod error;
pub mod flags;
pub mod gjson;
pub mod gojson;
pub mod jq;
pub mod jsonpath;
pub mod manifest;
pub mod outputs;
pub mod retry;
pub mod target;
pub mod wait;

use std::path::PathBuf;
use std::time::Duration;

use argoexec_core::template::{Outputs, ResourceTemplate, Template};
use argoexec_report::{NodeResult, OutputReporter, ReportError};
use kube::Client;
use serde_json::Value;

pub use action::{Action, Strategy};
use condition::Condition;
pub use error::ResourceError;
use flags::Flags;
use target::ObjectRef;
use wait::Conditions;

/// One resource step.
#[derive(Debug, Clone)]
pub struct Step {
    /// The action word from the command line (`argoexec resource ACTION`).
    pub action: String,
    /// The template (its `resource`, `inputs.artifacts` and `outputs.parameters`).
    pub template: Template,
    /// Where the manifest is staged ([`manifest::MANIFEST_PATH`]).
    pub manifest_path: PathBuf,
    /// The pod's namespace: objects without one go there.
    pub namespace: String,
    /// Polling interval when watching is forbidden (`RESOURCE_STATE_CHECK_INTERVAL`).
    pub check_interval: Duration,
}

/// Act, wait and evaluate the outputs; see the crate docs.
///
/// # Errors
/// [`ResourceError`] naming what failed.
pub async fn execute(client: &Client, step: &Step) -> Result<Outputs, ResourceError> {
    let action: Action = step.action.parse()?;
    let empty = ResourceTemplate::default();
    let res = step.template.resource.as_ref().unwrap_or(&empty);
    let flags = Flags::parse(&res.flags)?;
    let conds = conditions(res)?;
    let params = &step.template.outputs.parameters;
    if action == Action::Delete && (!conds.is_empty() || !params.is_empty()) {
        return Err(ResourceError::DeleteWithOutputs);
    }
    let strategy: Strategy = res.merge_strategy().parse()?;
    manifest::stage(&step.template, &step.manifest_path)?;
    let path = manifest::manifest_path(&step.template, &step.manifest_path);
    let docs = manifest::read(&path)?;
    if docs.is_empty() && res.flags.is_empty() {
        return Err(ResourceError::Empty);
    }
    let targets = resolve(client, action, strategy, &docs, &flags, &step.namespace).await?;
    if targets.len() > 1 && action != Action::Delete && (!conds.is_empty() || outputs::needs_object(params)) {
        return Err(ResourceError::SeveralObjects { count: targets.len() });
    }
    let mut done: Vec<String> = Vec::new();
    let mut last: Option<(ObjectRef, Option<Value>)> = None;
    for (obj, body) in targets {
        let result = act(client, action, strategy, &obj, &body, &flags).await;
        let result = match result {
            Ok(r) => r,
            Err(e) if done.is_empty() => return Err(e),
            Err(e) => {
                return Err(ResourceError::Partial {
                    done,
                    source: Box::new(e),
                });
            }
        };
        let obj = named(obj, result.as_ref());
        tracing::info!(namespace = ?obj.namespace, resource = %obj.argo_name(), action = action.past(), "resource acted on");
        done.push(format!("{} {}", action.past(), obj.describe()));
        last = Some((obj, result));
    }
    let mut outputs = step.template.outputs.clone();
    outputs.artifacts.clear();
    if action == Action::Delete || done.len() != 1 {
        return Ok(outputs);
    }
    let Some((obj, result)) = last else {
        return Ok(outputs);
    };
    let mut current = result;
    if current.is_some() && !conds.is_empty() {
        current = Some(wait::wait(client, &obj, &conds, step.check_interval).await?);
    }
    if current.is_some() && outputs::needs_object(params) && flags.dry_run == flags::DryRun::None {
        current = action::get(client, &obj, false).await?;
    }
    outputs.parameters = outputs::evaluate(params, current.as_ref())?;
    Ok(outputs)
}

/// The report handshake around [`execute`] (Argo's `InitializeOutput`, then
/// `ReportOutputs` + `FinalizeOutput`): `start` first (task result with
/// `report-outputs-completed=false`), then one report with the outputs — and the error as
/// its message when the step failed. When the template archives logs the wait container
/// finalizes instead, but the outputs are still reported here (Argo's main reports them
/// too), with the reporter's completed label.
///
/// # Errors
/// The step's error; a report failure when the step itself succeeded.
pub async fn run<R>(client: &Client, reporter: &R, step: &Step) -> Result<Outputs, ResourceError>
where
    R: OutputReporter<Error = ReportError>,
{
    if let Err(e) = reporter.start().await {
        tracing::warn!(error = %e, "could not mark the task result report-outputs-completed=false");
    }
    let result = execute(client, step).await;
    let report = match &result {
        Ok(outputs) => NodeResult {
            outputs: outputs.clone(),
            ..Default::default()
        },
        Err(e) => NodeResult {
            message: Some(e.to_string()),
            ..Default::default()
        },
    };
    let reported = reporter.report(&report).await;
    match (result, reported) {
        (Ok(o), Ok(())) => Ok(o),
        (Ok(_), Err(e)) => Err(ResourceError::Report(e)),
        (Err(e), Err(r)) => {
            tracing::warn!(error = %r, "could not report the failure");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
    }
}

fn conditions(res: &ResourceTemplate) -> Result<Conditions, ResourceError> {
    let parse = |which: &'static str, text: &Option<String>| -> Result<Condition, ResourceError> {
        let text = text.as_deref().unwrap_or("");
        Condition::parse(text).map_err(|source| ResourceError::Condition {
            which,
            text: text.to_string(),
            source,
        })
    };
    Ok(Conditions {
        success: parse("success", &res.success_condition)?,
        failure: parse("failure", &res.failure_condition)?,
    })
}

/// The object with the name the server gave it (`generateName`).
fn named(mut obj: ObjectRef, result: Option<&Value>) -> ObjectRef {
    if let Some(name) = result
        .and_then(|v| v.pointer("/metadata/name"))
        .and_then(Value::as_str)
    {
        obj.name = name.to_string();
    }
    obj
}

async fn act(
    client: &Client,
    action: Action,
    strategy: Strategy,
    obj: &ObjectRef,
    body: &Value,
    flags: &Flags,
) -> Result<Option<Value>, ResourceError> {
    Ok(match action {
        Action::Get => action::get(client, obj, flags.ignore_not_found).await?,
        Action::Create => Some(action::create(client, obj, body, flags).await?),
        Action::Apply => Some(apply::apply(client, obj, body, flags).await?),
        Action::Replace => Some(action::replace(client, obj, body, flags).await?),
        Action::Patch => Some(action::patch(client, obj, body, strategy, flags).await?),
        Action::Delete => {
            action::delete(client, obj, flags).await?;
            None
        }
    })
}

/// The objects to act on, each with the body to send.
async fn resolve(
    client: &Client,
    action: Action,
    strategy: Strategy,
    docs: &[Value],
    flags: &Flags,
    default_ns: &str,
) -> Result<Vec<(ObjectRef, Value)>, ResourceError> {
    let first_has_kind = docs.first().is_some_and(|d| d.get("kind").is_some());
    let from_flags = !flags.args.is_empty()
        && match action {
            Action::Patch => strategy == Strategy::Json || !first_has_kind,
            Action::Get | Action::Delete => docs.is_empty(),
            _ => false,
        };
    if from_flags {
        let body = docs.first().cloned().unwrap_or(Value::Null);
        let refs = refs_from_args(client, flags, default_ns).await?;
        return Ok(refs.into_iter().map(|r| (r, body.clone())).collect());
    }
    if action == Action::Patch && strategy == Strategy::Json {
        return Err(ResourceError::Flag {
            flag: "mergeStrategy: json".into(),
            reason: "a JSON patch needs the object in flags, e.g. flags: [pod, NAME]".into(),
        });
    }
    if !flags.args.is_empty() {
        return Err(ResourceError::Flag {
            flag: flags.args.join(" "),
            reason: format!("resource arguments cannot be combined with a manifest for {action:?}"),
        });
    }
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        out.push((
            ref_from_doc(client, i + 1, doc, flags, default_ns).await?,
            doc.clone(),
        ));
    }
    Ok(out)
}

async fn ref_from_doc(
    client: &Client,
    index: usize,
    doc: &Value,
    flags: &Flags,
    default_ns: &str,
) -> Result<ObjectRef, ResourceError> {
    let field = |p: &str| doc.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (Some(api_version), Some(kind)) = (field("/apiVersion"), field("/kind")) else {
        return Err(ResourceError::BadObject {
            index,
            reason: "apiVersion and kind are required".into(),
        });
    };
    let name = field("/metadata/name").or(field("/metadata/generateName").map(|_| ""));
    let Some(name) = name else {
        return Err(ResourceError::BadObject {
            index,
            reason: format!("{kind} has neither metadata.name nor metadata.generateName"),
        });
    };
    let target = target::for_kind(client, api_version, kind).await?;
    let namespace = match (field("/metadata/namespace"), &flags.namespace) {
        (Some(o), Some(f)) if o != f => {
            return Err(ResourceError::NamespaceMismatch {
                object: o.into(),
                flag: f.clone(),
            });
        }
        (Some(o), _) => o.to_string(),
        (None, Some(f)) => f.clone(),
        (None, None) => default_ns.to_string(),
    };
    Ok(ObjectRef {
        namespace: target.namespaced.then_some(namespace),
        target,
        name: name.to_string(),
    })
}

/// `TYPE NAME…`, `TYPE/NAME…`, or `TYPE` with `--selector`.
async fn refs_from_args(
    client: &Client,
    flags: &Flags,
    default_ns: &str,
) -> Result<Vec<ObjectRef>, ResourceError> {
    let ns = flags.namespace.clone().unwrap_or_else(|| default_ns.to_string());
    let mut pairs: Vec<(String, String)> = Vec::new();
    if flags.args[0].contains('/') {
        for a in &flags.args {
            let (t, n) = a.split_once('/').ok_or_else(|| ResourceError::Flag {
                flag: a.clone(),
                reason: "mix of TYPE/NAME and other words".into(),
            })?;
            pairs.push((t.into(), n.into()));
        }
    } else {
        let t = &flags.args[0];
        pairs.extend(flags.args[1..].iter().map(|n| (t.clone(), n.clone())));
    }
    let mut out = Vec::new();
    for (t, n) in pairs {
        let target = target::for_type(client, &t).await?;
        out.push(ObjectRef {
            namespace: target.namespaced.then(|| ns.clone()),
            target,
            name: n,
        });
    }
    if flags.args.len() == 1 && !flags.args[0].contains('/') {
        let Some(selector) = &flags.selector else {
            return Err(ResourceError::Flag {
                flag: flags.args[0].clone(),
                reason: "a resource type needs names or --selector".into(),
            });
        };
        let target = target::for_type(client, &flags.args[0]).await?;
        let probe = ObjectRef {
            namespace: target.namespaced.then(|| ns.clone()),
            target,
            name: String::new(),
        };
        let lp = kube::api::ListParams::default().labels(selector);
        let api = probe.api(client);
        let list = retry::transient(|| api.list(&lp))
            .await
            .map_err(action::api_err("list", &probe))?;
        for item in list.items {
            out.push(ObjectRef {
                name: item.metadata.name.unwrap_or_default(),
                ..probe.clone()
            });
        }
    }
    Ok(out)
}
