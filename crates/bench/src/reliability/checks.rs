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

use super::chain::{Conditions, Driver, Snapshot};

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

/// Objects of the clean install missing now, and objects now that it did not have.
pub(crate) fn object_diff(
    reference: &BTreeSet<String>,
    now: &BTreeSet<String>,
) -> (Vec<String>, Vec<String>) {
    (
        reference.difference(now).cloned().collect(),
        now.difference(reference).cloned().collect(),
    )
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

/// Seconds with one decimal, for the table.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reliability::chain::Condition;

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
    fn objects_are_compared_both_ways() {
        let a: BTreeSet<String> = ["x", "y"].iter().map(|s| s.to_string()).collect();
        let b: BTreeSet<String> = ["y", "z"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            object_diff(&a, &b),
            (vec!["x".to_string()], vec!["z".to_string()])
        );
    }
}
