//! What every row checks once its fault is over, each a pure function of what was observed (the
//! condition samples, kube-sim's request log, object sets) so the rules can be read and tested
//! apart from the processes that produce the observations:
//!
//! - converged: ClusterOperator/storage Available=True, Progressing=False, Degraded=False, and
//!   each ClusterCSIDriver with its `*Available` conditions True and no `*Degraded` or
//!   `*Progressing` True — held for the settle time, so a state that flips back does not count;
//! - truthful during the fault: while OpenStack refuses the credentials (something the operators
//!   can know, unlike an API server fault), each ClusterCSIDriver says so in a condition that
//!   names the refusal once the operators have had time to notice. `Available` may stay True,
//!   as on OpenShift: the driver pods still serve the volumes already attached, and
//!   `Available=False` on ClusterOperator/storage pages the on-call as "storage is down";
//! - no lost or orphaned object against the set after a clean install;
//! - no write by a process after it was killed, nor after it released its lease on SIGTERM.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube_sim::RequestRecord;

use super::chain::{Conditions, Driver, Objects, Operator, Snapshot};

/// Why the chain is not healthy yet (empty: it is).
pub(crate) fn health_problems(s: &Snapshot) -> Vec<String> {
    let mut problems = Vec::new();
    for (t, want) in [
        ("Available", "True"),
        ("Progressing", "False"),
        ("Degraded", "False"),
    ] {
        match s.co.get(t) {
            Some(c) if c.status == want => {}
            Some(c) => problems.push(format!(
                "ClusterOperator/storage {t}={} ({}: {})",
                c.status, c.reason, c.message
            )),
            None => problems.push(format!("ClusterOperator/storage has no {t}")),
        }
    }
    for d in Driver::ALL {
        let empty = Conditions::new();
        let conditions = s.drivers.get(&d).unwrap_or(&empty);
        // The cloud offers both drivers: one that says it is disabled is the problem to name
        // (its missing Available conditions follow from it).
        let disabled: Vec<String> = conditions
            .iter()
            .filter(|(t, c)| t.ends_with("Disabled") && c.status == "True")
            .map(|(t, c)| format!("{} {t}=True ({}: {})", d.label(), c.reason, c.message))
            .collect();
        if !disabled.is_empty() {
            problems.extend(disabled);
            continue;
        }
        for t in d.available() {
            match conditions.get(*t) {
                Some(c) if c.status == "True" => {}
                Some(c) => problems.push(format!("{} {t}={} ({})", d.label(), c.status, c.reason)),
                None => problems.push(format!("{} has no {t}", d.label())),
            }
        }
        for (t, c) in conditions {
            if (t.ends_with("Degraded") || t.ends_with("Progressing")) && c.status == "True" {
                problems.push(format!(
                    "{} {t}=True ({}: {})",
                    d.label(),
                    c.reason,
                    c.message
                ));
            }
        }
    }
    problems
}

/// Whether a set of conditions says Available=True as the CSO's union reads a
/// ClusterCSIDriver's: at least one `*Available` True and none False.
pub(crate) fn says_available(conditions: &Conditions) -> bool {
    let mut any = false;
    for (t, c) in conditions {
        if t.ends_with("Available") {
            match c.status.as_str() {
                "True" => any = true,
                "False" => return false,
                _ => {}
            }
        }
    }
    any
}

/// A condition sample: the moment and the snapshot.
pub(crate) type Sample = (Instant, Snapshot);

