//! The fault matrix: one row per fault, each injected on a fresh chain at the moment its row
//! says (before the install, during it, at an operator's first write, or after convergence),
//! held for its duration and then lifted. A row returns the window the fault lasted; the
//! runner (`mod.rs`) then measures convergence and runs every check of `checks.rs`.
//!
//! kube-sim faults go through its admin HTTP paths; openstack-sim faults through its handle
//! (`Fault`, `FaultAction`), the emulator running in the bench process.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, PostParams};
use openstack_sim::{Fault, SimService};
use serde_json::{Value, json};

use super::chain::{BAD_PASSWORD, CANARY_PASSWORD, Chain, Operator};
use super::checks::{Reach, SLOWED_PATHS};

/// How long faults last; `--quick` shortens them (not the OpenStack hang, which must outlast
/// the client's fixed 60 s timeout to be one). The run as a whole must stay within 15 minutes
/// on two cores, which bounds the wait for convergence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timings {
    /// The API server's downtime.
    pub outage: Duration,
    /// Bursts of kube-sim faults (watch drops, 409, 429, 5xx).
    pub burst: Duration,
    /// Slow API: how long, and the latency of each request (past the client's read timeout,
    /// and long enough for the reconcile deadline to pass).
    pub slow: Duration,
    pub latency: Duration,
    /// OpenStack error windows, from the moment both driver operators lead.
    pub openstack: Duration,
    /// OpenStack refusing the credentials, from the moment both driver operators lead: past
    /// the notice time, so the refusal check has a window to run in.
    pub refusal: Duration,
    /// The API server's downtime in `lease-loss`: past the leader's renew deadline.
    pub lease_outage: Duration,
    /// How long an OpenStack request that arrives in the hang window hangs.
    pub hang: Duration,
    /// How long the credentials stay bad.
    pub bad_credentials: Duration,
    /// How long the operators get to notice that OpenStack refuses the credentials before
    /// their conditions must say so.
    pub notice: Duration,
    /// Healthy for this long counts as converged.
    pub settle: Duration,
    /// Bound on waiting for convergence after a fault.
    pub converge_limit: Duration,
    /// Bound on waiting for an operator's first write (the install getting going).
    pub start_limit: Duration,
}

impl Timings {
    pub(crate) fn new(quick: bool) -> Self {
        let full = Timings {
            outage: Duration::from_secs(60),
            burst: Duration::from_secs(10),
            // The client gives up after its read timeout (65 s) and a reconcile is cancelled
            // after its deadline (180 s): requests slower than the first, for longer than the
            // second plus one timeout, so both are passed.
            slow: READ_TIMEOUT + RECONCILE_DEADLINE + Duration::from_secs(15),
            latency: READ_TIMEOUT + Duration::from_secs(5),
            openstack: Duration::from_secs(5),
            refusal: Duration::from_secs(20),
            lease_outage: RENEW_DEADLINE + Duration::from_secs(20),
            hang: Duration::from_secs(62),
            bad_credentials: Duration::from_secs(25),
            notice: Duration::from_secs(10),
            settle: Duration::from_secs(3),
            converge_limit: Duration::from_secs(60),
            start_limit: Duration::from_secs(60),
        };
        if quick {
            Timings {
                outage: Duration::from_secs(10),
                burst: Duration::from_secs(5),
                slow: Duration::from_secs(8),
                bad_credentials: Duration::from_secs(15),
                ..full
            }
        } else {
            full
        }
    }
}

/// The operators' client read timeout, reconcile deadline and renew deadline (their shipped
/// values, which the rows must pass to test them).
const READ_TIMEOUT: Duration = operator_kit::client_config::Timeouts::DEFAULT.read;
const RECONCILE_DEADLINE: Duration = operator_kit::runtime::RECONCILE_DEADLINE;
pub(crate) const RENEW_DEADLINE: Duration =
    operator_kit::leader::LeaderTimings::DEFAULT.renew_deadline;

