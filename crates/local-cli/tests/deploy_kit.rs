//! The deploy kit (`deploy/`) parses into the types a cluster would read it as: every RBAC
//! document into its k8s-openapi kind, every controller ConfigMap into a ConfigMap whose
//! `executor` is a Container that the pod builder's config parser accepts, the Helm values'
//! executor fields into their Kubernetes types, the Kustomize overlay's local files into
//! what its patches are. (The kit's executor rules driving the local node: `kit.rs` in `run`,
//! and every `run` test.)

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Container, EnvVar, ResourceRequirements, SecurityContext};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(deploy().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no files in deploy/{dir}");
    v
}

fn docs(p: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(p).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn typed<T: serde::de::DeserializeOwned>(doc: &Value, p: &Path) -> T {
    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{}: {e}\n{doc}", p.display()))
}

#[test]
fn every_rbac_document_is_its_kind_and_binds_a_role_of_the_same_file() {
    for p in yaml_files("rbac") {
        let docs = docs(&p);
        let mut roles = Vec::new();
        for d in &docs {
            assert_eq!(d["apiVersion"], "rbac.authorization.k8s.io/v1", "{}", p.display());
            assert_eq!(
                d["metadata"]["labels"]["app.kubernetes.io/name"],
                "argoexec-rs",
                "{}",
                p.display()
            );
            match d["kind"].as_str().unwrap() {
                "Role" => roles.push(typed::<Role>(d, &p).metadata.name.unwrap()),
                "ClusterRole" => roles.push(typed::<ClusterRole>(d, &p).metadata.name.unwrap()),
                "RoleBinding" => {
                    let b: RoleBinding = typed(d, &p);
                    assert!(
                        roles.contains(&b.role_ref.name),
                        "{}: binds {}",
                        p.display(),
                        b.role_ref.name
                    );
                }
                "ClusterRoleBinding" => {
                    let b: ClusterRoleBinding = typed(d, &p);
                    assert!(roles.contains(&b.role_ref.name), "{}", p.display());
                    let s = &b.subjects.unwrap()[0];
                    assert!(
                        s.namespace.is_some(),
                        "{}: a cluster binding's subject needs a namespace",
                        p.display()
                    );
                }
                other => panic!("{}: unexpected kind {other}", p.display()),
            }
        }
        assert!(!roles.is_empty(), "{}", p.display());
    }
}

#[test]
fn every_controller_config_map_names_an_executor_container_the_pod_builder_takes() {
    let mut files = yaml_files("configmap");
    files.push(deploy().join("kustomize/controller-configmap.yaml"));
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        let cm: ConfigMap = typed(&docs(&p)[0], &p);
        assert_eq!(cm.metadata.name.as_deref(), Some("workflow-controller-configmap"));
        let executor = cm.data.unwrap()["executor"].clone();
        let c: Container =
            serde_saphyr::from_str(&executor).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            c.image.as_deref().is_some_and(|i| i.contains("argoexec-rs")),
            "{}",
            p.display()
        );
        let sc = c.security_context.unwrap();
        assert_eq!(
            (sc.run_as_non_root, sc.run_as_user),
            (Some(true), Some(8737)),
            "{}",
            p.display()
        );
        let (config, warnings) = argoexec_podbuilder::ControllerConfig::from_configmap_yaml(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(warnings.is_empty(), "{}: {warnings:?}", p.display());
        assert!(config.executor.is_some());
    }
}

#[test]
fn helm_values_and_kustomize_overlay() {
    let p = deploy().join("helm/values.yaml");
    let v = &docs(&p)[0]["executor"];
    assert!(v["image"]["repository"].as_str().unwrap().contains("argoexec-rs"));
    let _: SecurityContext = typed(&v["securityContext"], &p);
    let _: ResourceRequirements = typed(&v["resources"], &p);
    let _: Vec<EnvVar> = typed(&v["env"], &p);

    let dir = deploy().join("kustomize");
    let k = &docs(&dir.join("kustomization.yaml"))[0];
    assert_eq!(k["kind"], "Kustomization");
    for r in k["resources"].as_array().unwrap() {
        let r = r.as_str().unwrap();
        assert!(
            r.starts_with("https://") || dir.join(r).is_file(),
            "missing resource {r}"
        );
    }
    for patch in k["patches"].as_array().unwrap() {
        let file = dir.join(patch["path"].as_str().unwrap());
        assert!(file.is_file(), "{}", file.display());
    }
    let ops = &docs(&dir.join("controller-executor-image.yaml"))[0];
    assert_eq!(ops[0]["op"], "add");
    assert!(ops[0]["value"].as_str().unwrap().starts_with("--executor-image="));
}
