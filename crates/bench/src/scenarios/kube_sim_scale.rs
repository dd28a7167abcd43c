//! Scenario `kube-sim-scale`: how fast and how big the emulator is with a cluster's worth of
//! objects. kube-sim must never be the bottleneck of an operator benchmark, so this measures
//! write and read throughput, list latency, watch delivery latency and the emulator's resident
//! memory, with the emulator in its own process and kube-rs clients over loopback.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::TryStreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use tokio::sync::mpsc;

use super::Options;
use crate::measure::{
    self, CpuProbe, CpuUse, Memory, Phase, mib, ms, percentile, rate, run_bounded,
};
use crate::report::{Section, Table};
use crate::sim_process::SimProcess;

pub const NAME: &str = "kube-sim-scale";

/// Requests in flight at once, about what a few busy controllers would have.
const CONCURRENCY: usize = 32;
const PAGE: u32 = 500;
/// A bound on any one phase, so a stuck emulator fails the run instead of hanging it.
const PHASE_LIMIT: Duration = Duration::from_secs(600);
/// How long a write may take to reach every watcher before the run fails.
const DELIVERY_LIMIT: Duration = Duration::from_secs(10);
const WATCH_TARGET: &str = "watch-target";

#[derive(Debug, Clone, Copy)]
struct Scale {
    namespaces: usize,
    nodes: usize,
    secrets: usize,
    config_maps: usize,
    gets: usize,
    list_rounds: usize,
    watchers: usize,
    watched_writes: usize,
}

impl Scale {
    fn new(quick: bool) -> Self {
        let full = Scale {
            namespaces: 100,
            nodes: 1_000,
            secrets: 10_000,
            config_maps: 10_000,
            gets: 20_000,
            list_rounds: 5,
            watchers: 50,
            watched_writes: 200,
        };
        if !quick {
            return full;
        }
        Scale {
            namespaces: full.namespaces / 10,
            nodes: full.nodes / 10,
            secrets: full.secrets / 10,
            config_maps: full.config_maps / 10,
            gets: full.gets / 10,
            list_rounds: 2,
            watchers: full.watchers,
            watched_writes: full.watched_writes / 10,
        }
    }
}

/// A row of the throughput table.
struct Throughput {
    label: String,
    phase: Phase,
    cpu: CpuUse,
}

struct ListFigures {
    label: String,
    objects: usize,
    requests_per_list: usize,
    /// Wall time of each complete list (all pages).
    durations: Vec<Duration>,
    cpu: CpuUse,
}

struct WatchFigures {
    /// From sending a write to its event having reached every watcher.
    all_delivered: Vec<Duration>,
    /// From sending a write to its response.
    acknowledged: Vec<Duration>,
}

pub async fn run(options: Options) -> anyhow::Result<Section> {
    let scale = Scale::new(options.quick);
    let sim = SimProcess::start()?;
    eprintln!("kube-sim (pid {}) serving at {}", sim.pid(), sim.url());
    let client = sim.client().await?;
    let idle = sim.memory()?;

    create_namespaces(&client, scale).await?;
    let mut throughput = Vec::new();
    throughput.push(create_nodes(&client, &sim, scale).await?);
    throughput.push(create_secrets(&client, &sim, scale).await?);
    throughput.push(create_config_maps(&client, &sim, scale).await?);
    let loaded = sim.memory()?;

    let lists = vec![
        list_all::<Secret>(
            &client,
            &sim,
            "Secrets",
            Some(PAGE),
            scale.secrets,
            scale.list_rounds,
        )
        .await?,
        list_all::<Secret>(
            &client,
            &sim,
            "Secrets",
            None,
            scale.secrets,
            scale.list_rounds,
        )
        .await?,
        list_all::<ConfigMap>(
            &client,
            &sim,
            "ConfigMaps",
            Some(PAGE),
            scale.config_maps,
            scale.list_rounds,
        )
        .await?,
        list_all::<ConfigMap>(
            &client,
            &sim,
            "ConfigMaps",
            None,
            scale.config_maps,
            scale.list_rounds,
        )
        .await?,
    ];
    throughput.push(get_by_name(&client, &sim, scale).await?);
    let watch = watch_delivery(&client, scale).await?;
    let end = sim.memory()?;
    drop(sim);

    Ok(section(
        scale,
        &throughput,
        &lists,
        &watch,
        idle,
        loaded,
        end,
    ))
}

