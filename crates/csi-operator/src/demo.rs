//! `csi-operator demo`: the whole Cinder operator stack on one machine, with no cluster.
//!
//! It starts kube-sim and openstack-sim in-process, seeded as an OpenShift-on-OpenStack cluster
//! (the `testbed` crate), runs the Cinder operator against them in-process, prints each step
//! condition as it changes while the install converges (plain lines on stderr, readable in a
//! terminal and in CI logs), then a summary on stdout (what the operator created, the
//! ClusterCSIDriver's conditions, `enable_topology`, the time it took), and keeps the cluster up
//! for kubectl until Ctrl-C or SIGTERM. `--exit-when-ready` turns it into a check for CI.
//!
//! This is emulator-side code: the operator itself runs exactly as `openstack-cinder start`
//! runs it. The demo reads kube-sim's state and request log directly (not through the API), so
//! what it watches adds nothing to the request log a user inspects.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use cinder::operator::{self, Operator, Options};
use kube_sim::resources::GroupResource;
use kube_sim::{KubeSim, RequestRecord};
use operator_kit::leader_timing::LeaderTiming;
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use operator_kit::process::{self, ProcessOptions};
use operator_kit::runtime::LoopOptions;
use serde_json::Value;
use testbed::{Settings, Testbed};

use crate::sim::parse_duration;

/// The user the operator authenticates as (kube-sim records it in the request log).
const OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
/// The user of the kubeconfig written for kubectl.
const KUBECTL_USER: &str = "admin";
/// How often the live view looks at kube-sim's state.
const POLL: Duration = Duration::from_millis(50);

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Address kube-sim serves kubectl on; if the port is taken, a free port on the same IP is
    /// used instead (port 0 always picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write the kubeconfig for kubectl.
    #[arg(long, default_value = "kube-sim.kubeconfig")]
    kubeconfig: PathBuf,
    /// Exit once the install has converged (status 0), or with an error and the conditions if
    /// it has not within --timeout; for CI.
    #[arg(long)]
    exit_when_ready: bool,
    /// How long the install may take to converge, e.g. `60s`, `2m`.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    timeout: Duration,
}

/// One condition of the ClusterCSIDriver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// One object the operator created.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CreatedObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

