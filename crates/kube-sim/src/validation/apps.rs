//! The `apps` group: Deployments, DaemonSets, StatefulSets, ReplicaSets.

use super::Errs;
use super::access::NEGATIVE;
use super::access::{
    absent, as_obj, enum_str, nonnegative, opt_int, opt_obj, opt_str, spec_of, wrong_type,
};
use super::names::regex_error;
use super::pods::pod_template_spec;
use super::selectors::validate_label_selector;
use crate::field_error::{FieldError, child};
use crate::selector::{LabelSelector, object_is_empty};
use serde_json::{Map, Value, json};

pub(super) fn deployment(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    nonnegative(Some(spec), "replicas", "spec.replicas", errs);
    let selector = required_selector(spec, "deployment", errs);
    match parsed_selector(selector, errs) {
        None => {}
        Some(sel) => replica_set_template(spec, sel.as_ref(), errs),
    }
    let strategy_path = "spec.strategy";
    let strategy = opt_obj(Some(spec), "strategy", strategy_path, errs);
    let kind = opt_str(strategy, "type", "spec.strategy.type", errs);
    let rolling = strategy
        .and_then(|s| s.get("rollingUpdate"))
        .filter(|v| !v.is_null());
    match kind {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match as_obj(rolling, "spec.strategy.rollingUpdate", errs) {
            None if rolling.is_none() => errs.push(FieldError::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            None => {}
            Some(ru) => {
                let p = "spec.strategy.rollingUpdate";
                let unavailable = ru.get("maxUnavailable");
                let surge = ru.get("maxSurge");
                positive_int_or_percent(unavailable, &child(p, "maxUnavailable"), errs);
                positive_int_or_percent(surge, &child(p, "maxSurge"), errs);
                if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                    errs.push(FieldError::invalid(
                        child(p, "maxUnavailable"),
                        unavailable.cloned().unwrap_or(Value::Null),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                not_more_than_100_percent(unavailable, &child(p, "maxUnavailable"), errs);
            }
        },
        _ => errs.push(FieldError::not_supported(
            strategy_path,
            Value::Object(strategy.cloned().unwrap_or_default()),
            &["Recreate", "RollingUpdate"],
        )),
    }
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    nonnegative(
        Some(spec),
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        errs,
    );
    if let Some(deadline) = opt_int(
        Some(spec),
        "progressDeadlineSeconds",
        "spec.progressDeadlineSeconds",
        errs,
    ) {
        if deadline < 0 {
            errs.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                json!(deadline),
                NEGATIVE,
            ));
        }
        let min_ready = spec
            .get("minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if deadline <= min_ready {
            errs.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                json!(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// The selector a Deployment, ReplicaSet or StatefulSet must have (Go names a ReplicaSet's
/// empty selector a deployment's).
fn required_selector<'a>(
    spec: &'a Map<String, Value>,
    kind: &str,
    errs: &mut Errs,
) -> Option<&'a Value> {
    let selector = spec.get("selector");
    if absent(selector) {
        errs.push(FieldError::required("spec.selector", ""));
    } else {
        validate_label_selector(selector, "spec.selector", errs);
        if object_is_empty(selector) {
            let message = format!("empty selector is invalid for {kind}");
            errs.push(FieldError::invalid(
                "spec.selector",
                selector.cloned().unwrap_or(Value::Null),
                message,
            ));
        }
    }
    selector
}

/// `LabelSelectorAsSelector`, reporting a selector it refuses; `Some(None)` for a nil one.
fn parsed_selector(selector: Option<&Value>, errs: &mut Errs) -> Option<Option<LabelSelector>> {
    let parsed = LabelSelector::from_object(selector).ok();
    if parsed.is_none() {
        let value = selector.cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid(
            "spec.selector",
            value,
            "invalid label selector",
        ));
    }
    parsed
}

/// `ValidatePodTemplateSpecForReplicaSet`, shared by Deployments and ReplicaSets.
pub(super) fn replica_set_template(
    spec: &Map<String, Value>,
    sel: Option<&LabelSelector>,
    errs: &mut Errs,
) {
    let empty = Map::new();
    let Some(template) = template_of(spec, &empty, errs) else {
        return;
    };
    check_selector_matches(template, sel, errs);
    pod_template_spec(template, "spec.template", errs);
    let tspec = template.get("spec").and_then(Value::as_object);
    let restart = tspec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            json!(restart),
            &["Always"],
        ));
    }
    if tspec.is_some_and(|s| !absent(s.get("activeDeadlineSeconds"))) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
}

