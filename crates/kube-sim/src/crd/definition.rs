//! The CustomResourceDefinition object itself: its v1 defaults, `status.storedVersions`
//! bookkeeping, the 422 causes of `validate_crd`, and `crd_info`, what serving it needs.

use super::common::{arr_at, bool_at, immutable, json_eq, not_supported, str_at, strings_at};
use super::schema::Schema;
use super::schema_rules::validate_schema_block;
use crate::field_error::{FieldError, child, index};
use crate::json::go_quote;
use crate::validation::{dns1035_label_errors, dns1123_subdomain_errors};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What kube-sim needs to serve one CRD version.
#[derive(Debug, Clone)]
pub struct ServedVersion {
    pub name: String,
    pub storage: bool,
    pub status_subresource: bool,
    /// The `subresources.scale` object (specReplicasPath, statusReplicasPath, labelSelectorPath).
    pub scale_subresource: Option<Value>,
    pub schema: Option<Schema>,
    pub printer_columns: Vec<Value>,
}

/// What kube-sim needs to serve a CRD.
#[derive(Debug, Clone)]
pub struct CrdInfo {
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Served versions only, in spec order.
    pub versions: Vec<ServedVersion>,
}

/// Reads a (valid) CRD. Fails with a plain message on a CRD that [`validate_crd`] would reject
/// in ways that make it unservable.
pub fn crd_info(crd: &Value) -> Result<CrdInfo, String> {
    let mut crd = crd.clone();
    set_crd_defaults(&mut crd);
    let spec = crd
        .get("spec")
        .filter(|s| s.is_object())
        .ok_or("spec: must be an object")?;
    let names = spec
        .get("names")
        .filter(|s| s.is_object())
        .ok_or("spec.names: must be an object")?;
    let need = |v: &Value, k: &str, what: &str| -> Result<String, String> {
        str_at(v, k)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("{what}: Required value"))
    };
    let mut versions = Vec::new();
    for (i, v) in arr_at(spec, "versions").iter().enumerate() {
        if !bool_at(v, "served") {
            continue;
        }
        let schema = match v.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            Some(s) => Some(
                Schema::parse(s)
                    .map_err(|e| format!("spec.versions[{i}].schema.openAPIV3Schema.{e}"))?,
            ),
            None => None,
        };
        let sub = v.get("subresources");
        versions.push(ServedVersion {
            name: need(v, "name", &format!("spec.versions[{i}].name"))?,
            storage: bool_at(v, "storage"),
            status_subresource: sub
                .and_then(|s| s.get("status"))
                .is_some_and(|s| !s.is_null()),
            scale_subresource: sub
                .and_then(|s| s.get("scale"))
                .filter(|s| !s.is_null())
                .cloned(),
            schema,
            printer_columns: arr_at(v, "additionalPrinterColumns").to_vec(),
        });
    }
    Ok(CrdInfo {
        group: need(spec, "group", "spec.group")?,
        plural: need(names, "plural", "spec.names.plural")?,
        singular: need(names, "singular", "spec.names.singular")?,
        kind: need(names, "kind", "spec.names.kind")?,
        list_kind: need(names, "listKind", "spec.names.listKind")?,
        short_names: strings_at(names, "shortNames"),
        categories: strings_at(names, "categories"),
        namespaced: str_at(spec, "scope") != Some("Cluster"),
        versions,
    })
}

/// The v1 defaulting of a CRD (`SetDefaults_CustomResourceDefinition`).
pub(super) fn set_crd_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    match spec.get_mut("conversion") {
        Some(Value::Object(conv)) => {
            if let Some(Value::Object(service)) = conv
                .get_mut("webhook")
                .and_then(|w| w.get_mut("clientConfig"))
                .and_then(|c| c.get_mut("service"))
            {
                service.entry("port").or_insert(Value::from(443));
            }
        }
        _ => {
            spec.insert("conversion".into(), serde_json::json!({"strategy": "None"}));
        }
    }
}

pub(super) fn storage_version(crd: &Value) -> Option<String> {
    crd.get("spec")
        .map(|s| arr_at(s, "versions"))
        .unwrap_or(&[])
        .iter()
        .find(|v| bool_at(v, "storage"))
        .and_then(|v| str_at(v, "name"))
        .map(str::to_string)
}

