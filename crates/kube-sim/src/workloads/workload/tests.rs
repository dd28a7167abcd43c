//! Tests of the workload simulator: status of Deployments and DaemonSets, scheduling.

use super::config::{WorkloadConfig, WorkloadKind, WorkloadRef};
use super::daemonsets::{DaemonSetTrack, daemonset_status};
use super::deployments::{DeploymentTrack, deployment_status};
use super::helpers::{pod_template_hash, stamp};
use super::scheduling::{node_should_run, tolerates};
use jiff::Timestamp;
use serde_json::{Value, json};
use std::sync::Arc;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).expect("a valid time")
}

fn config(delay_ms: u64) -> WorkloadConfig {
    WorkloadConfig {
        delay_ms,
        ..WorkloadConfig::default()
    }
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}},
        },
    })
}

/// One controller pass, storing the status as the loop does.
fn step(
    obj: &mut Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    cfg: &WorkloadConfig,
) -> Option<Timestamp> {
    let (status, wake) = deployment_status(obj, track, now, cfg);
    obj["status"] = status;
    wake
}

fn cond<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {obj}"))
}

fn rs_name(obj: &Value) -> String {
    format!("web-{}", pod_template_hash(&obj["spec"]["template"], None))
}

#[test]
fn a_new_deployment_is_observed_at_once_and_becomes_available_after_the_delay() {
    let mut dep = deployment(3, "nginx:1");
    let mut track = None;
    let cfg = config(5_000);
    let wake = step(&mut dep, &mut track, at(0), &cfg);
    let s = &dep["status"];
    assert_eq!(
        (
            s["observedGeneration"].as_i64(),
            s["replicas"].as_i64(),
            s["updatedReplicas"].as_i64()
        ),
        (Some(1), Some(3), Some(3))
    );
    assert_eq!(s["unavailableReplicas"], 3);
    assert!(
        s.get("readyReplicas").is_none() && s.get("availableReplicas").is_none(),
        "zero counts are omitted: {s}"
    );
    let available = cond(&dep, "Available");
    assert_eq!(
        (&available["status"], &available["reason"]),
        (&json!("False"), &json!("MinimumReplicasUnavailable"))
    );
    assert_eq!(
        available["message"],
        "Deployment does not have minimum availability."
    );
    let progressing = cond(&dep, "Progressing");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("True"), &json!("ReplicaSetUpdated"))
    );
    assert_eq!(
        progressing["message"],
        format!("ReplicaSet \"{}\" is progressing.", rs_name(&dep))
    );
    assert_eq!(wake, Some(at(5)));

    assert_eq!(step(&mut dep, &mut track, at(5), &cfg), None);
    let s = &dep["status"];
    assert_eq!(
        (s["readyReplicas"].as_i64(), s["availableReplicas"].as_i64()),
        (Some(3), Some(3))
    );
    assert!(s.get("unavailableReplicas").is_none());
    let available = cond(&dep, "Available");
    assert_eq!(
        (&available["status"], &available["reason"]),
        (&json!("True"), &json!("MinimumReplicasAvailable"))
    );
    assert_eq!(available["message"], "Deployment has minimum availability.");
    assert_eq!(available["lastTransitionTime"], stamp(at(5)));
    let progressing = cond(&dep, "Progressing");
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
    assert_eq!(
        progressing["message"],
        format!(
            "ReplicaSet \"{}\" has successfully progressed.",
            rs_name(&dep)
        )
    );
    assert_eq!(
        progressing["lastTransitionTime"],
        stamp(at(0)),
        "Progressing stayed True throughout"
    );
    let types: Vec<&Value> = dep["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| &c["type"])
        .collect();
    assert_eq!(types, [&json!("Available"), &json!("Progressing")]);

    let settled = dep["status"].clone();
    step(&mut dep, &mut track, at(500), &cfg);
    assert_eq!(dep["status"], settled, "a settled status is not rewritten");
}

