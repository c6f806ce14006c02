//! `successCondition` / `failureCondition`: Kubernetes label-selector syntax whose keys are
//! gjson paths into the object ([`crate::gjson`]), parsed and matched as Argo does with
//! `k8s.io/apimachinery/pkg/labels.Parse` (v0.35, the version Argo v4.1.2 builds with):
//!
//! - requirements separated by `,`; each is `key`, `!key`, `key = v`, `key == v`,
//!   `key != v`, `key in (a, b)`, `key notin (a, b)`, `key > n` or `key < n` (`n` an
//!   integer);
//! - keys must be label keys (`[prefix/]name`, name ≤ 63 of `[A-Za-z0-9._-]` starting and
//!   ending alphanumeric, prefix a DNS subdomain), values label values (≤ 63, same
//!   characters, may be empty) — so `#`, `*` or quotes in a key are syntax errors, as in Argo;
//! - requirements are sorted by key (apimachinery does, for determinism).
//!
//! Matching ([`Requirement::matches`]): `=`, `==`, `in` need the path to exist with one of
//! the values; `!=`, `notin` match when it is absent or has none of them; `>`/`<` need it to
//! exist and to parse as a 64-bit integer.

use std::fmt;

use serde_json::Value;

use crate::gjson;

/// An operator of a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key` alone.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `=`.
    Equals,
    /// `==`.
    DoubleEquals,
    /// `!=`.
    NotEquals,
    /// `in (…)`.
    In,
    /// `notin (…)`.
    NotIn,
    /// `>`.
    GreaterThan,
    /// `<`.
    LessThan,
}

/// One requirement: a key, an operator and its values (sorted, without duplicates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The gjson path.
    pub key: String,
    /// The operator.
    pub op: Operator,
    /// The values (one for `=`, `==`, `!=`, `>`, `<`; none for `key` and `!key`).
    pub values: Vec<String>,
}

/// A parsed condition: requirements sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Condition {
    /// The requirements.
    pub requirements: Vec<Requirement>,
}

/// Why a condition does not parse; the text follows apimachinery's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyntaxError(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ident,
    Comma,
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    In,
    NotIn,
    Open,
    Close,
    End,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::Close,
        "," => Tok::Comma,
        "!" => Tok::Bang,
        "==" => Tok::DoubleEq,
        "=" => Tok::Eq,
        ">" => Tok::Gt,
        "in" => Tok::In,
        "<" => Tok::Lt,
        "!=" => Tok::NotEq,
        "notin" => Tok::NotIn,
        "(" => Tok::Open,
        _ => return None,
    })
}

/// apimachinery's lexer: identifiers run to whitespace or a special symbol; runs of special
/// symbols take the longest known token.
fn lex(s: &str) -> Result<Vec<(Tok, String)>, SyntaxError> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, ' ' | '\t' | '\r' | '\n') {
            i += 1;
        } else if is_special(c) {
            let mut buf = String::new();
            let mut last: Option<(Tok, String, usize)> = None;
            while i < chars.len() && is_special(chars[i]) {
                buf.push(chars[i]);
                i += 1;
                match symbol(&buf) {
                    Some(t) => last = Some((t, buf.clone(), i)),
                    None if last.is_some() => break,
                    None => {}
                }
            }
            let Some((t, lit, end)) = last else {
                return Err(SyntaxError(format!("error expected: keyword found '{buf}'")));
            };
            i = end;
            out.push((t, lit));
        } else {
            let start = i;
            while i < chars.len() && !is_special(chars[i]) && !matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push((symbol(&word).unwrap_or(Tok::Ident), word));
        }
    }
    out.push((Tok::End, String::new()));
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, String)>,
    pos: usize,
}

impl Parser {
    /// The next token; `in`/`notin` read as identifiers where a value or key is expected.
    fn peek(&self, values: bool) -> (Tok, &str) {
        let (t, l) = &self.toks[self.pos.min(self.toks.len() - 1)];
        (as_context(*t, values), l)
    }

