//! Operator conditions: the standard types and reasons, setting and merging them the way
//! library-go does (`lastTransitionTime` only moves when the status flips), comparing them
//! without timestamps, and [`union`] (library-go `UnionCondition`, anchors §1.15) which the
//! Cluster Storage Operator uses to roll driver conditions up into `ClusterOperator/storage`.
//!
//! Pure: the caller passes `now`; nothing here reads a clock or talks to the API. The
//! condition type here mirrors `operator.openshift.io/v1` `OperatorCondition` in JSON so the
//! status writer can convert it field by field.

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Condition status `True`.
pub const TRUE: &str = "True";
/// Condition status `False`.
pub const FALSE: &str = "False";
/// Condition status `Unknown`.
pub const UNKNOWN: &str = "Unknown";

/// Standard condition type suffixes (library-go `OperatorStatusType*`).
pub mod types {
    /// `…Available`
    pub const AVAILABLE: &str = "Available";
    /// `…Progressing`
    pub const PROGRESSING: &str = "Progressing";
    /// `…Degraded`
    pub const DEGRADED: &str = "Degraded";
    /// `…Upgradeable`
    pub const UPGRADEABLE: &str = "Upgradeable";
    /// `EvaluationConditionsDetected` (ClusterOperator only)
    pub const EVALUATION_CONDITIONS_DETECTED: &str = "EvaluationConditionsDetected";
    /// `ManagementStateDegraded` (fixed name, no prefix; anchors §1.9)
    pub const MANAGEMENT_STATE_DEGRADED: &str = "ManagementStateDegraded";
    /// `ConfigObservationDegraded` (fixed name, no prefix; anchors §1.11)
    pub const CONFIG_OBSERVATION_DEGRADED: &str = "ConfigObservationDegraded";
}

/// Standard reasons used by library-go controllers.
pub mod reasons {
    /// Everything is fine.
    pub const AS_EXPECTED: &str = "AsExpected";
    /// A sync returned an error (`WithSyncDegradedOnError`).
    pub const SYNC_ERROR: &str = "SyncError";
    /// A workload is rolling out.
    pub const DEPLOYING: &str = "Deploying";
    /// Generic error (config observer, resource sync).
    pub const ERROR: &str = "Error";
    /// A precondition of a static-resource step failed.
    pub const PRECONDITION_NOT_READY: &str = "PreconditionNotReady";
    /// [`super::union`] found no matching condition.
    pub const NO_DATA: &str = "NoData";
    /// The operator is Unmanaged.
    pub const UNMANAGED: &str = "Unmanaged";
    /// Removed was requested on a non-removable operator.
    pub const REMOVED: &str = "Removed";
    /// Unsupported management state.
    pub const UNKNOWN: &str = "Unknown";
}

/// `<prefix>Degraded`, the condition `WithSyncDegradedOnError` writes for a controller.
pub fn degraded_type(prefix: &str) -> String {
    format!("{prefix}{}", types::DEGRADED)
}

/// `<prefix>Available`.
pub fn available_type(prefix: &str) -> String {
    format!("{prefix}{}", types::AVAILABLE)
}

/// `<prefix>Progressing`.
pub fn progressing_type(prefix: &str) -> String {
    format!("{prefix}{}", types::PROGRESSING)
}

/// The `<prefix>Degraded` condition of a step (library-go `WithSyncDegradedOnError`):
/// `True / SyncError / <error>` when the step failed, `False / AsExpected` when it succeeded.
/// The error text must already be free of secret values.
pub fn degraded(prefix: &str, error: Option<&str>) -> OperatorCondition {
    match error {
        Some(message) => {
            OperatorCondition::new(degraded_type(prefix), TRUE, reasons::SYNC_ERROR, message)
        }
        None => OperatorCondition::new(degraded_type(prefix), FALSE, reasons::AS_EXPECTED, ""),
    }
}

/// The findings condition of the OpenStack driver operators: clouds.yaml settings that expose
/// the credentials (`verify: false`, a plain-HTTP auth URL).
pub const INSECURE_OPENSTACK_CONNECTION: &str = "InsecureOpenStackConnection";
/// Its reason when there are findings.
pub const INSECURE_CLOUD_CONFIG: &str = "InsecureCloudConfig";

