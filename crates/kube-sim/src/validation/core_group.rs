//! The core group's kinds other than pods: ConfigMaps, Secrets, Services, Namespaces,
//! ServiceAccounts and the like.

use super::Errs;
use super::access::{
    absent, enum_str, obj_items, opt_arr, opt_bool, opt_int, opt_obj, opt_str, spec_of, str_items,
    wrong_type,
};
use super::names::{
    MAX_SECRET_SIZE, config_key_errors, dns1123_label_errors, dns1123_subdomain_errors,
    port_range_error, qualified_name_errors, validate_labels,
};
use super::pods::port_num_or_name;
use crate::field_error::{FieldError, child, index, key};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

pub(super) fn service(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let service_type = opt_str(Some(spec), "type", "spec.type", errs);
    if service_type.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"].contains(&service_type) {
        errs.push(FieldError::not_supported(
            "spec.type",
            json!(service_type),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        ));
    }
    let cluster_ip = opt_str(Some(spec), "clusterIP", "spec.clusterIP", errs);
    let headless = cluster_ip == "None";
    let ips = opt_arr(Some(spec), "clusterIPs", "spec.clusterIPs", errs);
    if service_type == "ExternalName" {
        let name = opt_str(Some(spec), "externalName", "spec.externalName", errs);
        if name.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        } else {
            let trimmed = name.strip_suffix('.').unwrap_or(name);
            for m in dns1123_subdomain_errors(trimmed) {
                errs.push(FieldError::invalid("spec.externalName", json!(name), m));
            }
        }
        if !cluster_ip.is_empty() || ips.is_some_and(|a| !a.is_empty()) {
            errs.push(FieldError::forbidden(
                "spec.clusterIPs",
                "may not be set for ExternalName services",
            ));
        }
    }
    for (i, ip) in str_items(ips, "spec.clusterIPs", errs) {
        if ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                index("spec.clusterIPs", i),
                json!(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    let ports = opt_arr(Some(spec), "ports", "spec.ports", errs);
    if ports.is_none_or(Vec::is_empty) && !headless && service_type != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let require_name = ports.is_some_and(|p| p.len() > 1);
    let mut names = BTreeSet::new();
    let mut seen = Vec::new();
    for (i, port) in obj_items(ports, "spec.ports", errs) {
        let pp = index("spec.ports", i);
        let name = opt_str(Some(port), "name", &child(&pp, "name"), errs);
        if require_name && name.is_empty() {
            errs.push(FieldError::required(child(&pp, "name"), ""));
        } else if !name.is_empty() {
            for m in dns1123_label_errors(name) {
                errs.push(FieldError::invalid(child(&pp, "name"), json!(name), m));
            }
            if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(child(&pp, "name"), json!(name)));
            }
        }
        let number = opt_int(Some(port), "port", &child(&pp, "port"), errs).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errs.push(FieldError::invalid(
                child(&pp, "port"),
                json!(number),
                port_range_error(),
            ));
        }
        let proto = opt_str(Some(port), "protocol", &child(&pp, "protocol"), errs);
        enum_str(
            proto,
            &child(&pp, "protocol"),
            &["SCTP", "TCP", "UDP"],
            true,
            errs,
        );
        if !absent(port.get("targetPort")) {
            port_num_or_name(port.get("targetPort"), &child(&pp, "targetPort"), errs);
        }
        if let Some(node_port) = opt_int(Some(port), "nodePort", &child(&pp, "nodePort"), errs)
            && node_port != 0
        {
            if service_type == "ClusterIP" {
                errs.push(FieldError::forbidden(
                    child(&pp, "nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else if !(30000..=32767).contains(&node_port) {
                errs.push(FieldError::invalid(
                    child(&pp, "nodePort"),
                    json!(node_port),
                    "provided port is not in the valid range. The range of valid ports is 30000-32767",
                ));
            }
        }
        let pair = (number, proto.to_string());
        if seen.contains(&pair) {
            errs.push(FieldError::duplicate(
                &pp,
                json!({"port": number, "protocol": proto}),
            ));
        }
        seen.push(pair);
    }
    validate_labels(spec.get("selector"), "spec.selector", errs);
    let affinity = opt_str(Some(spec), "sessionAffinity", "spec.sessionAffinity", errs);
    enum_str(
        affinity,
        "spec.sessionAffinity",
        &["ClientIP", "None"],
        true,
        errs,
    );
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let accessible = matches!(service_type, "LoadBalancer" | "NodePort")
        || (service_type == "ClusterIP" && has_external_ips);
    let etp = opt_str(
        Some(spec),
        "externalTrafficPolicy",
        "spec.externalTrafficPolicy",
        errs,
    );
    if !accessible && !etp.is_empty() {
        errs.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            json!(etp),
            "may only be set for externally-accessible services",
        ));
    } else if accessible {
        enum_str(
            etp,
            "spec.externalTrafficPolicy",
            &["Cluster", "Local"],
            true,
            errs,
        );
    }
    let itp = opt_str(
        Some(spec),
        "internalTrafficPolicy",
        "spec.internalTrafficPolicy",
        errs,
    );
    let needs_itp = matches!(service_type, "ClusterIP" | "NodePort" | "LoadBalancer");
    enum_str(
        itp,
        "spec.internalTrafficPolicy",
        &["Cluster", "Local"],
        needs_itp,
        errs,
    );
    let policy = opt_str(Some(spec), "ipFamilyPolicy", "spec.ipFamilyPolicy", errs);
    enum_str(
        policy,
        "spec.ipFamilyPolicy",
        &["PreferDualStack", "RequireDualStack", "SingleStack"],
        false,
        errs,
    );
    let families = opt_arr(Some(spec), "ipFamilies", "spec.ipFamilies", errs);
    let mut seen_families = BTreeSet::new();
    for (i, f) in str_items(families, "spec.ipFamilies", errs) {
        let fp = index("spec.ipFamilies", i);
        if !["IPv4", "IPv6"].contains(&f) {
            errs.push(FieldError::not_supported(&fp, json!(f), &["IPv4", "IPv6"]));
        } else if !seen_families.insert(f) {
            errs.push(FieldError::duplicate(&fp, json!(f)));
        }
    }
}

