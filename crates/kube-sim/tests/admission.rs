//! Pod admission through the API, as an operator meets it on a cluster: OpenShift's SCC
//! admission (the SCC kind and default SCCs served, namespaces given UID ranges, pods pinned
//! to an SCC admitted or refused with OpenShift's message) and Pod Security Admission by
//! namespace labels, for Pods created directly and for the pods the workload simulator and the
//! process runner create for Deployments and DaemonSets.

mod common;

use std::collections::BTreeMap;

use common::{TestResult, client_for, eventually, start_with, status};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_sim::{AdmissionConfig, KubeSim, LocalProgram, ProcessConfig, SimConfig};
use serde_json::{Value, json};

const IMAGE: &str = "quay.io/example/operator:v1";

fn openshift() -> SimConfig {
    SimConfig {
        admission: AdmissionConfig::openshift(),
        ..SimConfig::default()
    }
}

async fn create_ns(client: &Client, name: &str, labels: Value) -> TestResult {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

/// The namespace's UID range, once the cluster-policy-controller stand-in gave it one.
async fn uid_range(client: &Client, ns: &str) -> String {
    let api = Api::<Namespace>::all(client.clone());
    eventually(&format!("a UID range for {ns}"), || async {
        api.get(ns)
            .await
            .ok()?
            .metadata
            .annotations?
            .get("openshift.io/sa.scc.uid-range")
            .cloned()
    })
    .await
}

/// The pod template of an operator: pinned to `scc`, `uid` fixed when given.
fn template(scc: &str, uid: Option<i64>) -> Value {
    let mut psc = json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}});
    if let Some(u) = uid {
        psc["runAsUser"] = json!(u);
    }
    json!({
        "metadata": {"labels": {"app": "op"}, "annotations": {"openshift.io/required-scc": scc}},
        "spec": {
            "serviceAccountName": "op",
            "securityContext": psc,
            "containers": [{"name": "op", "image": IMAGE, "command": ["op", "-c"],
                            "args": ["sleep 60"],
                            "securityContext": {"allowPrivilegeEscalation": false,
                                                "capabilities": {"drop": ["ALL"]}}}],
        },
    })
}

fn deployment(name: &str, template: Value) -> Result<Deployment, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "op"}}, "template": template},
    }))
}

async fn grant(client: &Client, ns: &str, scc: &str) -> TestResult {
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": format!("op-{scc}"), "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": format!("system:openshift:scc:{scc}")},
        "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": ns}],
    });
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &serde_json::from_value(binding)?)
        .await?;
    Ok(())
}

fn condition(obj: &Value, type_: &str) -> Option<Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

async fn deployment_json(client: &Client, ns: &str, name: &str) -> Option<Value> {
    let d = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .ok()?;
    serde_json::to_value(d).ok()
}

#[tokio::test]
async fn the_openshift_mode_serves_the_default_sccs_and_allocates_namespaces() -> TestResult {
    let (_sim, client) = start_with(openshift()).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("security.openshift.io", "v1", "SecurityContextConstraints"),
        "securitycontextconstraints",
    );
    let sccs = Api::<DynamicObject>::all_with(client.clone(), &ar)
        .list(&Default::default())
        .await?;
    let mut names: Vec<String> = sccs
        .items
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    names.sort();
    for n in [
        "nonroot-v2",
        "privileged",
        "restricted-v2",
        "hostnetwork-v2",
        "anyuid",
    ] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    let v2 = sccs
        .items
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some("restricted-v2"))
        .map(|s| s.data.clone())
        .unwrap_or_default();
    assert_eq!(v2["runAsUser"]["type"], "MustRunAsRange");
    assert_eq!(v2["requiredDropCapabilities"], json!(["ALL"]));

    create_ns(&client, "a", json!({})).await?;
    create_ns(&client, "b", json!({})).await?;
    let (a, b) = (uid_range(&client, "a").await, uid_range(&client, "b").await);
    assert_ne!(a, b);
    assert!(a.starts_with("10") && a.ends_with("/10000"), "{a}");
    // Namespaces that existed before (kube-system) have one too.
    uid_range(&client, "kube-system").await;
    Ok(())
}

