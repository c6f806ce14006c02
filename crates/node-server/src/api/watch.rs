//! Watches (k8s-wire-protocols §2.3): `200` with newline-delimited JSON events, flushed one
//! by one. No `resourceVersion` (or `"0"`) starts with synthetic `ADDED` events for the
//! current objects; a given version replays the history after it, or sends one `ERROR`
//! event with the `410 Expired` Status and ends when the version is older than the
//! history. Selectors turn changes into `ADDED`/`DELETED` when an object starts or stops
//! matching. Bookmarks only when asked; the stream ends cleanly at `timeoutSeconds`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::{Api, table};
use crate::http::{Query, Resp, streaming};
use crate::registry::Kind;
use crate::selector::Selector;
use crate::status::ApiError;
use crate::store::WatchStart;

/// Default watch length when `timeoutSeconds` is not given (the server's 30 min minimum).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What one watch follows.
pub(super) struct WatchOf {
    /// The type.
    pub kind: Kind,
    /// The version the client asked for (objects are shown at it).
    pub version: String,
    /// The namespace, if the watch is limited to one.
    pub ns: Option<String>,
    /// Label selector.
    pub labels: Selector,
    /// Field selector.
    pub fields: Selector,
    /// Events carry `Table`s.
    pub table: bool,
    /// Made by a pod, so the injected watch faults apply.
    pub from_pod: bool,
}

/// Start a watch.
///
/// # Errors
/// 400 for an unparsable `resourceVersion`.
pub(super) fn watch(api: &Arc<Api>, w: WatchOf, q: &Query) -> Result<Resp, ApiError> {
    let WatchOf {
        kind,
        version,
        ns,
        labels,
        fields,
        table,
        from_pod,
    } = w;
    let rv = match q.get("resourceVersion") {
        None | Some("" | "0") => None,
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v}")))?,
        ),
    };
    let mut timeout = match q.int("timeoutSeconds") {
        Ok(Some(s)) if s > 0 => Duration::from_secs(s as u64),
        Ok(_) => DEFAULT_TIMEOUT,
        Err(k) => return Err(ApiError::bad_request(format!("invalid {k}"))),
    };
    let mut cut_events = None;
    let mut cut_by_time = false;
    if from_pod {
        let f = &api.faults;
        if let Some(cut) = f.spec.watch_cut_after
            && cut < timeout
        {
            timeout = cut;
            cut_by_time = true;
        }
        cut_events = f.spec.watch_cut_events;
        if let Some(v) = rv
            && f.expire_watch()
        {
            tracing::warn!(
                resource_version = v,
                "fault: the watch's resourceVersion is answered as expired"
            );
            let e = ApiError::expired(v, v + 1);
            let body = futures::stream::iter([Ok(event_line("ERROR", &e.body()))]);
            return Ok(streaming(200, "application/json", body));
        }
    }
    let bookmarks = q.flag("allowWatchBookmarks");
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let filter = Filter { ns, labels, fields };
    match api.store.watch(&kind, rv) {
        Err((requested, oldest)) => {
            let e = ApiError::expired(requested, oldest);
            let line = event_line("ERROR", &e.body());
            let _ = tx.try_send(Ok(line));
        }
        Ok((start, live)) => {
            let opts = Opts {
                version,
                timeout,
                bookmarks,
                table,
                cut_events,
                faults: (cut_events.is_some() || cut_by_time).then(|| api.faults.clone()),
                cut_by_time,
            };
            tokio::spawn(run(kind, start, live, filter, tx, opts));
        }
    }
    let body = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Ok(streaming(200, "application/json", body))
}

struct Filter {
    ns: Option<String>,
    labels: Selector,
    fields: Selector,
}

impl Filter {
    fn matches(&self, o: &Value) -> bool {
        self.ns
            .as_deref()
            .is_none_or(|ns| o["metadata"]["namespace"] == ns)
            && self.labels.matches(o)
            && self.fields.matches(o)
    }
}

fn key(o: &Value) -> (String, String) {
    (
        o["metadata"]["namespace"].as_str().unwrap_or("").into(),
        o["metadata"]["name"].as_str().unwrap_or("").into(),
    )
}

