//! A stand-in for the cluster version operator: applies a directory of release manifests
//! (`manifests/openshift/`) in file-name order, as the CVO applies a release payload, with the
//! CVO's update semantics, so that an upgrade from objects another release left behind (the Go
//! operators') meets what it would meet on a cluster.
//!
//! Semantics kept from the CVO (`openshift/cluster-version-operator`, `lib/resourcemerge` and
//! `lib/resourcebuilder`):
//! - **Filtering.** A manifest is applied only if it is annotated
//!   `include.release.openshift.io/<profile>: "true"` for the cluster profile
//!   ([`Options::profile`], `self-managed-high-availability` by default), and none of the
//!   capabilities in its `capability.openshift.io/name` (`A+B` names several) is disabled.
//! - **Create.** A missing object is created.
//! - **Update in place.** An existing object is read (GET), the manifest is merged into it and
//!   the result written back whole (PUT), never with server-side apply. Metadata labels and
//!   annotations are merged (the manifest's keys win, other keys stay, a key ending in `-`
//!   removes that key); the rest follows the kind, as `resourcemerge` does:
//!   bindings take the manifest's `subjects` and `roleRef` (which the API server refuses when
//!   `roleRef` changes), roles their `rules`, ConfigMaps merge `data` key by key,
//!   ServiceAccounts and Namespaces keep everything but metadata, Deployments and DaemonSets
//!   take the manifest's selector, replicas, strategy and pod template (template metadata
//!   merged, `nodeSelector` merged, containers matched by name with the fields the CVO
//!   manages replaced), Services keep their allocated cluster IPs, and every other kind takes
//!   every field of the manifest but `metadata` and `status` (its spec wins).
//! - **`release.openshift.io/create-only: "true"`** (`Storage/cluster`): created when missing,
//!   never updated.
//! - **`release.openshift.io/delete: "true"`**: the object is deleted if it exists; this is how
//!   a release retires an object an earlier release shipped.
//! - **Order and the ClusterOperator barrier** ([`Barrier`]), as the real CVO runs a payload
//!   (measured on the real one, `../shared/realkube/CVO.md`): manifests are grouped by run level
//!   and component (`0000_<NN>_<component>_…`), each component's manifests run in file-name
//!   order, and a ClusterOperator manifest writes nothing but the (empty) object and then
//!   *fails its component* until the operator is Available (and, when updating, reports the
//!   manifest's versions): every later manifest of that component is left unapplied
//!   ([`Action::Blocked`]) until a later attempt ([`spawn`] retries, as the CVO's sync loop
//!   does). Other components go on. A manifest order that puts a ClusterOperator before the
//!   Deployment of its operator therefore never converges here either.
//!   [`pending_cluster_operators`] is the CVO's wait for the operator to report the release's
//!   versions.
//! - **A refused write is reported, not fatal to the rest.** The real CVO retries a refused
//!   manifest forever and reports it in ClusterVersion; here every other manifest is still
//!   applied and [`CvoError::Refused`] lists each refused one with the API server's answer.
//!
//! Simplified: container fields the CVO merges member by member (probes, security contexts)
//! are replaced as a whole, and the CVO's wait for a Deployment's rollout is left to callers.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use serde_json::{Map, Value};

const CREATE_ONLY: &str = "release.openshift.io/create-only";
const DELETE: &str = "release.openshift.io/delete";
const CAPABILITY: &str = "capability.openshift.io/name";
const INCLUDE_PREFIX: &str = "include.release.openshift.io/";
/// The profile of a standalone cluster (the only one our manifests target besides SNO).
pub const DEFAULT_PROFILE: &str = "self-managed-high-availability";
/// Writes that lose a race with an operator's own update are retried this often.
const CONFLICT_RETRIES: usize = 5;

/// Why a manifest could not be applied; names the file.
#[derive(Debug, thiserror::Error)]
pub enum CvoError {
    #[error("cannot read the manifest directory {dir}: {source}")]
    ReadDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: apply failed: {source}")]
    Apply {
        file: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the API server refused {} manifest(s); the cluster version operator would retry them forever:\n{}",
        .0.len(),
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    )]
    Refused(Vec<Refusal>),
}

/// One manifest the API server refused to create, update or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub file: String,
    /// `Kind namespace/name` (`Kind name` when cluster-scoped).
    pub object: String,
    /// HTTP status code of the answer (422 for an invalid update).
    pub code: u16,
    /// The API server's reason and message.
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: {} {}",
            self.file, self.object, self.code, self.message
        )
    }
}

