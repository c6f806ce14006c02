//! Fixed in-pod paths, rooted in one place.
//!
//! Argo fixes these paths inside the pod's containers. All code in argoexec-rs asks a
//! [`PodPaths`] for them instead of writing literals, so a test or a local run can move the
//! whole tree under a temporary directory by setting [`ROOT_ENV`] (`ARGOEXEC_PATH_ROOT`).
//! With the variable unset the root is `/`, which is what a real pod uses.
//!
//! Paths that come from the *template* (a main container's `/tmp/out.txt`, a volume mount
//! path) are never re-rooted: they name files as the user's container sees them.

use std::path::{Component, Path, PathBuf};

/// Environment variable that re-roots every in-pod path (tests, local runs).
pub const ROOT_ENV: &str = "ARGOEXEC_PATH_ROOT";
/// Environment variable overriding the service-account directory (tests, local runs).
pub const SERVICE_ACCOUNT_DIR_ENV: &str = "ARGOEXEC_SERVICEACCOUNT_DIR";

/// Where a v3.6+ pod mounts its `<pod>` ConfigMap (volume `argo-env-config`): the
/// offloaded template in init, the args file in the containers whose args it holds.
pub const ARGO_CONFIG_DIR: &str = "/argo/config";
/// The ConfigMap key (and file name under [`ARGO_CONFIG_DIR`]) of an offloaded template.
pub const OFFLOADED_TEMPLATE_KEY: &str = "ARGO_TEMPLATE";
/// The ConfigMap key (and file name under [`ARGO_CONFIG_DIR`]) of offloaded args (v4.1).
pub const ARGS_FILE_KEY: &str = "ARGO_CONTAINER_ARGS_FILE";

/// The in-pod path layout, optionally under a different root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPaths {
    root: PathBuf,
}

impl Default for PodPaths {
    fn default() -> Self {
        Self::new("/")
    }
}

impl PodPaths {
    /// A layout rooted at `root` (use `/` in a pod).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The layout from [`ROOT_ENV`], or `/` when it is unset or empty.
    pub fn from_env() -> Self {
        match std::env::var_os(ROOT_ENV) {
            Some(v) if !v.is_empty() => Self::new(PathBuf::from(v)),
            _ => Self::default(),
        }
    }

    /// The root all fixed paths hang from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Join an absolute in-pod path onto the root.
    pub fn rooted(&self, abs: impl AsRef<Path>) -> PathBuf {
        self.root.join(relative(abs.as_ref()))
    }

    /// `/var/run/argo`: the emissary's shared emptyDir.
    pub fn var_run_argo(&self) -> PathBuf {
        self.rooted("/var/run/argo")
    }

    /// `/var/run/argo/argoexec`: the executor binary copied by init (mode 0555).
    pub fn argoexec_copy(&self) -> PathBuf {
        self.var_run_argo().join("argoexec")
    }

    /// `/var/run/argo/status`: the init-less layout's readiness marker
    /// ([`crate::ready::Marker`]), written by the supervisor through
    /// [`Self::status_marker_tmp`] and a rename.
    pub fn status_marker(&self) -> PathBuf {
        self.var_run_argo().join("status")
    }

    /// `/var/run/argo/status.tmp`: where the marker is written before the rename.
    pub fn status_marker_tmp(&self) -> PathBuf {
        self.var_run_argo().join("status.tmp")
    }

    /// `/var/run/argo/template`: the template JSON written by init (mode 0444).
    pub fn template_file(&self) -> PathBuf {
        self.var_run_argo().join("template")
    }

    /// `/argo/config/ARGO_TEMPLATE`: the template a v3.6+ controller offloads to the `<pod>`
    /// ConfigMap when it is too large for an environment variable, mounted in init only
    /// (init then writes [`Self::template_file`] for the other containers).
    pub fn offloaded_template(&self) -> PathBuf {
        self.rooted(ARGO_CONFIG_DIR).join(OFFLOADED_TEMPLATE_KEY)
    }

    /// `/var/run/argo/ctr`: one sub-directory per wrapped container.
    pub fn ctr_root(&self) -> PathBuf {
        self.var_run_argo().join("ctr")
    }

    /// `/var/run/argo/ctr/<name>`.
    pub fn ctr_dir(&self, container: &str) -> PathBuf {
        self.ctr_root().join(container)
    }

    /// `/var/run/argo/ctr/<name>/exitcode`.
    pub fn exitcode_file(&self, container: &str) -> PathBuf {
        self.ctr_dir(container).join(crate::protocol::EXITCODE)
    }

