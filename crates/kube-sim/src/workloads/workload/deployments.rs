//! Deployments: the status the Deployment controller and the kubelets would produce.

use super::config::{WorkloadConfig, WorkloadKind};
use super::helpers::{
    condition, find, int, later, pod_template_hash, put_nonzero, scaled, stamp, text,
};
use super::pods::{PodCreation, Start, earliest};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// What the simulator remembers of one Deployment's pods.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentTrack {
    /// The pod-template-hash of the newest ReplicaSet (frozen while the Deployment is paused).
    pub(super) hash: String,
    /// When the newest ReplicaSet's pods started (or were last allowed to become ready).
    pub(super) start: Start,
    /// Whether the previous ReplicaSet's pods were available when this rollout began, so a
    /// rolling update keeps them serving until the new ones are available.
    pub(super) replacing: bool,
    /// Whether the pods were being kept unavailable at the last pass.
    pub(super) unavailable: bool,
}

/// The spec fields that shape a Deployment's status, with the API's defaults.
pub(super) struct DeploymentSpec<'a> {
    pub(super) name: &'a str,
    pub(super) generation: i64,
    pub(super) replicas: i64,
    pub(super) rolling: bool,
    pub(super) max_surge: i64,
    pub(super) max_unavailable: i64,
    pub(super) min_ready: SignedDuration,
    pub(super) deadline: Option<SignedDuration>,
    pub(super) paused: bool,
    pub(super) hash: String,
}

impl<'a> DeploymentSpec<'a> {
    pub(super) fn of(dep: &'a Value) -> Self {
        let replicas = int(dep, "/spec/replicas")
            .unwrap_or(1)
            .clamp(0, i64::from(i32::MAX));
        let rolling = dep
            .pointer("/spec/strategy/type")
            .and_then(Value::as_str)
            .is_none_or(|t| t == "RollingUpdate");
        // Rounding as in the deployment controller's ResolveFenceposts: surge up, unavailable
        // down, and never both zero.
        let surge = scaled(
            dep.pointer("/spec/strategy/rollingUpdate/maxSurge"),
            &json!("25%"),
            replicas,
            true,
        );
        let mut unavailable = scaled(
            dep.pointer("/spec/strategy/rollingUpdate/maxUnavailable"),
            &json!("25%"),
            replicas,
            false,
        );
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        let max_unavailable = if rolling && replicas > 0 {
            unavailable.min(replicas)
        } else {
            0
        };
        // The API defaults progressDeadlineSeconds to 600; MaxInt32 means "no deadline".
        let deadline = match int(dep, "/spec/progressDeadlineSeconds") {
            Some(s) if s >= i64::from(i32::MAX) => None,
            Some(s) => Some(SignedDuration::from_secs(s.max(0))),
            None => Some(SignedDuration::from_secs(600)),
        };
        let template = dep
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null);
        Self {
            name: dep
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            generation: int(dep, "/metadata/generation").unwrap_or(0),
            replicas,
            rolling,
            max_surge: if rolling { surge } else { 0 },
            max_unavailable,
            min_ready: SignedDuration::from_secs(
                int(dep, "/spec/minReadySeconds").unwrap_or(0).max(0),
            ),
            deadline,
            paused: dep
                .pointer("/spec/paused")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            hash: pod_template_hash(&template, int(dep, "/status/collisionCount")),
        }
    }
}

/// The counts a Deployment's status reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct Counts {
    pub(super) replicas: i64,
    pub(super) updated: i64,
    pub(super) ready: i64,
    pub(super) available: i64,
}

impl Counts {
    pub(super) fn stored(dep: &Value) -> Self {
        let get = |f: &str| int(dep, &format!("/status/{f}")).unwrap_or(0);
        Self {
            replicas: get("replicas"),
            updated: get("updatedReplicas"),
            ready: get("readyReplicas"),
            available: get("availableReplicas"),
        }
    }
}

/// The status the deployment controller would write for `dep` at `now`, and when it will next
/// change by itself. `track` is the simulator's memory of the Deployment's pods (`None` the
/// first time it is seen) and is updated in place.
pub fn deployment_status(
    dep: &Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    config: &WorkloadConfig,
) -> (Value, Option<Timestamp>) {
    deployment_status_with(dep, track, now, config, None)
}

/// [`deployment_status`] for a Deployment whose pods may run as local processes
/// (`processes.rs`): `running` is then the pod-template-hashes whose processes all run, and
/// the pods are up only while theirs do; `None` means virtual pods.
pub fn deployment_status_with(
    dep: &Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    config: &WorkloadConfig,
    running: Option<&BTreeSet<String>>,
) -> (Value, Option<Timestamp>) {
    deployment_status_admitted(dep, track, now, config, running, &PodCreation::Admitted)
}

