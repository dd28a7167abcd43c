//! How a Secret may appear in `Debug` output (a debug log line, a test failure): its namespace,
//! name and key names, never its values.

use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;

/// `Debug` of an optional Secret that shows namespace, name and keys and writes `<redacted>`
/// for the values. Use it in a hand-written `Debug` of anything that holds a Secret.
pub struct RedactedSecret<'a>(pub &'a Option<Secret>);

impl std::fmt::Debug for RedactedSecret<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(secret) = self.0 else {
            return f.write_str("None");
        };
        let keys: std::collections::BTreeSet<&str> = secret
            .data
            .iter()
            .flat_map(|d| d.keys())
            .chain(secret.string_data.iter().flat_map(|d| d.keys()))
            .map(String::as_str)
            .collect();
        f.debug_struct("Secret")
            .field("namespace", &secret.metadata.namespace)
            .field("name", &secret.metadata.name)
            .field("keys", &keys)
            .field("values", &format_args!("<redacted>"))
            .finish()
    }
}

/// `Debug` of a dynamic object that may be a Secret (a cache entry, an object to apply): a
/// Secret shows as [`RedactedSecret`] does, anything else in full. Use it in a hand-written
/// `Debug` of anything that holds objects of any kind.
pub struct RedactedObject<'a>(pub &'a DynamicObject);

impl std::fmt::Debug for RedactedObject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let object = self.0;
        let is_secret = object
            .types
            .as_ref()
            .is_some_and(|t| t.kind == "Secret" && t.api_version == "v1");
        if !is_secret {
            return object.fmt(f);
        }
        let keys: std::collections::BTreeSet<&str> = ["data", "stringData"]
            .iter()
            .filter_map(|field| object.data.get(field).and_then(|d| d.as_object()))
            .flat_map(|d| d.keys().map(String::as_str))
            .collect();
        f.debug_struct("Secret")
            .field("namespace", &object.metadata.namespace)
            .field("name", &object.metadata.name)
            .field("resourceVersion", &object.metadata.resource_version)
            .field("keys", &keys)
            .field("values", &format_args!("<redacted>"))
            .finish()
    }
}

#[cfg(test)]
mod object_tests {
    use super::*;

    fn object(kind: &str, data: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {"namespace": "ns", "name": "creds", "resourceVersion": "7"},
            "data": data,
        }))
        .expect("a valid object")
    }

    #[test]
    fn a_secret_shows_its_keys_and_never_its_values() {
        let secret = object(
            "Secret",
            serde_json::json!({"clouds.yaml": "cGFzc3dvcmQ6IGh1bnRlcjI="}),
        );
        let shown = format!("{:?}", RedactedObject(&secret));
        assert!(
            shown.contains("clouds.yaml") && shown.contains("creds"),
            "{shown}"
        );
        assert!(!shown.contains("cGFzc3dvcmQ6IGh1bnRlcjI="), "{shown}");
    }

    #[test]
    fn other_kinds_show_in_full() {
        let config = object("ConfigMap", serde_json::json!({"cloud.conf": "[Global]"}));
        let shown = format!("{:?}", RedactedObject(&config));
        assert!(shown.contains("[Global]"), "{shown}");
    }
}