/// Whether a message names OpenStack refusing the credentials (Keystone's 401 or a 403), as
/// the operators' messages do.
fn names_refusal(message: &str) -> bool {
    ["rejected", "HTTP 401", "HTTP 403", "forbidden"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// Whether a driver's conditions report the refusal: a condition that is not healthy (a
/// `*Degraded`, `*Progressing` or `*Disabled` True, any other False) whose message names it.
fn reports_refusal(conditions: &Conditions) -> bool {
    conditions.iter().any(|(t, c)| {
        let negative = ["Degraded", "Progressing", "Disabled"]
            .iter()
            .any(|suffix| t.ends_with(suffix));
        let unhealthy = if negative {
            c.status == "True"
        } else {
            c.status == "False"
        };
        unhealthy && names_refusal(&c.message)
    })
}

/// Time spent in each state between `from` and `to`, each sample standing for the time until
/// the next: for every label `pick` returns on a sample, how long it held.
fn time_per_label(
    samples: &[Sample],
    from: Instant,
    to: Instant,
    pick: impl Fn(&Snapshot) -> Vec<String>,
) -> BTreeMap<String, Duration> {
    let mut said: BTreeMap<String, Duration> = BTreeMap::new();
    for (i, (at, s)) in samples.iter().enumerate() {
        let next = samples.get(i + 1).map_or(to, |(t, _)| *t);
        let (start, end) = ((*at).max(from), next.min(to));
        if end <= start {
            continue;
        }
        for label in pick(s) {
            *said.entry(label).or_default() += end - start;
        }
    }
    said
}

fn for_time(
    said: BTreeMap<String, Duration>,
    what: &str,
    from: Instant,
    to: Instant,
) -> Vec<String> {
    let total = to.saturating_duration_since(from);
    said.into_iter()
        .map(|(who, d)| {
            format!(
                "{who} {what} for {:.1} of the {:.1} s",
                d.as_secs_f64(),
                total.as_secs_f64()
            )
        })
        .collect()
}

/// Where a ClusterCSIDriver did not say, between `from` and `to`, that OpenStack refused the
/// credentials, with how long; empty when both always did.
pub(crate) fn refusal_unreported(samples: &[Sample], from: Instant, to: Instant) -> Vec<String> {
    let said = time_per_label(samples, from, to, |s| {
        let empty = Conditions::new();
        Driver::ALL
            .iter()
            .filter(|d| !reports_refusal(s.drivers.get(d).unwrap_or(&empty)))
            .map(|d| format!("ClusterCSIDriver {}", d.cr()))
            .collect()
    });
    for_time(said, "did not report the refusal", from, to)
}

/// Where Available=True was said between `from` and `to`, with how long (a detail of the
/// credential rows: see the module doc for why it is not a failure).
pub(crate) fn said_available(samples: &[Sample], from: Instant, to: Instant) -> Vec<String> {
    let said = time_per_label(samples, from, to, |s| {
        let mut who = Vec::new();
        if s.co.get("Available").is_some_and(|c| c.status == "True") {
            who.push("ClusterOperator/storage".to_string());
        }
        for (d, conditions) in &s.drivers {
            if says_available(conditions) {
                who.push(format!("ClusterCSIDriver {}", d.cr()));
            }
        }
        who
    });
    for_time(said, "Available=True", from, to)
}

/// Which conditions to report as not healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// Only what the convergence check looks at: `Available` False, `Degraded` or
    /// `Progressing` True.
    Checked,
    /// Also anything else a user would notice: `Upgradeable` or any other positive condition
    /// False (`ManilaServiceReachable`), `*Disabled` True.
    Notable,
}

/// `source type=status (reason)` of each condition that is not healthy in `s`.
pub(crate) fn not_healthy(s: &Snapshot, strictness: Strictness, with_message: bool) -> Vec<String> {
    let mut out = Vec::new();
    let line = |source: &str, t: &str, c: &super::chain::Condition| {
        if with_message && !c.message.is_empty() {
            format!("{source} {t}={} ({}: {})", c.status, c.reason, c.message)
        } else {
            format!("{source} {t}={} ({})", c.status, c.reason)
        }
    };
    let notable = strictness == Strictness::Notable;
    for (t, c) in &s.co {
        // Its reasons join the drivers' (listed on their own lines) into long compounds.
        let c = &super::chain::Condition {
            reason: if with_message {
                c.reason.clone()
            } else {
                "…".into()
            },
            ..c.clone()
        };
        let bad = match t.as_str() {
            "Available" => c.status == "False",
            "Progressing" | "Degraded" => c.status == "True",
            "Upgradeable" => notable && c.status == "False",
            _ => false,
        };
        if bad {
            out.push(line("ClusterOperator", t, c));
        }
    }
    for (d, conditions) in &s.drivers {
        for (t, c) in conditions {
            let negative = ["Degraded", "Progressing", "Disabled"]
                .iter()
                .any(|suffix| t.ends_with(suffix));
            let bad = if negative {
                c.status == "True" && (notable || !t.ends_with("Disabled"))
            } else {
                c.status == "False" && (notable || t.ends_with("Available"))
            };
            if bad {
                out.push(line(d.label(), t, c));
            }
        }
    }
    out
}

/// [`not_healthy`] over the samples between `from` and `to`, each line once.
pub(crate) fn unhealthy_conditions(
    samples: &[Sample],
    from: Instant,
    to: Instant,
    strictness: Strictness,
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    // The sample in force at `from` counts too.
    let first = samples.iter().rposition(|(at, _)| *at <= from).unwrap_or(0);
    for (at, s) in samples.iter().skip(first) {
        if *at > to {
            break;
        }
        for line in not_healthy(s, strictness, false) {
            if seen.insert(line.clone()) {
                out.push(line);
            }
        }
    }
    out
}

/// Each operator's requests between `from_ms` and `to_ms` (kube-sim's clock), counted by
/// answer when some failed: `Cinder 40 (409 ×12)`.
pub(crate) fn requests_by_answer(
    records: &[RequestRecord],
    users: &[(&str, String)],
    from_ms: u64,
    to_ms: u64,
) -> Vec<String> {
    users
        .iter()
        .map(|(label, user)| {
            let mine: Vec<&RequestRecord> = records
                .iter()
                .filter(|r| r.user == *user && r.at_ms >= from_ms && r.at_ms <= to_ms)
                .collect();
            let mut failed: BTreeMap<u16, usize> = BTreeMap::new();
            for r in &mine {
                if r.code >= 400 {
                    *failed.entry(r.code).or_default() += 1;
                }
            }
            if failed.is_empty() {
                format!("{label} {}", mine.len())
            } else {
                let codes: Vec<String> = failed.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
                format!("{label} {} ({})", mine.len(), codes.join(", "))
            }
        })
        .collect()
}

/// When each operator first held its lease (its first successful lease write), in seconds
/// relative to `origin_ms` on kube-sim's clock: `Cinder +21.3 s`.
pub(crate) fn first_leading(
    records: &[RequestRecord],
    users: &[(&str, String)],
    origin_ms: u64,
) -> Vec<String> {
    users
        .iter()
        .map(|(label, user)| {
            match records.iter().find(|r| {
                r.user == *user && is_lease(r) && r.is_write() && (200..300).contains(&r.code)
            }) {
                Some(r) => format!(
                    "{label} {:+.1} s",
                    (r.at_ms as f64 - origin_ms as f64) / 1000.0
                ),
                None => format!("{label} never"),
            }
        })
        .collect()
}

/// Each operator's first write of work (not its Lease, not an Event) after `from_ms` on
/// kube-sim's clock, in seconds after it: `Cinder +29.8 s`, or `none`.
pub(crate) fn first_write_after(
    records: &[RequestRecord],
    users: &[(&str, String)],
    from_ms: u64,
) -> Vec<String> {
    users
        .iter()
        .map(|(label, user)| {
            match records.iter().find(|r| {
                r.user == *user
                    && r.at_ms > from_ms
                    && super::chain::is_working_write(r)
                    && (200..300).contains(&r.code)
            }) {
                Some(r) => format!("{label} +{:.1} s", (r.at_ms - from_ms) as f64 / 1000.0),
                None => format!("{label} none"),
            }
        })
        .collect()
}

/// How the objects now differ from the clean install's.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ObjectDiff {
    /// In the clean install, missing now.
    pub lost: Vec<String>,
    /// Here now, not in the clean install.
    pub orphaned: Vec<String>,
    /// Owned by an operator (in `owned`) and holding other content than in the clean install:
    /// a stale copy of a Secret, a class with other parameters, a Deployment with other args.
    pub changed: Vec<String>,
}

