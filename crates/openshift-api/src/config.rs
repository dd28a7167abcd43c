//! `config.openshift.io/v1` resources the operators read (`Infrastructure`, `Proxy`,
//! `APIServer`, all named `cluster`) or write (`ClusterOperator`, whose status CSO owns).
//!
//! Only the fields the operators use are typed; the rest is kept in `extra` maps so that a
//! seeded or round-tripped object loses nothing. [`TlsSecurityProfile::resolve`] turns an
//! APIServer TLS profile into the ciphers and minimum version library-go's config observer
//! derives from it, with the same fallbacks.
//!
//! What this module must not do: any I/O, or mapping cipher names to IANA names (that is the
//! config observer's job; the names here are the OpenSSL ones openshift/api uses).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{Condition, find_condition};
use crate::string_enum::string_enum;

/// `metadata.name` of the `Infrastructure`, `Proxy` and `APIServer` singletons.
pub const CLUSTER: &str = "cluster";
/// `metadata.name` of the ClusterOperator CSO reports on.
pub const STORAGE_CLUSTER_OPERATOR: &str = "storage";

// ---------------------------------------------------------------------------------------------
// ClusterOperator
// ---------------------------------------------------------------------------------------------

/// Spec of a [`ClusterOperator`]: an empty object (the CRD prunes anything in it).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterOperator",
    plural = "clusteroperators",
    status = "ClusterOperatorStatus",
    derive = "PartialEq",
    derive = "Default"
)]
pub struct ClusterOperatorSpec {
    /// Anything a newer CRD puts in the spec, kept for the write back.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `status.versions[]`: an operand or the operator and its version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OperandVersion {
    /// `operator`, or an operand name.
    pub name: String,
    /// The version string.
    pub version: String,
}

/// `status.relatedObjects[]`: what `oc adm must-gather` collects for this operator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectReference {
    /// API group, `""` for the core group (always written; the CRD requires it).
    #[serde(default)]
    pub group: String,
    /// Resource, e.g. `namespaces`.
    pub resource: String,
    /// Namespace, omitted for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// Status of a [`ClusterOperator`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatus {
    /// `Available`, `Progressing`, `Degraded`, `Upgradeable`, `EvaluationConditionsDetected`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Versions of the operator and its operands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<OperandVersion>,
    /// Objects related to this operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_objects: Vec<ObjectReference>,
    /// Operator-specific data, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<Value>,
    /// Status fields this crate does not model, kept for the write back.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl ClusterOperatorStatus {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        find_condition(&self.conditions, type_)
    }

    /// The version reported for `name`, if any.
    pub fn version(&self, name: &str) -> Option<&str> {
        self.versions
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.version.as_str())
    }
}

// ---------------------------------------------------------------------------------------------
// Infrastructure
// ---------------------------------------------------------------------------------------------

string_enum! {
    /// `PlatformType` (`status.platformStatus.type`, `spec.platformSpec.type`).
    #[derive(Default)]
    pub enum PlatformType {
        #[default]
        /// Not set.
        Unset = "",
        /// Amazon Web Services.
        Aws = "AWS",
        /// Microsoft Azure.
        Azure = "Azure",
        /// Bare metal.
        BareMetal = "BareMetal",
        /// Google Cloud.
        Gcp = "GCP",
        /// libvirt.
        Libvirt = "Libvirt",
        /// OpenStack: the platform on which CSO starts the Cinder and Manila operators.
        OpenStack = "OpenStack",
        /// No platform integration.
        NonePlatform = "None",
        /// vSphere.
        VSphere = "VSphere",
        /// oVirt.
        OVirt = "oVirt",
        /// IBM Cloud.
        IbmCloud = "IBMCloud",
        /// KubeVirt.
        KubeVirt = "KubeVirt",
        /// Equinix Metal.
        EquinixMetal = "EquinixMetal",
        /// IBM Power VS.
        PowerVs = "PowerVS",
        /// Alibaba Cloud.
        AlibabaCloud = "AlibabaCloud",
        /// Nutanix.
        Nutanix = "Nutanix",
        /// An external platform.
        External = "External",
    }
}

