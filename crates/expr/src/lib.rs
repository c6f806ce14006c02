//! `argoexec-expr`: expr-lang programs over JSON values, the expression language Argo
//! evaluates with `github.com/expr-lang/expr` — data-template transformations now
//! (`expr.Compile(expression, expr.Env({data: …}))`, then `expr.Run`), HTTP-template
//! success conditions later.
//!
//! [`eval`] compiles and runs a program against an environment of JSON values and returns
//! the result as JSON; [`convert`] maps values both ways faithfully (integers stay integers,
//! floats floats, `null` is `nil`, maps keep their keys).
//!
//! The engine is the `expr-lang` crate (lib `expr`, MIT), a Rust implementation checked
//! against the Go library's behaviour, built with only its `regex` feature (`matches`).
//! Without `json`, `base64` and `temporal`, the builtins `toJSON`, `fromJSON`, `toBase64`,
//! `fromBase64`, `now`, `date`, `duration` and `timezone` answer with an error naming the
//! missing feature: `json` would switch serde_json's `preserve_order` on for the whole
//! executor and `temporal` carries the time-zone database into every pod image; no Argo
//! data-template example uses them.
//!
//! Where the crate differs from Go's expr for what Argo users write, the wrapper fixes it:
//! the member shorthand `filter(xs, .size > 1)` is rewritten to `#.size` ([`shorthand`]);
//! a panic inside the engine (expr-lang 2.1.0 panics on map literals whose values are not
//! scalar literals, `{"n": len(data)}`) becomes [`ExprError::Engine`] instead of ending the
//! process. In the image's build, which aborts on panic, it ends the step with exit 64 and a
//! termination message naming the expression (`argoexec_core::panic`).

pub mod convert;
pub mod shorthand;

use serde_json::{Map, Value};

/// Why a program could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum ExprError {
    /// The program does not parse.
    #[error("cannot compile expression {program:?}: {source}")]
    Compile {
        /// The program.
        program: String,
        /// The parser's error (with the position).
        #[source]
        source: expr::Error,
    },
    /// The program failed while running (unknown name, type mismatch, …).
    #[error("cannot evaluate expression {program:?}: {source}")]
    Run {
        /// The program.
        program: String,
        /// The evaluator's error.
        #[source]
        source: expr::Error,
    },
    /// The engine panicked (a bug of expr-lang 2.1.0, e.g. `{"n": len(data)}`).
    #[error(
        "cannot evaluate expression {program:?}: the expression engine failed ({message}); map literals whose values are not scalar literals are not supported by expr-lang 2.1.0"
    )]
    Engine {
        /// The program.
        program: String,
        /// The panic's message.
        message: String,
    },
    /// The result has no JSON form (NaN, infinity, a map with non-string keys).
    #[error("the result of expression {program:?} cannot be JSON: {reason}")]
    NotJson {
        /// The program.
        program: String,
        /// What cannot be represented.
        reason: convert::NotJson,
    },
}

/// Compile `program` and run it with `env`'s entries as variables; the result as JSON.
///
/// # Errors
/// [`ExprError`] naming the program: a syntax error, an evaluation error (an unknown name,
/// an operator on the wrong types) or a result JSON cannot hold.
pub fn eval(program: &str, env: &Map<String, Value>) -> Result<Value, ExprError> {
    // Where panics abort (the image's build), the panic hook names the expression instead.
    let hint = if program.contains('{') {
        " (expr-lang 2.1.0 panics on map literals whose values are not scalar literals)"
    } else {
        ""
    };
    let _context = argoexec_core::panic::context(format!("evaluating the expression {program:?}{hint}"));
    std::panic::catch_unwind(|| eval_unguarded(program, env)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
            .unwrap_or_else(|| "panic".into());
        Err(ExprError::Engine {
            program: program.to_string(),
            message,
        })
    })
}

fn eval_unguarded(program: &str, env: &Map<String, Value>) -> Result<Value, ExprError> {
    let expanded = shorthand::expand(program);
    let compiled = expr::compile(&expanded).map_err(|source| ExprError::Compile {
        program: program.to_string(),
        source,
    })?;
    let mut ctx = expr::Context::default();
    for (k, v) in env {
        ctx.insert(k.clone(), convert::to_expr(v));
    }
    let out = expr::run(&compiled, &ctx).map_err(|source| ExprError::Run {
        program: program.to_string(),
        source,
    })?;
    convert::to_json(&out).map_err(|reason| ExprError::NotJson {
        program: program.to_string(),
        reason,
    })
}

/// [`eval`] with the one variable `data`, as Argo's data-template transformation steps.
///
/// # Errors
/// See [`eval`].
pub fn eval_data(program: &str, data: Value) -> Result<Value, ExprError> {
    let mut env = Map::new();
    env.insert("data".into(), data);
    eval(program, &env)
}