impl ObjectDiff {
    pub(crate) fn is_empty(&self) -> bool {
        self.lost.is_empty() && self.orphaned.is_empty() && self.changed.is_empty()
    }
}

/// Compares the objects now with the clean install's: by name, and by content digest for the
/// objects the operators own (`owned`; the rest, such as what the release or the bench put
/// there, is compared by name only).
pub(crate) fn object_diff(
    reference: &Objects,
    now: &Objects,
    owned: &BTreeSet<String>,
) -> ObjectDiff {
    let lost = reference
        .keys()
        .filter(|k| !now.contains_key(*k))
        .cloned()
        .collect();
    let orphaned = now
        .keys()
        .filter(|k| !reference.contains_key(*k))
        .cloned()
        .collect();
    let changed = reference
        .iter()
        .filter_map(|(k, then)| {
            let now = now.get(k)?;
            (owned.contains(k) && now.digest != then.digest).then(|| {
                format!(
                    "{k} (at {})",
                    super::chain::first_difference(&then.value, &now.value)
                )
            })
        })
        .collect();
    ObjectDiff {
        lost,
        orphaned,
        changed,
    }
}

fn describe(r: &RequestRecord) -> String {
    let name = if r.namespace.is_empty() {
        r.name.clone()
    } else {
        format!("{}/{}", r.namespace, r.name)
    };
    let sub = if r.subresource.is_empty() {
        String::new()
    } else {
        format!("/{}", r.subresource)
    };
    format!(
        "{} {}{sub} {name} → {} at {} ms",
        r.verb,
        r.resource.trim_start_matches('/'),
        r.code,
        r.at_ms
    )
}

fn is_lease(r: &RequestRecord) -> bool {
    r.resource == "coordination.k8s.io/leases"
}

/// Writes of `user` that arrived after `dead_ms` (the process was seen gone) and before its
/// successor's first lease write: a process that was killed must not write. Leases aside,
/// since the successor's acquisition is one.
pub(crate) fn writes_after_death(
    records: &[RequestRecord],
    user: &str,
    dead_ms: u64,
) -> Vec<String> {
    records
        .iter()
        .filter(|r| r.user == user && r.at_ms > dead_ms)
        .take_while(|r| !(is_lease(r) && r.is_write()))
        .filter(|r| r.is_write())
        .map(describe)
        .collect()
}

/// What a process did between SIGTERM (`term_ms`) and being seen gone (`gone_ms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shutdown {
    /// Its last lease write (the release) happened.
    pub released: bool,
    /// Writes after that release (or after SIGTERM, when there was none), and after it was
    /// gone: writes of a process that no longer leads.
    pub late_writes: Vec<String>,
}

pub(crate) fn shutdown(
    records: &[RequestRecord],
    user: &str,
    term_ms: u64,
    gone_ms: u64,
) -> Shutdown {
    let window: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.user == user && r.at_ms > term_ms && r.at_ms <= gone_ms && r.is_write())
        .collect();
    let release = window
        .iter()
        .rposition(|r| is_lease(r) && (200..300).contains(&r.code));
    let after_release = match release {
        Some(i) => &window[i + 1..],
        None => &window[..],
    };
    let mut late_writes: Vec<String> = after_release
        .iter()
        .filter(|r| !is_lease(r))
        .map(|r| describe(r))
        .collect();
    late_writes.extend(writes_after_death(records, user, gone_ms));
    Shutdown {
        released: release.is_some(),
        late_writes,
    }
}

/// What a row's fault must have reached for the row to mean anything: a fault that touched
/// nobody (an operator not yet running, a window too short) proves nothing, and the row fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The operator got at least one of these answers while the fault lasted.
    Refused { op: Operator, codes: &'static [u16] },
    /// The operator sent requests that the slowing faults matched (kube-sim's count: each
    /// was slower than the client's read timeout, so every one hit that deadline, and one
    /// the client gave up on never reaches the request log).
    Slowed { op: Operator, requests: usize },
    /// The operator had a watch open before the fault and opened one again during it or
    /// after it: its watches were ended.
    Rewatched { op: Operator },
    /// The operator had a watch open before the fault and listed again during it or after
    /// it: its resume was refused (410 Gone).
    Relisted { op: Operator },
    /// openstack-sim answered with this status while the fault lasted (`None`: any answer,
    /// for faults that act on every request, as a hang does).
    OpenStack { status: Option<u16> },
    /// Some operator's output holds this text (a deadline's log line).
    Logged {
        needle: &'static str,
        what: &'static str,
    },
    /// The operator's lease went unrenewed for at least the renew deadline.
    LeaseLapsed { op: Operator },
    /// The operator's process was restarted (the SIGKILL and SIGTERM rows).
    Restarted { op: Operator },
    /// The drivers' node DaemonSets scheduled a pod on the Node the row added (how many
    /// DaemonSets did, counted by the row).
    NodeHosted { pods: usize },
}

/// What the reach checks read.
pub(crate) struct Evidence<'a> {
    /// kube-sim's request log.
    pub records: &'a [RequestRecord],
    /// The fault's window on kube-sim's clock.
    pub from_ms: u64,
    pub to_ms: u64,
    /// The end of the observation (convergence, or the end of the wait).
    pub until_ms: u64,
    /// The statuses openstack-sim answered while the fault lasted.
    pub openstack: &'a [u16],
    /// Every operator process's output.
    pub logs: &'a str,
    pub restarts: &'a BTreeMap<Operator, u32>,
    pub renew_deadline: Duration,
    /// The users each operator's replicas run as.
    pub lease_users: &'a [(Operator, Vec<String>)],
}

