//! The check of Manila at runtime: whether the cloud offers Manila and which share types it
//! has, asked in a background task (each call may take up to two minutes on a slow Keystone)
//! that nudges the loop when its answer is ready. The reconcile records it and goes on with
//! the last known answer meanwhile; a check whose credentials were replaced while it ran is
//! discarded. [`crate::detect`] holds the decisions, this module the tasks and conditions.
//!
//! After a successful listing the same task reads where this cluster's shares are exported
//! (the export-network diagnostic, [`crate::export_network`]): one page of the newest shares
//! the driver tagged with the cluster ID, the export locations of a few of each share type
//! (remembered by share id: they do not change), and their share networks' subnets; bounded
//! in count ([`SHARES_CHECKED`]) and in time ([`EXPORT_CHECK_TIMEOUT`]). The reconcile compares
//! what it found with the nodes' addresses, so a node that joins the storage network turns
//! the condition without another OpenStack call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use operator_kit::cache::Background;
use operator_kit::conditions::{self, OperatorCondition, reasons};
use operator_kit::csi::{Kit, fingerprint};
use tracing::{debug, info};

use crate::detect::{self, Detection, Failure, FailureKind, Status};
use crate::export_network::{self, EXPORT_NETWORK_REACHABLE, ShareExports};
use crate::nodes::NodesKnown;
use crate::{CLOUD_PROVIDER_CONFIGMAP, OPERATOR_CREDENTIALS_SECRET, USER_AGENT};

const STARTER_PREFIX: &str = "StarterController";
/// Whether Manila answered the last check after the driver was installed.
pub const SERVICE_REACHABLE: &str = "ManilaServiceReachable";
/// HTTP timeout of the OpenStack calls (anchors §5.1: raised to 120 s for slow Keystones).
const OPENSTACK_TIMEOUT: Duration = Duration::from_secs(120);

/// Shares whose export locations are read per check, at most (newest first).
pub const SHARES_CHECKED: usize = 20;
/// Of which at most this many of one share type.
pub const SHARES_PER_TYPE: usize = 3;
/// The reading of the shares' export networks gives up after this long (the share-type
/// answer is not held up longer than that).
pub const EXPORT_CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the export networks of this cluster's shares are read again: a new share is
/// seen within this, while a node's new address is compared at once, without OpenStack. Apart
/// from the share-type refresh so that the diagnostic adds about one share listing an hour to
/// an idle operator's OpenStack requests (DESIGN §7 budgets one share-type list per refresh).
pub const EXPORT_NETWORK_REFRESH: Duration = Duration::from_secs(3600);
/// Reason of `ManilaExportNetworkReachable=Unknown` when the shares could not be read.
pub const SHARES_UNKNOWN: &str = "SharesUnknown";

/// Export locations already read, by share id (client addresses, host-named count).
type ExportCache = BTreeMap<String, (Vec<std::net::IpAddr>, usize)>;

/// What one background check found: the share-type names or why Manila cannot be used, and,
/// after a successful listing, the export networks of this cluster's shares (`None`: not
/// looked at, e.g. no cluster ID yet).
struct Answer {
    types: Result<Vec<String>, Failure>,
    exports: Option<Result<Vec<ShareExports>, String>>,
    cache: ExportCache,
}

/// A Manila check in the background.
type Check = Background<Answer>;

/// What the Manila check keeps between reconciles.
pub struct ManilaCheck {
    /// Namespace of the operator's credentials Secret.
    operator_namespace: String,
    detection: Detection,
    openstack: Arc<openstack::Session>,
    /// The Manila check running in the background, with the fingerprint of the credentials
    /// it uses. Dropping it aborts the check.
    check: Option<(String, Check)>,
    /// Export networks of the last check that read them, or why that failed (the last good
    /// ones are kept through a failure).
    exports: Option<Vec<ShareExports>>,
    exports_error: Option<String>,
    export_cache: ExportCache,
    /// When the export networks were last read, with the credentials' fingerprint.
    exports_read: Option<(Instant, String)>,
}

impl ManilaCheck {
    /// Share types are listed again every `refresh`.
    pub fn new(operator_namespace: String, refresh: Duration) -> Self {
        Self {
            operator_namespace,
            detection: Detection::new(refresh),
            openstack: Arc::new(openstack::Session::new()),
            check: None,
            exports: None,
            exports_error: None,
            export_cache: ExportCache::new(),
            exports_read: None,
        }
    }

