//! The CustomResourceDefinitions of every type in this crate, embedded from `crds/*.yaml`.
//!
//! They were written from the real CRDs (openshift/api, cloud-credential-operator,
//! prometheus-operator, external-snapshotter, operator-framework/api for OLM's Subscription and
//! ClusterServiceVersion, csi-driver-manila-operator 4.5 for the old `ManilaDriver`; each file
//! names its source) with descriptions removed. The validation that matters is kept: the ClusterCSIDriver name enum, the
//! `managementState` pattern, the log-level enums with their `Normal` default,
//! `storageClassState`, list-map conditions and generations, status subresources. Tests and the
//! demo create them in kube-sim; on a real OpenShift cluster they already exist.
//!
//! These files, not the `crd()` the `CustomResource` derive generates, are the authority on the
//! schema: the derived one has no enums or defaults.
//!
//! What this module must not do: any I/O (parsing only), or panic on a bad embedded file (a
//! broken file is a [`CrdError`], and a test parses every one).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// `clustercsidrivers.operator.openshift.io`.
pub const CLUSTER_CSI_DRIVERS: &str =
    include_str!("../crds/clustercsidrivers.operator.openshift.io.yaml");
/// `storages.operator.openshift.io`.
pub const STORAGES: &str = include_str!("../crds/storages.operator.openshift.io.yaml");
/// `clusteroperators.config.openshift.io`.
pub const CLUSTER_OPERATORS: &str =
    include_str!("../crds/clusteroperators.config.openshift.io.yaml");
/// `infrastructures.config.openshift.io` (platform members other than OpenStack kept opaque).
pub const INFRASTRUCTURES: &str = include_str!("../crds/infrastructures.config.openshift.io.yaml");
/// `proxies.config.openshift.io`.
pub const PROXIES: &str = include_str!("../crds/proxies.config.openshift.io.yaml");
/// `apiservers.config.openshift.io`.
pub const APISERVERS: &str = include_str!("../crds/apiservers.config.openshift.io.yaml");
/// `credentialsrequests.cloudcredential.openshift.io`.
pub const CREDENTIALS_REQUESTS: &str =
    include_str!("../crds/credentialsrequests.cloudcredential.openshift.io.yaml");
/// `servicemonitors.monitoring.coreos.com` (minimal schema).
pub const SERVICE_MONITORS: &str =
    include_str!("../crds/servicemonitors.monitoring.coreos.com.yaml");
/// `prometheusrules.monitoring.coreos.com` (minimal schema; the CSO's release ships one).
pub const PROMETHEUS_RULES: &str =
    include_str!("../crds/prometheusrules.monitoring.coreos.com.yaml");
/// `volumesnapshotclasses.snapshot.storage.k8s.io`.
pub const VOLUME_SNAPSHOT_CLASSES: &str =
    include_str!("../crds/volumesnapshotclasses.snapshot.storage.k8s.io.yaml");
/// `subscriptions.operators.coreos.com` (OLM; nested structures kept opaque).
pub const SUBSCRIPTIONS: &str = include_str!("../crds/subscriptions.operators.coreos.com.yaml");
/// `clusterserviceversions.operators.coreos.com` (OLM; spec and status mostly opaque).
pub const CLUSTER_SERVICE_VERSIONS: &str =
    include_str!("../crds/clusterserviceversions.operators.coreos.com.yaml");
/// `maniladrivers.csi.openshift.io`, the CR of the OpenShift 4.5 Manila operator that OLM
/// installed (only clusters upgraded from 4.5 have it; the CSO deletes its `cluster` object).
pub const MANILA_DRIVERS: &str = include_str!("../crds/maniladrivers.csi.openshift.io.yaml");

