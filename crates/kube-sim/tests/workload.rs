//! The workload simulator through kube-rs, as an operator sees it: Deployments and DaemonSets
//! get the status a real cluster's controllers and kubelets would give them, placed on the
//! Node objects the test creates, after the configured delay, and never for workloads kept
//! unavailable or while the simulator is switched off.

mod common;

use std::time::Duration;

use common::{TestResult, eventually, namespace, start_with};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_sim::workload::{WorkloadKind, WorkloadRef};
use kube_sim::{SimConfig, WorkloadConfig};
use serde_json::{Value, json};

const MASTER_TAINT: &str = "node-role.kubernetes.io/master";

fn with_workloads(workloads: Option<WorkloadConfig>) -> SimConfig {
    SimConfig {
        workloads,
        ..SimConfig::default()
    }
}

fn delayed(delay_ms: u64) -> Option<WorkloadConfig> {
    Some(WorkloadConfig {
        delay_ms,
        ..WorkloadConfig::default()
    })
}

async fn create_node(client: &Client, name: &str, master: bool, ready: bool) {
    let role = if master {
        MASTER_TAINT
    } else {
        "node-role.kubernetes.io/worker"
    };
    let taints = if master {
        json!([{"key": MASTER_TAINT, "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {role: "", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name}},
        "spec": {"taints": taints},
        "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": "KubeletReady"}]},
    }))
    .expect("a Node");
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .expect("node created");
}

/// Three tainted control-plane nodes and three workers, as on a small OpenShift cluster.
async fn create_cluster_nodes(client: &Client) {
    for i in 1..=3 {
        create_node(client, &format!("master-{i}"), true, true).await;
        create_node(client, &format!("worker-{i}"), false, true).await;
    }
}

async fn create_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    replicas: i32,
    extra_spec: Value,
) -> Deployment {
    let mut body = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}]}},
        },
    });
    merge(&mut body["spec"], extra_spec);
    let dep: Deployment = serde_json::from_value(body).expect("a Deployment");
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &dep)
        .await
        .expect("deployment created")
}

async fn create_daemonset(client: &Client, ns: &str, name: &str, pod_spec: Value) -> DaemonSet {
    let mut spec = json!({"containers": [{"name": "main", "image": "registry.example/agent:1"}]});
    merge(&mut spec, pod_spec);
    let ds: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }))
    .expect("a DaemonSet");
    Api::<DaemonSet>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &ds)
        .await
        .expect("daemonset created")
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

/// The stored object as JSON, for asserting on status fields by name.
async fn deployment_json(client: &Client, ns: &str, name: &str) -> Value {
    let dep = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("deployment readable");
    serde_json::to_value(dep).expect("serialisable")
}

async fn daemonset_json(client: &Client, ns: &str, name: &str) -> Value {
    let ds = Api::<DaemonSet>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("daemonset readable");
    serde_json::to_value(ds).expect("serialisable")
}

/// Waits until the Deployment's status satisfies `check`, returning the object.
async fn deployment_where(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let dep = deployment_json(client, ns, name).await;
        check(&dep).then_some(dep)
    })
    .await
}

async fn daemonset_where(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let ds = daemonset_json(client, ns, name).await;
        check(&ds).then_some(ds)
    })
    .await
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn reason(obj: &Value, type_: &str) -> Option<String> {
    condition(obj, type_)
        .and_then(|c| c["reason"].as_str())
        .map(str::to_string)
}

