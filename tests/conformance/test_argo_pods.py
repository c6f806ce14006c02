"""Pods written by Argo Workflows controllers, run on the local node as a new user would (issue 16).

Each fixture in argo-pods/ is the pod (and, for offloaded templates and arguments, the ConfigMap)
that a controller of one Argo version writes for one workflow, derived from Argo's controller
source at that tag (not a capture; each file's header says which tag and functions, and lists
the only changes made for this node: images, the user programs, the S3 endpoint). Like a new user
with the Python client, the test creates what the pod needs — the namespace's Secrets, the
ConfigMap, the service account and Argo's executor Role and RoleBinding — then the pod itself,
unchanged, and checks that this project's image runs it:

* the pod ends `Succeeded`, every container (init and sidecars included) with exit code 0;
* the `WorkflowTaskResult` named after the node ID (`ARGO_NODE_ID`) is in the pod's namespace,
  owned by the Workflow, labelled with the workflow, `report-outputs-completed: "true"` (and
  the controller instance ID when the pod has one), with the expected output parameters and
  artifacts;
* the artifacts are where Argo puts them in the S3 repository (a moto server this module starts
  on loopback, signature checking on, one IAM user per Secret whose policy reaches only its own
  bucket): `<archive key>/<artifact>.tgz` holding what main wrote, `<archive key>/main.log`
  holding the program's output (main's log without the emissary's own lines) when the
  repository archives logs, nothing else;
* no value of a Secret appears in the task result or in any container's log.

| Fixture | Argo | What it proves |
|---|---|---|
| 02-v3.5-script | v3.5.15 | full ARGO_TEMPLATE on every container; script staging; a key-only input and a location-less output through the repository and its Secret volume; secretKeyRef env; no log archived when archiveLogs is false |
| 03-v3.6-script-offloaded-template | v3.6.19 | the template offloaded to the `<pod>` ConfigMap (`ARGO_TEMPLATE=offloaded` on init only; wait reads what init wrote); `--gloglevel`; the same outputs as v3.5 |
| 04-v3.7-container-sidecar-secret-artifacts | v3.7.18 | an explicit S3 input with its own Secret (a tarball unpacked into a directory), an output in a user volume read through `/mainctrfs`, archived logs, `ARGO_INSTANCE_ID` → the `controller-instanceid` label, an emissary-wrapped sidecar that keeps an empty argument and ends by SIGTERM after main, another namespace and service account |
| 07-v4.1-args-offload-tracing | v4.1.2 | main's arguments from `ARGO_CONTAINER_ARGS_FILE` (the one over 128 KiB passed as `@/tmp/argo_arg_<i>.txt`), the offloaded template, `TRACEPARENT` reaching the program, duplicate `ARGO_WORKFLOW_NAME`, archived logs |

The node stores ServiceAccounts, but serves no Role or RoleBinding objects and creates no
namespaces (`test_a_new_user_creates_the_objects_argo_needs` is a strict xfail for each of
those kinds). Until it does,
the executor Roles come from `rbac/argo-pods.yaml`, which conformance.sh loads with `--rbac`; the
pod tests still try the API first, and check the grant with a SelfSubjectAccessReview made with
the service account's own token either way. An answer given before the request's body was read
(404/405) keeps the HTTP/1.1 connection usable (`test_an_early_answer_leaves_the_connection_usable`;
the node used to drop it without `Connection: close`); the calls that get such answers still go
through a connection of their own (`once`).

Needs the moto venv (`bash scripts/pyenv.sh moto`; scripts/setup.sh makes it) or
ARGOEXEC_MOTO_PYTHON naming a Python with moto and boto3.
"""

import base64
import io
import json
import os
import re
import select
import socket
import ssl
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

import pytest
import yaml
from kubernetes import client, watch

from conftest import POD_TIMEOUT, RUN_ID, client_with_token

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "argo-pods"
REPO = HERE.parent.parent
MOTO_PYTHON = os.environ.get("ARGOEXEC_MOTO_PYTHON", str(REPO / ".venv-moto" / "bin" / "python"))

