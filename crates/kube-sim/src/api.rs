//! The verbs: get, list, create, update, patch, delete, deletecollection and watch start, with
//! the semantics of a real API server (preconditions, generation, the status subresource,
//! finalizers, managed fields, CRDs becoming served resources).
//!
//! Everything here runs under one lock and is synchronous; the HTTP layer and the built-in
//! controllers (garbage collector, namespace controller, workload simulator) both call it.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::admission::{self, FieldValidation};
use crate::admission_policy::{self, Requester};
use crate::builtin_lists::BuiltinLists;
use crate::crd;
use crate::errors::{self, ApiError};
use crate::field_error::FieldError;
use crate::patch;
use crate::resources::{Catalogue, GroupResource, Origin, ResourceType};
use crate::selector::{FieldSelector, LabelSelector};
use crate::ssa;
use crate::store::{self, Store};

/// Who is asking and how: the parts of a request that shape a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `fieldManager`, or the name derived from the User-Agent.
    pub manager: String,
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// For server-side apply.
    pub force: bool,
    /// Who asks, for admission policies (`admission_policy.rs`); `None` for kube-sim's own
    /// writes, which are not admitted.
    pub requester: Option<Requester>,
}

/// The result of a write: HTTP status, body and warnings.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub code: u16,
    pub body: Value,
    pub warnings: Vec<String>,
}

impl Outcome {
    fn new(code: u16, body: Value) -> Self {
        Self {
            code,
            body,
            warnings: Vec::new(),
        }
    }

    fn warned(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }
}

/// The patch types the server accepts, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let ct = ct.split(';').next().unwrap_or_default().trim();
        match ct {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
    /// Who asks, for admission policies; `None` for kube-sim's own deletes.
    pub requester: Option<Requester>,
}

/// What a list or watch selects.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// `resourceVersion` of a list: empty or "0" means "current".
    pub resource_version: String,
    /// `resourceVersionMatch`: `Exact` or `NotOlderThan`.
    pub resource_version_match: Option<String>,
}

pub const ORPHAN_FINALIZER: &str = "orphan";
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The whole state of the emulated cluster.
pub struct Cluster {
    pub catalogue: Catalogue,
    pub store: Store,
    next_cluster_ip: u32,
    random: u64,
}

impl Cluster {
    pub fn new(history_limit: usize, watch_buffer: usize) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            catalogue: Catalogue::builtin(),
            store: Store::new(history_limit, watch_buffer),
            next_cluster_ip: 1,
            random: seed | 1,
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: unpredictable enough for uids and generated names, no dependency.
        let mut x = self.random;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.random = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn new_uid(&mut self) -> String {
        let a = self.next_random();
        let b = self.next_random();
        let hex = format!("{a:016x}{b:016x}");
        // Version 4, variant 10xx, as a real server's uuid.NewUUID-based uids look.
        format!(
            "{}-{}-4{}-{:x}{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[13..16],
            8 | (b & 3),
            &hex[17..20],
            &hex[20..32]
        )
    }

