//! In the image's build, which aborts on panic, the panic hook describes expr-lang's known
//! panic with the expression that caused it (`argoexec_core::panic::context`). This test
//! binary (which unwinds) records that description from a hook of its own.

use std::sync::Mutex;

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[test]
fn an_engine_panic_is_described_with_its_expression() {
    std::panic::set_hook(Box::new(|info| {
        SEEN.lock().unwrap().push(argoexec_core::panic::describe(info));
    }));
    let program = r#"{"n": len(data)}"#;
    let env = serde_json::json!({"data": [1, 2]});
    let err = argoexec_expr::eval(program, env.as_object().unwrap()).unwrap_err();
    let _ = std::panic::take_hook();
    assert!(matches!(err, argoexec_expr::ExprError::Engine { .. }), "{err}");
    let seen = SEEN.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("executor panic: "), "{}", seen[0]);
    assert!(
        seen[0].ends_with(
            r#" while evaluating the expression "{\"n\": len(data)}" (expr-lang 2.1.0 panics on map literals whose values are not scalar literals)"#
        ),
        "{}",
        seen[0]
    );
}
