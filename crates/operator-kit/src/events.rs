//! Kubernetes Events for the operator's writes: one core/v1 Event per distinct create, update or
//! delete the apply engine makes, recorded against one involved object (normally the operator
//! CR), with library-go's reasons (`<Kind>Created`, `<Kind>Updated`, `<Kind>Deleted`, and the
//! `…CreateFailed` / `…UpdateFailed` / `…DeleteFailed` warnings) and messages.
//!
//! An Event lives in its involved object's namespace; for a cluster-scoped object (a
//! ClusterCSIDriver) that is `default`, the only namespace the API server accepts for it
//! (`kubectl describe clustercsidriver …` finds them there).
//!
//! Repeats are correlated as client-go's `EventCorrelator` (`tools/record/events_cache.go`)
//! does, so a failure retried every few seconds does not fill etcd with Events:
//!
//! * an Event identical to one recorded before (same source, involved object, type, reason and
//!   message) is not created again: the existing Event is merge-patched with `count + 1`, the
//!   new `lastTimestamp` (and the message). If that Event is gone (a real server expires Events
//!   after an hour) the PATCH answers 404 and the Event is created again under its old name,
//!   keeping its count and `firstTimestamp`, as client-go does;
//! * when one source, object, type and reason has had 10 distinct messages, each less than
//!   10 minutes after the one before, further ones are folded into one Event whose message is
//!   `(combined from similar events): <latest message>` and whose count goes up instead.
//!
//! client-go's third stage, the per-object token-bucket spam filter, is not implemented: it
//! drops Events outright, and each Event here stands for a write the operator really made.
//!
//! Memory is bounded: both caches are LRUs of 4,096 entries (client-go's size), keyed by a
//! 128-bit digest of the key rather than the key itself, so a long error message costs 16 bytes.
//! The caches are per process: after a restart the first repeat creates a new Event, as with
//! client-go.
//!
//! Events are best-effort: a failed Event write is logged and never fails the caller. A message
//! names the object (kind, name, namespace) and never carries object content, so a Secret's
//! values can never end up in an Event.
//!
//! Inside [`EventRecorder::alongside`] (a reconcile), Events are queued and written beside the
//! work rather than before the caller's next step, as client-go's broadcaster writes them from
//! its own goroutine: an Event never delays an operand write. Unlike a goroutine, the writer is
//! part of the reconcile's future, so whatever cancels a reconcile (a lost lease, SIGTERM, the
//! deadline) cancels its Events too, and a replica that may no longer write writes none. The
//! queue holds at most client-go's 1,000 Events; beyond that an Event is dropped with a warning.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::json;
use tokio::sync::Notify;

/// Normal or Warning, as the Event `type` field spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records Events about one operator CR into one namespace. Clones share one correlation cache.
#[derive(Clone)]
pub struct EventRecorder {
    api: Api<Event>,
    namespace: String,
    involved: ObjectReference,
    component: String,
    instance: String,
    correlator: Arc<Mutex<Correlator>>,
    deferred: Arc<Deferred>,
}

/// client-go's `maxQueuedEvents`: how many Events may wait for the writer.
const MAX_QUEUED: usize = 1000;

/// One Event waiting to be written, with the time it happened.
struct Pending {
    type_: EventType,
    reason: String,
    message: String,
    at: Timestamp,
}

/// The queue of [`EventRecorder::alongside`], shared by the recorder's clones.
#[derive(Default)]
struct Deferred {
    state: Mutex<Queue>,
    /// Wakes the writer: an Event was queued, or the work is done.
    wake: Notify,
}

#[derive(Default)]
struct Queue {
    /// How many `alongside` scopes are open (the outermost one writes).
    scopes: usize,
    events: VecDeque<Pending>,
}

