"""v1 secrets through CoreV1Api: create with data and stringData (stringData merged into data,
base64, never returned; type defaulted to Opaque), get, list by label, patch with stringData,
replace, duplicate (409), data that is not base64 (400), an invalid key (422), a service
account without a rule (403), delete, get after delete (404); a pod reading one through a
secret volume and secretKeyRef env."""

import base64

import pytest
from kubernetes import client

from conftest import (NAMESPACE, RUN_ID, client_with_token, expect_api_error, pod_manifest,
                      unique, wait_phase)

LABEL = "conformance.argoexec.io/run"


def b64(s):
    return base64.b64encode(s.encode()).decode()


@pytest.fixture
def secrets(core):
    """Creates secrets; deletes them afterwards."""
    names = []

    def create(name, **fields):
        s = core.create_namespaced_secret(NAMESPACE, client.V1Secret(
            metadata=client.V1ObjectMeta(name=name, labels={LABEL: RUN_ID}), **fields))
        names.append(name)
        return s

    yield create
    for n in names:
        try:
            core.delete_namespaced_secret(n, NAMESPACE)
        except client.ApiException as e:
            if e.status != 404:
                raise


def test_secret_crud_with_string_data(core, secrets):
    name = unique("secret")
    s = secrets(name, data={"pass": b64("s3cr3t")}, string_data={"user": "admin"})
    assert s.type == "Opaque"
    assert s.data == {"pass": b64("s3cr3t"), "user": b64("admin")}, s.data
    assert s.string_data is None
    got = core.read_namespaced_secret(name, NAMESPACE)
    assert got.data == s.data and got.string_data is None
    listed = core.list_namespaced_secret(NAMESPACE, label_selector=f"{LABEL}={RUN_ID}")
    assert name in [i.metadata.name for i in listed.items]

    patched = core.patch_namespaced_secret(name, NAMESPACE, {"stringData": {"user": "root"}})
    assert patched.data["user"] == b64("root") and patched.string_data is None
    patched.data["extra"] = b64("x")
    replaced = core.replace_namespaced_secret(name, NAMESPACE, patched)
    assert sorted(replaced.data) == ["extra", "pass", "user"]

    expect_api_error(409, core.create_namespaced_secret, NAMESPACE,
                     client.V1Secret(metadata=client.V1ObjectMeta(name=name)))
    core.delete_namespaced_secret(name, NAMESPACE)
    _, st = expect_api_error(404, core.read_namespaced_secret, name, NAMESPACE)
    assert st["message"] == f'secrets "{name}" not found', st


def test_invalid_secrets_are_refused(core):
    body = {"metadata": {"name": unique("bad")}, "data": {"k": "hunter2!"}}
    _, st = expect_api_error(400, core.create_namespaced_secret, NAMESPACE, body)
    assert st["message"].endswith("illegal base64 data at input byte 7"), st
    assert "hunter2" not in st["message"]
    body = {"metadata": {"name": unique("bad")}, "stringData": {"a/b": "x"}}
    _, st = expect_api_error(422, core.create_namespaced_secret, NAMESPACE, body)
    assert "data[a/b]" in st["message"], st


def test_secrets_need_an_rbac_rule(admin_config, sa_token, secrets):
    name = unique("secret")
    secrets(name, string_data={"k": "v"})
    token = sa_token("limited").status.token
    with client_with_token(admin_config, token) as c:
        limited = client.CoreV1Api(c)
        _, st = expect_api_error(403, limited.read_namespaced_secret, name, NAMESPACE)
        expect_api_error(403, limited.list_namespaced_secret, NAMESPACE)
        assert st["message"] == (
            f'secrets "{name}" is forbidden: User "system:serviceaccount:{NAMESPACE}:limited" '
            f'cannot get resource "secrets" in API group "" in the namespace "{NAMESPACE}"'), st


def test_a_pod_reads_a_secret(core, secrets, make_pod):
    name = unique("secret")
    secrets(name, string_data={"pass": "s3cr3t"})
    pod = unique("reads-secret")
    manifest = pod_manifest(pod, 'cat /s/p; echo " $PASS"', volumes=[
        {"name": "s", "secret": {"secretName": name, "items": [{"key": "pass", "path": "p"}]}}])
    main = manifest["spec"]["containers"][0]
    main["volumeMounts"] = [{"name": "s", "mountPath": "/s"}]
    main["env"] = [{"name": "PASS", "valueFrom": {"secretKeyRef": {"name": name, "key": "pass"}}}]
    make_pod(manifest)
    final, _ = wait_phase(core, pod, {"Succeeded", "Failed"})
    assert final.status.phase == "Succeeded", final.status
    assert core.read_namespaced_pod_log(pod, NAMESPACE) == "s3cr3t s3cr3t\n"
