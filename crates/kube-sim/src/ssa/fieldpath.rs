//! Path elements and field sets (structured-merge-diff's `fieldpath`), with the ordering and
//! FieldsV1 keys the server writes.

use super::text::{go_json, go_json_string, json_type_name, value_to_string_json};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One step of a field path. The variant order is structured-merge-diff's ordering
/// (field names, then keys, then values, then indices), which fixes the FieldsV1 key order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum PathElement {
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
    pub(super) fn serialize(&self) -> String {
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
    pub(super) fn deserialize(s: &str) -> Result<Option<PathElement>, String> {
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
    pub(super) fn display(&self) -> String {
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

pub(super) fn path_display(path: &[PathElement]) -> String {
    path.iter().map(PathElement::display).collect()
}

/// A set of field paths, stored as a tree like structured-merge-diff's `fieldpath.Set`:
/// `members` are paths ending at this node, `children` hold longer paths. A path can be both a
/// member and a prefix of other members (FieldsV1 writes that as `".": {}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub(super) members: BTreeSet<PathElement>,
    pub(super) children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
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
    /// before its children, as structured-merge-diff iterates. Only tests print sets.
    #[cfg(test)]
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

    pub(super) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub(super) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    pub(super) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe).filter(|c| !c.is_empty())
    }

    /// Adds, at every level, the named fields that have children as members, so that pruning
    /// can remove a whole struct nobody owns anything in. Without a type schema every object
    /// key counts as a named field.
    pub(super) fn ensure_named_fields_are_members(&self) -> FieldSet {
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

    pub(super) fn iterate(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.iterate_prefix(&mut Vec::new(), &mut out);
        out
    }

    pub(super) fn iterate_prefix(
        &self,
        prefix: &mut Vec<PathElement>,
        out: &mut Vec<Vec<PathElement>>,
    ) {
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

    pub(super) fn emit_v1(&self, include_self: bool) -> Map<String, Value> {
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
pub(super) fn read_v1(m: &Map<String, Value>) -> Result<(Option<FieldSet>, bool), String> {
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
