//! Available / Progressing conditions of the workloads an operator runs, computed from the live
//! Deployment or DaemonSet (library-go's DeploymentController and
//! CSIDriverNodeServiceController, anchors §1.3 and §1.4).
//!
//! Pure functions of (workload, previous conditions, now). They return conditions without a
//! transition time; the status board's [`crate::conditions::set`] fills it in. Nothing here
//! writes: the stable-generation annotation is *computed* here and applied by the caller.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};

use crate::conditions::{self, OperatorCondition, reasons};

/// A Deployment that has been Progressing for longer than this makes the step fail (library-go
/// `progressingConditionTimeout`), which turns `<prefix>Degraded` True.
pub const PROGRESSING_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The error message library-go returns for a rollout stuck longer than [`PROGRESSING_TIMEOUT`].
pub const PROGRESSING_TOO_LONG_MESSAGE: &str = "Deployment was progressing too long";

/// DaemonSet annotation recording the last generation whose rollout completed.
pub const STABLE_GENERATION_ANNOTATION: &str = "storage.openshift.io/stable-generation";

/// The Deployment rollout has been Progressing for longer than [`PROGRESSING_TIMEOUT`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Deployment was progressing too long")]
pub struct ProgressingTooLong;

/// The two conditions a workload step reports (its Degraded condition comes from the step's
/// own success or error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadConditions {
    /// `<prefix>Available`
    pub available: OperatorCondition,
    /// `<prefix>Progressing`
    pub progressing: OperatorCondition,
}

impl WorkloadConditions {
    /// Both conditions, for [`crate::conditions::merge`].
    pub fn into_vec(self) -> Vec<OperatorCondition> {
        vec![self.available, self.progressing]
    }
}

/// Whether a Deployment is still rolling out, with library-go's message (anchors §1.3 table,
/// evaluated in order). `None` means not progressing.
pub fn deployment_progressing(deployment: &Deployment) -> Option<&'static str> {
    let generation = deployment.metadata.generation.unwrap_or(0);
    let expected = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(0);
    let status = deployment.status.clone().unwrap_or_default();

    if generation != status.observed_generation.unwrap_or(0) {
        return Some("Waiting for Deployment to act on changes");
    }
    // A rollout that finished stays finished: later missing replicas (a node reboot) are not
    // "progressing". Only the first Progressing condition counts, as in Go.
    let finished = status
        .conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == "Progressing")
        .is_some_and(|c| {
            c.status == "True" && c.reason.as_deref() == Some("NewReplicaSetAvailable")
        });
    if finished {
        return None;
    }
    if status.unavailable_replicas.unwrap_or(0) > 0 {
        return Some("Waiting for Deployment to deploy pods");
    }
    if status.updated_replicas.unwrap_or(0) < expected {
        return Some("Waiting for Deployment to update pods");
    }
    if status.available_replicas.unwrap_or(0) < expected {
        return Some("Waiting for Deployment to deploy pods");
    }
    None
}

/// `<prefix>Available` and `<prefix>Progressing` for a Deployment.
///
/// Fails with [`ProgressingTooLong`] when the Deployment is still progressing and the
/// previous `<prefix>Progressing` condition has been True for more than 15 minutes; the
/// caller then reports the error as Degraded and keeps the previous Progressing condition.
/// The check is made only while the Deployment is still progressing (as current library-go
/// does), so a rollout that finishes late clears the error instead of being stuck on it.
pub fn deployment_conditions(
    prefix: &str,
    deployment: &Deployment,
    previous: &[OperatorCondition],
    now: Timestamp,
) -> Result<WorkloadConditions, ProgressingTooLong> {
    let available_replicas = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let available = if available_replicas > 0 {
        OperatorCondition::new(
            conditions::available_type(prefix),
            conditions::TRUE,
            reasons::AS_EXPECTED,
            "Deployment is available",
        )
    } else {
        OperatorCondition::new(
            conditions::available_type(prefix),
            conditions::FALSE,
            reasons::DEPLOYING,
            "Waiting for Deployment",
        )
    };

    let progressing_type = conditions::progressing_type(prefix);
    let progressing = match deployment_progressing(deployment) {
        None => OperatorCondition::new(
            progressing_type,
            conditions::FALSE,
            reasons::AS_EXPECTED,
            "Deployment is not progressing",
        ),
        Some(message) => {
            if progressing_too_long(previous, &progressing_type, now) {
                return Err(ProgressingTooLong);
            }
            OperatorCondition::new(
                progressing_type,
                conditions::TRUE,
                reasons::DEPLOYING,
                message,
            )
        }
    };
    Ok(WorkloadConditions {
        available,
        progressing,
    })
}

