//! Backend selection by name: [`AnyRuntime`], one enum over every built backend.
//!
//! The binary holds this enum (no `dyn`), and it implements the seam by matching. The
//! emissary is always built; Argo v3.3's other four executors (docker, kubelet, k8sapi, pns)
//! come with the feature `legacy` (on by default; the default image leaves it out, as Argo
//! v3.4 removed them). [`select`] also settles what every backend but the emissary needs to
//! find its own pod: the namespace (`ARGO_NAMESPACE`, else the service account's `namespace`
//! file; required by kubelet, k8sapi and pns for their API paths), the pod UID for docker, and
//! the pod-lookup bound ([`POD_LOOKUP_TIMEOUT_ENV`]).

#[cfg(feature = "legacy")]
mod legacy;

use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "legacy")]
use argoexec_backend_docker::{DockerExecutor, NoPodIdentity};
use argoexec_backend_emissary::EmissaryExecutor;
#[cfg(feature = "legacy")]
use argoexec_backend_k8sapi::K8sApiExecutor;
#[cfg(feature = "legacy")]
use argoexec_backend_kubelet::{ConfigError, KubeletExecutor};
#[cfg(feature = "legacy")]
use argoexec_backend_pns::PnsExecutor;
#[cfg(feature = "legacy")]
use argoexec_core::env::resolve_namespace;
use argoexec_core::template::container::parse_go_duration;
use argoexec_core::{ExecutorEnv, ExecutorKind, PodPaths};
use argoexec_kube::lookup::DEFAULT_POD_LOOKUP_TIMEOUT;
use argoexec_runtime::{
    Capabilities, ContainerExit, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use tokio_util::sync::CancellationToken;

/// The variable bounding how long a backend looks for its own pod before failing with
/// `NotFound` (seconds, or a Go duration; default 60 s, [`argoexec_kube::lookup`]).
pub const POD_LOOKUP_TIMEOUT_ENV: &str = "ARGOEXEC_POD_LOOKUP_TIMEOUT";

/// Why no backend could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The backend could not be set up (e.g. the Docker socket does not answer).
    #[error(transparent)]
    Setup(#[from] RuntimeError),
    /// The executor is one of Argo v3.3's that this build leaves out (feature `legacy`).
    #[error(
        "the {executor} executor is not built into this argoexec: Argo v3.4 removed it, and this build serves \
         Argo v3.4 and later with the emissary executor. For Argo v3.3 pods that use it, run an image built with \
         it (scripts/image.sh --executors all --tag <version>-legacy), or set containerRuntimeExecutor: emissary"
    )]
    NotBuilt {
        /// The executor asked for.
        executor: ExecutorKind,
    },
    /// The kubelet backend's variables are wrong.
    #[cfg(feature = "legacy")]
    #[error(transparent)]
    Kubelet(#[from] ConfigError),
    /// kubelet, k8sapi and pns build API paths with the namespace, and none was found.
    #[error(
        "the {executor} executor needs the pod's namespace for its API paths and none was found: ARGO_NAMESPACE is \
         unset and {} is missing or empty (a pod with automountServiceAccountToken: false has no such file; then set \
         ARGO_NAMESPACE from the downward API metadata.namespace)",
        file.display()
    )]
    NoNamespace {
        /// The executor.
        executor: ExecutorKind,
        /// The service-account namespace file looked for.
        file: PathBuf,
    },
    /// The docker backend knows neither the pod's UID nor its namespace.
    #[cfg(feature = "legacy")]
    #[error(
        "the docker executor cannot find the pod's containers: ARGO_POD_UID is unset (Argo sets it from the downward \
         API metadata.uid), ARGO_NAMESPACE is unset and {} is missing or empty",
        file.display()
    )]
    NoPodIdentity {
        /// The service-account namespace file looked for.
        file: PathBuf,
        /// The docker backend's refusal.
        #[source]
        source: NoPodIdentity,
    },
    /// [`POD_LOOKUP_TIMEOUT_ENV`] is not a positive duration.
    #[error(
        "environment variable {POD_LOOKUP_TIMEOUT_ENV} has invalid value {value:?}: expected a number of seconds above 0 \
         (such as 60 or 2.5) or a Go duration (such as 90s)"
    )]
    BadLookupTimeout {
        /// The value.
        value: String,
    },
}

