//! `argoexec_resource::run` against the project's local node (its API server, started per
//! test; no pods): ConfigMaps created, applied twice, patched with each strategy, deleted;
//! conditions met by a change the test makes while the step waits, failure conditions, an
//! object deleted while waited for, RBAC refusals, bad conditions refused before anything
//! exists; the task result read back with its labels and outputs. Skipped with
//! ARGOEXEC_SKIP_DOCKER_TESTS=1 (the node server needs Docker to start).

use std::time::Duration;

use argoexec_core::ExecutorEnv;
use argoexec_core::template::{Parameter, ResourceTemplate, Template, ValueFrom};
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_report::{ApiReporter, InClusterConfig};
use argoexec_resource::{ResourceError, Step};
use argoexec_testkit::sweep::Sweep;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: step, namespace: default}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]}
- {apiGroups: ["argoproj.io"], resources: ["workflowtaskresults"], verbs: ["create", "patch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: step, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: step}
subjects: [{kind: ServiceAccount, name: step, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: results-only, namespace: default}
rules:
- {apiGroups: ["argoproj.io"], resources: ["workflowtaskresults"], verbs: ["create", "patch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: results-only, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: results-only}
subjects: [{kind: ServiceAccount, name: limited, namespace: default}]
"#;

struct Node {
    server: NodeServer,
    dir: tempfile::TempDir,
    _sweep: Sweep,
}

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

async fn node(test: &str) -> Node {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("resource-{test}-{}", std::process::id());
    let sweep = Sweep(label.clone());
    let server = NodeServer::start(ServerConfig {
        node: NodeConfig {
            state_dir: dir.path().join("state"),
            node_label: label,
            ..Default::default()
        },
        ..Default::default()
    })
    .await
    .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
    server.rbac().load_str(RBAC, "test").unwrap();
    Node {
        server,
        dir,
        _sweep: sweep,
    }
}

impl Node {
    /// The in-cluster configuration of service account `sa`.
    fn config(&self, sa: &str) -> InClusterConfig {
        let sa_dir = self.dir.path().join(format!("sa-{sa}"));
        std::fs::create_dir_all(&sa_dir).unwrap();
        std::fs::write(sa_dir.join("token"), self.server.issue_token("default", sa, None)).unwrap();
        std::fs::write(sa_dir.join("ca.crt"), self.server.ca_pem()).unwrap();
        std::fs::write(sa_dir.join("namespace"), "default").unwrap();
        InClusterConfig {
            server: self.server.api_url(),
            service_account_dir: sa_dir,
        }
    }

    fn admin(&self) -> Api<ConfigMap> {
        let (client, _) = self.config("step").connect().unwrap();
        Api::namespaced(client, "default")
    }

    /// Run one step as service account `sa`, reporting to task result `node_id`.
    async fn step(
        &self,
        sa: &str,
        node_id: &str,
        action: &str,
        res: ResourceTemplate,
        params: Vec<Parameter>,
    ) -> Result<Vec<Parameter>, ResourceError> {
        let config = self.config(sa);
        let env = ExecutorEnv::parse(|k| match k {
            "ARGO_POD_NAME" => Some("wf-pod".into()),
            "ARGO_NODE_ID" => Some(node_id.into()),
            "ARGO_WORKFLOW_NAME" => Some("wf".into()),
            "ARGO_NAMESPACE" => Some("default".into()),
            _ => None,
        })
        .unwrap();
        let (client, _) = config.connect().unwrap();
        let reporter = ApiReporter::connect(&config, &env).unwrap();
        let mut template = Template {
            name: "t".into(),
            resource: Some(res),
            ..Default::default()
        };
        template.outputs.parameters = params;
        let step = Step {
            action: action.into(),
            template,
            manifest_path: self.dir.path().join(format!("{node_id}.yaml")),
            namespace: "default".into(),
            check_interval: Duration::from_millis(100),
        };
        argoexec_resource::run(&client, &reporter, &step)
            .await
            .map(|o| o.parameters)
    }

    fn task_result(&self, node_id: &str) -> Value {
        (*self
            .server
            .get_task_result("default", node_id)
            .expect("a task result"))
        .clone()
    }
}

fn res(manifest: &str) -> ResourceTemplate {
    ResourceTemplate {
        manifest: Some(manifest.into()),
        ..Default::default()
    }
}

fn out(name: &str, json_path: Option<&str>, jq: Option<&str>) -> Parameter {
    Parameter {
        name: name.into(),
        value_from: Some(ValueFrom {
            json_path: json_path.map(Into::into),
            jq_filter: jq.map(Into::into),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn values(params: &[Parameter]) -> Vec<(&str, &str)> {
    params
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_deref().unwrap_or("<none>")))
        .collect()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n  labels: {app: demo}\ndata:\n  a: \"1\"\n  b: two\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_reports_json_path_and_jq_outputs_in_the_task_result() {
    if skip() {
        return;
    }
    let n = node("create").await;
    let params = vec![
        out("name", Some("{.metadata.name}"), None),
        out("summary", Some("{.metadata.labels.app}/{.data.b}"), None),
        out("data", None, Some(".data")),
    ];
    let got = n.step("step", "wf-1", "create", res(CM), params).await.unwrap();
    assert_eq!(
        values(&got),
        [
            ("name", "cm1"),
            ("summary", "demo/two"),
            ("data", r#"{"a":"1","b":"two"}"#)
        ]
    );
    let cm = n.admin().get("cm1").await.unwrap();
    assert_eq!(cm.data.unwrap()["b"], "two");
    let tr = n.task_result("wf-1");
    assert_eq!(
        tr["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"],
        "true"
    );
    assert_eq!(tr["metadata"]["labels"]["workflows.argoproj.io/workflow"], "wf");
    assert_eq!(tr["outputs"]["parameters"][0]["value"], "cm1");
    assert_eq!(tr["outputs"]["parameters"][2]["value"], r#"{"a":"1","b":"two"}"#);
    // Creating it again is kubectl's AlreadyExists, reported as the task result's message.
    let e = n
        .step("step", "wf-2", "create", res(CM), vec![])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    assert!(
        n.task_result("wf-2")["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_twice_then_patch_with_each_strategy_then_delete() {
    if skip() {
        return;
    }
    let n = node("apply").await;
    n.step("step", "a1", "apply", res(CM), vec![]).await.unwrap();
    let cm = n.admin().get("cm1").await.unwrap();
    let last = cm.metadata.annotations.unwrap()["kubectl.kubernetes.io/last-applied-configuration"].clone();
    assert!(last.contains(r#""b":"two""#), "{last}");
    // Apply again without `b` and with `c`: b is deleted, c added, a kept.
    let second = CM.replace("  b: two\n", "  c: three\n");
    n.step("step", "a2", "apply", res(&second), vec![]).await.unwrap();
    let data = n.admin().get("cm1").await.unwrap().data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["a", "c"]);

    let merge = ResourceTemplate {
        merge_strategy: Some("merge".into()),
        flags: vec!["configmap".into(), "cm1".into()],
        ..res("data:\n  m: merged\n")
    };
    n.step("step", "p1", "patch", merge, vec![]).await.unwrap();
    let strategic = res("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm1}\ndata:\n  s: strategic\n");
    n.step("step", "p2", "patch", strategic, vec![]).await.unwrap();
    let json_patch = ResourceTemplate {
        merge_strategy: Some("json".into()),
        flags: vec!["cm/cm1".into()],
        ..res("- {op: add, path: /data/j, value: json}\n- {op: remove, path: /data/a}\n")
    };
    let got = n
        .step(
            "step",
            "p3",
            "patch",
            json_patch,
            vec![out("keys", None, Some(".data | keys | join(\",\")"))],
        )
        .await
        .unwrap();
    assert_eq!(values(&got), [("keys", "c,j,m,s")]);

    n.step("step", "d1", "delete", res(CM), vec![]).await.unwrap();
    assert!(n.admin().get_opt("cm1").await.unwrap().is_none());
    // Already gone: fine (Argo passes --ignore-not-found).
    n.step("step", "d2", "delete", res(CM), vec![]).await.unwrap();
    // Outputs with delete are refused before anything is done.
    let e = n
        .step(
            "step",
            "d3",
            "delete",
            res(CM),
            vec![out("x", Some("{.a}"), None)],
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ResourceError::DeleteWithOutputs), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_by_selector_and_several_documents() {
    if skip() {
        return;
    }
    let n = node("selector").await;
    let two = format!("{CM}---\n{}", CM.replace("cm1", "cm2"));
    n.step("step", "c", "create", res(&two), vec![]).await.unwrap();
    assert!(n.admin().get_opt("cm2").await.unwrap().is_some());
    let e = n
        .step(
            "step",
            "c2",
            "get",
            res(&two),
            vec![out("n", Some("{.metadata.name}"), None)],
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ResourceError::SeveralObjects { count: 2 }), "{e}");
    // `get` waits too: a condition already met returns at once (Argo's k8s-wait-wf shape).
    let ready = ResourceTemplate {
        success_condition: Some("data.b == two".into()),
        ..res(&CM.replace("cm1", "cm2"))
    };
    let got = n
        .step("step", "g", "get", ready, vec![out("b", Some("{.data.b}"), None)])
        .await
        .unwrap();
    assert_eq!(values(&got), [("b", "two")]);
    // A failure part-way names what was already done.
    let three = format!("{}---\n{CM}", CM.replace("cm1", "cm3"));
    let e = n
        .step("step", "c3", "create", res(&three), vec![])
        .await
        .unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, ResourceError::Partial { .. }), "{s}");
    assert!(
        s.starts_with(
            "1 already done (created configmap./cm3 in namespace default); then: create configmap./cm1"
        ),
        "{s}"
    );
    n.admin().delete("cm3", &Default::default()).await.unwrap();
    let by_label = ResourceTemplate {
        flags: vec!["configmaps".into(), "--selector".into(), "app=demo".into()],
        ..Default::default()
    };
    n.step("step", "d", "delete", by_label, vec![]).await.unwrap();
    let left = n.admin().list(&Default::default()).await.unwrap();
    assert!(
        left.items
            .iter()
            .all(|c| c.metadata.name.as_deref() != Some("cm1") && c.metadata.name.as_deref() != Some("cm2"))
    );
}

/// Wait until the test sees `name` created (the step is then acting or waiting on it).
async fn created(api: &Api<ConfigMap>, name: &str) {
    let wp = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = api.watch(&wp, "0").await.unwrap().boxed();
    while let Some(ev) = events.try_next().await.unwrap() {
        if matches!(ev, WatchEvent::Added(_) | WatchEvent::Modified(_)) {
            return;
        }
    }
    panic!("watch ended before {name} appeared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_condition_met_by_a_later_change_failure_and_deletion() {
    if skip() {
        return;
    }
    let n = std::sync::Arc::new(node("wait").await);
    let api = n.admin();
    let waiting = ResourceTemplate {
        success_condition: Some("data.ready == yes, metadata.labels.app".into()),
        failure_condition: Some("data.state in (bad, worse)".into()),
        ..res(CM)
    };
    let n2 = n.clone();
    let w2 = waiting.clone();
    let step = tokio::spawn(async move {
        n2.step(
            "step",
            "w1",
            "create",
            w2,
            vec![out("r", Some("{.data.ready}"), None)],
        )
        .await
    });
    created(&api, "cm1").await;
    api.patch(
        "cm1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ready": "yes"}})),
    )
    .await
    .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(30), step)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(values(&got), [("r", "yes")]);

    // Failure: checked first, named in the error and the task result's message.
    let n2 = n.clone();
    let w2 = ResourceTemplate {
        manifest: Some(CM.replace("cm1", "cm2")),
        ..waiting.clone()
    };
    let step = tokio::spawn(async move { n2.step("step", "w2", "create", w2, vec![]).await });
    created(&api, "cm2").await;
    api.patch(
        "cm2",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ready": "yes", "state": "bad"}})),
    )
    .await
    .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(30), step)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "failure condition 'data.state in (bad,worse)' evaluated true"
    );
    assert_eq!(n.task_result("w2")["message"], e.to_string());

    // Deleted while waited for.
    let n2 = n.clone();
    let w3 = ResourceTemplate {
        manifest: Some(CM.replace("cm1", "cm3")),
        ..waiting
    };
    let step = tokio::spawn(async move { n2.step("step", "w3", "create", w3, vec![]).await });
    created(&api, "cm3").await;
    api.delete("cm3", &Default::default()).await.unwrap();
    let e = tokio::time::timeout(Duration::from_secs(30), step)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, ResourceError::Deleted { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_come_before_anything_is_created() {
    if skip() {
        return;
    }
    let n = node("refuse").await;
    let bad = ResourceTemplate {
        success_condition: Some("items.# > 1".into()),
        ..res(CM)
    };
    let e = n.step("step", "b1", "create", bad, vec![]).await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("success condition 'items.# > 1' failed to parse"),
        "{e}"
    );
    let flags = ResourceTemplate {
        flags: vec!["--force".into()],
        ..res(CM)
    };
    let e = n.step("step", "b2", "create", flags, vec![]).await.unwrap_err();
    assert!(e.to_string().contains("\"--force\""), "{e}");
    let e = n
        .step("step", "b3", "create", res("kind: [unclosed\n"), vec![])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not valid YAML"), "{e}");
    let e = n
        .step(
            "step",
            "b4",
            "create",
            res("apiVersion: example.com/v9\nkind: Nope\nmetadata: {name: x}\n"),
            vec![],
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains(r#"group "example.com", version "v9", kind "Nope""#),
        "{e}"
    );
    assert!(
        n.admin().get_opt("cm1").await.unwrap().is_none(),
        "nothing was created"
    );
    // RBAC: the API server's 403 names the verb and the resource.
    let e = n
        .step("limited", "b5", "create", res(CM), vec![])
        .await
        .unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("forbidden") && s.contains("configmaps") && s.contains("create"),
        "{s}"
    );
    assert!(
        n.task_result("b5")["message"]
            .as_str()
            .unwrap()
            .contains("forbidden")
    );
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const WIDGET_RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: widgets, namespace: default}
rules:
- {apiGroups: ["example.com"], resources: ["widgets"], verbs: ["get", "create", "patch"]}
- {apiGroups: ["argoproj.io"], resources: ["workflowtaskresults"], verbs: ["create", "patch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: widgets, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: widgets}
subjects: [{kind: ServiceAccount, name: no-watch, namespace: default}]
"#;

const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 2}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_polling_without_watch_and_server_side_apply() {
    if skip() {
        return;
    }
    let n = std::sync::Arc::new(node("crd").await);
    n.server.rbac().load_str(WIDGET_RBAC, "widgets").unwrap();
    let admin_dir = n.dir.path().join("sa-admin");
    std::fs::create_dir_all(&admin_dir).unwrap();
    std::fs::write(admin_dir.join("token"), n.server.admin_token()).unwrap();
    std::fs::write(admin_dir.join("ca.crt"), n.server.ca_pem()).unwrap();
    let admin_config = InClusterConfig {
        server: n.server.api_url(),
        service_account_dir: admin_dir,
    };
    let (admin, _) = admin_config.connect().unwrap();
    let crd: kube::api::DynamicObject = serde_saphyr::from_str(CRD).unwrap();
    let crds: Api<kube::api::DynamicObject> = Api::all_with(
        admin.clone(),
        &kube::discovery::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    crds.create(&Default::default(), &crd).await.unwrap();
    let widgets: Api<kube::api::DynamicObject> = Api::namespaced_with(
        admin.clone(),
        "default",
        &kube::discovery::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        ),
    );

    // The step may get but not watch: it polls at the interval (100 ms here).
    let n2 = n.clone();
    let waiting = ResourceTemplate {
        success_condition: Some("status.phase == Ready".into()),
        ..res(WIDGET)
    };
    let step = tokio::spawn(async move {
        n2.step(
            "no-watch",
            "c1",
            "create",
            waiting,
            vec![out("size", Some("{.spec.size}"), None)],
        )
        .await
    });
    let wp = WatchParams::default().fields("metadata.name=w1");
    let mut events = widgets.watch(&wp, "0").await.unwrap().boxed();
    while let Some(ev) = events.try_next().await.unwrap() {
        if matches!(ev, WatchEvent::Added(_)) {
            break;
        }
    }
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(30), step)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(values(&got), [("size", "2")]);

    // A strategic merge patch of a custom resource is refused, naming the way out.
    let strategic = res("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n");
    let e = n
        .step("no-watch", "c2", "patch", strategic.clone(), vec![])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("use mergeStrategy merge or json"), "{e}");
    let merge = ResourceTemplate {
        merge_strategy: Some("merge".into()),
        ..strategic
    };
    let got = n
        .step(
            "no-watch",
            "c3",
            "patch",
            merge,
            vec![out("size", None, Some(".spec.size"))],
        )
        .await
        .unwrap();
    assert_eq!(values(&got), [("size", "3")]);

    // Server-side apply with the argoexec field manager; flags name the short name.
    let ssa = ResourceTemplate {
        flags: vec!["--server-side".into(), "--force-conflicts".into()],
        ..res("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {size: 5}\n")
    };
    // A service account without rules on widgets is refused by the API server.
    let e = n
        .step("nobody", "c4", "apply", ssa.clone(), vec![])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("forbidden"), "{e}");
    let (client, _) = admin_config.connect().unwrap();
    let step = Step {
        action: "apply".into(),
        template: Template {
            resource: Some(ssa),
            ..Default::default()
        },
        manifest_path: n.dir.path().join("ssa.yaml"),
        namespace: "default".into(),
        check_interval: Duration::from_millis(100),
    };
    argoexec_resource::execute(&client, &step).await.unwrap();
    let w2 = widgets.get("w2").await.unwrap();
    let managers: Vec<String> = w2
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.iter().any(|m| m == "argoexec"), "{managers:?}");
    let get_by_short_name = ResourceTemplate {
        flags: vec!["wd".into(), "w2".into()],
        ..Default::default()
    };
    let got = n
        .step(
            "no-watch",
            "c5",
            "get",
            get_by_short_name,
            vec![out("size", Some("{.spec.size}"), None)],
        )
        .await;
    assert_eq!(values(&got.unwrap()), [("size", "5")]);
}
