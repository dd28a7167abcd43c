//! Watch caches of the objects the apply engine manages, so a steady-state reconcile reads no
//! live object.
//!
//! One kube-rs reflector store of `DynamicObject` per (kind, scope): namespaced kinds are
//! watched per namespace the operator owns, cluster-scoped kinds (and namespaced objects in
//! namespaces it does not own) per object name with a `metadata.name` field selector, so memory
//! never grows with what else is in the cluster and RBAC can pin the names.
//! `managedFields` are stripped before objects enter a store. Every watch event bumps a change
//! counter the runtime maps to "reconcile the root". Every watch asks the server to end it
//! after [`crate::client_config::WATCH_TIMEOUT_SECS`] and is resumed, so the client's read
//! timeout never cuts a quiet one.
//!
//! The set of watches is fixed before start ([`CacheBuilder`]); this module never writes to
//! the API and never issues a GET of a single object.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What one watch covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every object of a namespaced kind in this namespace.
    Namespace(String),
    /// The one cluster-scoped object of this name.
    ClusterObject(String),
    /// The one namespaced object of this name in this namespace: for objects in namespaces
    /// the operator does not own, where RBAC grants it only these names (`resourceNames`
    /// allows a list and watch pinned by a `metadata.name` field selector).
    NamespacedObject(String, String),
    /// Every cluster-scoped object of the kind that matches this label selector: for objects
    /// whose names are known only at run time (Manila's StorageClass per share type), so one
    /// watch covers them all however many there are, and a change of one reaches the loop at
    /// once.
    ClusterSelected(String),
}

/// Where a watch is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncState {
    /// The initial list has not completed yet.
    Starting,
    /// The store holds a complete picture (and is kept current by the watch).
    Synced,
    /// The API server does not serve the kind (its CRD is missing); the watch keeps retrying
    /// with backoff and turns `Synced` once the CRD is created.
    NotServed,
    /// RBAC refuses the list or watch (403). The watch keeps retrying; meanwhile the object
    /// counts as not cached, so a step that needs it reads it live, meets the same 403 and
    /// reports it in its condition, instead of the whole operator waiting silently for a sync
    /// that cannot come.
    Forbidden,
}

/// The answer of [`Cache::lookup`].
#[derive(Clone)]
pub enum Lookup {
    /// The cache has the object.
    Found(Arc<DynamicObject>),
    /// The cache is synced and the object does not exist. `seen_rv` is the highest
    /// resourceVersion this watch has observed (used to tell a stale cache from a deletion).
    Absent { seen_rv: u64 },
    /// The kind is not served by the API server.
    NotServed,
    /// No synced watch covers this object; the caller must read it live.
    NotCached,
}

/// By hand: a cached object may be a Secret.
impl std::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lookup::Found(object) => f
                .debug_tuple("Found")
                .field(&crate::redact::RedactedObject(object))
                .finish(),
            Lookup::Absent { seen_rv } => {
                f.debug_struct("Absent").field("seen_rv", seen_rv).finish()
            }
            Lookup::NotServed => f.write_str("NotServed"),
            Lookup::NotCached => f.write_str("NotCached"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    api_version: String,
    plural: String,
    scope: Scope,
}

impl Key {
    fn new(ar: &ApiResource, scope: Scope) -> Self {
        Self {
            api_version: ar.api_version.clone(),
            plural: ar.plural.clone(),
            scope,
        }
    }
}

struct Entry {
    ar: ApiResource,
    store: Store<DynamicObject>,
    state: Arc<Mutex<SyncState>>,
    seen_rv: Arc<AtomicU64>,
}

/// Collects the watches before start.
pub struct CacheBuilder {
    /// Each watch runs against the cluster of its namespace (see [`crate::clusters`]).
    clients: crate::clusters::Clients,
    namespaces: BTreeSet<String>,
    watches: Vec<(ApiResource, Scope)>,
}

