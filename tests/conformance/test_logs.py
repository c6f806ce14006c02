"""pods/log: plain, follow (streamed), tailLines, limitBytes, timestamps, sinceSeconds,
container, previous, and the 400 while a container waits to start."""

import re
import time

import pytest
from kubernetes import watch

from conftest import (NAMESPACE, OUT_ERR_DONE, RFC3339, SLEEPER, delete_pod_quietly,
                      expect_api_error, parse_rfc3339, pod_manifest, unique, wait_phase,
                      watch_pod)


def check_out_err_done(lines):
    # stdout and stderr come from two pipes: "out" and "err" may be in either order, but
    # "done" was written a second later.
    assert sorted(lines[:2]) == ["err", "out"] and lines[2:] == ["done"], lines


@pytest.fixture(scope="module")
def finished(core):
    """A pod that ran OUT_ERR_DONE and Succeeded."""
    name = unique("logs")
    core.create_namespaced_pod(NAMESPACE, pod_manifest(name, OUT_ERR_DONE))
    try:
        pod, _ = wait_phase(core, name, {"Succeeded", "Failed"})
        assert pod.status.phase == "Succeeded", pod.status
        yield name
    finally:
        delete_pod_quietly(core, name)


def test_log_whole(core, finished):
    log = core.read_namespaced_pod_log(finished, NAMESPACE)
    assert log.endswith("\n"), repr(log)
    check_out_err_done(log.splitlines())


def test_log_container_param(core, finished):
    assert core.read_namespaced_pod_log(finished, NAMESPACE, container="main") == \
        core.read_namespaced_pod_log(finished, NAMESPACE)
    _, st = expect_api_error(400, core.read_namespaced_pod_log, finished, NAMESPACE,
                             container="nope")
    assert st["reason"] == "BadRequest", st
    assert st["message"] == f"container nope is not valid for pod {finished}", st


def test_log_tail_lines(core, finished):
    assert core.read_namespaced_pod_log(finished, NAMESPACE, tail_lines=1) == "done\n"
    two = core.read_namespaced_pod_log(finished, NAMESPACE, tail_lines=2).splitlines()
    assert len(two) == 2 and two[1] == "done" and two[0] in ("out", "err"), two
    assert core.read_namespaced_pod_log(finished, NAMESPACE, tail_lines=0) == ""


def test_log_limit_bytes(core, finished):
    whole = core.read_namespaced_pod_log(finished, NAMESPACE)
    for n in (1, 2, 5):
        part = core.read_namespaced_pod_log(finished, NAMESPACE, limit_bytes=n)
        assert part == whole[:n], (n, part, whole)
    assert core.read_namespaced_pod_log(finished, NAMESPACE, limit_bytes=10_000) == whole


def test_log_timestamps(core, finished):
    log = core.read_namespaced_pod_log(finished, NAMESPACE, timestamps=True)
    stamps, texts = [], []
    for line in log.splitlines():
        ts, sep, text = line.partition(" ")
        assert sep and RFC3339.match(ts), f"line without an RFC 3339 timestamp: {line!r}"
        stamps.append(parse_rfc3339(ts))
        texts.append(text)
    check_out_err_done(texts)
    done = stamps[2]
    assert all(done >= s for s in stamps[:2]), stamps
    gap = (done - min(stamps[:2])).total_seconds()
    assert 0.9 <= gap < 30, f"'done' was written 1 s after 'out'; timestamps differ by {gap}s"


def test_log_since_seconds(core, finished):
    # Everything was written within the last hour.
    assert core.read_namespaced_pod_log(finished, NAMESPACE, since_seconds=3600) == \
        core.read_namespaced_pod_log(finished, NAMESPACE)


def test_log_previous_without_restart_is_400(core, finished):
    _, st = expect_api_error(400, core.read_namespaced_pod_log, finished, NAMESPACE,
                             previous=True)
    assert st["reason"] == "BadRequest", st
    assert st["message"] == f'previous terminated container "main" in pod "{finished}" not found', st


def test_log_follow_streams_until_exit(core, make_pod):
    name = unique("follow")
    make_pod(pod_manifest(name, "echo out; echo err >&2; sleep 4; echo done"))

    def started(ev):
        for cs in ev["object"].status.container_statuses or []:
            if cs.state and (cs.state.running or cs.state.terminated):
                return True
        return False

    watch_pod(core, name, started)
    resp = core.read_namespaced_pod_log(name, NAMESPACE, follow=True, _preload_content=False,
                                        _request_timeout=(10, 60))
    arrivals = []  # (seconds since open, text)
    t0 = time.monotonic()
    try:
        assert resp.status == 200
        for chunk in resp.stream(amt=None, decode_content=False):
            arrivals.append((time.monotonic() - t0, chunk.decode()))
    finally:
        resp.release_conn()
    text = "".join(t for _, t in arrivals)
    check_out_err_done(text.splitlines())
    # Streamed: "out" reached us well before the stream ended (at the container's exit).
    first_out = next(t for t, chunk in arrivals if "out" in chunk or "err" in chunk)
    end = arrivals[-1][0]
    assert end - first_out >= 1.0, f"follow delivered everything at once: {arrivals}"
    # The stream ended because the container stopped.
    pod = core.read_namespaced_pod(name, NAMESPACE)
    cs = pod.status.container_statuses[0]
    if not cs.state.terminated:
        final, _ = wait_phase(core, name, {"Succeeded", "Failed"}, timeout=30)
        cs = final.status.container_statuses[0]
    assert cs.state.terminated.exit_code == 0


def test_log_follow_with_watch_stream(core, finished):
    lines = list(watch.Watch().stream(core.read_namespaced_pod_log, finished, NAMESPACE,
                                      _request_timeout=30))
    check_out_err_done(lines)


def test_log_while_waiting_to_start_is_400(core, make_pod):
    name = unique("waiting")
    m = pod_manifest(name, "echo main")
    m["spec"]["initContainers"] = [{
        "name": "init", "image": m["spec"]["containers"][0]["image"],
        "imagePullPolicy": "Never", "command": ["sh", "-c", SLEEPER]}]
    make_pod(m)
    # Wait until the pod is bound to the node (before that the API server answers 204).
    watch_pod(core, name, lambda ev: bool(ev["object"].spec.node_name))
    _, st = expect_api_error(400, core.read_namespaced_pod_log, name, NAMESPACE,
                             container="main")
    assert st["reason"] == "BadRequest", st
    assert re.fullmatch(rf'container "main" in pod "{name}" is waiting to start: \w+',
                        st["message"]), st
