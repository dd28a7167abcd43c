//! Tests of the PersistentVolume, PersistentVolumeClaim and VolumeAttachment rules, each with
//! malformed input and the server's exact paths and messages.

use super::create::validate_create;
use super::update::validate_update;
use crate::defaults::apply_defaults;
use crate::field_error::FieldError;
use serde_json::{Value, json};

fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn pvc(spec: Value) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "ns"}, "spec": spec});
    apply_defaults("", "PersistentVolumeClaim", &mut obj);
    obj
}

fn good_pvc() -> Value {
    pvc(json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}))
}

fn pv(spec: Value) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": spec});
    apply_defaults("", "PersistentVolume", &mut obj);
    obj
}

fn csi_pv() -> Value {
    pv(
        json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "csi": {"driver": "cinder.csi.openstack.org", "volumeHandle": "v-1"}}),
    )
}

fn claim_errors(spec: Value) -> Vec<String> {
    texts(&validate_create("", "PersistentVolumeClaim", &pvc(spec)))
}

fn volume_errors(spec: Value) -> Vec<String> {
    texts(&validate_create("", "PersistentVolume", &pv(spec)))
}

#[test]
fn a_good_claim_and_volume_pass_and_are_defaulted() {
    let c = good_pvc();
    assert!(validate_create("", "PersistentVolumeClaim", &c).is_empty());
    assert_eq!(c["spec"]["volumeMode"], "Filesystem");
    assert_eq!(c["status"]["phase"], "Pending");
    let v = csi_pv();
    assert!(validate_create("", "PersistentVolume", &v).is_empty());
    assert_eq!(v["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(v["spec"]["volumeMode"], "Filesystem");
    assert_eq!(v["status"]["phase"], "Pending");
}

#[test]
fn claim_access_modes() {
    let storage = json!({"requests": {"storage": "1Gi"}});
    assert_eq!(
        claim_errors(json!({"resources": storage})),
        ["spec.accessModes: Required value: at least 1 access mode is required"]
    );
    assert_eq!(
        claim_errors(json!({"accessModes": [], "resources": storage})),
        ["spec.accessModes: Required value: at least 1 access mode is required"]
    );
    assert_eq!(
        claim_errors(json!({"accessModes": ["ReadWriteSometimes"], "resources": storage})),
        [
            "spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""
        ]
    );
    assert_eq!(
        claim_errors(
            json!({"accessModes": ["ReadWriteOncePod", "ReadOnlyMany"], "resources": storage})
        ),
        ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"]
    );
    assert!(
        claim_errors(json!({"accessModes": ["ReadWriteOncePod"], "resources": storage})).is_empty()
    );
    let errs = claim_errors(json!({"accessModes": "ReadWriteOnce", "resources": storage}));
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.accessModes: Invalid value: \"string\"")),
        "{errs:?}"
    );
}

#[test]
fn claim_storage_request() {
    let rwo = json!(["ReadWriteOnce"]);
    assert_eq!(
        claim_errors(json!({"accessModes": rwo})),
        ["spec.resources[storage]: Required value"]
    );
    assert_eq!(
        claim_errors(json!({"accessModes": rwo, "resources": {"requests": {"cpu": "1"}}})),
        ["spec.resources[storage]: Required value"]
    );
    assert_eq!(
        claim_errors(json!({"accessModes": rwo, "resources": {"requests": {"storage": "0"}}})),
        ["spec.resources[storage]: Invalid value: \"0\": must be greater than zero"]
    );
    assert_eq!(
        claim_errors(json!({"accessModes": rwo, "resources": {"requests": {"storage": "-1Gi"}}})),
        ["spec.resources[storage]: Invalid value: \"-1Gi\": must be greater than zero"]
    );
    let errs =
        claim_errors(json!({"accessModes": rwo, "resources": {"requests": {"storage": "lots"}}}));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0]
            .starts_with("spec.resources[storage]: Invalid value: \"lots\": quantities must match"),
        "{errs:?}"
    );
}

