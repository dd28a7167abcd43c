//! A stand-in for what turns a PersistentVolumeClaim into a volume on a cluster whose storage
//! the operators installed: the PV controller's part (which claims wait for which external
//! provisioner, binding, `Released`), and the CSI sidecars of the Cinder and Manila drivers
//! (external-provisioner and external-resizer) with the drivers' controller calls, made against
//! openstack-sim.
//!
//! It only acts for classes whose `provisioner` is `cinder.csi.openstack.org` or
//! `manila.csi.openstack.org`, and only once the driver is installed: its CSIDriver object
//! exists and its controller Deployment (`openstack-cinder-csi-driver-controller`,
//! `openstack-manila-csi-controllerplugin`, in any namespace) reports `Available=True`. Until
//! then a claim stays `Pending` with the PV controller's `ExternalProvisioning` Event, as on a
//! cluster whose driver is missing or not running.
//!
//! What it does, in the order a cluster does it:
//! - `WaitForFirstConsumer` classes wait for `volume.kubernetes.io/selected-node` (set by the
//!   scheduler stand-in, `scheduler.rs`, when a Pod uses the claim);
//! - the claim gets `volume.kubernetes.io/storage-provisioner`, then the volume is created:
//!   Cinder `pvc-<claim uid>` of the request rounded up to GiB, of the class's `type`, in the
//!   class's `availability` or the selected node's zone when the driver runs with topology
//!   (`enable_topology=true` in its `cloud-conf` ConfigMap); Manila a share of the class's
//!   `type` and `protocol` (NFS by default) with a read-write access rule. The cloud's refusal
//!   (or the driver's: Cinder filesystem volumes are single-node only) becomes a Warning
//!   `ProvisioningFailed` Event and the claim stays `Pending`, retried on every pass;
//! - the PV `pvc-<claim uid>` is created (CSI source, capacity, access modes, `claimRef`,
//!   class, reclaim policy, the Cinder zone as node affinity under topology, the
//!   `pv.kubernetes.io/provisioned-by` annotation and the external-provisioner's finalizer),
//!   both are bound, and `ProvisioningSucceeded` is recorded;
//! - a bound claim whose request grows, in a class with `allowVolumeExpansion: true`, has its
//!   volume extended and the new size written to the PV and the claim's status at once;
//! - an unclaimed volume (one an administrator created) becomes `Available`;
//! - a volume whose claim is gone is `Released`; with the `Delete` policy its OpenStack
//!   volume or share is deleted and then the PV (a refusal is a `VolumeFailedDelete` Event).
//!
//! With Cinder's topology on, Nodes also get the driver's zone label, as the kubelet gives it
//! when the node plugin registers (here: once the first volume with zone affinity exists).
//!
//! The external-attacher's part is `csi_attacher.rs`.
//!
//! Not emulated: node staging and publishing (nothing mounts anything), the file system
//! expansion step on the node, snapshots and clones, retry back-off (every pass retries),
//! Event counts (each distinct Event is written once), CSI secrets.
//!
//! It reads and writes kube-sim in process (`in_process.rs`) and openstack-sim through its
//! Rust API. Emulator-side code: product crates never depend on it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_sim::ClusterHandle;
use openstack_sim::{ShareRequest, SimHandle, VolumeRequest};
use serde_json::{Value, json};

use crate::in_process::{self, text};
use crate::scheduler::SELECTED_NODE;

pub const CINDER_DRIVER: &str = "cinder.csi.openstack.org";
pub const MANILA_DRIVER: &str = "manila.csi.openstack.org";
/// Cinder's topology key on PVs and CSINodes.
pub const CINDER_ZONE_KEY: &str = "topology.cinder.csi.openstack.org/zone";
const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const PROVISIONER_FINALIZER: &str = "external-provisioner.volume.kubernetes.io/finalizer";
const PV_CONTROLLER: &str = "persistentvolume-controller";
const GIB: i128 = 1 << 30;

/// A driver this stand-in can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Driver {
    Cinder,
    Manila,
}