#[test]
fn a_longer_delay_holds_back_starting_pods_but_not_running_ones() {
    let mut dep = deployment(2, "nginx:1");
    let mut track = None;
    step(&mut dep, &mut track, at(0), &config(0));
    assert_eq!(dep["status"]["availableReplicas"], 2);
    step(&mut dep, &mut track, at(1), &config(60_000));
    assert_eq!(
        dep["status"]["availableReplicas"], 2,
        "running pods stay ready"
    );

    let mut slow = deployment(2, "nginx:1");
    let mut track = None;
    step(&mut slow, &mut track, at(0), &config(60_000));
    assert!(slow["status"].get("availableReplicas").is_none());
    step(&mut slow, &mut track, at(1), &config(0));
    assert_eq!(
        slow["status"]["availableReplicas"], 2,
        "starting pods catch up with a shorter delay"
    );
}

#[test]
fn minimum_availability_follows_max_unavailable() {
    // 4 replicas at the default 25% may lose one; Recreate may lose none.
    let mut dep = deployment(4, "nginx:1");
    dep["status"] = json!({"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4});
    let mut track = None;
    step(&mut dep, &mut track, at(0), &config(0));
    assert_eq!(cond(&dep, "Available")["status"], "True");
    let mut recreate = deployment(4, "nginx:1");
    recreate["spec"]["strategy"] = json!({"type": "Recreate"});
    let mut track = None;
    step(&mut recreate, &mut track, at(0), &config(1_000));
    assert_eq!(cond(&recreate, "Available")["status"], "False");
    let mut zero = deployment(0, "nginx:1");
    let mut track = None;
    step(&mut zero, &mut track, at(0), &config(1_000));
    assert_eq!(
        cond(&zero, "Available")["status"],
        "True",
        "nothing to wait for"
    );
    assert_eq!(
        cond(&zero, "Progressing")["reason"],
        "NewReplicaSetAvailable"
    );
}

#[test]
fn the_deadline_cap_shortens_long_deadlines_only() {
    let mut cfg = config(0);
    cfg.unavailable.push(WorkloadRef {
        kind: WorkloadKind::Deployment,
        namespace: "ns".into(),
        name: "web".into(),
    });
    cfg.max_progress_deadline_seconds = Some(3);
    // The default 600 s deadline is capped to 3 s.
    let mut dep = deployment(1, "nginx:1");
    let mut track = None;
    assert_eq!(step(&mut dep, &mut track, at(0), &cfg), Some(at(4)));
    step(&mut dep, &mut track, at(4), &cfg);
    assert_eq!(
        cond(&dep, "Progressing")["reason"],
        "ProgressDeadlineExceeded"
    );
    // A shorter deadline of its own is kept.
    let mut short = deployment(1, "nginx:1");
    short["spec"]["progressDeadlineSeconds"] = json!(1);
    let mut track = None;
    assert_eq!(step(&mut short, &mut track, at(0), &cfg), Some(at(2)));
}

#[test]
fn an_unavailable_deployment_times_out_and_recovers_when_released() {
    let mut dep = deployment(2, "nginx:1");
    dep["spec"]["progressDeadlineSeconds"] = json!(10);
    let mut cfg = config(0);
    cfg.unavailable.push(WorkloadRef {
        kind: WorkloadKind::Deployment,
        namespace: "ns".into(),
        name: "web".into(),
    });
    let mut track = None;
    assert_eq!(step(&mut dep, &mut track, at(0), &cfg), Some(at(11)));
    assert_eq!(cond(&dep, "Progressing")["reason"], "ReplicaSetUpdated");
    let before = dep["status"].clone();
    step(&mut dep, &mut track, at(5), &cfg);
    assert_eq!(
        dep["status"], before,
        "no progress, no deadline yet: nothing changes"
    );
    assert_eq!(step(&mut dep, &mut track, at(11), &cfg), None);
    let progressing = cond(&dep, "Progressing");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("False"), &json!("ProgressDeadlineExceeded"))
    );
    assert_eq!(
        progressing["message"],
        format!(
            "ReplicaSet \"{}\" has timed out progressing.",
            rs_name(&dep)
        )
    );
    assert_eq!(cond(&dep, "Available")["status"], "False");
    assert!(dep["status"].get("availableReplicas").is_none());

    // Another workload in the list does not hold this one back.
    cfg.unavailable[0].kind = WorkloadKind::DaemonSet;
    step(&mut dep, &mut track, at(20), &cfg);
    assert_eq!(dep["status"]["availableReplicas"], 2);
    let progressing = cond(&dep, "Progressing");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("True"), &json!("NewReplicaSetAvailable"))
    );
    assert_eq!(progressing["lastTransitionTime"], stamp(at(20)));
}