/// library-go `IsUpdatingTooLong`: the condition is True and `now` is after its transition
/// time plus [`PROGRESSING_TIMEOUT`].
pub fn progressing_too_long(
    previous: &[OperatorCondition],
    progressing_type: &str,
    now: Timestamp,
) -> bool {
    let Some(c) = conditions::find(previous, progressing_type) else {
        return false;
    };
    if c.status != conditions::TRUE {
        return false;
    }
    // Go's zero time plus 15 minutes is long past.
    let Some(since) = c.last_transition_time else {
        return true;
    };
    let Ok(timeout) = jiff::SignedDuration::try_from(PROGRESSING_TIMEOUT) else {
        return false;
    };
    match since.checked_add(timeout) {
        Ok(deadline) => now > deadline,
        Err(_) => false,
    }
}

/// Whether a DaemonSet is still rolling out, with library-go's message (anchors §1.4).
/// A DaemonSet whose generation is known to have finished rolling out (`known_stable`, what
/// the caller recorded with [`stable_generation`]) is never progressing: node churn after a
/// finished rollout does not count. OpenShift's operator records that generation in the
/// stable-generation annotation instead, which is still honoured on DaemonSets it wrote.
pub fn daemonset_progressing(daemonset: &DaemonSet, known_stable: Option<i64>) -> Option<String> {
    let generation = daemonset.metadata.generation.unwrap_or(0);
    let annotated = daemonset
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(STABLE_GENERATION_ANNOTATION));
    if known_stable == Some(generation) || annotated.is_some_and(|s| *s == generation.to_string()) {
        return None;
    }
    let status = daemonset.status.clone().unwrap_or_default();
    if generation != status.observed_generation.unwrap_or(0) {
        return Some("Waiting for DaemonSet to act on changes".to_owned());
    }
    if status.updated_number_scheduled.unwrap_or(0) < status.desired_number_scheduled {
        return Some(format!(
            "Waiting for DaemonSet to update {} node pods",
            status.desired_number_scheduled
        ));
    }
    if status.number_unavailable.unwrap_or(0) > 0 {
        return Some("Waiting for DaemonSet to deploy node pods".to_owned());
    }
    None
}

/// `<prefix>Available` and `<prefix>Progressing` for a DaemonSet whose last finished rollout
/// is `known_stable` (see [`daemonset_progressing`]). There is no "too long" rule for
/// DaemonSets (library-go has none either).
pub fn daemonset_conditions(
    prefix: &str,
    daemonset: &DaemonSet,
    known_stable: Option<i64>,
) -> WorkloadConditions {
    let number_available = daemonset
        .status
        .as_ref()
        .and_then(|s| s.number_available)
        .unwrap_or(0);
    let available = if number_available > 0 {
        OperatorCondition::new(
            conditions::available_type(prefix),
            conditions::TRUE,
            reasons::AS_EXPECTED,
            "DaemonSet is available",
        )
    } else {
        OperatorCondition::new(
            conditions::available_type(prefix),
            conditions::FALSE,
            reasons::DEPLOYING,
            "Waiting for the DaemonSet to deploy the CSI Node Service",
        )
    };
    let progressing = match daemonset_progressing(daemonset, known_stable) {
        None => OperatorCondition::new(
            conditions::progressing_type(prefix),
            conditions::FALSE,
            reasons::AS_EXPECTED,
            "DaemonSet is not progressing",
        ),
        Some(message) => OperatorCondition::new(
            conditions::progressing_type(prefix),
            conditions::TRUE,
            reasons::DEPLOYING,
            message,
        ),
    };
    WorkloadConditions {
        available,
        progressing,
    }
}

