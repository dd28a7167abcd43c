//! What the Deployments ask for (pure): which pods should run, from which program.

use super::state::{LocalProgram, containers, replicas, text};
use super::{BACKOFF_INITIAL, BACKOFF_MAX, BACKOFF_RESET, MAX_GRACE};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// What one process-backed Deployment asks of the runner.
#[derive(Debug, Clone)]
pub(super) struct Want {
    pub(super) uid: String,
    pub(super) namespace: String,
    pub(super) deployment: String,
    pub(super) hash: String,
    pub(super) replicas: usize,
    pub(super) recreate: bool,
    pub(super) paused: bool,
    pub(super) template: Value,
    pub(super) container: usize,
    pub(super) program: LocalProgram,
    /// Whether admission admits the pods of `template` (see `pod_admission.rs`).
    pub(super) admitted: bool,
}

/// The Deployment's wish, when a container's image is mapped and it is not being deleted.
pub(super) fn want(dep: &Value, images: &BTreeMap<String, LocalProgram>) -> Option<Want> {
    if dep.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let template = dep.pointer("/spec/template")?.clone();
    let (container, program) = containers(&template)
        .iter()
        .enumerate()
        .find_map(|(i, c)| images.get(text(c, "/image")).map(|p| (i, p.clone())))?;
    let collision = dep
        .pointer("/status/collisionCount")
        .and_then(Value::as_i64);
    Some(Want {
        uid: text(dep, "/metadata/uid").to_string(),
        namespace: text(dep, "/metadata/namespace").to_string(),
        deployment: text(dep, "/metadata/name").to_string(),
        hash: crate::workload::pod_template_hash(&template, collision),
        replicas: replicas(dep),
        recreate: text(dep, "/spec/strategy/type") == "Recreate",
        paused: dep.pointer("/spec/paused").and_then(Value::as_bool) == Some(true),
        template,
        container,
        program,
        admitted: true,
    })
}

/// A pod the runner has, as [`decide`] sees it.
#[derive(Debug, Clone)]
pub(super) struct PodView {
    pub(super) id: u64,
    pub(super) uid: String,
    pub(super) hash: String,
    pub(super) index: usize,
    pub(super) generation: u64,
    pub(super) stopping: bool,
    pub(super) template: Value,
}

/// A pod to start: the Deployment (index into the wants), its template and replica index.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Launch {
    pub(super) want: usize,
    pub(super) hash: String,
    pub(super) template: Value,
    pub(super) index: usize,
}

#[derive(Debug, Default, PartialEq)]
pub(super) struct Decision {
    pub(super) stop: Vec<u64>,
    pub(super) start: Vec<Launch>,
}

/// The deployment controller and kubelet in one step: which pods to stop and which to start.
/// A paused Deployment keeps the template its pods run; Recreate starts nothing while any
/// other pod of the Deployment remains; RollingUpdate starts the new pods at once.
pub(super) fn decide(wants: &[Want], pods: &[PodView], generation: u64) -> Decision {
    let mut decision = Decision::default();
    // The template each Deployment's pods should run.
    let targets: Vec<(String, Value)> = wants
        .iter()
        .map(|w| {
            let running = pods
                .iter()
                .find(|p| p.uid == w.uid && !p.stopping && p.generation == generation);
            match running {
                Some(p) if w.paused => (p.hash.clone(), p.template.clone()),
                _ => (w.hash.clone(), w.template.clone()),
            }
        })
        .collect();
    let mut kept: BTreeSet<(String, String, usize)> = BTreeSet::new();
    let mut kept_ids: BTreeSet<u64> = BTreeSet::new();
    for p in pods.iter().filter(|p| !p.stopping) {
        let desired = p.generation == generation
            && wants.iter().zip(&targets).any(|(w, (hash, _))| {
                // A refused new template leaves a rolling update's old pods running.
                let current = *hash == p.hash || (!w.admitted && !w.recreate);
                w.uid == p.uid && current && p.index < w.replicas
            });
        if desired && kept.insert((p.uid.clone(), p.hash.clone(), p.index)) {
            kept_ids.insert(p.id);
        } else {
            decision.stop.push(p.id);
        }
    }
    for (i, (w, (hash, template))) in wants.iter().zip(&targets).enumerate() {
        let others_remain = pods
            .iter()
            .any(|p| p.uid == w.uid && !kept_ids.contains(&p.id));
        if (w.recreate && others_remain) || (!w.admitted && *hash == w.hash) {
            continue;
        }
        for index in 0..w.replicas {
            if !kept.contains(&(w.uid.clone(), hash.clone(), index)) {
                decision.start.push(Launch {
                    want: i,
                    hash: hash.clone(),
                    template: template.clone(),
                    index,
                });
            }
        }
    }
    decision
}

/// `<deployment>-<hash>-<5 characters>`, the characters derived from the Deployment's uid, the
/// hash and the replica index so the name is stable for the pod's life.
pub(super) fn pod_name(deployment: &str, hash: &str, uid: &str, index: usize) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid.bytes().chain(hash.bytes()).chain(index.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let suffix: String = (0..5)
        .map(|i| {
            let n = usize::try_from((h >> (i * 12)) % ALPHANUMS.len() as u64).unwrap_or(0);
            char::from(ALPHANUMS.get(n).copied().unwrap_or(b'b'))
        })
        .collect();
    format!("{deployment}-{hash}-{suffix}")
}

/// A random RFC 4122 version 4 UUID, for the downward API's `metadata.uid`.
pub(super) fn random_uid() -> String {
    let word = || {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    let (a, b) = (word(), word());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

/// The restart back-off after a process that ran for `ran`: doubling from
/// [`BACKOFF_INITIAL`] to [`BACKOFF_MAX`], back to the start after a run of
/// [`BACKOFF_RESET`].
pub fn next_backoff(previous: Option<Duration>, ran: Duration) -> Duration {
    match previous {
        Some(p) if ran < BACKOFF_RESET => (p * 2).min(BACKOFF_MAX),
        _ => BACKOFF_INITIAL,
    }
}

/// terminationGracePeriodSeconds (default 30), capped at [`MAX_GRACE`].
pub(super) fn grace_period(template: &Value) -> Duration {
    let secs = template
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(30)
        .max(0);
    Duration::from_secs(u64::try_from(secs).unwrap_or(0)).min(MAX_GRACE)
}
