//! `bench reliability`: the fault matrix of DESIGN §7's last row, run against the real
//! binaries, and the command that regenerates RELIABILITY.md.
//!
//! Each row starts a fresh chain (`chain.rs`: the CSO and both driver operators as processes
//! of `csi-operator`, run by kube-sim's process runner under their service accounts, RBAC on,
//! against kube-sim and openstack-sim), injects its fault (`faults.rs`) and then checks
//! (`checks.rs`) that the chain converged and how long after the fault ended; that the
//! conditions were truthful during the fault and nothing Degraded or Progressing was left
//! behind; that the operators still reacted to a change (a drift probe); that no operator
//! crashed; that no operand object was lost or orphaned against the clean install; that the
//! planted password appears in no log, Event, status or other object; and that no process
//! wrote after it was killed, or after it released its lease on SIGTERM (every row ends by
//! stopping all three operators as Kubernetes stops a pod). A row passes or fails with its
//! reasons; `--write RELIABILITY.md` regenerates that file wholly from one run.
//!
//! Nothing here asserts a timing: times are measured and printed, as benchmarks are.

mod chain;
mod checks;
mod faults;
mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams};

use chain::{BAD_PASSWORD, CANARY_PASSWORD, Chain, Operator};
use checks::{Sample, Strictness, secs};
use faults::{CLEAN_INSTALL, Ctx, ROWS, Row, Timings, Window};

/// The first argument that selects this mode.
pub const COMMAND: &str = "reliability";

#[derive(Parser)]
#[command(
    name = "bench reliability",
    about = "Run the fault matrix against the real operators, print it, optionally regenerate RELIABILITY.md"
)]
struct Cli {
    /// Regenerate this file (normally RELIABILITY.md) from this run.
    #[arg(long, value_name = "PATH")]
    write: Option<PathBuf>,
    /// Shorter faults (a 10 s outage, 5 s bursts): checks that the rows work, for development.
    #[arg(long)]
    quick: bool,
    /// Run only this row (repeatable); the clean install always runs first, as the reference.
    #[arg(long, value_name = "ROW", value_parser = row_parser())]
    only: Vec<String>,
    /// List the rows and exit.
    #[arg(long)]
    list: bool,
    /// Keep the operators' logs of every row (their directory is printed).
    #[arg(long)]
    keep_logs: bool,
}

fn row_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(ROWS.iter().map(|r| r.id))
}

