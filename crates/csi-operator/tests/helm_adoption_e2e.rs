//! End-to-end test of switching from the upstream cinder-csi-plugin Helm chart to the Cinder
//! operator on plain Kubernetes, as docs/switch-from-helm.md has the administrator do it: the
//! cluster holds what `helm install cinder-csi -n kube-system` leaves (the CSIDriver, the two
//! StorageClasses with Helm's ownership metadata, the controller Deployment and node DaemonSet;
//! kube-sim serves no PersistentVolumes, so existing volumes are checked by the operator never
//! asking for one). The administrator applies `manifests/adopt-helm-cinder` (the base, `--adopt-helm-release=kube-system/cinder-csi`, the
//! adoption RBAC) with RBAC enforced, then runs `helm uninstall`, which deletes every object of
//! the release (simulated here by deleting them). The operator must adopt without starting its
//! own node plugin beside the chart's, bring the CSIDriver and classes back with the chart's
//! immutable fields after the uninstall, start its driver only then, leave the volumes alone,
//! say what it did in its conditions, and go quiet.

mod common;

use std::collections::BTreeMap;

use common::chain::*;
use common::kubernetes::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use kube::api::{Api, DeleteParams, DynamicObject, ObjectMeta, PostParams};
use kube_sim::ProcessConfig;
use serde_json::{Value, json};
use testbed::Settings;

const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const CR: &str = "cinder.csi.openstack.org";
const OVERLAY: &str = "../../manifests/adopt-helm-cinder";

/// `kubectl apply -k manifests/adopt-helm-cinder`: the base's objects with the overlay's patch
/// (JSON-patch `add`s) applied to its target, then the overlay's own resources.
fn overlay_objects() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(OVERLAY);
    let text = std::fs::read_to_string(dir.join("kustomization.yaml")).expect("kustomization");
    let k = operator_kit::assets::parse_values("kustomization.yaml", &text)
        .expect("parses")
        .remove(0);
    let mut objects = base_objects();
    for p in k["patches"].as_array().expect("patches") {
        let (kind, name) = (&p["target"]["kind"], &p["target"]["name"]);
        let ops = operator_kit::assets::parse_values("patch", p["patch"].as_str().expect("text"))
            .expect("the patch parses")
            .remove(0);
        let target = objects
            .iter_mut()
            .find(|o| &o["kind"] == kind && &o["metadata"]["name"] == name)
            .expect("the patch's target is in the base");
        for op in ops.as_array().expect("JSON-patch ops") {
            assert_eq!(op["op"], "add", "{op}");
            let path = op["path"].as_str().expect("path");
            let parent = path.strip_suffix("/-").expect("an append");
            target
                .pointer_mut(parent)
                .and_then(Value::as_array_mut)
                .unwrap_or_else(|| panic!("{parent} is an array"))
                .push(op["value"].clone());
        }
    }
    // kustomize orders its output by kind, RBAC before workloads: the overlay's rules exist
    // before the operator that needs them starts.
    let first_workload = objects
        .iter()
        .position(|o| o["kind"] == "Deployment")
        .expect("the base has Deployments");
    let mut added = Vec::new();
    for r in k["resources"].as_array().expect("resources") {
        let r = r.as_str().expect("a path");
        if r == "../kubernetes" {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(r)).expect("an overlay file");
        added.extend(operator_kit::assets::parse_values(r, &text).expect("parses"));
    }
    assert!(added.iter().all(|o| o["kind"] != "Deployment"));
    objects.splice(first_workload..first_workload, added);
    objects
}

