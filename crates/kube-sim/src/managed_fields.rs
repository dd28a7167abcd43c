//! Server-side apply and `metadata.managedFields` tracking, as kube-apiserver does it.
//!
//! This re-implements, over `serde_json::Value`, the parts of structured-merge-diff (the
//! version kube-apiserver 1.33 vendors) and of apimachinery's `managedfields/internal` managers
//! that a client can observe: field sets and their FieldsV1 encoding, the apply merge (maps
//! recursively, associative lists by key or value, atomic lists replaced), pruning of fields an
//! applier stopped applying, conflict detection and forcing, ownership transfer on plain
//! writes, `before-first-apply`, the cap of ten update managers (`ancient-changes`), the
//! `kubectl` last-applied-annotation interplay, the stripped metadata fields and the entry
//! ordering.
//!
//! The emulator has no Go type schema, only [`ListTypes`]: every JSON object is treated as a
//! struct whose keys are named fields, every list gets its kind from `ListTypes`, and the one
//! associative-list key default the Kubernetes OpenAPI declares (`protocol: TCP`) is built in.
//! All API versions of a resource are treated as one schema (no conversion).
//!
//! This module must stay pure: no I/O, no clock (the caller passes `now`), no store access.
//! It does not reset `status` or `spec` for subresources (the caller's strategy does that) and
//! does not validate objects beyond what the field manager itself rejects.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::list_types::{ListKind, ListTypes};

/// The annotation `kubectl apply` (client-side) keeps; the server maintains it for the
/// `kubectl` applier so that client-side and server-side apply can be mixed.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Manager the server invents for fields that existed before the first apply to an object
/// without managedFields.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// Bucket manager that absorbs the oldest update managers beyond the cap.
const ANCIENT_CHANGES: &str = "ancient-changes";
const MAX_UPDATE_MANAGERS: usize = 10;
/// `validation.FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// `TotalAnnotationSizeLimitB`: a last-applied annotation that would exceed it is dropped.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// Temporary manager name the server uses while computing what a write changed.
const CURRENT_OPERATION: &str = "current-operation";

// ---------------------------------------------------------------------------------------------
// Path elements and field sets
// ---------------------------------------------------------------------------------------------

/// One step of a field path. The variant order is structured-merge-diff's ordering
/// (field names, then keys, then values, then indices), which fixes the FieldsV1 key order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PathElement {
    /// `f:name`
    Field(String),
    /// `k:{"name":"c"}`: (key field, its value as canonical JSON), sorted by key field.
    Key(Vec<(String, String)>),
    /// `v:"x"`: the set item as canonical JSON.
    Value(String),
    /// `i:0`
    Index(usize),
}

impl PathElement {
    fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go_json_string(name, &mut out);
                    out.push(':');
                    out.push_str(value);
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a FieldsV1 key. `Ok(None)` is an unknown element type, which the server drops.
    fn deserialize(s: &str) -> Result<Option<PathElement>, String> {
        let (kind, colon) = match s.as_bytes() {
            [kind, colon, ..] => (*kind, *colon),
            _ => return Err("key must be 2 characters long:".to_string()),
        };
        if colon != b':' {
            return Err(format!("missing colon: {s}"));
        }
        // Both leading bytes are ASCII here, so byte 2 is a char boundary.
        let rest = s.get(2..).unwrap_or("");
        match kind {
            b'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            b'v' => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                Ok(Some(PathElement::Value(go_json(&v))))
            }
            b'k' => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                let Value::Object(m) = v else {
                    return Err(format!("expected a JSON object after k: in {s}"));
                };
                let mut fields: Vec<(String, String)> =
                    m.iter().map(|(k, v)| (k.clone(), go_json(v))).collect();
                fields.sort();
                Ok(Some(PathElement::Key(fields)))
            }
            b'i' => rest
                .parse::<usize>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| e.to_string()),
            _ => Ok(None),
        }
    }

    /// The form the server prints in conflict messages: `.name`, `[name="c"]`, `[="x"]`, `[0]`.
    fn display(&self) -> String {
        match self {
            PathElement::Field(name) => format!(".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={}", value_to_string_json(value)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            PathElement::Value(value) => format!("[={}]", value_to_string_json(value)),
            PathElement::Index(i) => format!("[{i}]"),
        }
    }
}

fn path_display(path: &[PathElement]) -> String {
    path.iter().map(PathElement::display).collect()
}

/// A set of field paths, stored as a tree like structured-merge-diff's `fieldpath.Set`:
/// `members` are paths ending at this node, `children` hold longer paths. A path can be both a
/// member and a prefix of other members (FieldsV1 writes that as `".": {}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The fields an applied configuration `obj` sets: every scalar, every atomic list, every
    /// associative-list item (`k:{..}` / `v:..`), and empty or null objects.
    pub fn from_object(obj: &Value, lists: &dyn ListTypes) -> FieldSet {
        let mut set = FieldSet::default();
        to_field_set(obj, lists, &mut Vec::new(), &mut Vec::new(), &mut set);
        set
    }

    /// Encodes as the `fieldsV1` JSON of a managedFields entry.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit_v1(false))
    }

    /// Decodes a `fieldsV1` value. Unknown path element kinds are dropped as the server does.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        match v {
            Value::Null => Ok(FieldSet::default()),
            Value::Object(m) => Ok(read_v1(m)?.0.unwrap_or_default()),
            other => Err(format!(
                "fieldsV1 must be a JSON object, got {}",
                json_type_name(other)
            )),
        }
    }

    /// True when no path is in the set.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// The paths in the set as the server prints them (`.spec.replicas`), members of a node
    /// before its children, as structured-merge-diff iterates.
    pub fn paths(&self) -> Vec<String> {
        self.iterate().iter().map(|p| path_display(p)).collect()
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let i = child.intersection(theirs);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Paths in `self` but not in `other` (exact paths: removing `a` keeps `a.b`).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let d = match other.children.get(pe) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !d.is_empty() {
                children.insert(pe.clone(), d);
            }
        }
        FieldSet { members, children }
    }

    fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe).filter(|c| !c.is_empty())
    }

    /// Adds, at every level, the named fields that have children as members, so that pruning
    /// can remove a whole struct nobody owns anything in. Without a type schema every object
    /// key counts as a named field.
    fn ensure_named_fields_are_members(&self) -> FieldSet {
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if matches!(pe, PathElement::Field(_)) {
                members.insert(pe.clone());
            }
            children.insert(pe.clone(), child.ensure_named_fields_are_members());
        }
        FieldSet { members, children }
    }

    fn iterate(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.iterate_prefix(&mut Vec::new(), &mut out);
        out
    }

    fn iterate_prefix(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for pe in &self.members {
            let mut p = prefix.clone();
            p.push(pe.clone());
            out.push(p);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.iterate_prefix(prefix, out);
            prefix.pop();
        }
    }

    fn emit_v1(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !self.is_empty() {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        let mut keys: BTreeSet<&PathElement> = self.members.iter().collect();
        keys.extend(self.children.keys());
        for pe in keys {
            let member = self.members.contains(pe);
            let value = match self.children.get(pe).filter(|c| !c.is_empty()) {
                Some(child) => Value::Object(child.emit_v1(member)),
                None => Value::Object(Map::new()),
            };
            out.insert(pe.serialize(), value);
        }
        out
    }
}

