//! The check of Manila at runtime: whether the cloud offers Manila and which share types it
//! has, asked in a background task (each call may take up to two minutes on a slow Keystone)
//! that nudges the loop when its answer is ready. The reconcile records it and goes on with
//! the last known answer meanwhile; a check whose credentials were replaced while it ran is
//! discarded. [`crate::detect`] holds the decisions, this module the tasks and conditions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use operator_kit::cache::Background;
use operator_kit::conditions::{self, OperatorCondition, reasons};
use operator_kit::csi::{Kit, fingerprint};
use tracing::{debug, info};

use crate::detect::{self, Detection, Failure, FailureKind, Status};
use crate::{CLOUD_PROVIDER_CONFIGMAP, OPERATOR_CREDENTIALS_SECRET, USER_AGENT};

const STARTER_PREFIX: &str = "StarterController";
/// Whether Manila answered the last check after the driver was installed.
pub const SERVICE_REACHABLE: &str = "ManilaServiceReachable";
/// HTTP timeout of the OpenStack calls (anchors §5.1: raised to 120 s for slow Keystones).
const OPENSTACK_TIMEOUT: Duration = Duration::from_secs(120);

/// A Manila check in the background: the share-type names, or why Manila cannot be used.
type Check = Background<Result<Vec<String>, Failure>>;

/// What the Manila check keeps between reconciles.
pub struct ManilaCheck {
    /// Namespace of the operator's credentials Secret.
    operator_namespace: String,
    detection: Detection,
    openstack: Arc<openstack::Session>,
    /// The Manila check running in the background, with the fingerprint of the credentials
    /// it uses. Dropping it aborts the check.
    check: Option<(String, Check)>,
}

impl ManilaCheck {
    /// Share types are listed again every `refresh`.
    pub fn new(operator_namespace: String, refresh: Duration) -> Self {
        Self {
            operator_namespace,
            detection: Detection::new(refresh),
            openstack: Arc::new(openstack::Session::new()),
            check: None,
        }
    }

    /// Records a finished check, starts one when due, and says what is known now and when to
    /// look again.
    pub fn status(&mut self, kit: &Kit) -> (Status, Option<Duration>) {
        let running = self.detect(kit);
        let requeue = self.detection.requeue_after(Instant::now(), running);
        (self.detection.status(), requeue)
    }

    /// Whether Manila answered the last check, once the driver is installed:
    /// `ManilaServiceReachable` True, or False with what failed. Deliberately not a `*Degraded`
    /// or `*Available` type: the Cluster Storage Operator unions those into
    /// `ClusterOperator/storage`, and a cloud-side Manila problem must not degrade the whole
    /// cluster (users file §3.3). `StarterControllerDegraded` stays False.
    pub fn starter_conditions(&self, error: Option<&Failure>) -> [OperatorCondition; 2] {
        let reachable = match error {
            None => OperatorCondition::new(
                SERVICE_REACHABLE,
                conditions::TRUE,
                reasons::AS_EXPECTED,
                "Manila answered the last check",
            ),
            Some(f) => OperatorCondition::new(
                SERVICE_REACHABLE,
                conditions::FALSE,
                "ManilaUnavailable",
                format!(
                    "Manila cannot be used now: {}. The driver stays installed so that existing shares can still be mounted and unmounted, and the StorageClasses of the last successful listing are kept; the check is repeated every {} and when the credentials change",
                    f.message,
                    detect::go_duration(self.detection.refresh())
                ),
            ),
        };
        [conditions::degraded(STARTER_PREFIX, None), reachable]
    }