fn event_line(etype: &str, object: &Value) -> Bytes {
    let mut b = serde_json::to_vec(&json!({"type": etype, "object": object})).unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

/// How one watch runs.
struct Opts {
    /// The version objects are shown at.
    version: String,
    timeout: Duration,
    bookmarks: bool,
    table: bool,
    /// End the stream after this many events (a fault).
    cut_events: Option<u64>,
    /// The faults, when this watch is cut by one (counted there).
    faults: Option<Arc<crate::faults::Faults>>,
    /// The timeout is a `watch-cut-secs` fault's.
    cut_by_time: bool,
}

async fn run(
    kind: Kind,
    start: WatchStart,
    mut live: broadcast::Receiver<Arc<crate::store::Event>>,
    filter: Filter,
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    opts: Opts,
) {
    let Opts {
        version,
        timeout,
        bookmarks,
        table: as_table,
        cut_events,
        faults,
        cut_by_time,
    } = opts;
    let mut sent: u64 = 0;
    let cut = |sent: u64| {
        let c = cut_events.is_some_and(|n| sent >= n);
        if c && let Some(f) = &faults {
            tracing::warn!(events = sent, "fault: the watch is cut");
            f.watch_cut();
        }
        c
    };
    let render = |o: &Value| {
        let o = super::objects::present(&kind, &version, o);
        if as_table {
            table::table(&kind, &[o], None)
        } else {
            o
        }
    };
    let gr = kind.key();
    let mut matched: HashSet<(String, String)> = HashSet::new();
    let mut last_rv;
    let backlog = match start {
        WatchStart::Current(items, rv) => {
            last_rv = rv;
            for o in items.iter().filter(|o| filter.matches(o)) {
                matched.insert(key(o));
                if tx.send(Ok(event_line("ADDED", &render(o)))).await.is_err() {
                    return;
                }
                sent += 1;
                if cut(sent) {
                    return;
                }
            }
            Vec::new()
        }
        WatchStart::Replay(events) => {
            last_rv = events.first().map(|e| e.rv.saturating_sub(1)).unwrap_or(0);
            events
        }
    };
    // Objects seen before the replay window count as matching when they still match.
    let deadline = tokio::time::Instant::now() + timeout;
    let bookmark_at = deadline
        .checked_sub(Duration::from_secs(2))
        .filter(|_| timeout > Duration::from_secs(3));
    let mut pending = backlog.into_iter();
    let mut sent_bookmark = false;
    loop {
        let ev = if let Some(e) = pending.next() {
            e
        } else {
            let bm = async {
                match bookmark_at {
                    Some(t) if bookmarks && !sent_bookmark => tokio::time::sleep_until(t).await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    if cut_by_time && let Some(f) = &faults {
                        tracing::warn!(?timeout, "fault: the watch is cut");
                        f.watch_cut();
                    }
                    return;
                }
                () = tx.closed() => return,
                () = bm => {
                    sent_bookmark = true;
                    let o = json!({"kind": kind.resource.kind, "apiVersion": kind.api_version(&version), "metadata": {"resourceVersion": last_rv.to_string()}});
                    if tx.send(Ok(event_line("BOOKMARK", &o))).await.is_err() { return; }
                    continue;
                }
                r = live.recv() => match r {
                    Ok(e) => e,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let e = ApiError::expired(last_rv, last_rv + 1);
                        let _ = tx.send(Ok(event_line("ERROR", &e.body()))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        };
        if ev.kind != gr || ev.rv <= last_rv {
            continue;
        }
        last_rv = ev.rv;
        let k = key(&ev.object);
        let now = filter.matches(&ev.object) && ev.etype != crate::store::EventType::Deleted;
        let before = matched.contains(&k)
            || (ev.etype != crate::store::EventType::Added && filter.matches(&ev.object));
        let etype = match (before, now) {
            (false, true) => "ADDED",
            (true, true) => ev.etype.as_str(),
            (true, false) => "DELETED",
            (false, false) => continue,
        };
        if now {
            matched.insert(k);
        } else {
            matched.remove(&k);
        }
        let etype = if ev.etype == crate::store::EventType::Added {
            "ADDED"
        } else {
            etype
        };
        if tx.send(Ok(event_line(etype, &render(&ev.object)))).await.is_err() {
            return;
        }
        sent += 1;
        if cut(sent) {
            return;
        }
    }
}