    /// `/var/run/argo/ctr/<name>/signal`.
    pub fn signal_file(&self, container: &str) -> PathBuf {
        self.ctr_dir(container).join(crate::protocol::SIGNAL)
    }

    /// `/var/run/argo/ctr/<name>/stdout`.
    pub fn stdout_file(&self, container: &str) -> PathBuf {
        self.ctr_dir(container).join(crate::protocol::STDOUT)
    }

    /// `/var/run/argo/ctr/<name>/combined`.
    pub fn combined_file(&self, container: &str) -> PathBuf {
        self.ctr_dir(container).join(crate::protocol::COMBINED)
    }

    /// `/var/run/argo/outputs/parameters/<abs path>`: base-layer parameter copies. The path is
    /// [`clean`]ed first, as Go's `filepath.Join` does in Argo (`/tmp/../etc/x` → `etc/x`).
    pub fn staged_parameter(&self, path: &Path) -> PathBuf {
        self.var_run_argo()
            .join("outputs/parameters")
            .join(relative(&clean(path)))
    }

    /// `/var/run/argo/outputs/parameter-errors/<abs path>`: written by the emissary wrapper
    /// instead of the copy when main's file cannot be a parameter value (a directory, a FIFO,
    /// larger than the limit); it holds the reason, which the wait side reports.
    pub fn staged_parameter_error(&self, path: &Path) -> PathBuf {
        self.var_run_argo()
            .join("outputs/parameter-errors")
            .join(relative(&clean(path)))
    }

    /// `/var/run/argo/outputs/artifacts/<abs path without trailing slash>.tgz`.
    pub fn staged_artifact(&self, path: &Path) -> PathBuf {
        let rel = relative(&clean(path));
        let mut s = self
            .var_run_argo()
            .join("outputs/artifacts")
            .join(rel)
            .into_os_string();
        s.push(".tgz");
        PathBuf::from(s)
    }

    /// `/var/run/argo/progress`: the default self-reported progress file.
    pub fn progress_file(&self) -> PathBuf {
        self.var_run_argo().join("progress")
    }

    /// `/mainctrfs`: the root under which wait and init see main's volumes.
    pub fn mainctrfs_root(&self) -> PathBuf {
        self.rooted("/mainctrfs")
    }

    /// `/mainctrfs<path>`: the wait/init mirror of a main container volume path, [`clean`]ed
    /// first so `..` resolves as it does in main (`/mnt/v/sub/../x` → `/mainctrfs/mnt/v/x`).
    /// Symlinks are not resolved here: read through [`Self::mainctrfs_root`] in-root instead.
    pub fn mainctrfs(&self, path: &Path) -> PathBuf {
        self.mainctrfs_root().join(relative(&clean(path)))
    }

    /// `/argo/inputs/artifacts`: the input-artifacts emptyDir in init.
    pub fn input_artifacts_root(&self) -> PathBuf {
        self.rooted("/argo/inputs/artifacts")
    }

    /// `/argo/inputs/artifacts/<name>`.
    pub fn input_artifact(&self, name: &str) -> PathBuf {
        self.input_artifacts_root().join(name)
    }

    /// `/argo/staging/script`: the staged script source.
    pub fn staging_script(&self) -> PathBuf {
        self.rooted("/argo/staging/script")
    }

    /// `/argo/secret/<name>/<key>`: mounted artifact-repository credentials.
    pub fn secret(&self, name: &str, key: &str) -> PathBuf {
        self.rooted("/argo/secret").join(name).join(key)
    }

    /// `/tmp/argo/outputs/artifacts`: wait's staging dir for output archives.
    pub fn output_artifact_staging(&self) -> PathBuf {
        self.rooted("/tmp/argo/outputs/artifacts")
    }

    /// `/tmp/argo/outputs/logs`: wait's staging dir for log archival.
    pub fn output_log_staging(&self) -> PathBuf {
        self.rooted("/tmp/argo/outputs/logs")
    }

    /// `/dev/termination-log`: where the first error goes (Kubernetes shows it as
    /// `state.terminated.message`).
    pub fn termination_log(&self) -> PathBuf {
        self.rooted("/dev/termination-log")
    }

    /// `/var/run/secrets/kubernetes.io/serviceaccount`.
    pub fn service_account_dir(&self) -> PathBuf {
        self.rooted("/var/run/secrets/kubernetes.io/serviceaccount")
    }

