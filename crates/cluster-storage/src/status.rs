//! The CSO's status roll-up (anchors §3.4 and §1.15): from each driver's `ClusterCSIDriver`
//! conditions and operator Deployment to the per-driver conditions on `Storage/cluster`, and
//! from all `Storage/cluster` conditions to `ClusterOperator/storage` (conditions,
//! `relatedObjects`, `versions`).
//!
//! The condition types, reasons and messages are OpenShift's character for character: alerts,
//! `oc adm upgrade` and support tooling read them. The union itself is
//! [`operator_kit::conditions::union`]; this module only decides what goes into it.
//!
//! Pure: callers pass the objects they read and `now`; nothing here reads a clock, the
//! environment or the API. Returned conditions carry no transition time except the
//! ClusterOperator ones (which carry the union's); the status writer
//! ([`operator_kit::conditions::set`]) decides transition times.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use openshift_api::common::{Condition, ManagementState};
use openshift_api::config::{ObjectReference, OperandVersion};
use operator_kit::board::{StepBoard, StepError};
use operator_kit::conditions::{self, FALSE, OperatorCondition, TRUE, UNKNOWN, reasons, types};
use operator_kit::progressing::deployment_progressing;

use crate::registry::{Driver, Selection};

/// How long a bad `…Degraded` condition must last before `ClusterOperator/storage` turns
/// Degraded (library-go `MustNewInertia(2 * time.Minute)`, for all conditions).
pub const DEGRADED_INERTIA: Duration = Duration::from_secs(120);

/// The infix of the conditions copied from a driver's ClusterCSIDriver:
/// `<Prefix>CSIDriverOperatorCR<Suffix>`.
pub const CR_CONDITION_INFIX: &str = "CSIDriverOperatorCR";

/// The controller-name infix of the operator Deployment step; its Degraded condition is
/// `<Prefix>CSIDriverOperatorDeploymentDegraded`.
pub const DEPLOYMENT_CONTROLLER_INFIX: &str = "CSIDriverOperatorDeployment";

/// Reason of `<Prefix>CSIDriverOperatorCRAvailable` when a driver that may be disabled is.
pub const REASON_DRIVER_DISABLED: &str = "DriverDisabled";

/// Reason used while a driver operator has not reported any condition yet.
pub const REASON_WAIT_FOR_OPERATOR: &str = "WaitForOperator";

/// `StorageOperatorUpgradeable`, set True by the starter while no driver operator is started
/// (otherwise no CR controller reports Upgradeable).
pub const STORAGE_OPERATOR_UPGRADEABLE: &str = "StorageOperatorUpgradeable";

/// Our condition saying that no driver operator was started and why. Not in OpenShift (where
/// every platform has a driver); it is `True`, so it never changes the ClusterOperator's
/// status, only adds its message to the `Available` message.
pub const CSI_DRIVER_STARTER_AVAILABLE: &str = "CSIDriverStarterAvailable";

/// Reason of [`CSI_DRIVER_STARTER_AVAILABLE`].
pub const REASON_NO_DRIVER_FOR_PLATFORM: &str = "NoDriverForPlatform";

/// `<Prefix>CSIDriverOperatorCR<suffix>`.
pub fn cr_condition_type(driver: &Driver, suffix: &str) -> String {
    format!("{}{CR_CONDITION_INFIX}{suffix}", driver.condition_prefix)
}

/// The message of the first `…Disabled` condition with status `True`, if any (CSO
/// `hasDisabledCondition`, but see the note on [`driver_cr_conditions`]).
fn disabled_message(conditions: &[OperatorCondition]) -> Option<&str> {
    conditions
        .iter()
        .find(|c| c.type_.ends_with("Disabled") && c.status == TRUE)
        .map(|c| c.message.as_str())
}

fn renamed(mut c: OperatorCondition, type_: String) -> OperatorCondition {
    c.type_ = type_;
    // The writer owns transition times (Go's UpdateConditionFn ignores the union's).
    c.last_transition_time = None;
    c
}

