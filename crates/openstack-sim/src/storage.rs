//! The emulated storage of the project: Cinder volumes and volume snapshots, Manila shares,
//! share snapshots and access rules, and the list/read/delete calls `csi-operator cleanup`
//! makes on them, with the answers the real services give:
//! - Cinder `GET /v3/{project}/volumes/detail`, `GET /v3/{project}/snapshots/detail`,
//!   `GET|DELETE /v3/{project}/snapshots/{id}`, `GET|DELETE /v3/{project}/volumes/{id}`:
//!   202 on delete, 404 for a missing object, 400 for a volume that is attached (`in-use` or
//!   with attachments) or still has snapshots (Cinder's `InvalidVolume`);
//! - Manila `GET /v2[/{project}]/shares/detail`, `GET /v2[/{project}]/snapshots/detail`,
//!   `GET|DELETE …/snapshots/{id}`, `DELETE …/shares/{id}` (403 while the share has snapshots:
//!   Manila's API answers `InvalidShare` on delete with Forbidden), and
//!   `POST …/shares/{id}/action` with `access_list` / `deny_access` (and their `os-` forms).
//!
//! Deletes take effect at once (a real cloud passes through `deleting`; the client polls
//! either way). Tests seed and read the state through [`crate::SimHandle`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// A Cinder volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimVolume {
    pub id: String,
    pub name: String,
    pub status: String,
    pub size: u64,
    pub metadata: BTreeMap<String, String>,
    /// Server ids it is attached to.
    pub attachments: Vec<String>,
    /// `nova` unless created elsewhere.
    pub availability_zone: String,
    /// The volume type's name; `None` for the cloud's default type.
    pub volume_type: Option<String>,
}

impl SimVolume {
    /// An `available` 1 GiB volume with no metadata.
    pub fn new(id: &str, name: &str) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            status: "available".into(),
            size: 1,
            metadata: BTreeMap::new(),
            attachments: Vec::new(),
            availability_zone: "nova".into(),
            volume_type: None,
        }
    }

    pub fn with_metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// `in-use`, attached to `server`.
    pub fn attached_to(mut self, server: &str) -> Self {
        self.status = "in-use".into();
        self.attachments.push(server.into());
        self
    }
}

/// A Cinder volume snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimVolumeSnapshot {
    pub id: String,
    pub name: String,
    pub status: String,
    pub volume_id: String,
    pub metadata: BTreeMap<String, String>,
}

impl SimVolumeSnapshot {
    pub fn new(id: &str, name: &str, volume_id: &str) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            status: "available".into(),
            volume_id: volume_id.into(),
            metadata: BTreeMap::new(),
        }
    }

    pub fn with_metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// A Manila share (NFS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimShare {
    pub id: String,
    pub name: String,
    pub status: String,
    pub size: u64,
    pub metadata: BTreeMap<String, String>,
    /// The share type's id and name (`st-default` / `default` unless set).
    pub share_type_id: String,
    pub share_type_name: String,
    /// `None` for a share of a `driver_handles_share_servers=False` type.
    pub share_network_id: Option<String>,
    /// Served by `GET …/shares/{id}/export_locations` (see `share_networks.rs`).
    pub export_locations: Vec<crate::SimExportLocation>,
    /// `NFS` unless created with another protocol.
    pub share_proto: String,
}

impl SimShare {
    pub fn new(id: &str, name: &str) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            status: "available".into(),
            size: 1,
            metadata: BTreeMap::new(),
            share_type_id: "st-default".into(),
            share_type_name: "default".into(),
            share_network_id: None,
            export_locations: Vec::new(),
            share_proto: "NFS".into(),
        }
    }

    pub fn with_metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Of the share type `name` (id `st-<name>`, as [`crate::SimShareType::new`] makes it).
    pub fn of_type(mut self, name: &str) -> Self {
        self.share_type_id = format!("st-{name}");
        self.share_type_name = name.into();
        self
    }

    /// On share network `id` (a `driver_handles_share_servers=True` share).
    pub fn on_share_network(mut self, id: &str) -> Self {
        self.share_network_id = Some(id.into());
        self
    }

    /// With one more export location.
    pub fn exported_at(mut self, location: crate::SimExportLocation) -> Self {
        self.export_locations.push(location);
        self
    }
}

