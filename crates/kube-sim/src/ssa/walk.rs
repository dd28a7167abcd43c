//! Walks over values without a Go schema (structured-merge-diff's typed package): the field
//! set of an object, merging an applied configuration, removing fields an applier dropped.

use super::fieldpath::{FieldSet, PathElement, path_display};
use super::text::{go_json, go_quote};
use crate::list_types::{ListKind, ListTypes};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn list_kind(lists: &dyn ListTypes, names: &[String]) -> ListKind {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    lists.list_kind(&refs)
}

/// The path element naming `item` inside an associative list of `kind`.
pub(super) fn list_item_pe(kind: &ListKind, item: &Value) -> Result<PathElement, String> {
    match kind {
        ListKind::Map(keys) if !keys.is_empty() => {
            let m = match item {
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into());
                }
                Value::Object(m) => m,
                _ => {
                    return Err(
                        "associative list with keys may not have non-map elements".to_string()
                    );
                }
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(v) = m.get(key) {
                    fields.push((key.clone(), go_json(v)));
                } else if key == "protocol" {
                    // The only list-map key with an OpenAPI default in the built-in types
                    // (ContainerPort, ServicePort): the server keys such items as TCP.
                    fields.push((key.clone(), "\"TCP\"".to_string()));
                } else {
                    return Err(format!(
                        "associative list with keys has an element that omits key field {} \
                         (and doesn't have default value)",
                        go_quote(key)
                    ));
                }
            }
            fields.sort();
            Ok(PathElement::Key(fields))
        }
        ListKind::Map(_) | ListKind::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => {
                Err("not supported: associative list with lists as elements".to_string())
            }
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            scalar => Ok(PathElement::Value(go_json(scalar))),
        },
        ListKind::Atomic => Err("invalid indexing of non-associative list".to_string()),
    }
}

/// Validates `v` the way converting it to a typed value does; returns `path: message` errors.
pub(super) fn validate(
    v: &Value,
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
    path: &str,
    allow_duplicates: bool,
    errs: &mut Vec<String>,
) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                names.push(k.clone());
                validate(
                    child,
                    lists,
                    names,
                    &format!("{path}.{k}"),
                    allow_duplicates,
                    errs,
                );
                names.pop();
            }
        }
        Value::Array(items) => {
            let kind = list_kind(lists, names);
            if kind == ListKind::Atomic {
                for (i, item) in items.iter().enumerate() {
                    validate(
                        item,
                        lists,
                        names,
                        &format!("{path}[{i}]"),
                        allow_duplicates,
                        errs,
                    );
                }
                return;
            }
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = match list_item_pe(&kind, item) {
                    Ok(pe) => pe,
                    Err(e) => {
                        // The server stops looking at the rest of this list.
                        errs.push(with_path(path, &format!("element {i}: {e}")));
                        return;
                    }
                };
                if !seen.insert(pe.clone()) && !allow_duplicates {
                    errs.push(with_path(
                        path,
                        &format!("duplicate entries for key {}", pe.display()),
                    ));
                }
                let child_path = format!("{path}{}", pe.display());
                validate(item, lists, names, &child_path, allow_duplicates, errs);
            }
        }
        _ => {}
    }
}

pub(super) fn with_path(path: &str, msg: &str) -> String {
    if path.is_empty() {
        msg.to_string()
    } else {
        format!("{path}: {msg}")
    }
}

/// `ValidationErrors.Error()`.
pub(super) fn join_validation_errors(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(many.iter().map(|e| format!("  {e}")));
            lines.join("\n")
        }
    }
}

