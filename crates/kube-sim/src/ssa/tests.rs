//! Tests of server-side apply and managedFields tracking against what kube-apiserver writes.

use super::field_manager::{ApplyError, apply, default_manager, record_update};
use super::fieldpath::FieldSet;
use super::text::rfc3339_seconds;
use super::*;
use crate::list_types::{ListKind, ListTypes};
use serde_json::Value;
use serde_json::json;

/// Containers, env and ports keyed like the built-in types, finalizers a set, the rest
/// atomic.
struct TestLists;

impl ListTypes for TestLists {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        let keys = |ks: &[&str]| ListKind::Map(ks.iter().map(|k| k.to_string()).collect());
        match path {
            [.., "containers"] | [.., "env"] => keys(&["name"]),
            [.., "ports"] => keys(&["containerPort", "protocol"]),
            ["metadata", "finalizers"] => ListKind::Set,
            _ => ListKind::Atomic,
        }
    }
}

const T1: &str = "2025-01-01T00:00:01Z";
const T2: &str = "2025-01-01T00:00:02Z";
const T3: &str = "2025-01-01T00:00:03Z";

fn deploy(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "namespace": "ns"}, "spec": spec})
}

/// A Deployment configuration without a spec.
fn bare() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "namespace": "ns"}})
}

fn ssa(live: Option<&Value>, config: &Value, mgr: &str, force: bool, now: &str) -> Value {
    apply(live, config, mgr, force, &TestLists, now, "apps/v1", None).unwrap()
}

fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn fields_of(obj: &Value, manager: &str, operation: &str) -> Value {
    entries(obj)
        .into_iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn conflicts(r: Result<Value, ApplyError>) -> (Vec<(String, String, String)>, String) {
    match r {
        Err(e @ ApplyError::Conflicts(_)) => {
            let ApplyError::Conflicts(cs) = &e else {
                unreachable!()
            };
            let list = cs
                .iter()
                .map(|c| (c.manager.clone(), c.field.clone(), c.message.clone()))
                .collect();
            assert_eq!(e.code(), 409);
            (list, e.message())
        }
        other => panic!("expected conflicts, got {other:?}"),
    }
}

#[test]
fn create_via_apply_records_applied_fields() {
    let mut config = deploy(json!({"replicas": 3, "template": {"spec": {"containers": [
        {"name": "c", "image": "nginx"}]}}}));
    config["metadata"]["labels"] = json!({"app": "x"});
    let obj = ssa(None, &config, "mgr", false, T1);
    let mut expected = config.clone();
    expected["metadata"]["managedFields"] = json!([{
        "manager": "mgr", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}
        }
    }]);
    assert_eq!(obj, expected);
}

#[test]
fn reapplying_the_same_config_changes_nothing() {
    let config = deploy(json!({"replicas": 3}));
    let first = ssa(None, &config, "mgr", false, T1);
    let second = ssa(Some(&first), &config, "mgr", false, T2);
    assert_eq!(second, first, "no-op apply must not even bump the time");
}

#[test]
fn apply_dropping_a_field_removes_it() {
    let mut config = deploy(json!({"replicas": 3, "paused": true}));
    config["metadata"]["labels"] = json!({"app": "x"});
    let first = ssa(None, &config, "mgr", false, T1);
    let second = ssa(
        Some(&first),
        &deploy(json!({"paused": true})),
        "mgr",
        false,
        T2,
    );
    assert!(second["spec"].get("replicas").is_none());
    assert!(second["metadata"].get("labels").is_none());
    assert_eq!(
        fields_of(&second, "mgr", "Apply"),
        json!({"f:spec": {"f:paused": {}}})
    );
    assert_eq!(second["metadata"]["managedFields"][0]["time"], T2);
}

#[test]
fn fields_not_owned_by_the_applier_survive_its_prune() {
    let first = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
    let mut edited = first.clone();
    edited["spec"]["paused"] = json!(true);
    record_update(
        Some(&first),
        &mut edited,
        "editor",
        &TestLists,
        T2,
        "apps/v1",
        None,
    );
    let pruned = ssa(Some(&edited), &deploy(json!({})), "a", false, T3);
    assert_eq!(pruned["spec"], json!({"paused": true}));
}

