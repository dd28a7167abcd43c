//! The verbs: get, list, create, update, patch, delete, deletecollection and watch start, with
//! the semantics of a real API server (preconditions, generation, the status subresource,
//! finalizers, managed fields, CRDs becoming served resources).
//!
//! Everything here runs under one lock and is synchronous; the HTTP layer and the built-in
//! controllers (garbage collector, namespace controller, workload simulator) both call it.
//!
//! Where things are: the request types and [`Cluster`] are here; its verbs are split by what
//! they do: `reads` (get, list), `create`, `update` (update, patch, server-side apply, scale),
//! `delete` (delete, deletecollection), `side_effects` (what a write changes besides the object:
//! served CRDs, controller hooks), `admit` (the admission chain every write passes), and
//! `support` the free helpers they share.

mod admit;
mod create;
mod delete;
mod reads;
mod side_effects;
mod support;
mod update;

use serde_json::Value;

use crate::admission::FieldValidation;
use crate::admission_plugins::Requester;
use crate::resources::Catalogue;
use crate::resources::GroupResource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{ClusterView, Store, WatchStart, WatchStartError};

/// Who is asking and how: the parts of a request that shape a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `fieldManager`, or the name derived from the User-Agent.
    pub manager: String,
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// For server-side apply.
    pub force: bool,
    /// Who asks, for admission policies (`admission_policy.rs`); `None` for kube-sim's own
    /// writes, which are not admitted.
    pub requester: Option<Requester>,
}

/// The result of a write: HTTP status, body and warnings.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub code: u16,
    pub body: Value,
    pub warnings: Vec<String>,
}

impl Outcome {
    fn new(code: u16, body: Value) -> Self {
        Self {
            code,
            body,
            warnings: Vec::new(),
        }
    }

    fn warned(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }
}

/// The patch types the server accepts, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let ct = ct.split(';').next().unwrap_or_default().trim();
        match ct {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
    /// Who asks, for admission policies; `None` for kube-sim's own deletes.
    pub requester: Option<Requester>,
}

/// What a list or watch selects.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// `resourceVersion` of a list: empty or "0" means "current".
    pub resource_version: String,
    /// `resourceVersionMatch`: `Exact` or `NotOlderThan`.
    pub resource_version_match: Option<String>,
}

pub const ORPHAN_FINALIZER: &str = "orphan";
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The whole state of the emulated cluster.
pub struct Cluster {
    catalogue: Catalogue,
    store: Store,
    next_cluster_ip: u32,
    random: u64,
}

pub use support::{finalizers, now, parse_delete_body, parse_propagation, present, storage_type};

impl Cluster {
    /// The stored objects, for reading: every write goes through the verb handlers (admission,
    /// validation, resource versions) or the named operations below.
    pub fn store(&self) -> &Store {
        &self.store
    }
    /// The served resource types.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }
    /// Starts a watch of `gr` (see [`Store::watch`]).
    pub fn watch(
        &mut self,
        gr: &GroupResource,
        namespace: Option<&str>,
        from: Option<u64>,
    ) -> Result<WatchStart, WatchStartError> {
        self.store.watch(gr, namespace, from)
    }
    /// Forgets the event history, as an etcd compaction does (watches resuming older get 410).
    pub fn compact(&mut self) {
        self.store.compact();
    }
    /// Ends every open watch (clients re-watch), as an API server restart does.
    pub fn drop_watches(&mut self) {
        self.store.drop_watches();
    }
    /// Removes every stored object of a collection and the collection, without admission:
    /// the CRD finalizer's last step, when the resource is no longer served.
    pub(crate) fn purge_collection(&mut self, gr: &GroupResource) {
        let keys: Vec<(String, String)> = self
            .store
            .iter(gr, None, None)
            .map(|(k, _)| k.clone())
            .collect();
        for (ns, n) in keys {
            self.store.remove(gr, &ns, &n);
        }
        self.store.drop_collection(gr);
    }
}

impl ClusterView for Cluster {
    fn store(&self) -> &Store {
        &self.store
    }
    fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }
}
