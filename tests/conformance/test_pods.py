"""Pods: create, get, list with label selectors, watch to a terminal phase, delete."""

from kubernetes import client

from conftest import (NAMESPACE, OUT_ERR_DONE, RUN_ID, RUN_LABEL, SLEEPER, expect_api_error,
                      phase_of, pod_manifest, unique, wait_phase, watch_pod)

PHASE_ORDER = {"Pending": 0, "Running": 1, "Succeeded": 2, "Failed": 2}


def test_create_get_list(core, make_pod):
    a, b = unique("list-a"), unique("list-b")
    created = make_pod(pod_manifest(a, OUT_ERR_DONE, {"role": "a"}))
    make_pod(pod_manifest(b, OUT_ERR_DONE, {"role": "b"}))

    assert created.kind == "Pod" and created.api_version == "v1"
    assert created.metadata.name == a and created.metadata.namespace == NAMESPACE
    assert created.metadata.uid, "created pod has no uid"
    assert created.metadata.resource_version, "created pod has no resourceVersion"
    assert created.metadata.creation_timestamp is not None
    assert created.metadata.labels == {RUN_LABEL: RUN_ID, "role": "a"}
    assert created.spec.containers[0].command == ["sh", "-c", OUT_ERR_DONE]
    assert created.spec.restart_policy == "Never"

    got = core.read_namespaced_pod(a, NAMESPACE)
    assert got.metadata.uid == created.metadata.uid
    assert got.spec.containers[0].image == created.spec.containers[0].image

    lst = core.list_namespaced_pod(NAMESPACE, label_selector=f"{RUN_LABEL}={RUN_ID},role=a")
    assert lst.kind == "PodList" and lst.api_version == "v1"
    assert lst.metadata.resource_version, "PodList has no metadata.resourceVersion"
    assert [p.metadata.name for p in lst.items] == [a]

    both = core.list_namespaced_pod(NAMESPACE, label_selector=f"{RUN_LABEL}={RUN_ID}")
    assert {a, b} <= {p.metadata.name for p in both.items}

    none = core.list_namespaced_pod(NAMESPACE, label_selector=f"{RUN_LABEL}={RUN_ID},role=zzz")
    assert none.items == []

    by_name = core.list_namespaced_pod(NAMESPACE, field_selector=f"metadata.name={b}")
    assert [p.metadata.name for p in by_name.items] == [b]


def test_duplicate_pod_is_409(core, make_pod):
    name = unique("dup")
    make_pod(pod_manifest(name, "true"))
    _, st = expect_api_error(409, core.create_namespaced_pod, NAMESPACE,
                             pod_manifest(name, "true"))
    assert st["reason"] == "AlreadyExists", st
    assert st["message"] == f'pods "{name}" already exists', st
    assert st["details"]["name"] == name and st["details"]["kind"] == "pods", st


def test_get_missing_pod_is_404(core):
    name = unique("missing")
    _, st = expect_api_error(404, core.read_namespaced_pod, name, NAMESPACE)
    assert st["reason"] == "NotFound", st
    assert st["message"] == f'pods "{name}" not found', st
    assert st["details"] == {"name": name, "kind": "pods"}, st


def test_watch_until_succeeded(core, make_pod):
    name = unique("succeed")
    make_pod(pod_manifest(name, OUT_ERR_DONE))
    final, events = wait_phase(core, name, {"Succeeded", "Failed"})

    assert events[0]["type"] == "ADDED", [e["type"] for e in events]
    assert all(e["type"] == "MODIFIED" for e in events[1:]), [e["type"] for e in events]
    ranks = [PHASE_ORDER[phase_of(e)] for e in events if phase_of(e)]
    assert ranks == sorted(ranks), f"phase went backwards: {[phase_of(e) for e in events]}"
    rvs = [e["object"].metadata.resource_version for e in events]
    assert len(set(rvs)) == len(rvs), f"events repeat a resourceVersion: {rvs}"

    assert final.status.phase == "Succeeded", final.status
    (cs,) = final.status.container_statuses
    assert cs.name == "main"
    term = cs.state.terminated
    assert term is not None, cs.state
    assert term.exit_code == 0 and term.reason == "Completed", term
    assert term.started_at is not None and term.finished_at is not None
    assert (term.finished_at - term.started_at).total_seconds() >= 0.9, \
        f"container ran {term.started_at}..{term.finished_at}, shorter than its sleep 1"
    assert cs.container_id and "://" in cs.container_id, cs.container_id


def test_failed_pod_reports_exit_code(core, make_pod):
    name = unique("fail")
    make_pod(pod_manifest(name, "echo bye; exit 7"))
    final, _ = wait_phase(core, name, {"Succeeded", "Failed"})
    assert final.status.phase == "Failed", final.status.phase
    term = final.status.container_statuses[0].state.terminated
    assert term.exit_code == 7 and term.reason == "Error", term


def test_env_args_and_downward_api(core, make_pod):
    name = unique("env")
    m = pod_manifest(name, "")
    c = m["spec"]["containers"][0]
    c["command"] = ["sh", "-c"]
    c["args"] = ['echo "$GREETING $MY_NAME $MY_NS"; cat /etc/podinfo/labels']
    c["env"] = [
        {"name": "GREETING", "value": "hello"},
        {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]
    c["volumeMounts"] = [{"name": "podinfo", "mountPath": "/etc/podinfo"}]
    m["spec"]["volumes"] = [{"name": "podinfo", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]
    make_pod(m)
    final, _ = wait_phase(core, name, {"Succeeded", "Failed"})
    assert final.status.phase == "Succeeded", final.status
    log = core.read_namespaced_pod_log(name, NAMESPACE)
    assert log == f'hello {name} {NAMESPACE}\n{RUN_LABEL}="{RUN_ID}"', repr(log)


def test_delete_pod_watch_deleted_then_404(core, make_pod):
    name = unique("delete")
    make_pod(pod_manifest(name, SLEEPER))
    pod, _ = wait_phase(core, name, {"Running", "Succeeded", "Failed"})
    assert pod.status.phase == "Running"

    lst = core.list_namespaced_pod(NAMESPACE, field_selector=f"metadata.name={name}")
    rv = lst.metadata.resource_version
    deleted = core.delete_namespaced_pod(name, NAMESPACE)
    # Either the pod with deletionTimestamp set (graceful) or a Success Status.
    if isinstance(deleted, client.V1Pod):
        assert deleted.metadata.name == name
        assert deleted.metadata.deletion_timestamp is not None, deleted.metadata
    ev, events = watch_pod(core, name, lambda e: e["type"] == "DELETED", resource_version=rv)
    assert all(e["type"] in ("MODIFIED", "DELETED") for e in events), \
        f"watch from a list RV replayed: {[e['type'] for e in events]}"
    assert ev["object"].metadata.name == name
    _, st = expect_api_error(404, core.read_namespaced_pod, name, NAMESPACE)
    assert st["reason"] == "NotFound"
    gone = core.list_namespaced_pod(NAMESPACE, field_selector=f"metadata.name={name}")
    assert gone.items == []