fn count(obj: &Value, field: &str) -> i64 {
    obj.pointer(&format!("/status/{field}"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// desired, current, ready, available, updated, misscheduled.
fn ds_counts(ds: &Value) -> [i64; 6] {
    [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberReady",
        "numberAvailable",
        "updatedNumberScheduled",
        "numberMisscheduled",
    ]
    .map(|f| count(ds, f))
}

#[tokio::test]
async fn deployments_become_available_with_the_real_conditions() -> TestResult {
    let (_sim, client) = start_with(SimConfig::default()).await;
    let ns = namespace(&client, "apps").await;
    create_deployment(&client, &ns, "web", 2, json!({})).await;
    let dep = deployment_where(&client, &ns, "web", "web available", |d| {
        count(d, "availableReplicas") == 2
    })
    .await;

    assert_eq!(
        dep["status"]["observedGeneration"],
        dep["metadata"]["generation"]
    );
    assert_eq!(
        (
            count(&dep, "replicas"),
            count(&dep, "updatedReplicas"),
            count(&dep, "readyReplicas")
        ),
        (2, 2, 2)
    );
    let available = condition(&dep, "Available").expect("an Available condition");
    assert_eq!(
        (&available["status"], &available["reason"]),
        (&json!("True"), &json!("MinimumReplicasAvailable"))
    );
    assert_eq!(available["message"], "Deployment has minimum availability.");
    let progressing = condition(&dep, "Progressing").expect("a Progressing condition");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("True"), &json!("NewReplicaSetAvailable"))
    );
    let message = progressing["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("ReplicaSet \"web-")
            && message.ends_with("\" has successfully progressed."),
        "{message}"
    );
    assert!(
        progressing["lastUpdateTime"].is_string() && progressing["lastTransitionTime"].is_string()
    );
    Ok(())
}

#[tokio::test]
async fn daemonsets_are_scheduled_on_the_nodes_they_select_and_tolerate() -> TestResult {
    let (_sim, client) = start_with(SimConfig::default()).await;
    create_cluster_nodes(&client).await;
    let ns = namespace(&client, "agents").await;
    let tolerate_masters =
        json!([{"key": MASTER_TAINT, "operator": "Exists", "effect": "NoSchedule"}]);
    create_daemonset(&client, &ns, "plain", json!({})).await;
    create_daemonset(
        &client,
        &ns,
        "everywhere",
        json!({"tolerations": tolerate_masters}),
    )
    .await;
    create_daemonset(
        &client,
        &ns,
        "tolerate-all",
        json!({"tolerations": [{"operator": "Exists"}]}),
    )
    .await;
    create_daemonset(
        &client,
        &ns,
        "masters",
        json!({"nodeSelector": {MASTER_TAINT: ""}, "tolerations": tolerate_masters}),
    )
    .await;
    create_daemonset(
        &client,
        &ns,
        "masters-untolerated",
        json!({"nodeSelector": {MASTER_TAINT: ""}}),
    )
    .await;

    for (name, nodes) in [
        ("plain", 3),
        ("everywhere", 6),
        ("tolerate-all", 6),
        ("masters", 3),
    ] {
        let ds = daemonset_where(&client, &ns, name, &format!("{name} rolled out"), |d| {
            count(d, "numberAvailable") == nodes
        })
        .await;
        assert_eq!(
            ds_counts(&ds),
            [nodes, nodes, nodes, nodes, nodes, 0],
            "{name}: {}",
            ds["status"]
        );
        assert_eq!(ds["status"]["observedGeneration"], 1, "{name}");
        assert!(
            ds["status"].get("numberUnavailable").is_none(),
            "{name}: zero is omitted"
        );
    }
    let none = daemonset_where(
        &client,
        &ns,
        "masters-untolerated",
        "status observed",
        |d| d["status"]["observedGeneration"] == 1,
    )
    .await;
    assert_eq!(
        ds_counts(&none),
        [0; 6],
        "the masters' taint keeps it off and its selector keeps it off the workers"
    );

    // A node joining later gets a pod; a NotReady one gets a pod that is never ready.
    create_node(&client, "worker-4", false, true).await;
    create_node(&client, "worker-5", false, false).await;
    let ds = daemonset_where(&client, &ns, "plain", "plain on the new workers", |d| {
        count(d, "desiredNumberScheduled") == 5
    })
    .await;
    let ds = if count(&ds, "numberReady") == 4 {
        ds
    } else {
        daemonset_where(
            &client,
            &ns,
            "plain",
            "the new ready worker's pod ready",
            |d| count(d, "numberReady") == 4,
        )
        .await
    };
    assert_eq!(ds_counts(&ds), [5, 5, 4, 4, 5, 0]);
    assert_eq!(count(&ds, "numberUnavailable"), 1);
    Ok(())
}

