//! Tests of the three patch formats, with the server's results and error texts.

use super::error::{INVALID_MESSAGE, PatchError};
use super::json_patch::{MAX_JSON_PATCH_OPERATIONS, OpError, apply_op, json_patch};
use super::merge::merge_patch;
use super::strategic::{go_float, go_percent_s, go_type, go_v, strategic_merge_patch};
use crate::builtin_lists::BuiltinLists;
use serde_json::Value;
use serde_json::json;

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "csi-controller",
            "namespace": "openshift-cluster-csi-drivers",
            "labels": {"app": "csi-controller", "tier": "control"},
            "finalizers": ["a.example.com/one"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u1"}
            ]
        },
        "spec": {
            "replicas": 2,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}
            },
            "template": {
                "metadata": {"labels": {"app": "csi-controller"}},
                "spec": {
                    "containers": [
                        {
                            "name": "driver",
                            "image": "driver:1.0",
                            "env": [
                                {"name": "LOG", "value": "2"},
                                {"name": "CLOUD", "value": "openstack"}
                            ],
                            "ports": [
                                {"containerPort": 9808, "name": "healthz", "protocol": "TCP"}
                            ],
                            "volumeMounts": [
                                {"mountPath": "/csi", "name": "socket-dir"}
                            ]
                        },
                        {"name": "provisioner", "image": "provisioner:3.0"},
                        {"name": "attacher", "image": "attacher:4.0"}
                    ],
                    "volumes": [
                        {"name": "socket-dir", "emptyDir": {}},
                        {"name": "config", "configMap": {"name": "cloud-conf"}}
                    ],
                    "tolerations": [
                        {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}
                    ]
                }
            }
        }
    })
}

fn deploy_lists() -> BuiltinLists {
    BuiltinLists::for_kind("apps", "Deployment")
}

fn smp(target: &Value, patch: Value) -> Result<Value, PatchError> {
    strategic_merge_patch(target, &patch, &deploy_lists())
}

fn pod_spec(v: &Value) -> &Value {
    &v["spec"]["template"]["spec"]
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(|a| a.iter().filter_map(|i| i["name"].as_str()).collect())
        .unwrap_or_default()
}

// ---- merge patch ------------------------------------------------------------------------

#[test]
fn merge_patch_merges_objects_and_null_deletes() {
    let out = merge_patch(
        &deployment(),
        &json!({"metadata": {"labels": {"tier": null, "new": "x"}}, "spec": {"replicas": 3}}),
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "csi-controller", "new": "x"})
    );
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(out["spec"]["strategy"]["type"], "RollingUpdate");
}

#[test]
fn merge_patch_replaces_lists_whole() {
    let out = merge_patch(
        &deployment(),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "x", "args": null}]}}}}),
    )
    .unwrap();
    // The live value is a list, not an object: the patch replaces it with nulls pruned.
    assert_eq!(
        pod_spec(&out)["containers"],
        json!([{"name": "only", "image": "x"}])
    );
}

#[test]
fn merge_patch_prunes_nulls_only_where_json_patch_v4_does() {
    let target = json!({"a": {"x": 1}, "b": 1});
    // New member: nulls pruned at any depth, also inside arrays of objects.
    let out = merge_patch(
        &target,
        &json!({"c": {"d": null, "e": [{"f": null, "g": 1}, null]}}),
    )
    .unwrap();
    assert_eq!(out["c"], json!({"e": [{"g": 1}, null]}));
    // An array replacing an object keeps its nulls (v4 returns the patch untouched).
    let out = merge_patch(&target, &json!({"a": [{"f": null}]})).unwrap();
    assert_eq!(out["a"], json!([{"f": null}]));
    // A scalar replaced by an object: pruned.
    let out = merge_patch(&target, &json!({"b": {"k": null, "l": 2}})).unwrap();
    assert_eq!(out["b"], json!({"l": 2}));
    // Deleting a missing key is fine.
    let out = merge_patch(&target, &json!({"zzz": null})).unwrap();
    assert_eq!(out, target);
}

