//! Cinder volumes and volume snapshots: listing them with their metadata, deleting one, and
//! asking whether a snapshot is gone yet. Used by `csi-operator cleanup` to find what the
//! Cinder CSI driver left behind (cinder-csi-plugin `--cluster` tags every volume and snapshot
//! it creates with [`CINDER_CLUSTER_KEY`]).
//!
//! Nothing here decides what to delete; that is the caller's. Parsing is pure and tolerant
//! of fields Cinder adds; identifiers are checked before they go into a URL path.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::client::{Client, bad};
use crate::error::{Error, Step};
use crate::keystone::Service;

/// The metadata key cinder-csi-plugin puts on every volume and snapshot it creates, with the
/// value of its `--cluster` flag (cloud-provider-openstack `cinderCSIClusterIDKey`).
pub const CINDER_CLUSTER_KEY: &str = "cinder.csi.openstack.org/cluster";

/// Pages are followed at most this many times, so a server that ignores `marker` cannot keep
/// the client listing forever.
pub(crate) const MAX_PAGES: usize = 10_000;

/// A Cinder volume as `GET /volumes/detail` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Volume {
    pub id: String,
    pub name: String,
    pub status: String,
    /// GiB.
    pub size: u64,
    /// String values only (Cinder's metadata values are strings).
    pub metadata: BTreeMap<String, String>,
    /// The servers the volume is attached to (an attachment may lack a server id).
    pub attached_to: Vec<String>,
}

/// A Cinder volume snapshot as `GET /snapshots/detail` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeSnapshot {
    pub id: String,
    pub name: String,
    pub status: String,
    pub volume_id: String,
    pub metadata: BTreeMap<String, String>,
}

/// What a delete found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// The service accepted the delete (202).
    Accepted,
    /// It was already gone (404): a re-run or someone else was faster.
    AlreadyGone,
}

#[derive(Deserialize)]
struct RawVolume {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    attachments: Vec<RawAttachment>,
}

#[derive(Deserialize)]
struct RawAttachment {
    #[serde(default)]
    server_id: Option<String>,
}

#[derive(Deserialize)]
struct RawSnapshot {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    volume_id: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct Link {
    #[serde(default)]
    rel: String,
}

pub(crate) fn strings(map: BTreeMap<String, serde_json::Value>) -> BTreeMap<String, String> {
    map.into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(s) => Some((k, s)),
            _ => None,
        })
        .collect()
}

/// One page of a list: its items and whether the server says there is a next page.
pub(crate) fn page<T: serde::de::DeserializeOwned>(
    body: &[u8],
    key: &str,
) -> Result<(Vec<T>, bool), String> {
    let mut value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let items = value
        .get_mut(key)
        .map(serde_json::Value::take)
        .ok_or_else(|| format!("the answer has no {key:?} list"))?;
    let items: Vec<T> =
        serde_json::from_value(items).map_err(|e| format!("not a list of {key}: {e}"))?;
    let links: Vec<Link> = value
        .get(format!("{key}_links"))
        .cloned()
        .and_then(|l| serde_json::from_value(l).ok())
        .unwrap_or_default();
    Ok((items, links.iter().any(|l| l.rel == "next")))
}

/// Whether `id` can go into a URL path as is. OpenStack ids are UUIDs; anything else (a `/`,
/// `?`, `..`) is refused rather than escaped, so a hostile listing cannot aim a DELETE
/// elsewhere.
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

pub(crate) fn check_id(step: Step, id: &str) -> Result<(), Error> {
    if is_safe_id(id) {
        Ok(())
    } else {
        Err(bad(
            step,
            "(no request made)",
            format!("{id:?} is not an OpenStack id"),
        ))
    }
}

/// A delete's answer: 2xx accepted, 404 already gone, anything else the error.
pub(crate) fn deleted(result: Result<(String, bytes::Bytes), Error>) -> Result<Deleted, Error> {
    match result {
        Ok(_) => Ok(Deleted::Accepted),
        Err(e) if e.status() == Some(404) => Ok(Deleted::AlreadyGone),
        Err(e) => Err(e),
    }
}

