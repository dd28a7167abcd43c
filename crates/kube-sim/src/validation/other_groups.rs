//! Kinds of the other built-in groups kube-sim serves: storage, RBAC, admission, policy,
//! scheduling and the rest.

use super::Errs;
use super::access::NEGATIVE;
use super::access::{
    absent, enum_str, obj_items, opt_arr, opt_bool, opt_int, opt_obj, opt_str, spec_of, str_items,
    wrong_type,
};
use super::apps::{not_more_than_100_percent, positive_int_or_percent};
use super::names::{dns1123_subdomain_errors, path_segment_errors, qualified_name_errors};
use super::pods::port_num_or_name;
use super::selectors::validate_label_selector;
use crate::field_error::{FieldError, child, index, key};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

pub(super) fn storage_class(root: &Map<String, Value>, errs: &mut Errs) {
    let provisioner = opt_str(Some(root), "provisioner", "provisioner", errs);
    if provisioner.is_empty() {
        errs.push(FieldError::required("provisioner", ""));
    } else {
        for m in qualified_name_errors(&provisioner.to_lowercase()) {
            errs.push(FieldError::invalid(
                "provisioner",
                json!(provisioner.to_lowercase()),
                m,
            ));
        }
    }
    if let Some(params) = opt_obj(Some(root), "parameters", "parameters", errs) {
        if params.len() > 512 {
            errs.push(FieldError::too_long("parameters", json!(""), 512));
        } else {
            let mut total = 0usize;
            for (k, v) in params {
                if k.is_empty() {
                    errs.push(FieldError::invalid(
                        "parameters",
                        json!(k),
                        "field can not be empty.",
                    ));
                }
                match v.as_str() {
                    Some(s) => total += k.len() + s.len(),
                    None => wrong_type(errs, &key("parameters", k), v, "string"),
                }
            }
            if total > 256 * 1024 {
                errs.push(FieldError::too_long("parameters", json!(""), 256 * 1024));
            }
        }
    }
    let reclaim = opt_str(Some(root), "reclaimPolicy", "reclaimPolicy", errs);
    enum_str(reclaim, "reclaimPolicy", &["Delete", "Retain"], false, errs);
    let binding = opt_str(Some(root), "volumeBindingMode", "volumeBindingMode", errs);
    if absent(root.get("volumeBindingMode")) {
        errs.push(FieldError::required("volumeBindingMode", ""));
    } else if !["Immediate", "WaitForFirstConsumer"].contains(&binding) {
        errs.push(FieldError::not_supported(
            "volumeBindingMode",
            json!(binding),
            &["Immediate", "WaitForFirstConsumer"],
        ));
    }
    opt_bool(
        Some(root),
        "allowVolumeExpansion",
        "allowVolumeExpansion",
        errs,
    );
}

