"""Discovery: /version, /api, /apis, /api/v1, /apis/argoproj.io/v1alpha1.

Note: this client requests /version/, /api/, /apis/ and /api/v1/ *with* a trailing slash
(kube-apiserver serves both forms)."""

import json
import re

from kubernetes import client

from conftest import raw


def test_version(api_client):
    v = client.VersionApi(api_client).get_code()
    assert re.match(r"^v\d+\.\d+\.\d+", v.git_version), v.git_version
    assert v.major.isdigit() and v.minor.rstrip("+").isdigit(), (v.major, v.minor)
    assert v.git_version.startswith(f"v{v.major}.{v.minor.rstrip('+')}."), v
    assert v.platform, "platform is empty"


def test_core_api_versions(api_client):
    av = client.CoreApi(api_client).get_api_versions()
    assert av.kind == "APIVersions"
    assert "v1" in av.versions


def test_api_groups_include_argoproj(api_client):
    groups = client.ApisApi(api_client).get_api_versions()
    assert groups.kind == "APIGroupList"
    by_name = {g.name: g for g in groups.groups}
    assert "argoproj.io" in by_name, f"groups: {sorted(by_name)}"
    argo = by_name["argoproj.io"]
    assert "argoproj.io/v1alpha1" in [v.group_version for v in argo.versions]
    assert argo.preferred_version.group_version == "argoproj.io/v1alpha1"


def test_core_v1_resources(core):
    res = core.get_api_resources()
    assert res.group_version == "v1"
    by_name = {r.name: r for r in res.resources}
    for needed in ("pods", "pods/log", "pods/exec", "serviceaccounts/token"):
        assert needed in by_name, f"{needed} missing from /api/v1: {sorted(by_name)}"
    pods = by_name["pods"]
    assert pods.namespaced and pods.kind == "Pod"
    for verb in ("create", "get", "list", "watch", "patch", "delete"):
        assert verb in pods.verbs, f"pods verbs: {pods.verbs}"


def test_argoproj_resources(custom):
    res = custom.get_api_resources("argoproj.io", "v1alpha1")
    assert res.group_version == "argoproj.io/v1alpha1"
    by_name = {r.name: r for r in res.resources}
    assert "workflowtaskresults" in by_name, f"resources: {sorted(by_name)}"
    wtr = by_name["workflowtaskresults"]
    assert wtr.namespaced and wtr.kind == "WorkflowTaskResult"
    for verb in ("create", "get", "list", "patch", "delete"):
        assert verb in wtr.verbs, f"workflowtaskresults verbs: {wtr.verbs}"


def test_unknown_resource_is_404_status(api_client):
    r = raw(api_client, "GET", "/apis/argoproj.io/v1alpha1/namespaces/default/nosuchthings")
    assert r.status == 404
    st = json.loads(r.data)
    assert st["kind"] == "Status" and st["reason"] == "NotFound" and st["code"] == 404, st
