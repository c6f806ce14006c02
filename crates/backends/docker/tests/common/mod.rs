//! Shared fixtures of the docker backend's integration tests: a per-test pod of real busybox
//! containers labelled like dockershim and cri-dockerd do (pod UID, name, namespace,
//! container name), removed again when the fixture is dropped (also on panic), and a tracing
//! hook that tells a test when `wait` is blocked.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use argoexec_backend_docker::identity::{LABEL_CONTAINER, LABEL_NAMESPACE, LABEL_POD, LABEL_POD_UID};
use argoexec_backend_docker::{DockerExecutor, PodRef};
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{LogsOptionsBuilder, WaitContainerOptionsBuilder};
use futures::StreamExt;
use tokio::sync::mpsc;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// The daemon socket; `ARGOEXEC_TEST_DOCKER_SOCKET` overrides it (e.g. to check the skip path).
pub fn socket() -> String {
    std::env::var("ARGOEXEC_TEST_DOCKER_SOCKET").unwrap_or_else(|_| "/var/run/docker.sock".into())
}
pub const IMAGE: &str = "busybox:latest";
pub const NAMESPACE: &str = "argoexec-test";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// One test's pod: the executor for it (finding it by UID) and the containers created in it.
pub struct TestPod {
    pub exec: DockerExecutor,
    pub pod: String,
    pub uid: String,
    pub namespace: String,
    socket: String,
    ids: Arc<Mutex<Vec<String>>>,
}

