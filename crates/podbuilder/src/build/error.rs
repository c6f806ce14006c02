//! [`BuildError`]: why a pod could not be built, each variant naming what to change.

use argoexec_core::{ArgoVersion, ExecutorKind};

use crate::validate::ValidationError;

/// Why a pod could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The template fails the executor's validation.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The executor does not exist in the chosen Argo version.
    #[error(
        "the {executor} executor does not exist in Argo {version}: Argo v3.4 removed every executor but emissary; \
         use --argo-version 3.3 for {executor}, or the emissary executor"
    )]
    ExecutorNotInVersion {
        /// The executor asked for.
        executor: ExecutorKind,
        /// The version.
        version: ArgoVersion,
    },
    /// A container name is not a DNS-1123 label (`../x`, `a/b`, `.`), is reserved (`init`,
    /// `wait`) or is used twice.
    #[error("{0}; Kubernetes refuses such a pod")]
    BadName(#[from] argoexec_core::names::InvalidName),
    /// The offloaded values are larger than a ConfigMap can hold (1 MiB).
    #[error(
        "the offloaded values are {size} bytes, above the 1048576 bytes a ConfigMap can hold (templates and args \
         above 131072 bytes leave the pod for a ConfigMap); shorten the script source or the arguments, or move \
         large inputs to artifacts"
    )]
    TemplateTooLarge {
        /// The bytes to offload.
        size: usize,
    },
    /// A resource template that cannot run.
    #[error("template {template:?}: {problem}")]
    BadResource {
        /// The template name.
        template: String,
        /// What is wrong and what to change.
        problem: String,
    },
    /// A data template that cannot run.
    #[error("template {template:?}: {problem}")]
    BadData {
        /// The template name.
        template: String,
        /// What is wrong and what to change.
        problem: String,
    },
    /// Init-less layout: an input artifact's path contains a volume mount.
    #[error(
        "input artifact {artifact:?} path {path:?} is an ancestor of volume mount {volume:?} ({mount_path}); this is not \
         supported in init-less pod mode because staging the artifact would clear the mounted volume"
    )]
    InitlessInputOverVolume {
        /// The artifact.
        artifact: String,
        /// Its path.
        path: String,
        /// The volume.
        volume: String,
        /// Its mount path.
        mount_path: String,
    },
    /// An artifact goes through a plugin the config map's `artifactDrivers` does not list.
    #[error(
        "artifact plugin {plugin:?} is not in the controller config map's artifactDrivers (known: {known:?}); add \
         artifactDrivers: [{{name: {plugin}, image: <the plugin's image>}}]"
    )]
    NoArtifactDriver {
        /// The plugin.
        plugin: String,
        /// The plugins configured.
        known: Vec<String>,
    },
    /// An artifact plugin in a pod of a controller older than v4.0.
    #[error(
        "artifact plugin {plugin:?}: Argo {version} has no artifact plugins (they came with v4.0); use --argo-version 4.0 or later"
    )]
    PluginsNeedV4 {
        /// The plugin.
        plugin: String,
        /// The version asked for.
        version: ArgoVersion,
    },
    /// The template has nothing to run.
    #[error("template {0:?} has no container, script, containerSet, resource or data")]
    NoMain(String),
    /// Emissary needs a command and none is known.
    #[error(
        "container {container:?} (image {image:?}): the emissary executor needs its command; set `command` in the template \
         or list the image in the controller config map: images: {{{image:?}: {{command: [...]}}}}"
    )]
    NoCommand {
        /// Container name.
        container: String,
        /// Image.
        image: String,
    },
    /// A raw Kubernetes value in the template or config does not parse.
    #[error("{what}: {message}")]
    BadValue {
        /// Which value.
        what: String,
        /// The serde error.
        message: String,
    },
}
