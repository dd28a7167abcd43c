//! The status board and the one status writer per operator CR.
//!
//! Reconcile steps post conditions, `generations` entries and plain status fields to an
//! in-memory [`StatusBoard`]; at the end of a reconcile [`StatusWriter::flush`] merges them into
//! the CR's status and writes it **only when something other than a timestamp changed**, with
//! optimistic concurrency (`replace_status` carrying the live resourceVersion; a 409 re-reads and
//! retries). `lastTransitionTime` is kept unless a condition's status flips; conditions of types
//! the board does not own are left alone, so other writers (CSO, an admin) keep theirs.
//!
//! It works on `DynamicObject`, so ClusterCSIDriver and Storage (any OpenShift `OperatorStatus`)
//! share it. The merge is a pure function ([`merge_status`]) with the clock passed in.
//! Condition messages are cut to [`MAX_MESSAGE_BYTES`] there, so no message (a listing of a
//! cloud's thousand share types, an error quoting a large answer) can push the CR past the
//! API server's size limit and make every status write fail.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cache::resource_version;
use crate::conditions::OperatorCondition;

/// One `status.generations` entry (OpenShift `GenerationStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationStatus {
    pub group: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub last_generation: i64,
    #[serde(default)]
    pub hash: String,
}

/// What the steps of one reconcile want the status to say.
#[derive(Debug, Clone, Default)]
pub struct StatusBoard {
    conditions: BTreeMap<String, OperatorCondition>,
    removed: BTreeSet<String>,
    generations: Vec<GenerationStatus>,
    fields: BTreeMap<String, Value>,
    observed_generation: Option<i64>,
    /// Set for statuses without `observedGeneration` (ClusterOperator): writing it there
    /// would be pruned by the API server and look like a change on every reconcile.
    omit_observed_generation: bool,
}

impl StatusBoard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Posts a condition (the board then owns that type); its `lastTransitionTime` is ignored:
    /// the writer keeps the live one unless the status flips.
    pub fn set_condition(&mut self, condition: OperatorCondition) {
        self.removed.remove(&condition.type_);
        self.conditions.insert(condition.type_.clone(), condition);
    }

    /// Removes a condition type from the CR (e.g. a stale type of an older release).
    pub fn remove_condition(&mut self, type_: &str) {
        self.conditions.remove(type_);
        self.removed.insert(type_.to_string());
    }

    /// The posted condition of a type.
    pub fn condition(&self, type_: &str) -> Option<&OperatorCondition> {
        self.conditions.get(type_)
    }

    /// Every posted condition.
    pub fn conditions(&self) -> impl Iterator<Item = &OperatorCondition> {
        self.conditions.values()
    }

    /// Records the generation of an operand (replaces the entry of the same object).
    pub fn record_generation(&mut self, generation: GenerationStatus) {
        self.generations.retain(|g| !same_object(g, &generation));
        self.generations.push(generation);
    }

    /// Sets a plain status field (e.g. `readyReplicas`, `version`).
    pub fn set_field(&mut self, key: impl Into<String>, value: Value) {
        self.fields.insert(key.into(), value);
    }

    /// The CR generation this reconcile acted on (read at reconcile start). Defaults to the
    /// generation of the CR passed to [`StatusWriter::flush`].
    pub fn set_observed_generation(&mut self, generation: i64) {
        self.observed_generation = Some(generation);
    }

    /// Leaves `status.observedGeneration` alone, for kinds whose status has no such field
    /// (`ClusterOperator`).
    pub fn omit_observed_generation(&mut self) {
        self.omit_observed_generation = true;
    }
}

fn same_object(a: &GenerationStatus, b: &GenerationStatus) -> bool {
    a.group == b.group && a.resource == b.resource && a.namespace == b.namespace && a.name == b.name
}

