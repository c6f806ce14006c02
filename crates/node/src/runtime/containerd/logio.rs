//! Container output on containerd: the shim writes a task's stdout and stderr into FIFOs the
//! node makes; the node copies them into one log file per container, each line as the CRI
//! writes it (`<RFC 3339 nano time> <stdout|stderr> <F|P> <text>`: `P` for a part of a
//! longer line), and serves it back with `follow`, `since`, `tail` and `timestamps`.
//!
//! The node opens each FIFO twice: a reader, and a writer of its own that keeps the FIFO
//! open until the task exists ([`Copier::created`]). From then on only the shim writes, so
//! the reader's end of file says the shim has copied all the task's output: its copy ends
//! when the last holder of the container's stdout exits, and at the latest when the task
//! is deleted. A task's end is therefore told without waiting for its deletion
//! ([`Copier::close_when`]): the log is complete as soon as both FIFOs ended, and the
//! deletion, which can take a runc call's time, runs meanwhile. A task that could not be
//! created is closed with [`Copier::close_after`]: what is left is read, and followers are
//! told the log is complete.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;

use crate::runtime::{LogRequest, RuntimeError, RuntimeResult};

/// One container's log file and who follows it.
#[derive(Debug)]
pub(crate) struct LogFile {
    path: PathBuf,
    file: Mutex<std::fs::File>,
    /// `(bytes written, a task still writes)`.
    state: watch::Sender<(u64, bool)>,
}

impl LogFile {
    /// Create (or reopen for appending) the log at `path`.
    pub fn open(path: &Path) -> RuntimeResult<Arc<Self>> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| RuntimeError::io("open the log", path, e))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Arc::new(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            state: watch::Sender::new((len, false)),
        }))
    }

    /// Start copying a task's output FIFOs into the log; returns the copier, to be told
    /// once the task exists ([`Copier::created`]).
    pub fn attach(self: &Arc<Self>, stdout: &Path, stderr: Option<&Path>) -> RuntimeResult<Copier> {
        self.state.send_modify(|s| s.1 = true);
        let mut tasks = Vec::new();
        let mut keep = Vec::new();
        let (stop, _) = watch::channel(false);
        for (path, stream) in [(Some(stdout), "stdout"), (stderr, "stderr")] {
            let Some(path) = path else { continue };
            let rx = pipe::OpenOptions::new()
                .open_receiver(path)
                .map_err(|e| RuntimeError::io("open the output FIFO", path, e))?;
            // Opened after the reader, so it does not wait; until the shim has its own end,
            // this one keeps the reader from seeing an end of file.
            let tx = pipe::OpenOptions::new()
                .open_sender(path)
                .map_err(|e| RuntimeError::io("open the output FIFO", path, e))?;
            keep.push(tx);
            tasks.push(tokio::spawn(copy(rx, stream, self.clone(), stop.subscribe())));
        }
        Ok(Copier {
            log: self.clone(),
            stop,
            tasks,
            keep,
        })
    }

    /// Append one chunk of `stream` as CRI lines.
    fn write(&self, stream: &str, chunk: &[u8]) {
        let now = crate::status::now().0;
        let mut out = Vec::with_capacity(chunk.len() + 48);
        let mut rest = chunk;
        while !rest.is_empty() {
            let (line, tag, next) = match rest.iter().position(|b| *b == b'\n') {
                Some(i) => (&rest[..i], "F", &rest[i + 1..]),
                None => (rest, "P", &rest[rest.len()..]),
            };
            let _ = write!(out, "{now:.9} {stream} {tag} ");
            out.extend_from_slice(line);
            out.push(b'\n');
            rest = next;
        }
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.write_all(&out) {
            tracing::warn!(log = %self.path.display(), error = %e, "cannot write a container log");
            return;
        }
        drop(f);
        self.state.send_modify(|s| s.0 += out.len() as u64);
    }

    /// The log under `request`, following it while a task writes when asked.
    pub fn stream(self: &Arc<Self>, request: LogRequest) -> BoxStream<'static, std::io::Result<Bytes>> {
        let log = self.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let mut state = log.state.subscribe();
            let mut offset = 0u64;
            let mut first = true;
            loop {
                let (written, live) = *state.borrow_and_update();
                let path = log.path.clone();
                let req = request.clone();
                let read = tokio::task::spawn_blocking(move || read_from(&path, offset, &req, first)).await;
                let Ok(Ok((chunk, end))) = read else { return };
                first = false;
                offset = end;
                if !chunk.is_empty() && tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return;
                }
                if !request.follow || (!live && offset >= written) {
                    return;
                }
                if offset >= written && state.changed().await.is_err() {
                    return;
                }
            }
        });
        Box::pin(tokio_stream(rx))
    }
}

fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
) -> impl futures::Stream<Item = std::io::Result<Bytes>> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Read the log from byte `offset` to its last full record: the texts (with `tail` and
/// `since` applied on the first read), and the offset reached.
fn read_from(path: &Path, offset: u64, r: &LogRequest, first: bool) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::Seek;
    let mut f = std::fs::File::open(path)?;
    f.seek(std::io::SeekFrom::Start(offset))?;
    let mut reader = std::io::BufReader::new(f);
    let mut records: Vec<(Timestamp, bool, Vec<u8>)> = Vec::new();
    let mut end = offset;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        end += n as u64;
        if let Some(rec) = parse(&line[..n - 1]) {
            records.push(rec);
        }
    }
    if let Some(since) = r.since {
        records.retain(|(t, _, _)| t.as_second() >= since);
    }
    if first && let Some(tail) = r.tail {
        let full: Vec<usize> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.1)
            .map(|(i, _)| i)
            .collect();
        let keep = usize::try_from(tail).unwrap_or(0);
        if full.len() > keep {
            let cut = if keep == 0 {
                records.len()
            } else {
                full[full.len() - keep - 1] + 1
            };
            records.drain(..cut);
        }
    }
    let mut out = Vec::new();
    let mut at_line_start = true;
    for (t, full, text) in records {
        if r.timestamps && at_line_start {
            let _ = write!(out, "{t:.9} ");
        }
        out.extend_from_slice(&text);
        if full {
            out.push(b'\n');
        }
        at_line_start = full;
    }
    Ok((out, end))
}

/// One CRI record: time, whether it ends a line, text.
fn parse(line: &[u8]) -> Option<(Timestamp, bool, Vec<u8>)> {
    let mut parts = line.splitn(4, |b| *b == b' ');
    let time = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let _stream = parts.next()?;
    let full = parts.next()? == b"F";
    Some((time, full, parts.next().unwrap_or_default().to_vec()))
}

/// Copies a task's FIFOs into its log until closed.
#[derive(Debug)]
pub(crate) struct Copier {
    log: Arc<LogFile>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The node's own write ends, held until the task exists.
    keep: Vec<pipe::Sender>,
}

impl Copier {
    /// The task exists: the shim opened its write ends while creating it, so the node's
    /// are let go and the shim's closing them ends the copy.
    pub fn created(&mut self) {
        self.keep.clear();
    }

    /// The task exited: the log is complete once every FIFO ended (the shim copied all
    /// the output and closed its ends), or once `deleted` resolves (the task is gone, and
    /// nothing more can come), whichever is first. Then followers are told.
    pub async fn close_when(mut self, deleted: impl std::future::Future<Output = ()>) {
        self.keep.clear();
        let tasks = std::mem::take(&mut self.tasks);
        let all = futures::future::join_all(tasks);
        tokio::pin!(all);
        tokio::select! {
            _ = &mut all => {}
            () = deleted => {
                let _ = self.stop.send(true);
                all.await;
            }
        }
        self.log.state.send_modify(|s| s.1 = false);
    }

    /// No task will write (it could not be created, or it is deleted): read what is left,
    /// then end the log.
    pub async fn close_after(self) {
        self.close_when(std::future::ready(())).await;
    }
}

/// Copy one FIFO into the log until told to stop, then drain it.
async fn copy(
    mut rx: pipe::Receiver,
    stream: &'static str,
    log: Arc<LogFile>,
    mut stop: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        tokio::select! {
            r = rx.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => log.write(stream, &buf[..n]),
            },
            _ = stop.changed() => break,
        }
    }
    // Drain what the shim wrote before it closed its end.
    while let Some(n) = drain_once(&rx, &mut buf) {
        log.write(stream, &buf[..n]);
    }
}

/// One read of what a FIFO holds now, straight from the descriptor (non-blocking): tokio's
/// `try_read` answers from its cached readiness and would report an empty FIFO when the
/// data arrived after the last wake-up. `None` when it is empty or closed.
pub(crate) fn drain_once(rx: &pipe::Receiver, buf: &mut [u8]) -> Option<usize> {
    match rustix::io::read(rx, buf) {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_parts_tail_and_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let log = LogFile::open(&dir.path().join("c.log")).unwrap();
        log.write("stdout", b"one\ntw");
        log.write("stderr", b"o\nthree\n");
        let all = |r: LogRequest| {
            let log = log.clone();
            async move {
                use futures::StreamExt;
                let chunks: Vec<_> = log.stream(r).collect().await;
                chunks
                    .into_iter()
                    .map(Result::unwrap)
                    .flat_map(|b| b.to_vec())
                    .collect::<Vec<u8>>()
            }
        };
        assert_eq!(all(LogRequest::default()).await, b"one\ntwo\nthree\n");
        let tail = LogRequest {
            tail: Some(2),
            ..Default::default()
        };
        assert_eq!(all(tail).await, b"two\nthree\n");
        let ts = LogRequest {
            timestamps: true,
            ..Default::default()
        };
        let text = String::from_utf8(all(ts).await).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().all(|l| l.contains("Z ")), "{text}");
    }
}