    /// Whether the next check also reads the export networks: never read (or the last read
    /// failed), other credentials, or [`EXPORT_NETWORK_REFRESH`] passed.
    fn exports_due(&self, now: Instant, fingerprint: &str) -> bool {
        match &self.exports_read {
            None => true,
            Some((at, fp)) => {
                fp != fingerprint || now.duration_since(*at) >= EXPORT_NETWORK_REFRESH
            }
        }
    }

    /// Records a finished check, starts one when due, and says what is known now and when to
    /// look again. `cluster_id` selects the shares of the export-network diagnostic (empty:
    /// not run).
    pub fn status(&mut self, kit: &Kit, cluster_id: &str) -> (Status, Option<Duration>) {
        let running = self.detect(kit, cluster_id);
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

    /// `ManilaExportNetworkReachable` from the export networks of the last check and the
    /// nodes' addresses now; `None` while there is nothing to say yet (no check has read the
    /// shares, or the first list of Nodes has not completed), which leaves the condition as
    /// it is. Deliberately not a `*Degraded` or `*Available` type, for the same reason as
    /// `ManilaServiceReachable`: it is a hint about the cloud's network, and the Cluster
    /// Storage Operator must not degrade the cluster on it.
    pub fn export_network_condition(&self, nodes: &NodesKnown) -> Option<OperatorCondition> {
        let exports = match (&self.exports, &self.exports_error) {
            (Some(exports), _) => exports,
            (None, Some(error)) => {
                return Some(OperatorCondition::new(
                    EXPORT_NETWORK_REACHABLE,
                    conditions::UNKNOWN,
                    SHARES_UNKNOWN,
                    format!(
                        "The export locations of this cluster's Manila shares could not be read: {error}; the check is repeated every {}",
                        detect::go_duration(self.detection.refresh())
                    ),
                ));
            }
            (None, None) => return None,
        };
        match nodes {
            NodesKnown::Starting => None,
            NodesKnown::Forbidden => Some(export_network::nodes_unknown(
                "RBAC refuses the list or watch of Nodes; the operator's ClusterRole needs list and watch on nodes",
            )),
            NodesKnown::Synced(nodes) => Some(export_network::condition(&export_network::compare(
                exports, nodes,
            ))),
        }
    }

    /// Records the answer of a finished check and starts a check in the background when one
    /// is due and none runs for the current credentials; never waits for OpenStack. Returns
    /// whether a check is running now.
    fn detect(&mut self, kit: &Kit, cluster_id: &str) -> bool {
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
            let (result, exports) = match answer {
                Ok(a) => {
                    self.export_cache = a.cache;
                    (a.types, a.exports)
                }
                Err(stopped) => (
                    Err(Failure::new(
                        FailureKind::Other,
                        format!(
                            "the check of Manila failed inside the operator ({stopped}); see the operator log"
                        ),
                    )),
                    None,
                ),
            };
            let summary = match &result {
                Ok(types) if !types.is_empty() => Ok(types.len()),
                Ok(_) => Err(Failure::no_share_types().message),
                Err(f) => Err(f.message.clone()),
            };
            if self.detection.finish(now, &used, &fp, result) {
                if matches!(exports, Some(Ok(_))) {
                    self.exports_read = Some((now, used.clone()));
                }
                self.record_exports(exports);
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
            let session = self.openstack.clone();
            let cache = std::mem::take(&mut self.export_cache);
            let cluster_id = cluster_id.to_string();
            let read_exports_now = self.exports_due(now, &fp);
            let kubernetes = kit.on_kubernetes();
            let work = async move {
                let listed = list_share_types(&session, credentials, ca, ns, kubernetes).await;
                let (types, exports, cache) = match listed {
                    Ok((types, client)) if !cluster_id.is_empty() && read_exports_now => {
                        let read = tokio::time::timeout(
                            EXPORT_CHECK_TIMEOUT,
                            read_exports(&client, &cluster_id, cache),
                        )
                        .await;
                        let (exports, cache) = match read {
                            Ok((exports, cache)) => (exports, cache),
                            Err(_) => (
                                Err(format!(
                                    "no answer within {} s",
                                    EXPORT_CHECK_TIMEOUT.as_secs()
                                )),
                                ExportCache::new(),
                            ),
                        };
                        (Ok(types), Some(exports), cache)
                    }
                    Ok((types, _)) => (Ok(types), None, cache),
                    Err(f) => (Err(f), None, cache),
                };
                Answer {
                    types,
                    exports,
                    cache,
                }
            };
            self.check = Some((fp, kit.cache.nudger().spawn(work)));
        }
        self.check.is_some()
    }

    /// Keeps the export networks a check read, or its error (the last good ones stay).
    fn record_exports(&mut self, exports: Option<Result<Vec<ShareExports>, String>>) {
        match exports {
            None => {}
            Some(Ok(list)) => {
                debug!(
                    shares = list.len(),
                    "read the export networks of this cluster's shares"
                );
                self.exports = Some(list);
                self.exports_error = None;
            }
            Some(Err(error)) => {
                info!(%error, "cannot read the export networks of this cluster's Manila shares");
                self.exports_error = Some(error);
            }
        }
    }
}

/// The shares to look at: newest first, at most [`SHARES_PER_TYPE`] of a share type and
/// [`SHARES_CHECKED`] in all.
fn pick_shares(shares: Vec<openstack::SharePlacement>) -> Vec<openstack::SharePlacement> {
    let mut per_type: BTreeMap<String, usize> = BTreeMap::new();
    shares
        .into_iter()
        .filter(|s| {
            let n = per_type.entry(s.share_type().to_string()).or_default();
            *n += 1;
            *n <= SHARES_PER_TYPE
        })
        .take(SHARES_CHECKED)
        .collect()
}

/// Reads the export networks of this cluster's newest shares (see the module doc). The cache
/// of export locations comes back pruned to the shares looked at.
async fn read_exports(
    client: &openstack::Client,
    cluster_id: &str,
    mut cache: ExportCache,
) -> (Result<Vec<ShareExports>, String>, ExportCache) {
    let listed = client
        .shares_tagged(
            openstack::MANILA_CLUSTER_KEY,
            cluster_id,
            openstack::MAX_SHARES,
        )
        .await;
    let shares = match listed {
        Ok(shares) => pick_shares(shares),
        Err(e) => return (Err(e.to_string()), cache),
    };
    let ids: BTreeSet<&str> = shares.iter().map(|s| s.id.as_str()).collect();
    cache.retain(|id, _| ids.contains(id.as_str()));
    let mut networks: BTreeMap<String, Vec<openstack::Cidr>> = BTreeMap::new();
    let mut out = Vec::with_capacity(shares.len());
    for share in &shares {
        if !cache.contains_key(&share.id) {
            match client.share_export_locations(&share.id).await {
                Ok(locations) => {
                    let clients = locations.iter().filter(|l| !l.is_admin_only);
                    let mut addresses = Vec::new();
                    let mut unaddressed = 0;
                    for l in clients {
                        if l.addresses.is_empty() {
                            unaddressed += 1;
                        }
                        addresses.extend(l.addresses.iter().copied());
                    }
                    cache.insert(share.id.clone(), (addresses, unaddressed));
                }
                // Deleted since the listing: not one of ours to judge any more.
                Err(e) if e.status() == Some(404) => continue,
                Err(e) => return (Err(e.to_string()), cache),
            }
        }
        let Some((addresses, unaddressed)) = cache.get(&share.id).cloned() else {
            continue;
        };
        let subnets = match &share.share_network_id {
            None => Vec::new(),
            Some(id) => match networks.get(id) {
                Some(cidrs) => cidrs.clone(),
                None => {
                    let cidrs = match client.share_network(id).await {
                        Ok(n) => n.subnets.iter().filter_map(|s| s.cidr).collect(),
                        // Not visible to this project (shared by another): no subnet known.
                        Err(e) if matches!(e.status(), Some(403 | 404)) => Vec::new(),
                        Err(e) => return (Err(e.to_string()), cache),
                    };
                    networks.insert(id.clone(), cidrs);
                    networks.get(id).cloned().unwrap_or_default()
                }
            },
        };
        out.push(ShareExports {
            share_id: share.id.clone(),
            share_type: share.share_type().to_string(),
            share_network: share.share_network_id.clone(),
            addresses,
            subnets,
            unaddressed,
        });
    }
    (Ok(out), cache)
}

/// One check of Manila, run in a background task: parse clouds.yaml, authenticate (or reuse
/// the session's token), find `sharev2` in the catalog and list the share types. The client
/// comes back for the export-network reading.
async fn list_share_types(
    session: &openstack::Session,
    credentials: Option<Secret>,
    ca: Option<Vec<u8>>,
    ns: String,
    kubernetes: bool,
) -> Result<(Vec<String>, Arc<openstack::Client>), Failure> {
    let invalid = |what: &dyn std::fmt::Display| {
        Failure::invalid_credentials(&ns, OPERATOR_CREDENTIALS_SECRET, kubernetes, what)
    };
    let Some(secret) = credentials else {
        return Err(invalid(&"the Secret does not exist"));
    };
    let clouds = secret
        .data
        .as_ref()
        .and_then(|d| d.get("clouds.yaml"))
        .ok_or_else(|| invalid(&"it has no clouds.yaml key"))?;
    let text =
        std::str::from_utf8(&clouds.0).map_err(|_| invalid(&"clouds.yaml is not UTF-8 text"))?;
    let cloud = openstack::CloudConfig::from_clouds_yaml(text, openstack::DEFAULT_CLOUD)
        .map_err(|e| invalid(&e))?;
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
    Ok((types.into_iter().map(|t| t.name).collect(), client))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::NodeAddresses;

    fn share(id: &str, ty: &str) -> openstack::SharePlacement {
        openstack::SharePlacement {
            id: id.into(),
            name: String::new(),
            status: "available".into(),
            share_type_id: format!("st-{ty}"),
            share_type_name: ty.into(),
            share_network_id: None,
            metadata: BTreeMap::new(),
        }
    }

    #[test]
    fn export_networks_are_read_hourly_and_at_once_for_new_credentials() {
        let mut check = ManilaCheck::new("ns".into(), Duration::from_secs(300));
        let t0 = Instant::now();
        assert!(check.exports_due(t0, "a"), "never read");
        check.exports_read = Some((t0, "a".into()));
        assert!(
            !check.exports_due(t0 + Duration::from_secs(300), "a"),
            "not at every share-type refresh"
        );
        assert!(check.exports_due(t0 + EXPORT_NETWORK_REFRESH, "a"));
        assert!(check.exports_due(t0, "b"), "new credentials");
    }

    #[test]
    fn a_few_shares_of_each_type_and_a_bounded_total_are_picked() {
        let mut listed: Vec<_> = (0..10).map(|i| share(&format!("g{i}"), "gold")).collect();
        listed.push(share("s0", "silver"));
        listed.extend((0..40).map(|i| share(&format!("t{i}"), &format!("type-{i}"))));
        let picked = pick_shares(listed);
        let ids: Vec<&str> = picked.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            &ids[..4],
            ["g0", "g1", "g2", "s0"],
            "newest first, 3 per type"
        );
        assert_eq!(picked.len(), SHARES_CHECKED);
        assert!(pick_shares(Vec::new()).is_empty());
    }

