//! What a CSI controller plugin asks of the cloud when a claim is provisioned, attached,
//! expanded or deleted: Cinder volume create / extend / delete, Nova volume attach / detach,
//! and Manila share create (with its access rule) / extend / delete, as Rust calls on [`SimHandle`] for the testbed's provisioner
//! stand-in. They share the stored state with the HTTP API, so a volume created here is
//! listed by `GET …/volumes/detail` and removed by `csi-operator cleanup`.
//!
//! Refusals carry the status and body the real service answers, so a caller can report them
//! as the drivers do: an unknown volume type is Cinder's 404 `VolumeTypeNotFoundByName`, a
//! zone it does not have its 400 `InvalidAvailabilityZone`, an unknown share type Manila's 404
//! "Share type not found.", a shrinking extend the services' 400s. Creations take effect at
//! once (`available`), as deletions already do.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::storage::{delete_share, delete_volume, error};
use crate::{SimAccessRule, SimExportLocation, SimHandle, SimShare, SimVolume};

/// A refusal: the HTTP status, the request line and the body the service answered with.
/// Displayed as gophercloud words an unexpected answer, which is what the drivers report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudError {
    pub status: u16,
    pub method: &'static str,
    pub url: String,
    pub expected: u16,
    pub body: String,
}

impl std::fmt::Display for CloudError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Expected HTTP response code [{}] when accessing [{} {}], but got {} instead: {}",
            self.expected, self.method, self.url, self.status, self.body
        )
    }
}

impl std::error::Error for CloudError {}

/// A Cinder volume to create.
#[derive(Debug, Clone, Default)]
pub struct VolumeRequest {
    pub name: String,
    pub size_gib: u64,
    /// `None`: the cloud's default type.
    pub volume_type: Option<String>,
    /// `None`: Cinder's default zone.
    pub availability_zone: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

/// A Manila share to create.
#[derive(Debug, Clone, Default)]
pub struct ShareRequest {
    pub name: String,
    pub size_gib: u64,
    /// `NFS` or `CEPHFS`.
    pub protocol: String,
    /// `None`: Manila's default share type.
    pub share_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// Who gets read-write access (an IP rule for NFS, a cephx user for CephFS).
    pub access_to: String,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh UUID-shaped id (unique within the process).
fn new_id() -> String {
    let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    format!("5e1f0000-0000-4000-8000-{n:012x}")
}

impl SimHandle {
    fn refusal(
        &self,
        service: &str,
        method: &'static str,
        path: &str,
        expected: u16,
        (status, body): (u16, Value),
    ) -> CloudError {
        CloudError {
            status,
            method,
            url: format!("{}/{service}/{path}", self.url()),
            expected,
            body: body.to_string(),
        }
    }