/// The four conditions the CSO copies from a driver's `ClusterCSIDriver` onto
/// `Storage/cluster` (CSO `syncConditions`), in the order Available, Progressing, Degraded,
/// Upgradeable:
///
/// * `…CRAvailable`: `True / DriverDisabled / "CSI driver for <P> is disabled: <msg>"` when the
///   driver may be disabled and is; else the `Available` union, an `Unknown` result becoming
///   `False / WaitForOperator / "Waiting for <P> operator to report status"`.
/// * `…CRProgressing`: the `Progressing` union (default False); an `Unknown` result becomes
///   `False` (reason and message kept) when disabled, else
///   `True / WaitForOperator / "Waiting for <P> operator to report status"`.
/// * `…CRDegraded`: the `Degraded` union (default False), `Unknown` becoming `False`.
/// * `…CRUpgradeable`: `True` unless some condition ends with `Upgradeable`, then the union.
///
/// Deliberate difference: a `…Disabled` condition counts only with status `True` (Go counts
/// any status, anchors §8.9), so a stale `Disabled=False` never hides a broken driver.
/// Unions here have no inertia, as in Go; `now` is only passed through to the union.
pub fn driver_cr_conditions(
    driver: &Driver,
    cr_conditions: &[OperatorCondition],
    now: Timestamp,
) -> Vec<OperatorCondition> {
    let prefix = driver.condition_prefix;
    let waiting = format!("Waiting for {prefix} operator to report status");
    let disabled = if driver.allow_disabled {
        disabled_message(cr_conditions)
    } else {
        None
    };

    let available = match disabled {
        Some(message) => OperatorCondition::new(
            "",
            TRUE,
            REASON_DRIVER_DISABLED,
            format!("CSI driver for {prefix} is disabled: {message}"),
        ),
        None => {
            let u = conditions::union(types::AVAILABLE, TRUE, None, cr_conditions, now);
            if u.status == UNKNOWN {
                OperatorCondition::new("", FALSE, REASON_WAIT_FOR_OPERATOR, waiting.clone())
            } else {
                u
            }
        }
    };

    let mut progressing = conditions::union(types::PROGRESSING, FALSE, None, cr_conditions, now);
    if progressing.status == UNKNOWN {
        if disabled.is_some() {
            progressing.status = FALSE.to_owned();
        } else {
            progressing = OperatorCondition::new("", TRUE, REASON_WAIT_FOR_OPERATOR, waiting);
        }
    }

    let mut degraded = conditions::union(types::DEGRADED, FALSE, None, cr_conditions, now);
    if degraded.status == UNKNOWN {
        degraded.status = FALSE.to_owned();
    }

    let upgradeable = if cr_conditions
        .iter()
        .any(|c| c.type_.ends_with(types::UPGRADEABLE))
    {
        conditions::union(types::UPGRADEABLE, TRUE, None, cr_conditions, now)
    } else {
        OperatorCondition::new("", TRUE, "", "")
    };

    vec![
        renamed(available, cr_condition_type(driver, types::AVAILABLE)),
        renamed(progressing, cr_condition_type(driver, types::PROGRESSING)),
        renamed(degraded, cr_condition_type(driver, types::DEGRADED)),
        renamed(upgradeable, cr_condition_type(driver, types::UPGRADEABLE)),
    ]
}

/// Why an operator Deployment is unhealthy (CSO `checkDeploymentHealth`); the text is the
/// `…CSIDriverOperatorDeploymentDegraded` message, exactly as CSO writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeploymentUnhealthy {
    /// The rollout hit `progressDeadlineSeconds`.
    #[error("deployment {name} is Progressing=False: ProgressDeadlineExceeded: {message}")]
    ProgressDeadlineExceeded {
        /// `namespace/name`.
        name: String,
        /// The Deployment's Progressing message.
        message: String,
    },
    /// The ReplicaSet could not create pods (quota, admission, …).
    #[error("deployment {name} has some pods failing; unavailable replicas={unavailable}")]
    ReplicaFailure {
        /// `namespace/name`.
        name: String,
        /// `status.unavailableReplicas`.
        unavailable: i32,
    },
    /// Neither available nor making progress.
    #[error(
        "deployment {name} is not available and not progressing; updated replicas={updated} of {replicas}, available replicas={available} of {replicas}"
    )]
    NotAvailableNotProgressing {
        /// `namespace/name`.
        name: String,
        /// `status.updatedReplicas`.
        updated: i32,
        /// `status.availableReplicas`.
        available: i32,
        /// `status.replicas`.
        replicas: i32,
    },
}

