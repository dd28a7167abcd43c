//! The release conventions of `manifests/openshift/`, checked the way a release is cut: `oc adm
//! release new` reads `image-references` (an ImageStream, one tag per image, `from.name` the
//! pull spec the manifests use), replaces every occurrence of each pull spec in the manifests
//! with the release's image for that tag, and replaces the placeholder version
//! `0.0.1-snapshot` with the release version. The substituted release must hold no placeholder
//! any more, and the chain installed from it must report the release version in
//! `ClusterOperator/storage` (the cluster version operator waits for that before it calls an
//! upgrade done).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use common::chain::*;
use common::*;
use serde_json::{Value, json};
use testbed::Settings;

const PLACEHOLDER_VERSION: &str = "0.0.1-snapshot";
const RELEASE_VERSION: &str = "4.99.7";
/// The release image's repository; each tag becomes `<repository>@sha256:<digest of tag>`.
const RELEASE_REPO: &str = "registry.example.com/ocp/release";

/// `image-references`: tag name → the pull spec the manifests use.
fn image_references() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(manifest_dir().join("image-references"))
        .expect("manifests/openshift/image-references exists");
    let docs = operator_kit::assets::parse_values("image-references", &text).expect("YAML");
    assert_eq!(docs.len(), 1);
    let stream = &docs[0];
    assert_eq!(stream["kind"], "ImageStream");
    assert_eq!(stream["apiVersion"], "image.openshift.io/v1");
    let mut tags = BTreeMap::new();
    for t in stream["spec"]["tags"].as_array().expect("spec.tags") {
        assert_eq!(t["from"]["kind"], "DockerImage", "{t}");
        let name = t["name"].as_str().expect("tag name").to_owned();
        let spec = t["from"]["name"].as_str().expect("from.name").to_owned();
        assert!(
            tags.insert(name.clone(), spec).is_none(),
            "tag {name} listed twice"
        );
    }
    let specs: BTreeSet<&String> = tags.values().collect();
    assert_eq!(specs.len(), tags.len(), "one tag per image: {tags:#?}");
    tags
}

/// A digest pull spec for `tag` in the release, as the release tooling writes it.
fn release_pull_spec(tag: &str) -> String {
    // Any stable 64-hex-digit string stands for the digest.
    let hex: String = tag
        .bytes()
        .cycle()
        .take(32)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{RELEASE_REPO}@sha256:{hex}")
}

/// The raw manifest files, by name.
fn manifest_files() -> BTreeMap<String, String> {
    std::fs::read_dir(manifest_dir())
        .expect("manifests/openshift")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, std::fs::read_to_string(&p).expect("readable"))
        })
        .collect()
}

/// The release tooling's substitution over every manifest's text.
fn substitute(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let refs = image_references();
    files
        .iter()
        .map(|(name, text)| {
            let mut out = text.clone();
            for (tag, spec) in &refs {
                out = out.replace(spec.as_str(), &release_pull_spec(tag));
            }
            (
                name.clone(),
                out.replace(PLACEHOLDER_VERSION, RELEASE_VERSION),
            )
        })
        .collect()
}

/// The CSO Deployment's container: `(image, env name → value)`.
fn cso_container(manifests: &[testbed::cvo::Manifest]) -> (String, BTreeMap<String, String>) {
    let d = manifests
        .iter()
        .find(|m| {
            m.object["kind"] == "Deployment" && m.object["metadata"]["name"] == CSO_DEPLOYMENT
        })
        .expect("the CSO Deployment");
    let c = &d.object["spec"]["template"]["spec"]["containers"][0];
    let env = c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_owned(),
                e["value"].as_str()?.to_owned(),
            ))
        })
        .collect();
    (c["image"].as_str().unwrap_or_default().to_owned(), env)
}