impl Drop for TestPod {
    fn drop(&mut self) {
        let ids = self.ids.lock().map(|g| g.clone()).unwrap_or_default();
        if ids.is_empty() {
            return;
        }
        let out = std::process::Command::new("/usr/bin/docker")
            .args(["-H", &format!("unix://{}", self.socket)])
            .arg("rm")
            .arg("-f")
            .args(&ids)
            .output();
        if let Ok(o) = out
            && !o.status.success()
        {
            eprintln!(
                "cleanup: docker rm -f failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

impl TestPod {
    /// A fresh pod, or `None` (skip) when the daemon is unreachable and
    /// `ARGOEXEC_SKIP_DOCKER_TESTS=1`. Without that variable an unreachable daemon fails the test.
    pub async fn new() -> Option<Self> {
        Self::on(&socket()).await
    }

    /// A fresh pod on the daemon at `socket` (as [`TestPod::new`] for the default one).
    pub async fn on(socket: &str) -> Option<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let pod = format!(
            "t{}-{nanos:x}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        Self::named(socket, &pod, NAMESPACE).await
    }

    /// A pod called `pod` in `namespace` with a fresh UID, on the daemon at `socket`.
    pub async fn named(socket: &str, pod: &str, namespace: &str) -> Option<Self> {
        let uid = format!("uid-{pod}-{}", SEQ.fetch_add(1, Ordering::Relaxed));
        let pod_ref = PodRef::new(pod, Some(uid.clone()), Some(namespace.to_string())).expect("a UID");
        let socket = socket.to_string();
        match DockerExecutor::connect(Path::new(&socket), pod_ref).await {
            Ok(exec) => Some(Self {
                exec,
                pod: pod.to_string(),
                uid,
                namespace: namespace.to_string(),
                socket,
                ids: Arc::default(),
            }),
            Err(e) if std::env::var("ARGOEXEC_SKIP_DOCKER_TESTS").as_deref() == Ok("1") => {
                eprintln!("SKIPPED: Docker is unreachable at {socket} ({e}); ARGOEXEC_SKIP_DOCKER_TESTS=1");
                None
            }
            Err(e) => panic!(
                "Docker is unreachable at {socket}: {e}\n\
                 These tests need a running Docker Engine with the image {IMAGE}; \
                 set ARGOEXEC_SKIP_DOCKER_TESTS=1 to skip them."
            ),
        }
    }

    /// An executor for `pod` on this fixture's daemon.
    pub async fn executor_for(&self, pod: PodRef) -> DockerExecutor {
        DockerExecutor::connect(Path::new(&self.socket), pod)
            .await
            .expect("connect")
    }

    pub fn docker(&self) -> &Docker {
        self.exec.client()
    }

    /// Create (not start) a container named `name` in this pod running `sh -c script`.
    pub async fn create_with(&self, name: &str, script: &str, tty: bool) -> String {
        let labels = HashMap::from([
            (LABEL_NAMESPACE.to_string(), self.namespace.clone()),
            (LABEL_POD.to_string(), self.pod.clone()),
            (LABEL_POD_UID.to_string(), self.uid.clone()),
            (LABEL_CONTAINER.to_string(), name.to_string()),
        ]);
        let body = ContainerCreateBody {
            image: Some(IMAGE.to_string()),
            cmd: Some(vec!["sh".into(), "-c".into(), script.into()]),
            labels: Some(labels),
            tty: Some(tty),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = self
            .docker()
            .create_container(None, body)
            .await
            .unwrap_or_else(|e| {
                panic!("create container {name}: {e} (is the image {IMAGE} built? scripts/images.sh)")
            })
            .id;
        self.ids.lock().expect("ids lock").push(id.clone());
        id
    }

    pub async fn create(&self, name: &str, script: &str) -> String {
        self.create_with(name, script, false).await
    }

    pub async fn start(&self, id: &str) {
        self.docker()
            .start_container(id, None)
            .await
            .expect("start container");
    }

    /// Create and start.
    pub async fn run(&self, name: &str, script: &str) -> String {
        let id = self.create(name, script).await;
        self.start(&id).await;
        id
    }

    /// Create, start and wait for the container to exit; returns its ID.
    pub async fn run_to_exit(&self, name: &str, script: &str) -> String {
        let id = self.run(name, script).await;
        self.wait_exit(&id).await;
        id
    }

    /// Wait for a started container to exit (a non-zero code is an `Err` in bollard: fine).
    pub async fn wait_exit(&self, id: &str) {
        let opts = WaitContainerOptionsBuilder::new()
            .condition("not-running")
            .build();
        let mut s = self.docker().wait_container(id, Some(opts));
        while let Some(r) = s.next().await {
            match r {
                Ok(_) | Err(bollard::errors::Error::DockerContainerWaitError { .. }) => {}
                Err(e) => panic!("wait for {id}: {e}"),
            }
        }
    }

    /// Follow the container's stdout until a line equal to `line` appears.
    pub async fn await_line(&self, id: &str, line: &str) {
        let opts = LogsOptionsBuilder::new().follow(true).stdout(true).build();
        let mut logs = self.docker().logs(id, Some(opts));
        let mut seen = String::new();
        while let Some(frame) = logs.next().await {
            seen.push_str(&frame.expect("log frame").to_string());
            if seen.lines().any(|l| l.trim() == line) {
                return;
            }
        }
        panic!("container {id} ended without printing {line:?}; output: {seen}");
    }

    pub async fn exit_code(&self, id: &str) -> i64 {
        let info = self.docker().inspect_container(id, None).await.expect("inspect");
        info.state.and_then(|s| s.exit_code).expect("exit code")
    }
}

/// A tracing layer forwarding the fields of every "waiting for containers" event.
struct WaitProbe(mpsc::UnboundedSender<String>);

struct Fields(String, bool);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let v = format!("{value:?}");
        if field.name() == "message" && v == "waiting for containers" {
            self.1 = true;
        }
        self.0.push_str(&format!("{}={v} ", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WaitProbe {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut f = Fields(String::new(), false);
        event.record(&mut f);
        if f.1 {
            let _ = self.0.send(f.0);
        }
    }
}

/// Install (for this thread) a subscriber that reports each time `wait` blocks; the
/// receiver yields the event's fields. Tests using it run on a current-thread runtime.
pub fn wait_probe() -> (tracing::subscriber::DefaultGuard, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let subscriber = tracing_subscriber::registry().with(WaitProbe(tx));
    (tracing::subscriber::set_default(subscriber), rx)
}

/// A tracing layer forwarding the fields of every event.
struct EventProbe(mpsc::UnboundedSender<String>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for EventProbe {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut f = Fields(String::new(), false);
        event.record(&mut f);
        let _ = self.0.send(f.0);
    }
}

/// Like [`wait_probe`], for every event the backend logs (fields as `name=value`).
pub fn event_probe() -> (tracing::subscriber::DefaultGuard, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let subscriber = tracing_subscriber::registry().with(EventProbe(tx));
    (tracing::subscriber::set_default(subscriber), rx)
}

/// Wait for a probe report containing `needle`.
pub async fn blocked_on(rx: &mut mpsc::UnboundedReceiver<String>, needle: &str) {
    while let Some(fields) = rx.recv().await {
        if fields.contains(needle) {
            return;
        }
    }
    panic!("wait probe closed before reporting {needle:?}");
}
