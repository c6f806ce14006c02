"""Any object, through the official client: CustomResourceDefinitions
(ApiextensionsV1Api; Established at once, discovery of the new group and its resources with
verbs, shortNames and singularName), custom resources (CustomObjectsApi: create, list by
label and field selector, watch, the status subresource, generation, 415 for strategic
merge, RBAC 403 naming verb and resource, gone with their CRD), built-in kinds the node only
stores (Services, ServiceAccounts, Jobs, Deployments) with strategic merge by merge key, the
413 of a body over 3 MiB and etcd's error for an object over 1.5 MiB."""

import json

import pytest
from kubernetes import client, watch

from conftest import NAMESPACE, client_with_token, expect_api_error, raw, status_body, unique

VERSION = "v1"


def crd_body(group, scope="Namespaced"):
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gizmos.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo",
                           "shortNames": ["gz"]},
                 "versions": [{"name": VERSION, "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture
def crd(api_client):
    """A fresh namespaced CRD `gizmos.<unique group>`; deleted afterwards."""
    ext = client.ApiextensionsV1Api(api_client)
    group = f"{unique('g')}.conformance.argoexec.io"
    ext.create_custom_resource_definition(crd_body(group))
    yield group
    try:
        ext.delete_custom_resource_definition(f"gizmos.{group}")
    except client.ApiException as e:
        assert e.status == 404, e


def gizmo(name, labels=None, **fields):
    return {"apiVersion": "", "kind": "Gizmo",
            "metadata": {"name": name, "labels": labels or {}}, **fields}


def test_a_crd_is_established_and_discovered(api_client, crd):
    ext = client.ApiextensionsV1Api(api_client)
    got = ext.read_custom_resource_definition(f"gizmos.{crd}")
    conds = {c.type: c.status for c in got.status.conditions}
    assert conds == {"NamesAccepted": "True", "Established": "True"}, conds
    assert got.status.accepted_names.kind == "Gizmo"
    assert got.status.stored_versions == [VERSION]
    groups = client.ApisApi(api_client).get_api_versions().groups
    g = next(g for g in groups if g.name == crd)
    assert g.preferred_version.group_version == f"{crd}/{VERSION}"
    lst = json.loads(raw(api_client, "GET", f"/apis/{crd}/{VERSION}").data)
    by_name = {r["name"]: r for r in lst["resources"]}
    r = by_name["gizmos"]
    assert (r["kind"], r["namespaced"], r["singularName"], r["shortNames"]) == (
        "Gizmo", True, "gizmo", ["gz"])
    assert set(r["verbs"]) >= {"create", "delete", "get", "list", "patch", "update", "watch"}
    assert set(by_name["gizmos/status"]["verbs"]) == {"get", "patch", "update"}


def test_custom_resources_status_generation_and_selectors(custom, crd):
    args = (crd, VERSION, NAMESPACE, "gizmos")
    body = gizmo("g1", {"tier": "a"}, spec={"n": 1}, status={"ok": True})
    body["apiVersion"] = f"{crd}/{VERSION}"
    o = custom.create_namespaced_custom_object(*args, body)
    assert o["metadata"]["generation"] == 1 and "status" not in o, o
    other = dict(body, metadata={"name": "g2"})
    custom.create_namespaced_custom_object(*args, other)
    assert [i["metadata"]["name"] for i in
            custom.list_namespaced_custom_object(*args, label_selector="tier=a")["items"]] == ["g1"]
    assert [i["metadata"]["name"] for i in custom.list_namespaced_custom_object(
        *args, field_selector=f"metadata.name=g2,metadata.namespace={NAMESPACE}")["items"]] == ["g2"]
    rv = custom.list_namespaced_custom_object(*args)["metadata"]["resourceVersion"]

    o = custom.patch_namespaced_custom_object_status(
        *args, "g1", {"status": {"ok": True}, "spec": {"n": 5}})
    assert (o["status"], o["spec"], o["metadata"]["generation"]) == ({"ok": True}, {"n": 1}, 1)
    o = custom.patch_namespaced_custom_object(*args, "g1", {"spec": {"n": 2}, "status": None})
    assert (o["status"], o["metadata"]["generation"]) == ({"ok": True}, 2), o
    events = []
    for ev in watch.Watch().stream(custom.list_namespaced_custom_object, *args,
                                   resource_version=rv, timeout_seconds=5):
        events.append((ev["type"], ev["object"]["metadata"]["name"]))
        if len(events) == 2:
            break
    assert events == [("MODIFIED", "g1"), ("MODIFIED", "g1")], events
    r = raw(custom.api_client, "PATCH", f"/apis/{crd}/{VERSION}/namespaces/{NAMESPACE}/gizmos/g1",
            headers={"Content-Type": "application/strategic-merge-patch+json"},
            body={"spec": {"n": 3}})
    assert (r.status, status_body(r.data)["reason"]) == (415, "UnsupportedMediaType"), r.data


def test_rbac_names_the_custom_resource_and_a_deleted_crd_takes_its_objects(
        api_client, admin_config, custom, sa_token, crd):
    args = (crd, VERSION, NAMESPACE, "gizmos")
    body = gizmo("g1")
    body["apiVersion"] = f"{crd}/{VERSION}"
    custom.create_namespaced_custom_object(*args, body)
    with client_with_token(admin_config, sa_token("limited").status.token) as c:
        _, st = expect_api_error(403, client.CustomObjectsApi(c).get_namespaced_custom_object,
                                 *args, "g1")
    assert st["message"] == (
        f'gizmos.{crd} "g1" is forbidden: User "system:serviceaccount:default:limited" cannot '
        f'get resource "gizmos" in API group "{crd}" in the namespace "default"'), st
    with client_with_token(admin_config, sa_token("limited").status.token) as c:
        _, st = expect_api_error(403, client.CustomObjectsApi(c).patch_namespaced_custom_object_status,
                                 *args, "g1", {"status": {}})
    assert 'cannot patch resource "gizmos/status"' in st["message"], st
    client.ApiextensionsV1Api(api_client).delete_custom_resource_definition(f"gizmos.{crd}")
    expect_api_error(404, custom.list_namespaced_custom_object, *args)
    client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd_body(crd))
    assert custom.list_namespaced_custom_object(*args)["items"] == []


def test_stored_builtin_kinds_merge_lists_by_key(api_client, core):
    apps, batch = client.AppsV1Api(api_client), client.BatchV1Api(api_client)
    name = unique("obj")
    try:
        core.create_namespaced_service(NAMESPACE, {"metadata": {"name": name}, "spec": {
            "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}})
        svc = core.patch_namespaced_service(name, NAMESPACE, {"spec": {"ports": [
            {"port": 80, "targetPort": 8080}, {"port": 81, "$patch": "delete"}]}})
        assert [(p.port, p.target_port) for p in svc.spec.ports] == [(80, 8080)]
        sa = core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": name}})
        assert sa.metadata.uid
        dep = {"metadata": {"name": name}, "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                {"name": "main", "image": "busybox:latest",
                 "env": [{"name": "A", "value": "1"}],
                 "volumeMounts": [{"name": "v", "mountPath": "/a"}]}]}}}}
        created = apps.create_namespaced_deployment(NAMESPACE, dep)
        assert created.metadata.generation == 1
        d = apps.patch_namespaced_deployment(name, NAMESPACE, {"spec": {"template": {"spec": {
            "containers": [{"name": "main", "env": [{"name": "B", "value": "2"}],
                            "volumeMounts": [{"name": "v", "mountPath": "/b"}]}]}}}})
        c = d.spec.template.spec.containers[0]
        assert [e.name for e in c.env] == ["A", "B"]
        assert [m.mount_path for m in c.volume_mounts] == ["/a", "/b"]
        assert d.metadata.generation == 2
        job = batch.create_namespaced_job(NAMESPACE, {"metadata": {"name": name}, "spec": {
            "template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "m", "image": "busybox:latest"}]}}}})
        assert job.spec.template.spec.containers[0].image == "busybox:latest"
    finally:
        for fn in (core.delete_namespaced_service, core.delete_namespaced_service_account,
                   apps.delete_namespaced_deployment, batch.delete_namespaced_job):
            try:
                fn(name, NAMESPACE)
            except client.ApiException:
                pass


def test_size_limits(core):
    name = unique("big")
    _, st = expect_api_error(413, core.create_namespaced_config_map, NAMESPACE,
                             {"metadata": {"name": name}, "data": {"k": "x" * (3 * 1024 * 1024)}})
    assert (st["reason"], st["message"]) == (
        "RequestEntityTooLarge", "Request entity too large: limit is 3145728"), st
    # Under 3 MiB but over etcd's 1.5 MiB: a Service has no data limit of its own.
    _, st = expect_api_error(500, core.create_namespaced_service, NAMESPACE, {
        "metadata": {"name": name, "annotations": {"x": "y" * (1600 * 1024)}}, "spec": {}})
    assert st["message"] == "etcdserver: request is too large", st


@pytest.mark.parametrize("fmt", ["v2", "v2beta1"])
def test_aggregated_discovery_lists_the_crd(api_client, crd, fmt):
    """kubectl ≥ 1.26 reads only /api and /apis when they answer in the aggregated format."""
    accept = f"application/json;g=apidiscovery.k8s.io;v={fmt};as=APIGroupDiscoveryList,application/json"
    r = raw(api_client, "GET", "/apis", headers={"Accept": accept})
    assert r.status == 200
    assert r.getheader("Content-Type") == (
        f"application/json;g=apidiscovery.k8s.io;v={fmt};as=APIGroupDiscoveryList")
    doc = json.loads(r.data)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList", f"apidiscovery.k8s.io/{fmt}")
    group = next(i for i in doc["items"] if i["metadata"].get("name") == crd)
    res = group["versions"][0]["resources"][0]
    assert (res["resource"], res["scope"], res["singularResource"], res["responseKind"]["kind"],
            res["subresources"][0]["subresource"]) == ("gizmos", "Namespaced", "gizmo", "Gizmo",
                                                        "status"), res
    core = json.loads(raw(api_client, "GET", "/api", headers={"Accept": accept}).data)
    names = {x["resource"] for x in core["items"][0]["versions"][0]["resources"]}
    assert {"pods", "configmaps", "secrets", "services", "serviceaccounts", "events"} <= names
    legacy = raw(api_client, "GET", "/apis", headers={"Accept": "application/json"})
    assert json.loads(legacy.data)["kind"] == "APIGroupList"
