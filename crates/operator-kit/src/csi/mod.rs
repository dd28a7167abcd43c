//! The reconcile every CSI driver operator runs, with the driver as a description.
//!
//! A driver says who it is (its ClusterCSIDriver's name, its operand name, condition types it
//! retires), how to read its facts, which static asset groups it has, how to build its
//! controller Deployment, node DaemonSets and VolumeSnapshotClass, and which steps of its own
//! run at fixed points ([`Driver`]). The kit owns the rest, in this order: read and decode the
//! CR once, follow `spec.operatorLogLevel`, remove retired conditions, the management state,
//! `LoggingSyncerDegraded`, [`Driver::prepare`], the observed config, [`Driver::configure`],
//! the static groups, [`Driver::before_workloads`], the controller and node services,
//! [`Driver::after_workloads`], the snapshot class, and one status write. A step returns
//! `Result<_, StepError>` and [`Pass::post`] turns it into its `<Prefix>Degraded` condition.
//!
//! The sidecar and RBAC YAML every driver ships (ServiceAccounts, kube-rbac-proxy, leader
//! election, Prometheus and privileged-SCC roles, the sidecars' bindings) is the kit's, filled
//! with the driver's prefixes at compile time: see [`shared`] for how a driver opts into each.
//!
//! docs/architecture.md walks through adding a driver.

pub mod default_class;
mod facts;
mod operator;
pub mod shared;
mod step;
mod type_classes;
mod workloads;

use std::collections::BTreeMap;
use std::future::Future;

use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use openshift_api::operator::ClusterCSIDriver;

use crate::conditions::{self, OperatorCondition};
use crate::desired::{BuildError, Desired};
use crate::hooks::TopologyMode;
use crate::loglevel::LogLevel;
use crate::observed_config::ServingInfo;

pub use facts::{Facts, Mounts};
pub use operator::{
    CommonOptions, CsiOperator, DriverOptions, EXTRA_CLASSES_PREFIX, Kit, Settings,
    SettingsFailure, SettingsFailures,
};
pub use step::{Hold, Pass, StepBoard, StepError};
pub use type_classes::{ClassError, ClassesFailed, Offered, TypeClasses};

/// The CRD that must be served before a VolumeSnapshotClass can be applied.
pub const VOLUME_SNAPSHOT_CLASS_CRD: &str = "volumesnapshotclasses.snapshot.storage.k8s.io";
/// The CRD whose presence decides whether a driver's ServiceMonitor is applied.
pub const SERVICE_MONITOR_CRD: &str = "servicemonitors.monitoring.coreos.com";

