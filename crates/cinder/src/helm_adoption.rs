//! Taking over what the upstream `cinder-csi-plugin` Helm chart (kubernetes/cloud-provider-
//! openstack, `charts/cinder-csi-plugin`) left on a plain Kubernetes cluster, when the operator
//! runs with `--adopt-helm-release [NAMESPACE/]NAME` (docs/switch-from-helm.md).
//!
//! What is adopted: the CSIDriver `cinder.csi.openstack.org` and the chart's two
//! StorageClasses, `csi-cinder-sc-delete` and `csi-cinder-sc-retain`, each only when its Helm
//! ownership annotations name the release. Their immutable fields (the CSIDriver's spec, the
//! classes' provisioner, parameters, reclaimPolicy, volumeBindingMode) are taken from the live
//! objects once, at adoption, and kept in a [`Record`] (a ConfigMap in the operator's namespace),
//! so that after `helm uninstall` deletes them the operator re-creates them exactly as they were:
//! PersistentVolumes and PVCs that name those classes, and the VolumeAttachments of the driver,
//! keep meaning the same thing. The chart's workloads are not adopted: they are recorded so the
//! operator can wait until `helm uninstall` has removed them (and their pods) before it starts
//! its own controller and node plugin, which use the same driver name and kubelet sockets.
//!
//! Everything here is pure: it gets live objects as JSON and returns decisions and objects.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::CSI_DRIVER_NAME;

/// The ConfigMap (in the operator's namespace) that remembers what was adopted.
pub const RECORD_CONFIGMAP: &str = "cinder-csi-helm-adoption";
/// Its key: the [`Record`] as JSON.
pub const RECORD_KEY: &str = "adoption.json";
/// The StorageClasses the chart's `storageclass.yaml` creates (when `storageClass.enabled`).
pub const CHART_STORAGE_CLASSES: [&str; 2] = ["csi-cinder-sc-delete", "csi-cinder-sc-retain"];
/// The namespace of a release given without one (where the chart is usually installed).
pub const DEFAULT_RELEASE_NAMESPACE: &str = "kube-system";
/// Helm's ownership label and annotations (Helm 3.2+ sets them on every object it installs).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
pub const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// The default-class annotation, which the chart sets from `storageClass.<class>.isDefault`.
pub use operator_kit::class_names::DEFAULT_CLASS_ANNOTATION;
/// OpenShift's admission label for CSI drivers that allow inline (Ephemeral) volumes; the kit's
/// apply engine insists on it for such a driver. It has no effect on plain Kubernetes;
/// `privileged` is the most conservative value should the cluster ever enforce it.
pub const EPHEMERAL_PROFILE_LABEL: &str = "security.openshift.io/csi-ephemeral-volume-profile";

/// A Helm release: `NAMESPACE/NAME`, or `NAME` in `kube-system`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub namespace: String,
    pub name: String,
}

impl FromStr for Release {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (namespace, name) = match s.split_once('/') {
            Some((ns, name)) => (ns, name),
            None => (DEFAULT_RELEASE_NAMESPACE, s),
        };
        // Helm's release names: at most 53 characters of a DNS subdomain.
        if name.is_empty() || name.len() > 53 || !is_dns_subdomain(name) {
            return Err(format!(
                "{name:?} is not a Helm release name (lowercase letters, digits, '-' and '.', at most 53 characters); expected [NAMESPACE/]NAME, e.g. kube-system/cinder-csi"
            ));
        }
        if namespace.is_empty() || namespace.len() > 63 || !is_dns_label(namespace) {
            return Err(format!(
                "{namespace:?} is not a namespace name; expected [NAMESPACE/]NAME, e.g. kube-system/cinder-csi"
            ));
        }
        Ok(Self {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns_label)
}

/// A workload of the release, recorded so the operator can wait for it and its pods to go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseWorkload {
    /// `Deployment` or `DaemonSet`.
    pub kind: String,
    pub name: String,
    /// Its `spec.selector.matchLabels`: how its pods are found once it is gone.
    #[serde(default)]
    pub selector: BTreeMap<String, String>,
}