pub async fn run(
    args: DemoArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // The operator logs only when asked (RUST_LOG): its lines would bury the live view.
    let log = if std::env::var_os("RUST_LOG").is_some() {
        LogControl::init(2)
    } else {
        LogControl::detached()
    };
    let mut shutdown = std::pin::pin!(shutdown);

    let seeding = Instant::now();
    // A taken port falls back to a free one on the same IP, so a second demo (or a running
    // `csi-operator sim`) does not stop this one.
    let (bed, fell_back) =
        match Testbed::start(Settings {
            kube_listen: args.listen,
            ..Settings::default()
        })
        .await
        {
            Ok(bed) => (bed, false),
            Err(testbed::TestbedError::Start { source, .. })
                if source.kind() == std::io::ErrorKind::AddrInUse =>
            {
                let any = SocketAddr::new(args.listen.ip(), 0);
                let bed = Testbed::start(Settings {
                    kube_listen: any,
                    ..Settings::default()
                })
                .await
                .context("cannot start the emulated cluster")?;
                (bed, true)
            }
            Err(e) => return Err(e).with_context(|| {
                format!(
                    "cannot start the emulated cluster on {}; choose another address with --listen",
                    args.listen
                )
            }),
        };
    let front = bed.kube.addr();
    let url = format!("http://{front}");
    std::fs::write(
        &args.kubeconfig,
        kube_sim::kubeconfig::render(&url, KUBECTL_USER, None),
    )
    .with_context(|| {
        format!(
            "cannot write the kubeconfig to {}; choose another path with --kubeconfig",
            args.kubeconfig.display()
        )
    })?;
    let kubeconfig = absolute(&args.kubeconfig);
    if fell_back {
        eprintln!(
            "demo: {} is taken; serving kube-sim on {front} instead",
            args.listen
        );
    }
    eprintln!(
        "demo: kube-sim at {url} (kubeconfig {}), openstack-sim at {}",
        kubeconfig.display(),
        bed.openstack.url()
    );
    eprintln!(
        "demo: seeded in {} ms: 3 control-plane and 3 worker Nodes, Infrastructure, Proxy, \
         APIServer, cloud config, credentials, ClusterCSIDriver {}",
        seeding.elapsed().as_millis(),
        cinder::CSI_DRIVER_NAME
    );

    let before = object_uids(&bed.kube);
    let started = Instant::now();
    let (stop, operator_task) = start_operator(&bed, log).await?;
    eprintln!("demo: Cinder operator started (identity demo); step conditions as they change:");

    let mut seen: BTreeMap<String, Condition> = BTreeMap::new();
    let mut created_shown = 0;
    let mut converged_after: Option<Duration> = None;
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut timed_out = false;
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut shutdown => {
                eprintln!("demo: stopping");
                stop_operator(stop, operator_task).await;
                return Ok(());
            }
            _ = ticker.tick() => {}
        }
        if operator_task.is_finished() {
            let outcome = operator_task.await;
            anyhow::bail!("the Cinder operator stopped: {}", describe_exit(outcome));
        }
        let now = cr_conditions(&bed.kube);
        let changes = changed(&seen, &now);
        // Until the install converges, objects appearing are progress worth a line too (the
        // first status write may come only after most of them exist). Not after a timeout: an
        // install stuck for hours must not copy the request log every tick.
        let installing = converged_after.is_none() && !timed_out;
        if !changes.is_empty() || installing {
            let created = operator_creates(&bed.kube.requests());
            let ms = started.elapsed().as_millis();
            for (t, c) in &changes {
                eprintln!("{}", progress_line(ms, created, t, c));
            }
            if changes.is_empty() && created != created_shown {
                eprintln!("{ms:>7} ms  {created:>3} created");
            }
            created_shown = created;
        }
        seen = now;
        if converged_after.is_none() && converged(&seen) {
            let took = started.elapsed();
            converged_after = Some(took);
            print!(
                "{}",
                summary(
                    &bed.kube,
                    &before,
                    &seen,
                    took,
                    &kubeconfig,
                    args.exit_when_ready
                )
            );
            if args.exit_when_ready {
                stop_operator(stop, operator_task).await;
                return Ok(());
            }
            eprintln!("demo: press Ctrl-C to stop; condition changes keep being printed");
        }
        if converged_after.is_none() && !timed_out && tokio::time::Instant::now() >= deadline {
            timed_out = true;
            eprint!("{}", not_converged(args.timeout, &seen));
            if args.exit_when_ready {
                stop_operator(stop, operator_task).await;
                anyhow::bail!(
                    "the install did not converge within {:?} (conditions above)",
                    args.timeout
                );
            }
            eprintln!(
                "demo: keeping the cluster up to look around: kubectl --kubeconfig {} get \
                 clustercsidriver {} -o yaml; press Ctrl-C to stop",
                kubeconfig.display(),
                cinder::CSI_DRIVER_NAME
            );
        }
    }
}

type OperatorTask = tokio::task::JoinHandle<Result<(), process::ProcessError>>;