/// One parsed manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub file: String,
    pub object: Value,
}

impl Manifest {
    fn annotation(&self, key: &str) -> Option<&str> {
        self.object["metadata"]["annotations"][key].as_str()
    }

    /// Whether the manifest retires its object (`release.openshift.io/delete: "true"`).
    pub fn is_delete(&self) -> bool {
        self.annotation(DELETE) == Some("true")
    }

    /// Whether the manifest is annotated `include.release.openshift.io/<profile>: "true"`.
    pub fn included_in(&self, profile: &str) -> bool {
        self.annotation(&format!("{INCLUDE_PREFIX}{profile}")) == Some("true")
    }

    /// Whether the manifest is only created, never updated.
    pub fn is_create_only(&self) -> bool {
        self.annotation(CREATE_ONLY) == Some("true")
    }
}

/// When a ClusterOperator manifest lets the rest of its component through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Barrier {
    /// A fresh install (the CVO's Initializing state): once the operator is Available.
    Installing,
    /// An update: once the operator is Available and reports the manifest's versions.
    Updating,
    /// No barrier: every manifest is applied in one pass. For tests that play the operators
    /// themselves and only need the release's objects; never for a chain that runs the CSO.
    None,
}

/// The cluster the CVO applies to.
#[derive(Debug, Clone)]
pub struct Options {
    /// The cluster profile (`include.release.openshift.io/<profile>`).
    pub profile: String,
    /// Capabilities the cluster has disabled (`capability.openshift.io/name`).
    pub disabled_capabilities: BTreeSet<String>,
    pub barrier: Barrier,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            profile: DEFAULT_PROFILE.to_owned(),
            disabled_capabilities: BTreeSet::new(),
            barrier: Barrier::Installing,
        }
    }
}

/// What applying one manifest did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Created,
    /// Written in place (the stored object changed).
    Updated,
    /// Already as the manifest wants it (or create-only and present).
    Unchanged,
    /// Retired by a delete manifest.
    Deleted,
    /// A delete manifest whose object did not exist.
    AlreadyGone,
    /// Not for this profile, or of a disabled capability.
    Skipped,
    /// The API server refused the write (see [`Refusal`]).
    Refused,
    /// Not applied in this attempt: an earlier ClusterOperator manifest of its component is
    /// not Available (at the version, when updating) yet.
    Blocked,
}

/// The outcome of every manifest, in order.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub outcomes: Vec<(String, Action)>,
}

impl Report {
    /// Whether every manifest of the payload was applied (none [`Action::Blocked`]).
    pub fn complete(&self) -> bool {
        !self.outcomes.iter().any(|(_, a)| *a == Action::Blocked)
    }

    /// The files whose action is one of `actions`.
    pub fn files(&self, actions: &[Action]) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|(_, a)| actions.contains(a))
            .map(|(f, _)| f.clone())
            .collect()
    }
}

/// The manifests of `dir` a cluster version operator of the default profile
/// ([`DEFAULT_PROFILE`], as the real CVO without `CLUSTER_PROFILE`) applies, by file name: the
/// other profiles' variants (the IBM Cloud CSO Deployment) are left out, so a caller looking
/// for "the CSO Deployment" finds the one this cluster runs.
pub fn load(dir: &Path) -> Result<Vec<Manifest>, CvoError> {
    load_profile(dir, DEFAULT_PROFILE)
}

/// The manifests of `dir` included in `profile` (`include.release.openshift.io/<profile>`).
pub fn load_profile(dir: &Path, profile: &str) -> Result<Vec<Manifest>, CvoError> {
    Ok(load_payload(dir)?
        .into_iter()
        .filter(|m| m.included_in(profile))
        .collect())
}

/// Every `.yaml` file of `dir` (not its sub-directories, which the CVO does not read), sorted
/// by name, one object each: the payload as shipped, every profile's manifests.
pub fn load_payload(dir: &Path) -> Result<Vec<Manifest>, CvoError> {
    let entries = std::fs::read_dir(dir).map_err(|source| CvoError::ReadDir {
        dir: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let file = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&path).map_err(|e| CvoError::Parse {
                file: file.clone(),
                message: e.to_string(),
            })?;
            let mut docs =
                operator_kit::assets::parse_values(&file, &text).map_err(|e| CvoError::Parse {
                    file: file.clone(),
                    message: e.to_string(),
                })?;
            if docs.len() != 1 {
                return Err(CvoError::Parse {
                    file,
                    message: format!("expected one object, found {}", docs.len()),
                });
            }
            Ok(Manifest {
                file,
                object: docs.remove(0),
            })
        })
        .collect()
}

