//! Init-less layout: place main's input artifacts as symlinks.
//!
//! Without an init container nothing mounts `/argo/inputs/artifacts/<name>` at an artifact's
//! path by subPath. Instead the supervisor loads each artifact into the shared
//! `input-artifacts` volume (main mounts it whole at `/argo/inputs/artifacts`) and, once the
//! pod is ready, the wrapper of the container named `main` links `art.path` →
//! `/argo/inputs/artifacts/<name>` (an absolute link target), as Argo v4.1's emissary does:
//! * an artifact with no entry in the volume is skipped (optional and not supplied, or on a
//!   user volume, where the supervisor wrote it through `/mainctrfs` instead);
//! * parent directories are created (0755);
//! * something already at the path is removed first — unless, with its parent's symlinks
//!   resolved, it lies inside a user volume or contains one: clearing it would destroy that
//!   volume's content, so that is refused;
//! * the wrapper leaves its working directory while linking and re-enters it afterwards, so
//!   a `workingDir` that is an artifact's path ends up in the artifact (a file there fails).
//!
//! Every failure ends the wrapper with 65 before the command starts.

use argoexec_core::template::Artifact;
use argoexec_core::{PodPaths, Template};
use std::io::{self, ErrorKind};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Why an input artifact could not be linked (Argo's messages).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// `getcwd` failed.
    #[error("failed to read working directory before staging input artifacts: {0}")]
    Getcwd(#[source] io::Error),
    /// Leaving the working directory failed.
    #[error("failed to leave working directory before staging input artifacts: {0}")]
    Leave(#[source] io::Error),
    /// Re-entering the working directory failed.
    #[error(
        "failed to re-enter working directory {:?} after staging input artifacts (an input artifact staged at the workingDir path must be a directory): {source}",
        dir.display().to_string()
    )]
    Reenter {
        /// The working directory.
        dir: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The artifact's entry in the shared volume could not be looked at.
    #[error("failed to stat input artifact {name:?} at {}: {source}", src.display())]
    StatSource {
        /// The artifact.
        name: String,
        /// `/argo/inputs/artifacts/<name>`.
        src: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Something about the artifact's path failed (stat, mkdir, clearing it).
    #[error("failed to {action} artifact path {} for {name:?}: {source}", path.display())]
    Path {
        /// What was being done.
        action: &'static str,
        /// The artifact.
        name: String,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Replacing the path would clear a user volume.
    #[error(
        "refusing to stage input artifact {:?} at {}: it resolves to {} {} volume mount {:?} ({}), and clearing it would destroy the mounted volume; change the artifact path or volume mount so they do not overlap",
        .0.name, .0.path.display(), .0.resolved.display(), .0.relation, .0.volume, .0.mount_path
    )]
    Overlap(Box<Overlap>),
    /// The symlink could not be made.
    #[error("failed to symlink input artifact {name:?} ({} -> {}): {source}", src.display(), dst.display())]
    Symlink {
        /// The artifact.
        name: String,
        /// The link target.
        src: PathBuf,
        /// The link.
        dst: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// The details of [`LinkError::Overlap`].
#[derive(Debug)]
pub struct Overlap {
    /// The artifact.
    pub name: String,
    /// Its path.
    pub path: PathBuf,
    /// The path with its parent's symlinks resolved.
    pub resolved: PathBuf,
    /// `inside` or `which contains`.
    pub relation: &'static str,
    /// The volume's name.
    pub volume: String,
    /// Its mount path.
    pub mount_path: String,
}

/// Link every input artifact of `template` into place (see the module docs).
///
/// # Errors
/// The first [`LinkError`].
pub fn link_inputs(paths: &PodPaths, template: &Template) -> Result<(), LinkError> {
    if template.inputs.artifacts.is_empty() {
        return Ok(());
    }
    let cwd = std::env::current_dir().map_err(LinkError::Getcwd)?;
    std::env::set_current_dir(paths.var_run_argo()).map_err(LinkError::Leave)?;
    let linked = template
        .inputs
        .artifacts
        .iter()
        .try_for_each(|art| link_one(paths, template, art));
    // Re-enter even after a failure: the process exits soon, but keep it tidy.
    let back = std::env::set_current_dir(&cwd).map_err(|source| LinkError::Reenter { dir: cwd, source });
    linked.and(back)
}

fn link_one(paths: &PodPaths, template: &Template, art: &Artifact) -> Result<(), LinkError> {
    let src = paths.input_artifact(&art.name);
    match std::fs::symlink_metadata(&src) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            tracing::info!(artifact = %art.name, "no input-artifacts entry (optional or on a volume); not linked");
            return Ok(());
        }
        Err(source) => {
            return Err(LinkError::StatSource {
                name: art.name.clone(),
                src,
                source,
            });
        }
    }
    let Some(path) = art.path.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let dst = paths.rooted(path);
    let err = |action, p: &Path, source| LinkError::Path {
        action,
        name: art.name.clone(),
        path: p.to_path_buf(),
        source,
    };
    if let Some(parent) = dst
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && *p != Path::new("/"))
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|e| err("create the parent of", &dst, e))?;
    }
    match std::fs::symlink_metadata(&dst) {
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(err("stat", &dst, e)),
        Ok(meta) => {
            check_overlap(paths, template, art, Path::new(path))?;
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(&dst)
            } else {
                std::fs::remove_file(&dst)
            };
            removed.map_err(|e| err("clear the existing", &dst, e))?;
        }
    }
    std::os::unix::fs::symlink(&src, &dst).map_err(|source| LinkError::Symlink {
        name: art.name.clone(),
        src: src.clone(),
        dst: dst.clone(),
        source,
    })?;
    tracing::info!(artifact = %art.name, path, target = %src.display(), "linked input artifact");
    Ok(())
}

