//! Validation of custom resources against their schema, with kube-openapi's messages, then
//! the embedded-resource and list-type checks the apiserver adds.

use super::common::{Num, go_float, json_eq, json_type_name, not_supported, num_of};
use super::formats::format_ok;
use super::pruning::join_key;
use super::schema::{Additional, FieldSchema, Schema};
use crate::field_error::{FieldError, child, index, key};
use crate::json::go_quote;
use crate::validation::dns1035_label_errors;
use serde_json::{Map, Value};

/// Where errors are reported: kube-openapi names a value by its path from the validated root
/// (`spec.replicas`), and the server prefixes that with the validator's field path, which is
/// nil for whole objects (printed `<nil>` when the error names no field) and `status` for the
/// status subresource.
pub(super) struct Ctx<'a> {
    pub(super) prefix: Option<&'a str>,
}

impl Ctx<'_> {
    pub(super) fn field(&self, name: &str) -> String {
        let name = name.strip_prefix('.').unwrap_or(name);
        match (self.prefix, name.is_empty()) {
            (Some(p), true) => p.to_string(),
            (Some(p), false) => child(p, name),
            (None, true) => "<nil>".to_string(),
            (None, false) => name.to_string(),
        }
    }

    pub(super) fn whole(&self) -> String {
        self.prefix.unwrap_or("<nil>").to_string()
    }
}

/// Validates a custom resource against its schema, with the server's messages, e.g.
/// `spec.logLevel: Unsupported value: "Foo": supported values: "Normal", "Debug"` or
/// `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
/// "string"`. Also checks embedded resources (`apiVersion`/`kind`) and the uniqueness rules of
/// `x-kubernetes-list-type: set|map`. Call it after [`prune`] and [`apply_defaults`].
/// `x-kubernetes-validations` (CEL) rules are not evaluated. Type metadata (`apiVersion`/`kind`
/// matching the CRD) and root ObjectMeta are the caller's to check.
pub fn validate(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    check(schema, obj, "", &Ctx { prefix: None }, &mut out);
    embedded_checks(obj, schema, "", true, &mut out);
    list_checks(obj, schema, "", &mut out);
    out
}

/// Validates `obj.status` against the schema of `status`, as an update through the `/status`
/// subresource does: field paths start with `status.` but kube-openapi's messages name the
/// value relative to `status` (`status.replicas: Invalid value: "string": replicas in body
/// must be of type integer: "string"`).
pub fn validate_status(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    let (Some(status_schema), Some(status)) = (schema.status(), obj.get("status")) else {
        return out;
    };
    check(
        status_schema,
        status,
        "",
        &Ctx {
            prefix: Some("status"),
        },
        &mut out,
    );
    embedded_checks(status, status_schema, "status", false, &mut out);
    list_checks(status, status_schema, "status", &mut out);
    out
}

pub(super) fn type_invalid(ctx: &Ctx, path: &str, type_name: &str, value: &str) -> FieldError {
    FieldError::type_invalid(
        ctx.field(path),
        Value::String(value.to_string()),
        format!(
            "{path} in body must be of type {type_name}: {}",
            go_quote(value)
        ),
    )
}

pub(super) fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0
}

/// kube-openapi's type validator (with the server's `x-kubernetes-int-or-string` expansion).
pub(super) fn check_type(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let types: Vec<&str> = if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        vec![]
    } else {
        vec![s.type_.as_str()]
    };
    if types.is_empty() && s.format.is_empty() {
        return;
    }
    if x.is_null() {
        if !types.is_empty() && !s.nullable {
            out.push(type_invalid(ctx, path, &types.join(","), "null"));
        }
        return;
    }
    let sch_type = json_type_name(x);
    let value_format = match x {
        Value::Number(n) => match num_of(n) {
            Num::Int(_) => "int64",
            Num::Float(_) => "float64",
        },
        _ => "",
    };
    let contains = |t: &str| types.contains(&t);
    let is_float_int = match x {
        Value::Number(n) => match num_of(n) {
            Num::Float(f) => is_json_integer(f) && contains("integer"),
            Num::Int(_) => false,
        },
        _ => false,
    };
    let is_int_float = sch_type == "integer" && contains("number");
    let is_string_or_array = matches!(x, Value::String(_) | Value::Array(_));
    let format_checked = !s.format.is_empty() && !is_string_or_array;
    let matches_type_or_format =
        contains(sch_type) || value_format == s.format || is_float_int || is_int_float;
    if format_checked && !matches_type_or_format {
        out.push(type_invalid(ctx, path, &s.format, value_format));
        return;
    }
    let numeric = contains("number") || contains("integer");
    // A string format on a string (or array) value skips the type check entirely.
    let string_format = !s.format.is_empty() && is_string_or_array;
    if string_format && !numeric {
        return;
    }
    if !(contains(sch_type) || is_float_int || is_int_float) {
        out.push(type_invalid(ctx, path, &types.join(","), sch_type));
    }
}