fn labels(app: &str) -> Option<BTreeMap<String, String>> {
    Some(BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), app.to_string()),
        ("bench".to_string(), NAME.to_string()),
    ]))
}

fn namespace_of(i: usize, scale: Scale) -> String {
    format!("bench-{}", i % scale.namespaces)
}

/// About 1 KiB of printable filler, like a CA bundle or a small config file.
fn filler(i: usize) -> String {
    let line = format!("{i:08}-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n");
    line.repeat(1024 / line.len() + 1)
}

async fn create_namespaces(client: &Client, scale: Scale) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    run_bounded(scale.namespaces, CONCURRENCY, PHASE_LIMIT, |i| {
        let api = api.clone();
        async move {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(format!("bench-{i}")),
                    labels: labels("bench"),
                    ..Default::default()
                },
                ..Default::default()
            };
            api.create(&PostParams::default(), &ns)
                .await
                .with_context(|| format!("creating namespace bench-{i}"))?;
            Ok(())
        }
    })
    .await?;
    Ok(())
}

async fn measured<F, Fut>(
    label: String,
    sim: &SimProcess,
    count: usize,
    make: F,
) -> anyhow::Result<Throughput>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    eprintln!("  {label}: {count} requests");
    let probe = CpuProbe::start(sim.pid())?;
    let phase = run_bounded(count, CONCURRENCY, PHASE_LIMIT, make)
        .await
        .with_context(|| label.clone())?;
    Ok(Throughput {
        label,
        phase,
        cpu: probe.finish()?,
    })
}

async fn create_nodes(
    client: &Client,
    sim: &SimProcess,
    scale: Scale,
) -> anyhow::Result<Throughput> {
    let api: Api<Node> = Api::all(client.clone());
    measured("create Nodes".into(), sim, scale.nodes, |i| {
        let api = api.clone();
        async move {
            let name = format!("node-{i}");
            let mut node_labels = labels("node").unwrap_or_default();
            node_labels.insert("kubernetes.io/hostname".into(), name.clone());
            node_labels.insert("topology.kubernetes.io/zone".into(), format!("zone-{}", i % 3));
            let node: Node = serde_json::from_value(serde_json::json!({
                "metadata": { "name": name, "labels": node_labels },
                "spec": { "providerID": format!("openstack:///{i:08x}-0000-4000-8000-000000000000") },
            }))?;
            api.create(&PostParams::default(), &node).await.with_context(|| format!("creating node {name}"))?;
            Ok(())
        }
    })
    .await
}

async fn create_secrets(
    client: &Client,
    sim: &SimProcess,
    scale: Scale,
) -> anyhow::Result<Throughput> {
    measured("create Secrets".into(), sim, scale.secrets, |i| {
        let api: Api<Secret> = Api::namespaced(client.clone(), &namespace_of(i, scale));
        async move {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(format!("secret-{i}")),
                    labels: labels("secret"),
                    ..Default::default()
                },
                type_: Some("Opaque".into()),
                data: Some(BTreeMap::from([
                    (
                        "username".to_string(),
                        ByteString(format!("user-{i}").into_bytes()),
                    ),
                    (
                        "password".to_string(),
                        ByteString(format!("{i:032x}").into_bytes()),
                    ),
                    ("ca.crt".to_string(), ByteString(filler(i).into_bytes())),
                ])),
                ..Default::default()
            };
            api.create(&PostParams::default(), &secret)
                .await
                .with_context(|| format!("creating secret-{i}"))?;
            Ok(())
        }
    })
    .await
}