/// What was adopted, as kept in the [`RECORD_CONFIGMAP`] ConfigMap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Record {
    /// The release, `NAMESPACE/NAME`.
    pub release: String,
    /// The CSIDriver's spec as the chart left it (with the server's defaults).
    pub csi_driver_spec: Value,
    /// The adopted StorageClasses, as the operator applies them.
    #[serde(default)]
    pub storage_classes: Vec<Value>,
    /// The chart's classes that were not adopted, with the reason.
    #[serde(default)]
    pub not_adopted: BTreeMap<String, String>,
    /// The release's workloads at adoption.
    #[serde(default)]
    pub workloads: Vec<ReleaseWorkload>,
}

/// Why an object does not belong to `release`, or `None` when it does.
pub fn not_in_release(object: &Value, release: &Release) -> Option<String> {
    let annotations = &object["metadata"]["annotations"];
    let name = annotations[RELEASE_NAME_ANNOTATION].as_str();
    let namespace = annotations[RELEASE_NAMESPACE_ANNOTATION].as_str();
    match (name, namespace) {
        (Some(n), Some(ns)) if n == release.name && ns == release.namespace => None,
        (None, _) | (_, None) => Some(format!(
            "it carries no Helm ownership annotations ({RELEASE_NAME_ANNOTATION}, {RELEASE_NAMESPACE_ANNOTATION}), so it is not from release {release}"
        )),
        (Some(n), Some(ns)) => Some(format!(
            "it belongs to Helm release {ns}/{n}, not {release}"
        )),
    }
}

/// Decides the adoption from the live objects (as JSON): the CSIDriver, each chart class by
/// name (`None`: absent), and the Deployments and DaemonSets of the release's namespace. The
/// CSIDriver decides: when it cannot be adopted, nothing is (the error says why). A class that
/// cannot be adopted is left alone and listed in [`Record::not_adopted`].
pub fn plan(
    release: &Release,
    csi_driver: Option<&Value>,
    classes: &[(&str, Option<&Value>)],
    workloads: &[Value],
) -> Result<Record, String> {
    let Some(driver) = csi_driver else {
        return Err(format!(
            "the CSIDriver {CSI_DRIVER_NAME} does not exist, so there is nothing of Helm release {release} to adopt; check the release (helm -n {} status {}) or start the operator without --adopt-helm-release",
            release.namespace, release.name
        ));
    };
    if let Some(why) = not_in_release(driver, release) {
        return Err(format!(
            "the CSIDriver {CSI_DRIVER_NAME} is not adopted: {why}; nothing was changed"
        ));
    }
    let spec = driver.get("spec").cloned().unwrap_or(Value::Null);
    if !spec.is_object() {
        return Err(format!(
            "the CSIDriver {CSI_DRIVER_NAME} of release {release} has no spec; nothing was changed"
        ));
    }
    // Cinder volumes are attached to the node before they are mounted; a driver object that
    // says otherwise is not the chart's and would break every volume if kept.
    if spec.get("attachRequired").and_then(Value::as_bool) == Some(false) {
        return Err(format!(
            "the CSIDriver {CSI_DRIVER_NAME} of release {release} has attachRequired: false, which Cinder volumes cannot work with (the chart sets true); nothing was changed"
        ));
    }
    let mut record = Record {
        release: release.to_string(),
        csi_driver_spec: spec,
        storage_classes: Vec::new(),
        not_adopted: BTreeMap::new(),
        workloads: Vec::new(),
    };
    for (name, live) in classes {
        match live.map(|c| adopt_class(c, release)) {
            None => {
                record.not_adopted.insert(
                    name.to_string(),
                    "absent (the chart's storageClass.enabled was false, or it was deleted)".into(),
                );
            }
            Some(Err(why)) => {
                record.not_adopted.insert(name.to_string(), why);
            }
            Some(Ok(class)) => record.storage_classes.push(class),
        }
    }
    for w in workloads {
        if not_in_release(w, release).is_some() {
            continue;
        }
        let kind = w["kind"].as_str().unwrap_or_default();
        let name = w["metadata"]["name"].as_str().unwrap_or_default();
        if name.is_empty() || !matches!(kind, "Deployment" | "DaemonSet") {
            continue;
        }
        let selector = w["spec"]["selector"]["matchLabels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        record.workloads.push(ReleaseWorkload {
            kind: kind.to_string(),
            name: name.to_string(),
            selector,
        });
    }
    record
        .workloads
        .sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    Ok(record)
}

