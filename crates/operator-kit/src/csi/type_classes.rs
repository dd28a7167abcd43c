//! One StorageClass per type a cloud offers (Cinder's volume types, Manila's share types), as
//! one step a driver configures with [`TypeClasses`]: names from its [`ClassNaming`], at most
//! [`MAX_CLASSES`] classes, each applied (or, when the driver's classes are to be removed,
//! deleted if it is ours), and one `<prefix>Degraded` that names the classes that failed and
//! says what is worth knowing without failing: types that get no class, types gone (their
//! classes are kept, bound volumes need them), private types, a listing that failed.
//!
//! Their names are known only once the cloud has answered, so the classes carry the driver's
//! label and one watch selected by it ([`TypeClasses::selector`]) covers them all: the watch
//! count stays one with thousands of types, and an administrator deleting a class is
//! repaired at once.

use std::collections::BTreeMap;

use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::DynamicObject;

use super::{Kit, Pass, StepError};
use crate::apply::ApplyError;
use crate::class_names::{ClassNaming, MAX_CLASSES, NameError};
use crate::conditions::reasons;
use crate::desired::{BuildError, Desired};
use crate::metrics::WriteVerb;

/// How a driver makes its per-type StorageClasses.
#[derive(Debug, Clone, Copy)]
pub struct TypeClasses {
    /// The prefix of the step's `<prefix>Degraded`.
    pub prefix: &'static str,
    /// How the types' classes are named, and the words messages use for them.
    pub naming: ClassNaming,
    /// The label (value `true`) every class of the step carries: the watch's selector, and
    /// what tells a class of ours from someone else's of the same name.
    pub label: &'static str,
    /// The classes' provisioner (the CSI driver's name).
    pub provisioner: &'static str,
}

/// What the cloud offers, as the driver last learnt it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Offered<'a> {
    /// The types that get a class.
    pub types: &'a [String],
    /// Types offered before and no longer: their classes are kept.
    pub gone: &'a [String],
    /// Types that get no class because not every namespace may use them.
    pub private: &'a [String],
    /// Why the latest listing failed, when it did (the classes of the last one are kept).
    pub listing_error: Option<&'a str>,
}

/// Why one class of the step failed.
#[derive(Debug, thiserror::Error)]
pub enum ClassError {
    #[error("StorageClass {name} for {noun} {item:?}: {source}")]
    Build {
        name: String,
        noun: &'static str,
        item: String,
        #[source]
        source: BuildError,
    },
    #[error("StorageClass {name} for {noun} {item:?}: {source}")]
    Apply {
        name: String,
        noun: &'static str,
        item: String,
        #[source]
        source: ApplyError,
    },
}

/// The step's failure (reason `SyncError`): each class that failed, one line each, then the
/// notes the step would have posted had nothing failed.
#[derive(Debug, thiserror::Error)]
#[error("{}", lines(.failures, .notes))]
pub struct ClassesFailed {
    pub failures: Vec<ClassError>,
    pub notes: Vec<String>,
}

