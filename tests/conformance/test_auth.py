"""Authentication (bearer tokens, TokenRequest) and RBAC authorization with the exact
metav1.Status 401/403 bodies. Service accounts and their roles: tests/conformance/rbac."""

import base64
import json
import re
import time
from datetime import datetime, timezone

import pytest
from kubernetes import client
from kubernetes.stream import stream

from conftest import (NAMESPACE, RUN_ID, client_with_token, expect_api_error, pod_manifest,
                      raw, unique)

GROUP, VERSION, PLURAL = "argoproj.io", "v1alpha1", "workflowtaskresults"


def sa_user(name, namespace=NAMESPACE):
    return f"system:serviceaccount:{namespace}:{name}"


def forbidden_message(user, verb, resource, group="", namespace=NAMESPACE, name=None,
                      kind=None):
    """The API server's Forbidden text (k8s.io/apiserver forbidden())."""
    what = f'{kind or resource.split("/")[0]} "{name}"' if name else (kind or resource.split("/")[0])
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (f'{what} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
            f'in API group "{group}" {where}')


@pytest.fixture(scope="module")
def sa_api(admin_config, sa_token):
    clients = []

    def make(name):
        tr = sa_token(name)
        c = client_with_token(admin_config, tr.status.token)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def assert_forbidden(st, message):
    assert st["reason"] == "Forbidden", st
    assert st["message"] == message, f"\n got: {st['message']}\nwant: {message}"


# ---------------------------------------------------------------------------- 401


def test_bad_token_is_401(admin_config):
    with client_with_token(admin_config, "not-a-valid-token") as c:
        _, st = expect_api_error(401, client.CoreV1Api(c).list_namespaced_pod, NAMESPACE)
    assert st["reason"] == "Unauthorized" and st["message"] == "Unauthorized", st


def test_admin_token_works(core):
    core.list_namespaced_pod(NAMESPACE, limit=1)


# ---------------------------------------------------------------------------- TokenRequest


def test_token_request(sa_token):
    before = datetime.now(timezone.utc)
    tr = sa_token("limited", seconds=3600)
    assert tr.status is not None and tr.status.token, tr
    exp = tr.status.expiration_timestamp
    assert exp is not None, tr.status
    left = (exp - before).total_seconds()
    assert 3000 < left < 3700, f"asked for 3600 s, token expires in {left:.0f} s"


def test_token_is_bound_sa_jwt(sa_token):
    token = sa_token("limited", seconds=3600).status.token
    parts = token.split(".")
    assert len(parts) == 3, "service-account token is not a JWT (header.payload.signature)"
    payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    assert payload["sub"] == sa_user("limited"), payload
    k8s = payload.get("kubernetes.io", {})
    assert k8s.get("namespace") == NAMESPACE, payload
    assert k8s.get("serviceaccount", {}).get("name") == "limited", payload
    assert abs((payload["exp"] - payload["iat"]) - 3600) <= 5, payload
    assert payload["iat"] <= time.time() + 5


