//! Container logs with `PodLogOptions` (k8s-wire-protocols §1.4, §2.4): the kubelet's
//! state validation messages, then the runtime's log stream (stdout and stderr interleaved
//! as written) with `follow`, `tailLines`, `sinceSeconds`/`sinceTime`, `timestamps` and
//! `limitBytes` applied. `previous` has nothing to show: local pods never restart.

use argoexec_node::runtime::{ContainerRuntime, LogRequest};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::http::Query;

/// The options of one log request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Stream until the container stops.
    pub follow: bool,
    /// The previous (terminated) instance.
    pub previous: bool,
    /// Only lines newer than this many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines since this RFC 3339 time (as a Unix time).
    pub since_time: Option<i64>,
    /// Prefix each line with its RFC 3339 nanosecond timestamp.
    pub timestamps: bool,
    /// Only the last N lines.
    pub tail_lines: Option<i64>,
    /// Stop after N bytes.
    pub limit_bytes: Option<i64>,
}

/// Why options were refused: 400 (undecodable) or 422 (invalid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionsError {
    /// 400 or 422.
    pub code: u16,
    /// What is wrong.
    pub message: String,
}

impl LogOptions {
    /// Decode and validate the query.
    ///
    /// # Errors
    /// Undecodable numbers (400), both since-params, negative or zero limits (422).
    pub fn parse(q: &Query) -> Result<Self, OptionsError> {
        let num = |k| {
            q.int(k).map_err(|k| OptionsError {
                code: 400,
                message: format!("invalid value for {k}: not an integer"),
            })
        };
        let invalid = |m: &str| OptionsError {
            code: 422,
            message: m.to_string(),
        };
        let tail_key = if q.get("tailLines").is_some() {
            "tailLines"
        } else {
            "tail"
        };
        let tail = match q.get(tail_key) {
            Some("all") | None => None,
            Some(_) => num(tail_key)?,
        };
        let since_time = match q.get("sinceTime") {
            None | Some("") => None,
            Some(t) => Some(
                t.parse::<k8s_openapi::jiff::Timestamp>()
                    .map_err(|_| OptionsError {
                        code: 400,
                        message: format!("invalid value for sinceTime: {t:?} is not RFC 3339"),
                    })?
                    .as_second(),
            ),
        };
        let o = Self {
            follow: q.flag("follow"),
            previous: q.flag("previous"),
            since_seconds: num("sinceSeconds")?,
            since_time,
            timestamps: q.flag("timestamps"),
            tail_lines: tail,
            limit_bytes: num("limitBytes")?,
        };
        if o.since_seconds.is_some() && o.since_time.is_some() {
            return Err(invalid(
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            ));
        }
        if o.since_seconds.is_some_and(|s| s < 1) {
            return Err(invalid("sinceSeconds: must be greater than 0"));
        }
        if o.tail_lines.is_some_and(|t| t < 0) {
            return Err(invalid("tailLines: must be greater than or equal to 0"));
        }
        if o.limit_bytes.is_some_and(|b| b < 1) {
            return Err(invalid("limitBytes: must be greater than 0"));
        }
        if let Some(s) = q.get("stream").filter(|s| *s != "All") {
            return Err(OptionsError {
                code: 400,
                message: format!("stream {s:?} requires the PodLogsQuerySplitStreams feature"),
            });
        }
        Ok(o)
    }
}

/// The kubelet's `validateContainerLogStatus`: `Ok(docker id)` when logs can be read,
/// else the exact 400 text.
///
/// # Errors
/// The message the kubelet would send.
pub fn validate(pod: &Value, container: &str, previous: bool) -> Result<String, String> {
    let p = pod["metadata"]["name"].as_str().unwrap_or("");
    let statuses = [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ];
    let cs = statuses
        .iter()
        .filter_map(|k| pod["status"][*k].as_array())
        .flatten()
        .find(|c| c["name"] == container);
    let Some(cs) = cs else {
        return Err(format!(
            "container \"{container}\" in pod \"{p}\" is not available"
        ));
    };
    if previous {
        return Err(format!(
            "previous terminated container \"{container}\" in pod \"{p}\" not found"
        ));
    }
    if let Some(w) = cs["state"]["waiting"].as_object() {
        let reason = w.get("reason").and_then(Value::as_str).unwrap_or("");
        return Err(format!(
            "container \"{container}\" in pod \"{p}\" is waiting to start: {reason}"
        ));
    }
    let id = cs["containerID"].as_str().unwrap_or("");
    match id.split_once("://") {
        Some((_, id)) if !id.is_empty() => Ok(id.to_string()),
        _ if cs["state"]["terminated"].is_object() => {
            Err(format!("container \"{container}\" in pod \"{p}\" is terminated"))
        }
        _ => Err(format!(
            "container \"{container}\" in pod \"{p}\" is not available"
        )),
    }
}

