//! `csi-operator render openstack-manila` as a process: the rendered YAML for fixed flags is
//! compared byte for byte with the reviewed golden file
//! `tests/golden/render-openstack-manila.yaml` (regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p csi-operator --test render_manila`, then review the diff
//! against anchors §5.2–§5.3 before committing it), and malformed flags fail with a clear
//! message, a non-zero exit status and nothing on stdout.
//!
//! The child's environment is cleared so that image variables (or `CSI_FSGROUP_POLICY`) of the
//! caller's shell cannot change the output.

#[path = "common/golden.rs"]
mod golden;

use std::path::PathBuf;
use std::process::{Command, Output};

const IMAGES: &[(&str, &str)] = &[
    (
        "DRIVER_IMAGE",
        "quay.io/openshift/origin-csi-driver-manila:4.20",
    ),
    (
        "NFS_DRIVER_IMAGE",
        "quay.io/openshift/origin-csi-driver-nfs:4.20",
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
        "SNAPSHOTTER_IMAGE",
        "quay.io/openshift/origin-csi-external-snapshotter:4.20",
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
    ("OPERATOR_IMAGE_VERSION", "4.20.0"),
];

/// Share types of the golden file: a plain name, one OpenShift rewrites (`_`, uppercase) and
/// one only this operator can name (a space and parentheses: repaired, with a digest).
const SHARE_TYPES: &[&str] = &["default", "Gold_Fast", "nfs ssd (fast)"];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn render_with_env(args: &[String], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(["render", "openstack-manila"])
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("csi-operator runs")
}

fn render(args: &[String]) -> Output {
    render_with_env(args, &[])
}

fn image_flags() -> Vec<String> {
    IMAGES
        .iter()
        .flat_map(|(k, v)| ["--image".to_string(), format!("{k}={v}")])
        .collect()
}

fn share_type_flags(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| ["--share-type".to_string(), n.to_string()])
        .collect()
}

fn fixed_flags() -> Vec<String> {
    let mut args = image_flags();
    args.extend(share_type_flags(SHARE_TYPES));
    args.extend(["--cluster-id".to_string(), "ostest-x7k2p".to_string()]);
    args
}

