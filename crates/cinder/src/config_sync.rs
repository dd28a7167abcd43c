//! Cinder's config-sync step: generates the driver's `cloud-conf` ConfigMap from the cloud
//! provider config, the CA and `enable_topology`, which it learns by listing availability zones
//! (on a timer and when credentials change, in the background once a value exists).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use openshift_api::config::Infrastructure;
use openstack::Retry;
use operator_kit::cache::Background;
use operator_kit::conditions;
use operator_kit::csi::{self, Kit, Pass, StepError, clouds_yaml_of, fingerprint};
use tracing::warn;

use crate::build::{self, Facts};
use crate::config::{self, CloudConfigRef};
use crate::topology::{TopologyError, TopologySource, TopologyState, UserOverride, VolumeZone};
use crate::{
    CLOUD_CONF_CONFIGMAP, CREDENTIALS_SECRET, SYNCED_CLOUD_PROVIDER_CONFIGMAP, USER_AGENT,
};

/// Condition prefix, as the Go operator's controller is named (anchors §4.1).
pub const CONFIG_SYNC_PREFIX: &str = "ConfigSync";

/// What [`ConfigSync::cloud_conf`] generated, and when the availability zones are due again.
struct CloudConf {
    config_map: ConfigMap,
    requeue: Option<Duration>,
    /// Set when the latest availability-zone listing failed and an earlier result is
    /// published: `cloud-conf` is still applied, but the failure is reported.
    stale: Option<StaleTopology>,
}

/// The latest availability-zone listing failed; `cloud-conf` keeps the last good value.
#[derive(Debug, thiserror::Error)]
#[error("{error}; {CLOUD_CONF_CONFIGMAP} keeps {key}={value} from the last successful listing", key = config::ENABLE_TOPOLOGY_KEY)]
struct StaleTopology {
    error: TopologyError,
    value: String,
}

/// Why `cloud-conf` could not be generated (the message of `ConfigSyncDegraded`), and when
/// the availability zones are due again.
#[derive(Debug, thiserror::Error)]
#[error("{cause}")]
struct CloudConfError {
    #[source]
    cause: CloudConfCause,
    requeue: Option<Duration>,
}

#[derive(Debug, thiserror::Error)]
enum CloudConfCause {
    /// The cloud config, the CA or the user's ConfigMap.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// No `enable_topology` value can be published.
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

impl CloudConfCause {
    fn requeue(self, requeue: Option<Duration>) -> CloudConfError {
        CloudConfError {
            cause: self,
            requeue,
        }
    }
}

impl From<config::ConfigError> for CloudConfError {
    fn from(e: config::ConfigError) -> Self {
        CloudConfCause::from(e).requeue(None)
    }
}

/// What the config sync keeps between reconciles.
pub struct ConfigSync {
    topology: TopologyState,
    openstack: Arc<openstack::Session>,
    /// An availability-zone listing running in the background (refreshes after the first,
    /// so a slow or hung OpenStack never holds up the other steps). It nudges the loop when
    /// its answer is ready; dropping it aborts the listing.
    listing: Option<(String, Background<Result<bool, TopologyError>>)>,
}

impl ConfigSync {
    /// Zones are listed again every `refresh` (`0`: once per set of credentials).
    pub fn new(refresh: Duration) -> Self {
        Self {
            topology: TopologyState::new(refresh),
            openstack: Arc::new(openstack::Session::new()),
            listing: None,
        }
    }