/// A Manila share snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimShareSnapshot {
    pub id: String,
    pub name: String,
    pub share_id: String,
}

impl SimShareSnapshot {
    pub fn new(id: &str, name: &str, share_id: &str) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            share_id: share_id.into(),
        }
    }
}

/// An IP access rule of a share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimAccessRule {
    pub id: String,
    pub share_id: String,
    pub access_to: String,
}

impl SimAccessRule {
    pub fn new(id: &str, share_id: &str, access_to: &str) -> Self {
        Self {
            id: id.into(),
            share_id: share_id.into(),
            access_to: access_to.into(),
        }
    }
}

/// Everything the project stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimStorage {
    pub volumes: Vec<SimVolume>,
    pub volume_snapshots: Vec<SimVolumeSnapshot>,
    pub shares: Vec<SimShare>,
    pub share_snapshots: Vec<SimShareSnapshot>,
    pub access_rules: Vec<SimAccessRule>,
}

const NOT_FOUND: &str = "The resource could not be found.";

fn not_found(what: &str, id: &str) -> (u16, Value) {
    (
        404,
        error(
            "itemNotFound",
            404,
            &format!("{what} {id} could not be found."),
        ),
    )
}

/// Cinder's and Manila's error shape: one key naming the fault.
pub(crate) fn error(key: &str, code: u16, message: &str) -> Value {
    json!({ key: { "code": code, "message": message } })
}

fn bad_request(message: &str) -> (u16, Value) {
    (400, error("badRequest", 400, message))
}

fn volume_json(v: &SimVolume) -> Value {
    let attachments: Vec<Value> = v
        .attachments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"server_id": s, "attachment_id": format!("att-{}-{i}", v.id),
                   "volume_id": v.id, "device": "/dev/vdb"})
        })
        .collect();
    json!({"id": v.id, "name": v.name, "status": v.status, "size": v.size,
           "metadata": v.metadata, "attachments": attachments,
           "availability_zone": v.availability_zone,
           "volume_type": v.volume_type.as_deref().unwrap_or("__DEFAULT__"), "bootable": "false"})
}

fn volume_snapshot_json(s: &SimVolumeSnapshot) -> Value {
    json!({"id": s.id, "name": s.name, "status": s.status, "volume_id": s.volume_id,
           "metadata": s.metadata, "size": 1})
}

fn share_json(s: &SimShare) -> Value {
    json!({"id": s.id, "name": s.name, "status": s.status, "size": s.size,
           "share_proto": s.share_proto, "metadata": s.metadata, "share_type": s.share_type_id,
           "share_type_name": s.share_type_name, "share_network_id": s.share_network_id})
}

fn share_snapshot_json(s: &SimShareSnapshot) -> Value {
    json!({"id": s.id, "name": s.name, "status": "available", "share_id": s.share_id,
           "size": 1})
}

/// Cinder paths below `/v3/{project}/`. `None`: not a storage path (the caller answers).
pub(crate) fn cinder(
    storage: &mut SimStorage,
    method: &http::Method,
    rest: &[&str],
) -> Option<(u16, Value)> {
    use http::Method;
    Some(match (method, rest) {
        (&Method::GET, ["volumes", "detail"]) => (
            200,
            json!({"volumes": storage.volumes.iter().map(volume_json).collect::<Vec<_>>()}),
        ),
        (&Method::GET, ["snapshots", "detail"]) => (
            200,
            json!({"snapshots": storage.volume_snapshots.iter().map(volume_snapshot_json)
                .collect::<Vec<_>>()}),
        ),
        (&Method::GET, ["volumes", id]) => match storage.volumes.iter().find(|v| v.id == *id) {
            Some(v) => (200, json!({"volume": volume_json(v)})),
            None => not_found("Volume", id),
        },
        (&Method::GET, ["snapshots", id]) => {
            match storage.volume_snapshots.iter().find(|s| s.id == *id) {
                Some(s) => (200, json!({"snapshot": volume_snapshot_json(s)})),
                None => not_found("Snapshot", id),
            }
        }
        (&Method::DELETE, ["snapshots", id]) => {
            let before = storage.volume_snapshots.len();
            storage.volume_snapshots.retain(|s| s.id != *id);
            if storage.volume_snapshots.len() == before {
                not_found("Snapshot", id)
            } else {
                (202, Value::Null)
            }
        }
        (&Method::DELETE, ["volumes", id]) => delete_volume(storage, id),
        _ => return None,
    })
}