impl CacheBuilder {
    /// `namespaces` are the namespaces the operator owns; [`CacheBuilder::namespaced`] watches
    /// a kind in each of them.
    pub fn new(
        clients: impl Into<crate::clusters::Clients>,
        namespaces: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            clients: clients.into(),
            namespaces: namespaces.into_iter().map(Into::into).collect(),
            watches: Vec::new(),
        }
    }

    /// Watches a namespaced kind in every owned namespace.
    pub fn namespaced(mut self, ar: &ApiResource) -> Self {
        let scopes: Vec<Scope> = self
            .namespaces
            .iter()
            .cloned()
            .map(Scope::Namespace)
            .collect();
        for scope in scopes {
            self.push(ar, scope);
        }
        self
    }

    /// Watches a namespaced kind in one namespace (owned or not).
    pub fn in_namespace(mut self, ar: &ApiResource, namespace: &str) -> Self {
        self.push(ar, Scope::Namespace(namespace.to_string()));
        self
    }

    /// Watches one namespaced object by name (in a namespace the operator does not own).
    pub fn namespaced_object(mut self, ar: &ApiResource, namespace: &str, name: &str) -> Self {
        self.push(
            ar,
            Scope::NamespacedObject(namespace.to_string(), name.to_string()),
        );
        self
    }

    /// Watches one cluster-scoped object by name.
    pub fn cluster_object(mut self, ar: &ApiResource, name: &str) -> Self {
        self.push(ar, Scope::ClusterObject(name.to_string()));
        self
    }

    /// Watches every cluster-scoped object of a kind that carries the labels of `selector`
    /// (`key=value,...`). A lookup of a name this kind has no by-name watch for answers from
    /// here; an object without the labels is reported absent, so creating it meets a 409 and
    /// the apply engine reads it live and writes the labels onto it.
    pub fn cluster_selected(mut self, ar: &ApiResource, selector: &str) -> Self {
        self.push(ar, Scope::ClusterSelected(selector.to_string()));
        self
    }

    /// Watches what covers `obj`: its kind in its namespace, or, for a cluster-scoped object,
    /// the object by name. The usual way to register every desired object of an operator.
    pub fn object(self, ar: &ApiResource, obj: &DynamicObject) -> Self {
        let name = obj.metadata.name.clone().unwrap_or_default();
        match obj.metadata.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => self.in_namespace(ar, ns),
            _ => self.cluster_object(ar, &name),
        }
    }

    fn push(&mut self, ar: &ApiResource, scope: Scope) {
        if !self
            .watches
            .iter()
            .any(|(a, s)| a.api_version == ar.api_version && a.plural == ar.plural && *s == scope)
        {
            self.watches.push((ar.clone(), scope));
        }
    }

    /// Starts one watch task per registration. Must be called inside a tokio runtime; the tasks
    /// stop when the last clone of the returned [`Cache`] is dropped.
    pub fn start(self) -> Cache {
        let (changes, _) = watch::channel(0u64);
        let changes = Arc::new(changes);
        let mut entries = HashMap::new();
        let mut tasks = Vec::new();
        for (ar, scope) in self.watches {
            let client = match &scope {
                Scope::Namespace(ns) | Scope::NamespacedObject(ns, _) => {
                    self.clients.for_namespace(Some(ns)).clone()
                }
                Scope::ClusterObject(_) | Scope::ClusterSelected(_) => self.clients.guest().clone(),
            };
            let (api, config) = match &scope {
                Scope::Namespace(ns) => (
                    Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar),
                    crate::client_config::watcher_config(),
                ),
                Scope::ClusterObject(name) => (
                    Api::<DynamicObject>::all_with(client.clone(), &ar),
                    crate::client_config::watcher_config().fields(&format!("metadata.name={name}")),
                ),
                Scope::NamespacedObject(ns, name) => (
                    Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar),
                    crate::client_config::watcher_config().fields(&format!("metadata.name={name}")),
                ),
                Scope::ClusterSelected(selector) => (
                    Api::<DynamicObject>::all_with(client.clone(), &ar),
                    crate::client_config::watcher_config().labels(selector),
                ),
            };
            let writer = reflector::store::Writer::new(ar.clone());
            let store = writer.as_reader();
            let state = Arc::new(Mutex::new(SyncState::Starting));
            let seen_rv = Arc::new(AtomicU64::new(0));
            let task = tokio::spawn(run_watch(
                api,
                config,
                writer,
                ar.clone(),
                scope.clone(),
                state.clone(),
                seen_rv.clone(),
                changes.clone(),
            ));
            tasks.push(task);
            entries.insert(
                Key::new(&ar, scope),
                Entry {
                    ar,
                    store,
                    state,
                    seen_rv,
                },
            );
        }
        Cache {
            inner: Arc::new(Inner {
                entries,
                changes,
                tasks,
            }),
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_watch(
    api: Api<DynamicObject>,
    config: watcher::Config,
    mut writer: reflector::store::Writer<DynamicObject>,
    ar: ApiResource,
    scope: Scope,
    state: Arc<Mutex<SyncState>>,
    seen_rv: Arc<AtomicU64>,
    changes: Arc<watch::Sender<u64>>,
) {
    let client: Client = api.clone().into_client();
    let mut crd_backoff = CRD_RECHECK_MIN;
    loop {
        let stream = watcher(api.clone(), config.clone())
            .default_backoff()
            .modify(|obj: &mut DynamicObject| {
                // managedFields are most of an object's size and nothing here reads them.
                obj.metadata.managed_fields = None;
            });
        let mut stream = std::pin::pin!(stream);
        let mut not_served = false;
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    writer.apply_watcher_event(&event);
                    let note = |obj: &DynamicObject| {
                        if let Some(rv) = resource_version(obj) {
                            seen_rv.fetch_max(rv, Ordering::AcqRel);
                        }
                    };
                    match &event {
                        watcher::Event::Apply(o) | watcher::Event::Delete(o) => note(o),
                        watcher::Event::InitApply(o) => {
                            note(o);
                            continue;
                        }
                        watcher::Event::Init => continue,
                        watcher::Event::InitDone => {
                            set_state(&state, SyncState::Synced);
                            crd_backoff = CRD_RECHECK_MIN;
                        }
                    }
                    changes.send_modify(|n| *n = n.wrapping_add(1));
                }
                Err(error) => {
                    if is_forbidden(&error) {
                        let was = set_state(&state, SyncState::Forbidden);
                        if was != SyncState::Forbidden {
                            tracing::error!(kind = %ar.kind, ?scope, %error,
                                "RBAC refuses this watch; the operator's role lacks list/watch here");
                            changes.send_modify(|n| *n = n.wrapping_add(1));
                        }
                    } else if is_not_served(&error) {
                        let was = set_state(&state, SyncState::NotServed);
                        if was != SyncState::NotServed {
                            tracing::info!(kind = %ar.kind, api_version = %ar.api_version, ?scope,
                                "the API server does not serve this kind (CRD missing?); watching for its CRD");
                            changes.send_modify(|n| *n = n.wrapping_add(1));
                        }
                        not_served = true;
                        break;
                    } else {
                        tracing::warn!(kind = %ar.kind, ?scope, %error, "watch failed; retrying with backoff");
                    }
                }
            }
        }
        if !not_served {
            return; // the watcher stream never ends by itself; only if it is dropped
        }
        // Listing a kind that is not served again and again is an idle cluster's only traffic
        // on clusters without the snapshot or monitoring CRDs: wait on a watch of the CRD
        // instead, which costs nothing until it appears.
        match crd_name(&ar) {
            Some(name) => wait_for_crd(&client, &name, crd_backoff).await,
            None => tokio::time::sleep(CRD_RECHECK_MAX).await,
        }
        crd_backoff = (crd_backoff * 2).min(CRD_RECHECK_MAX);
    }
}

