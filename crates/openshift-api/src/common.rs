//! Types shared by the `operator.openshift.io/v1` operator resources: `OperatorSpec`,
//! `OperatorStatus`, conditions and generations, with the enums they use.
//!
//! Field names, `omitempty` behaviour and defaults follow `openshift/api:operator/v1/types.go`
//! so an object written by us looks like one written by library-go. Every struct an operator
//! writes back keeps fields it does not model (`extra`), so a newer CRD's fields survive our
//! read-modify-write.
//!
//! What this module must not do: decide policy. It says what a value *is* (for example that an
//! absent `logLevel` means `Normal`, as the CRD default does); what to do with an unknown value
//! (which condition, which message) is for the operator.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::string_enum::string_enum;

/// `status: "True"` of a condition.
pub const CONDITION_TRUE: &str = "True";
/// `status: "False"` of a condition.
pub const CONDITION_FALSE: &str = "False";
/// `status: "Unknown"` of a condition.
pub const CONDITION_UNKNOWN: &str = "Unknown";

/// Standard condition type suffixes. library-go and CSO match conditions by suffix (an operator's
/// `OpenStackCinderDriverControllerServiceControllerAvailable` counts as `Available`).
pub mod condition_types {
    /// `…Available`: the operand serves.
    pub const AVAILABLE: &str = "Available";
    /// `…Progressing`: the operand is rolling out a change.
    pub const PROGRESSING: &str = "Progressing";
    /// `…Degraded`: something is wrong and needs attention.
    pub const DEGRADED: &str = "Degraded";
    /// `…Upgradeable`: whether a cluster upgrade may proceed.
    pub const UPGRADEABLE: &str = "Upgradeable";
    /// `…PrereqsSatisfied`.
    pub const PREREQS_SATISFIED: &str = "PrereqsSatisfied";
    /// `…Disabled`: CSO reads any condition ending in `Disabled` (Manila without share types).
    pub const DISABLED: &str = "Disabled";
    /// `EvaluationConditionsDetected` (ClusterOperator only).
    pub const EVALUATION_CONDITIONS_DETECTED: &str = "EvaluationConditionsDetected";
}

/// A condition as `OperatorStatus.conditions[]` and `ClusterOperator.status.conditions[]` carry
/// it: `{type, status, lastTransitionTime, reason, message}`.
///
/// `lastTransitionTime` is required by both CRDs; it is an `Option` here only so that reading an
/// object written by a careless client does not fail. A writer must always set it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type, e.g. `OpenStackCinderDriverControllerServiceControllerAvailable`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown` (see [`CONDITION_TRUE`] and friends).
    pub status: String,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub last_transition_time: Option<Time>,
    /// One CamelCase word saying why (`AsExpected`, `Deploying`, …); omitted when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable details; omitted when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl Condition {
    /// A condition with the given type, status, reason and message and no transition time.
    pub fn new(
        type_: impl Into<String>,
        status: impl Into<String>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Condition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: None,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// Whether `status` is exactly `True`.
    pub fn is_true(&self) -> bool {
        self.status == CONDITION_TRUE
    }

    /// Whether `status` is exactly `False`.
    pub fn is_false(&self) -> bool {
        self.status == CONDITION_FALSE
    }
}

/// The condition of the given type in a list, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

string_enum! {
    /// `spec.managementState` (pattern `^(Managed|Unmanaged|Force|Removed)$`, no default).
    pub enum ManagementState {
        /// Reconcile everything.
        Managed = "Managed",
        /// Touch nothing.
        Unmanaged = "Unmanaged",
        /// Reserved by OpenShift; the CSI operators report it as an unknown state.
        Force = "Force",
        /// Remove the operand (unsupported by the OpenStack CSI operators).
        Removed = "Removed",
    }
}

string_enum! {
    /// `spec.logLevel` and `spec.operatorLogLevel` (enum `"" Normal Debug Trace TraceAll`,
    /// CRD default `Normal`).
    pub enum LogLevel {
        /// The empty string the enum allows; it means `Normal`.
        Unset = "",
        /// klog `-v=2`.
        Normal = "Normal",
        /// klog `-v=4`.
        Debug = "Debug",
        /// klog `-v=6`.
        Trace = "Trace",
        /// klog `-v=8`.
        TraceAll = "TraceAll",
    }
}

impl LogLevel {
    /// The level as the operators use it: `""` means `Normal`, anything else unchanged.
    pub fn effective(&self) -> LogLevel {
        match self {
            LogLevel::Unset => LogLevel::Normal,
            other => other.clone(),
        }
    }

    /// The klog verbosity of a known level (Normal 2, Debug 4, Trace 6, TraceAll 8, `""` 2),
    /// as library-go's `loglevel` package maps it; `None` for an unknown value, which the caller
    /// reports (and then usually runs at 2).
    pub fn klog_verbosity(&self) -> Option<u8> {
        match self {
            LogLevel::Unset | LogLevel::Normal => Some(2),
            LogLevel::Debug => Some(4),
            LogLevel::Trace => Some(6),
            LogLevel::TraceAll => Some(8),
            LogLevel::Unknown(_) => None,
        }
    }
}

/// `OperatorSpec`, inlined into the spec of every operator resource.
///
/// All fields are optional here: an absent `managementState` is never written back as `""`
/// (which the CRD's pattern would reject), and absent log levels stay absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorSpec {
    /// `Managed`, `Unmanaged`, `Force` or `Removed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub management_state: Option<ManagementState>,
    /// Verbosity of the operand (the CSI driver and sidecars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LogLevel>,
    /// Verbosity of the operator itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_log_level: Option<LogLevel>,
    /// Free-form overrides; not read by these operators but never dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported_config_overrides: Option<Value>,
    /// Written by the operator's config observer (`targetcsiconfig.{proxy,servingInfo}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_config: Option<Value>,
}