GROUP, VERSION, PLURAL = "argoproj.io", "v1alpha1", "workflowtaskresults"
WF_LABEL = "workflows.argoproj.io/workflow"
DONE_LABEL = "workflows.argoproj.io/report-outputs-completed"
INSTANCE_LABEL = "workflows.argoproj.io/controller-instanceid"

REPO_BUCKET = "my-bucket"          # the artifact repository of every fixture
DATASET_BUCKET = "acme-datasets"   # 04's explicit input location
ARGS_PADDING = "x" * (132 * 1024)  # 07: the argument is over 128 KiB again


# ---------------------------------------------------------------------------- moto


class S3:
    """The moto server of moto_s3.py, run with the moto venv's Python."""

    def __init__(self, proc, ready, log_path):
        self.proc, self.endpoint, self.users, self.log_path = (
            proc, ready["endpoint"], ready["users"], log_path)

    def _call(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"moto_s3 exited; its log: {self.log_path}"
        out = json.loads(line)
        return out

    def put(self, bucket, key, data):
        out = self._call(op="put", bucket=bucket, key=key, data=base64.b64encode(data).decode())
        assert out["ok"], f"put s3://{bucket}/{key}: {out['error']}"

    def get(self, bucket, key):
        out = self._call(op="get", bucket=bucket, key=key)
        assert out["ok"], f"s3://{bucket}/{key}: {out['error']}"
        return base64.b64decode(out["data"])

    def keys(self, bucket, prefix=""):
        out = self._call(op="list", bucket=bucket, prefix=prefix)
        assert out["ok"], f"list s3://{bucket}/{prefix}: {out['error']}"
        return sorted(out["keys"])

    def empty(self, bucket):
        out = self._call(op="empty", bucket=bucket)
        assert out["ok"], f"empty s3://{bucket}: {out['error']}"


@pytest.fixture(scope="module")
def s3():
    if not os.path.exists(MOTO_PYTHON):
        pytest.fail(f"{MOTO_PYTHON} is missing: run `bash scripts/pyenv.sh moto` "
                    "(scripts/setup.sh does), or set ARGOEXEC_MOTO_PYTHON", pytrace=False)
    log = tempfile.NamedTemporaryFile(prefix="argoexec-moto-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [MOTO_PYTHON, str(HERE / "moto_s3.py"), f"repository={REPO_BUCKET}",
         f"datasets={DATASET_BUCKET}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            pytest.fail(f"moto did not start within 60 s; its log: {log.name}", pytrace=False)
        yield S3(proc, json.loads(line), log.name)
        os.unlink(log.name)  # kept only when moto did not start
    finally:
        if proc.stdin and not proc.stdin.closed:
            proc.stdin.close()  # moto_s3 stops at EOF
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------- fixtures' data


def tgz(members):
    """A tar.gz of {path: bytes} (directories implied), as Argo's own archives are."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        dirs = sorted({p.rsplit("/", 1)[0] for p in members if "/" in p})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def untgz(data):
    """{member name: bytes} of the regular files of a tar.gz."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


RAW_CSV = b"day,region,amount\n2025-03-01,eu,10\n2025-03-01,us,12\n"
TRAIN_CSV = b"x,y\n1,0\n2,1\n3,1\n"
LABELS_CSV = b"0,no\n1,yes\n"
REPORTING_DB_PASSWORD = "pg-report-s3cret"
WAREHOUSE_PASSWORD = "wh-load-s3cret"


@dataclass
class Run:
    """What one fixture needs and what it left: the test's view of one Argo step."""
    pod: dict
    config_maps: list
    s3: S3
    final: client.V1Pod = None
    result: dict = None
    logs: dict = field(default_factory=dict)

    @property
    def ns(self):
        return self.pod["metadata"]["namespace"]

    @property
    def name(self):
        return self.pod["metadata"]["name"]

    def env(self, container, var):
        for c in self.pod["spec"].get("initContainers", []) + self.pod["spec"]["containers"]:
            if c["name"] == container:
                values = [e.get("value") for e in c.get("env", []) if e["name"] == var]
                return values[-1] if values else None
        raise KeyError(container)

    @property
    def template(self):
        raw = self.env("init", "ARGO_TEMPLATE")
        if raw == "offloaded":
            raw = next(cm["data"]["ARGO_TEMPLATE"] for cm in self.config_maps)
        return json.loads(raw)

    @property
    def archive_key(self):
        return self.template["archiveLocation"]["s3"]["key"]

    def describe(self):
        """Every container's state and log, for failure messages."""
        out = [f"pod {self.ns}/{self.name}: phase {self.final.status.phase if self.final else '?'}"
               f" reason {self.final.status.reason if self.final else '?'}"
               f" message {self.final.status.message if self.final else '?'}"]
        statuses = []
        if self.final and self.final.status:
            statuses = (self.final.status.init_container_statuses or []) + (
                self.final.status.container_statuses or [])
        for st in statuses:
            state = st.state.terminated or st.state.running or st.state.waiting
            out.append(f"--- {st.name}: {state}")
            out.append(self.logs.get(st.name, "<no log>")[-4000:])
        return "\n".join(out)


# ---------------------------------------------------------------------------- checks per fixture


def artifact(run, name):
    arts = {a["name"]: a for a in (run.result.get("outputs") or {}).get("artifacts") or []}
    assert name in arts, f"no output artifact {name} in {run.result.get('outputs')}"
    return arts[name]


def parameters(run):
    return {p["name"]: p.get("value")
            for p in (run.result.get("outputs") or {}).get("parameters") or []}


def check_report(run):
    """02 and 03: rows counted from the key-only input, the report saved by the repository."""
    assert parameters(run) == {"rows": "3"}, run.result.get("outputs")
    key = f"{run.archive_key}/report.tgz"
    report = artifact(run, "report")
    assert report.get("path") == "/tmp/report.html", report
    assert (report.get("s3") or {}).get("key") == key, report
    assert untgz(run.s3.get(REPO_BUCKET, key)) == {"report.html": b"<h1>3 rows</h1>"}
    # archiveLogs is false in this repository: nothing but the report under the pod's key.
    assert run.s3.keys(REPO_BUCKET, run.archive_key + "/") == [key]
    assert "main-logs" not in {a["name"] for a in run.result["outputs"].get("artifacts", [])}


# A log line of the emissary wrapper itself (argoexec's tracing format), in main's container log.
WRAPPER_LOG = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z +(TRACE|DEBUG|INFO|WARN|ERROR) ")


def check_logs_archived(run):
    """archiveLogs: main's log at <archive key>/main.log, reported as artifact main-logs. It
    holds what the program wrote to stdout and stderr: main's container log as the API serves
    it, without the emissary wrapper's own log lines (Argo's emissary archives the output it
    captured from its child, not its own logging)."""
    key = f"{run.archive_key}/main.log"
    logs = artifact(run, "main-logs")
    assert (logs.get("s3") or {}).get("key") == key, logs
    archived = run.s3.get(REPO_BUCKET, key).decode()
    program = "".join(line for line in run.logs["main"].splitlines(keepends=True)
                      if not WRAPPER_LOG.match(line))
    assert archived == program, (
        f"archived main.log is not the program's output\n--- archived:\n{archived}\n"
        f"--- main's log from the API:\n{run.logs['main']}")
    return archived


def check_train(run):
    """04: the dataset from its own bucket, the model from the user volume, logs archived,
    the sidecar ended by SIGTERM with its empty argument intact."""
    key = f"{run.archive_key}/model.tgz"
    model = artifact(run, "model")
    assert model.get("path") == "/out/model", model
    assert (model.get("s3") or {}).get("key") == key, model
    files = untgz(run.s3.get(REPO_BUCKET, key))
    assert files == {"model/weights": b"4\n", "model/meta": b"epochs=3\n"}, files
    log = check_logs_archived(run)
    for line in ("training on labels.csv train.csv", "epoch 1/3", "epoch 3/3",
                 "model written to /out/model"):
        assert line in log, f"{line!r} not in main's log:\n{log}"
    assert sorted(run.s3.keys(REPO_BUCKET, run.archive_key + "/")) == sorted(
        [key, f"{run.archive_key}/main.log"])
    assert parameters(run) == {}, run.result.get("outputs")
    side = run.logs["redis"]
    assert "redis-server ready (arguments: --save and an empty string)" in side, side
    assert "redis-server stopping" in side, f"the sidecar was not ended by SIGTERM:\n{side}"
    assert run.result["metadata"]["labels"].get(INSTANCE_LABEL) == "team-a", run.result["metadata"]


def check_load(run):
    """07: arguments from the args file (the long one as @file), TRACEPARENT, logs archived."""
    assert parameters(run) == {"rows-loaded": "3"}, run.result.get("outputs")
    log = check_logs_archived(run)
    traceparent = run.env("main", "TRACEPARENT")
    for line in ("config read from @/tmp/argo_arg_4.txt",
                 "loading into warehouse.etl.svc as a user with a "
                 f"{len(WAREHOUSE_PASSWORD)}-byte password",
                 f"traceparent={traceparent}", "loaded 3 tables"):
        assert line in log, f"{line!r} not in main's log:\n{log}"
    assert WAREHOUSE_PASSWORD not in log
    assert run.s3.keys(REPO_BUCKET, run.archive_key + "/") == [f"{run.archive_key}/main.log"]


@dataclass
class Case:
    file: str
    secrets: Callable  # S3 -> {name: {key: value}}
    inputs: dict       # {(bucket, key): bytes}
    check: Callable


def repository_secret(s3):
    u = s3.users["repository"]
    return {"accesskey": u["accessKey"], "secretkey": u["secretKey"]}


CASES = {
    "v3.5": Case("02-v3.5-script.yaml",
                 lambda s3: {"my-minio-cred": repository_secret(s3),
                             "reporting-db": {"password": REPORTING_DB_PASSWORD}},
                 {(REPO_BUCKET, "raw/2025-03-01.csv"): RAW_CSV}, check_report),
    "v3.6": Case("03-v3.6-script-offloaded-template.yaml",
                 lambda s3: {"my-minio-cred": repository_secret(s3),
                             "reporting-db": {"password": REPORTING_DB_PASSWORD}},
                 {(REPO_BUCKET, "raw/2025-03-01.csv"): RAW_CSV}, check_report),
    "v3.7": Case("04-v3.7-container-sidecar-secret-artifacts.yaml",
                 lambda s3: {"my-minio-cred": repository_secret(s3),
                             "aws-creds": {
                                 "access-key-id": s3.users["datasets"]["accessKey"],
                                 "secret-access-key": s3.users["datasets"]["secretKey"]}},
                 {(DATASET_BUCKET, "train/v3.tgz"): tgz({"v3/train.csv": TRAIN_CSV,
                                                         "v3/labels.csv": LABELS_CSV})},
                 check_train),
    "v4.1": Case("07-v4.1-args-offload-tracing.yaml",
                 lambda s3: {"my-minio-cred": repository_secret(s3),
                             "warehouse-creds": {"password": WAREHOUSE_PASSWORD}},
                 {}, check_load),
}

# Cases that fail because of a bug in the executor or the node (not the fixture):
# {case id: reason naming the exact failure}. Each stays a strict xfail until fixed.
KNOWN_BUGS = {}


# ---------------------------------------------------------------------------- what a user does


def load_fixture(file, s3):
    text = (FIXTURES / file).read_text()
    text = text.replace("__S3_ENDPOINT__", s3.endpoint).replace("__ARGS_PADDING__", ARGS_PADDING)
    docs = [d for d in yaml.safe_load_all(text) if d]
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == 1, f"{file}: {len(pods)} pods"
    cms = [d for d in docs if d["kind"] == "ConfigMap"]
    assert all(d["kind"] in ("Pod", "ConfigMap") for d in docs), file
    return pods[0], cms


def tolerating(*codes):
    """Calls fn; an ApiException with one of `codes` gives None."""
    def call(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except client.ApiException as e:
            if e.status not in codes:
                raise
            return None
    return call


def delete_pod_and_wait(core, ns, name, timeout=60):
    tolerating(404)(core.delete_namespaced_pod, name, ns, grace_period_seconds=0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_pod(name, ns)
        except client.ApiException as e:
            if e.status == 404:
                return
            raise
        time.sleep(0.2)
    raise AssertionError(f"pod {ns}/{name} still exists {timeout}s after its deletion")


def clean(core, custom, pod, cms, node_id):
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    delete_pod_and_wait(core, ns, name)
    tolerating(404)(custom.delete_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, node_id)
    for cm in cms:
        tolerating(404)(core.delete_namespaced_config_map, cm["metadata"]["name"], ns)


def put_secret(core, ns, name, data):
    body = client.V1Secret(metadata=client.V1ObjectMeta(name=name, namespace=ns),
                           string_data=data, type="Opaque")
    try:
        core.create_namespaced_secret(ns, body)
    except client.ApiException as e:
        if e.status != 409:
            raise
        core.replace_namespaced_secret(name, ns, body)


def rbac_objects(ns, sa):
    """Argo's executor Role (docs/workflow-rbac.md, v3.4+) bound to the pod's service account:
    the same objects rbac/argo-pods.yaml preloads."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "executor", "namespace": ns},
            "rules": [{"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"],
                       "verbs": ["create", "patch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": f"executor-{sa}", "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "executor"},
               "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]}
    return role, binding


def once(admin_config, api, method, *args, **kwargs):
    """One call on a connection of its own, closed afterwards, for the calls this node answers
    404/405 (objects it does not serve): their connection is kept usable now
    (test_an_early_answer_leaves_the_connection_usable), but a client must not depend on it."""
    with client.ApiClient(admin_config) as c:
        return getattr(api(c), method)(*args, **kwargs)


def service_account_and_rbac(admin_config, ns, sa):
    """What a new user does: the namespace, the service account, the Role and RoleBinding.
    Existing objects (409) are fine; so, on this node, are 404/405 (it has no such objects:
    see test_a_new_user_creates_the_objects_argo_needs) — the grant is checked afterwards."""
    role, binding = rbac_objects(ns, sa)
    tolerate = tolerating(404, 405, 409)
    tolerate(once, admin_config, client.CoreV1Api, "create_namespace", {"metadata": {"name": ns}})
    if sa != "default":
        tolerate(once, admin_config, client.CoreV1Api, "create_namespaced_service_account", ns,
                 {"metadata": {"name": sa}})
    tolerate(once, admin_config, client.RbacAuthorizationV1Api, "create_namespaced_role", ns, role)
    tolerate(once, admin_config, client.RbacAuthorizationV1Api, "create_namespaced_role_binding",
             ns, binding)


def assert_executor_may_report(admin_config, sa_token, ns, sa):
    """The pod's service account may create and patch task results in its namespace
    (a SelfSubjectAccessReview with its own token, as `kubectl auth can-i` would)."""
    token = sa_token(sa, ns).status.token
    with client_with_token(admin_config, token) as c:
        authz = client.AuthorizationV1Api(c)
        for verb in ("create", "patch"):
            review = authz.create_self_subject_access_review(
                {"spec": {"resourceAttributes": {"namespace": ns, "verb": verb,
                                                 "group": GROUP, "resource": PLURAL}}})
            assert review.status.allowed, (
                f"system:serviceaccount:{ns}:{sa} may not {verb} {PLURAL} in {ns}: {review.status}")


def wait_done(core, ns, name, timeout=POD_TIMEOUT):
    """Watches the pod until Succeeded or Failed; returns (done, the pod as last read)."""
    w = watch.Watch()
    deadline = time.monotonic() + timeout
    for ev in w.stream(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}",
                       timeout_seconds=timeout, _request_timeout=timeout + 15):
        pod = ev["object"]
        if pod.status and pod.status.phase in ("Succeeded", "Failed"):
            w.stop()
            return True, pod
        if time.monotonic() > deadline:
            break
    w.stop()
    return False, core.read_namespaced_pod(name, ns)


def container_logs(core, ns, name, pod):
    logs = {}
    for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
        try:
            logs[c["name"]] = core.read_namespaced_pod_log(name, ns, container=c["name"])
        except client.ApiException as e:
            logs[c["name"]] = f"<log unavailable: {e.status} {e.body}>"
    return logs


# ---------------------------------------------------------------------------- the tests


def case_params():
    for case_id in CASES:
        marks = []
        if case_id in KNOWN_BUGS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case_id]))
        yield pytest.param(case_id, id=case_id, marks=marks)


@pytest.mark.parametrize("case_id", list(case_params()))
def test_argo_pod_runs(case_id, admin_config, core, custom, sa_token, s3):
    case = CASES[case_id]
    pod, cms = load_fixture(case.file, s3)
    run = Run(pod, cms, s3)
    ns, name = run.ns, run.name
    node_id = run.env("wait", "ARGO_NODE_ID")
    wf_name = pod["metadata"]["labels"][WF_LABEL]
    wf_uid = run.env("wait", "ARGO_WORKFLOW_UID")
    sa = pod["spec"].get("serviceAccountName", "default")

    clean(core, custom, pod, cms, node_id)  # a previous run's leftovers (the names are fixed)
    for bucket in (REPO_BUCKET, DATASET_BUCKET):
        s3.empty(bucket)
    for (bucket, key), data in case.inputs.items():
        s3.put(bucket, key, data)
    secrets = case.secrets(s3)
    try:
        service_account_and_rbac(admin_config, ns, sa)
        assert_executor_may_report(admin_config, sa_token, ns, sa)
        for secret, data in secrets.items():
            put_secret(core, ns, secret, data)
        for cm in cms:
            core.create_namespaced_config_map(ns, cm)
        core.create_namespaced_pod(ns, pod)
        done, run.final = wait_done(core, ns, name)
        run.logs = container_logs(core, ns, name, pod)
        assert done, f"not done within {POD_TIMEOUT}s (ARGOEXEC_POD_TIMEOUT)\n{run.describe()}"

        assert run.final.status.phase == "Succeeded", run.describe()
        statuses = (run.final.status.init_container_statuses or []) + (
            run.final.status.container_statuses or [])
        assert sorted(s.name for s in statuses) == sorted(
            c["name"] for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"])
        for st in statuses:
            t = st.state.terminated
            assert t is not None and t.exit_code == 0, f"{st.name}: {st.state}\n{run.describe()}"

        # The task result: written by wait before it exited, so complete once the pod is done.
        try:
            run.result = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, node_id)
        except client.ApiException as e:
            raise AssertionError(f"no WorkflowTaskResult {ns}/{node_id}: {e.status} {e.body}\n"
                                 f"{run.describe()}")
        md = run.result["metadata"]
        assert md["labels"].get(WF_LABEL) == wf_name, md
        assert md["labels"].get(DONE_LABEL) == "true", md
        owners = md.get("ownerReferences") or []
        assert any(o.get("kind") == "Workflow" and o.get("name") == wf_name
                   and o.get("uid") == wf_uid and o.get("apiVersion") == f"{GROUP}/{VERSION}"
                   for o in owners), owners
        # No value of a Secret in the task result or in any container's log.
        for secret, data in secrets.items():
            for key, value in data.items():
                assert value not in json.dumps(run.result), f"{secret}/{key} in the task result"
                for c, log in run.logs.items():
                    assert value not in log, f"{secret}/{key} in the log of {c}"
        try:
            case.check(run)
        except AssertionError as e:
            raise AssertionError(f"{e}\n\ntask result: {json.dumps(run.result)[:3000]}\n"
                                 f"{run.describe()}") from None
    finally:
        clean(core, custom, pod, cms, node_id)
        for secret in secrets:
            tolerating(404)(core.delete_namespaced_secret, secret, ns)


# What a new user creates through the API before such pods, and how this node answers today.
NEW_USER_OBJECTS = {
    "namespace": (
        (client.CoreV1Api, "create_namespace", lambda ns: ({"metadata": {"name": ns}},)),
        "POST /api/v1/namespaces answers 405 MethodNotAllowed (the node only serves get on "
        "namespaces; every namespace exists), where an API server answers 201 or 409"),
    "serviceaccount": (
        (client.CoreV1Api, "create_namespaced_service_account",
         lambda ns: (ns, {"metadata": {"name": "trainer"}})),
        None),  # served since the node stores any object (issue 18)
    "role": (
        (client.RbacAuthorizationV1Api, "create_namespaced_role",
         lambda ns: (ns, rbac_objects(ns, "trainer")[0])),
        "POST /apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles answers 404 NotFound (RBAC "
        "only from `argoexec node --rbac DIR` at start)"),
    "rolebinding": (
        (client.RbacAuthorizationV1Api, "create_namespaced_role_binding",
         lambda ns: (ns, rbac_objects(ns, "trainer")[1])),
        "POST /apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings answers 404 "
        "NotFound (RBAC only from `argoexec node --rbac DIR` at start)"),
}


@pytest.mark.parametrize("kind", [
    pytest.param(k, id=k, marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=r)]
                 if r else [])
    for k, (_, r) in NEW_USER_OBJECTS.items()])
def test_a_new_user_creates_the_objects_argo_needs(kind, admin_config):
    (api, method, args), _ = NEW_USER_OBJECTS[kind]
    ns = f"argo-pods-{RUN_ID}"
    status, body = 201, ""
    try:
        once(admin_config, api, method, *args(ns))
    except client.ApiException as e:
        status, body = e.status, e.body
    assert status in (201, 409), f"creating a {kind} in {ns}: HTTP {status}: {body}"


# ---------------------------------------------------------------------------- the HTTP bug


def http_exchange(admin_config, request, body, then):
    """Sends `request` (head) on a fresh HTTP/1.1 TLS connection, then its `body` only once
    the server has answered or, if it waits for the body as it may, after 5 s; then sends
    `then` (a whole request) on the same connection. Returns (first answer, second answer),
    each (status, headers) or a string saying how the connection failed."""
    url = urlparse(admin_config.host)
    ctx = ssl.create_default_context(cafile=admin_config.ssl_ca_cert)
    ctx.set_alpn_protocols(["http/1.1"])
    raw_sock = socket.create_connection((url.hostname, url.port), timeout=10)
    with ctx.wrap_socket(raw_sock, server_hostname=url.hostname) as sock:
        sock.sendall(request)
        first = read_answer(sock, time.monotonic() + 5)
        try:
            sock.sendall(body)
            if first is None:
                first = read_answer(sock, time.monotonic() + 10)
                assert first is not None, "no answer 10 s after the body"
            if isinstance(first, str) or first[1].get("connection") == "close":
                return first, None
            sock.sendall(then)
            second = read_answer(sock, time.monotonic() + 10)
        except (OSError, ssl.SSLError) as e:
            second = f"{type(e).__name__}: {e}"
        return first, second


def read_answer(sock, deadline):
    """(status, lower-cased headers) of one HTTP/1.1 answer (its body read by Content-Length
    or chunks); None when nothing came by `deadline`; a string when the connection ended."""
    buf = b""
    while True:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            if not buf:
                return None
            return f"an incomplete answer: {buf[:200]!r}"
        except (OSError, ssl.SSLError) as e:
            return f"the connection ended: {type(e).__name__}: {e}"
        if not chunk:
            return "the connection ended (EOF) without an answer"
        buf += chunk
        if b"\r\n\r\n" not in buf:
            continue
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(":") for line in lines[1:])}
        status = int(lines[0].split()[1])
        if "content-length" in headers and len(rest) >= int(headers["content-length"]):
            return status, headers
        if headers.get("transfer-encoding") == "chunked" and rest.endswith(b"0\r\n\r\n"):
            return status, headers


EARLY_ANSWERS = {
    # A new user's first calls (service_account_and_rbac): 405 and 404 before the body is read.
    "create-namespace-405": ("POST", "/api/v1/namespaces", {"metadata": {"name": "etl"}}),
    "create-role-404": ("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/etl/roles",
                        {"metadata": {"name": "executor"}}),
}


@pytest.mark.parametrize("case", list(EARLY_ANSWERS))
def test_an_early_answer_leaves_the_connection_usable(case, admin_config):
    method, path, body = EARLY_ANSWERS[case]
    data = json.dumps(body).encode()
    auth = admin_config.get_api_key_with_prefix("BearerToken")
    host = urlparse(admin_config.host).netloc
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode()
    then = (f"GET /api/v1/namespaces/etl HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\n"
            "\r\n").encode()
    first, second = http_exchange(admin_config, head, data, then)
    assert not isinstance(first, str), f"{method} {path}: {first}"
    assert first[0] in (201, 404, 405, 409), first
    if second is None:
        return  # the server said `Connection: close`: the client opens a new connection
    assert not isinstance(second, str), (
        f"{method} {path} answered {first[0]} without `Connection: close`, then the next "
        f"request on the same connection failed: {second}")
    assert second[0] == 200, second
