//! Pod specs and templates: containers, volumes, security contexts, probes, affinity.

use super::Errs;
use super::access::NEGATIVE;
use super::access::{
    absent, enum_str, nonnegative, obj_items, opt_arr, opt_int, opt_obj, opt_str, wrong_type,
};
use super::names::{
    config_key_errors, dns1123_label_errors, dns1123_subdomain_errors, port_name_errors,
    port_range_error, qualified_name_errors, validate_annotations, validate_labels,
};
use crate::defaults::VOLUME_SOURCES;
use crate::field_error::{FieldError, child, index, key};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// `ValidatePodTemplateSpec`; note the real server reports template labels at `<path>.labels`.
pub(super) fn pod_template_spec(template: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let meta = opt_obj(Some(template), "metadata", &child(path, "metadata"), errs);
    validate_labels(
        meta.and_then(|m| m.get("labels")),
        &child(path, "labels"),
        errs,
    );
    validate_annotations(
        meta.and_then(|m| m.get("annotations")),
        &child(path, "annotations"),
        errs,
    );
    let spec_path = child(path, "spec");
    let spec = opt_obj(Some(template), "spec", &spec_path, errs);
    if template
        .get("spec")
        .is_some_and(|s| !s.is_null() && !s.is_object())
    {
        return;
    }
    let empty = Map::new();
    pod_spec(spec.unwrap_or(&empty), &spec_path, errs);
    if spec
        .and_then(|s| s.get("ephemeralContainers"))
        .is_some_and(|e| e.as_array().is_some_and(|a| !a.is_empty()))
    {
        errs.push(FieldError::forbidden(
            child(&spec_path, "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// `ValidatePodSpec`, the parts operators meet.
pub(super) fn pod_spec(spec: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let volumes = pod_volumes(spec, path, errs);
    let containers_path = child(path, "containers");
    let containers = opt_arr(Some(spec), "containers", &containers_path, errs);
    if spec
        .get("containers")
        .is_none_or(|c| c.is_null() || c.as_array().is_some_and(Vec::is_empty))
    {
        errs.push(FieldError::required(&containers_path, ""));
    }
    let mut names = BTreeSet::new();
    containers_of(
        containers,
        &containers_path,
        &volumes,
        &mut names,
        false,
        errs,
    );
    let init_path = child(path, "initContainers");
    let init = opt_arr(Some(spec), "initContainers", &init_path, errs);
    containers_of(init, &init_path, &volumes, &mut names, true, errs);

    let restart = opt_str(
        Some(spec),
        "restartPolicy",
        &child(path, "restartPolicy"),
        errs,
    );
    enum_str(
        restart,
        &child(path, "restartPolicy"),
        &["Always", "OnFailure", "Never"],
        true,
        errs,
    );
    let dns = opt_str(Some(spec), "dnsPolicy", &child(path, "dnsPolicy"), errs);
    enum_str(
        dns,
        &child(path, "dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        true,
        errs,
    );
    for k in ["serviceAccountName", "priorityClassName"] {
        let p = child(path, k);
        let v = opt_str(Some(spec), k, &p, errs);
        if !v.is_empty() {
            for m in dns1123_subdomain_errors(v) {
                errs.push(FieldError::invalid(&p, json!(v), m));
            }
        }
    }
    for k in ["hostname", "subdomain"] {
        let p = child(path, k);
        let v = opt_str(Some(spec), k, &p, errs);
        if !v.is_empty() {
            for m in dns1123_label_errors(v) {
                errs.push(FieldError::invalid(&p, json!(v), m));
            }
        }
    }
    validate_labels(spec.get("nodeSelector"), &child(path, "nodeSelector"), errs);
    if let Some(ads) = opt_int(
        Some(spec),
        "activeDeadlineSeconds",
        &child(path, "activeDeadlineSeconds"),
        errs,
    ) && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(FieldError::invalid(
            child(path, "activeDeadlineSeconds"),
            json!(ads),
            format!("must be between 1 and {}, inclusive", i32::MAX),
        ));
    }
    let tol_path = child(path, "tolerations");
    let tolerations = opt_arr(Some(spec), "tolerations", &tol_path, errs);
    for (i, t) in obj_items(tolerations, &tol_path, errs) {
        let p = index(&tol_path, i);
        let op = opt_str(Some(t), "operator", &child(&p, "operator"), errs);
        let k = opt_str(Some(t), "key", &child(&p, "key"), errs);
        let value = opt_str(Some(t), "value", &child(&p, "value"), errs);
        if !k.is_empty() {
            for m in qualified_name_errors(k) {
                errs.push(FieldError::invalid(child(&p, "key"), json!(k), m));
            }
        }
        match op {
            "" | "Equal" => {
                if k.is_empty() {
                    errs.push(FieldError::invalid(
                        child(&p, "operator"),
                        json!(op),
                        "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        child(&p, "operator"),
                        json!(t),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                child(&p, "operator"),
                json!(other),
                &["Equal", "Exists"],
            )),
        }
        let effect = opt_str(Some(t), "effect", &child(&p, "effect"), errs);
        if !effect.is_empty() {
            enum_str(
                effect,
                &child(&p, "effect"),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
                false,
                errs,
            );
        }
    }
}

pub(super) fn pod_volumes(
    spec: &Map<String, Value>,
    path: &str,
    errs: &mut Errs,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let vols_path = child(path, "volumes");
    let volumes = opt_arr(Some(spec), "volumes", &vols_path, errs);
    for (i, v) in obj_items(volumes, &vols_path, errs) {
        let p = index(&vols_path, i);
        let name_path = child(&p, "name");
        let name = opt_str(Some(v), "name", &name_path, errs);
        let sources: Vec<&str> = VOLUME_SOURCES
            .iter()
            .copied()
            .filter(|k| !absent(v.get(*k)))
            .collect();
        match sources.as_slice() {
            [] => errs.push(FieldError::required(&p, "must specify a volume type")),
            [_] => {}
            [_, second, ..] => {
                errs.push(FieldError::forbidden(
                    child(&p, second),
                    "may not specify more than 1 volume type",
                ));
            }
        }
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            for m in dns1123_label_errors(name) {
                errs.push(FieldError::invalid(&name_path, json!(name), m));
            }
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&name_path, json!(name)));
        }
        let required = [
            ("secret", "secretName"),
            ("configMap", "name"),
            ("persistentVolumeClaim", "claimName"),
            ("hostPath", "path"),
        ];
        for (source, field) in required {
            let sp = child(&p, source);
            if let Some(src) = opt_obj(Some(v), source, &sp, errs) {
                if opt_str(Some(src), field, &child(&sp, field), errs).is_empty() {
                    errs.push(FieldError::required(child(&sp, field), ""));
                }
                if let Some(mode) =
                    opt_int(Some(src), "defaultMode", &child(&sp, "defaultMode"), errs)
                    && !(0..=0o777).contains(&mode)
                {
                    errs.push(FieldError::invalid(
                        child(&sp, "defaultMode"),
                        json!(mode),
                        "must be a number between 0 and 0777 (octal), both inclusive",
                    ));
                }
            }
        }
        if let Some(hp) = v.get("hostPath").and_then(Value::as_object) {
            let t = opt_str(Some(hp), "type", &child(&p, "hostPath.type"), errs);
            let allowed = [
                "",
                "BlockDevice",
                "CharDevice",
                "Directory",
                "DirectoryOrCreate",
                "File",
                "FileOrCreate",
                "Socket",
            ];
            if !allowed.contains(&t) {
                errs.push(FieldError::not_supported(
                    child(&p, "hostPath.type"),
                    json!(t),
                    &allowed,
                ));
            }
        }
    }
    names
}

pub(super) fn containers_of(
    list: Option<&Vec<Value>>,
    path: &str,
    volumes: &BTreeSet<String>,
    names: &mut BTreeSet<String>,
    init: bool,
    errs: &mut Errs,
) {
    for (i, c) in obj_items(list, path, errs) {
        let p = index(path, i);
        let name_path = child(&p, "name");
        let name = opt_str(Some(c), "name", &name_path, errs);
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            for m in dns1123_label_errors(name) {
                errs.push(FieldError::invalid(&name_path, json!(name), m));
            }
        }
        if !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&name_path, json!(name)));
        }
        if opt_str(Some(c), "image", &child(&p, "image"), errs).is_empty() {
            errs.push(FieldError::required(child(&p, "image"), ""));
        }
        container_ports(c, &p, errs);
        container_env(c, &p, errs);
        volume_mounts(c, &p, volumes, errs);
        let pull = opt_str(
            Some(c),
            "imagePullPolicy",
            &child(&p, "imagePullPolicy"),
            errs,
        );
        enum_str(
            pull,
            &child(&p, "imagePullPolicy"),
            &["Always", "IfNotPresent", "Never"],
            true,
            errs,
        );
        let tmp = opt_str(
            Some(c),
            "terminationMessagePolicy",
            &child(&p, "terminationMessagePolicy"),
            errs,
        );
        enum_str(
            tmp,
            &child(&p, "terminationMessagePolicy"),
            &["File", "FallbackToLogsOnError"],
            true,
            errs,
        );
        for probe_name in ["livenessProbe", "readinessProbe", "startupProbe"] {
            let pp = child(&p, probe_name);
            if let Some(probe) = opt_obj(Some(c), probe_name, &pp, errs) {
                if init {
                    // Only restartable (sidecar) init containers may have probes.
                    if c.get("restartPolicy").and_then(Value::as_str) != Some("Always") {
                        errs.push(FieldError::forbidden(
                            &pp,
                            "may not be set for init containers without restartPolicy=Always",
                        ));
                    }
                }
                validate_probe(probe, &pp, errs);
                if probe_name != "readinessProbe"
                    && probe
                        .get("successThreshold")
                        .and_then(Value::as_i64)
                        .is_some_and(|n| n != 1)
                {
                    errs.push(FieldError::invalid(
                        child(&pp, "successThreshold"),
                        probe
                            .get("successThreshold")
                            .cloned()
                            .unwrap_or(Value::Null),
                        "must be 1",
                    ));
                }
            }
        }
        container_resources(c, &p, errs);
    }
}

