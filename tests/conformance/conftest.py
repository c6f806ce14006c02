"""Fixtures and helpers for the conformance suite.

The suite talks to a running `argoexec node` through the official Python `kubernetes`
client only (plus, where the client has no call for a wire detail, the client's own
ApiClient for a raw request). Environment:

  ARGOEXEC_KUBECONFIG   kubeconfig written by `argoexec node --kubeconfig-out` (required)
  ARGOEXEC_KUBELET_URL  the node's kubelet endpoint (optional; kubelet tests skip without)
  ARGOEXEC_NAMESPACE    namespace for the test objects (default "default")
  ARGOEXEC_IMAGE        image for the test pods (default "busybox:latest")
"""

import json
import os
import re
import time
import uuid

import pytest
from kubernetes import client, config, watch

NAMESPACE = os.environ.get("ARGOEXEC_NAMESPACE", "default")
IMAGE = os.environ.get("ARGOEXEC_IMAGE", "busybox:latest")
RUN_ID = uuid.uuid4().hex[:8]
RUN_LABEL = "conformance.argoexec.io/run"

# The command the brief fixes for the log/watch pod: two lines before, one after a 1 s gap.
OUT_ERR_DONE = "echo out; echo err >&2; sleep 1; echo done"
# A pod that idles until SIGTERM and then exits 0 at once (a shell PID 1 without a trap
# would ignore SIGTERM and only die at the end of the grace period).
SLEEPER = "trap 'exit 0' TERM; sleep 3600 & wait"

# Seconds a pod is given to reach a phase; generous for a busy 2-core machine.
POD_TIMEOUT = int(os.environ.get("ARGOEXEC_POD_TIMEOUT", "90"))


def unique(prefix):
    return f"conf-{prefix}-{RUN_ID}-{uuid.uuid4().hex[:5]}"


# ---------------------------------------------------------------------------- clients


@pytest.fixture(scope="session")
def kubeconfig_path():
    path = os.environ.get("ARGOEXEC_KUBECONFIG")
    if not path:
        pytest.fail("ARGOEXEC_KUBECONFIG is not set (path of the kubeconfig that "
                    "`argoexec node --kubeconfig-out` wrote)", pytrace=False)
    if not os.path.isfile(path):
        pytest.fail(f"ARGOEXEC_KUBECONFIG={path} does not exist", pytrace=False)
    return path


@pytest.fixture(scope="session")
def admin_config(kubeconfig_path):
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig_path, client_configuration=cfg)
    return cfg


@pytest.fixture(scope="session")
def api_client(admin_config):
    c = client.ApiClient(admin_config)
    yield c
    c.close()


@pytest.fixture(scope="session")
def core(api_client):
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def custom(api_client):
    return client.CustomObjectsApi(api_client)


def client_with_token(admin_config, token):
    """An ApiClient for the same server and CA as the kubeconfig, with another bearer token.
    (A fresh Configuration: the kubeconfig loader installs a hook that would put the admin
    token back before every request.)"""
    cfg = client.Configuration()
    for attr in ("host", "ssl_ca_cert", "verify_ssl", "tls_server_name", "assert_hostname"):
        setattr(cfg, attr, getattr(admin_config, attr))
    cfg.api_key = {"BearerToken": f"Bearer {token}"}
    return client.ApiClient(cfg)


@pytest.fixture(scope="session")
def sa_token(core):
    """Mints a token for a service account through the TokenRequest API."""
    cache = {}

    def mint(name, namespace=NAMESPACE, seconds=3600):
        key = (namespace, name, seconds)
        if key not in cache:
            body = client.AuthenticationV1TokenRequest(
                api_version="authentication.k8s.io/v1",
                kind="TokenRequest",
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds),
            )
            tr = core.create_namespaced_service_account_token(name, namespace, body)
            cache[key] = tr
        return cache[key]

    return mint


# ---------------------------------------------------------------------------- raw requests