#[test]
fn merge_patch_rejects_non_object_patches_like_the_server() {
    let t = deployment();
    assert_eq!(
        merge_patch(&t, &json!([1])),
        Err(PatchError::BadRequest(
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}".into()
        ))
    );
    for (patch, kind) in [
        (json!("s"), "string"),
        (json!(1), "number"),
        (json!(true), "bool"),
    ] {
        let err = merge_patch(&t, &patch).unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(
            err.message().contains(&format!("cannot unmarshal {kind} ")),
            "{err}"
        );
    }
    let err = merge_patch(&t, &Value::Null).unwrap_err();
    assert_eq!(err, PatchError::BadRequest("Invalid JSON Patch".into()));
    assert_eq!(err.reason(), "BadRequest");
}

// ---- JSON patch -------------------------------------------------------------------------

fn jp(target: &Value, patch: Value) -> Result<Value, PatchError> {
    json_patch(target, &patch)
}

fn op_err(target: &Value, op: Value) -> OpError {
    let mut doc = target.clone();
    apply_op(&mut doc, &op, &mut 0).unwrap_err()
}

fn invalid() -> PatchError {
    PatchError::Invalid(INVALID_MESSAGE.to_string())
}

#[test]
fn json_patch_add_replace_remove() {
    let out = jp(
        &deployment(),
        json!([
            {"op": "replace", "path": "/spec/replicas", "value": 5},
            {"op": "add", "path": "/metadata/labels/team", "value": "storage"},
            {"op": "remove", "path": "/metadata/labels/tier"},
            {"op": "add", "path": "/spec/template/spec/containers/1/args", "value": ["--v=2"]},
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "driver:2.0"}
        ]),
    )
    .unwrap();
    assert_eq!(out["spec"]["replicas"], 5);
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "csi-controller", "team": "storage"})
    );
    assert_eq!(pod_spec(&out)["containers"][1]["args"], json!(["--v=2"]));
    assert_eq!(pod_spec(&out)["containers"][0]["image"], "driver:2.0");
}

#[test]
fn json_patch_array_indices() {
    let t = json!({"l": ["a", "b"]});
    let apply = |op: Value| jp(&t, json!([op])).map(|v| v["l"].clone());
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/-", "value": "c"})),
        Ok(json!(["a", "b", "c"]))
    );
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/0", "value": "c"})),
        Ok(json!(["c", "a", "b"]))
    );
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/2", "value": "c"})),
        Ok(json!(["a", "b", "c"]))
    );
    // Negative indices count from the end in json-patch v4.
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/-1", "value": "c"})),
        Ok(json!(["a", "b", "c"]))
    );
    assert_eq!(
        apply(json!({"op": "remove", "path": "/l/-1"})),
        Ok(json!(["a"]))
    );
    assert_eq!(
        apply(json!({"op": "replace", "path": "/l/-2", "value": "z"})),
        Ok(json!(["z", "b"]))
    );
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/3", "value": "c"})),
        Err(invalid())
    );
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/-4", "value": "c"})),
        Err(invalid())
    );
    assert_eq!(
        apply(json!({"op": "add", "path": "/l/x", "value": "c"})),
        Err(invalid())
    );
    assert_eq!(
        apply(json!({"op": "remove", "path": "/l/2"})),
        Err(invalid())
    );
    assert_eq!(
        apply(json!({"op": "remove", "path": "/l/-3"})),
        Err(invalid())
    );
    assert_eq!(
        apply(json!({"op": "replace", "path": "/l/2", "value": "c"})),
        Err(invalid())
    );
}

