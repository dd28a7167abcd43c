//! Defaults of the core group's kinds other than pods: Services, Namespaces, Secrets, Nodes,
//! PersistentVolumes and their claims, Endpoints.

use super::helpers::{
    ensure_obj, for_each_obj, is_absent, obj_at, set_if_unset, set_str_if_empty, str_at,
};
use super::quantity::canonicalize_quantities;
use base64::Engine as _;
use serde_json::{Map, Value, json};

pub(super) fn service(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_str_if_empty(spec, "sessionAffinity", "None");
        match spec.get("sessionAffinity").and_then(Value::as_str) {
            Some("None") => {
                spec.remove("sessionAffinityConfig");
            }
            Some("ClientIP") => {
                let has_timeout = spec
                    .get("sessionAffinityConfig")
                    .and_then(|c| c.get("clientIP"))
                    .and_then(|c| c.get("timeoutSeconds"))
                    .is_some_and(|t| !t.is_null());
                if !has_timeout {
                    spec.insert(
                        "sessionAffinityConfig".into(),
                        json!({"clientIP": {"timeoutSeconds": 10800}}),
                    );
                }
            }
            _ => {}
        }
        set_str_if_empty(spec, "type", "ClusterIP");
        for_each_obj(spec, "ports", |p| {
            set_str_if_empty(p, "protocol", "TCP");
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Number(n)) => n.as_f64() == Some(0.0),
                Some(_) => false,
            };
            if unset && let Some(port) = p.get("port").filter(|v| v.is_number()).cloned() {
                p.insert("targetPort".into(), port);
            }
        });
        let service_type = str_at(spec, "type").to_string();
        let has_external_ips =
            matches!(spec.get("externalIPs"), Some(Value::Array(a)) if !a.is_empty());
        let externally_accessible = service_type == "LoadBalancer"
            || service_type == "NodePort"
            || (service_type == "ClusterIP" && has_external_ips);
        if externally_accessible {
            set_str_if_empty(spec, "externalTrafficPolicy", "Cluster");
        }
        if matches!(
            service_type.as_str(),
            "NodePort" | "LoadBalancer" | "ClusterIP"
        ) {
            set_if_unset(spec, "internalTrafficPolicy", json!("Cluster"));
        }
        if service_type == "LoadBalancer" {
            set_if_unset(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        ensure_obj(status, "loadBalancer");
    }
}

