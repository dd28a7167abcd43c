//! The object store: what etcd plus the watch cache are to a real API server.
//!
//! One global, strictly increasing resourceVersion; every write gets the next one. Every write
//! is also an event in a bounded history, so a watch can resume from any resourceVersion that
//! has not been compacted away (older ones get `410 Gone`, as after an etcd compaction). The
//! store knows nothing of HTTP, validation or defaulting: it keeps objects and tells watchers.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::resources::{Catalogue, GroupResource};

/// What admission reads of the cluster it admits to: the stored objects and the served types.
/// `api::Cluster` implements it; admission never sees the verbs.
pub trait ClusterView {
    fn store(&self) -> &Store;
    fn catalogue(&self) -> &Catalogue;
}

/// `ADDED`, `MODIFIED` or `DELETED`, as in a watch stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed change.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub gr: GroupResource,
    pub namespace: String,
    /// The object after the change (for DELETED: its last state, carrying the deletion's rv).
    pub object: Arc<Value>,
    /// The object before the change, so a selector watch can turn "no longer matches" into
    /// DELETED and "now matches" into ADDED, as the real watch cache does.
    pub previous: Option<Arc<Value>>,
}

/// `(namespace, name)`; namespace is empty for cluster-scoped objects.
pub type ObjectKey = (String, String);

/// A registered watcher: which collection and namespace it follows, and where to send events.
struct Watcher {
    gr: GroupResource,
    namespace: Option<String>,
    tx: mpsc::Sender<Arc<Event>>,
}

/// A started watch: the history to replay, then the live events.
pub type WatchStart = (Vec<Arc<Event>>, mpsc::Receiver<Arc<Event>>);

/// Why a watch could not start.
#[derive(Debug, PartialEq)]
pub enum WatchStartError {
    /// The requested resourceVersion is older than the compacted history.
    Gone { requested: u64, oldest: u64 },
}

pub struct Store {
    rv: u64,
    collections: HashMap<GroupResource, BTreeMap<ObjectKey, Arc<Value>>>,
    history: VecDeque<Arc<Event>>,
    /// Watches may resume from any rv >= this.
    compacted: u64,
    history_limit: usize,
    watchers: Vec<Watcher>,
    watch_buffer: usize,
    /// uid → where the object lives, for owner-reference resolution.
    uids: HashMap<String, (GroupResource, ObjectKey)>,
    /// Objects with ownerReferences: what the garbage collector has to look at.
    dependents: BTreeSet<(GroupResource, ObjectKey)>,
    /// Objects with a deletionTimestamp.
    terminating: BTreeSet<(GroupResource, ObjectKey)>,
}

impl Store {
    pub fn new(history_limit: usize, watch_buffer: usize) -> Self {
        Self {
            rv: 1,
            collections: HashMap::new(),
            history: VecDeque::new(),
            compacted: 1,
            history_limit: history_limit.max(1),
            watchers: Vec::new(),
            watch_buffer: watch_buffer.max(1),
            uids: HashMap::new(),
            dependents: BTreeSet::new(),
            terminating: BTreeSet::new(),
        }
    }

