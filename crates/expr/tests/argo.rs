//! The expressions Argo's documentation and examples use for data templates
//! (`docs/data-sourcing-and-transformation.md`, `examples/data-transformations.yaml`) and the
//! expr-lang operators they rely on, with the results Go's expr-lang v1.17 gives; plus the
//! errors a user sees for unknown names, type mismatches and syntax errors.

use argoexec_expr::{ExprError, eval, eval_data};
use serde_json::{Value, json};

fn data(program: &str, data: Value) -> Value {
    eval_data(program, data).unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn keys() -> Value {
    json!(["wf/a/main.log", "wf/a/init.log", "wf/b/main.log", "report.pdf"])
}

#[test]
fn argos_documented_transformations() {
    assert_eq!(
        data("filter(data, {# endsWith \"main.log\"})", keys()),
        json!(["wf/a/main.log", "wf/b/main.log"])
    );
    let pdfs = data("filter(data, {# endsWith \".pdf\"})", keys());
    assert_eq!(
        data("map(data, {# + \".ready\"})", pdfs),
        json!(["report.pdf.ready"])
    );
}

#[test]
fn collection_builtins() {
    assert_eq!(data("len(data)", keys()), json!(4));
    assert_eq!(data("data[0]", keys()), json!("wf/a/main.log"));
    assert_eq!(data("data[-1]", keys()), json!("report.pdf"));
    assert_eq!(
        data("data[1:3]", keys()),
        json!(["wf/a/init.log", "wf/b/main.log"])
    );
    assert_eq!(
        data("all(data, {# contains \"/\" or # endsWith \".pdf\"})", keys()),
        json!(true)
    );
    assert_eq!(data("any(data, {# startsWith \"wf/b\"})", keys()), json!(true));
    assert_eq!(data("none(data, {# == \"x\"})", keys()), json!(true));
    assert_eq!(
        data("count(data, {# matches \"^wf/./main\\\\.log$\"})", keys()),
        json!(2)
    );
    assert_eq!(data("map(data, {#index})", json!(["a", "b"])), json!([0, 1]));
    assert_eq!(
        data(
            "map(filter(data, {.size > 1}), {.name})",
            json!([{"name": "a", "size": 2}, {"name": "b", "size": 1}])
        ),
        json!(["a"])
    );
    assert_eq!(
        data("data | filter(# > 1) | map(# * 10)", json!([1, 2, 3])),
        json!([20, 30])
    );
}

#[test]
fn operators_and_types() {
    assert_eq!(data("\"wf/a/main.log\" in data", keys()), json!(true));
    assert_eq!(data("\"k\" in data", json!({"k": 1})), json!(true));
    assert_eq!(data("len(data) > 3 ? \"many\" : \"few\"", keys()), json!("many"));
    assert_eq!(data("data.a + data.b", json!({"a": 1, "b": 2})), json!(3));
    assert!(
        data("data.a + data.b", json!({"a": 1, "b": 2})).is_i64(),
        "int + int stays an integer"
    );
    assert_eq!(data("data.a + data.b", json!({"a": 1, "b": 0.5})), json!(1.5));
    assert_eq!(
        data("data == 1.0", json!(1)),
        json!(true),
        "int and float compare by value"
    );
    assert_eq!(data("data < 1.5", json!(1)), json!(true));
    assert_eq!(
        data("7 / 2", json!(null)),
        json!(3.5),
        "/ divides as floats, as Go's expr"
    );
    assert_eq!(data("7 % 3", json!(null)), json!(1));
    assert_eq!(data("\"a\" + \"b\"", json!(null)), json!("ab"));
    assert_eq!(data("data ?? \"fallback\"", json!(null)), json!("fallback"));
    assert_eq!(data("not (data in [1, 2])", json!(3)), json!(true));
    assert_eq!(
        data("data.x.y", json!({"x": {"y": [1, {"z": null}]}})),
        json!([1, {"z": null}])
    );
    assert_eq!(data("upper(data[0])", json!(["abc"])), json!("ABC"));
    assert_eq!(data("split(data, \",\")", json!("a,b")), json!(["a", "b"]));
    assert_eq!(data("join(data, \"-\")", json!(["a", "b"])), json!("a-b"));
}

#[test]
fn maps_keep_their_keys_and_other_variables_are_seen() {
    let out = data("{\"zeta\": 1, \"alpha\": nil, \"mid\": 2.5}", keys());
    assert_eq!(out, json!({"zeta": 1, "alpha": null, "mid": 2.5}));
    let nested = json!({"zeta": {"b": [1, null]}, "alpha": {}});
    assert_eq!(data("data", nested.clone()), nested);
    // expr-lang 2.1.0 panics on a computed or nested map value; the wrapper turns that into an error.
    let e = eval_data("{\"n\": len(data)}", keys()).unwrap_err();
    assert!(matches!(e, ExprError::Engine { .. }), "{e:?}");
    let mut env = serde_json::Map::new();
    env.insert("request".into(), json!({"method": "GET"}));
    env.insert("response".into(), json!({"statusCode": 201}));
    let ok = eval(
        "response.statusCode >= 200 and response.statusCode < 300 and request.method == \"GET\"",
        &env,
    );
    assert_eq!(ok.unwrap(), json!(true));
}

#[test]
fn errors_name_the_program_and_the_cause() {
    let e = eval_data("nosuch + 1", json!([])).unwrap_err();
    assert!(matches!(e, ExprError::Run { .. }), "{e:?}");
    assert!(e.to_string().contains("nosuch"), "{e}");
    let e = eval_data("data + 1", json!("text")).unwrap_err();
    assert!(matches!(e, ExprError::Run { .. }), "{e:?}");
    assert!(e.to_string().contains("data + 1"), "{e}");
    let e = eval_data("filter(data, {# endsWith })", keys()).unwrap_err();
    assert!(matches!(e, ExprError::Compile { .. }), "{e:?}");
    let e = eval_data("toJSON(data)", keys()).unwrap_err();
    assert!(
        e.to_string().contains("json"),
        "a disabled builtin names its feature: {e}"
    );
}