/// Every CRD as `(metadata.name, yaml)`, in an order that creates OpenShift's config and
/// operator APIs first.
pub fn all() -> Vec<(&'static str, &'static str)> {
    vec![
        ("infrastructures.config.openshift.io", INFRASTRUCTURES),
        ("proxies.config.openshift.io", PROXIES),
        ("apiservers.config.openshift.io", APISERVERS),
        ("clusteroperators.config.openshift.io", CLUSTER_OPERATORS),
        ("storages.operator.openshift.io", STORAGES),
        (
            "clustercsidrivers.operator.openshift.io",
            CLUSTER_CSI_DRIVERS,
        ),
        (
            "credentialsrequests.cloudcredential.openshift.io",
            CREDENTIALS_REQUESTS,
        ),
        ("servicemonitors.monitoring.coreos.com", SERVICE_MONITORS),
        ("prometheusrules.monitoring.coreos.com", PROMETHEUS_RULES),
        (
            "volumesnapshotclasses.snapshot.storage.k8s.io",
            VOLUME_SNAPSHOT_CLASSES,
        ),
        // OLM's APIs: every OpenShift 4.x cluster with the OperatorLifecycleManager
        // capability serves them, and the CSO's OLM removal flow lists and deletes them.
        ("subscriptions.operators.coreos.com", SUBSCRIPTIONS),
        (
            "clusterserviceversions.operators.coreos.com",
            CLUSTER_SERVICE_VERSIONS,
        ),
        ("maniladrivers.csi.openshift.io", MANILA_DRIVERS),
    ]
}

/// The YAML of the CRD with this `metadata.name`, if this crate has it.
pub fn yaml(name: &str) -> Option<&'static str> {
    all().into_iter().find(|(n, _)| *n == name).map(|(_, y)| y)
}

/// A CRD that could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The YAML is not a CustomResourceDefinition.
    #[error(
        "CRD {name} is not a valid apiextensions.k8s.io/v1 CustomResourceDefinition: {message}"
    )]
    Parse {
        /// The CRD's expected name.
        name: String,
        /// The parser's message.
        message: String,
    },
    /// The YAML parsed, but under another name.
    #[error(
        "CRD file for {expected} declares metadata.name {actual:?}; the file and its name in crds::all() disagree"
    )]
    NameMismatch {
        /// The name it is listed under.
        expected: String,
        /// The name it declares.
        actual: Option<String>,
    },
}

/// Parses one CRD YAML, checking that it declares `name`.
pub fn parse(name: &str, yaml: &str) -> Result<CustomResourceDefinition, CrdError> {
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(yaml).map_err(|e| CrdError::Parse {
            name: name.to_owned(),
            message: e.to_string(),
        })?;
    if crd.metadata.name.as_deref() != Some(name) {
        return Err(CrdError::NameMismatch {
            expected: name.to_owned(),
            actual: crd.metadata.name.clone(),
        });
    }
    Ok(crd)
}

/// Every CRD, parsed, in the order of [`all`].
pub fn parsed() -> Result<Vec<CustomResourceDefinition>, CrdError> {
    all().into_iter().map(|(n, y)| parse(n, y)).collect()
}

