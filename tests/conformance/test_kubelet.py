"""The node's kubelet endpoint (ARGOEXEC_KUBELET_URL, from the node's ready line), with the
Python client's own HTTP stack (urllib3). Kubelet errors are plain text, not Status JSON.
The serving certificate is not verified: by default a kubelet's is self-signed, and the API
server does not verify it either (k8s-wire-protocols.md 1.8)."""

import json
import os

import pytest
import urllib3

from conftest import NAMESPACE

KUBELET = os.environ.get("ARGOEXEC_KUBELET_URL", "").rstrip("/")
NODE = os.environ.get("ARGOEXEC_NODE_NAME", "argoexec-local")
pytestmark = pytest.mark.skipif(not KUBELET, reason="ARGOEXEC_KUBELET_URL not set")


@pytest.fixture(scope="module")
def http():
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    return urllib3.PoolManager(cert_reqs="CERT_NONE", timeout=urllib3.Timeout(10, 30))


@pytest.fixture(scope="module")
def admin_token(admin_config):
    return admin_config.api_key["BearerToken"].split(" ", 1)[1]


def get(http, path, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return http.request("GET", KUBELET + path, headers=headers, retries=False)


def test_healthz_needs_authentication(http, admin_token):
    r = get(http, "/healthz")
    assert r.status == 401 and r.data.strip() == b"Unauthorized", (r.status, r.data)
    r = get(http, "/healthz", "not-a-token")
    assert r.status == 401, (r.status, r.data)
    r = get(http, "/healthz", admin_token)
    assert r.status == 200 and r.data == b"ok", (r.status, r.data)


def test_pods_lists_the_running_pod(http, admin_token, sleeper):
    r = get(http, "/pods", admin_token)
    assert r.status == 200, (r.status, r.data[:300])
    lst = json.loads(r.data)
    assert lst["kind"] == "PodList" and lst["apiVersion"] == "v1", lst.get("kind")
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in lst["items"]}
    pod = pods.get((NAMESPACE, sleeper))
    assert pod is not None, f"{sleeper} not in kubelet /pods: {sorted(pods)}"
    assert pod["spec"]["nodeName"] == NODE
    cs = pod["status"]["containerStatuses"][0]
    assert "running" in cs["state"], cs
    assert "://" in cs["containerID"], cs
    r = http.request("POST", KUBELET + "/pods", headers={"Authorization": f"Bearer {admin_token}"},
                     retries=False)
    assert r.status == 405, (r.status, r.data)


def test_container_logs_match_the_api(http, admin_token, core):
    from conftest import OUT_ERR_DONE, delete_pod_quietly, pod_manifest, unique, wait_phase
    name = unique("kubelet-logs")
    core.create_namespaced_pod(NAMESPACE, pod_manifest(name, OUT_ERR_DONE))
    try:
        wait_phase(core, name, {"Succeeded", "Failed"})
        r = get(http, f"/containerLogs/{NAMESPACE}/{name}/main", admin_token)
        assert r.status == 200, (r.status, r.data)
        assert r.data.decode() == core.read_namespaced_pod_log(name, NAMESPACE)
        r = get(http, f"/containerLogs/{NAMESPACE}/{name}/main?tailLines=1", admin_token)
        assert r.data == b"done\n", r.data
        r = get(http, f"/containerLogs/{NAMESPACE}/{name}/nope", admin_token)
        assert r.status == 404, (r.status, r.data)
    finally:
        delete_pod_quietly(core, name)


def test_service_account_without_nodes_proxy_is_forbidden(http, sa_token, sleeper):
    token = sa_token("limited").status.token
    r = get(http, f"/containerLogs/{NAMESPACE}/{sleeper}/main", token)
    assert r.status == 403, (r.status, r.data)
    assert r.data.decode().strip() == (
        "Forbidden (user=system:serviceaccount:default:limited, verb=get, resource=nodes, "
        "subresource(s)=[proxy])"), r.data
