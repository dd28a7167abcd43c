//! The Helm-adoption step at runtime (`--adopt-helm-release`): the decisions are in
//! [`crate::helm_adoption`]; this reads the live objects, writes the record, keeps the adopted
//! objects as recorded and holds the operator's own workloads back until the chart's are gone.
//!
//! Conditions (prefix `HelmReleaseAdoption`): `Degraded` when the release cannot be adopted or a
//! write failed (the message says why; nothing is deleted), `Progressing=True /
//! WaitingForHelmUninstall` while the chart's workloads or pods remain, `Progressing=False /
//! Adopted` with what was adopted (and which chart class was not, and why) once done.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::Value;
use tracing::info;

use operator_kit::cache::Lookup;
use operator_kit::conditions::{self, OperatorCondition};
use operator_kit::csi::{Hold, Kit, Pass, StepError};
use operator_kit::desired::{self, BuildError, Desired};
use operator_kit::events::EventType;
use operator_kit::kinds::KindError;
use operator_kit::kinds::known as ar;
use operator_kit::metrics::WriteVerb;

use crate::CSI_DRIVER_NAME;
use crate::helm_adoption::{
    self as pure, CHART_STORAGE_CLASSES, RECORD_CONFIGMAP, Record, Release,
};

/// Condition prefix of the adoption.
pub const PREFIX: &str = "HelmReleaseAdoption";
/// How often the chart's workloads are looked for while `helm uninstall` has not removed them.
const RECHECK: Duration = Duration::from_secs(5);

fn csi_driver_ar() -> ApiResource {
    ar("storage.k8s.io/v1", "CSIDriver")
}

fn storage_class_ar() -> ApiResource {
    ar("storage.k8s.io/v1", "StorageClass")
}

/// The adoption's state across reconciles.
pub struct Adoption {
    release: Release,
    /// The record, once read from or written to its ConfigMap (kept in memory so a reconcile
    /// that runs before the watch shows the new ConfigMap does not adopt again).
    record: Option<Record>,
    /// The release's workloads and their pods are gone (checked live until then; once per
    /// process start after that).
    released: bool,
    /// What went wrong in this pass's first half, posted with the second's.
    problem: Option<StepError>,
    /// UIDs whose Helm metadata this process already removed.
    stripped: BTreeSet<String>,
}

/// Why the Helm release is not adopted (yet), in words for the administrator; posted as
/// `HelmAdoptionDegraded` (reason `SyncError`).
#[derive(Debug, thiserror::Error)]
pub enum AdoptionError {
    /// What the release's objects or the adoption record say is wrong (`helm_adoption`'s
    /// checks, which name the object and the fix).
    #[error("{0}")]
    Release(String),
    #[error("the {kind} {name} is not in the watch cache yet")]
    NotCached { kind: String, name: String },
    #[error("the ConfigMap {RECORD_CONFIGMAP} cannot be read: {0}")]
    UnreadableRecord(serde_json::Error),
    #[error("cannot serialize {kind}: {source}")]
    Serialize {
        kind: String,
        source: serde_json::Error,
    },
    #[error("cannot remove Helm's ownership metadata from {kind} {name}: {source}")]
    StripMetadata {
        kind: String,
        name: String,
        source: kube::Error,
    },
    #[error(
        "cannot list the {kind}s of namespace {} to find Helm release {release}'s workloads (is the adoption RBAC applied? docs/switch-from-helm.md): {source}",
        release.namespace
    )]
    ListWorkloads {
        kind: &'static str,
        release: Release,
        source: kube::Error,
    },
    #[error("cannot read {workload} of Helm release {release}: {source}")]
    ReadWorkload {
        workload: String,
        release: Release,
        source: kube::Error,
    },
    #[error("cannot list the pods of {workload}: {source}")]
    ListPods {
        workload: String,
        source: kube::Error,
    },
}

impl From<AdoptionError> for StepError {
    fn from(e: AdoptionError) -> Self {
        StepError::other(e)
    }
}

impl Adoption {
    pub fn new(release: Release) -> Self {
        Self {
            release,
            record: None,
            released: false,
            problem: None,
            stripped: BTreeSet::new(),
        }
    }

