//! The config map's `artifactDrivers` (Argo v4.0+): the artifact plugins a controller knows,
//! each a name, the image that serves it and a connection timeout
//! (`AW@v4.1.2:config/config.go` `ArtifactDriver`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One `artifactDrivers` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactDriver {
    /// The plugin's name, as artifacts name it (`plugin: {name: …}`).
    pub name: String,
    /// The image whose entrypoint serves the plugin on its socket.
    pub image: String,
    /// How long the executor waits for the plugin's socket (Argo: 5 s when unset or 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_timeout_seconds: Option<u32>,
}

/// Parse the `artifactDrivers` value. Names must be unique DNS-1123 labels short enough for
/// the container names made of them (`init-artifact-<name>`, 63 characters at most), and
/// every driver needs an image.
///
/// # Errors
/// What is wrong, with the entry's index.
pub fn parse(v: Value) -> Result<Vec<ArtifactDriver>, String> {
    let drivers: Vec<ArtifactDriver> = serde_json::from_value(v)
        .map_err(|e| format!("must be a list of {{name, image, connectionTimeoutSeconds}}: {e}"))?;
    for (i, d) in drivers.iter().enumerate() {
        let longest = format!("init-artifact-{}", d.name);
        if let Some(problem) = argoexec_core::names::label_problem(&longest) {
            return Err(format!(
                "[{i}].name {:?}: plugin names become container names ({longest}), which {problem}; at most 49 \
                 characters",
                d.name
            ));
        }
        if d.image.trim().is_empty() {
            return Err(format!("[{i}].image: the plugin {:?} needs an image", d.name));
        }
        if drivers[..i].iter().any(|o| o.name == d.name) {
            return Err(format!("[{i}].name {:?} is listed twice", d.name));
        }
    }
    Ok(drivers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_and_their_faults() {
        let d = parse(json!([{"name": "dir", "image": "p:1", "connectionTimeoutSeconds": 9}])).unwrap();
        assert_eq!(d[0].connection_timeout_seconds, Some(9));
        assert!(
            parse(json!([{"name": "Dir", "image": "p"}]))
                .unwrap_err()
                .contains("container names")
        );
        assert!(
            parse(json!([{"name": "a", "image": " "}]))
                .unwrap_err()
                .contains("image")
        );
        assert!(
            parse(json!([{"name": "a", "image": "p"}, {"name": "a", "image": "q"}]))
                .unwrap_err()
                .contains("twice")
        );
        assert!(parse(json!({"name": "a"})).is_err());
        assert!(parse(json!([{"name": "x".repeat(50), "image": "p"}])).is_err());
    }
}