    /// Generates and applies `cloud-conf`; returns it (for the hash annotations) and sets when
    /// the availability zones are due again. `facts` says whether the control plane is hosted:
    /// then no user config is read, the CA comes from `openstack-cloud-config` of the
    /// control-plane namespace, and `cloud-conf` is written to the guest namespace as well
    /// (anchors §4.5, §4.8).
    pub async fn step(&mut self, kit: &Kit, pass: &mut Pass, facts: &Facts) -> Option<ConfigMap> {
        let ns = kit.namespace.clone();
        let credentials = kit.cache.secret(&ns, CREDENTIALS_SECRET);
        pass.board.set_condition(conditions::insecure_connection(
            &[(
                &format!("{ns}/{CREDENTIALS_SECRET}"),
                clouds_yaml_of(credentials.as_ref()),
            )],
            |b| openstack::insecure_settings_in(b, openstack::DEFAULT_CLOUD),
        ));
        match self.cloud_conf(kit, &ns, facts.hosted.is_some()).await {
            Ok(CloudConf {
                config_map: cm,
                requeue,
                stale,
            }) => {
                pass.requeue_after = requeue;
                let result = match build::cloud_conf_copies(facts, &cm) {
                    Ok(copies) => {
                        let mut result = Ok(());
                        for d in copies {
                            if let Err(e) = kit.apply(&d, None).await {
                                result = Err(StepError::from(e));
                            }
                        }
                        result
                    }
                    Err(e) => Err(e.into()),
                };
                pass.post(
                    CONFIG_SYNC_PREFIX,
                    result.and_then(|()| stale.map_or(Ok(()), |s| Err(StepError::other(s)))),
                );
                Some(cm)
            }
            Err(e) => {
                pass.requeue_after = e.requeue;
                kit.metrics.error("config");
                pass.post::<()>(CONFIG_SYNC_PREFIX, Err(StepError::other(e)));
                // Keep rolling out what exists: the live cloud-conf still describes the cloud.
                kit.cache.config_map(&ns, CLOUD_CONF_CONFIGMAP)
            }
        }
    }

    /// Generates `cloud-conf`, listing the availability zones when they are due.
    async fn cloud_conf(
        &mut self,
        kit: &Kit,
        ns: &str,
        hosted: bool,
    ) -> Result<CloudConf, CloudConfError> {
        let (source, ca_config_map) = if hosted {
            (
                config::SourceConfig::default(),
                operator_kit::hosted::CLOUD_CA_CONFIG_MAP,
            )
        } else {
            (self.user_source(kit)?, SYNCED_CLOUD_PROVIDER_CONFIGMAP)
        };
        let credentials = kit.cache.secret(ns, CREDENTIALS_SECRET);
        let synced = kit.cache.config_map(ns, ca_config_map);
        let ca = config::select_ca(synced.as_ref(), credentials.as_ref(), ns)?;
        let origin = source
            .origin
            .as_ref()
            .map(|o| format!("{}/{}", o.namespace, o.name))
            .unwrap_or_default();
        let user_override = source.enable_topology.as_deref().map(|value| UserOverride {
            value,
            origin: &origin,
        });
        let fingerprint = fingerprint(credentials.as_ref(), ca.as_ref().map(|c| c.pem.as_bytes()));
        let now = Instant::now();
        // A finished background listing is recorded first (for the credentials it used).
        if let Some((used, listing)) = self.listing.as_mut()
            && let Some(answer) = listing.try_take()
        {
            let used = std::mem::take(used);
            self.listing = None;
            let outcome = answer.unwrap_or_else(|e| {
                Err(TopologyError::Lookup {
                    message: format!("the listing task failed: {e}"),
                    retry: Retry::Soon,
                })
            });
            self.record_listing(kit, now, &used, outcome);
        }
        let due = self
            .topology
            .is_due(now, user_override.is_some(), &fingerprint);
        let listing_current = self
            .listing
            .as_ref()
            .is_some_and(|(used, _)| *used == fingerprint);
        if due && !listing_current {
            let task = list_zones(
                self.openstack.clone(),
                ns.to_string(),
                kit.on_kubernetes(),
                credentials.clone(),
                ca.as_ref().map(|c| c.pem.as_bytes().to_vec()),
            );
            if self.topology.decide(None).is_ok() {
                // A value exists: refresh in the background and publish it when it is known.
                self.listing = Some((fingerprint.clone(), kit.cache.nudger().spawn(task)));
            } else {
                // The first value: cloud-conf cannot be written without it.
                let outcome = task.await;
                self.record_listing(kit, now, &fingerprint, outcome);
            }
        }
        let requeue = if self.listing.is_some() {
            // The listing nudges the loop when its answer is ready: no timer meanwhile.
            None
        } else {
            self.topology
                .requeue_after(Instant::now(), user_override.is_some(), &fingerprint)
        };
        let value = self
            .topology
            .decide(user_override)
            .map_err(|e| CloudConfCause::from(e).requeue(requeue))?;
        let data = config::cloud_conf_data(&source, ca.as_ref(), &value.value)
            .map_err(|e| CloudConfCause::from(e).requeue(requeue))?;
        // A rotation to bad credentials must not look healthy just because an earlier listing
        // succeeded (the driver will fail with them too).
        let stale = match (&value.source, self.topology.last_error()) {
            (TopologySource::PreviousResult, Some(e)) => Some(StaleTopology {
                error: e.clone(),
                value: value.value.clone(),
            }),
            _ => None,
        };
        Ok(CloudConf {
            config_map: config::cloud_conf_configmap(ns, data),
            requeue,
            stale,
        })
    }

