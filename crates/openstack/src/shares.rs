//! Manila shares, their snapshots and access rules: listing, removing an access rule, deleting
//! a snapshot or a share. Used by `csi-operator cleanup` to find what the Manila CSI driver
//! left behind (manila-csi-plugin `--cluster-id` tags every share it creates with
//! [`MANILA_CLUSTER_KEY`]; snapshots and access rules carry no tag and belong to their share).
//!
//! Nothing here decides what to delete. Requests use microversion
//! [`MANILA_CLEANUP_MICROVERSION`], where the share actions are named `access_list` and
//! `deny_access` (before 2.7 they were `os-`-prefixed).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::client::{Client, bad};
use crate::error::{Error, Step};
use crate::keystone::Service;
use crate::volumes::{Deleted, check_id, deleted, strings};

/// The metadata key manila-csi-plugin puts on every share it creates, with the value of its
/// `--cluster-id` flag (cloud-provider-openstack `clusterMetadataKey`).
pub const MANILA_CLUSTER_KEY: &str = "manila.csi.openstack.org/cluster";

/// 2.7 (Liberty): the floor where the share actions lost their `os-` prefix; every cloud that
/// runs the Manila CSI driver serves it.
pub const MANILA_CLEANUP_MICROVERSION: &str = "2.7";
const VERSION_HEADER: (&str, &str) = (
    "X-OpenStack-Manila-API-Version",
    MANILA_CLEANUP_MICROVERSION,
);

/// A Manila share as `GET /shares/detail` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    pub id: String,
    pub name: String,
    pub status: String,
    /// GiB.
    pub size: u64,
    pub share_proto: String,
    pub metadata: BTreeMap<String, String>,
}

/// A Manila share snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareSnapshot {
    pub id: String,
    pub name: String,
    pub status: String,
    pub share_id: String,
}

/// An access rule of a share (who may mount it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRule {
    pub id: String,
    pub access_type: String,
    pub access_to: String,
    pub state: String,
}

#[derive(Deserialize)]
struct RawShare {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    share_proto: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct RawShareSnapshot {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    share_id: Option<String>,
}

#[derive(Deserialize)]
struct RawAccessRule {
    id: String,
    #[serde(default)]
    access_type: Option<String>,
    #[serde(default)]
    access_to: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

#[derive(Deserialize)]
struct AccessList {
    access_list: Vec<RawAccessRule>,
}

/// The `access_list` action's answer.
fn parse_access_list(body: &[u8]) -> Result<Vec<AccessRule>, String> {
    let list: AccessList =
        serde_json::from_slice(body).map_err(|e| format!("not an access list: {e}"))?;
    Ok(list
        .access_list
        .into_iter()
        .map(|r| AccessRule {
            id: r.id,
            access_type: r.access_type.unwrap_or_default(),
            access_to: r.access_to.unwrap_or_default(),
            state: r.state.unwrap_or_default(),
        })
        .collect())
}

impl Client {
    /// Every share of the project.
    pub async fn shares(&self) -> Result<Vec<Share>, Error> {
        let raw: Vec<RawShare> = self
            .list_paged(
                Step::ListShares,
                Service::SharedFileSystem,
                "shares/detail",
                "shares",
                |s: &RawShare| s.id.clone(),
            )
            .await?;
        Ok(raw
            .into_iter()
            .map(|s| Share {
                id: s.id,
                name: s.name.unwrap_or_default(),
                status: s.status.unwrap_or_default(),
                size: s.size.unwrap_or(0),
                share_proto: s.share_proto.unwrap_or_default(),
                metadata: strings(s.metadata),
            })
            .collect())
    }

    /// Every share snapshot of the project.
    pub async fn share_snapshots(&self) -> Result<Vec<ShareSnapshot>, Error> {
        let raw: Vec<RawShareSnapshot> = self
            .list_paged(
                Step::ListShareSnapshots,
                Service::SharedFileSystem,
                "snapshots/detail",
                "snapshots",
                |s: &RawShareSnapshot| s.id.clone(),
            )
            .await?;
        Ok(raw
            .into_iter()
            .map(|s| ShareSnapshot {
                id: s.id,
                name: s.name.unwrap_or_default(),
                status: s.status.unwrap_or_default(),
                share_id: s.share_id.unwrap_or_default(),
            })
            .collect())
    }

    /// The access rules of a share (`POST /shares/{id}/action {"access_list": null}`).
    pub async fn share_access_rules(&self, share_id: &str) -> Result<Vec<AccessRule>, Error> {
        let step = Step::ListShareAccessRules;
        check_id(step, share_id)?;
        let (url, body) = self
            .request(
                step,
                Service::SharedFileSystem,
                reqwest::Method::POST,
                &format!("shares/{share_id}/action"),
                Some(&serde_json::json!({"access_list": null})),
                Some(VERSION_HEADER),
            )
            .await?;
        parse_access_list(&body).map_err(|r| bad(step, &url, r))
    }

    /// Removes an access rule (`deny_access`); 404 (rule or share gone) counts as done.
    pub async fn deny_share_access(&self, share_id: &str, rule_id: &str) -> Result<Deleted, Error> {
        let step = Step::DenyShareAccess;
        check_id(step, share_id)?;
        check_id(step, rule_id)?;
        deleted(
            self.request(
                step,
                Service::SharedFileSystem,
                reqwest::Method::POST,
                &format!("shares/{share_id}/action"),
                Some(&serde_json::json!({"deny_access": {"access_id": rule_id}})),
                Some(VERSION_HEADER),
            )
            .await,
        )
    }

    /// Whether the share snapshot still exists (Manila deletes asynchronously, and a share
    /// with a snapshot cannot be deleted).
    pub async fn share_snapshot_exists(&self, id: &str) -> Result<bool, Error> {
        let (step, service) = (Step::ReadShareSnapshot, Service::SharedFileSystem);
        self.exists_by_id(step, service, "snapshots", id, Some(VERSION_HEADER))
            .await
    }

    pub async fn delete_share_snapshot(&self, id: &str) -> Result<Deleted, Error> {
        let (step, service) = (Step::DeleteShareSnapshot, Service::SharedFileSystem);
        self.delete_by_id(step, service, "snapshots", id, Some(VERSION_HEADER))
            .await
    }

    pub async fn delete_share(&self, id: &str) -> Result<Deleted, Error> {
        let (step, service) = (Step::DeleteShare, Service::SharedFileSystem);
        self.delete_by_id(step, service, "shares", id, Some(VERSION_HEADER))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_list_parses() {
        let body = br#"{"access_list": [{"id": "r1", "access_type": "ip",
            "access_to": "10.0.0.0/24", "access_level": "rw", "state": "active"}]}"#;
        let rules = parse_access_list(body).expect("parses");
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].access_to, "10.0.0.0/24");
        assert!(parse_access_list(br#"{"rules": []}"#).is_err());
    }
}
