//! The pure half of the apply engine: given the desired object and the live one, decide what to
//! write (nothing, a create, an update, or a delete-and-recreate), per kind, following
//! library-go's `resourceapply` semantics (anchors §1.7).
//!
//! No I/O here: every rule is a function of (desired, live, expected generation) and is unit
//! tested. The executor in `apply/mod.rs` carries the plan out.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::DynamicObject;
use kube::core::{ApiResource, TypeMeta};
use serde_json::{Map, Value};

use super::ApplyError;

/// The spec hash annotation of Deployments, DaemonSets, Services and CSIDrivers.
pub const SPEC_HASH_ANNOTATION: &str = "operator.openshift.io/spec-hash";
/// The default-class annotation, whose value the admin owns.
pub use crate::class_names::DEFAULT_CLASS_ANNOTATION;
/// The CSIDriver label an admin may change (library-go keeps the live value).
pub const EPHEMERAL_PROFILE_LABEL: &str = "security.openshift.io/csi-ephemeral-volume-profile";
/// ConfigMap label that makes the Cluster Network Operator inject `ca-bundle.crt`.
pub const INJECT_TRUSTED_CABUNDLE_LABEL: &str = "config.openshift.io/inject-trusted-cabundle";
/// ConfigMap annotation that makes the service CA operator inject `service-ca.crt`.
pub const INJECT_CABUNDLE_ANNOTATION: &str = "service.beta.openshift.io/inject-cabundle";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// What the executor must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Live already matches.
    Unchanged,
    /// The object is missing: POST this.
    Create(DynamicObject),
    /// PUT this (live metadata merged, resourceVersion of the live object).
    Update(DynamicObject),
    /// An immutable field differs: DELETE the live object, then POST this.
    Recreate(DynamicObject),
}

/// Decides the write for `desired` given `live`. `expected_generation` matters only for
/// Deployments and DaemonSets (the generation recorded in the CR's `status.generations`).
pub fn plan(
    ar: &ApiResource,
    desired: &DynamicObject,
    live: Option<&DynamicObject>,
    expected_generation: Option<i64>,
) -> Result<Plan, ApplyError> {
    let mut desired = desired.clone();
    desired.types = Some(TypeMeta {
        api_version: ar.api_version.clone(),
        kind: ar.kind.clone(),
    });
    if desired
        .metadata
        .name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        return Err(ApplyError::Invalid {
            what: format!("a desired {}", ar.kind),
            reason: "it has no metadata.name; every asset must name its object".into(),
        });
    }
    if let Some(obj) = desired.data.as_object_mut() {
        // The engine never writes status through the main resource.
        obj.remove("status");
    }
    match (ar.group.as_str(), ar.kind.as_str()) {
        ("apps", "Deployment") | ("apps", "DaemonSet") => {
            workload(desired, live, expected_generation)
        }
        ("", "ConfigMap") => config_map(desired, live),
        ("", "Secret") => secret(desired, live),
        ("", "Service") => service(desired, live),
        (RBAC_GROUP, "RoleBinding") | (RBAC_GROUP, "ClusterRoleBinding") => binding(desired, live),
        ("storage.k8s.io", "StorageClass") => storage_class(desired, live),
        ("storage.k8s.io", "CSIDriver") => csi_driver(desired, live),
        _ => generic(desired, live),
    }
}

// ----- per kind -----------------------------------------------------------------------------

fn workload(
    mut desired: DynamicObject,
    live: Option<&DynamicObject>,
    expected_generation: Option<i64>,
) -> Result<Plan, ApplyError> {
    set_spec_hash(&mut desired)?;
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    let mut merged = updatable(live);
    let modified = merge_metadata(&mut merged.metadata, &desired.metadata);
    // library-go uses -1 when nothing is recorded, so the first sync after a start always
    // writes once.
    if !modified && live.metadata.generation == Some(expected_generation.unwrap_or(-1)) {
        return Ok(Plan::Unchanged);
    }
    set_field(&mut merged, "spec", field(&desired, "spec").cloned());
    Ok(Plan::Update(merged))
}

