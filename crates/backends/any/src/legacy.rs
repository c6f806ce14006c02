//! Setting up Argo v3.3's docker, kubelet, k8sapi and pns backends (feature `legacy`): each
//! needs to find its own pod, so each checks its identity (namespace, or UID for docker) and
//! the pod-lookup bound before it dials anything.

use std::path::PathBuf;

use argoexec_backend_docker::{DockerExecutor, PodRef};
use argoexec_backend_emissary::EmissaryExecutor;
use argoexec_backend_k8sapi::K8sApiExecutor;
use argoexec_backend_kubelet::{KubeletConfig, KubeletExecutor};
use argoexec_backend_pns::PnsExecutor;
use argoexec_core::{ExecutorEnv, ExecutorKind, PodPaths};

use crate::{AnyRuntime, DOCKER_SOCKET, SelectError, pod_lookup_timeout};

/// Set up the legacy backend `kind` for the pod in `namespace` (already resolved by the
/// caller: `env.namespace`, else `ARGO_NAMESPACE`, else the service account's file).
///
/// # Errors
/// As [`crate::select_with`].
pub(crate) async fn select(
    kind: ExecutorKind,
    namespace: Option<String>,
    env: &ExecutorEnv,
    paths: &PodPaths,
    get: impl Fn(&str) -> Option<String>,
) -> Result<AnyRuntime, SelectError> {
    let lookup = || pod_lookup_timeout(&get);
    let ns_file = || paths.service_account_dir_from(&get).join("namespace");
    let need_ns = || {
        namespace.clone().ok_or_else(|| SelectError::NoNamespace {
            executor: kind,
            file: ns_file(),
        })
    };
    let pod = &env.pod_name;
    Ok(match kind {
        ExecutorKind::Emissary => AnyRuntime::Emissary(EmissaryExecutor::new(paths.clone())),
        ExecutorKind::Docker => {
            let lookup = lookup()?;
            let socket = get("ARGOEXEC_DOCKER_SOCKET").map_or_else(|| DOCKER_SOCKET.into(), PathBuf::from);
            let pod = PodRef::new(pod, env.pod_uid.clone(), namespace.clone()).map_err(|source| {
                SelectError::NoPodIdentity {
                    file: ns_file(),
                    source,
                }
            })?;
            AnyRuntime::Docker(
                DockerExecutor::connect(&socket, pod)
                    .await?
                    .with_pod_lookup_timeout(lookup),
            )
        }
        ExecutorKind::Kubelet => {
            let (ns, lookup) = (need_ns()?, lookup()?);
            let config = KubeletConfig::from_env(&get)?;
            let k = KubeletExecutor::new(config, paths, &ns, pod)?.with_pod_lookup_timeout(lookup);
            AnyRuntime::Kubelet(Box::new(k))
        }
        ExecutorKind::K8sApi => {
            let (ns, lookup) = (need_ns()?, lookup()?);
            AnyRuntime::K8sApi(K8sApiExecutor::new(paths, &ns, pod)?.with_pod_lookup_timeout(lookup))
        }
        ExecutorKind::Pns => {
            let (ns, lookup) = (need_ns()?, lookup()?);
            AnyRuntime::Pns(PnsExecutor::new(paths, &ns, pod)?.with_pod_lookup_timeout(lookup))
        }
    })
}