impl Deferred {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues the Event when a scope is open; gives it back otherwise.
    fn push(&self, pending: Pending) -> Option<Pending> {
        let mut queue = self.lock();
        if queue.scopes == 0 {
            return Some(pending);
        }
        if queue.events.len() >= MAX_QUEUED {
            tracing::warn!(reason = %pending.reason, "too many Events waiting to be written; dropping one");
            return None;
        }
        queue.events.push_back(pending);
        drop(queue);
        self.wake.notify_one();
        None
    }

    fn pop(&self) -> Option<Pending> {
        self.lock().events.pop_front()
    }
}

/// An open [`EventRecorder::alongside`] scope; closing the outermost one (also when the work
/// is cancelled) drops what is still queued: a cancelled reconcile writes no more.
struct Scope<'a>(&'a Deferred);

impl<'a> Scope<'a> {
    /// Opens a scope; `true` when it is the outermost one.
    fn open(deferred: &'a Deferred) -> (Self, bool) {
        let mut queue = deferred.lock();
        queue.scopes += 1;
        let outermost = queue.scopes == 1;
        drop(queue);
        (Self(deferred), outermost)
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        queue.scopes = queue.scopes.saturating_sub(1);
        if queue.scopes == 0 && !queue.events.is_empty() {
            tracing::debug!(
                dropped = queue.events.len(),
                "the work was cancelled; its Events are not written"
            );
            queue.events.clear();
        }
    }
}

/// Disambiguates Events created within the same nanosecond by one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

