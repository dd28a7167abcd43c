//! `cloudcredential.openshift.io/v1` `CredentialsRequest`: how CSO's manifests ask the
//! cloud-credential-operator (CCO) for the OpenStack credentials Secrets of the drivers.
//!
//! For OpenStack the provider spec has no fields (`kind: OpenStackProviderSpec`); CCO copies
//! the root `clouds.yaml` into the Secret named by `spec.secretRef`. The names of the three
//! requests CSO ships are constants here.
//!
//! What this module must not do: read or carry credential values. Only references live here.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Namespace of CSO's CredentialsRequests.
pub const CREDENTIALS_REQUEST_NAMESPACE: &str = "openshift-cloud-credential-operator";
/// The Cinder request; its Secret is `openshift-cluster-csi-drivers/openstack-cloud-credentials`.
pub const CINDER_CREDENTIALS_REQUEST: &str = "openstack-cinder-csi-driver-operator";
/// The Manila operator's request (`openshift-cluster-csi-drivers/manila-cloud-credentials`).
pub const MANILA_OPERATOR_CREDENTIALS_REQUEST: &str = "manila-csi-driver-operator";
/// The Manila drivers' request (`openshift-manila-csi-driver/manila-cloud-credentials`).
pub const MANILA_DRIVERS_CREDENTIALS_REQUEST: &str = "manila-csi-drivers";
/// Label CCO puts on the Secrets it writes (value `"true"`).
pub const CREDENTIALS_REQUEST_LABEL: &str = "cloudcredential.openshift.io/credentials-request";
/// Annotation CCO puts on the Secrets it writes (value `<namespace>/<name>` of the request).
pub const CREDENTIALS_REQUEST_ANNOTATION: &str = "cloudcredential.openshift.io/credentials-request";

/// Condition types CCO sets on a CredentialsRequest.
pub mod condition_types {
    /// The root credentials cannot mint what was asked for.
    pub const INSUFFICIENT_CLOUD_CREDS: &str = "InsufficientCloudCreds";
    /// The Secret's namespace does not exist.
    pub const MISSING_TARGET_NAMESPACE: &str = "MissingTargetNamespace";
    /// Provisioning failed.
    pub const CREDENTIALS_PROVISION_FAILURE: &str = "CredentialsProvisionFailure";
    /// Deprovisioning failed.
    pub const CREDENTIALS_DEPROVISION_FAILURE: &str = "CredentialsDeprovisionFailure";
    /// The request is for another platform.
    pub const IGNORED: &str = "Ignored";
    /// The minted credentials are stale.
    pub const STALE_CREDENTIALS: &str = "StaleCredentials";
}

/// `spec.secretRef`: an `ObjectReference` of which CCO reads `name` and `namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretReference {
    /// Secret name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Secret namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The other `ObjectReference` fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Spec of a [`CredentialsRequest`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cloudcredential.openshift.io",
    version = "v1",
    kind = "CredentialsRequest",
    plural = "credentialsrequests",
    namespaced,
    status = "CredentialsRequestStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsRequestSpec {
    /// Where CCO writes the credentials.
    pub secret_ref: SecretReference,
    /// The cloud-specific request (a raw embedded object with `apiVersion` and `kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_spec: Option<Value>,
    /// ServiceAccounts that use the credentials (informational for CCO).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_account_names: Vec<String>,
    /// Path of a projected ServiceAccount token (STS-style clouds only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_token_path: Option<String>,
    /// Other spec fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The provider spec of every OpenStack request: `{apiVersion: cloudcredential.openshift.io/v1,
/// kind: OpenStackProviderSpec}`, with no fields.
pub fn openstack_provider_spec() -> Value {
    json!({"apiVersion": "cloudcredential.openshift.io/v1", "kind": "OpenStackProviderSpec"})
}

impl CredentialsRequestSpec {
    /// An OpenStack request for a Secret `namespace/name`.
    pub fn openstack(secret_namespace: &str, secret_name: &str) -> Self {
        CredentialsRequestSpec {
            secret_ref: SecretReference {
                name: secret_name.to_owned(),
                namespace: secret_namespace.to_owned(),
                extra: BTreeMap::new(),
            },
            provider_spec: Some(openstack_provider_spec()),
            ..CredentialsRequestSpec::default()
        }
    }
}

/// One `status.conditions[]` entry of a CredentialsRequest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsRequestCondition {
    /// See [`condition_types`].
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Last probe time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub last_probe_time: Option<Time>,
    /// Last transition time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub last_transition_time: Option<Time>,
    /// Reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Status of a [`CredentialsRequest`], written by CCO.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsRequestStatus {
    /// Whether the credentials have been provisioned at least once.
    #[serde(default)]
    pub provisioned: bool,
    /// When the credentials were last synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub last_sync_timestamp: Option<Time>,
    /// The request's generation at the last sync.
    #[serde(default)]
    pub last_sync_generation: i64,
    /// The root Secret's resourceVersion at the last sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_cloud_creds_secret_resource_version: Option<String>,
    /// Cloud-specific status, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<Value>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<CredentialsRequestCondition>,
    /// Other status fields, kept.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openstack_request_matches_cso_manifest_shape() {
        let mut cr = CredentialsRequest::new(
            CINDER_CREDENTIALS_REQUEST,
            CredentialsRequestSpec::openstack(
                "openshift-cluster-csi-drivers",
                "openstack-cloud-credentials",
            ),
        );
        cr.metadata.namespace = Some(CREDENTIALS_REQUEST_NAMESPACE.into());
        assert_eq!(
            serde_json::to_value(&cr).unwrap(),
            json!({
                "apiVersion": "cloudcredential.openshift.io/v1",
                "kind": "CredentialsRequest",
                "metadata": {"name": "openstack-cinder-csi-driver-operator",
                             "namespace": "openshift-cloud-credential-operator"},
                "spec": {
                    "secretRef": {"name": "openstack-cloud-credentials",
                                  "namespace": "openshift-cluster-csi-drivers"},
                    "providerSpec": {"apiVersion": "cloudcredential.openshift.io/v1",
                                     "kind": "OpenStackProviderSpec"}
                }
            })
        );
    }

    #[test]
    fn status_round_trips_and_rejects_wrong_types() {
        let v = json!({
            "provisioned": true, "lastSyncGeneration": 1,
            "lastSyncTimestamp": "2024-05-01T10:00:00Z",
            "conditions": [{"type": "Ignored", "status": "False"}]
        });
        let s: CredentialsRequestStatus = serde_json::from_value(v.clone()).unwrap();
        assert!(s.provisioned);
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
        let err = serde_json::from_value::<CredentialsRequestStatus>(json!({"provisioned": "yes"}))
            .unwrap_err();
        assert!(err.to_string().contains("expected a boolean"), "{err}");
    }

    #[test]
    fn spec_requires_secret_ref() {
        let err = serde_json::from_value::<CredentialsRequestSpec>(json!({})).unwrap_err();
        assert!(err.to_string().contains("secretRef"), "{err}");
    }
}
