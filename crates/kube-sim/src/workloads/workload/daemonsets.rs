//! DaemonSets: one pod per fitting Node, and the status the DaemonSet controller writes.

use super::config::{WorkloadConfig, WorkloadKind};
use super::helpers::{int, pod_template_hash, put_nonzero, scaled, text};
use super::pods::{PodCreation, Start, earliest};
use super::scheduling::{DaemonPodFit, node_ready};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What the simulator remembers of one DaemonSet: its virtual pods, by node name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DaemonSetTrack {
    pub(super) pods: BTreeMap<String, DaemonPod>,
    pub(super) unavailable: bool,
    /// Whether the simulator has seen the DaemonSet before.
    pub(super) seen: bool,
    /// Where the pods go and the template hash, from the last pass.
    pub(super) placed: PlacementCache,
}

/// The placements and template hash of the last pass, reused while neither the Nodes nor the
/// template changed. The simulator runs a pass after every write to the cluster, and on a
/// cluster of 1,000 Nodes working out placement node by node was nearly all of kube-sim's
/// CPU while an operator installed (and so most of the operator's measured install time).
#[derive(Clone, Default)]
pub(super) struct PlacementCache(pub(super) Option<Arc<Placed>>);

pub(super) struct Placed {
    /// The Node objects the placements were computed from: the store replaces an object's
    /// `Arc` on every write, so pointer equality means "unchanged".
    nodes: Vec<Arc<Value>>,
    template: Value,
    collision_count: Option<i64>,
    pub(super) hash: String,
    placements: Vec<Placement>,
}

/// A cache, not state: two tracks with the same pods are equal whatever it holds.
impl PartialEq for PlacementCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for PlacementCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "PlacementCache(filled)"
        } else {
            "PlacementCache(empty)"
        })
    }
}

