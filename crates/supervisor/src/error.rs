//! Why the wrapper itself failed (exit code 64, or 65 before an init-less pod was ready), as
//! one error enum.
//!
//! Each variant's message is what lands on the wrapper's stderr and in the termination log,
//! so the texts follow Argo's where a test or a user greps for them (notably
//! `executable file not found in $PATH` and `dependency "<name>" …`).

use std::io;
use std::path::PathBuf;

/// A failure of the wrapper (as opposed to a failure of the wrapped command).
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// `ARGO_CONTAINER_NAME` is unset or empty.
    #[error("environment variable ARGO_CONTAINER_NAME is required but not set")]
    MissingContainerName,
    /// `ARGO_CONTAINER_NAME`, or a container name in the template, is not a DNS-1123 label
    /// (checked before any path is built from it).
    #[error(transparent)]
    BadName(#[from] argoexec_core::names::InvalidName),
    /// The template could not be loaded or parsed.
    #[error("failed to load the template: {0}")]
    Template(#[from] argoexec_core::EnvError),
    /// The per-container directory could not be created.
    #[error("failed to create {}: {source}", path.display())]
    CtrDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Nothing after `--`.
    #[error("no command given to run")]
    NoCommand,
    /// The command could not be resolved (Go's `exec.LookPath` wording).
    #[error("failed to find name in PATH: exec: {name:?}: {reason}")]
    NotFound {
        /// The command name as given.
        name: String,
        /// Why, e.g. `executable file not found in $PATH`.
        reason: String,
    },
    /// `ARGO_CONTAINER_ARGS_FILE` names a file that cannot be read.
    #[error("failed to read the {var} file {}: {source}", path.display())]
    ArgsFile {
        /// The variable (`ARGO_CONTAINER_ARGS_FILE`).
        var: &'static str,
        /// The file it names.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The `ARGO_CONTAINER_ARGS_FILE` file does not hold a JSON array of strings.
    #[error("the {var} file {} is not a JSON array of strings: {source}", path.display())]
    ArgsFileJson {
        /// The variable (`ARGO_CONTAINER_ARGS_FILE`).
        var: &'static str,
        /// The file it names.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// An argument above the size limit could not be written to its `@file`.
    #[error("failed to write argument {index} to {}: {source}", path.display())]
    LargeArg {
        /// Its index among the arguments (0 = the first after the program).
        index: usize,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The pseudo-terminal for a child whose stdin is a terminal could not be set up.
    #[error("failed to set up a pseudo-terminal for the command: {0}")]
    Terminal(#[source] nix::Error),
    /// Setting up signal handling (mask, signalfd) failed.
    #[error("failed to set up signal handling: {0}")]
    Signals(#[source] nix::Error),
    /// The child could not be started.
    #[error("failed to start {program:?}: {source}")]
    Spawn {
        /// The resolved program.
        program: String,
        /// The cause.
        source: io::Error,
    },
    /// The `stdout` / `combined` capture files could not be opened.
    #[error("failed to open {}: {source}", path.display())]
    Capture {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A container-set dependency finished with a non-zero exit code.
    #[error("dependency {dep:?} exited with code {code}")]
    Dependency {
        /// The dependency's container name.
        dep: String,
        /// Its exit code.
        code: i32,
    },
    /// A dependency's `exitcode` file holds something that is not a number.
    #[error("dependency {dep:?} wrote an invalid exit code {text:?}")]
    BadDependencyCode {
        /// The dependency's container name.
        dep: String,
        /// The file's content.
        text: String,
    },
    /// A dependency's `exitcode` file could not be read.
    #[error("failed to read the exit code of dependency {dep:?}: {source}")]
    ReadDependency {
        /// The dependency's container name.
        dep: String,
        /// The cause.
        source: io::Error,
    },
    /// A base-layer output could not be staged (a missing path is not an error).
    #[error("failed to save output {}: {reason}", path.display())]
    Stage {
        /// The output's path in the container.
        path: PathBuf,
        /// The cause.
        reason: String,
    },
    /// The orchestration code panicked (a bug); reported like any wrapper failure.
    #[error("internal error: {0}")]
    Internal(String),
    /// Init-less layout: the supervisor did not get the pod ready (its marker said `FAILED`,
    /// went stale, never appeared, or could not be read). Exit 65.
    #[error(transparent)]
    NotReady(#[from] crate::ready::ReadyError),
    /// Init-less layout: an input artifact could not be linked into place. Exit 65.
    #[error(transparent)]
    Link(#[from] Box<crate::link::LinkError>),
}

impl SupervisorError {
    /// The exit code this failure ends the wrapper with: 65 when the pod was never made
    /// ready for the command (init-less layout; Argo's pre-main sentinel), else 64.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::NotReady(_) | Self::Link(_) => argoexec_core::exit::SUPERVISOR_PRE_MAIN,
            _ => argoexec_core::exit::EXECUTOR_FAILURE,
        }
    }
}

/// How a phase of the run stopped early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The wrapper failed: exit 64 with the message.
    Failed(SupervisorError),
    /// A terminating signal arrived while no child was running: exit 128 + N.
    Signalled(i32),
}

impl From<SupervisorError> for Stop {
    fn from(e: SupervisorError) -> Self {
        Stop::Failed(e)
    }
}
