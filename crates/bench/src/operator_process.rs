//! A driver operator under benchmark as its own process (`csi-operator <driver> start`), so its
//! resident memory is its own, plus the little HTTP the scenarios need to see it is ready.
//!
//! The operator authenticates to kube-sim as its service account, so kube-sim's request log
//! tells its requests apart by user. The process is killed (and its kubeconfig and log
//! removed) when the handle drops, so it never outlives a failed or interrupted scenario. This
//! module measures nothing itself and asserts nothing.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use kube_sim::RequestRecord;
use testbed::Testbed;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cluster::{RequestLog, working_writes};
use crate::measure::{self, Memory};
use crate::sim_process::product_binary;

/// Bounds on waiting, so a stuck operator fails the run instead of hanging it.
const READY_LIMIT: Duration = Duration::from_secs(60);
const CONVERGE_LIMIT: Duration = Duration::from_secs(120);
const STOP_LIMIT: Duration = Duration::from_secs(10);
const BINARY_LIMIT: Duration = Duration::from_secs(60);

/// Tells apart the files of operators started one after another by one bench process.
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// How to start one operator.
pub(crate) struct OperatorCommand {
    /// The `csi-operator` subcommand, e.g. `openstack-cinder`.
    pub subcommand: &'static str,
    /// The service account it authenticates as (the user of its requests in kube-sim's log).
    pub user: &'static str,
    /// The prefix of its metrics, e.g. `openstack_cinder_csi_driver_operator`.
    pub metric_prefix: &'static str,
    /// Arguments after `start --kubeconfig F --metrics-listen A --metrics-insecure-http --v N`.
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Run at `--v 4` and keep the log afterwards (for finding out why a figure is what it is).
    pub trace: bool,
}

pub(crate) struct OperatorProcess {
    child: Child,
    metrics: std::net::SocketAddr,
    kubeconfig: PathBuf,
    log: PathBuf,
    keep_log: bool,
    user: &'static str,
    reconciles_metric: String,
}

impl OperatorProcess {
    pub(crate) fn start(bed: &Testbed, command: OperatorCommand) -> anyhow::Result<Self> {
        let kubeconfig = bed.kube.kubeconfig(command.user);
        Self::start_with(&kubeconfig, command)
    }