fn config_map(
    mut desired: DynamicObject,
    live: Option<&DynamicObject>,
) -> Result<Plan, ApplyError> {
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    // Keys other operators inject into our ConfigMaps: ignored in the diff and preserved.
    let injected = [
        (
            label(&desired.metadata, INJECT_TRUSTED_CABUNDLE_LABEL) == Some("true"),
            "ca-bundle.crt",
        ),
        (
            annotation(&desired.metadata, INJECT_CABUNDLE_ANNOTATION) == Some("true"),
            "service-ca.crt",
        ),
    ];
    for (enabled, key) in injected {
        if !enabled || string_map(&desired, "data").contains_key(key) {
            continue;
        }
        if let Some(value) = field(live, "data").and_then(|d| d.get(key)).cloned() {
            let data = desired
                .data
                .as_object_mut()
                .map(|o| o.entry("data").or_insert_with(|| Value::Object(Map::new())));
            if let Some(Value::Object(data)) = data {
                data.insert(key.to_string(), value);
            }
        }
    }
    let mut merged = updatable(live);
    let mut modified = merge_metadata(&mut merged.metadata, &desired.metadata);
    for key in ["data", "binaryData"] {
        if string_map(&desired, key) != string_map(live, key) {
            set_field(&mut merged, key, field(&desired, key).cloned());
            modified = true;
        }
    }
    Ok(if modified {
        Plan::Update(merged)
    } else {
        Plan::Unchanged
    })
}

fn secret(mut desired: DynamicObject, live: Option<&DynamicObject>) -> Result<Plan, ApplyError> {
    let what = describe(&desired, "Secret");
    // Fold stringData into data, as the API server would, so the comparison is like for like.
    let mut data = string_map(&desired, "data");
    for (key, value) in string_map(&desired, "stringData") {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        match data.get(&key) {
            Some(existing) if *existing != encoded => {
                return Err(ApplyError::Invalid {
                    what,
                    reason: format!(
                        "key {key:?} is set in both data and stringData with different values; set it in one of them"
                    ),
                });
            }
            _ => {
                data.insert(key, encoded);
            }
        }
    }
    let type_ = field(&desired, "type")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .unwrap_or("Opaque")
        .to_string();
    if let Some(obj) = desired.data.as_object_mut() {
        obj.remove("stringData");
        obj.insert("type".into(), Value::String(type_.clone()));
        obj.insert("data".into(), string_map_value(&data));
    }
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    let live_type = field(live, "type")
        .and_then(Value::as_str)
        .unwrap_or("Opaque");
    if live_type != type_ {
        // `type` is immutable: the only way to enforce it is to re-create the Secret.
        return Ok(Plan::Recreate(creatable(desired)));
    }
    let mut merged = updatable(live);
    let mut modified = merge_metadata(&mut merged.metadata, &desired.metadata);
    let live_data = string_map(live, "data");
    let want = if type_ == "kubernetes.io/service-account-token" {
        // The token controller fills these in; only our keys are enforced.
        let mut merged_data = live_data.clone();
        merged_data.extend(data);
        merged_data
    } else {
        data
    };
    if want != live_data {
        set_field(&mut merged, "data", Some(string_map_value(&want)));
        modified = true;
    }
    Ok(if modified {
        Plan::Update(merged)
    } else {
        Plan::Unchanged
    })
}