pub(super) fn container_ports(c: &Map<String, Value>, p: &str, errs: &mut Errs) {
    let ports_path = child(p, "ports");
    let ports = opt_arr(Some(c), "ports", &ports_path, errs);
    let mut names = BTreeSet::new();
    for (i, port) in obj_items(ports, &ports_path, errs) {
        let pp = index(&ports_path, i);
        let name = opt_str(Some(port), "name", &child(&pp, "name"), errs);
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(FieldError::invalid(child(&pp, "name"), json!(name), m));
                }
            } else if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(child(&pp, "name"), json!(name)));
            }
        }
        match opt_int(
            Some(port),
            "containerPort",
            &child(&pp, "containerPort"),
            errs,
        ) {
            None | Some(0)
                if port
                    .get("containerPort")
                    .is_none_or(|v| v.is_null() || v.as_i64() == Some(0)) =>
            {
                errs.push(FieldError::required(child(&pp, "containerPort"), ""));
            }
            Some(n) if !(1..=65535).contains(&n) => {
                errs.push(FieldError::invalid(
                    child(&pp, "containerPort"),
                    json!(n),
                    port_range_error(),
                ));
            }
            _ => {}
        }
        if let Some(n) = opt_int(Some(port), "hostPort", &child(&pp, "hostPort"), errs)
            && n != 0
            && !(1..=65535).contains(&n)
        {
            errs.push(FieldError::invalid(
                child(&pp, "hostPort"),
                json!(n),
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
    }
}

pub(super) fn container_env(c: &Map<String, Value>, p: &str, errs: &mut Errs) {
    let env_path = child(p, "env");
    let env = opt_arr(Some(c), "env", &env_path, errs);
    for (i, e) in obj_items(env, &env_path, errs) {
        let ep = index(&env_path, i);
        let name = opt_str(Some(e), "name", &child(&ep, "name"), errs);
        if name.is_empty() {
            errs.push(FieldError::required(child(&ep, "name"), ""));
        } else if !name.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'=') {
            // RelaxedEnvironmentVariableValidation is on by default in v1.33.
            errs.push(FieldError::invalid(
                child(&ep, "name"),
                json!(name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        let from_path = child(&ep, "valueFrom");
        if let Some(from) = opt_obj(Some(e), "valueFrom", &from_path, errs) {
            let sources = [
                "fieldRef",
                "resourceFieldRef",
                "configMapKeyRef",
                "secretKeyRef",
            ];
            let n = sources.iter().filter(|k| !absent(from.get(**k))).count();
            if n == 0 {
                errs.push(FieldError::invalid(
                    &from_path,
                    json!(""),
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ));
            } else if n > 1 {
                errs.push(FieldError::invalid(
                    &from_path,
                    json!(""),
                    "may not have more than one field specified at a time",
                ));
            }
            if !opt_str(Some(e), "value", &child(&ep, "value"), errs).is_empty() {
                errs.push(FieldError::invalid(
                    &from_path,
                    json!(""),
                    "may not be specified when `value` is not empty",
                ));
            }
            for r in ["configMapKeyRef", "secretKeyRef"] {
                let rp = child(&from_path, r);
                if let Some(sel) = opt_obj(Some(from), r, &rp, errs) {
                    if opt_str(Some(sel), "name", &child(&rp, "name"), errs).is_empty() {
                        errs.push(FieldError::required(child(&rp, "name"), ""));
                    }
                    let k = opt_str(Some(sel), "key", &child(&rp, "key"), errs);
                    if k.is_empty() {
                        errs.push(FieldError::required(child(&rp, "key"), ""));
                    } else {
                        for m in config_key_errors(k) {
                            errs.push(FieldError::invalid(child(&rp, "key"), json!(k), m));
                        }
                    }
                }
            }
            let fp = child(&from_path, "fieldRef");
            if let Some(f) = opt_obj(Some(from), "fieldRef", &fp, errs)
                && opt_str(Some(f), "fieldPath", &child(&fp, "fieldPath"), errs).is_empty()
            {
                errs.push(FieldError::required(child(&fp, "fieldPath"), ""));
            }
        }
    }
}

pub(super) fn volume_mounts(
    c: &Map<String, Value>,
    p: &str,
    volumes: &BTreeSet<String>,
    errs: &mut Errs,
) {
    let mounts_path = child(p, "volumeMounts");
    let mounts = opt_arr(Some(c), "volumeMounts", &mounts_path, errs);
    let mut mount_points = BTreeSet::new();
    for (i, m) in obj_items(mounts, &mounts_path, errs) {
        let mp = index(&mounts_path, i);
        let name = opt_str(Some(m), "name", &child(&mp, "name"), errs);
        if name.is_empty() {
            errs.push(FieldError::required(child(&mp, "name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(FieldError {
                kind: crate::field_error::FieldErrorKind::NotFound,
                field: child(&mp, "name"),
                value: Some(json!(name)),
                detail: String::new(),
            });
        }
        let mount_path = opt_str(Some(m), "mountPath", &child(&mp, "mountPath"), errs);
        if mount_path.is_empty() {
            errs.push(FieldError::required(child(&mp, "mountPath"), ""));
        }
        if !mount_points.insert(mount_path.to_string()) {
            errs.push(FieldError::invalid(
                child(&mp, "mountPath"),
                json!(mount_path),
                "must be unique",
            ));
        }
    }
}

pub(super) fn validate_probe(probe: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let handlers: Vec<&str> = ["exec", "httpGet", "tcpSocket", "grpc"]
        .into_iter()
        .filter(|k| !absent(probe.get(*k)))
        .collect();
    match handlers.as_slice() {
        [] => errs.push(FieldError::required(path, "must specify a handler type")),
        [_] => {}
        [_, second, ..] => errs.push(FieldError::forbidden(
            child(path, second),
            "may not specify more than 1 handler type",
        )),
    }
    for k in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        nonnegative(Some(probe), k, &child(path, k), errs);
    }
    let hp = child(path, "httpGet");
    if let Some(h) = opt_obj(Some(probe), "httpGet", &hp, errs) {
        if opt_str(Some(h), "path", &child(&hp, "path"), errs).is_empty() {
            errs.push(FieldError::required(child(&hp, "path"), ""));
        }
        port_num_or_name(h.get("port"), &child(&hp, "port"), errs);
        let scheme = opt_str(Some(h), "scheme", &child(&hp, "scheme"), errs);
        enum_str(
            scheme,
            &child(&hp, "scheme"),
            &["HTTP", "HTTPS"],
            false,
            errs,
        );
    }
    let tp = child(path, "tcpSocket");
    if let Some(t) = opt_obj(Some(probe), "tcpSocket", &tp, errs) {
        port_num_or_name(t.get("port"), &child(&tp, "port"), errs);
    }
    let gp = child(path, "grpc");
    if let Some(g) = opt_obj(Some(probe), "grpc", &gp, errs) {
        let port = opt_int(Some(g), "port", &child(&gp, "port"), errs).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errs.push(FieldError::invalid(
                child(&gp, "port"),
                json!(port),
                port_range_error(),
            ));
        }
    }
}

/// `ValidatePortNumOrName`.
pub(super) fn port_num_or_name(v: Option<&Value>, path: &str, errs: &mut Errs) {
    match v {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(path, json!(n), port_range_error()));
            }
        }
        Some(Value::String(s)) => {
            for m in port_name_errors(s) {
                errs.push(FieldError::invalid(path, json!(s), m));
            }
        }
        None | Some(Value::Null) => {
            errs.push(FieldError::invalid(path, json!(0), port_range_error()))
        }
        Some(other) => wrong_type(errs, path, other, "integer or string"),
    }
}

