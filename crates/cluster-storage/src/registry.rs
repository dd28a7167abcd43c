//! The driver registry: every CSI driver operator the CSO can start, as one declarative entry
//! each (anchors §3.2–§3.3), and the platform rule that picks them ([`select`],
//! [`drivers_for`]).
//!
//! A driver is declared once, by its own crate, as an [`operator_kit::spec::DriverSpec`]
//! (`cinder::SPEC`, with its operator assets in that crate's `assets/operator/`); adding it
//! here is one entry in [`DRIVERS`]. The names in a spec (condition prefixes, object names, env
//! vars) are OpenShift's exactly: CSO's conditions on `Storage/cluster`, the operator
//! Deployments and the image env vars are read by other tools.
//!
//! What this module must not do: read the environment, build objects or do any I/O. It only
//! says *what* exists; the steps that apply it live elsewhere.

pub use operator_kit::spec::{
    ANY_PLATFORM, CSI_OPERATOR_NAMESPACE, DriverAssets, ImageVar, OPENSTACK, Related,
    SIDECAR_IMAGE_VARS,
};

/// One CSI driver operator the CSO can start (Go `CSIOperatorConfig`), as its crate declares it.
pub use operator_kit::spec::DriverSpec as Driver;

/// OpenStack Manila (`csioperatorclient/manila.go`).
pub const MANILA: Driver = manila::SPEC;
/// OpenStack Cinder (`csioperatorclient/cinder.go`).
pub const CINDER: Driver = cinder::SPEC;

/// SMB (`smb.csi.k8s.io`, openshift/csi-operator `pkg/driver/samba`): an optional driver, not
/// in [`DRIVERS`]. OpenShift installs its operator through OLM and its CSO never starts it;
/// this CSO starts it only when the administrator opts in (`cluster-storage start
/// --optional-driver smb`, [`select_with`]).
pub const SMB: Driver = smb::SPEC;

/// The drivers started only when the administrator names them ([`select_with`]).
pub const OPTIONAL_DRIVERS: &[Driver] = &[SMB];

/// The optional driver with this [`Driver::name`], or an error that lists the known ones.
pub fn optional(name: &str) -> Result<&'static Driver, String> {
    OPTIONAL_DRIVERS
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = OPTIONAL_DRIVERS.iter().map(|d| d.name).collect();
            format!(
                "{name:?} is not an optional driver; the optional drivers are: {}",
                known.join(", ")
            )
        })
}

/// Every driver operator, in the order of the Go CSO's standalone list (Manila before Cinder).
/// The order matters: drivers start in it, and their related objects are listed in it.
pub const DRIVERS: &[Driver] = &[manila::SPEC, cinder::SPEC];

/// The driver with this [`Driver::name`] or [`Driver::cluster_csi_driver`], if registered
/// (optional drivers included).
pub fn find(name: &str) -> Option<&'static Driver> {
    DRIVERS
        .iter()
        .chain(OPTIONAL_DRIVERS)
        .find(|d| d.name == name || d.cluster_csi_driver == name)
}

/// What the CSO starts for a platform, and, when that is nothing, why (for the status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The drivers to start, in [`DRIVERS`] order.
    pub drivers: Vec<&'static Driver>,
    /// Set when no driver is started: a sentence for the administrator saying why.
    pub message: Option<String>,
}

/// The drivers for `platform` (`Infrastructure.status.platformStatus.type`; `None` when
/// `platformStatus` is missing). Go `shouldRunController` steps 1–2; Cinder and Manila are GA,
/// so no feature gate applies.
pub fn select(platform: Option<&str>) -> Selection {
    select_with(platform, &[])
}

/// [`select`], plus the optional drivers the administrator opted in to (`opted_in`, from
/// [`OPTIONAL_DRIVERS`]), on any platform, after the platform's own.
pub fn select_with(platform: Option<&str>, opted_in: &[&'static Driver]) -> Selection {
    let mut drivers: Vec<&'static Driver> = match platform {
        Some(p) if !p.is_empty() => DRIVERS.iter().filter(|d| d.platform == p).collect(),
        _ => Vec::new(),
    };
    for d in opted_in {
        if (d.platform == ANY_PLATFORM || Some(d.platform) == platform)
            && !drivers.iter().any(|x| x.name == d.name)
        {
            drivers.push(d);
        }
    }
    let message = if !drivers.is_empty() {
        None
    } else {
        Some(match platform {
            None | Some("") => "No CSI driver operator started: Infrastructure/cluster has no \
                 status.platformStatus.type; this operator starts the OpenStack Cinder and \
                 Manila driver operators when the platform is OpenStack"
                .to_owned(),
            Some(p) => format!(
                "No CSI driver operator started: the platform is {p:?}, and this operator \
                 starts driver operators only on OpenStack (Cinder and Manila)"
            ),
        })
    };
    Selection { drivers, message }
}

