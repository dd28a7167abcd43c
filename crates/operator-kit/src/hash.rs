//! Hash annotations, byte-compatible with library-go.
//!
//! The `operator.openshift.io/dep-<key>` dependency hashes that make a Deployment or DaemonSet
//! roll out when a ConfigMap or Secret it reads changes (anchors §1.6). These must be
//! **identical** to what OpenShift's Go operators write, otherwise switching operators would
//! roll every pod once for nothing. The value is FNV-1 32 (not FNV-1a) over the exact bytes
//! Go's `json.NewEncoder(h).Encode(obj.Data)` writes, base64url-encoded with padding. The test
//! `tests/hash_vectors.rs` checks every vector Go itself printed.
//!
//! The `operator.openshift.io/spec-hash` annotation is the apply engine's alone
//! ([`crate::apply::spec_hash`]): its value only has to be stable for us.
//!
//! This module is pure: no I/O, no clock, no kube client.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::ByteString;

/// Prefix of every dependency hash annotation key.
pub const DEP_ANNOTATION_PREFIX: &str = "operator.openshift.io/dep-";

/// Kubernetes limits the name part of an annotation key; library-go truncates the *whole* key
/// to this length (anchors §8.7, copied on purpose: the keys must match).
const MAX_ANNOTATION_KEY_LEN: usize = 63;

/// The kind of object a dependency hash is computed for; its name is part of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependencyKind {
    /// A core/v1 ConfigMap (`resource` = `configmap`).
    ConfigMap,
    /// A core/v1 Secret (`resource` = `secret`).
    Secret,
}

impl DependencyKind {
    /// The `resource` part of library-go's `<namespace>.<name>.<resource>` key.
    pub fn resource(self) -> &'static str {
        match self {
            DependencyKind::ConfigMap => "configmap",
            DependencyKind::Secret => "secret",
        }
    }
}

/// The annotation key under which the hash of `namespace/name` is recorded.
///
/// `operator.openshift.io/dep-<namespace>.<name>.<resource>`; when that whole string is longer
/// than 63 characters it becomes the first 63 characters of
/// `operator.openshift.io/dep-<hex sha256 of "<namespace>.<name>.<resource>">`.
pub fn dependency_annotation_key(kind: DependencyKind, namespace: &str, name: &str) -> String {
    let k = format!("{namespace}.{name}.{}", kind.resource());
    let key = format!("{DEP_ANNOTATION_PREFIX}{k}");
    if key.len() <= MAX_ANNOTATION_KEY_LEN {
        return key;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, k.as_bytes());
    let mut long = String::with_capacity(DEP_ANNOTATION_PREFIX.len() + 64);
    long.push_str(DEP_ANNOTATION_PREFIX);
    push_hex(&mut long, digest.as_ref());
    // Only ASCII was written, so cutting at a byte index is a char boundary.
    long.truncate(MAX_ANNOTATION_KEY_LEN);
    long
}

/// Hash of a ConfigMap's `data` (not `binaryData`, which library-go ignores too).
///
/// `None` is Go's nil map and hashes as `null\n`; `Some(empty)` hashes as `{}\n`. A real API
/// server omits an empty `data` field, so what Go sees for an empty ConfigMap is nil: callers
/// that hash objects read from the API should use [`configmap_hash`], which maps empty to nil.
pub fn configmap_data_hash(data: Option<&BTreeMap<String, String>>) -> String {
    let mut out = Vec::with_capacity(64);
    match data {
        None => out.extend_from_slice(b"null"),
        Some(map) => encode_map(&mut out, map.iter(), |out, v| go_json_string(out, v)),
    }
    out.push(b'\n');
    fnv1_32_base64url(&out)
}

/// Hash of a Secret's `data`: values are `[]byte` in Go, so they appear base64-encoded
/// (standard alphabet, padded) in the JSON that is hashed.
pub fn secret_data_hash(data: Option<&BTreeMap<String, ByteString>>) -> String {
    let mut out = Vec::with_capacity(64);
    match data {
        None => out.extend_from_slice(b"null"),
        Some(map) => encode_map(&mut out, map.iter(), |out, v| {
            out.push(b'"');
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(&v.0)
                    .as_bytes(),
            );
            out.push(b'"');
        }),
    }
    out.push(b'\n');
    fnv1_32_base64url(&out)
}

/// Dependency hash of a ConfigMap as read from the API (empty `data` counts as absent, which is
/// what a Go client decodes from a real API server, since `data` is `omitempty`).
pub fn configmap_hash(cm: &k8s_openapi::api::core::v1::ConfigMap) -> String {
    configmap_data_hash(cm.data.as_ref().filter(|d| !d.is_empty()))
}

