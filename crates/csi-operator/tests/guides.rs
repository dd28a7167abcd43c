//! The user guides of `docs/`, run as an administrator would run them: every `sh` block of each
//! guide, in order, with bash and the real `kubectl` (1.32 on PATH in CI) against a testbed
//! cluster over HTTPS with RBAC enforced, and `csi-operator` on PATH. The rules a guide follows
//! are in `guides/runner.rs` and docs/README.md.
//!
//! On plain Kubernetes the guides run one after the other on one cluster, as a user reading
//! them in order would: install, use, rotate, uninstall. The operators are the real binary,
//! run by kube-sim as the pods of `manifests/kubernetes/`.

mod common;
#[path = "guides/runner.rs"]
mod runner;

use std::collections::BTreeMap;
use std::time::Duration;

use common::chain::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use kube_sim::ProcessConfig;
use runner::Workdir;
use testbed::Settings;

/// Every page of docs/ with commands: run by a test here, or why it cannot be.
const GUIDES: &[(&str, Guide)] = &[
    ("openshift", Guide::OpenShift),
    ("install-kubernetes", Guide::Kubernetes),
    ("volume-types", Guide::Kubernetes),
    ("topology", Guide::Kubernetes),
    ("volumes-cinder", Guide::Kubernetes),
    ("volumes-manila", Guide::Kubernetes),
    ("rotate-credentials", Guide::Kubernetes),
    ("upgrade", Guide::Kubernetes),
    ("uninstall", Guide::Kubernetes),
    ("cleanup", Guide::Kubernetes),
    (
        "switch-from-helm",
        Guide::NotRun(
            "its `helm` commands need Helm and a chart release; tests/helm_adoption_e2e.rs \
             performs each of its steps with the chart's objects",
        ),
    ),
    (
        "driver-settings",
        Guide::NotRun(
            "its commands change the Cinder driver the later guides use; real_kubernetes.rs \
             (driver_settings_take_effect_and_are_kept_on_a_real_control_plane) runs them with \
             the real kubectl, and kubernetes_e2e.rs plays every key on kube-sim",
        ),
    ),
    (
        "manila-network",
        Guide::NotRun(
            "diagnosis on a real cloud with the `openstack` CLI and `oc debug node`, neither of \
             which the testbed has",
        ),
    ),
    (
        "compatibility",
        Guide::NotRun(
            "its one block is the rollback runbook, which needs the state OpenShift's Go \
             operators leave after a rollback: upgrade_from_go.rs runs it against that state \
             (`oc` played by kubectl) and checks it removes exactly our condition types",
        ),
    ),
    (
        "metrics",
        Guide::NotRun(
            "`oc exec` into a pod and OpenShift monitoring's service account; kube-sim runs pods \
             as processes without exec",
        ),
    ),
    (
        "image",
        Guide::NotRun(
            "needs podman or docker and a registry; CI runs the build stage, hack/build-product.sh",
        ),
    ),
    (
        "hypershift",
        Guide::NotRun(
            "a hosted control plane needs two clusters: real_hypershift.rs runs it against \
             the management and guest control planes it has just converged",
        ),
    ),
    (
        "e2e",
        Guide::NotRun(
            "the upstream Kubernetes storage e2e suite (ginkgo, downloaded from dl.k8s.io) \
             against a real cluster: it mounts volumes, which the testbed cannot",
        ),
    ),
];

/// The operator image docs/install-kubernetes.md's overlay names (the user's own registry; the
/// base's placeholder image is not run, so a guide that forgot to set it fails).
const INSTALLED_IMAGE: &str = "registry.example.com/storage/csi-operator:v0.1.0";
/// The operator image docs/upgrade.md's overlay names (the same binary, under a new tag).
const UPGRADED_IMAGE: &str = "registry.example.com/storage/csi-operator:v0.1.1";

