//! Secrets through the API server, judged by kube-rs: create/get/list/update/patch/delete
//! with `stringData` merged into `data` and never returned, base64 and key validation, 403
//! without an RBAC rule, watch events, kubectl's table; and pods on Docker reading Secrets
//! from the store (a `secret` volume with items and modes, `secretKeyRef` env), failing with
//! the kubelet's message when one is missing, and ending when the engine refuses a
//! privileged container. Skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1.

use std::collections::BTreeMap;
use std::time::Duration;

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, LogParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: secret-reader, namespace: default}
rules: [{apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: secret-reader, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: secret-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: default}]
"#;

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

/// A node server whose containers the returned guard removes whatever happens.
async fn server(state: &std::path::Path, test: &str) -> (NodeServer, Sweep) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let label = format!("secrets-{test}-{}", std::process::id());
    let sweep = Sweep(label.clone());
    let node = NodeConfig {
        runtime: argoexec_node::RuntimeChoice::from_env(),
        state_dir: state.to_path_buf(),
        node_label: label,
        ..Default::default()
    };
    let s = NodeServer::start(ServerConfig {
        node,
        ..Default::default()
    })
    .await
    .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
    s.rbac().load_str(RBAC, "test").unwrap();
    (s, sweep)
}

/// A kube client for the API endpoint with bearer `token`.
async fn client(s: &NodeServer, token: &str) -> kube::Client {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(s.ca_pem());
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n",
        s.api_url()
    );
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(cfg).unwrap()
}

/// The API's error for a failed call.
fn status(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A raw request with a JSON body (what typed clients cannot send: bad base64).
async fn raw(
    c: &kube::Client,
    method: &str,
    path: &str,
    body: serde_json::Value,
) -> Result<String, kube::Error> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    c.request_text(req).await
}

fn bytes(d: &Secret, key: &str) -> Vec<u8> {
    d.data
        .as_ref()
        .and_then(|m| m.get(key))
        .map(|b| b.0.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_crud_validation_rbac_and_watch() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (s, _sweep) = server(state.path(), "crud").await;
    let admin = client(&s, s.admin_token()).await;
    let secrets: Api<Secret> = Api::default_namespaced(admin.clone());
    let mut watch = secrets.watch(&WatchParams::default(), "0").await.unwrap().boxed();

    // Create: stringData merged into data, type defaulted, stringData never returned.
    let new: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s1"},
        "data": {"pass": "czNjcjN0"},
        "stringData": {"user": "admin"}
    }))
    .unwrap();
    let created = secrets.create(&PostParams::default(), &new).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        (bytes(&created, "pass"), bytes(&created, "user")),
        (b"s3cr3t".to_vec(), b"admin".to_vec())
    );
    assert!(created.string_data.is_none());
    let text = admin
        .request_text(
            http::Request::get("/api/v1/namespaces/default/secrets/s1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(
        text.contains("\"user\":\"YWRtaW4=\"") && !text.contains("stringData"),
        "{text}"
    );
    let list = secrets.list(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);

    // Patch with stringData (base64 stored), then immutable: the data may no longer change.
    let patched = secrets
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"user": "root"}})),
        )
        .await
        .unwrap();
    assert_eq!(bytes(&patched, "user"), b"root");
    let mut frozen = patched.clone();
    frozen.immutable = Some(true);
    secrets
        .replace("s1", &PostParams::default(), &frozen)
        .await
        .unwrap();
    let e = secrets
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"user": "x"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        status(e),
        (
            422,
            "Secret \"s1\" is invalid: data: Forbidden: field is immutable when `immutable` is set".into()
        )
    );

    // Values that are not base64: the decoder's 400; a key that is not a file name: 422.
    let path = "/api/v1/namespaces/default/secrets";
    let e = raw(
        &admin,
        "POST",
        path,
        json!({"metadata": {"name": "s2"}, "data": {"k": "hunter2!"}}),
    )
    .await
    .unwrap_err();
    let (code, message) = status(e);
    assert_eq!(code, 400);
    assert!(
        message.ends_with("illegal base64 data at input byte 7") && !message.contains("hunter2"),
        "{message}"
    );
    let e = raw(
        &admin,
        "POST",
        path,
        json!({"metadata": {"name": "s2"}, "stringData": {"a/b": "x"}}),
    )
    .await
    .unwrap_err();
    let (code, message) = status(e);
    assert!(
        code == 422 && message.contains("data[a/b]: Invalid value"),
        "{message}"
    );

    // kubectl's table: NAME TYPE DATA AGE.
    let table: serde_json::Value = serde_json::from_str(
        &admin
            .request_text(
                http::Request::get(path)
                    .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                    .body(Vec::new())
                    .unwrap(),
            )
            .await
            .unwrap(),
    )
    .unwrap();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Type", "Data", "Age"]);
    assert_eq!(
        table["rows"][0]["cells"].as_array().unwrap()[..3],
        [json!("s1"), json!("Opaque"), json!(2)]
    );

    // RBAC: a rule for get/list/watch allows those only; no rule at all is 403 everywhere.
    let reader: Api<Secret> =
        Api::default_namespaced(client(&s, &s.issue_token("default", "reader", None)).await);
    assert_eq!(bytes(&reader.get("s1").await.unwrap(), "user"), b"root");
    let e = reader.create(&PostParams::default(), &new).await.unwrap_err();
    assert_eq!(
        status(e),
        (
            403,
            "secrets is forbidden: User \"system:serviceaccount:default:reader\" cannot create resource \"secrets\" in API group \"\" in the namespace \"default\"".into()
        )
    );
    let nobody: Api<Secret> =
        Api::default_namespaced(client(&s, &s.issue_token("default", "nobody", None)).await);
    let e = nobody.get("s1").await.unwrap_err();
    assert_eq!(
        status(e),
        (
            403,
            "secrets \"s1\" is forbidden: User \"system:serviceaccount:default:nobody\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\"".into()
        )
    );
    assert_eq!(status(nobody.list(&Default::default()).await.unwrap_err()).0, 403);

    // Delete, then it is gone.
    secrets.delete("s1", &DeleteParams::default()).await.unwrap();
    assert_eq!(status(secrets.get("s1").await.unwrap_err()).0, 404);

    // The watch saw every change, with data and without stringData.
    let mut seen = Vec::new();
    while seen.last().map(|(t, _)| *t) != Some("DELETED") {
        let ev = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
            .await
            .expect("a watch event within 10 s")
            .unwrap()
            .expect("the watch stays open");
        let (t, o) = match ev {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            other => panic!("unexpected event {other:?}"),
        };
        assert!(o.string_data.is_none(), "{t}: {o:?}");
        seen.push((t, String::from_utf8(bytes(&o, "user")).unwrap()));
    }
    let want = [
        ("ADDED", "admin"),
        ("MODIFIED", "root"),
        ("MODIFIED", "root"),
        ("DELETED", "root"),
    ];
    let seen: Vec<(&str, &str)> = seen.iter().map(|(t, u)| (*t, u.as_str())).collect();
    assert_eq!(seen, want);
    s.shutdown().await;
}