#[test]
fn json_patch_v4_quirks() {
    let t = json!({"a": {"b": 1}, "n": null});
    // replace of a missing object key adds it.
    let out = jp(&t, json!([{"op": "replace", "path": "/a/c", "value": 2}])).unwrap();
    assert_eq!(out["a"], json!({"b": 1, "c": 2}));
    // add without a value adds null.
    let out = jp(&t, json!([{"op": "add", "path": "/a/c"}])).unwrap();
    assert_eq!(out["a"], json!({"b": 1, "c": null}));
    // copy from a missing key copies null.
    let out = jp(&t, json!([{"op": "copy", "from": "/a/zz", "path": "/a/c"}])).unwrap();
    assert_eq!(out["a"], json!({"b": 1, "c": null}));
    // replace of the whole document with a scalar is silently ignored.
    assert_eq!(
        jp(&t, json!([{"op": "replace", "path": "", "value": 3}])),
        Ok(t.clone())
    );
    let out = jp(
        &t,
        json!([{"op": "replace", "path": "", "value": {"x": 1}}]),
    )
    .unwrap();
    assert_eq!(out, json!({"x": 1}));
    // The first token is never read: "a/c" means "/c".
    let out = jp(&t, json!([{"op": "add", "path": "zzz/c", "value": 1}])).unwrap();
    assert_eq!(out["c"], 1);
    // A null member cannot be walked through but can be removed.
    assert_eq!(
        jp(&t, json!([{"op": "add", "path": "/n/x", "value": 1}])),
        Err(invalid())
    );
    let out = jp(&t, json!([{"op": "remove", "path": "/n"}])).unwrap();
    assert!(out.get("n").is_none());
    // ~1 and ~0 unescape to / and ~.
    let out = jp(
        &json!({"m": {}}),
        json!([{"op": "add", "path": "/m/a~1b~0c", "value": 1}]),
    )
    .unwrap();
    assert_eq!(out["m"], json!({"a/b~c": 1}));
}

#[test]
fn json_patch_move_copy() {
    let t = json!({"a": {"x": [1, 2]}, "b": {}});
    let out = jp(&t, json!([{"op": "move", "from": "/a/x", "path": "/b/y"}])).unwrap();
    assert_eq!(out, json!({"a": {}, "b": {"y": [1, 2]}}));
    let out = jp(
        &t,
        json!([{"op": "copy", "from": "/a/x/1", "path": "/a/x/0"}]),
    )
    .unwrap();
    assert_eq!(out["a"]["x"], json!([2, 1, 2]));
    let out = jp(
        &t,
        json!([{"op": "move", "from": "/a/x/0", "path": "/a/x/-"}]),
    )
    .unwrap();
    assert_eq!(out["a"]["x"], json!([2, 1]));
    assert_eq!(
        jp(
            &t,
            json!([{"op": "move", "from": "/a/nope", "path": "/b/y"}])
        ),
        Err(invalid())
    );
    assert_eq!(
        jp(
            &t,
            json!([{"op": "move", "from": "/a/x", "path": "/nope/y"}])
        ),
        Err(invalid())
    );
    assert_eq!(
        jp(
            &t,
            json!([{"op": "copy", "from": "/a/x/5", "path": "/b/y"}])
        ),
        Err(invalid())
    );
    assert_eq!(
        jp(&t, json!([{"op": "copy", "path": "/b/y"}])),
        Err(invalid())
    );
}

