"""argoproj.io/v1alpha1 workflowtaskresults through CustomObjectsApi: create (201),
duplicate (409 AlreadyExists), get, list by label, merge and JSON patch, strategic merge
(415), delete, get after delete (404)."""

import pytest
from kubernetes import client

from conftest import NAMESPACE, RUN_ID, expect_api_error, unique

GROUP, VERSION, PLURAL = "argoproj.io", "v1alpha1", "workflowtaskresults"
WF_LABEL = "workflows.argoproj.io/workflow"
DONE_LABEL = "workflows.argoproj.io/report-outputs-completed"


def task_result(name, workflow):
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "WorkflowTaskResult",
        "metadata": {"name": name, "labels": {WF_LABEL: workflow, DONE_LABEL: "false"}},
        "outputs": {"parameters": [{"name": "p", "value": "v"}], "exitCode": "0"},
        "phase": "Running",
    }


@pytest.fixture
def results(custom):
    """Creates task results (returns (object, HTTP status)); deletes them afterwards."""
    names = []

    def create(name, workflow):
        # The legacy-compatible *_with_http_info returns (data, status, headers); data is
        # only decoded for the documented 201.
        data, status, _ = custom.create_namespaced_custom_object_with_http_info(
            GROUP, VERSION, NAMESPACE, PLURAL, task_result(name, workflow))
        names.append(name)
        return data, status

    yield create
    for n in names:
        try:
            custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, n)
        except client.ApiException as e:
            if e.status != 404:
                raise


def test_crud(custom, results):
    wf = f"wf-{RUN_ID}"
    name = unique("wtr")
    obj, status = results(name, wf)
    assert status == 201, status
    md = obj["metadata"]
    assert obj["apiVersion"] == f"{GROUP}/{VERSION}" and obj["kind"] == "WorkflowTaskResult"
    assert md["name"] == name and md["namespace"] == NAMESPACE
    assert md.get("uid") and md.get("resourceVersion") and md.get("creationTimestamp"), md
    assert obj["outputs"] == {"parameters": [{"name": "p", "value": "v"}], "exitCode": "0"}

    # Duplicate -> 409 AlreadyExists
    _, st = expect_api_error(409, custom.create_namespaced_custom_object, GROUP, VERSION,
                             NAMESPACE, PLURAL, task_result(name, wf))
    assert st["reason"] == "AlreadyExists", st
    assert st["message"] == f'{PLURAL}.{GROUP} "{name}" already exists', st
    assert st["details"]["name"] == name and st["details"]["group"] == GROUP, st
    assert st["details"]["kind"] == PLURAL, st

    got = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    assert got["metadata"]["uid"] == md["uid"]
    assert got["outputs"] == obj["outputs"] and got["phase"] == "Running"

    # Merge patch (the client's default content type for custom objects).
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, name,
        {"metadata": {"labels": {DONE_LABEL: "true"}}, "phase": "Succeeded",
         "outputs": {"result": "42"}})
    assert patched["metadata"]["labels"] == {WF_LABEL: wf, DONE_LABEL: "true"}
    assert patched["phase"] == "Succeeded"
    assert patched["outputs"] == {"parameters": [{"name": "p", "value": "v"}],
                                  "exitCode": "0", "result": "42"}, patched["outputs"]
    assert patched["metadata"]["resourceVersion"] != md["resourceVersion"]

    # JSON patch
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, name,
        [{"op": "replace", "path": "/phase", "value": "Failed"}],
        _content_type="application/json-patch+json")
    assert patched["phase"] == "Failed"

    # Strategic merge patch is not defined for custom resources -> 415
    _, st = expect_api_error(415, custom.patch_namespaced_custom_object, GROUP, VERSION,
                             NAMESPACE, PLURAL, name, {"phase": "Running"},
                             _content_type="application/strategic-merge-patch+json")
    assert st["reason"] == "UnsupportedMediaType", st
    assert custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                               name)["phase"] == "Failed"

    # Delete, then 404
    deleted = custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    if deleted.get("kind") == "Status":
        assert deleted["status"] == "Success", deleted
        assert deleted["details"]["name"] == name, deleted
    else:
        assert deleted["metadata"]["name"] == name, deleted
    _, st = expect_api_error(404, custom.get_namespaced_custom_object, GROUP, VERSION,
                             NAMESPACE, PLURAL, name)
    assert st["reason"] == "NotFound", st
    assert st["message"] == f'{PLURAL}.{GROUP} "{name}" not found', st
    expect_api_error(404, custom.delete_namespaced_custom_object, GROUP, VERSION, NAMESPACE,
                     PLURAL, name)


def test_list_with_label_selector(custom, results):
    wf_a, wf_b = f"wfa-{RUN_ID}", f"wfb-{RUN_ID}"
    a1, a2, b1 = unique("wtr-a1"), unique("wtr-a2"), unique("wtr-b1")
    results(a1, wf_a)
    results(a2, wf_a)
    results(b1, wf_b)
    lst = custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                               label_selector=f"{WF_LABEL}={wf_a}")
    assert lst["kind"] == "WorkflowTaskResultList", lst.get("kind")
    assert lst["apiVersion"] == f"{GROUP}/{VERSION}"
    assert lst["metadata"].get("resourceVersion"), lst["metadata"]
    assert sorted(i["metadata"]["name"] for i in lst["items"]) == sorted([a1, a2])
    for item in lst["items"]:
        assert item["kind"] == "WorkflowTaskResult" and item["apiVersion"] == f"{GROUP}/{VERSION}"
    lst = custom.list_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, label_selector=f"{WF_LABEL}={wf_b},{DONE_LABEL}=false")
    assert [i["metadata"]["name"] for i in lst["items"]] == [b1]
    lst = custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                               label_selector=f"{WF_LABEL}=none-{RUN_ID}")
    assert lst["items"] == []


def test_upsert_like_argo(custom, results):
    """Argo's reporter: create, and on 409 AlreadyExists merge-patch instead."""
    name = unique("wtr-upsert")
    results(name, f"wf-{RUN_ID}")
    try:
        custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                               task_result(name, f"wf-{RUN_ID}"))
        raise AssertionError("second create succeeded")
    except client.ApiException as e:
        assert e.status == 409
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, name, {"outputs": {"result": "again"}},
        _content_type="application/merge-patch+json")
    assert patched["outputs"]["result"] == "again"
