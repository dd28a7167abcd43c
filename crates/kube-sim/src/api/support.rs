//! Free helpers of the verbs: managedFields bookkeeping, presentation, change detection,
//! continue tokens, delete options.

use super::{Cluster, DeleteOptions, Propagation};
use crate::errors::ApiError;
use crate::field_error::FieldError;
use crate::json::strings;
use crate::resources::{GroupResource, Origin, ResourceType};
use crate::{admission, crd, patch, ssa, store};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Records the creator in managedFields. On a type with a status subresource the status is
/// the server's (reset on create, filled by controllers), so it is left out of the creator's
/// fields.
pub(super) fn record_creator(rt: &ResourceType, obj: &mut Value, manager: &str, now: &str) {
    let lists = admission::list_types(rt);
    if !rt.status_subresource {
        ssa::record_update(
            None,
            obj,
            manager,
            lists.as_ref(),
            now,
            &rt.api_version(),
            None,
        );
        return;
    }
    let mut view = obj.clone();
    if let Some(o) = view.as_object_mut() {
        o.remove("status");
    }
    ssa::record_update(
        None,
        &mut view,
        manager,
        lists.as_ref(),
        now,
        &rt.api_version(),
        None,
    );
    if let (Some(meta), Some(fields)) = (
        obj.get_mut("metadata").and_then(Value::as_object_mut),
        view.pointer("/metadata/managedFields"),
    ) {
        meta.insert("managedFields".into(), fields.clone());
    }
}

/// An object as served at `rt`'s version: apiVersion and kind set, schema defaults applied on
/// read (a real server defaults custom resources when it reads them from etcd).
pub fn present(rt: &ResourceType, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(o) = out.as_object_mut() {
        o.insert("apiVersion".into(), Value::String(rt.api_version()));
        o.insert("kind".into(), Value::String(rt.kind.clone()));
    }
    if let Origin::Crd {
        schema: Some(schema),
        ..
    } = &rt.origin
    {
        crd::apply_defaults(schema, &mut out);
    }
    out
}

/// The Status a failed apply answers with: 409 with one cause per conflicting field, 400, or
/// the server's bare 500 for configurations it cannot type.
pub(super) fn apply_error(rt: &ResourceType, name: &str, e: ssa::ApplyError) -> ApiError {
    match e {
        ssa::ApplyError::Conflicts(ref conflicts) => {
            let causes = conflicts.iter().map(|c| json!({"reason": "FieldManagerConflict", "message": c.message, "field": c.field})).collect();
            ApiError::apply_conflict(rt, name, e.message(), causes)
        }
        ssa::ApplyError::BadRequest(m) => ApiError::bad_request(m),
        ssa::ApplyError::Invalid(m) => ApiError::injected(500, "", m),
    }
}

pub(super) fn unreachable_apply() -> Result<Value, patch::PatchError> {
    Err(patch::PatchError::BadRequest(
        "apply is handled separately".into(),
    ))
}

/// Patch errors keep the code, reason and bare message the real server answers with.
impl From<patch::PatchError> for ApiError {
    fn from(e: patch::PatchError) -> Self {
        ApiError::injected(e.code(), e.reason(), e.message().to_string())
    }
}

impl ApiError {
    pub(super) fn no_route_for(sub: &str) -> Self {
        let mut e = Self::no_route();
        e.message =
            format!("the server could not find the requested resource (subresource {sub:?})");
        e
    }

    pub(super) fn unsupported_media_type_for_custom() -> Self {
        let mut e = Self::unsupported_media_type("application/strategic-merge-patch+json");
        e.message = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into();
        e
    }

    /// 422 naming the resource rather than the Kind, as the update-precondition checks do.
    pub(super) fn invalid_resource(rt: &ResourceType, name: &str, errors: &[FieldError]) -> Self {
        let mut e = Self::invalid(rt, name, errors);
        let list = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        e.message = format!(
            "{} \"{name}\" is invalid: {list}",
            rt.group_resource().qualified()
        );
        if let Some(d) = e.details.as_mut() {
            d["kind"] = json!(rt.plural);
        }
        e
    }

    pub(super) fn invalid_list(message: &str) -> Self {
        let mut e = Self::bad_request(String::new());
        e.code = 422;
        e.reason = "Invalid";
        e.message = format!("ListOptions.meta.k8s.io \"\" is invalid: {message}");
        e
    }

    pub(super) fn invalid_scale(name: &str, errors: &[FieldError]) -> Self {
        let list = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let mut e = Self::bad_request(String::new());
        e.code = 422;
        e.reason = "Invalid";
        e.message = format!("Scale.autoscaling \"{name}\" is invalid: {list}");
        e
    }
}

pub(super) fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.kind == "Namespace"
}

pub(super) fn obj_meta_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

pub(super) fn copy_field(from: &Value, to: &mut Value, field: &str) {
    let Some(to) = to.as_object_mut() else { return };
    match from.get(field) {
        Some(v) => to.insert(field.into(), v.clone()),
        None => to.remove(field),
    };
}

pub fn finalizers(obj: &Value) -> BTreeSet<String> {
    strings(obj.pointer("/metadata/finalizers"))
        .into_iter()
        .collect()
}