/// The class the operator applies for a live chart class, or why it is not adopted.
fn adopt_class(live: &Value, release: &Release) -> Result<Value, String> {
    if let Some(why) = not_in_release(live, release) {
        return Err(why);
    }
    let provisioner = live["provisioner"].as_str().unwrap_or_default();
    if provisioner != CSI_DRIVER_NAME {
        return Err(format!(
            "its provisioner is {provisioner:?}, not {CSI_DRIVER_NAME}"
        ));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), live["metadata"]["name"].clone());
    if live["metadata"]["annotations"][DEFAULT_CLASS_ANNOTATION].as_str() == Some("true") {
        metadata.insert(
            "annotations".into(),
            json!({ DEFAULT_CLASS_ANNOTATION: "true" }),
        );
    }
    let mut class = Map::new();
    class.insert("apiVersion".into(), json!("storage.k8s.io/v1"));
    class.insert("kind".into(), json!("StorageClass"));
    class.insert("metadata".into(), Value::Object(metadata));
    class.insert("provisioner".into(), json!(CSI_DRIVER_NAME));
    for field in [
        "parameters",
        "reclaimPolicy",
        "volumeBindingMode",
        "allowVolumeExpansion",
        "mountOptions",
        "allowedTopologies",
    ] {
        if let Some(v) = live.get(field).filter(|v| !v.is_null()) {
            class.insert(field.into(), v.clone());
        }
    }
    Ok(Value::Object(class))
}

/// Reads a record from its ConfigMap's `data`, checking that it is for `release` and that every
/// class in it is one of the chart's, of this driver (so an edited record cannot make the
/// operator write a foreign class).
pub fn parse_record(
    data: Option<&BTreeMap<String, String>>,
    release: &Release,
) -> Result<Record, String> {
    let fix = format!(
        "delete the ConfigMap {RECORD_CONFIGMAP} to adopt again from the live objects (only while they still carry release {release}'s Helm annotations)"
    );
    let text = data.and_then(|d| d.get(RECORD_KEY)).ok_or_else(|| {
        format!("the ConfigMap {RECORD_CONFIGMAP} has no key {RECORD_KEY}; {fix}")
    })?;
    let record: Record = serde_json::from_str(text).map_err(|e| {
        format!("the ConfigMap {RECORD_CONFIGMAP} key {RECORD_KEY} does not parse ({e}); {fix}")
    })?;
    if record.release != release.to_string() {
        return Err(format!(
            "the ConfigMap {RECORD_CONFIGMAP} records the adoption of Helm release {}, but the operator was started with --adopt-helm-release={release}; {fix}",
            record.release
        ));
    }
    if !record.csi_driver_spec.is_object() {
        return Err(format!(
            "the ConfigMap {RECORD_CONFIGMAP} has no CSIDriver spec; {fix}"
        ));
    }
    for class in &record.storage_classes {
        let name = class["metadata"]["name"].as_str().unwrap_or_default();
        if class["kind"] != "StorageClass"
            || !CHART_STORAGE_CLASSES.contains(&name)
            || class["provisioner"] != CSI_DRIVER_NAME
        {
            return Err(format!(
                "the ConfigMap {RECORD_CONFIGMAP} holds a StorageClass {name:?} that is not one of the chart's ({}) for {CSI_DRIVER_NAME}; {fix}",
                CHART_STORAGE_CLASSES.join(", ")
            ));
        }
    }
    Ok(record)
}

/// The record's ConfigMap `data`.
pub fn record_data(record: &Record) -> BTreeMap<String, String> {
    let text = serde_json::to_string_pretty(record).unwrap_or_default();
    BTreeMap::from([(RECORD_KEY.to_string(), text)])
}

/// Our CSIDriver (`desired`, from the asset) with the adopted spec, and the label the apply
/// engine requires of a driver that allows Ephemeral volumes.
pub fn adopted_csi_driver(desired: &Value, record: &Record) -> Value {
    let mut out = desired.clone();
    out["spec"] = record.csi_driver_spec.clone();
    let ephemeral = record.csi_driver_spec["volumeLifecycleModes"]
        .as_array()
        .is_some_and(|m| m.iter().any(|v| v == "Ephemeral"));
    if ephemeral && out["metadata"]["labels"][EPHEMERAL_PROFILE_LABEL].is_null() {
        if !out["metadata"]["labels"].is_object() {
            out["metadata"]["labels"] = json!({});
        }
        out["metadata"]["labels"][EPHEMERAL_PROFILE_LABEL] = json!("privileged");
    }
    out
}

