//! `operator.openshift.io/v1` resources: `ClusterCSIDriver` (one per CSI driver, named after the
//! driver) and `Storage` (the singleton `cluster` that CSO reports on).
//!
//! Both are read *and written* by our operators (spec.observedConfig, status), so every spec and
//! status struct keeps the fields it does not model in `extra`, and unknown enum values stay
//! verbatim (see the `string_enum` module).
//!
//! What this module must not do: any I/O, or validation that belongs to the server (the CRDs in
//! [`crate::crds`] carry the name enum and the patterns).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{OperatorSpec, OperatorStatus};
use crate::string_enum::string_enum;

/// `metadata.name` of the OpenStack Cinder `ClusterCSIDriver`.
pub const CINDER_DRIVER_NAME: &str = "cinder.csi.openstack.org";
/// `metadata.name` of the OpenStack Manila `ClusterCSIDriver`.
pub const MANILA_DRIVER_NAME: &str = "manila.csi.openstack.org";
/// `metadata.name` of the `Storage` singleton.
pub const STORAGE_NAME: &str = "cluster";

/// The names the `ClusterCSIDriver` CRD accepts (its `metadata.name` enum), in its order.
pub const CLUSTER_CSI_DRIVER_NAMES: &[&str] = &[
    "ebs.csi.aws.com",
    "efs.csi.aws.com",
    "disk.csi.azure.com",
    "file.csi.azure.com",
    "filestore.csi.storage.gke.io",
    "pd.csi.storage.gke.io",
    CINDER_DRIVER_NAME,
    "csi.vsphere.vmware.com",
    MANILA_DRIVER_NAME,
    "csi.kubevirt.io",
    "csi.sharedresource.openshift.io",
    "diskplugin.csi.alibabacloud.com",
    "vpc.block.csi.ibm.io",
    "powervs.csi.ibm.com",
    "secrets-store.csi.k8s.io",
    "smb.csi.k8s.io",
];

string_enum! {
    /// `spec.storageClassState` (enum `"" Managed Unmanaged Removed`; empty means Managed).
    pub enum StorageClassState {
        /// The empty string the enum allows; it means `Managed`.
        Unset = "",
        /// The operator creates and enforces its StorageClasses.
        Managed = "Managed",
        /// The operator creates missing StorageClasses but does not overwrite them.
        Unmanaged = "Unmanaged",
        /// The operator deletes its StorageClasses.
        Removed = "Removed",
    }
}

string_enum! {
    /// `spec.driverConfig.driverType`. There is no OpenStack member.
    #[derive(Default)]
    pub enum DriverType {
        #[default]
        /// No driver-specific configuration.
        Unset = "",
        /// `aws`.
        Aws = "AWS",
        /// `azure`.
        Azure = "Azure",
        /// `gcp`.
        Gcp = "GCP",
        /// `ibmcloud`.
        IbmCloud = "IBMCloud",
        /// `vSphere`.
        VSphere = "vSphere",
        /// `secretsStore`.
        SecretsStore = "SecretsStore",
    }
}

/// `spec.driverConfig`: a union on `driverType`. The members (`aws`, `azure`, `vSphere`, …) are
/// of no interest to the OpenStack operators and are kept opaque in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriverConfig {
    /// Required by the CRD whenever `driverConfig` is present; `""` for none.
    #[serde(default)]
    pub driver_type: DriverType,
    /// The union members and any other field, kept for the write back.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Spec of a [`ClusterCSIDriver`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.openshift.io",
    version = "v1",
    kind = "ClusterCSIDriver",
    plural = "clustercsidrivers",
    status = "OperatorStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCSIDriverSpec {
    /// The common operator fields (management state, log levels, observed config…).
    #[serde(flatten)]
    pub operator: OperatorSpec,
    /// Whether the operator manages its StorageClasses. Cinder only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_state: Option<StorageClassState>,
    /// Driver-specific configuration (no OpenStack member exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_config: Option<DriverConfig>,
    /// Spec fields this crate does not model (a newer openshift/api), kept for the write back.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl ClusterCSIDriverSpec {
    /// A spec as CSO creates it: the given management state and both log levels.
    pub fn new(
        management_state: crate::common::ManagementState,
        log_level: crate::common::LogLevel,
    ) -> Self {
        ClusterCSIDriverSpec {
            operator: OperatorSpec {
                management_state: Some(management_state),
                log_level: Some(log_level.clone()),
                operator_log_level: Some(log_level),
                ..OperatorSpec::default()
            },
            ..ClusterCSIDriverSpec::default()
        }
    }

    /// The StorageClass state: absent or `""` reads as `Managed`; an unknown value is returned
    /// as `Unknown` for the caller to report.
    pub fn storage_class_state(&self) -> StorageClassState {
        match &self.storage_class_state {
            None | Some(StorageClassState::Unset) => StorageClassState::Managed,
            Some(other) => other.clone(),
        }
    }
}

impl ClusterCSIDriver {
    /// Whether `name` is accepted by the CRD's `metadata.name` enum.
    pub fn is_valid_name(name: &str) -> bool {
        CLUSTER_CSI_DRIVER_NAMES.contains(&name)
    }
}