/// One attempt at `manifests` as a fresh install ([`Barrier::Installing`]); returns the files
/// that changed something (created, updated or deleted an object). Manifests behind a
/// ClusterOperator that is not Available yet are left for a later attempt ([`spawn`]).
pub async fn apply(client: &Client, manifests: &[Manifest]) -> Result<Vec<String>, CvoError> {
    let report = apply_with(client, manifests, &Options::default()).await?;
    Ok(report.files(&[Action::Created, Action::Updated, Action::Deleted]))
}

/// Every manifest in one pass, with no ClusterOperator barrier ([`Barrier::None`]): for tests
/// that play the operators themselves.
pub async fn apply_all(client: &Client, manifests: &[Manifest]) -> Result<Vec<String>, CvoError> {
    let options = Options {
        barrier: Barrier::None,
        ..Options::default()
    };
    let report = apply_with(client, manifests, &options).await?;
    Ok(report.files(&[Action::Created, Action::Updated, Action::Deleted]))
}

/// Loads a directory and applies it with no barrier (see [`apply_all`]).
pub async fn apply_dir(client: &Client, dir: &Path) -> Result<Vec<String>, CvoError> {
    apply_all(client, &load(dir)?).await
}

/// The CVO's sync loop: an attempt every `period` until one applies the whole payload (no
/// manifest blocked); refusals are retried like the rest. Abort the task to stop it earlier.
pub fn spawn(
    client: Client,
    manifests: Vec<Manifest>,
    options: Options,
    period: std::time::Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Ok(report) = apply_with(&client, &manifests, &options).await
                && report.complete()
            {
                return;
            }
            tokio::time::sleep(period).await;
        }
    })
}

/// `0000_<NN>_<component>` of a payload file name: the CVO's unit of ordering.
fn component_of(file: &str) -> &str {
    let mut cut = 0;
    for (i, part) in file.split('_').enumerate() {
        if i == 3 {
            break;
        }
        cut += part.len() + usize::from(i > 0);
    }
    &file[..cut.min(file.len())]
}

/// Whether the live ClusterOperator of `m` lets its component through under `barrier`.
async fn cluster_operator_ready(
    client: &Client,
    m: &Manifest,
    barrier: Barrier,
) -> Result<bool, CvoError> {
    if barrier == Barrier::None {
        return Ok(true);
    }
    let (ar, _) = resource_of(client, m).await?;
    let name = m.object["metadata"]["name"].as_str().unwrap_or_default();
    let live = Api::<DynamicObject>::all_with(client.clone(), &ar)
        .get_opt(name)
        .await
        .map_err(|source| CvoError::Apply {
            file: m.file.clone(),
            source,
        })?;
    let Some(live) = live else { return Ok(false) };
    let available = live.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True");
    let at_version = m.object["status"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|want| {
            live.data["status"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v["name"] == want["name"] && v["version"] == want["version"])
        });
    Ok(available && (barrier == Barrier::Installing || at_version))
}

/// One attempt at `manifests` for the cluster `options` describes, in order, with the
/// ClusterOperator barrier of `options.barrier`. Every manifest not blocked is tried; if the
/// API server refused any, the error lists them all.
pub async fn apply_with(
    client: &Client,
    manifests: &[Manifest],
    options: &Options,
) -> Result<Report, CvoError> {
    let mut report = Report::default();
    let mut refused = Vec::new();
    let mut blocked: BTreeSet<String> = BTreeSet::new();
    for m in manifests {
        let component = component_of(&m.file).to_owned();
        let action = if !included(m, options) {
            Action::Skipped
        } else if blocked.contains(&component) {
            Action::Blocked
        } else {
            let action = match apply_one(client, m).await {
                Ok(a) => a,
                Err(Failure::Refused(r)) => {
                    refused.push(r);
                    Action::Refused
                }
                Err(Failure::Fatal(e)) => return Err(e),
            };
            if m.object["kind"] == "ClusterOperator"
                && !cluster_operator_ready(client, m, options.barrier).await?
            {
                blocked.insert(component);
            }
            action
        };
        report.outcomes.push((m.file.clone(), action));
    }
    if refused.is_empty() {
        Ok(report)
    } else {
        Err(CvoError::Refused(refused))
    }
}