def test_kubectl_style_token_request(api_client):
    """kubectl create token posts a TokenRequest without audiences."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600}}
    r = raw(api_client, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/limited/token",
            headers={"Content-Type": "application/json"}, body=body)
    assert r.status == 201, (r.status, r.data)
    tr = json.loads(r.data)
    assert tr["kind"] == "TokenRequest" and tr["apiVersion"] == "authentication.k8s.io/v1", tr
    assert tr["status"]["token"] and tr["status"]["expirationTimestamp"], tr


# ---------------------------------------------------------------------------- 403


def test_limited_can_read_but_not_create_pods(sa_api, core, sleeper):
    limited = client.CoreV1Api(sa_api("limited"))
    assert limited.read_namespaced_pod(sleeper, NAMESPACE).metadata.name == sleeper
    names = [p.metadata.name for p in limited.list_namespaced_pod(NAMESPACE).items]
    assert sleeper in names
    assert limited.read_namespaced_pod_log(sleeper, NAMESPACE) == ""

    _, st = expect_api_error(403, limited.create_namespaced_pod, NAMESPACE,
                             pod_manifest(unique("forbidden"), "true"))
    assert_forbidden(st, forbidden_message(sa_user("limited"), "create", "pods"))
    assert st["details"]["kind"] == "pods", st

    _, st = expect_api_error(403, limited.delete_namespaced_pod, sleeper, NAMESPACE)
    assert_forbidden(st, forbidden_message(sa_user("limited"), "delete", "pods", name=sleeper))
    assert st["details"] == {"name": sleeper, "kind": "pods"}, st
    core.read_namespaced_pod(sleeper, NAMESPACE)  # still there

    _, st = expect_api_error(403, limited.patch_namespaced_pod, sleeper, NAMESPACE,
                             {"metadata": {"annotations": {"x": "y"}}},
                             _content_type="application/merge-patch+json")
    assert_forbidden(st, forbidden_message(sa_user("limited"), "patch", "pods", name=sleeper))


def test_limited_cannot_exec_spdy_style_post(sa_api, sleeper):
    """POST to pods/exec (what SPDY clients send) is verb create: the message names it."""
    c = sa_api("limited")
    r = raw(c, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{sleeper}/exec",
            query=[("command", "true"), ("stdout", "true")])
    assert r.status == 403, (r.status, r.data)
    st = json.loads(r.data)
    assert st["kind"] == "Status" and st["code"] == 403, st
    assert_forbidden(st, forbidden_message(sa_user("limited"), "create", "pods/exec",
                                           name=sleeper))
    assert st["details"] == {"name": sleeper, "kind": "pods"}, st


def test_limited_cannot_exec_websocket(sa_api, sleeper):
    """A WebSocket upgrade is a GET: refused before the handshake completes."""
    core = client.CoreV1Api(sa_api("limited"))
    with pytest.raises(Exception) as exc:
        stream(core.connect_get_namespaced_pod_exec, sleeper, NAMESPACE, command=["true"],
               stderr=True, stdin=False, stdout=True, tty=False)
    text = str(exc.value)
    assert "Handshake status 403" in text, text
    if "is forbidden" in text:  # body available (Content-Length set): check the verb
        assert re.search(r'cannot (get|create) resource \\?"pods/exec\\?"', text), text


def test_limited_task_results_create_but_not_get(sa_api, custom):
    limited = client.CustomObjectsApi(sa_api("limited"))
    name = unique("wtr-limited")
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkflowTaskResult",
            "metadata": {"name": name, "labels": {"workflows.argoproj.io/workflow": RUN_ID}}}
    try:
        limited.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, body)
        limited.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name,
                                               {"phase": "Succeeded"})
        _, st = expect_api_error(403, limited.get_namespaced_custom_object, GROUP, VERSION,
                                 NAMESPACE, PLURAL, name)
        assert_forbidden(st, forbidden_message(sa_user("limited"), "get", PLURAL, group=GROUP,
                                               name=name, kind=f"{PLURAL}.{GROUP}"))
        assert st["details"] == {"name": name, "group": GROUP, "kind": PLURAL}, st
        _, st = expect_api_error(403, limited.list_namespaced_custom_object, GROUP, VERSION,
                                 NAMESPACE, PLURAL)
        assert_forbidden(st, forbidden_message(sa_user("limited"), "list", PLURAL, group=GROUP,
                                               kind=f"{PLURAL}.{GROUP}"))
        assert custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                                   name)["phase"] == "Succeeded"
    finally:
        try:
            custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
        except client.ApiException as e:
            if e.status != 404:
                raise


def test_unbound_sa_cannot_watch(sa_api):
    nobody = client.CoreV1Api(sa_api("nobody"))
    _, st = expect_api_error(403, nobody.list_namespaced_pod, NAMESPACE, watch=True,
                             timeout_seconds=1, _preload_content=False)
    assert_forbidden(st, forbidden_message(sa_user("nobody"), "watch", "pods"))
    _, st = expect_api_error(403, nobody.list_namespaced_pod, NAMESPACE)
    assert_forbidden(st, forbidden_message(sa_user("nobody"), "list", "pods"))


def test_rolebinding_to_clusterrole_is_namespaced(sa_api):
    viewer = client.CoreV1Api(sa_api("viewer"))
    viewer.list_namespaced_pod(NAMESPACE)
    _, st = expect_api_error(403, viewer.list_namespaced_pod, "kube-system")
    assert_forbidden(st, forbidden_message(sa_user("viewer"), "list", "pods",
                                           namespace="kube-system"))


def test_clusterrolebinding_covers_every_namespace(sa_api):
    reader = client.CoreV1Api(sa_api("reader"))
    reader.list_namespaced_pod(NAMESPACE)
    reader.list_namespaced_pod("kube-system")
    _, st = expect_api_error(403, reader.create_namespaced_pod, "kube-system",
                             pod_manifest(unique("forbidden"), "true"))
    assert_forbidden(st, forbidden_message(sa_user("reader"), "create", "pods",
                                           namespace="kube-system"))


def test_executor_role_allows_exec_patch_and_results(sa_api, sleeper, custom):
    """The executor Role of the wire-protocol doc (section 5.1) is enough for an executor."""
    ex_client = sa_api("executor")
    ex = client.CoreV1Api(ex_client)
    resp = stream(ex.connect_get_namespaced_pod_exec, sleeper, NAMESPACE,
                  command=["sh", "-c", "echo via-sa; exit 4"], stderr=True, stdin=False,
                  stdout=True, tty=False, _preload_content=False)
    resp.run_forever(timeout=30)
    assert resp.read_stdout() == "via-sa\n"
    assert resp.returncode == 4

    p = ex.patch_namespaced_pod(sleeper, NAMESPACE,
                                {"metadata": {"annotations": {f"executor-{RUN_ID}": "1"}}},
                                _content_type="application/merge-patch+json")
    assert p.metadata.annotations[f"executor-{RUN_ID}"] == "1"

    results = client.CustomObjectsApi(ex_client)
    name = unique("wtr-executor")
    try:
        results.create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL,
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkflowTaskResult",
             "metadata": {"name": name}, "outputs": {"result": "r"}})
        assert results.get_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, name)["outputs"] == {"result": "r"}
        _, st = expect_api_error(403, results.delete_namespaced_custom_object, GROUP, VERSION,
                                 NAMESPACE, PLURAL, name)
        assert st["reason"] == "Forbidden"
    finally:
        custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
