//! RBAC as the API server evaluates it: Roles and ClusterRoles grant rules, RoleBindings
//! and ClusterRoleBindings grant them to users, groups and service accounts. Rules are
//! loaded from the same YAML a cluster takes. A request is allowed when any bound rule
//! matches its verb, API group, resource (`pods/exec` for subresources), and — when the
//! rule names any — the object name. `system:masters` is allowed everything. The node
//! preloads the built-in discovery and self-review grants every authenticated user has.

use std::path::Path;
use std::sync::RwLock;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject as RbacSubject,
};
use serde_json::Value;

use super::tokens::Subject;
use crate::error::ServerError;

/// What a request asks to do.
#[derive(Debug, Clone, Default)]
pub struct Attributes<'a> {
    /// The verb (`get`, `list`, `watch`, `create`, `patch`, `update`, `delete`, …).
    pub verb: &'a str,
    /// API group (`""` for core).
    pub group: &'a str,
    /// Resource, e.g. `pods`; empty for non-resource paths.
    pub resource: &'a str,
    /// Subresource, e.g. `exec`.
    pub subresource: Option<&'a str>,
    /// Namespace (`None` for cluster-scoped requests).
    pub namespace: Option<&'a str>,
    /// Object name, when the request names one.
    pub name: Option<&'a str>,
    /// The URL path, for non-resource requests.
    pub path: &'a str,
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, with the reason (`RBAC: allowed by …`).
    Allow(String),
    /// No rule allows it.
    Deny,
}