pub(super) fn config_map(root: &Map<String, Value>, errs: &mut Errs) {
    let data = opt_obj(Some(root), "data", "data", errs);
    let binary = opt_obj(Some(root), "binaryData", "binaryData", errs);
    let mut total = 0usize;
    for (k, v) in data.into_iter().flatten() {
        let path = key("data", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        if binary.is_some_and(|b| b.contains_key(k)) {
            errs.push(FieldError::invalid(
                &path,
                json!(k),
                "duplicate of key present in binaryData",
            ));
        }
        match v.as_str() {
            Some(s) => total += s.len(),
            None => wrong_type(errs, &path, v, "string"),
        }
    }
    for (k, v) in binary.into_iter().flatten() {
        let path = key("binaryData", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        total += decoded_len(v, &path, errs);
    }
    opt_bool(Some(root), "immutable", "immutable", errs);
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("", json!(""), MAX_SECRET_SIZE));
    }
}

/// The decoded length of a base64 `[]byte` field; malformed values are reported the way Go's
/// decoder words them (a real server answers 400 for these).
pub(super) fn decoded_len(v: &Value, path: &str, errs: &mut Errs) -> usize {
    let Some(s) = v.as_str() else {
        wrong_type(errs, path, v, "string");
        return 0;
    };
    decode_base64(s, path, errs).map_or(0, |b| b.len())
}

pub(super) fn decode_base64(s: &str, path: &str, errs: &mut Errs) -> Option<Vec<u8>> {
    // Go's decoder skips line breaks.
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            let at = match e {
                base64::DecodeError::InvalidByte(i, _)
                | base64::DecodeError::InvalidLastSymbol(i, _) => i,
                _ => cleaned.len(),
            };
            errs.push(FieldError::invalid(
                path,
                json!("<secret contents redacted>"),
                format!("illegal base64 data at input byte {at}"),
            ));
            None
        }
    }
}

