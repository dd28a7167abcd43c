//! The nodes' IP addresses, for the export-network diagnostic: one watch of every Node that
//! keeps, per node, its name and its `InternalIP` and `ExternalIP` addresses and nothing else.
//!
//! Memory does not grow with what a Node holds (images, conditions, labels, managed fields):
//! objects are decoded into a projection that skips every other field while parsing, lists
//! are read in pages of [`PAGE_SIZE`], and at most [`MAX_ADDRESSES`] addresses are kept per
//! node; a thousand nodes cost well under a megabyte. The watch asks for a reconcile only when
//! the set of nodes or some node's addresses changed (kubelets rewrite their Node status
//! often; those updates cost a decode and nothing else). RBAC: `list` and `watch` on `nodes`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use operator_kit::cache::Nudger;
use serde::Deserialize;

/// Nodes per list page (client-go's default is 500; a Node can be tens of kilobytes).
pub const PAGE_SIZE: u32 = 50;
/// Addresses kept per node.
pub const MAX_ADDRESSES: usize = 8;

/// A node's name and its IP addresses (`InternalIP` and `ExternalIP`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAddresses {
    pub name: String,
    pub addresses: Vec<IpAddr>,
}

/// What the view can say now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodesKnown {
    /// The first list has not completed.
    Starting,
    /// RBAC refuses the list or watch of Nodes.
    Forbidden,
    /// Every node, by name.
    Synced(Vec<NodeAddresses>),
}

/// The projection a Node is decoded into: everything else is skipped by the parser.
#[derive(Clone, Debug, Deserialize)]
struct NodeAddressView {
    #[serde(deserialize_with = "slim_meta")]
    metadata: ObjectMeta,
    #[serde(default)]
    status: Option<NodeStatusView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct NodeStatusView {
    #[serde(default)]
    addresses: Option<Vec<AddressView>>,
}

#[derive(Clone, Debug, Deserialize)]
struct AddressView {
    #[serde(rename = "type", default)]
    type_: String,
    #[serde(default)]
    address: String,
}

/// Only the name and resourceVersion of the metadata (labels, annotations and managed fields
/// of a Node are large and unused here).
fn slim_meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Slim {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        resource_version: Option<String>,
    }
    let slim = Slim::deserialize(d)?;
    Ok(ObjectMeta {
        name: slim.name,
        resource_version: slim.resource_version,
        ..ObjectMeta::default()
    })
}

impl Resource for NodeAddressView {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Node".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "nodes".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The IP addresses of a node's `status.addresses` that pods' traffic leaves from
/// (`InternalIP`, `ExternalIP`; not host names), at most [`MAX_ADDRESSES`], without repeats.
fn addresses_of(view: &NodeAddressView) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let listed = view.status.as_ref().and_then(|s| s.addresses.as_ref());
    for a in listed.into_iter().flatten() {
        if !matches!(a.type_.as_str(), "InternalIP" | "ExternalIP") {
            continue;
        }
        if let Ok(ip) = a.address.trim().parse::<IpAddr>()
            && !out.contains(&ip)
            && out.len() < MAX_ADDRESSES
        {
            out.push(ip);
        }
    }
    out
}

#[derive(Default)]
struct Table {
    forbidden: bool,
    synced: bool,
    nodes: BTreeMap<String, Vec<IpAddr>>,
    /// The nodes of a list in progress (a relist replaces `nodes` when it completes).
    listing: Option<BTreeMap<String, Vec<IpAddr>>>,
}

impl Table {
    /// Applies one watch event; true when what the view says changed.
    fn apply(&mut self, event: watcher::Event<NodeAddressView>) -> bool {
        let name = |v: &NodeAddressView| v.metadata.name.clone().unwrap_or_default();
        self.forbidden = false;
        match event {
            watcher::Event::Init => {
                self.listing = Some(BTreeMap::new());
                false
            }
            watcher::Event::InitApply(v) => {
                let addresses = addresses_of(&v);
                self.listing
                    .get_or_insert_with(BTreeMap::new)
                    .insert(name(&v), addresses);
                false
            }
            watcher::Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                let changed = !self.synced || listed != self.nodes;
                self.nodes = listed;
                self.synced = true;
                changed
            }
            watcher::Event::Apply(v) => {
                let addresses = addresses_of(&v);
                self.nodes.insert(name(&v), addresses.clone()) != Some(addresses)
            }
            watcher::Event::Delete(v) => self.nodes.remove(&name(&v)).is_some(),
        }
    }

    fn known(&self) -> NodesKnown {
        if self.forbidden {
            NodesKnown::Forbidden
        } else if !self.synced {
            NodesKnown::Starting
        } else {
            NodesKnown::Synced(
                self.nodes
                    .iter()
                    .map(|(name, addresses)| NodeAddresses {
                        name: name.clone(),
                        addresses: addresses.clone(),
                    })
                    .collect(),
            )
        }
    }
}