/// The drivers for `platform`, without the explanation (see [`select`]).
pub fn drivers_for(platform: Option<&str>) -> Vec<&'static Driver> {
    select(platform).drivers
}

#[cfg(test)]
mod tests {
    use super::*;
    use openshift_api::config::ObjectReference;
    use std::collections::HashSet;

    #[test]
    fn openstack_starts_manila_then_cinder() {
        let names: Vec<_> = drivers_for(Some("OpenStack"))
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["openstack-manila", "openstack-cinder"]);
        assert_eq!(select(Some("OpenStack")).message, None);
    }

    #[test]
    fn smb_starts_only_when_opted_in_on_any_platform() {
        let names = |s: Selection| s.drivers.iter().map(|d| d.name).collect::<Vec<_>>();
        // Not opted in: never, on any platform (OpenShift installs SMB through OLM).
        for platform in [Some("OpenStack"), Some("AWS"), None] {
            assert!(!names(select(platform)).contains(&"smb"), "{platform:?}");
        }
        let smb = optional("smb").expect("smb is optional");
        assert_eq!(
            names(select_with(Some("OpenStack"), &[smb])),
            ["openstack-manila", "openstack-cinder", "smb"]
        );
        let aws = select_with(Some("AWS"), &[smb, smb]);
        assert_eq!(aws.message, None);
        assert_eq!(names(aws), ["smb"]);
        let err = optional("nfs").unwrap_err();
        assert!(err.contains("\"nfs\"") && err.contains("smb"), "{err}");
        assert!(!DRIVERS.iter().any(|d| d.name == "smb"));
        assert_eq!(find("smb.csi.k8s.io"), Some(&SMB));
        assert!(openshift_api::operator::ClusterCSIDriver::is_valid_name(
            SMB.cluster_csi_driver
        ));
    }

    #[test]
    fn other_platforms_start_nothing_and_say_why() {
        for platform in ["AWS", "None", "openstack", "BareMetal"] {
            let s = select(Some(platform));
            assert!(s.drivers.is_empty(), "{platform}");
            let message = s.message.unwrap();
            assert!(message.contains(&format!("{platform:?}")), "{message}");
            assert!(message.contains("only on OpenStack"), "{message}");
        }
    }

    #[test]
    fn missing_platform_status_starts_nothing_and_says_why() {
        for platform in [None, Some("")] {
            let s = select(platform);
            assert!(s.drivers.is_empty());
            assert!(
                s.message
                    .unwrap()
                    .contains("has no status.platformStatus.type")
            );
        }
    }

    #[test]
    fn entries_match_openshift_names() {
        assert_eq!(CINDER.condition_prefix, "OpenStackCinder");
        assert_eq!(MANILA.condition_prefix, "Manila");
        assert_eq!(CINDER.cluster_csi_driver, "cinder.csi.openstack.org");
        assert_eq!(MANILA.cluster_csi_driver, "manila.csi.openstack.org");
        assert_eq!(
            CINDER.operator_deployment,
            "openstack-cinder-csi-driver-operator"
        );
        assert_eq!(MANILA.operator_deployment, "manila-csi-driver-operator");
        assert_eq!(CINDER.operator_namespace, "openshift-cluster-csi-drivers");
        assert_eq!(MANILA.operator_namespace, "openshift-cluster-csi-drivers");
        assert_eq!(MANILA.driver_namespace, "openshift-manila-csi-driver");
        // (allow_disabled, syncs_cloud_ca): only Manila may be disabled and runs the CA syncer.
        let flags: Vec<_> = DRIVERS
            .iter()
            .map(|d| (d.name, d.allow_disabled, d.syncs_cloud_ca))
            .collect();
        assert_eq!(
            flags,
            [
                ("openstack-manila", true, true),
                ("openstack-cinder", false, false)
            ]
        );
        // The ClusterCSIDriver names are in the CRD's name enum.
        for d in DRIVERS {
            assert!(
                openshift_api::operator::ClusterCSIDriver::is_valid_name(d.cluster_csi_driver),
                "{}",
                d.name
            );
        }
    }

    #[test]
    fn image_vars_match_cso_env() {
        let env = |d: &Driver| -> Vec<(&str, &str)> {
            d.all_image_vars()
                .map(|v| (v.placeholder, v.cso_env))
                .collect()
        };
        let cinder = env(&CINDER);
        assert_eq!(
            &cinder[..2],
            [
                (
                    "${OPERATOR_IMAGE}",
                    "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE"
                ),
                ("${DRIVER_IMAGE}", "OPENSTACK_CINDER_DRIVER_IMAGE")
            ]
        );
        let manila = env(&MANILA);
        assert_eq!(
            &manila[..3],
            [
                ("${OPERATOR_IMAGE}", "MANILA_DRIVER_OPERATOR_IMAGE"),
                ("${DRIVER_IMAGE}", "MANILA_DRIVER_IMAGE"),
                ("${NFS_DRIVER_IMAGE}", "MANILA_NFS_DRIVER_IMAGE")
            ]
        );
        for d in DRIVERS {
            let all = env(d);
            // No placeholder is filled twice, and every sidecar one is there.
            let placeholders: HashSet<_> = all.iter().map(|(p, _)| *p).collect();
            assert_eq!(placeholders.len(), all.len(), "{}", d.name);
            for sidecar in SIDECAR_IMAGE_VARS {
                assert!(placeholders.contains(sidecar.placeholder));
                // Sidecar env vars have the placeholder's name.
                assert_eq!(sidecar.placeholder, format!("${{{}}}", sidecar.cso_env));
            }
        }
    }

    #[test]
    fn registry_entries_are_unique() {
        let mut seen = HashSet::new();
        let all: Vec<&Driver> = DRIVERS.iter().chain(OPTIONAL_DRIVERS).collect();
        for d in &all {
            assert!(seen.insert(d.name));
            assert!(seen.insert(d.condition_prefix));
            assert!(seen.insert(d.cluster_csi_driver));
        }
        // Two operators sharing a lease, a Deployment, a user agent or a metrics prefix would
        // fight or be indistinguishable.
        for field in [
            |d: &Driver| d.operator_deployment,
            |d: &Driver| d.lock_name,
            |d: &Driver| d.user_agent,
            |d: &Driver| d.metrics_prefix,
            |d: &Driver| d.operand,
            |d: &Driver| d.controller_name_prefix,
        ] {
            let values: HashSet<_> = all.iter().map(|d| field(d)).collect();
            assert_eq!(values.len(), all.len(), "{values:?}");
        }
        assert_eq!(find("openstack-cinder"), Some(&CINDER));
        assert_eq!(find("manila.csi.openstack.org"), Some(&MANILA));
        assert_eq!(find("ebs.csi.aws.com"), None);
    }

    #[test]
    fn related_objects_leave_out_the_metrics_service() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            assert!(d.related_objects.iter().all(|r| r.resource != "services"));
            assert!(d.related_objects.iter().any(|r| r.resource == "serviceaccounts"
                && r.namespace == d.operator_namespace));
            // Cluster-scoped kinds carry no namespace.
            for r in d.related_objects {
                let cluster_scoped = matches!(
                    r.resource,
                    "namespaces" | "clusterroles" | "clusterrolebindings"
                );
                assert_eq!(r.namespace.is_empty(), cluster_scoped, "{r:?}");
            }
        }
        assert_eq!(
            MANILA.related_objects[0].to_object_reference(),
            ObjectReference {
                group: String::new(),
                resource: "namespaces".into(),
                namespace: String::new(),
                name: "openshift-manila-csi-driver".into()
            }
        );
        let cr = CINDER.cluster_csi_driver_reference();
        assert_eq!(
            (cr.group.as_str(), cr.resource.as_str(), cr.name.as_str()),
            (
                "operator.openshift.io",
                "clustercsidrivers",
                "cinder.csi.openstack.org"
            )
        );
    }
}