/// The `lastGeneration` recorded in `cr`'s `status.generations` for an operand: the expected
/// generation to give the apply engine for Deployments and DaemonSets.
pub fn last_generation(
    cr: &DynamicObject,
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> Option<i64> {
    cr.data
        .get("status")?
        .get("generations")?
        .as_array()?
        .iter()
        .filter_map(|g| serde_json::from_value::<GenerationStatus>(g.clone()).ok())
        .find(|g| {
            g.group == group && g.resource == resource && g.namespace == namespace && g.name == name
        })
        .map(|g| g.last_generation)
}

/// The status the board asks for, merged into `live` (the CR's current `status`). `now` is an
/// RFC 3339 time at second precision, used for conditions that are new or whose status flips.
pub fn merge_status(
    live: Option<&Value>,
    board: &StatusBoard,
    observed_generation: Option<i64>,
    now: &str,
) -> Value {
    let mut status = live.and_then(Value::as_object).cloned().unwrap_or_default();

    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| {
        c.get("type")
            .and_then(Value::as_str)
            .is_none_or(|t| !board.removed.contains(t))
    });
    for want in board.conditions.values() {
        let existing = conditions
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(want.type_.as_str()));
        let transition_time = match &existing {
            Some(have)
                if have.get("status").and_then(Value::as_str) == Some(want.status.as_str()) =>
            {
                have.get("lastTransitionTime")
                    .and_then(Value::as_str)
                    .unwrap_or(now)
                    .to_string()
            }
            _ => now.to_string(),
        };
        let mut c = Map::new();
        c.insert("type".into(), Value::String(want.type_.clone()));
        c.insert("status".into(), Value::String(want.status.clone()));
        c.insert("lastTransitionTime".into(), Value::String(transition_time));
        c.insert("reason".into(), Value::String(want.reason.clone()));
        c.insert("message".into(), Value::String(cap_message(&want.message)));
        match existing {
            Some(slot) => *slot = Value::Object(c),
            None => conditions.push(Value::Object(c)),
        }
    }
    if !conditions.is_empty() || status.contains_key("conditions") {
        status.insert("conditions".into(), Value::Array(conditions));
    }

    if !board.generations.is_empty() {
        let mut generations: Vec<Value> = status
            .get("generations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for want in &board.generations {
            let value = serde_json::to_value(want).unwrap_or(Value::Null);
            let slot = generations.iter_mut().find(|g| {
                serde_json::from_value::<GenerationStatus>((*g).clone())
                    .is_ok_and(|g| same_object(&g, want))
            });
            match slot {
                Some(slot) => *slot = value,
                None => generations.push(value),
            }
        }
        status.insert("generations".into(), Value::Array(generations));
    }

    for (key, value) in &board.fields {
        status.insert(key.clone(), value.clone());
    }
    if let Some(generation) = observed_generation {
        status.insert("observedGeneration".into(), Value::from(generation));
    }
    Value::Object(status)
}

/// The longest condition message written, in bytes. Kubernetes caps a `metav1.Condition`
/// message at 32 KiB; a CR carries dozens of conditions (and the CSO copies the drivers'
/// into Storage and the ClusterOperator), so ours stay well below that and the whole status
/// far below the API server's 1.5 MiB request limit, while a message an administrator reads
/// is never near it.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024;

/// `message` cut to at most [`MAX_MESSAGE_BYTES`] on a character boundary, with a marker
/// saying how much was left out; unchanged when it fits.
pub fn cap_message(message: &str) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message.to_string();
    }
    // The marker names the bytes left out, which depends on where the cut falls; its length
    // is bounded by the marker for the whole message's length.
    let marker = |omitted: usize| format!(" … [message truncated: {omitted} more bytes]");
    let room = MAX_MESSAGE_BYTES - marker(message.len()).len();
    let mut cut = room;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{}", &message[..cut], marker(message.len() - cut))
}