/// The findings of [`INSECURE_OPENSTACK_CONNECTION`] for clouds.yaml files, each found under
/// `(where, bytes)` (e.g. a Secret's name and its `clouds.yaml` value); `check` is the
/// finder (the `openstack` crate's `insecure_settings_in` for the default cloud).
pub fn insecure_connection(
    sources: &[(&str, Option<&[u8]>)],
    check: impl Fn(&[u8]) -> Vec<String>,
) -> OperatorCondition {
    let found: Vec<String> = sources
        .iter()
        .filter_map(|(at, bytes)| bytes.map(|b| (at, check(b))))
        .flat_map(|(at, list)| list.into_iter().map(move |f| format!("Secret {at}: {f}")))
        .collect();
    findings(INSECURE_OPENSTACK_CONNECTION, INSECURE_CLOUD_CONFIG, &found)
}

/// A condition that reports settings the administrator chose but should know are risky:
/// `True / <reason> / <findings joined>` when there are findings, else `False / AsExpected`.
/// Its type must not end in Degraded, Available, Progressing or Upgradeable: a risky but
/// working setting is not a reason to degrade the ClusterOperator.
pub fn findings(type_: &str, reason: &str, findings: &[String]) -> OperatorCondition {
    debug_assert!(
        ![
            types::DEGRADED,
            types::AVAILABLE,
            types::PROGRESSING,
            types::UPGRADEABLE
        ]
        .iter()
        .any(|s| type_.ends_with(s)),
        "{type_} would be aggregated"
    );
    if findings.is_empty() {
        OperatorCondition::new(type_, FALSE, reasons::AS_EXPECTED, "")
    } else {
        OperatorCondition::new(type_, TRUE, reason, findings.join("; "))
    }
}

/// One operator condition (`operator.openshift.io/v1` `OperatorCondition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OperatorCondition {
    /// Condition type, e.g. `OpenStackCinderDriverControllerServiceControllerAvailable`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown` (kept as a string: conditions written by others may hold
    /// anything, and the union rules compare strings).
    pub status: String,
    /// When the status last changed; `None` is Go's zero time.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time_serde")]
    pub last_transition_time: Option<Timestamp>,
    /// CamelCase reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl OperatorCondition {
    /// A condition without a transition time (the setter fills it in).
    pub fn new(
        type_: impl Into<String>,
        status: &str,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        OperatorCondition {
            type_: type_.into(),
            status: status.to_owned(),
            last_transition_time: None,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// Equal in type, status, reason and message; the transition time is ignored.
    pub fn same_ignoring_time(&self, other: &OperatorCondition) -> bool {
        self.type_ == other.type_
            && self.status == other.status
            && self.reason == other.reason
            && self.message == other.message
    }
}

/// Kubernetes `metav1.Time` has whole seconds; truncating `now` keeps what we hold in memory
/// equal to what the API returns, so a re-read never looks like a change.
fn whole_seconds(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Finds a condition by exact type.
pub fn find<'a>(conditions: &'a [OperatorCondition], type_: &str) -> Option<&'a OperatorCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Sets `new` in `conditions` (library-go `SetOperatorCondition` / the SSA canonicalization):
/// a new type is appended with `lastTransitionTime = now`; an existing one keeps its
/// transition time unless the status changes; reason and message are always overwritten.
/// Returns whether anything other than the transition time changed.
pub fn set(
    conditions: &mut Vec<OperatorCondition>,
    new: OperatorCondition,
    now: Timestamp,
) -> bool {
    let now = whole_seconds(now);
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(OperatorCondition {
                last_transition_time: Some(now),
                ..new
            });
            true
        }
        Some(existing) => {
            let changed = !existing.same_ignoring_time(&new);
            if existing.status != new.status || existing.last_transition_time.is_none() {
                existing.last_transition_time = Some(now);
            }
            existing.status = new.status;
            existing.reason = new.reason;
            existing.message = new.message;
            changed
        }
    }
}

/// Applies every condition of `updates` to `existing` with [`set`]; conditions not mentioned
/// in `updates` are kept as they are. Returns the merged list.
pub fn merge(
    existing: &[OperatorCondition],
    updates: impl IntoIterator<Item = OperatorCondition>,
    now: Timestamp,
) -> Vec<OperatorCondition> {
    let mut merged = existing.to_vec();
    for update in updates {
        set(&mut merged, update, now);
    }
    merged
}

/// Removes the condition with exactly this type; returns whether one was removed.
pub fn remove(conditions: &mut Vec<OperatorCondition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    before != conditions.len()
}

