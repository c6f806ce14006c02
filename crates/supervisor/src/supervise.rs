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

use crate::control::{self, Watcher};
use crate::error::Stop;
use crate::reactor::Reactor;
use crate::signals::{self, Signals, is_terminating};
use crate::spawn::{self, Program};
use crate::tee::Tee;
use argoexec_core::{PodPaths, Template, exit, protocol, template::MAIN};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

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

/// Run every phase and return the exit code of the last attempt.
pub(crate) fn execute(
    paths: &PodPaths,
    name: &str,
    template: &Template,
    command: &[OsString],
    signals: Signals,
) -> Result<i32, Stop> {
    spawn::become_subreaper();
    let dir = paths.ctr_dir(name);
    let mut reactor = Reactor::new(signals, Watcher::new(&dir));
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
    let code = run_attempts(&mut reactor, &mut tee, &program, &signal_file, retries + 1, delay)?;
    drop(tee);

    if env_true("ARGO_DEBUG_PAUSE_AFTER") {
        match control::pause_until(&mut reactor, &dir.join(protocol::PAUSE_AFTER), &signal_file) {
            Ok(()) | Err(Stop::Signalled(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if name == MAIN {
        crate::stage::stage_outputs(paths, template)?;
    }
    Ok(code)
}

/// Up to `attempts` runs of `program`, `delay` apart, until one exits 0.
fn run_attempts(
    reactor: &mut Reactor,
    tee: &mut Tee,
    program: &Program,
    signal_file: &Path,
    attempts: u32,
    delay: Duration,
) -> Result<i32, Stop> {
    let mut code = 0;
    for n in 1..=attempts {
        if n > 1 {
            tracing::debug!(attempt = n, ?delay, "retrying after exit code {code}");
            match control::sleep(reactor, delay, signal_file) {
                Ok(()) => {}
                Err(Stop::Signalled(_)) => break,
                Err(e) => return Err(e),
            }
        }
        let a = attempt(reactor, tee, program, signal_file)?;
        code = a.code;
        tracing::debug!(attempt = n, code, "attempt finished");
        if code == 0 || a.terminated {
            break;
        }
    }
    Ok(code)
}

/// Spawn the child once, relay signals and output until it is reaped.
fn attempt(
    reactor: &mut Reactor,
    tee: &mut Tee,
    program: &Program,
    signal_file: &Path,
) -> Result<Attempt, Stop> {
    let child = spawn::spawn(program)?;
    let pid = child.pid;
    tee.attach(child.stdout, child.stderr);
    let mut terminated = false;
    let mut deliver = |signo: i32| {
        signals::forward(pid, signo);
        terminated |= is_terminating(signo);
    };
    // A signal file written before the watch fired for this child.
    if let Some(n) = control::take_signal(signal_file) {
        deliver(n);
    }
    loop {
        let wake = reactor.wait(None, Some(tee));
        for r in wake.signals.iter().filter(|r| r.is_forwarded()) {
            deliver(r.signo);
        }
        if wake.signal_file
            && let Some(n) = control::take_signal(signal_file)
        {
            tracing::debug!(signo = n, "signal file");
            deliver(n);
        }
        if wake.child_event
            && let Some(status) = spawn::reap(Some(pid))
        {
            tee.drain();
            return Ok(Attempt {
                code: exit::from_wait_status(status),
                terminated,
            });
        }
    }
}