/// The ClusterOperators among `manifests` whose `status.versions` do not yet show every
/// version the manifest names (the CVO waits for these before it calls an upgrade done), as
/// readable lines; empty once all have reported.
pub async fn pending_cluster_operators(
    client: &Client,
    manifests: &[Manifest],
) -> Result<Vec<String>, CvoError> {
    let mut pending = Vec::new();
    for m in manifests
        .iter()
        .filter(|m| m.object["kind"] == "ClusterOperator")
    {
        let (ar, _) = resource_of(client, m).await?;
        let name = m.object["metadata"]["name"].as_str().unwrap_or_default();
        let live = Api::<DynamicObject>::all_with(client.clone(), &ar)
            .get_opt(name)
            .await
            .map_err(|source| CvoError::Apply {
                file: m.file.clone(),
                source,
            })?;
        let reported = live
            .as_ref()
            .map(|o| o.data["status"]["versions"].clone())
            .unwrap_or(Value::Null);
        for want in m.object["status"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let found = reported
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v["name"] == want["name"] && v["version"] == want["version"]);
            if !found {
                pending.push(format!(
                    "ClusterOperator {name}: wants {} {}, reports {reported}",
                    want["name"], want["version"]
                ));
            }
        }
    }
    Ok(pending)
}

fn included(m: &Manifest, options: &Options) -> bool {
    if !m.included_in(&options.profile) {
        return false;
    }
    m.annotation(CAPABILITY).is_none_or(|caps| {
        caps.split('+')
            .all(|c| !options.disabled_capabilities.contains(c.trim()))
    })
}

enum Failure {
    Refused(Refusal),
    Fatal(CvoError),
}

/// The manifest's resource: from operator-kit's table, else from the API server's discovery
/// (as the CVO's REST mapper finds it).
async fn resource_of(client: &Client, m: &Manifest) -> Result<(ApiResource, bool), CvoError> {
    let api_version = m.object["apiVersion"].as_str().unwrap_or_default();
    let kind = m.object["kind"].as_str().unwrap_or_default();
    if let Ok(ar) = operator_kit::kinds::api_resource(api_version, kind) {
        return Ok((ar, operator_kit::kinds::is_namespaced(api_version, kind)));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|source| CvoError::Apply {
            file: m.file.clone(),
            source,
        })?;
    Ok((ar, caps.scope == Scope::Namespaced))
}

async fn apply_one(client: &Client, m: &Manifest) -> Result<Action, Failure> {
    let parse = |message: String| {
        Failure::Fatal(CvoError::Parse {
            file: m.file.clone(),
            message,
        })
    };
    if !m.object.is_object() || m.object["metadata"]["name"].as_str().is_none() {
        return Err(parse("not an object with metadata.name".into()));
    }
    let (ar, namespaced) = resource_of(client, m).await.map_err(Failure::Fatal)?;
    let name = m.object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let namespace = m.object["metadata"]["namespace"].as_str().unwrap_or("");
    let api: Api<DynamicObject> = if namespaced && !namespace.is_empty() {
        Api::namespaced_with(client.clone(), namespace, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    let object = if namespace.is_empty() {
        format!("{} {name}", ar.kind)
    } else {
        format!("{} {namespace}/{name}", ar.kind)
    };
    let fail = |e: kube::Error| match e {
        kube::Error::Api(s) => Failure::Refused(Refusal {
            file: m.file.clone(),
            object: object.clone(),
            code: s.code,
            message: format!("{}: {}", s.reason, s.message),
        }),
        other => Failure::Fatal(CvoError::Apply {
            file: m.file.clone(),
            source: other,
        }),
    };

    if m.is_delete() {
        return match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => Ok(Action::Deleted),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::AlreadyGone),
            Err(e) => Err(fail(e)),
        };
    }

    let mut required = m.object.clone();
    if let Some(o) = required.as_object_mut() {
        o.remove("status");
    }
    for _ in 0..CONFLICT_RETRIES {
        let live = api.get_opt(&name).await.map_err(fail)?;
        let Some(live) = live else {
            let obj: DynamicObject =
                serde_json::from_value(required.clone()).map_err(|e| parse(e.to_string()))?;
            return match api.create(&PostParams::default(), &obj).await {
                Ok(_) => Ok(Action::Created),
                // Created by someone else meanwhile: merge into it next round.
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => Err(fail(e)),
            };
        };
        if m.is_create_only() || ar.kind == "ClusterOperator" {
            return Ok(Action::Unchanged);
        }
        let existing = serde_json::to_value(&live).map_err(|e| parse(e.to_string()))?;
        let mut merged = existing.clone();
        merge(&ar.kind, &mut merged, &required);
        if merged == existing {
            return Ok(Action::Unchanged);
        }
        let obj: DynamicObject =
            serde_json::from_value(merged).map_err(|e| parse(e.to_string()))?;
        match api.replace(&name, &PostParams::default(), &obj).await {
            Ok(after) => {
                return Ok(
                    if after.metadata.resource_version == live.metadata.resource_version {
                        Action::Unchanged
                    } else {
                        Action::Updated
                    },
                );
            }
            // An operator wrote the object between our read and write: read it again.
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(fail(e)),
        }
    }
    Err(Failure::Refused(Refusal {
        file: m.file.clone(),
        object,
        code: 409,
        message: format!("Conflict: still conflicting after {CONFLICT_RETRIES} attempts"),
    }))
}