fn service(mut desired: DynamicObject, live: Option<&DynamicObject>) -> Result<Plan, ApplyError> {
    set_spec_hash(&mut desired)?;
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    let mut merged = updatable(live);
    // The spec is compared through the hash annotation, which is part of the metadata.
    if !merge_metadata(&mut merged.metadata, &desired.metadata) {
        return Ok(Plan::Unchanged);
    }
    let mut spec = field(&desired, "spec")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    if let (Value::Object(spec), Some(Value::Object(live_spec))) = (&mut spec, field(live, "spec"))
    {
        // Allocated by the server and immutable (or sticky): keep what it chose.
        for key in [
            "clusterIP",
            "clusterIPs",
            "ipFamilies",
            "ipFamilyPolicy",
            "healthCheckNodePort",
        ] {
            if !spec.contains_key(key)
                && let Some(v) = live_spec.get(key)
            {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    set_field(&mut merged, "spec", Some(spec));
    Ok(Plan::Update(merged))
}

fn binding(mut desired: DynamicObject, live: Option<&DynamicObject>) -> Result<Plan, ApplyError> {
    normalize_binding(&mut desired.data);
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    let mut live_norm = live.data.clone();
    normalize_binding(&mut live_norm);
    if desired.data.get("roleRef") != live_norm.get("roleRef") {
        // roleRef is immutable.
        return Ok(Plan::Recreate(creatable(desired)));
    }
    let mut merged = updatable(live);
    let mut modified = merge_metadata(&mut merged.metadata, &desired.metadata);
    let subjects = |v: &Value| v.get("subjects").cloned().unwrap_or(Value::Array(vec![]));
    if subjects(&desired.data) != subjects(&live_norm) {
        set_field(
            &mut merged,
            "subjects",
            desired.data.get("subjects").cloned(),
        );
        modified = true;
    }
    Ok(if modified {
        Plan::Update(merged)
    } else {
        Plan::Unchanged
    })
}

fn normalize_binding(data: &mut Value) {
    let empty_group = |o: &Map<String, Value>| {
        o.get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
    };
    if let Some(Value::Object(role_ref)) = data.get_mut("roleRef")
        && empty_group(role_ref)
    {
        role_ref.insert("apiGroup".into(), Value::String(RBAC_GROUP.into()));
    }
    if let Some(Value::Array(subjects)) = data.get_mut("subjects") {
        for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let kind = subject
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let user_or_group = kind == "User" || kind == "Group";
            if user_or_group && empty_group(subject) {
                subject.insert("apiGroup".into(), Value::String(RBAC_GROUP.into()));
            } else if kind == "ServiceAccount"
                && subject.get("apiGroup").and_then(Value::as_str) == Some("")
            {
                subject.remove("apiGroup");
            }
        }
    }
}

fn storage_class(
    mut desired: DynamicObject,
    live: Option<&DynamicObject>,
) -> Result<Plan, ApplyError> {
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    // The admin owns the default-class choice: whatever value the live object carries wins.
    if let Some(value) = annotation(&live.metadata, DEFAULT_CLASS_ANNOTATION) {
        desired
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(DEFAULT_CLASS_ANNOTATION.into(), value.to_string());
    }
    if let Some(rv) = desired.metadata.resource_version.as_deref()
        && live.metadata.resource_version.as_deref() != Some(rv)
    {
        return Err(ApplyError::Invalid {
            what: describe(&desired, "StorageClass"),
            reason: format!(
                "the desired resourceVersion {rv} differs from the live one; it changed meanwhile, retry"
            ),
        });
    }
    let immutable_differs = string_map(&desired, "parameters") != string_map(live, "parameters")
        || str_field(&desired, "provisioner", "") != str_field(live, "provisioner", "")
        || str_field(&desired, "reclaimPolicy", "Delete")
            != str_field(live, "reclaimPolicy", "Delete")
        || str_field(&desired, "volumeBindingMode", "Immediate")
            != str_field(live, "volumeBindingMode", "Immediate");
    if immutable_differs {
        desired.metadata.resource_version = None;
        return Ok(Plan::Recreate(creatable(desired)));
    }
    generic(desired, Some(live))
}

fn csi_driver(
    mut desired: DynamicObject,
    live: Option<&DynamicObject>,
) -> Result<Plan, ApplyError> {
    if let Some(value) = live.and_then(|l| label(&l.metadata, EPHEMERAL_PROFILE_LABEL)) {
        desired
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(EPHEMERAL_PROFILE_LABEL.into(), value.to_string());
    }
    let ephemeral = field(&desired, "spec")
        .and_then(|s| s.get("volumeLifecycleModes"))
        .and_then(Value::as_array)
        .is_some_and(|modes| modes.iter().any(|m| m.as_str() == Some("Ephemeral")));
    if ephemeral && label(&desired.metadata, EPHEMERAL_PROFILE_LABEL).is_none() {
        return Err(ApplyError::Invalid {
            what: describe(&desired, "CSIDriver"),
            reason: format!(
                "it supports Ephemeral volumes, so it must carry the label {EPHEMERAL_PROFILE_LABEL}"
            ),
        });
    }
    set_spec_hash(&mut desired)?;
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    let mut merged = updatable(live);
    if annotation(&live.metadata, SPEC_HASH_ANNOTATION)
        != annotation(&desired.metadata, SPEC_HASH_ANNOTATION)
    {
        let null = Value::Null;
        let want = field(&desired, "spec").unwrap_or(&null);
        let have = field(live, "spec").unwrap_or(&null);
        if !is_subset(want, have) {
            // Only attachRequired and volumeLifecycleModes are immutable (Kubernetes 1.33);
            // a change of any other field is an in-place update, not a delete: deleting a
            // CSIDriver disturbs every attach and mount of the driver while it is gone.
            let immutable_differs = ["attachRequired", "volumeLifecycleModes"]
                .iter()
                .any(|f| want.get(f).is_some_and(|w| Some(w) != have.get(f)));
            if immutable_differs {
                return Ok(Plan::Recreate(creatable(desired)));
            }
            if let Some(data) = merged.data.as_object_mut() {
                data.insert("spec".into(), want.clone());
            }
        }
        // Equal specs with another hash (a driver taken over from the Go operator, whose
        // hash is computed differently) only need the annotation refreshed.
        merge_metadata(&mut merged.metadata, &desired.metadata);
        return Ok(Plan::Update(merged));
    }
    if merge_metadata(&mut merged.metadata, &desired.metadata) {
        Ok(Plan::Update(merged))
    } else {
        Ok(Plan::Unchanged)
    }
}

/// Everything else: metadata merged, desired's top-level fields compared as a subset of live
/// (fields the server defaulted do not count) and replaced when they differ.
fn generic(desired: DynamicObject, live: Option<&DynamicObject>) -> Result<Plan, ApplyError> {
    let Some(live) = live else {
        return Ok(Plan::Create(creatable(desired)));
    };
    let mut merged = updatable(live);
    let mut modified = merge_metadata(&mut merged.metadata, &desired.metadata);
    if let Some(fields) = desired.data.as_object() {
        for (key, want) in fields {
            let have = live.data.get(key).unwrap_or(&Value::Null);
            if !is_subset(want, have) {
                set_field(&mut merged, key, Some(want.clone()));
                modified = true;
            }
        }
    }
    Ok(if modified {
        Plan::Update(merged)
    } else {
        Plan::Unchanged
    })
}

// ----- metadata -----------------------------------------------------------------------------

/// library-go's `EnsureObjectMeta`: labels and annotations merged (desired wins, a key ending
/// in `-` deletes, extra live keys survive), owner references merged. Returns whether `live`
/// changed.
pub fn merge_metadata(live: &mut ObjectMeta, desired: &ObjectMeta) -> bool {
    let mut modified = false;
    modified |= merge_string_map(&mut live.labels, desired.labels.as_ref());
    modified |= merge_string_map(&mut live.annotations, desired.annotations.as_ref());
    modified |= merge_owner_refs(
        &mut live.owner_references,
        desired.owner_references.as_deref(),
    );
    modified
}

fn merge_string_map(
    live: &mut Option<BTreeMap<String, String>>,
    desired: Option<&BTreeMap<String, String>>,
) -> bool {
    let Some(desired) = desired else {
        return false;
    };
    let mut modified = false;
    for (key, value) in desired {
        if let Some(removed) = key.strip_suffix('-') {
            if let Some(map) = live.as_mut() {
                modified |= map.remove(removed).is_some();
            }
        } else {
            let map = live.get_or_insert_with(BTreeMap::new);
            if map.get(key) != Some(value) {
                map.insert(key.clone(), value.clone());
                modified = true;
            }
        }
    }
    modified
}

fn merge_owner_refs(
    live: &mut Option<Vec<OwnerReference>>,
    desired: Option<&[OwnerReference]>,
) -> bool {
    let Some(desired) = desired else {
        return false;
    };
    let mut modified = false;
    for want in desired {
        let remove = want.uid.ends_with('-');
        let refs = live.get_or_insert_with(Vec::new);
        match refs.iter().position(|have| owner_ref_matches(have, want)) {
            None if !remove => {
                refs.push(want.clone());
                modified = true;
            }
            None => {}
            Some(i) if remove => {
                refs.remove(i);
                modified = true;
            }
            Some(i) => {
                if let Some(slot) = refs.get_mut(i).filter(|slot| *slot != want) {
                    *slot = want.clone();
                    modified = true;
                }
            }
        }
        if live.as_ref().is_some_and(Vec::is_empty) {
            *live = None;
        }
    }
    modified
}

/// Same name, kind and API group (the version may differ).
fn owner_ref_matches(a: &OwnerReference, b: &OwnerReference) -> bool {
    let group = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map(|(g, _)| g.to_string())
            .unwrap_or_default()
    };
    a.name == b.name && a.kind == b.kind && group(&a.api_version) == group(&b.api_version)
}

/// The object to POST: `key-` removal markers and write-only metadata dropped.
fn creatable(mut obj: DynamicObject) -> DynamicObject {
    for map in [&mut obj.metadata.labels, &mut obj.metadata.annotations]
        .into_iter()
        .flatten()
    {
        map.retain(|k, _| !k.ends_with('-'));
    }
    if let Some(refs) = obj.metadata.owner_references.as_mut() {
        refs.retain(|r| !r.uid.ends_with('-'));
    }
    obj.metadata.resource_version = None;
    obj.metadata.managed_fields = None;
    obj.metadata.uid = None;
    obj.metadata.creation_timestamp = None;
    obj.metadata.generation = None;
    obj
}

/// The live object as the base of a PUT (it keeps the live resourceVersion, which makes the
/// write conditional).
fn updatable(live: &DynamicObject) -> DynamicObject {
    let mut obj = live.clone();
    obj.metadata.managed_fields = None;
    obj
}

// ----- helpers ------------------------------------------------------------------------------

/// Hex SHA-256 of the JSON of `spec`, stored in the spec-hash annotation. The JSON has sorted
/// keys (serde_json's map order), so the value differs from Go's struct-order JSON; see the
/// compatibility notes.
pub fn spec_hash(spec: Option<&Value>) -> Result<String, ApplyError> {
    let bytes =
        serde_json::to_vec(spec.unwrap_or(&Value::Null)).map_err(|e| ApplyError::Invalid {
            what: "a desired spec".into(),
            reason: format!("it cannot be serialised to JSON: {e}"),
        })?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    Ok(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

fn set_spec_hash(obj: &mut DynamicObject) -> Result<(), ApplyError> {
    let hash = spec_hash(field(obj, "spec"))?;
    obj.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SPEC_HASH_ANNOTATION.into(), hash);
    Ok(())
}

fn field<'a>(obj: &'a DynamicObject, key: &str) -> Option<&'a Value> {
    obj.data.get(key).filter(|v| !v.is_null())
}

