//! Strategic merge patch: every directive and every merge key, on the kinds that use them.

use serde_json::{Value, json};

use super::strategic;

fn patched(kind: &str, mut t: Value, p: Value) -> Value {
    strategic(&mut t, &p, kind).unwrap();
    t
}

#[test]
fn containers_merge_by_name_with_delete_and_new_elements() {
    let t = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
    let p = json!({"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}, {"name": "c"}]}});
    assert_eq!(
        patched("Pod", t, p),
        json!({"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c"}]}})
    );
}

#[test]
fn nested_keys_in_a_deployment_template() {
    let t = json!({"spec": {"template": {"spec": {
        "initContainers": [{"name": "i", "env": [{"name": "A", "value": "1"}]}],
        "containers": [{"name": "m",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "volumeMounts": [{"mountPath": "/a", "name": "v"}],
            "args": ["x", "y"]}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "imagePullSecrets": [{"name": "s1"}],
        "tolerations": [{"key": "k1"}]}}}});
    let p = json!({"spec": {"template": {"spec": {
        "initContainers": [{"name": "i", "env": [{"name": "B", "value": "2"}]}],
        "containers": [{"name": "m",
            "env": [{"name": "A", "value": "9"}],
            "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 81}],
            "volumeMounts": [{"mountPath": "/b", "name": "v"}],
            "args": ["z"]}],
        "volumes": [{"name": "w", "emptyDir": {}}],
        "imagePullSecrets": [{"name": "s2"}],
        "tolerations": [{"key": "k2"}]}}}});
    let out = patched("Deployment", t, p);
    let spec = &out["spec"]["template"]["spec"];
    assert_eq!(
        spec["initContainers"][0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    let m = &spec["containers"][0];
    assert_eq!(
        m["env"],
        json!([{"name": "A", "value": "9"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(
        m["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 81}])
    );
    assert_eq!(
        m["volumeMounts"],
        json!([{"mountPath": "/a", "name": "v"}, {"mountPath": "/b", "name": "v"}])
    );
    assert_eq!(m["args"], json!(["z"]), "args are atomic");
    assert_eq!(spec["volumes"].as_array().unwrap().len(), 2);
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "s1"}, {"name": "s2"}]));
    assert_eq!(
        spec["tolerations"],
        json!([{"key": "k2"}]),
        "tolerations are atomic"
    );
}

#[test]
fn job_ephemeral_containers_and_service_ports() {
    let t = json!({"spec": {"template": {"spec": {"ephemeralContainers": [{"name": "d", "image": "a"}]}}}});
    let p = json!({"spec": {"template": {"spec": {"ephemeralContainers": [{"name": "d", "image": "b"}]}}}});
    assert_eq!(
        patched("Job", t, p)["spec"]["template"]["spec"]["ephemeralContainers"],
        json!([{"name": "d", "image": "b"}])
    );
    let t = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let p = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443, "$patch": "delete"}]}});
    assert_eq!(
        patched("Service", t, p)["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}])
    );
}

#[test]
fn owner_references_by_uid_and_finalizers_as_a_set() {
    let t = json!({"metadata": {"finalizers": ["a", "b"], "ownerReferences": [{"uid": "1", "name": "x"}]}});
    let p = json!({"metadata": {
        "finalizers": ["b", "c"],
        "$deleteFromPrimitiveList/finalizers": ["a"],
        "ownerReferences": [{"uid": "1", "name": "y"}, {"uid": "2", "name": "z"}]}});
    let out = patched("ConfigMap", t, p);
    assert_eq!(out["metadata"]["finalizers"], json!(["b", "c"]));
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([{"uid": "1", "name": "y"}, {"uid": "2", "name": "z"}])
    );
}

#[test]
fn patch_replace_on_a_map_and_on_a_list() {
    let t = json!({"data": {"a": "1", "b": "2"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let p = json!({"data": {"$patch": "replace", "c": "3"},
        "spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}});
    assert_eq!(
        patched("Pod", t, p),
        json!({"data": {"c": "3"}, "spec": {"containers": [{"name": "c"}]}})
    );
}

#[test]
fn patch_delete_and_merge_on_maps() {
    let t = json!({"data": {"a": "1"}, "metadata": {"labels": {"x": "1"}}});
    let p = json!({"data": {"$patch": "delete"}, "metadata": {"$patch": "merge", "labels": {"y": "2", "x": null}}});
    assert_eq!(
        patched("ConfigMap", t, p),
        json!({"metadata": {"labels": {"y": "2"}}})
    );
    let mut whole = json!({"data": {"a": "1"}});
    strategic(&mut whole, &json!({"$patch": "delete"}), "ConfigMap").unwrap();
    assert_eq!(whole, json!({}));
    let mut t = json!({});
    assert!(strategic(&mut t, &json!({"data": {"$patch": "frob"}}), "ConfigMap").is_err());
}

#[test]
fn set_element_order_reorders_merged_lists() {
    let t = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "side"}]}});
    let p = json!({"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
        "containers": [{"name": "c"}]}});
    let names: Vec<Value> = patched("Pod", t, p)["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    // "side" is not named and keeps its place; the named ones take their order.
    assert_eq!(names, vec![json!("c"), json!("b"), json!("side"), json!("a")]);
    let t = json!({"metadata": {"finalizers": ["x", "y"]}});
    let p = json!({"metadata": {"$setElementOrder/finalizers": ["y", "x"]}});
    assert_eq!(
        patched("Secret", t, p)["metadata"]["finalizers"],
        json!(["y", "x"])
    );
}

#[test]
fn retain_keys_clears_the_other_keys() {
    let t = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let p = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    assert_eq!(
        patched("Deployment", t, p)["spec"]["strategy"],
        json!({"type": "Recreate"})
    );
    // Volumes (merge,retainKeys): switching the volume source.
    let t = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
    let p = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}});
    assert_eq!(
        patched("Pod", t, p)["spec"]["volumes"],
        json!([{"name": "v", "hostPath": {"path": "/x"}}])
    );
}

#[test]
fn malformed_patches_are_errors() {
    let mut t = json!({"spec": {"containers": [{"name": "a"}]}});
    let e = strategic(&mut t, &json!({"spec": {"containers": [{"image": "x"}]}}), "Pod").unwrap_err();
    assert!(e.contains("does not contain declared merge key: name"), "{e}");
    let e = strategic(
        &mut t,
        &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
        "Pod",
    )
    .unwrap_err();
    assert!(e.contains("must be a list"), "{e}");
}

#[test]
fn kubectl_apply_style_patch_of_a_config_map() {
    let t = json!({"metadata": {"name": "c", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "data": {"a": "1", "b": "2"}});
    let p = json!({"data": {"a": "9", "b": null},
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"a\":\"9\"}}"}}});
    let out = patched("ConfigMap", t, p);
    assert_eq!(out["data"], json!({"a": "9"}));
    assert_eq!(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{\"data\":{\"a\":\"9\"}}"
    );
}