/// The watches every driver operator needs for what the kit reads, whatever the driver: its
/// ClusterCSIDriver `cr_name`, the cluster singletons (Infrastructure decides OpenShift or plain
/// Kubernetes, topology and cluster ID; Proxy and APIServer feed the config observer) and the
/// CRDs that gate the VolumeSnapshotClass and the ServiceMonitor. A driver adds its own
/// namespaces and objects; forgetting one of these would make it run as plain Kubernetes
/// without a word, which is why the kit registers them.
pub fn base_watches(
    builder: crate::cache::CacheBuilder,
    cr_name: &str,
) -> crate::cache::CacheBuilder {
    let ar = crate::kinds::known;
    let crd = ar("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    builder
        .cluster_object(&ar("operator.openshift.io/v1", "ClusterCSIDriver"), cr_name)
        .cluster_object(&ar("config.openshift.io/v1", "Infrastructure"), "cluster")
        .cluster_object(&ar("config.openshift.io/v1", "Proxy"), "cluster")
        .cluster_object(&ar("config.openshift.io/v1", "APIServer"), "cluster")
        .cluster_object(&crd, VOLUME_SNAPSHOT_CLASS_CRD)
        .cluster_object(&crd, SERVICE_MONITOR_CRD)
}

/// The condition prefixes of a driver's four standard steps, from its controller name prefix
/// (`OpenStackCinder`, `Samba`), as library-go names the controllers of a CSI driver operator:
/// `<prefix>DriverControllerServiceController`, `<prefix>DriverNodeServiceController`,
/// `<prefix>DriverControlPlaneStaticResourcesController` and
/// `<prefix>DriverGuestStaticResourcesController`. Alerts and users' tooling read these names,
/// so a driver does not spell them itself.
#[macro_export]
macro_rules! condition_prefixes {
    ($prefix:literal) => {
        /// `<prefix>DriverControllerServiceController`: the controller Deployment's step.
        pub const CONTROLLER_PREFIX: &str = concat!($prefix, "DriverControllerServiceController");
        /// `<prefix>DriverNodeServiceController`: the node DaemonSet's step.
        pub const NODE_PREFIX: &str = concat!($prefix, "DriverNodeServiceController");
        /// `<prefix>DriverControlPlaneStaticResourcesController`: the control-plane objects.
        pub const CP_STATIC_PREFIX: &str =
            concat!($prefix, "DriverControlPlaneStaticResourcesController");
        /// `<prefix>DriverGuestStaticResourcesController`: the guest (node-side) objects.
        pub const GUEST_STATIC_PREFIX: &str =
            concat!($prefix, "DriverGuestStaticResourcesController");
    };
}

/// Condition prefix of the snapshot-class step.
pub const SNAPSHOT_CLASS_PREFIX: &str = "VolumeSnapshotClassController";
/// Condition prefix of the log-level check (named after library-go's LoggingSyncer, which only
/// emitted a warning Event for an unknown value).
pub const LOGGING_PREFIX: &str = "LoggingSyncer";

/// What a driver's builders need that every driver reads the same way.
#[derive(Debug, Clone, Default)]
pub struct BaseFacts {
    /// The driver namespace.
    pub namespace: String,
    /// Image env vars and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// Infrastructure `status.infrastructureName` (or the `--cluster-id` flag).
    pub cluster_id: String,
    pub topology: TopologyMode,
    /// No Infrastructure object: plain Kubernetes, where the controller's control-plane
    /// placement follows Kubernetes' node labels ([`crate::hooks::kubernetes_control_plane`]).
    pub kubernetes: bool,
    /// The ClusterCSIDriver's `spec.logLevel` (operands' verbosity).
    pub log_level: LogLevel,
    /// Observed proxy env (`HTTP_PROXY`, …).
    pub proxy: BTreeMap<String, String>,
    /// Observed TLS settings for kube-rbac-proxy.
    pub serving: ServingInfo,
    /// Set when the operator runs in a hosted control plane (`--guest-kubeconfig`): the
    /// controller Deployment and the control-plane objects go to the management cluster's
    /// control-plane namespace (`namespace`), the rest to the guest (`node_namespace`).
    pub hosted: Option<crate::hosted::Hosted>,
    /// The namespace of the guest-side objects (`${NODE_NAMESPACE}`); equal to `namespace`
    /// when standalone.
    pub node_namespace: String,
}

impl BaseFacts {
    /// Facts with every image of `placeholders` (and `OPERATOR_IMAGE_VERSION`) set, for what
    /// does not depend on values (the names and kinds a driver writes, which its watches need).
    pub fn placeholder(
        namespace: &str,
        images: &BTreeMap<String, String>,
        placeholders: &[&str],
    ) -> Self {
        let mut images = images.clone();
        for name in placeholders.iter().chain(&["OPERATOR_IMAGE_VERSION"]) {
            images
                .entry(name.to_string())
                .or_insert_with(|| "placeholder".to_string());
        }
        Self {
            namespace: namespace.to_string(),
            node_namespace: namespace.to_string(),
            images,
            cluster_id: "placeholder".into(),
            ..Self::default()
        }
    }

    /// These facts with the node side in `node_namespace`, hosted when `hosted` is set.
    pub fn with_node_side(
        mut self,
        node_namespace: &str,
        hosted: Option<crate::hosted::Hosted>,
    ) -> Self {
        self.node_namespace = node_namespace.to_string();
        self.hosted = hosted;
        self
    }
}

/// Registers with `builder` every object a driver writes (`objects`, built from
/// [`BaseFacts::placeholder`] facts: names and kinds do not depend on values) except Secrets,
/// which a driver watches by name with those it reads; with cert-manager (`cert_manager`),
/// also what the metrics certificates' requests need.
pub fn watch_written(
    mut builder: crate::cache::CacheBuilder,
    objects: Vec<Desired>,
    cert_manager: bool,
) -> crate::cache::CacheBuilder {
    if cert_manager {
        let requests = crate::metrics_cert::requests(&objects);
        builder =
            crate::cert_manager::register(builder, requests.iter().map(|r| r.namespace.as_str()));
    }
    for d in objects {
        if d.resource.kind != "Secret" {
            builder = builder.object(&d.resource, &d.object);
        }
    }
    builder
}

impl BaseFacts {
    /// Facts of a made-up standalone OpenShift cluster (`mycluster-x7k2p`, highly available,
    /// intermediate TLS) with every image of `placeholders` at `registry.example/<name>:1`:
    /// what builders' unit tests start from.
    pub fn example(namespace: &str, placeholders: &[&str]) -> Self {
        let images = placeholders
            .iter()
            .map(|name| {
                (
                    name.to_string(),
                    format!("registry.example/{}:1", name.to_lowercase()),
                )
            })
            .collect();
        Self {
            namespace: namespace.to_string(),
            images,
            cluster_id: "mycluster-x7k2p".into(),
            topology: TopologyMode::HighlyAvailable,
            serving: ServingInfo::intermediate(),
            ..Self::default()
        }
    }
}

/// A static-resources group: objects applied together under one `<prefix>Degraded`.
pub struct Group {
    pub prefix: &'static str,
    pub objects: Result<Vec<Desired>, BuildError>,
}

/// The controller Deployment or a node DaemonSet, with the prefix of its conditions.
pub struct Workload {
    pub prefix: &'static str,
    /// The object's name in the driver namespace.
    pub name: &'static str,
    pub desired: Result<Desired, BuildError>,
}

impl Workload {
    /// The workload `name`, built as `desired`, whose step posts conditions under `prefix`.
    pub fn new(
        prefix: &'static str,
        name: &'static str,
        desired: Result<Desired, BuildError>,
    ) -> Self {
        Self {
            prefix,
            name,
            desired,
        }
    }
}

/// What becomes of a reconcile after [`Driver::prepare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Run every step.
    Continue,
    /// Write the status posted so far and stop (e.g. the driver is disabled).
    StatusOnly,
    /// Stop without any write (e.g. nothing is known yet that is worth one).
    Stop,
}

