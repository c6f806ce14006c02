//! The phases of one wrapper run, in Argo's order: wait for container-set dependencies,
//! resolve the command, the optional pause before, the attempts (with the container-set
//! retry strategy), the optional pause after, and the staging of `main`'s outputs.
//!
//! Retries: Argo builds a backoff with `Steps = retries` and its retry helper treats `Steps`
//! as the total number of attempts, so `retries: 2` runs the command only twice there (and
//! `retries: 0` not at all). We follow the field's meaning and the rest of Argo's retry
//! strategies instead: `retries + 1` attempts in total, a constant `duration` between them,
//! and a retry only after a non-zero exit. Two further choices: no retry once a terminating
//! signal (TERM/INT/HUP/QUIT/KILL) was passed to the child — the pod is being stopped — and a
//! terminating signal during the delay ends the run with the last attempt's exit code. The
//! strategy applies to containers of the set only, not to wrapped sidecars.
//!
//! Pauses: `ARGO_DEBUG_PAUSE_BEFORE`/`_AFTER` must be exactly `true`, as in Argo. A
//! terminating signal ends the pause; before the child that means exit 128 + N, after it
//! the child's exit code stands.
//!
//! Sidecars: while the child of a wrapped sidecar runs, the main containers' `exitcode`
//! files are watched and the child is terminated once all exist (`sidecar.rs`).

use crate::control;
use crate::error::Stop;
use crate::pty::{self, Terminal};
use crate::reactor::{Reactor, Wake};
use crate::sidecar::{self, SelfTermination};
use crate::signals::{self, is_terminating};
use crate::spawn::{self, Program};
use crate::tee::Tee;
use argoexec_core::fswatch::WatchMode;
use argoexec_core::ready::PodLayout;
use argoexec_core::{PodPaths, Template, exit, protocol, template::MAIN};
use nix::sys::signal::Signal;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How one attempt ended.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    /// Exit status, or 128 + signal.
    code: i32,
    /// A terminating signal was passed to the child.
    terminated: bool,
}

fn env_true(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "true")
}

/// The watch mode from `ARGOEXEC_FS_WATCH`; an unknown value is logged and ignored.
pub(crate) fn watch_mode() -> WatchMode {
    WatchMode::from_env().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "using inotify");
        WatchMode::Inotify
    })
}