    /// Records the answer of a finished check and starts a check in the background when one
    /// is due and none runs for the current credentials; never waits for OpenStack. Returns
    /// whether a check is running now.
    fn detect(&mut self, kit: &Kit) -> bool {
        let ns = self.operator_namespace.clone();
        let credentials = kit.cache.secret(&ns, OPERATOR_CREDENTIALS_SECRET);
        let ca = ca_bundle(kit, credentials.as_ref(), &ns);
        let fp = fingerprint(credentials.as_ref(), ca.as_deref());
        let now = Instant::now();
        if let Some((used, check)) = self.check.as_mut()
            && let Some(answer) = check.try_take()
        {
            let used = std::mem::take(used);
            self.check = None;
            let result = answer.unwrap_or_else(|stopped| {
                Err(Failure::new(
                    FailureKind::Other,
                    format!("the check of Manila failed inside the operator ({stopped}); see the operator log"),
                ))
            });
            let summary = match &result {
                Ok(types) if !types.is_empty() => Ok(types.len()),
                Ok(_) => Err(Failure::no_share_types().message),
                Err(f) => Err(f.message.clone()),
            };
            if self.detection.finish(now, &used, &fp, result) {
                match summary {
                    Ok(count) => info!(count, "listed Manila share types"),
                    Err(reason) => {
                        kit.metrics.error("openstack");
                        info!(%reason, "Manila is not usable");
                    }
                }
            } else {
                debug!("dropped the answer of a Manila check made with credentials replaced since");
            }
        }
        if self.check.as_ref().is_some_and(|(used, _)| *used != fp) {
            info!(
                "the OpenStack credentials changed during a Manila check; checking again with the new ones"
            );
            self.check = None;
        }
        if self.check.is_none() && self.detection.is_due(now, &fp) {
            let work = list_share_types(self.openstack.clone(), credentials, ca, ns);
            self.check = Some((fp, kit.cache.nudger().spawn(work)));
        }
        self.check.is_some()
    }
}

/// One check of Manila, run in a background task: parse clouds.yaml, authenticate (or reuse
/// the session's token), find `sharev2` in the catalog and list the share types.
async fn list_share_types(
    session: Arc<openstack::Session>,
    credentials: Option<Secret>,
    ca: Option<Vec<u8>>,
    ns: String,
) -> Result<Vec<String>, Failure> {
    let secret_name = format!("{ns}/{OPERATOR_CREDENTIALS_SECRET}");
    let Some(secret) = credentials else {
        return Err(Failure::invalid_credentials(
            &secret_name,
            "the Secret does not exist",
        ));
    };
    let clouds = secret
        .data
        .as_ref()
        .and_then(|d| d.get("clouds.yaml"))
        .ok_or_else(|| Failure::invalid_credentials(&secret_name, "it has no clouds.yaml key"))?;
    let text = std::str::from_utf8(&clouds.0)
        .map_err(|_| Failure::invalid_credentials(&secret_name, "clouds.yaml is not UTF-8 text"))?;
    let cloud = openstack::CloudConfig::from_clouds_yaml(text, openstack::DEFAULT_CLOUD)
        .map_err(|e| Failure::invalid_credentials(&secret_name, e))?;
    let options = openstack::ClientOptions {
        ca_bundle: ca,
        request_timeout: OPENSTACK_TIMEOUT,
        user_agent: USER_AGENT.to_string(),
        ..openstack::ClientOptions::default()
    };
    let client = session
        .client(cloud, &options)
        .map_err(|e| Failure::from_openstack(&e))?;
    if !client
        .has_service(openstack::Service::SharedFileSystem)
        .await
        .map_err(|e| Failure::from_openstack(&e))?
    {
        return Err(Failure::no_manila_service());
    }
    let types = client
        .share_types()
        .await
        .map_err(|e| Failure::from_openstack(&e))?;
    Ok(types.into_iter().map(|t| t.name).collect())
}

/// The cloud's CA: the credentials Secret's `cacert`, else `ca-bundle.pem` of the CSO-synced
/// cloud provider config in the operator namespace.
fn ca_bundle(kit: &Kit, credentials: Option<&Secret>, ns: &str) -> Option<Vec<u8>> {
    credentials
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get("cacert"))
        .map(|b| b.0.clone())
        .filter(|b| !b.is_empty())
        .or_else(|| {
            kit.cache
                .config_map(ns, CLOUD_PROVIDER_CONFIGMAP)
                .and_then(|cm| cm.data)
                .and_then(|d| d.get("ca-bundle.pem").cloned())
                .filter(|s| !s.is_empty())
                .map(String::into_bytes)
        })
}