#[test]
fn json_patch_test_op() {
    let t = deployment();
    let pass = json!([
        {"op": "test", "path": "/spec/replicas", "value": 2},
        {"op": "test", "path": "/spec/template/spec/containers/0/name", "value": "driver"},
        {"op": "test", "path": "/metadata/missing", "value": null},
        {"op": "replace", "path": "/spec/replicas", "value": 3}
    ]);
    assert_eq!(jp(&t, pass).unwrap()["spec"]["replicas"], 3);
    // A failed test is a 422 with the server's generic message, and nothing is applied.
    let err = jp(
        &t,
        json!([{"op": "replace", "path": "/spec/replicas", "value": 9}, {"op": "test", "path": "/spec/replicas", "value": 2}]),
    )
    .unwrap_err();
    assert_eq!(err, invalid());
    assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    assert_eq!(
        err.message(),
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(
        op_err(
            &t,
            json!({"op": "test", "path": "/spec/replicas", "value": "2"})
        ),
        OpError::Failed("testing value /spec/replicas failed".into())
    );
    // A value of null does not match a present value, nor does a missing value.
    assert!(
        jp(
            &t,
            json!([{"op": "test", "path": "/spec/replicas", "value": null}])
        )
        .is_err()
    );
    assert!(jp(&t, json!([{"op": "test", "path": "/spec/replicas"}])).is_err());
    // Testing a missing path with no value at all makes json-patch v4 dereference nil.
    let err = jp(&t, json!([{"op": "test", "path": "/metadata/missing"}])).unwrap_err();
    assert_eq!(err.code(), 500);
    assert!(jp(&t, json!([{"op": "test", "path": "", "value": t.clone()}])).is_ok());
    assert!(jp(&t, json!([{"op": "test", "path": "/nope/x", "value": 1}])).is_err());
}

#[test]
fn json_patch_operation_errors_are_422() {
    let t = deployment();
    for op in [
        json!({"op": "add", "path": "/spec/nope/x", "value": 1}),
        json!({"op": "remove", "path": "/metadata/labels/nope"}),
        json!({"op": "add", "path": "", "value": 1}),
        json!({"op": "add", "value": 1}),
        json!({"op": "frobnicate", "path": "/a"}),
        json!({"path": "/a"}),
        json!({"op": null, "path": "/a"}),
        json!({"op": "add", "path": "/spec/replicas/x", "value": 1}),
    ] {
        assert_eq!(jp(&t, json!([op.clone()])), Err(invalid()), "{op}");
    }
    assert_eq!(
        op_err(&t, json!({"op": "frobnicate", "path": "/a"})),
        OpError::Failed("Unexpected kind: frobnicate".into())
    );
    // A null operation decodes to an empty one.
    assert_eq!(jp(&t, json!([null])), Err(invalid()));
}

#[test]
fn json_patch_malformed_bodies_are_400() {
    let t = deployment();
    let bad = |patch: Value| match jp(&t, patch) {
        Err(PatchError::BadRequest(m)) => m,
        other => panic!("expected BadRequest, got {other:?}"),
    };
    assert_eq!(
        bad(json!({"op": "add"})),
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
    );
    assert_eq!(
        bad(json!("x")),
        "error decoding patch: json: cannot unmarshal string into Go value of type []handlers.jsonPatchOp"
    );
    assert_eq!(
        bad(json!([1])),
        "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"
    );
    assert_eq!(
        bad(json!([{"op": 1, "path": "/a"}])),
        "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"
    );
    assert_eq!(
        bad(json!([{"op": "add", "path": ["a"]}])),
        "error decoding patch: json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string"
    );
    assert_eq!(
        bad(json!([{"op": "move", "from": true, "path": "/a"}])),
        "error decoding patch: json: cannot unmarshal bool into Go struct field jsonPatchOp.from of type string"
    );
    // `null` is an empty patch.
    assert_eq!(jp(&t, Value::Null), Ok(t.clone()));
    assert_eq!(jp(&t, json!([])), Ok(t.clone()));
}

#[test]
fn json_patch_limits() {
    let t = json!({"a": 1});
    let ops: Vec<Value> = (0..=MAX_JSON_PATCH_OPERATIONS)
        .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
        .collect();
    let err = jp(&t, Value::Array(ops)).unwrap_err();
    assert_eq!(
        err,
        PatchError::RequestEntityTooLarge(
            "The allowed maximum operations in a JSON patch is 10000, got 10001".into()
        )
    );
    assert_eq!((err.code(), err.reason()), (413, "RequestEntityTooLarge"));
    // Copies may add at most 3 MiB.
    let big = "x".repeat(1024 * 1024);
    let t = json!({"s": big, "l": []});
    let copy = json!({"op": "copy", "from": "/s", "path": "/l/-"});
    assert!(jp(&t, json!([copy.clone(), copy.clone()])).is_ok());
    assert_eq!(
        jp(&t, json!([copy.clone(), copy.clone(), copy])),
        Err(invalid())
    );
}

// ---- strategic merge patch --------------------------------------------------------------

#[test]
fn smp_container_image_by_name_keeps_the_others() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "provisioner", "image": "provisioner:3.1"}]}}}}),
    )
    .unwrap();
    let spec = pod_spec(&out);
    assert_eq!(
        names(&spec["containers"]),
        ["driver", "provisioner", "attacher"]
    );
    assert_eq!(spec["containers"][1]["image"], "provisioner:3.1");
    assert_eq!(
        spec["containers"][0],
        pod_spec(&deployment())["containers"][0]
    );
    assert_eq!(out["spec"]["replicas"], 2);
}

