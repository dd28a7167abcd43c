//! Strategic merge patch (`application/strategic-merge-patch+json`), following apimachinery's
//! `strategicpatch`: merge keys, `$patch` directives, `$setElementOrder`, `$retainKeys` and
//! `$deleteFromPrimitiveList`, with Go's error texts.

use super::error::{INVALID_MESSAGE, PatchError, json_kind};
use crate::builtin_lists::BuiltinLists;
use crate::list_types::ListKind;
use serde_json::{Map, Value};

pub(super) const DIRECTIVE: &str = "$patch";
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";
pub(super) const RETAIN_KEYS: &str = "$retainKeys";

/// Where strategic merge gets each field's patch strategy from. Paths are field names from the
/// object root, list indices omitted.
pub(crate) trait SmpSchema {
    /// The strategy of the list at `path`.
    fn list_strategy(&self, path: &[&str]) -> ListKind;
    /// Whether the struct at `path` has `patchStrategy=replace`.
    fn replaces_object(&self, path: &[&str]) -> bool;
}

impl SmpSchema for BuiltinLists {
    fn list_strategy(&self, path: &[&str]) -> ListKind {
        self.smp_strategy(path)
    }

    fn replaces_object(&self, path: &[&str]) -> bool {
        self.smp_replaces_object(path)
    }
}

/// How `strategicpatch` fails; mapped onto the server's answers by [`SmpError::into_patch`].
#[derive(Debug)]
pub(super) enum SmpError {
    /// The `mergepatch` errors the server turns into 400s.
    BadRequest(String),
    /// The ones it turns into 422s with the generic message, which hides the cause.
    Unprocessable,
    /// Everything else: passed through as a 500 with the error's text.
    Other(String),
}

impl SmpError {
    pub(super) fn into_patch(self) -> PatchError {
        match self {
            SmpError::BadRequest(m) => PatchError::BadRequest(m),
            SmpError::Unprocessable => PatchError::Invalid(INVALID_MESSAGE.to_string()),
            SmpError::Other(m) => PatchError::Internal(m),
        }
    }
}

pub(super) type SmpResult<T> = Result<T, SmpError>;

/// Applies a strategic merge patch (`application/strategic-merge-patch+json`) to a built-in
/// object, following apimachinery's `strategicpatch` as the server calls it
/// (`MergeParallelList` and `IgnoreUnmatchedNulls` on).
///
/// Maps merge recursively and `null` deletes a key; lists follow `lists.smp_strategy`:
/// merged by key (patch items update the matching live item or are added), unioned as a
/// set, or replaced. The directives `$patch` (`replace`, `delete`, and in lists `merge`,
/// which is refused), `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` and
/// `$retainKeys` are honoured, and the order of merged lists is the one the real code
/// produces. Directive keys that the real server would lose when decoding the result into a
/// typed object are removed from the result. The caller must refuse strategic merge for
/// custom resources (415) before calling this.
pub fn strategic_merge_patch(
    target: &Value,
    patch: &Value,
    lists: &BuiltinLists,
) -> Result<Value, PatchError> {
    strategic_merge_patch_with(target, patch, lists)
}

/// [`strategic_merge_patch`] over any schema (tests use the fake one of apimachinery's suite).
pub(crate) fn strategic_merge_patch_with(
    target: &Value,
    patch: &Value,
    schema: &impl SmpSchema,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(p) => p.clone(),
        // Decoding `null` into the patch map leaves it nil: nothing to merge.
        Value::Null => return Ok(target.clone()),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    let Value::Object(original) = target else {
        return Err(PatchError::Internal(
            mergepatch_bad_arg_type(MAP_TYPE, target).to_string(),
        ));
    };
    let merged = merge_map(original.clone(), patch, &mut Vec::new(), schema)
        .map_err(SmpError::into_patch)?;
    let mut out = Value::Object(merged);
    strip_directive_keys(&mut out);
    Ok(out)
}