/// Whether two condition lists say the same thing: same set of types with the same status,
/// reason and message, in any order, transition times ignored. The status writer writes only
/// when this is false.
pub fn equal_ignoring_time(a: &[OperatorCondition], b: &[OperatorCondition]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut a: Vec<&OperatorCondition> = a.iter().collect();
    let mut b: Vec<&OperatorCondition> = b.iter().collect();
    a.sort_by(|x, y| x.type_.cmp(&y.type_));
    b.sort_by(|x, y| x.type_.cmp(&y.type_));
    a.iter().zip(b.iter()).all(|(x, y)| x.same_ignoring_time(y))
}

/// The union of all conditions whose type ends with `type_suffix` (library-go
/// `UnionCondition`, anchors §1.15).
///
/// * No matching condition → `Unknown` / `NoData`.
/// * A matching condition is *bad* when its status differs from `default_status`. With
///   `inertia`, a bad condition only counts once its `lastTransitionTime` is older than
///   `now - inertia` (a missing time counts as very old).
/// * No counted bad condition → `default_status` / `AsExpected`, the union message of all
///   matching conditions (or `All is well`), and the latest transition time among them.
/// * Otherwise the status is the opposite of `default_status` if any bad condition has exactly
///   that status, else `Unknown`; the message lists every line of every bad condition as
///   `<Type>: <line>` (duplicate lines within one condition dropped); the reason is the sorted
///   `<TypeWithoutSuffix>_<Reason>` list (or `<TypeWithoutSuffix>` without a reason) joined with
///   `::`; the time is the latest among the bad conditions. All bad conditions are listed, also
///   those still held back by inertia, as library-go does.
pub fn union(
    type_suffix: &str,
    default_status: &str,
    inertia: Option<Duration>,
    conditions: &[OperatorCondition],
    now: Timestamp,
) -> OperatorCondition {
    let opposite = if default_status == TRUE { FALSE } else { TRUE };

    let interesting: Vec<&OperatorCondition> = conditions
        .iter()
        .filter(|c| c.type_.ends_with(type_suffix))
        .collect();
    let mut bad: Vec<&OperatorCondition> = interesting
        .iter()
        .copied()
        .filter(|c| c.status != default_status)
        .collect();
    let bad_status = if bad.iter().any(|c| c.status == opposite) {
        opposite
    } else {
        UNKNOWN
    };
    // Stable sort; library-go's sort.Sort is not stable, but only equal types could differ.
    bad.sort_by(|a, b| a.type_.cmp(&b.type_));

    if interesting.is_empty() {
        return OperatorCondition::new(type_suffix, UNKNOWN, reasons::NO_DATA, "");
    }

    let counted = match inertia {
        None => bad.len(),
        Some(inertia) => {
            let threshold = jiff::SignedDuration::try_from(inertia)
                .ok()
                .and_then(|d| now.checked_sub(d).ok());
            bad.iter()
                .filter(|c| match (c.last_transition_time, threshold) {
                    // Go's zero time is before any threshold.
                    (None, _) => true,
                    (Some(t), Some(threshold)) => t < threshold,
                    // An inertia too large to subtract holds everything back.
                    (Some(_), None) => false,
                })
                .count()
        }
    };

    if counted == 0 {
        let mut message = union_message(&interesting);
        if message.is_empty() {
            message = "All is well".to_owned();
        }
        return OperatorCondition {
            type_: type_suffix.to_owned(),
            status: default_status.to_owned(),
            last_transition_time: latest_transition_time(&interesting),
            reason: reasons::AS_EXPECTED.to_owned(),
            message,
        };
    }

    OperatorCondition {
        type_: type_suffix.to_owned(),
        status: bad_status.to_owned(),
        last_transition_time: latest_transition_time(&bad),
        reason: union_reason(type_suffix, &bad),
        message: union_message(&bad),
    }
}

fn latest_transition_time(conditions: &[&OperatorCondition]) -> Option<Timestamp> {
    conditions
        .iter()
        .filter_map(|c| c.last_transition_time)
        .max()
}

