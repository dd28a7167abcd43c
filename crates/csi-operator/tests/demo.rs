//! End-to-end tests of `csi-operator demo`: the real binary, as a user or CI runs it, with
//! `--exit-when-ready` so that it ends by itself (the binary bounds its own wait with
//! `--timeout`, so a broken install fails the test instead of hanging it). Both ways: with
//! Manila in openstack-sim (the default) and without (`--no-manila`).

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
    assert!(server.starts_with("http://127.0.0.1:"), "{written}");
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
        stderr.contains("--timeout") && stderr.contains("units ns, us, ms, s, m, h"),
        "{stderr}"
    );
}