/// After the CRD shows up, the kind may take a moment to be served; each new miss waits a
/// little longer before the kind is listed again (and a missing CRD is waited for by watch).
const CRD_RECHECK_MIN: std::time::Duration = std::time::Duration::from_millis(500);
const CRD_RECHECK_MAX: std::time::Duration = std::time::Duration::from_secs(300);

/// `<plural>.<group>`, the name a CustomResourceDefinition serving `ar` must have; `None` for
/// the core group, which no CRD can serve.
fn crd_name(ar: &ApiResource) -> Option<String> {
    (!ar.group.is_empty()).then(|| format!("{}.{}", ar.plural, ar.group))
}

/// Returns once the CRD `name` exists (after `settle`, so an existing but not yet
/// established CRD is not listed in a tight loop). A watch by name, so this costs no request
/// while waiting; if RBAC or the server refuses that watch, it falls back to a long sleep.
async fn wait_for_crd(client: &Client, name: &str, settle: std::time::Duration) {
    let crds = ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    };
    let api = Api::<DynamicObject>::all_with(client.clone(), &crds);
    let config = crate::client_config::watcher_config().fields(&format!("metadata.name={name}"));
    let stream = watcher(api, config).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        match item {
            Ok(watcher::Event::Apply(_) | watcher::Event::InitApply(_)) => {
                tokio::time::sleep(settle).await;
                return;
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(crd = name, %error,
                    "cannot watch for the CRD; checking again in a few minutes");
                tokio::time::sleep(CRD_RECHECK_MAX).await;
                return;
            }
        }
    }
}

