//! The local node for the kube backends' lookup tests (kubelet, k8sapi and pns include this
//! file with `#[path]`): a node server on the local Docker Engine (`crates/node-server`)
//! with a cluster-wide role for the `default` service account, that account's directory as
//! a wait container sees it, and a pod whose main container is created only when the test
//! releases the init container that holds it back (a main still being pulled, as the backend
//! sees it). Containers left by a failed test are removed by their node label on drop.

#![allow(dead_code)]

use std::path::PathBuf;

use argoexec_core::PodPaths;
use argoexec_kube::InClusterConfig;
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use serde_json::json;

/// What the backends need of the `default` service account, in every namespace.
const RBAC: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: argoexec-lookup}
rules:
- {apiGroups: [""], resources: [nodes/proxy], verbs: [get]}
- {apiGroups: [""], resources: [pods], verbs: [get, watch]}
- {apiGroups: [""], resources: [pods/log], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: argoexec-lookup}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: argoexec-lookup}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"#;

/// A running local node, shut down by [`LocalNode::shutdown`] (or cleaned up on drop).
pub struct LocalNode {
    server: Option<NodeServer>,
    label: String,
    _state: tempfile::TempDir,
    root: tempfile::TempDir,
}

impl Drop for LocalNode {
    fn drop(&mut self) {
        if self.server.is_none() {
            return;
        }
        let filter = format!("label=io.argoexec-rs.node={}", self.label);
        let ids = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_else(|_| Vec::<String>::new());
        if !ids.is_empty() {
            let _ = std::process::Command::new("docker")
                .args(["rm", "-f"])
                .args(&ids)
                .output();
        }
    }
}

impl LocalNode {
    /// Start a node whose containers carry the node label `<test>-<pid>`, or `None` (skip)
    /// when `ARGOEXEC_SKIP_DOCKER_TESTS` is set.
    pub async fn start(test: &str) -> Option<Self> {
        if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
            eprintln!("SKIPPED: ARGOEXEC_SKIP_DOCKER_TESTS is set");
            return None;
        }
        argoexec_kube::install_crypto_provider();
        let state = tempfile::tempdir().expect("state dir");
        let label = format!("{test}-{}", std::process::id());
        let server = NodeServer::start(ServerConfig {
            node: NodeConfig {
                state_dir: state.path().to_path_buf(),
                node_label: label.clone(),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
        server.rbac().load_str(RBAC, "lookup-test").expect("RBAC");
        let root = tempfile::tempdir().expect("pod root");
        let node = Self {
            server: Some(server),
            label,
            _state: state,
            root,
        };
        node.write_service_account();
        Some(node)
    }

    /// The node server.
    pub fn server(&self) -> &NodeServer {
        self.server.as_ref().expect("running")
    }

    /// The wait container's paths: the `default` service account of namespace `default`
    /// (token, CA, namespace file) under a private root.
    pub fn paths(&self) -> PodPaths {
        PodPaths::new(self.root.path())
    }

    fn write_service_account(&self) {
        let sa = self.paths().service_account_dir();
        std::fs::create_dir_all(&sa).unwrap();
        let s = self.server();
        std::fs::write(sa.join("token"), s.issue_token("default", "default", None)).unwrap();
        std::fs::write(sa.join("ca.crt"), s.ca_pem()).unwrap();
        std::fs::write(sa.join("namespace"), "default").unwrap();
    }

    /// The API server as the in-cluster configuration would name it.
    pub fn in_cluster(&self) -> InClusterConfig {
        InClusterConfig {
            server: self.server().api_url(),
            service_account_dir: self.paths().service_account_dir(),
        }
    }

    /// The kubelet backend's variables for this node.
    pub fn kubelet_env(&self) -> Vec<(String, String)> {
        vec![
            ("ARGO_KUBELET_HOST".into(), "127.0.0.1".into()),
            (
                "ARGO_KUBELET_PORT".into(),
                self.server().kubelet_port().to_string(),
            ),
            (
                "ARGO_KUBELET_NODE_NAME".into(),
                self.server().node_name().to_string(),
            ),
        ]
    }

    /// Create pod `name` in `default`: an init container `gate` that holds it until
    /// [`Gate::release`], then `main`, which exits 4.
    pub fn gated_pod(&self, name: &str) -> Gate {
        let dir = tempfile::tempdir().expect("gate dir");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                "volumes": [{"name": "gate", "hostPath": {"path": dir.path(), "type": "Directory"}}],
                "initContainers": [{"name": "gate", "image": "busybox:latest",
                    "command": ["sh", "-c", "while [ ! -e /gate/go ]; do sleep 0.05; done"],
                    "volumeMounts": [{"name": "gate", "mountPath": "/gate"}]}],
                "containers": [{"name": "main", "image": "busybox:latest", "command": ["sh", "-c", "exit 4"]}]}});
        self.server().create_pod("default", pod).expect("create the pod");
        Gate { dir }
    }

    /// Shut the node down (its pods removed).
    pub async fn shutdown(mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
    }
}

/// The host directory the init container of a [`LocalNode::gated_pod`] watches.
pub struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    /// Let the init container end, so main is created and runs.
    pub fn release(&self) {
        std::fs::write(self.dir.path().join("go"), b"").expect("open the gate");
    }
}

/// Whether `m` contains every part, for assertions that show the whole message.
pub fn contains_all(m: &str, parts: &[&str]) -> Result<(), String> {
    match parts.iter().find(|p| !m.contains(**p)) {
        None => Ok(()),
        Some(p) => Err(format!("{p:?} missing from: {m}")),
    }
}

/// The service-account namespace file of `paths`, which the errors name.
pub fn namespace_file(paths: &PodPaths) -> PathBuf {
    paths.service_account_dir().join("namespace")
}
