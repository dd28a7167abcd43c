//! Writing ValidatingAdmissionPolicies and their bindings: the API server's defaults
//! (`SetDefaults_ValidatingAdmissionPolicySpec`, `_MatchResources`, `_Rule`, `_ParamRef`) and
//! validation (`ValidateValidatingAdmissionPolicy`, `...Binding`), expressions compiled with
//! the checks cel-go makes, so that a policy that cannot work is refused when written.

use crate::json::strings;
use serde_json::{Value, json};

use super::cel_eval::{self, Declarations};
use super::{GROUP, expression_of, items, meta_str};
use crate::field_error::{FieldError, child, index};
use crate::resources::ResourceType;

const POLICY_KIND: &str = "ValidatingAdmissionPolicy";
const BINDING_KIND: &str = "ValidatingAdmissionPolicyBinding";

fn is_policy(rt: &ResourceType) -> bool {
    rt.group == GROUP && rt.kind == POLICY_KIND
}

fn is_binding(rt: &ResourceType) -> bool {
    rt.group == GROUP && rt.kind == BINDING_KIND
}

/// The server's defaults for policies and bindings (`SetDefaults_ValidatingAdmissionPolicySpec`,
/// `_MatchResources`, `_Rule`, `_ParamRef`).
pub fn default(rt: &ResourceType, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let criteria = if is_policy(rt) {
        spec.entry("failurePolicy").or_insert_with(|| json!("Fail"));
        "matchConstraints"
    } else if is_binding(rt) {
        if let Some(p) = spec.get_mut("paramRef").and_then(Value::as_object_mut) {
            p.entry("parameterNotFoundAction")
                .or_insert_with(|| json!("Deny"));
        }
        "matchResources"
    } else {
        return;
    };
    let Some(m) = spec.get_mut(criteria).and_then(Value::as_object_mut) else {
        return;
    };
    m.entry("matchPolicy")
        .or_insert_with(|| json!("Equivalent"));
    m.entry("namespaceSelector").or_insert_with(|| json!({}));
    m.entry("objectSelector").or_insert_with(|| json!({}));
    for rules in ["resourceRules", "excludeResourceRules"] {
        for rule in m
            .get_mut(rules)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(r) = rule.as_object_mut() {
                r.entry("scope").or_insert_with(|| json!("*"));
            }
        }
    }
}

/// Validation of a policy or binding being written (`ValidateValidatingAdmissionPolicy`,
/// `...Binding`); other kinds have none here.
pub fn validate(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if is_policy(rt) {
        let meta_name = meta_str(obj, "name").to_owned();
        cel_eval::on_cel_thread(move || validate_policy_spec(&spec, &meta_name)).unwrap_or_else(
            || {
                vec![FieldError::invalid(
                    "spec",
                    Value::Null,
                    "internal error compiling CEL expressions",
                )]
            },
        )
    } else if is_binding(rt) {
        validate_binding_spec(&spec)
    } else {
        Vec::new()
    }
}