/// CSO `checkDeploymentHealth`, in its order: `Progressing=False/ProgressDeadlineExceeded`,
/// then `ReplicaFailure=True`, then `Available=False` with `Progressing=False`.
pub fn check_deployment_health(deployment: &Deployment) -> Result<(), DeploymentUnhealthy> {
    let name = format!(
        "{}/{}",
        deployment.metadata.namespace.as_deref().unwrap_or_default(),
        deployment.metadata.name.as_deref().unwrap_or_default()
    );
    let status = deployment.status.clone().unwrap_or_default();
    let conds = status.conditions.unwrap_or_default();
    let find = |t: &str| conds.iter().find(|c| c.type_ == t);
    let progressing = find("Progressing");
    if let Some(p) = progressing
        && p.status == FALSE
        && p.reason.as_deref() == Some("ProgressDeadlineExceeded")
    {
        return Err(DeploymentUnhealthy::ProgressDeadlineExceeded {
            name,
            message: p.message.clone().unwrap_or_default(),
        });
    }
    if find("ReplicaFailure").is_some_and(|c| c.status == TRUE) {
        return Err(DeploymentUnhealthy::ReplicaFailure {
            name,
            unavailable: status.unavailable_replicas.unwrap_or(0),
        });
    }
    if find("Available").is_some_and(|c| c.status == FALSE)
        && progressing.is_some_and(|c| c.status == FALSE)
    {
        return Err(DeploymentUnhealthy::NotAvailableNotProgressing {
            name,
            updated: status.updated_replicas.unwrap_or(0),
            available: status.available_replicas.unwrap_or(0),
            replicas: status.replicas.unwrap_or(0),
        });
    }
    Ok(())
}

/// The conditions of a driver's operator Deployment step on `Storage/cluster` (CSO
/// `CSIDriverOperatorDeploymentController`): `<Prefix>Progressing` (`True / Deploying / <why>`
/// while the Deployment rolls out, per anchors §1.3, else `False` with no reason) and
/// `<Prefix>CSIDriverOperatorDeploymentDegraded` from [`check_deployment_health`]. There is
/// deliberately no Available condition: a missing operator pod must not make the cluster's
/// storage unavailable.
pub fn operator_deployment_conditions(
    driver: &Driver,
    deployment: &Deployment,
) -> Vec<OperatorCondition> {
    let mut board = StepBoard::new();
    let prefix = format!("{}{DEPLOYMENT_CONTROLLER_INFIX}", driver.condition_prefix);
    post_operator_deployment(&mut board, driver, &prefix, deployment);
    [
        conditions::progressing_type(driver.condition_prefix),
        conditions::degraded_type(&prefix),
    ]
    .iter()
    .filter_map(|t| board.condition(t).cloned())
    .collect()
}

/// Posts [`operator_deployment_conditions`] on `board`: the Deployment's health is the result
/// of the step `prefix`.
pub fn post_operator_deployment(
    board: &mut StepBoard,
    driver: &Driver,
    prefix: &str,
    deployment: &Deployment,
) {
    let progressing_type = conditions::progressing_type(driver.condition_prefix);
    board.set_condition(match deployment_progressing(deployment) {
        Some(message) => {
            OperatorCondition::new(progressing_type, TRUE, reasons::DEPLOYING, message)
        }
        None => OperatorCondition::new(progressing_type, FALSE, "", ""),
    });
    board.post(
        prefix,
        check_deployment_health(deployment).map_err(StepError::other),
    );
}