fn with(extra: &[&str]) -> Vec<String> {
    let mut args = fixed_flags();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The command failed, printed nothing to stdout, and its error mentions every `mentions`.
fn assert_rejected(out: &Output, mentions: &[&str]) {
    assert!(!out.status.success(), "accepted: {}", stdout(out));
    assert!(
        out.stdout.is_empty(),
        "nothing is rendered: {}",
        stdout(out)
    );
    let err = stderr(out);
    for m in mentions {
        assert!(err.contains(m), "the error should mention {m:?}: {err}");
    }
}

#[test]
fn render_matches_the_reviewed_golden_file() {
    let out = render(&fixed_flags());
    assert!(out.status.success(), "render failed: {}", stderr(&out));
    let rendered = String::from_utf8(out.stdout).expect("UTF-8 output");
    let golden = golden_dir().join("render-openstack-manila.yaml");
    golden::assert_matches(&rendered, &golden);
}

#[test]
fn render_is_deterministic_and_independent_of_share_type_order() {
    let a = render(&fixed_flags());
    assert!(a.status.success(), "{}", stderr(&a));
    let mut reversed = image_flags();
    let mut names = SHARE_TYPES.to_vec();
    names.reverse();
    reversed.extend(share_type_flags(&names));
    reversed.extend(["--cluster-id".to_string(), "ostest-x7k2p".to_string()]);
    let b = render(&reversed);
    assert!(b.status.success(), "{}", stderr(&b));
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn every_share_type_gets_a_valid_storage_class() {
    let out = render(&fixed_flags());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for (name, share_type) in [
        ("csi-manila-default", "default"),
        ("csi-manila-gold-fast", "Gold_Fast"),
    ] {
        assert!(text.contains(&format!("  name: {name}\n")), "{name}");
        assert!(
            text.contains(&format!("  type: {share_type}\n")),
            "{share_type}"
        );
    }
    // The repaired name: valid, recognisable, and the type parameter keeps the original.
    let repaired = text
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .find(|n| n.starts_with("csi-manila-nfs-ssd"))
        .expect("a StorageClass for \"nfs ssd (fast)\"");
    let valid_label = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    assert!(
        repaired.len() <= 253 && repaired.split('.').all(valid_label),
        "{repaired} is a DNS-1123 subdomain"
    );
    assert!(text.contains("  type: nfs ssd (fast)\n"));
    assert!(!text.starts_with('#'), "no share type was left out");
}

#[test]
fn colliding_share_types_are_reported_and_one_class_is_rendered() {
    let mut args = image_flags();
    args.extend(share_type_flags(&["Gold", "gold"]));
    let out = render(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let report = text.lines().next().unwrap_or_default();
    assert!(
        report.starts_with("# ")
            && report.contains("\"Gold\"")
            && report.contains("\"gold\"")
            && report.contains("csi-manila-gold"),
        "the collision is reported first: {report}"
    );
    assert_eq!(text.matches("\n  name: csi-manila-gold\n").count(), 1);
}

#[test]
fn an_empty_share_type_name_is_reported() {
    let mut args = image_flags();
    args.extend(share_type_flags(&["", "default"]));
    let out = render(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("# ") && text.contains("empty name"),
        "{text}"
    );
    assert!(text.contains("  name: csi-manila-default\n"));
}

#[test]
fn fs_group_policy_comes_from_the_flag_or_the_environment() {
    let out = render(&with(&["--fs-group-policy", "File"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("  fsGroupPolicy: File\n"));
    let out = render_with_env(
        &fixed_flags(),
        &[("CSI_FSGROUP_POLICY", "ReadWriteOnceWithFSType")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("  fsGroupPolicy: ReadWriteOnceWithFSType\n"));
}

#[test]
fn an_unknown_fs_group_policy_is_rejected() {
    let out = render(&with(&["--fs-group-policy", "Everything"]));
    assert_rejected(
        &out,
        &["\"Everything\"", "None, File or ReadWriteOnceWithFSType"],
    );
}

#[test]
fn no_share_type_is_rejected() {
    let out = render(&image_flags());
    assert_rejected(&out, &["--share-type"]);
}

#[test]
fn an_image_flag_without_equals_is_rejected() {
    let out = render(&with(&["--image", "FOO"]));
    assert_rejected(&out, &["FOO", "NAME=VALUE"]);
}

#[test]
fn an_image_flag_with_an_empty_name_is_rejected() {
    let out = render(&with(&["--image", "=quay.io/x:1"]));
    assert_rejected(&out, &["empty"]);
}

#[test]
fn a_proxy_flag_without_equals_is_rejected() {
    let out = render(&with(&["--proxy", "http://proxy:3128"]));
    assert_rejected(&out, &["http://proxy:3128", "NAME=VALUE"]);
}

#[test]
fn an_unknown_log_level_is_rejected() {
    let out = render(&with(&["--log-level", "Chatty"]));
    assert_rejected(&out, &["Chatty", "Normal, Debug, Trace, TraceAll"]);
}

#[test]
fn images_not_given_are_the_upstream_releases() {
    // Only the NFS image given: the others are what manifests/kubernetes/ uses.
    let mut args = vec![
        "--image".to_string(),
        "NFS_DRIVER_IMAGE=registry.example.com/nfs:v1".to_string(),
    ];
    args.extend(share_type_flags(&["default"]));
    let out = render(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let yaml = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(yaml.contains("image: registry.k8s.io/provider-os/manila-csi-plugin:"));
    assert!(yaml.contains("image: registry.example.com/nfs:v1"));
    assert!(!yaml.contains("${"), "an unfilled placeholder");
}