impl EventRecorder {
    /// `involved` is the object the Events are about (the operator CR); `component` is the
    /// reporting controller (e.g. `openstack-cinder-csi-driver-operator`); `instance` the pod.
    pub fn new(client: Client, involved: ObjectReference, component: &str, instance: &str) -> Self {
        // client-go's rule, enforced by the API server's Event validation.
        let namespace = involved
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_string());
        Self {
            api: Api::namespaced(client, &namespace),
            namespace,
            involved,
            component: component.to_string(),
            instance: instance.to_string(),
            correlator: Arc::new(Mutex::new(Correlator::new(CACHE_ENTRIES))),
            deferred: Arc::default(),
        }
    }

    /// Runs `work` while writing, one at a time and in order, the Events it records (through
    /// this recorder or a clone); returns once `work` is done and every Event is written. See
    /// the module docs.
    pub async fn alongside<F: Future>(&self, work: F) -> F::Output {
        let (_scope, outermost) = Scope::open(&self.deferred);
        if !outermost {
            return work.await;
        }
        let done = AtomicBool::new(false);
        let work = async {
            let output = work.await;
            done.store(true, Ordering::SeqCst);
            self.deferred.wake.notify_one();
            output
        };
        let writer = async {
            loop {
                if let Some(p) = self.deferred.pop() {
                    self.write(p).await;
                } else if done.load(Ordering::SeqCst) {
                    return;
                } else {
                    // A wake-up sent since the last check is kept by `Notify` as a permit.
                    self.deferred.wake.notified().await;
                }
            }
        };
        let (output, ()) = futures::join!(work, writer);
        output
    }

    /// Records one Event (or counts a repeat of one); a failure is logged at warning level and
    /// swallowed. Inside [`Self::alongside`] it is only queued.
    pub async fn record(&self, type_: EventType, reason: &str, message: &str) {
        let pending = Pending {
            type_,
            reason: reason.to_string(),
            message: message.to_string(),
            at: Timestamp::now(),
        };
        if let Some(now) = self.deferred.push(pending) {
            self.write(now).await;
        }
    }

    async fn write(&self, p: Pending) {
        self.record_at(p.type_, &p.reason, &p.message, p.at).await;
    }

    async fn record_at(&self, type_: EventType, reason: &str, message: &str, now: Timestamp) {
        let involved = &self.involved;
        // client-go's aggregate key: source (component, host) and involved object, type, reason.
        let aggregate = [
            self.component.as_str(),
            "",
            involved.kind.as_deref().unwrap_or(""),
            involved.namespace.as_deref().unwrap_or(""),
            involved.name.as_deref().unwrap_or(""),
            involved.uid.as_deref().unwrap_or(""),
            involved.api_version.as_deref().unwrap_or(""),
            type_.as_str(),
            reason,
        ];
        let base = involved.name.as_deref().unwrap_or("operator");
        // The lock is never held across an await; a poisoned cache is still a valid cache.
        let write = self
            .correlator
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(&aggregate, message, now, || event_name(base, now));
        let event = self.event(type_, reason, &write, now);
        if write.count > 1 {
            // client-go sends count, lastTimestamp and message (a strategic merge patch, which
            // for these scalar fields is the same as a merge patch).
            let patch = json!({
                "count": write.count,
                "lastTimestamp": Time(now),
                "message": write.message,
            });
            match self
                .api
                .patch(&write.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return,
                // Expired (or deleted): create it again, as client-go does.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => {
                    tracing::warn!(%error, reason, "could not update an Event (best-effort, continuing)");
                    return;
                }
            }
        }
        if let Err(error) = self.api.create(&PostParams::default(), &event).await {
            tracing::warn!(%error, reason, "could not record an Event (best-effort, continuing)");
        }
    }

    /// The whole Event for a create. The legacy core/v1 shape (first/last timestamps, no
    /// eventTime), as client-go's recorder writes it; mixing both shapes is rejected by the API
    /// server.
    fn event(&self, type_: EventType, reason: &str, write: &Write, now: Timestamp) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(write.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            involved_object: self.involved.clone(),
            reason: Some(reason.to_string()),
            message: Some(write.message.clone()),
            type_: Some(type_.as_str().to_string()),
            count: Some(write.count),
            first_timestamp: Some(Time(write.first)),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        }
    }

    /// `<Kind>Created`: "Created <object> because it was missing".
    pub async fn created(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}Created", ar.kind);
        self.record(
            EventType::Normal,
            &reason,
            &format!("Created {what} because it was missing"),
        )
        .await;
    }

    /// `<Kind>Updated`: "Updated <object> because it changed".
    pub async fn updated(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}Updated", ar.kind);
        self.record(
            EventType::Normal,
            &reason,
            &format!("Updated {what} because it changed"),
        )
        .await;
    }

    /// `<Kind>Deleted`: "Deleted <object>".
    pub async fn deleted(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}Deleted", ar.kind);
        self.record(EventType::Normal, &reason, &format!("Deleted {what}"))
            .await;
    }

    /// `<Kind><Verb>Failed` warning, `verb` being `Create`, `Update` or `Delete`. `error` is the
    /// API server's message, which names fields but not Secret values.
    pub async fn failed(
        &self,
        verb: &str,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        error: &str,
    ) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}{verb}Failed", ar.kind);
        let lower = verb.to_ascii_lowercase();
        self.record(
            EventType::Warning,
            &reason,
            &format!("Failed to {lower} {what}: {error}"),
        )
        .await;
    }
}

/// client-go names Events `<object>.<hex nanos>`; the sequence keeps two Events of one
/// nanosecond apart.
fn event_name(base: &str, now: Timestamp) -> String {
    let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    format!("{base}.{:x}{seq:x}", now.as_nanosecond())
}

/// `Kind.group/name -n namespace`, as library-go's `FormatResourceForCLIWithNamespace` prints.
pub fn describe(ar: &ApiResource, namespace: Option<&str>, name: &str) -> String {
    let kind = if ar.group.is_empty() {
        ar.kind.clone()
    } else {
        format!("{}.{}", ar.kind, ar.group)
    };
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{kind}/{name} -n {ns}"),
        _ => format!("{kind}/{name}"),
    }
}

// --- correlation -----------------------------------------------------------------------------