/// The Go type names `reflect.TypeOf(...).String()` gives decoded JSON values.
pub(super) const MAP_TYPE: &str = "map[string]interface {}";
pub(super) const SLICE_TYPE: &str = "[]interface {}";

pub(super) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => SLICE_TYPE,
        Value::Object(_) => MAP_TYPE,
    }
}

/// `mergepatch.ErrBadArgType`.
pub(super) fn mergepatch_bad_arg_type(expected: &str, actual: &Value) -> String {
    format!("expected a {expected}, but received a {}", go_type(actual))
}

pub(super) fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::Other(mergepatch_bad_arg_type(expected, actual))
}

/// `mergepatch.ErrNoMergeKey`.
pub(super) fn no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Other(format!(
        "map: {} does not contain declared merge key: {key}",
        go_map(m)
    ))
}

/// `mergepatch.ErrBadPatchType`.
pub(super) fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Other(format!(
        "unknown patch type: {} in map: {}",
        go_percent_s(directive),
        go_map(m)
    ))
}

/// Go's `%v` of a decoded JSON value, as in error messages.
pub(super) fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => go_float(f),
            (None, None) => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => go_list(a),
        Value::Object(m) => go_map(m),
    }
}

pub(super) fn go_list(a: &[Value]) -> String {
    let items: Vec<String> = a.iter().map(go_v).collect();
    format!("[{}]", items.join(" "))
}

/// `%v` of a map: keys sorted, as `fmt` prints maps.
pub(super) fn go_map(m: &Map<String, Value>) -> String {
    let mut items: Vec<(&String, &Value)> = m.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    let items: Vec<String> = items
        .into_iter()
        .map(|(k, v)| format!("{k}:{}", go_v(v)))
        .collect();
    format!("map[{}]", items.join(" "))
}

/// `%s` of a directive value: strings print plainly, other scalars as Go's bad-verb form.
pub(super) fn go_percent_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_string(),
        Value::Bool(_) | Value::Number(_) => format!("%!s({}={})", go_type(v), go_v(v)),
        Value::Array(_) | Value::Object(_) => go_v(v),
    }
}

/// `%v` of a float64 (`strconv` %g, shortest): exponent form below 1e-4 and from 1e6 on.
pub(super) fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    if (-4..6).contains(&exp) {
        return f.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// `strategicpatch.mergeMap`.
pub(super) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    path: &mut Vec<String>,
    schema: &impl SmpSchema,
) -> SmpResult<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        if directive == "replace" {
            patch.remove(DIRECTIVE);
            return Ok(patch);
        }
        if directive == "delete" {
            return Ok(Map::new());
        }
        // `$patch: merge` is not accepted on maps either.
        return Err(bad_patch_type(directive, &patch));
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, path, schema)?;

    for (key, patch_v) in patch {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)?, true)
        } else {
            (key, false)
        };
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(slot) = original.get_mut(&key) else {
            if !is_delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v);
                if let Some(v) = remove_directives(v) {
                    original.insert(key, v);
                }
            }
            continue;
        };
        path.push(key);
        let result = merge_field(slot, patch_v, is_delete_list, path, schema);
        let key = path.pop().unwrap_or_default();
        if !result? {
            original.remove(&key);
        }
    }
    Ok(original)
}