/// A JSON merge patch that removes Helm's ownership metadata from `live`, or `None` when it
/// carries none (the managed-by label only when it says `Helm`).
pub fn strip_helm_metadata(live: &Value) -> Option<Value> {
    let meta = &live["metadata"];
    let mut labels = Map::new();
    if meta["labels"][MANAGED_BY_LABEL].as_str() == Some("Helm") {
        labels.insert(MANAGED_BY_LABEL.into(), Value::Null);
    }
    let mut annotations = Map::new();
    for key in [RELEASE_NAME_ANNOTATION, RELEASE_NAMESPACE_ANNOTATION] {
        if !meta["annotations"][key].is_null() {
            annotations.insert(key.into(), Value::Null);
        }
    }
    if labels.is_empty() && annotations.is_empty() {
        return None;
    }
    let mut metadata = Map::new();
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    Some(json!({ "metadata": metadata }))
}

/// A label selector (`k=v,k=v`) for a workload's pods; `None` when it recorded none.
pub fn pod_selector(w: &ReleaseWorkload) -> Option<String> {
    if w.selector.is_empty() {
        return None;
    }
    Some(
        w.selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// What the adoption says in its condition once done.
pub fn summary(record: &Record) -> String {
    let classes: Vec<&str> = record
        .storage_classes
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    let mut text = format!(
        "adopted from Helm release {}: CSIDriver {CSI_DRIVER_NAME}",
        record.release
    );
    if classes.is_empty() {
        text.push_str(" and no StorageClass");
    } else {
        text.push_str(&format!(" and StorageClasses {}", classes.join(", ")));
    }
    text.push_str(" (kept as they were; re-created if deleted)");
    for (name, why) in &record.not_adopted {
        text.push_str(&format!("; StorageClass {name} not adopted: {why}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release() -> Release {
        "kube-system/cinder-csi".parse().expect("parses")
    }

    fn helm_meta(name: &str) -> Value {
        json!({
            "name": name,
            "labels": {MANAGED_BY_LABEL: "Helm"},
            "annotations": {
                RELEASE_NAME_ANNOTATION: "cinder-csi",
                RELEASE_NAMESPACE_ANNOTATION: "kube-system",
            },
        })
    }

    /// The chart's CSIDriver as a server returns it (defaults filled in).
    fn chart_driver() -> Value {
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": helm_meta(CSI_DRIVER_NAME),
            "spec": {
                "attachRequired": true, "podInfoOnMount": true,
                "volumeLifecycleModes": ["Persistent", "Ephemeral"],
                "fsGroupPolicy": "ReadWriteOnceWithFSType",
                "requiresRepublish": false, "storageCapacity": false, "seLinuxMount": false,
            },
        })
    }

    fn chart_class(name: &str, reclaim: &str) -> Value {
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": helm_meta(name),
            "provisioner": CSI_DRIVER_NAME,
            "reclaimPolicy": reclaim,
            "allowVolumeExpansion": true,
            "volumeBindingMode": "Immediate",
        })
    }

    fn node_plugin() -> Value {
        json!({
            "kind": "DaemonSet",
            "metadata": helm_meta("openstack-cinder-csi-nodeplugin"),
            "spec": {"selector": {"matchLabels": {
                "component": "nodeplugin", "app": "openstack-cinder-csi", "release": "cinder-csi"}}},
        })
    }

    #[test]
    fn release_names_parse_with_and_without_a_namespace() {
        assert_eq!(release().to_string(), "kube-system/cinder-csi");
        let bare: Release = "cinder-csi".parse().expect("bare name");
        assert_eq!(bare, release());
        let other: Release = "storage/my.release-1".parse().expect("dots");
        assert_eq!(other.namespace, "storage");
        for bad in [
            "",
            "/x",
            "kube-system/",
            "Kube/x",
            "a/B",
            "a/-x",
            &"x".repeat(54),
        ] {
            let err = bad.parse::<Release>().expect_err(bad);
            assert!(err.contains("[NAMESPACE/]NAME"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_charts_objects_are_adopted_with_their_immutable_fields() {
        let driver = chart_driver();
        let delete = chart_class("csi-cinder-sc-delete", "Delete");
        let mut retain = chart_class("csi-cinder-sc-retain", "Retain");
        retain["parameters"] = json!({"availability": "nova-az2"});
        retain["metadata"]["annotations"][DEFAULT_CLASS_ANNOTATION] = json!("true");
        let record = plan(
            &release(),
            Some(&driver),
            &[
                ("csi-cinder-sc-delete", Some(&delete)),
                ("csi-cinder-sc-retain", Some(&retain)),
            ],
            &[node_plugin()],
        )
        .expect("adopted");
        assert_eq!(record.release, "kube-system/cinder-csi");
        assert_eq!(record.csi_driver_spec, driver["spec"]);
        assert!(record.not_adopted.is_empty());
        let [d, r] = &record.storage_classes[..] else {
            panic!("two classes: {:?}", record.storage_classes)
        };
        assert_eq!(d["metadata"], json!({"name": "csi-cinder-sc-delete"}));
        assert_eq!(d["reclaimPolicy"], "Delete");
        assert_eq!(r["reclaimPolicy"], "Retain");
        assert_eq!(r["parameters"], json!({"availability": "nova-az2"}));
        assert_eq!(r["allowVolumeExpansion"], true);
        assert_eq!(r["volumeBindingMode"], "Immediate");
        // isDefault is kept, Helm's ownership is not.
        assert_eq!(
            r["metadata"],
            json!({"name": "csi-cinder-sc-retain", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}})
        );
        assert_eq!(record.workloads.len(), 1);
        assert_eq!(
            pod_selector(&record.workloads[0]).as_deref(),
            Some("app=openstack-cinder-csi,component=nodeplugin,release=cinder-csi")
        );
        // The record survives its ConfigMap.
        let data = record_data(&record);
        assert_eq!(parse_record(Some(&data), &release()), Ok(record.clone()));
        let text = summary(&record);
        assert!(
            text.contains("StorageClasses csi-cinder-sc-delete, csi-cinder-sc-retain"),
            "{text}"
        );
    }

    #[test]
    fn a_class_of_another_provisioner_or_owner_is_reported_not_adopted() {
        let driver = chart_driver();
        let mut foreign = chart_class("csi-cinder-sc-delete", "Delete");
        foreign["provisioner"] = json!("kubernetes.io/cinder");
        let mut other_release = chart_class("csi-cinder-sc-retain", "Retain");
        other_release["metadata"]["annotations"][RELEASE_NAME_ANNOTATION] = json!("other");
        let record = plan(
            &release(),
            Some(&driver),
            &[
                ("csi-cinder-sc-delete", Some(&foreign)),
                ("csi-cinder-sc-retain", Some(&other_release)),
            ],
            &[],
        )
        .expect("the driver is still adopted");
        assert!(record.storage_classes.is_empty());
        assert!(
            record.not_adopted["csi-cinder-sc-delete"].contains("\"kubernetes.io/cinder\""),
            "{:?}",
            record.not_adopted
        );
        assert!(
            record.not_adopted["csi-cinder-sc-retain"]
                .contains("belongs to Helm release kube-system/other"),
            "{:?}",
            record.not_adopted
        );
        let absent = plan(
            &release(),
            Some(&driver),
            &[("csi-cinder-sc-delete", None)],
            &[],
        )
        .expect("adopted");
        assert!(absent.not_adopted["csi-cinder-sc-delete"].contains("absent"));
        let text = summary(&record);
        assert!(text.contains("and no StorageClass"), "{text}");
        assert!(text.contains("csi-cinder-sc-delete not adopted"), "{text}");
    }

    #[test]
    fn a_driver_that_is_absent_foreign_or_malformed_stops_the_adoption() {
        let absent = plan(&release(), None, &[], &[]).expect_err("absent");
        assert!(absent.contains("does not exist"), "{absent}");

        let mut unowned = chart_driver();
        unowned["metadata"] = json!({"name": CSI_DRIVER_NAME});
        let err = plan(&release(), Some(&unowned), &[], &[]).expect_err("no Helm metadata");
        assert!(err.contains("no Helm ownership annotations"), "{err}");
        assert!(err.contains("nothing was changed"), "{err}");

        let mut other = chart_driver();
        other["metadata"]["annotations"][RELEASE_NAMESPACE_ANNOTATION] = json!("default");
        let err = plan(&release(), Some(&other), &[], &[]).expect_err("other namespace");
        assert!(
            err.contains("default/cinder-csi, not kube-system/cinder-csi"),
            "{err}"
        );

        let mut detached = chart_driver();
        detached["spec"]["attachRequired"] = json!(false);
        let err = plan(&release(), Some(&detached), &[], &[]).expect_err("attachRequired");
        assert!(err.contains("attachRequired: false"), "{err}");

        let mut specless = chart_driver();
        specless.as_object_mut().expect("object").remove("spec");
        assert!(plan(&release(), Some(&specless), &[], &[]).is_err());
    }

    #[test]
    fn workloads_of_other_releases_are_not_waited_for() {
        let mut other = node_plugin();
        other["metadata"]["annotations"][RELEASE_NAME_ANNOTATION] = json!("someone-else");
        let mut deployment = node_plugin();
        deployment["kind"] = json!("Deployment");
        deployment["metadata"]["name"] = json!("openstack-cinder-csi-controllerplugin");
        let record = plan(
            &release(),
            Some(&chart_driver()),
            &[],
            &[other, node_plugin(), deployment],
        )
        .expect("adopted");
        let names: Vec<(&str, &str)> = record
            .workloads
            .iter()
            .map(|w| (w.kind.as_str(), w.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("DaemonSet", "openstack-cinder-csi-nodeplugin"),
                ("Deployment", "openstack-cinder-csi-controllerplugin")
            ]
        );
    }

    #[test]
    fn a_malformed_or_foreign_record_is_refused_with_the_fix() {
        let r = release();
        let err = parse_record(None, &r).expect_err("no data");
        assert!(
            err.contains("delete the ConfigMap cinder-csi-helm-adoption"),
            "{err}"
        );
        let bad = BTreeMap::from([(RECORD_KEY.to_string(), "{not json".to_string())]);
        assert!(
            parse_record(Some(&bad), &r)
                .expect_err("json")
                .contains("does not parse")
        );

        let good = plan(&r, Some(&chart_driver()), &[], &[]).expect("adopted");
        let other: Release = "default/cinder-csi".parse().expect("parses");
        let err = parse_record(Some(&record_data(&good)), &other).expect_err("other release");
        assert!(
            err.contains("--adopt-helm-release=default/cinder-csi"),
            "{err}"
        );

        let mut forged = good.clone();
        forged.storage_classes.push(json!({
            "kind": "StorageClass", "metadata": {"name": "gold"},
            "provisioner": CSI_DRIVER_NAME}));
        let err = parse_record(Some(&record_data(&forged)), &r).expect_err("foreign class");
        assert!(err.contains("\"gold\""), "{err}");
    }

    #[test]
    fn helm_metadata_is_stripped_and_nothing_else() {
        let mut live = chart_class("csi-cinder-sc-delete", "Delete");
        live["metadata"]["labels"]["team"] = json!("storage");
        assert_eq!(
            strip_helm_metadata(&live),
            Some(json!({"metadata": {
                "labels": {MANAGED_BY_LABEL: null},
                "annotations": {RELEASE_NAME_ANNOTATION: null, RELEASE_NAMESPACE_ANNOTATION: null},
            }}))
        );
        live["metadata"]["labels"][MANAGED_BY_LABEL] = json!("argocd");
        live["metadata"]["annotations"] = json!({});
        assert_eq!(strip_helm_metadata(&live), None);
    }

    #[test]
    fn the_adopted_driver_keeps_the_charts_spec_and_allows_its_inline_volumes() {
        let ours = json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": CSI_DRIVER_NAME, "annotations": {"csi.openshift.io/managed": "true"}},
            "spec": {"attachRequired": true, "fsGroupPolicy": "File", "volumeLifecycleModes": ["Persistent"]},
        });
        let record = plan(&release(), Some(&chart_driver()), &[], &[]).expect("adopted");
        let adopted = adopted_csi_driver(&ours, &record);
        assert_eq!(adopted["spec"], chart_driver()["spec"]);
        assert_eq!(
            adopted["metadata"]["labels"][EPHEMERAL_PROFILE_LABEL],
            "privileged"
        );
        assert_eq!(
            adopted["metadata"]["annotations"],
            ours["metadata"]["annotations"]
        );
    }
}