fn set_state(state: &Mutex<SyncState>, new: SyncState) -> SyncState {
    let mut guard = state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::mem::replace(&mut *guard, new)
}

fn is_forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 403,
        _ => false,
    }
}

fn is_not_served(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) => {
            crate::kinds::is_kind_not_served(e)
        }
        _ => false,
    }
}

/// The resourceVersion as a number (etcd and kube-sim use integers; anything else is treated
/// as unknown, which only disables the write-memo optimisations).
pub fn resource_version(obj: &DynamicObject) -> Option<u64> {
    obj.metadata.resource_version.as_deref()?.parse().ok()
}

struct Inner {
    entries: HashMap<Key, Entry>,
    changes: Arc<watch::Sender<u64>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// `obj` decoded as `K`, or `None` (logged) when it does not decode. List items carry no
/// apiVersion or kind; they are put back first, since some decoders check them.
fn decode<K>(obj: &DynamicObject) -> Option<K>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let mut value = serde_json::to_value(obj).ok()?;
    if let Some(o) = value.as_object_mut() {
        o.entry("apiVersion")
            .or_insert_with(|| K::api_version(&()).into());
        o.entry("kind").or_insert_with(|| K::kind(&()).into());
    }
    match serde_json::from_value::<K>(value) {
        Ok(k) => Some(k),
        Err(e) => {
            let (kind, name) = (K::kind(&()), obj.metadata.name.as_deref().unwrap_or(""));
            tracing::warn!(%kind, %name, error = %e, "cannot read object; treating it as absent");
            None
        }
    }
}

/// The running caches; cheap to clone.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