/// The REST storage's `initIPFamilyFields` and create-time `normalizeClusterIPs`, for a
/// single-stack IPv4 cluster.
pub(super) fn service_ip_families(root: &mut Map<String, Value>) {
    let Some(spec) = obj_at(root, "spec") else {
        return;
    };
    if str_at(spec, "type") == "ExternalName" {
        return;
    }
    let cluster_ip = str_at(spec, "clusterIP").to_string();
    if !cluster_ip.is_empty() && is_absent(spec.get("clusterIPs")) {
        spec.insert("clusterIPs".into(), json!([cluster_ip]));
    }
    let has_selector = matches!(spec.get("selector"), Some(Value::Object(s)) if !s.is_empty());
    let headless = cluster_ip == "None";
    if is_absent(spec.get("ipFamilyPolicy")) {
        let policy = if headless && !has_selector {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
    let policy = str_at(spec, "ipFamilyPolicy").to_string();
    let ips: Vec<String> = match spec.get("clusterIPs") {
        Some(Value::Array(ips)) => ips
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    if is_absent(spec.get("ipFamilies")) {
        spec.insert("ipFamilies".into(), json!([]));
    }
    let Some(Value::Array(families)) = spec.get_mut("ipFamilies") else {
        return;
    };
    // Families follow client-chosen IPs; otherwise the cluster's (IPv4) default.
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        if i >= families.len() {
            families.push(json!(if ip.contains(':') { "IPv6" } else { "IPv4" }));
        }
    }
    if families.is_empty() {
        families.push(json!("IPv4"));
    }
    // Headless without selector may list both families even on a single-stack cluster.
    if headless && !has_selector && families.len() < 2 && policy != "SingleStack" {
        let other = if families.first().and_then(Value::as_str) == Some("IPv6") {
            "IPv4"
        } else {
            "IPv6"
        };
        families.push(json!(other));
    }
}

pub(super) fn service_carry_over(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let Some(old_spec) = old.get("spec").and_then(Value::as_object) else {
        return;
    };
    let Some(spec) = obj_at(new, "spec") else {
        return;
    };
    let needs_ip = |s: &Map<String, Value>| str_at(s, "type") != "ExternalName";
    if needs_ip(old_spec) && needs_ip(spec) {
        if str_at(spec, "clusterIP").is_empty()
            && let Some(ip) = old_spec.get("clusterIP").filter(|v| v.is_string())
        {
            spec.insert("clusterIP".into(), ip.clone());
        }
        let plural_empty = match spec.get("clusterIPs") {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        if plural_empty && let Some(ips) = old_spec.get("clusterIPs").filter(|v| v.is_array()) {
            spec.insert("clusterIPs".into(), ips.clone());
        }
        for key in ["ipFamilyPolicy", "ipFamilies"] {
            let empty = match spec.get(key) {
                None | Some(Value::Null) => true,
                Some(Value::Array(a)) => a.is_empty(),
                Some(_) => false,
            };
            if empty && let Some(v) = old_spec.get(key) {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    // A changed singular with unchanged plural means the client meant the singular.
    let old_single = str_at(old_spec, "clusterIP");
    let new_single = str_at(spec, "clusterIP").to_string();
    if old_single != new_single && spec.get("clusterIPs") == old_spec.get("clusterIPs") {
        if new_single.is_empty() {
            spec.remove("clusterIPs");
        } else if let Some(Value::Array(ips)) = spec.get_mut("clusterIPs")
            && let Some(first) = ips.first_mut()
        {
            *first = json!(new_single);
        }
    }
    let needs_node_port =
        |s: &Map<String, Value>| matches!(str_at(s, "type"), "NodePort" | "LoadBalancer");
    if needs_node_port(old_spec) && needs_node_port(spec) {
        let old_ports: Vec<&Map<String, Value>> = match old_spec.get("ports") {
            Some(Value::Array(p)) => p.iter().filter_map(Value::as_object).collect(),
            _ => Vec::new(),
        };
        for_each_obj(spec, "ports", |p| {
            let unset = match p.get("nodePort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_f64() == Some(0.0),
                Some(_) => false,
            };
            if !unset {
                return;
            }
            let found = old_ports.iter().find(|o| {
                o.get("port") == p.get("port") && str_at(o, "protocol") == str_at(p, "protocol")
            });
            if let Some(np) = found.and_then(|o| o.get("nodePort")) {
                p.insert("nodePort".into(), np.clone());
            }
        });
        if is_absent(spec.get("healthCheckNodePort"))
            && let Some(hc) = old_spec.get("healthCheckNodePort")
        {
            spec.insert("healthCheckNodePort".into(), hc.clone());
        }
    }
}

pub(super) fn namespace(root: &mut Map<String, Value>) {
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty()
        && let Some(meta) = ensure_obj(root, "metadata")
        && let Some(labels) = ensure_obj(meta, "labels")
    {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    ensure_obj(root, "spec");
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Active");
    }
}

pub(super) fn secret(root: &mut Map<String, Value>) {
    set_str_if_empty(root, "type", "Opaque");
    // v1 conversion folds `stringData` into `data`, `stringData` winning, and drops it. Anything
    // of the wrong shape stays for validation to report.
    let foldable = match root.get("stringData") {
        Some(Value::Object(sd)) => {
            sd.values().all(Value::is_string)
                && matches!(
                    root.get("data"),
                    None | Some(Value::Null | Value::Object(_))
                )
        }
        Some(Value::Null) => {
            root.remove("stringData");
            false
        }
        _ => false,
    };
    if !foldable {
        return;
    }
    let Some(Value::Object(string_data)) = root.remove("stringData") else {
        return;
    };
    if let Some(data) = ensure_obj(root, "data") {
        for (k, v) in string_data {
            if let Value::String(s) = v {
                data.insert(
                    k,
                    json!(base64::engine::general_purpose::STANDARD.encode(s.as_bytes())),
                );
            }
        }
    }
}

pub(super) fn node(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        let single = str_at(spec, "podCIDR").to_string();
        let plural_first = match spec.get("podCIDRs") {
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        match (single.is_empty(), plural_first) {
            (false, None) if is_absent(spec.get("podCIDRs")) => {
                spec.insert("podCIDRs".into(), json!([single]));
            }
            (true, Some(first)) => {
                spec.insert("podCIDR".into(), json!(first));
            }
            _ => {}
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        for key in ["capacity", "allocatable"] {
            if let Some(list) = obj_at(status, key) {
                canonicalize_quantities(list);
            }
        }
        if is_absent(status.get("allocatable"))
            && let Some(cap) = status.get("capacity").filter(|c| c.is_object()).cloned()
        {
            status.insert("allocatable".into(), cap);
        }
        if let Some(endpoints) = ensure_obj(status, "daemonEndpoints")
            && let Some(kubelet) = ensure_obj(endpoints, "kubeletEndpoint")
        {
            set_if_unset(kubelet, "Port", json!(0));
        }
        if let Some(info) = ensure_obj(status, "nodeInfo") {
            for key in [
                "machineID",
                "systemUUID",
                "bootID",
                "kernelVersion",
                "osImage",
                "containerRuntimeVersion",
                "kubeletVersion",
                "kubeProxyVersion",
                "operatingSystem",
                "architecture",
            ] {
                set_if_unset(info, key, json!(""));
            }
        }
    }
}

pub(super) fn pvc_spec(spec: &mut Map<String, Value>) {
    set_if_unset(spec, "volumeMode", json!("Filesystem"));
    if let Some(res) = ensure_obj(spec, "resources") {
        for key in ["limits", "requests"] {
            if let Some(list) = obj_at(res, key) {
                canonicalize_quantities(list);
            }
        }
    }
}

pub(super) fn persistent_volume_claim(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        pvc_spec(spec);
    }
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Pending");
    }
}

pub(super) fn persistent_volume(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_str_if_empty(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_if_unset(spec, "volumeMode", json!("Filesystem"));
        if let Some(cap) = obj_at(spec, "capacity") {
            canonicalize_quantities(cap);
        }
        if let Some(src) = obj_at(spec, "hostPath") {
            set_if_unset(src, "type", json!(""));
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Pending");
    }
}

pub(super) fn endpoints(root: &mut Map<String, Value>) {
    for_each_obj(root, "subsets", |s| {
        for_each_obj(s, "ports", |p| set_str_if_empty(p, "protocol", "TCP"));
    });
}
