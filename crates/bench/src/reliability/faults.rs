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

/// How long faults last; `--quick` shortens them (not the OpenStack hang, which must outlast
/// the client's fixed 60 s timeout to be one). The run as a whole must stay within 15 minutes
/// on two cores, which bounds the wait for convergence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timings {
    /// The API server's downtime.
    pub outage: Duration,
    /// Bursts of kube-sim faults (watch drops, 409, 429, 5xx).
    pub burst: Duration,
    /// Slow API.
    pub slow: Duration,
    pub latency: Duration,
    /// OpenStack error windows, from the moment both driver operators lead.
    pub openstack: Duration,
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
            slow: Duration::from_secs(15),
            latency: Duration::from_secs(2),
            openstack: Duration::from_secs(5),
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
            notes: Vec::new(),
        }
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
    /// The operator the row restarts on purpose (one restart expected).
    pub restarts: Option<Operator>,
    pub run: for<'a> fn(&'a Ctx) -> RowFuture<'a>,
}

/// The reference row: the object set every other row is compared with comes from it.
pub(crate) const CLEAN_INSTALL: &str = "clean-install";

/// Every row, in the order they run and RELIABILITY.md lists them.
pub(crate) const ROWS: &[Row] = &[
    Row {
        id: CLEAN_INSTALL,
        fault: |_| {
            "none (the reference: its objects are what every other row must end with)".into()
        },
        when: "-",
        restarts: None,
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
        restarts: None,
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
        restarts: None,
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
        restarts: None,
        run: |c| Box::pin(watch_410(c)),
    },
    Row {
        id: "conflict-409",
        fault: |t| {
            format!(
                "409 Conflict to every create, update, patch and delete of the three operators for {} s",
                t.burst.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: None,
        run: |c| Box::pin(conflict_409(c)),
    },
    Row {
        id: "throttle-429",
        fault: |t| {
            format!(
                "429 TooManyRequests to every request of the three operators for {} s",
                t.burst.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: None,
        run: |c| Box::pin(throttle_429(c)),
    },
    Row {
        id: "errors-5xx",
        fault: |t| {
            format!(
                "500 to every write and 503 to every other request of the three operators for {} s",
                t.burst.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: None,
        run: |c| Box::pin(errors_5xx(c)),
    },
    Row {
        id: "slow-api",
        fault: |t| {
            format!(
                "{} s of latency on every request of the three operators for {} s",
                t.latency.as_secs(),
                t.slow.as_secs()
            )
        },
        when: "during install (from the CSO's first write)",
        restarts: None,
        run: |c| Box::pin(slow_api(c)),
    },
    Row {
        id: "openstack-401",
        fault: |t| {
            format!(
                "openstack-sim answers 401 to every request (Keystone and services) until {} s after both driver operators lead",
                t.openstack.as_secs()
            )
        },
        when: "from before the install",
        restarts: None,
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
        restarts: None,
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
        restarts: None,
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
        restarts: None,
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
        restarts: None,
        run: |c| Box::pin(openstack_oversized(c)),
    },
    Row {
        id: "openstack-echo",
        fault: |t| {
            format!(
                "Keystone answers 401 with an error body that echoes the password, until {} s after both driver operators lead",
                t.openstack.as_secs()
            )
        },
        when: "from before the install",
        restarts: None,
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
        restarts: None,
        run: |c| Box::pin(credentials_bad(c)),
    },
    Row {
        id: "node-churn",
        fault: |_| {
            format!(
                "a worker Node added at the CSO's first write, removed {} s after the Cinder operator's first write",
                NODE_LIFETIME.as_secs()
            )
        },
        when: "during install",
        restarts: None,
        run: |c| Box::pin(node_churn(c)),
    },
    Row {
        id: "sigkill-cso",
        fault: |_| {
            "SIGKILL to the CSO; kube-sim's process runner restarts it as the kubelet does".into()
        },
        when: "mid-install (its first write)",
        restarts: Some(Operator::Cso),
        run: |c| Box::pin(sigkill(c, Operator::Cso)),
    },
    Row {
        id: "sigkill-cinder",
        fault: |_| "SIGKILL to the Cinder operator; kube-sim's process runner restarts it".into(),
        when: "mid-install (its first write)",
        restarts: Some(Operator::Cinder),
        run: |c| Box::pin(sigkill(c, Operator::Cinder)),
    },
    Row {
        id: "sigkill-manila",
        fault: |_| "SIGKILL to the Manila operator; kube-sim's process runner restarts it".into(),
        when: "mid-install (its first write)",
        restarts: Some(Operator::Manila),
        run: |c| Box::pin(sigkill(c, Operator::Manila)),
    },
    Row {
        id: "sigterm-cinder",
        fault: |_| {
            "SIGTERM to the Cinder operator (a pod deleted or rolled); kube-sim's process runner restarts it".into()
        },
        when: "mid-install (its first write)",
        restarts: Some(Operator::Cinder),
        run: |c| Box::pin(sigterm(c, Operator::Cinder)),
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
    let start = Instant::now();
    c.admin(
        "POST",
        &format!("/__sim/restart?downtimeMs={}", ctx.t.outage.as_millis()),
        None,
    )
    .await?;
    tokio::time::sleep(ctx.t.outage).await;
    let until = Instant::now() + Duration::from_secs(30);
    while !c.api_up().await {
        anyhow::ensure!(
            Instant::now() < until,
            "kube-sim does not answer 30 s after its downtime"
        );
        tokio::time::sleep(POLL).await;
    }
    Ok(Window::new(start, Instant::now()))
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
    repeat_during_install(
        ctx,
        Duration::from_secs(1),
        ctx.t.burst,
        &["/__sim/drop-watches"],
    )
    .await
}

async fn watch_410(ctx: &Ctx) -> anyhow::Result<Window> {
    repeat_during_install(
        ctx,
        Duration::from_secs(2),
        ctx.t.burst,
        &["/__sim/compact", "/__sim/drop-watches"],
    )
    .await
}

/// kube-sim faults for every request of the three operators matching `verbs` (`""`: any).
fn operator_faults(verbs: &[&str], code: u16, latency_ms: u64) -> Vec<Value> {
    Operator::ALL
        .iter()
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

async fn conflict_409(ctx: &Ctx) -> anyhow::Result<Window> {
    api_faults_during_install(ctx, operator_faults(&WRITES, 409, 0), ctx.t.burst).await
}

async fn throttle_429(ctx: &Ctx) -> anyhow::Result<Window> {
    api_faults_during_install(ctx, operator_faults(&[""], 429, 0), ctx.t.burst).await
}

async fn errors_5xx(ctx: &Ctx) -> anyhow::Result<Window> {
    // The first matching fault's code wins: 500 for writes, 503 for the rest.
    let mut faults = operator_faults(&WRITES, 500, 0);
    faults.extend(operator_faults(&[""], 503, 0));
    api_faults_during_install(ctx, faults, ctx.t.burst).await
}

async fn slow_api(ctx: &Ctx) -> anyhow::Result<Window> {
    let latency = ctx.t.latency.as_millis() as u64;
    api_faults_during_install(ctx, operator_faults(&[""], 0, latency), ctx.t.slow).await
}

/// Injects `faults` into openstack-sim before the install, and lifts them `hold` after both
/// driver operators lead (so their first OpenStack calls fall in the window).
async fn openstack_faults_from_install(
    ctx: &Ctx,
    faults: Vec<Fault>,
    hold: Duration,
    breaks: bool,
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
    Ok(w)
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
    openstack_faults_from_install(ctx, vec![Fault::status(401)], ctx.t.openstack, true).await
}

async fn openstack_503(ctx: &Ctx) -> anyhow::Result<Window> {
    openstack_faults_from_install(ctx, vec![Fault::status(503)], ctx.t.openstack, false).await
}

async fn openstack_timeout(ctx: &Ctx) -> anyhow::Result<Window> {
    let mut w = openstack_faults_from_install(
        ctx,
        vec![Fault::latency(ctx.t.hang)],
        ctx.t.openstack,
        false,
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
    openstack_faults_from_install(ctx, vec![Fault::respond(200, cut)], ctx.t.openstack, false).await
}

async fn openstack_oversized(ctx: &Ctx) -> anyhow::Result<Window> {
    let mut body = String::with_capacity(OVERSIZED + 32);
    body.push_str(r#"{"padding": ""#);
    body.extend(std::iter::repeat_n('x', OVERSIZED));
    body.push_str(r#""}"#);
    openstack_faults_from_install(ctx, vec![Fault::respond(200, body)], ctx.t.openstack, false)
        .await
}

async fn openstack_echo(ctx: &Ctx) -> anyhow::Result<Window> {
    let body = json!({"error": {"code": 401, "title": "Unauthorized", "message": format!(
        "The password {CANARY_PASSWORD} of user admin in domain Default is not valid: \
         {{\"auth\": {{\"identity\": {{\"password\": {{\"user\": {{\"name\": \"admin\", \
         \"password\": \"{CANARY_PASSWORD}\"}}}}}}}}}}"
    )}});
    let fault = Fault::respond(401, body.to_string()).on(SimService::Identity);
    openstack_faults_from_install(ctx, vec![fault], ctx.t.openstack, true).await
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
    c.rotate_credentials(BAD_PASSWORD).await?;
    tokio::time::sleep(ctx.t.bad_credentials).await;
    c.rotate_credentials(CANARY_PASSWORD).await?;
    let end = Instant::now();
    let mut w = Window::new(start, end);
    w.refused = Some((start, end));
    w.notes.push(openstack_requests(c));
    Ok(w)
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
    c.wait_first_write(Operator::Cinder, ctx.t.start_limit)
        .await?;
    tokio::time::sleep(NODE_LIFETIME).await;
    nodes
        .delete(name, &DeleteParams::default())
        .await
        .context("cannot remove the Node")?;
    Ok(Window::new(start, Instant::now()))
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
    Ok(w)
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
    Ok(w)
}