fn validate_policy_spec(spec: &Value, name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = "spec";
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required(child(path, "failurePolicy"), "")),
        Some("Fail" | "Ignore") => {}
        Some(other) => errs.push(FieldError::not_supported(
            child(path, "failurePolicy"),
            json!(other),
            &["Fail", "Ignore"],
        )),
    }
    let has_params = if let Some(pk) = spec.get("paramKind").filter(|p| !p.is_null()) {
        for field in ["apiVersion", "kind"] {
            if expression_of(pk, field).is_empty() {
                errs.push(FieldError::required(
                    child(&child(path, "paramKind"), field),
                    "",
                ));
            }
        }
        true
    } else {
        false
    };
    let mc_path = child(path, "matchConstraints");
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errs.push(FieldError::required(&mc_path, "")),
        Some(mc) => {
            validate_match_resources(mc, &mc_path, &mut errs);
            if items(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(child(&mc_path, "resourceRules"), ""));
            }
        }
    }
    let decl = Declarations {
        params: has_params,
        authorizer: true,
    };
    let compile = |expression: &str, decl: Declarations, at: String, errs: &mut Vec<_>| {
        if let Err(e) = cel_eval::compile(expression, decl) {
            errs.push(FieldError::invalid(at, json!(expression), e));
        }
    };
    let conditions = items(spec, "matchConditions");
    let cond_path = child(path, "matchConditions");
    if conditions.len() > 64 {
        errs.push(FieldError::too_many(
            &cond_path,
            conditions.len(),
            64,
            "items",
        ));
    }
    let mut names = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = index(&cond_path, i);
        let expression = expression_of(c, "expression");
        if expression.trim().is_empty() {
            errs.push(FieldError::required(child(&p, "expression"), ""));
        } else {
            compile(expression.trim(), decl, child(&p, "expression"), &mut errs);
        }
        let n = expression_of(c, "name");
        if n.is_empty() {
            errs.push(FieldError::required(child(&p, "name"), ""));
        } else {
            for m in crate::validation::qualified_name_errors(n) {
                errs.push(FieldError::invalid(child(&p, "name"), json!(n), m));
            }
            if names.contains(&n) {
                errs.push(FieldError::duplicate(child(&p, "name"), json!(n)));
            }
            names.push(n);
        }
    }
    for (i, v) in items(spec, "variables").iter().enumerate() {
        let p = index(&child(path, "variables"), i);
        let n = expression_of(v, "name");
        if n.trim().is_empty() {
            errs.push(FieldError::required(
                child(&p, "name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(n) {
            errs.push(FieldError::invalid(
                child(&p, "name"),
                json!(n),
                "must be a valid CEL identifier",
            ));
        }
        let expression = expression_of(v, "expression");
        if expression.trim().is_empty() {
            errs.push(FieldError::required(
                child(&p, "expression"),
                "expression is not specified",
            ));
        } else {
            compile(expression, decl, child(&p, "expression"), &mut errs);
        }
    }
    let validations = items(spec, "validations");
    let audit = items(spec, "auditAnnotations");
    if validations.is_empty() && audit.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required(child(path, "validations"), why));
        errs.push(FieldError::required(child(path, "auditAnnotations"), why));
    }
    for (i, v) in validations.iter().enumerate() {
        let p = index(&child(path, "validations"), i);
        let expression = expression_of(v, "expression");
        if expression.trim().is_empty() {
            errs.push(FieldError::required(
                child(&p, "expression"),
                "expression is not specified",
            ));
        } else {
            compile(expression, decl, child(&p, "expression"), &mut errs);
        }
        let message_expression = expression_of(v, "messageExpression");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(FieldError::invalid(
                child(&p, "messageExpression"),
                json!(message_expression),
                "must be non-empty if specified",
            ));
        } else if !message_expression.trim().is_empty() {
            let message_decl = Declarations {
                params: has_params,
                authorizer: false,
            };
            compile(
                message_expression,
                message_decl,
                child(&p, "messageExpression"),
                &mut errs,
            );
        }
        let message = expression_of(v, "message");
        if !message.is_empty() && message.trim().is_empty() {
            errs.push(FieldError::invalid(
                child(&p, "message"),
                json!(message),
                "message must be non-empty if specified",
            ));
        } else if message.trim().contains(['\n', '\r']) {
            errs.push(FieldError::invalid(
                child(&p, "message"),
                json!(message),
                "message must not contain line breaks",
            ));
        }
        if let Some(reason) = v.get("reason").and_then(Value::as_str)
            && !matches!(reason, "Forbidden" | "Invalid" | "RequestEntityTooLarge")
        {
            errs.push(FieldError::not_supported(
                child(&p, "reason"),
                json!(reason),
                &["Forbidden", "Invalid", "RequestEntityTooLarge"],
            ));
        }
    }
    for (i, a) in audit.iter().enumerate() {
        let p = index(&child(path, "auditAnnotations"), i);
        let key = expression_of(a, "key");
        for m in crate::validation::qualified_name_errors(&format!("{name}/{key}")) {
            errs.push(FieldError::invalid(child(&p, "key"), json!(key), m));
        }
        let expression = expression_of(a, "valueExpression");
        if expression.trim().is_empty() {
            errs.push(FieldError::required(
                child(&p, "valueExpression"),
                "valueExpression is not specified",
            ));
        } else {
            compile(
                expression.trim(),
                decl,
                child(&p, "valueExpression"),
                &mut errs,
            );
        }
    }
    errs
}

/// CEL's reserved words, which the API server refuses as variable names (found by the
/// real-control-plane tests: a variable named `namespace` is a 422 there).
const CEL_RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

fn is_cel_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !CEL_RESERVED.contains(&s)
}

fn validate_binding_spec(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = "spec";
    let policy = expression_of(spec, "policyName");
    if policy.is_empty() {
        errs.push(FieldError::required(child(path, "policyName"), ""));
    } else {
        for m in crate::validation::dns1123_subdomain_errors(policy) {
            errs.push(FieldError::invalid(
                child(path, "policyName"),
                json!(policy),
                m,
            ));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| !p.is_null()) {
        let p = child(path, "paramRef");
        let name = expression_of(pr, "name");
        let selector = pr.get("selector").filter(|s| !s.is_null());
        if !name.is_empty() && selector.is_some() {
            errs.push(FieldError::forbidden(
                child(&p, "name"),
                "name and selector are mutually exclusive",
            ));
        }
        if name.is_empty() && selector.is_none() {
            errs.push(FieldError::required(
                &p,
                "one of name or selector must be specified",
            ));
        }
        match pr.get("parameterNotFoundAction").and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required(
                child(&p, "parameterNotFoundAction"),
                "",
            )),
            Some("Deny" | "Allow") => {}
            Some(other) => errs.push(FieldError::not_supported(
                child(&p, "parameterNotFoundAction"),
                json!(other),
                &["Deny", "Allow"],
            )),
        }
    }
    if let Some(mr) = spec.get("matchResources").filter(|m| !m.is_null()) {
        validate_match_resources(mr, &child(path, "matchResources"), &mut errs);
    }
    let actions_path = child(path, "validationActions");
    let actions = strings(spec.get("validationActions"));
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        if !matches!(a.as_str(), "Deny" | "Warn" | "Audit") {
            errs.push(FieldError::not_supported(
                index(&actions_path, i),
                json!(a),
                &["Audit", "Deny", "Warn"],
            ));
        }
        if seen.contains(&a.as_str()) {
            errs.push(FieldError::duplicate(index(&actions_path, i), json!(a)));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errs.push(FieldError::invalid(
            &actions_path,
            json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(
            &actions_path,
            "at least one validation action is required",
        ));
    }
    errs
}