/// What a row's fault did.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub start: Instant,
    /// When the fault was lifted (the API answering again, after an outage).
    pub end: Instant,
    /// When OpenStack refused the credentials (a fault the operators can know about).
    pub refused: Option<(Instant, Instant)>,
    /// A process killed on purpose, and kube-sim's clock when it was seen gone.
    pub killed: Option<(Operator, u64)>,
    /// A process stopped with SIGTERM on purpose: kube-sim's clock at the signal and when it
    /// was seen gone.
    pub terminated: Option<(Operator, u64, u64)>,
    /// openstack-sim's request count when an OpenStack fault was lifted.
    pub openstack_requests: Option<usize>,
    /// openstack-sim's request count when the fault began.
    pub openstack_from: usize,
    /// What the fault must have reached (checked once the row is over).
    pub reach: Vec<Reach>,
    /// A second replica the row started (`lease-loss`), removed once the row converged.
    pub twin: Option<super::chain::Twin>,
    /// A bound on converging other than [`Timings::converge_limit`], for a fault whose
    /// recovery has its own clock (a lapsed lease).
    pub converge_within: Option<Duration>,
    pub notes: Vec<String>,
}

impl Window {
    fn new(start: Instant, end: Instant) -> Self {
        Window {
            start,
            end,
            refused: None,
            killed: None,
            terminated: None,
            openstack_requests: None,
            openstack_from: 0,
            reach: Vec::new(),
            twin: None,
            converge_within: None,
            notes: Vec::new(),
        }
    }

    fn reaching(mut self, reach: impl IntoIterator<Item = Reach>) -> Self {
        self.reach.extend(reach);
        self
    }
}

/// What a row is run with.
pub(crate) struct Ctx {
    pub chain: Chain,
    pub t: Timings,
}

pub(crate) type RowFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<Window>> + 'a>>;

/// One row of the matrix.
pub(crate) struct Row {
    /// The `--only` name.
    pub id: &'static str,
    /// What is injected, for the table (Markdown).
    pub fault: fn(&Timings) -> String,
    /// When, relative to the install.
    pub when: &'static str,
    /// The operators the row restarts on purpose (one restart each expected).
    pub restarts: &'static [Operator],
    pub run: for<'a> fn(&'a Ctx) -> RowFuture<'a>,
}

/// The reference row: the object set every other row is compared with comes from it.
pub(crate) const CLEAN_INSTALL: &str = "clean-install";

/// A 409 row for one operator: every create, update, patch and delete of it refused.
macro_rules! conflict_row {
    ($id:literal, $op:expr) => {
        Row {
            id: $id,
            fault: |t| {
                format!(
                    "409 Conflict to every create, update, patch and delete of the {} operator for {} s",
                    $op.label(),
                    t.burst.as_secs()
                )
            },
            when: "during install (from its first write)",
            restarts: &[],
            run: |c| Box::pin(api_faults_from_first_write(c, $op, &WRITES, &[409])),
        }
    };
}

/// A 5xx row for one operator: 500 to its writes, 503 to everything else it asks.
macro_rules! errors_row {
    ($id:literal, $op:expr) => {
        Row {
            id: $id,
            fault: |t| {
                format!(
                    "500 to every write and 503 to every other request of the {} operator for {} s",
                    $op.label(),
                    t.burst.as_secs()
                )
            },
            when: "during install (from its first write)",
            restarts: &[],
            run: |c| Box::pin(api_faults_from_first_write(c, $op, &WRITES, &[500, 503])),
        }
    };
}

