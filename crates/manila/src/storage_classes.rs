//! One StorageClass per share type, at runtime. Their names are known only when Manila has
//! answered, so they carry [`crate::SHARE_TYPE_CLASS_LABEL`] and one watch selected by that
//! label (registered with the operator's other watches) covers them all: the watch count stays
//! one with thousands of share types, and an admin deleting a class is repaired at once.

use k8s_openapi::api::storage::v1::StorageClass;
use operator_kit::class_names::MAX_CLASSES;
use operator_kit::csi::{Kit, Pass};

use crate::build;

/// Condition prefix (ours: OpenShift reported these errors in `StarterControllerDegraded`).
pub const STORAGE_CLASS_PREFIX: &str = "ManilaStorageClassController";

/// The label selector of the classes' watch.
pub fn class_selector() -> String {
    format!("{}=true", crate::SHARE_TYPE_CLASS_LABEL)
}

/// One StorageClass per share type, up to operator-kit's `MAX_CLASSES`. Classes of share
/// types that disappeared are kept (bound volumes need them) and named in the condition
/// message, as are share types that get no class because of a name collision, and how many
/// get none because there are more than the limit. `ns` is the driver's (guest) namespace,
/// where the classes' `csi-manila-secrets` lives.
pub async fn step(kit: &Kit, pass: &mut Pass, ns: &str, share_types: &[String], gone: &[String]) {
    let (names, name_errors) =
        crate::names::storage_class_names(share_types.iter().map(String::as_str));
    let (names, over_limit) = crate::names::NAMING.limit(names, MAX_CLASSES, |name| {
        kit.cache.get_object::<StorageClass>(None, name).is_some()
    });
    let mut errors = Vec::new();
    for (name, share_type) in &names {
        let result = match build::storage_class(ns, name, share_type) {
            Ok(d) => kit
                .apply(&d, None)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = result {
            errors.push(format!(
                "StorageClass {name} for share type {share_type:?}: {e}"
            ));
        }
    }
    let mut notes: Vec<String> = name_errors.iter().map(|(_, e)| e.to_string()).collect();
    notes.extend(over_limit);
    if !gone.is_empty() {
        notes.push(format!(
            "share types no longer offered by Manila: {}; their StorageClasses are kept because bound volumes need them (delete them yourself when no PersistentVolume uses them)",
            gone.join(", ")
        ));
    }
    pass.post_with_notes(STORAGE_CLASS_PREFIX, errors, notes);
}