impl Driver {
    pub(crate) fn of(provisioner: &str) -> Option<Self> {
        match provisioner {
            CINDER_DRIVER => Some(Self::Cinder),
            MANILA_DRIVER => Some(Self::Manila),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Cinder => CINDER_DRIVER,
            Self::Manila => MANILA_DRIVER,
        }
    }

    fn controller(self) -> &'static str {
        match self {
            Self::Cinder => "openstack-cinder-csi-driver-controller",
            Self::Manila => "openstack-manila-csi-controllerplugin",
        }
    }

    /// How the external-provisioner names itself in Events.
    fn component(self) -> String {
        format!("{}_csi-provisioner-stand-in", self.name())
    }
}

/// What the stand-in acts on: kube-sim in process and openstack-sim's handle.
#[derive(Clone)]
pub struct CsiProvisioner {
    pub(crate) kube: ClusterHandle,
    pub(crate) openstack: SimHandle,
}

/// How a driver is installed, as far as provisioning cares.
pub(crate) struct Installed {
    topology: bool,
}

impl CsiProvisioner {
    pub fn new(kube: ClusterHandle, openstack: SimHandle) -> Self {
        Self { kube, openstack }
    }

    /// Runs [`CsiProvisioner::sync_once`] after every write to kube-sim (and every second, to
    /// retry what the cloud refused) until kube-sim shuts down or the task is aborted.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut changes = self.kube.changes();
            let mut shutdown = self.kube.shutdown();
            loop {
                self.sync_once();
                crate::scheduler::sync_once(&self.kube);
                self.sync_attachments();
                crate::kubelet::sync_once(&self.kube);
                tokio::select! {
                    r = changes.changed() => if r.is_err() { return },
                    r = shutdown.changed() => if r.is_err() || *shutdown.borrow() { return },
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        })
    }

    /// One pass over every claim and volume; returns how many objects it acted on.
    pub fn sync_once(&self) -> usize {
        let mut acted = 0;
        for pvc in in_process::list(&self.kube, "", "persistentvolumeclaims", None) {
            acted += usize::from(self.sync_claim(&pvc));
        }
        let pvs = in_process::list(&self.kube, "", "persistentvolumes", None);
        for pv in &pvs {
            acted += usize::from(self.sync_volume(pv));
        }
        // Nodes are labelled only once a volume needs it, so clusters that provision nothing
        // see no Node writes.
        if pvs.iter().any(|pv| {
            pv.pointer("/spec/nodeAffinity/required/nodeSelectorTerms/0/matchExpressions/0/key")
                .and_then(Value::as_str)
                == Some(CINDER_ZONE_KEY)
        }) {
            acted += self.label_nodes();
        }
        acted
    }

    pub(crate) fn installed(&self, driver: Driver) -> Option<Installed> {
        in_process::get(
            &self.kube,
            "storage.k8s.io",
            "csidrivers",
            "",
            driver.name(),
        )?;
        let deployment = in_process::list(&self.kube, "apps", "deployments", None)
            .into_iter()
            .find(|d| text(d, "/metadata/name") == driver.controller())?;
        let available = deployment
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| text(c, "/type") == "Available" && text(c, "/status") == "True");
        if !available {
            return None;
        }
        let namespace = text(&deployment, "/metadata/namespace");
        let topology = driver == Driver::Cinder
            && in_process::get(&self.kube, "", "configmaps", namespace, "cloud-conf")
                .is_some_and(|cm| text(&cm, "/data/enable_topology") == "true");
        Some(Installed { topology })
    }

    /// What the kubelet does when Cinder's node plugin registers with topology: each Node gets
    /// the driver's zone label (its `topology.kubernetes.io/zone`, as the plugin reads the
    /// instance's zone), which the PVs' node affinity names.
    fn label_nodes(&self) -> usize {
        if !self.installed(Driver::Cinder).is_some_and(|i| i.topology) {
            return 0;
        }
        let mut acted = 0;
        for node in in_process::list(&self.kube, "", "nodes", None) {
            let labels = node.pointer("/metadata/labels");
            if labels.and_then(|l| l.get(CINDER_ZONE_KEY)).is_some() {
                continue;
            }
            let Some(zone) = labels
                .and_then(|l| l.get("topology.kubernetes.io/zone"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let patch = json!({"metadata": {"labels": {CINDER_ZONE_KEY: zone}}});
            let name = text(&node, "/metadata/name");
            if in_process::merge(
                &self.kube,
                ("", "nodes"),
                "",
                name,
                false,
                &patch,
                "kubelet",
            )
            .is_ok()
            {
                acted += 1;
            }
        }
        acted
    }

    pub(crate) fn event(
        &self,
        obj: &Value,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        // An Event that cannot be written is not worth failing the pass for.
        let _ = in_process::event(&self.kube, obj, type_, reason, message, component);
    }

    /// Provisions, binds or expands one claim; returns whether it wrote anything.
    fn sync_claim(&self, pvc: &Arc<Value>) -> bool {
        if pvc.pointer("/metadata/deletionTimestamp").is_some() {
            return false;
        }
        let class_name = text(pvc, "/spec/storageClassName");
        if class_name.is_empty() {
            return false;
        }
        let Some(class) = in_process::get(
            &self.kube,
            "storage.k8s.io",
            "storageclasses",
            "",
            class_name,
        ) else {
            return false;
        };
        let Some(driver) = Driver::of(text(&class, "/provisioner")) else {
            return false;
        };
        if !text(pvc, "/spec/volumeName").is_empty() {
            if text(pvc, "/status/phase") != "Bound" {
                return self.finish_binding(pvc);
            }
            return self.expand(pvc, &class, driver);
        }
        let ns = text(pvc, "/metadata/namespace");
        let name = text(pvc, "/metadata/name");
        let selected = pvc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(SELECTED_NODE))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if text(&class, "/volumeBindingMode") == "WaitForFirstConsumer" && selected.is_empty() {
            self.event(
                pvc,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
                PV_CONTROLLER,
            );
            return false;
        }
        let mut wrote = false;
        if text(
            pvc,
            &format!(
                "/metadata/annotations/{}",
                STORAGE_PROVISIONER.replace('/', "~1")
            ),
        ) != driver.name()
        {
            let patch = json!({"metadata": {"annotations": {
                STORAGE_PROVISIONER: driver.name(), BETA_STORAGE_PROVISIONER: driver.name()}}});
            wrote |= in_process::merge(
                &self.kube,
                ("", "persistentvolumeclaims"),
                ns,
                name,
                false,
                &patch,
                PV_CONTROLLER,
            )
            .is_ok();
        }
        self.event(
            pvc,
            "Normal",
            "ExternalProvisioning",
            &format!(
                "Waiting for a volume to be created either by the external provisioner '{}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.",
                driver.name()
            ),
            PV_CONTROLLER,
        );
        let Some(installed) = self.installed(driver) else {
            return wrote;
        };
        self.event(
            pvc,
            "Normal",
            "Provisioning",
            &format!("External provisioner is provisioning volume for claim \"{ns}/{name}\""),
            &driver.component(),
        );
        match self.provision(pvc, &class, driver, &installed, &selected) {
            Ok(pv_name) => {
                self.event(
                    pvc,
                    "Normal",
                    "ProvisioningSucceeded",
                    &format!("Successfully provisioned volume {pv_name}"),
                    &driver.component(),
                );
                true
            }
            Err(why) => {
                self.event(
                    pvc,
                    "Warning",
                    "ProvisioningFailed",
                    &format!(
                        "failed to provision volume with StorageClass \"{class_name}\": {why}"
                    ),
                    &driver.component(),
                );
                wrote
            }
        }
    }

    /// Creates the volume (unless a previous pass did), the PV, and binds both.
    fn provision(
        &self,
        pvc: &Value,
        class: &Value,
        driver: Driver,
        installed: &Installed,
        selected_node: &str,
    ) -> Result<String, String> {
        let uid = text(pvc, "/metadata/uid");
        let pv_name = format!("pvc-{uid}");
        let modes: Vec<String> = pvc
            .pointer("/spec/accessModes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let block = text(pvc, "/spec/volumeMode") == "Block";
        if driver == Driver::Cinder
            && !block
            && modes
                .iter()
                .any(|m| m != "ReadWriteOnce" && m != "ReadWriteOncePod")
        {
            return Err(
                "rpc error: code = InvalidArgument desc = Volume capabilities not supported: only single-node access modes are supported for filesystem volumes"
                    .into(),
            );
        }
        let requested = pvc
            .pointer("/spec/resources/requests/storage")
            .map(quantity_bytes)
            .unwrap_or(Some(0))
            .unwrap_or(0);
        let size_gib = gib_rounded_up(requested);
        let params = class.get("parameters").cloned().unwrap_or(json!({}));
        let param = |k: &str| params.get(k).and_then(Value::as_str).map(str::to_owned);
        let ns = text(pvc, "/metadata/namespace");
        let claim = text(pvc, "/metadata/name");
        let mut metadata = BTreeMap::from([
            ("csi.storage.k8s.io/pvc/name".to_owned(), claim.to_owned()),
            ("csi.storage.k8s.io/pvc/namespace".to_owned(), ns.to_owned()),
            ("csi.storage.k8s.io/pv/name".to_owned(), pv_name.clone()),
        ]);
        if let Some(cluster) = self.cluster_id() {
            metadata.insert(format!("{}/cluster", driver.name()), cluster);
        }
        let existing = in_process::get(&self.kube, "", "persistentvolumes", "", &pv_name);
        let (handle, zone, attributes) = match &existing {
            Some(pv) => (
                text(pv, "/spec/csi/volumeHandle").to_owned(),
                None,
                pv.pointer("/spec/csi/volumeAttributes").cloned(),
            ),
            None => match driver {
                Driver::Cinder => {
                    let zone = param("availability").or_else(|| {
                        if installed.topology {
                            self.node_zone(selected_node)
                        } else {
                            None
                        }
                    });
                    let stored = self.openstack.storage();
                    let volume = match stored.volumes.iter().find(|v| v.name == pv_name) {
                        Some(v) => v.clone(),
                        None => self
                            .openstack
                            .create_volume(&VolumeRequest {
                                name: pv_name.clone(),
                                size_gib,
                                volume_type: param("type"),
                                availability_zone: zone.clone(),
                                metadata,
                            })
                            .map_err(|e| {
                                format!("rpc error: code = Internal desc = CreateVolume failed with error {e}")
                            })?,
                    };
                    let zone = installed.topology.then(|| volume.availability_zone.clone());
                    (
                        volume.id,
                        zone,
                        Some(
                            json!({"storage.kubernetes.io/csiProvisionerIdentity": driver.component()}),
                        ),
                    )
                }
                Driver::Manila => {
                    let stored = self.openstack.storage();
                    let (share, rule) = match stored.shares.iter().find(|s| s.name == pv_name) {
                        Some(s) => {
                            let rule = stored
                                .access_rules
                                .iter()
                                .find(|r| r.share_id == s.id)
                                .map(|r| r.id.clone())
                                .unwrap_or_default();
                            (s.clone(), rule)
                        }
                        None => self
                            .openstack
                            .create_share(&ShareRequest {
                                name: pv_name.clone(),
                                size_gib,
                                protocol: param("protocol").unwrap_or_else(|| "NFS".into()),
                                share_type: param("type"),
                                metadata,
                                access_to: param("nfs-shareClient")
                                    .unwrap_or_else(|| "0.0.0.0/0".into()),
                            })
                            .map_err(|e| {
                                format!("rpc error: code = Internal desc = failed to create volume {pv_name}: {e}")
                            })?,
                    };
                    (
                        share.id.clone(),
                        None,
                        Some(json!({"shareID": share.id, "shareAccessID": rule})),
                    )
                }
            },
        };
        if existing.is_none() {
            let pv = volume_object(
                pvc,
                class,
                driver,
                &Provisioned {
                    name: &pv_name,
                    handle: &handle,
                    size_gib,
                    modes: &modes,
                    zone,
                    attributes,
                },
            );
            in_process::create(
                &self.kube,
                "",
                "persistentvolumes",
                "",
                pv,
                "csi-provisioner",
            )?;
        }
        self.bind(pvc, &pv_name, size_gib, &modes)?;
        Ok(pv_name)
    }

    /// The PV controller's binding: the claim names the volume (with its annotations), then
    /// both statuses say Bound.
    fn bind(
        &self,
        pvc: &Value,
        pv_name: &str,
        size_gib: u64,
        modes: &[String],
    ) -> Result<(), String> {
        let ns = text(pvc, "/metadata/namespace");
        let name = text(pvc, "/metadata/name");
        in_process::merge(
            &self.kube,
            ("", "persistentvolumes"),
            "",
            pv_name,
            true,
            &json!({"status": {"phase": "Bound"}}),
            PV_CONTROLLER,
        )?;
        in_process::merge(
            &self.kube,
            ("", "persistentvolumeclaims"),
            ns,
            name,
            false,
            &json!({
                "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes",
                    "pv.kubernetes.io/bound-by-controller": "yes"}},
                "spec": {"volumeName": pv_name},
            }),
            PV_CONTROLLER,
        )?;
        in_process::merge(
            &self.kube,
            ("", "persistentvolumeclaims"),
            ns,
            name,
            true,
            &json!({"status": {"phase": "Bound", "accessModes": modes,
                "capacity": {"storage": format!("{size_gib}Gi")}}}),
            PV_CONTROLLER,
        )?;
        Ok(())
    }

    /// A claim that names its volume but is not Bound yet (a pass stopped half-way).
    fn finish_binding(&self, pvc: &Value) -> bool {
        let pv_name = text(pvc, "/spec/volumeName");
        let Some(pv) = in_process::get(&self.kube, "", "persistentvolumes", "", pv_name) else {
            return false;
        };
        if text(&pv, "/spec/claimRef/uid") != text(pvc, "/metadata/uid") {
            return false;
        }
        let size = pv
            .pointer("/spec/capacity/storage")
            .and_then(quantity_bytes)
            .map_or(1, gib_rounded_up);
        let modes: Vec<String> = pv
            .pointer("/spec/accessModes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        self.bind(pvc, pv_name, size, &modes).is_ok()
    }

    /// The external-resizer: a bound claim asking for more than its capacity.
    fn expand(&self, pvc: &Value, class: &Value, driver: Driver) -> bool {
        if class.get("allowVolumeExpansion").and_then(Value::as_bool) != Some(true) {
            return false;
        }
        let bytes = |p: &str| pvc.pointer(p).and_then(quantity_bytes).unwrap_or(0);
        let requested = bytes("/spec/resources/requests/storage");
        let capacity = bytes("/status/capacity/storage");
        if requested <= capacity || text(pvc, "/status/phase") != "Bound" {
            return false;
        }
        let pv_name = text(pvc, "/spec/volumeName");
        let Some(pv) = in_process::get(&self.kube, "", "persistentvolumes", "", pv_name) else {
            return false;
        };
        let size_gib = gib_rounded_up(requested);
        let handle = text(&pv, "/spec/csi/volumeHandle");
        let component = format!("external-resizer {}", driver.name());
        self.event(
            pvc,
            "Normal",
            "Resizing",
            &format!("External resizer is resizing volume {pv_name}"),
            &component,
        );
        let grown = match driver {
            Driver::Cinder => self.openstack.extend_volume(handle, size_gib),
            Driver::Manila => self.openstack.extend_share(handle, size_gib),
        };
        if let Err(e) = grown {
            self.event(
                pvc,
                "Warning",
                "VolumeResizeFailed",
                &format!("resize volume \"{pv_name}\" by resizer \"{}\" failed: rpc error: code = Internal desc = {e}", driver.name()),
                &component,
            );
            return false;
        }
        let size = json!({"storage": format!("{size_gib}Gi")});
        let ns = text(pvc, "/metadata/namespace");
        let name = text(pvc, "/metadata/name");
        let written = in_process::merge(
            &self.kube,
            ("", "persistentvolumes"),
            "",
            pv_name,
            false,
            &json!({"spec": {"capacity": size}}),
            &component,
        )
        .and_then(|_| {
            in_process::merge(
                &self.kube,
                ("", "persistentvolumeclaims"),
                ns,
                name,
                true,
                &json!({"status": {"capacity": size}}),
                &component,
            )
        });
        if written.is_ok() {
            self.event(
                pvc,
                "Normal",
                "VolumeResizeSuccessful",
                &format!("Resize volume succeeded for volume \"{pv_name}\""),
                &component,
            );
        }
        true
    }

    /// Releases and reclaims a volume whose claim is gone; returns whether it wrote anything.
    fn sync_volume(&self, pv: &Arc<Value>) -> bool {
        let pv_name = text(pv, "/metadata/name");
        let phase = text(pv, "/status/phase");
        let claim_ns = text(pv, "/spec/claimRef/namespace");
        let claim_name = text(pv, "/spec/claimRef/name");
        if claim_name.is_empty() {
            // The PV controller makes any new unclaimed volume Available (static ones too).
            return pv.pointer("/metadata/deletionTimestamp").is_none()
                && (phase.is_empty() || phase == "Pending")
                && in_process::merge(
                    &self.kube,
                    ("", "persistentvolumes"),
                    "",
                    pv_name,
                    true,
                    &json!({"status": {"phase": "Available"}}),
                    PV_CONTROLLER,
                )
                .is_ok();
        }
        let Some(driver) = Driver::of(text(pv, "/spec/csi/driver")) else {
            return false;
        };
        let claim = in_process::get(
            &self.kube,
            "",
            "persistentvolumeclaims",
            claim_ns,
            claim_name,
        );
        let claim_uid = text(pv, "/spec/claimRef/uid");
        let claim_exists = claim.is_some_and(|c| text(&c, "/metadata/uid") == claim_uid);
        if claim_exists {
            return false;
        }
        let mut wrote = false;
        if phase == "Bound" {
            wrote |= in_process::merge(
                &self.kube,
                ("", "persistentvolumes"),
                "",
                pv_name,
                true,
                &json!({"status": {"phase": "Released"}}),
                PV_CONTROLLER,
            )
            .is_ok();
        }
        let ours = pv
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(PROVISIONED_BY))
            .and_then(Value::as_str)
            == Some(driver.name());
        if text(pv, "/spec/persistentVolumeReclaimPolicy") != "Delete"
            || !ours
            || self.installed(driver).is_none()
        {
            return wrote;
        }
        // The attach-detach controller detaches first; deleting an attached volume would fail.
        let attached = in_process::list(&self.kube, "storage.k8s.io", "volumeattachments", None)
            .iter()
            .any(|va| text(va, "/spec/source/persistentVolumeName") == pv_name);
        if attached {
            return wrote;
        }
        let handle = text(pv, "/spec/csi/volumeHandle");
        let deleted = match driver {
            Driver::Cinder => self.openstack.delete_volume(handle),
            Driver::Manila => self.openstack.delete_share(handle),
        };
        match deleted {
            Ok(()) => {}
            Err(e) if e.status == 404 => {}
            Err(e) => {
                self.event(
                    pv,
                    "Warning",
                    "VolumeFailedDelete",
                    &format!(
                        "rpc error: code = Internal desc = DeleteVolume failed with error {e}"
                    ),
                    &driver.component(),
                );
                return wrote;
            }
        }
        // The provisioner's finalizer goes with the volume; pv-protection is kube-sim's.
        let finalizers: Vec<Value> = pv
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|f| f.as_str() != Some(PROVISIONER_FINALIZER))
            .cloned()
            .collect();
        let _ = in_process::merge(
            &self.kube,
            ("", "persistentvolumes"),
            "",
            pv_name,
            false,
            &json!({"metadata": {"finalizers": finalizers}}),
            "csi-provisioner",
        );
        let _ = in_process::delete(&self.kube, "", "persistentvolumes", "", pv_name);
        true
    }

    /// The cluster id the drivers tag volumes with (`--cluster`): the infrastructure name on
    /// OpenShift, none elsewhere.
    fn cluster_id(&self) -> Option<String> {
        let infra = in_process::get(
            &self.kube,
            "config.openshift.io",
            "infrastructures",
            "",
            "cluster",
        )?;
        let name = text(&infra, "/status/infrastructureName");
        (!name.is_empty()).then(|| name.to_owned())
    }

    /// The zone label of a Node.
    fn node_zone(&self, node: &str) -> Option<String> {
        let node = in_process::get(&self.kube, "", "nodes", "", node)?;
        let zone = node
            .pointer("/metadata/labels")
            .and_then(|l| {
                l.get(CINDER_ZONE_KEY)
                    .or_else(|| l.get("topology.kubernetes.io/zone"))
            })
            .and_then(Value::as_str)?;
        Some(zone.to_owned())
    }
}

