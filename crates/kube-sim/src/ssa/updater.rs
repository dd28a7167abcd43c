//! The updater (structured-merge-diff's `merge.Updater`): ownership on update and apply, and
//! conflicts.

use super::CURRENT_OPERATION;
use super::fieldpath::FieldSet;
use super::managers::{Entry, Managers};
use super::walk::{Comparison, compare_values, join_validation_errors, merge, remove_items};
use crate::list_types::ListTypes;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub(super) enum UpdaterError {
    Conflicts(BTreeMap<String, FieldSet>),
    Other(String),
}

/// Ownership bookkeeping shared by updates and applies: other managers lose the fields this
/// write changed (a conflict unless forced) and the fields it removed.
pub(super) fn smd_update(
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
pub(super) fn smd_record(
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
pub(super) fn smd_apply(
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
pub(super) fn prune(
    merged: &Value,
    managers: &Managers,
    last: &FieldSet,
    lists: &dyn ListTypes,
) -> Value {
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
