//! The image's binary is the product, not the lab: built without the `lab` feature it depends
//! on no emulator (so it cannot link one), and the image and CI build it the same way.
//! `hack/build-product.sh` (run by CI and by the Containerfile) also checks the built binary's
//! symbols; this test checks the dependency graph, which needs no build.

use std::path::Path;
use std::process::Command;

const EMULATORS: [&str; 3] = ["kube-sim", "openstack-sim", "testbed"];

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/csi-operator is two levels below the root")
}

/// The packages `csi-operator` depends on to build and run, with or without `lab`.
fn dependencies(lab: bool) -> Vec<String> {
    let mut args = vec![
        "tree",
        "--offline",
        "--locked",
        "-p",
        "csi-operator",
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ];
    if !lab {
        args.push("--no-default-features");
    }
    let out = Command::new(env!("CARGO"))
        .args(&args)
        .current_dir(workspace_root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_product_depends_on_no_emulator_and_the_lab_on_all() {
    let product = dependencies(false);
    assert!(product.iter().any(|p| p == "cinder"), "{product:?}");
    for emulator in EMULATORS {
        assert!(
            !product.iter().any(|p| p == emulator),
            "the product build depends on {emulator}"
        );
    }
    let lab = dependencies(true);
    for emulator in EMULATORS {
        assert!(
            lab.iter().any(|p| p == emulator),
            "the lab lacks {emulator}"
        );
    }
}

#[test]
fn the_image_and_ci_build_the_product_with_the_same_script() {
    let read = |p: &str| std::fs::read_to_string(workspace_root().join(p)).unwrap();
    let containerfile = read("Containerfile");
    let ci = read(".ci/run");
    let script = read("hack/build-product.sh");
    assert!(containerfile.contains("hack/build-product.sh"));
    assert!(ci.contains("hack/build-product.sh"));
    assert!(script.contains("--release --no-default-features -p csi-operator"));
    // A non-root user and no shell in the final stage.
    assert!(containerfile.contains("USER 65532:65532"));
    assert!(containerfile.contains("distroless"));
}

#[test]
fn version_names_the_commit_and_the_build_on_every_subcommand() {
    let bin = env!("CARGO_BIN_EXE_csi-operator");
    for args in [
        vec!["--version"],
        vec!["openstack-cinder", "start", "--version"],
        vec!["cluster-storage", "start", "--version"],
    ] {
        let out = Command::new(bin).args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}");
        assert!(text.contains(env!("CARGO_PKG_VERSION")), "{args:?}: {text}");
        assert!(text.contains("\ncommit: "), "{args:?}: {text}");
        // Tests build the lab (default features).
        assert!(text.contains("build: lab"), "{args:?}: {text}");
    }
}

/// `completion` and `man` come from the same clap definitions as `--help`, so they list the
/// flags a `start` really takes.
#[test]
fn completion_scripts_and_man_pages_are_generated_from_the_flags() {
    let bin = env!("CARGO_BIN_EXE_csi-operator");
    let out = Command::new(bin)
        .args(["completion", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("complete -F"), "{script}");
    assert!(script.contains("--leader-elect-lease-duration"));
    let bad = Command::new(bin)
        .args(["completion", "tcsh"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("possible values"));

    let dir = std::env::temp_dir().join(format!("csi-operator-man-{}", std::process::id()));
    let out = Command::new(bin).arg("man").arg(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(dir.join("csi-operator-openstack-cinder-start.1")).unwrap();
    assert!(page.contains(".TH"), "a roff page");
    assert!(page.contains("log\\-format"), "{page}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `start --help` says what else a start needs: the environment and the objects.
#[test]
fn start_help_names_the_environment_and_objects_it_needs() {
    let bin = env!("CARGO_BIN_EXE_csi-operator");
    for (driver, must) in [
        (
            "openstack-cinder",
            [
                "DRIVER_IMAGE",
                "openstack-cloud-credentials",
                "ClusterCSIDriver cinder.csi.openstack.org",
            ],
        ),
        (
            "openstack-manila",
            [
                "NFS_DRIVER_IMAGE",
                "manila-cloud-credentials",
                "ClusterCSIDriver manila.csi.openstack.org",
            ],
        ),
        (
            "cluster-storage",
            [
                "MANILA_DRIVER_OPERATOR_IMAGE",
                "OPERAND_IMAGE_VERSION",
                "Infrastructure/cluster",
            ],
        ),
    ] {
        let out = Command::new(bin)
            .args([driver, "start", "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        for text in must {
            assert!(
                help.contains(text),
                "{driver} start --help lacks {text}: {help}"
            );
        }
    }
}

/// `--cert-manager-issuer` is checked before anything starts, and a malformed value is refused
/// with what is expected.
#[test]
fn a_malformed_cert_manager_issuer_is_refused_at_start() {
    let bin = env!("CARGO_BIN_EXE_csi-operator");
    for driver in ["openstack-cinder", "openstack-manila"] {
        let help = Command::new(bin)
            .args([driver, "start", "--help"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("--cert-manager-issuer <KIND/NAME>"),
            "{driver}"
        );
        for bad in ["Foo/x", "ClusterIssuer/", "x"] {
            let out = Command::new(bin)
                .args([driver, "start", "--cert-manager-issuer", bad])
                .env("RUST_BACKTRACE", "0")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{driver} {bad}: {err}");
            assert!(
                err.contains("KIND/NAME with KIND Issuer or ClusterIssuer"),
                "{driver} {bad}: {err}"
            );
        }
    }
}