/// What the PV records of a volume just provisioned.
struct Provisioned<'a> {
    name: &'a str,
    handle: &'a str,
    size_gib: u64,
    modes: &'a [String],
    /// Cinder's zone, under topology.
    zone: Option<String>,
    attributes: Option<Value>,
}

/// The PV of a provisioned volume.
fn volume_object(pvc: &Value, class: &Value, driver: Driver, v: &Provisioned<'_>) -> Value {
    let Provisioned {
        name: pv_name,
        handle,
        size_gib,
        modes,
        ..
    } = *v;
    let (zone, attributes) = (v.zone.clone(), v.attributes.clone());
    let mut csi = json!({"driver": driver.name(), "volumeHandle": handle});
    if driver == Driver::Cinder {
        let fs = class
            .pointer("/parameters/csi.storage.k8s.io~1fstype")
            .and_then(Value::as_str)
            .unwrap_or("ext4");
        if text(pvc, "/spec/volumeMode") != "Block" {
            csi["fsType"] = json!(fs);
        }
    }
    if let Some(a) = attributes {
        csi["volumeAttributes"] = a;
    }
    let reclaim = class
        .get("reclaimPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Delete");
    let mut spec = json!({
        "capacity": {"storage": format!("{size_gib}Gi")},
        "accessModes": modes,
        "claimRef": {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "namespace": text(pvc, "/metadata/namespace"), "name": text(pvc, "/metadata/name"),
            "uid": text(pvc, "/metadata/uid"), "resourceVersion": text(pvc, "/metadata/resourceVersion"),
        },
        "persistentVolumeReclaimPolicy": reclaim,
        "storageClassName": text(pvc, "/spec/storageClassName"),
        "volumeMode": text(pvc, "/spec/volumeMode"),
        "csi": csi,
    });
    if let Some(options) = class.get("mountOptions") {
        spec["mountOptions"] = options.clone();
    }
    if let Some(zone) = zone {
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": CINDER_ZONE_KEY, "operator": "In", "values": [zone]}]}]}});
    }
    json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {
            "name": pv_name,
            "annotations": {PROVISIONED_BY: driver.name(),
                "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
            "finalizers": [PROVISIONER_FINALIZER],
        },
        "spec": spec,
    })
}