/// Entry point of `bench reliability …` (the arguments after the program name).
pub fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let cli = Cli::parse_from(args);
    let t = Timings::new(cli.quick);
    if cli.list {
        for row in ROWS {
            println!("{:<20} {}", row.id, (row.fault)(&t));
        }
        return Ok(());
    }
    let selected: Vec<&Row> = ROWS
        .iter()
        .filter(|r| {
            r.id == CLEAN_INSTALL || cli.only.is_empty() || cli.only.iter().any(|o| o == r.id)
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Under cargo this builds csi-operator first: not part of the run's time.
    crate::sim_process::locate_binary()?;
    let started = Instant::now();
    let mut results: Vec<RowResult> = Vec::new();
    let mut reference: Option<Reference> = None;
    for row in selected {
        eprintln!("row {}{}", row.id, if cli.quick { " (quick)" } else { "" });
        let result = runtime.block_on(run_row(row, t, reference.as_ref(), cli.keep_logs));
        eprintln!(
            "  {} in {}{}",
            result.verdict(),
            secs(result.wall),
            if result.problems.is_empty() {
                String::new()
            } else {
                format!(": {}", result.problems.join("; "))
            }
        );
        if row.id == CLEAN_INSTALL {
            reference = result.reference.clone();
        }
        results.push(result);
    }
    let total = started.elapsed();
    print!("{}", report::text(&results));
    eprintln!("all rows in {}", secs(total));
    if let Some(path) = cli.write {
        let run = crate::report::RunInfo::collect(cli.quick);
        report::write_file(&path, &run, &t, &results, total)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// What one row found.
#[derive(Debug, Clone)]
pub(crate) struct RowResult {
    pub id: &'static str,
    pub fault: String,
    pub when: &'static str,
    /// From the end of the fault to the first moment of the healthy state that held;
    /// `None`: not converged.
    pub converged: Option<Duration>,
    /// How long the fault lasted.
    pub fault_length: Option<Duration>,
    pub conditions: String,
    pub restarts: BTreeMap<Operator, u32>,
    pub objects: String,
    /// The clean install's objects, which every other row is compared with.
    pub reference: Option<Reference>,
    pub secrets: String,
    pub fencing: String,
    /// What the fault was seen to reach (kube-sim's and openstack-sim's logs).
    pub reached: String,
    /// How long the operators took to restore the drift probe's objects.
    pub probe: Option<Duration>,
    /// Why the row fails; empty: it passes.
    pub problems: Vec<String>,
    /// What else was seen, for the row's details.
    pub notes: Vec<String>,
    pub wall: Duration,
}

impl RowResult {
    pub(crate) fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    pub(crate) fn verdict(&self) -> &'static str {
        if self.passed() { "PASS" } else { "FAIL" }
    }
}

/// Objects the drift probe deletes, one per operator, none that a running operand needs:
/// each operator must put its own back through its watches (well before a resync).
const PROBE_LIMIT: Duration = Duration::from_secs(20);
/// (operator, group, resource, namespace, name).
const PROBE: [(&str, &str, &str, &str, &str); 3] = [
    (
        "CSO",
        "",
        "services",
        testbed::DRIVER_NAMESPACE,
        "manila-csi-driver-operator-metrics",
    ),
    (
        "Cinder",
        "storage.k8s.io",
        "storageclasses",
        "",
        "standard-csi",
    ),
    (
        "Manila",
        "",
        "services",
        testbed::MANILA_NAMESPACE,
        "manila-csi-driver-controller-metrics",
    ),
];
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Bound on the objects reaching the clean install's set once the conditions are healthy.
const OBJECTS_LIMIT: Duration = Duration::from_secs(10);

async fn run_row(
    row: &Row,
    t: Timings,
    reference: Option<&Reference>,
    keep_logs: bool,
) -> RowResult {
    let started = Instant::now();
    let mut result = RowResult {
        id: row.id,
        fault: (row.fault)(&t),
        when: row.when,
        converged: None,
        fault_length: None,
        conditions: "-".into(),
        restarts: BTreeMap::new(),
        objects: "-".into(),
        reference: None,
        secrets: "-".into(),
        fencing: "-".into(),
        reached: "-".into(),
        probe: None,
        problems: Vec::new(),
        notes: Vec::new(),
        wall: Duration::ZERO,
    };
    match Chain::start(3, keep_logs).await {
        Ok(chain) => {
            let ctx = Ctx { chain, t };
            let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
            let sampler = {
                let bed = ctx.chain.bed.clone();
                let samples = samples.clone();
                tokio::spawn(async move {
                    loop {
                        let s = chain::snapshot(&bed);
                        {
                            let mut all = samples.lock().unwrap_or_else(|e| e.into_inner());
                            if all.last().is_none_or(|(_, last)| *last != s) {
                                all.push((Instant::now(), s));
                            }
                        }
                        tokio::time::sleep(SAMPLE_EVERY).await;
                    }
                })
            };
            if let Err(e) = evaluate(row, &ctx, &samples, reference, &mut result).await {
                result
                    .problems
                    .push(format!("the row could not complete: {e:#}"));
                result.notes.push(format!(
                    "The operators' output ended with:\n\n```\n{}```",
                    ctx.chain.log_tails(15)
                ));
            }
            sampler.abort();
            let _ = sampler.await;
        }
        Err(e) => result
            .problems
            .push(format!("the chain could not start: {e:#}")),
    }
    result.wall = started.elapsed();
    result
}

fn samples_of(samples: &Mutex<Vec<Sample>>) -> Vec<Sample> {
    samples.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

async fn evaluate(
    row: &Row,
    ctx: &Ctx,
    samples: &Mutex<Vec<Sample>>,
    reference: Option<&Reference>,
    result: &mut RowResult,
) -> anyhow::Result<()> {
    let c = &ctx.chain;
    let window: Window = (row.run)(ctx).await?;
    if window.end > window.start {
        result.fault_length = Some(window.end - window.start);
    }
    result.problems.extend(checks::window_problems(
        row.id == CLEAN_INSTALL,
        (window.start, window.end),
        window.refused,
        ctx.t.notice,
    ));
    result.notes.extend(window.notes.iter().cloned());

    // Converged, and how long after the fault ended.
    let converge_limit = window.converge_within.unwrap_or(ctx.t.converge_limit);
    let (converged_at, last_problems) =
        wait_converged(ctx, window.end, converge_limit, window.twin.as_ref()).await;
    result.converged = converged_at.map(|at| at.saturating_duration_since(window.end));
    let seen = checks::unhealthy_conditions(
        &samples_of(samples),
        window.start,
        converged_at.unwrap_or_else(Instant::now),
        Strictness::Notable,
    );
    if !seen.is_empty() {
        result.notes.push(format!(
            "Conditions other than healthy from the fault's start to convergence: {}.",
            shorten(&seen, 16)
        ));
    }
    if let Some(before) = window.openstack_requests {
        let requests = c.bed.openstack.requests();
        result.notes.push(format!(
            "OpenStack requests after the fault was lifted, until {}: {}.",
            if converged_at.is_some() {
                "convergence"
            } else {
                "the wait ended"
            },
            faults::openstack_answers(requests.get(before..).unwrap_or_default())
        ));
    }
    let records = c.requests();
    let users: Vec<(&str, String)> = Operator::ALL
        .iter()
        .map(|op| (op.label(), op.user()))
        .collect();
    if window.end > window.start {
        result.notes.push(format!(
            "Requests of the operators while the fault lasted (failed ones by code): {}.",
            checks::requests_by_answer(
                &records,
                &users,
                c.sim_ms(window.start),
                c.sim_ms(window.end)
            )
            .join(", ")
        ));
    }
    result.notes.push(format!(
        "First held their leases, from the fault's end: {}.",
        checks::first_leading(&records, &users, c.sim_ms(window.end)).join(", ")
    ));
    if window.end > window.start {
        result.notes.push(format!(
            "First write after the fault's end: {}.",
            checks::first_write_after(&records, &users, c.sim_ms(window.end)).join(", ")
        ));
    }
    if converged_at.is_none() {
        let now = checks::not_healthy(&c.snapshot(), Strictness::Notable, true);
        result.notes.push(format!(
            "Conditions when the wait ended: {}.",
            if now.is_empty() {
                "healthy".to_string()
            } else {
                now.join("; ")
            }
        ));
    }

    // Truthful while OpenStack refused the credentials: each driver says so.
    let mut condition_problems = Vec::new();
    if let Some((from, to)) = window.refused {
        let from = from + ctx.t.notice;
        // A refusal no longer than the notice time is a problem of its own (window_problems).
        if to > from {
            let unreported = checks::refusal_unreported(&samples_of(samples), from, to);
            if !unreported.is_empty() {
                condition_problems.push(format!(
                    "while OpenStack refused the credentials (checked from {} after the fault began): {}",
                    secs(ctx.t.notice),
                    unreported.join(", ")
                ));
            }
            let available = checks::said_available(&samples_of(samples), from, to);
            result.notes.push(format!(
                "While OpenStack refused the credentials (from {} after the fault began): {}.",
                secs(ctx.t.notice),
                if available.is_empty() {
                    "nothing said Available=True".to_string()
                } else {
                    available.join(", ")
                }
            ));
        }
    }
    if converged_at.is_none() {
        result.problems.push(format!(
            "not converged within {} of the fault's end: {}",
            secs(converge_limit),
            last_problems.join("; ")
        ));
    }

    // Objects, the drift probe, and nothing left behind.
    if let Some(at) = converged_at {
        if window.twin.is_none() {
            objects_check(c, row.id == CLEAN_INSTALL, reference, result).await;
        }
        // Whichever replica leads must see the probe.
        match drift_probe(c).await {
            Ok(d) => result.probe = Some(d),
            Err(e) => result.problems.push(format!("drift probe: {e:#}")),
        }
        if let Some(twin) = &window.twin {
            // The second replica goes (its objects are not the operators'); if it led, the
            // first takes over at its next retry, and the objects are compared after that.
            c.remove_twin(twin)
                .await
                .context("cannot remove the second CSO replica")?;
            let (led, problems) = wait_converged(ctx, Instant::now(), converge_limit, None).await;
            if led.is_none() {
                result.problems.push(format!(
                    "after the second replica was removed: {}",
                    problems.join("; ")
                ));
            }
            objects_check(c, false, reference, result).await;
        }
        tokio::time::sleep(ctx.t.settle).await;
        // The settle time after `at` was seen healthy by the wait itself.
        let after = checks::unhealthy_conditions(
            &samples_of(samples),
            at + ctx.t.settle,
            Instant::now(),
            Strictness::Checked,
        );
        if !after.is_empty() {
            condition_problems.push(format!("after convergence: {}", shorten(&after, 6)));
        }
        let now = checks::health_problems(&c.snapshot());
        if !now.is_empty() {
            condition_problems.push(format!("left behind: {}", now.join("; ")));
        }
    }
    result.conditions = if condition_problems.is_empty() {
        if converged_at.is_none() {
            "- (not converged)".into()
        } else if window.refused.is_some() {
            "truthful (the refusal reported)".into()
        } else {
            "truthful".into()
        }
    } else {
        condition_problems.join("; ")
    };
    result.problems.extend(condition_problems);

    // No crash loop: every operator runs, restarted only where the row restarts it.
    let mut restart_problems = Vec::new();
    for op in Operator::ALL {
        let expected = u32::from(row.restarts.contains(&op));
        match c.process(op) {
            Some(p) => {
                result.restarts.insert(op, p.restarts);
                if !p.running() {
                    restart_problems.push(format!("{} not running ({:?})", op.label(), p.state));
                }
                if p.restarts > expected {
                    restart_problems.push(format!(
                        "{} restarted {} times (last exit: {})",
                        op.label(),
                        p.restarts,
                        p.last_exit.as_deref().unwrap_or("-")
                    ));
                }
            }
            None => restart_problems.push(format!("{} has no pod", op.label())),
        }
    }
    result.problems.extend(restart_problems);

    // The fault reached what it was meant to.
    let records = c.requests();
    let answered = c.bed.openstack.requests();
    let fault_end = window
        .openstack_requests
        .unwrap_or(answered.len())
        .min(answered.len());
    let openstack: Vec<u16> = answered
        .get(window.openstack_from.min(fault_end)..fault_end)
        .unwrap_or_default()
        .iter()
        .map(|r| r.status)
        .collect();
    let logs = c.log_text()?;
    let evidence = checks::Evidence {
        records: &records,
        from_ms: c.sim_ms(window.start),
        to_ms: c.sim_ms(window.end),
        until_ms: c.sim_ms(converged_at.unwrap_or_else(Instant::now)),
        openstack: &openstack,
        logs: &logs,
        restarts: &result.restarts,
        renew_deadline: faults::RENEW_DEADLINE,
        lease_users: &lease_users(window.twin.as_ref()),
    };
    let (reached, unreached) = checks::reached(&window.reach, &evidence);
    result.reached = if reached.is_empty() {
        "-".into()
    } else {
        reached.join(", ")
    };
    result.problems.extend(unreached);

    // Fencing: the killed or terminated process wrote nothing it must not, and neither does
    // any operator stopped now.
    let mut fencing = Vec::new();
    for (op, users) in lease_users(window.twin.as_ref()) {
        for v in checks::leadership_violations(&records, op.lease(), &users, faults::RENEW_DEADLINE)
        {
            fencing.push(format!("{}: {v}", op.label()));
        }
    }
    if let Some((op, gone)) = window.killed {
        for w in checks::writes_after_death(&records, &op.user(), gone) {
            fencing.push(format!("{} wrote after SIGKILL: {w}", op.label()));
        }
    }
    if let Some((op, term, gone)) = window.terminated {
        let s = checks::shutdown(&records, &op.user(), term, gone);
        if !s.released {
            fencing.push(format!(
                "{} did not release its lease on SIGTERM",
                op.label()
            ));
        }
        for w in s.late_writes {
            fencing.push(format!(
                "{} wrote after releasing its lease: {w}",
                op.label()
            ));
        }
    }
    match stop_all(c).await {
        Ok(problems) => fencing.extend(problems),
        Err(e) => fencing.push(format!("stopping the operators: {e:#}")),
    }
    result.fencing = if fencing.is_empty() {
        match (window.killed, &window.twin) {
            (Some((op, _)), _) => format!(
                "one writer; no write after SIGKILL ({}), none after SIGTERM",
                op.label()
            ),
            (None, Some(_)) => {
                "one writer of two CSO replicas, the deposed one silent; none after SIGTERM".into()
            }
            _ => "one writer; no write after SIGTERM's release".into(),
        }
    } else {
        fencing.join("; ")
    };
    result.problems.extend(fencing);

    // No secret anywhere (after the stop, so shutdown logs are scanned too).
    let found = c.find_secrets(&[CANARY_PASSWORD, BAD_PASSWORD])?;
    result.secrets = if found.is_empty() {
        "none found".into()
    } else {
        format!("found in {}", shorten(&found, 6))
    };
    if !found.is_empty() {
        result
            .problems
            .push(format!("a password appears in {}", shorten(&found, 6)));
    }
    Ok(())
}

/// Waits from `after` until the chain is healthy for the settle time: the moment that state
/// began, or `None` and the last problems at the limit.
///
/// Healthy includes every operator leading (a Lease write of its within the renew deadline):
/// after an outage the conditions in the store still say what they said before it, and only a
/// leading operator can keep them true.
async fn wait_converged(
    ctx: &Ctx,
    after: Instant,
    limit: Duration,
    twin: Option<&chain::Twin>,
) -> (Option<Instant>, Vec<String>) {
    let until = after + limit;
    let mut since: Option<Instant> = None;
    let leases = lease_users(twin);
    loop {
        let mut problems = checks::health_problems(&ctx.chain.snapshot());
        let now = Instant::now();
        if problems.is_empty() {
            problems = checks::not_leading(
                &ctx.chain.requests(),
                &leases,
                ctx.chain.sim_ms(now),
                faults::RENEW_DEADLINE,
            );
        }
        if problems.is_empty() {
            let s = *since.get_or_insert(now);
            if now.duration_since(s) >= ctx.t.settle {
                return (Some(s), problems);
            }
        } else {
            since = None;
        }
        if now >= until {
            return (None, problems);
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
}

/// Each operator's Lease and the users its replicas run as (the CSO's twin, when one runs).
fn lease_users(twin: Option<&chain::Twin>) -> Vec<(Operator, Vec<String>)> {
    Operator::ALL
        .iter()
        .map(|op| {
            let mut users = vec![op.user()];
            if let (Operator::Cso, Some(twin)) = (op, twin) {
                users.push(twin.user.clone());
            }
            (*op, users)
        })
        .collect()
}

/// What a clean install leaves: every object with its content digest, and which of them the
/// operators wrote.
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    pub objects: chain::Objects,
    pub owned: BTreeSet<String>,
}

/// Compares the objects with the clean install's (or records them, for the clean install):
/// by name, and by content for what the operators own.
async fn objects_check(
    c: &Chain,
    is_reference: bool,
    reference: Option<&Reference>,
    result: &mut RowResult,
) {
    if is_reference {
        let objects = c.objects();
        let owned = c.written_by_operators();
        let compared = objects.keys().filter(|k| owned.contains(*k)).count();
        result.objects = format!(
            "{} objects (the reference; {compared} written by the operators, compared by content)",
            objects.len()
        );
        result.reference = Some(Reference { objects, owned });
        return;
    }
    let Some(reference) = reference else {
        result.objects = "not compared: the clean install did not converge".into();
        result.problems.push(result.objects.clone());
        return;
    };
    let until = Instant::now() + OBJECTS_LIMIT;
    let diff = loop {
        let owned: BTreeSet<String> = reference
            .owned
            .union(&c.written_by_operators())
            .cloned()
            .collect();
        let diff = checks::object_diff(&reference.objects, &c.objects(), &owned);
        if diff.is_empty() || Instant::now() >= until {
            break diff;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    };
    if diff.is_empty() {
        result.objects =
            "same as the clean install (names, and content of what the operators own)".into();
        return;
    }
    let mut parts = Vec::new();
    for (what, keys) in [
        ("lost", &diff.lost),
        ("orphaned", &diff.orphaned),
        ("other content", &diff.changed),
    ] {
        if !keys.is_empty() {
            parts.push(format!("{what}: {}", shorten(keys, 5)));
        }
    }
    result.objects = parts.join("; ");
    result.problems.push(result.objects.clone());
}

/// Deletes one object of each operator and waits until all are back: the operators still see
/// changes after the fault (a dead watch would leave them missing until a resync).
async fn drift_probe(c: &Chain) -> anyhow::Result<Duration> {
    let classes: Api<StorageClass> = Api::all(c.bed.client.clone());
    let start = Instant::now();
    for (_, _, resource, ns, name) in PROBE {
        let deleted = if resource == "services" {
            let services: Api<Service> = Api::namespaced(c.bed.client.clone(), ns);
            services
                .delete(name, &DeleteParams::default())
                .await
                .map(|_| ())
        } else {
            classes
                .delete(name, &DeleteParams::default())
                .await
                .map(|_| ())
        };
        deleted.with_context(|| format!("cannot delete {resource} {ns}/{name}"))?;
    }
    loop {
        let missing: Vec<String> = PROBE
            .iter()
            .filter(|(_, group, resource, ns, name)| c.object(group, resource, ns, name).is_none())
            .map(|(op, _, resource, ns, name)| format!("{resource} {ns}/{name} ({op})"))
            .collect();
        if missing.is_empty() {
            return Ok(start.elapsed());
        }
        anyhow::ensure!(
            start.elapsed() < PROBE_LIMIT,
            "not restored within {}: {}",
            secs(PROBE_LIMIT),
            missing.join(", ")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops each operator as Kubernetes stops a pod (SIGTERM); each must release its lease and
/// write nothing after the release. Returns what went wrong.
async fn stop_all(c: &Chain) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut stopped = Vec::new();
    for op in Operator::ALL {
        let term = c.marker().await?;
        c.signal(op, "TERM").await?;
        // Read before kube-sim's process runner restarts it (a second later at the earliest).
        let holder = c
            .object("coordination.k8s.io", "leases", op.namespace(), op.lease())
            .and_then(|l| {
                l.pointer("/spec/holderIdentity")
                    .and_then(|h| h.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let gone = c.marker().await?;
        stopped.push((op, term, gone, holder));
    }
    let records = c.requests();
    for (op, term, gone, holder) in stopped {
        let s = checks::shutdown(&records, &op.user(), term, gone);
        if !s.released || !holder.is_empty() {
            problems.push(format!(
                "{} did not release its lease on SIGTERM (holder {holder:?})",
                op.label()
            ));
        }
        for w in s.late_writes {
            problems.push(format!(
                "{} wrote after releasing its lease: {w}",
                op.label()
            ));
        }
    }
    Ok(problems)
}

/// The first `n` items, and how many more.
fn shorten(items: &[String], n: usize) -> String {
    let mut out = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        out += &format!(" and {} more", items.len() - n);
    }
    out
}
