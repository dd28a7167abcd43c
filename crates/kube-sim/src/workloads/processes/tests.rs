//! Tests of the process runner: desired pods, command lines, environments and the loop.

use super::command::{PodFacts, Source, command_line, expand, resolve_env};
use super::desired::{
    Decision, Launch, PodView, Want, decide, grace_period, next_backoff, pod_name, random_uid, want,
};
use super::state::{LocalProgram, Readiness};
use super::*;
use serde_json::Value;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

fn deployment(image: &str, replicas: i64) -> Value {
    json!({
        "metadata": {"name": "op", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}, "annotations": {"a/b": "c"}},
                "spec": {
                    "serviceAccountName": "op-sa",
                    "containers": [
                        {"name": "sidecar", "image": "other:1"},
                        {"name": "op", "image": image, "command": ["csi-operator", "start"], "args": ["--v=$(LEVEL)"]},
                    ],
                },
            },
        },
    })
}

fn images() -> BTreeMap<String, LocalProgram> {
    BTreeMap::from([(
        "op:1".to_string(),
        LocalProgram {
            program: "/bin/op".into(),
            drop_leading: 1,
            extra_args: vec!["--x=$(LEVEL)".into()],
            env: BTreeMap::new(),
        },
    )])
}

fn facts() -> PodFacts {
    PodFacts {
        name: "op-abc-bcdfg".into(),
        namespace: "ns".into(),
        uid: "pod-uid".into(),
        hash: "abc".into(),
        service_account: "op-sa".into(),
        node_name: NODE_NAME.into(),
    }
}

#[test]
fn expansion_follows_kubernetes() {
    let vars = BTreeMap::from([
        ("A".to_string(), "1".to_string()),
        ("B".into(), "x$(A)".into()),
    ]);
    let cases = [
        ("$(A)", "1"),
        ("pre-$(A)-post", "pre-1-post"),
        ("$(B)", "x$(A)"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$A", "$A"),
        ("a$", "a$"),
        ("$(A", "$(A"),
        ("$(A)$(A)", "11"),
        ("ünï$(A)cödé", "ünï1cödé"),
    ];
    for (input, want) in cases {
        assert_eq!(expand(input, &vars), want, "{input}");
    }
}

#[test]
fn only_mapped_images_are_wanted() {
    let w = want(&deployment("op:1", 1), &images()).expect("mapped");
    assert_eq!(
        (w.container, w.replicas, w.recreate, w.paused),
        (1, 1, false, false)
    );
    assert!(
        want(&deployment("op:2", 1), &images()).is_none(),
        "a tag must match exactly"
    );
    let mut deleting = deployment("op:1", 1);
    deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    assert!(
        want(&deleting, &images()).is_none(),
        "a Deployment being deleted has no pods"
    );
    assert_eq!(
        want(&deployment("op:1", 7), &images()).map(|w| w.replicas),
        Some(MAX_REPLICAS)
    );
    assert_eq!(
        want(&deployment("op:1", -1), &images()).map(|w| w.replicas),
        Some(0)
    );
    let mut defaulted = deployment("op:1", 1);
    defaulted["spec"]
        .as_object_mut()
        .map(|s| s.remove("replicas"));
    assert_eq!(want(&defaulted, &images()).map(|w| w.replicas), Some(1));
}

#[test]
fn the_command_line_drops_expands_and_appends() {
    let dep = deployment("op:1", 1);
    let container = &dep["spec"]["template"]["spec"]["containers"][1];
    let env = BTreeMap::from([("LEVEL".to_string(), "4".to_string())]);
    let program = images().remove("op:1").expect("mapped");
    assert_eq!(
        command_line(container, &program, &env),
        ["start", "--v=4", "--x=$(LEVEL)"],
        "extra args are not expanded"
    );
    let too_many = LocalProgram {
        drop_leading: 5,
        ..program
    };
    assert_eq!(
        command_line(container, &too_many, &env),
        ["--v=4", "--x=$(LEVEL)"]
    );
}

#[test]
fn env_resolves_like_the_kubelet() {
    let container = json!({"envFrom": [
        {"configMapRef": {"name": "cm"}, "prefix": "CM_"},
        {"secretRef": {"name": "gone", "optional": true}},
    ], "env": [
        {"name": "CM_a", "value": "overridden"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "HASH", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['pod-template-hash']"}}},
        {"name": "ANN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a/b']"}}},
        {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}},
        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
        {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": true}}},
        {"name": "OPT_KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope", "optional": true}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        {"name": "COMBINED", "value": "$(POD)/$(FROM_CM)/$(UNKNOWN)"},
    ]});
    let dep = deployment("op:1", 1);
    let template = &dep["spec"]["template"];
    let lookup = |source: Source, name: &str| match (source, name) {
        (Source::ConfigMap, "cm") => Some(BTreeMap::from([
            ("a".to_string(), "from-cm".to_string()),
            ("b=c".into(), "bad key".into()),
        ])),
        (Source::Secret, "s") => Some(BTreeMap::from([(
            "password".to_string(),
            "hunter2".to_string(),
        )])),
        _ => None,
    };
    let env = resolve_env(&container, template, &facts(), &lookup).expect("resolves");
    let get = |k: &str| env.get(k).map(String::as_str);
    assert_eq!(get("CM_a"), Some("overridden"), "env overrides envFrom");
    assert_eq!(get("CM_b=c"), None, "invalid names are skipped");
    assert_eq!(get("POD"), Some("op-abc-bcdfg"));
    assert_eq!(get("NS"), Some("ns"));
    assert_eq!(get("SA"), Some("op-sa"));
    assert_eq!(get("NODE"), Some(NODE_NAME));
    assert_eq!(get("IP"), Some(POD_IP));
    assert_eq!(get("APP"), Some("op"));
    assert_eq!(get("HASH"), Some("abc"));
    assert_eq!(get("ANN"), Some("c"));
    assert_eq!(get("FROM_CM"), Some("from-cm"));
    assert_eq!(get("FROM_SECRET"), Some("hunter2"));
    assert_eq!(get("OPT"), None);
    assert_eq!(get("OPT_KEY"), None);
    assert_eq!(get("MEM"), None);
    assert_eq!(get("COMBINED"), Some("op-abc-bcdfg/from-cm/$(UNKNOWN)"));
}

