//! The attach half of the provisioner stand-in: kube-controller-manager's attach-detach
//! controller and the CSI external-attacher of an installed driver whose CSIDriver says
//! `attachRequired: true` (Cinder's does, Manila's does not).
//!
//! - A Pod that is scheduled (`nodeName`) and not finished, mounting a bound claim of such a
//!   driver, gets a VolumeAttachment `csi-<sha256(pv name + driver + node)>` (the name the
//!   attach-detach controller gives it), with the attacher's finalizer. The volume is attached
//!   to the node in openstack-sim (Nova's server id is the node name here) and the
//!   attachment's `status.attached` set; a refusal (a volume attached elsewhere) is written to
//!   `status.attachError` and retried.
//! - When no such Pod is left, the VolumeAttachment is deleted, the volume detached and the
//!   finalizer removed, so the volume can be deleted afterwards.
//!
//! Nothing is staged or mounted on the node: no `devicePath`, no node plugin calls.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::csi_provisioner::{CsiProvisioner, Driver};
use crate::in_process::{self, text};

/// One wanted attachment: the volume's PV, driver and OpenStack id, and the node.
struct Wanted {
    pv: String,
    driver: Driver,
    handle: String,
    node: String,
}

/// `csi-` and the hex SHA-256 of the PV name, the attacher and the node name, as the
/// attach-detach controller names VolumeAttachments.
pub fn attachment_name(pv: &str, driver: &str, node: &str) -> String {
    let d = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{pv}{driver}{node}").as_bytes(),
    );
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("csi-{hex}")
}

fn finalizer(driver: Driver) -> String {
    format!("external-attacher/{}", driver.name().replace('.', "-"))
}