/// Paths the `slow-api` row slows: every API group the operators use but
/// `coordination.k8s.io`, so leader election keeps its lease and the row tests the client and
/// reconcile deadlines, not the lease (the `lease-loss` row does that).
pub(crate) const SLOWED_PATHS: [&str; 16] = [
    "/api/v1/",
    "/apis/apps/",
    "/apis/rbac.authorization.k8s.io/",
    "/apis/storage.k8s.io/",
    "/apis/snapshot.storage.k8s.io/",
    "/apis/operator.openshift.io/",
    "/apis/config.openshift.io/",
    "/apis/cloudcredential.openshift.io/",
    "/apis/security.openshift.io/",
    "/apis/monitoring.coreos.com/",
    "/apis/policy/",
    "/apis/networking.k8s.io/",
    "/apis/admissionregistration.k8s.io/",
    "/apis/events.k8s.io/",
    "/apis/authentication.k8s.io/",
    "/apis/authorization.k8s.io/",
];

/// What makes a row's checks empty: a fault that lasted no time (any row but the clean
/// install), and an OpenStack refusal no longer than the time the operators get to notice it,
/// which leaves the refusal check nothing to check.
pub(crate) fn window_problems(
    is_reference: bool,
    (start, end): (Instant, Instant),
    refused: Option<(Instant, Instant)>,
    notice: Duration,
) -> Vec<String> {
    let mut out = Vec::new();
    if !is_reference && end <= start {
        out.push("the fault's window is empty: it lasted no time".to_string());
    }
    if let Some((from, to)) = refused
        && to.saturating_duration_since(from) <= notice
    {
        out.push(format!(
            "the refusal check never ran: OpenStack refused the credentials for {}, not longer than the {} the operators get to notice",
            secs(to.saturating_duration_since(from)),
            secs(notice)
        ));
    }
    out
}

/// For each reach: what was seen (for the table) and, when nothing was, why the row fails.
pub(crate) fn reached(reach: &[Reach], ev: &Evidence) -> (Vec<String>, Vec<String>) {
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    let during = |r: &RequestRecord| r.at_ms >= ev.from_ms && r.at_ms <= ev.to_ms;
    let of = |op: Operator| {
        let user = op.user();
        ev.records
            .iter()
            .filter(move |r| r.user == user)
            .collect::<Vec<_>>()
    };
    for r in reach {
        let (count, label, missing): (usize, String, String) = match r {
            Reach::Refused { op, codes } => {
                let n = of(*op)
                    .iter()
                    .filter(|r| during(r))
                    .filter(|r| codes.contains(&r.code))
                    .count();
                let codes: Vec<String> = codes.iter().map(u16::to_string).collect();
                let codes = codes.join("/");
                (
                    n,
                    format!("{} {codes} ×{n}", op.label()),
                    format!(
                        "the {} operator got no {codes} while the fault lasted",
                        op.label()
                    ),
                )
            }
            Reach::Slowed { op, requests } => (
                *requests,
                format!("{} {requests} writes past the read timeout", op.label()),
                format!(
                    "the {} operator wrote nothing while the API was slow",
                    op.label()
                ),
            ),
            Reach::Rewatched { op } | Reach::Relisted { op } => {
                let (verb, again) = if matches!(r, Reach::Rewatched { .. }) {
                    ("watch", "watches re-opened")
                } else {
                    ("list", "lists again")
                };
                let mine = of(*op);
                let before = mine
                    .iter()
                    .any(|r| r.verb == "watch" && r.at_ms < ev.from_ms);
                let n = if before {
                    mine.iter()
                        .filter(|r| {
                            r.verb == verb && r.at_ms >= ev.from_ms && r.at_ms <= ev.until_ms
                        })
                        .count()
                } else {
                    0
                };
                (
                    n,
                    format!("{} {n} {again}", op.label()),
                    if before {
                        format!(
                            "the {} operator did not {verb} again after the fault began",
                            op.label()
                        )
                    } else {
                        format!(
                            "the {} operator had no watch open when the fault began",
                            op.label()
                        )
                    },
                )
            }
            Reach::OpenStack { status } => {
                let n = ev
                    .openstack
                    .iter()
                    .filter(|s| status.is_none_or(|want| **s == want))
                    .count();
                let what = status.map_or_else(|| "requests".to_string(), |s| format!("{s}"));
                (
                    n,
                    format!("OpenStack {what} ×{n}"),
                    format!("openstack-sim answered no {what} while the fault lasted"),
                )
            }
            Reach::Logged { needle, what } => {
                let n = ev.logs.matches(needle).count();
                (
                    n,
                    format!("{what} ×{n}"),
                    format!("no operator logged that {what}"),
                )
            }
            Reach::LeaseLapsed { op } => {
                // By any of its replicas: a second one may be the next to hold it.
                let users: Vec<String> = ev
                    .lease_users
                    .iter()
                    .find(|(o, _)| o == op)
                    .map_or_else(|| vec![op.user()], |(_, u)| u.clone());
                let mut renewals: Vec<u64> = ev
                    .records
                    .iter()
                    .filter(|r| users.contains(&r.user))
                    .filter(|r| {
                        is_lease(r)
                            && r.name == op.lease()
                            && r.is_write()
                            && (200..300).contains(&r.code)
                    })
                    .map(|r| r.at_ms)
                    .collect();
                renewals.sort_unstable();
                // The longest pause between two renewals that overlaps the fault.
                let gap = renewals
                    .windows(2)
                    .filter(|w| w[1] >= ev.from_ms && w[0] <= ev.to_ms)
                    .map(|w| w[1] - w[0])
                    .max()
                    .unwrap_or(0);
                let lapsed = gap >= ev.renew_deadline.as_millis() as u64;
                (
                    usize::from(lapsed),
                    format!(
                        "{} lease unrenewed for {:.0} s",
                        op.label(),
                        gap as f64 / 1000.0
                    ),
                    format!(
                        "the {} operator's lease went unrenewed for {:.0} s at most, less than the renew deadline of {} s",
                        op.label(),
                        gap as f64 / 1000.0,
                        ev.renew_deadline.as_secs()
                    ),
                )
            }
            Reach::Restarted { op } => {
                let n = ev.restarts.get(op).copied().unwrap_or(0) as usize;
                (
                    n,
                    format!("{} restarted ×{n}", op.label()),
                    format!("the {} operator was never restarted", op.label()),
                )
            }
            Reach::NodeHosted { pods } => (
                *pods,
                format!("{pods} node DaemonSets scheduled on the added Node"),
                "no driver node DaemonSet scheduled a pod on the added Node before it was removed"
                    .into(),
            ),
        };
        if count == 0 {
            problems.push(format!("the fault reached nobody: {missing}"));
        }
        seen.push(label);
    }
    (seen, problems)
}