/// Whole bytes of a quantity (`"1Gi"`, `"500M"`, `1024`), `None` if it does not parse.
pub fn quantity_bytes(v: &Value) -> Option<i128> {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let multiplier: i128 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut bytes = whole.checked_mul(multiplier)?;
    if !fraction.is_empty() {
        let digits = fraction.len().min(18);
        let frac: i128 = fraction.get(..digits)?.parse().ok()?;
        let scale = 10_i128.pow(u32::try_from(digits).ok()?);
        // Rounded up: a claim never gets less than it asked for.
        bytes += (frac * multiplier + scale - 1) / scale;
    }
    Some(bytes)
}

/// Bytes rounded up to whole GiB, at least 1 (what both drivers allocate).
pub fn gib_rounded_up(bytes: i128) -> u64 {
    let gib = (bytes + GIB - 1) / GIB;
    u64::try_from(gib.max(1)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_whole_gib() {
        for (q, want) in [
            (json!("1Gi"), 1),
            (json!("1.5Gi"), 2),
            (json!("500Mi"), 1),
            (json!("1G"), 1),
            (json!("2G"), 2),
            (json!("10Gi"), 10),
            (json!(1), 1),
        ] {
            let bytes = quantity_bytes(&q).expect("parses");
            assert_eq!(gib_rounded_up(bytes), want, "{q}");
        }
        assert_eq!(quantity_bytes(&json!("lots")), None);
        assert_eq!(quantity_bytes(&json!("1Xi")), None);
    }
}
