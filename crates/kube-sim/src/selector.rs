//! Label and field selectors as the API server parses and applies them.
//!
//! Label selectors support `=`, `==`, `!=`, `in`, `notin`, `key` (exists) and `!key`;
//! field selectors support `=`, `==` and `!=` on `metadata.name` and `metadata.namespace`
//! (plus the few per-type fields a real server indexes, where listed). Parsing is strict: a
//! malformed selector is a `400 BadRequest`, never a silent match-all.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(s)? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(Self { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// `metav1.LabelSelectorAsSelector` over a `metav1.LabelSelector` object: `Ok(None)` for a
    /// nil selector (it matches nothing), an error for one Go refuses.
    pub fn from_object(v: Option<&Value>) -> Result<Option<Self>, String> {
        let sel = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(m)) => m,
            Some(other) => return Err(format!("a label selector must be an object, not {other}")),
        };
        let mut requirements = Vec::new();
        let labels = sel.get("matchLabels").and_then(Value::as_object);
        for (k, v) in labels.into_iter().flatten() {
            let v = v
                .as_str()
                .ok_or_else(|| format!("label {k:?} must be a string"))?;
            check_key(k)?;
            check_value(v)?;
            requirements.push(Requirement::Equals(k.clone(), v.to_string()));
        }
        let exprs = sel.get("matchExpressions").and_then(Value::as_array);
        for e in exprs.into_iter().flatten() {
            let text = |f: &str| e.get(f).and_then(Value::as_str);
            let key = text("key").ok_or("a requirement needs a key")?.to_string();
            check_key(&key)?;
            let values = match e.get("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(vs)) => vs
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("values must be strings")?,
                Some(_) => return Err("values must be a list".into()),
            };
            values.iter().try_for_each(|v| check_value(v))?;
            requirements.push(match (text("operator"), values.is_empty()) {
                (Some("In"), false) => Requirement::In(key, values),
                (Some("NotIn"), false) => Requirement::NotIn(key, values),
                (Some("Exists"), true) => Requirement::Exists(key),
                (Some("DoesNotExist"), true) => Requirement::NotExists(key),
                (op, _) => return Err(format!("invalid requirement {op:?} on {key:?}")),
            });
        }
        Ok(Some(Self { requirements }))
    }

    /// Matches an object's `metadata.labels`.
    pub fn matches(&self, obj: &Value) -> bool {
        self.matches_labels(obj.pointer("/metadata/labels"))
    }

    /// Matches a labels map.
    pub fn matches_labels(&self, labels: Option<&Value>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A `metav1.LabelSelector` object against labels; one Go refuses, or a nil one, matches nothing.
pub fn object_matches(sel: &Value, labels: Option<&Value>) -> bool {
    LabelSelector::from_object(Some(sel)).is_ok_and(|s| s.is_some_and(|s| s.matches_labels(labels)))
}

/// A `metav1.LabelSelector` object with no requirement (it matches everything).
pub fn object_is_empty(v: Option<&Value>) -> bool {
    let n = |k: &str| match v.and_then(|s| s.get(k)) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    v.is_some_and(Value::is_object) && n("matchLabels") + n("matchExpressions") == 0
}

/// Splits on commas that are not inside `( … )`.
fn split_top_level(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!(
                        "unable to parse requirement: unexpected ')' in {s:?}"
                    ));
                }
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!(
            "unable to parse requirement: unclosed '(' in {s:?}"
        ));
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key)?;
        return Ok(Requirement::NotExists(key.to_string()));
    }
    if let Some((k, v)) = part.split_once("!=") {
        let (k, v) = (k.trim(), v.trim());
        check_key(k)?;
        check_value(v)?;
        return Ok(Requirement::NotEquals(k.into(), v.into()));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        let (k, v) = (k.trim(), v.trim());
        check_key(k)?;
        check_value(v)?;
        return Ok(Requirement::Equals(k.into(), v.into()));
    }
    for (op, negate) in [(" notin ", true), (" in ", false)] {
        if let Some((k, rest)) = part.split_once(op) {
            let k = k.trim();
            check_key(k)?;
            let rest = rest.trim();
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| {
                    format!("unable to parse requirement: found '{rest}', expected: '('")
                })?;
            let values: Vec<String> = inner
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect();
            if values.is_empty() {
                return Err(format!(
                    "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty in {part:?}"
                ));
            }
            for v in &values {
                check_value(v)?;
            }
            return Ok(if negate {
                Requirement::NotIn(k.into(), values)
            } else {
                Requirement::In(k.into(), values)
            });
        }
    }
    check_key(part)?;
    Ok(Requirement::Exists(part.to_string()))
}

