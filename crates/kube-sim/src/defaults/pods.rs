//! Defaults of pods and pod templates: containers, volumes, probes, the image pull policy and
//! the QoS class.

use super::core_group::pvc_spec;
use super::helpers::{
    ensure_obj, for_each_obj, is_absent, obj_at, set_if_unset, set_if_unset_null, set_int_if_zero,
    set_str_if_empty, str_at,
};
use super::quantity::{canonicalize_quantities, canonicalize_quantity, quantity_value};
use serde_json::{Map, Value, json};

/// A PodTemplateSpec at `parent[key]`, created when absent (the Go field is a struct).
pub(super) fn pod_template(parent: &mut Map<String, Value>, key: &str) {
    let Some(template) = ensure_obj(parent, key) else {
        return;
    };
    if let Some(meta) = ensure_obj(template, "metadata") {
        set_if_unset_null(meta, "creationTimestamp");
    }
    if let Some(spec) = ensure_obj(template, "spec") {
        pod_spec(spec);
    }
}

pub(super) fn pod(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        pod_spec(spec);
        // SetDefaults_Pod: only Pods, not templates.
        for list in ["containers", "initContainers"] {
            for_each_obj(spec, list, requests_from_limits);
        }
        set_if_unset(spec, "enableServiceLinks", json!(true));
        if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
            for list in ["containers", "initContainers"] {
                for_each_obj(spec, list, |c| {
                    for_each_obj(c, "ports", |p| {
                        let unset = match p.get("hostPort") {
                            None | Some(Value::Null) => true,
                            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
                            Some(_) => false,
                        };
                        if unset && let Some(cp) = p.get("containerPort").cloned() {
                            p.insert("hostPort".into(), cp);
                        }
                    });
                });
            }
        }
    }
    let qos = root.get("spec").map(pod_qos_class);
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Pending");
        if let Some(qos) = qos {
            set_str_if_empty(status, "qosClass", qos);
        }
    }
}

pub(super) fn pod_admission(root: &mut Map<String, Value>) {
    let qos = root.get("spec").map(pod_qos_class).unwrap_or("BestEffort");
    root.insert(
        "status".into(),
        json!({"phase": "Pending", "qosClass": qos}),
    );
    let Some(spec) = ensure_obj(root, "spec") else {
        return;
    };
    // ServiceAccount admission; the v1 alias `serviceAccount` mirrors it on output. The projected
    // `kube-api-access-<random>` volume it also adds is not reproduced (its name is random).
    set_str_if_empty(spec, "serviceAccountName", "default");
    if let Some(name) = spec.get("serviceAccountName").cloned() {
        spec.insert("serviceAccount".into(), name);
    }
    // DefaultTolerationSeconds admission.
    let tolerations = spec.entry("tolerations").or_insert(Value::Null);
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    if let Value::Array(list) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = list.iter().any(|t| {
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                let tkey = t.get("key").and_then(Value::as_str).unwrap_or("");
                let op = t.get("operator").and_then(Value::as_str).unwrap_or("");
                (effect.is_empty() || effect == "NoExecute")
                    && (tkey == key || (tkey.is_empty() && op == "Exists"))
            });
            if !tolerated {
                list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
    // Priority admission: no global default PriorityClass exists on a fresh cluster.
    let class = str_at(spec, "priorityClassName").to_string();
    let priority = match class.as_str() {
        "" => Some(0),
        "system-cluster-critical" => Some(2_000_000_000),
        "system-node-critical" => Some(2_000_001_000),
        _ => None,
    };
    if let Some(p) = priority {
        set_if_unset(spec, "priority", json!(p));
        set_str_if_empty(spec, "preemptionPolicy", "PreemptLowerPriority");
    }
}

pub(super) fn pod_spec(spec: &mut Map<String, Value>) {
    set_str_if_empty(spec, "dnsPolicy", "ClusterFirst");
    set_str_if_empty(spec, "restartPolicy", "Always");
    set_if_unset(spec, "securityContext", json!({}));
    set_if_unset(spec, "terminationGracePeriodSeconds", json!(30));
    set_str_if_empty(spec, "schedulerName", "default-scheduler");
    // v1 conversion: `serviceAccount` is a deprecated alias of `serviceAccountName`; the new
    // field wins on input and the alias is written back on output.
    if str_at(spec, "serviceAccountName").is_empty()
        && let Some(Value::String(alias)) = spec.get("serviceAccount").cloned()
        && !alias.is_empty()
    {
        spec.insert("serviceAccountName".into(), json!(alias));
    }
    if let Some(Value::String(name)) = spec.get("serviceAccountName").cloned()
        && !name.is_empty()
    {
        spec.insert("serviceAccount".into(), json!(name));
    }
    for_each_obj(spec, "volumes", volume);
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for_each_obj(spec, list, container);
    }
    if let Some(overhead) = obj_at(spec, "overhead") {
        canonicalize_quantities(overhead);
    }
}

