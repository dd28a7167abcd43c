//! Who owns the `CSIDriver` a driver operator would write: us, nobody yet, or someone else
//! (typically the upstream Helm chart of cloud-provider-openstack installed by hand).
//!
//! OpenShift's CSO checks for a foreign CSIDriver only for tech-preview drivers (anchors §3.2
//! step 3); for Cinder and Manila the driver operator simply overwrites it, which silently
//! takes over a driver the administrator installed. Here the check applies to every driver:
//! a foreign CSIDriver stops the CSO from starting that driver's operator, the status says
//! why and how to proceed, and the take-over happens only once the administrator annotates the
//! CSIDriver with [`TAKE_OVER_ANNOTATION`]`: "true"`.
//!
//! Pure: callers pass the object they read from their cache.

use std::collections::BTreeMap;

use crate::registry::Driver;

/// The annotation every OpenShift-managed CSIDriver carries (the driver operators' assets set
/// it; Go CSO's foreign-driver rule reads it).
pub const MANAGED_ANNOTATION: &str = "csi.openshift.io/managed";

/// The administrator's opt-in: a foreign CSIDriver annotated with this, value `"true"`, is
/// taken over by the driver operator (overwritten with OpenShift's settings).
pub const TAKE_OVER_ANNOTATION: &str = "csi.openshift.io/take-over";

/// The reason of `CSIDriverStarterDegraded` while a foreign CSIDriver keeps a driver from
/// starting.
pub const FOREIGN_CSI_DRIVER_REASON: &str = "ForeignCSIDriver";

/// The state of the driver's CSIDriver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// No CSIDriver of that name.
    Absent,
    /// Ours: it carries [`MANAGED_ANNOTATION`].
    Managed,
    /// Someone else's, and the administrator allowed the take-over.
    TakeOverAllowed,
    /// Someone else's; `installed_by` names the installer when its labels say (Helm).
    Foreign {
        /// E.g. `Helm release openstack-cinder-csi in kube-system`.
        installed_by: Option<String>,
    },
}

impl Owner {
    /// Whether the driver operator may be started.
    pub fn may_start(&self) -> bool {
        !matches!(self, Owner::Foreign { .. })
    }
}

/// Classifies a CSIDriver from whether it exists and its labels and annotations.
pub fn classify(
    present: bool,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Owner {
    if !present {
        return Owner::Absent;
    }
    if annotations.contains_key(MANAGED_ANNOTATION) {
        return Owner::Managed;
    }
    if annotations
        .get(TAKE_OVER_ANNOTATION)
        .is_some_and(|v| v == "true")
    {
        return Owner::TakeOverAllowed;
    }
    let release = annotations.get("meta.helm.sh/release-name");
    let release_ns = annotations.get("meta.helm.sh/release-namespace");
    let installed_by = match (release, release_ns) {
        (Some(r), Some(ns)) => Some(format!("Helm release {r} in namespace {ns}")),
        (Some(r), None) => Some(format!("Helm release {r}")),
        _ => labels
            .get("app.kubernetes.io/managed-by")
            .or_else(|| labels.get("helm.sh/chart"))
            .cloned(),
    };
    Owner::Foreign { installed_by }
}

/// The `CSIDriverStarterDegraded` message for a foreign CSIDriver.
pub fn foreign_message(driver: &Driver, installed_by: Option<&str>) -> String {
    let by = installed_by
        .map(|b| format!(" (installed by {b})"))
        .unwrap_or_default();
    format!(
        "CSIDriver {name} already exists and was not installed by OpenShift{by}; the {driver} \
         driver operator is not started so that it does not overwrite it. Uninstall the other \
         driver, or let OpenShift take it over with: oc annotate csidriver {name} \
         {TAKE_OVER_ANNOTATION}=true",
        name = driver.cluster_csi_driver,
        driver = driver.name,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::CINDER;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn absent_and_managed_drivers_may_start() {
        let none = BTreeMap::new();
        assert_eq!(classify(false, &none, &none), Owner::Absent);
        let ours = map(&[(MANAGED_ANNOTATION, "true")]);
        assert_eq!(classify(true, &none, &ours), Owner::Managed);
        assert!(Owner::Absent.may_start() && Owner::Managed.may_start());
    }

    #[test]
    fn a_foreign_driver_blocks_until_the_opt_in_says_exactly_true() {
        let labels = map(&[("app.kubernetes.io/managed-by", "Helm")]);
        let helm = map(&[
            ("meta.helm.sh/release-name", "cinder-csi"),
            ("meta.helm.sh/release-namespace", "kube-system"),
        ]);
        let owner = classify(true, &labels, &helm);
        assert_eq!(
            owner,
            Owner::Foreign {
                installed_by: Some("Helm release cinder-csi in namespace kube-system".into())
            }
        );
        assert!(!owner.may_start());
        let mut opted = helm.clone();
        opted.insert(TAKE_OVER_ANNOTATION.into(), "yes".into());
        assert!(
            !classify(true, &labels, &opted).may_start(),
            "only \"true\" opts in"
        );
        opted.insert(TAKE_OVER_ANNOTATION.into(), "true".into());
        assert_eq!(classify(true, &labels, &opted), Owner::TakeOverAllowed);
        assert_eq!(
            classify(true, &labels, &BTreeMap::new()),
            Owner::Foreign {
                installed_by: Some("Helm".into())
            }
        );
        assert_eq!(
            classify(true, &BTreeMap::new(), &BTreeMap::new()),
            Owner::Foreign { installed_by: None }
        );
    }

    #[test]
    fn the_message_says_what_blocks_and_how_to_opt_in() {
        let m = foreign_message(&CINDER, Some("Helm release x in namespace y"));
        for part in [
            "CSIDriver cinder.csi.openstack.org already exists",
            "(installed by Helm release x in namespace y)",
            "openstack-cinder driver operator is not started",
            "oc annotate csidriver cinder.csi.openstack.org csi.openshift.io/take-over=true",
        ] {
            assert!(m.contains(part), "{m}");
        }
    }
}