pub(super) fn to_field_set(
    v: &Value,
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                names.push(k.clone());
                path.push(PathElement::Field(k.clone()));
                to_field_set(child, lists, names, path, set);
                let empty_object = child.as_object().is_some_and(Map::is_empty);
                if child.is_null() || empty_object {
                    set.insert(path);
                }
                path.pop();
                names.pop();
            }
        }
        Value::Array(items) => {
            let kind = list_kind(lists, names);
            if kind == ListKind::Atomic {
                set.insert(path);
                return;
            }
            let pes: Vec<Option<PathElement>> = items
                .iter()
                .map(|item| list_item_pe(&kind, item).ok())
                .collect();
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            for pe in pes.iter().flatten() {
                if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                    path.push(pe.clone());
                    set.insert(path);
                    path.pop();
                }
            }
            for (item, pe) in items.iter().zip(pes) {
                let Some(pe) = pe else { continue };
                if duplicates.contains(&pe) {
                    continue;
                }
                path.push(pe);
                to_field_set(item, lists, names, path, set);
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// Merges an applied configuration `rhs` into `lhs` (structured-merge-diff `Merge` with the
/// keep-RHS rule). `Ok(None)` means "no value".
pub(super) fn merge(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
    path: &str,
) -> Result<Option<Value>, Vec<String>> {
    let (l, r) = match (lhs, rhs) {
        (None, None) => return Ok(None),
        (l, None) => return Ok(l.cloned()),
        (None, Some(r)) => return Ok(Some(r.clone())),
        (Some(l), Some(r)) => (l, r),
    };
    match (l, r) {
        (Value::Object(lm), Value::Object(rm)) => {
            if lm.is_empty() && rm.is_empty() {
                return Ok(Some(r.clone()));
            }
            let mut out = Map::new();
            let mut errs = Vec::new();
            let keys = lm.keys().chain(rm.keys().filter(|k| !lm.contains_key(*k)));
            for k in keys {
                names.push(k.clone());
                let merged = merge(lm.get(k), rm.get(k), lists, names, &format!("{path}.{k}"));
                names.pop();
                match merged {
                    Ok(Some(v)) => {
                        out.insert(k.clone(), v);
                    }
                    Ok(None) => {}
                    Err(e) => errs.extend(e),
                }
            }
            if errs.is_empty() {
                Ok(Some(Value::Object(out)))
            } else {
                Err(errs)
            }
        }
        // A null applied over a non-empty object or list leaves it alone: the typed merge
        // sees an absent map/list on the right.
        (Value::Object(lm), Value::Null) if !lm.is_empty() => Ok(Some(l.clone())),
        (Value::Array(la), Value::Null) if !la.is_empty() => Ok(Some(l.clone())),
        (Value::Array(la), Value::Array(ra)) => {
            let kind = list_kind(lists, names);
            if kind == ListKind::Atomic || (la.is_empty() && ra.is_empty()) {
                return Ok(Some(r.clone()));
            }
            merge_list(&kind, la, ra, lists, names, path).map(|v| Some(Value::Array(v)))
        }
        _ => Ok(Some(r.clone())),
    }
}

pub(super) type Indexed = (Vec<PathElement>, BTreeMap<PathElement, Value>);

pub(super) fn index_list(
    kind: &ListKind,
    items: &[Value],
    allow_duplicates: bool,
    path: &str,
) -> Result<Indexed, Vec<String>> {
    let mut errs = Vec::new();
    let mut pes = Vec::with_capacity(items.len());
    let mut observed = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let pe = match list_item_pe(kind, item) {
            Ok(pe) => pe,
            Err(e) => {
                errs.push(with_path(path, &format!("element {i}: {e}")));
                continue;
            }
        };
        if observed.contains_key(&pe) {
            if !allow_duplicates {
                errs.push(with_path(
                    path,
                    &format!("duplicate entries for key {}", pe.display()),
                ));
                continue;
            }
            // Duplicated live items are not merged with the applied one.
            observed.insert(pe.clone(), Value::Null);
        } else {
            observed.insert(pe.clone(), item.clone());
        }
        pes.push(pe);
    }
    if errs.is_empty() {
        Ok((pes, observed))
    } else {
        Err(errs)
    }
}

