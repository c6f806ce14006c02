//! The manifest: where it is, staging it, and its YAML documents.
//!
//! As Argo's `argoexec resource` (`StageFiles` in `workflow/executor/executor.go`, v4.1.2),
//! the command itself writes `template.resource.manifest` to [`MANIFEST_PATH`] before acting
//! (init does not), unless `manifestFrom.artifact` names an input artifact, whose `path` is
//! then read instead (init loaded it there).
//!
//! The file may hold several YAML documents (`---`); empty ones are skipped. YAML is parsed
//! by serde-saphyr, which reads an unquoted `yes` as `true`, as kubectl's YAML 1.1 does.

use std::path::{Path, PathBuf};

use argoexec_core::template::Template;
use serde_json::Value;

use crate::ResourceError;

/// Where the manifest is staged (Argo's `common.ExecutorResourceManifestPath`).
pub const MANIFEST_PATH: &str = "/tmp/manifest.yaml";
/// Overrides [`MANIFEST_PATH`] (tests, running outside a pod).
pub const MANIFEST_PATH_ENV: &str = "ARGOEXEC_RESOURCE_MANIFEST";

/// The file the action reads: the `manifestFrom` artifact's path, else `default`.
pub fn manifest_path(template: &Template, default: &Path) -> PathBuf {
    let from = template.resource.as_ref().and_then(|r| r.manifest_from.as_ref());
    if let Some(from) = from {
        let artifact = template
            .inputs
            .artifacts
            .iter()
            .find(|a| a.name == from.artifact.name);
        if let Some(path) = artifact.and_then(|a| a.path.as_deref()) {
            return PathBuf::from(path);
        }
    }
    default.to_path_buf()
}

/// Write `template.resource.manifest` to `path` (mode 0644), unless the manifest comes from
/// an artifact.
///
/// # Errors
/// [`ResourceError::ManifestFile`].
pub fn stage(template: &Template, path: &Path) -> Result<(), ResourceError> {
    let Some(resource) = &template.resource else {
        return Ok(());
    };
    if resource.manifest_from.is_some() {
        return Ok(());
    }
    let body = resource.manifest.as_deref().unwrap_or("");
    let err = |source| ResourceError::ManifestFile {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(path, body).map_err(err)
}

/// Read the manifest: its documents as JSON values (empty documents left out).
///
/// # Errors
/// [`ResourceError::ManifestFile`], [`ResourceError::ManifestYaml`].
pub fn read(path: &Path) -> Result<Vec<Value>, ResourceError> {
    let text = std::fs::read_to_string(path).map_err(|source| ResourceError::ManifestFile {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// Parse manifest text (`path` only names it in errors).
///
/// # Errors
/// [`ResourceError::ManifestYaml`].
pub fn parse(text: &str, path: &Path) -> Result<Vec<Value>, ResourceError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|source| ResourceError::ManifestYaml {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use argoexec_core::template::{Artifact, ManifestFrom, ResourceTemplate};

    #[test]
    fn documents_and_errors() {
        let p = Path::new("/tmp/manifest.yaml");
        let docs = parse("a: 1\n---\n---\n# only a comment\n---\nb: [x, yes]\n", p).unwrap();
        assert_eq!(
            docs,
            vec![serde_json::json!({"a": 1}), serde_json::json!({"b": ["x", true]})]
        );
        assert!(parse("  \n", p).unwrap().is_empty());
        let e = parse("a: 1\nb: [unclosed\n", p).unwrap_err().to_string();
        assert!(e.contains("/tmp/manifest.yaml") && e.contains("line"), "{e}");
        let json = parse(r#"[{"op": "add", "path": "/a", "value": 1}]"#, p).unwrap();
        assert!(json[0].is_array());
    }

    #[test]
    fn staging_and_the_artifact_path() {
        let d = tempfile::tempdir().unwrap();
        let default = d.path().join("sub/manifest.yaml");
        let mut t = Template {
            resource: Some(ResourceTemplate {
                action: "create".into(),
                manifest: Some("kind: ConfigMap\n".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        stage(&t, &default).unwrap();
        assert_eq!(std::fs::read_to_string(&default).unwrap(), "kind: ConfigMap\n");
        assert_eq!(manifest_path(&t, &default), default);
        t.inputs.artifacts.push(Artifact {
            name: "m".into(),
            path: Some("/in/m.yaml".into()),
            ..Default::default()
        });
        t.resource.as_mut().unwrap().manifest_from = Some(ManifestFrom {
            artifact: Artifact {
                name: "m".into(),
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(manifest_path(&t, &default), PathBuf::from("/in/m.yaml"));
        std::fs::remove_file(&default).unwrap();
        stage(&t, &default).unwrap();
        assert!(!default.exists(), "manifestFrom: nothing staged");
    }
}
