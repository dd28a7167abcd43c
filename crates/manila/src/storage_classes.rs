//! One StorageClass per share type, at runtime, with operator-kit's per-type StorageClass
//! step. Their names are known only when Manila has answered, so they carry
//! [`crate::SHARE_TYPE_CLASS_LABEL`] and one watch selected by that label (registered with the
//! operator's other watches) covers them all.

use operator_kit::csi::{Kit, Offered, Pass, TypeClasses};

use crate::build;

/// Condition prefix (ours: OpenShift reported these errors in `StarterControllerDegraded`).
pub const STORAGE_CLASS_PREFIX: &str = "ManilaStorageClassController";

/// The share-type classes as operator-kit's StorageClass step makes them.
pub const CLASSES: TypeClasses = TypeClasses {
    prefix: STORAGE_CLASS_PREFIX,
    naming: crate::names::NAMING,
    label: crate::SHARE_TYPE_CLASS_LABEL,
    provisioner: crate::CSI_DRIVER_NAME,
};

/// One StorageClass per share type, up to operator-kit's `MAX_CLASSES`. Classes of share
/// types that disappeared are kept (bound volumes need them) and named in the condition
/// message, as are share types that get no class because of a name collision, and how many
/// get none because there are more than the limit. `ns` is the driver's (guest) namespace,
/// where the classes' `csi-manila-secrets` lives.
pub async fn step(kit: &Kit, pass: &mut Pass, ns: &str, share_types: &[String], gone: &[String]) {
    let offered = Offered {
        types: share_types,
        gone,
        ..Offered::default()
    };
    let build = |name: &str, share_type: &str| build::storage_class(ns, name, share_type);
    CLASSES.step(kit, pass, offered, false, build).await;
}
