//! The server's table printers for the built-in kinds operators and administrators look at
//! most, so `kubectl get deploy,ds` shows READY / AVAILABLE and `kubectl get pvc,pv` STATUS,
//! CAPACITY and ACCESS MODES as on a cluster.
//!
//! Column names and cell formats follow kube-apiserver's printers (pkg/printers/internalversion);
//! the Age cell is a human duration computed by the server, as there.

use serde_json::{Value, json};

/// One column: its definition and how a cell is computed from an object.
pub struct Column {
    pub name: &'static str,
    pub kind: &'static str,
    pub cell: fn(&Value) -> Value,
}

/// One column (a row of `for_kind`'s tables).
const fn column(name: &'static str, kind: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column { name, kind, cell }
}

fn str_at(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn age(obj: &Value) -> Value {
    let created = str_at(obj, "/metadata/creationTimestamp");
    let Ok(ts) = created.parse::<jiff::Timestamp>() else {
        return json!("<unknown>");
    };
    let seconds = jiff::Timestamp::now().as_second() - ts.as_second();
    json!(human_duration(seconds))
}

/// A `date` printer column's cell as the API server's CRD table convertor makes it: the age of
/// an RFC 3339 timestamp (`5m`), `<invalid>` for a string that is not one.
pub fn date_cell(value: Value) -> Value {
    match &value {
        Value::String(s) => match s.parse::<jiff::Timestamp>() {
            Ok(ts) => json!(human_duration(
                jiff::Timestamp::now().as_second() - ts.as_second()
            )),
            Err(_) => json!("<invalid>"),
        },
        _ => value,
    }
}

/// apimachinery's `duration.HumanDuration`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else {
        let y = d / 365;
        if y < 8 {
            format!("{y}y{}d", d % 365)
        } else {
            format!("{y}y")
        }
    }
}

fn count(obj: &Value, field: &str) -> Value {
    json!(
        obj.get(field)
            .and_then(Value::as_object)
            .map_or(0, |m| m.len())
    )
}

fn or_none(s: String) -> Value {
    json!(if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    })
}

fn node_selector(obj: &Value) -> Value {
    let sel = obj
        .pointer("/spec/template/spec/nodeSelector")
        .and_then(Value::as_object);
    or_none(
        sel.map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default(),
    )
}

/// `GetAccessModesAsString`: the abbreviations in a fixed order, whatever the object's.
fn access_modes(obj: &Value, pointer: &str) -> Value {
    let modes: Vec<&str> = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let out: Vec<&str> = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect();
    json!(out.join(","))
}

/// A PVC's STATUS: `Terminating` while being deleted, else its phase.
fn claim_status(o: &Value) -> Value {
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        return json!("Terminating");
    }
    json!(str_at(o, "/status/phase"))
}

/// A PV's CLAIM: `namespace/name` of its claimRef, or empty.
fn claim_ref(o: &Value) -> Value {
    let name = str_at(o, "/spec/claimRef/name");
    if name.is_empty() {
        return json!("");
    }
    json!(format!("{}/{name}", str_at(o, "/spec/claimRef/namespace")))
}

/// VOLUMEATTRIBUTESCLASS: the class name or `<unset>`.
fn attributes_class(o: &Value) -> Value {
    let c = str_at(o, "/spec/volumeAttributesClassName");
    json!(if c.is_empty() {
        "<unset>".to_string()
    } else {
        c
    })
}

const AGE: Column = Column {
    name: "Age",
    kind: "string",
    cell: age,
};

/// The columns after Name for a built-in kind, or `None` for the default Name / Created At.
/// The Name cell of a row: the name, with ` (default)` after a default StorageClass's (as
/// kubectl's StorageClass printer marks it, for the GA and the beta annotation).
pub fn name_cell(group: &str, kind: &str, obj: &Value) -> Value {
    let name = obj
        .pointer("/metadata/name")
        .cloned()
        .unwrap_or(Value::Null);
    if (group, kind) != ("storage.k8s.io", "StorageClass") {
        return name;
    }
    let annotation = |key: &str| {
        obj.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            == Some("true")
    };
    match name.as_str() {
        Some(n)
            if annotation("storageclass.kubernetes.io/is-default-class")
                || annotation("storageclass.beta.kubernetes.io/is-default-class") =>
        {
            json!(format!("{n} (default)"))
        }
        _ => name,
    }
}