    /// The standalone source of `cloud.conf`: the user's ConfigMap, else the installer's.
    fn user_source(&self, kit: &Kit) -> Result<config::SourceConfig, config::ConfigError> {
        let user = kit
            .cache
            .config_map(config::USER_CONFIG_NAMESPACE, config::USER_CONFIG_NAME);
        let infra: Option<Infrastructure> = kit.cache.get::<Infrastructure>(None, "cluster");
        let cloud_ref = infra
            .as_ref()
            .and_then(|i| i.spec.cloud_config.as_ref())
            .map(|c| CloudConfigRef {
                name: c.name.clone(),
                key: c.key.clone().unwrap_or_default(),
            });
        let infra_cm = cloud_ref
            .as_ref()
            .filter(|r| !r.name.is_empty())
            .and_then(|r| kit.cache.config_map(config::USER_CONFIG_NAMESPACE, &r.name));
        config::select_source(user.as_ref(), cloud_ref.as_ref(), infra_cm.as_ref())
    }

    fn record_listing(
        &mut self,
        kit: &Kit,
        at: Instant,
        fingerprint: &str,
        outcome: Result<bool, TopologyError>,
    ) {
        if let Err(e) = &outcome {
            kit.metrics.error("openstack");
            warn!(error = %e, "cannot list availability zones");
        }
        self.topology.record(at, fingerprint, outcome);
    }
}

/// Lists compute and volume availability zones with the cluster's credentials and decides
/// `enable_topology`; errors name the Secret or the OpenStack step, never a secret value.
async fn list_zones(
    session: Arc<openstack::Session>,
    namespace: String,
    kubernetes: bool,
    credentials: Option<Secret>,
    ca: Option<Vec<u8>>,
) -> Result<bool, TopologyError> {
    let lookup = |(message, retry)| TopologyError::Lookup { message, retry };
    let client = openstack_client(&session, &namespace, kubernetes, credentials.as_ref(), ca)
        .map_err(lookup)?;
    let failed = |e: openstack::Error| lookup((e.to_string(), e.kind().retry()));
    let compute = client.compute_availability_zones().await.map_err(failed)?;
    let volume = client.volume_availability_zones().await.map_err(failed)?;
    let volume: Vec<VolumeZone> = volume
        .into_iter()
        .map(|name| VolumeZone {
            name,
            available: true,
        })
        .collect();
    crate::topology::compute_enable_topology(&compute, &volume)
}

/// What the operator's own OpenStack calls use: the credentials Secret and the CA bundle (the
/// same the driver gets), and their fingerprint, whose change starts new listings at once.
pub(crate) struct OpenStackInputs {
    pub credentials: Option<Secret>,
    pub ca: Option<Vec<u8>>,
    pub fingerprint: String,
}

/// Reads [`OpenStackInputs`] from the caches; the error names what is wrong with the CA.
pub(crate) fn openstack_inputs(kit: &Kit) -> Result<OpenStackInputs, config::ConfigError> {
    let ns = kit.namespace.as_str();
    let credentials = kit.cache.secret(ns, CREDENTIALS_SECRET);
    let synced = kit.cache.config_map(ns, SYNCED_CLOUD_PROVIDER_CONFIGMAP);
    let ca =
        config::select_ca(synced.as_ref(), credentials.as_ref(), ns)?.map(|c| c.pem.into_bytes());
    let fingerprint = fingerprint(credentials.as_ref(), ca.as_deref());
    Ok(OpenStackInputs {
        credentials,
        ca,
        fingerprint,
    })
}

/// An OpenStack client for the cloud of the `clouds.yaml` in the credentials Secret (cloud
/// `openstack`), trusting `ca`. The error is a message naming the Secret, never a secret
/// value, and how soon trying again may help. A missing Secret or key is explained for the
/// platform (`kubernetes`: the `kubectl create secret` command; else the cloud credential
/// operator).
pub(crate) fn openstack_client(
    session: &openstack::Session,
    namespace: &str,
    kubernetes: bool,
    credentials: Option<&Secret>,
    ca: Option<Vec<u8>>,
) -> Result<Arc<openstack::Client>, (String, Retry)> {
    let secret_name = format!("{namespace}/{CREDENTIALS_SECRET}");
    // Only a new Secret can mend these, and a new Secret is listed at once.
    let unusable = |message: String| (message, Retry::AtRefresh);
    let hint = || csi::credentials_secret_hint(kubernetes, namespace, CREDENTIALS_SECRET);
    let clouds = match (credentials, clouds_yaml_of(credentials)) {
        (_, Some(clouds)) => clouds,
        (None, None) => {
            return Err(unusable(format!(
                "Secret {secret_name} does not exist; {}",
                hint()
            )));
        }
        (Some(_), None) => {
            return Err(unusable(format!(
                "Secret {secret_name} has no clouds.yaml key; {}",
                hint()
            )));
        }
    };
    let text = std::str::from_utf8(clouds).map_err(|_| {
        unusable(format!(
            "clouds.yaml in Secret {secret_name} is not UTF-8 text"
        ))
    })?;
    let cloud = openstack::CloudConfig::from_clouds_yaml(text, openstack::DEFAULT_CLOUD)
        .map_err(|e| unusable(format!("clouds.yaml in Secret {secret_name}: {e}")))?;
    let options = openstack::ClientOptions {
        ca_bundle: ca,
        request_timeout: Duration::from_secs(30),
        user_agent: USER_AGENT.to_string(),
        ..openstack::ClientOptions::default()
    };
    session
        .client(cloud, &options)
        .map_err(|e| (e.to_string(), e.kind().retry()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn message(kubernetes: bool, credentials: Option<&Secret>) -> String {
        let session = openstack::Session::new();
        match openstack_client(&session, "drivers", kubernetes, credentials, None) {
            Ok(_) => panic!("no client without clouds.yaml"),
            Err((message, retry)) => {
                assert_eq!(retry, Retry::AtRefresh, "{message}");
                message
            }
        }
    }

    #[test]
    fn a_missing_secret_is_explained_for_the_platform() {
        let command = "kubectl -n drivers create secret generic openstack-cloud-credentials \
                       --from-file=clouds.yaml=./clouds.yaml";
        let without_key = Secret {
            data: Some([("cacert".to_string(), ByteString(b"pem".to_vec()))].into()),
            ..Secret::default()
        };
        for secret in [None, Some(&without_key)] {
            let kubernetes = message(true, secret);
            assert!(kubernetes.contains(command), "{kubernetes}");
            assert!(!kubernetes.contains("CredentialsRequest"), "{kubernetes}");
            let openshift = message(false, secret);
            assert!(
                openshift.contains("cloud credential operator")
                    && openshift.contains("CredentialsRequest"),
                "{openshift}"
            );
            assert!(!openshift.contains("kubectl"), "{openshift}");
        }
        assert!(message(true, None).contains("drivers/openstack-cloud-credentials does not exist"));
        assert!(message(true, Some(&without_key)).contains("has no clouds.yaml key"));
    }

    /// The ConfigSyncDegraded message of a failed refresh while an earlier value is published
    /// (as it was before the error became a type).
    #[test]
    fn a_stale_listing_says_what_failed_and_what_is_kept() {
        let stale = StaleTopology {
            error: TopologyError::Lookup {
                message: "Nova is down".into(),
                retry: Retry::Soon,
            },
            value: "true".into(),
        };
        let posted = StepError::other(stale);
        assert_eq!(posted.reason(), "SyncError");
        assert_eq!(
            posted.to_string(),
            format!(
                "{}; cloud-conf keeps enable_topology=true from the last successful listing",
                TopologyError::Lookup {
                    message: "Nova is down".into(),
                    retry: Retry::Soon,
                }
            )
        );
    }
}
