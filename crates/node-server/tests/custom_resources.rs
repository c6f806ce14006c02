//! Custom resources through the API server, judged by kube-rs: a CustomResourceDefinition
//! is established at once and its type discovered; custom resources are created, listed by
//! label and field selectors, watched, patched (merge, JSON patch; strategic merge is 415),
//! their status written through `/status` only, `generation` bumped by spec changes only;
//! RBAC names the custom resource and its subresource; a cluster-scoped CRD; deleting the
//! CRD deletes its objects. Also: server-side apply of a ConfigMap, and the request and
//! object size limits. Skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1.

use std::time::Duration;

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::discovery::{ApiResource, Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: widget-editor, namespace: default}
rules: [{apiGroups: ["example.com"], resources: ["widgets"], verbs: ["get", "patch"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: widget-editor, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: widget-editor}
subjects: [{kind: ServiceAccount, name: editor, namespace: default}]
"#;

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

async fn server(state: &std::path::Path) -> NodeServer {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let node = NodeConfig {
        runtime: argoexec_node::RuntimeChoice::from_env(),
        state_dir: state.to_path_buf(),
        node_label: format!("crd-{}", std::process::id()),
        ..Default::default()
    };
    let s = NodeServer::start(ServerConfig {
        node,
        ..Default::default()
    })
    .await
    .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
    s.rbac().load_str(RBAC, "test").unwrap();
    s
}

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

fn status(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn crd(plural: &str, kind: &str, scope: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}}]}
    }))
    .unwrap()
}

async fn established(crds: &Api<CustomResourceDefinition>, name: &str) -> CustomResourceDefinition {
    tokio::time::timeout(
        Duration::from_secs(10),
        await_condition(crds.clone(), name, conditions::is_crd_established()),
    )
    .await
    .expect("the CRD is established in time")
    .unwrap()
    .expect("the CRD exists")
}