/// How a guide is tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guide {
    /// Run by [`the_openshift_guide_runs_end_to_end`].
    OpenShift,
    /// Run, in [`GUIDES`] order, by [`the_kubernetes_guides_run_end_to_end`].
    Kubernetes,
    /// Not run, for this reason.
    NotRun(&'static str),
}

/// The chart's Secret a user coming from the upstream Helm charts has (install-kubernetes.md
/// converts it with `csi-operator convert-cloud-conf`).
fn chart_cloud_config(bed: &testbed::Testbed) -> Secret {
    let conf = format!(
        "[Global]\nauth-url = {}\nusername = {}\npassword = {}\ntenant-name = {}\n\
         domain-name = Default\nregion = {}\n",
        bed.openstack.auth_url(),
        openstack_sim::DEFAULT_USER,
        openstack_sim::DEFAULT_PASSWORD,
        openstack_sim::DEFAULT_PROJECT,
        bed.openstack.region(),
    );
    Secret {
        metadata: ObjectMeta {
            name: Some("cloud-config".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "cloud.conf".to_owned(),
            ByteString(conf.into_bytes()),
        )])),
        ..Default::default()
    }
}

/// `clouds_yaml` without its `cacert:` line.
fn without_cacert(clouds_yaml: &str) -> String {
    let kept: Vec<&str> = clouds_yaml
        .lines()
        .filter(|l| !l.trim_start().starts_with("cacert:"))
        .collect();
    assert_ne!(
        kept.len(),
        clouds_yaml.lines().count(),
        "a clouds.yaml with a CA"
    );
    kept.join("\n") + "\n"
}

/// The Cinder controller's `operator.openshift.io/dep-…` pod-template annotations (empty
/// before it exists).
async fn controller_hashes(bed: &testbed::Testbed) -> BTreeMap<String, String> {
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(
        bed.client.clone(),
        "openshift-cluster-csi-drivers",
    )
    .get_opt("openstack-cinder-csi-driver-controller")
    .await
    .ok()
    .flatten()
    .and_then(|d| d.spec?.template.metadata?.annotations)
    .unwrap_or_default()
    .into_iter()
    .filter(|(k, _)| k.starts_with("operator.openshift.io/dep-"))
    .collect()
}