    /// The newest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    /// Reserves the next resourceVersion for a write about to be committed.
    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    pub fn get(&self, gr: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.collections
            .get(gr)?
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of a collection in key order, optionally in one namespace, starting after `after`.
    pub fn iter<'a>(
        &'a self,
        gr: &GroupResource,
        namespace: Option<&'a str>,
        after: Option<&'a ObjectKey>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Value>)> + 'a {
        self.collections.get(gr).into_iter().flat_map(move |c| {
            let range: Box<dyn Iterator<Item = (&ObjectKey, &Arc<Value>)>> =
                match (namespace, after) {
                    (_, Some(a)) => Box::new(c.range::<ObjectKey, _>((
                        std::ops::Bound::Excluded(a),
                        std::ops::Bound::Unbounded,
                    ))),
                    (Some(ns), None) => {
                        Box::new(c.range::<ObjectKey, _>((ns.to_string(), String::new())..))
                    }
                    (None, None) => Box::new(c.iter()),
                };
            range.take_while(move |((ns, _), _)| namespace.is_none_or(|want| want == ns))
        })
    }

    /// The objects of a collection as they were at `rv`, in key order after `after`: the
    /// current state with the keys changed since `rv` put back as they were. Only the changed
    /// keys are copied, so paging through a large collection stays linear. `rv` must not be
    /// older than the compacted history (callers answer 410 then).
    pub fn snapshot_after<'a>(
        &'a self,
        gr: &GroupResource,
        namespace: Option<&'a str>,
        rv: u64,
        after: &'a ObjectKey,
    ) -> impl Iterator<Item = (ObjectKey, Arc<Value>)> + 'a {
        // Walking back from the newest event, the last write wins: the oldest event after `rv`
        // knows each key's state at `rv`.
        let mut then: BTreeMap<ObjectKey, Option<Arc<Value>>> = BTreeMap::new();
        for e in self.history.iter().rev().take_while(|e| e.rv > rv) {
            if e.gr != *gr || namespace.is_some_and(|ns| ns != e.namespace) {
                continue;
            }
            let key = key_of(&e.object);
            if key <= *after {
                continue;
            }
            let before = match e.kind {
                EventType::Added => None,
                EventType::Modified | EventType::Deleted => e.previous.clone(),
            };
            then.insert(key, before);
        }
        let changed: BTreeSet<ObjectKey> = then.keys().cloned().collect();
        let restored: Vec<(ObjectKey, Arc<Value>)> = then
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        let current = self
            .iter(gr, namespace, Some(after))
            .filter(move |(k, _)| !changed.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()));
        MergeByKey {
            a: current.peekable(),
            b: restored.into_iter().peekable(),
        }
    }

    /// All collections that hold at least one object.
    pub fn collections(&self) -> impl Iterator<Item = &GroupResource> {
        self.collections
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(gr, _)| gr)
    }

    pub fn count(&self, gr: &GroupResource) -> usize {
        self.collections.get(gr).map_or(0, BTreeMap::len)
    }

    /// Stores a new or changed object, stamping it with the next resourceVersion. The caller has
    /// already decided whether this is a create or an update.
    pub fn put(&mut self, gr: &GroupResource, mut obj: Value) -> Arc<Value> {
        let rv = self.next_rv();
        set_rv(&mut obj, rv);
        let (namespace, name) = key_of(&obj);
        let obj = Arc::new(obj);
        self.index(gr, &(namespace.clone(), name.clone()), Some(&obj));
        let previous = self
            .collections
            .entry(gr.clone())
            .or_default()
            .insert((namespace.clone(), name), obj.clone());
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.publish(Event {
            rv,
            kind,
            gr: gr.clone(),
            namespace,
            object: obj.clone(),
            previous,
        });
        obj
    }

    /// Removes an object; the DELETED event carries a fresh resourceVersion as in etcd.
    pub fn remove(
        &mut self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let key = (namespace.to_string(), name.to_string());
        let previous = self.collections.get_mut(gr)?.remove(&key)?;
        self.index(gr, &key, None);
        if let Some(uid) = previous.pointer("/metadata/uid").and_then(Value::as_str) {
            self.uids.remove(uid);
        }
        let rv = self.next_rv();
        let mut last = (*previous).clone();
        set_rv(&mut last, rv);
        let last = Arc::new(last);
        self.publish(Event {
            rv,
            kind: EventType::Deleted,
            gr: gr.clone(),
            namespace: namespace.to_string(),
            object: last.clone(),
            previous: Some(previous),
        });
        Some(last)
    }

    /// Drops a whole collection without events (used when a CRD stops being served, after its
    /// objects have been deleted one by one).
    pub fn drop_collection(&mut self, gr: &GroupResource) {
        self.collections.remove(gr);
    }

    /// Keeps the owner/termination indexes in step with a put (Some) or removal (None).
    fn index(&mut self, gr: &GroupResource, key: &ObjectKey, obj: Option<&Arc<Value>>) {
        let entry = (gr.clone(), key.clone());
        let owned = obj
            .and_then(|o| o.pointer("/metadata/ownerReferences"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let deleting = obj
            .and_then(|o| o.pointer("/metadata/deletionTimestamp"))
            .is_some();
        if owned {
            self.dependents.insert(entry.clone());
        } else {
            self.dependents.remove(&entry);
        }
        if deleting {
            self.terminating.insert(entry);
        } else {
            self.terminating.remove(&entry);
        }
        if let Some(uid) = obj
            .and_then(|o| o.pointer("/metadata/uid"))
            .and_then(Value::as_str)
        {
            self.uids.insert(uid.to_string(), (gr.clone(), key.clone()));
        }
    }

    /// Where the object with this uid lives.
    pub fn by_uid(&self, uid: &str) -> Option<Arc<Value>> {
        let (gr, (ns, name)) = self.uids.get(uid)?;
        self.get(gr, ns, name)
    }

    /// Objects that have owner references.
    pub fn dependents(&self) -> Vec<(GroupResource, ObjectKey)> {
        self.dependents.iter().cloned().collect()
    }

    /// Objects being deleted (deletionTimestamp set, held by finalizers).
    pub fn terminating(&self) -> Vec<(GroupResource, ObjectKey)> {
        self.terminating.iter().cloned().collect()
    }

    fn publish(&mut self, event: Event) {
        let event = Arc::new(event);
        self.history.push_back(event.clone());
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        // A watcher whose buffer is full is dropped: its stream ends and the client re-lists,
        // which is what a real server does to a watcher that cannot keep up.
        self.watchers.retain(|w| {
            if w.gr != event.gr
                || w.namespace
                    .as_ref()
                    .is_some_and(|ns| *ns != event.namespace)
            {
                return !w.tx.is_closed();
            }
            w.tx.try_send(event.clone()).is_ok()
        });
    }

    /// Starts a watch. With `from = Some(rv)` replays the history after rv; with `None` starts at
    /// the current rv (the caller sends synthetic ADDED events for the current state).
    pub fn watch(
        &mut self,
        gr: &GroupResource,
        namespace: Option<&str>,
        from: Option<u64>,
    ) -> Result<WatchStart, WatchStartError> {
        let mut backlog = Vec::new();
        if let Some(from) = from {
            if from < self.compacted {
                return Err(WatchStartError::Gone {
                    requested: from,
                    oldest: self.compacted,
                });
            }
            backlog.extend(
                self.history
                    .iter()
                    .filter(|e| {
                        e.rv > from && e.gr == *gr && namespace.is_none_or(|ns| ns == e.namespace)
                    })
                    .cloned(),
            );
        }
        let (tx, rx) = mpsc::channel(self.watch_buffer.max(backlog.len() + 1));
        self.watchers.push(Watcher {
            gr: gr.clone(),
            namespace: namespace.map(str::to_string),
            tx,
        });
        Ok((backlog, rx))
    }

    /// Forgets all history: every watch resuming from an older rv now gets 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }

    /// Ends every open watch (clients see their streams close and re-watch).
    pub fn drop_watches(&mut self) {
        self.watchers.clear();
    }

    pub fn open_watches(&self) -> usize {
        self.watchers.iter().filter(|w| !w.tx.is_closed()).count()
    }

    pub fn compacted_rv(&self) -> u64 {
        self.compacted
    }

    pub fn object_count(&self) -> usize {
        self.collections.values().map(BTreeMap::len).sum()
    }
}

/// Merges two iterators that are each sorted by key (and share no key).
struct MergeByKey<A: Iterator, B: Iterator> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<A, B> Iterator for MergeByKey<A, B>
where
    A: Iterator<Item = (ObjectKey, Arc<Value>)>,
    B: Iterator<Item = (ObjectKey, Arc<Value>)>,
{
    type Item = (ObjectKey, Arc<Value>);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some((ka, _)), Some((kb, _))) if kb < ka => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The (namespace, name) of an object.
pub fn key_of(obj: &Value) -> ObjectKey {
    let s = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (s("/metadata/namespace"), s("/metadata/name"))
}

/// The resourceVersion of a stored object.
pub fn rv_of(obj: &Value) -> u64 {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(ns: &str, name: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": name}})
    }

    #[test]
    fn writes_get_increasing_resource_versions_and_events() {
        let gr = GroupResource::new("", "configmaps");
        let mut s = Store::new(100, 100);
        let (_, mut rx) = s.watch(&gr, Some("a"), None).expect("watch");
        let o1 = s.put(&gr, cm("a", "x"));
        let o2 = s.put(&gr, cm("a", "x"));
        s.put(&gr, cm("b", "y"));
        assert!(rv_of(&o2) > rv_of(&o1));
        let gone = s.remove(&gr, "a", "x").expect("removed");
        assert!(rv_of(&gone) > rv_of(&o2));
        let kinds: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds,
            vec![EventType::Added, EventType::Modified, EventType::Deleted],
            "namespace b is filtered out"
        );
    }

    #[test]
    fn resuming_replays_history_and_compaction_means_gone() {
        let gr = GroupResource::new("", "configmaps");
        let mut s = Store::new(2, 100);
        let first = rv_of(&s.put(&gr, cm("a", "1")));
        s.put(&gr, cm("a", "2"));
        let (backlog, _) = s.watch(&gr, None, Some(first)).expect("within history");
        assert_eq!(backlog.len(), 1);
        s.put(&gr, cm("a", "3"));
        s.put(&gr, cm("a", "4"));
        assert!(matches!(
            s.watch(&gr, None, Some(first)),
            Err(WatchStartError::Gone { .. })
        ));
        s.compact();
        let now = s.current_rv();
        assert!(s.watch(&gr, None, Some(now)).is_ok());
        let (backlog, _) = s
            .watch(&gr, None, Some(now + 5))
            .expect("a future rv waits, as the watch cache does");
        assert!(backlog.is_empty());
    }

    #[test]
    fn iteration_is_per_namespace_and_resumable() {
        let gr = GroupResource::new("", "configmaps");
        let mut s = Store::new(100, 100);
        for (ns, n) in [("a", "1"), ("a", "2"), ("b", "1"), ("c", "1")] {
            s.put(&gr, cm(ns, n));
        }
        assert_eq!(s.iter(&gr, Some("a"), None).count(), 2);
        assert_eq!(s.iter(&gr, None, None).count(), 4);
        let after = ("a".to_string(), "2".to_string());
        let rest: Vec<_> = s
            .iter(&gr, None, Some(&after))
            .map(|(k, _)| k.0.clone())
            .collect();
        assert_eq!(rest, vec!["b", "c"]);
        assert_eq!(
            s.iter(&gr, Some("a"), Some(&("a".into(), "1".into())))
                .count(),
            1
        );
    }
}
