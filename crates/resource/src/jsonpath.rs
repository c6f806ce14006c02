//! kubectl's JSONPath templates (`kubectl get -o jsonpath=…`, what Argo evaluates for
//! `valueFrom.jsonPath`), written after the grammar and semantics of
//! `k8s.io/client-go/util/jsonpath` v0.35 with kubectl's default of allowing missing keys:
//!
//! - text outside `{…}` is printed as is; inside: `.field` (`\.` escapes a dot), `..field`
//!   (recursive descent), `[n]`, `[start:end:step]` (negative from the end), `[*]`, `.*`,
//!   `[a,b]` / `['k1','k2']` unions, `['key']`, `[?(@.k == "v")]` filters (`==`, `!=`, `<`,
//!   `>`, `<=`, `>=`, or existence `[?(@.k)]`), `"literal"` / `'literal'` strings,
//!   `{range …}…{end}`, `@`/`$` for the current object;
//! - a missing key yields nothing; an index out of bounds, a filter comparing a number with a
//!   string, `{end}` outside a range or an unknown identifier are errors, as in kubectl;
//! - each `{…}` prints its results joined by a space: strings raw, numbers and booleans as
//!   Go's `fmt` prints them, arrays and objects as compact JSON with sorted keys
//!   ([`crate::gojson`]).

use serde_json::Value;

use crate::gojson;

mod eval;

/// A parse or execution error, worded as kubectl's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonPathError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, JsonPathError> {
    Err(JsonPathError(m.into()))
}

/// One slice bound: given, and whether it was derived from `[n]` (end = n + 1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    List(Vec<Node>),
    Field(String),
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    nodes: Vec<Node>,
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Top level: text and `{…}` actions.
    fn text(&mut self, root: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            let start = self.pos;
            match self.rest().find('{') {
                Some(i) => {
                    if i > 0 {
                        root.push(Node::Text(self.s[start..start + i].to_string()));
                    }
                    self.pos += i + 1;
                    let mut list = Vec::new();
                    self.action(&mut list)?;
                    root.push(Node::List(list));
                }
                None => {
                    if start < self.s.len() {
                        root.push(Node::Text(self.s[start..].to_string()));
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Inside `{…}` up to and including the closing brace.
    fn action(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.pos += 3;
                cur.push(self.filter()?);
                continue;
            }
            if rest.starts_with("..") {
                if cur.last() == Some(&Node::Recursive) {
                    return err("invalid multiple recursive descent");
                }
                self.pos += 2;
                cur.push(Node::Recursive);
                if self.peek().is_some_and(|c| c == '_' || c.is_alphanumeric()) {
                    cur.push(self.field());
                }
                continue;
            }
            match self.bump() {
                None | Some('\r' | '\n') => return err("unclosed action"),
                Some(' ' | '@' | '$') => {}
                Some('[') => cur.push(self.array()?),
                Some(q @ ('"' | '\'')) => cur.push(Node::Text(self.quoted(q)?)),
                Some('.') => cur.push(self.field()),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.pos -= 1;
                    cur.push(self.number()?);
                }
                Some(c) if c == '_' || c.is_alphanumeric() => {
                    self.pos -= c.len_utf8();
                    let start = self.pos;
                    while !is_terminator(self.peek()) {
                        self.bump();
                    }
                    cur.push(match &self.s[start..self.pos] {
                        "true" => Node::Bool(true),
                        "false" => Node::Bool(false),
                        w => Node::Identifier(w.to_string()),
                    });
                }
                Some(c) => {
                    return err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        c as u32
                    ));
                }
            }
        }
    }

    fn field(&mut self) -> Node {
        let start = self.pos;
        loop {
            match self.peek() {
                Some('\\') => {
                    self.bump();
                    self.bump();
                }
                c if is_terminator(c) => break,
                _ => {
                    self.bump();
                }
            }
        }
        match &self.s[start..self.pos] {
            "*" => Node::Wildcard,
            v => Node::Field(v.replace('\\', "")),
        }
    }

    fn number(&mut self) -> Result<Node, JsonPathError> {
        let start = self.pos;
        if matches!(self.peek(), Some('+' | '-')) {
            self.bump();
        }
        while self.peek().is_some_and(|c| c == '.' || c.is_ascii_digit()) {
            self.bump();
        }
        let text = &self.s[start..self.pos];
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Node::Int(i));
        }
        match text.parse::<f64>() {
            Ok(f) => Ok(Node::Float(f)),
            Err(_) => err(format!("cannot parse number {text}")),
        }
    }

    fn quoted(&mut self, q: char) -> Result<String, JsonPathError> {
        let mut out = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return err("unterminated quoted string"),
                Some(c) if c == q => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('\\') => out.push('\\'),
                    Some(c @ ('"' | '\'')) => out.push(c),
                    other => return err(format!("unquote string error: bad escape {other:?}")),
                },
                Some(c) => out.push(c),
            }
        }
    }

    fn array(&mut self) -> Result<Node, JsonPathError> {
        let start = self.pos;
        loop {
            match self.bump() {
                None | Some('\n') => return err("unterminated array"),
                Some(']') => break,
                _ => {}
            }
        }
        let mut text = &self.s[start..self.pos - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::new();
            for p in parts {
                union.push(parse_action(&format!("[{}]", p.trim()))?);
            }
            return Ok(Node::Union(union));
        }
        if let Some(key) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\''))
            && !key.contains('\'')
        {
            let mut nodes = parse_action(&format!(".{key}"))?;
            return Ok(if nodes.len() == 1 {
                nodes.remove(0)
            } else {
                Node::List(nodes)
            });
        }
        slice(text)
    }

    fn filter(&mut self) -> Result<Node, JsonPathError> {
        let start = self.pos;
        let (mut begin, mut end, mut pair) = (false, false, '"');
        loop {
            match self.bump() {
                None | Some('\n') => return err("unterminated filter"),
                Some(c @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = c;
                    } else if c == pair && !self.s[..self.pos - 1].ends_with('\\') {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                _ => {}
            }
        }
        if self.bump() != Some(']') {
            return err("unclosed array expect ]");
        }
        let text = &self.s[start..self.pos - 2];
        let op_start = text.find(['!', '<', '>', '=']);
        match op_start {
            Some(i) if i > 0 => {
                let op_len = text[i..]
                    .find(|c| !matches!(c, '!' | '<' | '>' | '='))
                    .unwrap_or(text.len() - i);
                let (left, op, right) = (&text[..i], &text[i..i + op_len], &text[i + op_len..]);
                if right.is_empty() {
                    return Ok(Node::Filter {
                        left: parse_action(text)?,
                        right: Vec::new(),
                        op: "exists".into(),
                    });
                }
                Ok(Node::Filter {
                    left: parse_action(left)?,
                    right: parse_action(right)?,
                    op: op.to_string(),
                })
            }
            _ => Ok(Node::Filter {
                left: parse_action(text)?,
                right: Vec::new(),
                op: "exists".into(),
            }),
        }
    }
}