/// Merges `patch_v` into the existing field `slot` at `path`; `Ok(false)` when the field must
/// go (its new value was a directive-only map).
pub(super) fn merge_field(
    slot: &mut Value,
    patch_v: Value,
    is_delete_list: bool,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<bool> {
    let refs: Vec<&str> = path.iter().map(String::as_str).collect();
    match (slot, patch_v) {
        (Value::Object(orig), Value::Object(p)) => {
            if schema.replaces_object(&refs) {
                *orig = p;
            } else {
                let taken = std::mem::take(orig);
                *orig = merge_map(taken, p, &mut path.to_vec(), schema)?;
            }
            Ok(true)
        }
        (Value::Array(orig), Value::Array(p)) => {
            let strategy = schema.list_strategy(&refs);
            let taken = std::mem::take(orig);
            *orig = merge_slice_handler(taken, p, &strategy, is_delete_list, path, schema)?.0;
            Ok(true)
        }
        (slot, patch_v) => {
            // Same Go type: the scalar branch, which even a `$deleteFromPrimitiveList` key
            // reaches and overwrites with.
            if same_scalar_type(slot, &patch_v) {
                *slot = patch_v;
                return Ok(true);
            }
            if is_delete_list {
                return Ok(true);
            }
            let mut v = patch_v;
            discard_nulls(&mut v);
            match remove_directives(v) {
                Some(v) => {
                    *slot = v;
                    Ok(true)
                }
                None => Ok(false),
            }
        }
    }
}

/// Whether two scalars have the same Go type once decoded (int64 and float64 differ).
pub(super) fn same_scalar_type(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Bool(_), Value::Bool(_)) | (Value::String(_), Value::String(_)) => true,
        (Value::Number(x), Value::Number(y)) => x.as_i64().is_some() == y.as_i64().is_some(),
        _ => false,
    }
}

/// `strategicpatch.extractKey`: the field name after `<prefix>/`.
pub(super) fn extract_key(s: &str, prefix: &str) -> SmpResult<String> {
    match s.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => Err(SmpError::BadRequest(
            "invalid patch format of primitive list".to_string(),
        )),
        _ => Err(SmpError::BadRequest(
            "invalid patch format of setElementOrder list".to_string(),
        )),
    }
}

/// `strategicpatch.discardNullValuesFromPatch`.
pub(super) fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// `strategicpatch.removeDirectives`: `None` when the value itself is a `$patch` map.
pub(super) fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            let mut out = Map::new();
            for (k, v) in m {
                if let Some(v) = remove_directives(v) {
                    out.insert(k, v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// Removes the directive keys a typed decode of the result would drop, so that a stored object
/// never carries them (they can survive in values the patch replaced or added verbatim).
pub(super) fn strip_directive_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| {
                k != DIRECTIVE
                    && k != RETAIN_KEYS
                    && !k.starts_with("$setElementOrder/")
                    && !k.starts_with("$deleteFromPrimitiveList/")
            });
            m.values_mut().for_each(strip_directive_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directive_keys),
        _ => {}
    }
}

/// `strategicpatch.applyRetainKeysDirective`.
pub(super) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> SmpResult<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || SmpError::BadRequest("invalid patch format of retainKeys".to_string());
    let Value::Array(retain) = retain else {
        return Err(bad());
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(bad());
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// The merge key of a strategic-merge list strategy ("" for sets and atomic lists).
pub(super) fn merge_key_of(strategy: &ListKind) -> &str {
    match strategy {
        ListKind::Map(keys) => keys.first().map_or("", String::as_str),
        _ => "",
    }
}

/// `strategicpatch.mergePatchIntoOriginal`: merges every `$setElementOrder/<field>` list with
/// its field and orders the result as the directive says.
pub(super) fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<()> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type(SLICE_TYPE, &order));
        };
        let field = extract_key(&directive, SET_ELEMENT_ORDER)?;
        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg_type(SLICE_TYPE, other)),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg_type(SLICE_TYPE, other)),
        };
        let mut sub_path = path.to_vec();
        sub_path.push(field.clone());
        let refs: Vec<&str> = sub_path.iter().map(String::as_str).collect();
        let strategy = schema.list_strategy(&refs);
        let merge_key = merge_key_of(&strategy);
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or_default(),
            &order,
            merge_key,
        )?;
        // Go orders the result against its own view of the live list, which the merge has
        // edited in place (deleted items shifted out, new items written into the freed
        // slots); `live_view` reproduces that view.
        let (merged, live_view) = match (&original_list, &patch_list) {
            (Some(o), None) => (o.clone(), o.clone()),
            (None, Some(p)) => (
                p.iter().cloned().filter_map(remove_directives).collect(),
                Vec::new(),
            ),
            (Some(o), Some(p)) => {
                merge_slice_handler(o.clone(), p.clone(), &strategy, false, &sub_path, schema)?
            }
            (None, None) => continue,
        };
        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &order)
        } else {
            partition_maps(merged, &order, merge_key)?
        };
        let original_list = original_list.unwrap_or_default();
        let kind =
            slice_element_type(&[&original_list, patch_list.as_deref().unwrap_or_default()])?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &order,
            &live_view,
            merge_key,
            kind,
        )?;
        original.insert(field.clone(), Value::Array(ordered));
        patch.remove(&field);
    }
    Ok(())
}