#[test]
fn two_appliers_share_a_field_with_the_same_value() {
    let a = deploy(json!({"replicas": 3, "paused": true}));
    let b = deploy(json!({"replicas": 3}));
    let obj = ssa(None, &a, "a", false, T1);
    let obj = ssa(Some(&obj), &b, "b", false, T2);
    assert_eq!(
        fields_of(&obj, "b", "Apply"),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(
        fields_of(&obj, "a", "Apply"),
        json!({"f:spec": {"f:paused": {}, "f:replicas": {}}})
    );
    // a stops applying replicas: b still owns it, so it stays.
    let obj = ssa(Some(&obj), &deploy(json!({"paused": true})), "a", false, T3);
    assert_eq!(obj["spec"]["replicas"], 3);
    // b stops too: now nobody owns it and it goes.
    let obj = ssa(Some(&obj), &bare(), "b", false, T3);
    assert!(obj["spec"].get("replicas").is_none());
    assert_eq!(entries(&obj).len(), 1, "b's empty entry is dropped");
}

#[test]
fn conflicting_apply_fails_and_force_takes_ownership() {
    let obj = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
    let b = deploy(json!({"replicas": 5}));
    let r = apply(Some(&obj), &b, "b", false, &TestLists, T2, "apps/v1", None);
    let (list, message) = conflicts(r);
    assert_eq!(
        list,
        vec![(
            "a".to_string(),
            ".spec.replicas".to_string(),
            "conflict with \"a\"".to_string()
        )]
    );
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );
    let forced = ssa(Some(&obj), &b, "b", true, T2);
    assert_eq!(forced["spec"]["replicas"], 5);
    assert_eq!(
        fields_of(&forced, "a", "Apply"),
        Value::Null,
        "a owns nothing left"
    );
    assert_eq!(
        fields_of(&forced, "b", "Apply"),
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[test]
fn several_conflicts_are_listed_per_manager() {
    let a = deploy(json!({"replicas": 3, "template": {"spec": {"containers": [
        {"name": "c", "image": "one"}]}}}));
    let obj = ssa(None, &a, "a", false, T1);
    let mut edited = obj.clone();
    edited["spec"]["paused"] = json!(false);
    record_update(
        Some(&obj),
        &mut edited,
        "ed",
        &TestLists,
        T2,
        "apps/v1",
        None,
    );
    let b = deploy(
        json!({"replicas": 4, "paused": true, "template": {"spec": {"containers": [
        {"name": "c", "image": "two"}]}}}),
    );
    let r = apply(
        Some(&edited),
        &b,
        "b",
        false,
        &TestLists,
        T3,
        "apps/v1",
        None,
    );
    let (list, message) = conflicts(r);
    assert_eq!(list.len(), 3);
    assert_eq!(
        message,
        "Apply failed with 3 conflicts: conflicts with \"a\":\n\
         - .spec.replicas\n\
         - .spec.template.spec.containers[name=\"c\"].image\n\
         conflicts with \"ed\" using apps/v1:\n\
         - .spec.paused"
    );
}

#[test]
fn update_then_apply_conflicts_with_the_updater() {
    let obj = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
    let mut scaled = obj.clone();
    scaled["spec"]["replicas"] = json!(5);
    record_update(
        Some(&obj),
        &mut scaled,
        "kubectl",
        &TestLists,
        T2,
        "apps/v1",
        None,
    );
    assert_eq!(
        fields_of(&scaled, "kubectl", "Update"),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(
        fields_of(&scaled, "a", "Apply"),
        Value::Null,
        "a lost replicas"
    );
    let ops: Vec<Value> = entries(&scaled)
        .iter()
        .map(|e| e["operation"].clone())
        .collect();
    assert_eq!(ops, vec![json!("Update")]);
    let r = apply(
        Some(&scaled),
        &deploy(json!({"replicas": 3})),
        "a",
        false,
        &TestLists,
        T3,
        "apps/v1",
        None,
    );
    let (_, message) = conflicts(r);
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
    );
}

#[test]
fn map_list_items_merge_by_key_and_prune_per_item() {
    let a = deploy(json!({"template": {"spec": {"containers": [
        {"name": "a", "image": "a1"}, {"name": "b", "image": "b1"}]}}}));
    let obj = ssa(None, &a, "a", false, T1);
    let b = deploy(json!({"template": {"spec": {"containers": [
        {"name": "b", "env": [{"name": "X", "value": "1"}]},
        {"name": "c", "image": "c1"}]}}}));
    let obj = ssa(Some(&obj), &b, "b", false, T2);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "a1"},
               {"name": "b", "image": "b1", "env": [{"name": "X", "value": "1"}]},
               {"name": "c", "image": "c1"}])
    );
    // b drops its env and container c; a still owns container b.
    let b2 = deploy(json!({"template": {"spec": {"containers": [{"name": "b"}]}}}));
    let obj = ssa(Some(&obj), &b2, "b", false, T3);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "a1"}, {"name": "b", "image": "b1"}])
    );
}