/// Merges `required` (a manifest) into `existing` (the live object) as the CVO's
/// `resourcemerge` does for `kind`.
pub fn merge(kind: &str, existing: &mut Value, required: &Value) {
    merge_meta(&mut existing["metadata"], &required["metadata"]);
    match kind {
        "Namespace" => {}
        "ServiceAccount" => set_if_present(existing, required, "automountServiceAccountToken"),
        "ConfigMap" => merge_map(&mut existing["data"], &required["data"]),
        "ClusterRole" | "Role" => {
            replace(existing, required, "rules");
            replace(existing, required, "aggregationRule");
        }
        "ClusterRoleBinding" | "RoleBinding" => {
            replace(existing, required, "subjects");
            let mut role_ref = required["roleRef"].clone();
            if let Some(r) = role_ref.as_object_mut() {
                r.entry("apiGroup")
                    .or_insert_with(|| Value::from("rbac.authorization.k8s.io"));
            }
            existing["roleRef"] = role_ref;
        }
        "Deployment" | "DaemonSet" => merge_workload(kind, existing, &required["spec"]),
        "Service" => {
            let kept: Vec<(&str, Value)> = ["clusterIP", "clusterIPs"]
                .into_iter()
                .filter_map(|k| Some((k, existing["spec"].get(k)?.clone())))
                .collect();
            existing["spec"] = required["spec"].clone();
            for (k, v) in kept {
                existing["spec"][k] = v;
            }
        }
        _ => {
            let Some(req) = required.as_object() else {
                return;
            };
            for (k, v) in req {
                if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
                    existing[k.as_str()] = v.clone();
                }
            }
        }
    }
}

