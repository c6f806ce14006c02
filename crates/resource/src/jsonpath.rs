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
        let mut ev = Eval::default();
        let sets = ev.find(&self.nodes, 0, Some(data))?;
        let mut out = String::new();
        for set in sets {
            let texts: Vec<String> = set.iter().map(gojson::text).collect();
            out.push_str(&texts.join(" "));
        }
        Ok(out)
    }
}

/// The range bookkeeping of client-go's `FindResults`.
#[derive(Default)]
struct Eval {
    begin: usize,
    in_range: usize,
    end: usize,
    last_end: Option<usize>,
}

impl Eval {
    fn find(
        &mut self,
        nodes: &[Node],
        from: usize,
        data: Option<&Value>,
    ) -> Result<Vec<Vec<Value>>, JsonPathError> {
        let cur: Vec<Value> = data.into_iter().cloned().collect();
        let mut full = Vec::new();
        let mut i = from;
        while i < nodes.len() {
            let results = self.walk(&cur, &nodes[i])?;
            if self.end > 0 && self.end <= self.in_range {
                self.end -= 1;
                self.last_end = Some(i);
                break;
            }
            if self.begin > 0 {
                self.begin -= 1;
                self.in_range += 1;
                if results.is_empty() {
                    self.find(nodes, i + 1, None)?;
                } else {
                    for v in &results {
                        full.extend(self.find(nodes, i + 1, Some(v))?);
                    }
                }
                self.in_range -= 1;
                if let Some(e) = self.last_end.filter(|e| *e > i) {
                    i = e;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk(&mut self, input: &[Value], node: &Node) -> Result<Vec<Value>, JsonPathError> {
        match node {
            Node::List(nodes) => self.list(input, nodes),
            Node::Text(t) => Ok(vec![Value::String(t.clone())]),
            Node::Field(name) => Ok(input
                .iter()
                .filter_map(|v| v.as_object().and_then(|m| m.get(name)).cloned())
                .collect()),
            Node::Array(params) => array(input, params),
            Node::Filter { left, right, op } => self.filter(input, left, right, op),
            Node::Int(n) => Ok(input.iter().map(|_| Value::from(*n)).collect()),
            Node::Float(f) => Ok(input.iter().map(|_| Value::from(*f)).collect()),
            Node::Bool(b) => Ok(input.iter().map(|_| Value::Bool(*b)).collect()),
            Node::Wildcard => Ok(input.iter().flat_map(children).collect()),
            Node::Recursive => Ok(recursive(input)),
            Node::Union(lists) => {
                let mut out = Vec::new();
                for l in lists {
                    out.extend(self.list(input, l)?);
                }
                Ok(out)
            }
            Node::Identifier(name) => match name.as_str() {
                "range" => {
                    self.begin += 1;
                    Ok(input.to_vec())
                }
                "end" if self.in_range > 0 => {
                    self.end += 1;
                    Ok(Vec::new())
                }
                "end" => err("not in range, nothing to end"),
                other => err(format!("unrecognized identifier {other}")),
            },
        }
    }

    fn list(&mut self, input: &[Value], nodes: &[Node]) -> Result<Vec<Value>, JsonPathError> {
        let mut cur = input.to_vec();
        for n in nodes {
            cur = self.walk(&cur, n)?;
        }
        Ok(cur)
    }

    fn filter(
        &mut self,
        input: &[Value],
        left: &[Node],
        right: &[Node],
        op: &str,
    ) -> Result<Vec<Value>, JsonPathError> {
        let mut out = Vec::new();
        for v in input {
            let Value::Array(items) = v else {
                return err(format!(
                    "{} is not array or slice and cannot be filtered",
                    gojson::text(v)
                ));
            };
            for item in items {
                let one = std::slice::from_ref(item);
                let lefts = self.list(one, left);
                if op == "exists" {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        out.push(item.clone());
                    }
                    continue;
                }
                let lefts = lefts?;
                if lefts.is_empty() {
                    continue;
                }
                if lefts.len() > 1 {
                    return err("can only compare one element at a time");
                }
                let rights = self.list(one, right)?;
                if rights.is_empty() {
                    continue;
                }
                if rights.len() > 1 {
                    return err("can only compare one element at a time");
                }
                if compare(&lefts[0], &rights[0], op)? {
                    out.push(item.clone());
                }
            }
        }
        Ok(out)
    }
}

fn children(v: &Value) -> Vec<Value> {
    match v {
        Value::Object(m) => m.values().cloned().collect(),
        Value::Array(a) => a.clone(),
        Value::String(s) => s.bytes().map(Value::from).collect(),
        _ => Vec::new(),
    }
}

fn recursive(input: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for v in input {
        let kids = children(v);
        if !kids.is_empty() {
            out.push(v.clone());
            out.extend(recursive(&kids));
        }
    }
    out
}

fn array(input: &[Value], params: &[Param; 3]) -> Result<Vec<Value>, JsonPathError> {
    let mut out = Vec::new();
    for v in input {
        let items = match v {
            Value::Null => continue,
            Value::Array(a) => a,
            other => return err(format!("{} is not array or slice", type_name(other))),
        };
        let len = items.len() as i64;
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value += len;
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value += len;
        }
        if p[1].value == p[0].value {
            return Ok(out);
        }
        if p[0].value >= len || p[0].value < 0 {
            return err(format!(
                "array index out of bounds: index {}, length {len}",
                p[0].value
            ));
        }
        if p[1].value > len || p[1].value < 0 {
            return err(format!(
                "array index out of bounds: index {}, length {len}",
                p[1].value - 1
            ));
        }
        if p[0].value > p[1].value {
            return err(format!(
                "starting index {} is greater than ending index {}",
                p[0].value, p[1].value
            ));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return err("step must be > 0");
            }
            p[2].value as usize
        } else {
            1
        };
        out.extend(
            items[p[0].value as usize..p[1].value as usize]
                .iter()
                .step_by(step)
                .cloned(),
        );
    }
    Ok(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        _ => "interface {}",
    }
}

/// Go template comparison: integers with integers, floats with floats, strings with strings,
/// booleans only for `==`/`!=`; anything else is "incompatible types for comparison".
fn compare(l: &Value, r: &Value, op: &str) -> Result<bool, JsonPathError> {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (l, r) {
        (Value::Number(a), Value::Number(b)) if a.is_f64() == b.is_f64() => {
            if a.is_f64() {
                a.as_f64().partial_cmp(&b.as_f64())
            } else {
                a.as_i64().cmp(&b.as_i64()).into()
            }
        }
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) if matches!(op, "==" | "!=") => Some(a.cmp(b)),
        (Value::Bool(_), Value::Bool(_)) => return err("invalid type for comparison"),
        _ => return err("incompatible types for comparison"),
    };
    let ord = ord.ok_or_else(|| JsonPathError("incompatible types for comparison".into()))?;
    match op {
        "==" => Ok(ord == Ordering::Equal),
        "!=" => Ok(ord != Ordering::Equal),
        "<" => Ok(ord == Ordering::Less),
        ">" => Ok(ord == Ordering::Greater),
        "<=" => Ok(ord != Ordering::Greater),
        ">=" => Ok(ord != Ordering::Less),
        other => err(format!("unrecognized filter operator {other}")),
    }
}

#[cfg(test)]
mod tests;
