//! What a panic does in the executor's programs.
//!
//! The image a cluster pulls is built with `panic = "abort"` (the `dist` profile, root
//! `Cargo.toml`; issue 17: 1.7 MB less than unwinding). A panic there cannot be caught, so
//! the hook installed here reports it before the process ends, as Argo's Go executor does
//! with a panic (`HandleError`: the message to the termination log, then a fatal exit):
//! the program's report (the termination log; for the wrapper also its `exitcode` file)
//! gets one line naming the panic, its place and what was running ([`context`]), and the
//! process exits with the code the report returns, 64 ([`crate::exit::EXECUTOR_FAILURE`]).
//!
//! Builds that unwind (`dev`, the cargo tests, `release`) keep the default behaviour: the
//! catches in the wrapper, the expression engine and the agent's workers turn a panic into
//! an error there, and the hook only prints. [`Policy::of_this_build`] tells which applies.
//!
//! What abort loses against unwinding, and Argo has neither: the agent's per-task isolation
//! (a panicking task now ends the agent pod, whose nodes the controller marks Error, as
//! with Argo's agent) and expr-lang's known panic becoming an evaluation error (the data step
//! fails either way; the message says which expression).

use std::cell::RefCell;
use std::panic::PanicHookInfo;
use std::sync::{Once, OnceLock, RwLock};

use crate::exit::EXECUTOR_FAILURE;

/// Reports a panic's one-line description; returns the process's exit code.
pub type Report = Box<dyn Fn(&str) -> i32 + Send + Sync>;

static REPORT: RwLock<Option<Report>> = RwLock::new(None);
static INSTALL: Once = Once::new();
static LABEL: OnceLock<&'static str> = OnceLock::new();

/// The words a panic's line starts with unless [`install_labelled`] names others.
pub const EXECUTOR_LABEL: &str = "executor panic";

thread_local! {
    static CONTEXT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// What the hook does after printing the panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Nothing more: the panic unwinds to whatever catches it.
    Unwind,
    /// Run the [`Report`] and exit with its code: the panic cannot be caught.
    Exit,
}

impl Policy {
    /// [`Policy::Exit`] in a build that aborts on panic, [`Policy::Unwind`] otherwise.
    pub fn of_this_build() -> Self {
        if cfg!(panic = "abort") {
            Policy::Exit
        } else {
            Policy::Unwind
        }
    }
}

/// Install the hook (once per process; later calls change nothing). The default hook's
/// output (the panic message, a backtrace when `RUST_BACKTRACE` asks) is kept. A panic's
/// line starts with [`EXECUTOR_LABEL`].
pub fn install(policy: Policy) {
    install_labelled(policy, EXECUTOR_LABEL);
}

/// [`install`], the panic's line starting with `label` instead (a program that is not the
/// executor, such as the local tools, says what a panic means to its user).
pub fn install_labelled(policy: Policy, label: &'static str) {
    INSTALL.call_once(|| {
        let _ = LABEL.set(label);
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default(info);
            if policy == Policy::Exit {
                let line = describe(info);
                let code = match REPORT.read() {
                    Ok(report) => report.as_ref().map_or(EXECUTOR_FAILURE, |r| r(&line)),
                    Err(_) => EXECUTOR_FAILURE,
                };
                std::process::exit(code);
            }
        }));
    });
}

/// Set what reports a panic under [`Policy::Exit`], replacing the one before (a subcommand
/// that knows more, such as the wrapper's `exitcode` file, sets its own).
pub fn set_report(report: Report) {
    match REPORT.write() {
        Ok(mut slot) => *slot = Some(report),
        Err(poisoned) => *poisoned.into_inner() = Some(report),
    }
}

/// Name what this thread is doing until the guard drops; a panic's description ends with
/// it ("… while evaluating the expression \"…\"").
pub fn context(what: impl Into<String>) -> ContextGuard {
    CONTEXT.with(|c| c.borrow_mut().push(what.into()));
    ContextGuard {
        _not_send: std::marker::PhantomData,
    }
}

/// Removes its [`context`] when dropped (on the thread that made it).
#[derive(Debug)]
#[must_use = "the context ends when the guard drops"]
pub struct ContextGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        CONTEXT.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// One line for a panic: the installed label ([`EXECUTOR_LABEL`] unless
/// [`install_labelled`] said otherwise), its message, where, and the thread's [`context`].
pub fn describe(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    let label = LABEL.get().copied().unwrap_or(EXECUTOR_LABEL);
    let mut line = format!("{label}: {message}");
    if let Some(at) = info.location() {
        line.push_str(&format!(" (at {}:{})", at.file(), at.line()));
    }
    let context = CONTEXT
        .try_with(|c| c.borrow().join(", while "))
        .unwrap_or_default();
    if !context.is_empty() {
        line.push_str(" while ");
        line.push_str(&context);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHILD_ENV: &str = "ARGOEXEC_PANIC_TEST_CHILD";
    const LABEL_ENV: &str = "ARGOEXEC_PANIC_TEST_LABEL";

    /// Run only as the child of [`exit_policy_reports_the_panic_and_exits_with_the_reports_code`]:
    /// the hook with [`Policy::Exit`] in this (unwinding) test build stands for an abort build.
    #[test]
    #[ignore = "run as a child process by the test below"]
    fn child_that_panics() {
        let Some(out) = std::env::var_os(CHILD_ENV) else {
            return;
        };
        match std::env::var(LABEL_ENV) {
            Ok(label) => install_labelled(Policy::Exit, String::leak(label)),
            Err(_) => install(Policy::Exit),
        }
        set_report(Box::new(move |line| {
            std::fs::write(&out, line).expect("write the report");
            EXECUTOR_FAILURE
        }));
        let _outer = context("loading the template");
        let _inner = context("evaluating the expression \"len(x)\"");
        panic!("boom {}", 42);
    }

    /// Run [`child_that_panics`] (with `label`, if any); its exit code and report.
    fn panicking_child(label: Option<&str>) -> (Option<i32>, String) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("report");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "panic::tests::child_that_panics",
                "--ignored",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &out)
            .env_remove(LABEL_ENV)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(label) = label {
            child.env(LABEL_ENV, label);
        }
        let status = child.status().unwrap();
        (status.code(), std::fs::read_to_string(&out).unwrap_or_default())
    }

    #[test]
    fn a_label_replaces_the_executors_words() {
        let (code, line) = panicking_child(Some("internal error (a bug)"));
        assert_eq!(code, Some(EXECUTOR_FAILURE));
        assert!(line.starts_with("internal error (a bug): boom 42 (at "), "{line}");
    }

    #[test]
    fn exit_policy_reports_the_panic_and_exits_with_the_reports_code() {
        let (code, line) = panicking_child(None);
        assert_eq!(code, Some(EXECUTOR_FAILURE), "{line}");
        assert!(line.starts_with("executor panic: boom 42 (at "), "{line}");
        assert!(line.contains("panic.rs:"), "{line}");
        assert!(
            line.ends_with(" while loading the template, while evaluating the expression \"len(x)\""),
            "{line}"
        );
    }

    #[test]
    fn context_ends_with_its_guard() {
        {
            let _g = context("a");
            CONTEXT.with(|c| assert_eq!(*c.borrow(), ["a"]));
        }
        CONTEXT.with(|c| assert!(c.borrow().is_empty()));
    }

    #[test]
    fn this_test_build_unwinds() {
        assert_eq!(Policy::of_this_build(), Policy::Unwind);
    }
}