#[tokio::test]
async fn a_cordoned_node_still_runs_daemon_pods() -> TestResult {
    let (_sim, client) = start_with(SimConfig::default()).await;
    create_cluster_nodes(&client).await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await?;
    let ns = namespace(&client, "agents").await;
    create_daemonset(&client, &ns, "plain", json!({})).await;
    let ds = daemonset_where(&client, &ns, "plain", "plain rolled out", |d| {
        count(d, "numberAvailable") == 3
    })
    .await;
    assert_eq!(
        count(&ds, "desiredNumberScheduled"),
        3,
        "DaemonSet pods tolerate node.kubernetes.io/unschedulable"
    );
    Ok(())
}

#[tokio::test]
async fn workloads_kept_unavailable_say_so_and_time_out() -> TestResult {
    let unavailable = vec![
        WorkloadRef {
            kind: WorkloadKind::Deployment,
            namespace: "apps".into(),
            name: "stuck".into(),
        },
        WorkloadRef {
            kind: WorkloadKind::DaemonSet,
            namespace: "apps".into(),
            name: "stuck-agent".into(),
        },
    ];
    let (sim, client) = start_with(with_workloads(Some(WorkloadConfig {
        delay_ms: 0,
        unavailable,
        ..WorkloadConfig::default()
    })))
    .await;
    create_cluster_nodes(&client).await;
    let ns = namespace(&client, "apps").await;
    create_deployment(
        &client,
        &ns,
        "stuck",
        2,
        json!({"progressDeadlineSeconds": 1}),
    )
    .await;
    create_deployment(&client, &ns, "fine", 2, json!({})).await;
    create_daemonset(&client, &ns, "stuck-agent", json!({})).await;

    // Once a workload that is not held back is available, the held-back ones have had their
    // chance too.
    deployment_where(&client, &ns, "fine", "fine available", |d| {
        count(d, "availableReplicas") == 2
    })
    .await;
    let stuck = deployment_where(&client, &ns, "stuck", "stuck timed out", |d| {
        reason(d, "Progressing").as_deref() == Some("ProgressDeadlineExceeded")
    })
    .await;
    assert_eq!(stuck["status"]["observedGeneration"], 1);
    assert_eq!(
        (
            count(&stuck, "replicas"),
            count(&stuck, "availableReplicas"),
            count(&stuck, "unavailableReplicas")
        ),
        (2, 0, 2)
    );
    let available = condition(&stuck, "Available").expect("an Available condition");
    assert_eq!(
        (&available["status"], &available["reason"]),
        (&json!("False"), &json!("MinimumReplicasUnavailable"))
    );
    assert_eq!(
        available["message"],
        "Deployment does not have minimum availability."
    );
    let progressing = condition(&stuck, "Progressing").expect("a Progressing condition");
    assert_eq!(progressing["status"], "False");
    let message = progressing["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("ReplicaSet \"stuck-")
            && message.ends_with("\" has timed out progressing."),
        "{message}"
    );

    let agent = daemonset_where(&client, &ns, "stuck-agent", "agent observed", |d| {
        count(d, "desiredNumberScheduled") == 3
    })
    .await;
    assert_eq!(ds_counts(&agent), [3, 3, 0, 0, 3, 0]);
    assert_eq!(count(&agent, "numberUnavailable"), 3);

    // Released, they become available like any other.
    sim.set_workloads(delayed(0));
    let stuck = deployment_where(&client, &ns, "stuck", "stuck available", |d| {
        count(d, "availableReplicas") == 2
    })
    .await;
    assert_eq!(
        reason(&stuck, "Available").as_deref(),
        Some("MinimumReplicasAvailable")
    );
    assert_eq!(
        reason(&stuck, "Progressing").as_deref(),
        Some("NewReplicaSetAvailable")
    );
    daemonset_where(&client, &ns, "stuck-agent", "agent available", |d| {
        count(d, "numberAvailable") == 3
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn switched_off_the_simulator_leaves_status_alone() -> TestResult {
    let (sim, client) = start_with(with_workloads(None)).await;
    create_cluster_nodes(&client).await;
    let ns = namespace(&client, "apps").await;
    create_deployment(&client, &ns, "web", 1, json!({})).await;
    create_daemonset(&client, &ns, "agent", json!({})).await;
    // Nothing can be awaited for "never"; a pause long enough for a pass is the best there is.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dep = deployment_json(&client, &ns, "web").await;
    assert!(
        dep.pointer("/status/observedGeneration").is_none()
            && dep.pointer("/status/conditions").is_none(),
        "{}",
        dep["status"]
    );
    let ds = daemonset_json(&client, &ns, "agent").await;
    assert!(
        ds.pointer("/status/observedGeneration").is_none(),
        "{}",
        ds["status"]
    );
    assert_eq!(ds_counts(&ds), [0; 6], "the API server's zero values only");

    sim.set_workloads(delayed(0));
    deployment_where(&client, &ns, "web", "web available once switched on", |d| {
        count(d, "availableReplicas") == 1
    })
    .await;
    daemonset_where(
        &client,
        &ns,
        "agent",
        "agent available once switched on",
        |d| count(d, "numberAvailable") == 3,
    )
    .await;

    sim.set_workloads(None);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let scaled = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    assert_eq!(scaled.metadata.generation, Some(2));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dep = deployment_json(&client, &ns, "web").await;
    assert_eq!(
        dep["status"]["observedGeneration"], 1,
        "nobody observes the new generation"
    );
    assert_eq!(count(&dep, "replicas"), 1);
    Ok(())
}

#[tokio::test]
async fn pods_take_the_configured_delay_to_become_ready() -> TestResult {
    let (_sim, client) = start_with(with_workloads(delayed(60_000))).await;
    create_node(&client, "worker-1", false, true).await;
    let ns = namespace(&client, "apps").await;
    create_deployment(&client, &ns, "web", 2, json!({})).await;
    create_daemonset(&client, &ns, "agent", json!({})).await;

    let dep = deployment_json(&client, &ns, "web").await;
    assert_eq!(
        count(&dep, "availableReplicas"),
        0,
        "not available right after create: {}",
        dep["status"]
    );
    assert_ne!(
        condition(&dep, "Available").map(|c| c["status"].clone()),
        Some(json!("True"))
    );

    // The controllers observe at once, as on a real cluster; the pods are what takes time.
    let dep = deployment_where(&client, &ns, "web", "web observed", |d| {
        d["status"]["observedGeneration"] == 1
    })
    .await;
    assert_eq!(
        (
            count(&dep, "replicas"),
            count(&dep, "readyReplicas"),
            count(&dep, "unavailableReplicas")
        ),
        (2, 0, 2)
    );
    assert_eq!(
        reason(&dep, "Available").as_deref(),
        Some("MinimumReplicasUnavailable")
    );
    assert_eq!(
        reason(&dep, "Progressing").as_deref(),
        Some("ReplicaSetUpdated")
    );
    let message = condition(&dep, "Progressing")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("ReplicaSet \"web-") && message.ends_with("\" is progressing."),
        "{message}"
    );
    let ds = daemonset_where(&client, &ns, "agent", "agent observed", |d| {
        d["status"]["observedGeneration"] == 1
    })
    .await;
    assert_eq!(ds_counts(&ds), [1, 1, 0, 0, 1, 0]);
    Ok(())
}

#[tokio::test]
async fn a_template_change_starts_a_new_rollout() -> TestResult {
    let (sim, client) = start_with(SimConfig::default()).await;
    let ns = namespace(&client, "apps").await;
    create_deployment(&client, &ns, "web", 4, json!({})).await;
    let before = deployment_where(&client, &ns, "web", "web available", |d| {
        count(d, "availableReplicas") == 4
    })
    .await;
    let old_message = condition(&before, "Progressing")
        .map(|c| c["message"].clone())
        .expect("a Progressing condition");

    sim.set_workloads(delayed(60_000));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.example/app:2"}]}}}});
    let changed = deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    assert_eq!(changed.metadata.generation, Some(2));

    let rolling = deployment_where(&client, &ns, "web", "the new rollout observed", |d| {
        d["status"]["observedGeneration"] == 2
    })
    .await;
    let progressing = condition(&rolling, "Progressing").expect("a Progressing condition");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("True"), &json!("ReplicaSetUpdated"))
    );
    assert_ne!(
        progressing["message"], old_message,
        "a new ReplicaSet is named"
    );
    // 25% of 4 may surge by one and lose one: three old pods keep serving beside two new ones.
    assert_eq!(
        (
            count(&rolling, "replicas"),
            count(&rolling, "updatedReplicas"),
            count(&rolling, "availableReplicas")
        ),
        (5, 2, 3)
    );
    assert_eq!(
        reason(&rolling, "Available").as_deref(),
        Some("MinimumReplicasAvailable")
    );

    sim.set_workloads(delayed(0));
    let done = deployment_where(&client, &ns, "web", "the new rollout complete", |d| {
        count(d, "updatedReplicas") == 4
            && count(d, "availableReplicas") == 4
            && count(d, "replicas") == 4
    })
    .await;
    let progressing = condition(&done, "Progressing").expect("a Progressing condition");
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
    assert_ne!(progressing["message"], old_message);
    Ok(())
}

