//! End-to-end tests of `csi-operator demo`: the real binary, as a user or CI runs it, with
//! `--exit-when-ready` so that it ends by itself (the binary bounds its own wait with
//! `--timeout`, so a broken install fails the test instead of hanging it).

use std::path::PathBuf;
use std::process::{Command, Output};

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
    let out = Command::new(BIN)
        .arg("demo")
        .args(args)
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
fn demo_installs_the_driver_and_summarises_what_it_created() {
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
    assert!(server.starts_with("http://127.0.0.1:"), "{written}");
    assert!(
        stderr.contains(&format!("kube-sim at {server} ")),
        "announced address differs from the kubeconfig's {server}:\n{stderr}"
    );
    // Exiting by itself, it does not offer kubectl commands against a cluster that is gone.
    assert!(!stdout.contains("The cluster stays up"), "{stdout}");
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
    assert!(server.starts_with("http://127.0.0.1:"), "{server}");
    assert_ne!(server, format!("http://{addr}"));
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
        stderr.contains("--timeout") && stderr.contains("ms, s, m or h"),
        "{stderr}"
    );
}
