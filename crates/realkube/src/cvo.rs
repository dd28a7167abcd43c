//! OpenShift's own cluster version operator, run out of cluster against a plane in OpenShift
//! mode with a payload made from a release's manifests, as `oc adm release new` lays one out
//! (`../shared/realkube/CVO.md` says what it needs and why).
//!
//! [`Payload::write`] copies the manifests into `release-manifests/` with the release's
//! substitutions (each image pull spec of `image-references` replaced by the release's image for
//! that tag, `0.0.1-snapshot` by the version), writes `release-metadata` and names the
//! `image-references` ImageStream after the version. [`prepare`] seeds what earlier run levels
//! and the installer leave (namespaces, admin-acks/admin-gates, ClusterVersion, FeatureGate).
//! [`Cvo`] is the process; it applies the payload with every rule of the real one: run levels,
//! components in parallel while installing, a component's manifests in order, a ClusterOperator
//! manifest that fails its component until the operator is Available (at the version, when
//! updating).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::{ControlPlane, PlaneError};

/// The cluster profile the CVO runs with (`CLUSTER_PROFILE`).
pub const CLUSTER_PROFILE: &str = "self-managed-high-availability";

/// The placeholder version of a release's manifests.
pub const PLACEHOLDER_VERSION: &str = "0.0.1-snapshot";

/// A release payload to build.
#[derive(Debug, Clone)]
pub struct Payload {
    /// The release's manifests (`manifests/openshift`).
    pub manifests: PathBuf,
    /// The release version (semver).
    pub version: String,
    /// Pull spec in the manifests → the release's pull spec. Unlisted pull specs stay.
    pub images: BTreeMap<String, String>,
    /// Files renamed in the payload (old name → new name), for counterfactual orders.
    pub rename: BTreeMap<String, String>,
    /// Files left out of the payload, as HyperShift's control-plane operator deletes some from
    /// the release before its CVO reads it.
    pub remove: std::collections::BTreeSet<String>,
}

/// The release image the CVO is told it runs (any string that equals itself: with no
/// `spec.desiredUpdate` the CVO serves its local payload for it, without a pull or signature).
pub fn release_image(version: &str) -> String {
    format!("registry.realkube.invalid/ocp-release:{version}")
}

impl Payload {
    /// Writes the payload directory `out` (`manifests/` empty, `release-manifests/` the release).
    pub fn write(&self, out: &Path) -> Result<(), String> {
        let _ = std::fs::remove_dir_all(out);
        let release = out.join("release-manifests");
        std::fs::create_dir_all(out.join("manifests")).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&release).map_err(|e| e.to_string())?;
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&self.manifests)
            .map_err(|e| format!("{}: {e}", self.manifests.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{name}: {e}"))?;
            let text = self.substitute(&text);
            if name == "image-references" {
                let mut stream: Value = crate::apply::parse(&text)?
                    .into_iter()
                    .next()
                    .ok_or("image-references is empty")?;
                stream["metadata"]["name"] = json!(self.version);
                std::fs::write(release.join(&name), stream.to_string())
                    .map_err(|e| e.to_string())?;
                continue;
            }
            if self.remove.contains(&name) {
                continue;
            }
            let target = self.rename.get(&name).cloned().unwrap_or(name);
            std::fs::write(release.join(target), text).map_err(|e| e.to_string())?;
        }
        let metadata = json!({"kind": "cincinnati-metadata-v0", "version": self.version});
        std::fs::write(release.join("release-metadata"), metadata.to_string())
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn substitute(&self, text: &str) -> String {
        let mut out = text.replace(PLACEHOLDER_VERSION, &self.version);
        for (from, to) in &self.images {
            out = out.replace(from, to);
        }
        out
    }
}

fn config_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("config.openshift.io", "v1", kind),
        plural,
    )
}

/// Seeds what the CVO reads before it applies anything: its namespace, the admin-acks and
/// admin-gates ConfigMaps, ClusterVersion/version, and FeatureGate/cluster with a status entry
/// for each of `versions` (without it the CVO shuts itself down right after taking its lease).
pub async fn prepare(client: &Client, versions: &[&str]) -> Result<(), String> {
    for ns in [
        "openshift-cluster-version",
        "openshift-config",
        "openshift-config-managed",
    ] {
        crate::apply::object(
            client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    for (ns, name) in [
        ("openshift-config", "admin-acks"),
        ("openshift-config-managed", "admin-gates"),
    ] {
        crate::apply::object(
            client,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}),
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    crate::apply::object(
        client,
        &json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
                "spec": {"clusterID": "6d2c0d5e-55a5-4c2b-9a3e-2d1f1f6b9a01"}}),
    )
    .await
    .map_err(|e| e.to_string())?;
    feature_gates(client, versions).await
}