string_enum! {
    /// `TopologyMode` (`status.controlPlaneTopology`, `status.infrastructureTopology`).
    pub enum TopologyMode {
        /// The default: replicas 2 for the CSI controller.
        HighlyAvailable = "HighlyAvailable",
        /// Two control-plane nodes and an arbiter.
        HighlyAvailableArbiter = "HighlyAvailableArbiter",
        /// One control-plane node: replicas 1, longer leader-election timings.
        SingleReplica = "SingleReplica",
        /// Two control-plane nodes (feature-gated).
        DualReplica = "DualReplica",
        /// Control plane outside the cluster (HyperShift): no control-plane nodeSelector.
        External = "External",
    }
}

/// `spec.cloudConfig`: the ConfigMap (in `openshift-config`) and key holding the user's cloud
/// configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigMapFileReference {
    /// ConfigMap name, typically `cloud-provider-config`.
    #[serde(default)]
    pub name: String,
    /// Key in the ConfigMap, typically `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Spec of the [`Infrastructure`] singleton.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "Infrastructure",
    plural = "infrastructures",
    status = "InfrastructureStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureSpec {
    /// Where the user's cloud configuration lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_config: Option<ConfigMapFileReference>,
    /// Platform-specific spec, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_spec: Option<Value>,
    /// Other spec fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `status.platformStatus.openstack`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackPlatformStatus {
    /// The clouds.yaml entry name; not read (the operators hard-code `openstack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_name: Option<String>,
    /// Other fields (API/ingress VIPs, load balancer, …), kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `status.platformStatus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformStatus {
    /// The platform. CSO selects driver operators by it.
    #[serde(rename = "type", default)]
    pub type_: PlatformType,
    /// OpenStack details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openstack: Option<OpenStackPlatformStatus>,
    /// Other platforms' members, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Status of the [`Infrastructure`] singleton.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureStatus {
    /// The cluster ID (≤27 characters): Cinder's `--cluster`, Manila's `--cluster-id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_name: Option<String>,
    /// Deprecated; not read (CSO uses `platformStatus.type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformType>,
    /// Platform details; absent means "no platform, no driver".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_status: Option<PlatformStatus>,
    /// etcd discovery domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_discovery_domain: Option<String>,
    /// External API URL.
    #[serde(
        default,
        rename = "apiServerURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_url: Option<String>,
    /// Internal API URI.
    #[serde(
        default,
        rename = "apiServerInternalURI",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_internal_uri: Option<String>,
    /// Where the control plane runs (CRD default `HighlyAvailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_topology: Option<TopologyMode>,
    /// How infrastructure workloads are spread (CRD default `HighlyAvailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_topology: Option<TopologyMode>,
    /// Other status fields (`cpuPartitioning`, …), kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Infrastructure {
    /// `status.platformStatus.type`, the only platform field CSO reads; `None` when there is no
    /// status or no platformStatus (then no driver is started).
    pub fn platform_type(&self) -> Option<&PlatformType> {
        self.status
            .as_ref()
            .and_then(|s| s.platform_status.as_ref())
            .map(|p| &p.type_)
    }

    /// `status.controlPlaneTopology`, absent read as `HighlyAvailable` (the CRD default).
    pub fn control_plane_topology(&self) -> TopologyMode {
        self.status
            .as_ref()
            .and_then(|s| s.control_plane_topology.clone())
            .unwrap_or(TopologyMode::HighlyAvailable)
    }

    /// `status.infrastructureTopology`, absent read as `HighlyAvailable` (the CRD default).
    pub fn infrastructure_topology(&self) -> TopologyMode {
        self.status
            .as_ref()
            .and_then(|s| s.infrastructure_topology.clone())
            .unwrap_or(TopologyMode::HighlyAvailable)
    }

    /// `status.infrastructureName`, `None` when absent or empty.
    pub fn infrastructure_name(&self) -> Option<&str> {
        self.status
            .as_ref()
            .and_then(|s| s.infrastructure_name.as_deref())
            .filter(|n| !n.is_empty())
    }
}

// ---------------------------------------------------------------------------------------------
// Proxy
// ---------------------------------------------------------------------------------------------

/// A reference to a ConfigMap in `openshift-config` by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigMapNameReference {
    /// ConfigMap name.
    #[serde(default)]
    pub name: String,
}