pub(super) fn template_of<'a>(
    spec: &'a Map<String, Value>,
    empty: &'a Map<String, Value>,
    errs: &mut Errs,
) -> Option<&'a Map<String, Value>> {
    match spec.get("template") {
        None | Some(Value::Null) => Some(empty),
        Some(Value::Object(t)) => Some(t),
        Some(other) => {
            wrong_type(errs, "spec.template", other, "object");
            None
        }
    }
}

pub(super) fn check_selector_matches(
    template: &Map<String, Value>,
    sel: Option<&LabelSelector>,
    errs: &mut Errs,
) {
    if sel.is_some_and(LabelSelector::is_empty) {
        return;
    }
    let labels = template.get("metadata").and_then(|m| m.get("labels"));
    if !sel.is_some_and(|s| s.matches_labels(labels)) {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels.cloned().unwrap_or(Value::Null),
            "`selector` does not match template `labels`",
        ));
    }
}

pub(super) fn daemon_set(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let selector = spec.get("selector");
    validate_label_selector(selector, "spec.selector", errs);
    let empty_template = Map::new();
    let Some(template) = template_of(spec, &empty_template, errs) else {
        return;
    };
    if let Ok(sel) = LabelSelector::from_object(selector) {
        let labels = template.get("metadata").and_then(|m| m.get("labels"));
        if !sel.is_some_and(|s| s.matches_labels(labels)) {
            errs.push(FieldError::invalid(
                "spec.template.metadata.labels",
                labels.cloned().unwrap_or(Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if object_is_empty(selector) {
        errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "empty selector is invalid for daemonset",
        ));
    }
    pod_template_spec(template, "spec.template", errs);
    let tspec = template.get("spec").and_then(Value::as_object);
    let restart = tspec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            json!(restart),
            &["Always"],
        ));
    }
    if let Some(ads) = tspec
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .filter(|v| !v.is_null())
    {
        errs.push(FieldError::invalid(
            "spec.template.spec.activeDeadlineSeconds",
            ads.clone(),
            "activeDeadlineSeconds must be nil for daemonset",
        ));
    }
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    nonnegative(
        Some(spec),
        "templateGeneration",
        "spec.templateGeneration",
        errs,
    );
    let p = "spec.updateStrategy";
    let strategy = opt_obj(Some(spec), "updateStrategy", p, errs);
    match opt_str(strategy, "type", "spec.updateStrategy.type", errs) {
        "OnDelete" => {}
        "RollingUpdate" => {
            let ru_path = "spec.updateStrategy.rollingUpdate";
            match opt_obj(strategy, "rollingUpdate", ru_path, errs) {
                None => errs.push(FieldError::required(ru_path, "")),
                Some(ru) => {
                    let unavailable = ru.get("maxUnavailable");
                    let surge = ru.get("maxSurge");
                    let (up, sp) = (child(ru_path, "maxUnavailable"), child(ru_path, "maxSurge"));
                    positive_int_or_percent(unavailable, &up, errs);
                    positive_int_or_percent(surge, &sp, errs);
                    not_more_than_100_percent(unavailable, &up, errs);
                    not_more_than_100_percent(surge, &sp, errs);
                    let has_unavailable = int_or_percent_value(unavailable) != 0;
                    let has_surge = int_or_percent_value(surge) != 0;
                    if has_unavailable && has_surge {
                        errs.push(FieldError::invalid(
                            sp,
                            surge.cloned().unwrap_or(Value::Null),
                            "may not be set when maxUnavailable is non-zero",
                        ));
                    } else if !has_unavailable && !has_surge {
                        errs.push(FieldError::required(up, "cannot be 0 when maxSurge is 0"));
                    }
                }
            }
        }
        _ => errs.push(FieldError::not_supported(
            p,
            Value::Object(strategy.cloned().unwrap_or_default()),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    nonnegative(
        Some(spec),
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        errs,
    );
}

pub(super) fn stateful_set(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    enum_str(
        opt_str(
            Some(spec),
            "podManagementPolicy",
            "spec.podManagementPolicy",
            errs,
        ),
        "spec.podManagementPolicy",
        &["OrderedReady", "Parallel"],
        true,
        errs,
    );
    let strategy = opt_obj(Some(spec), "updateStrategy", "spec.updateStrategy", errs);
    match opt_str(strategy, "type", "spec.updateStrategy.type", errs) {
        "" => errs.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" | "RollingUpdate" => {}
        other => errs.push(FieldError::not_supported(
            "spec.updateStrategy",
            json!(other),
            &["OnDelete", "RollingUpdate"],
        )),
    }
    nonnegative(Some(spec), "replicas", "spec.replicas", errs);
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    let selector = required_selector(spec, "statefulset", errs);
    let empty_template = Map::new();
    let Some(template) = template_of(spec, &empty_template, errs) else {
        return;
    };
    match parsed_selector(selector, errs) {
        None => {}
        Some(sel) => check_selector_matches(template, sel.as_ref(), errs),
    }
    pod_template_spec(template, "spec.template", errs);
    let restart = template
        .get("spec")
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            json!(restart),
            &["Always"],
        ));
    }
}

