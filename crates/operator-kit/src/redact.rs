//! How a Secret may appear in `Debug` output (a debug log line, a test failure): its namespace,
//! name and key names, never its values.

use k8s_openapi::api::core::v1::Secret;

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
