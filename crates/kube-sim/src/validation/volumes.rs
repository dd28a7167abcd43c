//! PersistentVolumes, PersistentVolumeClaims and VolumeAttachments: what kube-apiserver's
//! `ValidatePersistentVolume*` and `ValidateVolumeAttachment*` check, with their paths and
//! messages (including the quirks: the PV source's immutability is reported at
//! `spec.persistentvolumesource`, a changed `volumeMode` at the bare path `volumeMode`).
//!
//! Only the volume sources kube-sim's users create are checked in depth (`csi`, `hostPath`,
//! `nfs`, `local`); any other source counts towards "exactly one" and is otherwise accepted.

use super::Errs;
use super::access::IMMUTABLE;
use super::access::{
    absent, at, enum_str, immutable, opt_arr, opt_obj, opt_str, semantic_eq, spec_of, str_items,
};
use super::names::dns1123_subdomain_errors;
use super::selectors::validate_label_selector;
use crate::field_error::{FieldError, child, key};
use serde_json::{Map, Value, json};

/// The access modes a claim or volume may ask for, as the server lists them (sorted).
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// The sources of a PersistentVolume (`PersistentVolumeSource`), in the Go struct's order.
const PV_SOURCES: &[&str] = &[
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

const NOT_POSITIVE: &str = "must be greater than zero";
const BAD_QUANTITY: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// `spec.accessModes` of a claim or volume: at least one, each known, ReadWriteOncePod alone.
fn access_modes(spec: &Map<String, Value>, path: &str, required_msg: &str, errs: &mut Errs) {
    let p = child(path, "accessModes");
    let list = opt_arr(Some(spec), "accessModes", &p, errs);
    let modes = str_items(list, &p, errs);
    if list.is_none_or(Vec::is_empty) {
        errs.push(FieldError::required(&p, required_msg));
        return;
    }
    for (_, mode) in &modes {
        if !ACCESS_MODES.contains(mode) {
            errs.push(FieldError::not_supported(&p, json!(mode), ACCESS_MODES));
        }
    }
    if modes.len() > 1 && modes.iter().any(|(_, m)| *m == "ReadWriteOncePod") {
        errs.push(FieldError::forbidden(
            &p,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// A storage quantity that must parse and be greater than zero.
fn positive_quantity(v: &Value, path: &str, errs: &mut Errs) {
    match crate::defaults::quantity_milli(v) {
        None => errs.push(FieldError::invalid(path, v.clone(), BAD_QUANTITY)),
        Some(q) if q <= 0 => errs.push(FieldError::invalid(path, v.clone(), NOT_POSITIVE)),
        Some(_) => {}
    }
}

fn class_name(spec: &Map<String, Value>, field: &str, path: &str, errs: &mut Errs) {
    let p = child(path, field);
    let name = opt_str(Some(spec), field, &p, errs);
    if !name.is_empty() {
        for m in dns1123_subdomain_errors(name) {
            errs.push(FieldError::invalid(&p, json!(name), m));
        }
    }
}

fn volume_mode(spec: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let p = child(path, "volumeMode");
    let mode = opt_str(Some(spec), "volumeMode", &p, errs);
    enum_str(mode, &p, &["Block", "Filesystem"], false, errs);
}

/// `ValidatePersistentVolumeClaimSpec`.
pub(super) fn persistent_volume_claim(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    access_modes(spec, "spec", "at least 1 access mode is required", errs);
    validate_label_selector(spec.get("selector"), "spec.selector", errs);
    let res_path = "spec.resources";
    let res = opt_obj(Some(spec), "resources", res_path, errs);
    let requests = opt_obj(res, "requests", &child(res_path, "requests"), errs);
    // The server names this path `spec.resources[storage]`, without `requests`.
    let storage_path = key(res_path, "storage");
    match requests.and_then(|r| r.get("storage")) {
        None | Some(Value::Null) => errs.push(FieldError::required(&storage_path, "")),
        Some(v) => positive_quantity(v, &storage_path, errs),
    }
    class_name(spec, "storageClassName", "spec", errs);
    class_name(spec, "volumeAttributesClassName", "spec", errs);
    volume_mode(spec, "spec", errs);
    opt_str(Some(spec), "volumeName", "spec.volumeName", errs);
}

/// `ValidatePersistentVolumeSpec`.
pub(super) fn persistent_volume(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    access_modes(spec, "spec", "must specify at least 1 access mode", errs);
    let cap = opt_obj(Some(spec), "capacity", "spec.capacity", errs);
    if cap.is_none_or(Map::is_empty) {
        errs.push(FieldError::required("spec.capacity", ""));
    }
    if let Some(cap) = cap
        && (!cap.contains_key("storage") || cap.len() > 1)
    {
        errs.push(FieldError::not_supported(
            "spec.capacity",
            Value::Object(cap.clone()),
            &["storage"],
        ));
    }
    for (k, v) in cap.into_iter().flatten() {
        positive_quantity(v, &key("spec.capacity", k), errs);
    }
    let reclaim = opt_str(
        Some(spec),
        "persistentVolumeReclaimPolicy",
        "spec.persistentVolumeReclaimPolicy",
        errs,
    );
    enum_str(
        reclaim,
        "spec.persistentVolumeReclaimPolicy",
        &["Delete", "Recycle", "Retain"],
        false,
        errs,
    );
    class_name(spec, "storageClassName", "spec", errs);
    class_name(spec, "volumeAttributesClassName", "spec", errs);
    volume_mode(spec, "spec", errs);
    let sources: Vec<&str> = PV_SOURCES
        .iter()
        .copied()
        .filter(|k| !absent(spec.get(*k)))
        .collect();
    match sources.as_slice() {
        [] => errs.push(FieldError::required("spec", "must specify a volume type")),
        [_] => {}
        [_, second, ..] => errs.push(FieldError::forbidden(
            child("spec", second),
            "may not specify more than 1 volume type",
        )),
    }
    csi_source(spec, errs);
    if let Some(hp) = opt_obj(Some(spec), "hostPath", "spec.hostPath", errs)
        && opt_str(Some(hp), "path", "spec.hostPath.path", errs).is_empty()
    {
        errs.push(FieldError::required("spec.hostPath.path", ""));
    }
    if let Some(nfs) = opt_obj(Some(spec), "nfs", "spec.nfs", errs) {
        if opt_str(Some(nfs), "server", "spec.nfs.server", errs).is_empty() {
            errs.push(FieldError::required("spec.nfs.server", ""));
        }
        let path = opt_str(Some(nfs), "path", "spec.nfs.path", errs);
        if path.is_empty() {
            errs.push(FieldError::required("spec.nfs.path", ""));
        } else if !path.starts_with('/') {
            errs.push(FieldError::invalid(
                "spec.nfs.path",
                json!(path),
                "must be an absolute path",
            ));
        }
    }
    if let Some(local) = opt_obj(Some(spec), "local", "spec.local", errs) {
        if opt_str(Some(local), "path", "spec.local.path", errs).is_empty() {
            errs.push(FieldError::required("spec.local.path", ""));
        }
        if absent(spec.get("nodeAffinity")) {
            errs.push(FieldError::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    node_affinity(spec, errs);
}

fn csi_source(spec: &Map<String, Value>, errs: &mut Errs) {
    let Some(csi) = opt_obj(Some(spec), "csi", "spec.csi", errs) else {
        return;
    };
    let driver = opt_str(Some(csi), "driver", "spec.csi.driver", errs);
    csi_driver_name(driver, "spec.csi.driver", errs);
    if opt_str(Some(csi), "volumeHandle", "spec.csi.volumeHandle", errs).is_empty() {
        errs.push(FieldError::required("spec.csi.volumeHandle", ""));
    }
}

/// `ValidateCSIDriverName`: required, at most 63 characters, a DNS subdomain once lowercased.
fn csi_driver_name(driver: &str, path: &str, errs: &mut Errs) {
    if driver.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    if driver.len() > 63 {
        errs.push(FieldError::too_long(path, json!(driver), 63));
    }
    for m in dns1123_subdomain_errors(&driver.to_lowercase()) {
        errs.push(FieldError::invalid(path, json!(driver), m));
    }
}

/// `spec.nodeAffinity.required` must have node selector terms when given.
fn node_affinity(spec: &Map<String, Value>, errs: &mut Errs) {
    let na = opt_obj(Some(spec), "nodeAffinity", "spec.nodeAffinity", errs);
    let Some(required) = opt_obj(na, "required", "spec.nodeAffinity.required", errs) else {
        return;
    };
    let p = "spec.nodeAffinity.required.nodeSelectorTerms";
    if opt_arr(Some(required), "nodeSelectorTerms", p, errs).is_none_or(Vec::is_empty) {
        errs.push(FieldError::required(
            p,
            "must have at least one node selector term",
        ));
    }
}

/// `ValidateVolumeAttachmentSpec`.
pub(super) fn volume_attachment(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let attacher = opt_str(Some(spec), "attacher", "spec.attacher", errs);
    csi_driver_name(attacher, "spec.attacher", errs);
    let source = opt_obj(Some(spec), "source", "spec.source", errs);
    let pv = !opt_str(
        source,
        "persistentVolumeName",
        "spec.source.persistentVolumeName",
        errs,
    )
    .is_empty();
    let inline = !absent(source.and_then(|s| s.get("inlineVolumeSpec")));
    if pv == inline {
        errs.push(FieldError::required(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        ));
    }
    let node = opt_str(Some(spec), "nodeName", "spec.nodeName", errs);
    if node.is_empty() {
        errs.push(FieldError::required("spec.nodeName", ""));
    } else {
        for m in dns1123_subdomain_errors(node) {
            errs.push(FieldError::invalid("spec.nodeName", json!(node), m));
        }
    }
}

fn storage_request(obj: &Value) -> Option<i128> {
    at(obj, &["spec", "resources", "requests", "storage"]).and_then(crate::defaults::quantity_milli)
}

/// `ValidatePersistentVolumeClaimUpdate` (RecoverVolumeExpansionFailure on, as since 1.32):
/// the spec is immutable except a `volumeName` set once, a bound claim's storage request,
/// and `volumeAttributesClassName`; a bound claim's request may not fall to or below the
/// capacity in its status.
pub(super) fn persistent_volume_claim_update(old: &Value, new: &Value, errs: &mut Errs) {
    let bound = at(new, &["status", "phase"]).and_then(Value::as_str) == Some("Bound");
    let spec = |v: &Value| -> Map<String, Value> {
        v.get("spec")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (mut old_spec, mut new_spec) = (spec(old), spec(new));
    let old_volume = old_spec.get("volumeName").and_then(Value::as_str);
    if old_volume.is_none_or(str::is_empty) {
        // The binder sets `volumeName` once.
        old_spec.remove("volumeName");
        new_spec.remove("volumeName");
    }
    if bound {
        for s in [&mut old_spec, &mut new_spec] {
            if let Some(req) = s
                .get_mut("resources")
                .and_then(|r| r.get_mut("requests"))
                .and_then(Value::as_object_mut)
            {
                req.remove("storage");
            }
        }
    }
    for s in [&mut old_spec, &mut new_spec] {
        s.remove("volumeAttributesClassName");
    }
    // The PV controller may give a claim without a class the default one afterwards.
    if absent(old_spec.get("storageClassName"))
        && new_spec
            .get("storageClassName")
            .and_then(Value::as_str)
            .is_some_and(|c| !c.is_empty())
    {
        new_spec.remove("storageClassName");
    }
    if !semantic_eq(
        Some(&Value::Object(old_spec)),
        Some(&Value::Object(new_spec)),
    ) {
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let status_capacity =
        at(old, &["status", "capacity", "storage"]).and_then(crate::defaults::quantity_milli);
    if let (Some(old_size), Some(new_size)) = (storage_request(old), storage_request(new))
        && new_size < old_size
        && status_capacity.is_some_and(|cap| new_size <= cap)
    {
        errs.push(FieldError::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }
    immutable(
        at(old, &["spec", "volumeMode"]),
        at(new, &["spec", "volumeMode"]),
        "volumeMode",
        errs,
    );
    if !absent(at(old, &["spec", "volumeAttributesClassName"]))
        && absent(at(new, &["spec", "volumeAttributesClassName"]))
    {
        errs.push(FieldError::forbidden(
            "spec.volumeAttributesClassName",
            "update from non-nil value to nil is forbidden",
        ));
    }
}

/// `ValidatePersistentVolumeUpdate`: the source, `volumeMode` and a set node affinity are
/// immutable.
pub(super) fn persistent_volume_update(old: &Value, new: &Value, errs: &mut Errs) {
    let source = |v: &Value| -> Value {
        let mut m = Map::new();
        for k in PV_SOURCES {
            if let Some(x) = at(v, &["spec", k]) {
                m.insert((*k).to_string(), x.clone());
            }
        }
        Value::Object(m)
    };
    if !semantic_eq(Some(&source(old)), Some(&source(new))) {
        errs.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    immutable(
        at(old, &["spec", "volumeMode"]),
        at(new, &["spec", "volumeMode"]),
        "volumeMode",
        errs,
    );
    if !absent(at(old, &["spec", "nodeAffinity"])) {
        immutable(
            at(old, &["spec", "nodeAffinity"]),
            at(new, &["spec", "nodeAffinity"]),
            "nodeAffinity",
            errs,
        );
    }
}

/// `ValidateVolumeAttachmentUpdate`: the whole spec is immutable.
pub(super) fn volume_attachment_update(old: &Value, new: &Value, errs: &mut Errs) {
    if !semantic_eq(old.get("spec"), new.get("spec")) {
        errs.push(FieldError::invalid(
            "spec",
            new.get("spec").cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}