pub(super) fn replica_set(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    nonnegative(Some(spec), "replicas", "spec.replicas", errs);
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    let selector = required_selector(spec, "deployment", errs);
    match parsed_selector(selector, errs) {
        None => {}
        Some(sel) => replica_set_template(spec, sel.as_ref(), errs),
    }
}

pub(super) enum IntOrString<'a> {
    Int(i64),
    Str(&'a str),
}

pub(super) fn int_or_string(v: Option<&Value>) -> Option<IntOrString<'_>> {
    match v {
        Some(Value::Number(n)) => n.as_i64().map(IntOrString::Int),
        Some(Value::String(s)) => Some(IntOrString::Str(s)),
        _ => None,
    }
}

pub(super) fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `ValidatePositiveIntOrPercent`.
pub(super) fn positive_int_or_percent(v: Option<&Value>, path: &str, errs: &mut Errs) {
    match (v, int_or_string(v)) {
        (_, Some(IntOrString::Str(s))) => {
            if percent(s).is_none() {
                errs.push(FieldError::invalid(
                    path,
                    json!(s),
                    regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                ));
            }
        }
        (_, Some(IntOrString::Int(n))) => {
            if n < 0 {
                errs.push(FieldError::invalid(path, json!(n), NEGATIVE));
            }
        }
        (None | Some(Value::Null), None) => {}
        (Some(other), None) => wrong_type(errs, path, other, "integer or string"),
    }
}

pub(super) fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match int_or_string(v) {
        Some(IntOrString::Int(n)) => n,
        Some(IntOrString::Str(s)) => percent(s).or_else(|| s.parse().ok()).unwrap_or(0),
        None => 0,
    }
}

pub(super) fn not_more_than_100_percent(v: Option<&Value>, path: &str, errs: &mut Errs) {
    if let Some(IntOrString::Str(s)) = int_or_string(v)
        && percent(s).is_some_and(|p| p > 100)
    {
        errs.push(FieldError::invalid(
            path,
            json!(s),
            "must not be greater than 100%",
        ));
    }
}