/// One node of kube-openapi's `SchemaValidator.Validate`, in its order: type, allOf/anyOf/
/// oneOf/not, string, format, number, array, enum, object.
pub(super) fn check(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    check_type(s, x, path, ctx, out);
    if x.is_null() {
        check_enum(s, x, path, ctx, out);
        return;
    }
    check_junctors(s, x, path, ctx, out);
    match x {
        Value::String(v) => {
            check_string(s, v, path, ctx, out);
            if !s.format.is_empty() && !format_ok(&s.format, v) {
                out.push(FieldError::type_invalid(
                    ctx.field(path),
                    x.clone(),
                    format!(
                        "{path} in body must be of type {}: {}",
                        s.format,
                        go_quote(v)
                    ),
                ));
            }
        }
        Value::Number(n) => check_number(s, num_of(n), path, ctx, out),
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    check(items, v, &format!("{path}[{i}]"), ctx, out);
                }
            }
            let size = a.len() as i64;
            if let Some(min) = s.min_items.filter(|&m| size < m) {
                out.push(FieldError::invalid(
                    ctx.field(path),
                    Value::from(size),
                    format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(max) = s.max_items.filter(|&m| size > m) {
                out.push(too_many(ctx.field(path), size, max));
            }
            if s.unique_items
                && a.iter()
                    .enumerate()
                    .any(|(i, v)| a.iter().take(i).any(|u| json_eq(u, v)))
            {
                out.push(FieldError::invalid(
                    ctx.field(path),
                    Value::String(String::new()),
                    format!("{path} in body shouldn't contain duplicates"),
                ));
            }
        }
        _ => {}
    }
    check_enum(s, x, path, ctx, out);
    if let Value::Object(m) = x {
        check_object(s, m, path, ctx, out);
    }
}

/// `field.TooMany`. The shared FieldErrorKind has no "Too many" kind yet, so this is reported
/// as an Invalid value with the server's detail text.
pub(super) fn too_many(field: String, actual: i64, max: i64) -> FieldError {
    FieldError::invalid(
        field,
        Value::from(actual),
        format!("must have at most {max} items"),
    )
}