impl CsiProvisioner {
    /// Which drivers need attaching: installed, and `attachRequired` on their CSIDriver.
    fn attaching(&self) -> BTreeSet<&'static str> {
        [Driver::Cinder, Driver::Manila]
            .into_iter()
            .filter(|d| {
                in_process::get(&self.kube, "storage.k8s.io", "csidrivers", "", d.name())
                    .and_then(|c| c.pointer("/spec/attachRequired").and_then(Value::as_bool))
                    == Some(true)
                    && self.installed(*d).is_some()
            })
            .map(Driver::name)
            .collect()
    }

    fn wanted(&self, drivers: &BTreeSet<&'static str>) -> BTreeMap<String, Wanted> {
        let mut wanted = BTreeMap::new();
        for pod in in_process::list(&self.kube, "", "pods", None) {
            let node = text(&pod, "/spec/nodeName");
            let phase = text(&pod, "/status/phase");
            if node.is_empty() || phase == "Succeeded" || phase == "Failed" {
                continue;
            }
            let ns = text(&pod, "/metadata/namespace");
            let claims = pod
                .pointer("/spec/volumes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| {
                    v.pointer("/persistentVolumeClaim/claimName")
                        .and_then(Value::as_str)
                });
            for claim in claims {
                let Some(pvc) =
                    in_process::get(&self.kube, "", "persistentvolumeclaims", ns, claim)
                else {
                    continue;
                };
                let pv_name = text(&pvc, "/spec/volumeName");
                if pv_name.is_empty() || text(&pvc, "/status/phase") != "Bound" {
                    continue;
                }
                let Some(pv) = in_process::get(&self.kube, "", "persistentvolumes", "", pv_name)
                else {
                    continue;
                };
                let Some(driver) = Driver::of(text(&pv, "/spec/csi/driver")) else {
                    continue;
                };
                if !drivers.contains(driver.name()) {
                    continue;
                }
                wanted.insert(
                    attachment_name(pv_name, driver.name(), node),
                    Wanted {
                        pv: pv_name.to_owned(),
                        driver,
                        handle: text(&pv, "/spec/csi/volumeHandle").to_owned(),
                        node: node.to_owned(),
                    },
                );
            }
        }
        wanted
    }

    /// One pass of attaching and detaching; returns how many attachments it acted on.
    pub fn sync_attachments(&self) -> usize {
        let drivers = self.attaching();
        let wanted = if drivers.is_empty() {
            BTreeMap::new()
        } else {
            self.wanted(&drivers)
        };
        let mut acted = 0;
        for (name, w) in &wanted {
            acted += usize::from(self.attach(name, w));
        }
        for va in in_process::list(&self.kube, "storage.k8s.io", "volumeattachments", None) {
            let name = text(&va, "/metadata/name");
            let Some(driver) = Driver::of(text(&va, "/spec/attacher")) else {
                continue;
            };
            if wanted.contains_key(name) {
                continue;
            }
            acted += usize::from(self.detach(&va, driver));
        }
        acted
    }

    fn attach(&self, name: &str, w: &Wanted) -> bool {
        let va = match in_process::get(&self.kube, "storage.k8s.io", "volumeattachments", "", name)
        {
            Some(va) => va,
            None => {
                let body = json!({
                    "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                    "metadata": {"name": name, "finalizers": [finalizer(w.driver)]},
                    "spec": {"attacher": w.driver.name(), "nodeName": w.node,
                        "source": {"persistentVolumeName": w.pv}},
                });
                if in_process::create(
                    &self.kube,
                    "storage.k8s.io",
                    "volumeattachments",
                    "",
                    body,
                    "kube-controller-manager",
                )
                .is_err()
                {
                    return false;
                }
                return true;
            }
        };
        if va.pointer("/status/attached").and_then(Value::as_bool) == Some(true)
            || va.pointer("/metadata/deletionTimestamp").is_some()
        {
            return false;
        }
        let attached = match w.driver {
            Driver::Cinder => self.openstack.attach_volume(&w.handle, &w.node),
            Driver::Manila => Ok(()),
        };
        let status = match attached {
            Ok(()) => json!({"status": {"attached": true, "attachError": null}}),
            Err(e) => {
                let message = format!(
                    "rpc error: code = Internal desc = [ControllerPublishVolume] Attach Volume failed with error {e}"
                );
                if text(&va, "/status/attachError/message") == message {
                    return false;
                }
                json!({"status": {"attached": false,
                    "attachError": {"time": in_process::now(), "message": message}}})
            }
        };
        in_process::merge(
            &self.kube,
            ("storage.k8s.io", "volumeattachments"),
            "",
            name,
            true,
            &status,
            "csi-attacher",
        )
        .is_ok()
    }

    fn detach(&self, va: &Value, driver: Driver) -> bool {
        let name = text(va, "/metadata/name");
        if va.pointer("/metadata/deletionTimestamp").is_none() {
            // The attach-detach controller deletes it; the attacher's finalizer holds it.
            return in_process::delete(&self.kube, "storage.k8s.io", "volumeattachments", "", name)
                .is_ok();
        }
        let pv = text(va, "/spec/source/persistentVolumeName");
        let handle = in_process::get(&self.kube, "", "persistentvolumes", "", pv)
            .map(|pv| text(&pv, "/spec/csi/volumeHandle").to_owned())
            .unwrap_or_default();
        if driver == Driver::Cinder && !handle.is_empty() {
            match self
                .openstack
                .detach_volume(&handle, text(va, "/spec/nodeName"))
            {
                Ok(()) => {}
                // Already detached (or gone): the attachment is done with.
                Err(e) if e.status == 404 => {}
                Err(e) => {
                    let _ = in_process::merge(
                        &self.kube,
                        ("storage.k8s.io", "volumeattachments"),
                        "",
                        name,
                        true,
                        &json!({"status": {"detachError": {"time": in_process::now(),
                            "message": format!("rpc error: code = Internal desc = {e}")}}}),
                        "csi-attacher",
                    );
                    return false;
                }
            }
        }
        let remaining: Vec<Value> = va
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|f| f.as_str() != Some(finalizer(driver).as_str()))
            .cloned()
            .collect();
        in_process::merge(
            &self.kube,
            ("storage.k8s.io", "volumeattachments"),
            "",
            name,
            false,
            &json!({"metadata": {"finalizers": remaining}}),
            "csi-attacher",
        )
        .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_names_are_the_controllers() {
        let name = attachment_name("pv-1", "cinder.csi.openstack.org", "worker-0");
        assert!(name.starts_with("csi-") && name.len() == 4 + 64, "{name}");
        assert_ne!(
            name,
            attachment_name("pv-1", "cinder.csi.openstack.org", "worker-1")
        );
    }
}