fn load_from(files: &BTreeMap<String, String>) -> Vec<testbed::cvo::Manifest> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir: PathBuf =
        std::env::temp_dir().join(format!("release-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let loaded = testbed::cvo::load(&dir).expect("the substituted manifests load");
    let _ = std::fs::remove_dir_all(&dir);
    loaded
}

#[test]
fn image_references_name_every_image_of_the_cso_deployment() {
    let refs = image_references();
    let specs: BTreeSet<&str> = refs.values().map(String::as_str).collect();
    let manifests = testbed::cvo::load(&manifest_dir()).expect("manifests load");
    let (image, env) = cso_container(&manifests);
    assert!(specs.contains(image.as_str()), "the CSO image {image}");
    let image_vars: Vec<(&String, &String)> =
        env.iter().filter(|(k, _)| k.ends_with("_IMAGE")).collect();
    assert!(image_vars.len() >= 13, "{image_vars:?}");
    for (name, value) in &image_vars {
        assert!(
            specs.contains(value.as_str()),
            "{name}={value} is not in image-references, so a release would ship the placeholder"
        );
    }
    // Nothing listed that the manifests do not use (the release tooling rejects unused tags).
    let used: BTreeSet<&str> = image_vars
        .iter()
        .map(|(_, v)| v.as_str())
        .chain([image.as_str()])
        .collect();
    assert_eq!(used, specs);
    // One binary runs all three operators: the CSO image is the driver operators' image.
    assert_eq!(env["OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE"], image);
    assert_eq!(env["MANILA_DRIVER_OPERATOR_IMAGE"], image);
    assert_eq!(refs["cluster-storage-operator"], image);
}

#[test]
fn a_substituted_release_holds_no_placeholder() {
    let original = manifest_files();
    let refs = image_references();
    let released = substitute(&original);
    for (name, text) in &released {
        assert!(
            !text.contains(PLACEHOLDER_VERSION),
            "{name}: placeholder version left"
        );
        for spec in refs.values() {
            assert!(!text.contains(spec.as_str()), "{name}: {spec} left");
        }
        // No other example pull spec sneaked past image-references either.
        assert!(
            !text.contains("quay.io/example/"),
            "{name}: a pull spec not listed in image-references"
        );
    }
    let manifests = load_from(&released);
    let (image, env) = cso_container(&manifests);
    assert_eq!(image, release_pull_spec("cluster-storage-operator"));
    assert_eq!(env["OPERATOR_IMAGE_VERSION"], RELEASE_VERSION);
    assert_eq!(env["OPERAND_IMAGE_VERSION"], RELEASE_VERSION);
    assert_eq!(
        env["OPENSTACK_CINDER_DRIVER_IMAGE"],
        release_pull_spec("openstack-cinder-csi-driver")
    );
    let co = manifests
        .iter()
        .find(|m| m.object["kind"] == "ClusterOperator")
        .expect("ClusterOperator manifest");
    assert_eq!(
        co.object["status"]["versions"],
        json!([{"name": "operator", "version": RELEASE_VERSION}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_from_a_substituted_release_reports_the_release_version() {
    let manifests = load_from(&substitute(&manifest_files()));
    let chain = Chain::start(
        Settings::for_cluster_storage_operator(),
        processes_for(&manifests),
        None,
        &manifests,
    )
    .await;
    let co = chain
        .wait_co(&[("Available", "True"), ("Degraded", "False")])
        .await;
    assert_eq!(
        co["status"]["versions"],
        json!([{"name": "operator", "version": RELEASE_VERSION}])
    );
    let pending = testbed::cvo::pending_cluster_operators(&chain.bed.client, &manifests)
        .await
        .expect("readable");
    assert!(pending.is_empty(), "{pending:?}");
    // The driver operators run the release's image, with the release's operand images.
    let cinder = chain.wait_running(NS, CINDER_OPERATOR).await;
    let deployment: Value = serde_json::to_value(
        kube::Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(
            chain.bed.client.clone(),
            NS,
        )
        .get(&cinder.deployment)
        .await
        .expect("the Cinder operator Deployment"),
    )
    .expect("json");
    let text = deployment.to_string();
    assert!(
        text.contains(&release_pull_spec("cluster-storage-operator")),
        "{text}"
    );
    assert!(
        text.contains(&release_pull_spec("openstack-cinder-csi-driver")),
        "{text}"
    );
    assert!(!text.contains("quay.io/example/"), "{text}");
    chain.assert_no_denials();
}