impl PlacementCache {
    /// The placements of `template`'s pods on `nodes` and the template hash: the last ones if
    /// nothing they depend on changed, else computed afresh (and kept).
    fn get(
        &mut self,
        nodes: &[Arc<Value>],
        template: &Value,
        collision_count: Option<i64>,
    ) -> Arc<Placed> {
        if let Some(placed) = &self.0
            && placed.collision_count == collision_count
            && placed.nodes.len() == nodes.len()
            && placed
                .nodes
                .iter()
                .zip(nodes)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && placed.template == *template
        {
            return placed.clone();
        }
        let fit = DaemonPodFit::new(template.get("spec").unwrap_or(&Value::Null));
        let placements = nodes
            .iter()
            .map(|node| {
                let (should_run, should_continue) = fit.on(node);
                Placement {
                    node: text(node, "/metadata/name").to_string(),
                    should_run,
                    should_continue,
                    node_ready: node_ready(node),
                }
            })
            .collect();
        let placed = Arc::new(Placed {
            nodes: nodes.to_vec(),
            template: template.clone(),
            collision_count,
            hash: pod_template_hash(template, collision_count),
            placements,
        });
        self.0 = Some(placed.clone());
        placed
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct DaemonPod {
    /// The template hash the pod was created from.
    pub(super) hash: String,
    pub(super) start: Start,
    /// A surge replacement: the previous pod still runs beside this one until this one is
    /// available, and as the older pod it is the one the status counts.
    pub(super) surging: bool,
}

/// Where a DaemonSet's pod should be, node by node.
pub(super) struct Placement {
    pub(super) node: String,
    pub(super) should_run: bool,
    pub(super) should_continue: bool,
    pub(super) node_ready: bool,
}

/// The status the DaemonSet controller would write for `ds` at `now` given the cluster's
/// nodes, and when it will next change by itself. `track` holds the DaemonSet's virtual pods
/// and is updated in place (pods are created, replaced and removed as the controller would).
pub fn daemonset_status(
    ds: &Value,
    nodes: &[Arc<Value>],
    track: &mut DaemonSetTrack,
    now: Timestamp,
    config: &WorkloadConfig,
) -> (Value, Option<Timestamp>) {
    daemonset_status_admitted(ds, nodes, track, now, config, &PodCreation::Admitted)
}

/// [`daemonset_status`] when new pods may not be creatable: while admission is pending or
/// refuses them, no pod is created (nor replaced by a rolling update); existing pods stay.
pub fn daemonset_status_admitted(
    ds: &Value,
    nodes: &[Arc<Value>],
    track: &mut DaemonSetTrack,
    now: Timestamp,
    config: &WorkloadConfig,
    creation: &PodCreation,
) -> (Value, Option<Timestamp>) {
    let name = text(ds, "/metadata/name");
    let namespace = text(ds, "/metadata/namespace");
    let template = ds.pointer("/spec/template").unwrap_or(&Value::Null);
    let placed = track
        .placed
        .get(nodes, template, int(ds, "/status/collisionCount"));
    let hash = placed.hash.clone();
    let unavailable = config.is_unavailable(WorkloadKind::DaemonSet, namespace, name);
    let up = !unavailable;
    let delay = config.delay();
    for pod in track.pods.values_mut() {
        if track.unavailable && up {
            pod.start = Start::at(now);
        }
        pod.start.latch(up, delay, now);
    }
    track.unavailable = unavailable;
    let new_pod = |surging: bool| {
        let mut start = Start::at(now);
        start.latch(up, delay, now);
        DaemonPod {
            hash: hash.clone(),
            start,
            surging,
        }
    };
    let min_ready = SignedDuration::from_secs(int(ds, "/spec/minReadySeconds").unwrap_or(0).max(0));

    let placements = &placed.placements;
    let by_node: HashMap<&str, &Placement> =
        placements.iter().map(|p| (p.node.as_str(), p)).collect();

    // Pods leave nodes that are gone or that they may no longer run on, and appear on nodes
    // they should run on.
    track.pods.retain(|node, _| {
        by_node
            .get(node.as_str())
            .is_some_and(|p| p.should_run || p.should_continue)
    });
    // Seen for the first time (the simulator just switched on) with a status that reports
    // this generation fully available: its pods are taken as running.
    let desired_now = placements.iter().filter(|p| p.should_run).count() as i64;
    let settled = !track.seen
        && up
        && int(ds, "/status/observedGeneration") == int(ds, "/metadata/generation")
        && int(ds, "/status/numberAvailable") == Some(desired_now)
        && int(ds, "/status/updatedNumberScheduled") == Some(desired_now);
    track.seen = true;
    for p in placements
        .iter()
        .filter(|p| p.should_run && !creation.blocked())
    {
        track.pods.entry(p.node.clone()).or_insert_with(|| {
            if settled {
                DaemonPod {
                    hash: hash.clone(),
                    start: Start::settled(),
                    surging: false,
                }
            } else {
                new_pod(false)
            }
        });
    }

    let ready =
        |pod: &DaemonPod, node_ready: bool| up && node_ready && (pod.surging || pod.start.ready());
    let available = |pod: &DaemonPod, node_ready: bool| {
        ready(pod, node_ready) && (pod.surging || pod.start.available(min_ready, now))
    };
    // A surging pod's own availability, which decides when the old pod goes.
    let new_available =
        |pod: &DaemonPod, node_ready: bool| up && node_ready && pod.start.available(min_ready, now);

    let strategy = ds
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate");
    if strategy == "RollingUpdate" && !creation.blocked() {
        let desired = placements.iter().filter(|p| p.should_run).count() as i64;
        let max_surge = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxSurge"),
            &json!(0),
            desired,
            true,
        );
        let mut max_unavailable = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
            &json!(1),
            desired,
            true,
        );
        if desired > 0 && max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        // One controller sync per round, until nothing more can happen at this instant.
        for _ in 0..=placements.len() {
            let mut acted = false;
            let targets: Vec<&Placement> = placements.iter().filter(|p| p.should_run).collect();
            if max_surge == 0 {
                let mut unavailable_count = targets
                    .iter()
                    .filter(|p| {
                        track
                            .pods
                            .get(&p.node)
                            .is_some_and(|pod| pod.hash == hash && !available(pod, p.node_ready))
                    })
                    .count() as i64;
                let mut replace = Vec::new();
                for p in &targets {
                    let Some(pod) = track.pods.get(&p.node) else {
                        continue;
                    };
                    if pod.hash == hash {
                        continue;
                    }
                    if !available(pod, p.node_ready) {
                        replace.push(p.node.clone());
                    } else if unavailable_count < max_unavailable {
                        replace.push(p.node.clone());
                        unavailable_count += 1;
                    }
                }
                for node in replace {
                    track.pods.insert(node, new_pod(false));
                    acted = true;
                }
            } else {
                let mut surges = 0;
                for p in &targets {
                    if let Some(pod) = track.pods.get_mut(&p.node)
                        && pod.surging
                    {
                        if new_available(pod, p.node_ready) {
                            pod.surging = false;
                            acted = true;
                        } else {
                            surges += 1;
                        }
                    }
                }
                for p in &targets {
                    let Some(pod) = track.pods.get_mut(&p.node) else {
                        continue;
                    };
                    if pod.hash == hash {
                        continue;
                    }
                    if !available(pod, p.node_ready) {
                        *pod = new_pod(false);
                        acted = true;
                    } else if surges < max_surge {
                        *pod = new_pod(true);
                        surges += 1;
                        acted = true;
                    }
                }
            }
            if !acted {
                break;
            }
        }
    }

    let (
        mut desired,
        mut current,
        mut number_ready,
        mut number_available,
        mut updated,
        mut misscheduled,
    ) = (0, 0, 0, 0, 0, 0);
    let mut wake = None;
    for p in placements {
        let Some(pod) = track.pods.get(&p.node) else {
            desired += i64::from(p.should_run);
            continue;
        };
        if p.node_ready {
            wake = earliest(wake, pod.start.next_change(up, delay, min_ready, now));
        }
        if !p.should_run {
            misscheduled += 1;
            continue;
        }
        desired += 1;
        current += 1;
        if ready(pod, p.node_ready) {
            number_ready += 1;
            if available(pod, p.node_ready) {
                number_available += 1;
            }
        }
        if pod.hash == hash && !pod.surging {
            updated += 1;
        }
    }

    let mut status = Map::new();
    status.insert("currentNumberScheduled".into(), json!(current));
    status.insert("desiredNumberScheduled".into(), json!(desired));
    status.insert("numberMisscheduled".into(), json!(misscheduled));
    status.insert("numberReady".into(), json!(number_ready));
    put_nonzero(&mut status, "numberAvailable", number_available);
    put_nonzero(&mut status, "numberUnavailable", desired - number_available);
    put_nonzero(&mut status, "updatedNumberScheduled", updated);
    put_nonzero(
        &mut status,
        "observedGeneration",
        int(ds, "/metadata/generation").unwrap_or(0),
    );
    for kept in ["collisionCount", "conditions"] {
        if let Some(v) = ds.pointer(&format!("/status/{kept}")) {
            status.insert(kept.into(), v.clone());
        }
    }
    (Value::Object(status), wake)
}