async fn create_config_maps(
    client: &Client,
    sim: &SimProcess,
    scale: Scale,
) -> anyhow::Result<Throughput> {
    measured("create ConfigMaps".into(), sim, scale.config_maps, |i| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace_of(i, scale));
        async move {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("config-{i}")),
                    labels: labels("config"),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([
                    ("config.yaml".to_string(), filler(i)),
                    ("index".to_string(), i.to_string()),
                ])),
                ..Default::default()
            };
            api.create(&PostParams::default(), &cm)
                .await
                .with_context(|| format!("creating config-{i}"))?;
            Ok(())
        }
    })
    .await
}

async fn get_by_name(
    client: &Client,
    sim: &SimProcess,
    scale: Scale,
) -> anyhow::Result<Throughput> {
    measured("get by name".into(), sim, scale.gets, |i| {
        let client = client.clone();
        // Alternates kinds and walks every object once before repeating any.
        let n = i / 2;
        async move {
            if i % 2 == 0 {
                let j = n % scale.secrets;
                Api::<Secret>::namespaced(client, &namespace_of(j, scale))
                    .get(&format!("secret-{j}"))
                    .await
                    .with_context(|| format!("getting secret-{j}"))?;
            } else {
                let j = n % scale.config_maps;
                Api::<ConfigMap>::namespaced(client, &namespace_of(j, scale))
                    .get(&format!("config-{j}"))
                    .await
                    .with_context(|| format!("getting config-{j}"))?;
            }
            Ok(())
        }
    })
    .await
}

/// Lists every object of a kind cluster-wide, `rounds` times, one list at a time so each
/// duration is the latency a lone informer would see.
async fn list_all<K>(
    client: &Client,
    sim: &SimProcess,
    kind: &str,
    page: Option<u32>,
    expected: usize,
    rounds: usize,
) -> anyhow::Result<ListFigures>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + k8s_openapi::serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let label = match page {
        Some(limit) => format!("{kind}, paged (limit {limit})"),
        None => format!("{kind}, unpaged"),
    };
    eprintln!("  list {label}: {rounds} rounds");
    let api: Api<K> = Api::all(client.clone());
    let mut durations = Vec::new();
    let mut objects = 0;
    let mut requests = 0;
    let probe = CpuProbe::start(sim.pid())?;
    for _ in 0..rounds {
        let start = Instant::now();
        let (count, pages) = tokio::time::timeout(PHASE_LIMIT, list_once(&api, page))
            .await
            .with_context(|| format!("listing {label} timed out"))??;
        durations.push(start.elapsed());
        // Namespaces may hold objects of their own (kube-root-ca.crt), so only a shortfall is wrong.
        anyhow::ensure!(
            count >= expected,
            "listing {label} returned {count} objects, expected at least {expected}"
        );
        objects = count;
        requests = pages;
    }
    Ok(ListFigures {
        label,
        objects,
        requests_per_list: requests,
        durations,
        cpu: probe.finish()?,
    })
}

async fn list_once<K>(api: &Api<K>, page: Option<u32>) -> anyhow::Result<(usize, usize)>
where
    K: kube::Resource + Clone + std::fmt::Debug + k8s_openapi::serde::de::DeserializeOwned,
{
    let mut params = ListParams::default();
    if let Some(limit) = page {
        params = params.limit(limit);
    }
    let (mut count, mut pages) = (0, 0);
    loop {
        let list = api.list(&params).await?;
        pages += 1;
        count += list.items.len();
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) if page.is_some() => params = params.continue_token(&token),
            _ => return Ok((count, pages)),
        }
    }
}