/// Spec of the [`Proxy`] singleton.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "Proxy",
    plural = "proxies",
    status = "ProxyStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ProxySpec {
    /// Requested HTTP proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// Requested HTTPS proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Requested comma-separated no-proxy list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// URLs checked before the proxy is used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readiness_endpoints: Vec<String>,
    /// The user CA bundle ConfigMap (reaches pods through CNO's `ca-bundle.crt` injection).
    #[serde(default, rename = "trustedCA", skip_serializing_if = "Option::is_none")]
    pub trusted_ca: Option<ConfigMapNameReference>,
    /// Other spec fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Status of the [`Proxy`] singleton: the effective values the operators inject.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyStatus {
    /// Effective HTTP proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// Effective HTTPS proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Effective no-proxy list (includes the cluster's own networks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// Other status fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

// ---------------------------------------------------------------------------------------------
// APIServer
// ---------------------------------------------------------------------------------------------

string_enum! {
    /// `spec.tlsSecurityProfile.type`.
    pub enum TlsProfileType {
        /// Mozilla "old" (TLS 1.0+).
        Old = "Old",
        /// Mozilla "intermediate" (TLS 1.2+), the default.
        Intermediate = "Intermediate",
        /// Mozilla "modern" (TLS 1.3).
        Modern = "Modern",
        /// `custom.{ciphers,minTLSVersion}`.
        Custom = "Custom",
    }
}

string_enum! {
    /// `TLSProtocolVersion` (`minTLSVersion`).
    pub enum TlsProtocolVersion {
        /// TLS 1.0.
        Tls10 = "VersionTLS10",
        /// TLS 1.1.
        Tls11 = "VersionTLS11",
        /// TLS 1.2.
        Tls12 = "VersionTLS12",
        /// TLS 1.3.
        Tls13 = "VersionTLS13",
    }
}

/// `spec.tlsSecurityProfile.custom`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomTlsProfile {
    /// OpenSSL cipher names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ciphers: Vec<String>,
    /// Minimum TLS version.
    #[serde(
        default,
        rename = "minTLSVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub min_tls_version: Option<TlsProtocolVersion>,
    /// Other fields (newer releases add `groups`), kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.tlsSecurityProfile`: a union on `type`. `old`, `intermediate` and `modern` are empty
/// objects in the API and kept opaque.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSecurityProfile {
    /// The profile type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<TlsProfileType>,
    /// `old: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// `intermediate: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intermediate: Option<Value>,
    /// `modern: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modern: Option<Value>,
    /// The custom profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomTlsProfile>,
    /// Other fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The effective TLS settings of a profile: OpenSSL cipher names and the minimum version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsProfileSpec {
    /// OpenSSL cipher names, in profile order.
    pub ciphers: Vec<String>,
    /// Minimum version; `Unknown("")` only for a custom profile without one.
    pub min_tls_version: TlsProtocolVersion,
}

const TLS13_CIPHERS: [&str; 3] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

const INTERMEDIATE_TLS12_CIPHERS: [&str; 6] = [
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
];

const OLD_EXTRA_CIPHERS: [&str; 15] = [
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "AES128-GCM-SHA256",
    "AES256-GCM-SHA384",
    "AES128-SHA256",
    "AES256-SHA256",
    "AES128-SHA",
    "AES256-SHA",
    "DES-CBC3-SHA",
];

impl TlsProfileType {
    /// The built-in profile of `openshift/api:config/v1/types_tlssecurityprofile.go`
    /// (`TLSProfiles`); `None` for `Custom` and unknown types.
    pub fn builtin_spec(&self) -> Option<TlsProfileSpec> {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        match self {
            TlsProfileType::Old => {
                let mut ciphers = owned(&TLS13_CIPHERS);
                ciphers.extend(owned(&INTERMEDIATE_TLS12_CIPHERS));
                ciphers.extend(owned(&OLD_EXTRA_CIPHERS));
                Some(TlsProfileSpec {
                    ciphers,
                    min_tls_version: TlsProtocolVersion::Tls10,
                })
            }
            TlsProfileType::Intermediate => {
                let mut ciphers = owned(&TLS13_CIPHERS);
                ciphers.extend(owned(&INTERMEDIATE_TLS12_CIPHERS));
                Some(TlsProfileSpec {
                    ciphers,
                    min_tls_version: TlsProtocolVersion::Tls12,
                })
            }
            TlsProfileType::Modern => Some(TlsProfileSpec {
                ciphers: owned(&TLS13_CIPHERS),
                min_tls_version: TlsProtocolVersion::Tls13,
            }),
            TlsProfileType::Custom | TlsProfileType::Unknown(_) => None,
        }
    }
}