    fn exports() -> Vec<ShareExports> {
        vec![ShareExports {
            share_id: "sh1".into(),
            share_type: "gold".into(),
            share_network: Some("sn-1".into()),
            addresses: vec!["172.16.0.5".parse().expect("ip")],
            subnets: vec!["172.16.0.0/24".parse().expect("cidr")],
            unaddressed: 0,
        }]
    }

    fn nodes(ip: &str) -> NodesKnown {
        NodesKnown::Synced(vec![NodeAddresses {
            name: "worker-0".into(),
            addresses: vec![ip.parse().expect("ip")],
        }])
    }

    #[test]
    fn the_condition_waits_for_facts_and_keeps_the_last_good_ones() {
        let mut check = ManilaCheck::new("ns".into(), Duration::from_secs(300));
        assert_eq!(
            check.export_network_condition(&nodes("10.0.0.5")),
            None,
            "not read yet"
        );
        check.record_exports(Some(Err("HTTP 503".into())));
        let c = check
            .export_network_condition(&nodes("10.0.0.5"))
            .expect("said");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("Unknown", SHARES_UNKNOWN)
        );
        assert!(
            c.message.contains("HTTP 503") && c.message.contains("5m0s"),
            "{}",
            c.message
        );
        check.record_exports(Some(Ok(exports())));
        let c = check
            .export_network_condition(&nodes("10.0.0.5"))
            .expect("said");
        assert_eq!(c.status, "False");
        // A later failure keeps the last good facts; a check that did not look changes nothing.
        check.record_exports(Some(Err("timeout".into())));
        check.record_exports(None);
        let c = check
            .export_network_condition(&nodes("172.16.0.9"))
            .expect("said");
        assert_eq!(c.status, "True");
        assert_eq!(check.export_network_condition(&NodesKnown::Starting), None);
        let c = check
            .export_network_condition(&NodesKnown::Forbidden)
            .expect("said");
        assert_eq!(c.reason, export_network::NODE_ADDRESSES_UNKNOWN);
        assert!(
            c.message.contains("list and watch on nodes"),
            "{}",
            c.message
        );
    }
}