pub(super) fn check_string(s: &Schema, v: &str, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let len = v.chars().count() as i64;
    if let Some(max) = s.max_length.filter(|&m| len > m) {
        out.push(FieldError::too_long(
            ctx.field(path),
            Value::String(String::new()),
            max.max(0) as usize,
        ));
        return;
    }
    if let Some(min) = s.min_length.filter(|&m| len < m) {
        out.push(FieldError::invalid(
            ctx.field(path),
            Value::String(v.to_string()),
            format!("{path} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let (Some(p), Some(re)) = (&s.pattern, &s.regex)
        && !re.is_match(v)
    {
        out.push(FieldError::invalid(
            ctx.field(path),
            Value::String(v.to_string()),
            format!("{path} in body should match '{p}'"),
        ));
    }
}

pub(super) fn check_number(s: &Schema, n: Num, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let value = match n {
        Num::Int(i) => Value::from(i),
        Num::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
    };
    let invalid = |detail: String| FieldError::invalid(ctx.field(path), value.clone(), detail);
    if let Some(factor) = s.multiple_of {
        match n {
            Num::Int(i) => {
                let f = factor as i64;
                if f <= 0 {
                    out.push(invalid(format!(
                        "factor MultipleOf declared for {path} must be positive: {f}"
                    )));
                } else if i % f != 0 {
                    out.push(invalid(format!(
                        "{path} in body should be a multiple of {f}"
                    )));
                }
            }
            Num::Float(d) => {
                if factor <= 0.0 {
                    out.push(invalid(format!(
                        "factor MultipleOf declared for {path} must be positive: {}",
                        go_float(factor)
                    )));
                } else {
                    let mult = if factor < 1.0 {
                        1.0 / factor * d
                    } else {
                        d / factor
                    };
                    if !is_json_integer(mult) {
                        out.push(invalid(format!(
                            "{path} in body should be a multiple of {}",
                            go_float(factor)
                        )));
                    }
                }
            }
        }
    }
    if let Some(min) = s.minimum {
        let excl = s.exclusive_minimum;
        let (fails, shown) = match n {
            Num::Int(i) => {
                let m = min as i64;
                (if excl { i <= m } else { i < m }, m.to_string())
            }
            Num::Float(d) => (if excl { d <= min } else { d < min }, go_float(min)),
        };
        if fails {
            let op = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(invalid(format!("{path} in body should be {op} {shown}")));
        }
    }
    if let Some(max) = s.maximum {
        let excl = s.exclusive_maximum;
        let (fails, shown) = match n {
            Num::Int(i) => {
                let m = max as i64;
                (if excl { i >= m } else { i > m }, m.to_string())
            }
            Num::Float(d) => (if excl { d >= max } else { d > max }, go_float(max)),
        };
        if fails {
            let op = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(invalid(format!("{path} in body should be {op} {shown}")));
        }
    }
}

pub(super) fn check_enum(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let Some(values) = s.enum_.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    // A null never matches (Go's reflect sees no value to compare).
    if !x.is_null() && values.iter().any(|e| json_eq(e, x)) {
        return;
    }
    let shown: Vec<String> = values
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
        .collect();
    out.push(not_supported(ctx.field(path), x.clone(), &shown));
}

pub(super) fn check_object(
    s: &Schema,
    m: &Map<String, Value>,
    path: &str,
    ctx: &Ctx,
    out: &mut Vec<FieldError>,
) {
    let n = m.len() as i64;
    if let Some(min) = s.min_properties.filter(|&v| n < v) {
        out.push(FieldError::invalid(
            ctx.field(path),
            Value::from(n),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = s.max_properties.filter(|&v| n > v) {
        out.push(too_many(ctx.field(path), n, max));
    }
    match &s.additional {
        Some(Additional::Bool(false)) => {
            for k in m.keys().filter(|k| !s.properties.contains_key(*k)) {
                out.push(FieldError::invalid(
                    ctx.field(path),
                    Value::String(k.clone()),
                    format!("{path}.{k} in body is a forbidden property"),
                ));
            }
        }
        Some(Additional::Schema(ap)) => {
            for (k, v) in m.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                check(ap, v, &format!("{path}.{k}"), ctx, out);
            }
        }
        _ => {}
    }
    for (k, prop) in &s.properties {
        if let Some(v) = m.get(k) {
            check(prop, v, &join_key(path, k), ctx, out);
        }
    }
    for k in &s.required {
        if !m.contains_key(k) {
            out.push(FieldError::required(ctx.field(&format!("{path}.{k}")), ""));
        }
    }
}

/// allOf / anyOf / oneOf / not. kube-openapi keeps the errors of the "best" failing branch; it
/// ranks branches by a count of passed checks, approximated here by the fewest errors.
pub(super) fn check_junctors(
    s: &Schema,
    x: &Value,
    path: &str,
    ctx: &Ctx,
    out: &mut Vec<FieldError>,
) {
    let run = |sub: &Schema| {
        let mut errs = Vec::new();
        check(sub, x, path, ctx, &mut errs);
        errs
    };
    let composite =
        |detail: String| FieldError::invalid(ctx.whole(), Value::String(String::new()), detail);
    if !s.any_of.is_empty() {
        let mut best: Option<Vec<FieldError>> = None;
        let mut ok = false;
        for sub in &s.any_of {
            let errs = run(sub);
            if errs.is_empty() {
                ok = true;
                break;
            }
            if best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                best = Some(errs);
            }
        }
        if !ok {
            out.push(composite(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(path)
            )));
            out.extend(best.unwrap_or_default());
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Vec<FieldError>> = None;
        let mut valid = 0;
        for sub in &s.one_of {
            let errs = run(sub);
            if errs.is_empty() {
                valid += 1;
                best = None;
            } else if valid == 0 && best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                best = Some(errs);
            }
        }
        if valid != 1 {
            let extra = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            out.push(composite(format!(
                "{} must validate one and only one schema (oneOf). {extra}",
                go_quote(path)
            )));
            out.extend(best.unwrap_or_default());
        }
    }
    if !s.all_of.is_empty() {
        let mut valid = 0;
        for sub in &s.all_of {
            let errs = run(sub);
            if errs.is_empty() {
                valid += 1;
            }
            out.extend(errs);
        }
        if valid != s.all_of.len() {
            let extra = if valid == 0 { ". None validated" } else { "" };
            out.push(composite(format!(
                "{} must validate all the schemas (allOf){extra}",
                go_quote(path)
            )));
        }
    }
    if let Some(not) = &s.not
        && run(not).is_empty()
    {
        out.push(composite(format!(
            "{} must not validate the schema (not)",
            go_quote(path)
        )));
    }
}

/// `objectmeta.Validate`: embedded resources need a string `apiVersion` and `kind`.
pub(super) fn embedded_checks(
    x: &Value,
    s: &Schema,
    path: &str,
    is_root: bool,
    out: &mut Vec<FieldError>,
) {
    match x {
        Value::Object(m) => {
            if s.embedded && !is_root {
                if !m.contains_key("apiVersion") {
                    out.push(FieldError::required(
                        child(path, "apiVersion"),
                        "must not be empty",
                    ));
                }
                if !m.contains_key("kind") {
                    out.push(FieldError::required(
                        child(path, "kind"),
                        "must not be empty",
                    ));
                }
                if let Some(v) = m.get("apiVersion") {
                    let f = child(path, "apiVersion");
                    match v.as_str() {
                        None => out.push(FieldError::invalid(f, v.clone(), "must be a string")),
                        Some("") => {
                            out.push(FieldError::invalid(f, v.clone(), "must not be empty"))
                        }
                        Some(gv) if gv.matches('/').count() > 1 => out.push(FieldError::invalid(
                            f,
                            v.clone(),
                            format!("unexpected GroupVersion string: {gv}"),
                        )),
                        Some(_) => {}
                    }
                }
                if let Some(v) = m.get("kind") {
                    let f = child(path, "kind");
                    match v.as_str() {
                        None => out.push(FieldError::invalid(f, v.clone(), "must be a string")),
                        Some("") => {
                            out.push(FieldError::invalid(f, v.clone(), "must not be empty"))
                        }
                        Some(k) => {
                            let errs = dns1035_label_errors(&k.to_lowercase());
                            if !errs.is_empty() {
                                out.push(FieldError::invalid(
                                    f,
                                    v.clone(),
                                    format!(
                                        "may have mixed case, but should otherwise match: {}",
                                        errs.join(",")
                                    ),
                                ));
                            }
                        }
                    }
                }
            }
            for (k, v) in m {
                match s.field_schema(k) {
                    FieldSchema::Known(sub) if s.properties.contains_key(k) => {
                        embedded_checks(v, sub, &child(path, k), false, out)
                    }
                    FieldSchema::Known(sub) => embedded_checks(v, sub, &key(path, k), false, out),
                    _ => {}
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    embedded_checks(v, items, &index(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

/// `listtype.ValidateListSetsAndMaps`: duplicates in sets and duplicate keys in maps.
pub(super) fn list_checks(x: &Value, s: &Schema, path: &str, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            for (k, v) in m {
                if let Some(sub) = s.properties.get(k) {
                    list_checks(v, sub, &child(path, k), out);
                } else if let Some(Additional::Schema(ap)) = &s.additional {
                    list_checks(v, ap, &key(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            match s.list_type.as_deref() {
                Some("set") => {
                    for i in duplicate_indices(a) {
                        if let Some(v) = a.get(i) {
                            out.push(FieldError::duplicate(index(path, i), v.clone()));
                        }
                    }
                }
                Some("map") => list_map_checks(a, s, path, out),
                _ => {}
            }
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    list_checks(v, items, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

/// Indices of the second occurrence of each repeated value (later repeats are not reported).
pub(super) fn duplicate_indices(a: &[Value]) -> Vec<usize> {
    let mut seen: Vec<(&Value, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, v) in a.iter().enumerate() {
        match seen.iter_mut().find(|(u, _)| json_strict_eq(u, v)) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((v, 1)),
        }
    }
    out
}

/// Go compares set members with `==` on decoded values, so int64 1 and float64 1.0 differ.
pub(super) fn json_strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_of(x) == num_of(y),
        _ => a == b,
    }
}

pub(super) fn list_map_checks(a: &[Value], s: &Schema, path: &str, out: &mut Vec<FieldError>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(FieldError::invalid(
                index(path, i),
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Value::Object(m) = x {
                for k in &s.list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in duplicate_indices(&keys) {
        if let Some(k) = keys.get(i) {
            out.push(FieldError::duplicate(index(path, i), k.clone()));
        }
    }
}