/// FeatureGate/cluster with a status entry per version (what the config operator writes before
/// a release's CVO starts).
pub async fn feature_gates(client: &Client, versions: &[&str]) -> Result<(), String> {
    crate::apply::object(
        client,
        &json!({"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate", "metadata": {"name": "cluster"}, "spec": {}}),
    )
    .await
    .map_err(|e| e.to_string())?;
    let gates: Vec<Value> = versions
        .iter()
        .map(|v| json!({"version": v, "enabled": [], "disabled": []}))
        .collect();
    Api::<DynamicObject>::all_with(
        client.clone(),
        &config_resource("FeatureGate", "featuregates"),
    )
    .patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"featureGates": gates}})),
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// ClusterVersion/version's conditions: type → (status, reason, message).
pub async fn conditions(client: &Client) -> BTreeMap<String, (String, String, String)> {
    let api = Api::<DynamicObject>::all_with(
        client.clone(),
        &config_resource("ClusterVersion", "clusterversions"),
    );
    let Ok(cv) = api.get("version").await else {
        return BTreeMap::new();
    };
    conditions_of(&cv.data)
}

/// An object's `status.conditions`: type → (status, reason, message).
pub fn conditions_of(obj: &Value) -> BTreeMap<String, (String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                text(&c["type"]),
                (text(&c["status"]), text(&c["reason"]), text(&c["message"])),
            )
        })
        .collect()
}

/// The CVO process. Dropping it kills it; [`Cvo::stop`] ends it gracefully (it releases its
/// lease, as a real one does before the next release's CVO takes over).
pub struct Cvo {
    child: Child,
    log: PathBuf,
}

impl Cvo {
    /// Starts the CVO of `version` on the payload at `payload` (see [`Payload::write`]) with
    /// the standalone profile.
    pub fn start(plane: &ControlPlane, payload: &Path, version: &str) -> Result<Self, PlaneError> {
        Self::start_with_profile(plane, payload, version, CLUSTER_PROFILE)
    }

    /// Starts the CVO with the cluster profile `profile` (a hosted cluster's CVO runs with
    /// `ibm-cloud-managed`, as HyperShift starts it).
    pub fn start_with_profile(
        plane: &ControlPlane,
        payload: &Path,
        version: &str,
        profile: &str,
    ) -> Result<Self, PlaneError> {
        let path = plane.binaries().cluster_version_operator.clone();
        let log = plane.dir().join(format!("cvo-{version}.log"));
        let spawn_err = |reason: String| PlaneError::Spawn {
            name: "cluster-version-operator",
            path: path.clone(),
            reason,
        };
        let file = std::fs::File::create(&log).map_err(|e| spawn_err(e.to_string()))?;
        let err = file.try_clone().map_err(|e| spawn_err(e.to_string()))?;
        let child = Command::from(crate::plane::with_parent_death_signal(&path))
            .args([
                "start".to_owned(),
                format!("--kubeconfig={}", plane.admin_kubeconfig_path().display()),
                format!("--release-image={}", release_image(version)),
                "--enable-auto-update=false".into(),
                // No metrics server, so no serving certificate.
                "--listen=".into(),
                "--v=2".into(),
            ])
            .env("NODE_NAME", "master-0")
            // The profile a standalone cluster's CVO runs with, said rather than left to the
            // CVO's default: it applies only the manifests annotated
            // include.release.openshift.io/self-managed-high-availability, so the IBM Cloud CSO
            // Deployment beside the standalone one is never applied here.
            .env("CLUSTER_PROFILE", profile)
            .env("PAYLOAD_OVERRIDE", payload)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| spawn_err(e.to_string()))?;
        Ok(Self { child, log })
    }

    /// SIGTERM, and up to 30 s to release the lease and exit.
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status()
                .await;
            if tokio::time::timeout(Duration::from_secs(30), self.child.wait())
                .await
                .is_ok()
            {
                return;
            }
        }
        let _ = self.child.kill().await;
    }

    /// The lines of its log that say what it applied and how each attempt ended.
    pub fn progress(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.contains("Result of work")
                    || l.contains("Running sync for")
                    || l.contains("error")
            })
            .collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    pub fn log(&self) -> &Path {
        &self.log
    }
}
