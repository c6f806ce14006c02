//! `argoexec-agent`: the agent pod of Argo's HTTP templates and executor plugins
//! (`argoexec agent init` and `argoexec agent main`; contract §1.4).
//!
//! The controller creates one agent pod per workflow with HTTP or plugin nodes and a
//! `WorkflowTaskSet` named after the workflow whose `spec.tasks` maps node IDs to templates.
//! - [`init`]: a token per plugin sidecar;
//! - [`config`]: the pod's environment;
//! - [`http`]: an HTTP task → a node result;
//! - [`plugin`]: a plugin task, offered to each plugin sidecar in turn;
//! - [`patch`]: results batched into one merge patch of `status.nodes` per patch period;
//! - [`agent`]: the watch of the task set, the workers, and when to stop.

pub mod agent;
pub mod config;
pub mod http;
pub mod init;
pub mod patch;
pub mod plugin;

pub use agent::{AgentError, Stop, run};
pub use config::AgentConfig;