#[test]
fn a_template_change_rolls_out_with_surge_and_keeps_old_pods_serving() {
    let mut dep = deployment(4, "nginx:1");
    let mut track = None;
    let cfg = config(10_000);
    step(&mut dep, &mut track, at(0), &cfg);
    step(&mut dep, &mut track, at(10), &cfg);
    let old_rs = rs_name(&dep);
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    dep["metadata"]["generation"] = json!(2);
    let new_rs = rs_name(&dep);
    assert_ne!(old_rs, new_rs);

    assert_eq!(step(&mut dep, &mut track, at(20), &cfg), Some(at(30)));
    let s = &dep["status"];
    assert_eq!(s["observedGeneration"], 2);
    // 25% of 4: one surge, one unavailable: 3 old pods stay, 2 new ones start.
    assert_eq!(
        (
            s["replicas"].as_i64(),
            s["updatedReplicas"].as_i64(),
            s["availableReplicas"].as_i64()
        ),
        (Some(5), Some(2), Some(3))
    );
    assert_eq!(cond(&dep, "Available")["status"], "True");
    let progressing = cond(&dep, "Progressing");
    assert_eq!(progressing["reason"], "ReplicaSetUpdated");
    assert_eq!(
        progressing["message"],
        format!("ReplicaSet \"{new_rs}\" is progressing.")
    );

    step(&mut dep, &mut track, at(30), &cfg);
    let s = &dep["status"];
    assert_eq!(
        (
            s["replicas"].as_i64(),
            s["updatedReplicas"].as_i64(),
            s["availableReplicas"].as_i64()
        ),
        (Some(4), Some(4), Some(4))
    );
    assert_eq!(
        cond(&dep, "Progressing")["message"],
        format!("ReplicaSet \"{new_rs}\" has successfully progressed.")
    );
}

#[test]
fn a_paused_deployment_does_not_roll_out_until_resumed() {
    let mut dep = deployment(2, "nginx:1");
    let mut track = None;
    let cfg = config(0);
    step(&mut dep, &mut track, at(0), &cfg);
    dep["spec"]["paused"] = json!(true);
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    dep["metadata"]["generation"] = json!(2);
    let old = rs_name(&deployment(2, "nginx:1"));
    step(&mut dep, &mut track, at(5), &cfg);
    let progressing = cond(&dep, "Progressing");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("Unknown"), &json!("DeploymentPaused"))
    );
    assert_eq!(progressing["message"], "Deployment is paused");
    assert_eq!(dep["status"]["observedGeneration"], 2);
    assert_eq!(
        track.as_ref().map(|t| t.hash.clone()),
        old.strip_prefix("web-").map(str::to_string),
        "the old template still runs"
    );

    dep["spec"]["paused"] = json!(false);
    step(&mut dep, &mut track, at(6), &cfg);
    assert_eq!(
        cond(&dep, "Progressing")["message"],
        format!(
            "ReplicaSet \"{}\" has successfully progressed.",
            rs_name(&dep)
        )
    );
}

