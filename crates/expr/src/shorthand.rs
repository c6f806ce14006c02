//! Go expr-lang's member shorthand inside predicates: `filter(xs, .size > 1)` and
//! `map(xs, {.name})` mean `#.size` and `#.name`. expr-lang 2.1.0 (the Rust crate) does not
//! parse a `.` that starts an operand, so [`expand`] rewrites each such `.` to `#.` before
//! compiling. A `.` starts an operand when the previous token is not a value: nothing, an
//! opening bracket, a comma, an operator, or a word operator (`and`, `or`, `not`, `in`,
//! `matches`, `contains`, `startsWith`, `endsWith`); never inside string literals, never in
//! `1.5`, `a.b`, `a?.b`, `x[0].y`, `f().y` or the range `1..3`.

/// Word operators after which an operand starts.
const WORD_OPERATORS: [&str; 8] = [
    "and",
    "or",
    "not",
    "in",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
];

/// `program` with every leading-`.` member access turned into `#.`.
pub fn expand(program: &str) -> String {
    let chars: Vec<char> = program.chars().collect();
    let mut out = String::with_capacity(program.len() + 8);
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' && q != '`' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == q {
                quote = None;
            }
        } else if matches!(c, '"' | '\'' | '`') {
            quote = Some(c);
            out.push(c);
        } else if c == '.' && starts_operand(&chars, i) {
            out.push_str("#.");
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// Whether the `.` at `at` starts an operand (see the module docs).
fn starts_operand(chars: &[char], at: usize) -> bool {
    let next_is_name = chars.get(at + 1).is_some_and(|n| n.is_alphabetic() || *n == '_');
    if !next_is_name {
        return false;
    }
    let mut j = at;
    while j > 0 && chars[j - 1].is_whitespace() {
        j -= 1;
    }
    if j == 0 {
        return true;
    }
    let prev = chars[j - 1];
    if prev == '?' && j == at {
        return false; // `a?.b`
    }
    if prev.is_alphanumeric() || prev == '_' || prev == '$' {
        let start = (0..j)
            .rev()
            .take_while(|&k| chars[k].is_alphanumeric() || chars[k] == '_')
            .last()
            .unwrap_or(j);
        let word: String = chars[start..j].iter().collect();
        return WORD_OPERATORS.contains(&word.as_str());
    }
    !matches!(prev, ')' | ']' | '}' | '"' | '\'' | '`' | '.' | '#')
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn leading_dots_become_the_current_element() {
        assert_eq!(expand("filter(xs, .size > 1)"), "filter(xs, #.size > 1)");
        assert_eq!(expand("map(xs, {.name})"), "map(xs, {#.name})");
        assert_eq!(expand("all(xs, .a and not .b)"), "all(xs, #.a and not #.b)");
        assert_eq!(
            expand("filter(xs, len(.tags) > 0 || .x in [1])"),
            "filter(xs, len(#.tags) > 0 || #.x in [1])"
        );
        assert_eq!(expand(".a"), "#.a");
    }

    #[test]
    fn other_dots_stay() {
        for p in [
            "a.b",
            "a?.b",
            "x[0].y",
            "f().y",
            "1.5 + .5",
            "1..3",
            "\"x .y\" + 'a .b'",
            "#.a",
            "{a: 1}.a",
        ] {
            assert_eq!(expand(p), p, "{p}");
        }
    }
}