#[test]
fn missing_references_are_container_config_errors() {
    let dep = deployment("op:1", 1);
    let template = &dep["spec"]["template"];
    let lookup = |source: Source, name: &str| match (source, name) {
        (Source::ConfigMap, "cm") | (Source::Secret, "s") => Some(BTreeMap::from([(
            "a".to_string(),
            "secret-value".to_string(),
        )])),
        _ => None,
    };
    let cases = [
        (
            json!({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "a"}}}]}),
            "configmap \"nope\" not found",
        ),
        (
            json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "a"}}}]}),
            "secret \"nope\" not found",
        ),
        (
            json!({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b"}}}]}),
            "couldn't find key b in ConfigMap ns/cm",
        ),
        (
            json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "b"}}}]}),
            "couldn't find key b in Secret ns/s",
        ),
        (
            json!({"envFrom": [{"secretRef": {"name": "nope"}}]}),
            "secret \"nope\" not found",
        ),
        (
            json!({"envFrom": [{"configMapRef": {"name": "nope"}}]}),
            "configmap \"nope\" not found",
        ),
        (
            json!({"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]}),
            "unsupported fieldPath \"spec.bogus\"",
        ),
    ];
    for (container, want) in cases {
        let err = resolve_env(&container, template, &facts(), &lookup).expect_err("fails");
        let message = err.to_string();
        assert!(message.contains(want), "{message} should contain {want}");
        assert!(
            !message.contains("secret-value"),
            "never a value: {message}"
        );
    }
}