/// Where the docker backend finds the Engine: the pod builder mounts the node's socket here.
pub const DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// Every built backend.
#[derive(Debug, Clone)]
pub enum AnyRuntime {
    /// The emissary backend.
    Emissary(EmissaryExecutor),
    /// The docker backend.
    #[cfg(feature = "legacy")]
    Docker(DockerExecutor),
    /// The kubelet backend (boxed: two clients and its configuration).
    #[cfg(feature = "legacy")]
    Kubelet(Box<KubeletExecutor>),
    /// The k8sapi backend.
    #[cfg(feature = "legacy")]
    K8sApi(K8sApiExecutor),
    /// The pns backend.
    #[cfg(feature = "legacy")]
    Pns(PnsExecutor),
}

/// Whether Argo v3.3's docker, kubelet, k8sapi and pns executors are built in (feature
/// `legacy`); `argoexec version` prints it.
pub const LEGACY_EXECUTORS: bool = cfg!(feature = "legacy");

/// Whether `kind` is built into this program: init calls it so that a pod asking for a
/// left-out executor fails before its main runs, not after.
///
/// # Errors
/// [`SelectError::NotBuilt`] for Argo v3.3's executors in a build without `legacy`.
pub fn ensure_built(kind: ExecutorKind) -> Result<(), SelectError> {
    if kind == ExecutorKind::Emissary || LEGACY_EXECUTORS {
        Ok(())
    } else {
        Err(SelectError::NotBuilt { executor: kind })
    }
}

/// Work a backend wants done before anything else in `wait`, given the executor parsed from
/// `ARGO_CONTAINER_RUNTIME_EXECUTOR`: pns starts tracking processes.
pub fn prestart(executor: Option<ExecutorKind>) {
    #[cfg(feature = "legacy")]
    if executor == Some(ExecutorKind::Pns) {
        argoexec_backend_pns::start_early();
    }
    #[cfg(not(feature = "legacy"))]
    let _ = executor;
}

/// The pod-lookup bound from [`POD_LOOKUP_TIMEOUT_ENV`] looked up with `get`: a number of
/// seconds above 0 or a Go duration; unset or empty → 60 s.
///
/// # Errors
/// [`SelectError::BadLookupTimeout`] for anything else.
pub fn pod_lookup_timeout(get: impl Fn(&str) -> Option<String>) -> Result<Duration, SelectError> {
    let Some(value) = get(POD_LOOKUP_TIMEOUT_ENV).filter(|v| !v.trim().is_empty()) else {
        return Ok(DEFAULT_POD_LOOKUP_TIMEOUT);
    };
    let v = value.trim();
    let seconds = v
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok());
    seconds
        .or_else(|| parse_go_duration(v).filter(|d| !d.is_zero()))
        .ok_or(SelectError::BadLookupTimeout { value })
}

/// Choose and set up the backend for `kind`, with the process environment; see
/// [`select_with`].
///
/// # Errors
/// See [`select_with`].
pub async fn select(
    kind: ExecutorKind,
    env: &ExecutorEnv,
    paths: &PodPaths,
) -> Result<AnyRuntime, SelectError> {
    select_with(kind, env, paths, |k| std::env::var(k).ok()).await
}