/// `validateMatchResources`, with `validateNamedRuleWithOperations` for both rule lists.
fn validate_match_resources(mc: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match mc.get("matchPolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required(child(path, "matchPolicy"), "")),
        Some("Exact" | "Equivalent") => {}
        Some(other) => errs.push(FieldError::not_supported(
            child(path, "matchPolicy"),
            json!(other),
            &["Equivalent", "Exact"],
        )),
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match mc.get(key) {
            None | Some(Value::Null) => errs.push(FieldError::required(child(path, key), "")),
            Some(sel) => validate_selector(sel, &child(path, key), errs),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(mc, key).iter().enumerate() {
            validate_rule(rule, &index(&child(path, key), i), errs);
        }
    }
}

fn validate_selector(sel: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let exprs_path = child(path, "matchExpressions");
    for (i, e) in items(sel, "matchExpressions").iter().enumerate() {
        let p = index(&exprs_path, i);
        let values = items(e, "values");
        match expression_of(e, "operator") {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                child(&p, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                child(&p, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                child(&p, "operator"),
                json!(other),
                "not a valid selector operator",
            )),
        }
        let key = expression_of(e, "key");
        for m in crate::validation::qualified_name_errors(key) {
            errs.push(FieldError::invalid(child(&p, "key"), json!(key), m));
        }
    }
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            for m in crate::validation::qualified_name_errors(k) {
                errs.push(FieldError::invalid(child(path, "matchLabels"), json!(k), m));
            }
            for m in crate::validation::label_value_errors(v.as_str().unwrap_or_default()) {
                errs.push(FieldError::invalid(
                    child(path, "matchLabels"),
                    v.clone(),
                    m,
                ));
            }
        }
    }
}

/// `validateRuleWithOperations` and `validateRule` (subresources allowed).
fn validate_rule(rule: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let operations = strings(rule.get("operations"));
    let ops_path = child(path, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(&ops_path, ""));
    }
    if operations.len() > 1 && operations.iter().any(|o| o == "*") {
        errs.push(FieldError::invalid(
            &ops_path,
            json!(operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !matches!(
            op.as_str(),
            "*" | "CREATE" | "UPDATE" | "DELETE" | "CONNECT"
        ) {
            errs.push(FieldError::not_supported(
                index(&ops_path, i),
                json!(op),
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = strings(rule.get(key));
        if list.is_empty() {
            errs.push(FieldError::required(child(path, key), ""));
        }
        if list.len() > 1 && list.iter().any(|v| v == "*") {
            errs.push(FieldError::invalid(
                child(path, key),
                json!(list),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, v) in strings(rule.get("apiVersions")).iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(
                index(&child(path, "apiVersions"), i),
                "",
            ));
        }
    }
    let resources = strings(rule.get("resources"));
    let res_path = child(path, "resources");
    if resources.is_empty() {
        errs.push(FieldError::required(&res_path, ""));
    }
    for (i, r) in resources.iter().enumerate() {
        if r.is_empty() {
            errs.push(FieldError::required(index(&res_path, i), ""));
        }
    }
    for (i, n) in strings(rule.get("resourceNames")).iter().enumerate() {
        for m in crate::validation::path_segment_errors(n) {
            errs.push(FieldError::invalid(
                index(&child(path, "resourceNames"), i),
                json!(n),
                m,
            ));
        }
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !matches!(scope, "*" | "Cluster" | "Namespaced")
    {
        errs.push(FieldError::not_supported(
            child(path, "scope"),
            json!(scope),
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::is_cel_identifier;

    #[test]
    fn variable_names_are_cel_identifiers_and_not_reserved_words() {
        for ok in ["provisioner", "_x", "driverNamespace", "a1"] {
            assert!(is_cel_identifier(ok), "{ok}");
        }
        // `namespace` is refused by the real API server (a reserved word), as are the others.
        for bad in ["namespace", "in", "true", "1a", "a-b", ""] {
            assert!(!is_cel_identifier(bad), "{bad}");
        }
    }
}
