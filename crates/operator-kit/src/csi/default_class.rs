//! library-go's StorageClassController: a driver's default StorageClass (Cinder's
//! `standard-csi`), applied, left alone or deleted as the ClusterCSIDriver's
//! `spec.storageClassState` asks, with its default-class annotation settled so the operator
//! never makes a second default class (anchors §1.12). A driver declares the class
//! ([`Driver::storage_class`](super::Driver::storage_class)); the kit runs this step after the
//! workloads and before the driver's own after-workload steps.
//!
//! Reads the class list only when it can change the answer, so a steady state reads nothing
//! live; never touches a class other than the declared one.

use kube::api::{Api, DynamicObject, ListParams};
use openshift_api::operator::StorageClassState;

use super::{Kit, StepError};
use crate::cache::Lookup;
use crate::class_names::DEFAULT_CLASS_ANNOTATION;
use crate::desired::Desired;
use crate::metrics::WriteVerb;

/// The step's condition prefix, as library-go names the controller.
pub const STORAGE_CLASS_PREFIX: &str = "StorageClassController";

/// Why the step failed, besides building and applying (reason `SyncError`).
#[derive(Debug, thiserror::Error)]
pub enum StorageClassError {
    #[error(
        "invalid StorageClassState {0}; set spec.storageClassState to Managed, Unmanaged or Removed"
    )]
    InvalidState(String),
    #[error("cannot list StorageClasses to settle the default class: {0}")]
    List(#[source] kube::Error),
}

impl From<StorageClassError> for StepError {
    fn from(e: StorageClassError) -> Self {
        StepError::other(e)
    }
}

/// The class `desired` as `state` asks: applied, left alone, or deleted.
pub(super) async fn step(
    kit: &Kit,
    mut desired: Desired,
    state: &StorageClassState,
) -> Result<(), StepError> {
    match state {
        StorageClassState::Managed | StorageClassState::Unset => {
            settle_default_class(kit, &mut desired).await?;
            kit.apply(&desired, None).await?;
            Ok(())
        }
        StorageClassState::Unmanaged => Ok(()),
        StorageClassState::Removed => {
            let name = desired.object.metadata.name.clone().unwrap_or_default();
            if kit.applier.delete(&desired.resource, None, &name).await? {
                kit.metrics.write("StorageClass", WriteVerb::Delete);
            }
            Ok(())
        }
        StorageClassState::Unknown(other) => {
            Err(StorageClassError::InvalidState(other.clone()).into())
        }
    }
}

/// Settles the default-class annotation of `desired` as library-go does, listing the cluster's
/// StorageClasses only when the live class of its name is missing or has no default-class key.
async fn settle_default_class(kit: &Kit, desired: &mut Desired) -> Result<(), StepError> {
    let name = desired.object.metadata.name.clone().unwrap_or_default();
    let live = match kit.cache.lookup(&desired.resource, None, &name) {
        Lookup::Found(o) => Some(o),
        _ => None,
    };
    if !default_class_needs_list(&desired.object, live.as_deref()) {
        return Ok(());
    }
    let api: Api<DynamicObject> = Api::all_with(kit.client.clone(), &desired.resource);
    let classes = api
        .list(&ListParams::default())
        .await
        .map_err(StorageClassError::List)?;
    set_default_storage_class(&mut desired.object, &classes.items);
    Ok(())
}

/// Whether [`set_default_storage_class`] needs the list of every StorageClass: only when the
/// desired class asks to be default and the live class of its name is missing or carries no
/// default-class key (otherwise the live value is kept, whatever the other classes say).
fn default_class_needs_list(desired: &DynamicObject, live: Option<&DynamicObject>) -> bool {
    let asks = annotation(desired, DEFAULT_CLASS_ANNOTATION).is_some_and(|v| !v.is_empty());
    asks && live.is_none_or(|l| annotation(l, DEFAULT_CLASS_ANNOTATION).is_none())
}

