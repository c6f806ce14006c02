//! Kubelet-compatible and API-server-compatible HTTPS endpoints over the local node, so
//! every executor backend (and any Kubernetes client) can run against pods on Docker.
//!
//! - [`NodeServer`] starts both endpoints on loopback with generated certificates.
//! - The API endpoint serves pods (create/get/list/watch/patch/delete, `log`, `exec`) and
//!   stores any object of the types in its [`registry`]: ConfigMaps and Secrets (read by
//!   the pods' volumes and env), Services, ServiceAccounts, Events, Jobs, Deployments,
//!   `argoproj.io/v1alpha1` `workflowtaskresults`, CustomResourceDefinitions and the custom
//!   resources they define; with every patch type ([`patch`]), the status subresource
//!   ([`subresource`]), discovery, TokenRequest and SelfSubjectAccessReview, bearer-token
//!   authentication and RBAC from YAML.
//! - The kubelet endpoint serves `/pods`, `/containerLogs`, `/exec` and `/healthz` with the
//!   kubelet's webhook authn/authz behaviour.
//!
//! See `docs/local-node.md` for what is served and how faithfully.

mod admission;
mod api;
pub mod auth;
mod configdata;
pub mod counts;
mod error;
pub mod exec;
pub mod faults;
pub mod http;
mod kubelet;
pub mod logs;
pub mod patch;
pub mod pki;
mod pods;
mod protobuf;
pub mod registry;
pub mod selector;
mod server;
pub mod serviceaccount;
pub mod spdy;
pub mod status;
pub mod store;
pub mod subresource;

pub use error::ServerError;
pub use pki::KubeletCert;
pub use server::{NodeServer, ServerConfig};