    /// Starts the operator with `kubeconfig` (the real control plane's, with a TokenRequest
    /// token of its ServiceAccount).
    pub(crate) fn start_with(
        kubeconfig_yaml: &str,
        command: OperatorCommand,
    ) -> anyhow::Result<Self> {
        let bin = product_binary()?;
        let tmp = std::env::temp_dir();
        let tag = format!(
            "bench-{}-{}-{}",
            command.subcommand,
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        let kubeconfig = tmp.join(format!("{tag}.kubeconfig"));
        let log = tmp.join(format!("{tag}.log"));
        std::fs::write(&kubeconfig, kubeconfig_yaml)
            .with_context(|| format!("cannot write {}", kubeconfig.display()))?;
        let log_file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let metrics = free_port()?;
        let mut process = Command::new(&bin);
        process
            .args([command.subcommand, "start", "--kubeconfig"])
            .arg(&kubeconfig)
            .arg("--metrics-listen")
            .arg(metrics.to_string())
            // Plain HTTP: the bench reads the page without credentials, and delegated
            // authentication would add TokenReview/SubjectAccessReview creates to the request
            // counts it measures.
            .arg("--metrics-insecure-http")
            .args(["--v", if command.trace { "4" } else { "2" }])
            .args(&command.args)
            .envs(&command.env)
            // The log is read back as plain text when the scenario fails.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        // A cargo build elsewhere in the shared target directory replaces the binary by
        // removing it first: wait for the new one rather than failing the run.
        let deadline = Instant::now() + BINARY_LIMIT;
        let child = loop {
            match process.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Ok(child) => break child,
                Err(e) => {
                    // No process, so no handle whose drop would remove these.
                    let _ = std::fs::remove_file(&kubeconfig);
                    let _ = std::fs::remove_file(&log);
                    return Err(e).with_context(|| format!("cannot start {}", bin.display()));
                }
            }
        };
        Ok(OperatorProcess {
            child,
            metrics,
            kubeconfig,
            log,
            keep_log: command.trace,
            user: command.user,
            reconciles_metric: format!("{}_reconciles_total", command.metric_prefix),
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn metrics_addr(&self) -> std::net::SocketAddr {
        self.metrics
    }

    pub(crate) fn memory(&self) -> anyhow::Result<Memory> {
        measure::memory(self.pid())
    }

    pub(crate) fn check_alive(&mut self) -> anyhow::Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => anyhow::bail!("the operator exited ({status})"),
        }
    }

    /// Waits for the first reconcile, which runs once the operator leads and its watch caches
    /// are synced.
    pub(crate) async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            self.check_alive()?;
            if let Ok(page) = http_get(self.metrics, "/metrics").await
                && counter_sum(&page, &self.reconciles_metric) > 0
            {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the operator did not reconcile within {READY_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// This operator's requests in the cluster's request log (kube-sim's: since it was last
    /// cleared; the real API server's audit log: all).
    pub(crate) fn requests(&self, log: &impl RequestLog) -> Vec<RequestRecord> {
        log.all_requests()
            .into_iter()
            .filter(|r| r.user == self.user)
            .collect()
    }

    pub(crate) fn is_ours(&self, r: &RequestRecord) -> bool {
        r.user == self.user
    }

    /// Waits until the operator has made no write (leader election aside) for `quiet`.
    pub(crate) async fn wait_quiet(
        &mut self,
        log: &impl RequestLog,
        quiet: Duration,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + CONVERGE_LIMIT;
        let mut seen = usize::MAX;
        let mut since = Instant::now();
        loop {
            self.check_alive()?;
            let writes = working_writes(&self.requests(log));
            if writes != seen {
                seen = writes;
                since = Instant::now();
            } else if since.elapsed() >= quiet {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the operator kept writing for {CONVERGE_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the operator as Kubernetes stops a pod (SIGTERM), so it releases its leader lease
    /// and a successor started next leads at once instead of after the lease expires.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        // No signal crate in the dependency tree: the `kill` utility, for our own child only.
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .context("cannot run kill to stop the operator")?;
        anyhow::ensure!(
            status.success(),
            "kill -TERM {} failed ({status})",
            self.pid()
        );
        let deadline = Instant::now() + STOP_LIMIT;
        while self.child.try_wait()?.is_none() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the operator did not exit within {STOP_LIMIT:?} of SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The last 30 lines of the operator's log, for error messages.
    pub(crate) fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Adds the log tail to a failure of a measurement that ran against this operator.
    pub(crate) fn explain<T>(&self, result: anyhow::Result<T>) -> anyhow::Result<T> {
        result.map_err(|e| {
            e.context(format!(
                "the operator's log ends with:\n{}",
                self.log_tail()
            ))
        })
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
        if self.keep_log {
            eprintln!("  the operator's log is kept in {}", self.log.display());
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// A loopback port nobody listens on right now, for the operator's metrics endpoint.
fn free_port() -> anyhow::Result<std::net::SocketAddr> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free loopback port")?;
    Ok(listener.local_addr()?)
}

/// A bare HTTP/1.0 GET: enough for the metrics page, with no HTTP client dependency.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        anyhow::Ok(response)
    };
    let response = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .context("metrics endpoint did not answer")??;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("malformed HTTP response")?;
    anyhow::ensure!(
        head.lines().next().is_some_and(|l| l.contains(" 200 ")),
        "metrics endpoint answered {}",
        head.lines().next().unwrap_or_default()
    );
    Ok(body.to_string())
}

/// The sum of the samples of one counter (all label sets) on a Prometheus text page.
fn counter_sum(page: &str, metric: &str) -> u64 {
    page.lines()
        .filter(|l| {
            l.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_summed_over_their_label_sets_only() {
        let metric = "x_reconciles_total";
        let page = format!(
            "# HELP x\n{metric}{{result=\"success\"}} 3\n{metric}{{result=\"error\"}} 1\n{metric}_other 7\nother_total 9\n"
        );
        assert_eq!(counter_sum(&page, metric), 4);
        assert_eq!(counter_sum(&format!("{metric} 2\n"), metric), 2);
        assert_eq!(counter_sum("# EOF\n", metric), 0);
    }
}