#[test]
fn backoff_doubles_caps_and_resets() {
    let short = Duration::from_secs(1);
    assert_eq!(next_backoff(None, short), BACKOFF_INITIAL);
    let mut b = None;
    let mut seen = Vec::new();
    for _ in 0..7 {
        let next = next_backoff(b, short);
        seen.push(next.as_secs());
        b = Some(next);
    }
    assert_eq!(seen, [1, 2, 4, 8, 16, 30, 30]);
    assert_eq!(
        next_backoff(b, BACKOFF_RESET),
        BACKOFF_INITIAL,
        "a long run resets it"
    );
}

#[test]
fn the_grace_period_is_capped() {
    assert_eq!(grace_period(&json!({})), MAX_GRACE);
    assert_eq!(
        grace_period(&json!({"spec": {"terminationGracePeriodSeconds": 2}})),
        Duration::from_secs(2)
    );
    assert_eq!(
        grace_period(&json!({"spec": {"terminationGracePeriodSeconds": -1}})),
        Duration::ZERO
    );
}

#[test]
fn pod_names_are_stable_and_distinct() {
    let a = pod_name("op", "abc", "u1", 0);
    assert_eq!(a, pod_name("op", "abc", "u1", 0));
    assert!(
        a.starts_with("op-abc-") && a.len() == "op-abc-".len() + 5,
        "{a}"
    );
    assert_ne!(a, pod_name("op", "abc", "u1", 1));
    assert_ne!(a, pod_name("op", "abc", "u2", 0));
    let uid = random_uid();
    assert_eq!(uid.len(), 36, "{uid}");
    assert_ne!(uid, random_uid());
}

fn view(id: u64, hash: &str, index: usize, stopping: bool) -> PodView {
    PodView {
        id,
        uid: "u1".into(),
        hash: hash.into(),
        index,
        generation: 0,
        stopping,
        template: json!({"old": hash}),
    }
}

fn wanted(mut f: impl FnMut(&mut Value)) -> Want {
    let mut dep = deployment("op:1", 1);
    f(&mut dep);
    want(&dep, &images()).expect("mapped")
}

#[test]
fn decisions_start_stop_and_roll() {
    let w = wanted(|_| {});
    let h = w.hash.clone();
    let d = decide(std::slice::from_ref(&w), &[], 0);
    assert_eq!(d.stop, Vec::<u64>::new());
    assert_eq!(
        d.start
            .iter()
            .map(|l| (l.hash.as_str(), l.index))
            .collect::<Vec<_>>(),
        [(h.as_str(), 0)]
    );

    assert_eq!(
        decide(std::slice::from_ref(&w), &[view(1, &h, 0, false)], 0),
        Decision::default(),
        "running as wanted"
    );
    let d = decide(&[], &[view(1, &h, 0, false)], 0);
    assert_eq!(d.stop, [1], "deleted Deployments lose their pods");
    let d = decide(std::slice::from_ref(&w), &[view(1, &h, 0, false)], 1);
    assert_eq!(
        (d.stop.as_slice(), d.start.len()),
        (&[1u64][..], 1),
        "a configuration change replaces pods"
    );

    let scaled = wanted(|d| d["spec"]["replicas"] = json!(0));
    assert_eq!(decide(&[scaled], &[view(1, &h, 0, false)], 0).stop, [1]);
    let three = wanted(|d| d["spec"]["replicas"] = json!(3));
    assert_eq!(
        decide(&[three], &[view(1, &h, 0, false)], 0)
            .start
            .iter()
            .map(|l| l.index)
            .collect::<Vec<_>>(),
        [1, 2]
    );

    // A template change: RollingUpdate starts the new pod while the old one stops.
    let d = decide(std::slice::from_ref(&w), &[view(1, "old", 0, false)], 0);
    assert_eq!((d.stop.as_slice(), d.start.len()), (&[1u64][..], 1));
    let d = decide(std::slice::from_ref(&w), &[view(1, "old", 0, true)], 0);
    assert_eq!(
        d.start.len(),
        1,
        "rolling: not held back by a terminating pod"
    );
}