/// Opens `watchers` cluster-wide ConfigMap watches, then updates one ConfigMap again and again,
/// each time waiting until every watcher has seen the update, so latencies never overlap.
async fn watch_delivery(client: &Client, scale: Scale) -> anyhow::Result<WatchFigures> {
    eprintln!(
        "  watch: {} watchers, {} writes",
        scale.watchers, scale.watched_writes
    );
    let target_ns = namespace_of(0, scale);
    let target: Api<ConfigMap> = Api::namespaced(client.clone(), &target_ns);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(WATCH_TARGET.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("seq".to_string(), "start".to_string())])),
        ..Default::default()
    };
    let created = target
        .create(&PostParams::default(), &cm)
        .await
        .context("creating the watched ConfigMap")?;
    let version = created
        .metadata
        .resource_version
        .context("created ConfigMap has no resourceVersion")?;

    let all: Api<ConfigMap> = Api::all(client.clone());
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Instant)>();
    let mut tasks = Vec::new();
    let result = async {
        for w in 0..scale.watchers {
            // Starting at the target's version means no replay of the 10,000 existing objects.
            let stream = all
                .watch(&WatchParams::default().timeout(290), &version)
                .await
                .with_context(|| format!("opening watch {w}"))?;
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while let Ok(Some(event)) = stream.try_next().await {
                    if let WatchEvent::Modified(cm) = event
                        && cm.metadata.name.as_deref() == Some(WATCH_TARGET)
                        && let Some(seq) = cm
                            .data
                            .as_ref()
                            .and_then(|d| d.get("seq"))
                            .and_then(|s| s.parse().ok())
                        && tx.send((seq, Instant::now())).is_err()
                    {
                        break;
                    }
                }
            }));
        }
        let patch =
            |seq: usize| Patch::Merge(serde_json::json!({ "data": { "seq": seq.to_string() } }));
        // Write 0 warms every connection up and proves all watches are live; it is not counted.
        let (mut all_delivered, mut acknowledged) = (Vec::new(), Vec::new());
        for seq in 0..=scale.watched_writes {
            let sent = Instant::now();
            target
                .patch(WATCH_TARGET, &PatchParams::default(), &patch(seq))
                .await
                .with_context(|| format!("updating {WATCH_TARGET} ({seq})"))?;
            let ack = sent.elapsed();
            let mut seen = 0;
            let mut last = sent;
            let deadline = tokio::time::Instant::now() + DELIVERY_LIMIT;
            while seen < scale.watchers {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some((s, at))) if s == seq => {
                        seen += 1;
                        last = last.max(at);
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => anyhow::bail!("every watch ended"),
                    Err(_) => anyhow::bail!(
                        "write {seq} reached {seen} of {} watchers within {DELIVERY_LIMIT:?}",
                        scale.watchers
                    ),
                }
            }
            if seq > 0 {
                all_delivered.push(last - sent);
                acknowledged.push(ack);
            }
        }
        Ok(WatchFigures {
            all_delivered,
            acknowledged,
        })
    }
    .await;
    for task in &tasks {
        task.abort();
    }
    result
}