/// Reads one FieldsV1 node: returns its children (if any) and whether the node itself is a
/// member. An empty object (or null) is a member with no children.
fn read_v1(m: &Map<String, Value>) -> Result<(Option<FieldSet>, bool), String> {
    let mut children: Option<FieldSet> = None;
    let mut is_member = false;
    for (key, value) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::deserialize(key)
            .map_err(|e| format!("parsing key as path element: {e}"))?
        else {
            continue;
        };
        let (grandchildren, child_is_member) = match value {
            Value::Object(cm) => read_v1(cm)?,
            Value::Null => (None, true),
            other => {
                return Err(format!(
                    "expected a JSON object for {key}, got {}",
                    json_type_name(other)
                ));
            }
        };
        if child_is_member {
            children
                .get_or_insert_with(FieldSet::default)
                .members
                .insert(pe.clone());
        }
        if let Some(g) = grandchildren {
            let c = children.get_or_insert_with(FieldSet::default);
            let merged = match c.children.get(&pe) {
                Some(existing) => existing.union(&g),
                None => g,
            };
            c.children.insert(pe, merged);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

// ---------------------------------------------------------------------------------------------
// Walks over values (structured-merge-diff's typed package, schema-less)
// ---------------------------------------------------------------------------------------------

fn list_kind(lists: &dyn ListTypes, names: &[String]) -> ListKind {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    lists.list_kind(&refs)
}

/// The path element naming `item` inside an associative list of `kind`.
fn list_item_pe(kind: &ListKind, item: &Value) -> Result<PathElement, String> {
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
fn validate(
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

fn with_path(path: &str, msg: &str) -> String {
    if path.is_empty() {
        msg.to_string()
    } else {
        format!("{path}: {msg}")
    }
}

/// `ValidationErrors.Error()`.
fn join_validation_errors(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(many.iter().map(|e| format!("  {e}")));
            lines.join("\n")
        }
    }
}

fn to_field_set(
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
fn merge(
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

type Indexed = (Vec<PathElement>, BTreeMap<PathElement, Value>);

fn index_list(
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
fn merge_list(
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
fn remove_items(
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
struct Comparison {
    added: FieldSet,
    modified: FieldSet,
    removed: FieldSet,
}

fn compare_values(old: &Value, new: &Value, lists: &dyn ListTypes) -> Result<Comparison, String> {
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

fn compare(
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

fn compare_leaf(
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
fn compare_list(
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
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, c| !c.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Managers (fieldpath.ManagedFields + times) and their encoding
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: String,
    time: Option<String>,
    set: FieldSet,
}

/// Keyed by the server's manager identifier (see [`identifier`]).
type Managers = BTreeMap<String, Entry>;

/// `BuildManagerIdentifier`: the JSON of the entry without fields, type and time, and without
/// apiVersion for appliers (so an applier is one manager across versions).
fn identifier(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> String {
    let mut out = String::from("{");
    let mut first = true;
    let mut field = |name: &str, value: &str, out: &mut String| {
        if value.is_empty() {
            return;
        }
        if !first {
            out.push(',');
        }
        first = false;
        go_json_string(name, out);
        out.push(':');
        go_json_string(value, out);
    };
    field("manager", manager, &mut out);
    field("operation", operation.as_str(), &mut out);
    if operation == Operation::Update {
        field("apiVersion", api_version, &mut out);
    }
    field("subresource", subresource, &mut out);
    out.push('}');
    out
}

fn new_entry(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Entry {
    Entry {
        manager: manager.to_string(),
        operation,
        api_version: api_version.to_string(),
        subresource: subresource.to_string(),
        time: None,
        set: FieldSet::default(),
    }
}

/// `printManager`: how conflict messages name a manager.
fn print_manager(e: &Entry) -> String {
    let mut s = go_quote(&e.manager);
    if !e.subresource.is_empty() {
        s = format!("{s} with subresource {}", go_quote(&e.subresource));
    }
    if e.operation == Operation::Update {
        s = format!("{s} using {}", e.api_version);
    }
    s
}

fn decode_managed_fields(obj: &Value) -> Result<Managers, String> {
    let mut managers = Managers::new();
    let Some(raw) = obj.get("metadata").and_then(|m| m.get("managedFields")) else {
        return Ok(managers);
    };
    let entries = match raw {
        Value::Null => return Ok(managers),
        Value::Array(a) => a,
        other => {
            return Err(format!(
                "managedFields must be a list, got {}",
                json_type_name(other)
            ));
        }
    };
    for (i, raw_entry) in entries.iter().enumerate() {
        let Some(e) = raw_entry.as_object() else {
            return Err(format!("managed fields entry {i} is not an object"));
        };
        let string_field = |name: &str| -> Result<String, String> {
            match e.get(name) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(format!(
                    "{name} of managed fields entry {i} must be a string, got {}",
                    json_type_name(other)
                )),
            }
        };
        let operation = match string_field("operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".to_string()),
        };
        let api_version = string_field("apiVersion")?;
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".to_string());
        }
        match string_field("fieldsType")?.as_str() {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {} in managed fields entry {i}",
                    go_quote(other)
                ));
            }
        }
        let manager = string_field("manager")?;
        let subresource = string_field("subresource")?;
        let time = Some(string_field("time")?).filter(|t| !t.is_empty());
        let set = FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Null))
            .map_err(|err| format!("error decoding versioned set from entry {i}: {err}"))?;
        let id = identifier(&manager, operation, &api_version, &subresource);
        managers.insert(
            id,
            Entry {
                manager,
                operation,
                api_version,
                subresource,
                time,
                set,
            },
        );
    }
    Ok(managers)
}

fn encode_managed_fields(managers: &Managers) -> Option<Value> {
    if managers.is_empty() {
        return None;
    }
    let mut entries: Vec<&Entry> = managers.values().collect();
    entries.sort_by(|p, q| {
        let secs = |e: &Entry| e.time.as_deref().and_then(rfc3339_seconds).unwrap_or(0);
        p.operation
            .as_str()
            .cmp(q.operation.as_str())
            .then_with(|| secs(p).cmp(&secs(q)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    let encoded = entries
        .into_iter()
        .map(|e| {
            let mut m = Map::new();
            if !e.manager.is_empty() {
                m.insert("manager".into(), Value::String(e.manager.clone()));
            }
            m.insert("operation".into(), e.operation.as_str().into());
            m.insert("apiVersion".into(), Value::String(e.api_version.clone()));
            if let Some(t) = &e.time {
                m.insert("time".into(), Value::String(t.clone()));
            }
            m.insert("fieldsType".into(), "FieldsV1".into());
            m.insert("fieldsV1".into(), e.set.to_fields_v1());
            if !e.subresource.is_empty() {
                m.insert("subresource".into(), Value::String(e.subresource.clone()));
            }
            Value::Object(m)
        })
        .collect();
    Some(Value::Array(encoded))
}

fn set_managed_fields(obj: &mut Value, managers: &Managers) {
    let Value::Object(root) = obj else { return };
    match encode_managed_fields(managers) {
        Some(encoded) => {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert("managedFields".into(), encoded);
            }
        }
        None => remove_managed_fields(obj),
    }
}

fn remove_managed_fields(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

/// The fields the server never records as owned (`stripMetaManager`).
fn strip_set() -> FieldSet {
    let mut s = FieldSet::default();
    let f = |n: &str| PathElement::Field(n.to_string());
    s.insert(&[f("apiVersion")]);
    s.insert(&[f("kind")]);
    s.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[f("metadata"), f(name)]);
    }
    s
}

fn strip_fields(managers: &mut Managers, id: &str) {
    if let Some(e) = managers.get_mut(id) {
        e.set = e.set.difference(&strip_set());
        if e.set.is_empty() {
            managers.remove(id);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The updater (structured-merge-diff merge.Updater)
// ---------------------------------------------------------------------------------------------

enum UpdaterError {
    Conflicts(BTreeMap<String, FieldSet>),
    Other(String),
}

/// Ownership bookkeeping shared by updates and applies: other managers lose the fields this
/// write changed (a conflict unless forced) and the fields it removed.
fn smd_update(
    old: &Value,
    new: &Value,
    managers: &mut Managers,
    workflow: &str,
    force: bool,
    lists: &dyn ListTypes,
) -> Result<Comparison, UpdaterError> {
    let cmp = compare_values(old, new, lists)
        .map_err(|e| UpdaterError::Other(format!("failed to compare objects: {e}")))?;
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = BTreeMap::new();
    for (id, e) in managers.iter() {
        if id == workflow {
            continue;
        }
        let c = e.set.intersection(&changed);
        if !c.is_empty() {
            conflicts.insert(id.clone(), c);
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(UpdaterError::Conflicts(conflicts));
    }
    for (id, e) in managers.iter_mut() {
        if id == workflow {
            continue;
        }
        if let Some(c) = conflicts.get(id) {
            e.set = e.set.difference(c);
        }
        e.set = e.set.difference(&cmp.removed);
    }
    managers.retain(|_, e| !e.set.is_empty());
    Ok(cmp)
}

/// `Updater.Update` for the temporary `current-operation` manager.
fn smd_record(
    old: &Value,
    new: &Value,
    managers: &mut Managers,
    workflow_entry: Entry,
    lists: &dyn ListTypes,
) -> Result<(), String> {
    let cmp = match smd_update(old, new, managers, CURRENT_OPERATION, true, lists) {
        Ok(cmp) => cmp,
        Err(UpdaterError::Other(e)) => return Err(e),
        Err(UpdaterError::Conflicts(_)) => return Err("unexpected conflicts".to_string()),
    };
    let previous = managers
        .get(CURRENT_OPERATION)
        .map(|e| e.set.clone())
        .unwrap_or_default();
    let set = previous
        .difference(&cmp.removed)
        .union(&cmp.modified)
        .union(&cmp.added);
    if set.is_empty() {
        managers.remove(CURRENT_OPERATION);
    } else {
        managers.insert(
            CURRENT_OPERATION.to_string(),
            Entry {
                set,
                ..workflow_entry
            },
        );
    }
    Ok(())
}

/// `Updater.Apply` plus pruning. Returns `None` for the object when nothing changed.
fn smd_apply(
    live: &Value,
    config: &Value,
    managers: &mut Managers,
    id: &str,
    entry: Entry,
    force: bool,
    lists: &dyn ListTypes,
) -> Result<Option<Value>, UpdaterError> {
    let merged = merge(Some(live), Some(config), lists, &mut Vec::new(), "")
        .map_err(|e| {
            UpdaterError::Other(format!(
                "failed to merge config: {}",
                join_validation_errors(&e)
            ))
        })?
        .unwrap_or_else(|| Value::Object(Map::new()));
    let last_set = managers.get(id).map(|e| e.set.clone());
    let time = managers.get(id).and_then(|e| e.time.clone());
    managers.insert(
        id.to_string(),
        Entry {
            set: FieldSet::from_object(config, lists),
            time,
            ..entry
        },
    );
    let new_obj = match last_set {
        Some(last) if !last.is_empty() => prune(&merged, managers, &last, lists),
        _ => merged,
    };
    smd_update(live, &new_obj, managers, id, force, lists)?;
    Ok((*live != new_obj).then_some(new_obj))
}

/// Removes what the applier applied last time but not now, unless another manager (or the new
/// configuration) owns it: `prune`, `addBackOwnedItems`, `addBackDanglingItems`.
fn prune(merged: &Value, managers: &Managers, last: &FieldSet, lists: &dyn ListTypes) -> Value {
    let rm = |v: &Value, set: &FieldSet| {
        remove_items(v, set, lists, &mut Vec::new()).unwrap_or_else(|| Value::Object(Map::new()))
    };
    let named = |v: &Value| FieldSet::from_object(v, lists).ensure_named_fields_are_members();
    let last = last.ensure_named_fields_are_members();
    let pruned = rm(merged, &last);
    let managed = managers
        .values()
        .fold(FieldSet::default(), |acc, e| acc.union(&e.set))
        .ensure_named_fields_are_members();
    let merged_set = named(merged);
    let pruned = rm(
        merged,
        &merged_set.difference(&named(&pruned).union(&managed)),
    );
    rm(
        merged,
        &merged_set.difference(&named(&pruned)).intersection(&last),
    )
}

// ---------------------------------------------------------------------------------------------
// The apiserver manager chain
// ---------------------------------------------------------------------------------------------

/// `capManagersManager`: folds the oldest update managers into `ancient-changes` buckets.
fn cap_update_managers(managers: &mut Managers) {
    let mut updaters: Vec<String> = managers
        .iter()
        .filter(|(_, e)| e.operation == Operation::Update)
        .map(|(id, _)| id.clone())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let secs = |id: &String| {
        managers
            .get(id)
            .and_then(|e| e.time.as_deref())
            .and_then(rfc3339_seconds)
            .unwrap_or(0)
    };
    updaters.sort_by(|a, b| secs(a).cmp(&secs(b)).then_with(|| a.cmp(b)));
    let mut version_to_first: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(vs) = managers.get(&id).cloned() else {
            continue;
        };
        let bucket = identifier(ANCIENT_CHANGES, Operation::Update, &vs.api_version, "");
        if let Some(first) = version_to_first.get(&vs.api_version) {
            if !managers.contains_key(&bucket)
                && let Some(moved) = managers.remove(first)
            {
                managers.insert(
                    bucket.clone(),
                    Entry {
                        manager: ANCIENT_CHANGES.to_string(),
                        operation: Operation::Update,
                        subresource: String::new(),
                        ..moved
                    },
                );
            }
            let union = managers
                .get(&bucket)
                .map(|b| vs.set.union(&b.set))
                .unwrap_or_else(|| vs.set.clone());
            managers.insert(
                bucket.clone(),
                Entry {
                    set: union,
                    time: vs.time.clone(),
                    ..new_entry(ANCIENT_CHANGES, Operation::Update, &vs.api_version, "")
                },
            );
            managers.remove(&id);
            length -= 1;
        } else {
            version_to_first.insert(vs.api_version.clone(), id);
        }
    }
}

/// The update chain below `skipNonAppliedManager`: cap, build-manager-info, managed-fields
/// updater (the `current-operation` trick and the timestamp), strip-meta, structured merge.
#[allow(clippy::too_many_arguments)]
fn update_chain(
    old: &Value,
    new: &Value,
    mut managers: Managers,
    manager: &str,
    lists: &dyn ListTypes,
    now: &str,
    api_version: &str,
    subresource: &str,
) -> Result<Managers, String> {
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    let id = identifier(manager, Operation::Update, api_version, subresource);
    check_typed(old, lists, true)
        .map_err(|e| format!("failed to convert live object to smd typed: {e}"))?;
    check_typed(new, lists, true)
        .map_err(|e| format!("failed to convert new object to smd typed: {e}"))?;
    let template = new_entry(manager, Operation::Update, api_version, subresource);
    smd_record(old, new, &mut managers, template.clone(), lists)
        .map_err(|e| format!("failed to update ManagedFields: {e}"))?;
    strip_fields(&mut managers, CURRENT_OPERATION);
    if let Some(current) = managers.remove(CURRENT_OPERATION) {
        let set = match managers.get(&id) {
            Some(previous) => current.set.union(&previous.set),
            None => current.set,
        };
        managers.insert(
            id,
            Entry {
                set,
                time: Some(now.to_string()),
                ..template
            },
        );
    }
    cap_update_managers(&mut managers);
    Ok(managers)
}

fn check_typed(v: &Value, lists: &dyn ListTypes, allow_duplicates: bool) -> Result<(), String> {
    let mut errs = Vec::new();
    validate(v, lists, &mut Vec::new(), "", allow_duplicates, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(join_validation_errors(&errs))
    }
}

fn uid_of(obj: &Value) -> &str {
    obj.get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `isResetManagedFields`: `[]` or `[{}]` in a write clears managedFields.
fn is_reset_managed_fields(obj: &Value) -> bool {
    match obj.get("metadata").and_then(|m| m.get("managedFields")) {
        Some(Value::Array(a)) if a.is_empty() => true,
        Some(Value::Array(a)) if a.len() == 1 => a.first().is_some_and(|e| {
            e.as_object().is_some_and(|m| {
                m.values().all(|v| match v {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    _ => false,
                })
            })
        }),
        _ => false,
    }
}

/// Records a non-apply write (create/update/patch) in managedFields: the manager (operation
/// Update) takes ownership of fields whose value it changed or added; those fields leave other
/// managers' sets; managers with empty sets are dropped.
///
/// As the server does: managedFields sent in `new` replace the live ones when they decode and
/// are non-empty (except on a subresource); `[]` or `[{}]` resets them, and an existing object
/// without managedFields stays untracked. If the objects cannot be read (e.g. an associative
/// list item without its key) the live managedFields are kept unchanged.
#[allow(clippy::too_many_arguments)]
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    lists: &dyn ListTypes,
    now: &str,
    api_version: &str,
    subresource: Option<&str>,
) {
    let empty = Value::Object(Map::new());
    let live_raw = old
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("managedFields"))
        .filter(|v| v.is_array())
        .cloned();
    let live_managed = || {
        old.map(decode_managed_fields)
            .unwrap_or(Ok(Managers::new()))
    };
    let managed = if subresource.is_some() {
        live_managed().unwrap_or_default()
    } else if is_reset_managed_fields(new) {
        Managers::new()
    } else {
        match decode_managed_fields(new) {
            Ok(m) if !m.is_empty() => m,
            _ => live_managed().unwrap_or_default(),
        }
    };
    remove_managed_fields(new);
    if managed.is_empty() && old.is_some_and(|o| !uid_of(o).is_empty()) {
        return;
    }
    let mut old_clean = old.cloned().unwrap_or_else(|| empty.clone());
    remove_managed_fields(&mut old_clean);
    let result = update_chain(
        &old_clean,
        new,
        managed,
        manager,
        lists,
        now,
        api_version,
        subresource.unwrap_or(""),
    );
    match result {
        Ok(managers) => set_managed_fields(new, &managers),
        Err(_) => {
            if let (Some(raw), Value::Object(root)) = (live_raw, &mut *new) {
                let meta = root
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert("managedFields".into(), raw);
                }
            }
        }
    }
}

/// One field another manager owns that the applied configuration would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name.
    pub manager: String,
    /// The field as the server prints it, e.g. `.spec.replicas`.
    pub field: String,
    /// The `StatusCause` message, e.g. `conflict with "kubectl" using apps/v1`.
    pub message: String,
    /// How the server names the manager in messages (`"kubectl" using apps/v1`).
    printed_manager: String,
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// 409, reason `Conflict`, one `FieldManagerConflict` cause per conflict.
    Conflicts(Vec<Conflict>),
    /// 400, reason `BadRequest`, with this message.
    BadRequest(String),
    /// A malformed applied configuration (or live object) that the server cannot turn into a
    /// typed value. The server answers 500 with an empty reason and this message verbatim.
    Invalid(String),
}

impl ApplyError {
    /// The HTTP status code the server answers with.
    pub fn code(&self) -> u16 {
        match self {
            ApplyError::Conflicts(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::Invalid(_) => 500,
        }
    }

    /// The Status message, exactly as the server writes it.
    pub fn message(&self) -> String {
        match self {
            ApplyError::BadRequest(m) | ApplyError::Invalid(m) => m.clone(),
            ApplyError::Conflicts(cs) => conflict_message(cs),
        }
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyError {}

/// `getConflictMessage`. Conflicts arrive grouped by manager, in identifier order.
fn conflict_message(cs: &[Conflict]) -> String {
    if let [c] = cs {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.printed_manager, c.field
        );
    }
    let mut lines = Vec::new();
    let mut current: Option<&str> = None;
    for c in cs {
        if current != Some(c.printed_manager.as_str()) {
            lines.push(format!("conflicts with {}:", c.printed_manager));
            current = Some(&c.printed_manager);
        }
        lines.push(format!("- {}", c.field));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        cs.len(),
        lines.join("\n")
    )
}

fn conflicts_from(managers: &Managers, conflicts: &BTreeMap<String, FieldSet>) -> Vec<Conflict> {
    let mut out = Vec::new();
    for (id, set) in conflicts {
        let Some(e) = managers.get(id) else { continue };
        let printed = print_manager(e);
        for path in set.iterate() {
            out.push(Conflict {
                manager: e.manager.clone(),
                field: path_display(&path),
                message: format!("conflict with {printed}"),
                printed_manager: printed.clone(),
            });
        }
    }
    out
}

/// `GroupVersionKind.String()` of an applied object (as `versionCheckManager` prints it) and
/// its group/version. An unparsable apiVersion yields the empty GVK, as in Go.
fn gvk_string(obj: &Value) -> (String, String) {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version, kind) = match api_version.split_once('/') {
        None => ("", api_version, kind),
        Some((g, v)) if !v.contains('/') => (g, v, kind),
        Some(_) => ("", "", ""),
    };
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    (format!("{group}/{version}, Kind={kind}"), gv)
}

fn name_and_namespace(obj: &Value) -> (String, String) {
    let meta = obj.get("metadata");
    let get = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (get("namespace"), get("name"))
}

enum InnerError {
    Conflicts(Managers, BTreeMap<String, FieldSet>),
    Api(ApplyError),
}

/// The apply chain below the last-applied wrappers: skip-non-applied (`before-first-apply`),
/// build-manager-info, managed-fields updater, strip-meta, structured merge.
#[allow(clippy::too_many_arguments)]
fn apply_chain(
    live: &Value,
    config: &Value,
    mut managers: Managers,
    manager: &str,
    force: bool,
    lists: &dyn ListTypes,
    now: &str,
    api_version: &str,
    subresource: &str,
) -> Result<(Value, Managers), InnerError> {
    let empty = Value::Object(Map::new());
    if managers.is_empty() {
        managers = update_chain(
            &empty,
            live,
            managers,
            BEFORE_FIRST_APPLY,
            lists,
            now,
            api_version,
            subresource,
        )
        .map_err(|e| {
            InnerError::Api(ApplyError::Invalid(format!(
                "failed to create manager for existing fields: {e}"
            )))
        })?;
    }
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    let id = identifier(manager, Operation::Apply, api_version, subresource);
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|v| !v.is_null())
    {
        return Err(InnerError::Api(ApplyError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        )));
    }
    let (gvk, _) = gvk_string(config);
    if let Err(e) = check_typed(config, lists, false) {
        let (ns, name) = name_and_namespace(config);
        return Err(InnerError::Api(ApplyError::Invalid(format!(
            "failed to create typed patch object ({ns}/{name}; {gvk}): {e}"
        ))));
    }
    if let Err(e) = check_typed(live, lists, true) {
        let (ns, name) = name_and_namespace(live);
        return Err(InnerError::Api(ApplyError::Invalid(format!(
            "failed to create typed live object ({ns}/{name}; {gvk}): {e}"
        ))));
    }
    let entry = new_entry(manager, Operation::Apply, api_version, subresource);
    let applied = smd_apply(live, config, &mut managers, &id, entry, force, lists);
    let object = match applied {
        Ok(o) => o,
        Err(UpdaterError::Conflicts(c)) => return Err(InnerError::Conflicts(managers, c)),
        Err(UpdaterError::Other(e)) => return Err(InnerError::Api(ApplyError::Invalid(e))),
    };
    strip_fields(&mut managers, &id);
    let object = match object {
        Some(o) => {
            if let Some(e) = managers.get_mut(&id) {
                e.time = Some(now.to_string());
            }
            o
        }
        None => live.clone(),
    };
    Ok((object, managers))
}

/// `allowedConflictsFromLastApplied`: fields in the client-side last-applied annotation whose
/// value is still the live one; `kubectl` may take those over without `--force-conflicts`.
fn allowed_conflicts_from_last_applied(
    live: &Value,
    api_version: &str,
    lists: &dyn ListTypes,
) -> Option<FieldSet> {
    let text = live
        .get("metadata")?
        .get("annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())?;
    let last: Value = serde_json::from_str(text).ok()?;
    if !last.is_object() || last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    check_typed(live, lists, false).ok()?;
    check_typed(&last, lists, false).ok()?;
    let set = FieldSet::from_object(&last, lists);
    let cmp = compare_values(&last, live, lists).ok()?;
    Some(
        set.difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// `buildLastApplied` + `SetLastApplied`.
fn update_last_applied(object: &mut Value, config: &Value) {
    let mut cfg = config.clone();
    if let Some(Value::Object(meta)) = cfg.get_mut("metadata")
        && let Some(Value::Object(ann)) = meta.get_mut("annotations")
    {
        ann.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = go_json(&cfg);
    text.push('\n');
    let Some(Value::Object(ann)) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    else {
        return;
    };
    ann.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(text));
    let size: usize = ann
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        ann.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// Server-side apply. `live` is None for create. Returns the merged object with
/// `metadata.managedFields` updated (an unchanged object when the apply changes nothing).
///
/// `api_version` is the group/version of the endpoint (`apps/v1`, `v1`); the configuration
/// must carry the same apiVersion (and, when `live` is given, the same kind). The caller strips
/// `status` (or `spec`) from `config` where its strategy would reset them.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    lists: &dyn ListTypes,
    now: &str,
    api_version: &str,
    subresource: Option<&str>,
) -> Result<Value, ApplyError> {
    let empty = Value::Object(Map::new());
    let config = match config {
        Value::Object(_) => config,
        Value::Null => &empty,
        other => {
            return Err(ApplyError::BadRequest(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type \
                 map[string]interface {{}}",
                json_type_name(other)
            )));
        }
    };
    let (gvk, config_gv) = gvk_string(config);
    let live_kind = live.and_then(|l| l.get("kind")).and_then(Value::as_str);
    let config_kind = config.get("kind").and_then(Value::as_str);
    if config_gv != api_version || live_kind.is_some_and(|k| Some(k) != config_kind) {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {gvk}"
        )));
    }
    let live = live.unwrap_or(&empty);
    let managers = decode_managed_fields(live)
        .map_err(|e| ApplyError::Invalid(format!("failed to decode managed fields: {e}")))?;
    let mut live_clean = live.clone();
    remove_managed_fields(&mut live_clean);
    let sub = subresource.unwrap_or("");
    let run = |force: bool| {
        apply_chain(
            &live_clean,
            config,
            managers.clone(),
            manager,
            force,
            lists,
            now,
            api_version,
            sub,
        )
    };
    let (mut object, managers) = match run(force) {
        Ok(r) => r,
        Err(InnerError::Api(e)) => return Err(e),
        Err(InnerError::Conflicts(ms, conflicts)) => {
            let all = conflicts_from(&ms, &conflicts);
            if manager != "kubectl" {
                return Err(ApplyError::Conflicts(all));
            }
            let allowed = allowed_conflicts_from_last_applied(live, api_version, lists);
            let remaining: Vec<Conflict> = match &allowed {
                None => all,
                Some(allowed) => {
                    let mut rest = BTreeMap::new();
                    for (id, set) in &conflicts {
                        let r = set.difference(allowed);
                        if !r.is_empty() {
                            rest.insert(id.clone(), r);
                        }
                    }
                    conflicts_from(&ms, &rest)
                }
            };
            if !remaining.is_empty() {
                return Err(ApplyError::Conflicts(remaining));
            }
            match run(true) {
                Ok(r) => r,
                Err(InnerError::Api(e)) => return Err(e),
                Err(InnerError::Conflicts(ms, c)) => {
                    return Err(ApplyError::Conflicts(conflicts_from(&ms, &c)));
                }
            }
        }
    };
    let has_last_applied = object
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if manager == "kubectl" && has_last_applied {
        update_last_applied(&mut object, config);
    }
    strip_nulls(&mut object);
    set_managed_fields(&mut object, &managers);
    Ok(object)
}

/// The default manager name the server derives from a User-Agent when `fieldManager` is
/// absent: the part before the first '/', without unprintable characters, at most 128 bytes.
pub fn default_manager(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| is_go_printable(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Go-compatible text helpers
// ---------------------------------------------------------------------------------------------

/// Approximates Go's `unicode.IsPrint`: graphic characters and the ASCII space.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    // Format characters (Cf) that Go treats as unprintable.
    !matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON as Go's encoding/json writes it: object keys sorted, `<`, `>`, `&` escaped.
fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => go_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                if let Some(v) = m.get(k) {
                    write_go_json(v, out);
                }
            }
            out.push('}');
        }
    }
}

fn go_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 1e21 => {
            format!("{f:.0}")
        }
        _ => n.to_string(),
    }
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `%q` (strconv.Quote), close enough for field names and key values.
fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && !is_go_printable(c) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if !is_go_printable(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `value.ToString` of a value held as canonical JSON text.
fn value_to_string_json(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => value_to_string(&v),
        Err(_) => text.to_string(),
    }
}

fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_to_string).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Seconds since the epoch of an RFC 3339 timestamp, for ordering entries as the server does.
fn rfc3339_seconds(s: &str) -> Option<i64> {
    let num = |a: usize, b: usize| -> Option<i64> { s.get(a..b)?.parse().ok() };
    if s.len() < 20 || s.get(4..5)? != "-" || !s.get(10..11)?.eq_ignore_ascii_case("T") {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let mut rest = s.get(19..)?;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.chars().take_while(char::is_ascii_digit).count();
        rest = frac.get(digits..)?;
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.get(0..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Containers, env and ports keyed like the built-in types, finalizers a set, the rest
    /// atomic.
    struct TestLists;

    impl ListTypes for TestLists {
        fn list_kind(&self, path: &[&str]) -> ListKind {
            let keys = |ks: &[&str]| ListKind::Map(ks.iter().map(|k| k.to_string()).collect());
            match path {
                [.., "containers"] | [.., "env"] => keys(&["name"]),
                [.., "ports"] => keys(&["containerPort", "protocol"]),
                ["metadata", "finalizers"] => ListKind::Set,
                _ => ListKind::Atomic,
            }
        }
    }

    const T1: &str = "2025-01-01T00:00:01Z";
    const T2: &str = "2025-01-01T00:00:02Z";
    const T3: &str = "2025-01-01T00:00:03Z";

    fn deploy(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "ns"}, "spec": spec})
    }

    /// A Deployment configuration without a spec.
    fn bare() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "ns"}})
    }

    fn ssa(live: Option<&Value>, config: &Value, mgr: &str, force: bool, now: &str) -> Value {
        apply(live, config, mgr, force, &TestLists, now, "apps/v1", None).unwrap()
    }

    fn entries(obj: &Value) -> Vec<Value> {
        obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn fields_of(obj: &Value, manager: &str, operation: &str) -> Value {
        entries(obj)
            .into_iter()
            .find(|e| e["manager"] == manager && e["operation"] == operation)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    }

    fn conflicts(r: Result<Value, ApplyError>) -> (Vec<(String, String, String)>, String) {
        match r {
            Err(e @ ApplyError::Conflicts(_)) => {
                let ApplyError::Conflicts(cs) = &e else {
                    unreachable!()
                };
                let list = cs
                    .iter()
                    .map(|c| (c.manager.clone(), c.field.clone(), c.message.clone()))
                    .collect();
                assert_eq!(e.code(), 409);
                (list, e.message())
            }
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    #[test]
    fn create_via_apply_records_applied_fields() {
        let mut config = deploy(json!({"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "nginx"}]}}}));
        config["metadata"]["labels"] = json!({"app": "x"});
        let obj = ssa(None, &config, "mgr", false, T1);
        let mut expected = config.clone();
        expected["metadata"]["managedFields"] = json!([{
            "manager": "mgr", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}
            }
        }]);
        assert_eq!(obj, expected);
    }

    #[test]
    fn reapplying_the_same_config_changes_nothing() {
        let config = deploy(json!({"replicas": 3}));
        let first = ssa(None, &config, "mgr", false, T1);
        let second = ssa(Some(&first), &config, "mgr", false, T2);
        assert_eq!(second, first, "no-op apply must not even bump the time");
    }

    #[test]
    fn apply_dropping_a_field_removes_it() {
        let mut config = deploy(json!({"replicas": 3, "paused": true}));
        config["metadata"]["labels"] = json!({"app": "x"});
        let first = ssa(None, &config, "mgr", false, T1);
        let second = ssa(
            Some(&first),
            &deploy(json!({"paused": true})),
            "mgr",
            false,
            T2,
        );
        assert!(second["spec"].get("replicas").is_none());
        assert!(second["metadata"].get("labels").is_none());
        assert_eq!(
            fields_of(&second, "mgr", "Apply"),
            json!({"f:spec": {"f:paused": {}}})
        );
        assert_eq!(second["metadata"]["managedFields"][0]["time"], T2);
    }

    #[test]
    fn fields_not_owned_by_the_applier_survive_its_prune() {
        let first = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
        let mut edited = first.clone();
        edited["spec"]["paused"] = json!(true);
        record_update(
            Some(&first),
            &mut edited,
            "editor",
            &TestLists,
            T2,
            "apps/v1",
            None,
        );
        let pruned = ssa(Some(&edited), &deploy(json!({})), "a", false, T3);
        assert_eq!(pruned["spec"], json!({"paused": true}));
    }

    #[test]
    fn two_appliers_share_a_field_with_the_same_value() {
        let a = deploy(json!({"replicas": 3, "paused": true}));
        let b = deploy(json!({"replicas": 3}));
        let obj = ssa(None, &a, "a", false, T1);
        let obj = ssa(Some(&obj), &b, "b", false, T2);
        assert_eq!(
            fields_of(&obj, "b", "Apply"),
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(
            fields_of(&obj, "a", "Apply"),
            json!({"f:spec": {"f:paused": {}, "f:replicas": {}}})
        );
        // a stops applying replicas: b still owns it, so it stays.
        let obj = ssa(Some(&obj), &deploy(json!({"paused": true})), "a", false, T3);
        assert_eq!(obj["spec"]["replicas"], 3);
        // b stops too: now nobody owns it and it goes.
        let obj = ssa(Some(&obj), &bare(), "b", false, T3);
        assert!(obj["spec"].get("replicas").is_none());
        assert_eq!(entries(&obj).len(), 1, "b's empty entry is dropped");
    }

    #[test]
    fn conflicting_apply_fails_and_force_takes_ownership() {
        let obj = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
        let b = deploy(json!({"replicas": 5}));
        let r = apply(Some(&obj), &b, "b", false, &TestLists, T2, "apps/v1", None);
        let (list, message) = conflicts(r);
        assert_eq!(
            list,
            vec![(
                "a".to_string(),
                ".spec.replicas".to_string(),
                "conflict with \"a\"".to_string()
            )]
        );
        assert_eq!(
            message,
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        let forced = ssa(Some(&obj), &b, "b", true, T2);
        assert_eq!(forced["spec"]["replicas"], 5);
        assert_eq!(
            fields_of(&forced, "a", "Apply"),
            Value::Null,
            "a owns nothing left"
        );
        assert_eq!(
            fields_of(&forced, "b", "Apply"),
            json!({"f:spec": {"f:replicas": {}}})
        );
    }

    #[test]
    fn several_conflicts_are_listed_per_manager() {
        let a = deploy(json!({"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "one"}]}}}));
        let obj = ssa(None, &a, "a", false, T1);
        let mut edited = obj.clone();
        edited["spec"]["paused"] = json!(false);
        record_update(
            Some(&obj),
            &mut edited,
            "ed",
            &TestLists,
            T2,
            "apps/v1",
            None,
        );
        let b = deploy(
            json!({"replicas": 4, "paused": true, "template": {"spec": {"containers": [
            {"name": "c", "image": "two"}]}}}),
        );
        let r = apply(
            Some(&edited),
            &b,
            "b",
            false,
            &TestLists,
            T3,
            "apps/v1",
            None,
        );
        let (list, message) = conflicts(r);
        assert_eq!(list.len(), 3);
        assert_eq!(
            message,
            "Apply failed with 3 conflicts: conflicts with \"a\":\n\
             - .spec.replicas\n\
             - .spec.template.spec.containers[name=\"c\"].image\n\
             conflicts with \"ed\" using apps/v1:\n\
             - .spec.paused"
        );
    }

    #[test]
    fn update_then_apply_conflicts_with_the_updater() {
        let obj = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
        let mut scaled = obj.clone();
        scaled["spec"]["replicas"] = json!(5);
        record_update(
            Some(&obj),
            &mut scaled,
            "kubectl",
            &TestLists,
            T2,
            "apps/v1",
            None,
        );
        assert_eq!(
            fields_of(&scaled, "kubectl", "Update"),
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(
            fields_of(&scaled, "a", "Apply"),
            Value::Null,
            "a lost replicas"
        );
        let ops: Vec<Value> = entries(&scaled)
            .iter()
            .map(|e| e["operation"].clone())
            .collect();
        assert_eq!(ops, vec![json!("Update")]);
        let r = apply(
            Some(&scaled),
            &deploy(json!({"replicas": 3})),
            "a",
            false,
            &TestLists,
            T3,
            "apps/v1",
            None,
        );
        let (_, message) = conflicts(r);
        assert_eq!(
            message,
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn map_list_items_merge_by_key_and_prune_per_item() {
        let a = deploy(json!({"template": {"spec": {"containers": [
            {"name": "a", "image": "a1"}, {"name": "b", "image": "b1"}]}}}));
        let obj = ssa(None, &a, "a", false, T1);
        let b = deploy(json!({"template": {"spec": {"containers": [
            {"name": "b", "env": [{"name": "X", "value": "1"}]},
            {"name": "c", "image": "c1"}]}}}));
        let obj = ssa(Some(&obj), &b, "b", false, T2);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a1"},
                   {"name": "b", "image": "b1", "env": [{"name": "X", "value": "1"}]},
                   {"name": "c", "image": "c1"}])
        );
        // b drops its env and container c; a still owns container b.
        let b2 = deploy(json!({"template": {"spec": {"containers": [{"name": "b"}]}}}));
        let obj = ssa(Some(&obj), &b2, "b", false, T3);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a1"}, {"name": "b", "image": "b1"}])
        );
    }

    #[test]
    fn applied_order_wins_among_shared_items() {
        let a = deploy(json!({"template": {"spec": {"containers": [
            {"name": "x"}, {"name": "y"}, {"name": "z"}]}}}));
        let obj = ssa(None, &a, "a", false, T1);
        let reordered = deploy(json!({"template": {"spec": {"containers": [
            {"name": "z"}, {"name": "x"}, {"name": "y"}]}}}));
        let obj = ssa(Some(&obj), &reordered, "a", false, T2);
        let names: Vec<&Value> = obj["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["name"])
            .collect();
        assert_eq!(names, vec!["z", "x", "y"]);
    }

    #[test]
    fn atomic_lists_are_replaced_and_owned_whole() {
        let a = deploy(json!({"template": {"spec": {"containers": [
            {"name": "c", "args": ["a", "b"]}]}}}));
        let obj = ssa(None, &a, "a", false, T1);
        let b = deploy(json!({"template": {"spec": {"containers": [
            {"name": "c", "args": ["z"]}]}}}));
        let obj = ssa(Some(&obj), &b, "b", true, T2);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["z"])
        );
        assert_eq!(
            fields_of(&obj, "b", "Apply"),
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {".": {}, "f:args": {}, "f:name": {}}}}}}})
        );
    }

    #[test]
    fn set_lists_merge_by_value() {
        let mut a = bare();
        a["metadata"]["finalizers"] = json!(["x/a"]);
        let obj = ssa(None, &a, "a", false, T1);
        assert_eq!(
            fields_of(&obj, "a", "Apply"),
            json!({"f:metadata": {"f:finalizers": {"v:\"x/a\"": {}}}})
        );
        let mut b = bare();
        b["metadata"]["finalizers"] = json!(["x/b"]);
        let obj = ssa(Some(&obj), &b, "b", false, T2);
        assert_eq!(obj["metadata"]["finalizers"], json!(["x/a", "x/b"]));
    }

    #[test]
    fn missing_protocol_key_defaults_to_tcp() {
        let a = deploy(json!({"template": {"spec": {"containers": [
            {"name": "c", "ports": [{"containerPort": 80}]}]}}}));
        let obj = ssa(None, &a, "a", false, T1);
        let f = fields_of(&obj, "a", "Apply");
        let c = &f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
        assert_eq!(
            c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"],
            json!({".": {}, "f:containerPort": {}})
        );
        let b = deploy(json!({"template": {"spec": {"containers": [
            {"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}]}]}}}));
        let obj = ssa(Some(&obj), &b, "b", false, T2);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "protocol": "TCP", "name": "web"}])
        );
    }

    #[test]
    fn null_in_config_removes_a_scalar_but_keeps_ownership() {
        let obj = ssa(None, &deploy(json!({"replicas": 3})), "a", false, T1);
        let obj = ssa(
            Some(&obj),
            &deploy(json!({"replicas": null})),
            "a",
            false,
            T2,
        );
        assert!(obj["spec"].get("replicas").is_none());
        assert_eq!(
            fields_of(&obj, "a", "Apply"),
            json!({"f:spec": {"f:replicas": {}}})
        );
    }

    #[test]
    fn fields_v1_round_trip() {
        let v = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:finalizers": {"v:\"a\"": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}},
                       "f:list": {"i:0": {}}}
        });
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(set.to_fields_v1(), v);
        assert_eq!(
            set.paths(),
            vec![
                ".metadata.labels",
                ".metadata.finalizers[=\"a\"]",
                ".metadata.labels.app",
                ".spec.containers[name=\"c\"]",
                ".spec.containers[name=\"c\"].image",
                ".spec.list[0]",
            ]
        );
        // Unknown element kinds are dropped; null is a member; key order is canonicalised.
        let odd = json!({"f:a": null, "x:future": {}, "k:{\"b\":1,\"a\":\"<\"}": {}});
        let set = FieldSet::from_fields_v1(&odd).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:a": {}, "k:{\"a\":\"\\u003c\",\"b\":1}": {}})
        );
        assert_eq!(
            FieldSet::from_fields_v1(&Value::Null).unwrap(),
            FieldSet::default()
        );
    }

    #[test]
    fn set_operations() {
        let set = |v: Value| FieldSet::from_fields_v1(&v).unwrap();
        let a = set(json!({"f:a": {}, "f:b": {"f:c": {}}}));
        let b = set(json!({"f:b": {"f:c": {}, "f:d": {}}}));
        assert_eq!(
            a.union(&b).to_fields_v1(),
            json!({"f:a": {}, "f:b": {"f:c": {}, "f:d": {}}})
        );
        assert_eq!(
            a.intersection(&b).to_fields_v1(),
            json!({"f:b": {"f:c": {}}})
        );
        assert_eq!(a.difference(&b).to_fields_v1(), json!({"f:a": {}}));
        assert!(a.difference(&a).is_empty());
    }

    #[test]
    fn malformed_fields_v1_is_an_error() {
        for bad in [
            json!("x"),
            json!({"f:a": 1}),
            json!({"k:notjson": {}}),
            json!({"k:[1]": {}}),
            json!({"z": {}}),
            json!({"ab": {}}),
            json!({"i:x": {}}),
            json!({"f:a": {"v:{": {}}}),
        ] {
            assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_config_is_rejected() {
        let run = |config: &Value| {
            apply(None, config, "m", false, &TestLists, T1, "apps/v1", None).unwrap_err()
        };
        let e = run(&json!([1]));
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.message(),
            "error decoding patch: json: cannot unmarshal array into Go value of type \
             map[string]interface {}"
        );
        assert_eq!(
            run(&json!("x")),
            ApplyError::BadRequest(
                "error decoding patch: json: cannot unmarshal string into Go value of type \
                 map[string]interface {}"
                    .into()
            )
        );
        assert_eq!(run(&json!(null)).message(), "invalid object type: /, Kind=");
        let mut wrong_version = deploy(json!({}));
        wrong_version["apiVersion"] = json!("apps/v2");
        assert_eq!(
            run(&wrong_version),
            ApplyError::BadRequest("invalid object type: apps/v2, Kind=Deployment".into())
        );
        let missing_key = deploy(json!({"template": {"spec": {"containers": [{"image": "x"}]}}}));
        let e = run(&missing_key);
        assert_eq!(e.code(), 500);
        assert_eq!(
            e.message(),
            "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): \
             .spec.template.spec.containers: element 0: associative list with keys has an \
             element that omits key field \"name\" (and doesn't have default value)"
        );
        let dup = deploy(json!({"template": {"spec": {"containers": [
            {"name": "c"}, {"name": "c"}]}}}));
        assert_eq!(
            run(&dup).message(),
            "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): \
             .spec.template.spec.containers: duplicate entries for key [name=\"c\"]"
        );
        let mut two = deploy(json!({"template": {"spec": {"containers": ["x"]}}}));
        two["metadata"]["finalizers"] = json!([{"a": 1}]);
        assert_eq!(
            run(&two).message(),
            "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): errors:\n  \
             .metadata.finalizers: element 0: associative list without keys has an element \
             that's a map type\n  \
             .spec.template.spec.containers: element 0: associative list with keys may not \
             have non-map elements"
        );
        let mut with_mf = deploy(json!({}));
        with_mf["metadata"]["managedFields"] = json!([]);
        assert_eq!(
            run(&with_mf),
            ApplyError::BadRequest("metadata.managedFields must be nil".into())
        );
    }

    #[test]
    fn malformed_live_managed_fields_are_rejected_without_panic() {
        let base = ssa(None, &deploy(json!({"replicas": 1})), "a", false, T1);
        let cases = [
            (json!("nope"), "managedFields must be a list"),
            (json!([1]), "is not an object"),
            (
                json!([{"manager": "x", "operation": "Bogus", "apiVersion": "v1",
                        "fieldsType": "FieldsV1"}]),
                "operation must be `Apply` or `Update`",
            ),
            (
                json!([{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1"}]),
                "apiVersion must not be empty",
            ),
            (
                json!([{"manager": "x", "operation": "Update", "apiVersion": "v1"}]),
                "missing fieldsType in managed fields entry 0",
            ),
            (
                json!([{"manager": "x", "operation": "Update", "apiVersion": "v1",
                        "fieldsType": "FieldsV2"}]),
                "invalid fieldsType \"FieldsV2\" in managed fields entry 0",
            ),
            (
                json!([{"manager": "x", "operation": "Update", "apiVersion": "v1",
                        "fieldsType": "FieldsV1", "fieldsV1": "f:a"}]),
                "error decoding versioned set",
            ),
            (
                json!([{"manager": 7, "operation": "Update", "apiVersion": "v1",
                        "fieldsType": "FieldsV1"}]),
                "must be a string",
            ),
        ];
        for (mf, needle) in cases {
            let mut live = base.clone();
            live["metadata"]["managedFields"] = mf;
            let e = apply(
                Some(&live),
                &deploy(json!({"replicas": 2})),
                "a",
                false,
                &TestLists,
                T2,
                "apps/v1",
                None,
            )
            .unwrap_err();
            assert_eq!(e.code(), 500);
            assert!(
                e.message().starts_with("failed to decode managed fields: "),
                "{e}"
            );
            assert!(e.message().contains(needle), "{e} should contain {needle}");
        }
    }

    #[test]
    fn malformed_live_object_is_rejected() {
        let mut live = deploy(json!({"template": {"spec": {"containers": [{"image": "x"}]}}}));
        live["metadata"]["uid"] = json!("u");
        let e = apply(
            Some(&live),
            &deploy(json!({"replicas": 1})),
            "a",
            false,
            &TestLists,
            T1,
            "apps/v1",
            None,
        )
        .unwrap_err();
        assert_eq!(e.code(), 500);
        assert!(e.message().contains("omits key field \"name\""), "{e}");
    }

    #[test]
    fn kind_must_match_the_live_object() {
        let live = ssa(None, &deploy(json!({})), "a", false, T1);
        let mut config = deploy(json!({}));
        config["kind"] = json!("StatefulSet");
        let e = apply(
            Some(&live),
            &config,
            "a",
            false,
            &TestLists,
            T2,
            "apps/v1",
            None,
        );
        assert_eq!(
            e.unwrap_err(),
            ApplyError::BadRequest("invalid object type: apps/v1, Kind=StatefulSet".into())
        );
    }

    fn configmap() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cm", "namespace": "ns", "labels": {"a": "b"},
                            "creationTimestamp": "2025-01-01T00:00:00Z"},
               "data": {"k": "v"}})
    }

    fn update(old: Option<&Value>, new: &mut Value, mgr: &str, now: &str, sub: Option<&str>) {
        record_update(old, new, mgr, &AllAtomicForCm, now, "v1", sub);
    }

    struct AllAtomicForCm;
    impl ListTypes for AllAtomicForCm {
        fn list_kind(&self, path: &[&str]) -> ListKind {
            TestLists.list_kind(path)
        }
    }

    #[test]
    fn create_records_an_update_entry_with_parent_markers() {
        let mut cm = configmap();
        update(None, &mut cm, "kubectl-create", T1, None);
        assert_eq!(
            cm["metadata"]["managedFields"],
            json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                    "time": T1, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                                 "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}])
        );
    }

    #[test]
    fn update_takes_fields_from_others_and_drops_empty_managers() {
        let mut cm = configmap();
        update(None, &mut cm, "creator", T1, None);
        cm["metadata"]["uid"] = json!("u1");
        let mut next = cm.clone();
        next["data"]["k"] = json!("changed");
        next["metadata"]["labels"] = json!({});
        update(Some(&cm), &mut next, "editor", T2, None);
        // creator lost data.k (modified) and labels.a (removed); what is left is the
        // data map and labels map markers.
        assert_eq!(
            fields_of(&next, "creator", "Update"),
            json!({"f:data": {}, "f:metadata": {"f:labels": {}}})
        );
        assert_eq!(
            fields_of(&next, "editor", "Update"),
            json!({"f:data": {"f:k": {}}})
        );
        let mut last = next.clone();
        last.as_object_mut().unwrap().remove("data");
        last["metadata"].as_object_mut().unwrap().remove("labels");
        update(Some(&next), &mut last, "editor", T3, None);
        assert_eq!(entries(&last).len(), 0, "everyone's fields were removed");
        assert!(last["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn update_without_changes_keeps_entries_and_times() {
        let mut cm = configmap();
        update(None, &mut cm, "creator", T1, None);
        cm["metadata"]["uid"] = json!("u1");
        let mut same = cm.clone();
        update(Some(&cm), &mut same, "other", T2, None);
        assert_eq!(same, cm);
    }

    #[test]
    fn untracked_objects_stay_untracked_and_reset_clears() {
        let mut live = configmap();
        live["metadata"]["uid"] = json!("u1");
        let mut next = live.clone();
        next["data"]["k"] = json!("x");
        update(Some(&live), &mut next, "m", T1, None);
        assert!(next["metadata"].get("managedFields").is_none());

        let mut tracked = configmap();
        update(None, &mut tracked, "creator", T1, None);
        tracked["metadata"]["uid"] = json!("u1");
        for reset in [
            json!([]),
            json!([{}]),
            json!([{"manager": "", "time": null}]),
        ] {
            let mut next = tracked.clone();
            next["metadata"]["managedFields"] = reset;
            next["data"]["k"] = json!("y");
            update(Some(&tracked), &mut next, "m", T2, None);
            assert!(next["metadata"].get("managedFields").is_none());
        }
    }

    #[test]
    fn managed_fields_sent_by_the_client_are_used_unless_malformed() {
        let mut tracked = configmap();
        update(None, &mut tracked, "creator", T1, None);
        tracked["metadata"]["uid"] = json!("u1");
        let mut next = tracked.clone();
        next["metadata"]["managedFields"] = json!([{"manager": "claimed", "operation": "Update",
            "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]);
        update(Some(&tracked), &mut next, "m", T2, None);
        assert_eq!(
            fields_of(&next, "claimed", "Update"),
            json!({"f:data": {"f:k": {}}})
        );
        assert_eq!(fields_of(&next, "creator", "Update"), Value::Null);

        // Malformed: the live managedFields are used instead.
        let mut next = tracked.clone();
        next["metadata"]["managedFields"] = json!([{"operation": "Nope"}]);
        update(Some(&tracked), &mut next, "m", T2, None);
        assert_eq!(
            next["metadata"]["managedFields"],
            tracked["metadata"]["managedFields"]
        );

        // On a subresource the request's managedFields are ignored.
        let mut next = tracked.clone();
        next["metadata"]["managedFields"] = json!([]);
        next["status"] = json!({"phase": "x"});
        update(Some(&tracked), &mut next, "kubelet", T2, Some("status"));
        assert_eq!(
            entries(&next)
                .iter()
                .map(|e| (e["manager"].clone(), e.get("subresource").cloned()))
                .collect::<Vec<_>>(),
            vec![
                (json!("creator"), None),
                (json!("kubelet"), Some(json!("status")))
            ]
        );
    }

    #[test]
    fn unreadable_objects_keep_the_live_managed_fields() {
        let mut live = deploy(json!({"replicas": 1}));
        record_update(None, &mut live, "c", &TestLists, T1, "apps/v1", None);
        live["metadata"]["uid"] = json!("u");
        let mut next = live.clone();
        next["spec"]["template"] = json!({"spec": {"containers": [{"image": "x"}]}});
        record_update(Some(&live), &mut next, "m", &TestLists, T2, "apps/v1", None);
        assert_eq!(
            next["metadata"]["managedFields"],
            live["metadata"]["managedFields"]
        );
    }

    #[test]
    fn update_entries_are_per_api_version_and_sorted() {
        let mut cm = configmap();
        update(None, &mut cm, "b", T2, None);
        cm["metadata"]["uid"] = json!("u1");
        let mut next = cm.clone();
        next["data"]["other"] = json!("1");
        record_update(Some(&cm), &mut next, "b", &TestLists, T1, "v1beta1", None);
        let got: Vec<(Value, Value)> = entries(&next)
            .iter()
            .map(|e| (e["manager"].clone(), e["apiVersion"].clone()))
            .collect();
        // Sorted by time first (T1 < T2), so the v1beta1 entry leads.
        assert_eq!(
            got,
            vec![(json!("b"), json!("v1beta1")), (json!("b"), json!("v1"))]
        );
    }

    #[test]
    fn update_managers_are_capped_into_ancient_changes() {
        let mut obj = configmap();
        update(None, &mut obj, "m00", "2025-01-01T00:00:00Z", None);
        obj["metadata"]["uid"] = json!("u1");
        for i in 1..=10 {
            let mut next = obj.clone();
            next["data"][format!("k{i:02}")] = json!("v");
            let now = format!("2025-01-01T00:00:{i:02}Z");
            update(Some(&obj), &mut next, &format!("m{i:02}"), &now, None);
            obj = next;
        }
        let managers: Vec<Value> = entries(&obj).iter().map(|e| e["manager"].clone()).collect();
        assert_eq!(managers.len(), 10);
        assert_eq!(managers[0], "ancient-changes");
        assert!(!managers.contains(&json!("m00")) && !managers.contains(&json!("m01")));
        assert_eq!(
            fields_of(&obj, "ancient-changes", "Update"),
            json!({"f:data": {".": {}, "f:k": {}, "f:k01": {}},
                   "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
        );
        assert_eq!(entries(&obj)[0]["time"], "2025-01-01T00:00:01Z");
    }

    #[test]
    fn first_apply_to_an_untracked_object_conflicts_with_before_first_apply() {
        let mut live = deploy(json!({"replicas": 3}));
        live["metadata"]["uid"] = json!("u1");
        let r = apply(
            Some(&live),
            &deploy(json!({"replicas": 4})),
            "a",
            false,
            &TestLists,
            T1,
            "apps/v1",
            None,
        );
        let (_, message) = conflicts(r);
        assert_eq!(
            message,
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using \
             apps/v1: .spec.replicas"
        );
        let obj = ssa(Some(&live), &deploy(json!({"replicas": 3})), "a", false, T1);
        assert_eq!(
            fields_of(&obj, "before-first-apply", "Update"),
            json!({"f:spec": {".": {}, "f:replicas": {}}})
        );
    }

    #[test]
    fn kubectl_may_take_over_fields_matching_its_last_applied_annotation() {
        let last = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns"},"spec":{"replicas":3}}"#;
        let mut live = deploy(json!({"replicas": 3}));
        live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: last});
        record_update(
            None,
            &mut live,
            "kubectl-client-side-apply",
            &TestLists,
            T1,
            "apps/v1",
            None,
        );
        live["metadata"]["uid"] = json!("u1");

        let mut config = deploy(json!({"replicas": 4}));
        config["metadata"]["annotations"] = json!({"note": "<x>"});
        let obj = ssa(Some(&live), &config, "kubectl", false, T2);
        assert_eq!(obj["spec"]["replicas"], 4);
        assert_eq!(
            obj["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"annotations\":\
             {\"note\":\"\\u003cx\\u003e\"},\"name\":\"d\",\"namespace\":\"ns\"},\"spec\":\
             {\"replicas\":4}}\n"
        );
        // Another manager name gets the plain conflict.
        let r = apply(
            Some(&live),
            &config,
            "other",
            false,
            &TestLists,
            T2,
            "apps/v1",
            None,
        );
        assert_eq!(conflicts(r).0.len(), 1);
        // When live no longer matches the annotation, kubectl conflicts too.
        let mut drifted = live.clone();
        drifted["spec"]["replicas"] = json!(7);
        let r = apply(
            Some(&drifted),
            &config,
            "kubectl",
            false,
            &TestLists,
            T2,
            "apps/v1",
            None,
        );
        assert_eq!(conflicts(r).0.len(), 1);
    }

    #[test]
    fn subresource_entries_are_separate_and_printed() {
        let obj = ssa(None, &deploy(json!({"replicas": 1})), "a", false, T1);
        let mut status_cfg = deploy(json!({}));
        status_cfg.as_object_mut().unwrap().remove("spec");
        status_cfg["status"] = json!({"replicas": 1});
        let obj = apply(
            Some(&obj),
            &status_cfg,
            "a",
            false,
            &TestLists,
            T2,
            "apps/v1",
            Some("status"),
        )
        .unwrap();
        let subs: Vec<Value> = entries(&obj)
            .iter()
            .map(|e| e.get("subresource").cloned().unwrap_or(Value::Null))
            .collect();
        assert_eq!(subs, vec![Value::Null, json!("status")]);
        let mut other = status_cfg.clone();
        other["status"]["replicas"] = json!(2);
        let r = apply(
            Some(&obj),
            &other,
            "b",
            false,
            &TestLists,
            T3,
            "apps/v1",
            None,
        );
        assert_eq!(
            conflicts(r).1,
            "Apply failed with 1 conflict: conflict with \"a\" with subresource \"status\": \
             .status.replicas"
        );
    }

    #[test]
    fn metadata_identity_fields_are_never_owned() {
        let mut config = deploy(json!({}));
        config["metadata"]["uid"] = json!("u");
        config["metadata"]["resourceVersion"] = json!("5");
        config["metadata"]["generation"] = json!(1);
        config["metadata"]["creationTimestamp"] = json!(T1);
        let obj = ssa(None, &config, "a", false, T1);
        // Only the empty spec object is left to own.
        assert_eq!(fields_of(&obj, "a", "Apply"), json!({"f:spec": {}}));
    }

    #[test]
    fn apply_entries_sort_before_update_entries() {
        let mut created = deploy(json!({"paused": true}));
        record_update(
            None,
            &mut created,
            "creator",
            &TestLists,
            T1,
            "apps/v1",
            None,
        );
        created["metadata"]["uid"] = json!("u1");
        let obj = ssa(
            Some(&created),
            &deploy(json!({"replicas": 2})),
            "zed",
            false,
            T2,
        );
        let order: Vec<(Value, Value)> = entries(&obj)
            .iter()
            .map(|e| (e["manager"].clone(), e["operation"].clone()))
            .collect();
        assert_eq!(
            order,
            vec![
                (json!("zed"), json!("Apply")),
                (json!("creator"), json!("Update"))
            ]
        );
    }

    #[test]
    fn empty_manager_is_unknown() {
        let obj = ssa(None, &deploy(json!({"replicas": 1})), "", false, T1);
        assert_eq!(entries(&obj)[0]["manager"], "unknown");
    }

    #[test]
    fn default_manager_from_user_agent() {
        assert_eq!(
            default_manager("kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef"),
            "kubectl"
        );
        assert_eq!(default_manager("kube-rs"), "kube-rs");
        assert_eq!(default_manager(""), "");
        assert_eq!(default_manager("a\u{7}b\tc/x"), "abc");
        assert_eq!(default_manager(&"x".repeat(300)).len(), 128);
        assert_eq!(default_manager(&"é".repeat(100)).len(), 128);
    }

    #[test]
    fn timestamps_order_entries() {
        assert_eq!(rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            rfc3339_seconds("2025-01-01T00:00:01.5+01:00"),
            Some(1_735_686_001)
        );
        assert_eq!(rfc3339_seconds("garbage"), None);
        assert_eq!(rfc3339_seconds("2025-01-01T00:00:01Q"), None);
    }
}
