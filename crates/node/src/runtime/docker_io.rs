//! The Docker runtime's streams: container logs (Docker's multiplexed log stream, stdout and
//! stderr interleaved as written), exec (a Docker exec bridged to an [`ExecHandle`]'s
//! channels), and image export (a throw-away container that never starts, exported as a
//! tar and unpacked).

use std::path::Path;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{
    CreateContainerOptions, LogsOptionsBuilder, RemoveContainerOptions, ResizeExecOptions,
};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use tokio::io::AsyncWriteExt;

use super::docker::DockerRuntime;
use super::{
    ExecDriver, ExecEnd, ExecHandle, ExecRequest, Input, LogRequest, OutputStream, RuntimeError,
    RuntimeResult,
};

/// The log stream of container `id`.
pub(super) fn logs(docker: &Docker, id: &str, r: &LogRequest) -> BoxStream<'static, std::io::Result<Bytes>> {
    let since = r.since.and_then(|s| i32::try_from(s).ok()).unwrap_or(0);
    let tail = r.tail.map_or_else(|| "all".to_string(), |n| n.to_string());
    let o = LogsOptionsBuilder::new()
        .follow(r.follow)
        .stdout(true)
        .stderr(true)
        .since(since)
        .timestamps(r.timestamps)
        .tail(&tail)
        .build();
    docker
        .logs(id, Some(o))
        .filter_map(|r| async move {
            match r {
                Ok(
                    LogOutput::StdOut { message }
                    | LogOutput::StdErr { message }
                    | LogOutput::Console { message },
                ) => Some(Ok(message)),
                Ok(LogOutput::StdIn { .. }) => None,
                Err(e) => Some(Err(std::io::Error::other(e))),
            }
        })
        .boxed()
}

/// Start `request` as a Docker exec in container `id` and bridge it to a handle.
pub(super) async fn exec(docker: Docker, id: String, request: ExecRequest) -> RuntimeResult<ExecHandle> {
    let create = CreateExecOptions {
        attach_stdin: Some(request.stdin),
        attach_stdout: Some(request.stdout),
        attach_stderr: Some(request.stderr),
        tty: Some(request.tty),
        cmd: Some(request.command.clone()),
        ..Default::default()
    };
    let exec_id = docker
        .create_exec(&id, create)
        .await
        .map_err(|e| RuntimeError::docker("create exec in", &id, e))?
        .id;
    let start = StartExecOptions {
        detach: false,
        tty: request.tty,
        output_capacity: None,
    };
    let attached = docker
        .start_exec(&exec_id, Some(start))
        .await
        .map_err(|e| RuntimeError::docker("start exec in", &id, e))?;
    let (handle, driver) = ExecHandle::channels();
    tokio::spawn(pump(docker, exec_id, request, attached, driver));
    Ok(handle)
}