/// Equality of two statuses ignoring conditions' `lastTransitionTime`.
pub fn equal_ignoring_time(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn strip(v: Option<&Value>) -> Value {
        let mut v = v.cloned().unwrap_or(Value::Object(Map::new()));
        if let Some(Value::Array(conditions)) = v.get_mut("conditions") {
            for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
                c.remove("lastTransitionTime");
            }
        }
        v
    }
    strip(a) == strip(b)
}

/// The current time at second precision, as Kubernetes serialises condition times.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// What a flush did.
#[derive(Debug, Clone)]
pub enum Flushed {
    /// The status already said this: no request was made.
    Unchanged,
    /// The status was written; the CR as the server returned it.
    Written(Arc<DynamicObject>),
}

/// Why a status write failed.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("failed to {verb} the status of {kind} {name}: {source}")]
    Api {
        verb: &'static str,
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the status of {kind} {name} kept changing under us ({attempts} conflicts in a row); will retry on the next reconcile"
    )]
    Conflicts {
        kind: String,
        name: String,
        attempts: u32,
    },
    #[error("{kind} {name} no longer exists; nothing to report status on")]
    Gone { kind: String, name: String },
}

/// The waits between the attempts of one status write that meets 409s: library-go's
/// `retry.DefaultBackoff` (four attempts, 10 ms × 5ⁿ apart), so a CR that keeps changing
/// under us, or an API server answering 409 to everything, costs four writes spread over
/// 300 ms rather than a burst of writes and re-reads back to back.
const CONFLICT_WAITS: [std::time::Duration; 3] = [
    std::time::Duration::from_millis(10),
    std::time::Duration::from_millis(50),
    std::time::Duration::from_millis(250),
];
const MAX_ATTEMPTS: u32 = CONFLICT_WAITS.len() as u32 + 1;

/// The one writer of one CR's status.
pub struct StatusWriter {
    client: Client,
    ar: ApiResource,
    namespace: Option<String>,
    /// The CR as our last write returned it, until the caller's (cached) copy catches up.
    last_written: Mutex<Option<Arc<DynamicObject>>>,
}

impl StatusWriter {
    /// `namespace` is `None` for cluster-scoped CRs (ClusterCSIDriver, Storage).
    pub fn new(client: Client, ar: &ApiResource, namespace: Option<&str>) -> Self {
        Self {
            client,
            ar: ar.clone(),
            namespace: namespace.map(str::to_string),
            last_written: Mutex::new(None),
        }
    }