/// Refuse to clear `path` when, with its parent's symlinks resolved, it is inside or contains
/// a user volume.
fn check_overlap(
    paths: &PodPaths,
    template: &Template,
    art: &Artifact,
    path: &Path,
) -> Result<(), LinkError> {
    let parent = path.parent().unwrap_or(Path::new("/"));
    let real_parent = std::fs::canonicalize(paths.rooted(parent)).unwrap_or_else(|_| paths.rooted(parent));
    // Back to the container's view (tests run under a root prefix).
    let real_parent = real_parent
        .strip_prefix(paths.root())
        .map(|p| Path::new("/").join(p))
        .unwrap_or(real_parent);
    let resolved = real_parent.join(path.file_name().unwrap_or_default());
    let found = template
        .overlapping_volume(&resolved)
        .map(|m| ("inside", m))
        .or_else(|| {
            template
                .volume_nested_under(&resolved)
                .map(|m| ("which contains", m))
        });
    match found {
        None => Ok(()),
        Some((relation, m)) => Err(LinkError::Overlap(Box::new(Overlap {
            name: art.name.clone(),
            path: path.to_path_buf(),
            resolved,
            relation,
            volume: m.name,
            mount_path: m.mount_path,
        }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(json: &str) -> Template {
        Template::from_json(json).unwrap()
    }

    #[test]
    fn links_replace_the_image_path_and_skip_what_is_not_loaded() {
        let root = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(root.path());
        std::fs::create_dir_all(paths.var_run_argo()).unwrap();
        std::fs::create_dir_all(paths.input_artifact("data")).unwrap();
        std::fs::write(paths.input_artifact("data").join("f.txt"), "hi").unwrap();
        std::fs::write(paths.input_artifact("one"), "file").unwrap();
        // The image already has something at /work/data.
        std::fs::create_dir_all(paths.rooted("/work/data/old")).unwrap();
        let t = template(
            r#"{"name":"t","container":{"image":"x"},"inputs":{"artifacts":[
              {"name":"data","path":"/work/data"},
              {"name":"one","path":"/deep/er/one.txt"},
              {"name":"absent","path":"/nowhere","optional":true}]}}"#,
        );
        link_inputs(&paths, &t).unwrap();
        let data = paths.rooted("/work/data");
        assert_eq!(std::fs::read_link(&data).unwrap(), paths.input_artifact("data"));
        assert_eq!(std::fs::read_to_string(data.join("f.txt")).unwrap(), "hi");
        assert_eq!(
            std::fs::read_to_string(paths.rooted("/deep/er/one.txt")).unwrap(),
            "file"
        );
        assert!(std::fs::symlink_metadata(paths.rooted("/nowhere")).is_err());
    }

    #[test]
    fn a_path_inside_or_around_a_volume_is_never_cleared() {
        let root = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(root.path());
        std::fs::create_dir_all(paths.var_run_argo()).unwrap();
        std::fs::create_dir_all(paths.input_artifacts_root()).unwrap();
        std::fs::write(paths.input_artifact("a"), "x").unwrap();
        std::fs::create_dir_all(paths.rooted("/mnt/vol/a")).unwrap();
        let t = template(
            r#"{"name":"t","container":{"image":"x","volumeMounts":[{"name":"v","mountPath":"/mnt/vol"}]},
               "inputs":{"artifacts":[{"name":"a","path":"/mnt/vol/a"}]}}"#,
        );
        let e = link_inputs(&paths, &t).unwrap_err();
        assert!(
            e.to_string().contains("inside volume mount \"v\" (/mnt/vol)"),
            "{e}"
        );
        assert!(paths.rooted("/mnt/vol/a").is_dir(), "the volume's content stays");
        let t = template(
            r#"{"name":"t","container":{"image":"x","volumeMounts":[{"name":"v","mountPath":"/mnt/vol"}]},
               "inputs":{"artifacts":[{"name":"a","path":"/mnt"}]}}"#,
        );
        let e = link_inputs(&paths, &t).unwrap_err();
        assert!(e.to_string().contains("which contains volume mount \"v\""), "{e}");
        assert!(paths.rooted("/mnt/vol/a").is_dir());
    }
}