pub(super) fn secret(root: &Map<String, Value>, errs: &mut Errs) {
    let data = opt_obj(Some(root), "data", "data", errs);
    let mut total = 0usize;
    let mut decoded: std::collections::BTreeMap<&str, Vec<u8>> = Default::default();
    for (k, v) in data.into_iter().flatten() {
        let path = key("data", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        if let Some(s) = v.as_str() {
            if let Some(bytes) = decode_base64(s, &path, errs) {
                total += bytes.len();
                decoded.insert(k, bytes);
            }
        } else {
            wrong_type(errs, &path, v, "string");
        }
    }
    // stringData only survives when defaulting could not fold it.
    for (k, v) in opt_obj(Some(root), "stringData", "stringData", errs)
        .into_iter()
        .flatten()
    {
        let path = key("stringData", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        match v.as_str() {
            Some(s) => total += s.len(),
            None => wrong_type(errs, &path, v, "string"),
        }
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("data", json!(""), MAX_SECRET_SIZE));
    }
    opt_bool(Some(root), "immutable", "immutable", errs);
    let has = |k: &str| decoded.contains_key(k) || data.is_some_and(|d| d.contains_key(k));
    match opt_str(Some(root), "type", "type", errs) {
        "kubernetes.io/service-account-token" => {
            let annotated = root
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if !annotated {
                errs.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson" => {
            let k = if opt_str(Some(root), "type", "type", &mut Vec::new())
                == "kubernetes.io/dockercfg"
            {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match decoded.get(k) {
                None if !has(k) => errs.push(FieldError::required(key("data", k), "")),
                None => {}
                Some(bytes) => {
                    if let Err(e) = serde_json::from_slice::<Map<String, Value>>(bytes) {
                        errs.push(FieldError::invalid(
                            key("data", k),
                            json!("<secret contents redacted>"),
                            e.to_string(),
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required("data[username]", ""));
            errs.push(FieldError::required("data[password]", ""));
        }
        "kubernetes.io/ssh-auth" if decoded.get("ssh-privatekey").is_none_or(Vec::is_empty) => {
            errs.push(FieldError::required("data[ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    errs.push(FieldError::required(key("data", k), ""));
                }
            }
        }
        _ => {}
    }
}

pub(super) fn event(root: &Map<String, Value>, errs: &mut Errs) {
    let namespace = root
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let involved = opt_obj(Some(root), "involvedObject", "involvedObject", errs);
    let involved_ns = opt_str(involved, "namespace", "involvedObject.namespace", errs);
    let event_time_set = !absent(root.get("eventTime"));
    let mismatch = if !event_time_set {
        if involved_ns.is_empty() {
            !namespace.is_empty() && namespace != "default"
        } else {
            namespace != involved_ns
        }
    } else {
        involved_ns.is_empty() && namespace != "default" && namespace != "kube-system"
    };
    if mismatch {
        errs.push(FieldError::invalid(
            "involvedObject.namespace",
            json!(involved_ns),
            "does not match event.namespace",
        ));
    }
    if event_time_set {
        let controller = opt_str(Some(root), "reportingComponent", "reportingComponent", errs);
        if controller.is_empty() {
            errs.push(FieldError::required("reportingComponent", ""));
        }
        for m in qualified_name_errors(controller) {
            errs.push(FieldError::invalid(
                "reportingComponent",
                json!(controller),
                m,
            ));
        }
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let v = opt_str(Some(root), field, field, errs);
            if v.is_empty() {
                errs.push(FieldError::required(field, ""));
            }
            if v.len() > limit {
                errs.push(FieldError::invalid(
                    field,
                    json!(""),
                    format!("can have at most {limit} characters"),
                ));
            }
        }
        if opt_str(Some(root), "message", "message", errs).len() > 1024 {
            errs.push(FieldError::invalid(
                "message",
                json!(""),
                "can have at most 1024 characters",
            ));
        }
    }
    for m in dns1123_subdomain_errors(namespace) {
        errs.push(FieldError::invalid("namespace", json!(namespace), m));
    }
}
