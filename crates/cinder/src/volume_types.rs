//! Opt-in StorageClasses per Cinder volume type, the pure half: whether the administrator
//! asked for them, which volume types get one, how they are named and built, and when Cinder
//! is asked again.
//!
//! OpenShift ships one StorageClass, `standard-csi`, with Cinder's default volume type; users
//! with several types (SSD, HDD, replicated) write the others by hand. With the annotation
//! [`OPT_IN_ANNOTATION`]` = "true"` on the ClusterCSIDriver, the operator lists the volume
//! types the project sees and keeps one StorageClass `csi-cinder-<type>` per public type (up
//! to operator-kit's `MAX_CLASSES`), named
//! as Manila's share-type classes are (operator-kit's `ClassNaming`: repaired when the type's
//! name is not a valid object name, collisions reported). The list is refreshed on the
//! topology timer (`--topology-refresh`); a type that disappears keeps its class, because
//! PersistentVolumes may name it, and is reported. An annotation rather than a
//! `spec.driverConfig` field: the ClusterCSIDriver CRD is OpenShift's, and on OpenShift a field
//! of ours would be pruned.
//!
//! No client, no clock reads, no I/O: the runtime half is `volume_type_classes`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use openstack::{Backoff, Retry, VolumeType};
use operator_kit::class_names::{ClassNaming, NameError};
use operator_kit::csi::TypeClasses;
use operator_kit::desired::{self, BuildError, Desired};

use crate::CSI_DRIVER_NAME;

/// The ClusterCSIDriver annotation that turns the per-type classes on (`"true"`) or off
/// (absent or `"false"`).
pub const OPT_IN_ANNOTATION: &str = "cinder.csi.openstack.org/volume-type-storage-classes";
/// The label every per-type class carries: one watch selected by it covers them all, however
/// many types the cloud has.
pub const CLASS_LABEL: &str = "cinder.csi.openstack.org/volume-type-class";
/// Cinder's built-in default type (since Train). `standard-csi`, which names no type, already
/// provisions with it, so it gets no class of its own.
pub const CINDER_DEFAULT_TYPE: &str = "__DEFAULT__";

/// How volume types are named: `csi-cinder-<type>`.
pub const NAMING: ClassNaming = ClassNaming {
    prefix: "csi-cinder-",
    service: "Cinder",
    noun: "volume type",
};

/// Condition prefix of the per-type classes' step (ours; OpenShift has no such classes).
pub const CLASS_STEP_PREFIX: &str = "CinderVolumeTypeStorageClassController";

/// The per-type classes as operator-kit's StorageClass step makes them.
pub const CLASSES: TypeClasses = TypeClasses {
    prefix: CLASS_STEP_PREFIX,
    naming: NAMING,
    label: CLASS_LABEL,
    provisioner: CSI_DRIVER_NAME,
};

/// What the ClusterCSIDriver's annotation asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptIn {
    Off,
    On,
    /// A value other than `true` or `false`: nothing changes, and the message says so.
    Invalid(String),
}

/// Reads [`OPT_IN_ANNOTATION`] from the ClusterCSIDriver's annotations.
pub fn opt_in(annotations: Option<&BTreeMap<String, String>>) -> OptIn {
    match annotations
        .and_then(|a| a.get(OPT_IN_ANNOTATION))
        .map(|v| v.trim())
    {
        None | Some("false") => OptIn::Off,
        Some("true") => OptIn::On,
        Some(other) => {
            let shown: String = other.chars().take(64).collect();
            OptIn::Invalid(format!(
                "annotation {OPT_IN_ANNOTATION} on ClusterCSIDriver {CSI_DRIVER_NAME} is {shown:?}; set it to \"true\" to get a StorageClass per Cinder volume type, or \"false\" (or remove it) for none"
            ))
        }
    }
}

/// The volume types that get a class: the public ones, except Cinder's default type. Private
/// types the project was granted access to are left out, since a class is visible to the
/// whole cluster; they are named so the message can say why they have none.
pub fn offered(types: &[VolumeType]) -> (Vec<String>, Vec<String>) {
    let mut public = BTreeSet::new();
    let mut private = BTreeSet::new();
    for t in types {
        if t.name == CINDER_DEFAULT_TYPE {
            continue;
        }
        if t.is_public {
            public.insert(t.name.clone());
        } else {
            private.insert(t.name.clone());
        }
    }
    (public.into_iter().collect(), private.into_iter().collect())
}

/// Class names for the offered types: name → type, and the types that get none.
pub fn class_names(types: &[String]) -> (BTreeMap<String, String>, Vec<(String, NameError)>) {
    NAMING.names(types.iter().map(String::as_str))
}

/// The StorageClass of one volume type: as `standard-csi` (binding delayed until a pod is
/// scheduled, so the volume is made in the pod's zone; expansion allowed; volumes deleted with
/// their claim) with `type` set, labelled [`CLASS_LABEL`], never the default class.
pub fn storage_class(name: &str, volume_type: &str) -> Result<Desired, BuildError> {
    desired::from_value(
        "volume-type-storageclass",
        None,
        serde_json::json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": name,
                "labels": { CLASS_LABEL: "true" },
            },
            "provisioner": CSI_DRIVER_NAME,
            "parameters": { "type": volume_type },
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": true,
        }),
    )
}

