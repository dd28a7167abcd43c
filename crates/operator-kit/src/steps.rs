//! Reconcile steps every driver operator runs the same way: a static-resources group with its
//! one Degraded condition, the operator's own log level, and small readers of the CR.
//!
//! Driver crates keep only what is theirs (facts, builders, driver-specific steps).

use kube::api::DynamicObject;
use tracing::{debug, info, warn};

use crate::apply::{Applier, ApplyError};
use crate::board::{StepBoard, StepError};
use crate::conditions::{self, OperatorCondition};
use crate::desired::{BuildError, Desired};
use crate::logging::LogControl;
use crate::loglevel::LogLevel;
use crate::metrics::Metrics;
use crate::status::StatusBoard;

/// How many objects of a group are applied at once: the round trips to the API server overlap,
/// so a group of twenty objects costs a few round trips rather than twenty.
const CONCURRENCY: usize = 8;

/// The apply waves of a group: Namespaces first (nothing can be created in a namespace before
/// it), bindings last (the API server refuses a binding to a role that does not exist yet
/// unless the writer may `bind` it), everything else in between. Within a wave objects are
/// applied concurrently.
fn wave(d: &Desired) -> u8 {
    match d.resource.kind.as_str() {
        "Namespace" => 0,
        "RoleBinding" | "ClusterRoleBinding" => 2,
        _ => 1,
    }
}

/// A static-resources step: applies every object of the group and posts `<prefix>Degraded`,
/// listing `"<asset>" (<Kind>): <error>` per failed object (in group order) as library-go
/// does. An object whose CRD is not installed (ServiceMonitor without monitoring) is skipped,
/// not a failure (anchors §8.6 fixed). A failure fails the reconcile.
pub async fn apply_group(
    applier: &Applier,
    metrics: &Metrics,
    board: &mut StepBoard,
    prefix: &str,
    objects: Result<Vec<Desired>, BuildError>,
) {
    let result = apply_objects(applier, metrics, objects).await;
    // A group that cannot be built applied nothing: not an apply error.
    if matches!(result, Err(StepError::Objects(_))) {
        metrics.error("apply");
    }
    board.post(prefix, result);
}

async fn apply_objects(
    applier: &Applier,
    metrics: &Metrics,
    objects: Result<Vec<Desired>, BuildError>,
) -> Result<(), StepError> {
    use futures::StreamExt;

    let objects = objects?;
    let mut outcomes: Vec<(usize, Result<(), String>)> = Vec::with_capacity(objects.len());
    for w in 0..=2 {
        let mut batch = Vec::new();
        for (i, d) in objects.iter().enumerate() {
            if wave(d) == w {
                batch.push(apply_one(applier, metrics, i, d));
            }
        }
        outcomes.extend(
            futures::stream::iter(batch)
                .buffer_unordered(CONCURRENCY)
                .collect::<Vec<_>>()
                .await,
        );
    }
    outcomes.sort_by_key(|(i, _)| *i);
    let errors: Vec<String> = outcomes.into_iter().filter_map(|(_, r)| r.err()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(StepError::Objects(errors))
    }
}

/// Applies one object of a group; `(index, Err(message))` on failure.
async fn apply_one(
    applier: &Applier,
    metrics: &Metrics,
    index: usize,
    d: &Desired,
) -> (usize, Result<(), String>) {
    let result = match applier.apply(&d.resource, &d.object, None).await {
        Ok(applied) => {
            metrics.applied(&d.resource.kind, applied.action);
            Ok(())
        }
        Err(ApplyError::KindNotServed { .. }) if d.requires_crd.is_some() => {
            debug!(asset = d.asset, "skipping: its CRD is not installed");
            Ok(())
        }
        Err(e) => Err(format!("\"{}\" ({}): {e}", d.asset, d.resource.kind)),
    };
    (index, result)
}

/// Applies a workload (a Deployment or DaemonSet) `d`, named `name` in `ns`, expecting the
/// generation last recorded in `cr`'s `status.generations` (so a change someone else made
/// since is put back), and records the generation it now has on `board`. Counts what the
/// engine did, or the error (a kind whose CRD is not served is not counted).
#[allow(clippy::too_many_arguments)]
pub async fn apply_workload(
    applier: &Applier,
    metrics: &Metrics,
    board: &mut StatusBoard,
    cr: &DynamicObject,
    d: &Desired,
    ns: &str,
    name: &str,
) -> Result<crate::apply::Applied, ApplyError> {
    let (group, resource) = (d.resource.group.as_str(), d.resource.plural.as_str());
    let expected = crate::status::last_generation(cr, group, resource, ns, name);
    let applied = match applier.apply(&d.resource, &d.object, expected).await {
        Ok(applied) => applied,
        Err(e) => {
            if !matches!(e, ApplyError::KindNotServed { .. }) {
                metrics.error("apply");
            }
            return Err(e);
        }
    };
    metrics.applied(&d.resource.kind, applied.action);
    board.record_generation(crate::status::GenerationStatus {
        group: group.into(),
        resource: resource.into(),
        namespace: ns.into(),
        name: name.into(),
        last_generation: applied.generation.unwrap_or_default(),
        hash: String::new(),
    });
    Ok(applied)
}