impl Client {
    /// `GET <collection>/<id>` under `service`: whether the object still exists (404: no).
    pub(crate) async fn exists_by_id(
        &self,
        step: Step,
        service: Service,
        collection: &str,
        id: &str,
        header: Option<(&'static str, &'static str)>,
    ) -> Result<bool, Error> {
        check_id(step, id)?;
        let path = format!("{collection}/{id}");
        match self
            .request(step, service, reqwest::Method::GET, &path, None, header)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.status() == Some(404) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `DELETE <collection>/<id>` under `service`: accepted, or already gone (404).
    pub(crate) async fn delete_by_id(
        &self,
        step: Step,
        service: Service,
        collection: &str,
        id: &str,
        header: Option<(&'static str, &'static str)>,
    ) -> Result<Deleted, Error> {
        check_id(step, id)?;
        let path = format!("{collection}/{id}");
        deleted(
            self.request(step, service, reqwest::Method::DELETE, &path, None, header)
                .await,
        )
    }

    /// Every volume of the project, following Cinder's pages (`marker`).
    pub async fn volumes(&self) -> Result<Vec<Volume>, Error> {
        let raw: Vec<RawVolume> = self
            .list_paged(
                Step::ListVolumes,
                Service::Volume,
                "volumes/detail",
                "volumes",
                |v: &RawVolume| v.id.clone(),
            )
            .await?;
        Ok(raw
            .into_iter()
            .map(|v| Volume {
                id: v.id,
                name: v.name.unwrap_or_default(),
                status: v.status.unwrap_or_default(),
                size: v.size.unwrap_or(0),
                metadata: strings(v.metadata),
                attached_to: v
                    .attachments
                    .into_iter()
                    .map(|a| a.server_id.unwrap_or_else(|| "an unnamed server".into()))
                    .collect(),
            })
            .collect())
    }

    /// Every volume snapshot of the project.
    pub async fn volume_snapshots(&self) -> Result<Vec<VolumeSnapshot>, Error> {
        let raw: Vec<RawSnapshot> = self
            .list_paged(
                Step::ListVolumeSnapshots,
                Service::Volume,
                "snapshots/detail",
                "snapshots",
                |s: &RawSnapshot| s.id.clone(),
            )
            .await?;
        Ok(raw
            .into_iter()
            .map(|s| VolumeSnapshot {
                id: s.id,
                name: s.name.unwrap_or_default(),
                status: s.status.unwrap_or_default(),
                volume_id: s.volume_id.unwrap_or_default(),
                metadata: strings(s.metadata),
            })
            .collect())
    }

    /// Whether the snapshot still exists (Cinder deletes asynchronously; a volume with a
    /// snapshot in `deleting` cannot be deleted yet).
    pub async fn volume_snapshot_exists(&self, id: &str) -> Result<bool, Error> {
        self.exists_by_id(
            Step::ReadVolumeSnapshot,
            Service::Volume,
            "snapshots",
            id,
            None,
        )
        .await
    }

    pub async fn delete_volume(&self, id: &str) -> Result<Deleted, Error> {
        self.delete_by_id(Step::DeleteVolume, Service::Volume, "volumes", id, None)
            .await
    }

    pub async fn delete_volume_snapshot(&self, id: &str) -> Result<Deleted, Error> {
        self.delete_by_id(
            Step::DeleteVolumeSnapshot,
            Service::Volume,
            "snapshots",
            id,
            None,
        )
        .await
    }

    /// A Cinder (or Manila) list, page after page: while the answer has a `next` link, ask again with
    /// `marker` = the last id seen.
    pub(crate) async fn list_paged<T: serde::de::DeserializeOwned>(
        &self,
        step: Step,
        service: Service,
        path: &str,
        key: &str,
        id: impl Fn(&T) -> String,
    ) -> Result<Vec<T>, Error> {
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let url_path = match &marker {
                Some(m) => format!("{path}?marker={m}"),
                None => path.to_string(),
            };
            let (url, body) = self
                .request(step, service, reqwest::Method::GET, &url_path, None, None)
                .await?;
            let (items, more) = page::<T>(&body, key).map_err(|r| bad(step, &url, r))?;
            let last = items.last().map(&id);
            out.extend(items);
            match (more, last) {
                (true, Some(last)) if is_safe_id(&last) && marker.as_deref() != Some(&last) => {
                    marker = Some(last)
                }
                (true, Some(_)) => {
                    return Err(bad(step, &url, "the next page does not advance"));
                }
                _ => return Ok(out),
            }
        }
        Err(bad(step, path, format!("more than {MAX_PAGES} pages")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_page_parses_metadata_and_links() {
        let body = br#"{"volumes": [{"id": "v1", "name": "pvc-1", "status": "in-use",
            "size": 10, "metadata": {"cinder.csi.openstack.org/cluster": "c1", "n": 3},
            "attachments": [{"server_id": "s1", "attachment_id": "a"}], "extra": true}],
            "volumes_links": [{"rel": "next", "href": "http://x/volumes/detail?marker=v1"}]}"#;
        let (items, more): (Vec<RawVolume>, bool) = page(body, "volumes").expect("parses");
        assert!(more);
        assert_eq!(items.len(), 1);
        let meta = strings(items[0].metadata.clone());
        assert_eq!(meta.get(CINDER_CLUSTER_KEY).map(String::as_str), Some("c1"));
        assert!(!meta.contains_key("n"), "non-string values are dropped");
        let (_, more): (Vec<RawVolume>, bool) =
            page(br#"{"volumes": []}"#, "volumes").expect("parses");
        assert!(!more);
        assert!(page::<RawVolume>(br#"{"shares": []}"#, "volumes").is_err());
        assert!(page::<RawVolume>(b"<html>", "volumes").is_err());
    }

    #[test]
    fn only_plain_ids_go_into_paths() {
        assert!(is_safe_id("0b6a7c1e-2f0d-4a53-9d7e-1c2b3a4d5e6f"));
        for bad in ["", ".", "..", "a/b", "a?b", "a b", "../volumes", "%2e"] {
            assert!(!is_safe_id(bad), "{bad:?}");
        }
    }
}
