//! Kubernetes `$(VAR)` expansion in command, args and env values: `$(NAME)` is replaced by a
//! known variable, an unknown reference is kept verbatim, and `$$` escapes a `$`.

use std::collections::HashMap;

/// Expand `$(VAR)` references in `s` from `vars`.
pub fn expand(s: &str, vars: &HashMap<&str, &str>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('(') {
            match body.find(')') {
                Some(end) => {
                    let name = &body[..end];
                    match vars.get(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &body[end + 1..];
                }
                None => {
                    out.push_str(&rest[i..]);
                    rest = "";
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_like_kubernetes() {
        let vars = HashMap::from([("A", "1"), ("B", "two")]);
        assert_eq!(expand("x$(A)y$(B)", &vars), "x1ytwo");
        assert_eq!(expand("$(C) stays", &vars), "$(C) stays");
        assert_eq!(expand("$$(A) escaped", &vars), "$(A) escaped");
        assert_eq!(expand("$HOME and $(A", &vars), "$HOME and $(A");
        assert_eq!(expand("", &vars), "");
    }
}