/// Runs the Cinder operator in-process as its pod would run it, with a short resync so that a
/// change made with kubectl shows up quickly even where no watch covers it.
async fn start_operator(
    bed: &Testbed,
    log: LogControl,
) -> anyhow::Result<(tokio::sync::oneshot::Sender<()>, OperatorTask)> {
    let client = testbed::client_for(&bed.kube, OPERATOR_USER)
        .await
        .context("cannot build the operator's client")?;
    let mut images = testbed::example_images();
    // Images set in the environment win, as they do for `openstack-cinder start`.
    images.extend(operator::images_from_env());
    let opts = Options {
        namespace: testbed::DRIVER_NAMESPACE.into(),
        images,
        topology_refresh: Duration::from_secs(600),
        cluster_id: None,
    };
    let cache = operator::watches(client.clone(), &opts)
        .context("cannot prepare the operator's watches")?
        .start();
    let metrics = Metrics::new("openstack_cinder_csi_driver_operator");
    let op = Operator::new(client.clone(), opts, cache.clone(), metrics.clone(), log);
    let options = ProcessOptions {
        namespace: testbed::DRIVER_NAMESPACE.into(),
        lock_name: cinder::OPERATOR_LOCK_NAME.into(),
        identity: "demo".into(),
        timing: LeaderTiming::DEFAULT,
        metrics_addr: None,
        loop_options: LoopOptions {
            resync: Duration::from_secs(5),
            ..LoopOptions::default()
        },
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(process::run(
        client,
        options,
        cache,
        metrics,
        op,
        async move {
            let _ = rx.await;
        },
    ));
    Ok((tx, task))
}

/// Stops the operator and waits (briefly) for it to release its lease.
async fn stop_operator(stop: tokio::sync::oneshot::Sender<()>, task: OperatorTask) {
    let _ = stop.send(());
    if tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .is_err()
    {
        eprintln!("demo: the operator did not stop within 5s; exiting anyway");
    }
}

fn describe_exit(
    outcome: Result<Result<(), process::ProcessError>, tokio::task::JoinError>,
) -> String {
    match outcome {
        Ok(Ok(())) => "it exited".into(),
        Ok(Err(e)) => e.to_string(),
        Err(e) => format!("it crashed: {e}"),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The uids of every object in kube-sim, to tell afterwards what is new.
fn object_uids(sim: &KubeSim) -> HashSet<String> {
    let cluster = sim.cluster();
    let store = &cluster.store;
    let collections: Vec<GroupResource> = store.collections().cloned().collect();
    collections
        .iter()
        .flat_map(|gr| store.iter(gr, None, None))
        .filter_map(|(_, obj)| uid(obj).map(str::to_string))
        .collect()
}

fn uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

/// The ClusterCSIDriver's conditions, read from kube-sim's store.
fn cr_conditions(sim: &KubeSim) -> BTreeMap<String, Condition> {
    let gr = GroupResource::new("operator.openshift.io", "clustercsidrivers");
    let obj = sim.cluster().store.get(&gr, "", cinder::CSI_DRIVER_NAME);
    obj.map(|o| conditions_of(&o)).unwrap_or_default()
}

/// `status.conditions` of an operator CR, by type. Entries without a type are skipped.
pub fn conditions_of(obj: &Value) -> BTreeMap<String, Condition> {
    let Some(list) = obj.pointer("/status/conditions").and_then(Value::as_array) else {
        return BTreeMap::new();
    };
    list.iter()
        .filter_map(|c| {
            let s = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let t = s("type");
            (!t.is_empty()).then(|| {
                (
                    t,
                    Condition {
                        status: s("status"),
                        reason: s("reason"),
                        message: s("message"),
                    },
                )
            })
        })
        .collect()
}

/// Conditions that are new or whose status or reason changed (a new message alone is noise).
pub fn changed<'a>(
    before: &BTreeMap<String, Condition>,
    now: &'a BTreeMap<String, Condition>,
) -> Vec<(&'a str, &'a Condition)> {
    now.iter()
        .filter(|(t, c)| {
            before
                .get(*t)
                .is_none_or(|b| b.status != c.status || b.reason != c.reason)
        })
        .map(|(t, c)| (t.as_str(), c))
        .collect()
}

/// Whether the condition is in the state a healthy operator reports.
fn healthy(kind: &str, c: &Condition) -> bool {
    if kind.ends_with("Degraded") || kind.ends_with("Progressing") {
        c.status == "False"
    } else if kind.ends_with("Available") || kind.ends_with("Upgradeable") {
        c.status == "True"
    } else {
        true
    }
}

/// Installed: the controller Deployment and the node DaemonSet are available, every other step
/// reports available, and nothing is degraded or still progressing.
pub fn converged(conditions: &BTreeMap<String, Condition>) -> bool {
    let prefix = operator::condition_prefix();
    let required = [
        format!("{prefix}DriverControllerServiceControllerAvailable"),
        format!("{prefix}DriverNodeServiceControllerAvailable"),
    ];
    required.iter().all(|t| conditions.contains_key(t))
        && conditions.iter().all(|(t, c)| healthy(t, c))
}

/// One line of the live view: elapsed ms, objects created so far, the condition.
pub fn progress_line(ms: u128, created: usize, kind: &str, c: &Condition) -> String {
    let mut line = format!(
        "{ms:>7} ms  {created:>3} created  {kind} = {} ({})",
        c.status, c.reason
    );
    if !healthy(kind, c) && !c.message.is_empty() {
        line.push_str(": ");
        line.push_str(&c.message);
    }
    line
}

/// Whether a request log entry is the operator successfully creating an operand (its Events
/// are bookkeeping, not objects it installs).
fn is_operator_create(r: &RequestRecord) -> bool {
    r.user == OPERATOR_USER
        && r.verb == "create"
        && (200..300).contains(&r.code)
        && r.subresource.is_empty()
        && !is_events(&r.resource)
}

fn is_events(resource: &str) -> bool {
    resource == "/events" || resource == "events.k8s.io/events"
}

/// How many objects the operator has created so far.
pub fn operator_creates(log: &[RequestRecord]) -> usize {
    log.iter().filter(|r| is_operator_create(r)).count()
}

/// The objects the operator created: those absent before it started, in the collections its
/// request log shows it created objects in.
fn created_objects(sim: &KubeSim, before: &HashSet<String>) -> Vec<CreatedObject> {
    let touched: BTreeSet<String> = sim
        .requests()
        .iter()
        .filter(|r| is_operator_create(r))
        .map(|r| r.resource.clone())
        .collect();
    let cluster = sim.cluster();
    let store = &cluster.store;
    let collections: Vec<GroupResource> = store
        .collections()
        .filter(|gr| touched.contains(&format!("{}/{}", gr.group, gr.resource)))
        .cloned()
        .collect();
    let mut out: Vec<CreatedObject> = collections
        .iter()
        .flat_map(|gr| {
            store
                .iter(gr, None, None)
                .filter(|(_, obj)| uid(obj).is_some_and(|u| !before.contains(u)))
                .map(move |((ns, name), obj)| CreatedObject {
                    kind: obj
                        .get("kind")
                        .and_then(Value::as_str)
                        .map_or_else(|| gr.qualified(), str::to_string),
                    namespace: ns.clone(),
                    name: name.clone(),
                })
        })
        .collect();
    out.sort();
    out
}

/// `enable_topology` as the operator published it in `cloud-conf`.
fn enable_topology(sim: &KubeSim) -> Option<String> {
    let gr = GroupResource::new("", "configmaps");
    let cm =
        sim.cluster()
            .store
            .get(&gr, testbed::DRIVER_NAMESPACE, cinder::CLOUD_CONF_CONFIGMAP)?;
    cm.pointer(&format!("/data/{}", cinder::config::ENABLE_TOPOLOGY_KEY))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Left-aligned columns separated by two spaces, as kubectl prints tables.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.len());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut s = String::from("  ");
        for (i, cell) in cells.into_iter().enumerate() {
            if i == last {
                s.push_str(cell);
            } else {
                let w = widths.get(i).copied().unwrap_or(0);
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn conditions_table(conditions: &BTreeMap<String, Condition>) -> String {
    let rows: Vec<Vec<String>> = conditions
        .iter()
        .map(|(t, c)| {
            vec![
                t.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            ]
        })
        .collect();
    table(&["TYPE", "STATUS", "REASON", "MESSAGE"], &rows)
}

fn summary(
    sim: &KubeSim,
    before: &HashSet<String>,
    conditions: &BTreeMap<String, Condition>,
    took: Duration,
    kubeconfig: &Path,
    exiting: bool,
) -> String {
    let created = created_objects(sim, before);
    let rows: Vec<Vec<String>> = created
        .iter()
        .map(|o| {
            let ns = if o.namespace.is_empty() {
                "-"
            } else {
                &o.namespace
            };
            vec![o.kind.clone(), ns.to_string(), o.name.clone()]
        })
        .collect();
    let mut out = format!(
        "\nConverged in {} ms: the Cinder CSI driver is installed.\n\n",
        took.as_millis()
    );
    out.push_str(&format!(
        "Created by the operator ({} objects):\n",
        created.len()
    ));
    out.push_str(&table(&["KIND", "NAMESPACE", "NAME"], &rows));
    out.push_str(&format!(
        "\nClusterCSIDriver {} conditions:\n",
        cinder::CSI_DRIVER_NAME
    ));
    out.push_str(&conditions_table(conditions));
    out.push_str(&format!(
        "\nenable_topology (ConfigMap {}/{}): {}\n",
        testbed::DRIVER_NAMESPACE,
        cinder::CLOUD_CONF_CONFIGMAP,
        enable_topology(sim).unwrap_or_else(|| "(not set)".into())
    ));
    if !exiting {
        out.push_str(&format!(
            "\nThe cluster stays up. Try:\n  kubectl --kubeconfig {} get clustercsidriver {} -o yaml\n  kubectl --kubeconfig {} get clustercsidriver,deploy,ds -A\n",
            kubeconfig.display(),
            cinder::CSI_DRIVER_NAME,
            kubeconfig.display()
        ));
    }
    out
}

fn not_converged(timeout: Duration, conditions: &BTreeMap<String, Condition>) -> String {
    let mut out = format!(
        "\ndemo: the install has not converged after {timeout:?}. ClusterCSIDriver {} conditions:\n",
        cinder::CSI_DRIVER_NAME
    );
    if conditions.is_empty() {
        out.push_str("  (none reported yet)\n");
    } else {
        out.push_str(&conditions_table(conditions));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(status: &str, reason: &str) -> Condition {
        Condition {
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
        }
    }

    fn healthy_set() -> BTreeMap<String, Condition> {
        BTreeMap::from([
            (
                "OpenStackCinderDriverControllerServiceControllerAvailable".to_string(),
                cond("True", "AsExpected"),
            ),
            (
                "OpenStackCinderDriverNodeServiceControllerAvailable".to_string(),
                cond("True", "AsExpected"),
            ),
            (
                "OpenStackCinderDriverControllerServiceControllerProgressing".to_string(),
                cond("False", "AsExpected"),
            ),
            (
                "StorageClassControllerDegraded".to_string(),
                cond("False", "AsExpected"),
            ),
        ])
    }

    #[test]
    fn conditions_are_read_by_type_and_malformed_entries_skipped() {
        let obj = json!({"status": {"conditions": [
            {"type": "ADegraded", "status": "False", "reason": "AsExpected", "message": "m"},
            {"status": "True"},
            {"type": 3},
            "garbage",
        ]}});
        let c = conditions_of(&obj);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c["ADegraded"],
            Condition {
                status: "False".into(),
                reason: "AsExpected".into(),
                message: "m".into()
            }
        );
        assert!(conditions_of(&json!({"status": {"conditions": "x"}})).is_empty());
        assert!(conditions_of(&json!({})).is_empty());
    }

    #[test]
    fn converged_needs_both_workloads_available_and_nothing_unhealthy() {
        assert!(converged(&healthy_set()));

        let mut missing = healthy_set();
        missing.remove("OpenStackCinderDriverNodeServiceControllerAvailable");
        assert!(!converged(&missing), "the DaemonSet must report");

        let mut degraded = healthy_set();
        degraded.insert(
            "StorageClassControllerDegraded".into(),
            cond("True", "SyncError"),
        );
        assert!(!converged(&degraded));

        let mut progressing = healthy_set();
        progressing.insert(
            "OpenStackCinderDriverControllerServiceControllerProgressing".into(),
            cond("True", "Deploying"),
        );
        assert!(!converged(&progressing));

        let mut unavailable = healthy_set();
        unavailable.insert(
            "OpenStackCinderDriverNodeServiceControllerAvailable".into(),
            cond("False", "Deploying"),
        );
        assert!(!converged(&unavailable));
        assert!(!converged(&BTreeMap::new()));
    }

    #[test]
    fn only_new_conditions_and_status_or_reason_flips_are_reported() {
        let before = healthy_set();
        let mut now = before.clone();
        assert!(changed(&before, &now).is_empty());
        if let Some(c) = now.get_mut("StorageClassControllerDegraded") {
            c.message = "new wording".into();
        }
        assert!(changed(&before, &now).is_empty(), "message-only change");
        now.insert(
            "StorageClassControllerDegraded".into(),
            cond("True", "SyncError"),
        );
        now.insert("NewAvailable".into(), cond("True", "AsExpected"));
        let kinds: Vec<&str> = changed(&before, &now).into_iter().map(|(t, _)| t).collect();
        assert_eq!(kinds, ["NewAvailable", "StorageClassControllerDegraded"]);
    }

    #[test]
    fn progress_lines_show_time_count_and_the_message_only_when_unhealthy() {
        let ok = Condition {
            status: "True".into(),
            reason: "AsExpected".into(),
            message: "all good".into(),
        };
        assert_eq!(
            progress_line(42, 7, "XAvailable", &ok),
            "     42 ms    7 created  XAvailable = True (AsExpected)"
        );
        let bad = Condition {
            status: "True".into(),
            reason: "SyncError".into(),
            message: "cannot reach Keystone".into(),
        };
        assert!(
            progress_line(1, 0, "XDegraded", &bad).ends_with(": cannot reach Keystone"),
            "{}",
            progress_line(1, 0, "XDegraded", &bad)
        );
    }

    fn record(user: &str, verb: &str, resource: &str, code: u16) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: "POST".into(),
            path: String::new(),
            query: String::new(),
            user: user.into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            code,
        }
    }

    #[test]
    fn only_the_operators_successful_creates_of_operands_count() {
        let log = vec![
            record(OPERATOR_USER, "create", "apps/deployments", 201),
            record(OPERATOR_USER, "create", "/configmaps", 201),
            record(OPERATOR_USER, "create", "/configmaps", 409),
            record(OPERATOR_USER, "create", "/events", 201),
            record(OPERATOR_USER, "update", "apps/deployments", 200),
            record("admin", "create", "/secrets", 201),
        ];
        assert_eq!(operator_creates(&log), 2);
    }

    #[test]
    fn tables_align_columns_without_trailing_spaces() {
        let t = table(
            &["KIND", "NAME"],
            &[
                vec!["Deployment".into(), "a".into()],
                vec!["CSIDriver".into(), "".into()],
            ],
        );
        assert_eq!(t, "  KIND        NAME\n  Deployment  a\n  CSIDriver\n");
    }

    #[test]
    fn a_timeout_report_lists_the_conditions_or_says_there_are_none() {
        let mut c = healthy_set();
        c.insert(
            "StorageClassControllerDegraded".into(),
            Condition {
                status: "True".into(),
                reason: "SyncError".into(),
                message: "cannot create StorageClass".into(),
            },
        );
        let report = not_converged(Duration::from_secs(60), &c);
        assert!(report.contains("has not converged after 60s"), "{report}");
        assert!(
            report
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == [
                        "StorageClassControllerDegraded",
                        "True",
                        "SyncError",
                        "cannot",
                        "create",
                        "StorageClass"
                    ]),
            "{report}"
        );
        assert!(
            not_converged(Duration::from_secs(1), &BTreeMap::new()).contains("none reported yet")
        );
    }
}
