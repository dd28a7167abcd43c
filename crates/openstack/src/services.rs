//! Pure parsing of the Nova/Cinder availability-zone lists, the Cinder volume-type list and
//! the Manila share-type list, and the topology rule of anchors §4.5. No I/O.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Deserialize)]
struct ZoneList {
    #[serde(rename = "availabilityZoneInfo")]
    zones: Vec<ZoneInfo>,
}

#[derive(Deserialize)]
struct ZoneInfo {
    #[serde(rename = "zoneName")]
    name: String,
    #[serde(rename = "zoneState", default)]
    state: Option<ZoneState>,
}

#[derive(Deserialize)]
struct ZoneState {
    #[serde(default)]
    available: bool,
}

/// The `GET /os-availability-zone` answer of Nova or Cinder (same shape): how many zones it
/// listed, and the names of the available ones, sorted and without duplicates.
pub fn parse_zones(body: &[u8]) -> Result<(usize, Vec<String>), String> {
    let list: ZoneList =
        serde_json::from_slice(body).map_err(|e| format!("not an availability-zone list: {e}"))?;
    let total = list.zones.len();
    let mut names: Vec<String> = list
        .zones
        .into_iter()
        .filter(|z| z.state.as_ref().is_some_and(|s| s.available))
        .map(|z| z.name)
        .collect();
    names.sort();
    names.dedup();
    Ok((total, names))
}

/// Whether the CSI driver may run with topology: every compute AZ has a volume AZ of the same
/// name and there are not more compute AZs than volume AZs (anchors §4.5). Extra volume AZs
/// are fine (OCPBUGS-30951); an empty compute list never enables topology.
pub fn topology_enabled(compute: &[String], volume: &[String]) -> bool {
    if compute.is_empty() || compute.len() > volume.len() {
        return false;
    }
    compute.iter().all(|c| volume.contains(c))
}

/// A Manila share type.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ShareType {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub extra_specs: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub required_extra_specs: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct ShareTypeList {
    share_types: Vec<ShareType>,
}

/// The `GET /types` answer of Manila.
pub fn parse_share_types(body: &[u8]) -> Result<Vec<ShareType>, String> {
    let list: ShareTypeList =
        serde_json::from_slice(body).map_err(|e| format!("not a Manila share-type list: {e}"))?;
    Ok(list.share_types)
}

/// A Cinder volume type as `GET /types` lists it to the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeType {
    pub id: String,
    pub name: String,
    /// Public types are offered to every project; a private one only to the projects granted
    /// access (the listing shows it to those).
    pub is_public: bool,
}

#[derive(Deserialize)]
struct RawVolumeType {
    id: String,
    name: String,
    #[serde(default)]
    is_public: Option<bool>,
    /// The name before Cinder's v3 API added `is_public` (both are sent today).
    #[serde(default, rename = "os-volume-type-access:is_public")]
    access_is_public: Option<bool>,
}

#[derive(Deserialize)]
struct VolumeTypeList {
    volume_types: Vec<RawVolumeType>,
}

/// The `GET /types` answer of Cinder. A type that says nothing about its visibility is public
/// (the API's default for a created type).
pub fn parse_volume_types(body: &[u8]) -> Result<Vec<VolumeType>, String> {
    let list: VolumeTypeList =
        serde_json::from_slice(body).map_err(|e| format!("not a Cinder volume-type list: {e}"))?;
    Ok(list
        .volume_types
        .into_iter()
        .map(|t| VolumeType {
            is_public: t.is_public.or(t.access_is_public).unwrap_or(true),
            id: t.id,
            name: t.name,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn topology_rule() {
        assert!(topology_enabled(&v(&["a", "b"]), &v(&["a", "b"])));
        assert!(
            topology_enabled(&v(&["a"]), &v(&["a", "b"])),
            "extra volume AZs are fine"
        );
        assert!(
            !topology_enabled(&v(&["a", "c"]), &v(&["a", "b"])),
            "c has no volume AZ"
        );
        assert!(!topology_enabled(&v(&["a", "b", "c"]), &v(&["nova"])));
        assert!(
            !topology_enabled(&v(&["a", "b"]), &v(&["a"])),
            "more compute than volume AZs"
        );
        assert!(!topology_enabled(&[], &v(&["a"])));
    }

    #[test]
    fn zones_filter_available_sorted() {
        let body = br#"{"availabilityZoneInfo": [
            {"zoneName": "b", "zoneState": {"available": true}, "hosts": null},
            {"zoneName": "x", "zoneState": {"available": false}},
            {"zoneName": "a", "zoneState": {"available": true}}]}"#;
        assert_eq!(parse_zones(body), Ok((3, v(&["a", "b"]))));
        let err = parse_zones(br#"{"zones": []}"#).expect_err("wrong shape");
        assert!(err.contains("availability-zone"), "{err}");
    }

    #[test]
    fn volume_types_parse_with_either_visibility_field() {
        let body = br#"{"volume_types": [
            {"id": "1", "name": "__DEFAULT__", "is_public": true, "os-volume-type-access:is_public": true,
             "extra_specs": {}, "qos_specs_id": null, "description": "Default Volume Type"},
            {"id": "2", "name": "ssd", "os-volume-type-access:is_public": false},
            {"id": "3", "name": "hdd"}]}"#;
        let types = parse_volume_types(body).expect("parses");
        let seen: Vec<(&str, bool)> = types
            .iter()
            .map(|t| (t.name.as_str(), t.is_public))
            .collect();
        assert_eq!(seen, [("__DEFAULT__", true), ("ssd", false), ("hdd", true)]);
        for bad in [
            &b"[]"[..],
            br#"{"volume_types": {}}"#,
            br#"{"volume_types": [{"id": "1"}]}"#,
            br#"{"volume_types": [{"id": "1", "name": 7}]}"#,
            b"<html>",
        ] {
            let e = parse_volume_types(bad).expect_err("malformed");
            assert!(e.contains("volume-type list"), "{e}");
        }
    }

    #[test]
    fn share_types_parse() {
        let body = br#"{"share_types": [{"id": "1", "name": "default",
            "extra_specs": {"driver_handles_share_servers": "False"},
            "share_type_access:is_public": true}]}"#;
        let t = parse_share_types(body).expect("parses");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].name, "default");
        assert!(parse_share_types(b"[]").is_err());
    }
}
