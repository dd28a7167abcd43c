//! End-to-end tests of the whole chain as it runs on a cluster: kube-sim enforces RBAC and runs
//! every operator pod whose image is the release's operator image as a process of this crate's
//! binary, under its service account; `manifests/openshift/` is applied as the cluster version
//! operator applies it. The CSO pod then creates the Cinder and Manila operator Deployments,
//! whose pods install the drivers. Nothing here plays an operator: the tests only watch.
//!
//! `cso_e2e.rs` pins the CSO's roll-up with the driver operators played by the test; this file
//! proves that the parts work together, and that the RBAC the manifests and the CSO's
//! per-driver assets grant is enough (no request refused) for every operator involved, and
//! that every pod we ship passes OpenShift's pod admission (SCCs and Pod Security), which the
//! CSO chain's testbed settings switch on.

mod common;

use common::chain::*;
use common::*;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::Api;
use serde_json::json;
use testbed::Settings;

/// The chain with the release as shipped.
async fn release_chain(settings: Settings, platform: Option<&str>) -> Chain {
    let manifests = release(None, &[]);
    Chain::start(settings, processes_for(&manifests), platform, &manifests).await
}

/// The names of all StorageClasses.
async fn storage_classes(chain: &Chain) -> Vec<String> {
    Api::<StorageClass>::all(chain.bed.client.clone())
        .list(&Default::default())
        .await
        .expect("list StorageClasses")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openstack_with_manila_comes_up_through_the_cso_with_every_rbac_rule_granted() {
    let chain = release_chain(Settings::for_cluster_storage_operator(), None).await;

    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    chain.wait_driver(MANILA_CR, &MANILA_AVAILABLE).await;
    let co = chain.wait_co(&HEALTHY).await;
    assert_eq!(
        co["status"]["versions"],
        json!([{"name": "operator", "version": "0.0.1-snapshot"}])
    );
    chain
        .wait("the Cinder and Manila StorageClasses", || async {
            let names = storage_classes(&chain).await;
            if names.iter().any(|n| n == STORAGE_CLASS)
                && names.iter().any(|n| n == "csi-manila-default")
            {
                Ok(())
            } else {
                Err(format!("{names:?}"))
            }
        })
        .await;

    // Every operator ran as its own pod, under its own service account.
    for (ns, name) in [
        (CSO_NS, CSO_DEPLOYMENT),
        (NS, CINDER_OPERATOR),
        (NS, MANILA_OPERATOR),
    ] {
        let pod = chain.wait_running(ns, name).await;
        assert_eq!(pod.restarts, 0, "{pod:#?}\n{}", chain.report());
    }
    chain.assert_no_denials();
    // Every pod we ship passes OpenShift's admission (SCCs, Pod Security): the CSO, both driver
    // operators, and both drivers' controllers and node plugins.
    let workloads = chain.wait_pods_admitted().await;
    assert!(
        workloads >= 8,
        "only {workloads} Deployments and DaemonSets"
    );

    // Each object was created (or its status written) by the operator that owns it, as its
    // service account.
    const CLUSTER_CSI_DRIVERS: &str = "operator.openshift.io/clustercsidrivers";
    const DEPLOYMENTS: &str = "apps/deployments";
    const DAEMONSETS: &str = "apps/daemonsets";
    const STORAGE_CLASSES: &str = "storage.k8s.io/storageclasses";
    const LEASES: &str = "coordination.k8s.io/leases";
    let created = [
        (DEPLOYMENTS, NS, CINDER_OPERATOR, CSO_USER),
        (DEPLOYMENTS, NS, MANILA_OPERATOR, CSO_USER),
        (CLUSTER_CSI_DRIVERS, "", CR, CSO_USER),
        (CLUSTER_CSI_DRIVERS, "", MANILA_CR, CSO_USER),
        (DEPLOYMENTS, NS, CONTROLLER, OPERATOR_USER),
        (DAEMONSETS, NS, NODE, OPERATOR_USER),
        (STORAGE_CLASSES, "", STORAGE_CLASS, OPERATOR_USER),
        (
            DEPLOYMENTS,
            MANILA_NS,
            MANILA_CONTROLLER,
            MANILA_OPERATOR_USER,
        ),
        (DAEMONSETS, MANILA_NS, MANILA_NODE, MANILA_OPERATOR_USER),
        (
            STORAGE_CLASSES,
            "",
            "csi-manila-default",
            MANILA_OPERATOR_USER,
        ),
        (LEASES, CSO_NS, "cluster-storage-operator-lock", CSO_USER),
        (
            LEASES,
            NS,
            "openstack-cinder-csi-driver-operator-lock",
            OPERATOR_USER,
        ),
        (
            LEASES,
            NS,
            "openstack-manila-csi-driver-operator-lock",
            MANILA_OPERATOR_USER,
        ),
    ];
    for (resource, ns, name, user) in created {
        assert_eq!(
            chain.writers(Some("create"), resource, Some(""), ns, name),
            [user.to_string()].into(),
            "creators of {resource} {ns}/{name}"
        );
    }
    let status = [
        (CLUSTER_CSI_DRIVERS, CR, OPERATOR_USER),
        (CLUSTER_CSI_DRIVERS, MANILA_CR, MANILA_OPERATOR_USER),
        ("config.openshift.io/clusteroperators", "storage", CSO_USER),
        ("operator.openshift.io/storages", "cluster", CSO_USER),
    ];
    for (resource, name, user) in status {
        assert_eq!(
            chain.writers(None, resource, Some("status"), "", name),
            [user.to_string()].into(),
            "status writers of {resource} {name}"
        );
    }
    let users: std::collections::BTreeSet<String> = chain
        .bed
        .kube
        .requests()
        .into_iter()
        .map(|r| r.user)
        .collect();
    assert_eq!(
        users,
        ["admin", CSO_USER, OPERATOR_USER, MANILA_OPERATOR_USER]
            .map(str::to_string)
            .into(),
        "nobody else talks to the API server"
    );

    // Not opted in, the optional SMB driver is not started: no operator, no ClusterCSIDriver,
    // no condition of it on Storage/cluster (OpenShift installs SMB through OLM).
    assert!(deployment_in(&chain.bed, NS, SMB_OPERATOR).await.is_none());
    assert!(
        cluster_object(
            &chain.bed,
            "operator.openshift.io/v1",
            "ClusterCSIDriver",
            SMB_CR
        )
        .await
        .is_none()
    );
    let st = conditions_of(&storage(&chain.bed).await);
    assert!(
        !st.keys().any(|t| t.starts_with("Samba")),
        "{:?}",
        st.keys()
    );
}

/// The ClusterCSIDriver of the SMB driver and its operator.
const SMB_CR: &str = "smb.csi.k8s.io";
const SMB_OPERATOR: &str = "smb-csi-driver-operator";
const SMB_OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:smb-csi-driver-operator";
/// The Available conditions of an SMB driver that is up.
const SMB_AVAILABLE: [&str; 2] = [
    "SambaDriverControllerServiceControllerAvailable",
    "SambaDriverNodeServiceControllerAvailable",
];

/// The release with the CSO opted in to SMB as docs/smb.md has the administrator do it: the
/// CSO Deployment's `CSO_OPTIONAL_DRIVERS=smb` and the SMB images.
fn release_with_smb() -> Vec<testbed::cvo::Manifest> {
    let mut manifests = release(None, &[]);
    let cso = manifests
        .iter_mut()
        .find(|m| {
            m.object["kind"] == "Deployment" && m.object["metadata"]["name"] == CSO_DEPLOYMENT
        })
        .expect("the CSO Deployment manifest");
    let env = cso.object["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .expect("the CSO's env");
    for (name, value) in [
        ("CSO_OPTIONAL_DRIVERS", "smb"),
        ("SMB_DRIVER_OPERATOR_IMAGE", RELEASE_IMAGE),
        ("SMB_DRIVER_IMAGE", "quay.io/example/smb-csi-driver:v4.20"),
    ] {
        env.push(json!({"name": name, "value": value}));
    }
    manifests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opted_in_the_cso_starts_the_smb_operator_which_installs_its_driver() {
    let manifests = release_with_smb();
    let chain = Chain::start(
        Settings::for_cluster_storage_operator(),
        processes_for(&manifests),
        None,
        &manifests,
    )
    .await;

    chain.wait_driver(SMB_CR, &SMB_AVAILABLE).await;
    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    let co = chain.wait_co(&HEALTHY).await;
    let pod = chain.wait_running(NS, SMB_OPERATOR).await;
    assert_eq!(pod.restarts, 0, "{pod:#?}\n{}", chain.report());
    chain.assert_no_denials();
    chain.wait_pods_admitted().await;

    // The CSO reports it beside the platform's drivers, and lists its objects.
    let st = conditions_of(&storage(&chain.bed).await);
    assert_eq!(
        st.get("SambaCSIDriverOperatorCRAvailable")
            .map(|c| c.0.as_str()),
        Some("True"),
        "{st:#?}"
    );
    let related = co["status"]["relatedObjects"].to_string();
    for name in [SMB_CR, "smb-csi-driver-operator-clusterrole"] {
        assert!(related.contains(name), "{name}: {related}");
    }

    // Each object was created by the operator that owns it, as its service account.
    for (resource, ns, name, user) in [
        ("apps/deployments", NS, SMB_OPERATOR, CSO_USER),
        (
            "operator.openshift.io/clustercsidrivers",
            "",
            SMB_CR,
            CSO_USER,
        ),
        (
            "apps/deployments",
            NS,
            "smb-csi-driver-controller",
            SMB_OPERATOR_USER,
        ),
        (
            "apps/daemonsets",
            NS,
            "smb-csi-driver-node",
            SMB_OPERATOR_USER,
        ),
        ("storage.k8s.io/csidrivers", "", SMB_CR, SMB_OPERATOR_USER),
    ] {
        assert_eq!(
            chain.writers(Some("create"), resource, Some(""), ns, name),
            [user.to_string()].into(),
            "creators of {resource} {ns}/{name}"
        );
    }
    assert_eq!(
        chain.writers(
            None,
            "operator.openshift.io/clustercsidrivers",
            Some("status"),
            "",
            SMB_CR
        ),
        [SMB_OPERATOR_USER.to_string()].into()
    );
    // SMB ships no class of either kind.
    let classes = storage_classes(&chain).await;
    assert!(!classes.iter().any(|c| c.contains("smb")), "{classes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openstack_without_manila_disables_manila_and_storage_stays_available() {
    let mut settings = Settings::for_cluster_storage_operator();
    settings.openstack.share_types = None;
    let chain = release_chain(settings, None).await;

    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    let (reason, message) = chain
        .wait("Manila to report CSIControllerDisabled", || async {
            let c = chain.cr_conditions(MANILA_CR).await;
            match c.get("CSIControllerDisabled") {
                Some((s, reason, message)) if s == "True" => Ok((reason.clone(), message.clone())),
                _ => Err(format!("{c:#?}")),
            }
        })
        .await;
    assert_eq!(reason, "PreConditionNotSatisfied");
    assert!(
        message.starts_with("Pre-condition not satisfied: ") && message.contains("sharev2"),
        "{message}"
    );
    let co = chain.wait_co(&HEALTHY).await;
    assert_eq!(conditions_of(&co)["Available"].1, "AsExpected");
    let st = conditions_of(&storage(&chain.bed).await);
    assert_eq!(
        st["ManilaCSIDriverOperatorCRAvailable"],
        (
            "True".to_string(),
            "DriverDisabled".to_string(),
            format!("CSI driver for Manila is disabled: {message}")
        )
    );
    // The Manila operator runs and deploys nothing.
    chain.wait_running(NS, MANILA_OPERATOR).await;
    assert!(
        deployment_in(&chain.bed, MANILA_NS, MANILA_CONTROLLER)
            .await
            .is_none()
    );
    let classes = storage_classes(&chain).await;
    assert!(
        !classes.iter().any(|c| c.starts_with("csi-manila-")),
        "{classes:?}"
    );
    chain.assert_no_denials();
    chain.wait_pods_admitted().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_platform_runs_only_the_cso_and_says_why() {
    let chain = release_chain(Settings::for_cluster_storage_operator(), Some("AWS")).await;

    let line = "CSIDriverStarterAvailable: No CSI driver operator started: the platform is \"AWS\", \
                and this operator starts driver operators only on OpenStack (Cinder and Manila)";
    let co = chain
        .wait(
            "ClusterOperator/storage to say why nothing started",
            || async {
                let co = cluster_operator(&chain.bed).await;
                let c = conditions_of(&co);
                let healthy = HEALTHY
                    .iter()
                    .all(|(t, s)| c.get(*t).is_some_and(|(status, _, _)| status == s));
                let says_why = c
                    .get("Available")
                    .is_some_and(|(_, _, m)| m.lines().any(|l| l == line));
                if healthy && says_why {
                    Ok(co)
                } else {
                    Err(format!("{c:#?}"))
                }
            },
        )
        .await;
    assert_eq!(conditions_of(&co)["Available"].1, "AsExpected");

    let cso = chain.wait_running(CSO_NS, CSO_DEPLOYMENT).await;
    let pods = chain.bed.kube.processes();
    assert_eq!(pods.len(), 1, "only the CSO runs: {pods:#?}");
    assert_eq!(pods[0].pod, cso.pod);
    let deployments = Api::<Deployment>::namespaced(chain.bed.client.clone(), NS)
        .list(&Default::default())
        .await
        .expect("list");
    assert!(deployments.items.is_empty(), "{:?}", deployments.items);
    for cr in [CR, MANILA_CR] {
        assert!(
            cluster_object(
                &chain.bed,
                "operator.openshift.io/v1",
                "ClusterCSIDriver",
                cr
            )
            .await
            .is_none(),
            "{cr}"
        );
    }
    chain.assert_no_denials();
}

/// The image of container `name` of a pod template (the first container when `None`).
fn image_of(pod: Option<&k8s_openapi::api::core::v1::PodSpec>, name: Option<&str>) -> String {
    pod.and_then(|p| match name {
        Some(n) => p.containers.iter().find(|c| c.name == n),
        None => p.containers.first(),
    })
    .and_then(|c| c.image.clone())
    .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_images_roll_the_cso_the_operators_and_the_drivers() {
    const NEW_OPERATOR: &str = "quay.io/example/csi-operator:v4.21";
    const NEW_DRIVER: &str = "quay.io/example/cinder-csi-plugin:v4.21";
    let old = release(None, &[]);
    let new = release(
        Some(NEW_OPERATOR),
        &[
            (CINDER_OPERATOR_IMAGE_ENV, NEW_OPERATOR),
            (MANILA_OPERATOR_IMAGE_ENV, NEW_OPERATOR),
            ("OPENSTACK_CINDER_DRIVER_IMAGE", NEW_DRIVER),
            ("OPERATOR_IMAGE_VERSION", "4.21.0"),
        ],
    );
    // Both releases' images run the binary from the start: changing the mapping later would
    // restart every pod by itself.
    let processes = processes_for(&old).with_image(NEW_OPERATOR, csi_operator(&[]));
    let chain = Chain::start(
        Settings::for_cluster_storage_operator(),
        processes,
        None,
        &old,
    )
    .await;
    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    chain.wait_driver(MANILA_CR, &MANILA_AVAILABLE).await;
    let co = chain.wait_co(&HEALTHY).await;
    assert_eq!(
        co["status"]["versions"],
        json!([{"name": "operator", "version": "0.0.1-snapshot"}])
    );
    let cso = chain.wait_running(CSO_NS, CSO_DEPLOYMENT).await;
    let cinder = chain.wait_running(NS, CINDER_OPERATOR).await;
    let manila = chain.wait_running(NS, MANILA_OPERATOR).await;

    chain.apply(&new).await;

    // The CSO pod is replaced (its template changed) ...
    let cso_after = chain
        .wait("a new CSO pod to run", || async {
            match chain.pods(CSO_NS, CSO_DEPLOYMENT).as_slice() {
                [p] if p.running() && p.template_hash != cso.template_hash => Ok(p.clone()),
                other => Err(format!("{other:#?}")),
            }
        })
        .await;
    assert_ne!(cso_after.pod, cso.pod);
    // ... and rolls both operator Deployments to the new image ...
    for name in [CINDER_OPERATOR, MANILA_OPERATOR] {
        chain
            .wait(&format!("{name} to get the new image"), || async {
                let d = deployment_in(&chain.bed, NS, name).await;
                let image = d
                    .as_ref()
                    .map(|d| image_of(deployment_pod(d), None))
                    .unwrap_or_default();
                if image == NEW_OPERATOR {
                    Ok(())
                } else {
                    Err(image)
                }
            })
            .await;
    }
    // ... whose pods restart ...
    for (name, before) in [(CINDER_OPERATOR, &cinder), (MANILA_OPERATOR, &manila)] {
        chain
            .wait(&format!("a new {name} pod to run"), || async {
                match chain.pods(NS, name).as_slice() {
                    [p] if p.running() && p.template_hash != before.template_hash => Ok(()),
                    other => Err(format!("{other:#?}")),
                }
            })
            .await;
    }
    // ... and roll the Cinder driver to its new image.
    chain
        .wait("the Cinder driver to get the new image", || async {
            let d = Api::<Deployment>::namespaced(chain.bed.client.clone(), NS)
                .get_opt(CONTROLLER)
                .await
                .ok()
                .flatten();
            let ds = Api::<DaemonSet>::namespaced(chain.bed.client.clone(), NS)
                .get_opt(NODE)
                .await
                .ok()
                .flatten();
            let controller = d
                .as_ref()
                .map(|d| image_of(deployment_pod(d), Some("csi-driver")))
                .unwrap_or_default();
            let node = ds
                .as_ref()
                .map(|d| image_of(daemonset_pod(d), Some("csi-driver")))
                .unwrap_or_default();
            if controller == NEW_DRIVER && node == NEW_DRIVER {
                Ok(())
            } else {
                Err(format!("controller {controller}, node {node}"))
            }
        })
        .await;

    // The chain converges again, reporting the new version.
    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    chain.wait_driver(MANILA_CR, &MANILA_AVAILABLE).await;
    chain
        .wait("ClusterOperator/storage at 4.21.0 and healthy", || async {
            let co = cluster_operator(&chain.bed).await;
            let c = conditions_of(&co);
            let healthy = HEALTHY
                .iter()
                .all(|(t, s)| c.get(*t).is_some_and(|(status, _, _)| status == s));
            if healthy
                && co["status"]["versions"] == json!([{"name": "operator", "version": "4.21.0"}])
            {
                Ok(())
            } else {
                Err(format!("{:#?} {}", c, co["status"]["versions"]))
            }
        })
        .await;
    for (ns, name) in [
        (CSO_NS, CSO_DEPLOYMENT),
        (NS, CINDER_OPERATOR),
        (NS, MANILA_OPERATOR),
    ] {
        let pods = chain.pods(ns, name);
        assert!(
            pods.len() == 1 && pods[0].running(),
            "one pod of {name} after the upgrade: {pods:#?}"
        );
    }
    chain.assert_no_denials();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_operator_that_never_becomes_ready_is_progressing_then_degraded() {
    const DRIVERS_IMAGE: &str = "quay.io/example/csi-operator:v4.20-drivers";
    const BROKEN_IMAGE: &str = "quay.io/example/cinder-operator:broken";
    let manifests = release(
        None,
        &[
            (CINDER_OPERATOR_IMAGE_ENV, BROKEN_IMAGE),
            (MANILA_OPERATOR_IMAGE_ENV, DRIVERS_IMAGE),
        ],
    );
    // Only the CSO gets the short Degraded inertia. The Cinder operator's image maps to a
    // program that does not exist, so its container never starts (RunContainerError, retried
    // with back-off). Not `/bin/false`: kube-sim counts a pod ready the moment its process
    // starts, so a process that exits at once can be seen ready for an instant, which
    // completes the rollout (NewReplicaSetAvailable); after that, as in Kubernetes, the
    // Deployment never reports ProgressDeadlineExceeded and the test would race.
    let processes = kube_sim::ProcessConfig::default()
        .with_image(RELEASE_IMAGE, csi_operator(&["--degraded-inertia=2s"]))
        .with_image(DRIVERS_IMAGE, csi_operator(&[]))
        .with_image(
            BROKEN_IMAGE,
            kube_sim::LocalProgram::new("/nonexistent/openstack-cinder-csi-driver-operator"),
        );
    let mut settings = Settings::for_cluster_storage_operator();
    if let Some(w) = settings.kube.workloads.as_mut() {
        w.max_progress_deadline_seconds = Some(3);
    }
    let chain = Chain::start(settings, processes, None, &manifests).await;

    // Progressing first: the operator Deployment rolls out and the operator never reports.
    let (_, reason, _) = chain
        .wait(
            "ClusterOperator/storage Progressing because of Cinder",
            || async {
                let c = chain.co_conditions().await;
                match c.get("Progressing") {
                    Some(p) if p.0 == "True" && p.1.contains("OpenStackCinder") => Ok(p.clone()),
                    other => Err(format!("{other:?} (all: {c:#?})")),
                }
            },
        )
        .await;
    assert!(reason.contains("OpenStackCinder"), "{reason}");

    // Then Degraded, once the rollout passes its deadline and the inertia ran out.
    let crashing = chain
        .wait("the Cinder operator pod to fail to start", || async {
            match chain.pods(NS, CINDER_OPERATOR).as_slice() {
                [p] if matches!(&p.state, kube_sim::ProcessState::Waiting { reason, .. }
                    if reason == "RunContainerError") =>
                {
                    Ok(p.clone())
                }
                other => Err(format!("{other:#?}")),
            }
        })
        .await;
    assert_eq!(crashing.pid, None);
    let deployment_message = format!(
        "deployment {NS}/{CINDER_OPERATOR} is Progressing=False: ProgressDeadlineExceeded: \
         ReplicaSet \"{CINDER_OPERATOR}-{}\" has timed out progressing.",
        crashing.template_hash
    );
    let c = chain
        .wait("ClusterOperator/storage Degraded", || async {
            let c = chain.co_conditions().await;
            match c.get("Degraded") {
                Some(d) if d.0 == "True" => Ok(c),
                other => {
                    let status = deployment_in(&chain.bed, NS, CINDER_OPERATOR)
                        .await
                        .and_then(|d| d.status);
                    let st = conditions_of(&storage(&chain.bed).await);
                    Err(format!(
                        "{other:?} (all: {c:#?})\nStorage: {st:#?}\nDeployment status: {status:#?}"
                    ))
                }
            }
        })
        .await;
    assert_eq!(
        c["Degraded"],
        (
            "True".to_string(),
            "OpenStackCinderCSIDriverOperatorDeployment_SyncError".to_string(),
            format!("OpenStackCinderCSIDriverOperatorDeploymentDegraded: {deployment_message}"),
        ),
        "{c:#?}"
    );
    let st = conditions_of(&storage(&chain.bed).await);
    assert_eq!(
        st["OpenStackCinderCSIDriverOperatorDeploymentDegraded"],
        (
            "True".to_string(),
            "SyncError".to_string(),
            deployment_message.clone()
        )
    );

    // Manila keeps working; storage waits for Cinder and keeps saying why.
    chain.wait_driver(MANILA_CR, &MANILA_AVAILABLE).await;
    let c = chain
        .wait(
            "the steady state with Cinder down and Manila up",
            || async {
                let c = chain.co_conditions().await;
                let st = conditions_of(&storage(&chain.bed).await);
                let manila_up = st
                    .get("ManilaCSIDriverOperatorCRAvailable")
                    .is_some_and(|m| m.0 == "True")
                    && st.get("ManilaProgressing").is_some_and(|m| m.0 == "False");
                let progressing_only_cinder = c
                    .get("Progressing")
                    .is_some_and(|p| p.0 == "True" && !p.2.contains("Manila"));
                if manila_up
                    && progressing_only_cinder
                    && c.get("Degraded").is_some_and(|d| d.0 == "True")
                {
                    Ok(c)
                } else {
                    Err(format!("{c:#?}\n{st:#?}"))
                }
            },
        )
        .await;
    assert_eq!(
        c["Progressing"],
        (
            "True".to_string(),
            "OpenStackCinderCSIDriverOperatorCR_WaitForOperator::OpenStackCinder_Deploying"
                .to_string(),
            "OpenStackCinderCSIDriverOperatorCRProgressing: Waiting for OpenStackCinder operator to report status\n\
             OpenStackCinderProgressing: Waiting for Deployment to deploy pods"
                .to_string(),
        )
    );
    assert_eq!(
        c["Available"],
        (
            "False".to_string(),
            "OpenStackCinderCSIDriverOperatorCR_WaitForOperator".to_string(),
            "OpenStackCinderCSIDriverOperatorCRAvailable: Waiting for OpenStackCinder operator to report status"
                .to_string(),
        )
    );
    chain.assert_no_denials();
}

/// Seed 001's un-installation semantics on the running chain: deleting a ClusterCSIDriver does
/// not remove the driver (no owner reference ties the driver to it); the CSO recreates the CR,
/// the driver operator picks it up again, and storage stays available.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_cluster_csi_driver_comes_back_and_the_driver_is_untouched() {
    let mut settings = Settings::for_cluster_storage_operator();
    settings.openstack.share_types = None;
    let chain = release_chain(settings, None).await;
    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    chain.wait_co(&HEALTHY).await;
    let controllers: Api<Deployment> = Api::namespaced(chain.bed.client.clone(), NS);
    let before = controllers.get(CONTROLLER).await.expect("controller");
    let old = cluster_object(
        &chain.bed,
        "operator.openshift.io/v1",
        "ClusterCSIDriver",
        CR,
    )
    .await
    .expect("the CR");

    let ar = operator_kit::kinds::api_resource("operator.openshift.io/v1", "ClusterCSIDriver")
        .expect("known kind");
    Api::<kube::api::DynamicObject>::all_with(chain.bed.client.clone(), &ar)
        .delete(CR, &Default::default())
        .await
        .expect("delete the ClusterCSIDriver");

    chain
        .wait(
            "the ClusterCSIDriver to be recreated and report again",
            || async {
                let now = cluster_object(
                    &chain.bed,
                    "operator.openshift.io/v1",
                    "ClusterCSIDriver",
                    CR,
                )
                .await;
                match now {
                    Some(cr) if cr["metadata"]["uid"] != old["metadata"]["uid"] => {
                        let c = conditions_of(&cr);
                        if CINDER_AVAILABLE
                            .iter()
                            .all(|t| c.get(*t).is_some_and(|(s, _, _)| s == "True"))
                        {
                            Ok(())
                        } else {
                            Err(format!("recreated, not reporting yet: {c:#?}"))
                        }
                    }
                    other => Err(format!("{:?}", other.map(|o| o["metadata"]["uid"].clone()))),
                }
            },
        )
        .await;
    let after = controllers.get(CONTROLLER).await.expect("controller");
    assert_eq!(
        before.metadata.uid, after.metadata.uid,
        "the driver was not recreated"
    );
    assert_eq!(
        before.metadata.generation, after.metadata.generation,
        "nor rolled"
    );
    chain.wait_co(&HEALTHY).await;
    chain.assert_no_denials();
}

/// The CSO pod as the release's Deployment creates it, judged by SCC admission with the
/// default SCCs and the RBAC the release manifests grant: admitted by the `nonroot-v2` SCC it
/// pins. The manifest before the fix pinned `restricted-v2` with `runAsUser: 11411`, which a
/// cluster refuses (the UID is outside the namespace's range), and without the ClusterRole's
/// `use` of `nonroot-v2` the pin is refused too.
#[test]
fn the_cso_pod_is_admitted_by_nonroot_v2_and_the_old_pin_is_refused() {
    use kube_sim::pod_admission::{controller_user, may_use, pod_from_template};
    use kube_sim::rbac::{RbacConfig, StaticPolicy, UserInfo};
    use kube_sim::scc::{self, Scc};

    let manifests = release(None, &[]);
    let object = |kind: &str, name: &str| {
        manifests
            .iter()
            .find(|m| m.object["kind"] == kind && m.object["metadata"]["name"] == name)
            .map(|m| m.object.clone())
            .unwrap_or_else(|| panic!("no {kind} {name} in the release"))
    };
    let mut namespace = object("Namespace", CSO_NS);
    namespace["metadata"]["annotations"][scc::UID_RANGE_ANNOTATION] = json!("1000650000/10000");
    namespace["metadata"]["annotations"][scc::MCS_ANNOTATION] = json!("s0:c26,c0");
    let template = object("Deployment", CSO_DEPLOYMENT)["spec"]["template"].clone();
    let admit = |template: &serde_json::Value, policy: &StaticPolicy| {
        let pod = pod_from_template(template, CSO_NS, "cluster-storage-operator-5d4b8c7f9-");
        let sa = UserInfo::resolve(
            &format!("system:serviceaccount:{CSO_NS}:cluster-storage-operator"),
            &RbacConfig {
                superusers: Vec::new(),
            },
        );
        let creator = controller_user("replicaset-controller");
        let usable =
            |s: &Scc| may_use(policy, &sa, CSO_NS, s) || may_use(policy, &creator, CSO_NS, s);
        scc::admit(&pod, &namespace, &scc::default_sccs(), &usable)
    };
    let release_policy = || {
        StaticPolicy::new(
            manifests
                .iter()
                .map(|m| m.object.clone())
                .chain(scc::default_objects()),
        )
    };

    let admitted = admit(&template, &release_policy()).expect("the CSO pod is admitted");
    assert_eq!(admitted.scc, "nonroot-v2");
    assert_eq!(admitted.pod["spec"]["securityContext"]["runAsUser"], 11411);

    let mut old = template.clone();
    old["metadata"]["annotations"]["openshift.io/required-scc"] = json!("restricted-v2");
    assert_eq!(
        admit(&old, &release_policy()).expect_err("the old pin is refused"),
        "unable to validate against any security context constraint: provider restricted-v2: \
         .containers[0].runAsUser: Invalid value: 11411: must be in the ranges: [1000650000, 1000659999]"
    );

    let without_grant = StaticPolicy::new(
        manifests
            .iter()
            .map(|m| {
                let mut o = m.object.clone();
                if o["kind"] == "ClusterRole"
                    && o["metadata"]["name"] == CSO_DEPLOYMENT
                    && let Some(rules) = o["rules"].as_array_mut()
                {
                    rules.retain(|r| r["apiGroups"] != json!(["security.openshift.io"]));
                }
                o
            })
            .chain(scc::default_objects()),
    );
    assert_eq!(
        admit(&template, &without_grant).expect_err("nonroot-v2 needs a grant"),
        "unable to validate against any security context constraint: provider \"nonroot-v2\": \
         Forbidden: not usable by user or serviceaccount"
    );
}