/// client-go's `maxLruCacheEntries`, for each of the two caches.
const CACHE_ENTRIES: usize = 4096;
/// client-go's `defaultAggregateMaxEvents`: distinct messages before they are combined.
const SIMILAR_MESSAGES: usize = 10;
/// client-go's `defaultAggregateIntervalInSeconds`: a gap longer than this starts afresh.
const SIMILAR_WINDOW: SignedDuration = SignedDuration::from_secs(600);
/// client-go's `EventAggregatorByReasonMessageFunc` prefix.
const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// A key as 128 bits of its SHA-256: what the caches store instead of the (unbounded) text.
type Digest = [u8; 16];

fn digest(domain: &str, parts: &[&str]) -> Digest {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(domain.as_bytes());
    for part in parts {
        // Length-prefixed, so `("ab", "c")` and `("a", "bc")` differ.
        ctx.update(&(part.len() as u64).to_le_bytes());
        ctx.update(part.as_bytes());
    }
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(ctx.finish().as_ref()) {
        *o = *b;
    }
    out
}

/// A least-recently-used map of at most `capacity` entries.
struct Lru<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<Digest, (u64, V)>,
    /// Last use → key, oldest first.
    order: BTreeMap<u64, Digest>,
}

impl<V> Lru<V> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry, marked as just used.
    fn get_mut(&mut self, key: &Digest) -> Option<&mut V> {
        self.tick += 1;
        let tick = self.tick;
        let (used, value) = self.entries.get_mut(key)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, *key);
        Some(value)
    }

    /// Inserts or replaces `key`, evicting the least recently used entry when full.
    fn insert(&mut self, key: Digest, value: V) {
        self.tick += 1;
        if let Some((used, _)) = self.entries.remove(&key) {
            self.order.remove(&used);
        } else if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.order.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.entries.insert(key, (self.tick, value));
        self.order.insert(self.tick, key);
    }
}

/// The distinct messages of one aggregate key (client-go's `aggregateRecord`).
struct Similar {
    messages: Vec<Digest>,
    last: Timestamp,
}

/// An Event already written (client-go's `eventLog`).
struct Logged {
    name: String,
    count: i32,
    first: Timestamp,
}

/// What to write: a create when `count` is 1, else a patch of an existing Event (or, if it is
/// gone, a create under its name with this count).
#[derive(Debug, PartialEq, Eq)]
struct Write {
    name: String,
    message: String,
    count: i32,
    first: Timestamp,
}

/// client-go's `EventAggregator` followed by its `eventLogger`, without I/O or clock.
struct Correlator {
    similar: Lru<Similar>,
    logged: Lru<Logged>,
}

impl Correlator {
    fn new(capacity: usize) -> Self {
        Self {
            similar: Lru::new(capacity),
            logged: Lru::new(capacity),
        }
    }

