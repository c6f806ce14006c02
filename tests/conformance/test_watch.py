"""Watch semantics: resourceVersion, too-old resourceVersion (410 Expired) and resume,
timeoutSeconds, label-selector watches, bookmarks."""

import json
import time

import pytest
from kubernetes import client, watch

from conftest import NAMESPACE, RUN_ID, RUN_LABEL, SLEEPER, pod_manifest, unique, wait_phase

# The server keeps only its most recent events. Changing an object this many times (at
# most) must push resourceVersion "1" out of that window.
MAX_CHANGES_FOR_410 = 500


def first_watch_line(core, **kwargs):
    """Opens a raw watch and returns (HTTP status, first event as dict)."""
    resp = core.list_namespaced_pod(NAMESPACE, watch=True, _preload_content=False,
                                    _request_timeout=(10, 30), **kwargs)
    try:
        buf = b""
        for chunk in resp.stream(amt=None, decode_content=False):
            buf += chunk
            if b"\n" in buf:
                break
        line = buf.split(b"\n", 1)[0]
        assert line, f"watch stream ended without an event (status {resp.status})"
        return resp.status, json.loads(line)
    finally:
        resp.close()
        resp.release_conn()


def test_too_old_resource_version_is_410_then_resume(core, sleeper):
    # Make changes until a watch from resourceVersion "1" is answered with the in-stream
    # ERROR event (the server keeps a bounded window of events). Probe after every 10.
    changes, status, event = 0, None, None
    while changes < MAX_CHANGES_FOR_410:
        for _ in range(10):
            changes += 1
            core.patch_namespaced_pod(sleeper, NAMESPACE,
                                      {"metadata": {"annotations": {"churn": str(changes)}}},
                                      _content_type="application/merge-patch+json")
        status, event = first_watch_line(core, resource_version="1",
                                         field_selector=f"metadata.name={sleeper}",
                                         timeout_seconds=5)
        if event.get("type") == "ERROR":
            break
    assert event and event["type"] == "ERROR", \
        f"after {changes} changes a watch from resourceVersion 1 still replays: {event}"
    # 200 + one ERROR event whose object is a Status with code 410, reason Expired.
    assert status == 200, f"expected the 410 in-stream on a 200 response, got HTTP {status}"
    st = event["object"]
    assert st["kind"] == "Status" and st["apiVersion"] == "v1", st
    assert st["status"] == "Failure" and st["code"] == 410, st
    assert st["reason"] == "Expired", st
    assert st["message"], st

    # The client's Watch turns it into ApiException(410) (no retries with timeoutSeconds).
    w = watch.Watch()
    with pytest.raises(client.ApiException) as exc:
        for _ in w.stream(core.list_namespaced_pod, NAMESPACE, resource_version="1",
                          field_selector=f"metadata.name={sleeper}", timeout_seconds=5,
                          _request_timeout=30):
            pass
    assert exc.value.status == 410, exc.value

    # Resume the way clients must: re-list, then watch from the list's resourceVersion.
    lst = core.list_namespaced_pod(NAMESPACE, field_selector=f"metadata.name={sleeper}")
    rv = lst.metadata.resource_version
    assert rv and rv != "1"
    assert [p.metadata.name for p in lst.items] == [sleeper]
    core.patch_namespaced_pod(sleeper, NAMESPACE,
                              {"metadata": {"annotations": {"resumed": RUN_ID}}},
                              _content_type="application/merge-patch+json")
    seen = []
    for ev in w.stream(core.list_namespaced_pod, NAMESPACE, resource_version=rv,
                       field_selector=f"metadata.name={sleeper}", timeout_seconds=30,
                       _request_timeout=45):
        seen.append(ev["type"])
        assert ev["type"] == "MODIFIED", f"resumed watch delivered {seen} (no ADDED replay)"
        if (ev["object"].metadata.annotations or {}).get("resumed") == RUN_ID:
            w.stop()
            break
    else:
        pytest.fail(f"resumed watch ended without the patch; events {seen}")


def test_watch_timeout_seconds_closes_cleanly(core):
    # Nothing matches this selector, so the only way the stream ends is the timeout.
    start = time.monotonic()
    events = list(watch.Watch().stream(core.list_namespaced_pod, NAMESPACE,
                                       label_selector=f"{RUN_LABEL}=nothing-{RUN_ID}",
                                       timeout_seconds=2, _request_timeout=30))
    elapsed = time.monotonic() - start
    assert events == [], events
    assert 1.5 <= elapsed < 20, f"watch with timeoutSeconds=2 lasted {elapsed:.1f}s"


def test_watch_label_selector_sees_only_matching(core, make_pod):
    role = f"watched-{RUN_ID}"
    lst = core.list_namespaced_pod(NAMESPACE, label_selector=f"role={role}")
    assert lst.items == []
    rv = lst.metadata.resource_version
    other, mine = unique("unwatched"), unique("watched")
    make_pod(pod_manifest(other, "true", {"role": "other"}))
    make_pod(pod_manifest(mine, "true", {"role": role}))
    w = watch.Watch()
    names = []
    for ev in w.stream(core.list_namespaced_pod, NAMESPACE, label_selector=f"role={role}",
                       resource_version=rv, timeout_seconds=30, _request_timeout=45):
        names.append((ev["type"], ev["object"].metadata.name))
        if ev["type"] == "ADDED":
            w.stop()
            break
    assert names and names[0] == ("ADDED", mine), names
    assert all(n == mine for _, n in names), names


def test_watch_without_resource_version_starts_with_added(core, make_pod):
    name = unique("initial")
    make_pod(pod_manifest(name, "true"))
    wait_phase(core, name, {"Succeeded", "Failed"})
    # The pod no longer changes: the synthetic ADDED of the current state is all there is.
    events = list(watch.Watch().stream(core.list_namespaced_pod, NAMESPACE,
                                       field_selector=f"metadata.name={name}",
                                       timeout_seconds=2, _request_timeout=30))
    assert [e["type"] for e in events] == ["ADDED"], [e["type"] for e in events]
    assert events[0]["object"].status.phase == "Succeeded"


def test_bookmarks_only_when_asked(core):
    """allowWatchBookmarks must be accepted; a BOOKMARK (if any) carries only kind,
    apiVersion and metadata.resourceVersion; none arrive when not asked for."""
    sel = f"{RUN_LABEL}=bookmarks-{RUN_ID}"
    for allow in (True, False):
        resp = core.list_namespaced_pod(NAMESPACE, watch=True, label_selector=sel,
                                        allow_watch_bookmarks=allow, timeout_seconds=3,
                                        _preload_content=False, _request_timeout=30)
        try:
            assert resp.status == 200
            body = resp.read()
        finally:
            resp.release_conn()
        events = [json.loads(x) for x in body.split(b"\n") if x.strip()]
        for e in events:
            assert e["type"] == "BOOKMARK", f"nothing matches {sel}, got {e}"
            assert allow, f"BOOKMARK without allowWatchBookmarks: {e}"
            obj = e["object"]
            assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1", obj
            assert obj["metadata"]["resourceVersion"], obj