/// The volume source fields of a Pod volume (exactly one may be set).
pub(crate) const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

pub(super) fn volume(v: &mut Map<String, Value>) {
    if VOLUME_SOURCES.iter().all(|k| is_absent(v.get(*k))) {
        v.insert("emptyDir".into(), json!({}));
    }
    if let Some(src) = obj_at(v, "hostPath") {
        set_if_unset(src, "type", json!(""));
    }
    if let Some(src) = obj_at(v, "emptyDir")
        && let Some(limit) = src.get_mut("sizeLimit")
    {
        canonicalize_quantity(limit);
    }
    for key in ["secret", "configMap"] {
        if let Some(src) = obj_at(v, key) {
            set_if_unset(src, "defaultMode", json!(420));
        }
    }
    if let Some(src) = obj_at(v, "downwardAPI") {
        set_if_unset(src, "defaultMode", json!(420));
        for_each_obj(src, "items", downward_api_item);
    }
    if let Some(src) = obj_at(v, "projected") {
        set_if_unset(src, "defaultMode", json!(420));
        for_each_obj(src, "sources", |s| {
            if let Some(d) = obj_at(s, "downwardAPI") {
                for_each_obj(d, "items", downward_api_item);
            }
            if let Some(t) = obj_at(s, "serviceAccountToken") {
                set_if_unset(t, "expirationSeconds", json!(3600));
            }
        });
    }
    if let Some(src) = obj_at(v, "iscsi") {
        set_str_if_empty(src, "iscsiInterface", "default");
    }
    if let Some(src) = obj_at(v, "rbd") {
        set_str_if_empty(src, "pool", "rbd");
        set_str_if_empty(src, "user", "admin");
        set_str_if_empty(src, "keyring", "/etc/ceph/keyring");
    }
    if let Some(src) = obj_at(v, "azureDisk") {
        set_if_unset(src, "cachingMode", json!("ReadWrite"));
        set_if_unset(src, "kind", json!("Shared"));
        set_if_unset(src, "fsType", json!("ext4"));
        set_if_unset(src, "readOnly", json!(false));
    }
    if let Some(src) = obj_at(v, "scaleIO") {
        set_str_if_empty(src, "storageMode", "ThinProvisioned");
        set_str_if_empty(src, "fsType", "xfs");
    }
    if let Some(src) = obj_at(v, "ephemeral")
        && let Some(tmpl) = obj_at(src, "volumeClaimTemplate")
    {
        if let Some(meta) = ensure_obj(tmpl, "metadata") {
            set_if_unset_null(meta, "creationTimestamp");
        }
        if let Some(spec) = ensure_obj(tmpl, "spec") {
            pvc_spec(spec);
        }
    }
}

pub(super) fn downward_api_item(item: &mut Map<String, Value>) {
    if let Some(f) = obj_at(item, "fieldRef") {
        set_str_if_empty(f, "apiVersion", "v1");
    }
}