impl TlsSecurityProfile {
    /// The effective settings, as library-go's `ObserveTLSSecurityProfile` resolves them: no
    /// profile, no type, an unknown type, or `Custom` without `custom` all mean Intermediate;
    /// `Custom` with `custom` means exactly its ciphers and minimum version.
    pub fn resolve(profile: Option<&TlsSecurityProfile>) -> TlsProfileSpec {
        let intermediate = || TlsProfileSpec {
            ciphers: TLS13_CIPHERS
                .iter()
                .chain(INTERMEDIATE_TLS12_CIPHERS.iter())
                .map(|s| (*s).to_owned())
                .collect(),
            min_tls_version: TlsProtocolVersion::Tls12,
        };
        let Some(profile) = profile else {
            return intermediate();
        };
        match &profile.type_ {
            Some(TlsProfileType::Custom) => match &profile.custom {
                Some(custom) => TlsProfileSpec {
                    ciphers: custom.ciphers.clone(),
                    min_tls_version: custom
                        .min_tls_version
                        .clone()
                        .unwrap_or_else(|| TlsProtocolVersion::Unknown(String::new())),
                },
                None => intermediate(),
            },
            Some(t) => t.builtin_spec().unwrap_or_else(intermediate),
            None => intermediate(),
        }
    }
}