#[test]
fn tolerations_match_taints_as_kubernetes_does() {
    let taint = json!({"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"});
    let valued = json!({"key": "dedicated", "value": "db", "effect": "NoExecute"});
    let cases = [
        (
            json!({"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}),
            &taint,
            true,
        ),
        (
            json!({"key": "node-role.kubernetes.io/master", "operator": "Exists"}),
            &taint,
            true,
        ),
        (
            json!({"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoExecute"}),
            &taint,
            false,
        ),
        (json!({"operator": "Exists"}), &taint, true),
        (
            json!({"operator": "Exists", "effect": "NoExecute"}),
            &taint,
            false,
        ),
        (json!({"key": "other", "operator": "Exists"}), &taint, false),
        (
            json!({"key": "node-role.kubernetes.io/master"}),
            &taint,
            true,
        ),
        (
            json!({"key": "dedicated", "operator": "Equal", "value": "db"}),
            &valued,
            true,
        ),
        (json!({"key": "dedicated", "value": "web"}), &valued, false),
        (
            json!({"key": "dedicated", "operator": "Lt", "value": "db"}),
            &valued,
            false,
        ),
    ];
    for (toleration, taint, want) in cases {
        assert_eq!(
            tolerates(&toleration, taint),
            want,
            "{toleration} vs {taint}"
        );
    }
}

fn node(name: &str, labels: Value, taints: Value, ready: bool) -> Arc<Value> {
    Arc::new(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints},
        "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    }))
}

fn master(name: &str) -> Arc<Value> {
    node(
        name,
        json!({"node-role.kubernetes.io/master": "", "kubernetes.io/os": "linux"}),
        json!([{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]),
        true,
    )
}

fn worker(name: &str) -> Arc<Value> {
    node(
        name,
        json!({"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}),
        json!([]),
        true,
    )
}

#[test]
fn daemon_pods_go_where_selectors_affinity_and_taints_allow() {
    let m = master("m1");
    let w = worker("w1");
    let plain = json!({});
    let tolerant = json!({"tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}]});
    assert_eq!(
        node_should_run(&m, &plain),
        (false, true),
        "a NoSchedule taint lets running pods stay"
    );
    assert_eq!(node_should_run(&w, &plain), (true, true));
    assert_eq!(node_should_run(&m, &tolerant), (true, true));
    let masters_only = json!({"nodeSelector": {"node-role.kubernetes.io/master": ""}, "tolerations": tolerant["tolerations"]});
    assert_eq!(node_should_run(&m, &masters_only), (true, true));
    assert_eq!(node_should_run(&w, &masters_only), (false, false));
    let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node-role.kubernetes.io/master", "operator": "DoesNotExist"}]},
    ]}}}});
    assert_eq!(node_should_run(&w, &affinity), (true, true));
    assert!(!node_should_run(&m, &affinity).0);
    let by_name = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w1"]}]},
    ]}}}});
    assert_eq!(node_should_run(&w, &by_name), (true, true));
    assert_eq!(node_should_run(&worker("w2"), &by_name), (false, false));
    assert_eq!(
        node_should_run(&w, &json!({"nodeName": "w2"})),
        (false, false)
    );

    let evicting = node(
        "w3",
        json!({}),
        json!([{"key": "broken", "effect": "NoExecute"}]),
        true,
    );
    assert_eq!(
        node_should_run(&evicting, &plain),
        (false, false),
        "an untolerated NoExecute taint evicts"
    );
    let mut cordoned = (*worker("w4")).clone();
    cordoned["spec"]["unschedulable"] = json!(true);
    assert_eq!(
        node_should_run(&cordoned, &plain),
        (true, true),
        "daemon pods tolerate cordoned nodes"
    );
    let not_ready = node(
        "w5",
        json!({}),
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
        false,
    );
    assert_eq!(
        node_should_run(&not_ready, &plain),
        (true, true),
        "daemon pods tolerate not-ready nodes"
    );
    let no_network = node(
        "w6",
        json!({}),
        json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
        true,
    );
    assert!(!node_should_run(&no_network, &plain).0);
    assert!(node_should_run(&no_network, &json!({"hostNetwork": true})).0);
}

fn daemonset(tolerations: Value) -> Value {
    json!({
        "metadata": {"name": "agent", "namespace": "ns", "uid": "u2", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"tolerations": tolerations, "containers": [{"name": "c", "image": "agent:1"}]}},
        },
    })
}

fn ds_counts(status: &Value) -> [i64; 6] {
    [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberReady",
        "numberAvailable",
        "updatedNumberScheduled",
        "numberMisscheduled",
    ]
    .map(|f| status.get(f).and_then(Value::as_i64).unwrap_or(0))
}