/// The operators none of whose replicas wrote their Lease with success within the renew
/// deadline before `now_ms`: nobody leads them (empty: each one is led).
pub(crate) fn not_leading(
    records: &[RequestRecord],
    leases: &[(Operator, Vec<String>)],
    now_ms: u64,
    renew_deadline: Duration,
) -> Vec<String> {
    let since = now_ms.saturating_sub(renew_deadline.as_millis() as u64);
    leases
        .iter()
        .filter(|(op, users)| {
            !records
                .iter()
                .rev()
                .take_while(|r| r.at_ms >= since)
                .any(|r| {
                    users.contains(&r.user)
                        && is_lease(r)
                        && r.name == op.lease()
                        && r.is_write()
                        && (200..300).contains(&r.code)
                })
        })
        .map(|(op, _)| {
            format!(
                "no replica of the {} operator renewed its lease in the last {} s",
                op.label(),
                renew_deadline.as_secs()
            )
        })
        .collect()
}

/// Leadership from the request log, for one operator's Lease and the users its replicas run as:
/// every working write must come from the user whose successful Lease write is the latest, and
/// within the renew deadline of it. A replica that lost its lease (the deposed one) must be
/// silent until it holds it again; two replicas must never both write. Returns the writes that
/// break this.
pub(crate) fn leadership_violations(
    records: &[RequestRecord],
    lease: &str,
    users: &[String],
    renew_deadline: Duration,
) -> Vec<String> {
    let mut holder: Option<(&str, u64)> = None;
    let mut out = Vec::new();
    // In order of arrival: a delayed request is logged when it ends.
    let mut mine: Vec<&RequestRecord> =
        records.iter().filter(|r| users.contains(&r.user)).collect();
    mine.sort_by_key(|r| r.at_ms);
    for r in mine {
        if is_lease(r) && r.name == lease && r.is_write() && (200..300).contains(&r.code) {
            holder = Some((r.user.as_str(), r.at_ms));
            continue;
        }
        if !super::chain::is_working_write(r) {
            continue;
        }
        match holder {
            None => out.push(format!("{} before any replica held the lease", describe(r))),
            Some((user, _)) if user != r.user => out.push(format!(
                "{} by {} while {user} held the lease",
                describe(r),
                r.user
            )),
            Some((_, at)) if r.at_ms.saturating_sub(at) > renew_deadline.as_millis() as u64 => out
                .push(format!(
                    "{} {:.0} s after its last lease renewal (renew deadline {} s)",
                    describe(r),
                    (r.at_ms - at) as f64 / 1000.0,
                    renew_deadline.as_secs()
                )),
            Some(_) => {}
        }
    }
    out
}

