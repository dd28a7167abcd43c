//! `csi-operator render openstack-cinder` as a process: the rendered YAML for fixed flags is
//! compared byte for byte with the reviewed golden file `tests/golden/render-openstack-cinder.yaml`
//! (regenerate with `UPDATE_GOLDEN=1 cargo test -p csi-operator --test render`, then review the
//! diff against anchors §4.2–§4.7 before committing it), and malformed flags fail with a clear
//! message and a non-zero exit status.
//!
//! The child's environment is cleared so that image variables of the caller's shell cannot
//! change the output.

#[path = "common/golden.rs"]
mod golden;

use std::path::PathBuf;
use std::process::{Command, Output};

const IMAGES: &[(&str, &str)] = &[
    (
        "DRIVER_IMAGE",
        "quay.io/openshift/origin-openstack-cinder-csi-driver:4.20",
    ),
    (
        "PROVISIONER_IMAGE",
        "quay.io/openshift/origin-csi-external-provisioner:4.20",
    ),
    (
        "ATTACHER_IMAGE",
        "quay.io/openshift/origin-csi-external-attacher:4.20",
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

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn render(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(["render", "openstack-cinder"])
        .args(args)
        .env_clear()
        .output()
        .expect("csi-operator runs")
}

fn image_flags() -> Vec<String> {
    IMAGES
        .iter()
        .flat_map(|(k, v)| ["--image".to_string(), format!("{k}={v}")])
        .collect()
}

fn fixed_flags() -> Vec<String> {
    let mut args = image_flags();
    let ini = golden_dir().join("render-cloud-config.ini");
    args.extend([
        "--cluster-id".to_string(),
        "ostest-x7k2p".to_string(),
        "--cloud-config".to_string(),
        ini.to_string_lossy().into_owned(),
        "--enable-topology".to_string(),
        "true".to_string(),
    ]);
    args
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn render_matches_the_reviewed_golden_file() {
    let out = render(&fixed_flags());
    assert!(out.status.success(), "render failed: {}", stderr(&out));
    let rendered = String::from_utf8(out.stdout).expect("UTF-8 output");
    let golden = golden_dir().join("render-openstack-cinder.yaml");
    golden::assert_matches(&rendered, &golden);
}

#[test]
fn render_is_deterministic() {
    let a = render(&fixed_flags());
    let b = render(&fixed_flags());
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn an_image_flag_without_equals_is_rejected() {
    let mut args = fixed_flags();
    args.extend(["--image".to_string(), "FOO".to_string()]);
    let out = render(&args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("FOO") && err.contains("NAME=VALUE"),
        "the error names the flag value and the expected form: {err}"
    );
    assert!(out.stdout.is_empty(), "nothing is rendered");
}

#[test]
fn an_image_flag_with_an_empty_name_is_rejected() {
    let mut args = fixed_flags();
    args.extend(["--image".to_string(), "=quay.io/x:1".to_string()]);
    let out = render(&args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
}

#[test]
fn an_unknown_log_level_is_rejected() {
    let mut args = fixed_flags();
    args.extend(["--log-level".to_string(), "Chatty".to_string()]);
    let out = render(&args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Chatty") && err.contains("Normal, Debug, Trace, TraceAll"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn images_not_given_are_the_upstream_releases_and_given_ones_win() {
    let ini = golden_dir().join("render-cloud-config.ini");
    let out = render(&[
        "--cloud-config".to_string(),
        ini.to_string_lossy().into_owned(),
        "--image".to_string(),
        "PROVISIONER_IMAGE=registry.example.com/provisioner:v1".to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let yaml = String::from_utf8(out.stdout).expect("UTF-8");
    // What manifests/kubernetes/ gives the operator, so `render` works as the docs type it.
    assert!(
        yaml.contains("image: registry.k8s.io/provider-os/cinder-csi-plugin:"),
        "{yaml}"
    );
    assert!(yaml.contains("image: registry.example.com/provisioner:v1"));
    assert!(!yaml.contains("${"), "an unfilled placeholder");
}

#[test]
fn a_malformed_image_flag_is_refused() {
    let out = render(&["--image".to_string(), "=quay.io/x".to_string()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
}

#[test]
fn a_missing_cloud_config_file_is_named() {
    let mut args = image_flags();
    args.extend([
        "--cloud-config".to_string(),
        "/nonexistent/cloud.conf".to_string(),
    ]);
    let out = render(&args);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/nonexistent/cloud.conf"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_malformed_cloud_config_is_rejected() {
    let path = std::env::temp_dir().join(format!("render-bad-{}.ini", std::process::id()));
    std::fs::write(&path, "[BlockStorage\nkey\n").expect("write");
    let mut args = image_flags();
    args.extend([
        "--cloud-config".to_string(),
        path.to_string_lossy().into_owned(),
    ]);
    let out = render(&args);
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("line 1"), "{}", stderr(&out));
}

#[test]
fn a_non_boolean_enable_topology_is_rejected() {
    let mut args = image_flags();
    args.extend(["--enable-topology".to_string(), "maybe".to_string()]);
    let out = render(&args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("maybe") && err.contains("--enable-topology"),
        "{err}"
    );
}

/// Opted in, the operator keeps a StorageClass per public volume type; `--volume-type` shows
/// them after everything else, and leaves the rest of the output as it was.
#[test]
fn volume_types_add_their_storage_classes_and_nothing_else() {
    let plain = render(&fixed_flags());
    let mut args = fixed_flags();
    for t in ["fast_SSD", "Gold Tier"] {
        args.extend(["--volume-type".to_string(), t.to_string()]);
    }
    let out = render(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let plain = String::from_utf8(plain.stdout).expect("UTF-8");
    let with = String::from_utf8(out.stdout).expect("UTF-8");
    let extra = with
        .strip_prefix(plain.as_str())
        .expect("the same objects first");
    let docs = operator_kit::assets::parse_values("render", extra).expect("YAML");
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "csi-cinder-fast-ssd");
    assert!(names[1].starts_with("csi-cinder-gold-tier-"), "{names:?}");
    assert_eq!(docs[1]["parameters"]["type"], "Gold Tier");
    assert_eq!(
        docs[0]["metadata"]["labels"]["cinder.csi.openstack.org/volume-type-class"],
        "true"
    );
}

#[test]
fn volume_types_that_get_no_class_are_rejected_with_the_reason() {
    for (types, expected) in [
        (
            &["SSD", "ssd"][..],
            "rename one of the volume types in Cinder",
        ),
        (&[""][..], "empty name"),
        (&["__DEFAULT__"][..], "standard-csi provisions with it"),
    ] {
        let mut args = fixed_flags();
        for t in types {
            args.extend(["--volume-type".to_string(), t.to_string()]);
        }
        let out = render(&args);
        assert!(!out.status.success(), "{types:?}");
        assert!(
            stderr(&out).contains(expected),
            "{types:?}: {}",
            stderr(&out)
        );
    }
}