#[test]
fn applied_order_wins_among_shared_items() {
    let a = deploy(json!({"template": {"spec": {"containers": [
        {"name": "x"}, {"name": "y"}, {"name": "z"}]}}}));
    let obj = ssa(None, &a, "a", false, T1);
    let reordered = deploy(json!({"template": {"spec": {"containers": [
        {"name": "z"}, {"name": "x"}, {"name": "y"}]}}}));
    let obj = ssa(Some(&obj), &reordered, "a", false, T2);
    let names: Vec<&Value> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, vec!["z", "x", "y"]);
}

#[test]
fn atomic_lists_are_replaced_and_owned_whole() {
    let a = deploy(json!({"template": {"spec": {"containers": [
        {"name": "c", "args": ["a", "b"]}]}}}));
    let obj = ssa(None, &a, "a", false, T1);
    let b = deploy(json!({"template": {"spec": {"containers": [
        {"name": "c", "args": ["z"]}]}}}));
    let obj = ssa(Some(&obj), &b, "b", true, T2);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["z"])
    );
    assert_eq!(
        fields_of(&obj, "b", "Apply"),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"c\"}": {".": {}, "f:args": {}, "f:name": {}}}}}}})
    );
}

#[test]
fn set_lists_merge_by_value() {
    let mut a = bare();
    a["metadata"]["finalizers"] = json!(["x/a"]);
    let obj = ssa(None, &a, "a", false, T1);
    assert_eq!(
        fields_of(&obj, "a", "Apply"),
        json!({"f:metadata": {"f:finalizers": {"v:\"x/a\"": {}}}})
    );
    let mut b = bare();
    b["metadata"]["finalizers"] = json!(["x/b"]);
    let obj = ssa(Some(&obj), &b, "b", false, T2);
    assert_eq!(obj["metadata"]["finalizers"], json!(["x/a", "x/b"]));
}

#[test]
fn missing_protocol_key_defaults_to_tcp() {
    let a = deploy(json!({"template": {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 80}]}]}}}));
    let obj = ssa(None, &a, "a", false, T1);
    let f = fields_of(&obj, "a", "Apply");
    let c = &f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(
        c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"],
        json!({".": {}, "f:containerPort": {}})
    );
    let b = deploy(json!({"template": {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}]}]}}}));
    let obj = ssa(Some(&obj), &b, "b", false, T2);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "web"}])
    );
}