pub(super) fn container(c: &mut Map<String, Value>) {
    let pull_unset = match c.get("imagePullPolicy") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if pull_unset {
        let image = str_at(c, "image");
        let policy = if image_tag(image).as_deref() == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    set_str_if_empty(c, "terminationMessagePath", "/dev/termination-log");
    set_str_if_empty(c, "terminationMessagePolicy", "File");
    for_each_obj(c, "ports", |p| set_str_if_empty(p, "protocol", "TCP"));
    for_each_obj(c, "env", |e| {
        if let Some(from) = obj_at(e, "valueFrom")
            && let Some(f) = obj_at(from, "fieldRef")
        {
            set_str_if_empty(f, "apiVersion", "v1");
        }
    });
    // ResourceRequirements is a struct in Go: it always serialises, at least as `{}`.
    if let Some(res) = ensure_obj(c, "resources") {
        for key in ["limits", "requests"] {
            if let Some(list) = obj_at(res, key) {
                canonicalize_quantities(list);
            }
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = obj_at(c, key) {
            set_int_if_zero(p, "timeoutSeconds", 1);
            set_int_if_zero(p, "periodSeconds", 10);
            set_int_if_zero(p, "successThreshold", 1);
            set_int_if_zero(p, "failureThreshold", 3);
            if let Some(h) = obj_at(p, "httpGet") {
                http_get(h);
            }
            if let Some(g) = obj_at(p, "grpc") {
                set_if_unset(g, "service", json!(""));
            }
        }
    }
    if let Some(lc) = obj_at(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(h) = obj_at(lc, key).and_then(|h| obj_at(h, "httpGet")) {
                http_get(h);
            }
        }
    }
}

pub(super) fn http_get(h: &mut Map<String, Value>) {
    set_str_if_empty(h, "path", "/");
    set_str_if_empty(h, "scheme", "HTTP");
}

/// The tag `parsers.ParseImageName` finds: `latest` when the reference has neither tag nor
/// digest, `None` when the reference does not parse (the server then assumes no tag).
pub(super) fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name.get(last..).and_then(|s| s.rfind(':')) {
        Some(i) => (name.get(..last + i).unwrap_or(""), name.get(last + i + 1..)),
        None => (name, None),
    };
    if repo.is_empty() || repo.ends_with('/') {
        return None;
    }
    // Every path component after a registry host must be lowercase.
    let mut parts = repo.split('/');
    let first = parts.next().unwrap_or("");
    let host_like =
        repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let path_ok = |p: &str| {
        !p.is_empty()
            && p.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
    };
    if !host_like && !path_ok(first) {
        return None;
    }
    if !parts.all(path_ok) {
        return None;
    }
    match tag {
        Some(t) if !t.is_empty() && t.len() <= 128 => Some(t.to_string()),
        Some(_) => None,
        None if digest.is_some() => Some(String::new()),
        None => Some("latest".to_string()),
    }
}

/// SetDefaults_Pod: a resource with a limit and no request gets the limit as its request.
pub(super) fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(res) = obj_at(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = ensure_obj(res, "requests") {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

/// `qos.GetPodQOS` over the (already defaulted) containers and init containers.
pub(super) fn pod_qos_class(spec: &Value) -> &'static str {
    let mut requests: std::collections::BTreeMap<String, i128> = Default::default();
    let mut limits: std::collections::BTreeMap<String, i128> = Default::default();
    let mut guaranteed = true;
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(items)) = spec.get(list) else {
            continue;
        };
        for c in items {
            let res = c.get("resources");
            let mut found_limits = Vec::new();
            for (kind, acc) in [("requests", &mut requests), ("limits", &mut limits)] {
                let Some(Value::Object(list)) = res.and_then(|r| r.get(kind)) else {
                    continue;
                };
                for (name, q) in list {
                    if name != "cpu" && name != "memory" {
                        continue;
                    }
                    let Some(q) = quantity_value(q) else {
                        continue;
                    };
                    if q.milli > 0 {
                        *acc.entry(name.clone()).or_insert(0) += q.milli;
                        if kind == "limits" {
                            found_limits.push(name.clone());
                        }
                    }
                }
            }
            if !(found_limits.iter().any(|n| n == "cpu")
                && found_limits.iter().any(|n| n == "memory"))
            {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}