/// Run every phase and return the exit code of the last attempt.
pub(crate) fn execute(
    paths: &PodPaths,
    name: &str,
    template: &Template,
    command: &[OsString],
    mut reactor: Reactor,
    layout: PodLayout,
    role: crate::Role,
) -> Result<i32, Stop> {
    spawn::become_subreaper();
    let dir = paths.ctr_dir(name);
    let signal_file = paths.signal_file(name);
    let node = template.container_set_node(name);

    if let Some(node) = node {
        control::wait_dependencies(&mut reactor, paths, &node.dependencies, &signal_file)?;
    }
    let program = spawn::resolve(command, std::env::var_os("PATH").as_deref())?;
    if env_true("ARGO_DEBUG_PAUSE_BEFORE") {
        control::pause_until(&mut reactor, &dir.join(protocol::PAUSE_BEFORE), &signal_file)?;
    }

    let capture = std::env::var("ARGO_INCLUDE_SCRIPT_OUTPUT")
        .ok()
        .and_then(|v| argoexec_core::env::parse_bool(&v))
        .unwrap_or(false)
        || template.archive_logs();
    let mut tee = Tee::new(capture, &paths.stdout_file(name), &paths.combined_file(name))?;
    let (retries, delay) = match (
        node,
        template
            .container_set
            .as_ref()
            .and_then(|cs| cs.retry_strategy.as_ref()),
    ) {
        (Some(_), Some(rs)) => (rs.retries(), rs.delay()),
        _ => (0, Duration::ZERO),
    };
    let grace = sidecar::grace_period(std::env::var(sidecar::GRACE_ENV).ok().as_deref());
    let mut run = Runner {
        reactor: &mut reactor,
        tee: &mut tee,
        program: &program,
        paths,
        signal_file,
        sidecar: SelfTermination::for_container(template, name, grace),
        ignore_term: role == crate::Role::ArtifactPluginSidecar,
    };
    let code = run.attempts(retries + 1, delay)?;
    drop(tee);

    if env_true("ARGO_DEBUG_PAUSE_AFTER") {
        match control::pause_until(
            &mut reactor,
            &dir.join(protocol::PAUSE_AFTER),
            &paths.signal_file(name),
        ) {
            Ok(()) | Err(Stop::Signalled(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if name == MAIN {
        crate::stage::stage_outputs(paths, template, layout)?;
    }
    Ok(code)
}

/// What the attempts share: the loop, the output fan-out, the command, and the sidecar's
/// self-termination (sidecars only).
struct Runner<'a> {
    reactor: &'a mut Reactor,
    tee: &'a mut Tee,
    program: &'a Program,
    paths: &'a PodPaths,
    signal_file: PathBuf,
    sidecar: Option<SelfTermination>,
    /// Drop a SIGTERM sent to the wrapper (an artifact plugin's sidecar): only the signal
    /// file stops the child.
    ignore_term: bool,
}

/// The child of one attempt, as the loop sees it.
struct Running {
    pid: i32,
    terminal: Option<Terminal>,
    terminated: bool,
}

impl Running {
    fn deliver(&mut self, signo: i32) {
        signals::forward(self.pid, signo);
        self.terminated |= is_terminating(signo);
    }
}

impl Runner<'_> {
    /// Up to `attempts` runs of the program, `delay` apart, until one exits 0.
    fn attempts(&mut self, attempts: u32, delay: Duration) -> Result<i32, Stop> {
        let mut code = 0;
        for n in 1..=attempts {
            if n > 1 {
                tracing::debug!(attempt = n, ?delay, last_code = code, "retrying");
                match control::sleep(self.reactor, delay, &self.signal_file) {
                    Ok(()) => {}
                    Err(Stop::Signalled(_)) => break,
                    Err(e) => return Err(e),
                }
            }
            let a = self.attempt()?;
            code = a.code;
            tracing::debug!(attempt = n, code, "attempt finished");
            if code == 0 || a.terminated {
                break;
            }
        }
        Ok(code)
    }

    /// Start the child, on a pty when the wrapper's stdin is a terminal.
    fn start(&mut self) -> Result<Running, Stop> {
        let (terminal, slave) = match pty::stdin_is_terminal() {
            true => {
                let (t, slave) = Terminal::open()?;
                (Some(t), Some(slave))
            }
            false => (None, None),
        };
        let child = spawn::spawn(self.program, slave)?;
        match (&terminal, child.stdout) {
            (Some(t), _) => {
                self.tee.attach(t.duplicate()?, None);
                self.tee.relay_input_to(t.duplicate()?)?;
            }
            (None, Some(out)) => self.tee.attach(out, child.stderr),
            (None, None) => unreachable!("a child without a terminal has pipes"),
        }
        Ok(Running {
            pid: child.pid,
            terminal,
            terminated: false,
        })
    }

    /// Spawn the child once, relay signals and output until it is reaped.
    fn attempt(&mut self) -> Result<Attempt, Stop> {
        let mut child = self.start()?;
        // A signal file written before the watch fired for this child.
        if let Some(n) = control::take_signal(&self.signal_file) {
            child.deliver(n);
        }
        if let Some(s) = self.sidecar.as_mut() {
            s.arm(self.reactor.watcher_mut(), self.paths);
        }
        self.sidecar_step(&mut child, true);
        loop {
            let timeout = self.sidecar.as_ref().and_then(|s| s.timeout(Instant::now()));
            let wake = self.reactor.wait(timeout, Some(self.tee));
            self.relay(&wake, &mut child);
            self.sidecar_step(&mut child, wake.fs_changed);
            if wake.child_event
                && let Some(status) = spawn::reap(Some(child.pid))
            {
                self.tee.drain();
                // Restores the wrapper's terminal settings.
                drop(child.terminal);
                return Ok(Attempt {
                    code: exit::from_wait_status(status),
                    terminated: child.terminated,
                });
            }
        }
    }

    /// Pass the wrapper's signals and the signal file's to the child.
    fn relay(&mut self, wake: &Wake, child: &mut Running) {
        for r in wake.signals.iter().filter(|r| r.is_forwarded()) {
            if self.ignore_term && r.signo == Signal::SIGTERM as i32 {
                tracing::info!("ignoring SIGTERM: the artifact plugin stops through its signal file");
                continue;
            }
            match &child.terminal {
                Some(t) if r.signo == Signal::SIGWINCH as i32 => t.resize(),
                _ => child.deliver(r.signo),
            }
        }
        if wake.signal_file
            && let Some(n) = control::take_signal(&self.signal_file)
        {
            tracing::debug!(signo = n, "signal file");
            child.deliver(n);
        }
    }

    /// Advance a sidecar's self-termination (nothing for other containers).
    fn sidecar_step(&mut self, child: &mut Running, files_changed: bool) {
        let Some(s) = self.sidecar.as_mut() else { return };
        if let Some(signo) = s.step(
            self.reactor.watcher_mut(),
            self.paths,
            files_changed,
            Instant::now(),
        ) {
            child.deliver(signo);
        }
    }
}