    /// `POST /v3/{project}/volumes`.
    pub fn create_volume(&self, req: &VolumeRequest) -> Result<SimVolume, CloudError> {
        let fail = |answer| self.refusal("volume/v3", "POST", "volumes", 202, answer);
        let mut state = self.shared.lock();
        if let Some(t) = &req.volume_type
            && !state
                .volume_types
                .iter()
                .any(|vt| vt.name == *t || vt.id == *t)
        {
            return Err(fail((
                404,
                error(
                    "itemNotFound",
                    404,
                    &format!("Volume type with name {t} could not be found."),
                ),
            )));
        }
        if let Some(zone) = &req.availability_zone
            && !state
                .volume_zones
                .iter()
                .any(|z| z.name == *zone && z.available)
        {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    &format!("Availability zone '{zone}' is invalid."),
                ),
            )));
        }
        if req.size_gib == 0 {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    "Invalid input received: Volume size '0' must be an integer and greater than 0.",
                ),
            )));
        }
        let mut volume = SimVolume::new(&new_id(), &req.name);
        volume.size = req.size_gib;
        volume.metadata = req.metadata.clone();
        volume.volume_type = req.volume_type.clone();
        if let Some(zone) = &req.availability_zone {
            volume.availability_zone = zone.clone();
        }
        state.storage.volumes.push(volume.clone());
        Ok(volume)
    }

    /// `POST /v3/{project}/volumes/{id}/action` with `os-extend`.
    pub fn extend_volume(&self, id: &str, new_size_gib: u64) -> Result<(), CloudError> {
        let path = format!("volumes/{id}/action");
        let fail = |answer| self.refusal("volume/v3", "POST", &path, 202, answer);
        let mut state = self.shared.lock();
        let Some(v) = state.storage.volumes.iter_mut().find(|v| v.id == id) else {
            return Err(fail((
                404,
                error(
                    "itemNotFound",
                    404,
                    &format!("Volume {id} could not be found."),
                ),
            )));
        };
        if new_size_gib <= v.size {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    &format!(
                        "New size for extend must be greater than current size. (current: {}, extended: {new_size_gib}).",
                        v.size
                    ),
                ),
            )));
        }
        v.size = new_size_gib;
        Ok(())
    }

    /// Nova's `POST /servers/{server}/os-volume_attachments`: the volume becomes `in-use`,
    /// attached to `server`. Attaching it again to the same server is a no-op; to another one
    /// is refused, as for a volume that is not multi-attach.
    pub fn attach_volume(&self, id: &str, server: &str) -> Result<(), CloudError> {
        let path = format!("servers/{server}/os-volume_attachments");
        let fail = |answer| self.refusal("compute/v2.1", "POST", &path, 200, answer);
        let mut state = self.shared.lock();
        let Some(v) = state.storage.volumes.iter_mut().find(|v| v.id == id) else {
            return Err(fail((
                404,
                error(
                    "itemNotFound",
                    404,
                    &format!("Volume {id} could not be found."),
                ),
            )));
        };
        if v.attachments.iter().any(|s| s == server) {
            return Ok(());
        }
        if !v.attachments.is_empty() || v.status != "available" {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    &format!(
                        "Invalid input received: Invalid volume: Volume {id} status must be available or downloading to reserve, but the current status is {}. (HTTP 400)",
                        v.status
                    ),
                ),
            )));
        }
        v.attachments.push(server.to_owned());
        v.status = "in-use".into();
        Ok(())
    }

    /// Nova's `DELETE /servers/{server}/os-volume_attachments/{id}`; a volume not attached
    /// there is a 404.
    pub fn detach_volume(&self, id: &str, server: &str) -> Result<(), CloudError> {
        let path = format!("servers/{server}/os-volume_attachments/{id}");
        let fail = |answer| self.refusal("compute/v2.1", "DELETE", &path, 202, answer);
        let mut state = self.shared.lock();
        let Some(v) = state
            .storage
            .volumes
            .iter_mut()
            .find(|v| v.id == id && v.attachments.iter().any(|s| s == server))
        else {
            return Err(fail((
                404,
                error("itemNotFound", 404, &format!("volume_id not found: {id}")),
            )));
        };
        v.attachments.retain(|s| s != server);
        if v.attachments.is_empty() {
            v.status = "available".into();
        }
        Ok(())
    }

    /// `DELETE /v3/{project}/volumes/{id}`.
    pub fn delete_volume(&self, id: &str) -> Result<(), CloudError> {
        let answer = delete_volume(&mut self.shared.lock().storage, id);
        if answer.0 == 202 {
            return Ok(());
        }
        Err(self.refusal("volume/v3", "DELETE", &format!("volumes/{id}"), 202, answer))
    }

    /// `POST /v2/shares`, then `allow_access` for `access_to`; returns the share and the
    /// access rule's id.
    pub fn create_share(&self, req: &ShareRequest) -> Result<(SimShare, String), CloudError> {
        let fail = |answer| self.refusal("share/v2", "POST", "shares", 200, answer);
        let mut state = self.shared.lock();
        let Some(types) = state.share_types.as_ref() else {
            return Err(fail((
                404,
                error("itemNotFound", 404, "The resource could not be found."),
            )));
        };
        let wanted = req.share_type.as_deref().unwrap_or("default");
        let Some(share_type) = types
            .iter()
            .find(|t| t.name == wanted || t.id == wanted)
            .cloned()
        else {
            return Err(fail((
                404,
                error("itemNotFound", 404, "Share type not found."),
            )));
        };
        if !["NFS", "CEPHFS"].contains(&req.protocol.to_uppercase().as_str()) {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    &format!("Invalid share: Invalid protocol provided: {}", req.protocol),
                ),
            )));
        }
        if req.size_gib == 0 {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    "Invalid input received: Share size '0' must be an integer and greater than 0.",
                ),
            )));
        }
        let id = new_id();
        let mut share = SimShare::new(&id, &req.name).of_type(&share_type.name);
        share.share_type_id = share_type.id.clone();
        share.size = req.size_gib;
        share.metadata = req.metadata.clone();
        share.share_proto = req.protocol.to_uppercase();
        let location = if share.share_proto == "NFS" {
            format!("192.0.2.10:/shares/share-{id}")
        } else {
            format!("192.0.2.10:6789:/volumes/_nogroup/{id}")
        };
        share = share.exported_at(SimExportLocation::new(&location));
        let rule_id = new_id();
        state.storage.shares.push(share.clone());
        state
            .storage
            .access_rules
            .push(SimAccessRule::new(&rule_id, &id, &req.access_to));
        Ok((share, rule_id))
    }

    /// `POST /v2/shares/{id}/action` with `extend`.
    pub fn extend_share(&self, id: &str, new_size_gib: u64) -> Result<(), CloudError> {
        let path = format!("shares/{id}/action");
        let fail = |answer| self.refusal("share/v2", "POST", &path, 202, answer);
        let mut state = self.shared.lock();
        let Some(s) = state.storage.shares.iter_mut().find(|s| s.id == id) else {
            return Err(fail((
                404,
                error(
                    "itemNotFound",
                    404,
                    &format!("Share {id} could not be found."),
                ),
            )));
        };
        if new_size_gib <= s.size {
            return Err(fail((
                400,
                error(
                    "badRequest",
                    400,
                    &format!(
                        "Invalid input received: New size for extend must be greater than current size. (current: {}, extended: {new_size_gib}).",
                        s.size
                    ),
                ),
            )));
        }
        s.size = new_size_gib;
        Ok(())
    }

    /// `DELETE /v2/shares/{id}` (its access rules go with it).
    pub fn delete_share(&self, id: &str) -> Result<(), CloudError> {
        let answer = delete_share(&mut self.shared.lock().storage, id);
        if answer.0 == 202 {
            return Ok(());
        }
        Err(self.refusal("share/v2", "DELETE", &format!("shares/{id}"), 202, answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SimConfig, SimShareType, SimVolumeType};

    async fn sim() -> crate::OpenStackSim {
        crate::OpenStackSim::start(
            SimConfig::default(),
            "127.0.0.1:0".parse().expect("address"),
        )
        .await
        .expect("sim starts")
    }

    #[tokio::test]
    async fn volumes_are_created_extended_and_deleted_as_cinder_answers() {
        let sim = sim().await;
        let h = sim.handle();
        h.set_volume_types(vec![SimVolumeType::public("fast")]);
        let req = VolumeRequest {
            name: "pvc-1".into(),
            size_gib: 2,
            volume_type: Some("fast".into()),
            availability_zone: Some("nova".into()),
            metadata: BTreeMap::from([("k".to_string(), "v".to_string())]),
        };
        let v = h.create_volume(&req).expect("created");
        assert_eq!((v.size, v.volume_type.as_deref()), (2, Some("fast")));
        assert_eq!(h.storage().volumes, vec![v.clone()]);

        let err = h
            .create_volume(&VolumeRequest {
                volume_type: Some("gold".into()),
                ..req.clone()
            })
            .expect_err("no such type");
        assert_eq!(err.status, 404);
        assert!(
            err.to_string()
                .contains("Volume type with name gold could not be found."),
            "{err}"
        );
        let err = h
            .create_volume(&VolumeRequest {
                availability_zone: Some("az9".into()),
                ..req.clone()
            })
            .expect_err("no such zone");
        assert!(err.body.contains("Availability zone 'az9' is invalid."));

        h.attach_volume(&v.id, "worker-0").expect("attached");
        h.attach_volume(&v.id, "worker-0").expect("again: no-op");
        assert_eq!(h.storage().volumes[0].status, "in-use");
        assert_eq!(
            h.attach_volume(&v.id, "worker-1")
                .expect_err("not multi-attach")
                .status,
            400
        );
        assert_eq!(h.delete_volume(&v.id).expect_err("attached").status, 400);
        h.detach_volume(&v.id, "worker-0").expect("detached");
        assert_eq!(
            h.detach_volume(&v.id, "worker-0")
                .expect_err("not attached")
                .status,
            404
        );
        assert_eq!(h.storage().volumes[0].status, "available");
        h.extend_volume(&v.id, 3).expect("extended");
        assert_eq!(h.storage().volumes[0].size, 3);
        let err = h.extend_volume(&v.id, 3).expect_err("not larger");
        assert_eq!(err.status, 400);
        h.delete_volume(&v.id).expect("deleted");
        assert!(h.storage().volumes.is_empty());
        assert_eq!(h.delete_volume(&v.id).expect_err("gone").status, 404);
    }

    #[tokio::test]
    async fn shares_are_created_with_access_and_refused_for_unknown_types() {
        let sim = sim().await;
        let h = sim.handle();
        h.add_share_type(SimShareType::new("cephfs"));
        let req = ShareRequest {
            name: "pvc-2".into(),
            size_gib: 1,
            protocol: "CEPHFS".into(),
            share_type: Some("cephfs".into()),
            metadata: BTreeMap::new(),
            access_to: "0.0.0.0/0".into(),
        };
        let (share, rule) = h.create_share(&req).expect("created");
        assert_eq!(share.share_proto, "CEPHFS");
        let stored = h.storage();
        assert_eq!(stored.shares, vec![share.clone()]);
        assert_eq!(stored.access_rules[0].id, rule);

        let err = h
            .create_share(&ShareRequest {
                share_type: Some("platinum".into()),
                ..req.clone()
            })
            .expect_err("no such type");
        assert_eq!(err.status, 404);
        assert!(
            err.to_string().ends_with(
                "but got 404 instead: {\"itemNotFound\":{\"code\":404,\"message\":\"Share type not found.\"}}"
            ),
            "{err}"
        );
        h.extend_share(&share.id, 5).expect("extended");
        assert_eq!(h.storage().shares[0].size, 5);
        h.delete_share(&share.id).expect("deleted");
        let stored = h.storage();
        assert!(stored.shares.is_empty() && stored.access_rules.is_empty());
    }
}
