//! The apiserver's field manager chain: what a create, update, patch or apply does to
//! `managedFields`, in the order apimachinery's managers run.

use super::fieldpath::{FieldSet, path_display};
use super::managers::{
    Entry, Managers, Operation, decode_managed_fields, identifier, new_entry, print_manager,
    remove_managed_fields, set_managed_fields, strip_fields,
};
use super::text::{go_json, is_go_printable, json_type_name, rfc3339_seconds};
use super::updater::{UpdaterError, smd_apply, smd_record};
use super::walk::{compare_values, join_validation_errors, strip_nulls, validate};
use super::{
    ANCIENT_CHANGES, BEFORE_FIRST_APPLY, CURRENT_OPERATION, FIELD_MANAGER_MAX_LENGTH,
    LAST_APPLIED_ANNOTATION, MAX_UPDATE_MANAGERS, TOTAL_ANNOTATION_SIZE_LIMIT,
};
use crate::list_types::ListTypes;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// `capManagersManager`: folds the oldest update managers into `ancient-changes` buckets.
pub(super) fn cap_update_managers(managers: &mut Managers) {
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
pub(super) fn update_chain(
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

pub(super) fn check_typed(
    v: &Value,
    lists: &dyn ListTypes,
    allow_duplicates: bool,
) -> Result<(), String> {
    let mut errs = Vec::new();
    validate(v, lists, &mut Vec::new(), "", allow_duplicates, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(join_validation_errors(&errs))
    }
}

pub(super) fn uid_of(obj: &Value) -> &str {
    obj.get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `isResetManagedFields`: `[]` or `[{}]` in a write clears managedFields.
pub(super) fn is_reset_managed_fields(obj: &Value) -> bool {
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
    pub(super) printed_manager: String,
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
    /// The HTTP status code the server answers with. Only tests ask: the verbs map the
    /// variants to their Status errors themselves (`api::support::apply_error`).
    #[cfg(test)]
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
pub(super) fn conflict_message(cs: &[Conflict]) -> String {
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

pub(super) fn conflicts_from(
    managers: &Managers,
    conflicts: &BTreeMap<String, FieldSet>,
) -> Vec<Conflict> {
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
pub(super) fn gvk_string(obj: &Value) -> (String, String) {
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

pub(super) fn name_and_namespace(obj: &Value) -> (String, String) {
    let meta = obj.get("metadata");
    let get = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (get("namespace"), get("name"))
}

pub(super) enum InnerError {
    Conflicts(Managers, BTreeMap<String, FieldSet>),
    Api(ApplyError),
}

/// The apply chain below the last-applied wrappers: skip-non-applied (`before-first-apply`),
/// build-manager-info, managed-fields updater, strip-meta, structured merge.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_chain(
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
pub(super) fn allowed_conflicts_from_last_applied(
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
pub(super) fn update_last_applied(object: &mut Value, config: &Value) {
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