/// Every row, in the order they run and RELIABILITY.md lists them.
pub(crate) const ROWS: &[Row] = &[
    Row {
        id: CLEAN_INSTALL,
        fault: |_| {
            "none (the reference: its objects are what every other row must end with)".into()
        },
        when: "-",
        restarts: &[],
        run: |c| Box::pin(clean_install(c)),
    },
    Row {
        id: "api-restart",
        fault: |t| {
            format!(
                "API server restart: every connection dropped, none accepted for {} s (`POST /__sim/restart?downtimeMs={}`)",
                t.outage.as_secs(),
                t.outage.as_millis()
            )
        },
        when: "mid-install (the Cinder operator's first write)",
        restarts: &[],
        run: |c| Box::pin(api_restart(c)),
    },
    Row {
        id: "watch-drop",
        fault: |t| {
            format!(
                "every open watch ended (`POST /__sim/drop-watches`) once a second for {} s",
                t.burst.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: &[],
        run: |c| Box::pin(watch_drop(c)),
    },
    Row {
        id: "watch-410",
        fault: |t| {
            format!(
                "watch history forgotten, then every watch ended (`POST /__sim/compact`, `drop-watches`) every 2 s for {} s: each resume gets 410 Gone",
                t.burst.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: &[],
        run: |c| Box::pin(watch_410(c)),
    },
    conflict_row!("conflict-409-cso", Operator::Cso),
    conflict_row!("conflict-409-cinder", Operator::Cinder),
    conflict_row!("conflict-409-manila", Operator::Manila),
    Row {
        id: "throttle-429",
        fault: |t| {
            format!(
                "429 TooManyRequests to every request of the three operators for {} s",
                t.burst.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: &[],
        run: |c| Box::pin(throttle_429(c)),
    },
    errors_row!("errors-5xx-cso", Operator::Cso),
    errors_row!("errors-5xx-cinder", Operator::Cinder),
    errors_row!("errors-5xx-manila", Operator::Manila),
    Row {
        id: "slow-api",
        fault: |t| {
            format!(
                "{} s of latency on every write of the three operators but their Lease's (an API server slow to commit) for {} s: past the client's {} s read timeout, for longer than the {} s reconcile deadline; the fault ends when the last delayed write is answered",
                t.latency.as_secs(),
                t.slow.as_secs(),
                READ_TIMEOUT.as_secs(),
                RECONCILE_DEADLINE.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: &[],
        run: |c| Box::pin(slow_api(c)),
    },
    Row {
        id: "openstack-401",
        fault: |t| {
            format!(
                "openstack-sim answers 401 to every request (Keystone and services) until {} s after both driver operators lead",
                t.refusal.as_secs()
            )
        },
        when: "from before the install",
        restarts: &[],
        run: |c| Box::pin(openstack_401(c)),
    },
    Row {
        id: "openstack-503",
        fault: |t| {
            format!(
                "openstack-sim answers 503 to every request until {} s after both driver operators lead",
                t.openstack.as_secs()
            )
        },
        when: "from before the install",
        restarts: &[],
        run: |c| Box::pin(openstack_503(c)),
    },
    Row {
        id: "openstack-timeout",
        fault: |t| {
            format!(
                "every OpenStack request arriving until {1} s after both driver operators lead hangs for {0} s (past the client's 60 s timeout); the fault ends when the last one is answered",
                t.hang.as_secs(),
                t.openstack.as_secs()
            )
        },
        when: "from before the install",
        restarts: &[],
        run: |c| Box::pin(openstack_timeout(c)),
    },
    Row {
        id: "openstack-truncated",
        fault: |t| {
            format!(
                "every OpenStack answer is 200 with a JSON body cut short, until {} s after both driver operators lead",
                t.openstack.as_secs()
            )
        },
        when: "from before the install",
        restarts: &[],
        run: |c| Box::pin(openstack_truncated(c)),
    },
    Row {
        id: "openstack-oversized",
        fault: |t| {
            format!(
                "every OpenStack answer is 200 with a {} MiB body (the client's limit is 8 MiB), until {} s after both driver operators lead",
                OVERSIZED >> 20,
                t.openstack.as_secs()
            )
        },
        when: "from before the install",
        restarts: &[],
        run: |c| Box::pin(openstack_oversized(c)),
    },
    Row {
        id: "openstack-echo",
        fault: |t| {
            format!(
                "Keystone answers 401 with an error body that echoes the password, until {} s after both driver operators lead",
                t.refusal.as_secs()
            )
        },
        when: "from before the install",
        restarts: &[],
        run: |c| Box::pin(openstack_echo(c)),
    },
    Row {
        id: "credentials-bad",
        fault: |t| {
            format!(
                "root credentials (`kube-system/openstack-credentials` clouds.yaml) rotated to a wrong password for {} s, then back; the CCO stand-in copies them to the drivers' Secrets",
                t.bad_credentials.as_secs()
            )
        },
        when: "after install",
        restarts: &[],
        run: |c| Box::pin(credentials_bad(c)),
    },
    Row {
        id: "node-churn",
        fault: |_| {
            format!(
                "a worker Node added at the CSO's first write, removed {} s after both drivers' node DaemonSets schedule a pod on it",
                NODE_LIFETIME.as_secs()
            )
        },
        when: "during install",
        restarts: &[],
        run: |c| Box::pin(node_churn(c)),
    },
    Row {
        id: "sigkill-cso",
        fault: |_| {
            "SIGKILL to the CSO; kube-sim's process runner restarts it as the kubelet does".into()
        },
        when: "mid-install (its first write)",
        restarts: &[Operator::Cso],
        run: |c| Box::pin(sigkill(c, Operator::Cso)),
    },
    Row {
        id: "sigkill-cinder",
        fault: |_| "SIGKILL to the Cinder operator; kube-sim's process runner restarts it".into(),
        when: "mid-install (its first write)",
        restarts: &[Operator::Cinder],
        run: |c| Box::pin(sigkill(c, Operator::Cinder)),
    },
    Row {
        id: "sigkill-manila",
        fault: |_| "SIGKILL to the Manila operator; kube-sim's process runner restarts it".into(),
        when: "mid-install (its first write)",
        restarts: &[Operator::Manila],
        run: |c| Box::pin(sigkill(c, Operator::Manila)),
    },
    Row {
        id: "sigterm-cinder",
        fault: |_| {
            "SIGTERM to the Cinder operator (a pod deleted or rolled); kube-sim's process runner restarts it".into()
        },
        when: "mid-install (its first write)",
        restarts: &[Operator::Cinder],
        run: |c| Box::pin(sigterm(c, Operator::Cinder)),
    },
    Row {
        id: "lease-loss",
        fault: |t| {
            format!(
                "a second CSO replica started (its own Deployment, under a twin service account bound to the same roles, so the request log tells the two apart), then every connection dropped and none accepted for {} s, past the leader's {} s renew deadline",
                t.lease_outage.as_secs(),
                RENEW_DEADLINE.as_secs()
            )
        },
        when: "after install",
        // Every operator's lease lapses in a full outage, and each exits to start again as a
        // candidate, as library-go's do.
        restarts: &Operator::ALL,
        run: |c| Box::pin(lease_loss(c)),
    },
];

/// How long the extra Node lives in `node-churn`.
const NODE_LIFETIME: Duration = Duration::from_secs(3);
/// The size of `openstack-oversized`'s bodies.
const OVERSIZED: usize = 12 << 20;
/// How often kube-sim is asked whether it answers again after a restart.
const POLL: Duration = Duration::from_millis(100);

async fn clean_install(ctx: &Ctx) -> anyhow::Result<Window> {
    let at = ctx.chain.install().await?;
    Ok(Window::new(at, at))
}

async fn api_restart(ctx: &Ctx) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(Operator::Cinder, ctx.t.start_limit)
        .await?;
    let start = restart_api(c, ctx.t.outage).await?;
    // The Manila operator may not run yet at the Cinder operator's first write.
    Ok(Window::new(start, Instant::now()).reaching([
        Reach::Rewatched { op: Operator::Cso },
        Reach::Rewatched {
            op: Operator::Cinder,
        },
    ]))
}

/// Restarts kube-sim with `downtime` and waits until it answers again; returns when the
/// outage began.
async fn restart_api(c: &Chain, downtime: Duration) -> anyhow::Result<Instant> {
    let start = Instant::now();
    c.admin(
        "POST",
        &format!("/__sim/restart?downtimeMs={}", downtime.as_millis()),
        None,
    )
    .await?;
    tokio::time::sleep(downtime).await;
    let until = Instant::now() + Duration::from_secs(30);
    while !c.api_up().await {
        anyhow::ensure!(
            Instant::now() < until,
            "kube-sim does not answer 30 s after its downtime"
        );
        tokio::time::sleep(POLL).await;
    }
    Ok(start)
}

/// Runs `each` every `period` for `total`, starting at the CSO's first write.
async fn repeat_during_install(
    ctx: &Ctx,
    period: Duration,
    total: Duration,
    each: &[&str],
) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(Operator::Cso, ctx.t.start_limit).await?;
    let start = Instant::now();
    let mut times = 0;
    while start.elapsed() < total {
        for path in each {
            c.admin("POST", path, None).await?;
        }
        times += 1;
        tokio::time::sleep(period).await;
    }
    let mut w = Window::new(start, Instant::now());
    w.notes.push(format!("{} × {}", each.join(" + "), times));
    Ok(w)
}

async fn watch_drop(ctx: &Ctx) -> anyhow::Result<Window> {
    // From the CSO's first write only the CSO is sure to have watches open.
    let w = repeat_during_install(
        ctx,
        Duration::from_secs(1),
        ctx.t.burst,
        &["/__sim/drop-watches"],
    )
    .await?;
    Ok(w.reaching([Reach::Rewatched { op: Operator::Cso }]))
}

async fn watch_410(ctx: &Ctx) -> anyhow::Result<Window> {
    let w = repeat_during_install(
        ctx,
        Duration::from_secs(2),
        ctx.t.burst,
        &["/__sim/compact", "/__sim/drop-watches"],
    )
    .await?;
    Ok(w.reaching([Reach::Relisted { op: Operator::Cso }]))
}

/// kube-sim faults for every request of `ops` matching `verbs` (`""`: any).
fn operator_faults(ops: &[Operator], verbs: &[&str], code: u16, latency_ms: u64) -> Vec<Value> {
    ops.iter()
        .flat_map(|op| {
            verbs.iter().map(move |verb| {
                json!({"match": {"verb": verb, "user": op.user()}, "code": code,
                       "times": 0, "latencyMs": latency_ms})
            })
        })
        .collect()
}

const WRITES: [&str; 4] = ["create", "update", "patch", "delete"];

/// Injects `faults` at the CSO's first write, holds them for `hold`, clears them.
async fn api_faults_during_install(
    ctx: &Ctx,
    faults: Vec<Value>,
    hold: Duration,
) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(Operator::Cso, ctx.t.start_limit).await?;
    let start = Instant::now();
    for f in &faults {
        c.inject(f.clone()).await?;
    }
    tokio::time::sleep(hold).await;
    c.clear_faults().await?;
    Ok(Window::new(start, Instant::now()))
}

/// From `op`'s first write, for a burst: `codes[0]` to its writes and, when given,
/// `codes[1]` to everything else it asks.
async fn api_faults_from_first_write(
    ctx: &Ctx,
    op: Operator,
    writes: &[&str],
    codes: &'static [u16],
) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(op, ctx.t.start_limit).await?;
    let start = Instant::now();
    // The first matching fault's code wins: the writes' code, then the rest's.
    let mut faults = operator_faults(&[op], writes, codes[0], 0);
    if let Some(rest) = codes.get(1) {
        faults.extend(operator_faults(&[op], &[""], *rest, 0));
    }
    for f in &faults {
        c.inject(f.clone()).await?;
    }
    tokio::time::sleep(ctx.t.burst).await;
    c.clear_faults().await?;
    Ok(Window::new(start, Instant::now()).reaching([Reach::Refused { op, codes }]))
}

async fn throttle_429(ctx: &Ctx) -> anyhow::Result<Window> {
    let w = api_faults_during_install(
        ctx,
        operator_faults(&Operator::ALL, &[""], 429, 0),
        ctx.t.burst,
    )
    .await?;
    Ok(w.reaching([Reach::Refused {
        op: Operator::Cso,
        codes: &[429],
    }]))
}

async fn slow_api(ctx: &Ctx) -> anyhow::Result<Window> {
    // Writes only (an etcd slow to commit, the usual slow API server): the operators' caches
    // stay in sync, so reconciles run and their writes hang past the client's read timeout,
    // wave after wave, until the reconcile deadline cancels them.
    let latency = ctx.t.latency.as_millis() as u64;
    let faults: Vec<Value> = Operator::ALL
        .iter()
        .flat_map(|op| {
            WRITES.iter().flat_map(move |verb| {
                SLOWED_PATHS.iter().map(move |path| {
                    json!({"match": {"verb": verb, "user": op.user(), "pathContains": path},
                           "code": 0, "times": 0, "latencyMs": latency})
                })
            })
        })
        .collect();
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(Operator::Cso, ctx.t.start_limit).await?;
    let start = Instant::now();
    for f in &faults {
        c.inject(f.clone()).await?;
    }
    tokio::time::sleep(ctx.t.slow).await;
    let matched = c.fault_matches().await?;
    c.clear_faults().await?;
    // A write that arrived just before the faults were cleared is still delayed: the fault is
    // over when that one is answered (as in `openstack-timeout`).
    tokio::time::sleep(ctx.t.latency).await;
    let mut w = Window::new(start, Instant::now());
    for op in Operator::ALL {
        w.reach.push(Reach::Slowed {
            op,
            requests: matched.get(&op.user()).copied().unwrap_or(0) as usize,
        });
    }
    // The Manila and Cinder operators may not run yet: the CSO's writes are the ones slowed
    // for sure, and one reconcile somewhere must pass its deadline.
    w.reach
        .retain(|r| !matches!(r, Reach::Slowed { op, requests: 0 } if *op != Operator::Cso));
    w.reach.push(Reach::Logged {
        needle: RECONCILE_DEADLINE_LOG,
        what: "a reconcile cancelled at its deadline",
    });
    Ok(w)
}

/// What the operators log when a reconcile passes its deadline (operator-kit `runtime`).
const RECONCILE_DEADLINE_LOG: &str = "a reconcile ran past its deadline and was cancelled";

/// Injects `faults` into openstack-sim before the install, and lifts them `hold` after both
/// driver operators lead (so their first OpenStack calls fall in the window).
async fn openstack_faults_from_install(
    ctx: &Ctx,
    faults: Vec<Fault>,
    hold: Duration,
    breaks: bool,
    reached: Option<u16>,
) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    let start = Instant::now();
    for f in faults {
        c.bed.openstack.inject(f);
    }
    c.install().await?;
    // Each driver operator asks OpenStack as soon as it leads (Manila writes nothing before
    // its first answer).
    c.wait_leading(Operator::Cinder, ctx.t.start_limit).await?;
    c.wait_leading(Operator::Manila, ctx.t.start_limit).await?;
    tokio::time::sleep(hold).await;
    c.bed.openstack.clear_faults();
    let end = Instant::now();
    let mut w = Window::new(start, end);
    if breaks {
        w.refused = Some((start, end));
    }
    w.notes.push(openstack_requests(c));
    w.openstack_requests = Some(c.bed.openstack.requests().len());
    Ok(w.reaching([Reach::OpenStack { status: reached }]))
}

/// openstack-sim's requests so far, counted by answer.
fn openstack_requests(c: &Chain) -> String {
    format!(
        "OpenStack requests by the end of the fault: {}.",
        openstack_answers(&c.bed.openstack.requests())
    )
}

/// `N (200 ×a, 401 ×b)`.
pub(crate) fn openstack_answers(requests: &[openstack_sim::RequestRecord]) -> String {
    let mut by_status = std::collections::BTreeMap::<u16, usize>::new();
    for r in requests {
        *by_status.entry(r.status).or_default() += 1;
    }
    let codes: Vec<String> = by_status.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
    if codes.is_empty() {
        "0".into()
    } else {
        format!("{} ({})", requests.len(), codes.join(", "))
    }
}

async fn openstack_401(ctx: &Ctx) -> anyhow::Result<Window> {
    openstack_faults_from_install(
        ctx,
        vec![Fault::status(401)],
        ctx.t.refusal,
        true,
        Some(401),
    )
    .await
}

async fn openstack_503(ctx: &Ctx) -> anyhow::Result<Window> {
    openstack_faults_from_install(
        ctx,
        vec![Fault::status(503)],
        ctx.t.openstack,
        false,
        Some(503),
    )
    .await
}

async fn openstack_timeout(ctx: &Ctx) -> anyhow::Result<Window> {
    let mut w = openstack_faults_from_install(
        ctx,
        vec![Fault::latency(ctx.t.hang)],
        ctx.t.openstack,
        false,
        None,
    )
    .await?;
    // A request that arrived just before the fault was lifted hangs for the whole delay: the
    // fault is over when that one is answered.
    tokio::time::sleep(ctx.t.hang).await;
    w.end = Instant::now();
    w.openstack_requests = Some(ctx.chain.bed.openstack.requests().len());
    w.notes
        .push(openstack_requests(&ctx.chain).replace("end of the fault", "end of the hangs"));
    Ok(w)
}

async fn openstack_truncated(ctx: &Ctx) -> anyhow::Result<Window> {
    let cut = r#"{"token": {"methods": ["password"], "catalog": [{"type": "compute", "endpoints": [{"interface": "public", "url": "http://"#;
    openstack_faults_from_install(
        ctx,
        vec![Fault::respond(200, cut)],
        ctx.t.openstack,
        false,
        Some(200),
    )
    .await
}

async fn openstack_oversized(ctx: &Ctx) -> anyhow::Result<Window> {
    let mut body = String::with_capacity(OVERSIZED + 32);
    body.push_str(r#"{"padding": ""#);
    body.extend(std::iter::repeat_n('x', OVERSIZED));
    body.push_str(r#""}"#);
    openstack_faults_from_install(
        ctx,
        vec![Fault::respond(200, body)],
        ctx.t.openstack,
        false,
        Some(200),
    )
    .await
}

async fn openstack_echo(ctx: &Ctx) -> anyhow::Result<Window> {
    let body = json!({"error": {"code": 401, "title": "Unauthorized", "message": format!(
        "The password {CANARY_PASSWORD} of user admin in domain Default is not valid: \
         {{\"auth\": {{\"identity\": {{\"password\": {{\"user\": {{\"name\": \"admin\", \
         \"password\": \"{CANARY_PASSWORD}\"}}}}}}}}}}"
    )}});
    let fault = Fault::respond(401, body.to_string()).on(SimService::Identity);
    openstack_faults_from_install(ctx, vec![fault], ctx.t.refusal, true, Some(401)).await
}

/// Waits until the chain is healthy (held for the settle time), for rows that start after
/// the install.
async fn wait_installed(ctx: &Ctx) -> anyhow::Result<()> {
    let until = Instant::now() + ctx.t.converge_limit;
    let mut since: Option<Instant> = None;
    loop {
        let problems = super::checks::health_problems(&ctx.chain.snapshot());
        if problems.is_empty() {
            let s = *since.get_or_insert_with(Instant::now);
            if s.elapsed() >= ctx.t.settle {
                return Ok(());
            }
        } else {
            since = None;
        }
        anyhow::ensure!(
            Instant::now() < until,
            "the install did not converge within {:?}: {}",
            ctx.t.converge_limit,
            problems.join("; ")
        );
        tokio::time::sleep(POLL).await;
    }
}

async fn credentials_bad(ctx: &Ctx) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    wait_installed(ctx).await?;
    let start = Instant::now();
    let openstack_from = c.bed.openstack.requests().len();
    c.rotate_credentials(BAD_PASSWORD).await?;
    tokio::time::sleep(ctx.t.bad_credentials).await;
    c.rotate_credentials(CANARY_PASSWORD).await?;
    let end = Instant::now();
    let mut w = Window::new(start, end);
    w.refused = Some((start, end));
    w.openstack_from = openstack_from;
    w.openstack_requests = Some(c.bed.openstack.requests().len());
    w.notes.push(openstack_requests(c));
    Ok(w.reaching([Reach::OpenStack { status: Some(401) }]))
}

async fn node_churn(ctx: &Ctx) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    let nodes: Api<Node> = Api::all(c.bed.client.clone());
    let name = "worker-extra";
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": "nova"}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status"}]},
    }))?;
    c.install().await?;
    c.wait_first_write(Operator::Cso, ctx.t.start_limit).await?;
    let start = Instant::now();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .context("cannot add the Node")?;
    // The Node must matter: it goes once both drivers' node DaemonSets schedule a pod on it
    // (or the wait ends, and the reach check says the fault touched nobody).
    let nodes_now = || async {
        nodes
            .list(&Default::default())
            .await
            .map(|l| l.items.len() as i64)
            .unwrap_or(0)
    };
    let all = nodes_now().await;
    let until = Instant::now() + ctx.t.start_limit;
    let counting = loop {
        let counting: Vec<String> = c
            .node_daemonsets()
            .into_iter()
            .filter(|(_, desired)| *desired == all)
            .map(|(ds, _)| ds)
            .collect();
        if counting.len() >= 2 || Instant::now() >= until {
            break counting;
        }
        tokio::time::sleep(POLL).await;
    };
    tokio::time::sleep(NODE_LIFETIME).await;
    nodes
        .delete(name, &DeleteParams::default())
        .await
        .context("cannot remove the Node")?;
    let mut w = Window::new(start, Instant::now());
    w.notes.push(format!(
        "Node DaemonSets that scheduled a pod on every one of the {all} Nodes, {name} included: {}.",
        if counting.is_empty() {
            "none".to_string()
        } else {
            counting.join(", ")
        }
    ));
    Ok(w.reaching([Reach::NodeHosted {
        pods: counting.len(),
    }]))
}

