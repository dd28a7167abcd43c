//! Field for field: the objects `cluster_storage::hosted` builds for each driver operator of a
//! hosted control plane against what the Go CSO writes on HyperShift for the same inputs
//! (`tests/fixtures/go-hypershift/`, restated from OpenShift's assets; its README lists the
//! inputs). Every difference must be exempted below by object and JSON path, with its reason
//! (each is a row of docs/compatibility.md); an unexempted difference fails the test and names
//! its path, and an exemption that no longer matches anything fails too.
//!
//! Compared as the API server sees them: lists whose items all have a `name` (containers, env,
//! volumes, mounts, ports) by name, RBAC rules as the set of rights they grant, the operator
//! config's `config.yaml` as the YAML it holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cluster_storage::build::{Inputs, OPERATOR_IMAGE_VERSION_ENV};
use cluster_storage::hosted::{
    LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV, driver_control_plane_image_env, hosted_operator_objects,
};
use cluster_storage::registry::{CINDER, DRIVERS, Driver, MANILA};
use k8s_openapi::api::core::v1::Toleration;
use operator_kit::hosted::{Hosted, HostedControlPlane};
use serde_json::{Map, Value, json};

const NS: &str = "clusters-guest";

/// The fixture's inputs (its README).
fn inputs() -> Inputs {
    let mut env = BTreeMap::new();
    let mut set = |name: &str| {
        env.insert(name.to_owned(), format!("quay.io/test/{name}:1"));
    };
    for d in DRIVERS {
        for v in d.all_image_vars() {
            set(v.cso_env);
        }
        if let Some(cp) = driver_control_plane_image_env(d) {
            set(cp);
        }
    }
    set(LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV);
    env.insert(OPERATOR_IMAGE_VERSION_ENV.to_owned(), "4.20.1".to_owned());
    Inputs {
        env,
        ..Inputs::default()
    }
}

fn hosted() -> Hosted {
    Hosted {
        control_plane: HostedControlPlane {
            namespace: NS.to_owned(),
            node_selector: BTreeMap::from([("role".to_owned(), "cp".to_owned())]),
            labels: BTreeMap::from([
                ("team".to_owned(), "storage".to_owned()),
                ("name".to_owned(), "other".to_owned()),
            ]),
            tolerations: vec![Toleration {
                key: Some("dedicated".to_owned()),
                operator: Some("Equal".to_owned()),
                value: Some("cp".to_owned()),
                effect: Some("NoSchedule".to_owned()),
                ..Default::default()
            }],
            tls_security_profile: Some(json!({"type": "Modern", "modern": {}})),
        },
        run_as_user: None,
        management_proxy: BTreeMap::new(),
    }
}

/// `Kind namespace/name` (`Kind name` when cluster-scoped).
fn id(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("");
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Ours, by id: management, Deployment and guest objects.
fn ours(driver: &Driver) -> BTreeMap<String, Value> {
    let o = hosted_operator_objects(driver, &inputs(), &hosted()).expect("builds");
    o.management
        .iter()
        .chain([&o.deployment])
        .chain(&o.guest)
        .map(|d| {
            let v = serde_json::to_value(&d.object).expect("json");
            (id(&v), v)
        })
        .collect()
}

/// Go's, by id.
fn go(driver: &Driver) -> BTreeMap<String, Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/go-hypershift")
        .join(format!("{}.yaml", driver.name));
    let text = std::fs::read_to_string(&path).expect("the fixture");
    operator_kit::assets::parse_values(driver.name, &text)
        .expect("the fixture parses")
        .into_iter()
        .map(|v| (id(&v), v))
        .collect()
}

