//! One StorageClass per share type, at runtime. Their names are known only when Manila has
//! answered, so they are read from a second, smaller watch cache rebuilt when the set of names
//! changes; changes to them (an admin deleting one) are repaired at the next resync rather
//! than at once.

use std::collections::BTreeSet;

use operator_kit::apply::Applier;
use operator_kit::cache::CacheBuilder;
use operator_kit::conditions;
use operator_kit::csi::{Kit, Pass};
use operator_kit::kinds::known as ar;

use crate::build;

/// Condition prefix (ours: OpenShift reported these errors in `StarterControllerDegraded`).
pub const STORAGE_CLASS_PREFIX: &str = "ManilaStorageClassController";

/// The watch cache and apply engine of the current set of StorageClass names.
struct ClassCache {
    names: BTreeSet<String>,
    applier: Applier,
}

/// What the StorageClass step keeps between reconciles.
#[derive(Default)]
pub struct StorageClasses {
    classes: Option<ClassCache>,
}

impl StorageClasses {
    /// One StorageClass per share type. Classes of share types that disappeared are kept
    /// (bound volumes need them) and named in the condition message, as are share types that
    /// get no class because of a name collision.
    pub async fn step(
        &mut self,
        kit: &Kit,
        pass: &mut Pass,
        share_types: &[String],
        gone: &[String],
    ) {
        let ns = kit.namespace.as_str();
        let (names, name_errors) =
            crate::names::storage_class_names(share_types.iter().map(String::as_str));
        let wanted: BTreeSet<String> = names.keys().cloned().collect();
        if self.classes.as_ref().is_none_or(|c| c.names != wanted) {
            self.classes = Some(class_cache(kit, wanted));
        }
        let mut errors = Vec::new();
        if let Some(classes) = &self.classes {
            for (name, share_type) in &names {
                let result = match build::storage_class(ns, name, share_type) {
                    Ok(d) => kit
                        .apply_with(&classes.applier, &d, None)
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
        }
        let mut notes: Vec<String> = name_errors.iter().map(|(_, e)| e.to_string()).collect();
        if !gone.is_empty() {
            notes.push(format!(
                "share types no longer offered by Manila: {}; their StorageClasses are kept because bound volumes need them (delete them yourself when no PersistentVolume uses them)",
                gone.join(", ")
            ));
        }
        if errors.is_empty() {
            let mut c = conditions::degraded(STORAGE_CLASS_PREFIX, None);
            c.message = notes.join("\n");
            pass.board.set_condition(c);
        } else {
            errors.extend(notes);
            pass.post::<()>(STORAGE_CLASS_PREFIX, Err(errors.join("\n").into()));
        }
    }
}

fn class_cache(kit: &Kit, names: BTreeSet<String>) -> ClassCache {
    let sc = ar("storage.k8s.io/v1", "StorageClass");
    let mut builder = CacheBuilder::new(kit.client.clone(), Vec::<String>::new());
    for name in &names {
        builder = builder.cluster_object(&sc, name);
    }
    let cache = builder.start();
    ClassCache {
        names,
        applier: Applier::new(kit.client.clone(), cache, kit.recorder.clone()),
    }
}