/// `[n]`, `[a:b]`, `[a:b:c]` with kubectl's defaults.
fn slice(text: &str) -> Result<Node, JsonPathError> {
    let parts: Vec<&str> = text.split(':').collect();
    let valid = parts.len() <= 3
        && parts.iter().all(|p| {
            let d = p.strip_prefix('-').unwrap_or(p);
            d.chars().all(|c| c.is_ascii_digit())
        });
    if !valid {
        return err(format!("invalid array index {text}"));
    }
    let mut params = [Param::default(); 3];
    for i in 0..3 {
        match parts.get(i) {
            Some(p) if !p.is_empty() => {
                let value = p
                    .parse()
                    .map_err(|_| JsonPathError(format!("array index {p} is not a number")))?;
                params[i] = Param {
                    value,
                    known: true,
                    derived: false,
                };
            }
            Some(_) => {}
            None if i == 1 => {
                params[1] = Param {
                    value: params[0].value + 1,
                    known: true,
                    derived: true,
                };
            }
            None => {}
        }
    }
    Ok(Node::Array(params))
}

/// Parse the inside of an action (`text` without braces).
fn parse_action(text: &str) -> Result<Vec<Node>, JsonPathError> {
    let wrapped = format!("{{{text}}}");
    let mut p = Parser { s: &wrapped, pos: 0 };
    let mut root = Vec::new();
    p.text(&mut root)?;
    match root.into_iter().next() {
        Some(Node::List(nodes)) => Ok(nodes),
        _ => Ok(Vec::new()),
    }
}

impl Template {
    /// Parse a template.
    ///
    /// # Errors
    /// [`JsonPathError`] with kubectl's wording (`unclosed action`, `invalid array index x`, …).
    pub fn parse(text: &str) -> Result<Self, JsonPathError> {
        let mut p = Parser { s: text, pos: 0 };
        let mut nodes = Vec::new();
        p.text(&mut nodes)?;
        Ok(Self { nodes })
    }

    /// Evaluate over `data` and print as kubectl does.
    ///
    /// # Errors
    /// Execution errors (index out of bounds, incompatible comparison, `{end}` outside a
    /// range, unknown identifier).
    pub fn execute(&self, data: &Value) -> Result<String, JsonPathError> {
        let mut ev = eval::Eval::default();
        let sets = ev.find(&self.nodes, 0, Some(data))?;
        let mut out = String::new();
        for set in sets {
            let texts: Vec<String> = set.iter().map(gojson::text).collect();
            out.push_str(&texts.join(" "));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