#[tokio::test]
async fn a_pod_pinned_to_restricted_v2_gets_the_range_and_a_fixed_uid_is_refused() -> TestResult {
    let (sim, admin) = start_with(openshift()).await;
    create_ns(&admin, "ops", json!({})).await?;
    let range = uid_range(&admin, "ops").await;
    let first: i64 = range.split('/').next().unwrap_or_default().parse()?;
    // A user without SCC grants of its own: restricted-v2 is every authenticated user's.
    let alice = client_for(&sim, "alice").await;
    let pods = Api::<Pod>::namespaced(alice.clone(), "ops");
    let mut pod = template("restricted-v2", Some(11411));
    pod["metadata"]["name"] = json!("fixed");
    let refused = status(
        pods.create(&PostParams::default(), &serde_json::from_value(pod)?)
            .await,
    );
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        format!(
            "pods \"fixed\" is forbidden: unable to validate against any security context constraint: \
             provider restricted-v2: .containers[0].runAsUser: Invalid value: 11411: must be in the ranges: [{first}, {}]",
            first + 9999
        )
    );
    let mut pod = template("restricted-v2", None);
    pod["metadata"]["name"] = json!("assigned");
    let created = pods
        .create(&PostParams::default(), &serde_json::from_value(pod)?)
        .await?;
    let created = serde_json::to_value(created)?;
    assert_eq!(
        created["metadata"]["annotations"]["openshift.io/scc"],
        "restricted-v2"
    );
    assert_eq!(
        created["spec"]["containers"][0]["securityContext"]["runAsUser"],
        first
    );

    // Pinned to an SCC nobody granted, and to one that does not exist.
    let mut pod = template("nonroot-v2", Some(11411));
    pod["metadata"]["name"] = json!("ungranted");
    let refused = status(
        pods.create(&PostParams::default(), &serde_json::from_value(pod)?)
            .await,
    );
    assert!(
        refused
            .message
            .ends_with("provider \"nonroot-v2\": Forbidden: not usable by user or serviceaccount"),
        "{}",
        refused.message
    );
    grant(&admin, "ops", "nonroot-v2").await?;
    let mut pod = template("nonroot-v2", Some(11411));
    pod["metadata"]["name"] = json!("granted");
    pods.create(&PostParams::default(), &serde_json::from_value(pod)?)
        .await?;
    let mut pod = template("restricted-v9", None);
    pod["metadata"]["name"] = json!("missing");
    let refused = status(
        pods.create(&PostParams::default(), &serde_json::from_value(pod)?)
            .await,
    );
    assert!(
        refused
            .message
            .contains("failed to retrieve the required SCC \"restricted-v9\"")
    );
    Ok(())
}