/// Seconds with one decimal, for the table.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reliability::chain::{Condition, Content};

    fn c(status: &str) -> Condition {
        Condition {
            status: status.into(),
            reason: "R".into(),
            message: String::new(),
        }
    }

    fn healthy() -> Snapshot {
        let co: Conditions = [
            ("Available", c("True")),
            ("Progressing", c("False")),
            ("Degraded", c("False")),
        ]
        .into_iter()
        .map(|(t, c)| (t.to_string(), c))
        .collect();
        let drivers = Driver::ALL
            .iter()
            .map(|d| {
                let mut cs: Conditions = d
                    .available()
                    .iter()
                    .map(|t| (t.to_string(), c("True")))
                    .collect();
                cs.insert("XDegraded".into(), c("False"));
                (*d, cs)
            })
            .collect();
        Snapshot { co, drivers }
    }

    #[test]
    fn a_healthy_chain_has_no_problems_and_any_flag_is_one() {
        assert!(health_problems(&healthy()).is_empty());
        let mut s = healthy();
        s.drivers
            .get_mut(&Driver::Manila)
            .unwrap()
            .insert("FooProgressing".into(), c("True"));
        s.co.insert("Degraded".into(), c("True"));
        let problems = health_problems(&s);
        assert_eq!(problems.len(), 2, "{problems:?}");
        let mut s = healthy();
        s.drivers.get_mut(&Driver::Cinder).unwrap().clear();
        assert_eq!(
            health_problems(&s).len(),
            2,
            "both Cinder Available missing"
        );
    }

    #[test]
    fn notable_conditions_include_what_the_checks_leave_out() {
        let mut s = healthy();
        let manila = s.drivers.get_mut(&Driver::Manila).unwrap();
        manila.insert("ManilaServiceReachable".into(), c("False"));
        manila.insert("CSIControllerDisabled".into(), c("True"));
        assert!(not_healthy(&s, Strictness::Checked, false).is_empty());
        assert_eq!(
            not_healthy(&s, Strictness::Notable, false),
            vec![
                "Manila CSIControllerDisabled=True (R)".to_string(),
                "Manila ManilaServiceReachable=False (R)".to_string()
            ]
        );
    }

    /// Each driver must name the refusal in a condition that is not healthy: a healthy
    /// condition, or an unhealthy one about something else, does not count.
    #[test]
    fn the_refusal_must_be_reported_by_each_driver() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let refused = |status: &str| super::super::chain::Condition {
            status: status.into(),
            reason: "R".into(),
            message: "authenticate with Keystone: the credentials were rejected by Keystone \
                      (HTTP 401)"
                .into(),
        };
        let mut told = healthy();
        told.drivers
            .get_mut(&Driver::Cinder)
            .unwrap()
            .insert("ConfigSyncDegraded".into(), refused("True"));
        told.drivers
            .get_mut(&Driver::Manila)
            .unwrap()
            .insert("ManilaServiceReachable".into(), refused("False"));
        let mut cinder_only = told.clone();
        cinder_only
            .drivers
            .get_mut(&Driver::Manila)
            .unwrap()
            .insert("ManilaServiceReachable".into(), refused("True"));
        let samples = vec![
            (at(0), healthy()),
            (at(1000), cinder_only),
            (at(1500), told),
        ];
        assert!(refusal_unreported(&samples, at(1500), at(3000)).is_empty());
        let missing = refusal_unreported(&samples, at(0), at(3000));
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(
            missing[0].contains("cinder") && missing[0].contains("for 1.0 of the 3.0 s"),
            "{missing:?}"
        );
        assert!(
            missing[1].contains("manila") && missing[1].contains("for 1.5 of the 3.0 s"),
            "{missing:?}"
        );
    }

    #[test]
    fn available_is_read_as_the_union_does() {
        let mut cs: Conditions = [("AAvailable".to_string(), c("True"))].into();
        assert!(says_available(&cs));
        cs.insert("BAvailable".into(), c("False"));
        assert!(!says_available(&cs));
        assert!(!says_available(&Conditions::new()));
    }

    #[test]
    fn available_time_counts_inside_the_window_only() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut broken = healthy();
        broken.co.insert("Available".into(), c("False"));
        for d in Driver::ALL {
            for t in d.available() {
                broken
                    .drivers
                    .get_mut(&d)
                    .unwrap()
                    .insert(t.to_string(), c("False"));
            }
        }
        // Healthy until 1 s, broken from then on; the window is 0.5 s to 2 s.
        let samples = vec![(at(0), healthy()), (at(1000), broken)];
        let said = said_available(&samples, at(500), at(2000));
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].contains("for 0.5 of the 1.5 s"), "{said:?}");
        assert!(said_available(&samples, at(1000), at(2000)).is_empty());
        let unhealthy = unhealthy_conditions(&samples, at(0), at(2000), Strictness::Checked);
        assert!(unhealthy.contains(&"ClusterOperator Available=False (…)".to_string()));
        assert!(
            unhealthy_conditions(&samples, at(0), at(500), Strictness::Checked).is_empty(),
            "healthy before 1 s"
        );
        assert!(
            !unhealthy_conditions(&samples, at(1500), at(2000), Strictness::Checked).is_empty(),
            "the sample in force at the start counts"
        );
    }

    fn rec(at_ms: u64, user: &str, verb: &str, resource: &str) -> RequestRecord {
        RequestRecord {
            at_ms,
            verb: verb.into(),
            method: String::new(),
            path: String::new(),
            query: String::new(),
            user: user.into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: "ns".into(),
            name: "x".into(),
            code: 200,
        }
    }

    const LEASE: &str = "coordination.k8s.io/leases";

    #[test]
    fn a_killed_process_writes_nothing_until_its_successor_leads() {
        let log = vec![
            rec(5, "op", "update", "/configmaps"),
            rec(12, "op", "get", LEASE),
            rec(13, "other", "create", "/configmaps"),
            rec(14, "op", "create", "/events"),
            rec(20, "op", "update", LEASE),
            rec(21, "op", "update", "/configmaps"),
        ];
        let late = writes_after_death(&log, "op", 10);
        assert_eq!(late.len(), 1, "{late:?}");
        assert!(late[0].starts_with("create events"));
        assert!(writes_after_death(&log, "op", 15).is_empty());
    }

    #[test]
    fn a_terminated_process_writes_nothing_after_its_release() {
        let clean = vec![
            rec(11, "op", "update", "/configmaps"),
            rec(12, "op", "update", LEASE),
            rec(30, "op", "update", LEASE),
            rec(31, "op", "update", "/configmaps"),
        ];
        assert_eq!(
            shutdown(&clean, "op", 10, 20),
            Shutdown {
                released: true,
                late_writes: vec![]
            }
        );
        let late = vec![
            rec(12, "op", "update", LEASE),
            rec(13, "op", "patch", "/configmaps"),
            rec(25, "op", "create", "/configmaps"),
        ];
        let s = shutdown(&late, "op", 10, 20);
        assert!(s.released);
        assert_eq!(s.late_writes.len(), 2, "{s:?}");
        let none = shutdown(&[rec(12, "op", "patch", "/configmaps")], "op", 10, 20);
        assert!(!none.released);
        assert_eq!(none.late_writes.len(), 1);
    }

    #[test]
    fn requests_are_counted_by_failed_answer_and_leadership_dated() {
        let mut failed = rec(12, "op", "update", "/configmaps");
        failed.code = 409;
        let log = vec![
            rec(5, "op", "get", "/configmaps"),
            failed,
            rec(13, "op", "update", LEASE),
            rec(30, "op", "update", "/configmaps"),
        ];
        let users = [("Op", "op".to_string()), ("Other", "other".to_string())];
        assert_eq!(
            requests_by_answer(&log, &users, 10, 20),
            vec!["Op 2 (409 ×1)".to_string(), "Other 0".to_string()]
        );
        assert_eq!(
            first_leading(&log, &users, 15_000),
            vec!["Op -15.0 s".to_string(), "Other never".to_string()]
        );
        assert_eq!(
            first_write_after(&log, &users, 13),
            vec!["Op +0.0 s".to_string(), "Other none".to_string()]
        );
        assert_eq!(
            first_write_after(&log, &users, 0)[0],
            "Op +0.0 s",
            "12 failed"
        );
    }

    #[test]
    fn objects_are_compared_both_ways_and_owned_ones_by_content() {
        let objects = |pairs: &[(&str, u64)]| -> Objects {
            pairs
                .iter()
                .map(|(k, d)| {
                    let content = Content::of(&serde_json::json!({"data": d}), &Default::default());
                    (k.to_string(), content)
                })
                .collect()
        };
        let owned: BTreeSet<String> = ["y".to_string()].into();
        let reference = objects(&[("x", 1), ("y", 2), ("w", 3)]);
        // Same names and content: nothing to report.
        assert!(object_diff(&reference, &reference, &owned).is_empty());
        // `w` is not owned by an operator: other content there is not the operators' doing.
        let now = objects(&[("y", 2), ("z", 4), ("w", 9)]);
        assert_eq!(
            object_diff(&reference, &now, &owned),
            ObjectDiff {
                lost: vec!["x".into()],
                orphaned: vec!["z".into()],
                changed: vec![],
            }
        );
        // An owned object with other content (a stale Secret) is a difference.
        let stale = objects(&[("x", 1), ("y", 7), ("w", 3)]);
        assert_eq!(
            object_diff(&reference, &stale, &owned).changed,
            vec!["y (at /data)".to_string()]
        );
    }

    fn lease(at_ms: u64, user: &str, name: &str, code: u16) -> RequestRecord {
        RequestRecord {
            name: name.into(),
            code,
            ..rec(at_ms, user, "update", LEASE)
        }
    }

    fn evidence<'a>(
        records: &'a [RequestRecord],
        openstack: &'a [u16],
        logs: &'a str,
        restarts: &'a BTreeMap<Operator, u32>,
    ) -> Evidence<'a> {
        Evidence {
            records,
            from_ms: 1_000,
            to_ms: 2_000,
            until_ms: 3_000,
            openstack,
            logs,
            restarts,
            renew_deadline: Duration::from_secs(107),
            lease_users: &[],
        }
    }

    #[test]
    fn a_refusal_row_needs_an_injected_failure_of_its_operator_inside_the_window() {
        let cinder = Operator::Cinder.user();
        let reach = [Reach::Refused {
            op: Operator::Cinder,
            codes: &[409],
        }];
        let restarts = BTreeMap::new();
        let hit = [RequestRecord {
            code: 409,
            ..rec(1_500, &cinder, "patch", "apps/deployments")
        }];
        let (seen, problems) = reached(&reach, &evidence(&hit, &[], "", &restarts));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(seen, ["Cinder 409 ×1"]);
        // The bad cases: the 409 went to another operator, came after the window, or Cinder
        // only succeeded.
        for bad in [
            RequestRecord {
                code: 409,
                ..rec(1_500, &Operator::Cso.user(), "patch", "apps/deployments")
            },
            RequestRecord {
                code: 409,
                ..rec(2_500, &cinder, "patch", "apps/deployments")
            },
            rec(1_500, &cinder, "patch", "apps/deployments"),
        ] {
            let (_, problems) = reached(&reach, &evidence(&[bad], &[], "", &restarts));
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].contains("reached nobody"), "{problems:?}");
        }
    }

    #[test]
    fn watch_rows_need_a_watch_open_before_and_one_again_after() {
        let cso = Operator::Cso.user();
        let restarts = BTreeMap::new();
        let re = [Reach::Rewatched { op: Operator::Cso }];
        let relist = [Reach::Relisted { op: Operator::Cso }];
        let good = [
            rec(500, &cso, "watch", "/secrets"),
            rec(1_200, &cso, "watch", "/secrets"),
        ];
        assert!(
            reached(&re, &evidence(&good, &[], "", &restarts))
                .1
                .is_empty()
        );
        // No list: the resume was never refused.
        assert_eq!(
            reached(&relist, &evidence(&good, &[], "", &restarts))
                .1
                .len(),
            1
        );
        let relisted = [
            rec(500, &cso, "watch", "/secrets"),
            rec(1_200, &cso, "list", "/secrets"),
        ];
        assert!(
            reached(&relist, &evidence(&relisted, &[], "", &restarts))
                .1
                .is_empty()
        );
        // First watches after the fault began: the operator had nothing to lose.
        let late = [
            rec(1_200, &cso, "watch", "/secrets"),
            rec(1_300, &cso, "watch", "/pods"),
        ];
        assert_eq!(
            reached(&re, &evidence(&late, &[], "", &restarts)).1.len(),
            1
        );
    }

    #[test]
    fn openstack_logs_restarts_and_node_reach_fail_when_nothing_was_seen() {
        let restarts: BTreeMap<Operator, u32> = [(Operator::Cinder, 1)].into();
        let none = BTreeMap::new();
        let reach401 = [Reach::OpenStack { status: Some(401) }];
        assert!(
            reached(&reach401, &evidence(&[], &[200, 401], "", &none))
                .1
                .is_empty()
        );
        assert_eq!(
            reached(&reach401, &evidence(&[], &[200, 503], "", &none))
                .1
                .len(),
            1
        );
        let any = [Reach::OpenStack { status: None }];
        assert_eq!(reached(&any, &evidence(&[], &[], "", &none)).1.len(), 1);
        let logged = [Reach::Logged {
            needle: "ran past its deadline",
            what: "a reconcile cancelled",
        }];
        assert!(
            reached(
                &logged,
                &evidence(&[], &[], "x ran past its deadline y", &none)
            )
            .1
            .is_empty()
        );
        assert_eq!(
            reached(&logged, &evidence(&[], &[], "all well", &none))
                .1
                .len(),
            1
        );
        let restarted = [Reach::Restarted {
            op: Operator::Cinder,
        }];
        assert!(
            reached(&restarted, &evidence(&[], &[], "", &restarts))
                .1
                .is_empty()
        );
        assert_eq!(
            reached(&restarted, &evidence(&[], &[], "", &none)).1.len(),
            1
        );
        assert_eq!(
            reached(
                &[Reach::NodeHosted { pods: 0 }],
                &evidence(&[], &[], "", &none)
            )
            .1
            .len(),
            1
        );
        assert!(
            reached(
                &[Reach::NodeHosted { pods: 2 }],
                &evidence(&[], &[], "", &none)
            )
            .1
            .is_empty()
        );
    }

    #[test]
    fn slowed_writes_are_counted_by_the_faults_and_none_is_a_failure() {
        let none = BTreeMap::new();
        let slowed = [Reach::Slowed {
            op: Operator::Cso,
            requests: 3,
        }];
        assert!(
            reached(&slowed, &evidence(&[], &[], "", &none))
                .1
                .is_empty()
        );
        let untouched = [Reach::Slowed {
            op: Operator::Cso,
            requests: 0,
        }];
        assert_eq!(
            reached(&untouched, &evidence(&[], &[], "", &none)).1.len(),
            1
        );
    }

    #[test]
    fn a_lease_lapses_only_when_unrenewed_for_the_renew_deadline_across_the_fault() {
        let cso = Operator::Cso.user();
        let lock = Operator::Cso.lease();
        let none = BTreeMap::new();
        let reach = [Reach::LeaseLapsed { op: Operator::Cso }];
        let lapsed = [lease(900, &cso, lock, 200), lease(120_000, &cso, lock, 200)];
        assert!(
            reached(&reach, &evidence(&lapsed, &[], "", &none))
                .1
                .is_empty()
        );
        // Renewed every 26 s: the outage was shorter than the deadline.
        let renewed: Vec<RequestRecord> = (0..6)
            .map(|i| lease(900 + i * 26_000, &cso, lock, 200))
            .collect();
        assert_eq!(
            reached(&reach, &evidence(&renewed, &[], "", &none)).1.len(),
            1
        );
        // Failed renewals do not count as renewals, and another lease is not this one.
        let other = [
            lease(900, &cso, "another-lock", 200),
            lease(120_000, &cso, "another-lock", 200),
        ];
        assert_eq!(
            reached(&reach, &evidence(&other, &[], "", &none)).1.len(),
            1
        );
    }

    #[test]
    fn one_writer_at_a_time_and_a_deposed_leader_stays_silent() {
        let a = "replica-a".to_string();
        let b = "replica-b".to_string();
        let users = [a.clone(), b.clone()];
        let deadline = Duration::from_secs(107);
        let write = |at, user: &str| rec(at, user, "patch", "apps/deployments");
        let good = [
            lease(0, &a, "lock", 200),
            write(1_000, &a),
            lease(26_000, &a, "lock", 200),
            write(30_000, &a),
            // a lost it; b acquired after the lease expired, then wrote.
            lease(170_000, &b, "lock", 200),
            write(171_000, &b),
            // Events and failed lease writes are not work.
            rec(172_000, &a, "create", "/events"),
            lease(173_000, &a, "lock", 409),
        ];
        assert!(leadership_violations(&good, "lock", &users, deadline).is_empty());
        // Two writers: a writes while b holds the lease.
        let mut two = good.to_vec();
        two.push(write(174_000, &a));
        assert_eq!(
            leadership_violations(&two, "lock", &users, deadline).len(),
            1
        );
        // The deposed leader writes past its renew deadline without renewing.
        let deposed = [lease(0, &a, "lock", 200), write(110_000, &a)];
        assert_eq!(
            leadership_violations(&deposed, "lock", &users, deadline).len(),
            1
        );
        // A write before any lease.
        assert_eq!(
            leadership_violations(&[write(5, &a)], "lock", &users, deadline).len(),
            1
        );
        // Another lease's writes do not make a leader here.
        let other = [lease(0, &a, "other", 200), write(10, &a)];
        assert_eq!(
            leadership_violations(&other, "lock", &users, deadline).len(),
            1
        );
    }

    #[test]
    fn an_operator_leads_only_with_a_recent_lease_write_of_its_own() {
        let cso = Operator::Cso.user();
        let leases = vec![(Operator::Cso, vec![cso.clone()])];
        let deadline = Duration::from_secs(107);
        let lock = Operator::Cso.lease();
        let recent = [lease(100_000, &cso, lock, 200)];
        assert!(not_leading(&recent, &leases, 150_000, deadline).is_empty());
        // Renewed before an outage longer than the deadline: the stored conditions may be
        // healthy, but nobody leads.
        assert_eq!(not_leading(&recent, &leases, 300_000, deadline).len(), 1);
        // A refused renewal, or another operator's lease, is not leading.
        let refused = [lease(140_000, &cso, lock, 409)];
        assert_eq!(not_leading(&refused, &leases, 150_000, deadline).len(), 1);
        let other = [lease(140_000, &cso, "another-lock", 200)];
        assert_eq!(not_leading(&other, &leases, 150_000, deadline).len(), 1);
    }

    #[test]
    fn an_empty_window_or_a_refusal_shorter_than_the_notice_fails_the_row() {
        let t0 = Instant::now();
        let notice = Duration::from_secs(10);
        let later = |s| t0 + Duration::from_secs(s);
        assert!(window_problems(false, (t0, later(5)), None, notice).is_empty());
        assert!(
            window_problems(true, (t0, t0), None, notice).is_empty(),
            "the reference"
        );
        assert_eq!(window_problems(false, (t0, t0), None, notice).len(), 1);
        // The old 5 s OpenStack refusal: the check from 10 s on had nothing to look at.
        let short = window_problems(false, (t0, later(5)), Some((t0, later(5))), notice);
        assert_eq!(short.len(), 1);
        assert!(short[0].contains("never ran"), "{short:?}");
        assert!(window_problems(false, (t0, later(20)), Some((t0, later(20))), notice).is_empty());
    }
}
