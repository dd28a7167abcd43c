//! Server-side printing: the `meta.k8s.io/v1` Table that `kubectl get` asks for.
//!
//! Custom resources get their CRD's `additionalPrinterColumns` (JSONPath limited to simple
//! `.a.b` paths); the built-in kinds with a printer in `printers` get its columns; every
//! other kind gets the server's default columns, Name and Created At.

use serde_json::{Value, json};

use crate::resources::{Origin, ResourceType};

/// Whether an Accept header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

fn columns(rt: &ResourceType) -> Vec<Value> {
    let mut cols = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    // A CRD with printer columns shows exactly those; the creation time is the default only.
    let mut has_printer_columns = false;
    if let Origin::Crd {
        printer_columns, ..
    } = &rt.origin
    {
        for c in printer_columns {
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            has_printer_columns = true;
            cols.push(json!({
                "name": name,
                "type": c.get("type").cloned().unwrap_or(json!("string")),
                "format": c.get("format").cloned().unwrap_or(json!("")),
                "description": c.get("description").cloned().unwrap_or(json!("")),
                "priority": c.get("priority").cloned().unwrap_or(json!(0)),
            }));
        }
    }
    if let (false, Some(printer)) = (has_printer_columns, builtin_printer(rt)) {
        for c in printer {
            cols.push(json!({"name": c.name, "type": c.kind, "format": "", "description": "", "priority": 0}));
        }
        return cols;
    }
    if !has_printer_columns {
        cols.push(json!({"name": "Created At", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
    }
    cols
}

fn row(rt: &ResourceType, obj: &Value) -> Value {
    let name = if rt.is_custom() {
        obj.pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null)
    } else {
        crate::printers::name_cell(&rt.group, &rt.kind, obj)
    };
    let mut cells = vec![name];
    // A CRD with printer columns shows exactly those; the creation time is the default only.
    let mut has_printer_columns = false;
    if let Origin::Crd {
        printer_columns, ..
    } = &rt.origin
    {
        for c in printer_columns {
            has_printer_columns = true;
            let path = c
                .get("jsonPath")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let cell = crate::json_path::cell(obj, path);
            if c.get("type").and_then(Value::as_str) == Some("date") {
                cells.push(crate::printers::date_cell(cell));
            } else {
                cells.push(cell);
            }
        }
    }
    if let (false, Some(printer)) = (has_printer_columns, builtin_printer(rt)) {
        cells.extend(printer.iter().map(|c| (c.cell)(obj)));
    } else if !has_printer_columns {
        cells.push(
            obj.pointer("/metadata/creationTimestamp")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    let metadata = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata},
    })
}

fn builtin_printer(rt: &ResourceType) -> Option<Vec<crate::printers::Column>> {
    if rt.is_custom() {
        None
    } else {
        crate::printers::for_kind(&rt.group, &rt.kind)
    }
}

/// A Table for a list of objects.
pub fn table(
    rt: &ResourceType,
    items: &[Value],
    resource_version: &str,
    continue_token: Option<&str>,
) -> Value {
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(c) = continue_token {
        metadata["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns(rt),
        "rows": items.iter().map(|o| row(rt, o)).collect::<Vec<_>>(),
    })
}

/// A Table for one object in a watch event: rows only, columns omitted as a real server does
/// after the first event.
pub fn watch_table(rt: &ResourceType, obj: &Value, with_columns: bool) -> Value {
    let rv = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut t = table(rt, std::slice::from_ref(obj), rv, None);
    if !with_columns && let Some(o) = t.as_object_mut() {
        o.remove("columnDefinitions");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Catalogue;

    #[test]
    fn default_columns_are_name_and_created_at() {
        let c = Catalogue::builtin();
        let rt = c
            .get("coordination.k8s.io", "v1", "leases")
            .expect("leases");
        let t = table(
            &rt,
            &[json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}})],
            "5",
            None,
        );
        assert_eq!(t["columnDefinitions"][0]["name"], "Name");
        assert_eq!(t["columnDefinitions"][1]["name"], "Created At");
        assert_eq!(t["rows"][0]["cells"], json!(["a", "2026-01-01T00:00:00Z"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }

    #[test]
    fn builtin_printers_give_the_kinds_columns() {
        let c = Catalogue::builtin();
        let rt = c.get("", "v1", "configmaps").expect("cm");
        let t = table(
            &rt,
            &[
                json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": {"x": "1", "y": "2"}}),
            ],
            "5",
            None,
        );
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .expect("cols")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, vec!["Name", "Data", "Age"]);
        assert_eq!(t["rows"][0]["cells"][1], json!(2));
    }

    #[test]
    fn storage_printers_match_kubectl_1_32() {
        let c = Catalogue::builtin();
        let sc = c.get("storage.k8s.io", "v1", "storageclasses").expect("sc");
        let t = table(
            &sc,
            &[json!({"metadata": {"name": "standard-csi",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "cinder.csi.openstack.org"})],
            "5",
            None,
        );
        // `(default)` marks the name, not the provisioner.
        assert_eq!(t["rows"][0]["cells"][0], json!("standard-csi (default)"));
        assert_eq!(t["rows"][0]["cells"][1], json!("cinder.csi.openstack.org"));
        let csi = c.get("storage.k8s.io", "v1", "csidrivers").expect("csi");
        let t = table(
            &csi,
            &[json!({"metadata": {"name": "d"}, "spec": {"volumeLifecycleModes": ["Persistent"]}})],
            "5",
            None,
        );
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .expect("cols")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "AttachRequired",
                "PodInfoOnMount",
                "StorageCapacity",
                "TokenRequests",
                "RequiresRepublish",
                "Modes",
                "Age"
            ]
        );
        assert_eq!(t["rows"][0]["cells"][4], json!("<unset>"));
    }
}