#[test]
fn smp_new_list_items_come_first() {
    // The real code puts items new in the patch before the live ones.
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "driver", "env": [{"name": "DEBUG", "value": "1"}]},
            {"name": "resizer", "image": "resizer:1.0"}
        ]}}}}),
    )
    .unwrap();
    let spec = pod_spec(&out);
    assert_eq!(
        names(&spec["containers"]),
        ["driver", "resizer", "provisioner", "attacher"]
    );
    assert_eq!(
        names(&spec["containers"][0]["env"]),
        ["DEBUG", "LOG", "CLOUD"]
    );
    assert_eq!(spec["containers"][0]["image"], "driver:1.0");
}

#[test]
fn smp_env_update_and_null_field() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "driver", "env": [{"name": "LOG", "value": "5"}], "volumeMounts": null}
        ]}}}}),
    )
    .unwrap();
    let driver = &pod_spec(&out)["containers"][0];
    assert_eq!(
        driver["env"],
        json!([{"name": "LOG", "value": "5"}, {"name": "CLOUD", "value": "openstack"}])
    );
    assert!(driver.get("volumeMounts").is_none());
    assert_eq!(
        driver["ports"],
        pod_spec(&deployment())["containers"][0]["ports"]
    );
}

#[test]
fn smp_tolerations_are_replaced_whole() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}]}}}}),
    )
    .unwrap();
    assert_eq!(
        pod_spec(&out)["tolerations"],
        json!([{"operator": "Exists"}])
    );
}

#[test]
fn smp_container_ports_merge_by_container_port() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "driver", "ports": [{"containerPort": 9808, "name": "health"}, {"containerPort": 8080}]}
        ]}}}}),
    )
    .unwrap();
    assert_eq!(
        pod_spec(&out)["containers"][0]["ports"],
        json!([{"containerPort": 9808, "name": "health", "protocol": "TCP"}, {"containerPort": 8080}])
    );
}

#[test]
fn smp_service_ports_merge_by_port() {
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "m"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                           {"name": "metrics", "port": 9090, "protocol": "TCP"}],
                 "selector": {"app": "x"}}});
    let lists = BuiltinLists::for_kind("", "Service");
    let out = strategic_merge_patch(
        &svc,
        &json!({"spec": {"ports": [{"port": 80, "targetPort": 8081}], "selector": {"tier": "y"}}}),
        &lists,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["ports"][0],
        json!({"name": "http", "port": 80, "targetPort": 8081, "protocol": "TCP"})
    );
    assert_eq!(out["spec"]["ports"][1]["port"], 9090);
    assert_eq!(out["spec"]["selector"], json!({"app": "x", "tier": "y"}));
}

#[test]
fn smp_status_conditions_merge_by_type() {
    let node = json!({"kind": "Node", "status": {"conditions": [
        {"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}});
    let out = strategic_merge_patch(
        &node,
        &json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}),
        &BuiltinLists::for_kind("", "Node"),
    )
    .unwrap();
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "False", "reason": "KubeletDown"}, {"type": "DiskPressure", "status": "False"}])
    );
}