    fn next(&mut self, values: bool) -> (Tok, String) {
        let (t, l) = self.toks[self.pos.min(self.toks.len() - 1)].clone();
        self.pos += 1;
        (as_context(t, values), l)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SyntaxError> {
        let mut reqs = Vec::new();
        loop {
            let (t, lit) = self.peek(true);
            match t {
                Tok::Ident | Tok::Bang => {
                    let r = self
                        .requirement()
                        .map_err(|e| SyntaxError(format!("unable to parse requirement: {e}")))?;
                    reqs.push(r);
                    let (t, l) = self.next(true);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.peek(true);
                            if t2 != Tok::Ident && t2 != Tok::Bang {
                                return Err(SyntaxError(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SyntaxError(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(SyntaxError(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SyntaxError> {
        let (mut t, mut key) = self.next(true);
        let negated = t == Tok::Bang;
        if negated {
            (t, key) = self.next(true);
        }
        if t != Tok::Ident {
            return Err(SyntaxError(format!("found '{key}', expected: identifier")));
        }
        check_key(&key)?;
        let (after, _) = self.peek(true);
        if negated || after == Tok::End || after == Tok::Comma {
            let op = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Ok(Requirement {
                key,
                op,
                values: Vec::new(),
            });
        }
        let (t, lit) = self.next(false);
        let op = match t {
            Tok::In => Operator::In,
            Tok::Eq => Operator::Equals,
            Tok::DoubleEq => Operator::DoubleEquals,
            Tok::Gt => Operator::GreaterThan,
            Tok::Lt => Operator::LessThan,
            Tok::NotIn => Operator::NotIn,
            Tok::NotEq => Operator::NotEquals,
            _ => {
                return Err(SyntaxError(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                )));
            }
        };
        let mut values = match op {
            Operator::In | Operator::NotIn => self.set()?,
            _ => self.exact()?,
        };
        values.sort();
        values.dedup();
        check_values(&key, op, &values)?;
        Ok(Requirement { key, op, values })
    }

    fn exact(&mut self) -> Result<Vec<String>, SyntaxError> {
        let (t, _) = self.peek(true);
        if t == Tok::End || t == Tok::Comma {
            return Ok(vec![String::new()]);
        }
        match self.next(true) {
            (Tok::Ident, lit) => Ok(vec![lit]),
            (_, lit) => Err(SyntaxError(format!("found '{lit}', expected: identifier"))),
        }
    }

    fn set(&mut self) -> Result<Vec<String>, SyntaxError> {
        let (t, lit) = self.next(true);
        if t != Tok::Open {
            return Err(SyntaxError(format!("found '{lit}' expected: '('")));
        }
        let (t, lit) = self.peek(true);
        let lit = lit.to_string();
        match t {
            Tok::Close => {
                self.next(true);
                Ok(vec![String::new()])
            }
            Tok::Ident | Tok::Comma => {
                let s = self.list()?;
                if self.next(true).0 != Tok::Close {
                    return Err(SyntaxError(format!("found '{lit}', expected: ')'")));
                }
                Ok(s)
            }
            _ => Err(SyntaxError(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn list(&mut self) -> Result<Vec<String>, SyntaxError> {
        let mut s = Vec::new();
        loop {
            match self.next(true) {
                (Tok::Ident, lit) => {
                    s.push(lit);
                    match self.peek(true) {
                        (Tok::Comma, _) => continue,
                        (Tok::Close, _) => return Ok(s),
                        (_, l) => return Err(SyntaxError(format!("found '{l}', expected: ',' or ')'"))),
                    }
                }
                (Tok::Comma, _) => {
                    // `(,a)`, `(a,,b)` and `(a,)` hold the empty value.
                    let next = self.peek(true).0;
                    if s.is_empty() || next == Tok::Close || next == Tok::Comma {
                        s.push(String::new());
                    }
                    if next == Tok::Close {
                        return Ok(s);
                    }
                }
                (_, lit) => {
                    return Err(SyntaxError(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )));
                }
            }
        }
    }
}

fn as_context(t: Tok, values: bool) -> Tok {
    match t {
        Tok::In | Tok::NotIn if values => Tok::Ident,
        other => other,
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: lower-case labels of `[a-z0-9-]` joined by dots, ≤ 253.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn check_key(key: &str) -> Result<(), SyntaxError> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Err(SyntaxError(format!(
                "invalid label key {key:?}: {NAME_RULE}, with an optional DNS subdomain prefix and '/'"
            )));
        }
    };
    if let Some(p) = prefix
        && !is_dns_subdomain(p)
    {
        return Err(SyntaxError(format!(
            "invalid label key {key:?}: prefix part must be a lowercase DNS subdomain"
        )));
    }
    if !is_label_name(name) {
        return Err(SyntaxError(format!(
            "invalid label key {key:?}: name part {NAME_RULE} (at most 63 characters)"
        )));
    }
    Ok(())
}

fn check_values(key: &str, op: Operator, values: &[String]) -> Result<(), SyntaxError> {
    if matches!(op, Operator::GreaterThan | Operator::LessThan) {
        for v in values {
            if v.parse::<i64>().is_err() {
                return Err(SyntaxError(format!(
                    "values[0]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                )));
            }
        }
    }
    for v in values {
        if !(v.is_empty() || is_label_name(v)) {
            return Err(SyntaxError(format!(
                "values[0][{key}]: Invalid value: {v:?}: a valid label must be an empty string or consist of \
                 alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character \
                 (at most 63 characters)"
            )));
        }
    }
    Ok(())
}

impl Condition {
    /// Parse a condition (empty text: no requirements).
    ///
    /// # Errors
    /// [`SyntaxError`] with apimachinery's wording.
    pub fn parse(text: &str) -> Result<Self, SyntaxError> {
        let mut p = Parser {
            toks: lex(text)?,
            pos: 0,
        };
        let mut requirements = p.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// The first requirement `obj` matches, if any (failure conditions: any match fails).
    pub fn first_match(&self, obj: &Value) -> Option<&Requirement> {
        self.requirements.iter().find(|r| r.matches(obj))
    }

    /// Whether every requirement matches (success conditions).
    pub fn all_match(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|r| r.matches(obj))
    }
}

impl Requirement {
    /// Whether `obj` satisfies this requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let found = gjson::get(obj, &self.key).map(|v| gjson::to_gjson_string(&v));
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::In | Operator::Equals | Operator::DoubleEquals => found.is_some_and(|v| has(&v)),
            Operator::NotIn | Operator::NotEquals => found.is_none_or(|v| !has(&v)),
            Operator::Exists => found.is_some(),
            Operator::DoesNotExist => found.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(v), Some(r)) = (found, self.values.first().and_then(|r| r.parse::<i64>().ok()))
                else {
                    return false;
                };
                match v.parse::<i64>() {
                    Ok(v) if self.op == Operator::GreaterThan => v > r,
                    Ok(v) => v < r,
                    Err(_) => false,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// apimachinery's `Requirement.String()`: `status.failed>1`, `status.phase in (Error,Failed)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Exists => return write!(f, "{}", self.key),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        let values = self.values.join(",");
        match self.op {
            Operator::In | Operator::NotIn => write!(f, "{}{op}({values})", self.key),
            _ => write!(f, "{}{op}{values}", self.key),
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests;