#[test]
fn claim_class_and_mode() {
    let base = |extra: Value| {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
        for (k, v) in extra.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        claim_errors(spec)
    };
    let errs = base(json!({"storageClassName": "Not_A_Name"}));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with(
            "spec.storageClassName: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{errs:?}"
    );
    assert!(base(json!({"storageClassName": ""})).is_empty());
    assert_eq!(
        base(json!({"volumeMode": "Raw"})),
        [
            "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\""
        ]
    );
}

fn updated_claim(old: &Value, f: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut new = old.clone();
    f(&mut new);
    texts(&validate_update("", "PersistentVolumeClaim", old, &new))
}

fn bound(mut c: Value) -> Value {
    c["spec"]["volumeName"] = json!("pvc-1");
    c["status"] =
        json!({"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
    c
}

#[test]
fn claim_spec_is_immutable_but_for_binding_and_growth() {
    let pending = good_pvc();
    // Binding sets volumeName once...
    assert!(updated_claim(&pending, |c| c["spec"]["volumeName"] = json!("pvc-1")).is_empty());
    // ...and never again.
    let bound_claim = bound(pending.clone());
    let spec_error = "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";
    assert_eq!(
        updated_claim(&bound_claim, |c| c["spec"]["volumeName"] = json!("other")),
        [spec_error]
    );
    assert_eq!(
        updated_claim(&pending, |c| c["spec"]["accessModes"] =
            json!(["ReadWriteMany"])),
        [spec_error]
    );
    // Only a bound claim's request may change.
    assert_eq!(
        updated_claim(
            &pending,
            |c| c["spec"]["resources"]["requests"]["storage"] = json!("2Gi")
        ),
        [spec_error]
    );
    assert!(
        updated_claim(
            &bound_claim,
            |c| c["spec"]["resources"]["requests"]["storage"] = json!("2Gi")
        )
        .is_empty()
    );
    assert_eq!(
        updated_claim(
            &bound_claim,
            |c| c["spec"]["resources"]["requests"]["storage"] = json!("512Mi")
        ),
        ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    );
    assert_eq!(
        updated_claim(&pending, |c| c["spec"]["volumeMode"] = json!("Block")),
        [
            spec_error,
            "volumeMode: Invalid value: \"Block\": field is immutable"
        ]
    );
    // The PV controller may give a class to a claim without one.
    let mut classless = pending.clone();
    classless["spec"]
        .as_object_mut()
        .map(|s| s.remove("storageClassName"));
    assert!(
        updated_claim(&classless, |c| c["spec"]["storageClassName"] =
            json!("fast"))
        .is_empty()
    );
    // Garbage in an update is still validated.
    assert_eq!(
        updated_claim(
            &bound_claim,
            |c| c["spec"]["resources"]["requests"]["storage"] = json!("0")
        ),
        [
            "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
            "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
        ]
    );
}

#[test]
fn volume_capacity_modes_and_policy() {
    let csi = json!({"driver": "d.example.com", "volumeHandle": "h"});
    assert_eq!(
        volume_errors(json!({"accessModes": ["ReadWriteOnce"], "csi": csi})),
        ["spec.capacity: Required value"]
    );
    assert_eq!(
        volume_errors(
            json!({"capacity": {"storage": "1Gi", "cpu": "1"}, "accessModes": ["ReadWriteOnce"], "csi": csi})
        ),
        [
            "spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"1Gi\"}: supported values: \"storage\""
        ]
    );
    assert_eq!(
        volume_errors(
            json!({"capacity": {"storage": "0"}, "accessModes": ["ReadWriteOnce"], "csi": csi})
        ),
        ["spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"]
    );
    assert_eq!(
        volume_errors(json!({"capacity": {"storage": "1Gi"}, "csi": csi})),
        ["spec.accessModes: Required value: must specify at least 1 access mode"]
    );
    assert_eq!(
        volume_errors(
            json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Keep", "csi": csi})
        ),
        [
            "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\""
        ]
    );
}

#[test]
fn volume_sources() {
    let base = |source: Value| {
        let mut spec = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
        for (k, v) in source.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        volume_errors(spec)
    };
    assert_eq!(
        base(json!({})),
        ["spec: Required value: must specify a volume type"]
    );
    assert_eq!(
        base(json!({"hostPath": {"path": "/d"}, "csi": {"driver": "d", "volumeHandle": "h"}})),
        ["spec.csi: Forbidden: may not specify more than 1 volume type"]
    );
    assert_eq!(
        base(json!({"csi": {}})),
        [
            "spec.csi.driver: Required value",
            "spec.csi.volumeHandle: Required value"
        ]
    );
    let errs = base(json!({"csi": {"driver": "Bad_Driver", "volumeHandle": "h"}}));
    assert!(
        errs.len() == 1 && errs[0].starts_with("spec.csi.driver: Invalid value: \"Bad_Driver\""),
        "{errs:?}"
    );
    assert_eq!(
        base(json!({"hostPath": {}})),
        ["spec.hostPath.path: Required value"]
    );
    assert_eq!(
        base(json!({"nfs": {"path": "exports"}})),
        [
            "spec.nfs.server: Required value",
            "spec.nfs.path: Invalid value: \"exports\": must be an absolute path"
        ]
    );
    assert_eq!(
        base(json!({"local": {"path": "/mnt/disk"}})),
        ["spec.nodeAffinity: Required value: Local volume requires node affinity"]
    );
    assert!(
        base(json!({"local": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["w0"]}]}]}}}))
        .is_empty()
    );
    assert_eq!(
        base(json!({"hostPath": {"path": "/d"}, "nodeAffinity": {"required": {}}})),
        [
            "spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"
        ]
    );
    assert!(base(json!({"nfs": {"server": "10.0.0.1", "path": "/exports"}})).is_empty());
}