/// Associative-list merge; keeps live order and places applied items the way
/// structured-merge-diff does (applied order wins among shared items).
pub(super) fn merge_list(
    kind: &ListKind,
    lhs: &[Value],
    rhs: &[Value],
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
    path: &str,
) -> Result<Vec<Value>, Vec<String>> {
    let mut errs = Vec::new();
    let rhs_index = index_list(kind, rhs, false, path);
    let lhs_index = index_list(kind, lhs, true, path);
    let ((rhs_pes, observed_r), (lhs_pes, observed_l)) = match (rhs_index, lhs_index) {
        (Ok(r), Ok(l)) => (r, l),
        (r, l) => {
            if let Err(e) = r {
                errs.extend(e);
            }
            if let Err(e) = l {
                errs.extend(e);
            }
            return Err(errs);
        }
    };
    let mut shared_order: std::collections::VecDeque<&PathElement> = rhs_pes
        .iter()
        .filter(|pe| observed_l.contains_key(*pe))
        .collect();
    let mut next_shared = shared_order.pop_front();
    let mut merged_rhs: BTreeSet<PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let mut merge_item = |pe: &PathElement,
                          l: Option<&Value>,
                          r: Option<&Value>,
                          out: &mut Vec<Value>,
                          errs: &mut Vec<String>| {
        match merge(l, r, lists, names, &format!("{path}{}", pe.display())) {
            Ok(Some(v)) => out.push(v),
            Ok(None) => {}
            Err(e) => errs.extend(e),
        }
    };
    let (l_len, r_len) = (lhs_pes.len(), rhs_pes.len());
    let (mut li, mut ri) = (0, 0);
    while li < l_len || ri < r_len {
        if let (Some(pe), Some(rpe)) = (lhs_pes.get(li), rhs_pes.get(ri)) {
            if pe == rpe {
                merged_rhs.insert(pe.clone());
                merge_item(
                    pe,
                    observed_l.get(pe),
                    observed_r.get(pe),
                    &mut out,
                    &mut errs,
                );
                li += 1;
                ri += 1;
                next_shared = shared_order.pop_front();
                continue;
            }
            if observed_r.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                // A shared item, but not the one the applied order wants next.
                li += 1;
                continue;
            }
        }
        if let Some(pe) = lhs_pes.get(li) {
            if !observed_r.contains_key(pe) {
                merge_item(pe, lhs.get(li), None, &mut out, &mut errs);
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if let Some(pe) = rhs_pes.get(ri) {
            merged_rhs.insert(pe.clone());
            merge_item(
                pe,
                observed_l.get(pe),
                observed_r.get(pe),
                &mut out,
                &mut errs,
            );
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared_order.pop_front();
            }
        }
    }
    if errs.is_empty() { Ok(out) } else { Err(errs) }
}