/// The parsed CRD with this name; `Ok(None)` if this crate has no such CRD.
pub fn get(name: &str) -> Result<Option<CustomResourceDefinition>, CrdError> {
    yaml(name).map(|y| parse(name, y)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_parses_under_its_name() {
        let crds = parsed().unwrap();
        assert_eq!(crds.len(), all().len());
        for ((name, _), crd) in all().iter().zip(&crds) {
            assert_eq!(crd.metadata.name.as_deref(), Some(*name));
            let v = crd.spec.versions.first().unwrap();
            assert!(v.served && v.storage, "{name}");
            assert!(v.schema.is_some(), "{name} has a schema");
        }
    }

    #[test]
    fn crds_match_the_rust_types() {
        use kube::Resource;
        fn check<K: Resource<DynamicType = ()>>(crd: &CustomResourceDefinition, namespaced: bool) {
            assert_eq!(crd.spec.group, K::group(&()));
            assert_eq!(crd.spec.names.kind, K::kind(&()));
            assert_eq!(crd.spec.names.plural, K::plural(&()));
            assert_eq!(
                crd.spec.scope,
                if namespaced { "Namespaced" } else { "Cluster" }
            );
            assert!(crd.spec.versions.iter().any(|v| v.name == K::version(&())));
        }
        let g = |n: &str| get(n).unwrap().unwrap();
        check::<crate::ClusterCSIDriver>(&g("clustercsidrivers.operator.openshift.io"), false);
        check::<crate::Storage>(&g("storages.operator.openshift.io"), false);
        check::<crate::ClusterOperator>(&g("clusteroperators.config.openshift.io"), false);
        check::<crate::Infrastructure>(&g("infrastructures.config.openshift.io"), false);
        check::<crate::Proxy>(&g("proxies.config.openshift.io"), false);
        check::<crate::APIServer>(&g("apiservers.config.openshift.io"), false);
        check::<crate::CredentialsRequest>(
            &g("credentialsrequests.cloudcredential.openshift.io"),
            true,
        );
        check::<crate::ServiceMonitor>(&g("servicemonitors.monitoring.coreos.com"), true);
        check::<crate::VolumeSnapshotClass>(
            &g("volumesnapshotclasses.snapshot.storage.k8s.io"),
            false,
        );
        assert!(get("widgets.example.com").unwrap().is_none());
    }

    #[test]
    fn cluster_csi_driver_crd_keeps_the_validation_that_matters() {
        let crd = get("clustercsidrivers.operator.openshift.io")
            .unwrap()
            .unwrap();
        let v = crd.spec.versions.first().unwrap();
        assert!(
            v.subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
        let schema = serde_json::to_value(
            v.schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .unwrap(),
        )
        .unwrap();
        let names = &schema["properties"]["metadata"]["properties"]["name"]["enum"];
        assert_eq!(
            names.as_array().map(Vec::len),
            Some(crate::operator::CLUSTER_CSI_DRIVER_NAMES.len())
        );
        for n in crate::operator::CLUSTER_CSI_DRIVER_NAMES {
            assert!(
                names.as_array().unwrap().contains(&serde_json::json!(n)),
                "{n}"
            );
        }
        let spec = &schema["properties"]["spec"]["properties"];
        assert_eq!(
            spec["managementState"]["pattern"],
            "^(Managed|Unmanaged|Force|Removed)$"
        );
        for f in ["logLevel", "operatorLogLevel"] {
            assert_eq!(spec[f]["default"], "Normal");
            assert_eq!(
                spec[f]["enum"],
                serde_json::json!(["", "Normal", "Debug", "Trace", "TraceAll"])
            );
        }
        assert_eq!(
            spec["storageClassState"]["enum"],
            serde_json::json!(["", "Managed", "Unmanaged", "Removed"])
        );
        let status = &schema["properties"]["status"]["properties"];
        assert_eq!(status["conditions"]["x-kubernetes-list-type"], "map");
        assert_eq!(
            status["conditions"]["x-kubernetes-list-map-keys"],
            serde_json::json!(["type"])
        );
        assert_eq!(status["generations"]["x-kubernetes-list-type"], "map");
    }

    /// The (group, kind, plural, scope, short names, version) of the OLM and old-Manila CRDs as
    /// upstream declares them: the CSO addresses them by these names.
    #[test]
    fn olm_and_old_manila_crds_have_upstream_names_and_scope() {
        let cases: [(&str, &str, &str, &str, &[&str]); 3] = [
            (
                "subscriptions.operators.coreos.com",
                "Subscription",
                "subscriptions",
                "Namespaced",
                &["sub", "subs"],
            ),
            (
                "clusterserviceversions.operators.coreos.com",
                "ClusterServiceVersion",
                "clusterserviceversions",
                "Namespaced",
                &["csv", "csvs"],
            ),
            (
                "maniladrivers.csi.openshift.io",
                "ManilaDriver",
                "maniladrivers",
                "Cluster",
                &[],
            ),
        ];
        let all_crds = parsed().unwrap();
        for (name, kind, plural, scope, short) in cases {
            let crd = get(name).unwrap().unwrap();
            assert!(
                all_crds
                    .iter()
                    .any(|c| c.metadata.name.as_deref() == Some(name)),
                "{name} is in parsed(), so every testbed cluster gets it"
            );
            let group = name.split_once('.').map(|(_, g)| g).unwrap();
            assert_eq!(crd.spec.group, group, "{name}");
            assert_eq!(crd.spec.names.kind, kind, "{name}");
            assert_eq!(crd.spec.names.plural, plural, "{name}");
            assert_eq!(
                crd.spec.names.list_kind.as_deref(),
                Some(&*format!("{kind}List"))
            );
            assert_eq!(crd.spec.scope, scope, "{name}");
            assert_eq!(
                crd.spec.names.short_names.clone().unwrap_or_default(),
                short.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{name}"
            );
            assert_eq!(crd.spec.versions.len(), 1, "{name}");
            let v = &crd.spec.versions[0];
            assert_eq!(v.name, "v1alpha1", "{name}");
            assert!(
                v.subresources
                    .as_ref()
                    .and_then(|s| s.status.as_ref())
                    .is_some(),
                "{name} has the status subresource"
            );
        }
    }

    fn schema_of(name: &str) -> serde_json::Value {
        let crd = get(name).unwrap().unwrap();
        let v = crd.spec.versions.first().unwrap();
        serde_json::to_value(
            v.schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn subscription_crd_types_the_fields_the_cso_reads() {
        let schema = schema_of("subscriptions.operators.coreos.com");
        let spec = &schema["properties"]["spec"];
        assert_eq!(
            spec["required"],
            serde_json::json!(["name", "source", "sourceNamespace"])
        );
        for f in [
            "name",
            "source",
            "sourceNamespace",
            "channel",
            "installPlanApproval",
            "startingCSV",
        ] {
            assert_eq!(spec["properties"][f]["type"], "string", "spec.{f}");
        }
        let status = &schema["properties"]["status"];
        assert_eq!(status["required"], serde_json::json!(["lastUpdated"]));
        for f in ["currentCSV", "installedCSV", "state"] {
            assert_eq!(status["properties"][f]["type"], "string", "status.{f}");
        }
        let v = get("subscriptions.operators.coreos.com")
            .unwrap()
            .unwrap()
            .spec
            .versions
            .remove(0);
        let columns: Vec<_> = v
            .additional_printer_columns
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.name, c.json_path))
            .collect();
        assert_eq!(
            columns,
            [
                ("Package".to_string(), ".spec.name".to_string()),
                ("Source".to_string(), ".spec.source".to_string()),
                ("Channel".to_string(), ".spec.channel".to_string()),
            ]
        );
    }

    #[test]
    fn csv_and_manila_driver_crds_keep_upstream_validation() {
        let csv = schema_of("clusterserviceversions.operators.coreos.com");
        assert_eq!(
            csv["properties"]["spec"]["required"],
            serde_json::json!(["displayName", "install"])
        );
        assert_eq!(
            csv["properties"]["spec"]["properties"]["install"]["required"],
            serde_json::json!(["strategy"])
        );
        assert_eq!(
            csv["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        let manila = schema_of("maniladrivers.csi.openshift.io");
        assert_eq!(
            manila["properties"]["metadata"]["properties"]["name"]["enum"],
            serde_json::json!(["cluster"])
        );
        for part in ["spec", "status"] {
            assert_eq!(
                manila["properties"][part]["x-kubernetes-preserve-unknown-fields"], true,
                "{part}"
            );
        }
    }

    #[test]
    fn broken_yaml_is_an_error_naming_the_crd() {
        let err = parse("x.example.com", "kind: [").unwrap_err();
        assert!(
            err.to_string().contains("CRD x.example.com is not a valid"),
            "{err}"
        );
        let err = parse("x.example.com", STORAGES).unwrap_err();
        assert!(matches!(err, CrdError::NameMismatch { .. }), "{err}");
    }
}
