#!/usr/bin/env python3
"""Write the hand-made seed inputs of every fuzz target to fuzz/seeds/<target>/.

The seeds are small valid (and a few deliberately hostile) inputs that give each fuzzer a
start: templates, annotation files, config maps, tar/zip archives, exec frames and watch
streams. Run from anywhere: python3 fuzz/scripts/make_seeds.py
"""

import io
import json
import os
import stat
import tarfile
import zipfile

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "seeds")


def put(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- template_json -------------------------------------------------------------------
TEMPLATES = {
    "container": {"name": "c", "container": {"image": "busybox", "command": ["sh", "-c"],
                  "args": ["echo hi > /tmp/out"], "volumeMounts": [{"name": "v", "mountPath": "/mnt/v"}]},
                  "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "/tmp/out", "default": ""}}],
                              "artifacts": [{"name": "a", "path": "/mnt/v/dir", "archive": {"tar": {"compressionLevel": 1}}},
                                            {"name": "z", "path": "/tmp/z", "archive": {"zip": {}}, "optional": True}]},
                  "volumes": [{"name": "v", "emptyDir": {}}], "activeDeadlineSeconds": "30"},
    "script": {"name": "s", "script": {"image": "python:3", "command": ["python"], "source": "print(1)\n",
               "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
               "inputs": {"parameters": [{"name": "x", "value": "1", "enum": ["1", "2"]}],
                          "artifacts": [{"name": "in", "path": "/in/../in/file", "raw": {"data": "hello"}, "mode": 420}]},
               "archiveLocation": {"archiveLogs": True, "local": {"path": "/repo/x"}}},
    "container_set": {"name": "cs", "containerSet": {"containers": [
        {"name": "main", "image": "b", "command": ["true"]},
        {"name": "b", "image": "b", "dependencies": ["main"]}],
        "volumeMounts": [{"name": "w", "mountPath": "/w"}],
        "retryStrategy": {"retries": "2", "duration": "1m30.5s"}},
        "sidecars": [{"name": "side", "image": "nginx", "mirrorVolumeMounts": True}],
        "initContainers": [{"name": "ic", "image": "b"}], "podSpecPatch": "{}"},
    "locations": {"name": "l", "container": {"image": "b"}, "outputs": {"artifacts": [
        {"name": "s3", "path": "/o/1", "s3": {"bucket": "b", "key": "k/", "endpoint": "minio:9000", "insecure": True,
         "accessKeySecret": {"name": "s", "key": "ak"}, "secretKeySecret": {"name": "s", "key": "sk"},
         "encryptionOptions": {"enableEncryption": True, "serverSideCustomerKeySecret": {"name": "c", "key": "k"}}}},
        {"name": "gcs", "path": "/o/2", "gcs": {"bucket": "b", "key": "k", "serviceAccountKeySecret": {"name": "g", "key": "j"}}},
        {"name": "az", "path": "/o/3", "azure": {"container": "c", "blob": "b", "endpoint": "https://a.blob.core.windows.net"}},
        {"name": "http", "path": "/o/4", "http": {"url": "https://x/y", "headers": [{"name": "h", "value": "v"}],
         "auth": {"basicAuth": {"usernameSecret": {"name": "u", "key": "u"}}}}},
        {"name": "af", "path": "/o/5", "artifactory": {"url": "https://af/r"}},
        {"name": "git", "path": "/o/6", "git": {"repo": "https://g"}},
        {"name": "none", "path": "/", "archive": {"none": {}}}]},
        "archiveLocation": {"s3": {"bucket": "b", "key": "wf/pod"}}},
    "durations": {"containerSet": {"containers": [{"name": "main", "image": "b"}],
                  "retryStrategy": {"retries": 3, "duration": "1h2m3s4ms5us6ns"}}},
}
for name, t in TEMPLATES.items():
    put("template_json", name + ".json", json.dumps(t))
put("template_json", "dur_big.json", json.dumps({"containerSet": {"containers": [],
    "retryStrategy": {"duration": "99999999999h"}}}))


# ---- annotations ---------------------------------------------------------------------
tpl = json.dumps(TEMPLATES["script"])


def goquote(s):
    out = '"'
    for ch in s:
        if ch in '"\\':
            out += "\\" + ch
        elif ch == "\n":
            out += "\\n"
        elif ch == "\t":
            out += "\\t"
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out += "\\x%02x" % ord(ch)
        else:
            out += ch
    return out + '"'


put("annotations", "file", "kubernetes.io/config.seen=\"2026-01-01T00:00:00Z\"\n"
    "kubernetes.io/config.source=\"api\"\n"
    "workflows.argoproj.io/template=" + goquote(tpl) + "\n")
put("annotations", "escapes", 'workflows.argoproj.io/template="\\a\\b\\f\\n\\r\\t\\v\\\\\\"\\\'\\x41\\101\\u00e9\\U0001F600"\n')
put("annotations", "bad", 'workflows.argoproj.io/template="\\q\\x4"\nx="\n')
put("annotations", "utf8", 'workflows.argoproj.io/template="h\u00e9llo \\xc3\\xa9 \u4e16"\n')

# ---- configmap_yaml (first byte: 0 config doc, 1 per-key "key\nvalue", else manifest) -
CONFIG_DOC = """containerRuntimeExecutor: pns
containerRuntimeExecutors:
- name: k8sapi
  selector:
    matchLabels: {team: a}
    matchExpressions:
    - {key: app, operator: In, values: [b, c]}
    - {key: x, operator: DoesNotExist}
kubeletPort: 10255
kubeletInsecure: true
kubeletServerName: node-1
kubeletExec: apiserver
dockerSockPath: /run/docker.sock
executor:
  image: argoexec:dev
  imagePullPolicy: Never
  resources: {requests: {cpu: 10m}}
  args: [--loglevel, debug]
mainContainer:
  resources: {limits: {memory: 1Gi}}
  env: [{name: A, value: "1"}]
images:
  busybox: {command: [sh], args: [-c]}
  python:3: {entrypoint: [python3], cmd: []}
artifactRepository:
  archiveLogs: true
  s3:
    bucket: b
    endpoint: minio:9000
    insecure: true
    keyFormat: "{{workflow.namespace}}/{{workflow.name}}/{{pod.name}}"
    accessKeySecret: {name: s, key: a}
parallelism: 10
"""
put("configmap_yaml", "shape1_doc", b"\x00" + CONFIG_DOC.encode())
put("configmap_yaml", "shape2_images", b"\x01images\nbusybox: {command: [sh], args: [-c]}\n")
put("configmap_yaml", "shape2_repo", b"\x01artifactRepository\nazure: {container: c, endpoint: 'https://a', blobNameFormat: '{{pod.name}}'}\n")
put("configmap_yaml", "manifest_per_key", b"\x02" + b"""apiVersion: v1
kind: ConfigMap
metadata: {name: workflow-controller-configmap}
data:
  containerRuntimeExecutor: emissary
  kubeletPort: "0"
  executor: |
    image: argoexec:dev
    args: [--loglevel, debug]
  images: |
    busybox: {command: [sh], args: [-c]}
  artifactRepository: |
    artifactory: {repoURL: 'https://af/r/', usernameSecret: {name: u, key: u}}
  parallelism: "10"
""")
put("configmap_yaml", "manifest_config", b"\x02kind: ConfigMap\ndata:\n  config: |\n"
    + b"".join(b"    " + l.encode() + b"\n" for l in CONFIG_DOC.splitlines()))
put("configmap_yaml", "anchors", b"\x00a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\nmode: 0755\n")


# ---- extract_tar (first byte: 0 tar, 1 gzip of it, 4 unpack_input_stream) ------------
def tar_bytes(entries, fmt=tarfile.GNU_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for kind, name, extra in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1_700_000_000
            if kind == "file":
                ti.size = len(extra)
                ti.mode = 0o644
                t.addfile(ti, io.BytesIO(extra))
                continue
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
            elif kind == "sym":
                ti.type = tarfile.SYMTYPE
                ti.linkname = extra
            elif kind == "hard":
                ti.type = tarfile.LNKTYPE
                ti.linkname = extra
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            t.addfile(ti)
    return b.getvalue()


good = tar_bytes([("dir", "art/", None), ("file", "art/a.txt", b"hello\n"), ("dir", "art/sub/", None),
                  ("file", "art/sub/b", b"x" * 100), ("sym", "art/sub/up", "../a.txt"),
                  ("hard", "art/h", "art/a.txt"), ("fifo", "art/p", None)])
put("extract_tar", "good_tar", b"\x00" + good)
put("extract_tar", "good_tgz", b"\x01" + good)
put("extract_tar", "good_stream", b"\x04" + good)
put("extract_tar", "single_file", b"\x04" + tar_bytes([("file", "only.txt", b"1")]))
put("extract_tar", "pax_long", b"\x00" + tar_bytes([("file", "d/" + "n" * 150, b"long"),
                                                     ("sym", "l" * 120, "d/" + "n" * 150)], tarfile.PAX_FORMAT))
put("extract_tar", "gnu_long", b"\x00" + tar_bytes([("file", "g" * 200, b"x"), ("sym", "s", "x" * 200)]))
put("extract_tar", "evil_dotdot", b"\x00" + tar_bytes([("file", "../canary/file", b"pwn"), ("file", "a/../../x", b"")]))
put("extract_tar", "evil_abs", b"\x00" + tar_bytes([("file", "/tmp/evil", b"pwn")]))
put("extract_tar", "evil_symlink_then_write", b"\x00" + tar_bytes([("sym", "esc", "../canary"),
                                                                  ("file", "esc/file", b"pwn")]))
put("extract_tar", "evil_symlink_chain", b"\x00" + tar_bytes([("dir", "a/", None), ("sym", "a/up", ".."),
                                                              ("sym", "b", "a/up/.."), ("file", "a/up/f", b"")]))
put("extract_tar", "evil_hardlink", b"\x00" + tar_bytes([("hard", "h", "../canary/file"), ("sym", "s", "."),
                                                         ("hard", "h2", "s/h")]))
put("extract_tar", "replace_kinds", b"\x00" + tar_bytes([("file", "x", b"1"), ("dir", "x/", None),
                                                         ("dir", "y/", None), ("file", "y", b"2"), ("sym", "z", "x"), ("file", "z", b"3")]))


# ---- extract_zip (first byte: 0 extract_zip, 1 unpack Zip, 2 unpack Auto, 3 stream) ---
def zip_bytes(entries):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        for kind, name, data in entries:
            zi = zipfile.ZipInfo(name, date_time=(2024, 2, 29, 12, 0, 0))
            if kind == "file":
                zi.external_attr = (stat.S_IFREG | 0o644) << 16
                z.writestr(zi, data)
            elif kind == "dir":
                zi.external_attr = (stat.S_IFDIR | 0o755) << 16 | 0x10
                z.writestr(zi, b"")
            elif kind == "sym":
                zi.external_attr = (stat.S_IFLNK | 0o777) << 16
                zi.create_system = 3
                z.writestr(zi, data)
            elif kind == "nomode":
                zi.create_system = 0
                z.writestr(zi, data)
    return b.getvalue()


zgood = zip_bytes([("dir", "art/", b""), ("file", "art/a.txt", b"hello\n" * 20), ("sym", "art/l", b"a.txt"),
                   ("dir", "art/sub/", b""), ("sym", "art/sub/up", b"../a.txt"), ("nomode", "art/dos.txt", b"dos")])
for i, mode in enumerate([0, 1, 2, 3]):
    put("extract_zip", "good_%d" % i, bytes([mode]) + zgood)
put("extract_zip", "single", b"\x01" + zip_bytes([("file", "one.txt", b"1")]))
put("extract_zip", "empty", b"\x00" + zip_bytes([]))
put("extract_zip", "evil_slip", b"\x00" + zip_bytes([("file", "../canary/file", b"pwn"), ("file", "/abs", b"x")]))
put("extract_zip", "evil_symlink", b"\x00" + zip_bytes([("sym", "esc", b"../canary"), ("file", "esc/file", b"pwn")]))
put("extract_zip", "evil_sym_abs", b"\x01" + zip_bytes([("sym", "esc", b"/etc"), ("sym", "d/x", b"../../y")]))
put("extract_zip", "dupes", b"\x00" + zip_bytes([("file", "a", b"1"), ("file", "a", b"2"), ("dir", "a/", b""),
                                                 ("sym", "b", b"a"), ("file", "b", b"3")]))


# ---- ws_frames (first byte: protocol; then [len][channel/kind][data] records) --------
def rec(*parts):
    out = b""
    for p in parts:
        out += bytes([len(p)]) + p
    return out


ok = json.dumps({"metadata": {}, "status": "Success"}).encode()
nz = json.dumps({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode", "message": "exit code 3",
                 "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}).encode()
nf = json.dumps({"status": "Failure", "message": "executable file not found"}).encode()
put("ws_frames", "success_v5", b"\x00" + rec(b"\x01hello\n", b"\x02warn\n", b"\x03" + ok))
put("ws_frames", "nonzero_v4", b"\x01" + rec(b"\x02oops\n", b"\x03" + nz))
put("ws_frames", "notfound_v4", b"\x01" + rec(b"\x03" + nf))
put("ws_frames", "no_status", b"\x03" + rec(b"\x01out", b"\x02err"))
put("ws_frames", "client_msgs_v5", b"\x00" + rec(b"\x00\x00stdin", b"\x00\xff\x00", b"\x00\xff\x01",
                                                 b"\x00\x04{\"Width\":80,\"Height\":24}", b"\x01\x00text"))
put("ws_frames", "client_msgs_b64", b"\x02" + rec(b"\x010aGVsbG8=", b"\x014eyJ3aWR0aCI6MSwiaGVpZ2h0IjoyfQ==",
                                                  b"\x01", b"\x010!!"))
spdy = (bytes([0x80, 3, 0, 1, 0, 0, 0, 10]) + b"\x00\x00\x00\x01" + b"\x00" * 6
        + bytes([0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1])
        + bytes([0, 0, 0, 3, 1, 0, 0, 2]) + b"hi"
        + bytes([0x80, 3, 0, 7, 0, 0, 0, 8]) + b"\x00" * 8)
put("ws_frames", "spdy", b"\x01" + spdy)

# ---- watch_events (line 1 label selector, line 2 field selector, then events) --------
pod = {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "labels": {"app": "a"}},
       "spec": {"containers": [{"name": "wait"}, {"name": "main"}, {"name": "side"}],
                "initContainers": [{"name": "init"}]},
       "status": {"phase": "Running", "containerStatuses": [
           {"name": "main", "image": "i", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 3, "reason": "Error"}}},
           {"name": "side", "image": "i", "imageID": "", "ready": True, "restartCount": 0, "state": {"running": {}}},
           {"name": "wait", "image": "i", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}}],
           "initContainerStatuses": [{"name": "init", "image": "i", "imageID": "", "ready": False, "restartCount": 0,
                                      "state": {"terminated": {"exitCode": 0}}}]}}
failed = json.loads(json.dumps(pod))
failed["status"]["phase"] = "Failed"
failed["status"]["reason"] = "DeadlineExceeded"
lines = ["app in (a, b),!gone,tier", "metadata.name=p,status.phase!=Failed",
         json.dumps({"type": "ADDED", "object": pod}),
         json.dumps({"type": "MODIFIED", "object": failed}),
         json.dumps({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}}),
         json.dumps({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                                 "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410}}),
         json.dumps({"type": "DELETED", "object": {"metadata": {"name": "p", "resourceVersion": "10"}}})]
put("watch_events", "stream", "\n".join(lines) + "\n")
put("watch_events", "minimal", "\n\n" + json.dumps({"type": "ADDED", "object": {"metadata": {}}}) + "\n")
put("watch_events", "terminal_no_status", "x\nmetadata.namespace==ns\n"
    + json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]},
                                                "status": {"phase": "Succeeded"}}}) + "\n")