/// The log stream of container `id` under `opts`.
pub fn stream(
    runtime: &dyn ContainerRuntime,
    id: &str,
    opts: &LogOptions,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + Sync + use<> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let request = LogRequest {
        follow: opts.follow,
        since: opts.since_time.or(opts.since_seconds.map(|s| now - s)),
        timestamps: opts.timestamps,
        tail: opts.tail_lines,
    };
    limited(runtime.logs(id, request), opts.limit_bytes)
}

/// `s` cut after `limit` bytes (`limitBytes`), as a `Sync` stream (hyper needs `Sync`
/// bodies).
fn limited(
    s: futures::stream::BoxStream<'static, Result<Bytes, std::io::Error>>,
    limit: Option<i64>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + Sync + use<> {
    let mut left = limit.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
    // `limitBytes`: cut the chunk that crosses the limit, then end.
    let s = s.scan((), move |(), item| {
        let out = match (item, left.as_mut()) {
            (Ok(b), Some(n)) => {
                if *n == 0 {
                    return futures::future::ready(None);
                }
                let take = b.len().min(*n);
                *n -= take;
                Ok(b.slice(..take))
            }
            (other, _) => other,
        };
        futures::future::ready(Some(out))
    });
    // A sync wrapper: hyper needs `Sync` bodies and the runtime's stream is only `Send`.
    SyncStream(std::sync::Mutex::new(Box::pin(s)))
}

struct SyncStream<S>(std::sync::Mutex<std::pin::Pin<Box<S>>>);

impl<S: Stream> Stream for SyncStream<S> {
    type Item = S::Item;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        g.as_mut().poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Query {
        let req = http::Request::builder().uri(format!("/x?{s}")).body(()).unwrap();
        Query::from_uri(req.uri())
    }

    #[test]
    fn options_decode_and_validate() {
        let o = LogOptions::parse(&q("follow=true&tailLines=3&timestamps=1&limitBytes=10")).unwrap();
        assert!(o.follow && o.timestamps);
        assert_eq!((o.tail_lines, o.limit_bytes), (Some(3), Some(10)));
        assert_eq!(
            LogOptions::parse(&q("sinceSeconds=1&sinceTime=2026-01-01T00:00:00Z"))
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(LogOptions::parse(&q("limitBytes=0")).unwrap_err().code, 422);
        assert_eq!(LogOptions::parse(&q("tailLines=x")).unwrap_err().code, 400);
        assert!(!LogOptions::parse(&q("follow=false")).unwrap().follow);
    }

    /// `limitBytes` cuts the chunk that crosses the limit and ends the stream there, over
    /// any runtime's stream.
    #[tokio::test]
    async fn limit_bytes_cuts_the_crossing_chunk_and_ends() {
        let chunks = ["abc", "defg", "hij"].map(|c| Ok(Bytes::from_static(c.as_bytes())));
        let s = futures::stream::iter(chunks).boxed();
        let out: Vec<Bytes> = limited(s, Some(5)).map(Result::unwrap).collect().await;
        assert_eq!(out, [Bytes::from_static(b"abc"), Bytes::from_static(b"de")]);
        let s = futures::stream::iter([Ok(Bytes::from_static(b"all"))]).boxed();
        assert_eq!(limited(s, None).count().await, 1);
    }

    #[test]
    fn validation_messages_match_the_kubelet() {
        let pod = json!({"metadata": {"name": "p"}, "status": {"containerStatuses": [
            {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}},
            {"name": "done", "state": {"terminated": {"exitCode": 0}}, "containerID": "docker://abc"},
        ]}});
        assert_eq!(
            validate(&pod, "main", false).unwrap_err(),
            "container \"main\" in pod \"p\" is waiting to start: ContainerCreating"
        );
        assert_eq!(validate(&pod, "done", false).unwrap(), "abc");
        assert_eq!(
            validate(&pod, "done", true).unwrap_err(),
            "previous terminated container \"done\" in pod \"p\" not found"
        );
        assert_eq!(
            validate(&pod, "x", false).unwrap_err(),
            "container \"x\" in pod \"p\" is not available"
        );
    }
}