    fn generated_suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5)
            .map(|_| ALPHABET[(self.next_random() % ALPHABET.len() as u64) as usize] as char)
            .collect()
    }

    /// Looks a served resource up.
    pub fn resource(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.catalogue.get(group, version, plural)
    }

    // ----- reads -------------------------------------------------------------------------

    pub fn get(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let obj = self
            .store
            .get(&rt.group_resource(), namespace, name)
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        Ok(self.present(rt, &obj))
    }

    /// An object as served at `rt`'s version.
    pub fn present(&self, rt: &ResourceType, obj: &Value) -> Value {
        present(rt, obj)
    }

    pub fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        let gr = rt.group_resource();
        let requested_rv = self.check_list_resource_version(opts)?;
        let (snapshot_rv, after) = match &opts.continue_token {
            Some(token) => {
                let (rv, key) = decode_continue(token)?;
                if rv < self.store.compacted_rv() {
                    return Err(ApiError::gone(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    ));
                }
                (rv, Some(key))
            }
            None => match requested_rv {
                // An exact list is read at that resourceVersion, from the undone history.
                Some(rv) if opts.resource_version_match.as_deref() == Some("Exact") => {
                    let start = (namespace.unwrap_or_default().to_string(), String::new());
                    (rv, Some(start))
                }
                _ => (self.store.current_rv(), None),
            },
        };
        let mut items = Vec::new();
        let mut next_key = None;
        let mut remaining = 0usize;
        // Later pages are read at the first page's resourceVersion, as etcd would.
        let source: Box<dyn Iterator<Item = (store::ObjectKey, Arc<Value>)> + '_> = match &after {
            Some(after) => Box::new(
                self.store
                    .snapshot_after(&gr, namespace, snapshot_rv, after),
            ),
            None => Box::new(
                self.store
                    .iter(&gr, namespace, None)
                    .map(|(k, v)| (k.clone(), v.clone())),
            ),
        };
        let pinned = opts.fields.pinned_name();
        for (key, obj) in source {
            if pinned.is_some_and(|p| key.1 != p)
                || !opts.labels.matches(&obj)
                || !opts.fields.matches(&obj)
            {
                continue;
            }
            if opts.limit.is_some_and(|limit| items.len() >= limit) {
                // Past the page: only count what remains, without copying it.
                remaining += 1;
                if next_key.is_none() {
                    next_key = Some(last_key(&items));
                }
                continue;
            }
            items.push(self.list_item(rt, &obj));
        }
        let mut metadata = json!({"resourceVersion": snapshot_rv.to_string()});
        if let Some(Some(key)) = next_key {
            metadata["continue"] = Value::String(encode_continue(snapshot_rv, &key));
            if opts.labels.is_empty() && opts.fields.is_empty() {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        Ok(
            json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": metadata, "items": items}),
        )
    }

    /// Checks a list's resourceVersion and match the way the server does; returns the requested
    /// resourceVersion when one was given.
    fn check_list_resource_version(&self, opts: &ListOptions) -> Result<Option<u64>, ApiError> {
        let rv = opts.resource_version.as_str();
        if opts.continue_token.is_some() && !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        match opts.resource_version_match.as_deref() {
            None => {}
            Some(_) if rv.is_empty() => {
                return Err(ApiError::invalid_list(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            Some("Exact") if rv == "0" => {
                return Err(ApiError::invalid_list(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            Some("Exact" | "NotOlderThan") => {}
            Some(other) => {
                return Err(ApiError::invalid_list(&format!(
                    "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        }
        if rv.is_empty() || rv == "0" {
            return Ok(None);
        }
        let requested: u64 = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
        let current = self.store.current_rv();
        if requested > current {
            let mut e = ApiError::injected(
                504,
                "Timeout",
                format!("Too large resource version: {requested}, current: {current}"),
            );
            e.details = Some(
                json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
            );
            return Err(e);
        }
        if opts.resource_version_match.as_deref() == Some("Exact")
            && requested < self.store.compacted_rv()
        {
            return Err(ApiError::gone(
                "The resourceVersion for the provided list is too old.",
            ));
        }
        Ok(Some(requested))
    }

    /// Built-in list items come without apiVersion/kind, as from a real server; custom
    /// resources keep them.
    fn list_item(&self, rt: &ResourceType, obj: &Value) -> Value {
        let mut item = self.present(rt, obj);
        if !rt.is_custom()
            && let Some(o) = item.as_object_mut()
        {
            o.remove("apiVersion");
            o.remove("kind");
        }
        item
    }

    // ----- create ------------------------------------------------------------------------

    pub fn create(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let mut obj = self.check_body(rt, body)?;
        self.place_in_namespace(rt, namespace, &mut obj)?;
        let meta = obj_meta_mut(&mut obj)?;
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ApiError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let generated = name.is_empty() && !generate.is_empty();
        let name = if generated {
            let n = format!("{generate}{}", self.generated_suffix());
            obj_meta_mut(&mut obj)?.insert("name".into(), Value::String(n.clone()));
            n
        } else {
            name
        };
        if name.is_empty() {
            return Err(ApiError::invalid(
                rt,
                "",
                &[FieldError::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.check_namespace_accepts(rt, &ns)?;
        self.check_crd_accepts(rt)?;
        let meta = obj_meta_mut(&mut obj)?;
        for system in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
            "managedFields",
            "resourceVersion",
        ] {
            meta.remove(system);
        }
        let mut warnings = admission::decode(rt, &mut obj, opts.field_validation)?;
        reset_status_on_create(rt, &mut obj);
        admission::default(rt, &mut obj);
        // The field manager sees the decoded, defaulted object, before the strategy prepares it
        // (finalizers, status), as in the real handler chain.
        let now = now();
        record_creator(rt, &mut obj, &opts.manager, &now);
        admission::prepare(rt, &mut obj, None);
        if rt.group.is_empty()
            && rt.kind == "Service"
            && crate::defaults::allocate_cluster_ip(&mut obj, self.next_cluster_ip)
        {
            self.next_cluster_ip += 1;
        }
        let errors = admission::validate_create(rt, &obj);
        if !errors.is_empty() {
            return Err(ApiError::invalid(rt, &name, &errors));
        }
        warnings.extend(admission_policy::on_create(
            self,
            rt,
            &obj,
            generated,
            opts.requester.as_ref(),
        )?);
        // Existence is checked by storage, after validation; a terminating object says so.
        if let Some(existing) = self.store.get(&rt.group_resource(), &ns, &name) {
            let mut e = ApiError::already_exists(rt, &name);
            if existing.pointer("/metadata/deletionTimestamp").is_some() {
                e.message = format!("object is being deleted: {}", e.message);
            }
            return Err(e);
        }
        let uid = self.new_uid();
        let meta = obj_meta_mut(&mut obj)?;
        meta.insert("uid".into(), Value::String(uid));
        meta.insert("creationTimestamp".into(), Value::String(now.clone()));
        if rt.tracks_generation {
            meta.insert("generation".into(), json!(1));
        }
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            crd_status(&mut obj);
        }
        if opts.dry_run {
            let mut out = Outcome::new(201, self.present(rt, &obj));
            out.warnings = warnings;
            return Ok(out);
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        let mut out = Outcome::new(201, self.present(rt, &stored));
        out.warnings = warnings;
        Ok(out)
    }

    /// Body shape and type checks shared by create and update.
    fn check_body(&self, rt: &ResourceType, body: Value) -> Result<Value, ApiError> {
        let Value::Object(map) = body else {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        };
        let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{}'",
                Value::Object(map.clone())
            )));
        }
        if api_version.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'apiVersion' is missing in '{}'",
                Value::Object(map.clone())
            )));
        }
        if kind != rt.kind {
            return Err(ApiError::bad_request(format!(
                "the server could not decode the object: kind {kind:?} does not match the resource's kind {:?}",
                rt.kind
            )));
        }
        if api_version != rt.api_version() {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
        let mut obj = Value::Object(map);
        if obj.get("metadata").is_none() {
            obj["metadata"] = json!({});
        }
        if !obj["metadata"].is_object() {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: metadata must be an object",
                rt.kind, rt.version, rt.kind
            )));
        }
        Ok(obj)
    }

    fn place_in_namespace(
        &self,
        rt: &ResourceType,
        namespace: &str,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        let meta = obj_meta_mut(obj)?;
        if rt.namespaced {
            let body_ns = meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if body_ns.is_empty() {
                meta.insert("namespace".into(), Value::String(namespace.to_string()));
            } else if body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    fn check_namespace_accepts(&self, rt: &ResourceType, ns: &str) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns_type = self
            .catalogue
            .get("", "v1", "namespaces")
            .ok_or_else(|| ApiError::internal("namespaces not served"))?;
        let Some(namespace) = self.store.get(&ns_type.group_resource(), "", ns) else {
            return Err(ApiError::not_found(&ns_type, ns));
        };
        if namespace.pointer("/metadata/deletionTimestamp").is_some() {
            let mut e = ApiError::forbidden(
                rt,
                "",
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            if let Some(d) = e.details.as_mut() {
                d["causes"] = json!([{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Instances of a CRD that is being deleted cannot be created (customresource_handler.go).
    fn check_crd_accepts(&self, rt: &ResourceType) -> Result<(), ApiError> {
        let Origin::Crd { crd_name, .. } = &rt.origin else {
            return Ok(());
        };
        let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
        let terminating = self
            .store
            .get(&crds, "", crd_name)
            .is_some_and(|crd| crd.pointer("/metadata/deletionTimestamp").is_some());
        if terminating {
            return Err(ApiError::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
        Ok(())
    }

    // ----- update ------------------------------------------------------------------------

    /// PUT, on the main resource or a subresource (`status`).
    pub fn update(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let mut obj = self.check_body(rt, body)?;
        self.place_in_namespace(rt, namespace, &mut obj)?;
        let body_name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let ns = if rt.namespaced { namespace } else { "" };
        let Some(old) = self.store.get(&rt.group_resource(), ns, name) else {
            if rt.allows_create_on_update() && subresource.is_none() {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                }
                return self.create(rt, namespace, obj, opts);
            }
            return Err(ApiError::not_found(rt, name));
        };
        let body_rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_rv.is_empty() && !rt.allows_unconditional_update() {
            return Err(ApiError::invalid_resource(
                rt,
                name,
                &[FieldError::invalid(
                    "metadata.resourceVersion",
                    json!(0),
                    "must be specified for an update",
                )],
            ));
        }
        if !body_rv.is_empty() && body_rv != store::rv_of(&old).to_string() {
            return Err(ApiError::stale(rt, name));
        }
        self.write_update(rt, &old, obj, subresource, opts, true)
    }

    /// The common tail of update and patch: carry system fields over, apply subresource rules,
    /// decode, default, validate, bump generation, record managed fields and store.
    fn write_update(
        &mut self,
        rt: &ResourceType,
        old: &Arc<Value>,
        mut obj: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
        record_manager: bool,
    ) -> Result<Outcome, ApiError> {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(uid) = obj
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        {
            let old_uid = old
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if uid != old_uid {
                return Err(ApiError::conflict(
                    rt,
                    &name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"
                    ),
                ));
            }
        }
        obj = match subresource {
            None => {
                if rt.status_subresource {
                    copy_field(old, &mut obj, "status");
                }
                obj
            }
            Some("status") if rt.status_subresource => {
                let mut merged = (**old).clone();
                copy_field(&obj, &mut merged, "status");
                // As the status strategies do, managedFields stay as the write brought them: an
                // apply's are what the field manager computed for it (a non-apply write's are
                // recorded below from the stored ones, never from the request).
                if let Some(managed) = obj.pointer("/metadata/managedFields").cloned()
                    && let Some(meta) = merged.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.insert("managedFields".into(), managed);
                }
                merged
            }
            Some(other) => return Err(ApiError::no_route_for(other)),
        };
        {
            let old_meta = old
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let meta = obj_meta_mut(&mut obj)?;
            for system in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "resourceVersion",
            ] {
                match old_meta.get(system) {
                    Some(v) => meta.insert(system.into(), v.clone()),
                    None => meta.remove(system),
                };
            }
            meta.remove("selfLink");
            if !meta.contains_key("managedFields")
                || meta
                    .get("managedFields")
                    .is_some_and(|m| m.as_array().is_some_and(Vec::is_empty))
            {
                match old_meta.get("managedFields") {
                    Some(v) => meta.insert("managedFields".into(), v.clone()),
                    None => meta.remove("managedFields"),
                };
            }
        }
        let mut warnings = admission::decode(rt, &mut obj, opts.field_validation)?;
        admission::default(rt, &mut obj);
        admission::prepare(rt, &mut obj, Some(old));
        let mut errors = if subresource == Some("status") {
            admission::validate_status_update(rt, &obj)
        } else {
            admission::validate_update(rt, old, &obj)
        };
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            let before = finalizers(old);
            let added: Vec<_> = finalizers(&obj).difference(&before).cloned().collect();
            if !added.is_empty() {
                errors.push(FieldError::forbidden("metadata.finalizers", format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}")));
            }
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid(rt, &name, &errors));
        }
        warnings.extend(admission_policy::on_update(
            self,
            rt,
            old,
            &obj,
            opts.requester.as_ref(),
        )?);
        if rt.tracks_generation && spec_changed(rt, old, &obj) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            obj_meta_mut(&mut obj)?.insert("generation".into(), json!(g + 1));
        }
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            crd_status(&mut obj);
        }
        // An apply has already computed managedFields: a change of ownership alone (another
        // manager applying the same values) is a write; a non-apply write records them below.
        let unchanged = if record_manager {
            same_ignoring_managed_fields(old, &obj)
        } else {
            same_ignoring_resource_version(old, &obj)
        };
        if unchanged {
            let mut out = Outcome::new(200, self.present(rt, old));
            out.warnings = warnings;
            return Ok(out);
        }
        if record_manager {
            let lists = admission::list_types(rt);
            ssa::record_update(
                Some(old),
                &mut obj,
                &opts.manager,
                lists.as_ref(),
                &now(),
                &rt.api_version(),
                subresource,
            );
        }
        if opts.dry_run {
            return Ok(Outcome {
                code: 200,
                body: self.present(rt, &obj),
                warnings,
            });
        }
        let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
        if deleting && finalizers(&obj).is_empty() && !is_namespace(rt) {
            let ns = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            // The emptied object is never stored: the server deletes the stored one, so
            // watchers see DELETED only (etcd3 store's deleteWithoutFinalizers).
            let gone = self.finish_delete(rt, &ns, &name);
            let body = gone.map(|g| self.present(rt, &g)).unwrap_or(Value::Null);
            return Ok(Outcome {
                code: 200,
                body,
                warnings,
            });
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        Ok(Outcome {
            code: 200,
            body: self.present(rt, &stored),
            warnings,
        })
    }

    // ----- patch -------------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self.store.get(&rt.group_resource(), ns, name);
        if patch_type == PatchType::Apply {
            return self.server_side_apply(rt, namespace, name, subresource, old, body, opts);
        }
        let old = old.ok_or_else(|| ApiError::not_found(rt, name))?;
        let patch_doc: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let current = self.present(rt, &old);
        let patched = match patch_type {
            PatchType::Merge => patch::merge_patch(&current, &patch_doc),
            PatchType::Json => patch::json_patch(&current, &patch_doc),
            PatchType::Strategic => {
                if rt.is_custom() {
                    return Err(ApiError::unsupported_media_type_for_custom());
                }
                patch::strategic_merge_patch(
                    &current,
                    &patch_doc,
                    &BuiltinLists::for_kind(&rt.group, &rt.kind),
                )
            }
            PatchType::Apply => unreachable_apply(),
        }
        .map_err(ApiError::from)?;
        let patched_rv = patched
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !patched_rv.is_empty() && patched_rv != store::rv_of(&old).to_string() {
            return Err(ApiError::stale(rt, name));
        }
        let mut patched = self.check_body(rt, patched)?;
        if patched.pointer("/metadata/name").and_then(Value::as_str) != Some(name) {
            return Err(ApiError::bad_request(
                "metadata.name: the name of the object does not match the name on the URL",
            ));
        }
        self.place_in_namespace(rt, namespace, &mut patched)?;
        self.write_update(rt, &old, patched, subresource, opts, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn server_side_apply(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        old: Option<Arc<Value>>,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        if opts.manager.is_empty() {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requires fieldManager to be set",
            ));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("error decoding YAML: the body is not UTF-8"))?;
        let config: Value = crate::yaml::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        let mut config = self.check_body(rt, config)?;
        match config.pointer("/metadata/name").and_then(Value::as_str) {
            Some(n) if n == name => {}
            Some(_) | None => {
                return Err(ApiError::bad_request(format!(
                    "metadata.name: Invalid value: {:?}: the name of the object must match the name on the URL ({name})",
                    config
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                )));
            }
        }
        self.place_in_namespace(rt, namespace, &mut config)?;
        // The strategy's reset fields: what this endpoint will not write is not applied, so
        // it is neither owned nor in conflict (the field manager's ignore filter).
        if rt.status_subresource
            && let Some(config) = config.as_object_mut()
        {
            config.remove(if subresource == Some("status") {
                "spec"
            } else {
                "status"
            });
        }
        let lists = admission::list_types(rt);
        let live = old.as_ref().map(|o| self.present(rt, o));
        let merged = ssa::apply(
            live.as_ref(),
            &config,
            &opts.manager,
            opts.force,
            lists.as_ref(),
            &now(),
            &rt.api_version(),
            subresource,
        )
        .map_err(|e| apply_error(rt, name, e))?;
        match old {
            None => {
                let managed = merged.pointer("/metadata/managedFields").cloned();
                let mut create_opts = opts.clone();
                create_opts.manager = String::new();
                let mut out =
                    self.create_with_managed_fields(rt, namespace, merged, &create_opts, managed)?;
                out.code = 201;
                Ok(out)
            }
            Some(old) => self.write_update(rt, &old, merged, subresource, opts, false),
        }
    }

    fn create_with_managed_fields(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        obj: Value,
        opts: &WriteOptions,
        managed: Option<Value>,
    ) -> Result<Outcome, ApiError> {
        // Create records an Update entry for `opts.manager`; an apply-create must carry the
        // Apply entry instead, so create with the dry-run pipeline and then store ourselves.
        let mut dry = opts.clone();
        dry.dry_run = true;
        let out = self.create(rt, namespace, obj, &dry)?;
        let mut obj = out.body;
        if let (Some(meta), Some(m)) = (
            obj.get_mut("metadata").and_then(Value::as_object_mut),
            managed,
        ) {
            meta.insert("managedFields".into(), m);
        }
        if opts.dry_run {
            return Ok(Outcome {
                code: 201,
                body: obj,
                warnings: out.warnings,
            });
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        Ok(Outcome {
            code: 201,
            body: self.present(rt, &stored),
            warnings: out.warnings,
        })
    }

    // ----- scale subresource ---------------------------------------------------------------

    /// GET .../scale: an `autoscaling/v1` Scale view of a Deployment.
    pub fn get_scale(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let obj = self.get(rt, namespace, name)?;
        Ok(scale_of(&obj))
    }

    /// PUT or PATCH .../scale: only `spec.replicas` of the target changes.
    pub fn update_scale(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        scale: &Value,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self
            .store
            .get(&rt.group_resource(), ns, name)
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        if let Some(rv) = scale
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            && rv != store::rv_of(&old).to_string()
        {
            return Err(ApiError::stale(rt, name));
        }
        let replicas = match scale.pointer("/spec/replicas") {
            Some(Value::Number(n))
                if n.as_i64()
                    .is_some_and(|r| (0..=i64::from(i32::MAX)).contains(&r)) =>
            {
                n.clone()
            }
            Some(other) => {
                return Err(ApiError::invalid_scale(
                    name,
                    &[FieldError::invalid(
                        "spec.replicas",
                        other.clone(),
                        "must be greater than or equal to 0",
                    )],
                ));
            }
            None => serde_json::Number::from(0),
        };
        let mut obj = self.present(rt, &old);
        obj["spec"]["replicas"] = Value::Number(replicas);
        let out = self.write_update(rt, &old, obj, None, opts, true)?;
        Ok(Outcome {
            code: out.code,
            body: scale_of(&out.body),
            warnings: out.warnings,
        })
    }

    // ----- delete ------------------------------------------------------------------------

    pub fn delete(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Outcome, ApiError> {
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self
            .store
            .get(&rt.group_resource(), ns, name)
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        let uid = old
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(want) = &opts.precondition_uid
            && *want != uid
        {
            return Err(ApiError::conflict(
                rt,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                ),
            ));
        }
        if let Some(want) = &opts.precondition_rv {
            let have = store::rv_of(&old).to_string();
            if *want != have {
                return Err(ApiError::conflict(
                    rt,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {have}"
                    ),
                ));
            }
        }
        let warnings = admission_policy::on_delete(self, rt, &old, opts.requester.as_ref())?;
        let mut obj = (*old).clone();
        let mut fins = finalizers(&obj);
        if opts.propagation.is_some() {
            // The request's policy replaces whatever GC finalizer an earlier delete left.
            fins.remove(ORPHAN_FINALIZER);
            fins.remove(FOREGROUND_FINALIZER);
        }
        match opts.propagation {
            Some(Propagation::Orphan) => {
                fins.insert(ORPHAN_FINALIZER.into());
            }
            Some(Propagation::Foreground) => {
                fins.insert(FOREGROUND_FINALIZER.into());
            }
            _ => {}
        }
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            fins.insert(CRD_CLEANUP_FINALIZER.into());
        }
        let namespace_finalizing = is_namespace(rt);
        if opts.dry_run {
            return Ok(Outcome::new(200, self.present(rt, &obj)).warned(warnings));
        }
        if fins.is_empty() && !namespace_finalizing {
            let gone = self
                .finish_delete(rt, ns, name)
                .ok_or_else(|| ApiError::not_found(rt, name))?;
            return Ok(Outcome::new(200, self.deleted_body(rt, &gone, &uid)).warned(warnings));
        }
        let already_deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
        let meta = obj_meta_mut(&mut obj)?;
        if !already_deleting {
            meta.insert("deletionTimestamp".into(), Value::String(now()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            // markAsDeleting: the generation moves when deletion starts.
            if let Some(g) = meta
                .get("generation")
                .and_then(Value::as_i64)
                .filter(|g| *g > 0)
            {
                meta.insert("generation".into(), json!(g + 1));
            }
        }
        meta.insert("finalizers".into(), json!(fins.iter().collect::<Vec<_>>()));
        if namespace_finalizing {
            obj["status"] = json!({"phase": "Terminating"});
        }
        if meta_finalizers_changed(&old, &obj) || !already_deleting {
            let stored = self.store.put(&rt.group_resource(), obj);
            self.after_write(rt, &stored);
            return Ok(Outcome::new(200, self.present(rt, &stored)).warned(warnings));
        }
        Ok(Outcome::new(200, self.present(rt, &old)).warned(warnings))
    }

    /// What a DELETE returns once the object is gone: the object for custom resources and
    /// pods, a Success Status for the other built-ins.
    fn deleted_body(&self, rt: &ResourceType, gone: &Value, uid: &str) -> Value {
        if rt.returns_deleted_object() {
            self.present(rt, gone)
        } else {
            errors::success_status(
                rt,
                gone.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                uid,
            )
        }
    }

    /// Removes the object for good and runs the removal side effects.
    fn finish_delete(&mut self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        let gone = self.store.remove(&rt.group_resource(), ns, name)?;
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            self.catalogue.remove_crd(name);
        }
        Some(gone)
    }

    pub fn delete_collection(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Outcome, ApiError> {
        let names: Vec<(String, String)> = self
            .store
            .iter(&rt.group_resource(), namespace, None)
            .filter(|(_, o)| list.labels.matches(o) && list.fields.matches(o))
            .map(|(k, _)| k.clone())
            .collect();
        let mut items = Vec::new();
        let mut warnings = Vec::new();
        for (ns, name) in names {
            let before = self.store.get(&rt.group_resource(), &ns, &name);
            match self.delete(rt, &ns, &name, opts) {
                Ok(out) => {
                    warnings.extend(out.warnings);
                    // Every deleted (or now terminating) object is listed, whatever the type
                    // answers to a single DELETE.
                    let shown = if out.body.get("kind").and_then(Value::as_str) == Some("Status") {
                        before.map(|b| (*b).clone())
                    } else {
                        Some(out.body)
                    };
                    if let Some(obj) = shown {
                        items.push(self.list_item(rt, &obj));
                    }
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Outcome::new(
            200,
            json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": {"resourceVersion": self.store.current_rv().to_string()}, "items": items}),
        )
        .warned(warnings))
    }

    // ----- side effects --------------------------------------------------------------------

    /// Keeps the catalogue in step with stored CRDs.
    fn after_write(&mut self, rt: &ResourceType, stored: &Value) {
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            self.serve_crd(stored);
        }
    }

    fn serve_crd(&mut self, crd: &Value) {
        let Ok(info) = crd::crd_info(crd) else {
            return;
        };
        let crd_name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // A terminating CRD stays served until its instances are gone (creates are refused
        // meanwhile); `finish_delete` stops serving it when the CRD itself goes.
        self.catalogue.remove_crd(&crd_name);
        let storage_version = info
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .unwrap_or_default();
        for v in info.versions {
            self.catalogue.insert(ResourceType {
                group: info.group.clone(),
                version: v.name.clone(),
                kind: info.kind.clone(),
                list_kind: info.list_kind.clone(),
                plural: info.plural.clone(),
                singular: info.singular.clone(),
                namespaced: info.namespaced,
                short_names: info.short_names.clone(),
                categories: info.categories.clone(),
                status_subresource: v.status_subresource,
                scale_subresource: v.scale_subresource.is_some(),
                tracks_generation: true,
                storage_version: storage_version.clone(),
                origin: Origin::Crd {
                    crd_name: crd_name.clone(),
                    schema: v.schema.map(Arc::new),
                    printer_columns: v.printer_columns,
                },
            });
        }
    }

    /// Internal writes by the emulated controllers (GC, namespace controller, workload
    /// simulator): a status or metadata change without HTTP, preconditions or managers.
    pub fn controller_put(&mut self, rt: &ResourceType, obj: Value) -> Arc<Value> {
        // Controllers write through the API too, and the server drops no-op updates.
        let (ns, name) = store::key_of(&obj);
        if let Some(current) = self.store.get(&rt.group_resource(), &ns, &name)
            && same_ignoring_managed_fields(&current, &obj)
        {
            return current;
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        stored
    }

    /// Internal removal by the emulated controllers (e.g. dropping a finalizer they own).
    pub fn controller_remove_finalizer(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        finalizer: &str,
    ) {
        let Some(old) = self.store.get(&rt.group_resource(), ns, name) else {
            return;
        };
        let mut obj = (*old).clone();
        let mut fins = finalizers(&obj);
        if !fins.remove(finalizer) {
            return;
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if fins.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), json!(fins.iter().collect::<Vec<_>>()));
            }
        }
        if obj.pointer("/metadata/deletionTimestamp").is_some() && fins.is_empty() {
            self.finish_delete(rt, ns, name);
        } else {
            self.store.put(&rt.group_resource(), obj);
        }
    }

    /// Removes a namespace whose contents are gone (the namespace controller's last step).
    pub fn controller_finalize_namespace(&mut self, name: &str) {
        if let Some(rt) = self.catalogue.get("", "v1", "namespaces") {
            self.finish_delete(&rt, "", name);
        }
    }
}

/// Records the creator in managedFields. On a type with a status subresource the status is
/// the server's (reset on create, filled by controllers), so it is left out of the creator's
/// fields.
fn record_creator(rt: &ResourceType, obj: &mut Value, manager: &str, now: &str) {
    let lists = admission::list_types(rt);
    if !rt.status_subresource {
        ssa::record_update(
            None,
            obj,
            manager,
            lists.as_ref(),
            now,
            &rt.api_version(),
            None,
        );
        return;
    }
    let mut view = obj.clone();
    if let Some(o) = view.as_object_mut() {
        o.remove("status");
    }
    ssa::record_update(
        None,
        &mut view,
        manager,
        lists.as_ref(),
        now,
        &rt.api_version(),
        None,
    );
    if let (Some(meta), Some(fields)) = (
        obj.get_mut("metadata").and_then(Value::as_object_mut),
        view.pointer("/metadata/managedFields"),
    ) {
        meta.insert("managedFields".into(), fields.clone());
    }
}

/// An object as served at `rt`'s version: apiVersion and kind set, schema defaults applied on
/// read (a real server defaults custom resources when it reads them from etcd).
pub fn present(rt: &ResourceType, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(o) = out.as_object_mut() {
        o.insert("apiVersion".into(), Value::String(rt.api_version()));
        o.insert("kind".into(), Value::String(rt.kind.clone()));
    }
    if let Origin::Crd {
        schema: Some(schema),
        ..
    } = &rt.origin
    {
        crd::apply_defaults(schema, &mut out);
    }
    out
}

/// The Status a failed apply answers with: 409 with one cause per conflicting field, 400, or
/// the server's bare 500 for configurations it cannot type.
fn apply_error(rt: &ResourceType, name: &str, e: ssa::ApplyError) -> ApiError {
    match e {
        ssa::ApplyError::Conflicts(ref conflicts) => {
            let causes = conflicts.iter().map(|c| json!({"reason": "FieldManagerConflict", "message": c.message, "field": c.field})).collect();
            ApiError::apply_conflict(rt, name, e.message(), causes)
        }
        ssa::ApplyError::BadRequest(m) => ApiError::bad_request(m),
        ssa::ApplyError::Invalid(m) => ApiError::injected(500, "", m),
    }
}

fn unreachable_apply() -> Result<Value, patch::PatchError> {
    Err(patch::PatchError::BadRequest(
        "apply is handled separately".into(),
    ))
}

/// Patch errors keep the code, reason and bare message the real server answers with.
impl From<patch::PatchError> for ApiError {
    fn from(e: patch::PatchError) -> Self {
        ApiError::injected(e.code(), e.reason(), e.message().to_string())
    }
}

impl ApiError {
    fn no_route_for(sub: &str) -> Self {
        let mut e = Self::no_route();
        e.message =
            format!("the server could not find the requested resource (subresource {sub:?})");
        e
    }

    fn unsupported_media_type_for_custom() -> Self {
        let mut e = Self::unsupported_media_type("application/strategic-merge-patch+json");
        e.message = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into();
        e
    }

    /// 422 naming the resource rather than the Kind, as the update-precondition checks do.
    fn invalid_resource(rt: &ResourceType, name: &str, errors: &[FieldError]) -> Self {
        let mut e = Self::invalid(rt, name, errors);
        let list = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        e.message = format!(
            "{} \"{name}\" is invalid: {list}",
            rt.group_resource().qualified()
        );
        if let Some(d) = e.details.as_mut() {
            d["kind"] = json!(rt.plural);
        }
        e
    }

    fn invalid_list(message: &str) -> Self {
        let mut e = Self::bad_request(String::new());
        e.code = 422;
        e.reason = "Invalid";
        e.message = format!("ListOptions.meta.k8s.io \"\" is invalid: {message}");
        e
    }

    fn invalid_scale(name: &str, errors: &[FieldError]) -> Self {
        let list = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let mut e = Self::bad_request(String::new());
        e.code = 422;
        e.reason = "Invalid";
        e.message = format!("Scale.autoscaling \"{name}\" is invalid: {list}");
        e
    }
}

/// The Scale view of a workload.
pub fn scale_of(obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_default();
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"), "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp")},
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {"replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)), "selector": selector},
    })
}

fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.kind == "Namespace"
}

fn obj_meta_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

fn copy_field(from: &Value, to: &mut Value, field: &str) {
    let Some(to) = to.as_object_mut() else { return };
    match from.get(field) {
        Some(v) => to.insert(field.into(), v.clone()),
        None => to.remove(field),
    };
}

pub fn finalizers(obj: &Value) -> BTreeSet<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn meta_finalizers_changed(a: &Value, b: &Value) -> bool {
    finalizers(a) != finalizers(b)
}

/// Generation moves when anything but metadata and status changes (for CRs without a status
/// subresource, status counts too, as on a real server).
fn spec_changed(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("metadata");
            o.remove("apiVersion");
            o.remove("kind");
            if rt.status_subresource || !rt.is_custom() {
                o.remove("status");
            }
        }
        v
    };
    // Deployments also move their generation when annotations change (deployment strategy).
    let annotations_changed = rt.is(("apps", "Deployment"))
        && old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations");
    annotations_changed || strip(old) != strip(new)
}

/// A write that changes nothing is not stored, so it gets no new resourceVersion and no event.
fn same_ignoring_managed_fields(old: &Value, new: &Value) -> bool {
    same_except(old, new, true)
}

fn same_ignoring_resource_version(old: &Value, new: &Value) -> bool {
    same_except(old, new, false)
}

fn same_except(old: &Value, new: &Value, ignore_managed_fields: bool) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            if ignore_managed_fields {
                m.remove("managedFields");
            }
            m.remove("resourceVersion");
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("apiVersion");
            o.remove("kind");
        }
        v
    };
    strip(old) == strip(new)
}

