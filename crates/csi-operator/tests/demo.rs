//! End-to-end tests of `csi-operator demo`: the real binary, as a user or CI runs it, with
//! `--exit-when-ready` so that it ends by itself (the binary bounds its own wait with
//! `--timeout`, so a broken install fails the test instead of hanging it). Both ways: with
//! Manila in openstack-sim (the default) and without (`--no-manila`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_csi-operator");

/// A fresh kubeconfig path for one test.
fn kubeconfig_path(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("demo-{test}"));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join("kube-sim.kubeconfig");
    let _ = std::fs::remove_file(&path);
    path
}

fn demo(args: &[&str]) -> (Output, String, String) {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let logs = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("demo-logs-{}-{n}", std::process::id()));
    let out = Command::new(BIN)
        .arg("demo")
        .args(args)
        .arg("--log-dir")
        .arg(&logs)
        .env_remove("RUST_LOG")
        .output()
        .expect("run csi-operator demo");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// Whether some line of the output has exactly these whitespace-separated words.
fn has_row(text: &str, words: &[&str]) -> bool {
    text.lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == words)
}

/// Whether some line starts with these words (the rest being a free-text message).
fn has_row_prefix(text: &str, words: &[&str]) -> bool {
    text.lines().any(|l| {
        l.split_whitespace()
            .take(words.len())
            .eq(words.iter().copied())
    })
}