impl OperatorSpec {
    /// The management state; an absent field reads as `Unknown("")`, like any value the
    /// operator does not know (the CRD has no default for it).
    pub fn management_state(&self) -> ManagementState {
        self.management_state
            .clone()
            .unwrap_or_else(|| ManagementState::Unknown(String::new()))
    }

    /// The operand log level: absent or `""` reads as `Normal` (the CRD default); an unknown
    /// value is returned as `Unknown` for the caller to report.
    pub fn log_level(&self) -> LogLevel {
        self.log_level
            .as_ref()
            .map_or(LogLevel::Normal, LogLevel::effective)
    }

    /// The operator's own log level, read like [`Self::log_level`].
    pub fn operator_log_level(&self) -> LogLevel {
        self.operator_log_level
            .as_ref()
            .map_or(LogLevel::Normal, LogLevel::effective)
    }
}

/// One `status.generations[]` entry: the last generation (and hash) of an operand object the
/// operator rolled out, keyed by group/resource/namespace/name. All fields are always written,
/// as library-go does (`namespace: ""` for a cluster-scoped object).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerationStatus {
    /// API group (`apps`).
    #[serde(default)]
    pub group: String,
    /// Resource (`deployments`).
    #[serde(default)]
    pub resource: String,
    /// Namespace, empty for cluster-scoped objects.
    #[serde(default)]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// The object's `metadata.generation` when the operator last wrote it.
    #[serde(default)]
    pub last_generation: i64,
    /// A hash of what was written, when the operator tracks one.
    #[serde(default)]
    pub hash: String,
}

/// `OperatorStatus`, the status of every operator resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorStatus {
    /// The spec generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions (a list-map keyed by `type`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The operand version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Ready replicas of the operand; always written, as library-go does.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Latest revision (static-pod operators); the CRD forbids it to decrease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_available_revision: Option<i32>,
    /// Generations of the operand objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generations: Vec<GenerationStatus>,
    /// Status fields this crate does not model, kept for the write back.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl OperatorStatus {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        find_condition(&self.conditions, type_)
    }

    /// The generation entry for the given object, if present.
    pub fn generation(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<&GenerationStatus> {
        self.generations.iter().find(|g| {
            g.group == group && g.resource == resource && g.namespace == namespace && g.name == name
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_enum_values_are_kept_verbatim() {
        let spec: OperatorSpec = serde_json::from_value(json!({
            "managementState": "Sideways",
            "logLevel": "Loud",
            "operatorLogLevel": ""
        }))
        .unwrap();
        assert_eq!(
            spec.management_state(),
            ManagementState::Unknown("Sideways".into())
        );
        assert_eq!(spec.log_level(), LogLevel::Unknown("Loud".into()));
        assert_eq!(spec.log_level().klog_verbosity(), None);
        assert_eq!(spec.operator_log_level(), LogLevel::Normal);
        // Written back unchanged, including the empty string.
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            json!({"managementState": "Sideways", "logLevel": "Loud", "operatorLogLevel": ""})
        );
    }

    #[test]
    fn absent_fields_stay_absent_and_read_as_defaults() {
        let spec: OperatorSpec = serde_json::from_value(json!({})).unwrap();
        assert_eq!(spec.log_level(), LogLevel::Normal);
        assert_eq!(spec.operator_log_level(), LogLevel::Normal);
        assert_eq!(
            spec.management_state(),
            ManagementState::Unknown(String::new())
        );
        // Never `managementState: ""`, which the CRD pattern rejects.
        assert_eq!(serde_json::to_value(&spec).unwrap(), json!({}));
    }

    #[test]
    fn log_levels_map_to_klog_verbosity() {
        for (level, v) in [
            ("Normal", 2),
            ("Debug", 4),
            ("Trace", 6),
            ("TraceAll", 8),
            ("", 2),
        ] {
            assert_eq!(LogLevel::parse(level).klog_verbosity(), Some(v), "{level}");
        }
        assert!(LogLevel::parse("normal").klog_verbosity().is_none());
    }

    #[test]
    fn enum_of_wrong_json_type_is_a_clear_error() {
        let err = serde_json::from_value::<OperatorSpec>(json!({"logLevel": 4})).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid type: integer `4`, expected a string"),
            "{err}"
        );
    }

    #[test]
    fn status_round_trips_with_unknown_fields_and_go_omitempty() {
        let v = json!({
            "observedGeneration": 3,
            "conditions": [{
                "type": "FooAvailable", "status": "True",
                "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "AsExpected"
            }],
            "readyReplicas": 0,
            "generations": [{
                "group": "apps", "resource": "deployments", "namespace": "ns", "name": "d",
                "lastGeneration": 2, "hash": ""
            }],
            "futureField": {"a": 1}
        });
        let s: OperatorStatus = serde_json::from_value(v.clone()).unwrap();
        assert!(s.condition("FooAvailable").is_some_and(Condition::is_true));
        assert_eq!(
            s.generation("apps", "deployments", "ns", "d")
                .map(|g| g.last_generation),
            Some(2)
        );
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
    }

    #[test]
    fn condition_with_bad_time_is_a_clear_error() {
        let err = serde_json::from_value::<Condition>(json!({
            "type": "A", "status": "True", "lastTransitionTime": "yesterday"
        }))
        .unwrap_err();
        assert!(!err.to_string().is_empty());
        let err = serde_json::from_value::<Condition>(json!({"status": "True"})).unwrap_err();
        assert!(err.to_string().contains("missing field `type`"), "{err}");
    }
}
