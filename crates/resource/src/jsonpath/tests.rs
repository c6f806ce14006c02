//! Every case of `tests/data/jsonpath-kubectl.json`: what kubectl 1.32 printed (or the error
//! it gave) for a template over `tests/data/jsonpath-object.json`.

use super::*;

const OBJECT: &str = include_str!("../../tests/data/jsonpath-object.json");
const CASES: &str = include_str!("../../tests/data/jsonpath-kubectl.json");

fn run(template: &str, data: &Value) -> Result<String, JsonPathError> {
    Template::parse(template)?.execute(data)
}

#[test]
fn agrees_with_kubectl() {
    let data: Value = serde_json::from_str(OBJECT).unwrap();
    let cases: Value = serde_json::from_str(CASES).unwrap();
    let mut checked = 0;
    for case in cases["cases"].as_array().unwrap() {
        let t = case["template"].as_str().unwrap();
        let got = run(t, &data);
        match (case.get("out"), case.get("error")) {
            (Some(out), _) => assert_eq!(got.as_deref(), Ok(out.as_str().unwrap()), "template {t}"),
            (_, Some(e)) => {
                let mine = got.expect_err(t).0;
                let theirs = e.as_str().unwrap();
                assert!(
                    theirs.contains(&mine),
                    "template {t}: kubectl said {theirs:?}, we said {mine:?}"
                );
            }
            _ => unreachable!(),
        }
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn recursive_descent_in_key_order() {
    let data: Value = serde_json::from_str(OBJECT).unwrap();
    // kubectl's order follows Go's map iteration (random); ours is sorted by key.
    assert_eq!(run("{..name}", &data).unwrap(), "t1 x w z");
}

#[test]
fn nested_ranges() {
    let data = serde_json::json!({"a": [{"b": [1, 2]}, {"b": [3]}]});
    let t = "{range .a[*]}<{range .b[*]}{@},{end}>{end}";
    assert_eq!(run(t, &data).unwrap(), "<1,2,><3,>");
    assert_eq!(run("{range .missing[*]}x{end}done", &data).unwrap(), "done");
}
