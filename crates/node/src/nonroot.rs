//! `runAsNonRoot`, verified as the kubelet verifies it before it creates a container: the
//! user a container runs as is its `securityContext.runAsUser`, else the pod's, else the
//! image's `USER`; with `runAsNonRoot: true` (the container's setting over the pod's) a UID 0,
//! an empty user (root) or a non-numeric user (which cannot be verified) refuses the
//! container with the kubelet's message, as a waiting `CreateContainerConfigError`.

use k8s_openapi::api::core::v1::{Container, PodSecurityContext};

/// Why a container may not run under `runAsNonRoot`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NonRootError {
    /// `runAsUser: 0` with `runAsNonRoot: true`.
    #[error("container's runAsUser breaks non-root policy (pod: {pod:?}, container: {container})")]
    RunAsUserRoot {
        /// The pod.
        pod: String,
        /// The container.
        container: String,
    },
    /// The image's user is root (or not set).
    #[error("container has runAsNonRoot and image will run as root (pod: {pod:?}, container: {container})")]
    ImageRoot {
        /// The pod.
        pod: String,
        /// The container.
        container: String,
    },
    /// The image names its user, which cannot be resolved to a UID outside the container.
    #[error(
        "container has runAsNonRoot and image has non-numeric user ({user}), cannot verify user is non-root (pod: {pod:?}, container: {container})"
    )]
    NonNumeric {
        /// The image's `USER`.
        user: String,
        /// The pod.
        pod: String,
        /// The container.
        container: String,
    },
}

/// What the check needs from the image: asked only when the spec names no UID.
pub enum Verdict {
    /// Nothing to verify, or verified from the spec.
    Allowed,
    /// `runAsNonRoot` holds and no UID is set: the image's `USER` decides ([`check_image_user`]).
    NeedsImageUser,
}

/// Check the spec alone.
pub fn check_spec(
    pod_sc: Option<&PodSecurityContext>,
    c: &Container,
    pod: &str,
) -> Result<Verdict, NonRootError> {
    let sc = c.security_context.as_ref();
    let non_root = sc
        .and_then(|s| s.run_as_non_root)
        .or_else(|| pod_sc.and_then(|p| p.run_as_non_root))
        .unwrap_or(false);
    if !non_root {
        return Ok(Verdict::Allowed);
    }
    match sc
        .and_then(|s| s.run_as_user)
        .or_else(|| pod_sc.and_then(|p| p.run_as_user))
    {
        Some(0) => Err(NonRootError::RunAsUserRoot {
            pod: pod.to_string(),
            container: c.name.clone(),
        }),
        Some(_) => Ok(Verdict::Allowed),
        None => Ok(Verdict::NeedsImageUser),
    }
}

/// Check an image's `USER` (`uid`, `uid:gid`, `name`, or empty for root).
pub fn check_image_user(user: &str, c: &Container, pod: &str) -> Result<(), NonRootError> {
    let uid = user.split(':').next().unwrap_or_default().trim();
    match uid.parse::<u32>() {
        Ok(0) => Err(NonRootError::ImageRoot {
            pod: pod.to_string(),
            container: c.name.clone(),
        }),
        Ok(_) => Ok(()),
        Err(_) if uid.is_empty() => Err(NonRootError::ImageRoot {
            pod: pod.to_string(),
            container: c.name.clone(),
        }),
        Err(_) => Err(NonRootError::NonNumeric {
            user: user.to_string(),
            pod: pod.to_string(),
            container: c.name.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::SecurityContext;

    fn ctr(non_root: Option<bool>, user: Option<i64>) -> Container {
        Container {
            name: "main".into(),
            security_context: Some(SecurityContext {
                run_as_non_root: non_root,
                run_as_user: user,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod_sc(non_root: Option<bool>, user: Option<i64>) -> PodSecurityContext {
        PodSecurityContext {
            run_as_non_root: non_root,
            run_as_user: user,
            ..Default::default()
        }
    }

    #[test]
    fn without_run_as_non_root_anything_runs() {
        assert!(matches!(
            check_spec(None, &ctr(None, Some(0)), "p"),
            Ok(Verdict::Allowed)
        ));
        let off = pod_sc(Some(true), None);
        assert!(matches!(
            check_spec(Some(&off), &ctr(Some(false), None), "p"),
            Ok(Verdict::Allowed)
        ));
    }

    #[test]
    fn the_spec_uid_decides_before_the_image() {
        let on = pod_sc(Some(true), None);
        assert!(matches!(
            check_spec(Some(&on), &ctr(None, Some(8737)), "p"),
            Ok(Verdict::Allowed)
        ));
        let e = check_spec(Some(&on), &ctr(None, Some(0)), "p").err().unwrap();
        assert!(
            e.to_string()
                .starts_with("container's runAsUser breaks non-root policy"),
            "{e}"
        );
        // The pod's UID counts when the container sets none.
        let both = pod_sc(Some(true), Some(1000));
        assert!(matches!(
            check_spec(Some(&both), &ctr(None, None), "p"),
            Ok(Verdict::Allowed)
        ));
        assert!(matches!(
            check_spec(Some(&on), &ctr(None, None), "p"),
            Ok(Verdict::NeedsImageUser)
        ));
    }

    #[test]
    fn image_users() {
        let c = ctr(Some(true), None);
        assert!(check_image_user("8737", &c, "p").is_ok());
        assert!(check_image_user("8737:8737", &c, "p").is_ok());
        for root in ["", "0", "0:0"] {
            let e = check_image_user(root, &c, "p").unwrap_err();
            assert!(e.to_string().contains("image will run as root"), "{root:?}: {e}");
        }
        let e = check_image_user("argo", &c, "p").unwrap_err();
        assert!(e.to_string().contains("non-numeric user (argo)"), "{e}");
    }
}