/// A CSI driver operator, described. Steps of its own get the [`Kit`] (client, cache, apply
/// engine, metrics) and the [`Pass`] (CR, board); they post conditions with [`Pass::post`].
pub trait Driver: Send + Sync + 'static {
    /// What only this driver's builders take, beside the kit's [`Facts`] (`Facts::driver`).
    type Own: Send + Sync + Default;
    /// What the driver's pods mount: the kit reads them into [`Facts`].
    const MOUNTS: Mounts;
    /// The ClusterCSIDriver's name (`cinder.csi.openstack.org`).
    const CR_NAME: &'static str;
    /// The operator in ManagementStateDegraded messages (`OpenStackCinderCSIDriver`).
    const OPERAND: &'static str;
    /// The Go operator's controller name prefix (`OpenStackCinder`): hosted, the version
    /// recording is `<prefix>DeploymentVersionController`, as library-go names it.
    const CONTROLLER_NAME_PREFIX: &'static str;
    /// Condition types only an earlier operator wrote: removed on every reconcile.
    const RETIRED_CONDITIONS: &'static [&'static str] = &[];

    /// The driver's own facts, from its own reads of the cache (nothing by default).
    fn own_facts(&self, _kit: &Kit, _base: &BaseFacts) -> Self::Own {
        Self::Own::default()
    }
    /// The static-resources groups, applied in this order.
    fn static_groups(&self, kit: &Kit, facts: &Facts<Self::Own>) -> Vec<Group>;
    /// The controller Deployment.
    fn controller(&self, facts: &Facts<Self::Own>) -> Workload;
    /// The node DaemonSets.
    fn daemonsets(&self, facts: &Facts<Self::Own>) -> Vec<Workload>;
    /// The VolumeSnapshotClass, applied once its CRD is served. A driver without one (SMB: its
    /// CSI driver takes no snapshots, and OpenShift ships no class for it) leaves this out; the
    /// default, [`BuildError::NoSnapshotClass`], tells the kit to run no snapshot-class step and
    /// post no `VolumeSnapshotClassControllerDegraded`.
    fn snapshot_class(&self, _facts: &Facts<Self::Own>) -> Result<Desired, BuildError> {
        Err(BuildError::NoSnapshotClass)
    }

    /// The driver's default StorageClass (Cinder's `standard-csi`), kept as the CR's
    /// `spec.storageClassState` asks by the kit's [`default_class`] step, which runs after the
    /// workloads and before [`Driver::after_workloads`]. A driver without one (Manila, SMB)
    /// leaves this out: no step, no `StorageClassControllerDegraded`.
    fn storage_class(&self, _facts: &Facts<Self::Own>) -> Option<Result<Desired, BuildError>> {
        None
    }

    /// Whether the driver settings may list extra StorageClasses for the operator to keep.
    /// A driver whose operator has no right to write StorageClasses (SMB: each share needs a
    /// class the administrator writes, with its server and credentials) says `false`; listed
    /// classes then make `ExtraStorageClassControllerDegraded` say so, and none is written.
    const EXTRA_STORAGE_CLASSES: bool = true;

    /// Whether `name` is one the driver gives (or may give) its own StorageClasses: an extra
    /// StorageClass of the driver settings may not take it.
    fn reserved_storage_class(&self, _name: &str) -> bool {
        false
    }

    /// After the management state, before anything is read for the facts.
    fn prepare(&mut self, _kit: &Kit, _pass: &mut Pass) -> impl Future<Output = Flow> + Send {
        async { Flow::Continue }
    }
    /// After the observed config, before the static groups: steps whose results the facts
    /// need (Cinder's cloud-config sync).
    fn configure(
        &mut self,
        _kit: &Kit,
        _pass: &mut Pass,
        _facts: &mut Facts<Self::Own>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
    /// After the static groups, before the controller and node services.
    fn before_workloads(
        &mut self,
        _kit: &Kit,
        _pass: &mut Pass,
        _facts: &mut Facts<Self::Own>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
    /// After the controller and node services, before the snapshot class (storage classes).
    fn after_workloads(
        &mut self,
        _kit: &Kit,
        _pass: &mut Pass,
        _facts: &Facts<Self::Own>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// `LoggingSyncerDegraded`: True when `spec.operatorLogLevel` or `spec.logLevel` holds a value
/// the operator does not know (possible only with a CRD that lacks the enum). Both fall back
/// to `Normal`, so nothing breaks, but a typo must not pass silently.
pub fn log_level_condition(cr: &ClusterCSIDriver) -> OperatorCondition {
    let fields = [
        (
            "spec.operatorLogLevel",
            "the operator",
            &cr.spec.operator.operator_log_level,
        ),
        ("spec.logLevel", "the driver", &cr.spec.operator.log_level),
    ];
    let problems: Vec<String> = fields
        .iter()
        .filter_map(|(field, who, value)| {
            let raw = value.as_ref().map(|l| l.as_str().to_string())?;
            LogLevel::parse(&raw).unknown.map(|bad| {
                format!(
                    "{field} {bad:?} is not one of Normal, Debug, Trace, TraceAll; {who} logs at Normal until it is corrected"
                )
            })
        })
        .collect();
    if problems.is_empty() {
        conditions::degraded(LOGGING_PREFIX, None)
    } else {
        OperatorCondition::new(
            conditions::degraded_type(LOGGING_PREFIX),
            conditions::TRUE,
            "InvalidLogLevel",
            problems.join("; "),
        )
    }
}

/// Reads the image env vars of `placeholders` (and `OPERATOR_IMAGE_VERSION`) from the
/// process environment.
pub fn images_from_env(placeholders: &[&str]) -> BTreeMap<String, String> {
    placeholders
        .iter()
        .copied()
        .chain(["OPERATOR_IMAGE_VERSION"])
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
        .collect()
}

/// The object the operator's Events are about: its own Deployment `name` in `namespace`, as
/// library-go's recorder uses the controller reference of the current pod. So the Events live
/// in that namespace, which must-gather collects (a relatedObject of the ClusterOperator);
/// Events about the cluster-scoped ClusterCSIDriver would have to live in `default`, which it
/// does not collect.
pub fn events_about(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        namespace: Some(namespace.to_string()),
        name: Some(name.to_string()),
        ..Default::default()
    }
}

/// A digest of a credentials Secret and a CA: when it changes, the driver asks OpenStack again
/// at once. Only compared within the process.
pub fn fingerprint(credentials: Option<&Secret>, ca: Option<&[u8]>) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    match credentials.and_then(|s| s.data.as_ref()) {
        Some(data) => {
            for (k, v) in data {
                ctx.update(k.as_bytes());
                ctx.update(&[0]);
                ctx.update(&v.0);
                ctx.update(&[0]);
            }
        }
        None => ctx.update(b"\x01absent"),
    }
    ctx.update(ca.unwrap_or_default());
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `clouds.yaml` bytes of a credentials Secret.
pub fn clouds_yaml_of(secret: Option<&Secret>) -> Option<&[u8]> {
    Some(&secret?.data.as_ref()?.get("clouds.yaml")?.0)
}

/// Where the credentials Secret `namespace/name` comes from, for a condition message that
/// says it is missing or unusable. On OpenShift the cloud credential operator creates it from
/// a CredentialsRequest; on plain Kubernetes (`kubernetes`: no `Infrastructure/cluster`, see
/// [`Kit::on_kubernetes`]) nobody does, so the message gives the administrator's command, with
/// this Secret's namespace and name, as docs/install-kubernetes.md types it.
pub fn credentials_secret_hint(kubernetes: bool, namespace: &str, name: &str) -> String {
    if kubernetes {
        format!(
            "create it from a clouds.yaml with a cloud named \"openstack\": `kubectl -n {namespace} \
             create secret generic {name} --from-file=clouds.yaml=./clouds.yaml --save-config` \
             (add `--from-file=cacert=./ca.pem` when the cloud's endpoints use a private CA; to \
             replace an existing Secret, add `--dry-run=client -o yaml | kubectl apply -f -`)"
        )
    } else {
        format!(
            "the cloud credential operator creates Secret {namespace}/{name} from a \
             CredentialsRequest; check that it holds a valid clouds.yaml with a cloud named \
             \"openstack\""
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    #[test]
    fn the_credentials_hint_fits_the_platform() {
        let k = credentials_secret_hint(true, "drivers", "openstack-cloud-credentials");
        assert!(
            k.contains(
                "kubectl -n drivers create secret generic openstack-cloud-credentials \
                 --from-file=clouds.yaml=./clouds.yaml"
            ),
            "{k}"
        );
        assert!(!k.contains("CredentialsRequest"), "{k}");
        let o = credentials_secret_hint(false, "drivers", "openstack-cloud-credentials");
        assert!(
            o.contains("cloud credential operator")
                && o.contains("CredentialsRequest")
                && o.contains("drivers/openstack-cloud-credentials"),
            "{o}"
        );
        assert!(!o.contains("kubectl"), "{o}");
    }

    #[test]
    fn unknown_log_levels_are_a_readable_condition() {
        let cr = |spec: serde_json::Value| -> ClusterCSIDriver {
            openshift_api::decode::from_value(serde_json::json!({
                "apiVersion": "operator.openshift.io/v1",
                "kind": "ClusterCSIDriver",
                "metadata": {"name": "x.csi.example.org"},
                "spec": spec,
            }))
            .expect("decodes")
        };
        let ok = log_level_condition(&cr(serde_json::json!({
            "managementState": "Managed", "logLevel": "Debug", "operatorLogLevel": ""})));
        assert_eq!(ok.type_, "LoggingSyncerDegraded");
        assert_eq!(ok.status, "False");
        let bad = log_level_condition(&cr(serde_json::json!({
            "managementState": "Managed", "logLevel": "Loud", "operatorLogLevel": "Chatty"})));
        assert_eq!(bad.status, "True");
        assert_eq!(bad.reason, "InvalidLogLevel");
        for text in [
            "spec.operatorLogLevel \"Chatty\"",
            "spec.logLevel \"Loud\"",
            "Normal, Debug, Trace, TraceAll",
        ] {
            assert!(bad.message.contains(text), "{}", bad.message);
        }
    }

    #[test]
    fn fingerprint_changes_with_credentials_and_ca() {
        let s = |v: &str| Secret {
            data: Some(BTreeMap::from([(
                "clouds.yaml".to_string(),
                ByteString(v.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        let a = fingerprint(Some(&s("a")), None);
        assert_eq!(a, fingerprint(Some(&s("a")), None));
        assert_ne!(a, fingerprint(Some(&s("b")), None));
        assert_ne!(a, fingerprint(Some(&s("a")), Some(b"ca")));
        assert_ne!(fingerprint(None, None), fingerprint(Some(&s("")), None));
    }

    #[test]
    fn placeholder_facts_fill_every_image() {
        let given = BTreeMap::from([("A_IMAGE".to_string(), "a:1".to_string())]);
        let base = BaseFacts::placeholder("ns", &given, &["A_IMAGE", "B_IMAGE"]);
        assert_eq!(base.images.len(), 3);
        assert_eq!(base.images["A_IMAGE"], "a:1", "a given image is kept");
        assert_eq!(base.images["B_IMAGE"], "placeholder");
        assert_eq!(base.images["OPERATOR_IMAGE_VERSION"], "placeholder");
        assert_eq!(base.namespace, "ns");
        assert_eq!(base.node_namespace, "ns");
    }
}