/// Built-in grants of every authenticated user (discovery, version, health, self reviews).
const BUILTIN: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:discovery"}
rules:
- nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/version", "/version/", "/healthz", "/livez", "/readyz", "/openapi", "/openapi/*"]
  verbs: ["get"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]
  verbs: ["create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:discovery"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:discovery"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
"#;

#[derive(Default)]
struct Policy {
    roles: Vec<Role>,
    cluster_roles: Vec<ClusterRole>,
    bindings: Vec<RoleBinding>,
    cluster_bindings: Vec<ClusterRoleBinding>,
}

/// The RBAC policy of the node.
pub struct Rbac {
    policy: RwLock<Policy>,
}

impl Default for Rbac {
    fn default() -> Self {
        let r = Self {
            policy: RwLock::new(Policy::default()),
        };
        // The built-in document is a constant; a failure here is a bug caught by the tests.
        r.load_str(BUILTIN, "built-in").expect("built-in RBAC parses");
        r
    }
}

impl Rbac {
    /// Load every `*.yaml`/`*.yml` file of `dir` (sorted by name).
    ///
    /// # Errors
    /// An unreadable file or a document that is not valid RBAC.
    pub fn load_dir(&self, dir: &Path) -> Result<usize, ServerError> {
        let err = |message: String| ServerError::Rbac {
            path: dir.display().to_string(),
            message,
        };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| err(e.to_string()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        files.sort();
        let mut n = 0;
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|e| err(e.to_string()))?;
            n += self.load_str(&text, &f.display().to_string())?;
        }
        Ok(n)
    }

    /// Load a (multi-document) YAML or JSON text; returns the number of objects added.
    ///
    /// # Errors
    /// A document that does not parse or is not an RBAC kind.
    pub fn load_str(&self, text: &str, origin: &str) -> Result<usize, ServerError> {
        let err = |message: String| ServerError::Rbac {
            path: origin.to_string(),
            message,
        };
        let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| err(e.to_string()))?;
        let mut added = Policy::default();
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            self::add(&mut added, doc).map_err(err)?;
        }
        let n = added.roles.len()
            + added.cluster_roles.len()
            + added.bindings.len()
            + added.cluster_bindings.len();
        let mut p = self.policy.write().unwrap_or_else(|e| e.into_inner());
        p.roles.extend(added.roles);
        p.cluster_roles.extend(added.cluster_roles);
        p.bindings.extend(added.bindings);
        p.cluster_bindings.extend(added.cluster_bindings);
        Ok(n)
    }

    /// Decide whether `who` may do `attrs`.
    pub fn authorize(&self, who: &Subject, attrs: &Attributes<'_>) -> Decision {
        if who.groups.iter().any(|g| g == "system:masters") {
            return Decision::Allow("RBAC: allowed by group \"system:masters\"".into());
        }
        let p = self.policy.read().unwrap_or_else(|e| e.into_inner());
        for b in &p.cluster_bindings {
            let Some(s) = b
                .subjects
                .iter()
                .flatten()
                .find(|s| matches_subject(s, who, None))
            else {
                continue;
            };
            let Some(role) = find_cluster_role(&p, &b.role_ref.name) else {
                continue;
            };
            if role.rules.iter().flatten().any(|r| rule_allows(r, attrs)) {
                return Decision::Allow(format!(
                    "RBAC: allowed by ClusterRoleBinding \"{}\" of ClusterRole \"{}\" to {}",
                    name_of(&b.metadata),
                    b.role_ref.name,
                    describe(s, None)
                ));
            }
        }
        let Some(ns) = attrs.namespace else {
            return Decision::Deny;
        };
        for b in p
            .bindings
            .iter()
            .filter(|b| b.metadata.namespace.as_deref() == Some(ns))
        {
            let Some(s) = b
                .subjects
                .iter()
                .flatten()
                .find(|s| matches_subject(s, who, Some(ns)))
            else {
                continue;
            };
            let rules = match b.role_ref.kind.as_str() {
                "ClusterRole" => find_cluster_role(&p, &b.role_ref.name).and_then(|r| r.rules.as_ref()),
                _ => p
                    .roles
                    .iter()
                    .find(|r| {
                        r.metadata.namespace.as_deref() == Some(ns) && name_of(&r.metadata) == b.role_ref.name
                    })
                    .and_then(|r| r.rules.as_ref()),
            };
            if rules.into_iter().flatten().any(|r| rule_allows(r, attrs)) {
                return Decision::Allow(format!(
                    "RBAC: allowed by RoleBinding \"{}/{ns}\" of {} \"{}\" to {}",
                    name_of(&b.metadata),
                    b.role_ref.kind,
                    b.role_ref.name,
                    describe(s, Some(ns))
                ));
            }
        }
        Decision::Deny
    }
}

fn add(p: &mut Policy, doc: Value) -> Result<(), String> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let e = |e: serde_json::Error| format!("{kind}: {e}");
    match kind.as_str() {
        "Role" => {
            let r: Role = serde_json::from_value(doc).map_err(e)?;
            if r.metadata.namespace.is_none() {
                return Err(format!(
                    "Role {:?} has no metadata.namespace",
                    name_of(&r.metadata)
                ));
            }
            p.roles.push(r);
        }
        "ClusterRole" => p.cluster_roles.push(serde_json::from_value(doc).map_err(e)?),
        "RoleBinding" => {
            let b: RoleBinding = serde_json::from_value(doc).map_err(e)?;
            if b.metadata.namespace.is_none() {
                return Err(format!(
                    "RoleBinding {:?} has no metadata.namespace",
                    name_of(&b.metadata)
                ));
            }
            p.bindings.push(b);
        }
        "ClusterRoleBinding" => p.cluster_bindings.push(serde_json::from_value(doc).map_err(e)?),
        "List" => {
            for item in doc
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                add(p, item)?;
            }
        }
        other => {
            return Err(format!(
                "kind {other:?} is not an RBAC kind (Role, ClusterRole, RoleBinding, ClusterRoleBinding)"
            ));
        }
    }
    Ok(())
}

fn name_of(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    m.name.as_deref().unwrap_or("")
}

fn find_cluster_role<'a>(p: &'a Policy, name: &str) -> Option<&'a ClusterRole> {
    p.cluster_roles.iter().find(|r| name_of(&r.metadata) == name)
}

fn matches_subject(s: &RbacSubject, who: &Subject, binding_ns: Option<&str>) -> bool {
    match s.kind.as_str() {
        "User" => s.name == who.user,
        "Group" => who.groups.contains(&s.name),
        "ServiceAccount" => {
            let ns = s.namespace.as_deref().or(binding_ns).unwrap_or("");
            who.user == format!("system:serviceaccount:{ns}:{}", s.name)
        }
        _ => false,
    }
}

fn describe(s: &RbacSubject, binding_ns: Option<&str>) -> String {
    match s.kind.as_str() {
        "ServiceAccount" => format!(
            "ServiceAccount \"{}/{}\"",
            s.name,
            s.namespace.as_deref().or(binding_ns).unwrap_or("")
        ),
        k => format!("{k} \"{}\"", s.name),
    }
}

fn rule_allows(r: &PolicyRule, a: &Attributes<'_>) -> bool {
    if !r.verbs.iter().any(|v| v == "*" || v == a.verb) {
        return false;
    }
    if a.resource.is_empty() {
        return r.non_resource_urls.iter().flatten().any(|u| {
            u == "*" || u == a.path || u.strip_suffix('*').is_some_and(|pre| a.path.starts_with(pre))
        });
    }
    if !r.api_groups.iter().flatten().any(|g| g == "*" || g == a.group) {
        return false;
    }
    let full = match a.subresource {
        Some(sub) => format!("{}/{sub}", a.resource),
        None => a.resource.to_string(),
    };
    let res_ok = r.resources.iter().flatten().any(|res| {
        res == "*"
            || *res == full
            || a.subresource
                .is_some_and(|sub| res.strip_prefix("*/") == Some(sub))
    });
    if !res_ok {
        return false;
    }
    match r.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => a.name.is_some_and(|n| names.iter().any(|x| x == n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: exec, namespace: wf}
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "watch"]
- apiGroups: [""]
  resources: ["pods/exec"]
  verbs: ["create"]
  resourceNames: ["p1"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: exec, namespace: wf}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: exec}