/// Waits until pod `name` is Succeeded or Failed and returns it.
async fn finished(pods: &Api<Pod>, name: &str) -> Pod {
    let done = |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .is_some_and(|s| matches!(s.phase.as_deref(), Some("Succeeded" | "Failed")))
    };
    tokio::time::timeout(Duration::from_secs(60), await_condition(pods.clone(), name, done))
        .await
        .expect("the pod ends within 60 s")
        .unwrap()
        .expect("the pod exists")
}

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_read_secrets_from_the_store() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (s, _sweep) = server(state.path(), "pods").await;
    let admin = client(&s, s.admin_token()).await;
    let secrets: Api<Secret> = Api::default_namespaced(admin.clone());
    let pods: Api<Pod> = Api::default_namespaced(admin);
    let creds = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("creds".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("pass".into(), ByteString(b"s3cr3t".to_vec()))])),
        string_data: Some(BTreeMap::from([("user".into(), "admin".into())])),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &creds).await.unwrap();

    // A secret volume with items and modes, and secretKeyRef env, read from the store.
    let spec = json!({"terminationGracePeriodSeconds": 1,
        "volumes": [{"name": "s", "secret": {"secretName": "creds", "items": [{"key": "pass", "path": "p", "mode": 0o400}]}}],
        "containers": [{"name": "main", "image": "busybox",
            "command": ["sh", "-c", "stat -c %a /s/p; cat /s/p; echo; echo \"$USER_NAME\"; ls /s"],
            "env": [{"name": "USER_NAME", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}}],
            "volumeMounts": [{"name": "s", "mountPath": "/s"}]}]});
    pods.create(&PostParams::default(), &pod("reads", spec))
        .await
        .unwrap();
    let p = finished(&pods, "reads").await;
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Succeeded"));
    let log = pods.logs("reads", &LogParams::default()).await.unwrap();
    assert_eq!(log, "400\ns3cr3t\nadmin\np\n");

    // A Secret that does not exist: the volume fails the pod with the kubelet's message.
    let spec = json!({"volumes": [{"name": "s", "secret": {"secretName": "gone"}}],
        "containers": [{"name": "main", "image": "busybox", "command": ["true"],
            "volumeMounts": [{"name": "s", "mountPath": "/s"}]}]});
    pods.create(&PostParams::default(), &pod("no-volume", spec))
        .await
        .unwrap();
    let st = finished(&pods, "no-volume").await.status.unwrap();
    assert_eq!(st.reason.as_deref(), Some("NodeError"));
    assert!(
        st.message
            .as_deref()
            .unwrap_or("")
            .ends_with("MountVolume.SetUp failed for volume \"s\" : secret \"gone\" not found"),
        "{st:?}"
    );

    // A key the Secret lacks, in env: CreateContainerConfigError, and the pod ends.
    let spec = json!({"containers": [{"name": "main", "image": "busybox", "command": ["true"],
        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope"}}}]}]});
    pods.create(&PostParams::default(), &pod("no-key", spec))
        .await
        .unwrap();
    let st = finished(&pods, "no-key").await.status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Failed"));
    let waiting = st.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .waiting
        .unwrap();
    assert_eq!(
        (waiting.reason.as_deref(), waiting.message.as_deref()),
        (
            Some("CreateContainerConfigError"),
            Some("couldn't find key nope in Secret default/creds")
        )
    );

    // A privileged container the engine refuses: Failed, with the engine's message.
    let spec = json!({"containers": [{"name": "main", "image": "busybox", "command": ["true"],
        "securityContext": {"privileged": true, "capabilities": {"add": ["NOT_A_CAP"]}}}]});
    pods.create(&PostParams::default(), &pod("refused", spec))
        .await
        .unwrap();
    let st = finished(&pods, "refused").await.status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Failed"));
    let t = st.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!(t.reason.as_deref(), Some("ContainerCannotRun"));
    assert!(
        t.message
            .unwrap_or_default()
            .contains("unknown capability: \"CAP_NOT_A_CAP\"")
    );
    s.shutdown().await;
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        0,
        "state dir left behind"
    );
}