string_enum! {
    /// `Storage.spec.vsphereStorageDriver` (irrelevant on OpenStack; kept for the write back).
    pub enum VsphereStorageDriver {
        /// Not set.
        Unset = "",
        /// Forbidden by the CRD's CEL rule since 4.14.
        LegacyDeprecatedInTreeDriver = "LegacyDeprecatedInTreeDriver",
        /// The CSI driver with migration.
        CsiWithMigrationDriver = "CSIWithMigrationDriver",
    }
}

/// Spec of the [`Storage`] singleton (`cluster`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.openshift.io",
    version = "v1",
    kind = "Storage",
    plural = "storages",
    status = "OperatorStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// The common operator fields; CSO reads `logLevel` for the driver operators.
    #[serde(flatten)]
    pub operator: OperatorSpec,
    /// vSphere only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsphere_storage_driver: Option<VsphereStorageDriver>,
    /// Spec fields this crate does not model, kept for the write back.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{LogLevel, ManagementState};
    use serde_json::json;

    #[test]
    fn spec_round_trips_unmodelled_fields() {
        let v = json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "ClusterCSIDriver",
            "metadata": {"name": CINDER_DRIVER_NAME},
            "spec": {
                "managementState": "Managed",
                "logLevel": "Debug",
                "operatorLogLevel": "Normal",
                "observedConfig": {"targetcsiconfig": {"proxy": {"HTTP_PROXY": "http://p:3128"}}},
                "unsupportedConfigOverrides": {"x": [1, 2]},
                "storageClassState": "Unmanaged",
                "driverConfig": {"driverType": "", "vSphere": {"topologyCategories": ["a"]}},
                "futureSpecField": {"deep": true}
            }
        });
        let cr: ClusterCSIDriver = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(cr.spec.operator.log_level(), LogLevel::Debug);
        assert_eq!(cr.spec.storage_class_state(), StorageClassState::Unmanaged);
        assert_eq!(
            cr.spec.extra.get("futureSpecField"),
            Some(&json!({"deep": true}))
        );
        assert_eq!(serde_json::to_value(&cr).unwrap(), v);
    }

    #[test]
    fn unknown_storage_class_state_is_kept_and_reported() {
        let spec: ClusterCSIDriverSpec =
            serde_json::from_value(json!({"storageClassState": "Sometimes"})).unwrap();
        assert_eq!(
            spec.storage_class_state(),
            StorageClassState::Unknown("Sometimes".into())
        );
        let spec: ClusterCSIDriverSpec =
            serde_json::from_value(json!({"storageClassState": ""})).unwrap();
        assert_eq!(spec.storage_class_state(), StorageClassState::Managed);
        assert_eq!(
            ClusterCSIDriverSpec::default().storage_class_state(),
            StorageClassState::Managed
        );
    }

    #[test]
    fn new_spec_is_what_cso_creates() {
        let spec = ClusterCSIDriverSpec::new(ManagementState::Managed, LogLevel::Normal);
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            json!({"managementState": "Managed", "logLevel": "Normal", "operatorLogLevel": "Normal"})
        );
    }

    #[test]
    fn names_follow_the_crd_enum() {
        assert!(ClusterCSIDriver::is_valid_name(CINDER_DRIVER_NAME));
        assert!(ClusterCSIDriver::is_valid_name(MANILA_DRIVER_NAME));
        assert!(!ClusterCSIDriver::is_valid_name("cinder"));
    }

    #[test]
    fn wrong_types_are_errors_not_panics() {
        for bad in [
            json!({"metadata": {"name": "x"}, "spec": "Managed"}),
            json!({"metadata": {"name": "x"}, "spec": {"logLevel": ["Debug"]}}),
            json!({"metadata": {"name": "x"}, "spec": {}, "status": {"readyReplicas": "two"}}),
            json!({"metadata": {"name": "x"}, "spec": {}, "status": {"conditions": {}}}),
            json!({"metadata": {"name": "x"}}),
        ] {
            assert!(
                serde_json::from_value::<ClusterCSIDriver>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn storage_round_trips() {
        let v = json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "Storage",
            "metadata": {"name": STORAGE_NAME},
            "spec": {"managementState": "Managed", "logLevel": "Normal", "operatorLogLevel": "Normal",
                     "vsphereStorageDriver": "CSIWithMigrationDriver"},
            "status": {"readyReplicas": 0}
        });
        let s: Storage = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            s.spec.vsphere_storage_driver,
            Some(VsphereStorageDriver::CsiWithMigrationDriver)
        );
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
    }
}

#[cfg(test)]
mod derived_crd_tests {
    use kube::CustomResourceExt;

    /// The derive's generated `crd()` is not what we ship (see `crds`), but it must not panic
    /// for anyone who calls it.
    #[test]
    fn derived_crds_generate() {
        for crd in [
            super::ClusterCSIDriver::crd(),
            super::Storage::crd(),
            crate::ClusterOperator::crd(),
            crate::Infrastructure::crd(),
            crate::Proxy::crd(),
            crate::APIServer::crd(),
            crate::CredentialsRequest::crd(),
            crate::ServiceMonitor::crd(),
        ] {
            assert!(crd.metadata.name.is_some());
        }
    }
}