/// The rights a list of RBAC rules grants, one string each, sorted.
fn rights(rules: &Value) -> Value {
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let mut out = BTreeSet::new();
    for rule in rules.as_array().into_iter().flatten() {
        let names = list(&rule["resourceNames"]);
        for g in list(&rule["apiGroups"]) {
            for r in list(&rule["resources"]) {
                for v in list(&rule["verbs"]) {
                    if names.is_empty() {
                        out.insert(format!("{g}/{r} {v}"));
                    }
                    for n in &names {
                        out.insert(format!("{g}/{r}/{n} {v}"));
                    }
                }
            }
        }
    }
    json!(out)
}

/// The object as the comparison sees it (see the module documentation).
fn normalize(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(rules) = v.get("rules").cloned() {
        v["rules"] = rights(&rules);
    }
    if v["kind"] == "ConfigMap"
        && let Some(config) = v["data"]["config.yaml"].as_str()
    {
        let parsed = operator_kit::assets::parse_values("config.yaml", config)
            .expect("config.yaml parses")
            .remove(0);
        v["data"]["config.yaml"] = parsed;
    }
    by_name(&v)
}

/// Lists whose items all have a string `name` become objects keyed `[name=…]`.
fn by_name(v: &Value) -> Value {
    match v {
        Value::Array(items) if !items.is_empty() && items.iter().all(|i| i["name"].is_string()) => {
            let mut m = Map::new();
            for i in items {
                let key = format!("[name={}]", i["name"].as_str().unwrap_or(""));
                m.insert(key, by_name(i));
            }
            Value::Object(m)
        }
        Value::Array(items) => Value::Array(items.iter().map(by_name).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), by_name(v))).collect()),
        other => other.clone(),
    }
}

/// Every difference between `ours` and `go` below `path`, as `path: ours … go …`.
fn differences(path: &str, ours: &Value, go: &Value, out: &mut Vec<(String, String)>) {
    match (ours, go) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let sub = if k.starts_with("[name=") {
                    format!("{path}{k}")
                } else {
                    format!("{path}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(&sub, x, y, out),
                    (x, y) => out.push((sub, format!("ours {x:?}, Go {y:?}"))),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (a, b) if a != b => out.push((path.to_owned(), format!("ours {a}, Go {b}"))),
        _ => {}
    }
}

/// A deliberate difference: the object (`*` for each operator's Deployment), the path prefix
/// (`{op}` is the operator's name; empty for the whole object), why, and its compatibility row.
struct Exempt {
    object: &'static str,
    path: &'static str,
    why: &'static str,
}

const EXEMPT: &[Exempt] = &[
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].args",
        why: "C6, H3: our binary's flags (-v, --namespace of the control plane, --metrics-listen, --guest-kubeconfig); no config file",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].command",
        why: "C6: one binary runs every operator, started by subcommand",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].env[name=OPERATOR_IMAGE_VERSION]",
        why: "H3: our operators report the release version (as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].livenessProbe",
        why: "H3: /healthz and /readyz probes (as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].readinessProbe",
        why: "H3: /healthz and /readyz probes (as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].ports[name=metrics].protocol",
        why: "H3: TCP, the API server's default, left to it (as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.containers[name={op}].securityContext.readOnlyRootFilesystem",
        why: "H3: true, our operators write nothing outside /tmp (as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.volumes[name=cloud-credentials].projected.sources",
        why: "H3: the same two Secret items in the other order (distinct paths, as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.volumes[name=serving-cert].secret.defaultMode",
        why: "H3: 420, the API server's default, left to it (as standalone)",
    },
    Exempt {
        object: "Deployment",
        path: ".spec.template.spec.volumes[name=serving-cert].secret.optional",
        why: "H3: optional, so the operator starts before service-ca has issued its certificate (as standalone)",
    },
    Exempt {
        object: "ClusterRole",
        path: ".rules",
        why: "C3, C6: least privilege instead of OpenShift's union",
    },
    Exempt {
        object: "Role openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator-role",
        path: ".rules",
        why: "C6: least privilege, one Role per namespace",
    },
    Exempt {
        object: "Role openshift-config/openstack-cinder-csi-driver-operator-role",
        path: "",
        why: "C6: the guest Role for the cloud.conf override ConfigMap, one Role per namespace",
    },
    Exempt {
        object: "RoleBinding openshift-config/openstack-cinder-csi-driver-operator-rolebinding",
        path: "",
        why: "C6: binds the Role above",
    },
    Exempt {
        object: "ClusterRole",
        path: ".metadata.annotations",
        why: "H3: storage.openshift.io/remove-from, a marker of the Go repository's kustomize build that nothing reads at run time",
    },
    Exempt {
        object: "ClusterRoleBinding",
        path: ".metadata.annotations",
        why: "H3: storage.openshift.io/remove-from (as above)",
    },
    Exempt {
        object: "Namespace openshift-manila-csi-driver",
        path: ".metadata.annotations.include.release.openshift.io/self-managed-high-availability",
        why: "H3: a release profile annotation on an object no CVO applies (it is the CSO's), read by nothing",
    },
    Exempt {
        object: "Namespace openshift-manila-csi-driver",
        path: ".metadata.annotations.storage.openshift.io/remove-from",
        why: "H3: the kustomize build marker (as above)",
    },
];