    /// Before the static groups: reads or makes the record, and holds the workloads while the
    /// release is not adopted or its workloads remain.
    pub async fn before(&mut self, kit: &Kit, pass: &mut Pass) {
        self.problem = None;
        if let Err(e) = self.ensure_record(kit).await {
            let message = e.to_string();
            pass.hold_workloads = Some(Hold {
                reason: "HelmReleaseNotAdopted".into(),
                message: format!(
                    "not started while Helm release {} is not adopted: {message}",
                    self.release
                ),
            });
            self.progressing(pass, false, "NotAdopted", &message);
            self.problem = Some(e);
            return;
        }
        if !self.released {
            match self.waiting_for(kit).await {
                Ok(None) => {
                    info!(release = %self.release, "the Helm release's workloads are gone; starting the driver's controller and node plugin");
                    self.released = true;
                }
                Ok(Some(remaining)) => {
                    let message = format!(
                        "waiting for `helm uninstall {} -n {}` to remove the chart's workloads, which serve the same driver and kubelet socket as this operator's controller and node plugin: {remaining}",
                        self.release.name, self.release.namespace
                    );
                    pass.hold_workloads = Some(Hold {
                        reason: "WaitingForHelmUninstall".into(),
                        message: message.clone(),
                    });
                    pass.requeue_after =
                        Some(pass.requeue_after.map_or(RECHECK, |r| r.min(RECHECK)));
                    self.progressing(pass, true, "WaitingForHelmUninstall", &message);
                    return;
                }
                Err(e) => {
                    let message = e.to_string();
                    pass.hold_workloads = Some(Hold {
                        reason: "HelmReleaseNotChecked".into(),
                        message: message.clone(),
                    });
                    self.progressing(pass, true, "HelmReleaseNotChecked", &message);
                    self.problem = Some(e.into());
                    return;
                }
            }
        }
        let summary = self.record.as_ref().map(pure::summary).unwrap_or_default();
        self.progressing(pass, false, "Adopted", &summary);
    }

    fn progressing(&self, pass: &mut Pass, on: bool, reason: &str, message: &str) {
        let status = if on {
            conditions::TRUE
        } else {
            conditions::FALSE
        };
        pass.board.set_condition(OperatorCondition::new(
            format!("{PREFIX}Progressing"),
            status,
            reason,
            message,
        ));
    }

    /// The guest static group with the CSIDriver as adopted, or without it while the release
    /// is not adopted (it is then left exactly as it is).
    pub fn csi_driver(&self, objects: &mut Vec<Desired>) -> Result<(), BuildError> {
        let Some(i) = objects.iter().position(|d| d.resource.kind == "CSIDriver") else {
            return Ok(());
        };
        let Some(record) = &self.record else {
            objects.remove(i);
            return Ok(());
        };
        let ours = serde_json::to_value(&objects[i].object).map_err(|e| BuildError::Kind {
            asset: "adopted CSIDriver",
            source: KindError::Convert(e.to_string()),
        })?;
        let adopted = pure::adopted_csi_driver(&ours, record);
        objects[i] = desired::from_value("adopted CSIDriver", None, adopted)?;
        Ok(())
    }

    /// After the workloads: the adopted classes as recorded (re-created when `helm uninstall`
    /// deleted them), Helm's ownership metadata removed, and the adoption's Degraded.
    pub async fn after(&mut self, kit: &Kit, pass: &mut Pass) {
        let result = match self.problem.take() {
            Some(problem) => Err(problem),
            None => self.keep_adopted(kit).await,
        };
        pass.post(PREFIX, result);
    }

    async fn keep_adopted(&mut self, kit: &Kit) -> Result<(), StepError> {
        let Some(record) = self.record.clone() else {
            return Ok(());
        };
        let mut first_error: Option<StepError> = None;
        for class in &record.storage_classes {
            let result = async {
                let d = desired::from_value("adopted StorageClass", None, class.clone())?;
                let applied = kit.apply(&d, None).await?;
                self.strip(kit, &storage_class_ar(), &applied.object).await
            }
            .await;
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        if let Lookup::Found(driver) = kit.cache.lookup(&csi_driver_ar(), None, CSI_DRIVER_NAME)
            && let Err(e) = self.strip(kit, &csi_driver_ar(), &driver).await
        {
            first_error.get_or_insert(e);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Removes Helm's ownership label and annotations from `live` (a merge patch, so the
    /// objects' other metadata stays), once per object.
    async fn strip(
        &mut self,
        kit: &Kit,
        resource: &ApiResource,
        live: &DynamicObject,
    ) -> Result<(), StepError> {
        let uid = live.metadata.uid.clone().unwrap_or_default();
        if self.stripped.contains(&uid) {
            return Ok(());
        }
        let value = serde_json::to_value(live).map_err(|source| AdoptionError::Serialize {
            kind: resource.kind.clone(),
            source,
        })?;
        let Some(patch) = pure::strip_helm_metadata(&value) else {
            return Ok(());
        };
        let name = live.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = Api::all_with(kit.client.clone(), resource);
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| {
                kit.metrics.error("apply");
                AdoptionError::StripMetadata {
                    kind: resource.kind.clone(),
                    name: name.clone(),
                    source,
                }
            })?;
        kit.metrics.write(&resource.kind, WriteVerb::Update);
        kit.recorder.updated(resource, None, &name).await;
        self.stripped.insert(uid);
        Ok(())
    }

    /// The record from memory, from its ConfigMap, or made now from the live objects (and
    /// written before anything of the release is changed).
    async fn ensure_record(&mut self, kit: &Kit) -> Result<(), StepError> {
        if self.record.is_some() {
            return Ok(());
        }
        let ns = kit.namespace.as_str();
        match kit
            .cache
            .lookup(&ar("v1", "ConfigMap"), Some(ns), RECORD_CONFIGMAP)
        {
            Lookup::Found(cm) => {
                let cm: ConfigMap =
                    serde_json::from_value(serde_json::to_value(&*cm).unwrap_or_default())
                        .map_err(AdoptionError::UnreadableRecord)?;
                let record = pure::parse_record(cm.data.as_ref(), &self.release)
                    .map_err(AdoptionError::Release)?;
                info!(release = %self.release, configmap = RECORD_CONFIGMAP, "the Helm release was adopted before; keeping what its record says");
                self.record = Some(record);
                return Ok(());
            }
            Lookup::Absent { .. } => {}
            Lookup::NotServed | Lookup::NotCached => {
                return Err(AdoptionError::NotCached {
                    kind: "ConfigMap".into(),
                    name: format!("{ns}/{RECORD_CONFIGMAP}"),
                }
                .into());
            }
        }
        let driver = found(kit, &csi_driver_ar(), CSI_DRIVER_NAME)?;
        let mut classes = Vec::new();
        for name in CHART_STORAGE_CLASSES {
            classes.push((name, found(kit, &storage_class_ar(), name)?));
        }
        let class_refs: Vec<(&str, Option<&Value>)> =
            classes.iter().map(|(n, c)| (*n, c.as_ref())).collect();
        let workloads = self.release_workloads(kit).await?;
        let record = pure::plan(&self.release, driver.as_ref(), &class_refs, &workloads)
            .map_err(AdoptionError::Release)?;
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(RECORD_CONFIGMAP.into()),
                namespace: Some(ns.into()),
                ..Default::default()
            },
            data: Some(pure::record_data(&record)),
            ..Default::default()
        };
        let d = desired::from_typed("Helm adoption record", None, &cm)?;
        kit.apply(&d, None).await?;
        let summary = pure::summary(&record);
        info!(release = %self.release, "{summary}");
        kit.recorder
            .record(EventType::Normal, "HelmReleaseAdopted", &summary)
            .await;
        self.record = Some(record);
        Ok(())
    }