/// Whether a live StorageClass is one of the per-type classes this operator made: it carries
/// [`CLASS_LABEL`] and provisions with the Cinder CSI driver. `spec.storageClassState:
/// Removed` deletes only such classes, so a class of the same name that someone else made (by
/// hand, for another provisioner) survives.
pub fn is_ours(live: &kube::api::DynamicObject) -> bool {
    CLASSES.is_ours(live)
}

/// A failed listing: what to tell the administrator and how soon to ask again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub retry: Retry,
}

/// When Cinder is asked for its volume types, and what it said last.
#[derive(Debug, Clone)]
pub struct Listing {
    refresh: Duration,
    /// When the last listing finished, with the fingerprint of the credentials it used.
    listed: Option<(Instant, String)>,
    backoff: Backoff,
    /// The latest successful answer.
    current: Option<Vec<VolumeType>>,
    last_error: Option<Failure>,
    /// Every public type ever offered, for the ones that disappeared.
    seen: BTreeSet<String>,
}

impl Listing {
    /// Types are listed again every `refresh` (`0`: once per set of credentials).
    pub fn new(refresh: Duration) -> Self {
        Self {
            refresh,
            listed: None,
            backoff: Backoff::default(),
            current: None,
            last_error: None,
            seen: BTreeSet::new(),
        }
    }

    /// The wait after the last listing; `None` when nothing but new credentials starts one.
    fn interval(&self) -> Option<Duration> {
        let refresh = if self.refresh.is_zero() {
            Duration::MAX
        } else {
            self.refresh
        };
        let wait = self.backoff.wait(refresh);
        (wait != Duration::MAX).then_some(wait)
    }

    /// Whether a listing is due: never listed, other credentials, or the wait passed.
    pub fn is_due(&self, now: Instant, fingerprint: &str) -> bool {
        match &self.listed {
            None => true,
            Some((_, fp)) if fp != fingerprint => true,
            Some((at, _)) => self
                .interval()
                .is_some_and(|wait| now.duration_since(*at) >= wait),
        }
    }

    /// How long until the next listing is due, if a timer should bring it.
    pub fn next_in(&self, now: Instant) -> Option<Duration> {
        match &self.listed {
            None => Some(Duration::ZERO),
            Some((at, _)) => self
                .interval()
                .map(|wait| wait.saturating_sub(now.duration_since(*at))),
        }
    }

    /// Records a finished listing made with the credentials `fingerprint`.
    pub fn record(
        &mut self,
        now: Instant,
        fingerprint: &str,
        result: Result<Vec<VolumeType>, Failure>,
    ) {
        if self
            .listed
            .as_ref()
            .is_some_and(|(_, fp)| fp != fingerprint)
        {
            self.backoff.reset();
        }
        self.listed = Some((now, fingerprint.to_string()));
        match result {
            Ok(types) => {
                self.backoff.record(None);
                self.seen.extend(offered(&types).0);
                self.current = Some(types);
                self.last_error = None;
            }
            Err(f) => {
                self.backoff.record(Some(f.retry));
                self.last_error = Some(f);
            }
        }
    }

    /// The latest answer, if Cinder ever answered.
    pub fn current(&self) -> Option<&[VolumeType]> {
        self.current.as_deref()
    }

    /// Why the latest listing failed, if it did.
    pub fn last_error(&self) -> Option<&Failure> {
        self.last_error.as_ref()
    }

