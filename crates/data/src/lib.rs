//! `argoexec-data`: Argo's data templates (`argoexec data` in the main container; Argo
//! v4.1.2 `workflow/data/data.go`, `workflow/executor/data.go`).
//!
//! [`process`] is Argo's `ProcessData`: the source (the only kind is `artifactPaths`: the
//! artifact, relocated onto the template's archive location when key-only, listed by its
//! driver, [`source`]) gives a list of keys; each transformation step's `expression` is an
//! expr-lang program over `{data: <previous value>}` ([`argoexec_expr`]); steps with an empty
//! expression are skipped, as Argo does. [`run`] wraps it in the report handshake: `start`,
//! then one report whose `outputs.result` is the value as Go's `json.Marshal` prints it
//! ([`result_text`]), or whose message is the error — worded as Argo's (`unable to process
//! data template: …`).

pub mod source;

use std::sync::Arc;

use argoexec_artifacts::Settings;
use argoexec_core::template::{Outputs, Template};
use argoexec_expr::ExprError;
use argoexec_report::{NodeResult, OutputReporter, ReportError};
use serde_json::Value;

pub use source::SourceError;

/// Why a data step failed (the texts are Argo's, prefixes included).
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The template has no `data`.
    #[error("unable to process data template: no data template found")]
    NoTemplate,
    /// `data.source` names no source kind.
    #[error(
        "unable to process data template: unable to process data source: no valid source is used for data template"
    )]
    NoSource,
    /// Listing the artifact paths failed.
    #[error(
        "unable to process data template: unable to process data source: unable to source artifact paths"
    )]
    Source(#[source] SourceError),
    /// A transformation step failed.
    #[error(
        "unable to process data template: unable to process data transformation: error processing data step {index}"
    )]
    Step {
        /// The step's index (from 0).
        index: usize,
        /// The expression's error.
        #[source]
        source: ExprError,
    },
    /// The result could not be reported.
    #[error("cannot report the data template's result")]
    Report(#[source] ReportError),
}

/// Source, then transform: the data value.
///
/// # Errors
/// [`DataError`] naming what failed.
pub async fn process(template: &Template, settings: &Arc<Settings>) -> Result<Value, DataError> {
    let data = template.data.as_ref().ok_or(DataError::NoTemplate)?;
    let artifact = data.source.artifact_paths.as_ref().ok_or(DataError::NoSource)?;
    let archive = template.archive_location.as_ref().map(|a| &a.location);
    let keys = source::artifact_paths(artifact, archive, settings)
        .await
        .map_err(DataError::Source)?;
    tracing::info!(keys = keys.len(), "data source listed");
    let mut value = Value::Array(keys.into_iter().map(Value::String).collect());
    for (index, step) in data.transformation.iter().enumerate() {
        if step.expression.is_empty() {
            continue;
        }
        value = argoexec_expr::eval_data(&step.expression, value)
            .map_err(|source| DataError::Step { index, source })?;
    }
    Ok(value)
}

/// The value as Go's `json.Marshal` prints it: compact, object keys sorted, `<`, `>`, `&`
/// escaped as `\u003c`, `\u003e`, `\u0026`, whole floats without a fraction.
pub fn result_text(value: &Value) -> String {
    argoexec_resource::gojson::marshal(value)
}

/// The error and its sources joined with ": ", as Go's wrapped errors print.
pub fn message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        cur = c.source();
    }
    text
}

/// The report handshake around [`process`] (Argo's `HandleError`/`FinalizeOutput` around
/// `Data`): `start`, then one report with the outputs (`result` set) or the error.
///
/// # Errors
/// The step's error; a report failure when the step itself succeeded.
pub async fn run<R>(reporter: &R, template: &Template, settings: &Arc<Settings>) -> Result<Outputs, DataError>
where
    R: OutputReporter<Error = ReportError>,
{
    if let Err(e) = reporter.start().await {
        tracing::warn!(error = %e, "could not mark the task result report-outputs-completed=false");
    }
    let result = process(template, settings).await.map(|value| {
        let mut outputs = template.outputs.clone();
        outputs.artifacts.clear();
        outputs.result = Some(result_text(&value));
        outputs
    });
    let report = match &result {
        Ok(outputs) => NodeResult {
            outputs: outputs.clone(),
            ..Default::default()
        },
        Err(e) => NodeResult {
            message: Some(message(e)),
            ..Default::default()
        },
    };
    match (result, reporter.report(&report).await) {
        (Ok(o), Ok(())) => Ok(o),
        (Ok(_), Err(e)) => Err(DataError::Report(e)),
        (Err(e), Err(r)) => {
            tracing::warn!(error = %r, "could not report the failure");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(v: Value) -> Template {
        serde_json::from_value(v).unwrap()
    }

    #[tokio::test]
    async fn local_listing_filtered_and_mapped() {
        let d = tempfile::tempdir().unwrap();
        for f in ["a/main.log", "a/init.log", "b/main.log"] {
            let p = d.path().join("logs").join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let root = d.path().join("logs");
        let t = template(json!({"name": "d", "data": {
            "source": {"artifactPaths": {"name": "logs", "local": {"path": root}}},
            "transformation": [{"expression": "filter(data, {# endsWith \"main.log\"})"},
                               {"expression": ""},
                               {"expression": "map(data, {# + \"<&>\"})"}]}}));
        let v = process(&t, &Arc::new(Settings::default())).await.unwrap();
        let r = root.display();
        assert_eq!(
            v,
            json!([format!("{r}/a/main.log<&>"), format!("{r}/b/main.log<&>")])
        );
        let text = result_text(&v);
        assert!(
            text.starts_with("[\"") && text.contains("\\u003c\\u0026\\u003e\",\""),
            "{text}"
        );
    }

    #[tokio::test]
    async fn errors_are_worded_as_argos() {
        let s = Arc::new(Settings::default());
        let e = process(&template(json!({"name": "d"})), &s).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "unable to process data template: no data template found"
        );
        let e = process(&template(json!({"name": "d", "data": {"source": {}}})), &s)
            .await
            .unwrap_err();
        assert!(matches!(e, DataError::NoSource), "{e}");
        let d = tempfile::tempdir().unwrap();
        let t = template(json!({"name": "d", "data": {
            "source": {"artifactPaths": {"name": "x", "local": {"path": d.path()}}},
            "transformation": [{"expression": "len(data)"}, {"expression": "data + nosuch"}]}}));
        std::fs::write(d.path().join("f"), "x").unwrap();
        let e = process(&t, &s).await.unwrap_err();
        assert!(matches!(e, DataError::Step { index: 1, .. }), "{e:?}");
        let text = message(&e);
        assert!(
            text.starts_with("unable to process data template: unable to process data transformation: error processing data step 1: "),
            "{text}"
        );
        assert!(text.contains("nosuch"), "{text}");
        let gone = template(json!({"name": "d", "data": {
            "source": {"artifactPaths": {"name": "x", "local": {"path": d.path().join("missing")}}}}}));
        let text = message(&process(&gone, &s).await.unwrap_err());
        assert!(
            text.contains("unable to source artifact paths: artifact not found"),
            "{text}"
        );
    }
}