/// Dependency hash of a Secret as read from the API (empty `data` counts as absent, as for
/// [`configmap_hash`]). `stringData` is write-only and never hashed.
pub fn secret_hash(secret: &k8s_openapi::api::core::v1::Secret) -> String {
    secret_data_hash(secret.data.as_ref().filter(|d| !d.is_empty()))
}

/// Writes `value` the way Go's `encoding/json` writes the equivalent `map[string]interface{}`:
/// keys sorted bytewise, no whitespace, HTML-escaping on.
pub fn go_json_value(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => go_json_string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                go_json_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Sort explicitly: serde_json's map may preserve insertion order when another crate
            // in the build enables its `preserve_order` feature.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            encode_map(out, entries.into_iter(), go_json_value);
        }
    }
}

fn encode_map<'a, V: 'a, I, F>(out: &mut Vec<u8>, entries: I, mut encode_value: F)
where
    I: Iterator<Item = (&'a String, &'a V)>,
    F: FnMut(&mut Vec<u8>, &V),
{
    out.push(b'{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        go_json_string(out, k);
        out.push(b':');
        encode_value(out, v);
    }
    out.push(b'}');
}

/// Writes `s` as a JSON string exactly as Go's `encoding/json` does with HTML escaping on
/// (the default for both `json.Marshal` and `json.Encoder`), following current Go (1.22+):
/// `\b` and `\f` use their short escapes; other control characters are `\u00xx` (lowercase hex);
/// `<`, `>`, `&`, U+2028 and U+2029 are `\u` escapes; DEL and all other characters are raw.
pub fn go_json_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = c as u32;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[((b >> 4) & 0xf) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            _ => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// FNV-1 (multiply, then xor) 32-bit, as Go's `hash/fnv.New32`.
pub fn fnv1_32(bytes: &[u8]) -> u32 {
    const OFFSET: u32 = 2_166_136_261;
    const PRIME: u32 = 16_777_619;
    bytes
        .iter()
        .fold(OFFSET, |h, b| h.wrapping_mul(PRIME) ^ u32::from(*b))
}

/// FNV-1 32 digest (big-endian, as Go's `Sum(nil)`) in padded base64url.
fn fnv1_32_base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE.encode(fnv1_32(bytes).to_be_bytes())
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str) -> String {
        let mut out = Vec::new();
        go_json_string(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn go_string_escapes() {
        assert_eq!(enc("a<b>&c"), r#""a\u003cb\u003e\u0026c""#);
        assert_eq!(
            enc("\u{8}\u{c}\u{1}\u{1f}\u{7f}"),
            "\"\\b\\f\\u0001\\u001f\u{7f}\""
        );
        assert_eq!(enc("q\"b\\/"), r#""q\"b\\/""#);
        assert_eq!(enc("\u{2028}\u{2029}é"), "\"\\u2028\\u2029é\"");
    }

    #[test]
    fn fnv1_is_not_fnv1a() {
        // Known FNV-1 32 values: "" → offset basis, "a" → 0x050c5d7e (FNV-1a would be 0xe40c292c).
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
    }

    #[test]
    fn empty_data_from_api_counts_as_nil() {
        let cm = k8s_openapi::api::core::v1::ConfigMap {
            data: Some(BTreeMap::new()),
            ..Default::default()
        };
        assert_eq!(configmap_hash(&cm), configmap_data_hash(None));
        let secret = k8s_openapi::api::core::v1::Secret {
            data: Some(BTreeMap::new()),
            ..Default::default()
        };
        assert_eq!(secret_hash(&secret), secret_data_hash(None));
        assert_ne!(
            configmap_data_hash(Some(&BTreeMap::new())),
            configmap_data_hash(None)
        );
    }

    #[test]
    fn short_keys_are_kept_whole() {
        assert_eq!(
            dependency_annotation_key(DependencyKind::ConfigMap, "ns", "short"),
            "operator.openshift.io/dep-ns.short.configmap"
        );
        let long = dependency_annotation_key(
            DependencyKind::Secret,
            "a-long-namespace",
            "a-long-secret-name",
        );
        assert_eq!(long.len(), 63);
        assert!(long.starts_with(DEP_ANNOTATION_PREFIX));
    }

    #[test]
    fn go_json_matches_go_json_marshal_of_a_map() {
        // Go: json.Marshal(map[string]interface{}{"b":1,"a":"<x>"}) = {"a":"\u003cx\u003e","b":1}
        let mut out = Vec::new();
        go_json_value(&mut out, &serde_json::json!({"b": 1, "a": "<x>"}));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":"\u003cx\u003e","b":1}"#
        );
    }
}