#[test]
fn daemonset_status_counts_the_nodes_it_runs_on() {
    let mut nodes = vec![
        master("m1"),
        master("m2"),
        master("m3"),
        worker("w1"),
        worker("w2"),
    ];
    nodes.push(node("w3", json!({}), json!([]), false));
    let cfg = config(3_000);
    let mut ds = daemonset(json!([]));
    let mut track = DaemonSetTrack::default();
    let (status, wake) = daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
    assert_eq!(ds_counts(&status), [3, 3, 0, 0, 3, 0]);
    assert_eq!(status["numberUnavailable"], 3);
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["numberReady"], 0, "numberReady is always present");
    assert_eq!(wake, Some(at(3)));
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(3), &cfg);
    assert_eq!(
        ds_counts(&status),
        [3, 3, 2, 2, 3, 0],
        "the pod on the NotReady node is scheduled but not ready"
    );
    assert_eq!(status["numberUnavailable"], 1);

    ds["spec"]["template"]["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    ds["metadata"]["generation"] = json!(2);
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(4), &cfg);
    assert_eq!(status["desiredNumberScheduled"], 6);
    assert_eq!(status["observedGeneration"], 2);

    // A NoSchedule taint keeps the running pod (misscheduled); NoExecute evicts it.
    let mut tainted = daemonset(json!([]));
    let mut track = DaemonSetTrack::default();
    daemonset_status(&tainted, &nodes, &mut track, at(0), &cfg);
    nodes[3] = node(
        "w1",
        json!({}),
        json!([{"key": "maintenance", "effect": "NoSchedule"}]),
        true,
    );
    let (status, _) = daemonset_status(&tainted, &nodes, &mut track, at(5), &cfg);
    assert_eq!(
        (
            status["desiredNumberScheduled"].as_i64(),
            status["numberMisscheduled"].as_i64()
        ),
        (Some(2), Some(1))
    );
    nodes[3] = node(
        "w1",
        json!({}),
        json!([{"key": "maintenance", "effect": "NoExecute"}]),
        true,
    );
    let (status, _) = daemonset_status(&tainted, &nodes, &mut track, at(6), &cfg);
    assert_eq!(status["numberMisscheduled"], 0);
    nodes.truncate(3);
    tainted["metadata"]["generation"] = json!(1);
    let (status, _) = daemonset_status(&tainted, &nodes, &mut track, at(7), &cfg);
    assert_eq!(
        ds_counts(&status),
        [0, 0, 0, 0, 0, 0],
        "pods go with their nodes"
    );
}

/// Placement is worked out again only when a Node or the template changed: a pass after an
/// unrelated write reuses it, and a replaced Node (a new object) or a new template does not.
#[test]
fn daemonset_placement_is_reused_until_a_node_or_the_template_changes() {
    let mut nodes = vec![worker("w1"), worker("w2")];
    let cfg = config(1_000);
    let mut ds = daemonset(json!([]));
    let mut track = DaemonSetTrack::default();
    let placed = |t: &DaemonSetTrack| t.placed.0.clone().expect("placements kept");
    daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
    let first = placed(&track);
    daemonset_status(&ds, &nodes, &mut track, at(1), &cfg);
    assert!(
        Arc::ptr_eq(&first, &placed(&track)),
        "nothing changed: reused"
    );

    nodes[1] = node(
        "w2",
        json!({}),
        json!([{"key": "maintenance", "effect": "NoExecute"}]),
        true,
    );
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(2), &cfg);
    assert!(!Arc::ptr_eq(&first, &placed(&track)), "a Node changed");
    assert_eq!(status["desiredNumberScheduled"], 1);

    let second = placed(&track);
    ds["spec"]["template"]["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(3), &cfg);
    assert!(
        !Arc::ptr_eq(&second, &placed(&track)),
        "the template changed"
    );
    assert_ne!(second.hash, placed(&track).hash);
    assert_eq!(status["desiredNumberScheduled"], 2);
}

#[test]
fn a_rolled_out_daemonset_found_on_switch_on_stays_available() {
    let nodes = vec![worker("w1"), worker("w2")];
    let mut ds = daemonset(json!([]));
    ds["status"] = json!({"observedGeneration": 1, "desiredNumberScheduled": 2, "currentNumberScheduled": 2,
        "numberReady": 2, "numberAvailable": 2, "updatedNumberScheduled": 2, "numberMisscheduled": 0});
    let mut track = DaemonSetTrack::default();
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(0), &config(60_000));
    assert_eq!(status, ds["status"]);
    let mut fresh = DaemonSetTrack::default();
    ds["metadata"]["generation"] = json!(2);
    let (status, _) = daemonset_status(&ds, &nodes, &mut fresh, at(0), &config(60_000));
    assert_eq!(
        ds_counts(&status),
        [2, 2, 0, 0, 2, 0],
        "a generation it has not rolled out starts afresh"
    );
}

