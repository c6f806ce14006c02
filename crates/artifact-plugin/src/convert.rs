//! An Argo artifact as an artifact plugin sees it (Argo's `convertToGRPC`): the artifact's
//! own fields and its plugin location, copied field by field. The archive strategy, the
//! global name, the GC strategy and every other location kind are never sent.

use argoexec_core::template::Artifact;
use serde_json::Value;

use crate::wire;

/// The plugin location of `art` (`plugin: {name, configuration, key,
/// connectionTimeoutSeconds}`), if it has one.
pub fn plugin_location(art: &Artifact) -> Option<wire::PluginArtifact> {
    let p = art.location.extra.get("plugin")?;
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    Some(wire::PluginArtifact {
        name: text("name"),
        configuration: text("configuration"),
        key: text("key"),
        connection_timeout_seconds: p
            .get("connectionTimeoutSeconds")
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(0),
    })
}

/// `art` as the wire message.
pub fn to_wire(art: &Artifact) -> wire::Artifact {
    let extra = &art.location.extra;
    let text = |k: &str| {
        extra
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    wire::Artifact {
        name: art.name.clone(),
        path: art.path.clone().unwrap_or_default(),
        mode: art.mode.and_then(|m| i32::try_from(m).ok()).unwrap_or(0),
        from: text("from"),
        plugin: plugin_location(art),
        optional: art.optional,
        sub_path: text("subPath"),
        recurse_mode: art.recurse_mode.unwrap_or(false),
        from_expression: text("fromExpression"),
        deleted: extra.get("deleted").and_then(Value::as_bool).unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_copied_and_other_locations_dropped() {
        let art: Artifact = serde_json::from_value(serde_json::json!({
            "name": "data", "path": "/tmp/data", "mode": 420, "optional": true, "recurseMode": true,
            "subPath": "x/y", "from": "{{steps.a.outputs.artifacts.b}}",
            "plugin": {"name": "dir", "configuration": "root: /srv", "key": "wf/data.tgz",
                       "connectionTimeoutSeconds": 7},
            "archive": {"none": {}}
        }))
        .unwrap();
        let w = to_wire(&art);
        assert_eq!(w.name, "data");
        assert_eq!(w.path, "/tmp/data");
        assert_eq!(w.mode, 420);
        assert!(w.optional && w.recurse_mode);
        assert_eq!(w.sub_path, "x/y");
        assert_eq!(w.from, "{{steps.a.outputs.artifacts.b}}");
        let p = w.plugin.unwrap();
        assert_eq!(
            (
                p.name.as_str(),
                p.configuration.as_str(),
                p.key.as_str(),
                p.connection_timeout_seconds
            ),
            ("dir", "root: /srv", "wf/data.tgz", 7)
        );
        let s3: Artifact =
            serde_json::from_value(serde_json::json!({"name": "s", "s3": {"bucket": "b", "key": "k"}}))
                .unwrap();
        assert!(to_wire(&s3).plugin.is_none());
    }

    #[test]
    fn the_wire_bytes_use_argos_field_numbers() {
        use prost::Message;
        // SaveArtifactRequest puts `path` first (field 1), the artifact second (field 2).
        let req = wire::SaveArtifactRequest {
            path: "/p".into(),
            output_artifact: Some(wire::Artifact {
                name: "a".into(),
                ..Default::default()
            }),
        };
        assert_eq!(req.encode_to_vec(), [0x0a, 2, b'/', b'p', 0x12, 3, 0x0a, 1, b'a']);
        let load = wire::LoadArtifactRequest {
            input_artifact: Some(wire::Artifact {
                plugin: Some(wire::PluginArtifact {
                    key: "k".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            path: "/q".into(),
        };
        // input_artifact (1) { plugin (5) { key (4) } }, path (2).
        assert_eq!(
            load.encode_to_vec(),
            [0x0a, 5, 0x2a, 3, 0x22, 1, b'k', 0x12, 2, b'/', b'q']
        );
    }
}