#[test]
fn volume_source_is_immutable() {
    let old = csi_pv();
    let mut new = old.clone();
    new["spec"]["csi"]["volumeHandle"] = json!("v-2");
    assert_eq!(
        texts(&validate_update("", "PersistentVolume", &old, &new)),
        [
            "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"
        ]
    );
    // Binding fields may change.
    let mut claimed = old.clone();
    claimed["spec"]["claimRef"] = json!({"namespace": "ns", "name": "data", "uid": "u"});
    claimed["spec"]["persistentVolumeReclaimPolicy"] = json!("Delete");
    assert!(validate_update("", "PersistentVolume", &old, &claimed).is_empty());
}

#[test]
fn volume_attachments() {
    let va = |spec: Value| json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "csi-1"}, "spec": spec});
    let good = va(
        json!({"attacher": "cinder.csi.openstack.org", "source": {"persistentVolumeName": "pv1"}, "nodeName": "worker-0"}),
    );
    assert!(validate_create("storage.k8s.io", "VolumeAttachment", &good).is_empty());
    assert_eq!(
        texts(&validate_create(
            "storage.k8s.io",
            "VolumeAttachment",
            &va(json!({"source": {}}))
        )),
        [
            "spec.attacher: Required value",
            "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
            "spec.nodeName: Required value"
        ]
    );
    let mut moved = good.clone();
    moved["spec"]["nodeName"] = json!("worker-1");
    let errs = texts(&validate_update(
        "storage.k8s.io",
        "VolumeAttachment",
        &good,
        &moved,
    ));
    assert!(
        errs.len() == 1
            && errs[0].starts_with("spec: Invalid value:")
            && errs[0].ends_with("field is immutable"),
        "{errs:?}"
    );
}

#[test]
fn malformed_volume_objects_never_panic() {
    for body in [
        json!(null),
        json!({"spec": 5}),
        json!({"spec": {"accessModes": [1, null], "resources": {"requests": []}, "capacity": "x",
            "csi": "y", "nfs": {"path": 3}, "nodeAffinity": {"required": {"nodeSelectorTerms": "z"}}}}),
    ] {
        for kind in ["PersistentVolumeClaim", "PersistentVolume"] {
            let _ = validate_create("", kind, &body);
            let _ = validate_update("", kind, &body, &body);
        }
        let _ = validate_create("storage.k8s.io", "VolumeAttachment", &body);
    }
}
