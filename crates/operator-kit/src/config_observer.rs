//! The config-observer step every driver operator runs: Proxy and APIServer (from the watch
//! caches) become the CR's `spec.observedConfig`, written only when it changed, and the proxy
//! env and TLS settings the other steps inject.
//!
//! The write returns the CR as the server stored it, so the status write that ends the same
//! reconcile builds on the new resourceVersion instead of meeting a 409.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::Value;

use crate::cache::Cache;
use crate::kinds;
use crate::observed_config::{self, ServingInfo};

/// The prefix of `ConfigObservationDegraded`.
pub const CONFIG_OBSERVATION_PREFIX: &str = "ConfigObservation";

/// What the observer found, and the CR if it had to write it.
#[derive(Debug)]
pub struct Observed {
    pub proxy: BTreeMap<String, String>,
    pub serving: ServingInfo,
    /// The CR after the `spec.observedConfig` write, when there was one.
    pub written: Option<DynamicObject>,
}

fn cached(cache: &Cache, kind: &str) -> Option<Value> {
    let ar = kinds::api_resource("config.openshift.io/v1", kind).ok()?;
    cache
        .object(&ar, None, "cluster")
        .and_then(|o| serde_json::to_value(&*o).ok())
}

/// Why the observed config could not be kept in step: the message of
/// `ConfigObservationDegraded` (reason `Error`).
#[derive(Debug, thiserror::Error)]
pub enum ObservationError {
    /// The cluster's Proxy or APIServer holds a value that cannot be used.
    #[error(transparent)]
    Config(#[from] observed_config::ObserveError),
    #[error("the operator's custom resource has no spec; it must be recreated")]
    NoSpec,
    /// The CR is of a kind the operator does not know.
    #[error(transparent)]
    Kind(#[from] kinds::KindError),
    #[error("failed to write spec.observedConfig: {0}")]
    Write(#[source] kube::Error),
}

/// Observes Proxy and APIServer `cluster` and keeps the CR's `spec.observedConfig` in step.
/// Errors are condition messages (`ConfigObservationDegraded`).
pub async fn observe(
    client: &Client,
    cache: &Cache,
    cr: &DynamicObject,
) -> Result<Observed, ObservationError> {
    observe_with(client, cache, cr, observed_config::observed_config).await
}

/// [`observe`] with another `spec.observedConfig` shape: the Cluster Storage Operator keeps
/// only the proxy, under `targetconfig.proxy` ([`observed_config::cso_observed_config`]).
pub async fn observe_with(
    client: &Client,
    cache: &Cache,
    cr: &DynamicObject,
    shape: fn(&BTreeMap<String, String>, &ServingInfo) -> Value,
) -> Result<Observed, ObservationError> {
    let proxy = observed_config::observe_proxy(cached(cache, "Proxy").as_ref())?;
    let serving = observed_config::observe_serving_info(cached(cache, "APIServer").as_ref())?;
    let wanted = shape(&proxy, &serving);
    let current = cr
        .data
        .get("spec")
        .and_then(|s| s.get("observedConfig"))
        .cloned()
        .unwrap_or(Value::Null);
    if current == wanted {
        return Ok(Observed {
            proxy,
            serving,
            written: None,
        });
    }
    let mut obj = cr.clone();
    obj.metadata.managed_fields = None;
    match obj.data.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => {
            spec.insert("observedConfig".into(), wanted);
        }
        None => {
            return Err(ObservationError::NoSpec);
        }
    }
    let api_version = cr
        .types
        .as_ref()
        .map(|t| t.api_version.clone())
        .unwrap_or_else(|| "operator.openshift.io/v1".into());
    let kind = cr
        .types
        .as_ref()
        .map(|t| t.kind.clone())
        .unwrap_or_else(|| "ClusterCSIDriver".into());
    let ar = kinds::api_resource(&api_version, &kind)?;
    obj.types = Some(kube::core::TypeMeta {
        api_version: ar.api_version.clone(),
        kind: ar.kind.clone(),
    });
    let name = cr.metadata.name.clone().unwrap_or_default();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let written = api
        .replace(&name, &PostParams::default(), &obj)
        .await
        .map_err(ObservationError::Write)?;
    Ok(Observed {
        proxy,
        serving,
        written: Some(written),
    })
}