#[test]
fn recreate_waits_for_the_old_pods_to_be_gone() {
    let w = wanted(|d| d["spec"]["strategy"] = json!({"type": "Recreate"}));
    let d = decide(std::slice::from_ref(&w), &[view(1, "old", 0, false)], 0);
    assert_eq!((d.stop.as_slice(), d.start.len()), (&[1u64][..], 0));
    assert_eq!(
        decide(std::slice::from_ref(&w), &[view(1, "old", 0, true)], 0),
        Decision::default()
    );
    assert_eq!(decide(std::slice::from_ref(&w), &[], 0).start.len(), 1);
}

#[test]
fn a_paused_deployment_keeps_its_running_template() {
    let w = wanted(|d| d["spec"]["paused"] = json!(true));
    assert_eq!(
        decide(std::slice::from_ref(&w), &[view(1, "old", 0, false)], 0),
        Decision::default()
    );
    let w3 = wanted(|d| {
        d["spec"]["paused"] = json!(true);
        d["spec"]["replicas"] = json!(2);
    });
    let d = decide(&[w3], &[view(1, "old", 0, false)], 0);
    assert_eq!(
        d.start,
        [Launch {
            want: 0,
            hash: "old".into(),
            template: json!({"old": "old"}),
            index: 1
        }],
        "scaling a paused Deployment uses the running template"
    );
    let fresh = decide(std::slice::from_ref(&w), &[], 0);
    assert_eq!(
        fresh.start.first().map(|l| l.hash.clone()),
        Some(w.hash.clone())
    );
}

#[test]
fn readiness_reports_hashes_whose_pods_all_run() {
    let r = Readiness {
        images: BTreeSet::from(["op:1".to_string()]),
        running: HashMap::from([(
            "u1".to_string(),
            BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2)]),
        )]),
    };
    assert_eq!(
        r.running_hashes(&deployment("other:9", 1)),
        None,
        "virtual pods"
    );
    assert_eq!(
        r.running_hashes(&deployment("op:1", 1)),
        Some(BTreeSet::from(["a".to_string(), "b".to_string()]))
    );
    assert_eq!(
        r.running_hashes(&deployment("op:1", 2)),
        Some(BTreeSet::from(["b".to_string()]))
    );
    let mut other = deployment("op:1", 1);
    other["metadata"]["uid"] = json!("u2");
    assert_eq!(r.running_hashes(&other), Some(BTreeSet::new()));
}

#[test]
fn the_status_follows_the_processes() {
    use crate::workload::{WorkloadConfig, deployment_status_with};
    let dep = deployment("op:1", 1);
    let hash = want(&dep, &images()).expect("mapped").hash;
    let config = WorkloadConfig::default();
    let at = |s: i64| jiff::Timestamp::from_second(1_700_000_000 + s).expect("time");
    let available = |status: &Value| {
        status["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
            .map(|c| c["status"].clone())
    };
    let mut track = None;
    let none = BTreeSet::new();
    let up = BTreeSet::from([hash.clone()]);
    let (s, _) = deployment_status_with(&dep, &mut track, at(0), &config, Some(&none));
    assert_eq!(
        (available(&s), s["readyReplicas"].as_i64()),
        (Some(json!("False")), None),
        "not started yet"
    );
    let (s, _) = deployment_status_with(&dep, &mut track, at(1), &config, Some(&up));
    assert_eq!(
        (available(&s), s["readyReplicas"].as_i64()),
        (Some(json!("True")), Some(1))
    );
    let (s, _) = deployment_status_with(
        &dep,
        &mut track,
        at(2),
        &config,
        Some(&BTreeSet::from(["other".to_string()])),
    );
    assert_eq!(
        available(&s),
        Some(json!("False")),
        "the process of another template does not count"
    );
    let (s, _) = deployment_status_with(&dep, &mut track, at(3), &config, None);
    assert_eq!(available(&s), Some(json!("True")), "virtual pods are up");
}