/// `strategicpatch.validatePatchWithSetOrderList`: the patch list must follow the directive's
/// order (items marked with `$patch` aside).
pub(super) fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> SmpResult<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut kept = Vec::new();
        for v in patch_list {
            let Value::Object(m) = v else {
                return Err(bad_arg_type(MAP_TYPE, v));
            };
            if m.get(DIRECTIVE).is_none_or(|d| d != "delete") {
                kept.push(v);
            }
        }
        kept
    };
    let (mut pi, mut oi) = (0, 0);
    while let (Some(p), Some(o)) = (non_delete.get(pi), order.get(oi)) {
        if p.as_object().is_some_and(|m| m.contains_key(DIRECTIVE)) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(p, o, merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(SmpError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_list(patch_list),
            go_list(order)
        )));
    }
    Ok(())
}

/// `strategicpatch.mergeKeyValueEqual`.
pub(super) fn merge_key_value_equal(
    left: &Value,
    right: &Value,
    merge_key: &str,
) -> SmpResult<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else {
        return Err(bad_arg_type(MAP_TYPE, left));
    };
    let Value::Object(r) = right else {
        return Err(bad_arg_type(MAP_TYPE, right));
    };
    let Some(lv) = l.get(merge_key) else {
        return Err(no_merge_key(l, merge_key));
    };
    let Some(rv) = r.get(merge_key) else {
        return Err(no_merge_key(r, merge_key));
    };
    Ok(lv == rv)
}

/// `strategicpatch.mergeSliceHandler`: the merged list, and what the caller's view of the live
/// list holds afterwards (see [`merge_slice`]).
pub(super) fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: &ListKind,
    is_delete_list: bool,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    if matches!(strategy, ListKind::Atomic) && !is_delete_list {
        return Ok((patch, original));
    }
    // `Name()` of the item schema in Go's message: the Go kind of the element type.
    let item_kind = if matches!(strategy, ListKind::Set) {
        "string"
    } else {
        "struct"
    };
    merge_slice(
        original,
        patch,
        merge_key_of(strategy),
        item_kind,
        is_delete_list,
        path,
        schema,
    )
}

/// The Go type shared by a list's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ElemKind {
    Map,
    String,
    Bool,
    Int,
    Float,
}

/// `strategicpatch.sliceElementType`.
pub(super) fn slice_element_type(slices: &[&[Value]]) -> SmpResult<ElemKind> {
    let mut seen: Option<ElemKind> = None;
    for v in slices.iter().flat_map(|s| s.iter()) {
        let kind = match v {
            Value::Object(_) => Some(ElemKind::Map),
            Value::String(_) => Some(ElemKind::String),
            Value::Bool(_) => Some(ElemKind::Bool),
            Value::Number(n) if n.as_i64().is_some() => Some(ElemKind::Int),
            Value::Number(_) => Some(ElemKind::Float),
            Value::Array(_) if seen.is_none() => {
                // mergepatch.ErrNoListOfLists ("lists of lists are not supported").
                return Err(SmpError::Unprocessable);
            }
            Value::Array(_) | Value::Null => None,
        };
        match (seen, kind) {
            // A leading null makes Go call Kind() on a nil reflect.Type.
            (None, None) => {
                return Err(SmpError::Other(
                    "runtime error: invalid memory address or nil pointer dereference".to_string(),
                ));
            }
            (None, Some(k)) => seen = Some(k),
            (Some(prev), Some(k)) if prev == k => {}
            _ => {
                let lists: Vec<String> = slices.iter().map(|s| go_list(s)).collect();
                return Err(SmpError::Other(format!(
                    "list element types are not identical: [{}]",
                    lists.join(" ")
                )));
            }
        }
    }
    seen.ok_or_else(|| SmpError::Other("no elements in any of the given slices".to_string()))
}