/// Removes the member paths of `set` from `v`. `None` means nothing is left.
pub(super) fn remove_items(
    v: &Value,
    set: &FieldSet,
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.is_empty() {
                return None;
            }
            let mut out = Map::new();
            for (k, child) in m {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => {
                        names.push(k.clone());
                        let kept = remove_items(child, sub, lists, names);
                        names.pop();
                        // The typed value would hold null here; Go structs (and the
                        // null-pruning of custom resources) drop it.
                        if let Some(kept) = kept {
                            out.insert(k.clone(), kept);
                        }
                    }
                    None => {
                        out.insert(k.clone(), child.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            let kind = list_kind(lists, names);
            if items.is_empty() || kind == ListKind::Atomic {
                return None;
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Ok(pe) = list_item_pe(&kind, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => {
                        let kept = remove_items(item, sub, lists, names);
                        out.push(kept.unwrap_or_else(|| Value::Object(Map::new())));
                    }
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        scalar => Some(scalar.clone()),
    }
}

/// What a write changed, by path (structured-merge-diff `Comparison`).
#[derive(Debug, Default)]
pub(super) struct Comparison {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

pub(super) fn compare_values(
    old: &Value,
    new: &Value,
    lists: &dyn ListTypes,
) -> Result<Comparison, String> {
    let mut cmp = Comparison::default();
    let mut errs = Vec::new();
    compare(
        Some(old),
        Some(new),
        lists,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut cmp,
        &mut errs,
    );
    if errs.is_empty() {
        Ok(cmp)
    } else {
        Err(join_validation_errors(&errs))
    }
}

pub(super) fn compare(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
    path: &mut Vec<PathElement>,
    cmp: &mut Comparison,
    errs: &mut Vec<String>,
) {
    if lhs.is_none() && rhs.is_none() {
        return;
    }
    let is_obj = |v: Option<&Value>| v.is_some_and(Value::is_object);
    let is_arr = |v: Option<&Value>| v.is_some_and(Value::is_array);
    let absent_or_null = |v: Option<&Value>| v.is_none_or(Value::is_null);
    let map_node = (is_obj(lhs) || is_obj(rhs))
        && (is_obj(lhs) || absent_or_null(lhs))
        && (is_obj(rhs) || absent_or_null(rhs));
    let list_node = (is_arr(lhs) || is_arr(rhs))
        && (is_arr(lhs) || absent_or_null(lhs))
        && (is_arr(rhs) || absent_or_null(rhs));
    if map_node {
        let empty = Map::new();
        let lm = lhs.and_then(Value::as_object);
        let rm = rhs.and_then(Value::as_object);
        if lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty) {
            compare_leaf(lhs, rhs, path, cmp);
            return;
        }
        let (lm, rm) = (lm.unwrap_or(&empty), rm.unwrap_or(&empty));
        let keys = lm.keys().chain(rm.keys().filter(|k| !lm.contains_key(*k)));
        for k in keys {
            names.push(k.clone());
            path.push(PathElement::Field(k.clone()));
            compare(lm.get(k), rm.get(k), lists, names, path, cmp, errs);
            path.pop();
            names.pop();
        }
    } else if list_node {
        let kind = list_kind(lists, names);
        let la = lhs.and_then(Value::as_array);
        let ra = rhs.and_then(Value::as_array);
        if kind == ListKind::Atomic
            || (la.is_none_or(Vec::is_empty) && ra.is_none_or(Vec::is_empty))
        {
            compare_leaf(lhs, rhs, path, cmp);
            return;
        }
        compare_list(
            &kind,
            la.map(Vec::as_slice).unwrap_or(&[]),
            ra.map(Vec::as_slice).unwrap_or(&[]),
            lists,
            names,
            path,
            cmp,
            errs,
        );
    } else {
        compare_leaf(lhs, rhs, path, cmp);
        return;
    }
    if lhs.is_none() {
        cmp.added.insert(path);
    } else if rhs.is_none() {
        cmp.removed.insert(path);
    }
}

pub(super) fn compare_leaf(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &[PathElement],
    cmp: &mut Comparison,
) {
    match (lhs, rhs) {
        (None, _) => cmp.added.insert(path),
        (_, None) => cmp.removed.insert(path),
        (Some(l), Some(r)) if l != r => cmp.modified.insert(path),
        _ => {}
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn compare_list(
    kind: &ListKind,
    lhs: &[Value],
    rhs: &[Value],
    lists: &dyn ListTypes,
    names: &mut Vec<String>,
    path: &mut Vec<PathElement>,
    cmp: &mut Comparison,
    errs: &mut Vec<String>,
) {
    let list_path = path_display(path);
    let mut all: Vec<PathElement> = Vec::new();
    let mut l_values: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    let mut r_values: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for (side, items) in [(0, lhs), (1, rhs)] {
        for (i, item) in items.iter().enumerate() {
            let pe = match list_item_pe(kind, item) {
                Ok(pe) => pe,
                Err(e) => {
                    errs.push(with_path(&list_path, &format!("element {i}: {e}")));
                    continue;
                }
            };
            let seen_anywhere = l_values.contains_key(&pe) || r_values.contains_key(&pe);
            let values = if side == 0 {
                &mut l_values
            } else {
                &mut r_values
            };
            if !seen_anywhere {
                all.push(pe.clone());
            }
            values.entry(pe).or_default().push(item);
        }
    }
    for pe in all {
        let l = l_values.get(&pe).map(Vec::as_slice).unwrap_or(&[]);
        let r = r_values.get(&pe).map(Vec::as_slice).unwrap_or(&[]);
        path.push(pe);
        match (l.len(), r.len()) {
            (0, 0) => {}
            (0..=1, 0..=1) => compare(
                l.first().copied(),
                r.first().copied(),
                lists,
                names,
                path,
                cmp,
                errs,
            ),
            (2.., 2..) => {
                if l != r {
                    cmp.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    compare(None, Some(first), lists, names, path, cmp, errs);
                }
                cmp.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    compare(Some(first), None, lists, names, path, cmp, errs);
                }
                cmp.added.insert(path);
            }
        }
        path.pop();
    }
}

/// Drops null values inside objects: what decoding into Go structs (or the null pruning of
/// custom resources) does to the merged result.
pub(super) fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, c| !c.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

impl FieldSet {
    /// The fields an applied configuration `obj` sets: every scalar, every atomic list, every
    /// associative-list item (`k:{..}` / `v:..`), and empty or null objects.
    pub fn from_object(obj: &Value, lists: &dyn ListTypes) -> FieldSet {
        let mut set = FieldSet::default();
        to_field_set(obj, lists, &mut Vec::new(), &mut Vec::new(), &mut set);
        set
    }
}
