//! Exec on containerd: a process added to the container's task (`Exec`, then `Start`),
//! with FIFOs for its stdio in the container's directory, the container's user, env and
//! working directory, and a TTY when asked. Its end is its `Wait`; then the process is
//! deleted (the shim closes its FIFO ends) and what is left in the FIFOs is read before
//! the output ends.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use containerd_client::services::v1::{
    CloseIoRequest, DeleteProcessRequest, ExecProcessRequest, ResizePtyRequest, StartRequest, WaitRequest,
};
use prost_types::Any;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use super::Ctrd;
use super::tasks::make_fifo;
use crate::runtime::{ExecEnd, ExecHandle, ExecRequest, Input, OutputStream, RuntimeError, RuntimeResult};

/// The type of an OCI process in an `Any`.
const PROCESS_TYPE: &str = "types.containerd.io/opencontainers/runtime-spec/1/Process";

/// The stdio FIFOs of one exec.
struct Stdio {
    stdin: Option<PathBuf>,
    stdout: Option<PathBuf>,
    stderr: Option<PathBuf>,
}

fn path_string(p: &Option<PathBuf>) -> String {
    p.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
}

/// Start `request` in container `id` and bridge it to a handle.
pub(super) async fn start(
    c: Ctrd,
    id: String,
    spec: &serde_json::Value,
    dir: &Path,
    request: ExecRequest,
) -> RuntimeResult<ExecHandle> {
    let exec_id = format!("exec{}", &crate::node::new_uid().replace('-', "")[..12]);
    let fifo = |name: &str, wanted: bool| wanted.then(|| dir.join(format!("{exec_id}-{name}")));
    let io = Stdio {
        stdin: fifo("stdin", request.stdin),
        // The shim wants both outputs (one with a TTY); a stream not asked for is read and
        // dropped, as Docker's exec does.
        stdout: fifo("stdout", true),
        stderr: fifo("stderr", !request.tty),
    };
    for p in [&io.stdin, &io.stdout, &io.stderr].into_iter().flatten() {
        make_fifo(p)?;
    }
    let open_rx = |p: &Option<PathBuf>| -> RuntimeResult<Option<pipe::Receiver>> {
        p.as_ref()
            .map(|p| {
                pipe::OpenOptions::new()
                    .read_write(true)
                    .open_receiver(p)
                    .map_err(|e| RuntimeError::io("open the FIFO", p, e))
            })
            .transpose()
    };
    let stdout = open_rx(&io.stdout)?;
    let stderr = open_rx(&io.stderr)?;
    let stdin = io
        .stdin
        .as_ref()
        .map(|p| {
            pipe::OpenOptions::new()
                .read_write(true)
                .open_sender(p)
                .map_err(|e| RuntimeError::io("open the FIFO", p, e))
        })
        .transpose()?;
    let process = super::spec::exec_process(spec, &request.command, request.tty);
    let req = ExecProcessRequest {
        container_id: id.clone(),
        stdin: path_string(&io.stdin),
        stdout: path_string(&io.stdout),
        stderr: path_string(&io.stderr),
        terminal: request.tty,
        spec: Some(Any {
            type_url: PROCESS_TYPE.into(),
            value: serde_json::to_vec(&process).unwrap_or_default(),
        }),
        exec_id: exec_id.clone(),
    };
    let cleanup = |io: &Stdio| {
        for p in [&io.stdin, &io.stdout, &io.stderr].into_iter().flatten() {
            let _ = std::fs::remove_file(p);
        }
    };
    if let Err(s) = c.tasks().exec(c.req(req)).await {
        cleanup(&io);
        if !container_ended(&c, &id).await {
            return Err(RuntimeError::containerd("exec in", &id, s));
        }
        // The container ended as the exec was added (its shim closing: `ttrpc: closed`).
        return Ok(ExecHandle::finished(ExecEnd::Exited(KILLED_WITH_CONTAINER)));
    }
    let started = c
        .tasks()
        .start(c.req(StartRequest {
            container_id: id.clone(),
            exec_id: exec_id.clone(),
        }))
        .await;
    if let Err(s) = started {
        let end = if container_ended(&c, &id).await {
            // The container's first process ended while the exec started (typically the
            // exec's own `kill 1`): runc then reports the exec as not started, though it may
            // have run. Docker reports such an exec as killed with its container; so does
            // the node.
            ExecEnd::Exited(KILLED_WITH_CONTAINER)
        } else {
            ExecEnd::NotStarted(s.message().to_string())
        };
        delete_process(&c, &id, &exec_id).await;
        cleanup(&io);
        return Ok(ExecHandle::finished(end));
    }
    let (handle, d) = ExecHandle::channels();
    tokio::spawn(async move {
        let (out_done_tx, out_done) = tokio::sync::watch::channel(false);
        let wanted = [request.stdout || request.tty, request.stderr];
        let copies = [(stdout, OutputStream::Stdout), (stderr, OutputStream::Stderr)]
            .into_iter()
            .zip(wanted)
            .filter_map(|((rx, s), wanted)| {
                let out = wanted.then(|| d.output.clone());
                rx.map(|rx| tokio::spawn(copy(rx, s, out, out_done.clone())))
            })
            .collect::<Vec<_>>();
        drop(d.output);
        let inputs = tokio::spawn(feed(c.clone(), id.clone(), exec_id.clone(), stdin, d.input));
        let waited = c
            .tasks()
            .wait(c.req(WaitRequest {
                container_id: id.clone(),
                exec_id: exec_id.clone(),
            }))
            .await;
        delete_process(&c, &id, &exec_id).await;
        let _ = out_done_tx.send(true);
        for t in copies {
            let _ = t.await;
        }
        inputs.abort();
        cleanup(&io);
        let end = match waited {
            Ok(r) => ExecEnd::Exited(i64::from(r.into_inner().exit_status)),
            // The shim went away with the container (`ttrpc: closed`): killed with it.
            Err(_) if container_ended(&c, &id).await => ExecEnd::Exited(KILLED_WITH_CONTAINER),
            Err(s) => ExecEnd::NotStarted(s.message().to_string()),
        };
        let _ = d.end.send(end);
    });
    Ok(handle)
}

