//! Authentication and authorization shared by both endpoints: bearer tokens (the
//! TokenReview the kubelet would ask the API server for) and RBAC rules loaded from
//! Role/ClusterRole/RoleBinding/ClusterRoleBinding YAML.

pub mod rbac;
pub mod tokens;

pub use rbac::{Attributes, Decision, Rbac};
pub use tokens::{BoundPod, Subject, Tokens};