fn str_field<'a>(obj: &'a DynamicObject, key: &str, default: &'a str) -> &'a str {
    field(obj, key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(default)
}

fn set_field(obj: &mut DynamicObject, key: &str, value: Option<Value>) {
    if !obj.data.is_object() {
        obj.data = Value::Object(Map::new());
    }
    if let Some(map) = obj.data.as_object_mut() {
        match value {
            Some(v) => {
                map.insert(key.to_string(), v);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

/// A string→string map field (ConfigMap/Secret data, parameters); missing means empty.
fn string_map(obj: &DynamicObject, key: &str) -> BTreeMap<String, String> {
    field(obj, key)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn string_map_value(map: &BTreeMap<String, String>) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

fn describe(obj: &DynamicObject, kind: &str) -> String {
    let name = obj.metadata.name.as_deref().unwrap_or_default();
    match obj.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// Whether every field `desired` sets has the same value in `live`. Empty values (null, `{}`,
/// `[]`, `""`, `false`, `0`) match a missing field, because the server drops them
/// (`omitempty`); extra fields in `live` (server defaults) do not count. Lists must have the
/// same length and match element by element.
pub fn is_subset(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (d, Value::Null) => is_empty(d),
        (Value::Null, _) => true,
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, v)| match l.get(k) {
            Some(lv) => is_subset(v, lv),
            None => is_empty(v),
        }),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| is_subset(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;
    use serde_json::json;

    fn ar(group: &str, kind: &str, plural: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
    }

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).expect("object")
    }

    fn updated(p: Plan) -> DynamicObject {
        match p {
            Plan::Update(o) => o,
            other => panic!("expected an update, got {other:?}"),
        }
    }

    #[test]
    fn metadata_merge_desired_wins_extra_kept_dash_deletes() {
        let mut live = obj(json!({"metadata": {"name": "x",
            "labels": {"ours": "hacked", "user": "mine", "gone": "1"}}}))
        .metadata;
        let desired = obj(json!({"metadata": {"name": "x",
            "labels": {"ours": "v", "gone-": ""}}}))
        .metadata;
        assert!(merge_metadata(&mut live, &desired));
        let labels = live.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("ours").map(String::as_str), Some("v"));
        assert_eq!(labels.get("user").map(String::as_str), Some("mine"));
        assert!(!labels.contains_key("gone") && !labels.contains_key("gone-"));
        assert!(
            !merge_metadata(&mut live, &desired),
            "a second merge changes nothing"
        );
    }

    #[test]
    fn owner_references_are_merged_by_name_kind_and_group() {
        let owner = |uid: &str, version: &str| {
            json!({"apiVersion": format!("operator.openshift.io/{version}"), "kind": "ClusterCSIDriver",
                   "name": "c", "uid": uid})
        };
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "9"});
        let mut live =
            obj(json!({"metadata": {"name": "x", "ownerReferences": [other, owner("1", "v1")]}}))
                .metadata;
        let desired =
            obj(json!({"metadata": {"name": "x", "ownerReferences": [owner("2", "v1beta1")]}}))
                .metadata;
        assert!(merge_metadata(&mut live, &desired));
        let refs = live.owner_references.clone().unwrap_or_default();
        assert_eq!(refs.len(), 2, "{refs:?}");
        assert_eq!(refs[1].uid, "2", "the matching reference is replaced");
        let remove =
            obj(json!({"metadata": {"name": "x", "ownerReferences": [owner("2-", "v1")]}}))
                .metadata;
        assert!(merge_metadata(&mut live, &remove));
        assert_eq!(live.owner_references.unwrap_or_default().len(), 1);
    }

    fn deployment(replicas: i64, generation: Option<i64>) -> DynamicObject {
        let mut d = obj(json!({"metadata": {"name": "d", "namespace": "ns"},
            "spec": {"replicas": replicas}}));
        d.metadata.generation = generation;
        d
    }

    #[test]
    fn deployment_noop_only_when_metadata_and_generation_match() {
        let a = ar("apps", "Deployment", "deployments");
        let Plan::Create(created) = plan(&a, &deployment(2, None), None, None).expect("plan")
        else {
            panic!("create expected");
        };
        let mut live = created.clone();
        live.metadata.generation = Some(1);
        live.data["spec"]["replicas"] = json!(2);
        assert_eq!(
            plan(&a, &deployment(2, None), Some(&live), Some(1)).expect("plan"),
            Plan::Unchanged
        );
        // A user's spec edit bumps the generation: stomp.
        live.metadata.generation = Some(2);
        live.data["spec"]["replicas"] = json!(5);
        let put = updated(plan(&a, &deployment(2, None), Some(&live), Some(1)).expect("plan"));
        assert_eq!(put.data["spec"]["replicas"], 2);
        // Nothing recorded: write once.
        live.metadata.generation = Some(1);
        assert!(matches!(
            plan(&a, &deployment(2, None), Some(&live), None).expect("plan"),
            Plan::Update(_)
        ));
        // A desired spec change changes the hash annotation.
        assert!(matches!(
            plan(&a, &deployment(3, None), Some(&live), Some(1)).expect("plan"),
            Plan::Update(_)
        ));
    }

    #[test]
    fn spec_hash_is_hex_sha256_of_the_spec_json() {
        // sha256("{}")
        assert_eq!(
            spec_hash(Some(&json!({}))).expect("hash"),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn config_map_keeps_injected_service_ca() {
        let a = ar("", "ConfigMap", "configmaps");
        let desired = obj(json!({"metadata": {"name": "c", "namespace": "ns",
            "annotations": {"service.beta.openshift.io/inject-cabundle": "true"}}, "data": {"k": "v"}}));
        let mut live = desired.clone();
        live.data["data"]["service-ca.crt"] = json!("PEM");
        assert_eq!(
            plan(&a, &desired, Some(&live), None).expect("plan"),
            Plan::Unchanged
        );
        let mut plain = desired.clone();
        plain.metadata.annotations = None;
        let mut live_plain = plain.clone();
        live_plain.data["data"]["service-ca.crt"] = json!("PEM");
        let put = updated(plan(&a, &plain, Some(&live_plain), None).expect("plan"));
        assert!(put.data["data"].get("service-ca.crt").is_none());
    }

    #[test]
    fn secret_folds_string_data_and_enforces_type() {
        let a = ar("", "Secret", "secrets");
        let desired = obj(json!({"metadata": {"name": "s", "namespace": "ns"},
            "stringData": {"k": "v"}}));
        let Plan::Create(created) = plan(&a, &desired, None, None).expect("plan") else {
            panic!("create");
        };
        assert_eq!(created.data["data"]["k"], "dg==");
        assert_eq!(created.data["type"], "Opaque");
        assert!(created.data.get("stringData").is_none());
        assert_eq!(
            plan(&a, &desired, Some(&created), None).expect("plan"),
            Plan::Unchanged
        );
        let mut typed = created.clone();
        typed.data["type"] = json!("kubernetes.io/tls");
        assert!(matches!(
            plan(&a, &desired, Some(&typed), None).expect("plan"),
            Plan::Recreate(_)
        ));

        let conflicting = obj(json!({"metadata": {"name": "s", "namespace": "ns"},
            "data": {"k": "b3RoZXI="}, "stringData": {"k": "v"}}));
        let err = plan(&a, &conflicting, None, None).expect_err("conflict");
        assert!(err.to_string().contains("\"k\""), "{err}");
        assert!(
            !err.to_string().contains("dg=="),
            "no values in errors: {err}"
        );

        let token = obj(json!({"metadata": {"name": "t", "namespace": "ns"},
            "type": "kubernetes.io/service-account-token", "data": {"ours": "eA=="}}));
        let mut live_token = token.clone();
        live_token.data["data"]["token"] = json!("dA==");
        assert_eq!(
            plan(&a, &token, Some(&live_token), None).expect("plan"),
            Plan::Unchanged
        );
    }

    #[test]
    fn bindings_compare_normalised_subjects_and_recreate_on_role_ref_change() {
        let a = ar(
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            "clusterrolebindings",
        );
        let desired = obj(json!({"metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "User", "name": "u"}]}));
        let live = obj(json!({"metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "r", "apiGroup": "rbac.authorization.k8s.io"},
            "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]}));
        assert_eq!(
            plan(&a, &desired, Some(&live), None).expect("plan"),
            Plan::Unchanged
        );
        let mut more = desired.clone();
        more.data["subjects"] =
            json!([{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"}]);
        assert!(matches!(
            plan(&a, &more, Some(&live), None).expect("plan"),
            Plan::Update(_)
        ));
        let mut other_role = desired.clone();
        other_role.data["roleRef"]["name"] = json!("r2");
        assert!(matches!(
            plan(&a, &other_role, Some(&live), None).expect("plan"),
            Plan::Recreate(_)
        ));
    }

    #[test]
    fn service_update_keeps_allocated_cluster_ip() {
        let a = ar("", "Service", "services");
        let desired = obj(json!({"metadata": {"name": "s", "namespace": "ns"},
            "spec": {"ports": [{"port": 443}]}}));
        let live = obj(json!({"metadata": {"name": "s", "namespace": "ns"},
            "spec": {"ports": [{"port": 80}], "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"]}}));
        let put = updated(plan(&a, &desired, Some(&live), None).expect("plan"));
        assert_eq!(put.data["spec"]["clusterIP"], "10.0.0.7");
        assert_eq!(put.data["spec"]["ports"][0]["port"], 443);
        assert_eq!(
            plan(&a, &desired, Some(&put), None).expect("plan"),
            Plan::Unchanged
        );
    }

    #[test]
    fn storage_class_defaults_and_immutable_fields() {
        let a = ar("storage.k8s.io", "StorageClass", "storageclasses");
        let desired = obj(json!({"metadata": {"name": "sc",
            "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": "p", "parameters": {"type": "a"}}));
        let live = obj(json!({"metadata": {"name": "sc",
            "annotations": {DEFAULT_CLASS_ANNOTATION: ""}},
            "provisioner": "p", "parameters": {"type": "a"},
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}));
        assert_eq!(
            plan(&a, &desired, Some(&live), None).expect("plan"),
            Plan::Unchanged,
            "server defaults and the admin's empty value"
        );
        let mut wffc = desired.clone();
        wffc.data["volumeBindingMode"] = json!("WaitForFirstConsumer");
        let Plan::Recreate(again) = plan(&a, &wffc, Some(&live), None).expect("plan") else {
            panic!("recreate");
        };
        assert_eq!(
            again.metadata.annotations.unwrap_or_default()[DEFAULT_CLASS_ANNOTATION],
            ""
        );
    }

    #[test]
    fn csi_driver_keeps_the_admins_ephemeral_profile_and_requires_it() {
        let a = ar("storage.k8s.io", "CSIDriver", "csidrivers");
        let desired = obj(
            json!({"metadata": {"name": "d", "labels": {EPHEMERAL_PROFILE_LABEL: "restricted"}},
            "spec": {"volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
        );
        let Plan::Create(mut live) = plan(&a, &desired, None, None).expect("plan") else {
            panic!("create");
        };
        live.metadata.labels = Some(
            [(
                EPHEMERAL_PROFILE_LABEL.to_string(),
                "privileged".to_string(),
            )]
            .into(),
        );
        assert_eq!(
            plan(&a, &desired, Some(&live), None).expect("plan"),
            Plan::Unchanged
        );
        let mut unlabelled = desired.clone();
        unlabelled.metadata.labels = None;
        let err = plan(&a, &unlabelled, None, None).expect_err("label required");
        assert!(err.to_string().contains(EPHEMERAL_PROFILE_LABEL), "{err}");
    }

    #[test]
    fn csi_driver_is_recreated_only_for_immutable_fields() {
        let a = ar("storage.k8s.io", "CSIDriver", "csidrivers");
        let desired = obj(json!({"metadata": {"name": "d"},
            "spec": {"attachRequired": true, "podInfoOnMount": true, "volumeLifecycleModes": ["Persistent"]}}));
        let Plan::Create(mut live) = plan(&a, &desired, None, None).expect("plan") else {
            panic!("create");
        };
        // Taken over from the Go operator: same spec, another hash → annotation only.
        live.metadata.annotations =
            Some([(SPEC_HASH_ANNOTATION.to_string(), "go-hash".to_string())].into());
        let put = updated(plan(&a, &desired, Some(&live), None).expect("plan"));
        assert_ne!(
            annotation(&put.metadata, SPEC_HASH_ANNOTATION),
            Some("go-hash")
        );
        // A mutable field changed → updated in place.
        live.data["spec"]["podInfoOnMount"] = json!(false);
        let put = updated(plan(&a, &desired, Some(&live), None).expect("plan"));
        assert_eq!(put.data["spec"]["podInfoOnMount"], json!(true));
        // attachRequired is immutable → delete and create.
        live.data["spec"]["attachRequired"] = json!(false);
        assert!(matches!(
            plan(&a, &desired, Some(&live), None).expect("plan"),
            Plan::Recreate(_)
        ));
    }

    #[test]
    fn generic_ignores_server_defaults_and_replaces_changed_fields() {
        let a = ar("rbac.authorization.k8s.io", "ClusterRole", "clusterroles");
        let desired = obj(json!({"metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}));
        let mut live = desired.clone();
        live.data["rules"][0]["resourceNames"] = json!([]);
        live.data["aggregationRule"] = Value::Null;
        assert_eq!(
            plan(&a, &desired, Some(&live), None).expect("plan"),
            Plan::Unchanged
        );
        live.data["rules"][0]["verbs"] = json!(["get", "delete"]);
        let put = updated(plan(&a, &desired, Some(&live), None).expect("plan"));
        assert_eq!(put.data["rules"][0]["verbs"], json!(["get"]));
    }

    #[test]
    fn subset_rules() {
        assert!(is_subset(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!is_subset(&json!({"a": 1}), &json!({"a": 2})));
        assert!(is_subset(&json!({"a": {}}), &json!({})));
        assert!(is_subset(&json!({"a": false}), &json!({})));
        assert!(!is_subset(&json!([1, 2]), &json!([1])));
        assert!(is_subset(&json!(1), &json!(1.0)));
        assert!(!is_subset(&json!({"a": "x"}), &json!({})));
    }

    #[test]
    fn a_nameless_object_is_rejected_with_a_clear_message() {
        let a = ar("", "ConfigMap", "configmaps");
        let err = plan(&a, &obj(json!({"metadata": {}})), None, None).expect_err("no name");
        assert!(err.to_string().contains("metadata.name"), "{err}");
    }
}
