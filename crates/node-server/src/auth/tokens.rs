//! Bearer tokens: JWT-shaped strings the node issues for service accounts (projected into
//! pods, or minted by the TokenRequest API) and for the admin of the kubeconfig. A token is
//! valid until it expires; tokens bound to a pod stop working when the pod is deleted, as
//! bound service-account tokens do. Tokens are looked up whole and never logged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;

/// The pod a service-account token is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundPod {
    /// Namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// Pod UID.
    pub uid: String,
}

/// Who a token authenticates as (a TokenReview's `status.user`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// `username`, e.g. `system:serviceaccount:ns:sa`.
    pub user: String,
    /// `groups`.
    pub groups: Vec<String>,
    /// The bound pod, for projected tokens.
    pub pod: Option<BoundPod>,
}

impl Subject {
    /// A service account's identity.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            pod: None,
        }
    }

    /// The kubeconfig's administrator (`system:masters`: every request allowed).
    pub fn admin() -> Self {
        Self {
            user: "argoexec-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            pod: None,
        }
    }

    /// `(namespace, name)` when this is a service account.
    pub fn service_account_name(&self) -> Option<(&str, &str)> {
        let rest = self.user.strip_prefix("system:serviceaccount:")?;
        rest.split_once(':')
    }
}

struct Entry {
    subject: Arc<Subject>,
    expires: Option<SystemTime>,
}

/// The node's token authority.
#[derive(Default)]
pub struct Tokens {
    map: Mutex<HashMap<String, Entry>>,
}

impl Tokens {
    /// Issue a token for `subject`, valid for `ttl` (forever when `None`).
    pub fn issue(&self, subject: Subject, ttl: Option<Duration>) -> String {
        let now = SystemTime::now();
        let secs = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        };
        let expires = ttl.map(|t| now + t);
        let mut claims = json!({
            "aud": ["https://kubernetes.default.svc.cluster.local"],
            "iss": "https://kubernetes.default.svc.cluster.local",
            "sub": subject.user,
            "iat": secs(now),
            "nbf": secs(now),
        });
        if let Some(e) = expires {
            claims["exp"] = json!(secs(e));
        }
        if let Some((ns, sa)) = subject.service_account_name() {
            claims["kubernetes.io"] = json!({"namespace": ns, "serviceaccount": {"name": sa}});
            if let Some(p) = &subject.pod {
                claims["kubernetes.io"]["pod"] = json!({"name": p.name, "uid": p.uid});
            }
        }
        let header = json!({"alg": "RS256", "kid": "argoexec-local"});
        let mut sig = [0u8; 32];
        // The signature is the token's secret part; getrandom only fails without an OS RNG.
        getrandom::fill(&mut sig).expect("the OS random number generator");
        let token = format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string()),
            URL_SAFE_NO_PAD.encode(sig)
        );
        let entry = Entry {
            subject: Arc::new(subject),
            expires,
        };
        self.lock().insert(token.clone(), entry);
        token
    }

    /// The subject of a valid token (the TokenReview), or `None` (unknown or expired).
    pub fn review(&self, token: &str) -> Option<Arc<Subject>> {
        let map = self.lock();
        let e = map.get(token)?;
        match e.expires {
            Some(t) if t <= SystemTime::now() => None,
            _ => Some(e.subject.clone()),
        }
    }

    /// Invalidate every token bound to the pod with `uid`.
    pub fn revoke_pod(&self, uid: &str) {
        self.lock()
            .retain(|_, e| e.subject.pod.as_ref().is_none_or(|p| p.uid != uid));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The bearer token of an `Authorization` header value.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let v = header?.trim();
    let (scheme, rest) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_review_to_their_subject_and_expire() {
        let t = Tokens::default();
        let a = t.issue(Subject::service_account("ns", "sa"), None);
        let b = t.issue(Subject::admin(), Some(Duration::ZERO));
        assert_eq!(a.split('.').count(), 3);
        assert_eq!(t.review(&a).unwrap().user, "system:serviceaccount:ns:sa");
        assert!(t.review(&b).is_none(), "expired");
        assert!(t.review("nope").is_none());
    }

    #[test]
    fn pod_bound_tokens_die_with_the_pod() {
        let t = Tokens::default();
        let mut s = Subject::service_account("ns", "sa");
        s.pod = Some(BoundPod {
            namespace: "ns".into(),
            name: "p".into(),
            uid: "u1".into(),
        });
        let a = t.issue(s, None);
        t.revoke_pod("u2");
        assert!(t.review(&a).is_some());
        t.revoke_pod("u1");
        assert!(t.review(&a).is_none());
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(None), None);
    }
}