fn server_of(kubeconfig: &str) -> String {
    kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn demo_installs_both_drivers_and_summarises_what_they_created() {
    let kc = kubeconfig_path("summary");
    let kc_arg = kc.to_str().expect("utf-8 path");
    let (out, stdout, stderr) = demo(&[
        "--exit-when-ready",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig",
        kc_arg,
    ]);
    assert!(
        out.status.success(),
        "demo failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let ns = "openshift-cluster-csi-drivers";
    for row in [
        ["Deployment", ns, "openstack-cinder-csi-driver-controller"],
        ["DaemonSet", ns, "openstack-cinder-csi-driver-node"],
        ["CSIDriver", "-", "cinder.csi.openstack.org"],
        ["StorageClass", "-", "standard-csi"],
        ["ConfigMap", ns, "cloud-conf"],
    ] {
        assert!(has_row(&stdout, &row), "no row {row:?} in:\n{stdout}");
    }
    for available in [
        "OpenStackCinderDriverControllerServiceControllerAvailable",
        "OpenStackCinderDriverNodeServiceControllerAvailable",
    ] {
        assert!(
            has_row_prefix(&stdout, &[available, "True", "AsExpected"]),
            "{available} is not shown True in:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("Converged in "),
        "no convergence time in:\n{stdout}"
    );
    assert!(
        stdout
            .contains("enable_topology (ConfigMap openshift-cluster-csi-drivers/cloud-conf): true"),
        "openstack-sim's zones match, so topology is on:\n{stdout}"
    );
    // The live view printed condition lines with elapsed time and the count of objects.
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(" ms ") && l.contains(" created  ") && l.contains(" = ")),
        "no progress line in:\n{stderr}"
    );
    // The kubeconfig points at the address the demo announced.
    let written = std::fs::read_to_string(&kc).expect("kubeconfig written");
    let server = server_of(&written);
    assert!(server.starts_with("https://127.0.0.1:"), "{written}");
    assert!(
        stderr.contains(&format!("kube-sim at {server} ")),
        "announced address differs from the kubeconfig's {server}:\n{stderr}"
    );
    // The chain ran through the CSO: its pod and the two operator pods ran as processes, and
    // the ClusterOperator says storage works.
    for pod in [
        "openshift-cluster-storage-operator/cluster-storage-operator-",
        "openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator-",
        "openshift-cluster-csi-drivers/manila-csi-driver-operator-",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(&format!("pod {pod}")) && l.contains(" started as pid ")),
            "no start line for {pod} in:\n{stderr}"
        );
    }
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(" storage  Available = True (AsExpected)")),
        "{stderr}"
    );
    assert!(stdout.contains("ClusterOperator storage:"), "{stdout}");
    // RBAC is enforced and the release grants the operators every right they use.
    assert!(stderr.contains("with RBAC enforced"), "{stderr}");
    assert!(!stderr.contains("RBAC refused"), "{stderr}");
    for (t, status) in [
        ("Available", "True"),
        ("Progressing", "False"),
        ("Degraded", "False"),
    ] {
        assert!(
            has_row_prefix(&stdout, &[t, status, "AsExpected"]),
            "{t} is not {status} in:\n{stdout}"
        );
    }
    // What the CSO created for the driver operators, attributed to it.
    for row in [
        ["Deployment", ns, "openstack-cinder-csi-driver-operator"],
        ["Deployment", ns, "manila-csi-driver-operator"],
        ["ConfigMap", ns, "cloud-provider-config"],
    ] {
        assert!(has_row(&stdout, &row), "no row {row:?} in:\n{stdout}");
    }
    // Exiting by itself, it does not offer kubectl commands against a cluster that is gone.
    assert!(!stdout.contains("The cluster stays up"), "{stdout}");

    // Manila: openstack-sim offers two share types; each gets its StorageClass, the second
    // with a sanitized name.
    assert!(
        stderr.contains("openstack-sim offers Manila with share types default, CEPHFS_gold"),
        "{stderr}"
    );
    assert!(
        stdout.contains("ClusterCSIDriver manila.csi.openstack.org: installed, 2 share types"),
        "{stdout}"
    );
    let manila_ns = "openshift-manila-csi-driver";
    for row in [
        &[
            "Deployment",
            manila_ns,
            "openstack-manila-csi-controllerplugin",
        ][..],
        &["DaemonSet", manila_ns, "openstack-manila-csi-nodeplugin"],
        &["DaemonSet", manila_ns, "csi-nodeplugin-nfsplugin"],
        &["Secret", manila_ns, "csi-manila-secrets"],
        &["CSIDriver", "-", "manila.csi.openstack.org"],
        &["VolumeSnapshotClass", "-", "csi-manila-standard"],
        &[
            "StorageClass",
            "-",
            "csi-manila-default",
            "(share",
            "type",
            "default)",
        ],
        &[
            "StorageClass",
            "-",
            "csi-manila-cephfs-gold",
            "(share",
            "type",
            "CEPHFS_gold)",
        ],
    ] {
        assert!(has_row(&stdout, row), "no row {row:?} in:\n{stdout}");
    }
    for available in [
        "OpenStackManilaDriverControllerServiceControllerAvailable",
        "OpenStackManilaDriverNodeServiceControllerAvailable",
        "NFSDriverNodeServiceControllerAvailable",
    ] {
        assert!(
            has_row_prefix(&stdout, &[available, "True", "AsExpected"]),
            "{available} is not shown True in:\n{stdout}"
        );
    }
    assert!(!stdout.contains("CSIControllerDisabled"), "{stdout}");
    // The live view tells the two drivers apart.
    for tag in [" cinder  ", " manila  "] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(" created ") && l.contains(tag)),
            "no progress line for{tag}in:\n{stderr}"
        );
    }
}

