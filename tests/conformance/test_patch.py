"""PATCH pods: merge patch, the client's default (strategic merge for dict bodies), JSON
patch, optimistic concurrency, unsupported content type."""

from conftest import NAMESPACE, RUN_ID, expect_api_error, raw, unique

MERGE = "application/merge-patch+json"


def annotations(pod):
    return dict(pod.metadata.annotations or {})


def test_merge_patch_adds_and_deletes(core, sleeper):
    k1, k2 = f"merge-a-{RUN_ID}", f"merge-b-{RUN_ID}"
    before = core.read_namespaced_pod(sleeper, NAMESPACE)
    p1 = core.patch_namespaced_pod(sleeper, NAMESPACE,
                                   {"metadata": {"annotations": {k1: "1", k2: "two"}}},
                                   _content_type=MERGE)
    assert annotations(p1).get(k1) == "1" and annotations(p1).get(k2) == "two", annotations(p1)
    assert p1.metadata.resource_version != before.metadata.resource_version
    assert p1.metadata.uid == before.metadata.uid
    assert p1.spec.containers[0].command == before.spec.containers[0].command

    p2 = core.patch_namespaced_pod(sleeper, NAMESPACE,
                                   {"metadata": {"annotations": {k2: None}}},
                                   _content_type=MERGE)
    assert k2 not in annotations(p2) and annotations(p2).get(k1) == "1", annotations(p2)
    got = core.read_namespaced_pod(sleeper, NAMESPACE)
    assert annotations(got) == annotations(p2)
    assert got.metadata.resource_version == p2.metadata.resource_version


def test_default_patch_is_strategic_merge(core, sleeper):
    # For a dict body the client sends application/strategic-merge-patch+json.
    key = f"strategic-{RUN_ID}"
    keep = f"keep-{RUN_ID}"
    core.patch_namespaced_pod(sleeper, NAMESPACE, {"metadata": {"annotations": {keep: "x"}}},
                              _content_type=MERGE)
    p = core.patch_namespaced_pod(sleeper, NAMESPACE, {"metadata": {"annotations": {key: "v"}}})
    assert annotations(p).get(key) == "v" and annotations(p).get(keep) == "x", annotations(p)
    assert core.read_namespaced_pod(sleeper, NAMESPACE).metadata.annotations.get(key) == "v"


def test_explicit_strategic_merge(core, sleeper):
    key = f"smp-{RUN_ID}"
    p = core.patch_namespaced_pod(sleeper, NAMESPACE, {"metadata": {"annotations": {key: "s"}}},
                                  _content_type="application/strategic-merge-patch+json")
    assert annotations(p).get(key) == "s"


def test_json_patch(core, sleeper):
    # Keys with "/" are escaped as "~1" (RFC 6901).
    key = f"example.com/json-{RUN_ID}"
    ops = [{"op": "add", "path": f"/metadata/annotations/{key.replace('/', '~1')}",
            "value": "j"}]
    # The map exists already (other tests and the 410 test annotate the pod); make sure.
    core.patch_namespaced_pod(sleeper, NAMESPACE,
                              {"metadata": {"annotations": {f"seed-{RUN_ID}": "1"}}},
                              _content_type=MERGE)
    p = core.patch_namespaced_pod(sleeper, NAMESPACE, ops)  # list body -> json-patch
    assert annotations(p).get(key) == "j", annotations(p)
    p = core.patch_namespaced_pod(
        sleeper, NAMESPACE,
        [{"op": "remove", "path": f"/metadata/annotations/{key.replace('/', '~1')}"}],
        _content_type="application/json-patch+json")
    assert key not in annotations(p)


def test_stale_resource_version_is_409(core, sleeper):
    old = core.read_namespaced_pod(sleeper, NAMESPACE).metadata.resource_version
    core.patch_namespaced_pod(sleeper, NAMESPACE,
                              {"metadata": {"annotations": {f"bump-{RUN_ID}": unique("b")}}},
                              _content_type=MERGE)
    _, st = expect_api_error(
        409, core.patch_namespaced_pod, sleeper, NAMESPACE,
        {"metadata": {"resourceVersion": old, "annotations": {f"stale-{RUN_ID}": "x"}}},
        _content_type=MERGE)
    assert st["reason"] == "Conflict", st
    assert st["message"] == (f'Operation cannot be fulfilled on pods "{sleeper}": the object '
                             "has been modified; please apply your changes to the latest "
                             "version and try again"), st
    assert f"stale-{RUN_ID}" not in annotations(core.read_namespaced_pod(sleeper, NAMESPACE))


def test_patch_unsupported_content_type_is_415(api_client, sleeper):
    r = raw(api_client, "PATCH", f"/api/v1/namespaces/{NAMESPACE}/pods/{sleeper}",
            headers={"Content-Type": "text/plain"}, body="metadata: {}")
    assert r.status == 415, (r.status, r.data)


def test_patch_missing_pod_is_404(core):
    name = unique("nopod")
    _, st = expect_api_error(404, core.patch_namespaced_pod, name, NAMESPACE,
                             {"metadata": {"annotations": {"a": "b"}}}, _content_type=MERGE)
    assert st["message"] == f'pods "{name}" not found', st
