//! The config map's `artifactRepository` turned into a template's archive location, as the
//! controller does for a template without one: the repository's kind and settings are
//! copied, and its key format (`keyFormat` for S3 and GCS, `blobNameFormat` for Azure, the
//! key appended to `repoURL` for Artifactory, `keyFormat` for a plugin) is resolved with the workflow and pod names.
//! The default format is Argo's `{{workflow.name}}/{{pod.name}}`. Placeholders other than
//! `workflow.name`, `workflow.namespace` and `pod.name` are refused rather than left in keys.

use argoexec_core::template::{ArchiveLocation, ArtifactLocation, ArtifactoryArtifact};
use serde_json::Value;

const DEFAULT_FORMAT: &str = "{{workflow.name}}/{{pod.name}}";

/// Check the repository's shape.
///
/// # Errors
/// No known kind, or a field of the wrong type.
pub fn parse(repo: &Value) -> Result<(ArchiveLocation, String), String> {
    let mut v = repo.clone();
    let obj = v.as_object_mut().ok_or("must be a mapping")?;
    let archive_logs = match obj.remove("archiveLogs") {
        None => None,
        Some(Value::Bool(b)) => Some(b),
        Some(_) => return Err("archiveLogs must be true or false".into()),
    };
    let mut format = DEFAULT_FORMAT.to_string();
    for (kind, field) in [
        ("s3", "keyFormat"),
        ("gcs", "keyFormat"),
        ("azure", "blobNameFormat"),
        ("plugin", "keyFormat"),
    ] {
        if let Some(f) = obj
            .get_mut(kind)
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove(field))
        {
            format = f
                .as_str()
                .ok_or(format!("{kind}.{field} must be a string"))?
                .to_string();
        }
    }
    if let Some(a) = obj.get_mut("artifactory").and_then(Value::as_object_mut)
        && let Some(url) = a.remove("repoURL")
    {
        a.insert("url".into(), url);
    }
    let location: ArtifactLocation = serde_json::from_value(v).map_err(|e| e.to_string())?;
    if !location.has_location() {
        return Err("names no repository kind (s3, gcs, azure, artifactory, …)".into());
    }
    Ok((
        ArchiveLocation {
            archive_logs,
            location,
        },
        format,
    ))
}

fn resolve(format: &str, workflow: &str, namespace: &str, pod: &str) -> Result<String, String> {
    let mut out = format.to_string();
    for (k, v) in [
        ("workflow.name", workflow),
        ("workflow.namespace", namespace),
        ("pod.name", pod),
    ] {
        out = out.replace(&format!("{{{{{k}}}}}", k = k), v);
    }
    if let Some(i) = out.find("{{") {
        return Err(format!(
            "key format placeholder {} is not supported here",
            &out[i..]
        ));
    }
    Ok(out)
}

/// The archive location for a pod of `workflow` from the repository.
///
/// # Errors
/// An invalid repository or an unsupported placeholder.
pub fn archive_location(
    repo: &Value,
    workflow: &str,
    namespace: &str,
    pod: &str,
) -> Result<ArchiveLocation, String> {
    let (mut arch, format) = parse(repo)?;
    let key = resolve(&format, workflow, namespace, pod)?;
    let loc = &mut arch.location;
    if let Some(s3) = &mut loc.s3 {
        s3.key = key;
    } else if let Some(g) = &mut loc.gcs {
        g.key = key;
    } else if let Some(a) = &mut loc.azure {
        a.blob = key;
    } else if let Some(ArtifactoryArtifact { url, .. }) = &mut loc.artifactory {
        *url = format!("{}/{key}", url.trim_end_matches('/'));
    } else if let Some(p) = loc.extra.get_mut("plugin").and_then(Value::as_object_mut) {
        // Argo v4.0 `PluginArtifactRepository`: {name, configuration, keyFormat} → {name, configuration, key}.
        p.insert("key".into(), Value::String(key));
    }
    Ok(arch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_follow_the_format() {
        let repo = json!({"archiveLogs": true, "s3": {"bucket": "b", "endpoint": "minio:9000", "insecure": true,
            "keyFormat": "runs/{{workflow.namespace}}/{{workflow.name}}/{{pod.name}}",
            "accessKeySecret": {"name": "s", "key": "a"}, "secretKeySecret": {"name": "s", "key": "k"}}});
        let a = archive_location(&repo, "wf", "ns", "wf-1").unwrap();
        assert_eq!(a.archive_logs, Some(true));
        let s3 = a.location.s3.unwrap();
        assert_eq!(s3.key, "runs/ns/wf/wf-1");
        assert_eq!(s3.bucket.as_deref(), Some("b"));
        assert!(!s3.extra.contains_key("keyFormat"));
        let az = archive_location(
            &json!({"azure": {"endpoint": "https://a.blob.core.windows.net", "container": "c"}}),
            "w",
            "n",
            "p",
        )
        .unwrap();
        assert_eq!(az.location.azure.unwrap().blob, "w/p");
        let af = archive_location(
            &json!({"artifactory": {"repoURL": "https://af/repo/"}}),
            "w",
            "n",
            "p",
        )
        .unwrap();
        assert_eq!(af.location.artifactory.unwrap().url, "https://af/repo/w/p");
        assert!(archive_location(&json!({"s3": {"keyFormat": "{{workflow.uid}}"}}), "w", "n", "p").is_err());
        let plugin = archive_location(
            &json!({"archiveLogs": true, "plugin": {"name": "dir", "configuration": "root: /r", "keyFormat": "k/{{pod.name}}"}}),
            "w",
            "n",
            "p",
        )
        .unwrap();
        assert_eq!(
            plugin.location.extra["plugin"],
            json!({"name": "dir", "configuration": "root: /r", "key": "k/p"})
        );
        assert!(parse(&json!({"nothing": {}})).is_err());
    }
}