/// The running view; dropping it stops the watch.
pub struct NodeView {
    table: Arc<Mutex<Table>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for NodeView {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NodeView {
    /// Starts the watch (inside a tokio runtime). `nudger` asks for a reconcile when the
    /// nodes' addresses change.
    pub fn start(client: Client, nudger: Nudger) -> Self {
        let table = Arc::new(Mutex::new(Table::default()));
        let api: Api<NodeAddressView> = Api::all(client);
        // The operators' client has a read timeout; a watch must end (server side) before it.
        let config = operator_kit::client_config::watcher_config().page_size(PAGE_SIZE);
        let shared = table.clone();
        let task = tokio::spawn(async move {
            let stream = watcher(api, config).default_backoff();
            let mut stream = std::pin::pin!(stream);
            while let Some(item) = stream.next().await {
                let changed = match item {
                    Ok(event) => lock(&shared).apply(event),
                    Err(error) => {
                        let forbidden = is_forbidden(&error);
                        let mut t = lock(&shared);
                        let newly = forbidden && !t.forbidden;
                        t.forbidden = forbidden;
                        if newly {
                            tracing::error!(%error,
                                "RBAC refuses the list or watch of Nodes; the export-network check cannot compare node addresses");
                        } else if !forbidden {
                            tracing::warn!(%error, "the watch of Nodes failed; retrying with backoff");
                        }
                        newly
                    }
                };
                if changed {
                    nudger.nudge();
                }
            }
        });
        Self { table, task }
    }

    /// What is known about the nodes now.
    pub fn known(&self) -> NodesKnown {
        lock(&self.table).known()
    }
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    table
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn is_forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 403,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: serde_json::Value) -> NodeAddressView {
        serde_json::from_value(json).expect("decodes")
    }

    #[test]
    fn only_internal_and_external_ips_are_kept_and_the_rest_is_skipped() {
        let v = node(serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-0", "resourceVersion": "7",
                         "labels": {"a": "b"}, "managedFields": [{"manager": "kubelet"}]},
            "spec": {"providerID": "openstack:///x"},
            "status": {"addresses": [
                {"type": "InternalIP", "address": "10.0.0.5"},
                {"type": "InternalIP", "address": "fd00::5"},
                {"type": "ExternalIP", "address": "203.0.113.5"},
                {"type": "Hostname", "address": "worker-0"},
                {"type": "InternalDNS", "address": "10.9.9.9"},
                {"type": "InternalIP", "address": "not an ip"},
                {"type": "InternalIP", "address": "10.0.0.5"}
            ], "images": [{"names": ["x"], "sizeBytes": 1}]}
        }));
        assert_eq!(v.metadata.name.as_deref(), Some("worker-0"));
        assert!(v.metadata.labels.is_none(), "labels are not kept");
        let ips: Vec<String> = addresses_of(&v).iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["10.0.0.5", "fd00::5", "203.0.113.5"]);
        let bare = node(serde_json::json!({"metadata": {"name": "n"}}));
        assert!(addresses_of(&bare).is_empty());
        let many: Vec<serde_json::Value> = (0..100)
            .map(|i| serde_json::json!({"type": "InternalIP", "address": format!("10.1.0.{i}")}))
            .collect();
        let crowded = node(serde_json::json!({"metadata": {"name": "n"},
            "status": {"addresses": many}}));
        assert_eq!(addresses_of(&crowded).len(), MAX_ADDRESSES);
    }

    #[test]
    fn the_table_follows_lists_and_events_and_says_when_addresses_changed() {
        let n = |name: &str, ip: &str| {
            node(serde_json::json!({"metadata": {"name": name},
                "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}))
        };
        let mut t = Table::default();
        assert_eq!(t.known(), NodesKnown::Starting);
        assert!(!t.apply(watcher::Event::Init));
        assert!(!t.apply(watcher::Event::InitApply(n("a", "10.0.0.1"))));
        assert_eq!(
            t.known(),
            NodesKnown::Starting,
            "not until the list is complete"
        );
        assert!(t.apply(watcher::Event::InitDone), "synced");
        assert!(
            !t.apply(watcher::Event::Apply(n("a", "10.0.0.1"))),
            "same addresses"
        );
        assert!(t.apply(watcher::Event::Apply(n("a", "172.16.0.1"))));
        assert!(t.apply(watcher::Event::Apply(n("b", "10.0.0.2"))));
        assert!(t.apply(watcher::Event::Delete(n("b", "10.0.0.2"))));
        // A relist with the same nodes changes nothing; one without a node does.
        assert!(!t.apply(watcher::Event::Init));
        assert!(!t.apply(watcher::Event::InitApply(n("a", "172.16.0.1"))));
        assert!(!t.apply(watcher::Event::InitDone));
        assert!(!t.apply(watcher::Event::Init));
        assert!(t.apply(watcher::Event::InitDone));
        assert_eq!(t.known(), NodesKnown::Synced(vec![]));
        t.forbidden = true;
        assert_eq!(t.known(), NodesKnown::Forbidden);
    }
}
