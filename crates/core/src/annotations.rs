//! The ≤ v3.1 downward-API annotations file (`/argo/podmetadata/annotations`).
//!
//! The kubelet writes one `key="value"` line per annotation, the value quoted Go-style
//! (`%q`). The template annotation's value is itself JSON, so reading it takes two decodes:
//! Go-unquote the line's value, then parse the JSON.

/// Annotation key holding the template (≤ v3.1).
pub const TEMPLATE_ANNOTATION: &str = "workflows.argoproj.io/template";

/// Errors reading the annotations file.
#[derive(Debug, thiserror::Error)]
pub enum AnnotationsError {
    /// No line for the key.
    #[error("annotation {0:?} not found in the downward-API annotations file")]
    Missing(String),
    /// The quoted value is malformed.
    #[error("annotation {key:?} has a malformed quoted value: {reason}")]
    BadQuoting {
        /// Annotation key.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

/// Find `key` in the annotations file `text` and return its unquoted value.
///
/// # Errors
/// [`AnnotationsError::Missing`] or [`AnnotationsError::BadQuoting`].
pub fn lookup(text: &str, key: &str) -> Result<String, AnnotationsError> {
    let prefix = format!("{key}=");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .ok_or_else(|| AnnotationsError::Missing(key.into()))?;
    go_unquote(line.trim_end()).map_err(|reason| AnnotationsError::BadQuoting {
        key: key.into(),
        reason,
    })
}

/// Undo Go's `strconv.Quote`: a double-quoted string with `\a \b \f \n \r \t \v \\ \" \'`,
/// `\xHH`, octal `\ooo`, `\uHHHH` and `\UHHHHHHHH` escapes.
///
/// # Errors
/// A message naming the malformed part.
pub fn go_unquote(s: &str) -> Result<String, String> {
    let inner = s
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or_else(|| "value is not enclosed in double quotes".to_string())?;
    let mut bytes = Vec::with_capacity(inner.len());
    let mut it = inner.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let e = it.next().ok_or("trailing backslash")?;
        let mut hex = |n: usize| -> Result<u32, String> {
            let h: String = (0..n).filter_map(|_| it.next()).collect();
            if h.len() != n {
                return Err(format!("short \\{e} escape"));
            }
            u32::from_str_radix(&h, 16).map_err(|_| format!("bad hex in \\{e}{h}"))
        };
        match e {
            'a' => bytes.push(7),
            'b' => bytes.push(8),
            'f' => bytes.push(12),
            'n' => bytes.push(b'\n'),
            'r' => bytes.push(b'\r'),
            't' => bytes.push(b'\t'),
            'v' => bytes.push(11),
            '\\' | '"' | '\'' => bytes.push(e as u8),
            'x' => bytes.push(hex(2)? as u8),
            'u' | 'U' => {
                let cp = hex(if e == 'u' { 4 } else { 8 })?;
                let ch = char::from_u32(cp).ok_or_else(|| format!("invalid code point {cp:#x}"))?;
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    let d = it
                        .next()
                        .and_then(|c| c.to_digit(8))
                        .ok_or("short octal escape")?;
                    v = v * 8 + d;
                }
                bytes.push(u8::try_from(v).map_err(|_| "octal escape out of range")?);
            }
            other => return Err(format!("unknown escape \\{other}")),
        }
    }
    String::from_utf8(bytes).map_err(|_| "value is not valid UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_decode_template() {
        let file = "kubernetes.io/config.seen=\"2026-01-01\"\n\
                    workflows.argoproj.io/template=\"{\\\"name\\\":\\\"t\\\",\\\"script\\\":{\\\"source\\\":\\\"echo \\\\\\\"hi\\\\\\\"\\\\n\\\"}}\"\n";
        let json = lookup(file, TEMPLATE_ANNOTATION).unwrap();
        let t = crate::Template::from_json(&json).unwrap();
        assert_eq!(t.name, "t");
        assert_eq!(t.script.unwrap().source, "echo \"hi\"\n");
    }

    #[test]
    fn go_escapes() {
        assert_eq!(
            go_unquote(r#""a\tb\x41\u00e9\101\U0001F600""#).unwrap(),
            "a\tbAéA😀"
        );
        assert!(go_unquote("noquotes").is_err());
        assert!(go_unquote(r#""bad\q""#).is_err());
        assert!(matches!(
            lookup("x=\"1\"", TEMPLATE_ANNOTATION),
            Err(AnnotationsError::Missing(_))
        ));
    }
}