/// Whether `exempt` covers the difference at `path` of object `obj` of `driver`.
fn covers(exempt: &Exempt, driver: &Driver, obj: &str, path: &str) -> bool {
    let kind = obj.split(' ').next().unwrap_or("");
    let object_matches = exempt.object == obj || exempt.object == kind;
    let prefix = exempt.path.replace("{op}", driver.operator_deployment);
    object_matches && path.starts_with(&prefix)
}

/// The differences between ours and Go's for `driver` that no exemption covers, and the
/// exemptions that covered something.
fn unexempted(
    driver: &Driver,
    ours: &BTreeMap<String, Value>,
    go: &BTreeMap<String, Value>,
) -> (Vec<String>, BTreeSet<usize>) {
    let mut used = BTreeSet::new();
    let mut left = Vec::new();
    let ids: BTreeSet<&String> = ours.keys().chain(go.keys()).collect();
    for obj in ids {
        let mut diffs = Vec::new();
        match (ours.get(obj), go.get(obj)) {
            (Some(a), Some(b)) => differences("", &normalize(a), &normalize(b), &mut diffs),
            (Some(_), None) => diffs.push((String::new(), "only ours".to_owned())),
            (None, Some(_)) => diffs.push((String::new(), "only Go's".to_owned())),
            (None, None) => {}
        }
        for (path, what) in diffs {
            match EXEMPT.iter().position(|e| covers(e, driver, obj, &path)) {
                Some(i) => {
                    used.insert(i);
                }
                None => left.push(format!("{obj}: {path}: {what}")),
            }
        }
    }
    (left, used)
}

#[test]
fn hosted_objects_are_the_go_csos_but_for_the_exempted_paths() {
    let mut used = BTreeSet::new();
    for driver in [&CINDER, &MANILA] {
        let (left, u) = unexempted(driver, &ours(driver), &go(driver));
        assert!(
            left.is_empty(),
            "{}: {} unexempted difference(s), the first at {}",
            driver.name,
            left.len(),
            left.join("\n")
        );
        used.extend(u);
    }
    let stale: Vec<String> = EXEMPT
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, e)| format!("{} {}", e.object, e.path))
        .collect();
    assert!(stale.is_empty(), "exemptions that match nothing: {stale:?}");
}