fn union_message(conditions: &[&OperatorCondition]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for c in conditions {
        if c.message.is_empty() {
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        for line in c.message.split('\n') {
            if seen.contains(&line) {
                continue;
            }
            seen.push(line);
            lines.push(format!("{}: {}", c.type_, line));
        }
    }
    lines.join("\n")
}

fn union_reason(type_suffix: &str, conditions: &[&OperatorCondition]) -> String {
    let mut reasons: Vec<String> = conditions
        .iter()
        .map(|c| {
            let prefix = c.type_.strip_suffix(type_suffix).unwrap_or(&c.type_);
            if c.reason.is_empty() {
                prefix.to_owned()
            } else {
                format!("{prefix}_{}", c.reason)
            }
        })
        .collect();
    reasons.sort();
    reasons.join("::")
}

/// Serde for `Option<Timestamp>` in Kubernetes' `metav1.Time` format (RFC 3339, seconds, `Z`).
mod time_serde {
    use jiff::Timestamp;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        t.map(Time).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        Ok(Option::<Time>::deserialize(d)?.map(|t| t.0))
    }
}

#[cfg(test)]
mod findings_tests {
    use super::*;

    #[test]
    fn findings_name_their_source_and_none_is_false() {
        let check = |b: &[u8]| {
            if b == b"bad" {
                vec!["verify: false".to_string()]
            } else {
                Vec::new()
            }
        };
        let c = insecure_connection(&[("ns/a", Some(b"bad")), ("ns/b", None)], check);
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            (INSECURE_OPENSTACK_CONNECTION, TRUE, INSECURE_CLOUD_CONFIG)
        );
        assert_eq!(c.message, "Secret ns/a: verify: false");
        let c = insecure_connection(&[("ns/a", Some(b"fine")), ("ns/b", None)], check);
        assert_eq!((c.status.as_str(), c.message.as_str()), (FALSE, ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    fn cond(
        t: &str,
        status: &str,
        reason: &str,
        message: &str,
        ltt: Option<i64>,
    ) -> OperatorCondition {
        OperatorCondition {
            type_: t.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: ltt.map(ts),
        }
    }

    #[test]
    fn set_keeps_time_unless_status_flips() {
        let mut conds = Vec::new();
        assert!(set(
            &mut conds,
            OperatorCondition::new("ADegraded", FALSE, "AsExpected", ""),
            ts(100)
        ));
        assert_eq!(conds[0].last_transition_time, Some(ts(100)));
        // Same status, new message: message changes, time stays.
        assert!(set(
            &mut conds,
            OperatorCondition::new("ADegraded", FALSE, "AsExpected", "hi"),
            ts(200)
        ));
        assert_eq!(conds[0].last_transition_time, Some(ts(100)));
        assert_eq!(conds[0].message, "hi");
        // Nothing changes: reported as unchanged.
        assert!(!set(
            &mut conds,
            OperatorCondition::new("ADegraded", FALSE, "AsExpected", "hi"),
            ts(250)
        ));
        // Status flips: time moves.
        assert!(set(
            &mut conds,
            OperatorCondition::new("ADegraded", TRUE, "SyncError", "boom"),
            ts(300)
        ));
        assert_eq!(conds[0].last_transition_time, Some(ts(300)));
        assert_eq!(conds.len(), 1);
    }

    #[test]
    fn set_truncates_to_whole_seconds() {
        let mut conds = Vec::new();
        let now = Timestamp::new(1_000, 999_999_999).unwrap();
        set(&mut conds, OperatorCondition::new("X", TRUE, "R", ""), now);
        assert_eq!(conds[0].last_transition_time, Some(ts(1_000)));
    }

    #[test]
    fn merge_keeps_unmentioned_conditions() {
        let existing = vec![
            cond("ADegraded", FALSE, "AsExpected", "", Some(1)),
            cond("BDegraded", TRUE, "SyncError", "x", Some(2)),
        ];
        let merged = merge(
            &existing,
            [OperatorCondition::new("ADegraded", TRUE, "SyncError", "y")],
            ts(10),
        );
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].status, TRUE);
        assert_eq!(merged[0].last_transition_time, Some(ts(10)));
        assert_eq!(merged[1], existing[1]);
    }

    #[test]
    fn remove_by_exact_type() {
        let mut conds = vec![
            cond("ADegraded", FALSE, "", "", None),
            cond("A", FALSE, "", "", None),
        ];
        assert!(remove(&mut conds, "A"));
        assert_eq!(conds.len(), 1);
        assert!(!remove(&mut conds, "A"));
    }