    /// The service-account directory in use: [`SERVICE_ACCOUNT_DIR_ENV`] when set (looked
    /// up with `get`), else [`Self::service_account_dir`].
    pub fn service_account_dir_from(&self, get: impl Fn(&str) -> Option<String>) -> PathBuf {
        get(SERVICE_ACCOUNT_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map_or_else(|| self.service_account_dir(), PathBuf::from)
    }
}

/// Turn an absolute path into a relative one by dropping the root and any `..`/`.` parts.
///
/// Used to hang template paths below a directory (`/mainctrfs`, `outputs/parameters`) without
/// ever escaping it: `..` components are dropped, not resolved.
pub fn relative(path: &Path) -> PathBuf {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// Lexically clean an absolute path: resolve `.` and `..` without touching the filesystem.
/// `..` at the root stays at the root. A trailing slash is dropped.
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// True when `path` equals `base` or lies beneath it (both compared after [`clean`]).
pub fn is_under(path: &Path, base: &Path) -> bool {
    clean(path).starts_with(clean(base))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_layout_is_argo_layout() {
        let p = PodPaths::default();
        assert_eq!(
            p.exitcode_file("main"),
            Path::new("/var/run/argo/ctr/main/exitcode")
        );
        assert_eq!(
            p.staged_parameter(Path::new("/tmp/x")),
            Path::new("/var/run/argo/outputs/parameters/tmp/x")
        );
        assert_eq!(
            p.staged_artifact(Path::new("/tmp/dir/")),
            Path::new("/var/run/argo/outputs/artifacts/tmp/dir.tgz")
        );
        assert_eq!(
            p.mainctrfs(Path::new("/mnt/vol/a")),
            Path::new("/mainctrfs/mnt/vol/a")
        );
        assert_eq!(p.termination_log(), Path::new("/dev/termination-log"));
    }

    #[test]
    fn dot_dot_resolves_like_main_would() {
        let p = PodPaths::default();
        assert_eq!(
            p.staged_parameter(Path::new("/tmp/../etc/hostname")),
            Path::new("/var/run/argo/outputs/parameters/etc/hostname")
        );
        assert_eq!(
            p.staged_artifact(Path::new("/tmp/../../out/")),
            Path::new("/var/run/argo/outputs/artifacts/out.tgz")
        );
        assert_eq!(
            p.mainctrfs(Path::new("/mnt/v/sub/../x")),
            Path::new("/mainctrfs/mnt/v/x")
        );
        assert_eq!(
            p.staged_parameter_error(Path::new("/tmp/p")),
            Path::new("/var/run/argo/outputs/parameter-errors/tmp/p")
        );
    }

    #[test]
    fn rerooted_layout() {
        let p = PodPaths::new("/tmp/root");
        assert_eq!(p.template_file(), Path::new("/tmp/root/var/run/argo/template"));
        assert_eq!(
            p.input_artifact("in"),
            Path::new("/tmp/root/argo/inputs/artifacts/in")
        );
    }

    #[test]
    fn clean_and_under() {
        assert_eq!(clean(Path::new("/a/./b/../c/")), Path::new("/a/c"));
        assert_eq!(clean(Path::new("/../../x")), Path::new("/x"));
        assert!(is_under(Path::new("/mnt/outer/inner/b"), Path::new("/mnt/outer")));
        assert!(is_under(Path::new("/mnt/outer"), Path::new("/mnt/outer/")));
        assert!(!is_under(Path::new("/mnt/outerx"), Path::new("/mnt/outer")));
    }

    proptest! {
        #[test]
        fn relative_never_escapes(parts in proptest::collection::vec("(\\.\\.|\\.|[a-z]{1,3}|/)", 0..12)) {
            let raw = format!("/{}", parts.join("/"));
            let rel = relative(Path::new(&raw));
            prop_assert!(rel.is_relative() || rel.as_os_str().is_empty());
            prop_assert!(rel.components().all(|c| matches!(c, Component::Normal(_))));
            let base = Path::new("/base");
            prop_assert!(base.join(&rel).starts_with(base));
        }

        #[test]
        fn clean_is_absolute_and_normal(parts in proptest::collection::vec("(\\.\\.|\\.|[a-z]{1,3})", 0..12)) {
            let raw = format!("/{}", parts.join("/"));
            let c = clean(Path::new(&raw));
            prop_assert!(c.is_absolute());
            prop_assert!(c.components().skip(1).all(|c| matches!(c, Component::Normal(_))));
        }
    }
}