async fn create(client: &kube::Client, objects: &[Value]) {
    let refused = kubectl_apply(client, objects).await;
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

fn helm_metadata(meta: &ObjectMeta) -> Vec<String> {
    let mut found: Vec<String> = meta
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("meta.helm.sh/"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if let Some(v) = meta
        .labels
        .as_ref()
        .and_then(|l| l.get("app.kubernetes.io/managed-by"))
    {
        found.push(format!("app.kubernetes.io/managed-by={v}"));
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helm_install_is_adopted_and_survives_helm_uninstall() {
    let objects = overlay_objects();
    let operator = operator_deployments(&objects)
        .into_iter()
        .find(|d| d["metadata"]["name"] == CINDER_OPERATOR)
        .expect("the Cinder operator")
        .clone();
    assert!(
        operator["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .expect("args")
            .contains(&json!("--adopt-helm-release=kube-system/cinder-csi")),
        "the overlay adds the flag"
    );
    // Only the Cinder operator runs: Manila is not part of this switch.
    let objects: Vec<Value> = objects
        .into_iter()
        .filter(|o| !(o["kind"] == "Deployment" && o["metadata"]["name"] != CINDER_OPERATOR))
        .collect();
    let image = operator["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .expect("an image");
    let processes = ProcessConfig::default().with_image(image, csi_operator(&[]));
    let chain = Chain::bare(Settings::plain_kubernetes(), processes).await;
    let bed = &chain.bed;
    let client = &bed.client;

    // What `helm install` left. (kube-sim serves no PersistentVolume or claim, so the
    // application's volumes are checked below by what the operator asked of them: nothing.)
    create(client, &chart_objects()).await;
    let chart_driver = Api::<CSIDriver>::all(client.clone())
        .get(CR)
        .await
        .expect("the chart's CSIDriver");

    // `kubectl apply -k manifests/adopt-helm-cinder` and the credentials.
    create(client, &objects).await;
    let clouds = format!(
        "clouds:\n  openstack:\n    auth:\n      auth_url: {}\n      username: {}\n      password: {}\n      project_name: {}\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: {}\n",
        bed.openstack.auth_url(),
        openstack_sim::DEFAULT_USER,
        openstack_sim::DEFAULT_PASSWORD,
        openstack_sim::DEFAULT_PROJECT,
        bed.openstack.region(),
    );
    let mut data = BTreeMap::from([("clouds.yaml".to_owned(), ByteString(clouds.into_bytes()))]);
    if let Some(ca) = bed.openstack.ca_pem() {
        data.insert("cacert".to_owned(), ByteString(ca.as_bytes().to_vec()));
    }
    Api::<Secret>::namespaced(client.clone(), DRIVERS_NS)
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("openstack-cloud-credentials".into()),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            },
        )
        .await
        .expect("credentials");
    chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;

    // Adopted: the record written, Helm's ownership removed, and the operator's own controller
    // and node plugin held back while the chart's still run (one node plugin per socket).
    let progressing = "HelmReleaseAdoptionProgressing";
    let waiting = chain
        .wait("the adoption to wait for helm uninstall", || async {
            let c = chain.cr_conditions(CR).await;
            match c.get(progressing) {
                Some((s, r, m)) if s == "True" && r == "WaitingForHelmUninstall" => Ok(m.clone()),
                other => Err(format!("{other:?} in {c:#?}")),
            }
        })
        .await;
    assert!(
        waiting.contains("helm uninstall cinder-csi -n kube-system")
            && waiting.contains("DaemonSet kube-system/openstack-cinder-csi-nodeplugin"),
        "{waiting}"
    );
    let record = Api::<ConfigMap>::namespaced(client.clone(), DRIVERS_NS)
        .get(cinder::helm_adoption::RECORD_CONFIGMAP)
        .await
        .expect("the adoption record");
    let record = cinder::helm_adoption::parse_record(
        record.data.as_ref(),
        &"kube-system/cinder-csi".parse().expect("release"),
    )
    .expect("the record parses");
    assert_eq!(record.storage_classes.len(), 2, "{record:#?}");
    assert!(record.not_adopted.is_empty(), "{record:#?}");
    chain
        .wait("Helm's ownership metadata to be removed", || async {
            let d = Api::<CSIDriver>::all(client.clone())
                .get(CR)
                .await
                .map_err(|e| e.to_string())?;
            let mut left = helm_metadata(&d.metadata);
            for name in ["csi-cinder-sc-delete", "csi-cinder-sc-retain"] {
                let c = Api::<StorageClass>::all(client.clone())
                    .get(name)
                    .await
                    .map_err(|e| e.to_string())?;
                left.extend(helm_metadata(&c.metadata));
            }
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        })
        .await;
    // The CSIDriver was neither deleted nor given another spec while the chart's driver ran.
    let adopted = Api::<CSIDriver>::all(client.clone())
        .get(CR)
        .await
        .expect("the CSIDriver");
    assert_eq!(adopted.metadata.uid, chart_driver.metadata.uid);
    assert_eq!(adopted.spec, chart_driver.spec);
    let ours = Api::<DaemonSet>::namespaced(client.clone(), DRIVERS_NS);
    assert!(
        ours.get_opt("openstack-cinder-csi-driver-node")
            .await
            .expect("get")
            .is_none(),
        "the operator's node plugin must not start beside the chart's"
    );
    assert!(
        Api::<Deployment>::namespaced(client.clone(), DRIVERS_NS)
            .get_opt("openstack-cinder-csi-driver-controller")
            .await
            .expect("get")
            .is_none()
    );
    let c = chain.cr_conditions(CR).await;
    assert_eq!(
        c.get("OpenStackCinderDriverNodeServiceControllerAvailable")
            .map(|(s, r, _)| (s.as_str(), r.as_str())),
        Some(("False", "WaitingForHelmUninstall")),
        "{c:#?}"
    );

    // The operator restarts (scaled to 0 and back): the adoption is read back from its record
    // (the live objects no longer carry Helm's metadata, so they could not be adopted again),
    // and it still waits.
    let operators = Api::<Deployment>::namespaced(client.clone(), DRIVERS_NS);
    for replicas in [0, 1] {
        operators
            .patch(
                CINDER_OPERATOR,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("scale the operator");
        if replicas == 0 {
            chain
                .wait("the operator to stop", || async {
                    let running: Vec<_> = chain
                        .pods(DRIVERS_NS, CINDER_OPERATOR)
                        .into_iter()
                        .filter(|p| p.running())
                        .collect();
                    if running.is_empty() {
                        Ok(())
                    } else {
                        Err(format!("{running:?}"))
                    }
                })
                .await;
        }
    }
    let restarted = chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;
    chain
        .wait(
            "the restarted operator to read the adoption record",
            || async {
                let output = chain
                    .bed
                    .kube
                    .process_output(DRIVERS_NS, &restarted.pod)
                    .unwrap_or_default();
                if output.contains("the Helm release was adopted before") {
                    Ok(())
                } else {
                    Err(output)
                }
            },
        )
        .await;
    let c = chain.cr_conditions(CR).await;
    assert_eq!(
        c.get("HelmReleaseAdoptionDegraded").map(|c| c.0.as_str()),
        Some("False"),
        "{c:#?}"
    );
    assert_eq!(
        c.get(progressing).map(|c| c.1.as_str()),
        Some("WaitingForHelmUninstall"),
        "{c:#?}"
    );
    assert!(
        ours.get_opt("openstack-cinder-csi-driver-node")
            .await
            .expect("get")
            .is_none(),
        "still held back after the restart"
    );

    // `helm uninstall cinder-csi -n kube-system`: every object of the release's manifest.
    for o in chart_objects().iter().rev() {
        let (group, version) = o["apiVersion"]
            .as_str()
            .expect("apiVersion")
            .split_once('/')
            .expect("grouped");
        let ar = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            group,
            version,
            o["kind"].as_str().expect("kind"),
        ));
        let name = o["metadata"]["name"].as_str().expect("name");
        let api: Api<DynamicObject> = match o["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        api.delete(name, &DeleteParams::background())
            .await
            .unwrap_or_else(|e| panic!("helm uninstall deletes {name}: {e}"));
    }

    // The driver comes up, and the adopted objects are back as the chart made them.
    let conditions = chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    let (status, reason, message) = conditions
        .get(progressing)
        .cloned()
        .expect("the adoption's condition");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Adopted"));
    assert!(
        message.contains("csi-cinder-sc-delete, csi-cinder-sc-retain"),
        "{message}"
    );
    assert_eq!(
        conditions
            .get("HelmReleaseAdoptionDegraded")
            .map(|c| c.0.as_str()),
        Some("False")
    );
    let driver = chain
        .wait("the CSIDriver to be re-created", || async {
            Api::<CSIDriver>::all(client.clone())
                .get_opt(CR)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "absent".to_owned())
        })
        .await;
    assert_ne!(driver.metadata.uid, chart_driver.metadata.uid, "re-created");
    assert_eq!(driver.spec, chart_driver.spec, "the chart's spec is kept");
    assert!(helm_metadata(&driver.metadata).is_empty());
    let classes = Api::<StorageClass>::all(client.clone());
    for (name, reclaim, expand, default) in [
        ("csi-cinder-sc-delete", "Delete", true, Some("true")),
        ("csi-cinder-sc-retain", "Retain", false, None),
    ] {
        let c = chain
            .wait(&format!("{name} to be re-created"), || async {
                classes
                    .get_opt(name)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| "absent".to_owned())
            })
            .await;
        assert_eq!(c.provisioner, CR, "{name}");
        assert_eq!(c.reclaim_policy.as_deref(), Some(reclaim), "{name}");
        assert_eq!(c.allow_volume_expansion, Some(expand), "{name}");
        assert_eq!(
            c.volume_binding_mode.as_deref(),
            Some("Immediate"),
            "{name}"
        );
        assert_eq!(c.parameters, None, "{name}");
        assert_eq!(
            c.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("storageclass.kubernetes.io/is-default-class"))
                .map(String::as_str),
            default,
            "{name}"
        );
        assert!(helm_metadata(&c.metadata).is_empty(), "{name}");
    }
    // One default class: the operator's own standard-csi did not become a second one.
    let defaults: Vec<String> = classes
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("storageclass.kubernetes.io/is-default-class"))
                .map(String::as_str)
                == Some("true")
        })
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(defaults, ["csi-cinder-sc-delete"]);

    // Existing volumes are not the operator's business: it never asked for a volume, a claim
    // or an attachment, and it wrote nothing in the release's namespace.
    let user = format!("system:serviceaccount:{DRIVERS_NS}:{CINDER_OPERATOR}");
    let touched: Vec<String> = bed
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.user == user)
        .filter(|r| {
            matches!(
                r.resource.as_str(),
                "/persistentvolumes"
                    | "/persistentvolumeclaims"
                    | "storage.k8s.io/volumeattachments"
            ) || (r.namespace == RELEASE_NS && r.is_write())
        })
        .map(|r| format!("{} {}", r.verb, r.path))
        .collect();
    assert!(touched.is_empty(), "{touched:#?}");
    // What it wrote of the adopted objects: the CSIDriver's metadata (its own annotations) and
    // Helm's ownership removed from each before the uninstall, a create of each after it;
    // nothing repeated.
    let mut writes: Vec<String> = bed
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.user == user && r.is_write() && (200..300).contains(&r.code))
        .filter(|r| {
            r.resource == "storage.k8s.io/csidrivers"
                || (r.resource == "storage.k8s.io/storageclasses"
                    && r.name.starts_with("csi-cinder-sc-"))
        })
        .map(|r| format!("{} {}", r.verb, r.name))
        .collect();
    writes.sort();
    assert_eq!(
        writes,
        [
            "create cinder.csi.openstack.org",
            "create csi-cinder-sc-delete",
            "create csi-cinder-sc-retain",
            "patch cinder.csi.openstack.org",
            "patch csi-cinder-sc-delete",
            "patch csi-cinder-sc-retain",
            "update cinder.csi.openstack.org",
        ]
    );
    assert_eq!(
        chain
            .bed
            .kube
            .requests()
            .iter()
            .filter(|r| r.user == user
                && r.resource == "/configmaps"
                && r.name == cinder::helm_adoption::RECORD_CONFIGMAP
                && r.is_write())
            .count(),
        1,
        "the record is written once"
    );
    chain.assert_no_denials();

    // And it goes quiet: no write storm over the adopted objects.
    common::wait_quiet_as(bed, &user).await;
}