/// Follows the CR's `spec.operatorLogLevel` at runtime (library-go's LoggingSyncer).
#[derive(Default)]
pub struct OperatorLogLevel {
    last: Option<LogLevel>,
}

impl OperatorLogLevel {
    /// Applies `raw` (the field's value, `""` when absent); an unknown value means Normal
    /// with a warning. Returns the parsed level and whether the value was unknown.
    pub fn sync(&mut self, log: &LogControl, raw: &str) -> (LogLevel, bool) {
        let parsed = LogLevel::parse(raw);
        let unknown = parsed.unknown.is_some();
        if unknown {
            warn!(value = %raw, "spec.operatorLogLevel is not one of Normal, Debug, Trace, TraceAll; using Normal");
        }
        if self.last != Some(parsed.level) {
            log.set_level(parsed.level.verbosity());
            info!(level = ?parsed.level, "operator log level set");
            self.last = Some(parsed.level);
        }
        (parsed.level, unknown)
    }
}

/// What the management state lets a reconcile do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Management {
    /// Managed: run every step (`ManagementStateDegraded=False` is on the board).
    Reconcile,
    /// Unmanaged: the administrator owns the driver; write nothing at all, not even status.
    NoWrites,
    /// Removed, Force or an unknown value: only the status (already on the board) is written.
    StatusOnly,
}

/// The ManagementStateController's rule for a non-removable operator (anchors §1.9): posts
/// `ManagementStateDegraded` and says what the reconcile may do. `operand` names the operator
/// in messages (e.g. `OpenStackCinderCSIDriver`).
pub fn management_state(
    board: &mut StatusBoard,
    state: &openshift_api::common::ManagementState,
    operand: &str,
) -> Management {
    use openshift_api::common::ManagementState;
    let degraded = conditions::types::MANAGEMENT_STATE_DEGRADED;
    match state {
        ManagementState::Managed => {
            board.set_condition(OperatorCondition::new(
                degraded,
                conditions::FALSE,
                conditions::reasons::AS_EXPECTED,
                "",
            ));
            Management::Reconcile
        }
        ManagementState::Unmanaged => Management::NoWrites,
        ManagementState::Removed => {
            board.set_condition(OperatorCondition::new(
                degraded,
                conditions::TRUE,
                "Removed",
                format!("Removed is not supported for {operand} operator"),
            ));
            Management::StatusOnly
        }
        other => {
            board.set_condition(OperatorCondition::new(
                degraded,
                conditions::TRUE,
                "Unknown",
                format!(
                    "Unsupported management state {:?} for {operand} operator; set spec.managementState to Managed or Unmanaged",
                    other.as_str()
                ),
            ));
            Management::StatusOnly
        }
    }
}

/// The operator's ClusterCSIDriver from the cache, or as this operator last wrote it when the
/// watch has not shown that write yet ([`crate::status::StatusWriter::newest`]): `Ok(None)`
/// while it does not exist (the Cluster Storage Operator creates it), `Err` with a message when
/// it cannot be decoded.
pub fn read_cluster_csi_driver(
    cache: &crate::cache::Cache,
    status: &crate::status::StatusWriter,
    name: &str,
) -> Result<
    Option<(
        std::sync::Arc<DynamicObject>,
        openshift_api::operator::ClusterCSIDriver,
    )>,
    DecodeCrError,
> {
    let Some(cached) = cache.get_object::<openshift_api::operator::ClusterCSIDriver>(None, name)
    else {
        return Ok(None);
    };
    let obj = status.newest(&cached);
    let cr = decode_cr(&obj)?;
    Ok(Some((obj, cr)))
}