fn lines(failures: &[ClassError], notes: &[String]) -> String {
    failures
        .iter()
        .map(ToString::to_string)
        .chain(notes.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n")
}

impl From<ClassesFailed> for StepError {
    fn from(e: ClassesFailed) -> Self {
        StepError::with_reason(reasons::SYNC_ERROR, e)
    }
}

impl TypeClasses {
    /// The label selector of the classes' watch.
    pub fn selector(&self) -> String {
        format!("{}=true", self.label)
    }

    /// Whether a live StorageClass is one of the step's: it carries the label and provisions
    /// with the driver. Removal deletes only such classes, so a class of the same name that
    /// someone else made (by hand, for another provisioner) survives.
    pub fn is_ours(&self, live: &DynamicObject) -> bool {
        let labelled = live
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(self.label))
            .is_some_and(|v| v == "true");
        let provisioner = live.data.get("provisioner").and_then(|p| p.as_str());
        labelled && provisioner == Some(self.provisioner)
    }

    /// Class names for `types`: name → type, and the types that get none with the reason.
    pub fn names(&self, types: &[String]) -> (BTreeMap<String, String>, Vec<(String, NameError)>) {
        self.naming.names(types.iter().map(String::as_str))
    }

    /// The step: one class per offered type, built by `build(name, type)`, applied; with
    /// `remove`, every class of ours for the offered types is deleted instead (however many).
    /// Posts `<prefix>Degraded`.
    pub async fn step(
        &self,
        kit: &Kit,
        pass: &mut Pass,
        offered: Offered<'_>,
        remove: bool,
        build: impl Fn(&str, &str) -> Result<Desired, BuildError>,
    ) {
        let result = self.apply(kit, offered, remove, build).await;
        pass.post_with_notes(self.prefix, result.map_err(StepError::from));
    }

    async fn apply(
        &self,
        kit: &Kit,
        offered: Offered<'_>,
        remove: bool,
        build: impl Fn(&str, &str) -> Result<Desired, BuildError>,
    ) -> Result<Vec<String>, ClassesFailed> {
        let (names, name_errors) = self.names(offered.types);
        let (names, over_limit) = if remove {
            (names, None)
        } else {
            self.naming.limit(names, MAX_CLASSES, |name| {
                kit.cache.get_object::<StorageClass>(None, name).is_some()
            })
        };
        let noun = self.naming.noun;
        let mut failures = Vec::new();
        for (name, item) in &names {
            let desired = match build(name, item) {
                Ok(d) => d,
                Err(source) => {
                    failures.push(ClassError::Build {
                        name: name.clone(),
                        noun,
                        item: item.clone(),
                        source,
                    });
                    continue;
                }
            };
            let result = if remove {
                kit.applier
                    .delete_owned(&desired.resource, None, name, |o| self.is_ours(o))
                    .await
                    .map(|deleted| {
                        if deleted {
                            kit.metrics.write("StorageClass", WriteVerb::Delete);
                        }
                    })
            } else {
                kit.apply(&desired, None).await.map(|_| ())
            };
            if let Err(source) = result {
                failures.push(ClassError::Apply {
                    name: name.clone(),
                    noun,
                    item: item.clone(),
                    source,
                });
            }
        }
        let notes = self.notes(&name_errors, over_limit, &offered);
        if failures.is_empty() {
            Ok(notes)
        } else {
            Err(ClassesFailed { failures, notes })
        }
    }

    /// What the condition says besides failures, in this order: types without a class (a
    /// name collision, the limit), a failed listing, types gone, private types.
    fn notes(
        &self,
        name_errors: &[(String, NameError)],
        over_limit: Option<String>,
        offered: &Offered<'_>,
    ) -> Vec<String> {
        let ClassNaming { service, noun, .. } = self.naming;
        let mut notes: Vec<String> = name_errors.iter().map(|(_, e)| e.to_string()).collect();
        notes.extend(over_limit);
        if let Some(e) = offered.listing_error {
            notes.push(format!(
                "{e}; the StorageClasses of the last successful listing are kept"
            ));
        }
        if !offered.gone.is_empty() {
            notes.push(format!(
                "{noun}s no longer offered by {service}: {}; their StorageClasses are kept because bound volumes need them (delete them yourself when no PersistentVolume uses them)",
                offered.gone.join(", ")
            ));
        }
        if !offered.private.is_empty() {
            notes.push(format!(
                "private {noun}s get no StorageClass (a StorageClass is visible to every namespace): {}",
                offered.private.join(", ")
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLASSES: TypeClasses = TypeClasses {
        prefix: "FooStorageClassController",
        naming: ClassNaming {
            prefix: "csi-foo-",
            service: "Foo",
            noun: "foo type",
        },
        label: "foo.example.org/type-class",
        provisioner: "foo.csi.example.org",
    };

    fn class(labels: serde_json::Value, provisioner: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "csi-foo-a", "labels": labels},
            "provisioner": provisioner,
        }))
        .expect("a StorageClass")
    }

    #[test]
    fn only_a_labelled_class_of_the_provisioner_is_ours() {
        let label = serde_json::json!({"foo.example.org/type-class": "true"});
        assert!(CLASSES.is_ours(&class(label.clone(), "foo.csi.example.org")));
        assert!(!CLASSES.is_ours(&class(label, "other.csi.example.org")));
        assert!(!CLASSES.is_ours(&class(
            serde_json::json!({"foo.example.org/type-class": "false"}),
            "foo.csi.example.org"
        )));
        assert!(!CLASSES.is_ours(&class(serde_json::json!({}), "foo.csi.example.org")));
        assert_eq!(CLASSES.selector(), "foo.example.org/type-class=true");
    }

    #[test]
    fn notes_come_in_order_with_the_drivers_words() {
        let gone = vec!["old".to_string()];
        let private = vec!["secret".to_string()];
        let offered = Offered {
            types: &[],
            gone: &gone,
            private: &private,
            listing_error: Some("Foo did not answer"),
        };
        let (_, errors) = CLASSES.names(&["".to_string()]);
        let notes = CLASSES.notes(&errors, Some("over the limit".into()), &offered);
        assert_eq!(
            notes,
            [
                "Foo returned a foo type with an empty name; it gets no StorageClass (give the foo type a name in Foo)",
                "over the limit",
                "Foo did not answer; the StorageClasses of the last successful listing are kept",
                "foo types no longer offered by Foo: old; their StorageClasses are kept because bound volumes need them (delete them yourself when no PersistentVolume uses them)",
                "private foo types get no StorageClass (a StorageClass is visible to every namespace): secret",
            ]
        );
    }

    /// A failure is one line per class, then the notes, with reason `SyncError`.
    #[test]
    fn a_failure_names_each_class_then_the_notes() {
        let failed = ClassesFailed {
            failures: vec![ClassError::Build {
                name: "csi-foo-a".into(),
                noun: "foo type",
                item: "A".into(),
                source: BuildError::Kind {
                    asset: "x",
                    source: crate::kinds::KindError::Convert("no kind".into()),
                },
            }],
            notes: vec!["kept".into()],
        };
        let text = failed.to_string();
        assert!(
            text.starts_with("StorageClass csi-foo-a for foo type \"A\": "),
            "{text}"
        );
        assert!(text.ends_with("\nkept"), "{text}");
        let e = StepError::from(failed);
        assert_eq!(e.reason(), "SyncError");
    }
}