/// The release named is not what holds the CSIDriver (here: a CSIDriver without Helm's
/// ownership, as a hand-made install leaves it): the operator says so and changes nothing —
/// no record, the CSIDriver as it was, no driver workloads of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_not_of_the_release_is_reported_and_left_alone() {
    let objects = overlay_objects();
    let operator = operator_deployments(&objects)
        .into_iter()
        .find(|d| d["metadata"]["name"] == CINDER_OPERATOR)
        .expect("the Cinder operator")
        .clone();
    let objects: Vec<Value> = objects
        .into_iter()
        .filter(|o| !(o["kind"] == "Deployment" && o["metadata"]["name"] != CINDER_OPERATOR))
        .collect();
    let image = operator["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .expect("an image");
    let processes = ProcessConfig::default().with_image(image, csi_operator(&[]));
    let chain = Chain::bare(Settings::plain_kubernetes(), processes).await;
    let client = &chain.bed.client;

    let mut foreign = chart_objects().remove(0);
    foreign["metadata"] = json!({"name": CR});
    create(client, &[foreign]).await;
    let before = Api::<CSIDriver>::all(client.clone())
        .get(CR)
        .await
        .expect("the CSIDriver");
    create(client, &objects).await;
    chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;

    let message = chain
        .wait("the adoption to be refused", || async {
            let c = chain.cr_conditions(CR).await;
            match c.get("HelmReleaseAdoptionDegraded") {
                Some((s, _, m)) if s == "True" => Ok(m.clone()),
                other => Err(format!("{other:?} in {c:#?}")),
            }
        })
        .await;
    assert!(
        message.contains("no Helm ownership annotations")
            && message.contains("kube-system/cinder-csi")
            && message.contains("nothing was changed"),
        "{message}"
    );
    let c = chain.cr_conditions(CR).await;
    assert_eq!(
        c.get("OpenStackCinderDriverNodeServiceControllerAvailable")
            .map(|(s, r, _)| (s.as_str(), r.as_str())),
        Some(("False", "HelmReleaseNotAdopted")),
        "{c:#?}"
    );
    let after = Api::<CSIDriver>::all(client.clone())
        .get(CR)
        .await
        .expect("the CSIDriver");
    assert_eq!(after.metadata, before.metadata);
    assert_eq!(after.spec, before.spec);
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), DRIVERS_NS)
            .get_opt(cinder::helm_adoption::RECORD_CONFIGMAP)
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        Api::<DaemonSet>::namespaced(client.clone(), DRIVERS_NS)
            .get_opt("openstack-cinder-csi-driver-node")
            .await
            .expect("get")
            .is_none()
    );
    let user = format!("system:serviceaccount:{DRIVERS_NS}:{CINDER_OPERATOR}");
    let deletes: Vec<String> = chain
        .bed
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.user == user && r.verb == "delete")
        .map(|r| r.path)
        .collect();
    assert!(deletes.is_empty(), "{deletes:#?}");
    chain.assert_no_denials();
}