    #[test]
    fn equality_ignores_time_and_order() {
        let a = vec![
            cond("A", TRUE, "R", "m", Some(1)),
            cond("B", FALSE, "R", "m", Some(2)),
        ];
        let b = vec![
            cond("B", FALSE, "R", "m", Some(9)),
            cond("A", TRUE, "R", "m", None),
        ];
        assert!(equal_ignoring_time(&a, &b));
        let c = vec![
            cond("B", FALSE, "R", "m2", Some(9)),
            cond("A", TRUE, "R", "m", None),
        ];
        assert!(!equal_ignoring_time(&a, &c));
        assert!(!equal_ignoring_time(&a, &b[..1]));
    }

    #[test]
    fn json_shape_matches_operator_condition() {
        let c = cond("ADegraded", TRUE, "SyncError", "boom", Some(0));
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "ADegraded", "status": "True", "reason": "SyncError", "message": "boom", "lastTransitionTime": "1970-01-01T00:00:00Z"})
        );
        let back: OperatorCondition = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
        let minimal: OperatorCondition =
            serde_json::from_value(serde_json::json!({"type": "X", "status": "False"})).unwrap();
        assert_eq!(minimal.last_transition_time, None);
        let bad = serde_json::from_value::<OperatorCondition>(
            serde_json::json!({"type": "X", "status": "False", "lastTransitionTime": "yesterday"}),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn degraded_from_step_result() {
        assert_eq!(
            degraded("Foo", Some("boom")),
            OperatorCondition::new("FooDegraded", TRUE, "SyncError", "boom")
        );
        assert_eq!(
            degraded("Foo", None),
            OperatorCondition::new("FooDegraded", FALSE, "AsExpected", "")
        );
    }

    #[test]
    fn prefixed_names() {
        assert_eq!(degraded_type("Foo"), "FooDegraded");
        assert_eq!(available_type("Foo"), "FooAvailable");
        assert_eq!(progressing_type("Foo"), "FooProgressing");
    }

    #[test]
    fn union_no_data() {
        let u = union(
            "Degraded",
            FALSE,
            None,
            &[cond("AAvailable", TRUE, "", "", None)],
            ts(0),
        );
        assert_eq!(
            (u.type_.as_str(), u.status.as_str(), u.reason.as_str()),
            ("Degraded", UNKNOWN, "NoData")
        );
        assert_eq!(u.message, "");
    }

    #[test]
    fn union_all_good() {
        let conds = [
            cond("ADegraded", FALSE, "AsExpected", "", Some(5)),
            cond("BDegraded", FALSE, "AsExpected", "fine\nfine", Some(7)),
        ];
        let u = union("Degraded", FALSE, None, &conds, ts(100));
        assert_eq!(u.status, FALSE);
        assert_eq!(u.reason, "AsExpected");
        assert_eq!(u.message, "BDegraded: fine");
        assert_eq!(u.last_transition_time, Some(ts(7)));
        let quiet = union("Degraded", FALSE, None, &conds[..1], ts(100));
        assert_eq!(quiet.message, "All is well");
    }

    #[test]
    fn union_bad_formats_reason_and_message() {
        let conds = [
            cond(
                "ZDegraded",
                TRUE,
                "SyncError",
                "z broke\nz broke\nagain",
                Some(10),
            ),
            cond("ADegraded", TRUE, "", "a broke", Some(20)),
            cond("MDegraded", FALSE, "AsExpected", "ignored", Some(30)),
        ];
        let u = union("Degraded", FALSE, None, &conds, ts(100));
        assert_eq!(u.status, TRUE);
        assert_eq!(u.reason, "A::Z_SyncError");
        assert_eq!(
            u.message,
            "ADegraded: a broke\nZDegraded: z broke\nZDegraded: again"
        );
        assert_eq!(u.last_transition_time, Some(ts(20)));
    }

    #[test]
    fn union_unknown_when_no_bad_condition_is_opposite() {
        let conds = [cond("AAvailable", UNKNOWN, "Hmm", "", Some(1))];
        let u = union("Available", TRUE, None, &conds, ts(100));
        assert_eq!(u.status, UNKNOWN);
        assert_eq!(u.reason, "A_Hmm");
        let conds = [
            cond("AAvailable", UNKNOWN, "", "", Some(1)),
            cond("BAvailable", FALSE, "Down", "", Some(1)),
        ];
        assert_eq!(
            union("Available", TRUE, None, &conds, ts(100)).status,
            FALSE
        );
    }

    #[test]
    fn union_inertia_holds_back_young_bad_conditions() {
        let inertia = Some(Duration::from_secs(120));
        let young = [cond("ADegraded", TRUE, "SyncError", "boom", Some(1_000))];
        let u = union("Degraded", FALSE, inertia, &young, ts(1_100));
        assert_eq!(u.status, FALSE);
        assert_eq!(u.reason, "AsExpected");
        assert_eq!(u.message, "ADegraded: boom");
        // Exactly at the threshold is not yet "before" it.
        assert_eq!(
            union("Degraded", FALSE, inertia, &young, ts(1_120)).status,
            FALSE
        );
        assert_eq!(
            union("Degraded", FALSE, inertia, &young, ts(1_121)).status,
            TRUE
        );
        // A missing transition time counts as old.
        let zero = [cond("ADegraded", TRUE, "SyncError", "boom", None)];
        assert_eq!(union("Degraded", FALSE, inertia, &zero, ts(0)).status, TRUE);
    }

    #[test]
    fn union_lists_all_bad_conditions_once_one_counts() {
        let inertia = Some(Duration::from_secs(120));
        let conds = [
            cond("ADegraded", TRUE, "Old", "old", Some(0)),
            cond("BDegraded", TRUE, "Young", "young", Some(1_000)),
        ];
        let u = union("Degraded", FALSE, inertia, &conds, ts(1_010));
        assert_eq!(u.reason, "A_Old::B_Young");
        assert_eq!(u.last_transition_time, Some(ts(1_000)));
    }

    fn arb_condition() -> impl Strategy<Value = OperatorCondition> {
        (
            prop::sample::select(vec!["A", "B", "C", "DX"]),
            prop::sample::select(vec!["Degraded", "Available", "Foo"]),
            prop::sample::select(vec![TRUE, FALSE, UNKNOWN, "weird"]),
            prop::sample::select(vec!["", "R1", "R2"]),
            "[a-c\\n]{0,6}",
            prop::option::of(0i64..2_000),
        )
            .prop_map(|(p, s, status, reason, message, ltt)| {
                cond(&format!("{p}{s}"), status, reason, &message, ltt)
            })
    }

    proptest! {
        #[test]
        fn union_properties(
            conds in prop::collection::vec(arb_condition(), 0..8),
            default in prop::sample::select(vec![TRUE, FALSE]),
            inertia in prop::option::of(0u64..500),
            now in 0i64..3_000,
        ) {
            let u = union("Degraded", default, inertia.map(Duration::from_secs), &conds, ts(now));
            prop_assert_eq!(&u.type_, "Degraded");
            let interesting: Vec<_> = conds.iter().filter(|c| c.type_.ends_with("Degraded")).collect();
            if interesting.is_empty() {
                prop_assert_eq!(&u.status, UNKNOWN);
                prop_assert_eq!(&u.reason, "NoData");
            } else if interesting.iter().all(|c| c.status == default) {
                // Nothing bad: always the default, whatever the inertia.
                prop_assert_eq!(&u.status, default);
                prop_assert_eq!(&u.reason, "AsExpected");
            }
            if u.reason != reasons::AS_EXPECTED && u.reason != reasons::NO_DATA {
                // Bad result: every reason entry names a bad condition, sorted.
                let parts: Vec<&str> = u.reason.split("::").collect();
                let mut sorted = parts.clone();
                sorted.sort();
                prop_assert_eq!(parts, sorted);
                for line in u.message.lines() {
                    prop_assert!(line.contains("Degraded: "), "{}", line);
                }
            }
            // Inertia never makes the result worse than without it.
            let no_inertia = union("Degraded", default, None, &conds, ts(now));
            if no_inertia.status == default {
                prop_assert_eq!(&u.status, default);
            }
            // Order of the input does not change status or reason.
            let mut reversed = conds.clone();
            reversed.reverse();
            let r = union("Degraded", default, inertia.map(Duration::from_secs), &reversed, ts(now));
            prop_assert_eq!(&r.status, &u.status);
            prop_assert_eq!(&r.reason, &u.reason);
        }

        #[test]
        fn set_then_equal(conds in prop::collection::vec(arb_condition(), 0..6), now in 0i64..3_000) {
            let mut merged: Vec<OperatorCondition> = Vec::new();
            for c in &conds {
                set(&mut merged, c.clone(), ts(now));
            }
            // Setting the same conditions again is reported as no change and is time-equal.
            let before = merged.clone();
            for c in &merged.clone() {
                prop_assert!(!set(&mut merged, c.clone(), ts(now + 50)));
            }
            prop_assert!(equal_ignoring_time(&before, &merged));
            prop_assert_eq!(before, merged);
        }
    }
}