/// Choose and set up the backend for `kind`, reading variables with `get`.
///
/// The emissary needs nothing. The others (feature `legacy`) are set up by
/// `legacy::select`: the namespace is `env.namespace`, else [`resolve_namespace`]
/// (`ARGO_NAMESPACE`, else the service account's `namespace` file). The docker backend
/// connects to [`DOCKER_SOCKET`] (override: `ARGOEXEC_DOCKER_SOCKET`) and finds the pod's
/// containers by `ARGO_POD_UID` and name, else by namespace and name. kubelet, k8sapi and pns
/// need the namespace. Every backend but the emissary gives up on a pod it cannot find after
/// [`pod_lookup_timeout`].
///
/// # Errors
/// [`SelectError::NotBuilt`] for a backend this build leaves out;
/// [`SelectError::NoNamespace`], `NoPodIdentity` and [`SelectError::BadLookupTimeout`] at
/// once, before anything is dialled; `Kubelet` for bad kubelet variables;
/// [`SelectError::Setup`] when the backend cannot start.
pub async fn select_with(
    kind: ExecutorKind,
    env: &ExecutorEnv,
    paths: &PodPaths,
    get: impl Fn(&str) -> Option<String>,
) -> Result<AnyRuntime, SelectError> {
    match kind {
        ExecutorKind::Emissary => Ok(AnyRuntime::Emissary(EmissaryExecutor::new(paths.clone()))),
        #[cfg(feature = "legacy")]
        other => {
            let namespace = env.namespace.clone().or_else(|| resolve_namespace(paths, &get));
            legacy::select(other, namespace, env, paths, get).await
        }
        #[cfg(not(feature = "legacy"))]
        other => {
            let _ = (env, get);
            Err(SelectError::NotBuilt { executor: other })
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $r:ident => $e:expr) => {
        match $self {
            AnyRuntime::Emissary($r) => $e,
            #[cfg(feature = "legacy")]
            AnyRuntime::Docker($r) => $e,
            #[cfg(feature = "legacy")]
            AnyRuntime::Kubelet($r) => $e,
            #[cfg(feature = "legacy")]
            AnyRuntime::K8sApi($r) => $e,
            #[cfg(feature = "legacy")]
            AnyRuntime::Pns($r) => $e,
        }
    };
}

impl RuntimeExecutor for AnyRuntime {
    fn kind(&self) -> ExecutorKind {
        dispatch!(self, r => r.kind())
    }
    fn capabilities(&self) -> Capabilities {
        dispatch!(self, r => r.capabilities())
    }
    async fn get_file_contents(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        dispatch!(self, r => r.get_file_contents(container, path).await)
    }
    async fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        dispatch!(self, r => r.copy_file(container, src, dest, level).await)
    }
    async fn output_stream(&self, container: &str, kind: StreamKind) -> Result<OutputStream, RuntimeError> {
        dispatch!(self, r => r.output_stream(container, kind).await)
    }
    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        dispatch!(self, r => r.wait(containers, cancel).await)
    }
    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        dispatch!(self, r => r.kill(containers, grace).await)
    }
    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        dispatch!(self, r => r.list_container_names().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "legacy"))]
    #[tokio::test]
    async fn a_legacy_executor_left_out_is_refused_naming_the_way_out() {
        let e = env(&[("ARGO_POD_NAME", "p"), ("ARGO_NAMESPACE", "argo")]);
        for kind in [
            ExecutorKind::Docker,
            ExecutorKind::Kubelet,
            ExecutorKind::K8sApi,
            ExecutorKind::Pns,
        ] {
            let err = select_with(kind, &e, &PodPaths::default(), nothing)
                .await
                .unwrap_err();
            assert!(
                matches!(err, SelectError::NotBuilt { executor } if executor == kind),
                "{err}"
            );
            let m = err.to_string();
            assert!(
                m.starts_with(&format!("the {kind} executor is not built into this argoexec")),
                "{m}"
            );
            assert!(
                m.contains("-legacy") && m.contains("containerRuntimeExecutor: emissary"),
                "{m}"
            );
        }
        assert!(ensure_built(ExecutorKind::Emissary).is_ok());
        assert!(matches!(
            ensure_built(ExecutorKind::Pns),
            Err(SelectError::NotBuilt { .. })
        ));
    }

    fn env(vars: &[(&str, &str)]) -> ExecutorEnv {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ExecutorEnv::parse(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap()
    }

    fn nothing(_: &str) -> Option<String> {
        None
    }

    #[tokio::test]
    async fn emissary_needs_nothing_to_start() {
        let p = PodPaths::default();
        let e = env(&[("ARGO_POD_NAME", "p")]);
        let bad = |k: &str| (k == POD_LOOKUP_TIMEOUT_ENV).then(|| "x".to_string());
        assert!(matches!(
            select_with(ExecutorKind::Emissary, &e, &p, bad).await,
            Ok(AnyRuntime::Emissary(_))
        ));
    }

    #[cfg(feature = "legacy")]
    #[tokio::test]
    async fn kube_backends_without_a_namespace_fail_at_once_naming_where_they_looked() {
        let root = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(root.path());
        let e = env(&[("ARGO_POD_NAME", "p"), ("ARGO_POD_UID", "u")]);
        let file = paths.service_account_dir().join("namespace");
        for kind in [ExecutorKind::Kubelet, ExecutorKind::K8sApi, ExecutorKind::Pns] {
            let err = select_with(kind, &e, &paths, nothing).await.unwrap_err();
            match &err {
                SelectError::NoNamespace { executor, file: f } => assert_eq!((*executor, f), (kind, &file)),
                other => panic!("{kind}: {other}"),
            }
            let m = err.to_string();
            assert!(
                m.contains("ARGO_NAMESPACE") && m.contains(&file.display().to_string()),
                "{m}"
            );
            assert!(
                m.starts_with(&format!("the {kind} executor needs the pod's namespace")),
                "{m}"
            );
        }
    }

    #[cfg(feature = "legacy")]
    #[tokio::test]
    async fn the_service_account_namespace_file_is_enough() {
        let root = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(root.path());
        let sa = paths.service_account_dir();
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("namespace"), "argo\n").unwrap();
        let e = env(&[("ARGO_POD_NAME", "p")]);
        // Past the namespace check, k8sapi stops at the missing API server instead.
        let err = select_with(ExecutorKind::K8sApi, &e, &paths, nothing)
            .await
            .unwrap_err();
        assert!(matches!(err, SelectError::Setup(_)), "{err}");
        assert!(err.to_string().contains("KUBERNETES_SERVICE_HOST"), "{err}");
    }

    #[cfg(feature = "legacy")]
    #[tokio::test]
    async fn docker_needs_a_uid_or_a_namespace() {
        let root = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(root.path());
        let err = select_with(
            ExecutorKind::Docker,
            &env(&[("ARGO_POD_NAME", "p")]),
            &paths,
            nothing,
        )
        .await
        .unwrap_err();
        let m = err.to_string();
        assert!(matches!(err, SelectError::NoPodIdentity { .. }), "{m}");
        assert!(
            m.contains("ARGO_POD_UID") && m.contains("ARGO_NAMESPACE") && m.contains("namespace"),
            "{m}"
        );
        let source = std::error::Error::source(&err)
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(source.contains("neither its UID nor its namespace"), "{source}");

        // A UID alone is enough: the backend goes on to dial the socket (absent here).
        let socket = root.path().join("no.sock").display().to_string();
        let get = |k: &str| (k == "ARGOEXEC_DOCKER_SOCKET").then(|| socket.clone());
        let e = env(&[("ARGO_POD_NAME", "p"), ("ARGO_POD_UID", "u")]);
        let err = select_with(ExecutorKind::Docker, &e, &paths, get)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, SelectError::Setup(r) if r.kind() == argoexec_runtime::ErrorKind::Transient),
            "{err}"
        );
        assert!(err.to_string().contains("no.sock"), "{err}");
    }

    #[test]
    fn lookup_timeout_takes_seconds_or_a_go_duration() {
        let with = |v: &'static str| {
            pod_lookup_timeout(move |k| (k == POD_LOOKUP_TIMEOUT_ENV).then(|| v.to_string()))
        };
        assert_eq!(pod_lookup_timeout(nothing).unwrap(), Duration::from_secs(60));
        assert_eq!(with("").unwrap(), Duration::from_secs(60));
        assert_eq!(with("2").unwrap(), Duration::from_secs(2));
        assert_eq!(with(" 2.5 ").unwrap(), Duration::from_millis(2500));
        assert_eq!(with("1m30s").unwrap(), Duration::from_secs(90));
        for bad in ["0", "-1", "0s", "NaN", "inf", "soon"] {
            let e = with(bad).unwrap_err();
            assert!(matches!(e, SelectError::BadLookupTimeout { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(POD_LOOKUP_TIMEOUT_ENV), "{e}");
        }
    }

    #[cfg(feature = "legacy")]
    #[tokio::test]
    async fn a_bad_lookup_timeout_stops_the_selection() {
        let e = env(&[("ARGO_POD_NAME", "p"), ("ARGO_NAMESPACE", "argo")]);
        let get = |k: &str| (k == POD_LOOKUP_TIMEOUT_ENV).then(|| "soon".to_string());
        let err = select_with(ExecutorKind::K8sApi, &e, &PodPaths::default(), get)
            .await
            .unwrap_err();
        assert!(matches!(err, SelectError::BadLookupTimeout { .. }), "{err}");
    }

    #[cfg(feature = "legacy")]
    #[test]
    fn every_backend_has_the_same_default_lookup_bound() {
        assert_eq!(
            argoexec_backend_docker::DEFAULT_POD_LOOKUP_TIMEOUT,
            DEFAULT_POD_LOOKUP_TIMEOUT
        );
    }
}
