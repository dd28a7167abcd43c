//! Scenario `image`: what the image ships and how fast it starts. The product binary is built
//! by `hack/build-product.sh` (the Containerfile's build stage: release profile, no emulators)
//! and measured for size, the time to answer `--version`, and the time from exec until a Cinder
//! operator's first API request and until it holds its lease on a testbed cluster.
//!
//! The image itself is the binary plus the distroless `cc` base and the manifests; with no
//! container engine on the benchmark machine only the binary is measured.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use testbed::{Settings, Testbed};

use super::Options;
use crate::measure::{ms, percentile};
use crate::report::{Section, Table};
use crate::sim_process::{locate_binary, product_binary};

pub const NAME: &str = "image";

/// The Cinder operator's service account (the user of its requests in kube-sim's log).
const USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
const START_LIMIT: Duration = Duration::from_secs(60);

fn size_mib(path: &Path) -> anyhow::Result<f64> {
    let bytes = std::fs::metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?
        .len();
    Ok(bytes as f64 / (1024.0 * 1024.0))
}

/// Exec until exit of `bin --version`, `runs` times.
fn version_latencies(bin: &Path, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let status = Command::new(bin)
            .arg("--version")
            .stdout(Stdio::null())
            .status()?;
        samples.push(started.elapsed());
        anyhow::ensure!(status.success(), "{} --version failed", bin.display());
    }
    Ok(samples)
}

/// Exec → first API request, and exec → lease created, of a Cinder operator on `bed`.
async fn start_up(bin: &Path, bed: &Testbed) -> anyhow::Result<(Duration, Duration)> {
    let kubeconfig =
        std::env::temp_dir().join(format!("bench-image-{}.kubeconfig", std::process::id()));
    std::fs::write(&kubeconfig, bed.kube.kubeconfig(USER))?;
    let log = kubeconfig.with_extension("log");
    let log_file = std::fs::File::create(&log)?;
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args(["openstack-cinder", "start", "--kubeconfig"])
        .arg(&kubeconfig)
        .args([
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-insecure-http",
            "--identity",
            "bench-image",
        ])
        .envs(testbed::example_images())
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file))
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let mut first_request = None;
    let outcome = loop {
        if started.elapsed() > START_LIMIT {
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            let seen: Vec<String> = bed
                .kube
                .requests()
                .iter()
                .take(8)
                .map(|r| format!("{} {} {} {} {}", r.user, r.verb, r.resource, r.name, r.code))
                .collect();
            break Err(anyhow::anyhow!(
                "no lease within {START_LIMIT:?}; requests: {seen:?}; the operator wrote:\n{output}"
            ));
        }
        let requests = bed.kube.requests();
        let mine = requests.iter().filter(|r| r.user == USER);
        if first_request.is_none() && mine.clone().next().is_some() {
            first_request = Some(started.elapsed());
        }
        if mine.clone().any(|r| {
            r.resource == "coordination.k8s.io/leases" && r.verb == "create" && r.code < 300
        }) {
            break Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&kubeconfig);
    let _ = std::fs::remove_file(&log);
    let lease = outcome?;
    Ok((first_request.unwrap_or(lease), lease))
}

pub async fn run(options: Options) -> anyhow::Result<Section> {
    let product = product_binary()?;
    let lab = locate_binary()?;
    let runs = if options.quick { 5 } else { 50 };
    let version = version_latencies(&product, runs)?;
    let bed = Testbed::start(Settings::default())
        .await
        .context("cannot start the testbed")?;
    let (first_request, lease) = start_up(&product, &bed).await?;

    let mut sizes = Table::new("Binary size", &["binary", "size"]);
    sizes.row(vec![
        "product (the image's /usr/bin/csi-operator)".into(),
        format!("{:.1} MiB", size_mib(&product)?),
    ]);
    sizes.row(vec![
        "lab (with kube-sim, openstack-sim, testbed; never shipped)".into(),
        format!("{:.1} MiB", size_mib(&lab)?),
    ]);
    let mut start = Table::new("Start-up of the product binary", &["what", "ms"]);
    start.row(vec![
        format!("exec → `--version` answered (median of {runs})"),
        ms(percentile(&version, 0.5)),
    ]);
    start.row(vec![
        format!("exec → `--version` answered (p95 of {runs})"),
        ms(percentile(&version, 0.95)),
    ]);
    start.row(vec![
        "exec → Cinder operator's first API request".into(),
        ms(first_request),
    ]);
    start.row(vec![
        "exec → Cinder operator holds its lease".into(),
        ms(lease),
    ]);
    Ok(Section {
        name: NAME,
        title: "The image: product binary size and start-up".into(),
        setup: "The product binary is built by `hack/build-product.sh` (the Containerfile's build \
                stage: release profile, `--no-default-features`, checked for emulator symbols). \
                The lab binary is `target/release/csi-operator`, which runs the emulators of the other scenarios (their operators are the product binary). \
                Start-up runs `csi-operator openstack-cinder start` against an in-process testbed \
                (kube-sim with OpenShift's API) with the default leader timings."
            .into(),
        tables: vec![sizes, start],
        notes: vec![
            "The image adds the distroless `cc` base (glibc, libgcc, CA certificates) and \
             `/manifests`; no container engine runs on the benchmark machine, so its size is \
             not measured here."
                .into(),
        ],
    })
}
