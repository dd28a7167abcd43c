//! `snapshot.storage.k8s.io/v1` `VolumeSnapshotClass`, written by the Cinder operator
//! (`standard-csi`). Its fields sit at the root of the object (there is no `spec`), so this is
//! a hand-written [`kube::Resource`] rather than a `CustomResource` derive: the derive's
//! `no_spec` mode would send `apiVersion`/`kind` into an unknown-field map and write them twice.
//!
//! What this module must not do: any I/O, or waiting for the CRD (the snapshot-class step does
//! that).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::ClusterResourceScope;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::string_enum::string_enum;

/// Annotation that marks the default VolumeSnapshotClass (value `"true"`).
pub const DEFAULT_SNAPSHOT_CLASS_ANNOTATION: &str =
    "snapshot.storage.kubernetes.io/is-default-class";

string_enum! {
    /// `deletionPolicy` (enum `Delete Retain`, required).
    pub enum DeletionPolicy {
        /// Delete the snapshot content with the VolumeSnapshot.
        Delete = "Delete",
        /// Keep it.
        Retain = "Retain",
    }
}

/// A cluster-scoped `VolumeSnapshotClass`.
#[derive(Clone, Debug, PartialEq)]
pub struct VolumeSnapshotClass {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// The CSI driver, e.g. `cinder.csi.openstack.org`.
    pub driver: String,
    /// What happens to snapshot content when its VolumeSnapshot is deleted.
    pub deletion_policy: DeletionPolicy,
    /// Driver parameters (Cinder: `force-create: "false"`).
    pub parameters: Option<BTreeMap<String, String>>,
    /// Root fields this crate does not model (`allowedTopologies`, …), kept for the write back.
    pub extra: BTreeMap<String, Value>,
}

impl VolumeSnapshotClass {
    /// A class named `name` for `driver` with the given policy and no parameters.
    pub fn new(name: &str, driver: &str, deletion_policy: DeletionPolicy) -> Self {
        VolumeSnapshotClass {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            driver: driver.to_owned(),
            deletion_policy,
            parameters: None,
            extra: BTreeMap::new(),
        }
    }
}

impl kube::Resource for VolumeSnapshotClass {
    type DynamicType = ();
    type Scope = ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "VolumeSnapshotClass".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        "snapshot.storage.k8s.io".into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        "snapshot.storage.k8s.io/v1".into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        "volumesnapshotclasses".into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The wire form for reading: `apiVersion` and `kind` are named so they never land in `extra`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireIn {
    #[serde(default, rename = "apiVersion")]
    _api_version: Option<Value>,
    #[serde(default, rename = "kind")]
    _kind: Option<Value>,
    #[serde(default)]
    metadata: ObjectMeta,
    driver: String,
    deletion_policy: DeletionPolicy,
    #[serde(default)]
    parameters: Option<BTreeMap<String, String>>,
    #[serde(flatten)]
    extra: BTreeMap<String, Value>,
}

/// The wire form for writing, with the constant `apiVersion` and `kind`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: &'a ObjectMeta,
    driver: &'a str,
    deletion_policy: &'a DeletionPolicy,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a BTreeMap<String, String>>,
    #[serde(flatten)]
    extra: BTreeMap<&'a str, &'a Value>,
}

impl<'de> Deserialize<'de> for VolumeSnapshotClass {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireIn::deserialize(d)?;
        Ok(VolumeSnapshotClass {
            metadata: w.metadata,
            driver: w.driver,
            deletion_policy: w.deletion_policy,
            parameters: w.parameters,
            extra: w.extra,
        })
    }
}

impl Serialize for VolumeSnapshotClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A caller could put a modelled key into `extra`; the typed field wins so the output
        // never has a duplicate key.
        const MODELLED: [&str; 6] = [
            "apiVersion",
            "kind",
            "metadata",
            "driver",
            "deletionPolicy",
            "parameters",
        ];
        WireOut {
            api_version: "snapshot.storage.k8s.io/v1",
            kind: "VolumeSnapshotClass",
            metadata: &self.metadata,
            driver: &self.driver,
            deletion_policy: &self.deletion_policy,
            parameters: self.parameters.as_ref(),
            extra: self
                .extra
                .iter()
                .filter(|(k, _)| !MODELLED.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v))
                .collect(),
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_with_unknown_root_fields() {
        let v = json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": {"name": "standard-csi",
                         "annotations": {DEFAULT_SNAPSHOT_CLASS_ANNOTATION: "true"}},
            "driver": "cinder.csi.openstack.org", "deletionPolicy": "Delete",
            "parameters": {"force-create": "false"},
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "k", "values": ["v"]}]}]
        });
        let c: VolumeSnapshotClass = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(c.deletion_policy, DeletionPolicy::Delete);
        assert_eq!(
            c.extra.keys().collect::<Vec<_>>(),
            vec!["allowedTopologies"]
        );
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
    }

    #[test]
    fn modelled_keys_in_extra_do_not_duplicate() {
        let mut c = VolumeSnapshotClass::new("a", "d", DeletionPolicy::Retain);
        c.extra.insert("kind".into(), json!("Other"));
        c.extra.insert("driver".into(), json!("other"));
        let out = serde_json::to_string(&c).unwrap();
        assert_eq!(out.matches("\"kind\"").count(), 1, "{out}");
        assert_eq!(out.matches("\"driver\"").count(), 1, "{out}");
        assert!(out.contains("\"kind\":\"VolumeSnapshotClass\""), "{out}");
    }

    #[test]
    fn unknown_policy_is_kept_and_wrong_types_fail() {
        let c: VolumeSnapshotClass = serde_json::from_value(json!({
            "metadata": {"name": "a"}, "driver": "d", "deletionPolicy": "Archive"
        }))
        .unwrap();
        assert_eq!(c.deletion_policy, DeletionPolicy::Unknown("Archive".into()));
        let err = serde_json::from_value::<VolumeSnapshotClass>(json!({
            "metadata": {"name": "a"}, "driver": "d", "deletionPolicy": "Delete",
            "parameters": {"force-create": false}
        }))
        .unwrap_err();
        assert!(err.to_string().contains("expected a string"), "{err}");
        let err =
            serde_json::from_value::<VolumeSnapshotClass>(json!({"metadata": {}})).unwrap_err();
        assert!(err.to_string().contains("missing field `driver`"), "{err}");
    }
}