    /// Decides the write for one Event with the given aggregate key parts and message. The
    /// count is reserved before the write is sent: a write that then fails leaves the next one
    /// a count ahead, which is still the number of times the Event happened.
    fn observe(
        &mut self,
        aggregate: &[&str],
        message: &str,
        now: Timestamp,
        new_name: impl FnOnce() -> String,
    ) -> Write {
        let aggregate_key = digest("aggregate", aggregate);
        let message_key = digest("message", &[message]);
        let combined = match self.similar.get_mut(&aggregate_key) {
            Some(record) => {
                if now.duration_since(record.last) > SIMILAR_WINDOW {
                    record.messages.clear();
                }
                if !record.messages.contains(&message_key) {
                    record.messages.push(message_key);
                }
                record.last = now;
                if record.messages.len() >= SIMILAR_MESSAGES {
                    // client-go pops one so the set never grows past the threshold.
                    record.messages.pop();
                    true
                } else {
                    false
                }
            }
            None => {
                let record = Similar {
                    messages: vec![message_key],
                    last: now,
                };
                self.similar.insert(aggregate_key, record);
                false
            }
        };
        let (key, message) = if combined {
            (
                digest("combined", aggregate),
                format!("{COMBINED_PREFIX}{message}"),
            )
        } else {
            let mut parts = aggregate.to_vec();
            parts.push(message);
            (digest("event", &parts), message.to_string())
        };
        if let Some(logged) = self.logged.get_mut(&key) {
            logged.count = logged.count.saturating_add(1);
            return Write {
                name: logged.name.clone(),
                message,
                count: logged.count,
                first: logged.first,
            };
        }
        let name = new_name();
        let logged = Logged {
            name: name.clone(),
            count: 1,
            first: now,
        };
        self.logged.insert(key, logged);
        Write {
            name,
            message,
            count: 1,
            first: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ListParams;
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use kube::core::GroupVersionKind;
    use kube_sim::{KubeSim, SimConfig};

    #[test]
    fn describes_like_library_go() {
        let dep = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        );
        assert_eq!(describe(&dep, Some("ns"), "d"), "Deployment.apps/d -n ns");
        let cm = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        );
        assert_eq!(describe(&cm, Some("ns"), "c"), "ConfigMap/c -n ns");
        let sc = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("storage.k8s.io", "v1", "StorageClass"),
            "storageclasses",
        );
        assert_eq!(
            describe(&sc, None, "standard-csi"),
            "StorageClass.storage.k8s.io/standard-csi"
        );
    }

    // --- the correlator alone --------------------------------------------------------------

    const KEY: [&str; 3] = ["operator", "Warning", "SecretUpdateFailed"];

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn names() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("ev.{n}")
        }
    }

    #[test]
    fn identical_events_count_up_on_one_event() {
        let mut c = Correlator::new(CACHE_ENTRIES);
        let mut name = names();
        let writes: Vec<Write> = (0..5)
            .map(|i| c.observe(&KEY, "Failed: forbidden", at(i * 7), &mut name))
            .collect();
        for (i, w) in writes.iter().enumerate() {
            assert_eq!(w.name, "ev.1");
            assert_eq!(w.count, i32::try_from(i).unwrap_or(0) + 1);
            assert_eq!(w.first, at(0));
            assert_eq!(w.message, "Failed: forbidden");
        }
    }

    #[test]
    fn a_different_message_or_reason_is_another_event() {
        let mut c = Correlator::new(CACHE_ENTRIES);
        let mut name = names();
        let a = c.observe(&KEY, "Failed: one", at(0), &mut name);
        let b = c.observe(&KEY, "Failed: two", at(1), &mut name);
        let other = ["operator", "Warning", "SecretCreateFailed"];
        let d = c.observe(&other, "Failed: one", at(2), &mut name);
        assert_eq!((a.count, b.count, d.count), (1, 1, 1));
        assert_ne!(a.name, b.name);
        assert_ne!(a.name, d.name);
        // Back to the first message: its own Event counts up.
        let again = c.observe(&KEY, "Failed: one", at(3), &mut name);
        assert_eq!((again.name.as_str(), again.count), (a.name.as_str(), 2));
    }

    #[test]
    fn ten_similar_messages_are_combined_into_one_event() {
        let mut c = Correlator::new(CACHE_ENTRIES);
        let mut name = names();
        let writes: Vec<Write> = (0..15)
            .map(|i| c.observe(&KEY, &format!("Failed: object {i}"), at(i), &mut name))
            .collect();
        // The first nine stand alone, each a new Event.
        for (i, w) in writes.iter().take(9).enumerate() {
            assert_eq!(w.count, 1);
            assert_eq!(w.message, format!("Failed: object {i}"));
        }
        // From the tenth on, one combined Event carries the latest message and counts up.
        let combined = &writes[9..];
        for (i, w) in combined.iter().enumerate() {
            assert_eq!(w.name, combined[0].name);
            assert_eq!(w.count, i32::try_from(i).unwrap_or(0) + 1);
            assert_eq!(
                w.message,
                format!("(combined from similar events): Failed: object {}", i + 9)
            );
        }
        let distinct: std::collections::BTreeSet<_> = writes.iter().map(|w| &w.name).collect();
        assert_eq!(distinct.len(), 10);
    }

    #[test]
    fn similar_messages_further_apart_than_ten_minutes_are_not_combined() {
        let mut c = Correlator::new(CACHE_ENTRIES);
        let mut name = names();
        for i in 0..20 {
            let w = c.observe(&KEY, &format!("Failed: object {i}"), at(i * 601), &mut name);
            assert_eq!(w.count, 1, "message {i}");
            assert!(!w.message.starts_with(COMBINED_PREFIX));
        }
    }

    #[test]
    fn the_caches_stay_bounded_and_forget_the_oldest() {
        let mut c = Correlator::new(64);
        let mut name = names();
        let reasons: Vec<String> = (0..1000).map(|i| format!("Reason{i}")).collect();
        for (i, reason) in reasons.iter().enumerate() {
            let key = ["operator", "Normal", reason.as_str()];
            let long = "x".repeat(10_000);
            c.observe(&key, &long, at(i64::try_from(i).unwrap_or(0)), &mut name);
            assert!(c.logged.len() <= 64 && c.similar.len() <= 64);
        }
        // The newest is remembered, the oldest forgotten (a repeat of it starts a new Event).
        let long = "x".repeat(10_000);
        let newest = ["operator", "Normal", "Reason999"];
        assert_eq!(c.observe(&newest, &long, at(2000), &mut name).count, 2);
        let oldest = ["operator", "Normal", "Reason0"];
        assert_eq!(c.observe(&oldest, &long, at(2001), &mut name).count, 1);
    }

    #[test]
    fn the_lru_evicts_the_least_recently_used() {
        let mut lru = Lru::new(2);
        let (a, b, d) = ([1; 16], [2; 16], [3; 16]);
        lru.insert(a, "a");
        lru.insert(b, "b");
        // Using `a` makes `b` the oldest.
        assert!(lru.get_mut(&a).is_some());
        lru.insert(d, "d");
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut(&b).is_none());
        assert!(lru.get_mut(&a).is_some() && lru.get_mut(&d).is_some());
        // Replacing keeps one entry per key.
        lru.insert(d, "d2");
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get_mut(&d).copied(), Some("d2"));
    }

    // --- against kube-sim ------------------------------------------------------------------

    async fn start() -> (KubeSim, EventRecorder, Api<Event>) {
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        let sim = KubeSim::start(
            SimConfig::default(),
            "127.0.0.1:0".parse().expect("address"),
        )
        .await
        .expect("kube-sim starts");
        let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("operator")).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("config");
        let client = Client::try_from(config).expect("client");
        let recorder = EventRecorder::new(
            client.clone(),
            ObjectReference {
                api_version: Some("operator.openshift.io/v1".into()),
                kind: Some("ClusterCSIDriver".into()),
                name: Some("cinder.csi.openstack.org".into()),
                ..Default::default()
            },
            "test-operator",
            "test-pod",
        );
        (sim, recorder, Api::namespaced(client, "default"))
    }

    async fn events(api: &Api<Event>) -> Vec<Event> {
        api.list(&ListParams::default())
            .await
            .expect("events listed")
            .items
    }

    fn event_writes(sim: &KubeSim) -> Vec<String> {
        sim.requests()
            .iter()
            .filter(|r| r.resource == "/events" && r.verb != "list")
            .map(|r| r.verb.clone())
            .collect()
    }

    #[tokio::test]
    async fn a_repeated_failure_is_one_event_with_a_count() {
        let (sim, recorder, api) = start().await;
        let start = Timestamp::now();
        for i in 0..5 {
            let now = start + SignedDuration::from_secs(i * 30);
            recorder
                .record_at(
                    EventType::Warning,
                    "SecretUpdateFailed",
                    "Failed to update Secret/s -n ns: forbidden",
                    now,
                )
                .await;
        }
        let list = events(&api).await;
        assert_eq!(list.len(), 1, "{list:?}");
        let e = &list[0];
        assert_eq!(e.count, Some(5));
        assert_eq!(
            e.first_timestamp.as_ref().map(|t| t.0.as_second()),
            Some(start.as_second())
        );
        assert_eq!(
            e.last_timestamp.as_ref().map(|t| t.0.as_second()),
            Some(start.as_second() + 120)
        );
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(
            e.source.as_ref().and_then(|s| s.component.as_deref()),
            Some("test-operator")
        );
        // One create, then merge patches of count and lastTimestamp.
        assert_eq!(
            event_writes(&sim),
            ["create", "patch", "patch", "patch", "patch"]
        );
    }

    #[tokio::test]
    async fn different_messages_are_different_events() {
        let (_sim, recorder, api) = start().await;
        for name in ["a", "b", "c"] {
            for _ in 0..2 {
                recorder
                    .record(
                        EventType::Normal,
                        "ConfigMapUpdated",
                        &format!("Updated ConfigMap/{name} -n ns because it changed"),
                    )
                    .await;
            }
        }
        let mut list: Vec<(String, i32)> = events(&api)
            .await
            .into_iter()
            .map(|e| (e.message.unwrap_or_default(), e.count.unwrap_or(0)))
            .collect();
        list.sort();
        assert_eq!(
            list,
            ["a", "b", "c"].map(|n| (format!("Updated ConfigMap/{n} -n ns because it changed"), 2))
        );
    }

    #[tokio::test]
    async fn an_expired_event_is_created_again() {
        let (sim, recorder, api) = start().await;
        let message = "Failed to create Deployment.apps/d -n ns: quota exceeded";
        recorder
            .record(EventType::Warning, "DeploymentCreateFailed", message)
            .await;
        recorder
            .record(EventType::Warning, "DeploymentCreateFailed", message)
            .await;
        let first = events(&api).await;
        assert_eq!(first.len(), 1);
        let name = first[0].metadata.name.clone().unwrap_or_default();
        // What the API server's one-hour TTL does.
        api.delete(&name, &Default::default())
            .await
            .expect("event deleted");
        recorder
            .record(EventType::Warning, "DeploymentCreateFailed", message)
            .await;
        let again = events(&api).await;
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].metadata.name.as_deref(), Some(name.as_str()));
        assert_eq!(again[0].count, Some(3));
        let writes = event_writes(&sim);
        assert_eq!(writes, ["create", "patch", "delete", "patch", "create"]);
        // And it counts on from there.
        recorder
            .record(EventType::Warning, "DeploymentCreateFailed", message)
            .await;
        assert_eq!(events(&api).await[0].count, Some(4));
    }

    #[tokio::test]
    async fn many_similar_events_end_in_one_combined_event() {
        let (_sim, recorder, api) = start().await;
        for i in 0..30 {
            recorder
                .record(
                    EventType::Normal,
                    "StorageClassCreated",
                    &format!(
                        "Created StorageClass.storage.k8s.io/class-{i} because it was missing"
                    ),
                )
                .await;
        }
        let list = events(&api).await;
        assert_eq!(list.len(), 10, "nine Events and a combined one");
        let combined: Vec<_> = list
            .iter()
            .filter(|e| {
                e.message
                    .as_deref()
                    .is_some_and(|m| m.starts_with(COMBINED_PREFIX))
            })
            .collect();
        assert_eq!(combined.len(), 1);
        assert_eq!(combined[0].count, Some(21));
        assert_eq!(
            combined[0].message.as_deref(),
            Some(
                "(combined from similar events): Created StorageClass.storage.k8s.io/class-29 because it was missing"
            )
        );
    }
}