/// With `require_volume_sources`, as a kubelet: pods that mount a missing Secret (directly or
/// projected) wait for it and become ready once it exists; an optional or unmounted source is
/// not waited for.
#[tokio::test]
async fn pods_wait_for_the_secrets_they_mount() -> TestResult {
    let (_sim, client) = start_with(with_workloads(Some(WorkloadConfig {
        require_volume_sources: true,
        ..WorkloadConfig::default()
    })))
    .await;
    let ns = namespace(&client, "apps").await;
    let mounts = json!({"containers": [{"name": "main", "image": "registry.example/app:1",
        "volumeMounts": [{"name": "cert", "mountPath": "/cert"}, {"name": "opt", "mountPath": "/opt"}]}],
        "volumes": [
            {"name": "cert", "projected": {"sources": [{"secret": {"name": "tls"}}]}},
            {"name": "opt", "secret": {"secretName": "maybe", "optional": true}},
            {"name": "unused", "configMap": {"name": "nowhere"}}]});
    create_deployment(
        &client,
        &ns,
        "web",
        1,
        json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": mounts}}),
    )
    .await;
    let dep = deployment_where(&client, &ns, "web", "web reported", |d| {
        condition(d, "Available").is_some()
    })
    .await;
    assert_eq!(count(&dep, "readyReplicas"), 0, "waits for Secret tls");
    assert_eq!(
        condition(&dep, "Available").expect("Available")["status"],
        "False"
    );
    let secret: k8s_openapi::api::core::v1::Secret =
        serde_json::from_value(json!({"metadata": {"name": "tls"}, "data": {}}))?;
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await?;
    deployment_where(&client, &ns, "web", "web available once tls exists", |d| {
        count(d, "availableReplicas") == 1
    })
    .await;
    Ok(())
}
