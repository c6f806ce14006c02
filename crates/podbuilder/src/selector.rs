//! Kubernetes label selectors (`metav1.LabelSelector`): `matchLabels` and `matchExpressions`
//! with `In`, `NotIn`, `Exists`, `DoesNotExist`, all terms ANDed. An empty selector matches
//! everything, as in Kubernetes. An unknown operator matches nothing; the config map parser
//! refuses such a selector up front with [`LabelSelector::validate`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One `matchExpressions` term.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// Values for `In`/`NotIn`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// A label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact matches.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default)]
    pub match_expressions: Vec<Requirement>,
}

impl LabelSelector {
    /// The API server's rules for a selector: every requirement has a key, a known operator,
    /// values for `In`/`NotIn` and none for `Exists`/`DoesNotExist`; `matchLabels` keys are
    /// not empty.
    ///
    /// # Errors
    /// `(field, message)`, the field relative to the selector (`matchExpressions[0].operator`).
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.match_labels.keys().any(String::is_empty) {
            return Err(("matchLabels".into(), "a label key must not be empty".into()));
        }
        for (i, r) in self.match_expressions.iter().enumerate() {
            let field = |f: &str| format!("matchExpressions[{i}].{f}");
            if r.key.is_empty() {
                return Err((field("key"), "must not be empty".into()));
            }
            match r.operator.as_str() {
                "In" | "NotIn" if r.values.is_empty() => {
                    return Err((
                        field("values"),
                        format!("must be specified when `operator` is {}", r.operator),
                    ));
                }
                "Exists" | "DoesNotExist" if !r.values.is_empty() => {
                    return Err((
                        field("values"),
                        format!("may not be specified when `operator` is {}", r.operator),
                    ));
                }
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => {
                    return Err((
                        field("operator"),
                        format!(
                            "{other:?} is not a valid selector operator (In, NotIn, Exists, DoesNotExist)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether `labels` satisfy every term.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| {
                let got = labels.get(&r.key);
                match r.operator.as_str() {
                    "In" => got.is_some_and(|v| r.values.contains(v)),
                    "NotIn" => got.is_none_or(|v| !r.values.contains(v)),
                    "Exists" => got.is_some(),
                    "DoesNotExist" => got.is_none(),
                    _ => false,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(p: &[(&str, &str)]) -> BTreeMap<String, String> {
        p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn semantics() {
        assert!(
            LabelSelector::default().matches(&l(&[])),
            "empty selector matches everything"
        );
        let s = LabelSelector {
            match_labels: l(&[("a", "1")]),
            match_expressions: vec![
                req("b", "In", &["x", "y"]),
                req("c", "NotIn", &["z"]),
                req("d", "Exists", &[]),
                req("e", "DoesNotExist", &[]),
            ],
        };
        assert!(s.matches(&l(&[("a", "1"), ("b", "y"), ("d", "")])));
        assert!(!s.matches(&l(&[("a", "2"), ("b", "y"), ("d", "")])));
        assert!(!s.matches(&l(&[("a", "1"), ("b", "q"), ("d", "")])));
        assert!(!s.matches(&l(&[("a", "1"), ("b", "x"), ("c", "z"), ("d", "")])));
        assert!(!s.matches(&l(&[("a", "1"), ("b", "x")])));
        assert!(!s.matches(&l(&[("a", "1"), ("b", "x"), ("d", ""), ("e", "")])));
        let bad = LabelSelector {
            match_expressions: vec![req("a", "Gt", &["1"])],
            ..Default::default()
        };
        assert!(!bad.matches(&l(&[("a", "2")])));
    }
}
