//! `csi-operator render smb` as a process: the rendered YAML for fixed flags is compared byte
//! for byte with the reviewed golden file `tests/golden/render-smb.yaml` (regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p csi-operator --test render_smb`, then review the diff against
//! openshift/csi-operator's `assets/overlays/samba/generated/standalone/`), `--help` names what
//! the operator needs, and malformed flags fail with a clear message and nothing on stdout.
//! The child's environment is cleared so the caller's image variables cannot change the output.

#[path = "common/golden.rs"]
mod golden;

use std::path::PathBuf;
use std::process::{Command, Output};

const IMAGES: &[(&str, &str)] = &[
    (
        "DRIVER_IMAGE",
        "quay.io/openshift/origin-smb-csi-driver:4.20",
    ),
    (
        "PROVISIONER_IMAGE",
        "quay.io/openshift/origin-csi-external-provisioner:4.20",
    ),
    (
        "RESIZER_IMAGE",
        "quay.io/openshift/origin-csi-external-resizer:4.20",
    ),
    (
        "LIVENESS_PROBE_IMAGE",
        "quay.io/openshift/origin-csi-livenessprobe:4.20",
    ),
    (
        "NODE_DRIVER_REGISTRAR_IMAGE",
        "quay.io/openshift/origin-csi-node-driver-registrar:4.20",
    ),
    (
        "KUBE_RBAC_PROXY_IMAGE",
        "quay.io/openshift/origin-kube-rbac-proxy:4.20",
    ),
];

fn csi_operator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(args)
        .env_clear()
        .output()
        .expect("csi-operator runs")
}

fn render(extra: &[&str]) -> Output {
    let images: Vec<String> = IMAGES.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut args = vec!["render", "smb", "--cluster-id", "ostest-x7k2p"];
    for i in &images {
        args.extend(["--image", i.as_str()]);
    }
    args.extend(extra);
    csi_operator(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn render_matches_the_reviewed_golden_file() {
    let out = render(&[]);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    let rendered = text(&out.stdout);
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/render-smb.yaml");
    golden::assert_matches(&rendered, &golden);
    // What SMB is not: no StorageClass, no VolumeSnapshotClass, no Secret.
    for kind in ["StorageClass", "VolumeSnapshotClass", "Secret"] {
        assert!(!rendered.contains(&format!("\nkind: {kind}\n")), "{kind}");
    }
}

#[test]
fn single_replica_topology_runs_one_controller() {
    let out = render(&["--control-plane-topology", "SingleReplica"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ha = text(&render(&[]).stdout);
    let single = text(&out.stdout);
    assert!(
        ha.contains("  replicas: 2\n"),
        "two controllers when highly available"
    );
    assert!(single.contains("  replicas: 1\n") && !single.contains("  replicas: 2\n"));
}

#[test]
fn bad_flags_are_refused_with_a_clear_message() {
    for (flags, mentions) in [
        (&["--log-level", "Loud"][..], &["--log-level", "Loud"][..]),
        (
            &["--control-plane-topology", "Huge"][..],
            &["Huge", "SingleReplica"][..],
        ),
        (&["--image", "=x"][..], &["name before '=' is empty"][..]),
    ] {
        let out = render(flags);
        assert!(!out.status.success(), "{flags:?} accepted");
        assert!(out.stdout.is_empty(), "{flags:?}: nothing is rendered");
        let err = text(&out.stderr);
        for m in mentions {
            assert!(
                err.contains(m),
                "{flags:?}: the error should mention {m:?}: {err}"
            );
        }
    }
}

#[test]
fn help_says_what_the_operator_needs_and_how_the_cso_is_opted_in() {
    let start = text(&csi_operator(&["smb", "start", "--help"]).stdout);
    for m in [
        "DRIVER_IMAGE",
        "ClusterCSIDriver smb.csi.k8s.io",
        "--create-cluster-csi-driver",
    ] {
        assert!(start.contains(m), "{m}: {start}");
    }
    let cso = text(&csi_operator(&["cluster-storage", "start", "--help"]).stdout);
    for m in [
        "--optional-driver",
        "CSO_OPTIONAL_DRIVERS",
        "SMB_DRIVER_IMAGE",
    ] {
        assert!(cso.contains(m), "{m}: {cso}");
    }
    // An unknown optional driver is refused before anything starts.
    let out = csi_operator(&["cluster-storage", "start", "--optional-driver", "nfs"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("\"nfs\" is not an optional driver") && err.contains("smb"),
        "{err}"
    );
}