/// `strategicpatch.mergeSlice`. Besides the merged list it returns what a Go caller holding
/// the original slice sees in it afterwards: deletions shift items left in place (the last
/// slot keeping its old value) and new items are appended into the slots that frees.
pub(super) fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    item_kind: &str,
    is_delete_list: bool,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    if original.is_empty() && patch.is_empty() {
        return Ok((original, Vec::new()));
    }
    let kind = slice_element_type(&[&original, &patch])?;
    if kind != ElemKind::Map {
        if is_delete_list {
            let kept = original
                .iter()
                .filter(|v| !patch.contains(v))
                .cloned()
                .collect();
            return Ok((kept, original));
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (patch_items, server_only) = partition_primitives(merged, &patch);
        let ordered =
            normalize_element_order(patch_items, server_only, &patch, &original, "", kind)?;
        return Ok((ordered, original));
    }
    if merge_key.is_empty() {
        return Err(SmpError::Other(format!(
            "cannot merge lists without merge key for {item_kind}"
        )));
    }
    let mut view = original.clone();
    let (original, patch, replaced) =
        merge_slice_with_special_elements(original, patch, merge_key, &mut view)?;
    let merged =
        merge_slice_without_special_elements(original.clone(), &patch, merge_key, path, schema)?;
    if !replaced {
        // Appends land in the caller's slice while they fit in the slots deletions freed.
        let appended = merged.get(original.len()..).unwrap_or_default();
        for (slot, item) in view.iter_mut().skip(original.len()).zip(appended) {
            *slot = item.clone();
        }
    }
    let (patch_items, server_only) = partition_maps(merged, &patch, merge_key)?;
    let ordered =
        normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)?;
    Ok((ordered, view))
}