#[test]
fn null_in_config_removes_a_scalar_but_keeps_ownership() {
    let obj = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
    let obj = ssa(
        Some(&obj),
        &deploy(json!({"replicas": null})),
        "a",
        false,
        T2,
    );
    assert!(obj["spec"].get("replicas").is_none());
    assert_eq!(
        fields_of(&obj, "a", "Apply"),
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[test]
fn fields_v1_round_trip() {
    let v = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:finalizers": {"v:\"a\"": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}},
                   "f:list": {"i:0": {}}}
    });
    let set = FieldSet::from_fields_v1(&v).unwrap();
    assert_eq!(set.to_fields_v1(), v);
    assert_eq!(
        set.paths(),
        vec![
            ".metadata.labels",
            ".metadata.finalizers[=\"a\"]",
            ".metadata.labels.app",
            ".spec.containers[name=\"c\"]",
            ".spec.containers[name=\"c\"].image",
            ".spec.list[0]",
        ]
    );
    // Unknown element kinds are dropped; null is a member; key order is canonicalised.
    let odd = json!({"f:a": null, "x:future": {}, "k:{\"b\":1,\"a\":\"<\"}": {}});
    let set = FieldSet::from_fields_v1(&odd).unwrap();
    assert_eq!(
        set.to_fields_v1(),
        json!({"f:a": {}, "k:{\"a\":\"\\u003c\",\"b\":1}": {}})
    );
    assert_eq!(
        FieldSet::from_fields_v1(&Value::Null).unwrap(),
        FieldSet::default()
    );
}

#[test]
fn set_operations() {
    let set = |v: Value| FieldSet::from_fields_v1(&v).unwrap();
    let a = set(json!({"f:a": {}, "f:b": {"f:c": {}}}));
    let b = set(json!({"f:b": {"f:c": {}, "f:d": {}}}));
    assert_eq!(
        a.union(&b).to_fields_v1(),
        json!({"f:a": {}, "f:b": {"f:c": {}, "f:d": {}}})
    );
    assert_eq!(
        a.intersection(&b).to_fields_v1(),
        json!({"f:b": {"f:c": {}}})
    );
    assert_eq!(a.difference(&b).to_fields_v1(), json!({"f:a": {}}));
    assert!(a.difference(&a).is_empty());
}

#[test]
fn malformed_fields_v1_is_an_error() {
    for bad in [
        json!("x"),
        json!({"f:a": 1}),
        json!({"k:notjson": {}}),
        json!({"k:[1]": {}}),
        json!({"z": {}}),
        json!({"ab": {}}),
        json!({"i:x": {}}),
        json!({"f:a": {"v:{": {}}}),
    ] {
        assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
    }
}

#[test]
fn malformed_config_is_rejected() {
    let run = |config: &Value| {
        apply(None, config, "m", false, &TestLists, T1, "apps/v1", None).unwrap_err()
    };
    let e = run(&json!([1]));
    assert_eq!(e.code(), 400);
    assert_eq!(
        e.message(),
        "error decoding patch: json: cannot unmarshal array into Go value of type \
         map[string]interface {}"
    );
    assert_eq!(
        run(&json!("x")),
        ApplyError::BadRequest(
            "error decoding patch: json: cannot unmarshal string into Go value of type \
             map[string]interface {}"
                .into()
        )
    );
    assert_eq!(run(&json!(null)).message(), "invalid object type: /, Kind=");
    let mut wrong_version = deploy(json!({}));
    wrong_version["apiVersion"] = json!("apps/v2");
    assert_eq!(
        run(&wrong_version),
        ApplyError::BadRequest("invalid object type: apps/v2, Kind=Deployment".into())
    );
    let missing_key = deploy(json!({"template": {"spec": {"containers": [{"image": "x"}]}}}));
    let e = run(&missing_key);
    assert_eq!(e.code(), 500);
    assert_eq!(
        e.message(),
        "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): \
         .spec.template.spec.containers: element 0: associative list with keys has an \
         element that omits key field \"name\" (and doesn't have default value)"
    );
    let dup = deploy(json!({"template": {"spec": {"containers": [
        {"name": "c"}, {"name": "c"}]}}}));
    assert_eq!(
        run(&dup).message(),
        "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): \
         .spec.template.spec.containers: duplicate entries for key [name=\"c\"]"
    );
    let mut two = deploy(json!({"template": {"spec": {"containers": ["x"]}}}));
    two["metadata"]["finalizers"] = json!([{"a": 1}]);
    assert_eq!(
        run(&two).message(),
        "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): errors:\n  \
         .metadata.finalizers: element 0: associative list without keys has an element \
         that's a map type\n  \
         .spec.template.spec.containers: element 0: associative list with keys may not \
         have non-map elements"
    );
    let mut with_mf = deploy(json!({}));
    with_mf["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        run(&with_mf),
        ApplyError::BadRequest("metadata.managedFields must be nil".into())
    );
}