/// [`deployment_status_with`] when the newest ReplicaSet's pods may not be creatable:
/// admission pending or refused, they do not exist (pods of an earlier template that a rolling
/// update keeps stay), and a refusal is the `ReplicaFailure` condition.
pub fn deployment_status_admitted(
    dep: &Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    config: &WorkloadConfig,
    running: Option<&BTreeSet<String>>,
    creation: &PodCreation,
) -> (Value, Option<Timestamp>) {
    let mut spec = DeploymentSpec::of(dep);
    if let Some(cap) = config.max_progress_deadline_seconds {
        let cap = SignedDuration::from_secs(i64::try_from(cap).unwrap_or(i64::MAX));
        spec.deadline = Some(spec.deadline.map_or(cap, |d| d.min(cap)));
    }
    let namespace = text(dep, "/metadata/namespace");
    // The pods that run are those of the template the Deployment last rolled out to, which a
    // paused Deployment keeps.
    let pod_hash = match track {
        Some(t) if spec.paused => t.hash.as_str(),
        _ => spec.hash.as_str(),
    };
    let unavailable = config.is_unavailable(WorkloadKind::Deployment, namespace, spec.name)
        || running.is_some_and(|r| !r.contains(pod_hash))
        || creation.blocked();
    let delay = config.delay();
    let stored = Counts::stored(dep);

    let t = match track.take() {
        None => {
            // Seen for the first time (a new Deployment, or the simulator just switched on):
            // a status that already reports this generation fully available is taken as true.
            let settled = int(dep, "/status/observedGeneration") == Some(spec.generation)
                && stored.updated == spec.replicas
                && stored.available == spec.replicas;
            let start = if settled && !unavailable {
                Start::settled()
            } else {
                Start::at(now)
            };
            DeploymentTrack {
                hash: spec.hash.clone(),
                start,
                replacing: false,
                unavailable,
            }
        }
        Some(mut t) => {
            if t.hash != spec.hash && !spec.paused {
                let serving = !t.unavailable && t.start.available(spec.min_ready, now);
                t = DeploymentTrack {
                    hash: spec.hash.clone(),
                    start: Start::at(now),
                    replacing: serving,
                    unavailable,
                };
            }
            if t.unavailable && !unavailable {
                // The pods only start passing their readiness checks from now on.
                t.start = Start::at(now);
            }
            t.unavailable = unavailable;
            t
        }
    };
    let mut t = t;

    let up = !unavailable;
    t.start.latch(up, delay, now);
    let new_ready = t.start.ready();
    let new_available = t.start.available(spec.min_ready, now);
    let n = spec.replicas;
    let counts = if creation.blocked() {
        // No new pod exists; a rolling update keeps the old ones it may not scale down.
        let old = if t.replacing && spec.rolling {
            n - spec.max_unavailable
        } else {
            0
        };
        Counts {
            replicas: old,
            updated: 0,
            ready: old,
            available: old,
        }
    } else if t.replacing && up && spec.rolling && !new_available {
        // Mid rolling update: the new ReplicaSet has surged as far as maxSurge and
        // maxUnavailable allow, the old one is scaled down to the minimum that must stay
        // available, and nothing moves until the new pods are available.
        let new = n.min(spec.max_surge.saturating_add(spec.max_unavailable));
        let old = n - spec.max_unavailable;
        Counts {
            replicas: old + new,
            updated: new,
            ready: old + if new_ready { new } else { 0 },
            available: old,
        }
    } else {
        Counts {
            replicas: n,
            updated: n,
            ready: if new_ready { n } else { 0 },
            available: if new_available { n } else { 0 },
        }
    };

    let mut wake = t.start.next_change(up, delay, spec.min_ready, now);

    let stamp_now = stamp(now);
    let previous: Vec<Value> = dep
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let available_cond = if counts.available >= n - spec.max_unavailable {
        condition(
            find(&previous, "Available"),
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            &stamp_now,
        )
    } else {
        condition(
            find(&previous, "Available"),
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            &stamp_now,
        )
    };

    let mut progressing = find(&previous, "Progressing").cloned();
    if let Some(deadline) = spec.deadline {
        let rs = format!("{}-{}", spec.name, t.hash);
        let reason_of = |c: &Option<Value>| {
            c.as_ref()
                .and_then(|c| c.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        if spec.paused {
            let reason = reason_of(&progressing);
            // A reported timeout is not overwritten by the paused condition.
            if reason != "ProgressDeadlineExceeded" && reason != "DeploymentPaused" {
                progressing = Some(condition(
                    progressing.as_ref(),
                    "Progressing",
                    "Unknown",
                    "DeploymentPaused",
                    "Deployment is paused",
                    &stamp_now,
                ));
            }
        } else {
            if reason_of(&progressing) == "DeploymentPaused" {
                progressing = Some(condition(
                    progressing.as_ref(),
                    "Progressing",
                    "Unknown",
                    "DeploymentResumed",
                    "Deployment is resumed",
                    &stamp_now,
                ));
            }
            let names_current = progressing
                .as_ref()
                .and_then(|c| c.get("message"))
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains(&format!("\"{rs}\"")));
            let was_complete = counts.replicas == counts.updated
                && reason_of(&progressing) == "NewReplicaSetAvailable"
                && names_current;
            if !was_complete {
                let complete = counts.updated == n && counts.replicas == n && counts.available == n;
                // A new ReplicaSet, more updated, ready or available pods, or fewer old ones.
                let progressed = !names_current
                    || counts.updated > stored.updated
                    || counts.replicas - counts.updated < stored.replicas - stored.updated
                    || counts.ready > stored.ready
                    || counts.available > stored.available;
                if complete {
                    let msg = format!("ReplicaSet \"{rs}\" has successfully progressed.");
                    progressing = Some(condition(
                        progressing.as_ref(),
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &msg,
                        &stamp_now,
                    ));
                } else if progressed {
                    // Unlike other conditions, progress refreshes lastUpdateTime even when the
                    // reason stays the same: that time is what the deadline counts from.
                    let msg = format!("ReplicaSet \"{rs}\" is progressing.");
                    let mut c = condition(
                        progressing.as_ref(),
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        &msg,
                        &stamp_now,
                    );
                    if let Some(o) = c.as_object_mut() {
                        o.insert("lastUpdateTime".into(), Value::String(stamp_now.clone()));
                    }
                    progressing = Some(c);
                } else if timed_out(progressing.as_ref(), deadline, now) {
                    let msg = format!("ReplicaSet \"{rs}\" has timed out progressing.");
                    progressing = Some(condition(
                        progressing.as_ref(),
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        &msg,
                        &stamp_now,
                    ));
                }
            }
            if let Some(c) = &progressing {
                let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
                if !matches!(
                    reason,
                    "NewReplicaSetAvailable" | "ProgressDeadlineExceeded"
                ) {
                    // The controller compares with a strict "before", at second resolution.
                    wake = earliest(
                        wake,
                        Some(later(
                            later(last_update(c, now), deadline),
                            SignedDuration::from_secs(1),
                        )),
                    );
                }
            }
        }
    }

    let mut conditions: Vec<Value> = previous
        .iter()
        .filter(|c| {
            !matches!(
                c.get("type").and_then(Value::as_str),
                Some("Available" | "Progressing" | "ReplicaFailure")
            )
        })
        .cloned()
        .collect();
    conditions.push(available_cond);
    conditions.extend(progressing);
    if let PodCreation::Refused(message) = creation {
        conditions.push(condition(
            find(&previous, "ReplicaFailure"),
            "ReplicaFailure",
            "True",
            "FailedCreate",
            message,
            &stamp_now,
        ));
    }

    let mut status = Map::new();
    put_nonzero(&mut status, "observedGeneration", spec.generation);
    put_nonzero(&mut status, "replicas", counts.replicas);
    put_nonzero(&mut status, "updatedReplicas", counts.updated);
    put_nonzero(&mut status, "readyReplicas", counts.ready);
    put_nonzero(&mut status, "availableReplicas", counts.available);
    put_nonzero(
        &mut status,
        "unavailableReplicas",
        (counts.replicas - counts.available).max(0),
    );
    status.insert("conditions".into(), Value::Array(conditions));
    if let Some(cc) = dep.pointer("/status/collisionCount") {
        status.insert("collisionCount".into(), cc.clone());
    }
    *track = Some(t);
    (Value::Object(status), wake)
}

/// The deployment controller's DeploymentTimedOut.
pub(super) fn timed_out(
    progressing: Option<&Value>,
    deadline: SignedDuration,
    now: Timestamp,
) -> bool {
    let Some(c) = progressing else { return false };
    match c.get("reason").and_then(Value::as_str) {
        Some("NewReplicaSetAvailable") => false,
        Some("ProgressDeadlineExceeded") => true,
        _ => later(last_update(c, now), deadline) < now,
    }
}

pub(super) fn last_update(c: &Value, now: Timestamp) -> Timestamp {
    c.get("lastUpdateTime")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(now)
}