pub(super) fn meta_finalizers_changed(a: &Value, b: &Value) -> bool {
    finalizers(a) != finalizers(b)
}

/// Generation moves when anything but metadata and status changes (for CRs without a status
/// subresource, status counts too, as on a real server).
pub(super) fn spec_changed(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("metadata");
            o.remove("apiVersion");
            o.remove("kind");
            if rt.status_subresource || !rt.is_custom() {
                o.remove("status");
            }
        }
        v
    };
    // Deployments also move their generation when annotations change (deployment strategy).
    let annotations_changed = rt.is(("apps", "Deployment"))
        && old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations");
    annotations_changed || strip(old) != strip(new)
}

/// A write that changes nothing is not stored, so it gets no new resourceVersion and no event.
pub(super) fn same_ignoring_managed_fields(old: &Value, new: &Value) -> bool {
    same_except(old, new, true)
}

pub(super) fn same_ignoring_resource_version(old: &Value, new: &Value) -> bool {
    same_except(old, new, false)
}

pub(super) fn same_except(old: &Value, new: &Value, ignore_managed_fields: bool) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            if ignore_managed_fields {
                m.remove("managedFields");
            }
            m.remove("resourceVersion");
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("apiVersion");
            o.remove("kind");
        }
        v
    };
    strip(old) == strip(new)
}

/// Status is not settable on create for types with a status subresource (except Nodes, whose
/// kubelets create them with status).
pub(super) fn reset_status_on_create(rt: &ResourceType, obj: &mut Value) {
    if !rt.status_subresource || (rt.group.is_empty() && rt.kind == "Node") {
        return;
    }
    if let Some(o) = obj.as_object_mut() {
        o.remove("status");
    }
}

/// A real server's CRD controllers accept the names and establish the CRD immediately.
pub(super) fn crd_status(crd: &mut Value) {
    let names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let previous = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let since = |t: &str| {
        previous
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| Value::String(now()))
    };
    let mut stored_versions: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for s in storage {
        if !stored_versions.contains(&s) {
            stored_versions.push(s);
        }
    }
    crd["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since("Established")},
        ],
        "acceptedNames": names,
        "storedVersions": stored_versions,
    });
}

/// The current time as the API server writes timestamps (RFC 3339, seconds).
pub fn now() -> String {
    let ts = jiff::Timestamp::now();
    format!("{}", ts.strftime("%Y-%m-%dT%H:%M:%SZ"))
}

pub(super) fn last_key(items: &[Value]) -> Option<(String, String)> {
    items.last().map(store::key_of)
}

pub(super) fn encode_continue(rv: u64, key: &(String, String)) -> String {
    use base64::Engine;
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "ns": key.0, "start": key.1}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

pub(super) fn decode_continue(token: &str) -> Result<(u64, (String, String)), ApiError> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let ns = v
        .get("ns")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .to_string();
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .to_string();
    Ok((rv, (ns, start)))
}

/// Parses the DeleteOptions a DELETE may carry in its body.
pub fn parse_delete_body(body: &[u8], into: &mut DeleteOptions) -> Result<(), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
    if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
        into.propagation = Some(parse_propagation(p)?);
    }
    if v.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
        into.propagation = Some(Propagation::Orphan);
    }
    if let Some(uid) = v.pointer("/preconditions/uid").and_then(Value::as_str) {
        into.precondition_uid = Some(uid.into());
    }
    if let Some(rv) = v
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
    {
        into.precondition_rv = Some(rv.into());
    }
    if v.get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == "All"))
    {
        into.dry_run = true;
    }
    Ok(())
}

pub fn parse_propagation(p: &str) -> Result<Propagation, ApiError> {
    match p {
        "Orphan" => Ok(Propagation::Orphan),
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        other => Err(ApiError::bad_request(format!(
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))),
    }
}

/// Used by tests and controllers to find a resource type for an object's group/resource.
pub fn storage_type(cluster: &Cluster, gr: &GroupResource) -> Option<Arc<ResourceType>> {
    cluster.catalogue.storage_type(gr)
}

/// The annotation the DaemonSet strategy keeps equal to `spec.templateGeneration`.
const DAEMONSET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// A DaemonSet's `deprecated.daemonset.template.generation`, as the real strategy keeps it: 1 at
/// create, one more each time the pod template changes (measured on the real API server by
/// `csi-operator/tests/real_vs_sim.rs`). Other kinds are left alone.
pub(super) fn daemonset_template_generation(
    rt: &ResourceType,
    old: Option<&Value>,
    obj: &mut Value,
) {
    if rt.kind != "DaemonSet" || rt.group != "apps" {
        return;
    }
    let generation = match old {
        None => 1,
        Some(old) => {
            let before = old
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DAEMONSET_TEMPLATE_GENERATION))
                .and_then(Value::as_str)
                .and_then(|g| g.parse::<i64>().ok())
                .unwrap_or(0);
            if old.pointer("/spec/template") == obj.pointer("/spec/template") {
                if before == 0 {
                    return;
                }
                before
            } else {
                before + 1
            }
        }
    };
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                DAEMONSET_TEMPLATE_GENERATION.into(),
                json!(generation.to_string()),
            );
        }
    }
}
