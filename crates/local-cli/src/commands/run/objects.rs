//! Objects of a run beyond its pod, through the local node's API as its admin (a kube-rs
//! client from the node's kubeconfig): `--create FILE` (CustomResourceDefinitions, objects a
//! resource template patches or reads) created before the pod, in file order, and the
//! resources a resource template's manifest names, found by API discovery as kubectl finds
//! them, for the run's least RBAC ([`super::kit::resource_rbac`]).

use std::path::Path;

use anyhow::Context;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use serde_json::Value;

/// A client for the node's admin.
///
/// # Errors
/// The node's kubeconfig does not load (a bug).
pub async fn admin_client(server: &argoexec_node_server::NodeServer) -> anyhow::Result<kube::Client> {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).context("the node's kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .context("the node's kubeconfig")?;
    Ok(kube::Client::try_from(config)?)
}

/// The YAML documents of `text` (empty documents skipped).
///
/// # Errors
/// Not YAML, or a document that is not a mapping.
pub fn documents(text: &str, what: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).with_context(|| format!("{what} is not YAML"))?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if let Some(i) = docs.iter().position(|d| !d.is_object()) {
        anyhow::bail!("{what}: document {} is not a mapping", i + 1);
    }
    Ok(docs)
}

/// Where an object's kind is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespaced (else cluster-scoped).
    pub namespaced: bool,
}

/// Find the resource of `obj`'s `apiVersion` and `kind` by discovery.
///
/// # Errors
/// No `apiVersion`/`kind`, or the node does not serve the kind (the message names group,
/// version and kind).
pub async fn target_of(
    client: &kube::Client,
    obj: &Value,
) -> anyhow::Result<(Target, kube::api::ApiResource)> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        anyhow::bail!("an object without apiVersion or kind: {obj}");
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        // Discovery's 404 (no such group/version) or its "not found in list": either way,
        // the kind is not served; the chain of a 404 Status says nothing more.
        Err(kube::Error::Api(s)) if s.code == 404 => anyhow::bail!(unknown_kind(group, version, kind)),
        Err(kube::Error::Discovery(_)) => anyhow::bail!(unknown_kind(group, version, kind)),
        Err(e) => return Err(e).with_context(|| format!("discover kind {kind:?} of {api_version}")),
    };
    let target = Target {
        group: group.to_string(),
        plural: ar.plural.clone(),
        namespaced: caps.scope == Scope::Namespaced,
    };
    Ok((target, ar))
}

fn unknown_kind(group: &str, version: &str, kind: &str) -> String {
    format!(
        "the node does not serve kind {kind:?} of group {group:?}, version {version:?} (create its \
         CustomResourceDefinition first: --create FILE)"
    )
}

/// Create every object of every file, in order, in `ns` unless an object names its own
/// namespace.
///
/// # Errors
/// A file that does not read or parse; an object the node refuses (its message kept).
pub async fn create_files(
    client: &kube::Client,
    files: &[impl AsRef<Path>],
    ns: &str,
) -> anyhow::Result<usize> {
    let mut n = 0;
    for f in files {
        let f = f.as_ref();
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        for doc in documents(&text, &f.display().to_string())? {
            let (target, ar) = target_of(client, &doc).await?;
            let obj: DynamicObject =
                serde_json::from_value(doc).with_context(|| format!("{}", f.display()))?;
            let name = obj.metadata.name.clone().unwrap_or_default();
            let api: Api<DynamicObject> = if target.namespaced {
                let obj_ns = obj.metadata.namespace.as_deref().unwrap_or(ns);
                Api::namespaced_with(client.clone(), obj_ns, &ar)
            } else {
                Api::all_with(client.clone(), &ar)
            };
            api.create(&PostParams::default(), &obj)
                .await
                .with_context(|| format!("{}: create {} {name:?}", f.display(), ar.kind))?;
            tracing::info!(kind = %ar.kind, %name, file = %f.display(), "created before the pod");
            n += 1;
        }
    }
    Ok(n)
}

/// What a run does through the API before its pod: create the `--create` objects, and for
/// a resource template bind the least RBAC its manifest needs (unless `--rbac` is given:
/// then the given policy is the whole policy).
pub struct BeforePod<'a> {
    /// `--create` files.
    pub create: &'a [std::path::PathBuf],
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The pod's service account.
    pub service_account: &'a str,
    /// The template.
    pub template: &'a argoexec_core::Template,
    /// `--rbac` was given.
    pub rbac_given: bool,
}

impl BeforePod<'_> {
    /// Do it.
    ///
    /// # Errors
    /// Objects the node refuses; a manifest whose kinds the node does not serve.
    pub async fn run(&self, server: &argoexec_node_server::NodeServer) -> anyhow::Result<()> {
        let resource = self.template.resource.as_ref();
        if self.create.is_empty() && (resource.is_none() || self.rbac_given) {
            return Ok(());
        }
        let client = admin_client(server).await?;
        create_files(&client, self.create, self.namespace).await?;
        let Some(r) = resource.filter(|_| !self.rbac_given) else {
            return Ok(());
        };
        let Some(manifest) = r.manifest.as_deref() else {
            tracing::warn!(
                "the manifest comes from an artifact: its kinds are unknown before the pod runs, so the pod gets \
                 only the executor's role; give the rest with --rbac DIR"
            );
            return Ok(());
        };
        let mut targets = Vec::new();
        for doc in documents(manifest, "resource.manifest")? {
            let (t, _) = target_of(&client, &doc).await?;
            let t = (t.group, t.plural, t.namespaced);
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
        let waits = r.success_condition.is_some() || r.failure_condition.is_some();
        let verbs =
            super::kit::resource_verbs(&r.action, waits, !self.template.outputs.parameters.is_empty());
        let policy = super::kit::resource_rbac(self.namespace, self.service_account, &verbs, &targets);
        tracing::info!(?verbs, ?targets, "binding the resource template's role");
        server
            .rbac()
            .load_str(&policy, "the resource template's least role (argoexec run)")?;
        Ok(())
    }
}