/// `strategicpatch.mergeSliceWithSpecialElements`: applies `$patch: delete` items to the
/// original (and to the caller's `view` of it, as Go's in-place deletion does), and
/// `$patch: replace` by making the rest of the patch the original. Returns the new original,
/// the patch items left to merge, and whether the list was replaced.
pub(super) fn merge_slice_with_special_elements(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    view: &mut [Value],
) -> SmpResult<(Vec<Value>, Vec<Value>, bool)> {
    let mut original = original;
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type(MAP_TYPE, &v));
        };
        match m.get(DIRECTIVE) {
            None => plain.push(v),
            Some(d) if d == "delete" => {
                let Some(value) = m.get(merge_key) else {
                    return Err(no_merge_key(m, merge_key));
                };
                while let Some(i) = original
                    .iter()
                    .position(|o| o.get(merge_key) == Some(value))
                {
                    original.remove(i);
                    // Go's append(s[:i], s[i+1:]...) shifts the rest left in the shared array
                    // and leaves the last slot as it was.
                    let live = original.len() + 1;
                    let last = view.get(live - 1).cloned();
                    if let (Some(shifted), Some(last)) = (view.get_mut(i..live), last) {
                        shifted.rotate_left(1);
                        if let Some(slot) = shifted.last_mut() {
                            *slot = last;
                        }
                    }
                }
            }
            Some(d) if d == "replace" => replace = true,
            Some(d) if d == "merge" => {
                return Err(SmpError::Other(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            Some(d) => return Err(bad_patch_type(d, m)),
        }
    }
    if replace {
        Ok((plain, Vec::new(), true))
    } else {
        Ok((original, plain, false))
    }
}

/// `strategicpatch.findMapInSliceBasedOnKeyValue`: the index of the first map whose merge key
/// has `value`.
pub(super) fn find_by_key(
    list: &[Value],
    merge_key: &str,
    value: &Value,
) -> SmpResult<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(SmpError::Other(format!("value for key {i} is not a map")));
        };
        if m.get(merge_key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `strategicpatch.mergeSliceWithoutSpecialElements`: merges each patch item into the live
/// item with the same key, or appends it.
pub(super) fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<Vec<Value>> {
    for v in patch {
        let Value::Object(item) = v else {
            return Err(bad_arg_type(MAP_TYPE, v));
        };
        let Some(value) = item.get(merge_key) else {
            return Err(no_merge_key(item, merge_key));
        };
        let found = find_by_key(&original, merge_key, value)?;
        match found.and_then(|i| original.get_mut(i)) {
            Some(Value::Object(live)) => {
                let taken = std::mem::take(live);
                *live = merge_map(taken, item.clone(), &mut path.to_vec(), schema)?;
            }
            _ => original.push(v.clone()),
        }
    }
    Ok(original)
}

/// `strategicpatch.partitionPrimitivesByPresentInList`.
pub(super) fn partition_primitives(merged: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    merged.into_iter().partition(|v| by.contains(v))
}

/// `strategicpatch.partitionMapsByPresentInList`.
pub(super) fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for v in merged {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type(MAP_TYPE, &v));
        };
        let Some(value) = m.get(merge_key) else {
            return Err(no_merge_key(m, merge_key));
        };
        if find_by_key(by, merge_key, value)?.is_some() {
            in_patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((in_patch, server_only))
}

/// `strategicpatch.normalizeElementOrder`: patch items in patch order, live-only items in live
/// order, then interleaved by [`merge_sorted_slice`].
pub(super) fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> SmpResult<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted_slice(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

/// `strategicpatch.normalizeSliceOrder`: a stable sort by position in `order`; `$patch: delete`
/// items go last.
pub(super) fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> SmpResult<Vec<Value>> {
    let mut to_sort = to_sort;
    let mut to_delete = Vec::new();
    if kind == ElemKind::Map {
        for v in to_sort.iter().chain(order.iter()) {
            let Value::Object(m) = v else {
                return Err(bad_arg_type(MAP_TYPE, v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = to_sort
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).is_none_or(|d| d != "delete"));
        to_sort = keep;
        to_delete = delete;
    }
    // Every item is in `order` on the paths the server takes; an absent one sorts last
    // rather than reproducing Go's inconsistent comparator.
    to_sort.sort_by_key(|v| index_in(order, v, merge_key, kind).unwrap_or(usize::MAX));
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `strategicpatch.index`: position of `item` in `list`, by merge key for maps (a missing or
/// null key compares as Go's nil).
pub(super) fn index_in(
    list: &[Value],
    item: &Value,
    merge_key: &str,
    kind: ElemKind,
) -> Option<usize> {
    if kind == ElemKind::Map {
        let key_of = |v: &Value| v.get(merge_key).filter(|k| !k.is_null()).cloned();
        let wanted = key_of(item);
        list.iter().position(|v| key_of(v) == wanted)
    } else {
        list.iter().position(|v| v == item)
    }
}

/// `strategicpatch.mergeSortedSlice`: inserts live-only items (`left`) among patch items
/// (`right`); a live-only item goes first only if both are live and it came first in the live
/// list, so items new in the patch come before the live items they are compared with.
pub(super) fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_in(server_order, l, merge_key, kind),
                    index_in(server_order, r, merge_key, kind),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}
