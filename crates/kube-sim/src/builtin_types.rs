//! Decoding built-in objects through their typed Go-equivalent structs (k8s-openapi), as the
//! API server decodes a request body into its Go types and encodes it back.
//!
//! That round trip is what makes a real server drop fields it does not know, reject values of
//! the wrong JSON type with `400 BadRequest`, and omit empty slices and maps (`omitempty`).
//! An operator that compares what it sent with what it reads back must see the same here.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use k8s_openapi::api::{
    admissionregistration, apps, coordination, core, events, networking, policy, rbac, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;

/// The result of decoding: the normalized object and the paths of the fields it dropped.
pub struct Decoded {
    pub object: Value,
    pub unknown_fields: Vec<String>,
}

/// Decodes and re-encodes a built-in object. `None` if the kind is not a typed built-in.
pub fn roundtrip(group: &str, kind: &str, obj: &Value) -> Option<Result<Decoded, String>> {
    let f: fn(&Value) -> Result<Value, String> = match (group, kind) {
        ("", "Namespace") => typed::<core::v1::Namespace>,
        ("", "Node") => typed::<core::v1::Node>,
        ("", "Secret") => typed::<core::v1::Secret>,
        ("", "ConfigMap") => typed::<core::v1::ConfigMap>,
        ("", "ServiceAccount") => typed::<core::v1::ServiceAccount>,
        ("", "Service") => typed::<core::v1::Service>,
        ("", "Event") => typed::<core::v1::Event>,
        ("", "Pod") => typed::<core::v1::Pod>,
        ("", "PersistentVolume") => typed::<core::v1::PersistentVolume>,
        ("", "PersistentVolumeClaim") => typed::<core::v1::PersistentVolumeClaim>,
        ("apps", "Deployment") => typed::<apps::v1::Deployment>,
        ("apps", "DaemonSet") => typed::<apps::v1::DaemonSet>,
        ("rbac.authorization.k8s.io", "ClusterRole") => typed::<rbac::v1::ClusterRole>,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            typed::<rbac::v1::ClusterRoleBinding>
        }
        ("rbac.authorization.k8s.io", "Role") => typed::<rbac::v1::Role>,
        ("rbac.authorization.k8s.io", "RoleBinding") => typed::<rbac::v1::RoleBinding>,
        ("storage.k8s.io", "CSIDriver") => typed::<storage::v1::CSIDriver>,
        ("storage.k8s.io", "StorageClass") => typed::<storage::v1::StorageClass>,
        ("storage.k8s.io", "CSINode") => typed::<storage::v1::CSINode>,
        ("storage.k8s.io", "VolumeAttachment") => typed::<storage::v1::VolumeAttachment>,
        ("policy", "PodDisruptionBudget") => typed::<policy::v1::PodDisruptionBudget>,
        ("coordination.k8s.io", "Lease") => typed::<coordination::v1::Lease>,
        ("events.k8s.io", "Event") => typed::<events::v1::Event>,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            typed::<apiext::CustomResourceDefinition>
        }
        ("networking.k8s.io", "NetworkPolicy") => typed::<networking::v1::NetworkPolicy>,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            typed::<admissionregistration::v1::ValidatingAdmissionPolicy>
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            typed::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>
        }
        _ => return None,
    };
    Some(f(obj).map(|mut object| {
        omit_empty(&mut object);
        let mut unknown_fields = Vec::new();
        dropped_fields(obj, &object, "", &mut unknown_fields);
        Decoded {
            object,
            unknown_fields,
        }
    }))
}

fn typed<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(t).map_err(|e| e.to_string())
}

/// Slices the Go types declare without `omitempty`: an empty one stays `[]`.
const KEEP_EMPTY_LISTS: &[&str] = &["rules", "verbs", "drivers", "containers", "items"];
/// Map-typed fields (`map[string]string` with `omitempty`): an empty one disappears.
const MAP_FIELDS: &[&str] = &[
    "labels",
    "annotations",
    "data",
    "binaryData",
    "stringData",
    "nodeSelector",
    "parameters",
    "matchLabels",
];

/// Mimics Go's `omitempty` on the shapes where k8s-openapi keeps an empty value.
fn omit_empty(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, child| match child {
                Value::Null => false,
                Value::Array(a) => !a.is_empty() || KEEP_EMPTY_LISTS.contains(&k.as_str()),
                Value::Object(o) => !o.is_empty() || !MAP_FIELDS.contains(&k.as_str()),
                _ => true,
            });
            for child in map.values_mut() {
                omit_empty(child);
            }
        }
        Value::Array(items) => {
            for item in items {
                omit_empty(item);
            }
        }
        _ => {}
    }
}

/// Lists fields present in `input` but absent from the decoded `output` (unknown to the type).
fn dropped_fields(input: &Value, output: &Value, path: &str, out: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => {
            for (k, iv) in i {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match o.get(k) {
                    Some(ov) => dropped_fields(iv, ov, &p, out),
                    None if is_empty_value(iv) => {}
                    None => out.push(p),
                }
            }
        }
        (Value::Array(i), Value::Array(o)) => {
            for (n, (iv, ov)) in i.iter().zip(o).enumerate() {
                dropped_fields(iv, ov, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty() || o.values().all(is_empty_value),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_dropped_and_reported() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "bogus": 1}, "data": {"a": "b"}, "extra": true});
        let d = roundtrip("", "ConfigMap", &cm)
            .expect("typed")
            .expect("decodes");
        assert_eq!(
            d.object,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}})
        );
        assert_eq!(d.unknown_fields, vec!["extra", "metadata.bogus"]);
    }

    #[test]
    fn wrong_types_are_rejected() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"replicas": "three"}});
        assert!(roundtrip("apps", "Deployment", &d).expect("typed").is_err());
    }

    #[test]
    fn empty_slices_and_maps_are_omitted_like_go() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {}},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "args": [], "env": null}]}}}});
        let out = roundtrip("apps", "Deployment", &d)
            .expect("typed")
            .expect("decodes")
            .object;
        assert!(out.pointer("/metadata/labels").is_none());
        assert!(
            out.pointer("/spec/template/spec/containers/0/args")
                .is_none()
        );
        assert!(
            out.pointer("/spec/template/spec/containers/0/env")
                .is_none()
        );
        assert!(
            out.pointer("/spec/selector").is_some(),
            "a struct stays even when small"
        );
    }

    #[test]
    fn custom_kinds_are_not_typed() {
        assert!(roundtrip("operator.openshift.io", "ClusterCSIDriver", &json!({})).is_none());
    }
}