/// What the server does to a CRD before validating and storing it: the v1 defaults
/// (`names.singular`, `names.listKind`, `conversion.strategy: None`, webhook service port 443),
/// and `status` (reset on create, carried over from `old` on update) with the storage version
/// added to `status.storedVersions`. Generation and the controllers' conditions and
/// `acceptedNames` are the caller's.
pub fn prepare_crd(crd: &mut Value, old: Option<&Value>) {
    set_crd_defaults(crd);
    let mut stored: Vec<Value> = match old {
        None => Vec::new(),
        Some(o) => o
            .get("status")
            .map(|s| arr_at(s, "storedVersions").to_vec())
            .unwrap_or_default(),
    };
    if let Some(sv) = storage_version(crd)
        && !stored.iter().any(|v| v.as_str() == Some(&sv))
    {
        stored.push(Value::String(sv));
    }
    let mut status = match old.and_then(|o| o.get("status")) {
        Some(Value::Object(s)) => s.clone(),
        _ => Map::new(),
    };
    status.insert("storedVersions".into(), Value::Array(stored));
    if let Some(m) = crd.as_object_mut() {
        m.insert("status".into(), Value::Object(status));
    }
}

pub(super) fn is_established(crd: &Value) -> bool {
    crd.get("status")
        .map(|s| arr_at(s, "conditions"))
        .unwrap_or(&[])
        .iter()
        .any(|c| str_at(c, "type") == Some("Established") && str_at(c, "status") == Some("True"))
}

/// How the v1 CRD looks once the server converts it to its internal form: per-version
/// schema, subresources and printer columns that are identical in every version move to the
/// top level, so errors about them are reported under `spec.validation`, `spec.subresources`,
/// `spec.additionalPrinterColumns` instead of `spec.versions[i]`.
pub(super) struct Hoisted<'a> {
    pub(super) versions: &'a [Value],
    pub(super) schema: Option<Option<&'a Value>>,
    pub(super) subresources: Option<Option<&'a Value>>,
    pub(super) columns: Option<&'a [Value]>,
}

pub(super) fn hoist(versions: &[Value]) -> Hoisted<'_> {
    let same = |k: &str| -> bool {
        let first = versions
            .first()
            .and_then(|v| v.get(k))
            .filter(|x| !x.is_null());
        versions
            .iter()
            .all(|v| match (v.get(k).filter(|x| !x.is_null()), first) {
                (None, None) => true,
                (Some(a), Some(b)) => json_eq(a, b),
                _ => false,
            })
    };
    if versions.is_empty() {
        return Hoisted {
            versions,
            schema: None,
            subresources: None,
            columns: None,
        };
    }
    let first = versions.first();
    Hoisted {
        versions,
        schema: same("schema")
            .then(|| first.and_then(|v| v.get("schema")).filter(|x| !x.is_null())),
        subresources: same("subresources").then(|| {
            first
                .and_then(|v| v.get("subresources"))
                .filter(|x| !x.is_null())
        }),
        columns: {
            fn cols(v: &Value) -> &[Value] {
                arr_at(v, "additionalPrinterColumns")
            }
            let f = first.map(cols).unwrap_or(&[]);
            let all_same = versions.iter().all(|v| {
                cols(v).len() == f.len() && cols(v).iter().zip(f).all(|(a, b)| json_eq(a, b))
            });
            all_same.then_some(f)
        },
    }
}

impl Hoisted<'_> {
    pub(super) fn version_schema(&self, i: usize) -> Option<&Value> {
        match self.schema {
            Some(_) => None,
            None => self
                .versions
                .get(i)
                .and_then(|v| v.get("schema"))
                .filter(|x| !x.is_null()),
        }
    }

    pub(super) fn version_subresources(&self, i: usize) -> Option<&Value> {
        match self.subresources {
            Some(_) => None,
            None => self
                .versions
                .get(i)
                .and_then(|v| v.get("subresources"))
                .filter(|x| !x.is_null()),
        }
    }

    /// `getSubresourcesForVersion`.
    pub(super) fn subresources_for(&self, i: usize) -> Option<&Value> {
        match self.subresources {
            Some(top) => top,
            None => self.version_subresources(i),
        }
    }

    pub(super) fn any_status(&self) -> bool {
        let has = |s: Option<&Value>| {
            s.and_then(|s| s.get("status"))
                .is_some_and(|x| !x.is_null())
        };
        (0..self.versions.len()).any(|i| has(self.subresources_for(i)))
    }
}

/// The server's `must contain unique …` style errors echo whole Go structs; kube-sim echoes
/// the JSON instead.
pub(super) fn versions_value(spec: &Value) -> Value {
    Value::Array(arr_at(spec, "versions").to_vec())
}

