//! Label and field selectors as the API server parses them: comma-separated requirements,
//! `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists) and `!k` for labels;
//! `path=v` and `path!=v` for fields (`metadata.name`, `metadata.namespace`, `spec.nodeName`,
//! `status.phase`, …).

use serde_json::Value;

/// One requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// A parsed selector (label or field); empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    reqs: Vec<Req>,
    fields: bool,
}

impl Selector {
    /// Parse a label selector.
    ///
    /// # Errors
    /// A message naming the bad requirement.
    pub fn labels(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            reqs.push(parse_label(p)?);
        }
        Ok(Self { reqs, fields: false })
    }

    /// Parse a field selector (only `=`, `==`, `!=`).
    ///
    /// # Errors
    /// A message naming the bad requirement.
    pub fn fields(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let r = if let Some((k, v)) = p.split_once("!=") {
                Req::Ne(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                Req::Eq(k.trim().into(), v.trim().into())
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{p}'"));
            };
            reqs.push(r);
        }
        Ok(Self { reqs, fields: true })
    }

    /// The name this selector pins with `metadata.name=<n>`, if any.
    pub fn pinned_name(&self) -> Option<&str> {
        self.reqs.iter().find_map(|r| match r {
            Req::Eq(k, v) if self.fields && k == "metadata.name" => Some(v.as_str()),
            _ => None,
        })
    }

    /// Whether `obj` matches.
    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|r| {
            let get = |k: &str| -> Option<String> {
                if self.fields {
                    let mut cur = obj;
                    for seg in k.split('.') {
                        cur = cur.get(seg)?;
                    }
                    cur.as_str().map(str::to_string)
                } else {
                    obj["metadata"]["labels"].get(k)?.as_str().map(str::to_string)
                }
            };
            match r {
                Req::Eq(k, v) => get(k).as_deref().unwrap_or("") == v && (self.fields || get(k).is_some()),
                Req::Ne(k, v) => get(k).as_deref() != Some(v.as_str()),
                Req::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
                Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
                Req::Exists(k) => get(k).is_some(),
                Req::Absent(k) => get(k).is_none(),
            }
        })
    }
}

/// Split on commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_label(p: &str) -> Result<Req, String> {
    let bad = || format!("unable to parse requirement: {p:?}");
    if let Some(k) = p.strip_prefix('!') {
        return Ok(Req::Absent(k.trim().into()));
    }
    if let Some((k, v)) = p.split_once("!=") {
        return Ok(Req::Ne(k.trim().into(), v.trim().into()));
    }
    if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
        return Ok(Req::Eq(k.trim().into(), v.trim().into()));
    }
    for (op, notin) in [(" notin ", true), (" in ", false)] {
        if let Some((k, rest)) = p.split_once(op) {
            let list = rest.trim();
            let inner = list
                .strip_prefix('(')
                .and_then(|l| l.strip_suffix(')'))
                .ok_or_else(bad)?;
            let vs = inner.split(',').map(|v| v.trim().to_string()).collect();
            return Ok(if notin {
                Req::NotIn(k.trim().into(), vs)
            } else {
                Req::In(k.trim().into(), vs)
            });
        }
    }
    if p.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) {
        Ok(Req::Exists(p.into()))
    } else {
        Err(bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_requirements() {
        let o = json!({"metadata": {"labels": {"app": "a", "tier": "x"}}});
        for (sel, want) in [
            ("", true),
            ("app=a", true),
            ("app==a,tier=x", true),
            ("app!=a", false),
            ("app in (a, b)", true),
            ("app notin (a)", false),
            ("tier", true),
            ("!tier", false),
            ("missing=x", false),
            ("missing!=x", true),
        ] {
            assert_eq!(Selector::labels(sel).unwrap().matches(&o), want, "{sel}");
        }
        assert!(Selector::labels("app in a").is_err());
    }

    #[test]
    fn field_requirements_and_pinned_name() {
        let o = json!({"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Running"}});
        let s = Selector::fields("metadata.name=p,status.phase!=Failed").unwrap();
        assert!(s.matches(&o));
        assert_eq!(s.pinned_name(), Some("p"));
        assert!(!Selector::fields("metadata.name=q").unwrap().matches(&o));
        assert!(Selector::fields("junk").is_err());
    }
}