/// `DELETE /v3/{project}/volumes/{id}`: 202, or why Cinder refuses.
pub(crate) fn delete_volume(storage: &mut SimStorage, id: &str) -> (u16, Value) {
    let Some(v) = storage.volumes.iter().find(|v| v.id == id) else {
        return not_found("Volume", id);
    };
    if v.status == "in-use" || !v.attachments.is_empty() {
        return bad_request(&format!(
            "Invalid volume: Volume status must be available or error or \
             error_restoring or error_extending or error_managing and must not be \
             migrating, attached, belong to a group, have snapshots, awaiting a \
             transfer, or be disassociated from snapshots after volume transfer. \
             (volume {id} is {})",
            v.status
        ));
    }
    let snapshots = storage
        .volume_snapshots
        .iter()
        .filter(|s| s.volume_id == id)
        .count();
    if snapshots > 0 {
        return bad_request(&format!(
            "Invalid volume: Volume still has {snapshots} dependent snapshots."
        ));
    }
    storage.volumes.retain(|v| v.id != id);
    (202, Value::Null)
}

/// `DELETE …/shares/{id}`: 202, or why Manila refuses.
pub(crate) fn delete_share(storage: &mut SimStorage, id: &str) -> (u16, Value) {
    if !storage.shares.iter().any(|s| s.id == id) {
        return not_found("Share", id);
    }
    let snapshots = storage
        .share_snapshots
        .iter()
        .filter(|s| s.share_id == id)
        .count();
    if snapshots > 0 {
        return (
            403,
            error(
                "forbidden",
                403,
                &format!("Invalid share: Share still has {snapshots} dependent snapshots."),
            ),
        );
    }
    storage.shares.retain(|s| s.id != id);
    storage.access_rules.retain(|r| r.share_id != id);
    (202, Value::Null)
}

/// Manila paths below `/v2/` (or `/v2/{project}/`). `None`: not a storage path.
pub(crate) fn manila(
    storage: &mut SimStorage,
    method: &http::Method,
    rest: &[&str],
    body: &[u8],
) -> Option<(u16, Value)> {
    use http::Method;
    Some(match (method, rest) {
        (&Method::GET, ["shares", "detail"]) => (
            200,
            json!({"shares": storage.shares.iter().map(share_json).collect::<Vec<_>>()}),
        ),
        (&Method::GET, ["snapshots", "detail"]) => (
            200,
            json!({"snapshots": storage.share_snapshots.iter().map(share_snapshot_json)
                .collect::<Vec<_>>()}),
        ),
        (&Method::GET, ["shares", id]) => match storage.shares.iter().find(|s| s.id == *id) {
            Some(s) => (200, json!({"share": share_json(s)})),
            None => not_found("Share", id),
        },
        (&Method::GET, ["snapshots", id]) => {
            match storage.share_snapshots.iter().find(|s| s.id == *id) {
                Some(s) => (200, json!({"snapshot": share_snapshot_json(s)})),
                None => not_found("Snapshot", id),
            }
        }
        (&Method::DELETE, ["snapshots", id]) => {
            let before = storage.share_snapshots.len();
            storage.share_snapshots.retain(|s| s.id != *id);
            if storage.share_snapshots.len() == before {
                not_found("Snapshot", id)
            } else {
                (202, Value::Null)
            }
        }
        (&Method::DELETE, ["shares", id]) => delete_share(storage, id),
        (&Method::POST, ["shares", id, "action"]) => share_action(storage, id, body),
        _ => return None,
    })
}

