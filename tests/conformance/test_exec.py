"""pods/exec over WebSocket with the client's kubernetes.stream (it offers
v5.channel.k8s.io,v4.channel.k8s.io): channels, exit codes, stdin EOF (v5 close signal)."""

import json

import pytest
from kubernetes.stream import stream

from conftest import NAMESPACE, raw


def exec_ws(core, pod, command, stdin=False):
    resp = stream(core.connect_get_namespaced_pod_exec, pod, NAMESPACE, command=command,
                  stderr=True, stdin=stdin, stdout=True, tty=False, _preload_content=False)
    return resp


def finish(resp, timeout=30):
    resp.run_forever(timeout=timeout)
    assert not resp.is_open(), f"exec session still open after {timeout}s"
    status_text = resp.peek_channel(3)
    assert status_text, "no status on the error channel (3)"
    status = json.loads(status_text)
    out, err = resp.read_stdout(), resp.read_stderr()
    return out, err, status, resp.returncode


def test_exec_v5_negotiated(core, sleeper):
    resp = exec_ws(core, sleeper, ["true"])
    try:
        assert resp.subprotocol == "v5.channel.k8s.io", \
            f"server chose {resp.subprotocol!r} for an offer of v5,v4 (client preference)"
    finally:
        finish(resp)


def test_exec_stdout_stderr_success(core, sleeper):
    resp = exec_ws(core, sleeper, ["sh", "-c", "echo out; echo err >&2"])
    out, err, status, code = finish(resp)
    assert out == "out\n" and err == "err\n", (out, err)
    assert status == {"metadata": {}, "status": "Success"}, status
    assert code == 0


def test_exec_nonzero_exit_code(core, sleeper):
    resp = exec_ws(core, sleeper, ["sh", "-c", "echo hi; echo oops >&2; exit 3"])
    out, err, status, code = finish(resp)
    assert out == "hi\n" and err == "oops\n", (out, err)
    assert code == 3
    assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode", status
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}], status
    assert "code" not in status, f"NonZeroExitCode status must not carry an HTTP code: {status}"
    assert "kind" not in status and "apiVersion" not in status, status


def test_exec_argv_not_split(core, sleeper):
    resp = exec_ws(core, sleeper, ["echo", "a  b", "c"])
    out, _, _, code = finish(resp)
    assert out == "a  b c\n" and code == 0, out


def test_exec_stdin_with_v5_close(core, sleeper):
    # write_stdin(str) sends WebSocket TEXT frames; the API server treats text and binary
    # frames alike (wsstream reads every message as bytes).
    resp = exec_ws(core, sleeper, ["sh", "-c", "cat; echo eof"], stdin=True)
    try:
        resp.write_stdin("hello\n")
        resp.close_channel(0)  # v5 close signal [255, 0]: cat sees EOF
    except Exception:
        resp.close()
        raise
    out, err, status, code = finish(resp)
    assert out == "hello\neof\n" and err == "", (out, err)
    assert code == 0, status


def test_exec_stdin_binary_frames(core, sleeper):
    resp = stream(core.connect_get_namespaced_pod_exec, sleeper, NAMESPACE,
                  command=["sh", "-c", "cat; echo eof"], stderr=True, stdin=True, stdout=True,
                  tty=False, _preload_content=False, binary=True)
    try:
        resp.write_stdin(b"\x00\x01bin\n")  # bytes: a BINARY frame
        resp.close_channel(0)
    except Exception:
        resp.close()
        raise
    resp.run_forever(timeout=30)
    assert not resp.is_open()
    assert resp.read_stdout() == b"\x00\x01bin\neof\n"
    assert json.loads(resp.peek_channel(3)) == {"metadata": {}, "status": "Success"}


def test_exec_preloaded(core, sleeper):
    out = stream(core.connect_get_namespaced_pod_exec, sleeper, NAMESPACE,
                 command=["sh", "-c", "echo one; echo two"], stderr=True, stdin=False,
                 stdout=True, tty=False)
    assert out == "one\ntwo\n", repr(out)


def test_exec_large_output(core, sleeper):
    # ~1.3 MB over many frames; all of it must arrive, in order.
    resp = exec_ws(core, sleeper, ["sh", "-c", "i=0; while [ $i -lt 100000 ]; do "
                                               "echo line$i; i=$((i+1)); done"])
    out, _, _, code = finish(resp, timeout=120)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 100000, (code, len(lines), lines[-3:])
    assert lines[0] == "line0" and lines[-1] == "line99999"


def test_exec_without_upgrade_is_400(api_client, sleeper):
    r = raw(api_client, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{sleeper}/exec",
            query=[("command", "true"), ("stdout", "true")])
    assert r.status == 400, (r.status, r.data)
    st = json.loads(r.data)
    assert st["kind"] == "Status" and st["reason"] == "BadRequest", st
    assert st["message"] == "Upgrade request required", st


def test_exec_missing_pod_is_404(core):
    name = "conf-no-such-pod"
    with pytest.raises(Exception) as exc:
        stream(core.connect_get_namespaced_pod_exec, name, NAMESPACE, command=["true"],
               stderr=True, stdin=False, stdout=True, tty=False)
    # kubernetes.stream reports a failed handshake as ApiException(status=0) whose reason
    # is websocket-client's "Handshake status 404 Not Found -+-+- headers -+-+- body".
    text = str(exc.value)
    assert "Handshake status 404" in text, text


def test_exec_container_param(core, sleeper):
    resp = stream(core.connect_get_namespaced_pod_exec, sleeper, NAMESPACE, container="main",
                  command=["echo", "ok"], stderr=True, stdin=False, stdout=True, tty=False,
                  _preload_content=False)
    out, _, _, code = finish(resp)
    assert out == "ok\n" and code == 0


def test_exec_unknown_container_is_400(api_client, sleeper):
    # Validation happens before the upgrade; checked with a plain request.
    r = raw(api_client, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{sleeper}/exec",
            query=[("command", "true"), ("stdout", "true"), ("container", "nope")])
    assert r.status == 400, (r.status, r.data)
    st = json.loads(r.data)
    assert st["reason"] == "BadRequest", st
    assert st["message"] == f"container nope is not valid for pod {sleeper}", st
