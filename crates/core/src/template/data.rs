//! Data templates (`template.data`, Argo v3.1+): a source listed by an artifact driver, then
//! expression steps; the JSON result becomes `outputs.result`. Field names as Argo's
//! `data_types.go`; the only source Argo has is `artifactPaths`, the only step kind
//! `expression` (there is no `filter` step in the API, whatever older docs say).

use serde::{Deserialize, Serialize};

use super::{Artifact, Extra};

/// `template.data`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataTemplate {
    /// Where the data comes from.
    #[serde(default)]
    pub source: DataSource,
    /// The steps applied in order, each to the previous one's result.
    #[serde(default)]
    pub transformation: Vec<TransformationStep>,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `data.source`: exactly one kind (today only `artifactPaths`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataSource {
    /// List the objects under an artifact location (the driver's `ListObjects`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_paths: Option<Artifact>,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One transformation step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransformationStep {
    /// An expr-lang program over `{data: <previous result>}`.
    #[serde(default)]
    pub expression: String,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_argos_data_template() {
        let t: DataTemplate = serde_json::from_str(
            r#"{"source":{"artifactPaths":{"name":"b","s3":{"bucket":"my-bucket"}}},
                "transformation":[{"expression":"filter(data, {# endsWith \"main.log\"})"}]}"#,
        )
        .unwrap();
        let a = t.source.artifact_paths.as_ref().unwrap();
        assert_eq!(a.name, "b");
        assert_eq!(
            a.location.s3.as_ref().unwrap().bucket.as_deref(),
            Some("my-bucket")
        );
        assert_eq!(t.transformation.len(), 1);
        assert!(t.transformation[0].expression.starts_with("filter("));
    }
}
