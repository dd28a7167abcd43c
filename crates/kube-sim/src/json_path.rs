//! The JSONPath subset of CRD `additionalPrinterColumns`, as the API server evaluates it for
//! `kubectl get` tables: fields (`.status.phase`), indexes (`[0]`, `[-1]`), wildcards (`[*]`,
//! `.*`) and equality filters (`[?(@.type=="Available")]`, also on nested fields and with
//! single quotes), which is what CRDs use in practice (OpenShift's ClusterOperator columns are
//! all filters). A path outside the subset yields nothing, so its cell prints empty rather than
//! wrong.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Field(String),
    Index(i64),
    All,
    /// `[?(@.a.b == "x")]`: elements whose field path equals the literal.
    Equals(Vec<String>, Value),
}

/// The values `path` selects in `obj`, in document order.
pub fn select<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(segments) = parse(path) else {
        return Vec::new();
    };
    let mut current = vec![obj];
    for segment in &segments {
        let mut next = Vec::new();
        for v in current {
            match segment {
                Segment::Field(name) => next.extend(v.get(name.as_str())),
                Segment::Index(i) => {
                    if let Some(list) = v.as_array() {
                        let at = if *i < 0 { list.len() as i64 + i } else { *i };
                        next.extend(usize::try_from(at).ok().and_then(|at| list.get(at)));
                    }
                }
                Segment::All => match v {
                    Value::Array(list) => next.extend(list.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Segment::Equals(field, want) => {
                    for item in v.as_array().into_iter().flatten() {
                        let got = field.iter().try_fold(item, |x, k| x.get(k.as_str()));
                        if got == Some(want) {
                            next.push(item);
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

/// The cell of a printer column: the one value selected, several joined by spaces (as the API
/// server prints them), or null when none.
pub fn cell(obj: &Value, path: &str) -> Value {
    let found = select(obj, path);
    match found.as_slice() {
        [] => Value::Null,
        [one] => (*one).clone(),
        many => Value::String(
            many.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

fn parse(path: &str) -> Option<Vec<Segment>> {
    let mut rest = path.trim();
    if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        rest = inner.trim();
    }
    let mut out = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            if let Some(after_star) = after.strip_prefix('*') {
                out.push(Segment::All);
                rest = after_star;
                continue;
            }
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return None;
            }
            out.push(Segment::Field(name.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = matching_bracket(after)?;
            out.push(bracket(after[..close].trim())?);
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// The index of the `]` closing a bracket whose content starts `s`, skipping quoted text.
fn matching_bracket(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str) -> Option<Segment> {
    if inner == "*" {
        return Some(Segment::All);
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Some(Segment::Index(i));
    }
    let filter = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (left, right) = filter.split_once("==")?;
    let field: Vec<String> = left
        .trim()
        .strip_prefix("@.")?
        .split('.')
        .map(str::to_owned)
        .collect();
    if field.iter().any(String::is_empty) {
        return None;
    }
    let right = right.trim();
    let literal = if let Some(s) = right
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| right.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
    {
        Value::String(s.to_owned())
    } else {
        serde_json::from_str(right).ok()?
    };
    Some(Segment::Equals(field, literal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn co() -> Value {
        json!({"status": {
        "versions": [{"name": "operator", "version": "4.20.0"}, {"name": "x", "version": "1"}],
        "conditions": [
            {"type": "Available", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Degraded", "status": "False"}
        ]}})
    }

    #[test]
    fn the_cluster_operator_columns_evaluate() {
        let o = co();
        assert_eq!(
            cell(&o, ".status.versions[?(@.name==\"operator\")].version"),
            json!("4.20.0")
        );
        assert_eq!(
            cell(&o, ".status.conditions[?(@.type=='Available')].status"),
            json!("True")
        );
        assert_eq!(cell(&o, "{.status.conditions[0].type}"), json!("Available"));
        assert_eq!(cell(&o, ".status.conditions[-1].type"), json!("Degraded"));
        assert_eq!(
            cell(&o, ".status.conditions[*].type"),
            json!("Available Degraded")
        );
        assert_eq!(cell(&o, ".status.phase"), Value::Null);
    }

    #[test]
    fn malformed_paths_select_nothing() {
        let o = co();
        for bad in [
            ".status.conditions[?(@.type=\"x\")].status",
            ".status.conditions[?(type==\"x\")]",
            ".status..x",
            ".status.conditions[",
            "status",
            ".status.conditions[?(@.==\"x\")]",
            ".status.conditions[?(@.type==nope)]",
        ] {
            assert_eq!(cell(&o, bad), Value::Null, "{bad}");
        }
    }
}
