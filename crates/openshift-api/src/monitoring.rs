//! `monitoring.coreos.com/v1` `ServiceMonitor`, minimal: the fields the CSI operators write for
//! their metrics Service (endpoints with scheme, interval, path, bearer token file and TLS
//! settings; job label; selector). Everything else survives in `extra`.
//!
//! The monitoring CRD may be absent (no cluster monitoring); handling that is the caller's job.
//!
//! What this module must not do: any I/O, or defaulting (prometheus-operator's defaults are its
//! own business; we write what the anchors write and nothing more).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `spec.endpoints[].tlsConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsConfig {
    /// CA file inside the Prometheus container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Client certificate file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// Client key file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// Server name to verify (`<service>.<namespace>.svc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Skip verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
    /// Other fields (secret/ConfigMap sources, versions), kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.endpoints[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// Service port name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Pod port, by name or number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub target_port: Option<IntOrString>,
    /// HTTP path, e.g. `/metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Scrape interval, e.g. `30s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Scrape timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrape_timeout: Option<String>,
    /// Bearer token file (deprecated upstream, still what OpenShift's manifests use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_file: Option<String>,
    /// Keep the target's labels on collision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honor_labels: Option<bool>,
    /// TLS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<TlsConfig>,
    /// Other endpoint fields (relabelings, auth, …), kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.namespaceSelector`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Select all namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<bool>,
    /// Select these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_names: Vec<String>,
}

/// Spec of a [`ServiceMonitor`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "monitoring.coreos.com",
    version = "v1",
    kind = "ServiceMonitor",
    plural = "servicemonitors",
    namespaced,
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// Endpoints to scrape.
    #[serde(default)]
    pub endpoints: Vec<Endpoint>,
    /// Label of the Service whose value becomes the `job` label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_label: Option<String>,
    /// Which Services to scrape (required by the CRD).
    #[serde(default)]
    #[schemars(with = "Value")]
    pub selector: LabelSelector,
    /// Which namespaces to look in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<NamespaceSelector>,
    /// Other spec fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cinder_service_monitor_shape_round_trips() {
        let endpoint = json!({
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "interval": "30s", "path": "/metrics", "port": "driver-m", "scheme": "https",
            "tlsConfig": {
                "caFile": "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
                "serverName": "openstack-cinder-csi-driver-controller-metrics.openshift-cluster-csi-drivers.svc"
            },
            "metricRelabelings": [{"action": "drop", "regex": "x"}]
        });
        let v = json!({
            "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": "m", "namespace": "openshift-cluster-csi-drivers"},
            "spec": {"endpoints": [endpoint], "jobLabel": "component",
                     "selector": {"matchLabels": {"app": "openstack-cinder-csi-driver-controller-metrics"}}}
        });
        let sm: ServiceMonitor = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(sm.spec.endpoints[0].port.as_deref(), Some("driver-m"));
        assert!(sm.spec.endpoints[0].extra.contains_key("metricRelabelings"));
        assert_eq!(serde_json::to_value(&sm).unwrap(), v);
    }

    #[test]
    fn wrong_types_are_errors() {
        let err =
            serde_json::from_value::<ServiceMonitorSpec>(json!({"endpoints": {}})).unwrap_err();
        assert!(err.to_string().contains("expected a sequence"), "{err}");
    }
}