#[tokio::test]
async fn a_refused_deployment_reports_failed_create_until_its_pods_are_admitted() -> TestResult {
    let (_sim, client) = start_with(openshift()).await;
    create_ns(&client, "ops", json!({})).await?;
    uid_range(&client, "ops").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), "ops");
    deployments
        .create(
            &PostParams::default(),
            &deployment("op", template("restricted-v2", Some(11411)))?,
        )
        .await?;
    let failure = eventually("ReplicaFailure", || async {
        condition(
            &deployment_json(&client, "ops", "op").await?,
            "ReplicaFailure",
        )
    })
    .await;
    assert_eq!(failure["status"], "True");
    assert_eq!(failure["reason"], "FailedCreate");
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("pods \"op-") && message.contains("\" is forbidden: unable to validate against any security context constraint: provider restricted-v2: .containers[0].runAsUser: Invalid value: 11411"),
        "{message}"
    );
    let dep = deployment_json(&client, "ops", "op")
        .await
        .unwrap_or_default();
    assert!(dep["status"]["replicas"].is_null() && dep["status"]["availableReplicas"].is_null());
    let events = Api::<Event>::namespaced(client.clone(), "ops")
        .list(&Default::default())
        .await?;
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("FailedCreate")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.starts_with("Error creating: pods \"op-"))),
        "{events:?}"
    );

    // The fix: pin nonroot-v2 and grant its use.
    grant(&client, "ops", "nonroot-v2").await?;
    deployments
        .patch(
            "op",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"metadata": {"annotations": {
                "openshift.io/required-scc": "nonroot-v2"}}}}})),
        )
        .await?;
    eventually("the Deployment available, ReplicaFailure gone", || async {
        let d = deployment_json(&client, "ops", "op").await?;
        (condition(&d, "ReplicaFailure").is_none()
            && condition(&d, "Available").is_some_and(|c| c["status"] == "True"))
        .then_some(())
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn a_daemonset_without_its_scc_schedules_nothing() -> TestResult {
    let (_sim, client) = start_with(openshift()).await;
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}))?;
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await?;
    create_ns(&client, "nodes", json!({})).await?;
    uid_range(&client, "nodes").await;
    let mut t = template("privileged", None);
    t["spec"]["hostNetwork"] = json!(true);
    t["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
    let ds: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": "node"},
        "spec": {"selector": {"matchLabels": {"app": "op"}}, "template": t},
    }))?;
    let api = Api::<DaemonSet>::namespaced(client.clone(), "nodes");
    api.create(&PostParams::default(), &ds).await?;
    let counts = |d: &DaemonSet| {
        d.status
            .as_ref()
            .map(|s| (s.desired_number_scheduled, s.current_number_scheduled))
    };
    eventually("a desired but unscheduled pod", || async {
        (counts(&api.get("node").await.ok()?) == Some((1, 0))).then_some(())
    })
    .await;
    let events = Api::<Event>::namespaced(client.clone(), "nodes")
        .list(&Default::default())
        .await?;
    assert!(events.items.iter().any(|e| {
        e.reason.as_deref() == Some("FailedCreate")
            && e.message.as_deref().is_some_and(|m| {
                m.contains("pods \"node-\" is forbidden")
                    && m.contains(
                        "provider \"privileged\": Forbidden: not usable by user or serviceaccount",
                    )
            })
    }));
    grant(&client, "nodes", "privileged").await?;
    eventually("the pod scheduled once granted", || async {
        (counts(&api.get("node").await.ok()?) == Some((1, 1))).then_some(())
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn pod_security_labels_are_enforced_without_openshift() -> TestResult {
    let (sim, admin) = start_with(SimConfig::default()).await;
    create_ns(
        &admin,
        "strict",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    )
    .await?;
    let alice = client_for(&sim, "alice").await;
    let pods = Api::<Pod>::namespaced(alice, "strict");
    let bare: Pod = serde_json::from_value(json!({"metadata": {"name": "x"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}))?;
    let refused = status(pods.create(&PostParams::default(), &bare).await);
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        "pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\": \
         allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
         unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
         runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
         seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    let mut t = template("ignored-without-openshift", Some(11411));
    t["metadata"]["name"] = json!("hardened");
    pods.create(&PostParams::default(), &serde_json::from_value(t)?)
        .await?;
    // A Deployment is not judged; its pods are.
    admin_deploys_a_privileged_pod(&admin).await
}

async fn admin_deploys_a_privileged_pod(admin: &Client) -> TestResult {
    let mut t = template("x", None);
    t["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
    Api::<Deployment>::namespaced(admin.clone(), "strict")
        .create(&PostParams::default(), &deployment("priv", t)?)
        .await?;
    let failure = eventually("ReplicaFailure", || async {
        condition(
            &deployment_json(admin, "strict", "priv").await?,
            "ReplicaFailure",
        )
    })
    .await;
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("violates PodSecurity \"restricted:latest\": privileged (container \"op\" must not set securityContext.privileged=true)"),
        "{message}"
    );
    Ok(())
}

#[tokio::test]
async fn a_refused_process_backed_pod_never_starts() -> TestResult {
    let program = LocalProgram {
        program: "/bin/sh".into(),
        drop_leading: 1,
        ..LocalProgram::default()
    };
    let config = SimConfig {
        processes: Some(ProcessConfig {
            images: BTreeMap::from([(IMAGE.to_string(), program)]),
            log_dir: None,
            kubeconfig_dir: None,
        }),
        ..openshift()
    };
    let (sim, client) = start_with(config).await;
    create_ns(&client, "ops", json!({})).await?;
    uid_range(&client, "ops").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), "ops");
    deployments
        .create(
            &PostParams::default(),
            &deployment("op", template("restricted-v2", Some(11411)))?,
        )
        .await?;
    eventually("ReplicaFailure", || async {
        condition(
            &deployment_json(&client, "ops", "op").await?,
            "ReplicaFailure",
        )
    })
    .await;
    assert!(processes_of(&sim, "op").is_empty(), "{:?}", sim.processes());
    // Once admitted, the process starts.
    grant(&client, "ops", "nonroot-v2").await?;
    deployments
        .patch(
            "op",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"metadata": {"annotations": {
                "openshift.io/required-scc": "nonroot-v2"}}}}})),
        )
        .await?;
    eventually("the process running", || async {
        processes_of(&sim, "op")
            .iter()
            .any(|p| p.running())
            .then_some(())
    })
    .await;
    Ok(())
}

fn processes_of(sim: &KubeSim, deployment: &str) -> Vec<kube_sim::ProcessInfo> {
    sim.processes()
        .into_iter()
        .filter(|p| p.deployment == deployment)
        .collect()
}