impl Cache {
    /// The cached object of kind `K`, decoded: `cache.get::<Secret>(Some(ns), name)`,
    /// `cache.get::<Infrastructure>(None, "cluster")`. An object that does not decode (a
    /// malformed object written by someone else) is treated as absent and logged, never a panic.
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Option<K>
    where
        K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let obj = self.get_object::<K>(namespace, name)?;
        decode(&obj)
    }

    /// The cached object of kind `K` as the watch holds it (for callers that need its
    /// metadata or compare it with what they apply, without decoding it).
    pub fn get_object<K>(&self, namespace: Option<&str>, name: &str) -> Option<Arc<DynamicObject>>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        self.object(&ApiResource::erase::<K>(&()), namespace, name)
    }

    /// A cached ConfigMap.
    pub fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<k8s_openapi::api::core::v1::ConfigMap> {
        self.get(Some(namespace), name)
    }

    /// A cached Secret.
    pub fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<k8s_openapi::api::core::v1::Secret> {
        self.get(Some(namespace), name)
    }

    /// The cached object of the resource `ar`, if a synced watch covers it and it exists (for
    /// kinds the apply engine handles dynamically; typed callers use [`Cache::get`]).
    pub fn object(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        match self.lookup(ar, namespace, name) {
            Lookup::Found(o) => Some(o),
            _ => None,
        }
    }

    /// What the cache knows about one object.
    pub fn lookup(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) -> Lookup {
        let entry = match namespace {
            Some(ns) if !ns.is_empty() => self
                .inner
                .entries
                .get(&Key::new(ar, Scope::Namespace(ns.to_string())))
                .or_else(|| {
                    self.inner.entries.get(&Key::new(
                        ar,
                        Scope::NamespacedObject(ns.to_string(), name.to_string()),
                    ))
                }),
            _ => match self
                .inner
                .entries
                .get(&Key::new(ar, Scope::ClusterObject(name.to_string())))
            {
                Some(entry) => Some(entry),
                None => return self.lookup_selected(ar, name),
            },
        };
        let Some(entry) = entry else {
            return Lookup::NotCached;
        };
        let state = *entry
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match state {
            SyncState::Starting | SyncState::Forbidden => Lookup::NotCached,
            SyncState::NotServed => Lookup::NotServed,
            SyncState::Synced => {
                let key = match namespace {
                    Some(ns) if !ns.is_empty() => {
                        ObjectRef::new_with(name, entry.ar.clone()).within(ns)
                    }
                    _ => ObjectRef::new_with(name, entry.ar.clone()),
                };
                match entry.store.get(&key) {
                    Some(o) => Lookup::Found(o),
                    None => Lookup::Absent {
                        seen_rv: entry.seen_rv.load(Ordering::Acquire),
                    },
                }
            }
        }
    }

    /// A cluster-scoped object of a kind watched by label selectors only: found when any of
    /// those watches holds it (a kind may have several, e.g. Cinder's per-volume-type classes
    /// and the extra classes of the driver settings); absent when every one has synced and
    /// none does, with the lowest resourceVersion they have seen (so a write of ours that one
    /// watch has not delivered yet is not taken for a deletion); otherwise as a watch that has
    /// not synced.
    fn lookup_selected(&self, ar: &ApiResource, name: &str) -> Lookup {
        let mut absent_rv: Option<u64> = None;
        let mut pending: Option<Lookup> = None;
        let mut any = false;
        for (key, entry) in &self.inner.entries {
            if key.api_version != ar.api_version
                || key.plural != ar.plural
                || !matches!(key.scope, Scope::ClusterSelected(_))
            {
                continue;
            }
            any = true;
            let state = *entry
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match state {
                SyncState::Synced => {
                    let key = ObjectRef::new_with(name, entry.ar.clone());
                    if let Some(o) = entry.store.get(&key) {
                        return Lookup::Found(o);
                    }
                    let rv = entry.seen_rv.load(Ordering::Acquire);
                    absent_rv = Some(absent_rv.map_or(rv, |r| r.min(rv)));
                }
                SyncState::NotServed => {
                    pending.get_or_insert(Lookup::NotServed);
                }
                SyncState::Starting | SyncState::Forbidden => {
                    pending.get_or_insert(Lookup::NotCached);
                }
            }
        }
        match (any, pending, absent_rv) {
            (false, _, _) => Lookup::NotCached,
            (true, Some(p), _) => p,
            (true, None, Some(seen_rv)) => Lookup::Absent { seen_rv },
            (true, None, None) => Lookup::NotCached,
        }
    }

    /// Every cached object of a kind in a namespace (namespaced watches only).
    pub fn list(&self, ar: &ApiResource, namespace: &str) -> Vec<Arc<DynamicObject>> {
        self.inner
            .entries
            .get(&Key::new(ar, Scope::Namespace(namespace.to_string())))
            .map(|e| e.store.state())
            .unwrap_or_default()
    }

    /// Every cached object of a cluster-scoped kind watched with `selector`
    /// ([`CacheBuilder::cluster_selected`]).
    pub fn list_selected(&self, ar: &ApiResource, selector: &str) -> Vec<Arc<DynamicObject>> {
        self.inner
            .entries
            .get(&Key::new(ar, Scope::ClusterSelected(selector.to_string())))
            .map(|e| e.store.state())
            .unwrap_or_default()
    }

    /// The state of every watch, for diagnostics and readiness.
    pub fn states(&self) -> Vec<(String, Scope, SyncState)> {
        self.inner
            .entries
            .iter()
            .map(|(k, e)| {
                let state = *e
                    .state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                (e.ar.kind.clone(), k.scope.clone(), state)
            })
            .collect()
    }

    /// Waits until every watch has synced, found its kind not served, or been refused by RBAC.
    /// Wrap in `tokio::time::timeout` to bound it.
    pub async fn wait_until_ready(&self) {
        let mut changes = self.inner.changes.subscribe();
        loop {
            let ready = self.inner.entries.values().all(|e| {
                *e.state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    != SyncState::Starting
            });
            if ready {
                return;
            }
            // Every state change also bumps the change counter.
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// A counter bumped on every watch event (and when a kind is found not served): the
    /// runtime maps a change to "reconcile the root". Coalesces bursts by design.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Asks for one more reconcile, as a watch event does (bumps the same [`Cache::changes`]
    /// counter, so it coalesces with them). For state that changes outside the API: work an
    /// operator runs in the background (an OpenStack call that may take minutes) tells the
    /// loop its result is ready, instead of the reconcile polling for it or awaiting it.
    pub fn nudge(&self) {
        self.nudger().nudge();
    }

    /// A handle that can only [`Cache::nudge`], for background tasks. It does not keep the
    /// watches running: once the last [`Cache`] is gone, a nudge does nothing.
    pub fn nudger(&self) -> Nudger {
        Nudger(Arc::downgrade(&self.inner.changes))
    }
}

/// See [`Cache::nudger`].
#[derive(Clone)]
pub struct Nudger(std::sync::Weak<watch::Sender<u64>>);

impl std::fmt::Debug for Nudger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Nudger")
    }
}