/// Runs guide `name` in `work` off the async runtime (kube-sim serves from it).
async fn run_guide(work: &std::sync::Arc<Workdir>, name: &'static str) {
    let work = work.clone();
    tokio::task::spawn_blocking(move || work.run_guide(name))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_guides_run_end_to_end() {
    let mut settings = Settings::plain_kubernetes();
    // kubectl sends its bearer token only over HTTPS; the cloud has its own CA, as most do.
    settings.kube.tls = true;
    settings.openstack.tls = true;
    settings.openstack.share_types = Some(vec![openstack_sim::SimShareType::new("default")]);
    // The operator image install-kubernetes.md sets first, and the one upgrade.md moves to.
    let processes = ProcessConfig::default()
        .with_image(INSTALLED_IMAGE, csi_operator(&[]))
        .with_image(UPGRADED_IMAGE, csi_operator(&[]));
    let chain = Chain::bare(settings, processes).await;
    let bed = &chain.bed;
    Api::<Secret>::namespaced(bed.client.clone(), "kube-system")
        .create(&PostParams::default(), &chart_cloud_config(bed))
        .await
        .expect("the chart's cloud-config Secret");

    let work = std::sync::Arc::new(Workdir::new("kubernetes", &bed.kube.kubeconfig("admin")));
    // The user's clouds.yaml names their CA by a path on their machine, which a pod cannot
    // follow (kube-sim's "pods" are local processes and could): it goes without, and the CA
    // travels as the Secret's `cacert` key, as the guide says.
    work.provide("clouds.yaml", &without_cacert(&bed.clouds_yaml()));
    work.provide(
        "ca.pem",
        bed.openstack.ca_pem().expect("openstack-sim's CA"),
    );
    work.provide(".config/openstack/clouds.yaml", &bed.clouds_yaml());

    for (name, how) in GUIDES {
        if *how != Guide::Kubernetes {
            continue;
        }
        if *name == "rotate-credentials" {
            // Step 1 of the guide, in Keystone: a new password (which revokes the old one's
            // tokens at once, the harder case), and the user's new clouds.yaml.
            bed.openstack
                .set_password(openstack_sim::DEFAULT_USER, "rotated-password");
            // The user's own clouds.yaml follows (cleanup.md reads it later).
            work.provide(
                ".config/openstack/clouds.yaml",
                &bed.openstack.clouds_yaml_password(
                    "openstack",
                    openstack_sim::DEFAULT_USER,
                    "rotated-password",
                ),
            );
            work.provide(
                "new-clouds.yaml",
                &without_cacert(&bed.openstack.clouds_yaml_password(
                    "openstack",
                    openstack_sim::DEFAULT_USER,
                    "rotated-password",
                )),
            );
        }
        let before = controller_hashes(bed).await;
        run_guide(&work, name).await;
        if *name == "rotate-credentials" {
            // `rollout status` may have looked before the operator rolled anything: the roll
            // itself is checked here.
            chain
                .wait(
                    "the controller to roll with the new credentials",
                    || async {
                        let now = controller_hashes(bed).await;
                        if now != before {
                            Ok(())
                        } else {
                            Err(format!("{now:?}"))
                        }
                    },
                )
                .await;
        }
        if *name == "install-kubernetes" {
            // What the guide's own checks cannot see: every operator request was allowed by
            // the RBAC the base ships, and every pod passed Pod Security admission.
            chain.assert_no_denials();
            assert!(chain.wait_pods_admitted().await >= 5);
        }
    }
    let left = work.sh_until(
        "test -z \"$(kubectl get ns openshift-cluster-csi-drivers --ignore-not-found -o name)\" && echo gone",
        Duration::from_secs(60),
    );
    assert!(left.contains("gone"), "{left}");
}

/// Every page of docs/ that has a `sh` block is in [`GUIDES`], so a new guide cannot go
/// untested by forgetting to list it.
#[test]
fn every_page_with_commands_is_run() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&docs).expect("docs/") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let blocks = runner::blocks(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let runs = blocks.iter().any(|b| b.info == "sh");
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if runs && !GUIDES.iter().any(|(g, _)| *g == name) {
            missing.push(name.to_owned());
        }
        if GUIDES.iter().any(|(g, _)| *g == name) {
            runner::steps(&blocks).unwrap_or_else(|e| panic!("docs/{name}.md: {e}"));
        }
    }
    for (name, _) in GUIDES {
        let text = std::fs::read_to_string(docs.join(format!("{name}.md")))
            .unwrap_or_else(|e| panic!("GUIDES names docs/{name}.md: {e}"));
        let blocks = runner::blocks(&text).expect("parses");
        assert!(
            blocks.iter().any(|b| b.info == "sh"),
            "GUIDES names docs/{name}.md, which has no `sh` block"
        );
    }
    assert!(
        missing.is_empty(),
        "docs with `sh` blocks that no guide test runs: {missing:?}; run them in tests/guides.rs \
         or mark reading-only blocks `text`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openshift_guide_runs_end_to_end() {
    let mut settings = Settings::for_cluster_storage_operator();
    settings.kube.tls = true;
    let manifests = release(None, &[]);
    let chain = Chain::start(
        settings,
        processes_for(&manifests),
        Some("OpenStack"),
        &manifests,
    )
    .await;
    let bed = &chain.bed;
    let work = std::sync::Arc::new(Workdir::new("openshift", &bed.kube.kubeconfig("admin")));
    for (name, how) in GUIDES {
        if *how == Guide::OpenShift {
            run_guide(&work, name).await;
        }
    }
    chain.assert_no_denials();
}
