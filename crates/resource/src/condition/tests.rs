//! The selector parser against apimachinery's grammar, and matching over gjson paths.

use super::*;
use serde_json::json;

fn parse(s: &str) -> Condition {
    Condition::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn err(s: &str) -> String {
    Condition::parse(s).expect_err(s).to_string()
}

#[test]
fn every_operator_parses_and_prints_as_apimachinery() {
    let cases = [
        ("status.phase == Succeeded", "status.phase==Succeeded"),
        ("status.phase=Succeeded", "status.phase=Succeeded"),
        ("status.phase != Failed", "status.phase!=Failed"),
        (
            "status.phase in (Failed, Error)",
            "status.phase in (Error,Failed)",
        ),
        ("status.phase notin (a,b,a)", "status.phase notin (a,b)"),
        ("status.succeeded > 2", "status.succeeded>2"),
        ("status.failed<1", "status.failed<1"),
        ("status.startTime", "status.startTime"),
        ("!status.failed", "!status.failed"),
        ("metadata.labels.a/b=c", "metadata.labels.a/b=c"),
        ("a=", "a="),
        ("a in ()", "a in ()"),
        ("a in (,x)", "a in (,x)"),
        // `in` and `notin` are words where a key or a value is expected.
        ("in=notin", "in=notin"),
    ];
    for (text, printed) in cases {
        assert_eq!(parse(text).to_string(), printed, "{text}");
    }
}

#[test]
fn requirements_are_sorted_by_key() {
    let c = parse("z=1,a=2, m");
    let keys: Vec<&str> = c.requirements.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["a", "m", "z"]);
    assert_eq!(Condition::parse("").unwrap().requirements.len(), 0);
}

#[test]
fn syntax_errors_are_apimachinerys() {
    assert_eq!(
        parse("status.phase ==").to_string(),
        "status.phase==",
        "an empty value is allowed"
    );
    assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
    assert_eq!(err("a=b,"), "found '', expected: identifier after ','");
    assert_eq!(
        err("=a"),
        "found '=', expected: !, identifier, or 'end of string'"
    );
    assert!(err("a in b").contains("expected: '('"), "{}", err("a in b"));
    assert!(
        err("a in (b").contains("expected: ',' or ')'"),
        "{}",
        err("a in (b")
    );
    assert!(err("a > x").contains("must be an integer"));
    assert!(
        err("a > -1").contains("a valid label"),
        "negative numbers are not label values"
    );
    assert!(
        err("items.# > 1").contains("invalid label key"),
        "# is not in a label key"
    );
    assert!(err("a.b/c/d").contains("invalid label key"));
    assert!(err("Upper/x=1").contains("prefix part"));
    assert!(err("status.phase == 'x'").contains("a valid label"));
    assert!(
        err("a=>1").contains("unable to parse requirement"),
        "{}",
        err("a=>1")
    );
    assert!(err("!a=b").contains("expected: ',' or 'end of string'"));
    assert!(err("a ! b").contains("unable to parse requirement"));
    let long = "a".repeat(64);
    assert!(err(&format!("{long}=1")).contains("63"));
}

fn job() -> serde_json::Value {
    json!({
        "metadata": {"name": "j", "labels": {"app": "web"}},
        "status": {"succeeded": 3, "failed": 0, "phase": "Running", "ratio": 1.5,
                   "conditions": [{"type": "Complete", "status": "True"}]},
    })
}

#[test]
fn matching_follows_apimachinery_over_gjson() {
    let j = job();
    let m = |s: &str| parse(s).all_match(&j);
    assert!(m("status.succeeded > 2"));
    assert!(!m("status.succeeded > 3"));
    assert!(m("status.failed < 1"));
    assert!(!m("status.ratio > 1"), "not an integer: no match");
    assert!(!m("status.missing < 5"), "absent: no match");
    assert!(m("status.phase == Running"));
    assert!(m("status.phase = Running"));
    assert!(m("status.phase in (Pending, Running)"));
    assert!(!m("status.phase notin (Pending, Running)"));
    assert!(m("status.phase != Failed"));
    assert!(m("status.missing != Failed"), "absent matches !=");
    assert!(m("status.missing notin (a)"), "absent matches notin");
    assert!(!m("status.missing == x"));
    assert!(m("status.succeeded == 3"));
    assert!(m("status.conditions.0.type == Complete"));
    assert!(m("metadata.labels.app"));
    assert!(m("!metadata.labels.other"));
    assert!(!m("!metadata.labels.app"));
    assert!(m("status.succeeded > 2, status.phase == Running"));
    assert!(!m("status.succeeded > 2, status.phase == Failed"));
    assert!(
        !m("status.missing="),
        "an absent key never equals, even the empty value"
    );
}

#[test]
fn failure_reports_the_first_matching_requirement() {
    let j = job();
    let c = parse("status.phase in (Failed, Error), status.failed < 1");
    assert_eq!(
        c.first_match(&j).map(ToString::to_string).as_deref(),
        Some("status.failed<1")
    );
    let c = parse("status.phase == Failed");
    assert!(c.first_match(&j).is_none());
}
