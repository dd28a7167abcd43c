//! Label selectors (`metav1.LabelSelector`) and their validation.

use super::Errs;
use super::access::{as_obj, obj_items, opt_arr, opt_str, str_items};
use super::names::{label_value_errors, qualified_name_errors, validate_labels};
use crate::field_error::{FieldError, child, index};
use serde_json::{Value, json};

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