#[test]
fn smp_metadata_finalizers_union_and_owner_references_by_uid() {
    let out = smp(
        &deployment(),
        json!({"metadata": {
            "finalizers": ["a.example.com/one", "b.example.com/two"],
            "ownerReferences": [{"uid": "u2", "kind": "Secret", "name": "s", "apiVersion": "v1"}],
            "labels": {"tier": null}
        }}),
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["a.example.com/one", "b.example.com/two"])
    );
    let uids: Vec<&str> = out["metadata"]["ownerReferences"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["uid"].as_str())
        .collect();
    assert_eq!(uids, ["u2", "u1"]);
    assert_eq!(out["metadata"]["labels"], json!({"app": "csi-controller"}));
    // A new scalar goes before the live ones, as in the real code.
    let out = smp(
        &deployment(),
        json!({"metadata": {"finalizers": ["c/three"]}}),
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["c/three", "a.example.com/one"])
    );
}

#[test]
fn smp_patch_replace_on_list_and_map() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "replace"}, {"name": "new", "emptyDir": {}}]}}},
               "metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
    )
    .unwrap();
    assert_eq!(
        pod_spec(&out)["volumes"],
        json!([{"name": "new", "emptyDir": {}}])
    );
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
    // Replacing with an empty list.
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "replace"}]}}}}),
    )
    .unwrap();
    assert_eq!(pod_spec(&out)["volumes"], json!([]));
}

#[test]
fn smp_patch_delete_on_list_item_and_map() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {
            "volumes": [{"name": "config", "$patch": "delete"}],
            "containers": [{"name": "attacher", "$patch": "delete"}]
        }}, "strategy": {"$patch": "delete"}}}),
    )
    .unwrap();
    assert_eq!(names(&pod_spec(&out)["volumes"]), ["socket-dir"]);
    assert_eq!(
        names(&pod_spec(&out)["containers"]),
        ["driver", "provisioner"]
    );
    // `$patch: delete` on a map empties it rather than removing the key.
    assert_eq!(out["spec"]["strategy"], json!({}));
    // A delete item without its merge key is an error.
    let err = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "delete"}]}}}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal(
            "map: map[$patch:delete] does not contain declared merge key: name".into()
        )
    );
}

#[test]
fn smp_patch_merge_and_unknown_directives_are_refused() {
    let err = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal("merging lists cannot yet be specified in the patch".into())
    );
    assert_eq!((err.code(), err.reason()), (500, ""));
    let err = smp(
        &deployment(),
        json!({"metadata": {"labels": {"$patch": "merge", "a": "b"}}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal("unknown patch type: merge in map: map[$patch:merge a:b]".into())
    );
    let err = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "driver", "$patch": "frob"}]}}}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal(
            "unknown patch type: frob in map: map[$patch:frob name:driver]".into()
        )
    );
    let err = smp(&deployment(), json!({"$patch": 1})).unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal("unknown patch type: %!s(int64=1) in map: map[$patch:1]".into())
    );
    // A directive map for a field the object lacks is dropped, not checked.
    let out = smp(
        &deployment(),
        json!({"spec": {"paused": {"$patch": "frob"}}}),
    )
    .unwrap();
    assert!(out["spec"].get("paused").is_none());
}

#[test]
fn smp_top_level_replace_and_delete() {
    let out = smp(
        &deployment(),
        json!({"$patch": "replace", "kind": "Deployment"}),
    )
    .unwrap();
    assert_eq!(out, json!({"kind": "Deployment"}));
    let out = smp(&deployment(), json!({"$patch": "delete"})).unwrap();
    assert_eq!(out, json!({}));
}