fn gen_of(o: &DynamicObject) -> i64 {
    o.metadata.generation.unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_then_custom_resources_with_status_watch_and_rbac() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let s = server(state.path()).await;
    let c = client(&s, s.admin_token()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), &crd("widgets", "Widget", "Namespaced"))
        .await
        .unwrap();
    let got = established(&crds, "widgets.example.com").await;
    let st = got.status.unwrap();
    assert_eq!(st.accepted_names.unwrap().kind, "Widget");
    let conds = st.conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "NamesAccepted" && c.status == "True")
    );

    // Discovery finds the type, namespaced, with its status subresource.
    let d = Discovery::new(c.clone()).run().await.unwrap();
    let (ar, caps) = d
        .resolve_gvk(&kube::api::GroupVersionKind::gvk("example.com", "v1", "Widget"))
        .expect("discovered");
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(
        caps.subresources
            .iter()
            .any(|(r, _)| r.plural == "widgets/status" || r.plural == "status")
    );

    let widgets: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar);
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "labels": {"app": "a"}},
        "spec": {"size": 1}, "status": {"ready": true}}))
    .unwrap();
    let created = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(gen_of(&created), 1);
    assert!(created.data.get("status").is_none(), "a create drops the status");
    let mut other = w.clone();
    other.metadata.name = Some("w2".into());
    other.metadata.labels = None;
    widgets.create(&PostParams::default(), &other).await.unwrap();

    let by_label = widgets
        .list(&ListParams::default().labels("app=a"))
        .await
        .unwrap();
    assert_eq!(by_label.items.len(), 1);
    let by_name = widgets
        .list(&ListParams::default().fields("metadata.name=w2,metadata.namespace=default"))
        .await
        .unwrap();
    assert_eq!(by_name.items[0].metadata.name.as_deref(), Some("w2"));
    let rv = by_label.metadata.resource_version.unwrap();
    let mut events = widgets
        .watch(&WatchParams::default().labels("app=a").timeout(20), &rv)
        .await
        .unwrap()
        .boxed();

    // The status goes through /status only, and leaves the generation alone.
    let pp = PatchParams::default();
    let o = widgets
        .patch_status(
            "w1",
            &pp,
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(o.data["status"]["ready"], true);
    assert_eq!(o.data["spec"]["size"], 1, "a status write changes nothing else");
    assert_eq!(gen_of(&o), 1);
    let ev = events.try_next().await.unwrap().unwrap();
    let WatchEvent::Modified(seen) = ev else {
        panic!("expected MODIFIED, got {ev:?}");
    };
    assert_eq!(seen.data["status"]["ready"], true);

    // A write to the object ignores its status and bumps the generation for spec changes.
    let o = widgets
        .patch(
            "w1",
            &pp,
            &Patch::Merge(json!({"spec": {"size": 2}, "status": {"ready": false}})),
        )
        .await
        .unwrap();
    assert_eq!((gen_of(&o), &o.data["status"]["ready"]), (2, &json!(true)));
    let o = widgets
        .patch(
            "w1",
            &pp,
            &Patch::Merge(json!({"metadata": {"annotations": {"a": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(gen_of(&o), 2, "metadata changes keep the generation");
    let o = widgets
        .patch::<Value>(
            "w1",
            &pp,
            &Patch::Json(
                serde_json::from_value(json!([{"op": "replace", "path": "/spec/size", "value": 3}])).unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!((gen_of(&o), &o.data["spec"]["size"]), (3, &json!(3)));
    let e = widgets
        .patch("w1", &pp, &Patch::Strategic(json!({"spec": {"size": 4}})))
        .await
        .unwrap_err();
    assert_eq!(status(e).0, 415);

    // RBAC: a missing rule on the custom resource and on its status subresource.
    let editor = client(&s, &s.issue_token("default", "editor", None)).await;
    let as_editor: Api<DynamicObject> = Api::namespaced_with(editor, "default", &ar);
    as_editor.get("w1").await.unwrap();
    let (code, msg) = status(
        as_editor
            .delete("w1", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        "widgets.example.com \"w1\" is forbidden: User \"system:serviceaccount:default:editor\" cannot delete resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    let (code, msg) = status(
        as_editor
            .patch_status("w1", &pp, &Patch::Merge(json!({"status": {"ready": false}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(
        msg.contains("cannot patch resource \"widgets/status\" in API group \"example.com\""),
        "{msg}"
    );

    // Deleting the CRD deletes its objects: a new CRD of the same name starts empty.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let (code, _) = status(widgets.get("w1").await.unwrap_err());
    assert_eq!(code, 404);
    crds.create(&PostParams::default(), &crd("widgets", "Widget", "Namespaced"))
        .await
        .unwrap();
    established(&crds, "widgets.example.com").await;
    assert!(
        widgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scope_apply_and_size_limits() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let s = server(state.path()).await;
    let c = client(&s, s.admin_token()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), &crd("gadgets", "Gadget", "Cluster"))
        .await
        .unwrap();
    established(&crds, "gadgets.example.com").await;
    let ar = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    };
    let gadgets: Api<DynamicObject> = Api::all_with(c.clone(), &ar);
    let g: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {}}),
    )
    .unwrap();
    let o = gadgets.create(&PostParams::default(), &g).await.unwrap();
    assert!(o.metadata.namespace.is_none());
    assert_eq!(gadgets.list(&ListParams::default()).await.unwrap().items.len(), 1);

    // Server-side apply: created when absent, a re-apply drops what the manager dropped.
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let pp = PatchParams::apply("test-manager");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1", "b": "2"}});
    let o = cms.patch("applied", &pp, &Patch::Apply(&cm)).await.unwrap();
    assert_eq!(o.data.as_ref().unwrap().len(), 2);
    let mf = o.metadata.managed_fields.unwrap();
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("test-manager"), Some("Apply"))
    );
    let cm =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "9"}});
    let o = cms.patch("applied", &pp, &Patch::Apply(&cm)).await.unwrap();
    assert_eq!(
        o.data.unwrap().into_iter().collect::<Vec<_>>(),
        vec![("a".to_string(), "9".to_string())]
    );
    let e = cms
        .patch("applied", &PatchParams::default(), &Patch::Apply(&cm))
        .await
        .unwrap_err();
    let (code, msg) = status(e);
    assert_eq!(code, 422);
    assert!(msg.contains("fieldManager: Required value"), "{msg}");

    // A body over 3 MiB is 413; an object over etcd's 1.5 MiB is etcd's error.
    let huge = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "huge"}, "spec": {"x": "x".repeat(3 * 1024 * 1024)}});
    let (code, msg) = status(
        gadgets
            .create(&PostParams::default(), &serde_json::from_value(huge).unwrap())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, msg.as_str()),
        (413, "Request entity too large: limit is 3145728")
    );
    let big = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "big"}, "spec": {"x": "x".repeat(1600 * 1024)}});
    let (code, msg) = status(
        gadgets
            .create(&PostParams::default(), &serde_json::from_value(big).unwrap())
            .await
            .unwrap_err(),
    );
    assert_eq!((code, msg.as_str()), (500, "etcdserver: request is too large"));
    s.shutdown().await;
}