/// The starter's conditions for a [`Selection`]: `(to set, types to remove)`.
///
/// With no driver started: `StorageOperatorUpgradeable=True` (as the Go starter does) and
/// [`CSI_DRIVER_STARTER_AVAILABLE`] `True / NoDriverForPlatform / <why>`. With drivers, the
/// latter is removed; `StorageOperatorUpgradeable` is left as it is, as in Go.
pub fn starter_conditions(selection: &Selection) -> (Vec<OperatorCondition>, Vec<&'static str>) {
    match (&selection.message, selection.drivers.is_empty()) {
        (Some(message), true) => (
            vec![
                OperatorCondition::new(STORAGE_OPERATOR_UPGRADEABLE, TRUE, "", ""),
                OperatorCondition::new(
                    CSI_DRIVER_STARTER_AVAILABLE,
                    TRUE,
                    REASON_NO_DRIVER_FOR_PLATFORM,
                    message.clone(),
                ),
            ],
            Vec::new(),
        ),
        (None, true) => (
            vec![OperatorCondition::new(
                STORAGE_OPERATOR_UPGRADEABLE,
                TRUE,
                "",
                "",
            )],
            Vec::new(),
        ),
        (_, false) => (Vec::new(), vec![CSI_DRIVER_STARTER_AVAILABLE]),
    }
}

/// The five `ClusterOperator/storage` condition types, in the order they are computed.
pub const CLUSTER_OPERATOR_CONDITIONS: [&str; 5] = [
    types::DEGRADED,
    types::PROGRESSING,
    types::AVAILABLE,
    types::UPGRADEABLE,
    types::EVALUATION_CONDITIONS_DETECTED,
];

/// `ClusterOperator/storage` conditions from the `Storage/cluster` conditions (library-go
/// `StatusSyncer`, anchors §1.15):
///
/// * Unmanaged: all five `Unknown / Unmanaged`, no message.
/// * Otherwise the unions: `Degraded` (default False, [`DEGRADED_INERTIA`]), `Progressing`
///   (False), `Available` (True), `Upgradeable` (True), `EvaluationConditionsDetected`
///   (False), each with the union's transition time.
pub fn cluster_operator_conditions(
    management_state: &ManagementState,
    storage_conditions: &[OperatorCondition],
    now: Timestamp,
) -> Vec<OperatorCondition> {
    cluster_operator_conditions_with_inertia(
        management_state,
        storage_conditions,
        DEGRADED_INERTIA,
        now,
    )
}

/// [`cluster_operator_conditions`] with another Degraded inertia (the CSO's
/// `--degraded-inertia`, shortened by tests that must see Degraded without waiting 2 minutes).
pub fn cluster_operator_conditions_with_inertia(
    management_state: &ManagementState,
    storage_conditions: &[OperatorCondition],
    degraded_inertia: Duration,
    now: Timestamp,
) -> Vec<OperatorCondition> {
    if *management_state == ManagementState::Unmanaged {
        return CLUSTER_OPERATOR_CONDITIONS
            .iter()
            .map(|t| OperatorCondition::new(*t, UNKNOWN, reasons::UNMANAGED, ""))
            .collect();
    }
    CLUSTER_OPERATOR_CONDITIONS
        .iter()
        .map(|t| {
            let (default, inertia) = match *t {
                types::DEGRADED => (FALSE, Some(degraded_inertia)),
                types::AVAILABLE | types::UPGRADEABLE => (TRUE, None),
                _ => (FALSE, None),
            };
            conditions::union(t, default, inertia, storage_conditions, now)
        })
        .collect()
}

/// When the inertia of the youngest bad `…Degraded` condition runs out, so the caller can
/// look again then: `ClusterOperator/storage` must turn Degraded on time even when nothing else
/// changes. `None` when no bad Degraded condition is still within its inertia.
pub fn inertia_wakeup(
    storage_conditions: &[OperatorCondition],
    degraded_inertia: Duration,
    now: Timestamp,
) -> Option<Duration> {
    storage_conditions
        .iter()
        .filter(|c| c.type_.ends_with(types::DEGRADED) && c.status != FALSE)
        .filter_map(|c| {
            let since = c.last_transition_time?;
            let age = Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO);
            degraded_inertia.checked_sub(age).filter(|d| !d.is_zero())
        })
        .min()
}

