//! Core types of argoexec-rs.
//!
//! This crate is the bottom of the workspace: everything else depends on it and it depends on
//! nothing of ours. It owns
//! - [`artifact_gc`]: artifact GC's `WorkflowArtifactGCTask` resource;
//! - [`task_set`]: the agent's `WorkflowTaskSet` resource and Argo's `NodeResult`;
//! - [`template`]: the subset of Argo's `Template` an executor needs (camelCase JSON, unknown
//!   fields preserved on a round trip);
//! - [`env`]: the `ARGO_*` environment contract parsed into one typed struct;
//! - [`paths`]: every fixed in-pod path (`/var/run/argo`, `/mainctrfs`, …) rooted in one place
//!   so tests and local runs can re-root them;
//! - [`protocol`]: the emissary file protocol shared by the wrapper and the wait side;
//! - [`fswatch`]: how file watchers notice changes (inotify, or polling every 2 s);
//! - [`executor_kind`]: the five backend names;
//! - [`argo_version`]: the Argo controller versions whose pod contract we speak;
//! - [`exit`]: exit-code rules;
//! - [`panic`]: what a panic does (reported, exit 64, in the image's abort build);
//! - [`kill_cmd`]: the `kill-cmd-<container>` annotation (`%d` substitution);
//! - [`names`]: container names checked before they become paths;
//! - [`param_file`]: which files may become output parameter values, read bounded.
//!
//! It performs no network I/O and starts no async runtime; the only file access is the small,
//! synchronous template loading in [`env`] and the bounded parameter-file reads of
//! [`param_file`].

pub mod annotations;
pub mod argo_version;
pub mod artifact_gc;
pub mod env;
pub mod executor_kind;
pub mod exit;
pub mod fswatch;
pub mod kill_cmd;
pub mod names;
pub mod panic;
pub mod param_file;
pub mod paths;
pub mod protocol;
pub mod ready;
pub mod task_set;
pub mod template;

pub use argo_version::ArgoVersion;
pub use env::{EnvError, ExecutorEnv};
pub use executor_kind::ExecutorKind;
pub use paths::PodPaths;
pub use template::Template;