pub(super) fn csi_driver(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    // The real server spells this path `attachedRequired`.
    for (field, path) in [
        ("attachRequired", "spec.attachedRequired"),
        ("podInfoOnMount", "spec.podInfoOnMount"),
        ("storageCapacity", "spec.storageCapacity"),
        ("seLinuxMount", "spec.seLinuxMount"),
    ] {
        if opt_bool(Some(spec), field, path, errs).is_none() && absent(spec.get(field)) {
            errs.push(FieldError::required(path, ""));
        }
    }
    opt_bool(
        Some(spec),
        "requiresRepublish",
        "spec.requiresRepublish",
        errs,
    );
    if !absent(spec.get("fsGroupPolicy")) {
        let policy = opt_str(Some(spec), "fsGroupPolicy", "spec.fsGroupPolicy", errs);
        if !["File", "None", "ReadWriteOnceWithFSType"].contains(&policy) {
            errs.push(FieldError::not_supported(
                "spec.fsGroupPolicy",
                json!(policy),
                &["File", "None", "ReadWriteOnceWithFSType"],
            ));
        }
    }
    let modes = opt_arr(
        Some(spec),
        "volumeLifecycleModes",
        "spec.volumeLifecycleModes",
        errs,
    );
    for (_, mode) in str_items(modes, "spec.volumeLifecycleModes", errs) {
        if !["Persistent", "Ephemeral"].contains(&mode) {
            errs.push(FieldError::not_supported(
                "spec.volumeLifecycleModes",
                json!(mode),
                &["Persistent", "Ephemeral"],
            ));
        }
    }
    let tokens = opt_arr(Some(spec), "tokenRequests", "spec.tokenRequests", errs);
    let mut audiences = BTreeSet::new();
    for (i, t) in obj_items(tokens, "spec.tokenRequests", errs) {
        let p = index("spec.tokenRequests", i);
        let audience = opt_str(Some(t), "audience", &child(&p, "audience"), errs);
        if !audiences.insert(audience) {
            errs.push(FieldError::duplicate(
                child(&p, "audience"),
                json!(audience),
            ));
            continue;
        }
        if let Some(exp) = opt_int(
            Some(t),
            "expirationSeconds",
            &child(&p, "expirationSeconds"),
            errs,
        ) {
            if exp < 600 {
                errs.push(FieldError::invalid(
                    child(&p, "expirationSeconds"),
                    json!(exp),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                errs.push(FieldError::invalid(
                    child(&p, "expirationSeconds"),
                    json!(exp),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    let period_path = "spec.nodeAllocatableUpdatePeriodSeconds";
    if let Some(period) = opt_int(
        Some(spec),
        "nodeAllocatableUpdatePeriodSeconds",
        period_path,
        errs,
    ) && period < 10
    {
        errs.push(FieldError::invalid(
            period_path,
            json!(period),
            "must be greater than or equal to 10 seconds",
        ));
    }
}

pub(super) fn pod_disruption_budget(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        errs.push(FieldError::invalid(
            "spec",
            Value::Object(spec.clone()),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (v, path) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
        if v.is_some() {
            positive_int_or_percent(v, path, errs);
            not_more_than_100_percent(v, path, errs);
        }
    }
    validate_label_selector(spec.get("selector"), "spec.selector", errs);
    let policy_path = "spec.unhealthyPodEvictionPolicy";
    if !absent(spec.get("unhealthyPodEvictionPolicy")) {
        let policy = opt_str(Some(spec), "unhealthyPodEvictionPolicy", policy_path, errs);
        if !["AlwaysAllow", "IfHealthyBudget"].contains(&policy) {
            errs.push(FieldError::not_supported(
                policy_path,
                json!(policy),
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
}

pub(super) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

pub(super) fn policy_rules(root: &Map<String, Value>, namespaced: bool, errs: &mut Errs) {
    let rules = opt_arr(Some(root), "rules", "rules", errs);
    for (i, rule) in obj_items(rules, "rules", errs) {
        let p = index("rules", i);
        let count = |k: &str, errs: &mut Errs| {
            str_items(
                opt_arr(Some(rule), k, &child(&p, k), errs),
                &child(&p, k),
                errs,
            )
            .len()
        };
        if count("verbs", errs) == 0 {
            errs.push(FieldError::required(
                child(&p, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = count("nonResourceURLs", errs);
        let (groups, resources, names) = (
            count("apiGroups", errs),
            count("resources", errs),
            count("resourceNames", errs),
        );
        if urls > 0 {
            let value = rule.get("nonResourceURLs").cloned().unwrap_or(Value::Null);
            if namespaced {
                errs.push(FieldError::invalid(
                    child(&p, "nonResourceURLs"),
                    value.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if groups > 0 || resources > 0 || names > 0 {
                errs.push(FieldError::invalid(
                    child(&p, "nonResourceURLs"),
                    value,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if groups == 0 {
            errs.push(FieldError::required(
                child(&p, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if resources == 0 {
            errs.push(FieldError::required(
                child(&p, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

pub(super) fn role_binding(root: &Map<String, Value>, namespaced: bool, errs: &mut Errs) {
    let role_ref = opt_obj(Some(root), "roleRef", "roleRef", errs);
    let group = opt_str(role_ref, "apiGroup", "roleRef.apiGroup", errs);
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            json!(group),
            &[RBAC_GROUP],
        ));
    }
    let kind = opt_str(role_ref, "kind", "roleRef.kind", errs);
    if namespaced {
        if !["Role", "ClusterRole"].contains(&kind) {
            errs.push(FieldError::not_supported(
                "roleRef.kind",
                json!(kind),
                &["Role", "ClusterRole"],
            ));
        }
    } else if kind != "ClusterRole" {
        errs.push(FieldError::not_supported(
            "roleRef.kind",
            json!(kind),
            &["ClusterRole"],
        ));
    }
    let name = opt_str(role_ref, "name", "roleRef.name", errs);
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for m in path_segment_errors(name) {
            errs.push(FieldError::invalid("roleRef.name", json!(name), m));
        }
    }
    let subjects = opt_arr(Some(root), "subjects", "subjects", errs);
    for (i, s) in obj_items(subjects, "subjects", errs) {
        let p = index("subjects", i);
        let name = opt_str(Some(s), "name", &child(&p, "name"), errs);
        if name.is_empty() {
            errs.push(FieldError::required(child(&p, "name"), ""));
        }
        let group = opt_str(Some(s), "apiGroup", &child(&p, "apiGroup"), errs);
        match opt_str(Some(s), "kind", &child(&p, "kind"), errs) {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for m in dns1123_subdomain_errors(name) {
                        errs.push(FieldError::invalid(child(&p, "name"), json!(name), m));
                    }
                }
                if !group.is_empty() {
                    errs.push(FieldError::not_supported(
                        child(&p, "apiGroup"),
                        json!(group),
                        &[""],
                    ));
                }
                if !namespaced
                    && opt_str(Some(s), "namespace", &child(&p, "namespace"), errs).is_empty()
                {
                    errs.push(FieldError::required(child(&p, "namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != RBAC_GROUP {
                    errs.push(FieldError::not_supported(
                        child(&p, "apiGroup"),
                        json!(group),
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                child(&p, "kind"),
                json!(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
}

pub(super) fn network_policy(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    validate_label_selector(spec.get("podSelector"), "spec.podSelector", errs);
    for (direction, peers_key) in [("ingress", "from"), ("egress", "to")] {
        let dp = child("spec", direction);
        let rules = opt_arr(Some(spec), direction, &dp, errs);
        for (i, rule) in obj_items(rules, &dp, errs) {
            let rp = index(&dp, i);
            let ports_path = child(&rp, "ports");
            for (j, port) in obj_items(
                opt_arr(Some(rule), "ports", &ports_path, errs),
                &ports_path,
                errs,
            ) {
                let pp = index(&ports_path, j);
                let proto = opt_str(Some(port), "protocol", &child(&pp, "protocol"), errs);
                if !proto.is_empty() && !["SCTP", "TCP", "UDP"].contains(&proto) {
                    errs.push(FieldError::not_supported(
                        child(&pp, "protocol"),
                        json!(proto),
                        &["SCTP", "TCP", "UDP"],
                    ));
                }
                if !absent(port.get("port")) {
                    port_num_or_name(port.get("port"), &child(&pp, "port"), errs);
                }
            }
            let peers_path = child(&rp, peers_key);
            for (j, peer) in obj_items(
                opt_arr(Some(rule), peers_key, &peers_path, errs),
                &peers_path,
                errs,
            ) {
                let pp = index(&peers_path, j);
                let n = ["podSelector", "namespaceSelector", "ipBlock"]
                    .iter()
                    .filter(|k| !absent(peer.get(**k)))
                    .count();
                if n == 0 {
                    errs.push(FieldError::required(&pp, "must specify a peer"));
                }
                for k in ["podSelector", "namespaceSelector"] {
                    validate_label_selector(peer.get(k), &child(&pp, k), errs);
                }
                if !absent(peer.get("ipBlock")) && n > 1 {
                    errs.push(FieldError::forbidden(
                        &pp,
                        "may not specify both ipBlock and another peer",
                    ));
                }
            }
        }
    }
    let types = opt_arr(Some(spec), "policyTypes", "spec.policyTypes", errs);
    if let Some(list) = types
        && list.len() > 2
    {
        errs.push(FieldError::invalid(
            "spec.policyTypes",
            Value::Array(list.clone()),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in str_items(types, "spec.policyTypes", errs) {
        if !["Ingress", "Egress"].contains(&t) {
            errs.push(FieldError::not_supported(
                index("spec.policyTypes", i),
                json!(t),
                &["Ingress", "Egress"],
            ));
        }
    }
}

pub(super) fn lease(root: &Map<String, Value>, errs: &mut Errs) {
    let spec = opt_obj(Some(root), "spec", "spec", errs);
    if let Some(d) = opt_int(
        spec,
        "leaseDurationSeconds",
        "spec.leaseDurationSeconds",
        errs,
    ) && d <= 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            json!(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = opt_int(spec, "leaseTransitions", "spec.leaseTransitions", errs)
        && t < 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseTransitions",
            json!(t),
            NEGATIVE,
        ));
    }
    opt_str(spec, "holderIdentity", "spec.holderIdentity", errs);
    for k in ["acquireTime", "renewTime"] {
        let p = child("spec", k);
        let t = opt_str(spec, k, &p, errs);
        if !t.is_empty() && !looks_like_rfc3339(t) {
            errs.push(FieldError::invalid(
                &p,
                json!(t),
                "must be an RFC3339 timestamp with microseconds",
            ));
        }
    }
    let strategy = opt_str(spec, "strategy", "spec.strategy", errs);
    if !strategy.is_empty() && strategy != "OldestEmulationVersion" {
        errs.push(FieldError::not_supported(
            "spec.strategy",
            json!(strategy),
            &["OldestEmulationVersion"],
        ));
    }
    if !opt_str(spec, "preferredHolder", "spec.preferredHolder", errs).is_empty()
        && strategy.is_empty()
    {
        errs.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
}

pub(super) fn looks_like_rfc3339(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 20
        && b.get(4) == Some(&b'-')
        && b.get(7) == Some(&b'-')
        && matches!(b.get(10), Some(b'T' | b't'))
        && b.get(13) == Some(&b':')
        && b.get(16) == Some(&b':')
        && (t.ends_with('Z')
            || t.ends_with('z')
            || t.get(t.len().saturating_sub(6)..)
                .is_some_and(|z| z.starts_with('+') || z.starts_with('-')))
}
