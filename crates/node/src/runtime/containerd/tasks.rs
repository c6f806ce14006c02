//! The tasks of the node's containers on containerd: a task made with its container (or
//! anew for a later start; FIFOs for its output, the log copier attached first), its wait
//! (exit status, exit time, the cgroup's OOM verdict) with its deletion running on in the
//! background, TERM → grace → KILL, and the removal of a container with its task, snapshot,
//! FIFOs and log.

use std::path::Path;
use std::time::Duration;

use containerd_client::services::v1::{
    CreateTaskRequest, DeleteContainerRequest, DeleteTaskRequest, KillRequest, StartRequest, WaitRequest,
};
use containerd_client::tonic::{Code, Status};
use k8s_openapi::jiff::Timestamp;

use futures::FutureExt;

use super::{ContainerdRuntime, Ctrd, Entry, TaskState, not_ours};
use crate::runtime::{Exit, RuntimeError, RuntimeResult};

impl ContainerdRuntime {
    /// Create a new task of container `id` (runc's create: the process exists, stopped
    /// before its program), with its output FIFOs and their copier; sets the task's PID.
    pub(super) async fn create_task(&self, id: &str, e: &Entry, t: &mut TaskState) -> RuntimeResult<()> {
        // A deletion of the last task still under way must end first: one task per container.
        if let Some(d) = t.deleting.take() {
            d.await;
        }
        t.starts += 1;
        let stdout = e.dir.join(format!("{}-stdout", t.starts));
        let stderr = (!e.tty).then(|| e.dir.join(format!("{}-stderr", t.starts)));
        for p in std::iter::once(&stdout).chain(stderr.as_ref()) {
            make_fifo(p)?;
        }
        let mut copier = e.log.attach(&stdout, stderr.as_deref())?;
        let req = CreateTaskRequest {
            container_id: id.to_string(),
            rootfs: e.rootfs.clone(),
            stdout: stdout.display().to_string(),
            stderr: stderr
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            terminal: e.tty,
            ..Default::default()
        };
        match self.c.tasks().create(self.c.req(req)).await {
            Ok(r) => {
                copier.created();
                t.copier = Some(copier);
                t.created = true;
                *e.pid.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.into_inner().pid);
                Ok(())
            }
            Err(s) => {
                copier.close_after().await;
                Err(RuntimeError::containerd("create the task of", id, s))
            }
        }
    }

    /// Start container `id`: its task made when the container was ([`Self::create_task`]),
    /// or a new one (a start after the first, or a first whose early create failed: its
    /// error is then this start's).
    pub(super) async fn start_inner(&self, id: &str) -> RuntimeResult<()> {
        let e = self.entry(id).ok_or_else(|| not_ours(id))?;
        let mut t = e.task.lock().await;
        if !t.created {
            self.create_task(id, &e, &mut t).await?;
        }
        t.created = false;
        let started = self
            .c
            .tasks()
            .start(self.c.req(StartRequest {
                container_id: id.to_string(),
                exec_id: String::new(),
            }))
            .await;
        if let Err(s) = started {
            self.delete_task(id).await;
            if let Some(c) = t.copier.take() {
                c.close_after().await;
            }
            return Err(RuntimeError::containerd("start the task of", id, s));
        }
        t.started_at = Some(crate::status::now().0);
        Ok(())
    }

    pub(super) async fn delete_task(&self, id: &str) -> Option<u32> {
        delete(&self.c, id).await
    }

    pub(super) async fn kill(&self, id: &str, signal: u32, all: bool) -> Result<(), Status> {
        let req = KillRequest {
            container_id: id.to_string(),
            exec_id: String::new(),
            signal,
            all,
        };
        self.c.tasks().kill(self.c.req(req)).await.map(|_| ())
    }

    /// Wait for the task of `id` to exit, at most `limit`: whether it did.
    pub(super) async fn exited_within(&self, id: &str, limit: Duration) -> bool {
        let req = WaitRequest {
            container_id: id.to_string(),
            exec_id: String::new(),
        };
        let mut tasks = self.c.tasks();
        let wait = tasks.wait(self.c.req(req));
        match tokio::time::timeout(limit, wait).await {
            Ok(Ok(_)) => true,
            Ok(Err(s)) => s.code() == Code::NotFound,
            Err(_) => false,
        }
    }

    /// Wait for the task's exit, read the OOM verdict, start the task's deletion (it runs on
    /// in the background) and return once the log is complete.
    pub(super) async fn wait_inner(&self, id: &str) -> Exit {
        let Some(e) = self.entry(id) else {
            return Exit {
                code: -1,
                ..Default::default()
            };
        };
        let req = WaitRequest {
            container_id: id.to_string(),
            exec_id: String::new(),
        };
        let waited = self.c.tasks().wait(self.c.req(req)).await;
        let mut t = e.task.lock().await;
        let (code, finished_at) = match waited {
            Ok(r) => {
                let r = r.into_inner();
                let at = r
                    .exited_at
                    .and_then(|t| Timestamp::new(t.seconds, t.nanos).ok())
                    .filter(|t| t.as_second() > 0);
                (i64::from(r.exit_status), at)
            }
            // No task: it ended and was deleted already (a second wait).
            Err(s) if s.code() == Code::NotFound => {
                return t.last_exit.clone().unwrap_or(Exit {
                    code: -1,
                    ..Default::default()
                });
            }
            Err(s) => {
                tracing::warn!(container = id, error = %s, "waiting for a task failed");
                (-1, None)
            }
        };
        let oom_killed = oom_kills(id) > 0;
        *e.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
        // The deletion (the shim's cleanup, a runc call) runs on; the log is complete once
        // the shim has closed the FIFOs, which it does when the output ends, or at the
        // latest when the task is deleted ([`logio`]).
        let c = self.c.clone();
        let task_id = id.to_string();
        let deleting = tokio::spawn(async move { delete(&c, &task_id).await })
            .map(|_| ())
            .boxed()
            .shared();
        if let Some(copier) = t.copier.take() {
            copier.close_when(deleting.clone()).await;
        }
        t.deleting = Some(deleting);
        let exit = Exit {
            code,
            oom_killed,
            memory_limited: e.memory_limited,
            started_at: t.started_at,
            finished_at,
            image_id: e.image_id.clone(),
        };
        t.last_exit = Some(exit.clone());
        exit
    }

    pub(super) async fn remove_one(&self, id: &str) {
        if self.release_ipc(id) {
            return;
        }
        let entry = self.entries.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        let deleting = match &entry {
            Some(e) => e.task.lock().await.deleting.take(),
            None => None,
        };
        match deleting {
            // Exited and waited for: its deletion is under way.
            Some(d) => d.await,
            None => {
                let _ = self.kill(id, 9, true).await;
                self.exited_within(id, Duration::from_secs(10)).await;
                self.delete_task(id).await;
            }
        }
        if let Some(e) = &entry
            && let Some(c) = e.task.lock().await.copier.take()
        {
            c.close_after().await;
        }
        let r = self
            .c
            .containers()
            .delete(self.c.req(DeleteContainerRequest { id: id.to_string() }))
            .await;
        if let Err(s) = r
            && s.code() != Code::NotFound
        {
            tracing::warn!(container = id, error = %s, "could not remove container");
        }
        self.remove_snapshot(id).await;
        let _ = std::fs::remove_dir_all(self.dir.join(id));
        // Only when empty: the last container of the node is gone.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Delete the task of container `id`: its exit status, `None` when there was none (or the
/// deletion failed, logged).
async fn delete(c: &Ctrd, id: &str) -> Option<u32> {
    let req = DeleteTaskRequest {
        container_id: id.to_string(),
    };
    match c.tasks().delete(c.req(req)).await {
        Ok(r) => Some(r.into_inner().exit_status),
        Err(s) if s.code() == Code::NotFound => None,
        Err(s) => {
            tracing::debug!(container = id, error = %s, "delete task");
            None
        }
    }
}

/// Make a FIFO at `path`.
pub(super) fn make_fifo(path: &Path) -> RuntimeResult<()> {
    use rustix::fs::{FileType, Mode};
    let _ = std::fs::remove_file(path);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(|e| RuntimeError::io("make the FIFO", path, e.into()))
}

/// The OOM kills counted in the cgroup of container `id` (v1 `memory.oom_control`, v2
/// `memory.events`); 0 when the cgroup cannot be read.
fn oom_kills(id: &str) -> u64 {
    let files = [
        format!("/sys/fs/cgroup/memory/argoexec/{id}/memory.oom_control"),
        format!("/sys/fs/cgroup/argoexec/{id}/memory.events"),
    ];
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|s| {
            s.lines()
                .filter_map(|l| l.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0)
}

/// A signal's number from its name (`KILL`, `SIGTERM`, `9`).
pub(super) fn signal_number(name: &str) -> Option<u32> {
    let n = name.trim_start_matches("SIG");
    Some(match n {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "KILL" => 9,
        "USR1" => 10,
        "USR2" => 12,
        "TERM" => 15,
        "STOP" => 19,
        "CONT" => 18,
        other => return other.parse().ok(),
    })
}