async fn sigkill(ctx: &Ctx, op: Operator) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(op, ctx.t.start_limit).await?;
    let start = Instant::now();
    let pid = c.signal(op, "KILL").await?;
    let gone = c.marker().await?;
    let mut w = Window::new(start, Instant::now());
    w.killed = Some((op, gone));
    w.notes.push(format!("killed pid {pid}"));
    Ok(w.reaching([Reach::Restarted { op }]))
}

async fn sigterm(ctx: &Ctx, op: Operator) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    c.wait_first_write(op, ctx.t.start_limit).await?;
    let start = Instant::now();
    let term = c.marker().await?;
    let pid = c.signal(op, "TERM").await?;
    let gone = c.marker().await?;
    let mut w = Window::new(start, Instant::now());
    w.terminated = Some((op, term, gone));
    w.notes.push(format!(
        "pid {pid} exited {:.1} s after SIGTERM",
        w.end.duration_since(start).as_secs_f64()
    ));
    Ok(w.reaching([Reach::Restarted { op }]))
}

async fn lease_loss(ctx: &Ctx) -> anyhow::Result<Window> {
    let c = &ctx.chain;
    c.install().await?;
    wait_installed(ctx).await?;
    let twin = c.start_twin().await?;
    // The twin is a standby once it has read the lease the leader holds.
    let until = Instant::now() + ctx.t.start_limit;
    while !c.requests().iter().any(|r| {
        r.user == twin.user && r.resource == "coordination.k8s.io/leases" && r.verb == "get"
    }) {
        anyhow::ensure!(
            Instant::now() < until,
            "the second CSO replica did not read the lease within {:?}",
            ctx.t.start_limit
        );
        tokio::time::sleep(POLL).await;
    }
    let start = restart_api(c, ctx.t.lease_outage).await?;
    let mut w = Window::new(start, Instant::now()).reaching([
        Reach::LeaseLapsed { op: Operator::Cso },
        Reach::Restarted { op: Operator::Cso },
    ]);
    w.twin = Some(twin);
    // A replica that lost its lease restarts as a candidate and tries again every retry
    // period, jittered by up to 120 % (client-go's); one that never held it waits a lease
    // duration from its first look. Converging takes up to that, plus the usual bound.
    let timing = operator_kit::leader::LeaderTimings::DEFAULT;
    w.converge_within =
        Some(timing.lease_duration.max(timing.retry_period.mul_f64(2.2)) + ctx.t.converge_limit);
    Ok(w)
}