/// Spec of the [`APIServer`] singleton.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "APIServer",
    plural = "apiservers",
    status = "APIServerStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct APIServerSpec {
    /// The cluster-wide TLS profile; absent means Intermediate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_security_profile: Option<TlsSecurityProfile>,
    /// Other spec fields (audit, encryption, serving certs, …), kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Status of the [`APIServer`] singleton (empty in the API).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct APIServerStatus {
    /// Whatever a newer API puts here, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl APIServer {
    /// The effective TLS settings of this cluster (see [`TlsSecurityProfile::resolve`]).
    pub fn tls_profile_spec(&self) -> TlsProfileSpec {
        TlsSecurityProfile::resolve(self.spec.tls_security_profile.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn infrastructure_reads_the_fields_the_operators_use() {
        let infra: Infrastructure = serde_json::from_value(json!({
            "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster"},
            "spec": {"cloudConfig": {"name": "cloud-provider-config", "key": "config"},
                     "platformSpec": {"type": "OpenStack"}},
            "status": {
                "infrastructureName": "mycluster-x7k2p",
                "platform": "OpenStack",
                "platformStatus": {"type": "OpenStack", "openstack": {"cloudName": "openstack",
                                   "apiServerInternalIPs": ["10.0.0.5"]}},
                "controlPlaneTopology": "SingleReplica",
                "infrastructureTopology": "HighlyAvailable",
                "cpuPartitioning": "None"
            }
        }))
        .unwrap();
        assert_eq!(infra.platform_type(), Some(&PlatformType::OpenStack));
        assert_eq!(infra.control_plane_topology(), TopologyMode::SingleReplica);
        assert_eq!(infra.infrastructure_name(), Some("mycluster-x7k2p"));
        let cc = infra.spec.cloud_config.as_ref().unwrap();
        assert_eq!(
            (cc.name.as_str(), cc.key.as_deref()),
            ("cloud-provider-config", Some("config"))
        );
    }

    #[test]
    fn infrastructure_defaults_and_unknown_topology() {
        let infra: Infrastructure = serde_json::from_value(json!({
            "metadata": {"name": "cluster"}, "spec": {},
            "status": {"controlPlaneTopology": "Quadruple", "infrastructureName": ""}
        }))
        .unwrap();
        assert_eq!(infra.platform_type(), None);
        assert_eq!(
            infra.control_plane_topology(),
            TopologyMode::Unknown("Quadruple".into())
        );
        assert_eq!(
            infra.infrastructure_topology(),
            TopologyMode::HighlyAvailable
        );
        assert_eq!(infra.infrastructure_name(), None);
        let bare = Infrastructure::new("cluster", InfrastructureSpec::default());
        assert_eq!(bare.control_plane_topology(), TopologyMode::HighlyAvailable);
    }

    #[test]
    fn tls_profiles_resolve_like_library_go() {
        let intermediate = TlsSecurityProfile::resolve(None);
        assert_eq!(intermediate.min_tls_version, TlsProtocolVersion::Tls12);
        assert_eq!(intermediate.ciphers.len(), 9);
        let of = |v: serde_json::Value| {
            let p: TlsSecurityProfile = serde_json::from_value(v).unwrap();
            TlsSecurityProfile::resolve(Some(&p))
        };
        assert_eq!(of(json!({"type": "Modern", "modern": {}})).ciphers.len(), 3);
        let old = of(json!({"type": "Old", "old": {}}));
        assert_eq!(
            (old.ciphers.len(), old.min_tls_version),
            (24, TlsProtocolVersion::Tls10)
        );
        assert_eq!(old.ciphers.last().map(String::as_str), Some("DES-CBC3-SHA"));
        assert_eq!(of(json!({"type": "Custom"})), intermediate);
        assert_eq!(of(json!({"type": "Bogus"})), intermediate);
        assert_eq!(of(json!({})), intermediate);
        let custom = of(json!({"type": "Custom", "custom": {
            "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256"], "minTLSVersion": "VersionTLS11"}}));
        assert_eq!(custom.ciphers, vec!["ECDHE-RSA-AES128-GCM-SHA256"]);
        assert_eq!(custom.min_tls_version, TlsProtocolVersion::Tls11);
    }

    #[test]
    fn apiserver_keeps_other_spec_fields() {
        let v = json!({
            "apiVersion": "config.openshift.io/v1", "kind": "APIServer",
            "metadata": {"name": "cluster"},
            "spec": {"audit": {"profile": "Default"},
                     "tlsSecurityProfile": {"type": "Custom", "custom": {
                         "ciphers": ["A"], "minTLSVersion": "VersionTLS13", "groups": ["X25519"]}}}
        });
        let a: APIServer = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            a.tls_profile_spec().min_tls_version,
            TlsProtocolVersion::Tls13
        );
        assert_eq!(serde_json::to_value(&a).unwrap(), v);
    }

    #[test]
    fn proxy_round_trips() {
        let v = json!({
            "apiVersion": "config.openshift.io/v1", "kind": "Proxy",
            "metadata": {"name": "cluster"},
            "spec": {"httpProxy": "http://p:3128", "trustedCA": {"name": "user-ca-bundle"}},
            "status": {"httpProxy": "http://p:3128", "httpsProxy": "http://p:3128",
                       "noProxy": ".cluster.local,10.0.0.0/16"}
        });
        let p: Proxy = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            p.status.as_ref().and_then(|s| s.no_proxy.as_deref()),
            Some(".cluster.local,10.0.0.0/16")
        );
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
    }

    #[test]
    fn cluster_operator_round_trips() {
        let v = json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": "storage"},
            "spec": {},
            "status": {
                "conditions": [{"type": "Available", "status": "True",
                                "lastTransitionTime": "2024-05-01T10:00:00Z",
                                "reason": "AsExpected", "message": "All is well"}],
                "versions": [{"name": "operator", "version": "4.18.0"}],
                "relatedObjects": [{"group": "", "resource": "namespaces",
                                    "name": "openshift-cluster-csi-drivers"},
                                   {"group": "operator.openshift.io", "resource": "clustercsidrivers",
                                    "name": "cinder.csi.openstack.org"}],
                "extension": null
            }
        });
        let co: ClusterOperator = serde_json::from_value(v.clone()).unwrap();
        let status = co.status.as_ref().unwrap();
        assert_eq!(status.version("operator"), Some("4.18.0"));
        assert!(
            status
                .condition("Available")
                .is_some_and(Condition::is_true)
        );
        let mut expected = v;
        // `extension: null` and an absent extension mean the same; we omit it.
        if let Some(s) = expected.get_mut("status").and_then(Value::as_object_mut) {
            s.remove("extension");
        }
        assert_eq!(serde_json::to_value(&co).unwrap(), expected);
    }
}
