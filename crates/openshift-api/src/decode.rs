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
    "{kind} {name:?} does not match the {kind} API: {source}; fix the object (or the CRD installed for it)"
)]
pub struct DecodeError {
    /// The kind expected.
    pub kind: String,
    /// `namespace/name` or `name` from the object's metadata, if it has one.
    pub name: String,
    /// serde's message (it names the offending type or field, never a value of a string).
    #[source]
    pub source: serde_json::Error,
}

/// Decodes `value` as `K`, or says which object did not match.
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
    serde_json::from_value(value).map_err(|source| DecodeError {
        kind: K::kind(&()).into_owned(),
        name,
        source,
    })
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