def raw(api_client, method, path, query=None, headers=None, body=None, preload=True,
        timeout=30):
    """A request through the client's own transport (TLS, CA, bearer token) for wire details
    the generated API hides. Returns the RESTResponse (status, data bytes, getheader())."""
    method, url, hdrs, body, post = api_client.param_serialize(
        method=method,
        resource_path=path,
        query_params=list(query or []),
        header_params=dict(headers or {}),
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = api_client.call_api(method, url, header_params=hdrs, body=body, post_params=post,
                               _request_timeout=timeout)
    if preload:
        resp.read()
    return resp


def status_body(exc_or_bytes):
    """The metav1.Status JSON of an ApiException (or of raw bytes), as a dict."""
    text = exc_or_bytes
    if isinstance(exc_or_bytes, client.ApiException):
        text = exc_or_bytes.body
    if isinstance(text, bytes):
        text = text.decode()
    assert text, "error response had no body (expected a metav1.Status JSON)"
    try:
        st = json.loads(text)
    except ValueError:
        raise AssertionError(f"error body is not JSON (expected metav1.Status): {text!r}")
    assert st.get("kind") == "Status", f"error body is not a Status: {st}"
    assert st.get("apiVersion") == "v1", f"Status without apiVersion v1: {st}"
    assert st.get("status") == "Failure", f"error Status not Failure: {st}"
    return st


def expect_api_error(status, fn, *args, **kwargs):
    """Calls fn, expects an ApiException with HTTP `status`, returns (exception, Status dict)."""
    try:
        result = fn(*args, **kwargs)
    except client.ApiException as e:
        assert e.status == status, f"expected HTTP {status}, got {e.status}: {e.body}"
        st = status_body(e)
        assert st.get("code") == status, f"Status.code {st.get('code')} != HTTP {status}: {st}"
        return e, st
    raise AssertionError(f"expected HTTP {status}, the call succeeded with {result!r:.500}")


# ---------------------------------------------------------------------------- pods


def pod_manifest(name, script, labels=None, **spec_extra):
    spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 5,
        "containers": [{
            "name": "main",
            "image": IMAGE,
            "imagePullPolicy": "Never",
            "command": ["sh", "-c", script],
        }],
    }
    spec.update(spec_extra)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "labels": {RUN_LABEL: RUN_ID, **(labels or {})}},
        "spec": spec,
    }


def delete_pod_quietly(core, name):
    try:
        core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
    except client.ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture
def make_pod(core):
    """Creates pods and deletes them at the end of the test."""
    created = []

    def make(manifest):
        pod = core.create_namespaced_pod(NAMESPACE, manifest)
        created.append(manifest["metadata"]["name"])
        return pod

    yield make
    for name in created:
        delete_pod_quietly(core, name)


def watch_pod(core, name, until, timeout=POD_TIMEOUT, resource_version=None):
    """Watches one pod (fieldSelector metadata.name) until `until(event)` is true.
    Returns (matching event, all events). Fails after `timeout` seconds."""
    w = watch.Watch()
    events = []
    kwargs = {"field_selector": f"metadata.name={name}", "timeout_seconds": timeout,
              "_request_timeout": timeout + 15}
    if resource_version is not None:
        kwargs["resource_version"] = resource_version
    deadline = time.monotonic() + timeout
    for ev in w.stream(core.list_namespaced_pod, NAMESPACE, **kwargs):
        events.append(ev)
        if until(ev):
            w.stop()
            return ev, events
        if time.monotonic() > deadline:
            break
    w.stop()
    summary = [(e["type"], phase_of(e)) for e in events]
    raise AssertionError(f"pod {name}: condition not met within {timeout}s; events "
                         f"(type, phase): {summary}")


def phase_of(ev):
    obj = ev.get("raw_object") or {}
    return (obj.get("status") or {}).get("phase")


def wait_phase(core, name, phases, timeout=POD_TIMEOUT):
    phases = set(phases)
    ev, events = watch_pod(core, name, lambda e: phase_of(e) in phases, timeout)
    return ev["object"], events


@pytest.fixture(scope="module")
def sleeper(core):
    """One Running pod per module (exec, patch, 410 tests); deleted at module end."""
    name = unique("sleeper")
    core.create_namespaced_pod(NAMESPACE, pod_manifest(name, SLEEPER, {"role": "sleeper"}))
    try:
        pod, _ = wait_phase(core, name, {"Running", "Succeeded", "Failed"})
        assert pod.status.phase == "Running", f"sleeper pod is {pod.status.phase}, not Running"
        yield name
    finally:
        delete_pod_quietly(core, name)


RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$")


def parse_rfc3339(ts):
    """datetime from an RFC 3339 timestamp with up to nanoseconds (Python keeps micro)."""
    from datetime import datetime
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$", ts)
    assert m, f"not an RFC 3339 timestamp: {ts!r}"
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(f"{m.group(1)}.{frac}{tz}")


def pytest_sessionfinish(session, exitstatus):
    """Best-effort sweep of pods this run left behind (a failing fixture teardown)."""
    path = os.environ.get("ARGOEXEC_KUBECONFIG")
    if not path or not os.path.isfile(path) or session.config.option.collectonly:
        return
    try:
        cfg = client.Configuration()
        config.load_kube_config(config_file=path, client_configuration=cfg)
        with client.ApiClient(cfg) as c:
            core = client.CoreV1Api(c)
            for p in core.list_namespaced_pod(NAMESPACE, label_selector=f"{RUN_LABEL}={RUN_ID}",
                                              _request_timeout=10).items:
                delete_pod_quietly(core, p.metadata.name)
    except Exception as e:  # noqa: BLE001 - cleanup must not mask the result
        print(f"conformance: cleanup sweep failed: {e}")