    /// The Deployments and DaemonSets of the release's namespace (a live list: read only
    /// until the record exists).
    async fn release_workloads(&self, kit: &Kit) -> Result<Vec<Value>, StepError> {
        let mut out = Vec::new();
        for (api_version, kind) in [("apps/v1", "Deployment"), ("apps/v1", "DaemonSet")] {
            let resource = ar(api_version, kind);
            let api: Api<DynamicObject> =
                Api::namespaced_with(kit.client.clone(), &self.release.namespace, &resource);
            let list = api.list(&ListParams::default()).await.map_err(|source| {
                AdoptionError::ListWorkloads {
                    kind,
                    release: self.release.clone(),
                    source,
                }
            })?;
            for item in list.items {
                let mut v = serde_json::to_value(&item).unwrap_or_default();
                v["kind"] = Value::String(kind.into());
                out.push(v);
            }
        }
        Ok(out)
    }

    /// What of the release's recorded workloads still exists (the objects, then their pods),
    /// or `None` when nothing does.
    async fn waiting_for(&self, kit: &Kit) -> Result<Option<String>, AdoptionError> {
        let Some(record) = &self.record else {
            return Ok(None);
        };
        let ns = self.release.namespace.as_str();
        let mut remaining = Vec::new();
        for w in &record.workloads {
            let api: Api<DynamicObject> =
                Api::namespaced_with(kit.client.clone(), ns, &ar("apps/v1", &w.kind));
            let present =
                api.get_opt(&w.name)
                    .await
                    .map_err(|source| AdoptionError::ReadWorkload {
                        workload: format!("{} {ns}/{}", w.kind, w.name),
                        release: self.release.clone(),
                        source,
                    })?;
            if present.is_some() {
                remaining.push(format!("{} {ns}/{}", w.kind, w.name));
            }
        }
        if !remaining.is_empty() {
            return Ok(Some(remaining.join(", ")));
        }
        let pods: Api<DynamicObject> =
            Api::namespaced_with(kit.client.clone(), ns, &ar("v1", "Pod"));
        for w in &record.workloads {
            let Some(selector) = pure::pod_selector(w) else {
                continue;
            };
            let list = pods
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|source| AdoptionError::ListPods {
                    workload: format!("{} {ns}/{}", w.kind, w.name),
                    source,
                })?;
            if !list.items.is_empty() {
                remaining.push(format!(
                    "{} pod(s) of {} {ns}/{} ({selector})",
                    list.items.len(),
                    w.kind,
                    w.name
                ));
            }
        }
        Ok((!remaining.is_empty()).then(|| remaining.join(", ")))
    }
}

/// A cluster-scoped object from the watch cache as JSON; `None` when it does not exist.
fn found(kit: &Kit, resource: &ApiResource, name: &str) -> Result<Option<Value>, StepError> {
    match kit.cache.lookup(resource, None, name) {
        Lookup::Found(o) => Ok(Some(serde_json::to_value(&*o).unwrap_or_default())),
        Lookup::Absent { .. } => Ok(None),
        Lookup::NotServed | Lookup::NotCached => Err(AdoptionError::NotCached {
            kind: resource.kind.clone(),
            name: name.to_string(),
        }
        .into()),
    }
}