/// library-go's `SetDefaultStorageClass` (anchors §1.12), so that the operator never makes a
/// second default StorageClass: when `desired` asks to be default, the live class of its name
/// keeps its default-class value (any value, `""` included), and when that class is missing or
/// has no such key while another class is already default, `desired` says `"false"`.
fn set_default_storage_class(desired: &mut DynamicObject, existing: &[DynamicObject]) {
    if annotation(desired, DEFAULT_CLASS_ANNOTATION).is_none_or(str::is_empty) {
        return;
    }
    let name = desired.metadata.name.clone().unwrap_or_default();
    let other_defaults = existing
        .iter()
        .filter(|sc| sc.metadata.name.as_deref() != Some(name.as_str()))
        .filter(|sc| annotation(sc, DEFAULT_CLASS_ANNOTATION) == Some("true"))
        .count();
    let same = existing
        .iter()
        .find(|sc| sc.metadata.name.as_deref() == Some(name.as_str()));
    let kept = same.and_then(|sc| annotation(sc, DEFAULT_CLASS_ANNOTATION));
    let value = match kept {
        Some(v) => v.to_string(),
        None if other_defaults > 0 => "false".to_string(),
        None => return,
    };
    desired
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(DEFAULT_CLASS_ANNOTATION.to_string(), value);
}

fn annotation<'a>(obj: &'a DynamicObject, key: &str) -> Option<&'a str> {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, default: Option<&str>) -> DynamicObject {
        let mut v = serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": "p"});
        if let Some(d) = default {
            v["metadata"]["annotations"] = serde_json::json!({DEFAULT_CLASS_ANNOTATION: d});
        }
        serde_json::from_value(v).expect("a StorageClass")
    }

    fn default_of(obj: &DynamicObject) -> Option<&str> {
        annotation(obj, DEFAULT_CLASS_ANNOTATION)
    }

    /// Anchors §1.12: never a second default; the admin's value on our class always wins.
    #[test]
    fn default_class_follows_library_go() {
        let ours = || class("standard-csi", Some("true"));
        // Nothing else is default: we are.
        let mut d = ours();
        set_default_storage_class(&mut d, &[class("other", Some("false"))]);
        assert_eq!(default_of(&d), Some("true"));
        // Another class is default and ours does not exist yet: "false".
        let mut d = ours();
        set_default_storage_class(&mut d, &[class("gp-ssd", Some("true"))]);
        assert_eq!(default_of(&d), Some("false"));
        // Ours exists without the key while another is default: "false".
        let mut d = ours();
        set_default_storage_class(
            &mut d,
            &[class("gp-ssd", Some("true")), class("standard-csi", None)],
        );
        assert_eq!(default_of(&d), Some("false"));
        // Ours exists with a value: it is kept, even "" and even "true" beside another default.
        for kept in ["", "false", "true"] {
            let mut d = ours();
            set_default_storage_class(
                &mut d,
                &[
                    class("gp-ssd", Some("true")),
                    class("standard-csi", Some(kept)),
                ],
            );
            assert_eq!(default_of(&d), Some(kept));
        }
        // Ours being default does not count as "another" default.
        let mut d = ours();
        set_default_storage_class(&mut d, &[class("standard-csi", Some("true"))]);
        assert_eq!(default_of(&d), Some("true"));
        // A class that does not ask to be default is left alone.
        let mut d = class("x", None);
        set_default_storage_class(&mut d, &[class("gp-ssd", Some("true"))]);
        assert_eq!(default_of(&d), None);
    }

    #[test]
    fn the_class_list_is_read_only_when_it_can_change_the_answer() {
        let d = class("standard-csi", Some("true"));
        assert!(default_class_needs_list(&d, None));
        assert!(default_class_needs_list(
            &d,
            Some(&class("standard-csi", None))
        ));
        assert!(!default_class_needs_list(
            &d,
            Some(&class("standard-csi", Some("false")))
        ));
        assert!(!default_class_needs_list(&class("x", None), None));
    }
}