/// The exit code of a process killed with its container (SIGKILL).
const KILLED_WITH_CONTAINER: i64 = 128 + 9;

/// How long after a failed exec start the container's end is looked for.
const END_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether the task of container `id` is gone or ends within [`END_WINDOW`] (its `Wait`).
async fn container_ended(c: &Ctrd, id: &str) -> bool {
    let req = WaitRequest {
        container_id: id.to_string(),
        exec_id: String::new(),
    };
    let mut tasks = c.tasks();
    match tokio::time::timeout(END_WINDOW, tasks.wait(c.req(req))).await {
        Ok(Ok(_)) => true,
        Ok(Err(s)) => s.code() == containerd_client::tonic::Code::NotFound,
        Err(_) => false,
    }
}

async fn delete_process(c: &Ctrd, id: &str, exec_id: &str) {
    let req = DeleteProcessRequest {
        container_id: id.to_string(),
        exec_id: exec_id.to_string(),
    };
    if let Err(s) = c.tasks().delete_process(c.req(req)).await {
        tracing::debug!(container = id, exec_id, error = %s, "delete exec process");
    }
}

/// Copy one output FIFO to the handle (`None`: read and drop) until the process is deleted,
/// then drain it.
async fn copy(
    mut rx: pipe::Receiver,
    stream: OutputStream,
    out: Option<mpsc::Sender<(OutputStream, Bytes)>>,
    mut done: tokio::sync::watch::Receiver<bool>,
) {
    let send = |data: &[u8]| {
        let out = out.clone();
        let data = Bytes::copy_from_slice(data);
        async move {
            match out {
                Some(o) => o.send((stream, data)).await.is_ok(),
                None => true,
            }
        }
    };
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        tokio::select! {
            r = rx.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if !send(&buf[..n]).await {
                        return;
                    }
                }
            },
            _ = done.changed() => break,
        }
    }
    while let Some(n) = super::logio::drain_once(&rx, &mut buf) {
        if !send(&buf[..n]).await {
            return;
        }
    }
}

/// Feed stdin, its end and resizes to the process.
async fn feed(
    c: Ctrd,
    id: String,
    exec_id: String,
    mut stdin: Option<pipe::Sender>,
    mut input: mpsc::Receiver<Input>,
) {
    while let Some(i) = input.recv().await {
        match i {
            Input::Stdin(b) => {
                if let Some(s) = stdin.as_mut()
                    && s.write_all(&b).await.is_err()
                {
                    stdin = None;
                }
            }
            Input::Eof => {
                stdin = None;
                let req = CloseIoRequest {
                    container_id: id.clone(),
                    exec_id: exec_id.clone(),
                    stdin: true,
                };
                let _ = c.tasks().close_io(c.req(req)).await;
            }
            Input::Resize(w, h) => {
                let req = ResizePtyRequest {
                    container_id: id.clone(),
                    exec_id: exec_id.clone(),
                    width: u32::from(w),
                    height: u32::from(h),
                };
                let _ = c.tasks().resize_pty(c.req(req)).await;
            }
        }
    }
}