/// Validates a CRD on create (`old` = None) or update, returning the 422 causes the server
/// returns, with its messages and field paths. The object is first defaulted as the server
/// would ([`prepare_crd`]); passing an already prepared object is fine.
///
/// Not checked: generic ObjectMeta rules other than `metadata.name` (the caller's), CEL rule
/// compilation and cost, `selectableFields`, webhook URL/service details and CA bundles, and
/// the update-time leniency for pre-existing violations other than a missing schema.
pub fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut crd = crd.clone();
    let old_prepared = old.map(|o| {
        let mut o = o.clone();
        set_crd_defaults(&mut o);
        o
    });
    prepare_crd(&mut crd, old);
    let mut errs = Vec::new();
    let null = Value::Null;
    let spec = crd.get("spec").unwrap_or(&null);
    let group = str_at(spec, "group").unwrap_or("");
    let names = spec.get("names").unwrap_or(&null);
    let plural = str_at(names, "plural").unwrap_or("");

    // metadata.name, with the CRD's own name rule.
    match crd.get("metadata").and_then(|m| str_at(m, "name")) {
        Some(name) if !name.is_empty() => {
            for e in dns1123_subdomain_errors(name) {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    Value::String(name.into()),
                    e,
                ));
            }
            if name != format!("{plural}.{group}") {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    Value::String(name.into()),
                    "must be spec.names.plural+\".\"+spec.group",
                ));
            }
        }
        _ => errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )),
    }

    errs.extend(validate_spec(spec, old_prepared.as_ref()));

    if let Some(old) = &old_prepared {
        let old_spec = old.get("spec").unwrap_or(&null);
        let old_names = old_spec.get("names").unwrap_or(&null);
        let field_value =
            |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::String(String::new()));
        if is_established(old) {
            if !json_eq(&field_value(spec, "scope"), &field_value(old_spec, "scope")) {
                errs.push(immutable("spec.scope", field_value(spec, "scope")));
            }
            if !json_eq(&field_value(names, "kind"), &field_value(old_names, "kind")) {
                errs.push(immutable("spec.names.kind", field_value(names, "kind")));
            }
        }
        if !json_eq(&field_value(spec, "group"), &field_value(old_spec, "group")) {
            errs.push(immutable("spec.group", field_value(spec, "group")));
        }
        if !json_eq(
            &field_value(names, "plural"),
            &field_value(old_names, "plural"),
        ) {
            errs.push(immutable("spec.names.plural", field_value(names, "plural")));
        }
    }

    errs.extend(validate_stored_versions(&crd));
    errs.extend(validate_api_approval(&crd, old_prepared.as_ref()));
    let old_preserves = old_prepared.as_ref().is_some_and(|o| {
        o.get("spec")
            .is_some_and(|s| bool_at(s, "preserveUnknownFields"))
    });
    if bool_at(spec, "preserveUnknownFields") && !old_preserves {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

pub(super) fn validate_stored_versions(crd: &Value) -> Vec<FieldError> {
    let path = "status.storedVersions";
    let stored = crd
        .get("status")
        .map(|s| arr_at(s, "storedVersions"))
        .unwrap_or(&[]);
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            Value::Array(vec![]),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let versions = crd
        .get("spec")
        .map(|s| arr_at(s, "versions"))
        .unwrap_or(&[]);
    let mut remaining: Vec<(usize, &str)> = stored
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_str().map(|s| (i, s)))
        .collect();
    for v in versions {
        let name = str_at(v, "name").unwrap_or("");
        let found = remaining.iter().any(|(_, s)| *s == name);
        if bool_at(v, "storage") && !found {
            errs.push(FieldError::invalid(
                path,
                Value::Array(stored.to_vec()),
                format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, s)| *s != name);
    }
    for (i, v) in remaining {
        errs.push(FieldError::invalid(
            index(path, i),
            Value::String(v.into()),
            format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
    errs
}

pub(super) const APPROVAL: &str = "api-approved.kubernetes.io";

#[derive(PartialEq)]
pub(super) enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

pub(super) fn approval_state(crd: &Value) -> Approval {
    let a = crd
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| str_at(a, APPROVAL))
        .unwrap_or("");
    if a.is_empty() {
        Approval::Missing
    } else if a.starts_with("unapproved") {
        Approval::Bypassed
    } else if a.split_once("://").is_some_and(|(scheme, rest)| {
        scheme
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_alphabetic)
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            && !rest.is_empty()
            && !rest.starts_with('/')
    }) {
        Approval::Approved
    } else {
        Approval::Invalid
    }
}

pub(super) fn validate_api_approval(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let group = crd
        .get("spec")
        .and_then(|s| str_at(s, "group"))
        .unwrap_or("");
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if !protected {
        return vec![];
    }
    let new = approval_state(crd);
    if old.is_some_and(|o| approval_state(o) == new) {
        return vec![];
    }
    let field = format!("metadata.annotations[{APPROVAL}]");
    let value = crd
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(APPROVAL))
        .cloned();
    match new {
        Approval::Missing => vec![FieldError::required(
            field,
            format!(
                "protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111",
                go_quote(APPROVAL)
            ),
        )],
        Approval::Invalid => vec![FieldError::invalid(
            field,
            value.unwrap_or(Value::String(String::new())),
            format!(
                "protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
                go_quote(APPROVAL)
            ),
        )],
        Approval::Approved | Approval::Bypassed => vec![],
    }
}

pub(super) fn validate_names(names: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let label = |k: &str, errs: &mut Vec<FieldError>| {
        if let Some(v) = str_at(names, k).filter(|v| !v.is_empty()) {
            let e = dns1035_label_errors(v);
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    child(path, k),
                    Value::String(v.into()),
                    e.join(","),
                ));
            }
        }
    };
    label("plural", &mut errs);
    label("singular", &mut errs);
    for k in ["kind", "listKind"] {
        if let Some(v) = str_at(names, k).filter(|v| !v.is_empty()) {
            let e = dns1035_label_errors(&v.to_lowercase());
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    child(path, k),
                    Value::String(v.into()),
                    format!(
                        "may have mixed case, but should otherwise match: {}",
                        e.join(",")
                    ),
                ));
            }
        }
    }
    for (i, s) in arr_at(names, "shortNames").iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        let e = dns1035_label_errors(s);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                index(&child(path, "shortNames"), i),
                Value::String(s.into()),
                e.join(","),
            ));
        }
    }
    let kind = str_at(names, "kind").unwrap_or("");
    if !kind.is_empty() && Some(kind) == str_at(names, "listKind") {
        errs.push(FieldError::invalid(
            child(path, "listKind"),
            Value::String(kind.into()),
            "kind and listKind may not be the same",
        ));
    }
    for (i, s) in arr_at(names, "categories").iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        let e = dns1035_label_errors(s);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                index(&child(path, "categories"), i),
                Value::String(s.into()),
                e.join(","),
            ));
        }
    }
    errs
}

