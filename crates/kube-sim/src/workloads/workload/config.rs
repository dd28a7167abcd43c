//! The workload simulator's settings ([`WorkloadConfig`]) and the per-workload holds on them.

use super::helpers::text;
use crate::api::Cluster;
use jiff::SignedDuration;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// Settings of the workload simulator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadConfig {
    /// How long a pod takes to become ready after it is created, in milliseconds.
    pub delay_ms: u64,
    /// Workloads whose pods never become ready.
    pub unavailable: Vec<WorkloadRef>,
    /// Caps every Deployment's `progressDeadlineSeconds` (a time compression for tests that
    /// must see a rollout time out without waiting the default ten minutes); `None` keeps the
    /// Deployments' own deadlines.
    pub max_progress_deadline_seconds: Option<u64>,
    /// Play the kubelet's volume setup: a pod whose containers mount a Secret or ConfigMap
    /// (directly or projected, not `optional`) that does not exist in its namespace stays in
    /// `ContainerCreating` and never becomes ready, until the object appears. Off by default
    /// because OpenShift testbeds have no service-ca to fill the drivers' serving-cert Secrets;
    /// the plain-Kubernetes testbed turns it on.
    pub require_volume_sources: bool,
}

/// One Deployment or DaemonSet, by kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRef {
    pub kind: WorkloadKind,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkloadKind {
    Deployment,
    DaemonSet,
}

impl WorkloadConfig {
    /// Whether the workload is listed as kept unavailable.
    pub fn is_unavailable(&self, kind: WorkloadKind, namespace: &str, name: &str) -> bool {
        self.unavailable
            .iter()
            .any(|w| w.kind == kind && w.namespace == namespace && w.name == name)
    }

    pub(super) fn delay(&self) -> SignedDuration {
        SignedDuration::from_millis(i64::try_from(self.delay_ms).unwrap_or(i64::MAX))
    }
}

/// The Secrets and ConfigMaps (`("Secret", name)`) a pod template's containers mount that
/// do not exist in `namespace` and are not optional: what the kubelet waits for
/// (`FailedMount`). A volume no container mounts is not set up, so it is not waited for.
pub fn missing_volume_sources(
    c: &Cluster,
    namespace: &str,
    template: &Value,
) -> Vec<(String, String)> {
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let mounted: BTreeSet<&str> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("volumeMounts").and_then(Value::as_array))
        .flatten()
        .filter_map(|m| m.get("name").and_then(Value::as_str))
        .collect();
    // (kind, the source, the field naming the object: `secretName` on a Secret volume,
    // `name` everywhere else).
    let mut wanted: Vec<(&str, &Value, &str)> = Vec::new();
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !v
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| mounted.contains(n))
        {
            continue;
        }
        if let Some(s) = v.get("secret") {
            wanted.push(("Secret", s, "secretName"));
        }
        if let Some(cm) = v.get("configMap") {
            wanted.push(("ConfigMap", cm, "name"));
        }
        for source in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(s) = source.get("secret") {
                wanted.push(("Secret", s, "name"));
            }
            if let Some(cm) = source.get("configMap") {
                wanted.push(("ConfigMap", cm, "name"));
            }
        }
    }
    let mut missing = Vec::new();
    for (kind, source, field) in wanted {
        if source.get("optional").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let plural = if kind == "Secret" {
            "secrets"
        } else {
            "configmaps"
        };
        let name = source
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default();
        let exists = c.resource("", "v1", plural).is_some_and(|rt| {
            c.store()
                .get(&rt.group_resource(), namespace, name)
                .is_some()
        });
        if !exists {
            missing.push((kind.to_owned(), name.to_owned()));
        }
    }
    missing
}

/// `config`, or a copy holding `kind namespace/name` unavailable when the kubelet would still
/// wait for one of its volumes ([`WorkloadConfig::require_volume_sources`]).
pub(super) fn with_volume_wait<'a>(
    c: &Cluster,
    config: &'a WorkloadConfig,
    kind: WorkloadKind,
    obj: &Value,
    copy: &'a mut Option<WorkloadConfig>,
) -> &'a WorkloadConfig {
    let namespace = text(obj, "/metadata/namespace");
    let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
    if !config.require_volume_sources || missing_volume_sources(c, namespace, template).is_empty() {
        return config;
    }
    let mut held = config.clone();
    held.unavailable.push(WorkloadRef {
        kind,
        namespace: namespace.to_owned(),
        name: text(obj, "/metadata/name").to_owned(),
    });
    copy.insert(held)
}