#[test]
fn smp_delete_from_primitive_list() {
    let mut d = deployment();
    d["metadata"]["finalizers"] = json!(["a", "b", "c"]);
    let out = smp(
        &d,
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "c"]));
    // On a missing list nothing is added.
    let out = smp(
        &d,
        json!({"metadata": {"$deleteFromPrimitiveList/nope": ["b"]}}),
    )
    .unwrap();
    assert!(out["metadata"].get("nope").is_none());
    assert!(
        out["metadata"]
            .get("$deleteFromPrimitiveList/nope")
            .is_none()
    );
    // It works on atomic scalar lists too.
    let mut d = deployment();
    d["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--a", "--b"]);
    let out = smp(
        &d,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "driver", "$deleteFromPrimitiveList/args": ["--a"]}]}}}}),
    )
    .unwrap();
    assert_eq!(pod_spec(&out)["containers"][0]["args"], json!(["--b"]));
    let err = smp(&d, json!({"metadata": {"$deleteFromPrimitiveList": ["b"]}})).unwrap_err();
    assert_eq!(
        err,
        PatchError::BadRequest("invalid patch format of primitive list".into())
    );
}

#[test]
fn smp_set_element_order() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "attacher"}, {"name": "driver"}, {"name": "provisioner"}],
            "containers": [{"name": "attacher", "image": "attacher:4.1"}]
        }}}}),
    )
    .unwrap();
    let spec = pod_spec(&out);
    assert_eq!(
        names(&spec["containers"]),
        ["attacher", "driver", "provisioner"]
    );
    assert_eq!(spec["containers"][0]["image"], "attacher:4.1");
    assert!(spec.get("$setElementOrder/containers").is_none());
    // With an item new in the patch.
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "driver"}, {"name": "provisioner"}, {"name": "attacher"}, {"name": "resizer"}],
            "containers": [{"name": "resizer", "image": "r:1"}]
        }}}}),
    )
    .unwrap();
    assert_eq!(
        names(&pod_spec(&out)["containers"]),
        ["driver", "provisioner", "attacher", "resizer"]
    );
    // Primitive list.
    let mut d = deployment();
    d["metadata"]["finalizers"] = json!(["a", "b"]);
    let out = smp(
        &d,
        json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "b", "a"]));
}

#[test]
fn smp_set_element_order_errors() {
    let err = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "driver"}, {"name": "attacher"}],
            "containers": [{"name": "attacher", "image": "a"}, {"name": "driver", "image": "d"}]
        }}}}),
    )
    .unwrap_err();
    assert_eq!(err.code(), 500);
    assert!(
        err.message().starts_with("The order in patch list:\n"),
        "{err}"
    );
    assert!(
        err.message()
            .contains("doesn't match $setElementOrder list:"),
        "{err}"
    );
    let err = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"$setElementOrder/containers": "driver"}}}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal("expected a []interface {}, but received a string".into())
    );
    let err = smp(
        &deployment(),
        json!({"metadata": {"$setElementOrderfinalizers": []}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::BadRequest("invalid patch format of setElementOrder list".into())
    );
}

#[test]
fn smp_retain_keys() {
    let out = smp(
        &deployment(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    )
    .unwrap();
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    // Volumes carry retainKeys too: switching a volume's source.
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"volumes": [
            {"name": "config", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}
        ]}}}}),
    )
    .unwrap();
    assert_eq!(
        pod_spec(&out)["volumes"][1],
        json!({"name": "config", "secret": {"secretName": "s"}})
    );
    let bad = PatchError::BadRequest("invalid patch format of retainKeys".into());
    let err = smp(
        &deployment(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}),
    )
    .unwrap_err();
    assert_eq!(err, bad);
    let err = smp(
        &deployment(),
        json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
    )
    .unwrap_err();
    assert_eq!(err, bad);
}

#[test]
fn smp_pdb_selector_is_replaced() {
    let pdb = json!({"kind": "PodDisruptionBudget", "spec": {"minAvailable": 1,
        "selector": {"matchLabels": {"app": "a", "tier": "t"}}}});
    let out = strategic_merge_patch(
        &pdb,
        &json!({"spec": {"selector": {"matchLabels": {"app": "b"}}}}),
        &BuiltinLists::for_kind("policy", "PodDisruptionBudget"),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["selector"],
        json!({"matchLabels": {"app": "b"}})
    );
    assert_eq!(out["spec"]["minAvailable"], 1);
}