fn share_action(storage: &mut SimStorage, id: &str, body: &[u8]) -> (u16, Value) {
    if !storage.shares.iter().any(|s| s.id == id) {
        return not_found("Share", id);
    }
    let Ok(Value::Object(action)) = serde_json::from_slice::<Value>(body) else {
        return bad_request("Malformed request body");
    };
    if action.contains_key("access_list") || action.contains_key("os-access_list") {
        let rules: Vec<Value> = storage
            .access_rules
            .iter()
            .filter(|r| r.share_id == id)
            .map(|r| {
                json!({"id": r.id, "access_type": "ip", "access_to": r.access_to,
                       "access_level": "rw", "state": "active"})
            })
            .collect();
        return (200, json!({ "access_list": rules }));
    }
    let deny = action
        .get("deny_access")
        .or_else(|| action.get("os-deny_access"));
    if let Some(deny) = deny {
        let Some(rule) = deny.get("access_id").and_then(Value::as_str) else {
            return bad_request("Must specify access_id");
        };
        let before = storage.access_rules.len();
        storage
            .access_rules
            .retain(|r| !(r.share_id == id && r.id == rule));
        if storage.access_rules.len() == before {
            return not_found("Access rule", rule);
        }
        return (202, Value::Null);
    }
    (400, error("badRequest", 400, NOT_FOUND))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn seeded() -> SimStorage {
        SimStorage {
            volumes: vec![
                SimVolume::new("v1", "a"),
                SimVolume::new("v2", "b").attached_to("srv"),
            ],
            volume_snapshots: vec![SimVolumeSnapshot::new("s1", "snap", "v1")],
            shares: vec![SimShare::new("sh1", "share")],
            share_snapshots: vec![SimShareSnapshot::new("ss1", "snap", "sh1")],
            access_rules: vec![SimAccessRule::new("r1", "sh1", "10.0.0.0/24")],
        }
    }

    #[test]
    fn cinder_refuses_attached_volumes_and_volumes_with_snapshots() {
        let mut s = seeded();
        let del = Method::DELETE;
        assert_eq!(
            cinder(&mut s, &del, &["volumes", "v2"]).map(|r| r.0),
            Some(400)
        );
        assert_eq!(
            cinder(&mut s, &del, &["volumes", "v1"]).map(|r| r.0),
            Some(400)
        );
        assert_eq!(
            cinder(&mut s, &del, &["snapshots", "s1"]).map(|r| r.0),
            Some(202)
        );
        assert_eq!(
            cinder(&mut s, &del, &["snapshots", "s1"]).map(|r| r.0),
            Some(404)
        );
        assert_eq!(
            cinder(&mut s, &del, &["volumes", "v1"]).map(|r| r.0),
            Some(202)
        );
        assert_eq!(
            cinder(&mut s, &del, &["volumes", "v1"]).map(|r| r.0),
            Some(404)
        );
        assert!(cinder(&mut s, &Method::GET, &["os-availability-zone"]).is_none());
    }

    #[test]
    fn manila_share_needs_its_snapshots_gone_and_rules_are_actions() {
        let mut s = seeded();
        let post = Method::POST;
        let path = ["shares", "sh1", "action"];
        let (code, body) =
            manila(&mut s, &post, &path, br#"{"access_list": null}"#).expect("served");
        assert_eq!(code, 200);
        assert_eq!(body["access_list"][0]["id"], "r1");
        let deny = br#"{"deny_access": {"access_id": "r1"}}"#;
        assert_eq!(manila(&mut s, &post, &path, deny).map(|r| r.0), Some(202));
        assert_eq!(manila(&mut s, &post, &path, deny).map(|r| r.0), Some(404));
        assert_eq!(manila(&mut s, &post, &path, b"{").map(|r| r.0), Some(400));
        let del = Method::DELETE;
        assert_eq!(
            manila(&mut s, &del, &["shares", "sh1"], b"").map(|r| r.0),
            Some(403)
        );
        assert_eq!(
            manila(&mut s, &del, &["snapshots", "ss1"], b"").map(|r| r.0),
            Some(202)
        );
        assert_eq!(
            manila(&mut s, &del, &["shares", "sh1"], b"").map(|r| r.0),
            Some(202)
        );
        assert_eq!(
            manila(&mut s, &del, &["shares", "sh1"], b"").map(|r| r.0),
            Some(404)
        );
    }
}