/// Labels and annotations merged; a required key ending in `-` removes that key.
fn merge_meta(existing: &mut Value, required: &Value) {
    for field in ["labels", "annotations"] {
        let Some(req) = required[field].as_object() else {
            continue;
        };
        if !existing[field].is_object() {
            existing[field] = Value::Object(Map::new());
        }
        let Some(ex) = existing[field].as_object_mut() else {
            continue;
        };
        for (k, v) in req {
            match k.strip_suffix('-') {
                Some(removed) => {
                    ex.remove(removed);
                }
                None => {
                    ex.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// The required map's keys overwrite, other keys stay.
fn merge_map(existing: &mut Value, required: &Value) {
    let Some(req) = required.as_object() else {
        return;
    };
    if !existing.is_object() {
        *existing = Value::Object(Map::new());
    }
    if let Some(ex) = existing.as_object_mut() {
        for (k, v) in req {
            ex.insert(k.clone(), v.clone());
        }
    }
}

fn replace(existing: &mut Value, required: &Value, key: &str) {
    match (existing.as_object_mut(), required.get(key)) {
        (Some(ex), Some(v)) => {
            ex.insert(key.to_owned(), v.clone());
        }
        (Some(ex), None) => {
            ex.remove(key);
        }
        _ => {}
    }
}

fn set_if_present(existing: &mut Value, required: &Value, key: &str) {
    if let (Some(ex), Some(v)) = (existing.as_object_mut(), required.get(key)) {
        ex.insert(key.to_owned(), v.clone());
    }
}

fn merge_workload(kind: &str, existing: &mut Value, required: &Value) {
    if !existing["spec"].is_object() {
        existing["spec"] = Value::Object(Map::new());
    }
    let spec = &mut existing["spec"];
    replace(spec, required, "selector");
    if kind == "Deployment" {
        spec["replicas"] = required.get("replicas").cloned().unwrap_or(Value::from(1));
        for key in ["paused", "minReadySeconds"] {
            replace(spec, required, key);
        }
        for key in ["revisionHistoryLimit", "progressDeadlineSeconds"] {
            set_if_present(spec, required, key);
        }
        let mut strategy = required["strategy"].clone();
        let rolling = strategy["type"]
            .as_str()
            .is_none_or(|t| t == "RollingUpdate");
        if rolling {
            strategy["type"] = Value::from("RollingUpdate");
            for k in ["maxUnavailable", "maxSurge"] {
                if strategy["rollingUpdate"][k].is_null() {
                    strategy["rollingUpdate"][k] = Value::from("25%");
                }
            }
        }
        spec["strategy"] = strategy;
    }
    let template = &mut spec["template"];
    let req_template = &required["template"];
    if !template["metadata"].is_object() {
        template["metadata"] = Value::Object(Map::new());
    }
    merge_meta(&mut template["metadata"], &req_template["metadata"]);
    if !template["spec"].is_object() {
        template["spec"] = Value::Object(Map::new());
    }
    merge_pod_spec(&mut template["spec"], &req_template["spec"]);
}

fn merge_pod_spec(existing: &mut Value, required: &Value) {
    for key in ["initContainers", "containers"] {
        merge_containers(existing, required, key);
    }
    for key in ["volumes", "tolerations", "affinity", "securityContext"] {
        replace(existing, required, key);
    }
    for key in [
        "restartPolicy",
        "serviceAccountName",
        "priorityClassName",
        "priority",
        "shareProcessNamespace",
        "dnsPolicy",
        "terminationGracePeriodSeconds",
    ] {
        set_if_present(existing, required, key);
    }
    // The CVO sets `hostNetwork` from the manifest, but Go's `omitempty` drops a false bool:
    // a manifest without it leaves no field. Writing `false` would change a template created
    // without it and roll the Deployment once after every install (a second ReplicaSet a
    // second after the first pod started, which the fault matrix tripped over).
    if let Some(spec) = existing.as_object_mut() {
        if required.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
            spec.insert("hostNetwork".into(), Value::Bool(true));
        } else {
            spec.remove("hostNetwork");
        }
    }
    // Indexing would insert a null `nodeSelector` into a template that has none.
    if required.get("nodeSelector").is_some_and(Value::is_object) {
        merge_map(&mut existing["nodeSelector"], &required["nodeSelector"]);
    }
}

/// Containers matched by name: those the manifest lacks go, new ones are added whole, and
/// matched ones take the fields the CVO manages (others, such as `imagePullPolicy` or
/// `terminationMessagePolicy`, keep their live values, as on a real cluster).
fn merge_containers(existing: &mut Value, required: &Value, key: &str) {
    const REPLACED: &[&str] = &[
        "command",
        "args",
        "env",
        "envFrom",
        "resources",
        "ports",
        "volumeMounts",
        "livenessProbe",
        "readinessProbe",
        "securityContext",
    ];
    let req: Vec<Value> = required[key].as_array().cloned().unwrap_or_default();
    let live: Vec<Value> = existing[key].as_array().cloned().unwrap_or_default();
    let mut out = Vec::with_capacity(req.len());
    for r in &req {
        let mut c = live
            .iter()
            .find(|l| l["name"] == r["name"])
            .cloned()
            .unwrap_or_else(|| r.clone());
        for k in REPLACED {
            replace(&mut c, r, k);
        }
        for k in ["image", "workingDir"] {
            set_if_present(&mut c, r, k);
        }
        out.push(c);
    }
    // Keep the live order of matched containers, as the CVO edits the list in place.
    out.sort_by_key(|c| {
        live.iter()
            .position(|l| l["name"] == c["name"])
            .unwrap_or(usize::MAX)
    });
    match existing.as_object_mut() {
        Some(ex) if out.is_empty() => {
            ex.remove(key);
        }
        Some(ex) => {
            ex.insert(key.to_owned(), Value::Array(out));
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dir_with(files: &[(&str, &str)]) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("cvo-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        for (name, text) in files {
            std::fs::write(dir.join(name), text).expect("write");
        }
        dir
    }

    #[test]
    fn manifests_load_in_file_name_order_and_malformed_files_are_named() {
        let dir = dir_with(&[
            (
                "02_b.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
            ),
            (
                "01_a.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
            ),
            ("README.md", "not a manifest"),
            ("image-references", "kind: ImageStream\n"),
        ]);
        let loaded = load_payload(&dir).expect("loads");
        let files: Vec<&str> = loaded.iter().map(|m| m.file.as_str()).collect();
        assert_eq!(files, ["01_a.yaml", "02_b.yaml"]);
        // Neither is annotated for the default profile.
        assert!(load(&dir).expect("loads").is_empty());

        let two = dir_with(&[("x.yaml", "kind: A\n---\nkind: B\n")]);
        let e = load(&two).expect_err("two objects").to_string();
        assert!(
            e.contains("x.yaml") && e.contains("expected one object, found 2"),
            "{e}"
        );
        let bad = dir_with(&[("y.yaml", "kind: [unclosed\n")]);
        assert!(
            load(&bad)
                .expect_err("bad yaml")
                .to_string()
                .starts_with("y.yaml: ")
        );
        let missing = std::env::temp_dir().join("cvo-test-no-such-dir");
        assert!(
            load(&missing)
                .expect_err("no dir")
                .to_string()
                .contains("cannot read the manifest directory")
        );
        for d in [dir, two, bad] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    fn manifest(annotations: Value) -> Manifest {
        Manifest {
            file: "f.yaml".into(),
            object: json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "n", "annotations": annotations}}),
        }
    }

    #[test]
    fn manifests_are_filtered_by_profile_and_disabled_capability() {
        let ha = "include.release.openshift.io/self-managed-high-availability";
        let opts = Options::default();
        assert!(included(&manifest(json!({ha: "true"})), &opts));
        assert!(!included(&manifest(json!({})), &opts));
        assert!(!included(
            &manifest(json!({"include.release.openshift.io/hypershift": "true"})),
            &opts
        ));
        let no_cco = Options {
            disabled_capabilities: BTreeSet::from(["CloudCredential".to_owned()]),
            ..Options::default()
        };
        let both = manifest(json!({ha: "true", CAPABILITY: "Storage+CloudCredential"}));
        assert!(included(&both, &opts));
        assert!(!included(&both, &no_cco));
        assert!(included(
            &manifest(json!({ha: "true", CAPABILITY: "Storage"})),
            &no_cco
        ));
    }

    /// `manifests/openshift/` as each profile's CVO reads it: the standalone profile gets the
    /// standalone CSO Deployment and the CredentialsRequests, IBM Cloud (and HyperShift's guest
    /// CVO, which runs that profile) its own Deployment variant and no CredentialsRequest; the
    /// `hypershift/` sub-directory is read by none.
    #[test]
    fn the_release_is_loaded_per_profile() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift");
        let deployments = |ms: &[Manifest]| -> Vec<String> {
            ms.iter()
                .filter(|m| m.object["kind"] == "Deployment" && !m.is_delete())
                .map(|m| m.file.clone())
                .collect()
        };
        let credentials = |ms: &[Manifest]| {
            ms.iter()
                .filter(|m| m.object["kind"] == "CredentialsRequest")
                .count()
        };
        let payload = load_payload(&dir).expect("loads");
        assert!(payload.iter().all(|m| !m.file.contains("hypershift")));
        let standalone = load(&dir).expect("loads");
        assert_eq!(
            deployments(&standalone),
            ["0000_50_cluster-storage-operator_10_deployment.yaml"]
        );
        assert_eq!(credentials(&standalone), 3);
        let ibm = load_profile(&dir, "ibm-cloud-managed").expect("loads");
        assert_eq!(
            deployments(&ibm),
            ["0000_50_cluster-storage-operator_10_deployment-ibm-cloud-managed.yaml"]
        );
        assert_eq!(credentials(&ibm), 0);
        assert!(standalone.len() < payload.len() && ibm.len() < payload.len());
        // What the filter drops, `apply_with` skips too.
        let opts = Options::default();
        for m in &payload {
            assert_eq!(
                included(m, &opts),
                m.included_in(DEFAULT_PROFILE),
                "{}",
                m.file
            );
        }
    }

    #[test]
    fn metadata_merges_and_a_trailing_dash_removes_a_key() {
        let mut live = json!({"metadata": {"name": "x",
            "labels": {"keep": "1", "set": "old", "drop": "x"},
            "annotations": {"a": "1"}}});
        merge(
            "Namespace",
            &mut live,
            &json!({"metadata": {"labels": {"set": "new", "drop-": ""}, "annotations": {"b": "2"}}}),
        );
        assert_eq!(
            live["metadata"]["labels"],
            json!({"keep": "1", "set": "new"})
        );
        assert_eq!(live["metadata"]["annotations"], json!({"a": "1", "b": "2"}));
    }

    #[test]
    fn bindings_take_the_manifest_role_ref_and_subjects() {
        let mut live = json!({"metadata": {"name": "b"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "name": "u"}]});
        merge(
            "ClusterRoleBinding",
            &mut live,
            &json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "small"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}),
        );
        assert_eq!(
            live["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "small"})
        );
        assert_eq!(live["subjects"][0]["name"], "sa");
    }

    #[test]
    fn config_map_data_merges_and_other_kinds_take_the_manifest_spec() {
        let mut cm = json!({"metadata": {}, "data": {"a": "1", "b": "2"}});
        merge("ConfigMap", &mut cm, &json!({"data": {"b": "3"}}));
        assert_eq!(cm["data"], json!({"a": "1", "b": "3"}));
        let mut np = json!({"metadata": {}, "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}});
        merge(
            "NetworkPolicy",
            &mut np,
            &json!({"spec": {"podSelector": {"matchLabels": {"a": "b"}}, "policyTypes": ["Egress"]}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Egress"]));
    }

    #[test]
    fn deployments_merge_as_the_cvo_merges_them() {
        let mut live = json!({"metadata": {"name": "d"}, "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"name": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"name": "d"}, "annotations": {"old": "x"}},
                "spec": {
                    "nodeSelector": {"node-role.kubernetes.io/master": "", "extra": "y"},
                    "volumes": [{"name": "config", "configMap": {"name": "c"}}],
                    "containers": [
                        {"name": "sidecar", "image": "s"},
                        {"name": "op", "image": "old", "args": ["--old"], "imagePullPolicy": "Always",
                         "terminationMessagePolicy": "FallbackToLogsOnError",
                         "volumeMounts": [{"name": "config", "mountPath": "/c"}]}]}}}});
        merge(
            "Deployment",
            &mut live,
            &json!({"metadata": {"name": "d"}, "spec": {
                "selector": {"matchLabels": {"name": "d"}},
                "strategy": {"type": "Recreate"},
                "template": {"metadata": {"labels": {"name": "d", "new": "1"}},
                    "spec": {"nodeSelector": {"node-role.kubernetes.io/master": ""},
                        "containers": [{"name": "op", "image": "new", "command": ["op"]}]}}}}),
        );
        let spec = &live["spec"];
        assert_eq!(spec["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            spec["template"]["metadata"]["annotations"],
            json!({"old": "x"})
        );
        assert_eq!(spec["template"]["metadata"]["labels"]["new"], "1");
        let pod = &spec["template"]["spec"];
        assert!(pod.get("volumes").is_none());
        assert_eq!(pod["nodeSelector"]["extra"], "y");
        let containers = pod["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 1);
        let c = &containers[0];
        assert_eq!(c["image"], "new");
        assert_eq!(c["command"], json!(["op"]));
        assert!(c.get("args").is_none() && c.get("volumeMounts").is_none());
        // Not managed by the CVO: the live value stays.
        assert_eq!(c["imagePullPolicy"], "Always");
    }

    #[test]
    fn reapplying_a_deployment_leaves_its_template_alone() {
        // Created from the manifest (no hostNetwork, as the real API server stores it).
        let manifest = json!({"metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"name": "d"}},
            "template": {"metadata": {"labels": {"name": "d"}},
                "spec": {"containers": [{"name": "op", "image": "i"}]}}}});
        let mut live = manifest.clone();
        let before = live["spec"]["template"].clone();
        merge("Deployment", &mut live, &manifest);
        // A template that changes rolls the Deployment for nothing.
        assert_eq!(live["spec"]["template"], before);
        // A host-network pod keeps it.
        let mut host = manifest.clone();
        host["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
        let mut live = host.clone();
        merge("Deployment", &mut live, &host);
        assert_eq!(live["spec"]["template"]["spec"]["hostNetwork"], true);
    }
}

#[cfg(test)]
mod barrier_tests {
    use super::component_of;

    #[test]
    fn a_component_is_its_run_level_and_name() {
        assert_eq!(
            component_of("0000_50_cluster-storage-operator_10_deployment.yaml"),
            "0000_50_cluster-storage-operator"
        );
        assert_eq!(
            component_of("0000_90_cluster-storage-operator_01_x.yaml"),
            "0000_90_cluster-storage-operator"
        );
        // A file name outside the payload convention is its own component.
        assert_eq!(component_of("image-references"), "image-references");
    }
}