#[test]
fn smp_type_changes_and_new_fields() {
    let out = smp(
        &deployment(),
        json!({"spec": {
            "replicas": "3",
            "strategy": "Recreate",
            "template": {"spec": {"nodeSelector": {"a": "b", "c": null}, "affinity": {"$patch": "delete"}}}
        }}),
    )
    .unwrap();
    assert_eq!(out["spec"]["replicas"], "3");
    assert_eq!(out["spec"]["strategy"], "Recreate");
    // New fields lose their nulls and directive maps.
    assert_eq!(pod_spec(&out)["nodeSelector"], json!({"a": "b"}));
    assert!(pod_spec(&out).get("affinity").is_none());
}

#[test]
fn smp_directive_keys_never_reach_the_result() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {
            "tolerations": [{"key": "k", "$patch": "x"}],
            "initContainers": [{"name": "init", "$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A"}]}]
        }}}}),
    )
    .unwrap();
    assert_eq!(pod_spec(&out)["tolerations"], json!([{"key": "k"}]));
    assert_eq!(
        pod_spec(&out)["initContainers"],
        json!([{"name": "init", "env": [{"name": "A"}]}])
    );
}

#[test]
fn smp_malformed_patches() {
    let t = deployment();
    let err = smp(&t, json!([1])).unwrap_err();
    assert_eq!(
        err,
        PatchError::BadRequest(
            "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
        )
    );
    assert_eq!(smp(&t, json!("x")).unwrap_err().code(), 400);
    assert_eq!(smp(&t, Value::Null), Ok(t.clone()));
    assert_eq!(smp(&t, json!({})), Ok(t.clone()));
    // A list item without its merge key.
    let err = smp(
        &t,
        json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx:1.25"}]}}}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal(
            "map: map[image:nginx:1.25] does not contain declared merge key: name".into()
        )
    );
    // Mixed element types.
    let err = smp(
        &t,
        json!({"spec": {"template": {"spec": {"containers": ["driver"]}}}}),
    )
    .unwrap_err();
    assert!(
        err.message()
            .starts_with("list element types are not identical: "),
        "{err}"
    );
    // Lists of lists: 422.
    let mut d = t.clone();
    d["metadata"]["finalizers"] = json!([]);
    let err = smp(&d, json!({"metadata": {"finalizers": [["a"]]}})).unwrap_err();
    assert_eq!(err, invalid());
    // Merging maps into a set of scalars.
    let err = smp(&d, json!({"metadata": {"finalizers": [{"a": 1}]}})).unwrap_err();
    assert_eq!(
        err,
        PatchError::Internal("cannot merge lists without merge key for string".into())
    );
    // A leading null item.
    let err = smp(&t, json!({"metadata": {"finalizers": [null]}})).unwrap_err();
    assert_eq!(err.code(), 500);
}

#[test]
fn go_formatting() {
    assert_eq!(
        go_v(&json!({"b": [1, 2.5, "x"], "a": null, "c": true})),
        "map[a:<nil> b:[1 2.5 x] c:true]"
    );
    assert_eq!(go_float(1e6), "1e+06");
    assert_eq!(go_float(123456.5), "123456.5");
    assert_eq!(go_float(1.5e-7), "1.5e-07");
    assert_eq!(go_float(0.0001), "0.0001");
    assert_eq!(go_percent_s(&json!(1.5)), "%!s(float64=1.5)");
    assert_eq!(go_percent_s(&json!(true)), "%!s(bool=true)");
    assert_eq!(go_type(&json!(null)), "%!s(<nil>)");
}

#[test]
fn patch_error_display() {
    let e = PatchError::BadRequest("x".into());
    assert_eq!(e.to_string(), "x");
    assert_eq!(e.code(), 400);
}
