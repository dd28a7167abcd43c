//! Label selectors (`metav1.LabelSelector`) and their validation.

use super::*;

pub(super) enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// An empty selector: matches everything.
    Everything,
    Requirements(Vec<(String, String, Vec<String>)>),
    /// `LabelSelectorAsSelector` failed.
    Invalid,
}

pub(super) fn parse_selector(v: Option<&Value>) -> Selector {
    let sel = match v {
        None | Some(Value::Null) => return Selector::Nothing,
        Some(Value::Object(m)) => m,
        Some(_) => return Selector::Invalid,
    };
    let mut reqs = Vec::new();
    match sel.get("matchLabels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            for (k, v) in labels {
                let Some(v) = v.as_str() else {
                    return Selector::Invalid;
                };
                if !qualified_name_errors(k).is_empty() || !label_value_errors(v).is_empty() {
                    return Selector::Invalid;
                }
                reqs.push((k.clone(), "In".to_string(), vec![v.to_string()]));
            }
        }
        Some(_) => return Selector::Invalid,
    }
    match sel.get("matchExpressions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(exprs)) => {
            for e in exprs {
                let (Some(k), Some(op)) = (
                    e.get("key").and_then(Value::as_str),
                    e.get("operator").and_then(Value::as_str),
                ) else {
                    return Selector::Invalid;
                };
                let values: Vec<String> = match e.get("values") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(vs)) => {
                        let strs: Option<Vec<String>> =
                            vs.iter().map(|v| v.as_str().map(str::to_string)).collect();
                        let Some(strs) = strs else {
                            return Selector::Invalid;
                        };
                        strs
                    }
                    Some(_) => return Selector::Invalid,
                };
                let ok = match op {
                    "In" | "NotIn" => !values.is_empty(),
                    "Exists" | "DoesNotExist" => values.is_empty(),
                    _ => false,
                };
                if !ok || !qualified_name_errors(k).is_empty() {
                    return Selector::Invalid;
                }
                reqs.push((k.to_string(), op.to_string(), values));
            }
        }
        Some(_) => return Selector::Invalid,
    }
    if reqs.is_empty() {
        Selector::Everything
    } else {
        Selector::Requirements(reqs)
    }
}

pub(super) fn selector_matches(sel: &Selector, labels: Option<&Map<String, Value>>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    match sel {
        Selector::Nothing | Selector::Invalid => false,
        Selector::Everything => true,
        Selector::Requirements(reqs) => reqs.iter().all(|(k, op, values)| match op.as_str() {
            "In" => get(k).is_some_and(|v| values.iter().any(|x| x == v)),
            "NotIn" => get(k).is_none_or(|v| !values.iter().any(|x| x == v)),
            "Exists" => get(k).is_some(),
            "DoesNotExist" => get(k).is_none(),
            _ => false,
        }),
    }
}

/// `ValidateLabelSelector`.
pub(super) fn validate_label_selector(v: Option<&Value>, path: &str, errs: &mut Errs) {
    let Some(sel) = as_obj(v, path, errs) else {
        return;
    };
    validate_labels(sel.get("matchLabels"), &child(path, "matchLabels"), errs);
    let exprs_path = child(path, "matchExpressions");
    let exprs = opt_arr(Some(sel), "matchExpressions", &exprs_path, errs);
    for (i, e) in obj_items(exprs, &exprs_path, errs) {
        let p = index(&exprs_path, i);
        let op = opt_str(Some(e), "operator", &child(&p, "operator"), errs);
        let values_path = child(&p, "values");
        let values = opt_arr(Some(e), "values", &values_path, errs);
        let n_values = values.map_or(0, Vec::len);
        match op {
            "In" | "NotIn" => {
                if n_values == 0 {
                    errs.push(FieldError::required(
                        &values_path,
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if n_values > 0 {
                    errs.push(FieldError::forbidden(
                        &values_path,
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                child(&p, "operator"),
                json!(other),
                "not a valid selector operator",
            )),
        }
        let k = opt_str(Some(e), "key", &child(&p, "key"), errs);
        for m in qualified_name_errors(k) {
            errs.push(FieldError::invalid(child(&p, "key"), json!(k), m));
        }
        for (j, v) in str_items(values, &values_path, errs) {
            for m in label_value_errors(v) {
                errs.push(FieldError::invalid(index(&values_path, j), json!(v), m));
            }
        }
    }
}

pub(super) fn selector_is_empty(v: Option<&Value>) -> bool {
    let Some(Value::Object(sel)) = v else {
        return false;
    };
    let n = |k: &str| match sel.get(k) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    n("matchLabels") + n("matchExpressions") == 0
}
