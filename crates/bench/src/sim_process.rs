//! kube-sim as a separate process (`csi-operator sim`), so its resident memory and CPU are
//! measured alone rather than mixed with the benchmark's own clients.
//!
//! The process is killed when the handle drops, so it never outlives a failed or interrupted
//! scenario.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use crate::measure::{self, Memory};

/// Overrides where the `csi-operator` binary is found.
const BIN_ENV: &str = "CSI_OPERATOR_BIN";
/// Names a product binary to measure instead of building one.
const PRODUCT_BIN_ENV: &str = "CSI_OPERATOR_PRODUCT_BIN";
const SERVING: &str = "kube-sim serving at ";

pub struct SimProcess {
    child: Child,
    url: String,
    kubeconfig: PathBuf,
}

impl SimProcess {
    /// Starts `csi-operator sim` on a free loopback port, without the workload simulator, and
    /// waits until it says where it serves.
    pub fn start() -> anyhow::Result<Self> {
        let bin = locate_binary()?;
        let kubeconfig =
            std::env::temp_dir().join(format!("bench-kube-sim-{}.kubeconfig", std::process::id()));
        let mut child = Command::new(&bin)
            .args([
                "sim",
                "--listen",
                "127.0.0.1:0",
                "--no-workloads",
                "--user",
                "bench",
                "--kubeconfig",
            ])
            .arg(&kubeconfig)
            // Per-request logging would measure the terminal, not the emulator.
            .env(
                "RUST_LOG",
                std::env::var("BENCH_SIM_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let stdout = child.stdout.take().context("no stdout from the emulator")?;
        let (tx, rx) = std::sync::mpsc::channel();
        // Keeps draining stdout after the URL line so the emulator never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix(SERVING) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        // From here on, Drop kills the child whatever happens.
        let mut sim = SimProcess {
            child,
            url: String::new(),
            kubeconfig,
        };
        sim.url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let status = sim.child.try_wait().ok().flatten();
                anyhow::bail!(
                    "{} sim did not report its address within 30 s (exit status: {status:?})",
                    bin.display()
                );
            }
        };
        Ok(sim)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn memory(&self) -> anyhow::Result<Memory> {
        measure::memory(self.pid())
    }

    /// A kube-rs client configured from the kubeconfig the emulator wrote, as an operator
    /// would be.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)
            .with_context(|| format!("cannot read {}", self.kubeconfig.display()))?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        Ok(kube::Client::try_from(config)?)
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

/// `$CSI_OPERATOR_BIN`, else `csi-operator` next to this binary in the target directory. Under
/// `cargo run`, it is (re)built first with the same profile, so the figures always describe the
/// current source (of the emulator or of an operator) rather than a stale binary.
/// The product binary, as the image ships it: built once per run by `hack/build-product.sh`
/// (the Containerfile's build stage: release profile, no emulators linked), unless
/// [`PRODUCT_BIN_ENV`] names one. The operator scenarios measure it, since their budgets are
/// about what runs on a cluster; the lab binary's emulator code would add mapped pages.
pub(crate) fn product_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(PRODUCT_BIN_ENV) {
        return Ok(PathBuf::from(path));
    }
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(bin) = BUILT.get() {
        return Ok(bin.clone());
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .context("the bench crate is not inside the workspace")?
        .to_path_buf();
    let out = root.join("target").join("image-root");
    eprintln!("building the product binary (hack/build-product.sh)");
    let status = Command::new(root.join("hack").join("build-product.sh"))
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .context("cannot run hack/build-product.sh")?;
    anyhow::ensure!(status.success(), "hack/build-product.sh failed ({status})");
    let bin = out.join("csi-operator");
    Ok(BUILT.get_or_init(|| bin).clone())
}

pub(crate) fn locate_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(BIN_ENV) {
        return Ok(PathBuf::from(path));
    }
    // Scenarios start several processes; cargo needs to run only before the first.
    static LOCATED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(bin) = LOCATED.get() {
        return Ok(bin.clone());
    }
    let exe = std::env::current_exe().context("cannot find the bench binary's own path")?;
    let dir = exe.parent().context("the bench binary has no directory")?;
    let bin = dir.join("csi-operator");
    if let (Some(cargo), Some(manifest_dir)) = (
        std::env::var_os("CARGO"),
        std::env::var_os("CARGO_MANIFEST_DIR"),
    ) {
        let profile = if cfg!(debug_assertions) {
            "dev"
        } else {
            "release"
        };
        eprintln!("building csi-operator ({profile})");
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "csi-operator",
                "--profile",
                profile,
                "--manifest-path",
            ])
            .arg(PathBuf::from(manifest_dir).join("Cargo.toml"))
            .status()
            .context("cannot run cargo to build csi-operator")?;
        anyhow::ensure!(status.success(), "building csi-operator failed ({status})");
    }
    anyhow::ensure!(
        bin.is_file(),
        "{} not found: build it with `cargo build --release -p csi-operator` or set {BIN_ENV} to its path",
        bin.display()
    );
    Ok(LOCATED.get_or_init(|| bin).clone())
}