pub fn for_kind(group: &str, kind: &str) -> Option<Vec<Column>> {
    let cols = match (group, kind) {
        ("apps", "Deployment") => vec![
            column("Ready", "string", |o| {
                json!(format!(
                    "{}/{}",
                    int_at(o, "/status/readyReplicas"),
                    o.pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                ))
            }),
            column("Up-to-date", "integer", |o| {
                json!(int_at(o, "/status/updatedReplicas"))
            }),
            column("Available", "integer", |o| {
                json!(int_at(o, "/status/availableReplicas"))
            }),
            AGE,
        ],
        ("apps", "DaemonSet") => vec![
            column("Desired", "integer", |o| {
                json!(int_at(o, "/status/desiredNumberScheduled"))
            }),
            column("Current", "integer", |o| {
                json!(int_at(o, "/status/currentNumberScheduled"))
            }),
            column("Ready", "integer", |o| {
                json!(int_at(o, "/status/numberReady"))
            }),
            column("Up-to-date", "integer", |o| {
                json!(int_at(o, "/status/updatedNumberScheduled"))
            }),
            column("Available", "integer", |o| {
                json!(int_at(o, "/status/numberAvailable"))
            }),
            column("Node Selector", "string", node_selector),
            AGE,
        ],
        ("", "ConfigMap") => vec![
            column("Data", "integer", |o| {
                json!(
                    count(o, "data").as_u64().unwrap_or(0)
                        + count(o, "binaryData").as_u64().unwrap_or(0)
                )
            }),
            AGE,
        ],
        ("", "Secret") => vec![
            column("Type", "string", |o| json!(str_at(o, "/type"))),
            column("Data", "integer", |o| count(o, "data")),
            AGE,
        ],
        ("", "Namespace") => vec![
            column("Status", "string", |o| json!(str_at(o, "/status/phase"))),
            AGE,
        ],
        ("", "ServiceAccount") => vec![AGE],
        ("", "Node") => vec![
            column("Status", "string", |o| {
                let ready = o
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|cs| {
                        cs.iter()
                            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
                    })
                    .and_then(|c| c.get("status").and_then(Value::as_str))
                    == Some("True");
                json!(if ready { "Ready" } else { "NotReady" })
            }),
            column("Roles", "string", |o| {
                let roles: Vec<String> = o
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .map(|l| {
                        l.keys()
                            .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                or_none(roles.join(","))
            }),
            AGE,
            column("Version", "string", |o| {
                json!(str_at(o, "/status/nodeInfo/kubeletVersion"))
            }),
        ],
        ("", "PersistentVolumeClaim") => vec![
            column("Status", "string", claim_status),
            column("Volume", "string", |o| json!(str_at(o, "/spec/volumeName"))),
            Column {
                name: "Capacity",
                kind: "string",
                // As kubectl: a claim's capacity only once it names its volume.
                cell: |o| {
                    if str_at(o, "/spec/volumeName").is_empty() {
                        json!("")
                    } else {
                        json!(str_at(o, "/status/capacity/storage"))
                    }
                },
            },
            column("Access Modes", "string", |o| {
                if str_at(o, "/spec/volumeName").is_empty() {
                    json!("")
                } else {
                    access_modes(o, "/status/accessModes")
                }
            }),
            column("StorageClass", "string", |o| {
                json!(str_at(o, "/spec/storageClassName"))
            }),
            column("VolumeAttributesClass", "string", attributes_class),
            AGE,
        ],
        ("", "PersistentVolume") => vec![
            column("Capacity", "string", |o| {
                json!(str_at(o, "/spec/capacity/storage"))
            }),
            column("Access Modes", "string", |o| {
                access_modes(o, "/spec/accessModes")
            }),
            column("Reclaim Policy", "string", |o| {
                json!(str_at(o, "/spec/persistentVolumeReclaimPolicy"))
            }),
            column("Status", "string", claim_status),
            column("Claim", "string", claim_ref),
            column("StorageClass", "string", |o| {
                json!(str_at(o, "/spec/storageClassName"))
            }),
            column("VolumeAttributesClass", "string", attributes_class),
            column("Reason", "string", |o| json!(str_at(o, "/status/reason"))),
            AGE,
        ],
        ("storage.k8s.io", "VolumeAttachment") => vec![
            column("Attacher", "string", |o| json!(str_at(o, "/spec/attacher"))),
            column("PV", "string", |o| {
                json!(str_at(o, "/spec/source/persistentVolumeName"))
            }),
            column("Node", "string", |o| json!(str_at(o, "/spec/nodeName"))),
            column("Attached", "boolean", |o| {
                json!(
                    o.pointer("/status/attached")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            AGE,
        ],
        ("storage.k8s.io", "StorageClass") => {
            vec![
                column("Provisioner", "string", |o| {
                    json!(str_at(o, "/provisioner"))
                }),
                column("ReclaimPolicy", "string", |o| {
                    json!(str_at(o, "/reclaimPolicy"))
                }),
                column("VolumeBindingMode", "string", |o| {
                    json!(str_at(o, "/volumeBindingMode"))
                }),
                column("AllowVolumeExpansion", "string", |o| {
                    json!(
                        o.get("allowVolumeExpansion")
                            .and_then(Value::as_bool)
                            .unwrap_or(false)
                            .to_string()
                    )
                }),
                AGE,
            ]
        }
        ("storage.k8s.io", "CSIDriver") => vec![
            column("AttachRequired", "boolean", |o| {
                json!(
                    o.pointer("/spec/attachRequired")
                        .and_then(Value::as_bool)
                        .unwrap_or(true)
                )
            }),
            column("PodInfoOnMount", "boolean", |o| {
                json!(
                    o.pointer("/spec/podInfoOnMount")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            column("StorageCapacity", "boolean", |o| {
                json!(
                    o.pointer("/spec/storageCapacity")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            column("TokenRequests", "string", |o| {
                match o.pointer("/spec/tokenRequests").and_then(Value::as_array) {
                    Some(requests) => json!(
                        requests
                            .iter()
                            .filter_map(|r| r.get("audience").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    None => json!("<unset>"),
                }
            }),
            column("RequiresRepublish", "boolean", |o| {
                json!(
                    o.pointer("/spec/requiresRepublish")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            column("Modes", "string", |o| {
                let modes: Vec<&str> = o
                    .pointer("/spec/volumeLifecycleModes")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                or_none(modes.join(","))
            }),
            AGE,
        ],
        _ => return None,
    };
    Some(cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 3600, "3d1h"),
            (400 * 86400, "400d"),
            (-5, "<invalid>"),
        ] {
            assert_eq!(human_duration(s), want, "{s}s");
        }
    }

    #[test]
    fn deployment_cells() {
        let cols = for_kind("apps", "Deployment").expect("printer");
        let d = json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}});
        let cells: Vec<Value> = cols.iter().take(3).map(|c| (c.cell)(&d)).collect();
        assert_eq!(cells, vec![json!("1/2"), json!(2), json!(1)]);
        assert!(for_kind("", "Pod").is_none());
    }

    fn cells(group: &str, kind: &str, obj: &Value) -> Vec<(&'static str, Value)> {
        for_kind(group, kind)
            .expect("printer")
            .iter()
            .filter(|c| c.name != "Age")
            .map(|c| (c.name, (c.cell)(obj)))
            .collect()
    }

    #[test]
    fn claim_and_volume_cells_read_like_kubectl() {
        let pvc = json!({"spec": {"volumeName": "pvc-1", "storageClassName": "standard-csi", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"]}});
        assert_eq!(
            cells("", "PersistentVolumeClaim", &pvc),
            vec![
                ("Status", json!("Bound")),
                ("Volume", json!("pvc-1")),
                ("Capacity", json!("1Gi")),
                ("Access Modes", json!("RWO,RWOP")),
                ("StorageClass", json!("standard-csi")),
                ("VolumeAttributesClass", json!("<unset>")),
            ]
        );
        let pending = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}, "status": {"phase": "Pending"}});
        assert_eq!(
            cells("", "PersistentVolumeClaim", &pending)[..4],
            [
                ("Status", json!("Terminating")),
                ("Volume", json!("")),
                ("Capacity", json!("")),
                ("Access Modes", json!("")),
            ]
        );
        let pv = json!({"spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteMany", "ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Delete", "claimRef": {"namespace": "ns", "name": "data"},
            "storageClassName": "csi-manila-default", "volumeMode": "Filesystem"},
            "status": {"phase": "Released", "reason": ""}});
        assert_eq!(
            cells("", "PersistentVolume", &pv),
            vec![
                ("Capacity", json!("2Gi")),
                ("Access Modes", json!("ROX,RWX")),
                ("Reclaim Policy", json!("Delete")),
                ("Status", json!("Released")),
                ("Claim", json!("ns/data")),
                ("StorageClass", json!("csi-manila-default")),
                ("VolumeAttributesClass", json!("<unset>")),
                ("Reason", json!("")),
            ]
        );
    }
}