/// `validateCustomResourceDefinitionSpec`, in its order.
pub(super) fn validate_spec(spec: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let null = Value::Null;
    let group = str_at(spec, "group").unwrap_or("");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let e = dns1123_subdomain_errors(group);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                "spec.group",
                Value::String(group.into()),
                e.join(","),
            ));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                Value::String(group.into()),
                "should be a domain with at least one dot",
            ));
        }
    }
    match str_at(spec, "scope").unwrap_or("") {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(not_supported(
            "spec.scope",
            Value::String(other.into()),
            &["Cluster".into(), "Namespaced".into()],
        )),
    }

    let versions = arr_at(spec, "versions");
    let h = hoist(versions);
    let preserve = bool_at(spec, "preserveUnknownFields");
    let has_schema = |s: Option<&Value>| {
        s.and_then(|s| s.get("openAPIV3Schema"))
            .is_some_and(|x| !x.is_null())
    };
    // A missing schema is tolerated on update only if the stored CRD already lacked one.
    let old_all_schemas = old.is_none_or(|o| {
        let ov = o.get("spec").map(|s| arr_at(s, "versions")).unwrap_or(&[]);
        ov.iter().all(|v| has_schema(v.get("schema")))
    });
    let top_schema = h.schema.flatten();
    if !has_schema(top_schema) {
        for (i, v) in versions.iter().enumerate() {
            let own = h.version_schema(i);
            if has_schema(own) {
                continue;
            }
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if old_all_schemas {
                errs.push(FieldError::required(path, "schemas are required"));
            } else if !preserve && bool_at(v, "served") {
                errs.push(FieldError::required(
                    path,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    let any_defaults = versions.iter().any(|v| {
        v.get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .is_some_and(schema_has_default)
    });
    if any_defaults && preserve {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            Value::Bool(true),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage = 0;
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let vp = format!("spec.versions[{i}]");
        if bool_at(v, "storage") {
            storage += 1;
        }
        let name = str_at(v, "name").unwrap_or("");
        if !seen.insert(name.to_string()) {
            unique = false;
        }
        let e = dns1035_label_errors(name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                child(&vp, "name"),
                Value::String(name.into()),
                e.join(","),
            ));
        }
        errs.extend(validate_deprecation(v, &vp));
        let status_enabled = h
            .subresources_for(i)
            .and_then(|s| s.get("status"))
            .is_some_and(|x| !x.is_null());
        if let Some(schema) = h.version_schema(i) {
            errs.extend(validate_schema_block(
                schema,
                status_enabled,
                &child(&vp, "schema"),
            ));
        }
        if let Some(sub) = h.version_subresources(i) {
            errs.extend(validate_subresources(sub, &child(&vp, "subresources")));
        }
        if h.columns.is_none() {
            for (j, c) in arr_at(v, "additionalPrinterColumns").iter().enumerate() {
                errs.extend(validate_column(
                    c,
                    &index(&child(&vp, "additionalPrinterColumns"), j),
                ));
            }
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value(spec),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value(spec),
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(first) = versions.first() {
        // The internal form carries versions[0].name as spec.version and validates it again.
        let name = str_at(first, "name").unwrap_or("");
        if !name.is_empty() {
            let e = dns1035_label_errors(name);
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.version",
                    Value::String(name.into()),
                    e.join(","),
                ));
            }
        }
    }
    let names = spec.get("names").unwrap_or(&null);
    for k in ["plural", "singular", "kind", "listKind"] {
        if str_at(names, k).unwrap_or("").is_empty() {
            errs.push(FieldError::required(format!("spec.names.{k}"), ""));
        }
    }
    errs.extend(validate_names(names, "spec.names"));
    if let Some(schema) = top_schema {
        errs.extend(validate_schema_block(
            schema,
            h.any_status(),
            "spec.validation",
        ));
    }
    if let Some(sub) = h.subresources.flatten() {
        errs.extend(validate_subresources(sub, "spec.subresources"));
    }
    if let Some(cols) = h.columns {
        for (j, c) in cols.iter().enumerate() {
            errs.extend(validate_column(
                c,
                &index("spec.additionalPrinterColumns", j),
            ));
        }
    }
    errs.extend(validate_conversion(spec.get("conversion"), preserve));
    errs
}

pub(super) fn validate_deprecation(v: &Value, vp: &str) -> Vec<FieldError> {
    let Some(w) = v.get("deprecationWarning").filter(|w| !w.is_null()) else {
        return vec![];
    };
    let path = child(vp, "deprecationWarning");
    let text = w.as_str().unwrap_or("");
    let mut msgs = Vec::new();
    if !bool_at(v, "deprecated") {
        msgs.push("can only be set for deprecated versions".to_string());
    } else {
        if text.len() > 256 {
            msgs.push("must be <= 256 characters long".into());
        }
        if text.is_empty() {
            msgs.push("must not be an empty string".into());
        }
        // Go's unicode.IsPrint fails first for control characters and non-ASCII spaces.
        if let Some((i, _)) = text
            .char_indices()
            .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' '))
        {
            msgs.push(format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"));
        }
    }
    msgs.into_iter()
        .map(|m| FieldError::invalid(path.clone(), w.clone(), m))
        .collect()
}