#[test]
fn without_manila_the_demo_shows_the_disabled_path() {
    let kc = kubeconfig_path("no-manila");
    let (out, stdout, stderr) = demo(&[
        "--exit-when-ready",
        "--no-manila",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig",
        kc.to_str().expect("utf-8 path"),
    ]);
    assert!(
        out.status.success(),
        "demo failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(stderr.contains("openstack-sim has no Manila"), "{stderr}");
    // The live view gives the reason as it appears.
    assert!(
        stderr.lines().any(|l| l.contains(
            " manila   CSIControllerDisabled = True (PreConditionNotSatisfied): Pre-condition not satisfied: "
        ) && l.contains("sharev2")),
        "no disabled line in:\n{stderr}"
    );
    assert!(
        stdout.contains("the Manila CSI driver is disabled")
            && stdout.contains(
                "ClusterCSIDriver manila.csi.openstack.org: disabled, the driver is not deployed"
            ),
        "{stdout}"
    );
    assert!(
        has_row_prefix(
            &stdout,
            &[
                "CSIControllerDisabled",
                "True",
                "PreConditionNotSatisfied",
                "Pre-condition",
                "not",
                "satisfied:"
            ]
        ),
        "{stdout}"
    );
    // Nothing of Manila deployed: its operator created only its leader-election Lease.
    assert!(stdout.contains("  created 1 object: Lease\n"), "{stdout}");
    assert!(!stdout.contains("openshift-manila-csi-driver "), "{stdout}");
    assert!(!stdout.contains("csi-manila-"), "{stdout}");
    // Cinder is installed all the same.
    assert!(
        has_row(
            &stdout,
            &[
                "Deployment",
                "openshift-cluster-csi-drivers",
                "openstack-cinder-csi-driver-controller"
            ]
        ),
        "{stdout}"
    );
    assert!(
        has_row_prefix(
            &stdout,
            &[
                "OpenStackCinderDriverNodeServiceControllerAvailable",
                "True",
                "AsExpected"
            ]
        ),
        "{stdout}"
    );
}

#[test]
fn share_types_cannot_be_given_without_manila() {
    let (out, _, stderr) = demo(&["--exit-when-ready", "--no-manila", "--share-type", "gold"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--no-manila") && stderr.contains("--share-type"),
        "{stderr}"
    );
}

#[test]
fn a_taken_listen_address_falls_back_to_a_free_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let kc = kubeconfig_path("fallback");
    let (out, stdout, stderr) = demo(&[
        "--exit-when-ready",
        "--listen",
        &addr,
        "--kubeconfig",
        kc.to_str().expect("utf-8 path"),
    ]);
    assert!(
        out.status.success(),
        "demo failed ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains(&format!("{addr} is taken")),
        "no fallback notice in:\n{stderr}"
    );
    let server = server_of(&std::fs::read_to_string(&kc).expect("kubeconfig"));
    assert!(server.starts_with("https://127.0.0.1:"), "{server}");
    assert_ne!(server, format!("https://{addr}"));
    drop(taken);
}

#[test]
fn an_unwritable_kubeconfig_path_is_an_error_naming_the_flag() {
    let dir = kubeconfig_path("unwritable");
    let missing = dir
        .parent()
        .expect("parent")
        .join("no-such-dir")
        .join("kube-sim.kubeconfig");
    let (out, stdout, stderr) = demo(&[
        "--exit-when-ready",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig",
        missing.to_str().expect("utf-8 path"),
    ]);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("cannot write the kubeconfig") && stderr.contains("--kubeconfig"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_timeout_is_rejected_with_the_accepted_units() {
    let (out, _, stderr) = demo(&["--exit-when-ready", "--timeout", "5x"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--timeout") && stderr.contains("units ns, us, ms, s, m, h"),
        "{stderr}"
    );
}

// ----- kubectl against a running demo ------------------------------------------------------

/// The kubectl binaries to try, found as crates/kube-sim/tests/kubectl.rs finds them:
/// `KUBECTL` (colon-separated paths), else Debian's under `target/debian-kubectl` (which
/// `.ci/run` unpacks) and the `kubectl` on PATH. None fails the test with instructions, unless
/// `KUBE_SIM_SKIP_KUBECTL=1`.
fn kubectl_binaries() -> Vec<PathBuf> {
    if std::env::var("KUBE_SIM_SKIP_KUBECTL").is_ok_and(|v| v == "1") {
        eprintln!("KUBE_SIM_SKIP_KUBECTL=1: skipping the kubectl checks");
        return Vec::new();
    }
    if let Some(list) = std::env::var_os("KUBECTL").filter(|v| !v.is_empty()) {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    let debian = root.join("target/debian-kubectl/usr/bin/kubectl");
    if debian.is_file() {
        found.push(debian);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    });
    if let Some(system) = on_path {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if !found.iter().any(|f| canonical(f) == canonical(&system)) {
            found.push(system);
        }
    }
    assert!(
        !found.is_empty(),
        "no kubectl found: run `bash .ci/run` (it unpacks Debian's into target/debian-kubectl), \
         put one on PATH or set KUBECTL=/path/to/kubectl; KUBE_SIM_SKIP_KUBECTL=1 skips"
    );
    found
}

/// The client's minor version (20 for v1.20.2), 0 when unknown.
fn client_minor(kubectl: &Path) -> u32 {
    let out = Command::new(kubectl)
        .args(["version", "--client", "-o", "json"])
        .stdin(Stdio::null())
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let version: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
    version
        .pointer("/clientVersion/gitVersion")
        .and_then(serde_json::Value::as_str)
        .and_then(|v| v.split('.').nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Runs kubectl against `kubeconfig` with a private HOME and discovery cache.
fn kubectl(kubectl: &Path, home: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(home.join("cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl.display()));
    let text = format!(
        "`kubectl {}` with {}: {}\n--- stdout:\n{}\n--- stderr:\n{}",
        args.join(" "),
        kubectl.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A demo left running (no `--exit-when-ready`), stopped with SIGTERM when dropped.
struct RunningDemo {
    child: Child,
    stdout: Arc<Mutex<String>>,
}

impl RunningDemo {
    fn start(kubeconfig: &Path, logs: &Path) -> Self {
        let mut child = Command::new(BIN)
            .arg("demo")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--log-dir")
            .arg(logs)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start csi-operator demo");
        let stdout = Arc::new(Mutex::new(String::new()));
        if let Some(mut pipe) = child.stdout.take() {
            let into = stdout.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    into.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        Self { child, stdout }
    }

    fn stdout(&self) -> String {
        self.stdout
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Waits for the summary's closing invitation to use kubectl.
    fn wait_until_up(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while !self.stdout().contains("The cluster stays up") {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the demo exited ({status}):\n{}", self.stdout());
            }
            assert!(
                Instant::now() < deadline,
                "the demo did not converge:\n{}",
                self.stdout()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for RunningDemo {
    fn drop(&mut self) {
        // SIGTERM lets the demo stop its operator processes; kill it if it does not exit.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The README's kubectl commands against a running demo, with every kubectl found: the demo
/// serves HTTPS with its CA in the kubeconfig, so kubectl sends the bearer token (a current one
/// sends none over plain HTTP) and is the demo's `admin`, not `system:anonymous`, whom RBAC
/// would refuse.
#[test]
fn kubectl_reads_the_running_demo_as_its_admin() {
    let binaries = kubectl_binaries();
    if binaries.is_empty() {
        return;
    }
    let kc = kubeconfig_path("kubectl");
    let home = kc.parent().expect("dir").join("home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("home");
    let logs = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("demo-logs-kubectl-{}", std::process::id()));
    let mut demo = RunningDemo::start(&kc, &logs);
    demo.wait_until_up();
    let written = std::fs::read_to_string(&kc).expect("kubeconfig");
    assert!(
        server_of(&written).starts_with("https://127.0.0.1:"),
        "{written}"
    );
    assert!(
        written.contains("certificate-authority-data: "),
        "{written}"
    );

    let mut failures = Vec::new();
    for bin in &binaries {
        let run = |args: &[&str]| kubectl(bin, &home, &kc, args);
        let mut check = |ok: bool, what: &str, text: &str| {
            if !ok {
                failures.push(format!("{what}: {text}"));
            }
        };
        let (ok, text) = run(&["get", "clusteroperator", "storage", "-o", "yaml"]);
        check(
            ok && text.contains("name: storage") && text.contains("type: Available"),
            "the ClusterOperator",
            &text,
        );
        let (ok, text) = run(&["get", "clustercsidriver,deploy,ds,storageclass", "-A"]);
        check(
            ok && text.contains("cinder.csi.openstack.org")
                && text.contains("openstack-cinder-csi-driver-controller")
                && text.contains("standard-csi"),
            "the drivers and what they deployed",
            &text,
        );
        let (ok, text) = run(&["get", "storage", "cluster", "-o", "yaml"]);
        check(ok && text.contains("kind: Storage"), "the Storage", &text);
        // Who kubectl is: `auth whoami` where it exists (v1.28+); `auth can-i '*' '*'` is yes
        // only for system:masters, which the demo's admin is in, everywhere.
        let (ok, text) = run(&["auth", "can-i", "*", "*"]);
        check(
            ok && text.contains("--- stdout:\nyes\n"),
            "admin may do everything",
            &text,
        );
        if client_minor(bin) >= 28 {
            let (ok, text) = run(&["auth", "whoami"]);
            check(
                ok && text
                    .lines()
                    .any(|l| l.split_whitespace().eq(["Username", "admin"])),
                "whoami says admin",
                &text,
            );
        }
    }
    drop(demo);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