impl Nudger {
    /// One more reconcile (see [`Cache::nudge`]).
    pub fn nudge(&self) {
        if let Some(changes) = self.0.upgrade() {
            changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Runs `work` in a tokio task and nudges once its result can be taken with
    /// [`Background::try_take`] (the result is handed over first, so the reconcile the nudge
    /// causes always finds it; a `JoinHandle` is not finished yet while the task still runs
    /// its last lines). A task that panics or is aborted nudges too. Must be called inside a
    /// tokio runtime.
    pub fn spawn<T, F>(&self, work: F) -> Background<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = T> + Send + 'static,
    {
        let (tx, result) = tokio::sync::oneshot::channel();
        let mut deliver = Deliver {
            tx: Some(tx),
            nudger: self.clone(),
        };
        let task = tokio::spawn(async move {
            let out = work.await;
            if let Some(tx) = deliver.tx.take() {
                let _ = tx.send(out);
            }
            drop(deliver);
        });
        Background { result, task }
    }
}

/// Hands the result over, then nudges; on drop, so a panic or an abort is noticed too.
struct Deliver<T> {
    tx: Option<tokio::sync::oneshot::Sender<T>>,
    nudger: Nudger,
}

impl<T> Drop for Deliver<T> {
    fn drop(&mut self) {
        drop(self.tx.take());
        self.nudger.nudge();
    }
}

/// Work started with [`Nudger::spawn`]. Dropping it aborts the work.
#[derive(Debug)]
pub struct Background<T> {
    result: tokio::sync::oneshot::Receiver<T>,
    task: JoinHandle<()>,
}

/// The work of a [`Background`] ended without a result: it panicked or was aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the background task stopped without a result")]
pub struct Stopped;

impl<T> Background<T> {
    /// `None` while the work runs; then its result, once (later calls say [`Stopped`]).
    pub fn try_take(&mut self) -> Option<Result<T, Stopped>> {
        use tokio::sync::oneshot::error::TryRecvError;
        match self.result.try_recv() {
            Ok(out) => Some(Ok(out)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Closed) => Some(Err(Stopped)),
        }
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nudger() -> (Arc<watch::Sender<u64>>, watch::Receiver<u64>, Nudger) {
        let (tx, rx) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let nudger = Nudger(Arc::downgrade(&tx));
        (tx, rx, nudger)
    }

    #[tokio::test]
    async fn a_nudge_is_a_change_and_the_result_is_there_when_it_arrives() {
        let (_tx, mut rx, nudger) = nudger();
        nudger.nudge();
        assert!(rx.has_changed().expect("open"));
        rx.borrow_and_update();
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let mut work = nudger.spawn(async move {
            let _ = wait.await;
            7
        });
        assert_eq!(work.try_take(), None, "still running");
        let _ = go.send(());
        rx.changed().await.expect("nudged");
        assert_eq!(work.try_take(), Some(Ok(7)), "handed over before the nudge");
        assert_eq!(work.try_take(), Some(Err(Stopped)), "taken once");
    }

    #[tokio::test]
    async fn a_panicking_task_nudges_and_says_stopped() {
        let (_tx, mut rx, nudger) = nudger();
        // A bug in background work must not go unnoticed.
        let mut work = nudger.spawn(async { panic!("a bug") });
        let _: &Background<()> = &work;
        rx.changed().await.expect("nudged");
        assert_eq!(work.try_take(), Some(Err(Stopped)));
    }

    #[tokio::test]
    async fn dropping_the_handle_aborts_the_work() {
        let (_tx, mut rx, nudger) = nudger();
        let (_keep, wait) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, mut done) = tokio::sync::oneshot::channel::<()>();
        let work = nudger.spawn(async move {
            let _ = wait.await;
            let _ = done_tx.send(());
        });
        drop(work);
        rx.changed().await.expect("an aborted task nudges too");
        assert!(done.try_recv().is_err(), "the work did not run to its end");
    }

    #[test]
    fn a_nudge_after_the_cache_is_gone_does_nothing() {
        let (tx, _rx, nudger) = nudger();
        drop(tx);
        nudger.nudge();
    }
}