/// The DaemonSet's last generation that finished rolling out, given the live object and what
/// was known before: its current generation when it is not progressing now, else `known`.
///
/// OpenShift writes this into the stable-generation annotation, which costs a second write of
/// the DaemonSet per rollout (the annotation changes when the rollout ends); the kit keeps it
/// in the process instead. After a restart it is learnt again from the live DaemonSet (and
/// from the annotation OpenShift left), so only node churn that is under way while the
/// operator restarts shows as Progressing, until it ends.
pub fn stable_generation(live: &DaemonSet, known: Option<i64>) -> Option<i64> {
    if daemonset_progressing(live, known).is_none() {
        return Some(live.metadata.generation.unwrap_or(0));
    }
    known
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        DaemonSetStatus, DeploymentCondition, DeploymentSpec, DeploymentStatus,
    };
    use std::collections::BTreeMap;

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    struct D {
        generation: i64,
        observed: i64,
        replicas: i32,
        unavailable: i32,
        updated: i32,
        available: i32,
        progressing_reason: Option<(&'static str, &'static str)>,
    }

    impl Default for D {
        fn default() -> Self {
            D {
                generation: 2,
                observed: 2,
                replicas: 2,
                unavailable: 0,
                updated: 2,
                available: 2,
                progressing_reason: None,
            }
        }
    }

    fn dep(d: D) -> Deployment {
        let mut out = Deployment::default();
        out.metadata.generation = Some(d.generation);
        out.spec = Some(DeploymentSpec {
            replicas: Some(d.replicas),
            ..Default::default()
        });
        out.status = Some(DeploymentStatus {
            observed_generation: Some(d.observed),
            unavailable_replicas: Some(d.unavailable),
            updated_replicas: Some(d.updated),
            available_replicas: Some(d.available),
            conditions: d.progressing_reason.map(|(status, reason)| {
                vec![DeploymentCondition {
                    type_: "Progressing".into(),
                    status: status.into(),
                    reason: Some(reason.into()),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        });
        out
    }

    #[test]
    fn deployment_table_in_order() {
        assert_eq!(deployment_progressing(&dep(D::default())), None);
        // 1. generation mismatch wins over everything, even a finished rollout.
        let d = dep(D {
            observed: 1,
            progressing_reason: Some(("True", "NewReplicaSetAvailable")),
            ..D::default()
        });
        assert_eq!(
            deployment_progressing(&d),
            Some("Waiting for Deployment to act on changes")
        );
        // 2. a finished rollout hides later missing replicas.
        let d = dep(D {
            unavailable: 1,
            available: 1,
            progressing_reason: Some(("True", "NewReplicaSetAvailable")),
            ..D::default()
        });
        assert_eq!(deployment_progressing(&d), None);
        // ... but only with status True and that reason.
        let d = dep(D {
            unavailable: 1,
            progressing_reason: Some(("True", "ReplicaSetUpdated")),
            ..D::default()
        });
        assert_eq!(
            deployment_progressing(&d),
            Some("Waiting for Deployment to deploy pods")
        );
        // 3. unavailable before updated.
        let d = dep(D {
            unavailable: 1,
            updated: 0,
            ..D::default()
        });
        assert_eq!(
            deployment_progressing(&d),
            Some("Waiting for Deployment to deploy pods")
        );
        // 4. updated < replicas.
        let d = dep(D {
            updated: 1,
            ..D::default()
        });
        assert_eq!(
            deployment_progressing(&d),
            Some("Waiting for Deployment to update pods")
        );
        // 5. available < replicas.
        let d = dep(D {
            available: 1,
            ..D::default()
        });
        assert_eq!(
            deployment_progressing(&d),
            Some("Waiting for Deployment to deploy pods")
        );
    }

    #[test]
    fn deployment_without_status_is_progressing_once_it_has_a_generation() {
        let mut d = Deployment::default();
        assert_eq!(deployment_progressing(&d), None);
        d.metadata.generation = Some(1);
        assert_eq!(
            deployment_progressing(&d),
            Some("Waiting for Deployment to act on changes")
        );
    }

    #[test]
    fn deployment_condition_values() {
        let c = deployment_conditions("Foo", &dep(D::default()), &[], ts(0)).unwrap();
        assert_eq!(
            c.available,
            OperatorCondition::new(
                "FooAvailable",
                "True",
                "AsExpected",
                "Deployment is available"
            )
        );
        assert_eq!(
            c.progressing,
            OperatorCondition::new(
                "FooProgressing",
                "False",
                "AsExpected",
                "Deployment is not progressing"
            )
        );
        let c = deployment_conditions(
            "Foo",
            &dep(D {
                available: 0,
                updated: 0,
                ..D::default()
            }),
            &[],
            ts(0),
        )
        .unwrap();
        assert_eq!(
            c.available,
            OperatorCondition::new(
                "FooAvailable",
                "False",
                "Deploying",
                "Waiting for Deployment"
            )
        );
        assert_eq!(
            c.progressing,
            OperatorCondition::new(
                "FooProgressing",
                "True",
                "Deploying",
                "Waiting for Deployment to update pods"
            )
        );
        assert_eq!(c.clone().into_vec().len(), 2);
    }

    #[test]
    fn progressing_too_long_after_fifteen_minutes() {
        let stuck = dep(D {
            updated: 0,
            ..D::default()
        });
        let mut prev = OperatorCondition::new("FooProgressing", "True", "Deploying", "x");
        prev.last_transition_time = Some(ts(1_000));
        let prev = vec![prev];
        assert!(deployment_conditions("Foo", &stuck, &prev, ts(1_000 + 900)).is_ok());
        assert_eq!(
            deployment_conditions("Foo", &stuck, &prev, ts(1_000 + 901)),
            Err(ProgressingTooLong)
        );
        assert_eq!(ProgressingTooLong.to_string(), PROGRESSING_TOO_LONG_MESSAGE);
        // A finished rollout clears it at once.
        assert!(deployment_conditions("Foo", &dep(D::default()), &prev, ts(99_999)).is_ok());
        // Previous False never counts.
        let mut calm = prev.clone();
        calm[0].status = "False".into();
        assert!(deployment_conditions("Foo", &stuck, &calm, ts(99_999)).is_ok());
        // Another prefix's condition does not count.
        assert!(deployment_conditions("Bar", &stuck, &prev, ts(99_999)).is_ok());
    }

    fn ds(
        generation: i64,
        observed: i64,
        desired: i32,
        updated: i32,
        unavailable: i32,
        available: i32,
        stable: Option<&str>,
    ) -> DaemonSet {
        let mut out = DaemonSet::default();
        out.metadata.generation = Some(generation);
        out.metadata.annotations = stable
            .map(|s| BTreeMap::from([(STABLE_GENERATION_ANNOTATION.to_owned(), s.to_owned())]));
        out.status = Some(DaemonSetStatus {
            observed_generation: Some(observed),
            desired_number_scheduled: desired,
            updated_number_scheduled: Some(updated),
            number_unavailable: Some(unavailable),
            number_available: Some(available),
            ..Default::default()
        });
        out
    }

    #[test]
    fn daemonset_rules() {
        assert_eq!(
            daemonset_progressing(&ds(3, 2, 3, 3, 0, 3, None), None).as_deref(),
            Some("Waiting for DaemonSet to act on changes")
        );
        assert_eq!(
            daemonset_progressing(&ds(3, 3, 5, 2, 0, 3, None), None).as_deref(),
            Some("Waiting for DaemonSet to update 5 node pods")
        );
        assert_eq!(
            daemonset_progressing(&ds(3, 3, 3, 3, 1, 2, None), None).as_deref(),
            Some("Waiting for DaemonSet to deploy node pods")
        );
        assert_eq!(
            daemonset_progressing(&ds(3, 3, 3, 3, 0, 3, None), None),
            None
        );
        // Stable generation, known or annotated by OpenShift: node churn is not progressing.
        let churn = ds(3, 3, 4, 3, 1, 3, None);
        assert!(daemonset_progressing(&churn, None).is_some());
        assert_eq!(daemonset_progressing(&churn, Some(3)), None);
        assert_eq!(
            daemonset_progressing(&ds(3, 3, 4, 3, 1, 3, Some("3")), None),
            None
        );
        // A stale stable generation does not hide a new rollout.
        assert!(daemonset_progressing(&ds(4, 3, 3, 3, 0, 3, Some("3")), None).is_some());
        assert!(daemonset_progressing(&ds(4, 3, 3, 3, 0, 3, None), Some(3)).is_some());
    }

    #[test]
    fn daemonset_condition_values() {
        let c = daemonset_conditions("N", &ds(1, 1, 3, 3, 0, 3, None), None);
        assert_eq!(
            c.available,
            OperatorCondition::new("NAvailable", "True", "AsExpected", "DaemonSet is available")
        );
        assert_eq!(
            c.progressing,
            OperatorCondition::new(
                "NProgressing",
                "False",
                "AsExpected",
                "DaemonSet is not progressing"
            )
        );
        let c = daemonset_conditions("N", &ds(1, 1, 3, 0, 3, 0, None), None);
        assert_eq!(
            c.available,
            OperatorCondition::new(
                "NAvailable",
                "False",
                "Deploying",
                "Waiting for the DaemonSet to deploy the CSI Node Service"
            )
        );
        assert_eq!(c.progressing.status, "True");
    }

    #[test]
    fn stable_generation_value() {
        // Stable now: the generation is recorded.
        assert_eq!(
            stable_generation(&ds(4, 4, 3, 3, 0, 3, None), Some(3)),
            Some(4)
        );
        assert_eq!(
            stable_generation(&ds(4, 4, 3, 3, 0, 3, None), None),
            Some(4)
        );
        // Progressing: what was known stays.
        assert_eq!(
            stable_generation(&ds(4, 3, 3, 3, 0, 3, None), Some(3)),
            Some(3)
        );
        assert_eq!(stable_generation(&ds(4, 3, 3, 3, 0, 3, None), None), None);
        // Already recorded: unchanged during node churn.
        assert_eq!(
            stable_generation(&ds(4, 4, 5, 3, 2, 3, None), Some(4)),
            Some(4)
        );
        // Learnt from OpenShift's annotation after a restart during node churn.
        assert_eq!(
            stable_generation(&ds(4, 4, 5, 3, 2, 3, Some("4")), None),
            Some(4)
        );
    }
}
