//! [`ResourceError`]: everything `argoexec resource` can fail with, each naming what was
//! attempted and on which object, with the underlying error kept as the source.

use std::path::PathBuf;

use crate::condition::SyntaxError;
use crate::jq::JqError;
use crate::jsonpath::JsonPathError;

/// Errors of a resource step.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// The action is not one of get, create, apply, delete, replace, patch.
    #[error("unknown resource action {0:?}: expected get, create, apply, delete, replace or patch")]
    UnknownAction(String),
    /// The manifest file could not be read or written.
    #[error("manifest {}: {source}", path.display())]
    ManifestFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is not YAML (the message has the line and column).
    #[error("manifest {} is not valid YAML: {source}", path.display())]
    ManifestYaml {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// Neither a manifest nor flags (Argo: "Must provide at least one of flags or manifest.").
    #[error("must provide at least one of flags or manifest")]
    Empty,
    /// A manifest document is not a usable object.
    #[error("manifest document {index}: {reason}")]
    BadObject {
        /// 1-based document number.
        index: usize,
        /// What is missing or wrong.
        reason: String,
    },
    /// A flag Argo users pass that this executor does not implement, or a bad value.
    #[error("flag {flag:?}: {reason}")]
    Flag {
        /// The flag as written.
        flag: String,
        /// Why it is refused.
        reason: String,
    },
    /// A condition does not parse.
    #[error("{which} condition '{text}' failed to parse: {source}")]
    Condition {
        /// `success` or `failure`.
        which: &'static str,
        /// The condition text.
        text: String,
        /// The syntax error.
        #[source]
        source: SyntaxError,
    },
    /// successCondition, failureCondition or outputs with `delete`.
    #[error("successCondition, failureCondition and outputs are not supported for delete action")]
    DeleteWithOutputs,
    /// Several documents where one object is needed (conditions or output parameters).
    #[error(
        "the manifest holds {count} objects; successCondition, failureCondition and output parameters need exactly one"
    )]
    SeveralObjects {
        /// Documents in the manifest.
        count: usize,
    },
    /// The API server does not serve this group/version/kind.
    #[error("the server has no resource for group {group:?}, version {version:?}, kind {kind:?}")]
    UnknownKind {
        /// API group ("" for core).
        group: String,
        /// Version.
        version: String,
        /// Kind.
        kind: String,
        /// The discovery error, when there was one (e.g. 404 on the group version).
        #[source]
        source: Option<Box<kube::Error>>,
    },
    /// A resource type named in flags (`pod`, `configmaps`, `cm`, `deployment.apps`) is unknown.
    #[error("the server doesn't have a resource type {0:?}")]
    UnknownType(String),
    /// The object's namespace and `--namespace` disagree (kubectl's rule).
    #[error(
        "the namespace from the provided object {object:?} does not match the namespace {flag:?}. You must pass '--namespace={object}' to perform this operation."
    )]
    NamespaceMismatch {
        /// `metadata.namespace`.
        object: String,
        /// `--namespace`.
        flag: String,
    },
    /// A strategic merge patch on a custom resource.
    #[error(
        "strategic merge patch is not supported for {kind}.{group} (a custom resource): use mergeStrategy merge or json"
    )]
    StrategicOnCustomResource {
        /// Group.
        group: String,
        /// Kind.
        kind: String,
    },
    /// An API call failed (after retries for transient errors); the server's message (e.g. a
    /// 403 naming verb and resource, a 413 for a too large object) is kept.
    #[error("{action} {object}: {source}")]
    Api {
        /// `create`, `get`, `patch`, …
        action: &'static str,
        /// `kind.group/name` in namespace.
        object: String,
        /// kube-rs' error (the API's Status for HTTP errors).
        #[source]
        source: Box<kube::Error>,
    },
    /// Earlier objects of a multi-document manifest were acted on before one failed.
    #[error("{} already done ({}); then: {source}", done.len(), done.join(", "))]
    Partial {
        /// `created configmap./a`, … in order.
        done: Vec<String>,
        /// The failure.
        #[source]
        source: Box<ResourceError>,
    },
    /// The failure condition matched.
    #[error("failure condition '{requirement}' evaluated true")]
    FailureCondition {
        /// The requirement that matched.
        requirement: String,
    },
    /// The object disappeared while its conditions were being waited for.
    #[error("the resource {object} has been deleted while its status was still being checked")]
    Deleted {
        /// The object.
        object: String,
    },
    /// A `jsonPath` output failed.
    #[error("output parameter {name}: jsonPath {template:?}: {source}")]
    JsonPath {
        /// The parameter.
        name: String,
        /// The template.
        template: String,
        /// The error.
        #[source]
        source: JsonPathError,
    },
    /// A `jqFilter` output failed.
    #[error("output parameter {name}: {source}")]
    Jq {
        /// The parameter.
        name: String,
        /// The error.
        #[source]
        source: JqError,
    },
    /// The outputs could not be reported.
    #[error("report outputs: {0}")]
    Report(#[from] argoexec_report::ReportError),
}