    fn api(&self) -> Api<DynamicObject> {
        match &self.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &self.ar),
            None => Api::all_with(self.client.clone(), &self.ar),
        }
    }

    /// Merges the board into `live_cr`'s status and writes it if anything but a timestamp
    /// changed. `live_cr` is the CR as the reconcile read it (normally from a cache).
    pub async fn flush(
        &self,
        board: &StatusBoard,
        live_cr: &DynamicObject,
    ) -> Result<Flushed, StatusError> {
        let name = live_cr.metadata.name.clone().unwrap_or_default();
        let observed = if board.omit_observed_generation {
            None
        } else {
            board.observed_generation.or(live_cr.metadata.generation)
        };
        let api = self.api();
        let mut base = self.newest(live_cr);
        for attempt in 0..CONFLICT_WAITS.len() + 1 {
            let current = base.data.get("status");
            let wanted = merge_status(current, board, observed, &now_rfc3339());
            if equal_ignoring_time(current, Some(&wanted)) {
                return Ok(Flushed::Unchanged);
            }
            let mut obj = (*base).clone();
            obj.metadata.managed_fields = None;
            if !obj.data.is_object() {
                obj.data = Value::Object(Map::new());
            }
            if let Some(map) = obj.data.as_object_mut() {
                map.insert("status".into(), wanted);
            }
            match api
                .replace_status(&name, &PostParams::default(), &obj)
                .await
            {
                Ok(mut written) => {
                    written.metadata.managed_fields = None;
                    let written = Arc::new(written);
                    *self.lock() = Some(written.clone());
                    return Ok(Flushed::Written(written));
                }
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    // The last attempt's conflict needs no re-read: nothing would use it.
                    let Some(wait) = CONFLICT_WAITS.get(attempt) else {
                        break;
                    };
                    tracing::debug!(kind = %self.ar.kind, %name, "status write conflicted; re-reading");
                    tokio::time::sleep(*wait).await;
                    base = match api.get(&name).await {
                        Ok(fresh) => Arc::new(fresh),
                        Err(kube::Error::Api(s)) if s.code == 404 => {
                            return Err(self.gone(&name));
                        }
                        Err(source) => return Err(self.api_error("read", &name, source)),
                    };
                }
                Err(kube::Error::Api(s)) if s.code == 404 => return Err(self.gone(&name)),
                Err(source) => return Err(self.api_error("write", &name, source)),
            }
        }
        Err(StatusError::Conflicts {
            kind: self.ar.kind.clone(),
            name,
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Remembers a write of the CR made elsewhere (the config observer's `spec` update), so
    /// [`Self::newest`] knows it before the watch delivers it.
    pub fn remember(&self, written: Arc<DynamicObject>) {
        *self.lock() = Some(written);
    }

    /// The caller's copy, unless our own last write is newer (the watch has not delivered it
    /// yet, or the caller holds an older copy). The memo is one object per writer, kept until
    /// the CR is replaced by another with a different uid.
    ///
    /// A reconcile reads its CR through this: a reconcile that starts before the watch shows
    /// the last status write would otherwise miss the generations recorded there and write
    /// the Deployment and DaemonSets once more (library-go forces a write when no generation
    /// is recorded).
    pub fn newest(&self, live_cr: &DynamicObject) -> Arc<DynamicObject> {
        let mut memo = self.lock();
        if let Some(written) = memo.as_ref() {
            if written.metadata.uid != live_cr.metadata.uid {
                *memo = None;
            } else if let (Some(w), Some(l)) =
                (resource_version(written), resource_version(live_cr))
                && w > l
            {
                return written.clone();
            }
        }
        Arc::new(live_cr.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<DynamicObject>>> {
        self.last_written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn gone(&self, name: &str) -> StatusError {
        StatusError::Gone {
            kind: self.ar.kind.clone(),
            name: name.to_string(),
        }
    }

    fn api_error(&self, verb: &'static str, name: &str, source: kube::Error) -> StatusError {
        StatusError::Api {
            verb,
            kind: self.ar.kind.clone(),
            name: name.to_string(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn board() -> StatusBoard {
        let mut b = StatusBoard::new();
        b.set_condition(OperatorCondition::new(
            "XAvailable",
            "True",
            "AsExpected",
            "ok",
        ));
        b
    }

    #[test]
    fn keeps_transition_time_when_status_unchanged() {
        let live = json!({"conditions": [{"type": "XAvailable", "status": "True",
            "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "Old", "message": "old"}]});
        let out = merge_status(Some(&live), &board(), None, "2030-01-01T00:00:00Z");
        assert_eq!(
            out["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        assert_eq!(out["conditions"][0]["reason"], "AsExpected");
    }

    #[test]
    fn sets_transition_time_when_status_flips() {
        let live = json!({"conditions": [{"type": "XAvailable", "status": "False",
            "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "R", "message": "m"}]});
        let out = merge_status(Some(&live), &board(), None, "2030-01-01T00:00:00Z");
        assert_eq!(
            out["conditions"][0]["lastTransitionTime"],
            "2030-01-01T00:00:00Z"
        );
    }

    #[test]
    fn leaves_other_types_alone_and_removes_owned_stale_ones() {
        let live = json!({"conditions": [
            {"type": "Foreign", "status": "True", "lastTransitionTime": "t", "reason": "R", "message": "m"},
            {"type": "Stale", "status": "True", "lastTransitionTime": "t", "reason": "R", "message": "m"}]});
        let mut b = board();
        b.remove_condition("Stale");
        let out = merge_status(Some(&live), &b, Some(3), "now");
        let types: Vec<_> = out["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["type"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(types, ["Foreign", "XAvailable"]);
        assert_eq!(out["observedGeneration"], 3);
    }

    #[test]
    fn generations_are_replaced_by_object() {
        let live = json!({"generations": [
            {"group": "apps", "resource": "deployments", "namespace": "ns", "name": "d", "lastGeneration": 1, "hash": ""},
            {"group": "apps", "resource": "daemonsets", "namespace": "ns", "name": "n", "lastGeneration": 7, "hash": ""}]});
        let mut b = StatusBoard::new();
        b.record_generation(GenerationStatus {
            group: "apps".into(),
            resource: "deployments".into(),
            namespace: "ns".into(),
            name: "d".into(),
            last_generation: 2,
            hash: String::new(),
        });
        let out = merge_status(Some(&live), &b, None, "now");
        assert_eq!(out["generations"][0]["lastGeneration"], 2);
        assert_eq!(out["generations"][1]["lastGeneration"], 7);
        let mut cr = DynamicObject::new(
            "x",
            &ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk("a", "v1", "X")),
        );
        cr.data = json!({"status": out});
        assert_eq!(
            last_generation(&cr, "apps", "daemonsets", "ns", "n"),
            Some(7)
        );
        assert_eq!(
            last_generation(&cr, "apps", "daemonsets", "ns", "other"),
            None
        );
    }

    #[test]
    fn long_condition_messages_are_cut_on_a_character_boundary_with_a_marker() {
        // Three-byte characters, so a cut at a fixed byte count would split one.
        let long = "é€".repeat(10_000);
        let mut b = StatusBoard::new();
        b.set_condition(OperatorCondition::new("XDegraded", "True", "Error", &long));
        b.set_condition(OperatorCondition::new(
            "XAvailable",
            "True",
            "AsExpected",
            "ok",
        ));
        let out = merge_status(None, &b, None, "now");
        let messages: Vec<&str> = out["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["message"].as_str())
            .collect();
        assert!(messages.contains(&"ok"), "short messages are unchanged");
        let cut = messages
            .iter()
            .find(|m| m.starts_with("é€"))
            .expect("the long message");
        assert!(cut.len() <= MAX_MESSAGE_BYTES, "{} bytes", cut.len());
        assert!(
            cut.len() > MAX_MESSAGE_BYTES - 64,
            "as much as fits is kept"
        );
        let kept = cut
            .split(" … [message truncated: ")
            .next()
            .unwrap_or_default();
        assert!(long.starts_with(kept));
        assert!(
            cut.ends_with(&format!("{} more bytes]", long.len() - kept.len())),
            "{}",
            &cut[cut.len() - 60..]
        );
        // The cut is stable, so an unchanged board finds the live status equal.
        let again = merge_status(Some(&out), &b, None, "later");
        assert!(equal_ignoring_time(Some(&out), Some(&again)));
        assert_eq!(
            cap_message(&"x".repeat(MAX_MESSAGE_BYTES)).len(),
            MAX_MESSAGE_BYTES
        );
    }

    #[test]
    fn time_insensitive_equality() {
        let a = json!({"conditions": [{"type": "A", "status": "True", "lastTransitionTime": "1"}]});
        let b = json!({"conditions": [{"type": "A", "status": "True", "lastTransitionTime": "2"}]});
        let c =
            json!({"conditions": [{"type": "A", "status": "False", "lastTransitionTime": "1"}]});
        assert!(equal_ignoring_time(Some(&a), Some(&b)));
        assert!(!equal_ignoring_time(Some(&a), Some(&c)));
    }

    #[test]
    fn time_is_whole_seconds() {
        let now = now_rfc3339();
        assert_eq!(now.len(), "2024-01-01T00:00:00Z".len(), "{now}");
        assert!(now.ends_with('Z'));
    }
}