pub(super) fn simple_json_path_errors(s: &str, path: &str) -> Vec<FieldError> {
    if s.is_empty() {
        vec![FieldError::invalid(
            path,
            Value::String(s.into()),
            "must not be empty",
        )]
    } else if !s.starts_with('.') {
        vec![FieldError::invalid(
            path,
            Value::String(s.into()),
            "must be a simple json path starting with .",
        )]
    } else {
        vec![]
    }
}

pub(super) fn validate_subresources(sub: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = sub.get("scale").filter(|s| !s.is_null()) else {
        return errs;
    };
    for (k, prefix, what) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let p = child(path, &format!("scale.{k}"));
        match str_at(scale, k).unwrap_or("") {
            "" => errs.push(FieldError::required(p, "")),
            v => {
                let e = simple_json_path_errors(v, &p);
                if !e.is_empty() {
                    errs.extend(e);
                } else if !v.starts_with(prefix) {
                    errs.push(FieldError::invalid(p, Value::String(v.into()), what));
                }
            }
        }
    }
    if let Some(v) = str_at(scale, "labelSelectorPath").filter(|v| !v.is_empty()) {
        let p = child(path, "scale.labelSelectorPath");
        let e = simple_json_path_errors(v, &p);
        if !e.is_empty() {
            errs.extend(e);
        } else if !v.starts_with(".spec.") && !v.starts_with(".status.") {
            errs.push(FieldError::invalid(
                p,
                Value::String(v.into()),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

pub(super) fn validate_column(c: &Value, path: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let mut errs = Vec::new();
    if str_at(c, "name").unwrap_or("").is_empty() {
        errs.push(FieldError::required(child(path, "name"), ""));
    }
    match str_at(c, "type").unwrap_or("") {
        "" => errs.push(FieldError::required(
            child(path, "type"),
            format!("must be one of {TYPES}"),
        )),
        t if !TYPES.split(',').any(|x| x == t) => errs.push(FieldError::invalid(
            child(path, "type"),
            Value::String(t.into()),
            format!("must be one of {TYPES}"),
        )),
        _ => {}
    }
    if let Some(f) = str_at(c, "format").filter(|f| !f.is_empty())
        && !FORMATS.split(',').any(|x| x == f)
    {
        errs.push(FieldError::invalid(
            child(path, "format"),
            Value::String(f.into()),
            format!("must be one of {FORMATS}"),
        ));
    }
    match str_at(c, "jsonPath").unwrap_or("") {
        "" => errs.push(FieldError::required(child(path, "JSONPath"), "")),
        p => errs.extend(simple_json_path_errors(p, &child(path, "JSONPath"))),
    }
    errs
}

pub(super) fn validate_conversion(conv: Option<&Value>, preserve: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conv) = conv.filter(|c| !c.is_null()) else {
        return errs;
    };
    let strategy = str_at(conv, "strategy").unwrap_or("");
    if strategy != "None" && preserve {
        errs.push(FieldError::invalid(
            "spec.conversion.strategy",
            Value::String(strategy.into()),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match strategy {
        "" => errs.push(FieldError::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => errs.push(not_supported(
            "spec.conversion.strategy",
            Value::String(other.into()),
            &["None".into(), "Webhook".into()],
        )),
    }
    let webhook = conv.get("webhook").filter(|w| !w.is_null());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let review = webhook
        .map(|w| arr_at(w, "conversionReviewVersions"))
        .unwrap_or(&[]);
    if strategy == "Webhook" {
        match client {
            None => errs.push(FieldError::required(
                "spec.conversion.webhookClientConfig",
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let has = |k: &str| cc.get(k).is_some_and(|x| !x.is_null());
                if has("url") == has("service") {
                    errs.push(FieldError::required(
                        "spec.conversion.webhookClientConfig",
                        "exactly one of url or service is required",
                    ));
                }
            }
        }
        let path = "spec.conversion.conversionReviewVersions";
        if review.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else {
            let mut seen = HashSet::new();
            let mut accepted = false;
            for (i, v) in review.iter().enumerate() {
                let s = v.as_str().unwrap_or("");
                if !seen.insert(s) {
                    errs.push(FieldError::invalid(
                        index(path, i),
                        Value::String(s.into()),
                        "duplicate version",
                    ));
                    continue;
                }
                for e in dns1035_label_errors(s) {
                    errs.push(FieldError::invalid(
                        index(path, i),
                        Value::String(s.into()),
                        e,
                    ));
                }
                accepted |= s == "v1" || s == "v1beta1";
            }
            if !accepted {
                errs.push(FieldError::invalid(
                    path,
                    Value::Array(review.to_vec()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if client.is_some() {
            errs.push(FieldError::forbidden(
                "spec.conversion.webhookClientConfig",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review.is_empty() {
            errs.push(FieldError::forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

pub(super) fn schema_has_default(s: &Value) -> bool {
    match s {
        Value::Object(m) => {
            m.get("default").is_some_and(|d| !d.is_null())
                || m.iter().any(|(k, v)| match k.as_str() {
                    "properties" | "patternProperties" | "definitions" | "dependencies" => v
                        .as_object()
                        .is_some_and(|p| p.values().any(schema_has_default)),
                    "items" | "additionalProperties" | "additionalItems" | "not" => match v {
                        Value::Array(a) => a.iter().any(schema_has_default),
                        other => schema_has_default(other),
                    },
                    "allOf" | "anyOf" | "oneOf" => v
                        .as_array()
                        .is_some_and(|a| a.iter().any(schema_has_default)),
                    _ => false,
                })
        }
        _ => false,
    }
}