pub(super) fn container_resources(c: &Map<String, Value>, p: &str, errs: &mut Errs) {
    let rp = child(p, "resources");
    let Some(res) = opt_obj(Some(c), "resources", &rp, errs) else {
        return;
    };
    let limits = opt_obj(Some(res), "limits", &child(&rp, "limits"), errs);
    let requests = opt_obj(Some(res), "requests", &child(&rp, "requests"), errs);
    for (list, name) in [(limits, "limits"), (requests, "requests")] {
        for (k, v) in list.into_iter().flatten() {
            let qp = key(&child(&rp, name), k);
            match crate::defaults::quantity_milli(v) {
                None => errs.push(FieldError::invalid(
                    &qp,
                    v.clone(),
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )),
                Some(q) if q < 0 => errs.push(FieldError::invalid(&qp, v.clone(), NEGATIVE)),
                Some(_) => {}
            }
        }
    }
    for (k, req) in requests.into_iter().flatten() {
        let limit = limits.and_then(|l| l.get(k));
        if let (Some(r), Some(l)) = (
            crate::defaults::quantity_milli(req),
            limit.and_then(crate::defaults::quantity_milli),
        ) && r > l
        {
            let show = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
            errs.push(FieldError::invalid(
                key(&child(&rp, "requests"), k),
                json!(show(req)),
                format!(
                    "must be less than or equal to {k} limit of {}",
                    limit.map(show).unwrap_or_default()
                ),
            ));
        }
    }
}