    /// Public types offered before and not any more, sorted.
    pub fn gone(&self) -> Vec<String> {
        let now: BTreeSet<String> = self
            .current
            .as_deref()
            .map(|t| offered(t).0.into_iter().collect())
            .unwrap_or_default();
        self.seen.difference(&now).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vt(name: &str, is_public: bool) -> VolumeType {
        VolumeType {
            id: format!("id-{name}"),
            name: name.to_string(),
            is_public,
        }
    }

    fn annotations(value: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(OPT_IN_ANNOTATION.to_string(), value.to_string())])
    }

    #[test]
    fn the_annotation_opts_in_and_anything_else_is_named() {
        assert_eq!(opt_in(None), OptIn::Off);
        assert_eq!(opt_in(Some(&BTreeMap::new())), OptIn::Off);
        assert_eq!(opt_in(Some(&annotations("false"))), OptIn::Off);
        assert_eq!(opt_in(Some(&annotations("true"))), OptIn::On);
        assert_eq!(opt_in(Some(&annotations(" true\n"))), OptIn::On);
        for bad in ["yes", "True", "1", "", &"x".repeat(10_000)] {
            let OptIn::Invalid(message) = opt_in(Some(&annotations(bad))) else {
                panic!("{bad:?} accepted");
            };
            assert!(message.contains(OPT_IN_ANNOTATION), "{message}");
            assert!(message.contains("\"true\""), "{message}");
            assert!(message.len() < 400, "the value is cut: {}", message.len());
        }
    }

    #[test]
    fn public_types_other_than_the_default_get_a_class() {
        let (public, private) = offered(&[
            vt("__DEFAULT__", true),
            vt("ssd", true),
            vt("hdd", true),
            vt("tenant-only", false),
            vt("ssd", true),
        ]);
        assert_eq!(public, ["hdd", "ssd"]);
        assert_eq!(private, ["tenant-only"]);
    }

    #[test]
    fn classes_are_named_repaired_and_built_like_standard_csi() {
        let (names, errors) = class_names(&["fast_SSD".into(), "Gold Tier".into()]);
        assert!(errors.is_empty());
        assert_eq!(
            names.get("csi-cinder-fast-ssd").map(String::as_str),
            Some("fast_SSD")
        );
        let repaired = names
            .keys()
            .find(|n| n.starts_with("csi-cinder-gold-tier-"))
            .expect("repaired name");
        let class = storage_class(repaired, "Gold Tier").expect("builds");
        let v = serde_json::to_value(&class.object).expect("json");
        assert_eq!(v["parameters"]["type"], "Gold Tier");
        assert_eq!(v["provisioner"], CSI_DRIVER_NAME);
        assert_eq!(v["volumeBindingMode"], "WaitForFirstConsumer");
        assert_eq!(v["metadata"]["labels"][CLASS_LABEL], "true");
        assert!(
            v["metadata"]["annotations"].is_null(),
            "never the default class"
        );
        let errors = kube_sim::validation::validate_create("storage.k8s.io", "StorageClass", &v);
        assert!(errors.is_empty(), "{errors:?}");
        let (_, collisions) = class_names(&["SSD".into(), "ssd".into()]);
        assert_eq!(collisions.len(), 1);
        assert!(
            collisions[0]
                .1
                .to_string()
                .contains("rename one of the volume types in Cinder")
        );
    }

    #[test]
    fn only_labelled_classes_of_the_cinder_driver_are_ours() {
        let class = |labels: serde_json::Value, provisioner: &str| -> kube::api::DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "csi-cinder-ssd", "labels": labels},
                "provisioner": provisioner,
            }))
            .expect("a StorageClass")
        };
        let ours = serde_json::to_value(
            &storage_class("csi-cinder-ssd", "ssd")
                .expect("builds")
                .object,
        )
        .expect("json");
        let ours: kube::api::DynamicObject = serde_json::from_value(ours).expect("object");
        assert!(is_ours(&ours), "what the operator builds is ours");
        let label = serde_json::json!({ CLASS_LABEL: "true" });
        assert!(!is_ours(&class(serde_json::json!({}), CSI_DRIVER_NAME)));
        assert!(!is_ours(&class(label.clone(), "example.com/nfs")));
        assert!(!is_ours(&class(
            serde_json::json!({ CLASS_LABEL: "false" }),
            CSI_DRIVER_NAME
        )));
        assert!(is_ours(&class(label, CSI_DRIVER_NAME)));
    }

    #[test]
    fn listing_is_due_on_new_credentials_the_refresh_and_sooner_after_an_outage() {
        let t0 = Instant::now();
        let refresh = Duration::from_secs(600);
        let mut l = Listing::new(refresh);
        assert!(l.is_due(t0, "a"));
        l.record(t0, "a", Ok(vec![vt("ssd", true), vt("hdd", true)]));
        assert!(!l.is_due(t0 + Duration::from_secs(599), "a"));
        assert!(l.is_due(t0, "b"), "new credentials are listed at once");
        assert!(l.is_due(t0 + refresh, "a"));
        assert_eq!(
            l.next_in(t0 + Duration::from_secs(100)),
            Some(Duration::from_secs(500))
        );
        let outage = Failure {
            message: "503".into(),
            retry: Retry::Soon,
        };
        l.record(t0, "a", Err(outage.clone()));
        assert_eq!(l.next_in(t0), Some(Duration::from_secs(5)));
        assert_eq!(l.last_error(), Some(&outage));
        assert_eq!(
            l.current().map(<[_]>::len),
            Some(2),
            "the last answer is kept"
        );
        l.record(t0, "a", Ok(vec![vt("ssd", true)]));
        assert_eq!(l.gone(), ["hdd"]);
        assert!(l.last_error().is_none());
        l.record(t0, "a", Ok(vec![vt("ssd", true), vt("hdd", true)]));
        assert!(l.gone().is_empty(), "a type that came back is not gone");
    }

    #[test]
    fn a_zero_refresh_lists_once_per_set_of_credentials() {
        let t0 = Instant::now();
        let mut l = Listing::new(Duration::ZERO);
        l.record(t0, "a", Ok(vec![]));
        assert!(!l.is_due(t0 + Duration::from_secs(86_400), "a"));
        assert_eq!(l.next_in(t0), None);
        assert!(l.is_due(t0, "b"));
        l.record(
            t0,
            "a",
            Err(Failure {
                message: "timeout".into(),
                retry: Retry::Soon,
            }),
        );
        assert_eq!(
            l.next_in(t0),
            Some(Duration::from_secs(5)),
            "failures are still retried"
        );
    }
}