/// An operator's CR, as read, that does not decode into its type.
#[derive(Debug, thiserror::Error)]
pub enum DecodeCrError {
    #[error(transparent)]
    Serialize(#[from] serde_json::Error),
    #[error(transparent)]
    Decode(#[from] openshift_api::decode::DecodeError),
}

/// Decodes a CR read from the cache (a ClusterCSIDriver, `Storage/cluster`) into its type.
pub fn decode_cr<K>(obj: &DynamicObject) -> Result<K, DecodeCrError>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    Ok(openshift_api::decode::from_value(serde_json::to_value(
        obj,
    )?)?)
}

/// Creates the ClusterCSIDriver `cr`: the Cluster Storage Operator does it for each driver it
/// starts, a driver operator for itself on plain Kubernetes. `Ok(None)` when it exists
/// already (the cache lagged behind; the watch brings it), else the object as created. Counts
/// the write; the caller counts an error as it classifies it.
pub async fn create_cluster_csi_driver(
    client: &kube::Client,
    metrics: &Metrics,
    cr: &openshift_api::operator::ClusterCSIDriver,
) -> Result<Option<openshift_api::operator::ClusterCSIDriver>, kube::Error> {
    let api: kube::Api<openshift_api::operator::ClusterCSIDriver> = kube::Api::all(client.clone());
    match api.create(&kube::api::PostParams::default(), cr).await {
        Ok(created) => {
            metrics.write("ClusterCSIDriver", crate::metrics::WriteVerb::Create);
            Ok(Some(created))
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

/// `spec.operatorLogLevel` as written (`""` when absent).
pub fn operator_log_level_of(cr: &openshift_api::operator::ClusterCSIDriver) -> String {
    cr.spec
        .operator
        .operator_log_level
        .as_ref()
        .map(|l| l.as_str().to_string())
        .unwrap_or_default()
}

/// The conditions currently on the CR.
pub fn previous_conditions(cr: &DynamicObject) -> Vec<OperatorCondition> {
    cr.data
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default()
}

/// This replica's name for Events and the lease: the pod name when known.
pub fn instance_name(fallback: &str) -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| fallback.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn previous_conditions_are_read_or_empty() {
        let cr: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver", "metadata": {"name": "x"},
            "status": {"conditions": [{"type": "ADegraded", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .expect("object");
        assert_eq!(previous_conditions(&cr).len(), 1);
        let bare: DynamicObject = serde_json::from_value(json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "status": {"conditions": "garbage"}})).expect("object");
        assert!(
            previous_conditions(&bare).is_empty(),
            "malformed status reads as none"
        );
    }

    #[test]
    fn management_states_decide_what_a_reconcile_may_do() {
        use openshift_api::common::ManagementState;
        let mut board = StatusBoard::new();
        assert_eq!(
            management_state(&mut board, &ManagementState::Managed, "Op"),
            Management::Reconcile
        );
        assert_eq!(
            board
                .condition("ManagementStateDegraded")
                .map(|c| c.status.as_str()),
            Some("False")
        );
        let mut board = StatusBoard::new();
        assert_eq!(
            management_state(&mut board, &ManagementState::Unmanaged, "Op"),
            Management::NoWrites
        );
        assert!(
            board.condition("ManagementStateDegraded").is_none(),
            "Unmanaged writes nothing"
        );
        let mut board = StatusBoard::new();
        assert_eq!(
            management_state(&mut board, &ManagementState::Removed, "Op"),
            Management::StatusOnly
        );
        let c = board.condition("ManagementStateDegraded").expect("posted");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "True",
                "Removed",
                "Removed is not supported for Op operator"
            )
        );
        let mut board = StatusBoard::new();
        assert_eq!(
            management_state(&mut board, &ManagementState::parse("Manged"), "Op"),
            Management::StatusOnly
        );
        assert!(
            board
                .condition("ManagementStateDegraded")
                .expect("posted")
                .message
                .contains("\"Manged\"")
        );
    }

    #[test]
    fn unknown_operator_log_levels_fall_back_to_normal() {
        let mut sync = OperatorLogLevel::default();
        let log = LogControl::detached();
        assert_eq!(sync.sync(&log, "Debug"), (LogLevel::Debug, false));
        assert_eq!(sync.sync(&log, "Chatty"), (LogLevel::Normal, true));
        assert_eq!(sync.sync(&log, ""), (LogLevel::Normal, false));
    }

    #[test]
    fn namespaces_go_first_and_bindings_last() {
        let d = |api_version: &str, kind: &str| {
            crate::desired::from_value(
                "test",
                None,
                serde_json::json!({"apiVersion": api_version, "kind": kind,
                    "metadata": {"name": "x", "namespace": "ns"}}),
            )
            .expect("known kind")
        };
        assert_eq!(wave(&d("v1", "Namespace")), 0);
        for kind in ["Role", "ServiceAccount", "ConfigMap", "Service"] {
            let api = if kind == "Role" {
                "rbac.authorization.k8s.io/v1"
            } else {
                "v1"
            };
            assert_eq!(wave(&d(api, kind)), 1, "{kind}");
        }
        assert_eq!(wave(&d("rbac.authorization.k8s.io/v1", "ClusterRole")), 1);
        for kind in ["RoleBinding", "ClusterRoleBinding"] {
            assert_eq!(wave(&d("rbac.authorization.k8s.io/v1", kind)), 2, "{kind}");
        }
    }
}