fn section(
    scale: Scale,
    throughput: &[Throughput],
    lists: &[ListFigures],
    watch: &WatchFigures,
    idle: Memory,
    loaded: Memory,
    end: Memory,
) -> Section {
    let mut table = Table::new(
        "Throughput (32 requests in flight)",
        &[
            "Phase",
            "Requests",
            "Wall s",
            "Req/s",
            "p50 ms",
            "p99 ms",
            "kube-sim CPU %",
            "client CPU %",
        ],
    );
    let row = |label: &str, phase: &Phase, cpu: Option<CpuUse>| {
        vec![
            label.to_string(),
            phase.latencies.len().to_string(),
            format!("{:.2}", phase.wall.as_secs_f64()),
            rate(phase.per_second()),
            ms(percentile(&phase.latencies, 50.0)),
            ms(percentile(&phase.latencies, 99.0)),
            cpu.map_or("-".into(), |c| format!("{:.0}", c.sim_percent)),
            cpu.map_or("-".into(), |c| format!("{:.0}", c.client_percent)),
        ]
    };
    let writes: Vec<&Throughput> = throughput
        .iter()
        .filter(|t| t.label.starts_with("create"))
        .collect();
    for t in throughput {
        table.row(row(&t.label, &t.phase, Some(t.cpu)));
        if t.label == "create ConfigMaps" {
            let all = Phase {
                wall: writes.iter().map(|t| t.phase.wall).sum(),
                latencies: writes
                    .iter()
                    .flat_map(|t| t.phase.latencies.iter().copied())
                    .collect(),
            };
            table.row(row("all writes", &all, None));
        }
    }

    let mut list_table = Table::new(
        "Cluster-wide lists (one at a time)",
        &[
            "List",
            "Objects",
            "Requests",
            "p50 ms",
            "max ms",
            "Objects/s",
            "Req/s",
            "kube-sim CPU %",
            "client CPU %",
        ],
    );
    for l in lists {
        let p50 = percentile(&l.durations, 50.0);
        list_table.row(vec![
            l.label.clone(),
            l.objects.to_string(),
            l.requests_per_list.to_string(),
            ms(p50),
            ms(percentile(&l.durations, 100.0)),
            rate(measure::per_second(l.objects, p50)),
            rate(measure::per_second(l.requests_per_list, p50)),
            format!("{:.0}", l.cpu.sim_percent),
            format!("{:.0}", l.cpu.client_percent),
        ]);
    }

    let mut watch_table = Table::new(
        &format!(
            "Watch delivery ({} cluster-wide ConfigMap watches)",
            scale.watchers
        ),
        &["Measure", "Writes", "p50 ms", "p99 ms", "max ms"],
    );
    let summary = |label: &str, samples: &[Duration]| {
        vec![
            label.to_string(),
            samples.len().to_string(),
            ms(percentile(samples, 50.0)),
            ms(percentile(samples, 99.0)),
            ms(percentile(samples, 100.0)),
        ]
    };
    watch_table.row(summary(
        "write sent to seen by all watchers",
        &watch.all_delivered,
    ));
    watch_table.row(summary("write sent to response", &watch.acknowledged));

    let mut memory_table = Table::new(
        "kube-sim resident memory",
        &["When", "VmRSS MiB", "VmHWM MiB"],
    );
    memory_table.row(vec![
        "started, empty".into(),
        mib(idle.rss_kib),
        mib(idle.hwm_kib),
    ]);
    memory_table.row(vec![
        "after all writes".into(),
        mib(loaded.rss_kib),
        mib(loaded.hwm_kib),
    ]);
    memory_table.row(vec![
        "after lists, gets and watches".into(),
        mib(end.rss_kib),
        mib(end.hwm_kib),
    ]);
    let objects = scale.nodes + scale.secrets + scale.config_maps;
    let per_object = loaded.rss_kib.saturating_sub(idle.rss_kib) as f64 / objects.max(1) as f64;
    memory_table.row(vec![
        "growth per stored object (KiB)".into(),
        format!("{per_object:.2}"),
        "-".into(),
    ]);

    let setup = format!(
        "kube-sim runs as its own process (`csi-operator sim --no-workloads`, HTTP on loopback); a \
         kube-rs client in the `bench` process drives it with at most {CONCURRENCY} requests in \
         flight. It creates {} Namespaces (untimed), then {} Nodes, {} Secrets and {} ConfigMaps \
         spread over the namespaces (each Secret and ConfigMap carries about 1 KiB of data); lists \
         all Secrets and all ConfigMaps cluster-wide {} times, paged and unpaged; gets {} objects \
         by name; then opens {} cluster-wide ConfigMap watches and updates one ConfigMap {} times, \
         waiting each time until every watcher has the event. Memory is VmRSS and VmHWM of the \
         emulator process from `/proc/<pid>/status`.\n",
        scale.namespaces,
        scale.nodes,
        scale.secrets,
        scale.config_maps,
        scale.list_rounds,
        scale.gets,
        scale.watchers,
        scale.watched_writes
    );
    Section {
        name: NAME,
        title: "kube-sim at scale".into(),
        setup,
        tables: vec![table, list_table, watch_table, memory_table],
        notes: vec![
            "CPU % is of one core over the phase; client and emulator share the machine's cores, so when the client is near its limit the rates say more about the client than about kube-sim.".into(),
            "Memory includes kube-sim's request log, which records every request (for counting an operator's writes) and so grows with the run.".into(),
            "\"all writes\" sums the three create phases (Namespaces excluded).".into(),
        ],
    }
}