/// Status is not settable on create for types with a status subresource (except Nodes, whose
/// kubelets create them with status).
fn reset_status_on_create(rt: &ResourceType, obj: &mut Value) {
    if !rt.status_subresource || (rt.group.is_empty() && rt.kind == "Node") {
        return;
    }
    if let Some(o) = obj.as_object_mut() {
        o.remove("status");
    }
}

/// A real server's CRD controllers accept the names and establish the CRD immediately.
fn crd_status(crd: &mut Value) {
    let names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let previous = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let since = |t: &str| {
        previous
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| Value::String(now()))
    };
    let mut stored_versions: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for s in storage {
        if !stored_versions.contains(&s) {
            stored_versions.push(s);
        }
    }
    crd["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since("Established")},
        ],
        "acceptedNames": names,
        "storedVersions": stored_versions,
    });
}

/// The current time as the API server writes timestamps (RFC 3339, seconds).
pub fn now() -> String {
    let ts = jiff::Timestamp::now();
    format!("{}", ts.strftime("%Y-%m-%dT%H:%M:%SZ"))
}

fn last_key(items: &[Value]) -> Option<(String, String)> {
    items.last().map(store::key_of)
}

fn encode_continue(rv: u64, key: &(String, String)) -> String {
    use base64::Engine;
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "ns": key.0, "start": key.1}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> Result<(u64, (String, String)), ApiError> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let ns = v
        .get("ns")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .to_string();
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .to_string();
    Ok((rv, (ns, start)))
}

/// Parses the DeleteOptions a DELETE may carry in its body.
pub fn parse_delete_body(body: &[u8], into: &mut DeleteOptions) -> Result<(), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
    if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
        into.propagation = Some(parse_propagation(p)?);
    }
    if v.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
        into.propagation = Some(Propagation::Orphan);
    }
    if let Some(uid) = v.pointer("/preconditions/uid").and_then(Value::as_str) {
        into.precondition_uid = Some(uid.into());
    }
    if let Some(rv) = v
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
    {
        into.precondition_rv = Some(rv.into());
    }
    if v.get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == "All"))
    {
        into.dry_run = true;
    }
    Ok(())
}

pub fn parse_propagation(p: &str) -> Result<Propagation, ApiError> {
    match p {
        "Orphan" => Ok(Propagation::Orphan),
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        other => Err(ApiError::bad_request(format!(
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))),
    }
}

/// Used by tests and controllers to find a resource type for an object's group/resource.
pub fn storage_type(cluster: &Cluster, gr: &GroupResource) -> Option<Arc<ResourceType>> {
    cluster.catalogue.storage_type(gr)
}