#[test]
fn malformed_live_managed_fields_are_rejected_without_panic() {
    let base = ssa(None, &deploy(json!({"replicas": 1})), "a", false, T1);
    let cases = [
        (json!("nope"), "managedFields must be a list"),
        (json!([1]), "is not an object"),
        (
            json!([{"manager": "x", "operation": "Bogus", "apiVersion": "v1",
                    "fieldsType": "FieldsV1"}]),
            "operation must be `Apply` or `Update`",
        ),
        (
            json!([{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1"}]),
            "apiVersion must not be empty",
        ),
        (
            json!([{"manager": "x", "operation": "Update", "apiVersion": "v1"}]),
            "missing fieldsType in managed fields entry 0",
        ),
        (
            json!([{"manager": "x", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV2"}]),
            "invalid fieldsType \"FieldsV2\" in managed fields entry 0",
        ),
        (
            json!([{"manager": "x", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": "f:a"}]),
            "error decoding versioned set",
        ),
        (
            json!([{"manager": 7, "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1"}]),
            "must be a string",
        ),
    ];
    for (mf, needle) in cases {
        let mut live = base.clone();
        live["metadata"]["managedFields"] = mf;
        let e = apply(
            Some(&live),
            &deploy(json!({"replicas": 2})),
            "a",
            false,
            &TestLists,
            T2,
            "apps/v1",
            None,
        )
        .unwrap_err();
        assert_eq!(e.code(), 500);
        assert!(
            e.message().starts_with("failed to decode managed fields: "),
            "{e}"
        );
        assert!(e.message().contains(needle), "{e} should contain {needle}");
    }
}

#[test]
fn malformed_live_object_is_rejected() {
    let mut live = deploy(json!({"template": {"spec": {"containers": [{"image": "x"}]}}}));
    live["metadata"]["uid"] = json!("u");
    let e = apply(
        Some(&live),
        &deploy(json!({"replicas": 1})),
        "a",
        false,
        &TestLists,
        T1,
        "apps/v1",
        None,
    )
    .unwrap_err();
    assert_eq!(e.code(), 500);
    assert!(e.message().contains("omits key field \"name\""), "{e}");
}

#[test]
fn kind_must_match_the_live_object() {
    let live = ssa(None, &deploy(json!({})), "a", false, T1);
    let mut config = deploy(json!({}));
    config["kind"] = json!("StatefulSet");
    let e = apply(
        Some(&live),
        &config,
        "a",
        false,
        &TestLists,
        T2,
        "apps/v1",
        None,
    );
    assert_eq!(
        e.unwrap_err(),
        ApplyError::BadRequest("invalid object type: apps/v1, Kind=StatefulSet".into())
    );
}

fn configmap() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cm", "namespace": "ns", "labels": {"a": "b"},
                        "creationTimestamp": "2025-01-01T00:00:00Z"},
           "data": {"k": "v"}})
}

fn update(old: Option<&Value>, new: &mut Value, mgr: &str, now: &str, sub: Option<&str>) {
    record_update(old, new, mgr, &AllAtomicForCm, now, "v1", sub);
}

struct AllAtomicForCm;
impl ListTypes for AllAtomicForCm {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        TestLists.list_kind(path)
    }
}

#[test]
fn create_records_an_update_entry_with_parent_markers() {
    let mut cm = configmap();
    update(None, &mut cm, "kubectl-create", T1, None);
    assert_eq!(
        cm["metadata"]["managedFields"],
        json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                "time": T1, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                             "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}])
    );
}

#[test]
fn update_takes_fields_from_others_and_drops_empty_managers() {
    let mut cm = configmap();
    update(None, &mut cm, "creator", T1, None);
    cm["metadata"]["uid"] = json!("u1");
    let mut next = cm.clone();
    next["data"]["k"] = json!("changed");
    next["metadata"]["labels"] = json!({});
    update(Some(&cm), &mut next, "editor", T2, None);
    // creator lost data.k (modified) and labels.a (removed); what is left is the
    // data map and labels map markers.
    assert_eq!(
        fields_of(&next, "creator", "Update"),
        json!({"f:data": {}, "f:metadata": {"f:labels": {}}})
    );
    assert_eq!(
        fields_of(&next, "editor", "Update"),
        json!({"f:data": {"f:k": {}}})
    );
    let mut last = next.clone();
    last.as_object_mut().unwrap().remove("data");
    last["metadata"].as_object_mut().unwrap().remove("labels");
    update(Some(&next), &mut last, "editor", T3, None);
    assert_eq!(entries(&last).len(), 0, "everyone's fields were removed");
    assert!(last["metadata"].get("managedFields").is_none());
}

#[test]
fn update_without_changes_keeps_entries_and_times() {
    let mut cm = configmap();
    update(None, &mut cm, "creator", T1, None);
    cm["metadata"]["uid"] = json!("u1");
    let mut same = cm.clone();
    update(Some(&cm), &mut same, "other", T2, None);
    assert_eq!(same, cm);
}

#[test]
fn untracked_objects_stay_untracked_and_reset_clears() {
    let mut live = configmap();
    live["metadata"]["uid"] = json!("u1");
    let mut next = live.clone();
    next["data"]["k"] = json!("x");
    update(Some(&live), &mut next, "m", T1, None);
    assert!(next["metadata"].get("managedFields").is_none());

    let mut tracked = configmap();
    update(None, &mut tracked, "creator", T1, None);
    tracked["metadata"]["uid"] = json!("u1");
    for reset in [
        json!([]),
        json!([{}]),
        json!([{"manager": "", "time": null}]),
    ] {
        let mut next = tracked.clone();
        next["metadata"]["managedFields"] = reset;
        next["data"]["k"] = json!("y");
        update(Some(&tracked), &mut next, "m", T2, None);
        assert!(next["metadata"].get("managedFields").is_none());
    }
}

#[test]
fn managed_fields_sent_by_the_client_are_used_unless_malformed() {
    let mut tracked = configmap();
    update(None, &mut tracked, "creator", T1, None);
    tracked["metadata"]["uid"] = json!("u1");
    let mut next = tracked.clone();
    next["metadata"]["managedFields"] = json!([{"manager": "claimed", "operation": "Update",
        "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]);
    update(Some(&tracked), &mut next, "m", T2, None);
    assert_eq!(
        fields_of(&next, "claimed", "Update"),
        json!({"f:data": {"f:k": {}}})
    );
    assert_eq!(fields_of(&next, "creator", "Update"), Value::Null);

    // Malformed: the live managedFields are used instead.
    let mut next = tracked.clone();
    next["metadata"]["managedFields"] = json!([{"operation": "Nope"}]);
    update(Some(&tracked), &mut next, "m", T2, None);
    assert_eq!(
        next["metadata"]["managedFields"],
        tracked["metadata"]["managedFields"]
    );

    // On a subresource the request's managedFields are ignored.
    let mut next = tracked.clone();
    next["metadata"]["managedFields"] = json!([]);
    next["status"] = json!({"phase": "x"});
    update(Some(&tracked), &mut next, "kubelet", T2, Some("status"));
    assert_eq!(
        entries(&next)
            .iter()
            .map(|e| (e["manager"].clone(), e.get("subresource").cloned()))
            .collect::<Vec<_>>(),
        vec![
            (json!("creator"), None),
            (json!("kubelet"), Some(json!("status")))
        ]
    );
}

#[test]
fn unreadable_objects_keep_the_live_managed_fields() {
    let mut live = deploy(json!({"replicas": 1}));
    record_update(None, &mut live, "c", &TestLists, T1, "apps/v1", None);
    live["metadata"]["uid"] = json!("u");
    let mut next = live.clone();
    next["spec"]["template"] = json!({"spec": {"containers": [{"image": "x"}]}});
    record_update(Some(&live), &mut next, "m", &TestLists, T2, "apps/v1", None);
    assert_eq!(
        next["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
}

#[test]
fn update_entries_are_per_api_version_and_sorted() {
    let mut cm = configmap();
    update(None, &mut cm, "b", T2, None);
    cm["metadata"]["uid"] = json!("u1");
    let mut next = cm.clone();
    next["data"]["other"] = json!("1");
    record_update(Some(&cm), &mut next, "b", &TestLists, T1, "v1beta1", None);
    let got: Vec<(Value, Value)> = entries(&next)
        .iter()
        .map(|e| (e["manager"].clone(), e["apiVersion"].clone()))
        .collect();
    // Sorted by time first (T1 < T2), so the v1beta1 entry leads.
    assert_eq!(
        got,
        vec![(json!("b"), json!("v1beta1")), (json!("b"), json!("v1"))]
    );
}

#[test]
fn update_managers_are_capped_into_ancient_changes() {
    let mut obj = configmap();
    update(None, &mut obj, "m00", "2025-01-01T00:00:00Z", None);
    obj["metadata"]["uid"] = json!("u1");
    for i in 1..=10 {
        let mut next = obj.clone();
        next["data"][format!("k{i:02}")] = json!("v");
        let now = format!("2025-01-01T00:00:{i:02}Z");
        update(Some(&obj), &mut next, &format!("m{i:02}"), &now, None);
        obj = next;
    }
    let managers: Vec<Value> = entries(&obj).iter().map(|e| e["manager"].clone()).collect();
    assert_eq!(managers.len(), 10);
    assert_eq!(managers[0], "ancient-changes");
    assert!(!managers.contains(&json!("m00")) && !managers.contains(&json!("m01")));
    assert_eq!(
        fields_of(&obj, "ancient-changes", "Update"),
        json!({"f:data": {".": {}, "f:k": {}, "f:k01": {}},
               "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
    assert_eq!(entries(&obj)[0]["time"], "2025-01-01T00:00:01Z");
}

#[test]
fn first_apply_to_an_untracked_object_conflicts_with_before_first_apply() {
    let mut live = deploy(json!({"replicas": 3}));
    live["metadata"]["uid"] = json!("u1");
    let r = apply(
        Some(&live),
        &deploy(json!({"replicas": 4})),
        "a",
        false,
        &TestLists,
        T1,
        "apps/v1",
        None,
    );
    let (_, message) = conflicts(r);
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using \
         apps/v1: .spec.replicas"
    );
    let obj = ssa(Some(&live), &deploy(json!({"replicas": 3})), "a", false, T1);
    assert_eq!(
        fields_of(&obj, "before-first-apply", "Update"),
        json!({"f:spec": {".": {}, "f:replicas": {}}})
    );
}

#[test]
fn kubectl_may_take_over_fields_matching_its_last_applied_annotation() {
    let last = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns"},"spec":{"replicas":3}}"#;
    let mut live = deploy(json!({"replicas": 3}));
    live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: last});
    record_update(
        None,
        &mut live,
        "kubectl-client-side-apply",
        &TestLists,
        T1,
        "apps/v1",
        None,
    );
    live["metadata"]["uid"] = json!("u1");

    let mut config = deploy(json!({"replicas": 4}));
    config["metadata"]["annotations"] = json!({"note": "<x>"});
    let obj = ssa(Some(&live), &config, "kubectl", false, T2);
    assert_eq!(obj["spec"]["replicas"], 4);
    assert_eq!(
        obj["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"annotations\":\
         {\"note\":\"\\u003cx\\u003e\"},\"name\":\"d\",\"namespace\":\"ns\"},\"spec\":\
         {\"replicas\":4}}\n"
    );
    // Another manager name gets the plain conflict.
    let r = apply(
        Some(&live),
        &config,
        "other",
        false,
        &TestLists,
        T2,
        "apps/v1",
        None,
    );
    assert_eq!(conflicts(r).0.len(), 1);
    // When live no longer matches the annotation, kubectl conflicts too.
    let mut drifted = live.clone();
    drifted["spec"]["replicas"] = json!(7);
    let r = apply(
        Some(&drifted),
        &config,
        "kubectl",
        false,
        &TestLists,
        T2,
        "apps/v1",
        None,
    );
    assert_eq!(conflicts(r).0.len(), 1);
}

#[test]
fn subresource_entries_are_separate_and_printed() {
    let obj = ssa(None, &deploy(json!({"replicas": 1})), "a", false, T1);
    let mut status_cfg = deploy(json!({}));
    status_cfg.as_object_mut().unwrap().remove("spec");
    status_cfg["status"] = json!({"replicas": 1});
    let obj = apply(
        Some(&obj),
        &status_cfg,
        "a",
        false,
        &TestLists,
        T2,
        "apps/v1",
        Some("status"),
    )
    .unwrap();
    let subs: Vec<Value> = entries(&obj)
        .iter()
        .map(|e| e.get("subresource").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(subs, vec![Value::Null, json!("status")]);
    let mut other = status_cfg.clone();
    other["status"]["replicas"] = json!(2);
    let r = apply(
        Some(&obj),
        &other,
        "b",
        false,
        &TestLists,
        T3,
        "apps/v1",
        None,
    );
    assert_eq!(
        conflicts(r).1,
        "Apply failed with 1 conflict: conflict with \"a\" with subresource \"status\": \
         .status.replicas"
    );
}

#[test]
fn metadata_identity_fields_are_never_owned() {
    let mut config = deploy(json!({}));
    config["metadata"]["uid"] = json!("u");
    config["metadata"]["resourceVersion"] = json!("5");
    config["metadata"]["generation"] = json!(1);
    config["metadata"]["creationTimestamp"] = json!(T1);
    let obj = ssa(None, &config, "a", false, T1);
    // Only the empty spec object is left to own.
    assert_eq!(fields_of(&obj, "a", "Apply"), json!({"f:spec": {}}));
}

#[test]
fn apply_entries_sort_before_update_entries() {
    let mut created = deploy(json!({"paused": true}));
    record_update(
        None,
        &mut created,
        "creator",
        &TestLists,
        T1,
        "apps/v1",
        None,
    );
    created["metadata"]["uid"] = json!("u1");
    let obj = ssa(
        Some(&created),
        &deploy(json!({"replicas": 2})),
        "zed",
        false,
        T2,
    );
    let order: Vec<(Value, Value)> = entries(&obj)
        .iter()
        .map(|e| (e["manager"].clone(), e["operation"].clone()))
        .collect();
    assert_eq!(
        order,
        vec![
            (json!("zed"), json!("Apply")),
            (json!("creator"), json!("Update"))
        ]
    );
}

#[test]
fn empty_manager_is_unknown() {
    let obj = ssa(None, &deploy(json!({"replicas": 1})), "", false, T1);
    assert_eq!(entries(&obj)[0]["manager"], "unknown");
}

#[test]
fn default_manager_from_user_agent() {
    assert_eq!(
        default_manager("kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef"),
        "kubectl"
    );
    assert_eq!(default_manager("kube-rs"), "kube-rs");
    assert_eq!(default_manager(""), "");
    assert_eq!(default_manager("a\u{7}b\tc/x"), "abc");
    assert_eq!(default_manager(&"x".repeat(300)).len(), 128);
    assert_eq!(default_manager(&"é".repeat(100)).len(), 128);
}

#[test]
fn timestamps_order_entries() {
    assert_eq!(rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        rfc3339_seconds("2025-01-01T00:00:01.5+01:00"),
        Some(1_735_686_001)
    );
    assert_eq!(rfc3339_seconds("garbage"), None);
    assert_eq!(rfc3339_seconds("2025-01-01T00:00:01Q"), None);
}