fn check_key(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let valid_name = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let valid_prefix = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    });
    if valid_name && valid_prefix {
        Ok(())
    } else {
        Err(format!(
            "unable to parse requirement: invalid label key \"{k}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn check_value(v: &str) -> Result<(), String> {
    let ok = v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "unable to parse requirement: invalid label value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// A parsed field selector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses and checks the fields against those the resource supports (`extra` lists the
    /// per-type fields beyond `metadata.name`/`metadata.namespace`).
    pub fn parse(s: &str, extra: &[&str]) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" && !extra.contains(&field)
            {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(Self { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The name this selector pins, if it is `metadata.name=X` (used to narrow lists cheaply).
    pub fn pinned_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, eq, _)| f == "metadata.name" && *eq)
            .map(|(_, _, v)| v.as_str())
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let actual = obj.pointer(&pointer).and_then(Value::as_str).unwrap_or("");
            (actual == value) == *equal
        })
    }
}

/// The per-type fields a real server lets you select on beyond name and namespace.
pub fn extra_fields(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Secret") => &["type"],
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "Namespace") => &["status.phase"],
        ("", "Node") => &["spec.unschedulable"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selector_objects_match_as_go_reads_them() {
        let labels = serde_json::json!({"a": "1", "b": "2"});
        let m = |sel: Value| object_matches(&sel, Some(&labels));
        assert!(m(serde_json::json!({})));
        assert!(m(
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]})
        ));
        assert!(!m(
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]})
        ));
        assert!(m(
            serde_json::json!({"matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]})
        ));
        assert!(!m(
            serde_json::json!({"matchExpressions": [{"key": "c", "operator": "Exists"}]})
        ));
        assert!(!m(serde_json::json!({"matchLabels": {"b": "3"}})));
        assert!(m(serde_json::json!({"matchLabels": {"b": "2"}})));
        // What LabelSelectorAsSelector refuses matches nothing, and says why.
        assert!(!m(
            serde_json::json!({"matchExpressions": [{"key": "c", "operator": "DoesNotExist", "values": ["x"]}]})
        ));
        assert!(!m(
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In"}]})
        ));
        assert!(!m(
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["1"]}]})
        ));
        assert!(!m(serde_json::json!({"matchLabels": {"a": 1}})));
        let err =
            LabelSelector::from_object(Some(&serde_json::json!({"matchLabels": {"-a": "1"}})));
        assert!(err.unwrap_err().contains("invalid label key"));
        assert_eq!(LabelSelector::from_object(None), Ok(None));
        assert!(object_is_empty(Some(
            &serde_json::json!({"matchLabels": {}})
        )));
        assert!(!object_is_empty(Some(
            &serde_json::json!({"matchLabels": {"a": "1"}})
        )));
    }
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns1", "labels": labels}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("missing notin (x)", true),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier=back", false),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).expect(sel).matches(&o),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn malformed_label_selectors_are_errors() {
        for bad in [
            "app in web",
            "app in ()",
            "-bad=x",
            "app=(x",
            "app=va lue",
            "a/=b",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} must not parse");
        }
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        assert!(
            FieldSelector::parse("metadata.name=a", &[])
                .expect("parses")
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns1", &[])
                .expect("parses")
                .matches(&o)
        );
        assert_eq!(
            FieldSelector::parse("metadata.name=a", &[])
                .expect("parses")
                .pinned_name(),
            Some("a")
        );
        let err = FieldSelector::parse("spec.foo=x", &[]).expect_err("unsupported field");
        assert_eq!(err, "field label not supported: spec.foo");
        assert!(FieldSelector::parse("nonsense", &[]).is_err());
    }
}