subjects: [{kind: ServiceAccount, name: executor}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubelet}
rules: [{apiGroups: [""], resources: ["nodes/proxy"], verbs: ["get"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kubelet}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubelet}
subjects: [{kind: ServiceAccount, name: executor, namespace: wf}]
"#;

    fn attrs<'a>(
        verb: &'a str,
        resource: &'a str,
        sub: Option<&'a str>,
        name: Option<&'a str>,
    ) -> Attributes<'a> {
        Attributes {
            verb,
            resource,
            subresource: sub,
            namespace: Some("wf"),
            name,
            ..Default::default()
        }
    }

    #[test]
    fn role_binding_grants_only_its_verbs_in_its_namespace() {
        let rbac = Rbac::default();
        assert_eq!(rbac.load_str(POLICY, "t").unwrap(), 4);
        let sa = Subject::service_account("wf", "executor");
        assert!(
            matches!(rbac.authorize(&sa, &attrs("get", "pods", None, Some("p"))), Decision::Allow(r) if r.contains("RoleBinding \"exec/wf\""))
        );
        assert_eq!(
            rbac.authorize(&sa, &attrs("patch", "pods", None, Some("p"))),
            Decision::Deny
        );
        assert_eq!(
            rbac.authorize(&sa, &attrs("get", "pods", Some("log"), Some("p"))),
            Decision::Deny
        );
        let mut other_ns = attrs("get", "pods", None, Some("p"));
        other_ns.namespace = Some("default");
        assert_eq!(rbac.authorize(&sa, &other_ns), Decision::Deny);
        let other = Subject::service_account("wf", "default");
        assert_eq!(
            rbac.authorize(&other, &attrs("get", "pods", None, Some("p"))),
            Decision::Deny
        );
    }

    #[test]
    fn resource_names_restrict_and_cluster_bindings_apply_cluster_wide() {
        let rbac = Rbac::default();
        rbac.load_str(POLICY, "t").unwrap();
        let sa = Subject::service_account("wf", "executor");
        assert!(matches!(
            rbac.authorize(&sa, &attrs("create", "pods", Some("exec"), Some("p1"))),
            Decision::Allow(_)
        ));
        assert_eq!(
            rbac.authorize(&sa, &attrs("create", "pods", Some("exec"), Some("p2"))),
            Decision::Deny
        );
        let node = Attributes {
            verb: "get",
            resource: "nodes",
            subresource: Some("proxy"),
            name: Some("n"),
            ..Default::default()
        };
        assert!(
            matches!(rbac.authorize(&sa, &node), Decision::Allow(r) if r.contains("ClusterRoleBinding \"kubelet\""))
        );
    }

    #[test]
    fn discovery_is_built_in_and_masters_pass() {
        let rbac = Rbac::default();
        let sa = Subject::service_account("wf", "nobody");
        let disc = Attributes {
            verb: "get",
            path: "/apis/argoproj.io/v1alpha1",
            ..Default::default()
        };
        assert!(matches!(rbac.authorize(&sa, &disc), Decision::Allow(_)));
        assert_eq!(
            rbac.authorize(&sa, &attrs("get", "pods", None, None)),
            Decision::Deny
        );
        assert!(matches!(
            rbac.authorize(&Subject::admin(), &attrs("delete", "pods", None, None)),
            Decision::Allow(_)
        ));
    }

    #[test]
    fn unknown_kinds_are_refused_with_the_kind() {
        let err = Rbac::default()
            .load_str("kind: Pod\nmetadata: {name: x}\n", "f.yaml")
            .unwrap_err();
        assert!(err.to_string().contains("\"Pod\" is not an RBAC kind"), "{err}");
    }
}