#[test]
fn daemonset_rolling_update_replaces_one_pod_at_a_time() {
    let nodes = vec![worker("w1"), worker("w2"), worker("w3")];
    let cfg = config(10_000);
    let mut ds = daemonset(json!([]));
    let mut track = DaemonSetTrack::default();
    daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(10), &cfg);
    assert_eq!(ds_counts(&status), [3, 3, 3, 3, 3, 0]);

    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    ds["metadata"]["generation"] = json!(2);
    let mut on_delete = ds.clone();
    let mut on_delete_track = track.clone();
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(20), &cfg);
    assert_eq!(
        ds_counts(&status),
        [3, 3, 2, 2, 1, 0],
        "maxUnavailable 1: one pod is replaced"
    );
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(30), &cfg);
    assert_eq!(ds_counts(&status), [3, 3, 2, 2, 2, 0]);
    daemonset_status(&ds, &nodes, &mut track, at(40), &cfg);
    let (status, wake) = daemonset_status(&ds, &nodes, &mut track, at(50), &cfg);
    assert_eq!(ds_counts(&status), [3, 3, 3, 3, 3, 0]);
    assert_eq!(wake, None);

    on_delete["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    let (status, _) = daemonset_status(&on_delete, &nodes, &mut on_delete_track, at(20), &cfg);
    assert_eq!(
        ds_counts(&status),
        [3, 3, 3, 3, 0, 0],
        "OnDelete pods are replaced only when deleted"
    );
}

#[test]
fn daemonset_surge_keeps_old_pods_available() {
    let nodes = vec![worker("w1"), worker("w2")];
    let cfg = config(10_000);
    let mut ds = daemonset(json!([]));
    ds["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    let mut track = DaemonSetTrack::default();
    daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
    daemonset_status(&ds, &nodes, &mut track, at(10), &cfg);
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(20), &cfg);
    assert_eq!(
        ds_counts(&status),
        [2, 2, 2, 2, 0, 0],
        "the old pods serve while the new one starts"
    );
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(30), &cfg);
    assert_eq!(ds_counts(&status), [2, 2, 2, 2, 1, 0]);
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(40), &cfg);
    assert_eq!(ds_counts(&status), [2, 2, 2, 2, 2, 0]);
}

#[test]
fn an_unavailable_daemonset_never_gets_ready_pods() {
    let nodes = vec![worker("w1"), worker("w2")];
    let mut cfg = config(0);
    cfg.unavailable.push(WorkloadRef {
        kind: WorkloadKind::DaemonSet,
        namespace: "ns".into(),
        name: "agent".into(),
    });
    let ds = daemonset(json!([]));
    let mut track = DaemonSetTrack::default();
    let (status, wake) = daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
    assert_eq!(ds_counts(&status), [2, 2, 0, 0, 2, 0]);
    assert_eq!(status["numberUnavailable"], 2);
    assert_eq!(wake, None);
    let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(1), &config(0));
    assert_eq!(ds_counts(&status), [2, 2, 2, 2, 2, 0]);
}

#[test]
fn the_template_hash_is_stable_and_uses_the_safe_alphabet() {
    let a = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"containers": []}});
    let b: Value = serde_json::from_str(
        r#"{"spec": {"containers": []}, "metadata": {"labels": {"b": "2", "a": "1"}}}"#,
    )
    .expect("json");
    assert_eq!(pod_template_hash(&a, None), pod_template_hash(&b, None));
    assert_ne!(pod_template_hash(&a, None), pod_template_hash(&a, Some(1)));
    assert_ne!(
        pod_template_hash(&a, None),
        pod_template_hash(&json!({"spec": {}}), None)
    );
    assert!(
        pod_template_hash(&a, None)
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
    );
}

#[test]
fn the_config_reads_as_the_admin_path_sends_it() {
    let cfg: WorkloadConfig =
        serde_json::from_value(json!({"delayMs": 250, "unavailable": [{"kind": "DaemonSet", "namespace": "a", "name": "b"}]})).expect("parses");
    assert_eq!(cfg.delay_ms, 250);
    assert!(cfg.is_unavailable(WorkloadKind::DaemonSet, "a", "b"));
    assert!(!cfg.is_unavailable(WorkloadKind::Deployment, "a", "b"));
    assert_eq!(
        serde_json::from_value::<WorkloadConfig>(json!({})).expect("defaults"),
        WorkloadConfig::default()
    );
}
