//! Turning a JSON object from the API into a typed object with an error that says which object
//! failed and why, for callers that get raw JSON (dynamic watches, files, `render` inputs).
//!
//! A typed `kube::Api` get/list already fails with `kube::Error::SerdeError` on a malformed
//! object; this helper adds the kind and name to the message so an operator can put it into a
//! condition.
//!
//! What this module must not do: echo the object's content (it may be a Secret) or panic.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// An object that does not match its type.
#[derive(Debug, thiserror::Error)]
#[error(
    "{kind} {name:?} does not match the {kind} API{at}: {reason}; fix the object (or the CRD installed for it)",
    at = field.as_deref().map(|f| format!(" at {f}")).unwrap_or_default()
)]
pub struct DecodeError {
    /// The kind expected.
    pub kind: String,
    /// `namespace/name` or `name` from the object's metadata, if it has one.
    pub name: String,
    /// The field that does not match, as a dotted path (`spec.logLevel`), when one field alone
    /// is the cause.
    pub field: Option<String>,
    /// serde's message with any string value it quoted replaced by `<redacted>`.
    pub reason: String,
    #[source]
    pub source: serde_json::Error,
}

/// Decodes `value` as `K`, or says which object and which field did not match.
pub fn from_value<K>(value: Value) -> Result<K, DecodeError>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned,
{
    let meta = value.get("metadata");
    let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str);
    let name = match (field("namespace"), field("name")) {
        (Some(ns), Some(n)) => format!("{ns}/{n}"),
        (None, Some(n)) => n.to_owned(),
        _ => "<no name>".to_owned(),
    };
    match K::deserialize(&value) {
        Ok(k) => Ok(k),
        Err(source) => Err(DecodeError {
            kind: K::kind(&()).into_owned(),
            name,
            field: culprit::<K>(&value),
            reason: redact_quoted_values(&source.to_string()),
            source,
        }),
    }
}

/// Deepest field whose removal alone makes `value` decode as `K`. serde's own message names no
/// field, and `#[serde(flatten)]` (every operator spec flattens `OperatorSpec`) hides the path
/// even from path-tracking deserializers; trying without each field finds it whatever the
/// nesting. Only runs on an object that already failed, and stops at [`MAX_TRIES`].
fn culprit<K: DeserializeOwned>(value: &Value) -> Option<String> {
    let mut tries = 0;
    let mut found: Option<Vec<String>> = None;
    // Breadth first over every field of every nested object: a parent (`spec`) may be
    // required, so its removal fails for another reason while a child's removal succeeds.
    let mut queue: std::collections::VecDeque<Vec<String>> = [Vec::new()].into();
    while let Some(path) = queue.pop_front() {
        let here = path.iter().try_fold(value, |v, k| v.get(k));
        let Some(object) = here.and_then(Value::as_object) else {
            continue;
        };
        for key in object.keys() {
            tries += 1;
            if tries > MAX_TRIES {
                return found.map(|p| p.join("."));
            }
            let mut candidate = value.clone();
            let parent = path
                .iter()
                .try_fold(&mut candidate, |v, k| v.get_mut(k))
                .and_then(Value::as_object_mut);
            if let Some(parent) = parent {
                parent.remove(key);
            }
            let mut child = path.clone();
            child.push(key.clone());
            if K::deserialize(&candidate).is_ok()
                && found.as_ref().is_none_or(|f| child.len() > f.len())
            {
                found = Some(child.clone());
            }
            queue.push_back(child);
        }
    }
    found.map(|p| p.join("."))
}

/// Decodes tried per failed object: enough for every field of an operator CR, bounded for a
/// hostile one.
const MAX_TRIES: usize = 256;

/// serde quotes the string it met (`invalid type: string "…", expected …`); that string may be
/// a secret in the wrong place. The quoted strings after `string `, `value ` and `variant ` are
/// replaced; serde's lists of expected variants and field names stay.
fn redact_quoted_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find('"') {
        let (before, quoted) = rest.split_at(start);
        out.push_str(before);
        // serde writes the string with Rust's escapes (`\"`, `\\`): skip escaped characters.
        let mut escaped = false;
        let end = quoted[1..].char_indices().find_map(|(i, c)| match c {
            _ if escaped => {
                escaped = false;
                None
            }
            '\\' => {
                escaped = true;
                None
            }
            '"' => Some(i),
            _ => None,
        });
        let Some(end) = end else {
            out.push_str(quoted);
            return out;
        };
        let literal = &quoted[..end + 2];
        let user_data = ["string ", "value ", "variant "]
            .iter()
            .any(|p| before.ends_with(p));
        out.push_str(if user_data { "\"<redacted>\"" } else { literal });
        rest = &quoted[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClusterCSIDriver;
    use serde_json::json;

    #[test]
    fn error_names_kind_and_object_but_not_values() {
        let err = from_value::<ClusterCSIDriver>(json!({
            "metadata": {"name": "cinder.csi.openstack.org"},
            "spec": {"managementState": "Managed", "observedConfig": "s3cr3t", "logLevel": 1}
        }))
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("ClusterCSIDriver \"cinder.csi.openstack.org\" does not match"),
            "{err}"
        );
        assert!(err.contains("expected a string"), "{err}");
        assert!(err.contains(" at spec.logLevel: "), "{err}");
        assert!(!err.contains("s3cr3t"), "{err}");
        let err = from_value::<crate::CredentialsRequest>(json!({
            "metadata": {"namespace": "ns", "name": "r"}, "spec": {}
        }))
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("CredentialsRequest \"ns/r\""), "{err}");
        let err = from_value::<ClusterCSIDriver>(json!([]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"<no name>\""), "{err}");
    }

    #[test]
    fn a_string_in_place_of_an_object_is_named_and_not_quoted() {
        let err = from_value::<ClusterCSIDriver>(json!({
            "metadata": {"name": "manila.csi.openstack.org"},
            "spec": {"managementState": "Managed", "driverConfig": "password=hunter2"}
        }))
        .unwrap_err()
        .to_string();
        assert!(err.contains(" at spec.driverConfig: "), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("<redacted>"), "{err}");
    }

    #[test]
    fn quoted_user_values_are_redacted_and_expected_names_kept() {
        assert_eq!(
            redact_quoted_values(
                r#"unknown variant "Manged", expected one of "Managed", "Unmanaged""#
            ),
            r#"unknown variant "<redacted>", expected one of "Managed", "Unmanaged""#
        );
        assert_eq!(
            redact_quoted_values(r#"invalid type: string "x\"y", expected a map"#),
            r#"invalid type: string "<redacted>", expected a map"#
        );
        assert_eq!(
            redact_quoted_values(r#"unterminated "abc"#),
            r#"unterminated "abc"#
        );
    }

    #[test]
    fn a_good_object_decodes() {
        let cr = from_value::<ClusterCSIDriver>(json!({
            "metadata": {"name": "cinder.csi.openstack.org"}, "spec": {}
        }))
        .unwrap();
        assert_eq!(
            cr.metadata.name.as_deref(),
            Some("cinder.csi.openstack.org")
        );
    }
}