/// The check fails on a changed field, an added one and a missing object, naming the path.
#[test]
fn a_changed_field_is_named_by_its_path() {
    let driver = &CINDER;
    let go = go(driver);
    let dep = "Deployment clusters-guest/openstack-cinder-csi-driver-operator";
    let mut changed = ours(driver);
    changed.get_mut(dep).unwrap()["spec"]["template"]["spec"]["priorityClassName"] =
        json!("system-cluster-critical");
    let (left, _) = unexempted(driver, &changed, &go);
    assert_eq!(
        left,
        [format!(
            "{dep}: .spec.template.spec.priorityClassName: ours \"system-cluster-critical\", Go \"hypershift-control-plane\""
        )]
    );
    let mut env = ours(driver);
    let container = &mut env.get_mut(dep).unwrap()["spec"]["template"]["spec"]["containers"][0];
    container["env"][0]["value"] = json!("quay.io/test/wrong:1");
    let (left, _) = unexempted(driver, &env, &go);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].contains(".containers[name=openstack-cinder-csi-driver-operator].env[name=DRIVER_CONTROL_PLANE_IMAGE].value"),
        "{left:?}"
    );
    let mut missing = ours(driver);
    missing.remove("ServiceAccount clusters-guest/openstack-cinder-csi-driver-operator");
    let (left, _) = unexempted(driver, &missing, &go);
    assert_eq!(
        left,
        ["ServiceAccount clusters-guest/openstack-cinder-csi-driver-operator: : only Go's"]
    );
    // A right less in the management Role.
    let mut role = ours(driver);
    let r = role
        .get_mut("Role clusters-guest/openstack-cinder-csi-driver-operator-role")
        .unwrap();
    r["rules"][4]["verbs"] = json!(["get", "list"]);
    let (left, _) = unexempted(driver, &role, &go);
    assert!(left.len() == 1 && left[0].contains(".rules"), "{left:?}");
}

/// Every exemption names the rows of docs/compatibility.md that list it, and those rows exist.
#[test]
fn every_exemption_is_a_row_of_the_compatibility_list() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/compatibility.md"),
    )
    .expect("docs/compatibility.md");
    for e in EXEMPT {
        let (rows, reason) = e.why.split_once(": ").expect("`ROWS: reason`");
        assert!(!reason.is_empty(), "{}", e.why);
        for row in rows.split(", ") {
            assert!(
                doc.contains(&format!("| {row} |")),
                "{} {}: row {row} is not in docs/compatibility.md",
                e.object,
                e.path
            );
        }
    }
}

/// The Role HyperShift's control-plane operator gives the CSO in the control-plane namespace
/// (`control-plane-operator/controllers/hostedcontrolplane/v2/assets/cluster-storage-operator/
/// role.yaml`, restated): the API server lets the CSO create the driver operators' management
/// Roles only with rights it holds itself (the escalation check), so ours must be within it.
fn hypershift_cso_role() -> Value {
    json!([
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
        {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": ["*"]},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["serviceaccounts", "services", "configmaps", "pods",
            "endpoints", "events", "secrets"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
            "verbs": ["watch", "list", "get", "create", "delete", "patch", "update"]},
        {"apiGroups": ["hypershift.openshift.io"], "resources": ["hostedcontrolplanes"],
            "verbs": ["watch", "list", "get"]},
    ])
}

/// The rights of `rules` that `holder` does not grant (a `*` verb grants every verb).
fn beyond(rules: &Value, holder: &Value) -> Vec<String> {
    let held = rights(holder);
    let held: BTreeSet<&str> = held
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    rights(rules)
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|r| {
            let (what, _) = r.rsplit_once(' ').unwrap_or((r, ""));
            !held.contains(r) && !held.contains(format!("{what} *").as_str())
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_cso_under_hypershifts_role_may_grant_the_management_roles() {
    for driver in [&CINDER, &MANILA] {
        let ours = ours(driver);
        let role = &ours[&format!("Role {NS}/{}-role", driver.operator_deployment)];
        let extra = beyond(&role["rules"], &hypershift_cso_role());
        assert!(
            extra.is_empty(),
            "{}: the CSO cannot grant {extra:?}",
            driver.name
        );
    }
    // The check sees a right the CSO does not hold.
    let wider = json!([{"apiGroups": ["hypershift.openshift.io"], "resources": ["hostedcontrolplanes"], "verbs": ["update"]}]);
    assert_eq!(
        beyond(&wider, &hypershift_cso_role()),
        ["hypershift.openshift.io/hostedcontrolplanes update"]
    );
}