/// The `OperatorStatusChanged` Event message for a ClusterOperator condition change, as
/// library-go words it: `Status for clusteroperator/storage changed: Degraded changed from
/// False to True ("<message>")`, one clause per changed condition joined by `,`; `None` when
/// no status, reason or message changed.
pub fn status_change_message(
    before: &[OperatorCondition],
    after: &[OperatorCondition],
) -> Option<String> {
    let mut changes = Vec::new();
    for a in after {
        match before.iter().find(|b| b.type_ == a.type_) {
            None => changes.push(format!("{} set to {} ({:?})", a.type_, a.status, a.message)),
            Some(b) if b.status != a.status => changes.push(format!(
                "{} changed from {} to {} ({:?})",
                a.type_, b.status, a.status, a.message
            )),
            Some(b) if b.message != a.message || b.reason != a.reason => changes.push(format!(
                "{} message changed from {:?} to {:?}",
                a.type_, b.message, a.message
            )),
            Some(_) => {}
        }
    }
    (!changes.is_empty()).then(|| {
        format!(
            "Status for clusteroperator/storage changed: {}",
            changes.join(",")
        )
    })
}

/// A condition in the `ClusterOperator` / `OperatorStatus` API form.
pub fn to_api_condition(c: &OperatorCondition) -> Condition {
    Condition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        last_transition_time: c.last_transition_time.map(Time),
        reason: c.reason.clone(),
        message: c.message.clone(),
    }
}

/// The static `relatedObjects` of `ClusterOperator/storage` (anchors §3.4).
pub fn static_related_objects() -> Vec<ObjectReference> {
    let r = |group: &str, resource: &str, name: &str| ObjectReference {
        group: group.to_owned(),
        resource: resource.to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    };
    vec![
        r("", "namespaces", "openshift-cluster-storage-operator"),
        r("", "namespaces", "openshift-cluster-csi-drivers"),
        r("operator.openshift.io", "storages", "cluster"),
        // OpenShift lists its `cluster-storage-operator-role` (bound to cluster-admin); ours is
        // the least-privilege binding that replaces it (docs/compatibility.md).
        r(
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "cluster-storage-operator",
        ),
    ]
}

/// `ClusterOperator.status.relatedObjects`: per started driver (in start order) its static
/// objects and its `ClusterCSIDriver`, then the static list entries not already present.
/// While no driver is started the dynamic part is "not set" and the `existing` list is kept
/// in its place, as library-go does, so a CSO restart does not shrink the list.
pub fn related_objects(started: &[&Driver], existing: &[ObjectReference]) -> Vec<ObjectReference> {
    related_objects_of(started, existing, |d| {
        d.related_objects
            .iter()
            .map(|r| r.to_object_reference())
            .collect()
    })
}

/// [`related_objects`] of a hosted control plane: each driver's guest objects only
/// ([`crate::hosted::hosted_related_objects`]), as the Go CSO lists them there.
pub fn hosted_related_objects(
    started: &[&Driver],
    existing: &[ObjectReference],
) -> Vec<ObjectReference> {
    related_objects_of(started, existing, crate::hosted::hosted_related_objects)
}

fn related_objects_of(
    started: &[&Driver],
    existing: &[ObjectReference],
    of_driver: impl Fn(&Driver) -> Vec<ObjectReference>,
) -> Vec<ObjectReference> {
    let mut out: Vec<ObjectReference> = if started.is_empty() {
        existing.to_vec()
    } else {
        started
            .iter()
            .flat_map(|d| {
                of_driver(d)
                    .into_iter()
                    .chain(std::iter::once(d.cluster_csi_driver_reference()))
            })
            .collect()
    };
    for s in static_related_objects() {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// `ClusterOperator.status.versions`: `[{operator, $OPERATOR_IMAGE_VERSION}]`, nothing when the
/// variable is unset or empty (versions not reported are removed: `WithVersionRemoval`).
pub fn versions(operator_image_version: Option<&str>) -> Vec<OperandVersion> {
    match operator_image_version {
        Some(v) if !v.is_empty() => vec![OperandVersion {
            name: "operator".to_owned(),
            version: v.to_owned(),
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
