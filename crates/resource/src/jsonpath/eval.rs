//! Evaluation of a parsed template: client-go's `FindResults` with its range bookkeeping,
//! fields, slices, wildcards, recursive descent, unions and filters with Go template
//! comparisons.

use serde_json::Value;

use super::{JsonPathError, Node, Param, err};
use crate::gojson;

/// The range bookkeeping of client-go's `FindResults`.
#[derive(Default)]
pub(super) struct Eval {
    begin: usize,
    in_range: usize,
    end: usize,
    last_end: Option<usize>,
}

impl Eval {
    pub(super) fn find(
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