/// Bridge a started Docker exec and the handle's channels until its output ends, then
/// send how it ended.
async fn pump(
    docker: Docker,
    exec_id: String,
    request: ExecRequest,
    attached: StartExecResults,
    mut d: ExecDriver,
) {
    let (mut output, mut stdin) = match attached {
        StartExecResults::Attached { output, input } => (output, Some(input)),
        StartExecResults::Detached => {
            let _ = d.end.send(ExecEnd::NotStarted("exec started detached".into()));
            return;
        }
    };
    if !request.stdin
        && let Some(mut i) = stdin.take()
    {
        let _ = i.shutdown().await;
    }
    let mut first = true;
    let mut start_error = None;
    let mut input_open = true;
    loop {
        tokio::select! {
            o = output.next() => match o {
                None => break,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "exec output ended with an error");
                    break;
                }
                Some(Ok(o)) => {
                    let (stream, msg) = match o {
                        LogOutput::StdOut { message } | LogOutput::Console { message } => (OutputStream::Stdout, message),
                        LogOutput::StdErr { message } => (OutputStream::Stderr, message),
                        LogOutput::StdIn { .. } => continue,
                    };
                    // Docker reports a process runc could not start as output.
                    if first && msg.starts_with(b"OCI runtime exec failed") {
                        start_error = Some(String::from_utf8_lossy(&msg).trim().to_string());
                        first = false;
                        continue;
                    }
                    first = false;
                    let wanted = match stream {
                        OutputStream::Stdout => request.stdout,
                        OutputStream::Stderr => request.stderr,
                    };
                    if wanted && d.output.send((stream, msg)).await.is_err() {
                        break;
                    }
                }
            },
            i = d.input.recv(), if input_open => match i {
                None => input_open = false,
                Some(Input::Stdin(b)) => {
                    if let Some(s) = stdin.as_mut()
                        && s.write_all(&b).await.is_err()
                    {
                        stdin = None;
                    }
                }
                Some(Input::Eof) => {
                    if let Some(mut s) = stdin.take() {
                        let _ = s.shutdown().await;
                    }
                }
                Some(Input::Resize(w, h)) => {
                    let o = ResizeExecOptions { h: i32::from(h), w: i32::from(w) };
                    let _ = docker.resize_exec(&exec_id, o).await;
                }
            },
        }
    }
    drop(d.output);
    let end = match start_error {
        Some(e) => ExecEnd::NotStarted(e),
        None => ExecEnd::Exited(
            docker
                .inspect_exec(&exec_id)
                .await
                .ok()
                .and_then(|i| i.exit_code)
                .unwrap_or(-1),
        ),
    };
    let _ = d.end.send(end);
}

/// Export a created (never started) container of `reference` and unpack it into `into`.
pub(super) async fn export_image(rt: &DockerRuntime, reference: &str, into: &Path) -> RuntimeResult<()> {
    let docker = rt.client();
    let body = bollard::models::ContainerCreateBody {
        image: Some(reference.to_string()),
        // Never run; an image without an entrypoint or command still needs one to be created.
        entrypoint: Some(vec!["/image-volume-export".into()]),
        cmd: Some(vec![]),
        labels: Some(std::collections::HashMap::from([(
            "io.argoexec-rs.image-volume-export".to_string(),
            reference.to_string(),
        )])),
        ..Default::default()
    };
    let id = docker
        .create_container(None::<CreateContainerOptions>, body)
        .await
        .map_err(|e| RuntimeError::docker("create an export container of", reference, e))?
        .id;
    let archive = into.with_extension("tar");
    let exported = async {
        let mut file = tokio::fs::File::create(&archive)
            .await
            .map_err(|e| RuntimeError::io("create", &archive, e))?;
        let mut stream = docker.export_container(&id);
        while let Some(chunk) = stream
            .try_next()
            .await
            .map_err(|e| RuntimeError::docker("export the image of", reference, e))?
        {
            file.write_all(&chunk)
                .await
                .map_err(|e| RuntimeError::io("write", &archive, e))?;
        }
        file.flush()
            .await
            .map_err(|e| RuntimeError::io("write", &archive, e))
    }
    .await;
    let opts = RemoveContainerOptions {
        force: true,
        v: true,
        ..Default::default()
    };
    let _ = docker.remove_container(&id, Some(opts)).await;
    let unpacked = match exported {
        Ok(()) => {
            let (a, d) = (archive.clone(), into.to_path_buf());
            tokio::task::spawn_blocking(move || unpack(&a, &d))
                .await
                .unwrap_or_else(|e| Err(RuntimeError::io("unpack", &archive, std::io::Error::other(e))))
        }
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&archive);
    unpacked
}

/// Unpack an exported tar, keeping modes (the executor must stay executable).
pub(crate) fn unpack(archive: &Path, into: &Path) -> RuntimeResult<()> {
    std::fs::create_dir_all(into).map_err(|e| RuntimeError::io("create", into, e))?;
    let file = std::fs::File::open(archive).map_err(|e| RuntimeError::io("open", archive, e))?;
    let mut tar = tar::Archive::new(std::io::BufReader::new(file));
    tar.set_preserve_permissions(true);
    // No setuid or setgid bits from an image: the files belong to the node's user.
    tar.set_mask(0o6000);
    tar.set_unpack_xattrs(false);
    tar.set_overwrite(true);
    tar.unpack(into)
        .map_err(|e| RuntimeError::io("unpack the image into", into, e))
}
