//! The administrator's settings of a driver: the knobs of the upstream cloud-provider-openstack
//! Helm charts (`kubeletDir`, controller `replicas`, container `resources` and `extraArgs`,
//! `imagePullSecrets`, `podMonitor.enabled`, extra StorageClasses) as one ConfigMap per driver
//! that the operator reads, watches and keeps applied (docs/driver-settings.md).
//!
//! Why a ConfigMap: the operator reverts every edit of the objects it writes, so a kustomize
//! patch or `kubectl edit` of the DaemonSet cannot change them; the ClusterCSIDriver's spec is
//! a closed schema the API server prunes unknown fields from (on OpenShift its CRD is not
//! ours to change); an annotation holds one string and cannot be reviewed as structure. A
//! ConfigMap in the driver's namespace works the same on plain Kubernetes and OpenShift, is
//! covered by the watch and the Role the operator already has there, and is what a Helm chart
//! or GitOps tool renders.
//!
//! The data key [`DATA_KEY`] holds YAML, parsed strictly: an unknown key, a value of the
//! wrong type or an invalid one is an error that names the key (`controller.replicas`) and
//! says what is allowed. Everything here is pure.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::desired::{BuildError, Desired};

/// The ConfigMap's data key.
pub const DATA_KEY: &str = "settings.yaml";
/// Condition prefix: `DriverSettingsDegraded` says what is wrong with the ConfigMap.
pub const PREFIX: &str = "DriverSettings";
/// The label on every extra StorageClass, valued with the CSI driver's name: one watch selected
/// by it covers them, and only classes carrying it are ever deleted.
pub const EXTRA_CLASS_LABEL: &str = "csi.openstack.org/extra-storage-class";
/// Where the kubelet keeps its state on most distributions; the node DaemonSets' assets use it.
pub const DEFAULT_KUBELET_DIR: &str = "/var/lib/kubelet";
pub use crate::class_names::DEFAULT_CLASS_ANNOTATION;

/// The name of a driver's settings ConfigMap: `<operator>-settings`, in the driver's
/// namespace (`openstack-cinder-csi-driver-operator-settings`).
pub fn config_map_name(operator_name: &str) -> String {
    format!("{operator_name}-settings")
}

/// The label selector of the extra StorageClasses of `provisioner`.
pub fn extra_class_selector(provisioner: &str) -> String {
    format!("{EXTRA_CLASS_LABEL}={provisioner}")
}

/// Settings of one container, by its name in the controller Deployment or node DaemonSets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContainerSettings {
    /// Appended to the container's `args`.
    pub extra_args: Vec<String>,
    /// Replaces the container's `resources` (`requests`, `limits`).
    pub resources: Option<Value>,
}

/// An extra StorageClass of the driver (the charts' custom classes).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExtraStorageClass {
    pub name: String,
    pub parameters: BTreeMap<String, String>,
    pub reclaim_policy: Option<String>,
    pub volume_binding_mode: Option<String>,
    pub allow_volume_expansion: Option<bool>,
    pub mount_options: Vec<String>,
    pub is_default: bool,
}

/// A driver's settings; the default is what the operator does with no ConfigMap.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverSettings {
    /// The kubelet's root directory on the nodes (k0s: `/var/lib/k0s/kubelet`, MicroK8s:
    /// `/var/snap/microk8s/common/var/lib/kubelet`).
    pub kubelet_dir: String,
    /// The controller Deployment's replicas; `None`: from the control-plane topology.
    pub controller_replicas: Option<i32>,
    pub controller: BTreeMap<String, ContainerSettings>,
    pub node: BTreeMap<String, ContainerSettings>,
    /// Added to the pods of the controller and node services.
    pub image_pull_secrets: Vec<String>,
    /// Whether the driver's ServiceMonitor is applied (the charts' `podMonitor.enabled`).
    pub service_monitor: bool,
    /// Labels added to the driver's ServiceMonitor (the charts' `podMonitor.additionalLabels`;
    /// kube-prometheus-stack selects by `release: <its Helm release>`).
    pub service_monitor_labels: BTreeMap<String, String>,
    pub storage_classes: Vec<ExtraStorageClass>,
}

impl Default for DriverSettings {
    fn default() -> Self {
        Self {
            kubelet_dir: DEFAULT_KUBELET_DIR.to_string(),
            controller_replicas: None,
            controller: BTreeMap::new(),
            node: BTreeMap::new(),
            image_pull_secrets: Vec::new(),
            service_monitor: true,
            service_monitor_labels: BTreeMap::new(),
            storage_classes: Vec::new(),
        }
    }
}

/// What is wrong with the settings: the key and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

fn err<T>(key: &str, what: impl std::fmt::Display) -> Result<T, SettingsError> {
    Err(SettingsError(format!("{key}: {what}")))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The keys of mapping `v` at `key`, refusing any not in `allowed`.
fn mapping<'a>(
    key: &str,
    v: &'a Value,
    allowed: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, SettingsError> {
    let Value::Object(m) = v else {
        return err(key, format!("expected a mapping, got {}", kind_of(v)));
    };
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            let at = if key.is_empty() {
                k.clone()
            } else {
                format!("{key}.{k}")
            };
            return err(
                &at,
                format!(
                    "unknown key; the keys allowed here are {} (names are case-sensitive)",
                    allowed.join(", ")
                ),
            );
        }
    }
    Ok(m)
}

fn join(key: &str, k: &str) -> String {
    if key.is_empty() {
        k.to_string()
    } else {
        format!("{key}.{k}")
    }
}

fn string(key: &str, v: &Value) -> Result<String, SettingsError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => err(key, format!("expected a string, got {}", kind_of(other))),
    }
}

fn boolean(key: &str, v: &Value) -> Result<bool, SettingsError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => err(
            key,
            format!("expected true or false, got {}", kind_of(other)),
        ),
    }
}

fn strings(key: &str, v: &Value) -> Result<Vec<String>, SettingsError> {
    let Value::Array(items) = v else {
        return err(
            key,
            format!("expected a list of strings, got {}", kind_of(v)),
        );
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| string(&format!("{key}[{i}]"), item))
        .collect()
}

/// A DNS-1123 subdomain (object names) or, with `label`, a DNS-1123 label.
fn dns_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// A Kubernetes resource quantity (`100m`, `1.5Gi`, `2e3`, `512`).
pub fn is_quantity(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits_end);
    let valid_number = !number.is_empty()
        && number != "."
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit());
    let valid_suffix = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        exp => {
            let rest = exp.strip_prefix(['e', 'E']);
            rest.is_some_and(|r| {
                let r = r.strip_prefix(['+', '-']).unwrap_or(r);
                !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())
            })
        }
    };
    valid_number && valid_suffix
}

fn resources(key: &str, v: &Value) -> Result<Value, SettingsError> {
    let m = mapping(key, v, &["requests", "limits"])?;
    let mut out = serde_json::Map::new();
    for (part, list) in m {
        let at = join(key, part);
        let Value::Object(items) = list else {
            return err(
                &at,
                format!(
                    "expected a mapping of resource names to quantities (cpu: 100m), got {}",
                    kind_of(list)
                ),
            );
        };
        let mut q = serde_json::Map::new();
        for (name, value) in items {
            let at = join(&at, name);
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return err(&at, format!("expected a quantity, got {}", kind_of(other))),
            };
            if !is_quantity(&text) {
                return err(
                    &at,
                    format!(
                        "{text:?} is not a quantity; write e.g. 100m or 0.5 for CPU, 128Mi or 1Gi for memory"
                    ),
                );
            }
            q.insert(name.clone(), Value::String(text));
        }
        out.insert(part.clone(), Value::Object(q));
    }
    Ok(Value::Object(out))
}

fn containers(key: &str, v: &Value) -> Result<BTreeMap<String, ContainerSettings>, SettingsError> {
    let Value::Object(m) = v else {
        return err(
            key,
            format!(
                "expected a mapping of container names to settings, got {}",
                kind_of(v)
            ),
        );
    };
    let mut out = BTreeMap::new();
    for (name, c) in m {
        let at = join(key, name);
        let fields = mapping(&at, c, &["extraArgs", "resources"])?;
        let mut s = ContainerSettings::default();
        if let Some(a) = fields.get("extraArgs") {
            let at = join(&at, "extraArgs");
            s.extra_args = strings(&at, a)?;
            for (i, arg) in s.extra_args.iter().enumerate() {
                if !arg.starts_with('-') || arg.contains(['\n', '\r']) || arg.trim() != arg {
                    return err(
                        &format!("{at}[{i}]"),
                        format!(
                            "{arg:?} is not a flag; write each argument as one string starting with - (e.g. \"--timeout=3m\")"
                        ),
                    );
                }
            }
        }
        if let Some(r) = fields.get("resources") {
            s.resources = Some(resources(&join(&at, "resources"), r)?);
        }
        out.insert(name.clone(), s);
    }
    Ok(out)
}

fn storage_class(key: &str, v: &Value) -> Result<ExtraStorageClass, SettingsError> {
    let m = mapping(
        key,
        v,
        &[
            "name",
            "parameters",
            "reclaimPolicy",
            "volumeBindingMode",
            "allowVolumeExpansion",
            "mountOptions",
            "isDefault",
        ],
    )?;
    let Some(name) = m.get("name") else {
        return err(key, "every StorageClass needs a name");
    };
    let name = string(&join(key, "name"), name)?;
    if !dns_name(&name, 253) {
        return err(
            &join(key, "name"),
            format!(
                "{name:?} is not a valid object name (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)"
            ),
        );
    }
    let mut class = ExtraStorageClass {
        name,
        ..ExtraStorageClass::default()
    };
    if let Some(p) = m.get("parameters") {
        let at = join(key, "parameters");
        let Value::Object(p) = p else {
            return err(
                &at,
                format!("expected a mapping of strings, got {}", kind_of(p)),
            );
        };
        for (k, v) in p {
            let value = match v {
                Value::String(s) => s.clone(),
                // YAML's `true` and `3` are what the user meant as text, as kubectl would refuse.
                other => {
                    return err(
                        &join(&at, k),
                        format!(
                            "expected a string, got {}; quote it (\"{}\")",
                            kind_of(other),
                            other
                        ),
                    );
                }
            };
            class.parameters.insert(k.clone(), value);
        }
    }
    if let Some(r) = m.get("reclaimPolicy") {
        let at = join(key, "reclaimPolicy");
        let r = string(&at, r)?;
        if !["Delete", "Retain"].contains(&r.as_str()) {
            return err(&at, format!("{r:?} is not Delete or Retain"));
        }
        class.reclaim_policy = Some(r);
    }
    if let Some(b) = m.get("volumeBindingMode") {
        let at = join(key, "volumeBindingMode");
        let b = string(&at, b)?;
        if !["Immediate", "WaitForFirstConsumer"].contains(&b.as_str()) {
            return err(
                &at,
                format!("{b:?} is not Immediate or WaitForFirstConsumer"),
            );
        }
        class.volume_binding_mode = Some(b);
    }
    if let Some(a) = m.get("allowVolumeExpansion") {
        class.allow_volume_expansion = Some(boolean(&join(key, "allowVolumeExpansion"), a)?);
    }
    if let Some(o) = m.get("mountOptions") {
        class.mount_options = strings(&join(key, "mountOptions"), o)?;
    }
    if let Some(d) = m.get("isDefault") {
        class.is_default = boolean(&join(key, "isDefault"), d)?;
    }
    Ok(class)
}

/// A label key: an optional DNS subdomain prefix and `/`, and a name of up to 63 characters.
fn label_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(|p| dns_name(p, 253)) && !name.is_empty() && label_value(name)
}

/// A label value: up to 63 of `[A-Za-z0-9._-]`, starting and ending alphanumeric (or empty).
fn label_value(v: &str) -> bool {
    v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && v.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
        && v.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
}

fn labels(key: &str, v: &Value) -> Result<BTreeMap<String, String>, SettingsError> {
    let Value::Object(m) = v else {
        return err(
            key,
            format!(
                "expected a mapping like {{release: kube-prometheus-stack}}, got {}",
                kind_of(v)
            ),
        );
    };
    let mut out = BTreeMap::new();
    for (k, v) in m {
        let at = join(key, k);
        if !label_key(k) {
            return err(&at, "not a valid label key");
        }
        let v = string(&at, v)?;
        if !label_value(&v) {
            return err(
                &at,
                format!(
                    "{v:?} is not a valid label value (up to 63 letters, digits, '-', '_', '.')"
                ),
            );
        }
        out.insert(k.clone(), v);
    }
    Ok(out)
}

fn kubelet_dir(key: &str, v: &Value) -> Result<String, SettingsError> {
    let dir = string(key, v)?;
    let trimmed = if dir.len() > 1 {
        dir.trim_end_matches('/')
    } else {
        dir.as_str()
    };
    let ok = trimmed.starts_with('/')
        && trimmed != "/"
        && !trimmed.split('/').any(|p| p == ".." || p == ".")
        && !trimmed.contains("//")
        && !trimmed.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        return err(
            key,
            format!(
                "{dir:?} is not an absolute directory; give the kubelet's --root-dir, e.g. /var/lib/kubelet, /var/lib/k0s/kubelet (k0s) or /var/snap/microk8s/common/var/lib/kubelet (MicroK8s)"
            ),
        );
    }
    Ok(trimmed.to_string())
}

/// Parses the ConfigMap's [`DATA_KEY`] text. An empty document means the defaults.
pub fn parse(text: &str) -> Result<DriverSettings, SettingsError> {
    let value: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str::<Value>(text).map_err(|e| {
            let mut options = serde_saphyr::RenderOptions::default();
            options.snippets = serde_saphyr::SnippetMode::Off;
            SettingsError(format!(
                "not valid YAML: {}",
                e.without_snippet().render_with_options(options)
            ))
        })?
    };
    let mut s = DriverSettings::default();
    if value.is_null() {
        return Ok(s);
    }
    let top = mapping(
        "",
        &value,
        &[
            "kubeletDir",
            "controller",
            "node",
            "imagePullSecrets",
            "serviceMonitor",
            "storageClasses",
        ],
    )
    .map_err(|e| {
        if e.0.starts_with(": ") {
            SettingsError(format!("the document{}", e.0))
        } else {
            e
        }
    })?;
    if let Some(v) = top.get("kubeletDir") {
        s.kubelet_dir = kubelet_dir("kubeletDir", v)?;
    }
    if let Some(v) = top.get("controller") {
        let c = mapping("controller", v, &["replicas", "containers"])?;
        if let Some(r) = c.get("replicas") {
            let n = r.as_i64().filter(|n| (1..=i64::from(i32::MAX)).contains(n));
            let Some(n) = n else {
                return err(
                    "controller.replicas",
                    format!(
                        "expected a whole number of at least 1, got {}",
                        match r {
                            Value::Number(n) => n.to_string(),
                            other => kind_of(other).to_string(),
                        }
                    ),
                );
            };
            s.controller_replicas = Some(n as i32);
        }
        if let Some(v) = c.get("containers") {
            s.controller = containers("controller.containers", v)?;
        }
    }
    if let Some(v) = top.get("node") {
        let n = mapping("node", v, &["containers"])?;
        if let Some(v) = n.get("containers") {
            s.node = containers("node.containers", v)?;
        }
    }
    if let Some(v) = top.get("imagePullSecrets") {
        let Value::Array(items) = v else {
            return err(
                "imagePullSecrets",
                format!(
                    "expected a list like [{{name: my-registry}}], got {}",
                    kind_of(v)
                ),
            );
        };
        for (i, item) in items.iter().enumerate() {
            let at = format!("imagePullSecrets[{i}]");
            let m = mapping(&at, item, &["name"])?;
            let Some(name) = m.get("name") else {
                return err(&at, "expected {name: <Secret name>}");
            };
            let name = string(&join(&at, "name"), name)?;
            if !dns_name(&name, 253) {
                return err(
                    &join(&at, "name"),
                    format!("{name:?} is not a valid Secret name"),
                );
            }
            s.image_pull_secrets.push(name);
        }
    }
    if let Some(v) = top.get("serviceMonitor") {
        let m = mapping("serviceMonitor", v, &["enabled", "labels"])?;
        if let Some(e) = m.get("enabled") {
            s.service_monitor = boolean("serviceMonitor.enabled", e)?;
        }
        if let Some(l) = m.get("labels") {
            s.service_monitor_labels = labels("serviceMonitor.labels", l)?;
        }
    }
    if let Some(v) = top.get("storageClasses") {
        let Value::Array(items) = v else {
            return err(
                "storageClasses",
                format!("expected a list of StorageClasses, got {}", kind_of(v)),
            );
        };
        let mut names = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let class = storage_class(&format!("storageClasses[{i}]"), item)?;
            if !names.insert(class.name.clone()) {
                return err(
                    &format!("storageClasses[{i}].name"),
                    format!("{:?} is listed twice", class.name),
                );
            }
            s.storage_classes.push(class);
        }
        if s.storage_classes.iter().filter(|c| c.is_default).count() > 1 {
            return err(
                "storageClasses",
                "more than one class has isDefault: true; a cluster has one default class",
            );
        }
    }
    Ok(s)
}

/// The driver's ServiceMonitor as applied: the settings' labels added and, on plain Kubernetes
/// (`kubernetes`), each endpoint's TLS verified against the driver's metrics serving
/// certificate instead of OpenShift's service CA (a file only OpenShift's Prometheus has). The
/// CA comes from the serving-cert Secret of the endpoint's Service (`requests`, found by the
/// endpoint's `serverName`): its `ca.crt` when it has one (cert-manager writes it), else its
/// `tls.crt`, which is its own CA when the operator issued it self-signed (`has_ca` says
/// whether Secret `(namespace, name)` has `ca.crt`). The Prometheus operator reads that Secret
/// from the ServiceMonitor's namespace.
pub fn service_monitor(
    object: &mut DynamicObject,
    labels: &BTreeMap<String, String>,
    kubernetes: bool,
    requests: &[crate::metrics_cert::Request],
    has_ca: impl Fn(&str, &str) -> bool,
) {
    if !labels.is_empty() {
        let l = object.metadata.labels.get_or_insert_with(Default::default);
        for (k, v) in labels {
            l.insert(k.clone(), v.clone());
        }
    }
    if !kubernetes {
        return;
    }
    let Some(Value::Array(endpoints)) = object.data.pointer_mut("/spec/endpoints") else {
        return;
    };
    for e in endpoints {
        let Some(server) = e.pointer("/tlsConfig/serverName").and_then(Value::as_str) else {
            continue;
        };
        let Some(r) = requests
            .iter()
            .find(|r| server == format!("{}.{}.svc", r.service, r.namespace))
        else {
            continue;
        };
        let key = if has_ca(&r.namespace, &r.secret) {
            "ca.crt"
        } else {
            "tls.crt"
        };
        e["tlsConfig"] = json!({
            "ca": {"secret": {"name": r.secret, "key": key}},
            "serverName": server,
        });
    }
}

/// The pod spec of a Deployment or DaemonSet.
fn pod_spec(object: &mut DynamicObject) -> Option<&mut serde_json::Map<String, Value>> {
    object
        .data
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
}

/// The names of the containers (and init containers) of a workload.
pub fn container_names(object: &DynamicObject) -> Vec<String> {
    let spec = object.data.pointer("/spec/template/spec");
    ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.and_then(|s| s.get(*k)).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

impl DriverSettings {
    /// Checks that every container named under `controller.containers` is a container of
    /// `controller` and every one under `node.containers` one of some node DaemonSet.
    pub fn check_containers(
        &self,
        controller: &DynamicObject,
        nodes: &[&DynamicObject],
    ) -> Result<(), SettingsError> {
        let have: BTreeSet<String> = container_names(controller).into_iter().collect();
        for name in self.controller.keys() {
            if !have.contains(name) {
                return err(
                    &format!("controller.containers.{name}"),
                    format!(
                        "the controller has no container of that name; its containers are {}",
                        have.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
        let have: BTreeSet<String> = nodes.iter().flat_map(|d| container_names(d)).collect();
        let qualified: BTreeSet<String> = nodes
            .iter()
            .flat_map(|d| {
                let ds = d.metadata.name.clone().unwrap_or_default();
                container_names(d)
                    .into_iter()
                    .map(move |c| format!("{ds}/{c}"))
            })
            .collect();
        for name in self.node.keys() {
            if name.contains('/') {
                if !qualified.contains(name) {
                    return err(
                        &format!("node.containers.{name}"),
                        format!(
                            "no node DaemonSet/container of that name; they are {}",
                            qualified.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
            } else if !have.contains(name) {
                return err(
                    &format!("node.containers.{name}"),
                    format!(
                        "no node DaemonSet has a container of that name; their containers are {}",
                        have.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
        Ok(())
    }

    /// The controller Deployment with the settings: replicas, pull secrets, containers.
    pub fn apply_controller(&self, object: &mut DynamicObject) {
        if let Some(r) = self.controller_replicas
            && let Some(spec) = object.data.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.insert("replicas".into(), json!(r));
        }
        self.apply_pod(object, &self.controller);
    }

    /// A node DaemonSet with the settings: the kubelet directory, pull secrets, containers.
    pub fn apply_node(&self, object: &mut DynamicObject) {
        if self.kubelet_dir != DEFAULT_KUBELET_DIR
            && let Some(spec) = pod_spec(object)
        {
            relocate_kubelet_dir(spec, &self.kubelet_dir);
        }
        self.apply_pod(object, &self.node);
    }

    /// `containers` by container name, or by `<workload>/<container>` (which wins): Manila's
    /// two node DaemonSets both have a `csi-driver`.
    fn apply_pod(
        &self,
        object: &mut DynamicObject,
        containers: &BTreeMap<String, ContainerSettings>,
    ) {
        let workload = object.metadata.name.clone().unwrap_or_default();
        let Some(spec) = pod_spec(object) else {
            return;
        };
        if !self.image_pull_secrets.is_empty() {
            let list = spec
                .entry("imagePullSecrets")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                for name in &self.image_pull_secrets {
                    if !list.iter().any(|s| s["name"] == name.as_str()) {
                        list.push(json!({"name": name}));
                    }
                }
            }
        }
        for key in ["containers", "initContainers"] {
            let Some(Value::Array(list)) = spec.get_mut(key) else {
                continue;
            };
            for c in list.iter_mut() {
                let Some(name) = c.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let Some(settings) = containers
                    .get(&format!("{workload}/{name}"))
                    .or_else(|| containers.get(name))
                else {
                    continue;
                };
                let Some(c) = c.as_object_mut() else {
                    continue;
                };
                if !settings.extra_args.is_empty() {
                    let args = c.entry("args").or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(args) = args {
                        args.extend(settings.extra_args.iter().cloned().map(Value::String));
                    }
                }
                if let Some(r) = &settings.resources {
                    c.insert("resources".into(), r.clone());
                }
            }
        }
    }

    /// The extra StorageClasses, provisioned by `provisioner` and labelled as ours.
    pub fn storage_classes(&self, provisioner: &str) -> Result<Vec<Desired>, BuildError> {
        self.storage_classes
            .iter()
            .map(|c| {
                let mut v = json!({
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {
                        "name": c.name,
                        "labels": {EXTRA_CLASS_LABEL: provisioner},
                        "annotations": {DEFAULT_CLASS_ANNOTATION: if c.is_default { "true" } else { "false" }},
                    },
                    "provisioner": provisioner,
                    "reclaimPolicy": c.reclaim_policy.as_deref().unwrap_or("Delete"),
                    "volumeBindingMode": c.volume_binding_mode.as_deref().unwrap_or("WaitForFirstConsumer"),
                    "allowVolumeExpansion": c.allow_volume_expansion.unwrap_or(true),
                });
                // Left out when empty, as the API server stores them, so a class at rest is
                // never written again.
                if !c.parameters.is_empty() {
                    v["parameters"] = json!(c.parameters);
                }
                if !c.mount_options.is_empty() {
                    v["mountOptions"] = json!(c.mount_options);
                }
                crate::desired::from_value("extra StorageClass (driver settings)", None, v)
            })
            .collect()
    }
}

/// `s` with every path under [`DEFAULT_KUBELET_DIR`] moved under `dir`: the directory itself,
/// followed by `/`, the end, or a character that cannot be part of a path (a space in a shell
/// script, `]`), and not itself the tail of a longer path (`/opt/var/lib/kubelet`).
pub fn moved_kubelet_path(s: &str, dir: &str) -> String {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    for (at, _) in s.match_indices(DEFAULT_KUBELET_DIR) {
        let end = at + DEFAULT_KUBELET_DIR.len();
        let before = s[..at].chars().last();
        let after = s[end..].chars().next();
        // `unix:///var/lib/kubelet` is preceded by '/', a path like `/opt/var/lib/kubelet` by
        // a path character.
        let starts = before.is_none_or(|c| !path_char(c) && (c != '/' || s[..at].ends_with("://")));
        let ends = after.is_none_or(|c| c == '/' || !path_char(c));
        if starts && ends {
            out.push_str(&s[copied..at]);
            out.push_str(dir);
            copied = end;
        }
    }
    out.push_str(&s[copied..]);
    out
}

/// Moves every kubelet path of a node pod spec (host paths, mount paths, env values, args and
/// commands, `unix://` socket addresses and shell scripts included) from
/// [`DEFAULT_KUBELET_DIR`] to `dir`: the kubelet hands the driver paths under its own root,
/// so the driver must see them at the same place, as the charts' `kubeletDir` does.
fn relocate_kubelet_dir(spec: &mut serde_json::Map<String, Value>, dir: &str) {
    let fix = |v: &mut Value| {
        if let Some(s) = v.as_str() {
            let new = moved_kubelet_path(s, dir);
            if new != s {
                *v = Value::String(new);
            }
        }
    };
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        for v in volumes {
            if let Some(p) = v.pointer_mut("/hostPath/path") {
                fix(p);
            }
        }
    }
    for key in ["containers", "initContainers"] {
        let Some(Value::Array(list)) = spec.get_mut(key) else {
            continue;
        };
        for c in list {
            if let Some(Value::Array(mounts)) = c.get_mut("volumeMounts") {
                for m in mounts {
                    if let Some(p) = m.get_mut("mountPath") {
                        fix(p);
                    }
                }
            }
            if let Some(Value::Array(env)) = c.get_mut("env") {
                for e in env {
                    if let Some(v) = e.get_mut("value") {
                        fix(v);
                    }
                }
            }
            for list in ["args", "command"] {
                if let Some(Value::Array(args)) = c.get_mut(list) {
                    args.iter_mut().for_each(fix);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).expect("an object")
    }

    fn node() -> DynamicObject {
        obj(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "node"},
            "spec": {"template": {"spec": {
                "initContainers": [{"name": "wait", "command": ["sh", "-c",
                    "until [ -S /var/lib/kubelet/plugins/x/csi.sock ]; do sleep 1; done"]}],
                "containers": [
                    {"name": "csi-driver", "args": ["--endpoint=$(CSI_ENDPOINT)"],
                     "env": [{"name": "CSI_ENDPOINT", "value": "unix:///var/lib/kubelet/plugins/x/csi.sock"}],
                     "volumeMounts": [{"name": "kubelet-dir", "mountPath": "/var/lib/kubelet"},
                                      {"name": "dev", "mountPath": "/dev"}]},
                    {"name": "registrar", "args": ["--kubelet-registration-path=/var/lib/kubelet/plugins/x/csi.sock"]}
                ],
                "volumes": [
                    {"name": "kubelet-dir", "hostPath": {"path": "/var/lib/kubelet"}},
                    {"name": "reg", "hostPath": {"path": "/var/lib/kubelet/plugins_registry/"}},
                    {"name": "other", "hostPath": {"path": "/opt/var/lib/kubelet-like"}}
                ]
            }}}
        }))
    }

    fn controller() -> DynamicObject {
        obj(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "controller"},
            "spec": {"replicas": 2, "template": {"spec": {
                "containers": [{"name": "csi-driver", "args": ["--v=2"]},
                               {"name": "csi-provisioner", "args": ["--timeout=3m"]}]
            }}}
        }))
    }

    #[test]
    fn no_config_map_or_an_empty_one_is_the_defaults() {
        assert_eq!(parse("").expect("empty"), DriverSettings::default());
        assert_eq!(
            parse("# nothing\n").expect("comment"),
            DriverSettings::default()
        );
        let mut c = controller();
        let before = c.clone();
        DriverSettings::default().apply_controller(&mut c);
        assert_eq!(c.data, before.data);
        let mut n = node();
        let before = n.clone();
        DriverSettings::default().apply_node(&mut n);
        assert_eq!(n.data, before.data);
    }

    #[test]
    fn every_knob_reaches_the_rendered_objects() {
        let s = parse(
            r#"
kubeletDir: /var/lib/k0s/kubelet/
controller:
  replicas: 3
  containers:
    csi-provisioner:
      extraArgs: ["--extra-create-metadata", "--worker-threads=20"]
      resources: {requests: {cpu: 20m, memory: 64Mi}, limits: {memory: 1Gi}}
node:
  containers:
    csi-driver:
      resources: {requests: {cpu: "0.1"}}
      extraArgs: ["--v=4"]
imagePullSecrets: [{name: my-registry}]
serviceMonitor: {enabled: false}
storageClasses:
  - name: csi-ssd
    parameters: {type: ssd}
    reclaimPolicy: Retain
    mountOptions: [discard]
    isDefault: true
"#,
        )
        .expect("valid");
        assert!(!s.service_monitor);
        let mut c = controller();
        s.check_containers(&c, &[&node()])
            .expect("known containers");
        s.apply_controller(&mut c);
        assert_eq!(c.data["spec"]["replicas"], 3);
        let spec = &c.data["spec"]["template"]["spec"];
        assert_eq!(spec["imagePullSecrets"], json!([{"name": "my-registry"}]));
        assert_eq!(
            spec["containers"][1]["args"],
            json!([
                "--timeout=3m",
                "--extra-create-metadata",
                "--worker-threads=20"
            ])
        );
        assert_eq!(
            spec["containers"][1]["resources"],
            json!({"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "1Gi"}})
        );
        assert_eq!(spec["containers"][0]["args"], json!(["--v=2"]), "untouched");
        assert!(spec["containers"][0].get("resources").is_none());

        let mut n = node();
        s.apply_node(&mut n);
        let spec = &n.data["spec"]["template"]["spec"];
        let text = serde_json::to_string(spec).expect("json");
        assert!(!text.contains("\"/var/lib/kubelet"), "{text}");
        assert_eq!(
            spec["volumes"][0]["hostPath"]["path"],
            "/var/lib/k0s/kubelet"
        );
        assert_eq!(
            spec["volumes"][1]["hostPath"]["path"],
            "/var/lib/k0s/kubelet/plugins_registry/"
        );
        assert_eq!(
            spec["volumes"][2]["hostPath"]["path"],
            "/opt/var/lib/kubelet-like"
        );
        assert_eq!(
            spec["containers"][0]["env"][0]["value"],
            "unix:///var/lib/k0s/kubelet/plugins/x/csi.sock"
        );
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0]["mountPath"],
            "/var/lib/k0s/kubelet"
        );
        assert_eq!(
            spec["containers"][0]["volumeMounts"][1]["mountPath"],
            "/dev"
        );
        assert_eq!(
            spec["containers"][1]["args"][0],
            "--kubelet-registration-path=/var/lib/k0s/kubelet/plugins/x/csi.sock"
        );
        assert!(
            spec["initContainers"][0]["command"][2]
                .as_str()
                .expect("script")
                .contains("[ -S /var/lib/k0s/kubelet/plugins/x/csi.sock ]")
        );
        assert_eq!(
            spec["containers"][0]["args"],
            json!(["--endpoint=$(CSI_ENDPOINT)", "--v=4"])
        );
        assert_eq!(
            spec["containers"][0]["resources"],
            json!({"requests": {"cpu": "0.1"}})
        );
        assert_eq!(spec["imagePullSecrets"], json!([{"name": "my-registry"}]));

        let classes = s
            .storage_classes("cinder.csi.openstack.org")
            .expect("builds");
        assert_eq!(classes.len(), 1);
        let sc = &classes[0].object;
        assert_eq!(sc.metadata.name.as_deref(), Some("csi-ssd"));
        assert_eq!(sc.data["provisioner"], "cinder.csi.openstack.org");
        assert_eq!(sc.data["parameters"], json!({"type": "ssd"}));
        assert_eq!(sc.data["reclaimPolicy"], "Retain");
        assert_eq!(sc.data["mountOptions"], json!(["discard"]));
        let labels = sc.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[EXTRA_CLASS_LABEL], "cinder.csi.openstack.org");
        let annotations = sc.metadata.annotations.as_ref().expect("annotations");
        assert_eq!(annotations[DEFAULT_CLASS_ANNOTATION], "true");
    }

    #[test]
    fn mistakes_name_the_key_and_the_fix() {
        for (text, want) in [
            (
                "kubeletdir: /x",
                "kubeletdir: unknown key; the keys allowed here are kubeletDir",
            ),
            (
                "controller: {replica: 2}",
                "controller.replica: unknown key; the keys allowed here are replicas, containers",
            ),
            (
                "controller: {replicas: 0}",
                "controller.replicas: expected a whole number of at least 1, got 0",
            ),
            (
                "controller: {replicas: two}",
                "controller.replicas: expected a whole number of at least 1, got a string",
            ),
            (
                "controller: {replicas: 1.5}",
                "controller.replicas: expected a whole number",
            ),
            (
                "kubeletDir: var/lib/kubelet",
                "kubeletDir: \"var/lib/kubelet\" is not an absolute directory",
            ),
            ("kubeletDir: /var/../etc", "is not an absolute directory"),
            (
                "node: {containers: {csi-driver: {resources: {requests: {cpu: lots}}}}}",
                "node.containers.csi-driver.resources.requests.cpu: \"lots\" is not a quantity",
            ),
            (
                "node: {containers: {csi-driver: {resources: {request: {}}}}}",
                "node.containers.csi-driver.resources.request: unknown key",
            ),
            (
                "node: {containers: {csi-driver: {extraArgs: \"--v=4\"}}}",
                "node.containers.csi-driver.extraArgs: expected a list of strings, got a string",
            ),
            (
                "node: {containers: {csi-driver: {extraArgs: [v=4]}}}",
                "node.containers.csi-driver.extraArgs[0]: \"v=4\" is not a flag",
            ),
            (
                "imagePullSecrets: [my-registry]",
                "imagePullSecrets[0]: expected a mapping, got a string",
            ),
            (
                "imagePullSecrets: {name: x}",
                "imagePullSecrets: expected a list like [{name: my-registry}]",
            ),
            (
                "serviceMonitor: {enabled: \"false\"}",
                "serviceMonitor.enabled: expected true or false, got a string",
            ),
            ("podMonitor: {enabled: true}", "podMonitor: unknown key"),
            (
                "storageClasses: [{parameters: {}}]",
                "storageClasses[0]: every StorageClass needs a name",
            ),
            (
                "storageClasses: [{name: Fast}]",
                "storageClasses[0].name: \"Fast\" is not a valid object name",
            ),
            (
                "storageClasses: [{name: a, parameters: {replicas: 3}}]",
                "storageClasses[0].parameters.replicas: expected a string, got a number; quote it (\"3\")",
            ),
            (
                "storageClasses: [{name: a, reclaimPolicy: Recycle}]",
                "storageClasses[0].reclaimPolicy: \"Recycle\" is not Delete or Retain",
            ),
            (
                "storageClasses: [{name: a}, {name: a}]",
                "storageClasses[1].name: \"a\" is listed twice",
            ),
            (
                "storageClasses: [{name: a, isDefault: true}, {name: b, isDefault: true}]",
                "more than one class has isDefault",
            ),
            ("- a\n- b", "the document: expected a mapping, got a list"),
            ("controller: [", "not valid YAML"),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_container_can_be_named_with_its_daemonset() {
        let nfs = obj(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nfs"},
            "spec": {"template": {"spec": {"containers": [{"name": "csi-driver", "args": ["--nfs"]}]}}}
        }));
        let s = parse(
            "node: {containers: {node/csi-driver: {extraArgs: [--only-node]}, csi-driver: {extraArgs: [--both]}}}",
        )
        .expect("parses");
        s.check_containers(&controller(), &[&node(), &nfs])
            .expect("known");
        let (mut n, mut f) = (node(), nfs.clone());
        s.apply_node(&mut n);
        s.apply_node(&mut f);
        assert_eq!(
            n.data["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["--endpoint=$(CSI_ENDPOINT)", "--only-node"])
        );
        assert_eq!(
            f.data["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["--nfs", "--both"])
        );
        let bad = parse("node: {containers: {nfs/registrar: {extraArgs: [--x]}}}").expect("parses");
        let e = bad
            .check_containers(&controller(), &[&node(), &nfs])
            .expect_err("not in nfs");
        assert!(
            e.0.contains("node.containers.nfs/registrar: no node DaemonSet/container of that name; they are nfs/csi-driver, node/csi-driver, node/registrar, node/wait"),
            "{e}"
        );
    }

    #[test]
    fn containers_must_exist() {
        let s =
            parse("controller: {containers: {csi-attacher: {extraArgs: [--x]}}}").expect("parses");
        let e = s
            .check_containers(&controller(), &[&node()])
            .expect_err("no attacher");
        assert!(
            e.0.contains("controller.containers.csi-attacher: the controller has no container of that name; its containers are csi-driver, csi-provisioner"),
            "{e}"
        );
        let s = parse("node: {containers: {csi-provisioner: {extraArgs: [--x]}}}").expect("parses");
        let e = s
            .check_containers(&controller(), &[&node()])
            .expect_err("not on nodes");
        assert!(
            e.0.contains("node.containers.csi-provisioner: no node DaemonSet"),
            "{e}"
        );
    }

    #[test]
    fn the_service_monitor_gets_the_labels_and_on_kubernetes_the_serving_cert_ca() {
        let s = parse("serviceMonitor: {labels: {release: kube-prometheus-stack}}").expect("valid");
        let monitor = || {
            obj(json!({
                "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                "metadata": {"name": "m", "namespace": "drivers"},
                "spec": {"endpoints": [
                    {"port": "a-m", "scheme": "https", "tlsConfig": {
                        "caFile": "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
                        "serverName": "svc.drivers.svc"}},
                    {"port": "other", "tlsConfig": {"caFile": "/x", "serverName": "elsewhere.drivers.svc"}}
                ]}
            }))
        };
        let requests = [crate::metrics_cert::Request {
            namespace: "drivers".into(),
            service: "svc".into(),
            secret: "svc-cert".into(),
        }];
        let mut openshift = monitor();
        service_monitor(
            &mut openshift,
            &s.service_monitor_labels,
            false,
            &requests,
            |_, _| false,
        );
        assert_eq!(
            openshift.metadata.labels.as_ref().expect("labels")["release"],
            "kube-prometheus-stack"
        );
        assert_eq!(
            openshift.data["spec"],
            monitor().data["spec"],
            "OpenShift keeps service-ca"
        );
        for (has_ca, key) in [(false, "tls.crt"), (true, "ca.crt")] {
            let mut m = monitor();
            service_monitor(&mut m, &BTreeMap::new(), true, &requests, |ns, name| {
                assert_eq!((ns, name), ("drivers", "svc-cert"));
                has_ca
            });
            assert!(m.metadata.labels.is_none());
            assert_eq!(
                m.data["spec"]["endpoints"][0]["tlsConfig"],
                json!({"ca": {"secret": {"name": "svc-cert", "key": key}}, "serverName": "svc.drivers.svc"})
            );
            assert_eq!(
                m.data["spec"]["endpoints"][1],
                monitor().data["spec"]["endpoints"][1]
            );
        }
        for (text, want) in [
            (
                "serviceMonitor: {labels: [release]}",
                "serviceMonitor.labels: expected a mapping",
            ),
            (
                "serviceMonitor: {labels: {release: \"a b\"}}",
                "serviceMonitor.labels.release: \"a b\" is not a valid label value",
            ),
            (
                "serviceMonitor: {labels: {\"-x\": y}}",
                "serviceMonitor.labels.-x: not a valid label key",
            ),
            (
                "serviceMonitor: {labels: {release: 1}}",
                "serviceMonitor.labels.release: expected a string",
            ),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn quantities() {
        for good in [
            "1", "100m", "0.5", ".5", "1Gi", "128Mi", "2e3", "1E-2", "+1", "10k",
        ] {
            assert!(is_quantity(good), "{good}");
        }
        for bad in ["", "m", "1.2.3", "1gi", "1 Gi", "lots", "1e", "1Kb", "."] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn kubelet_paths_move_only_where_they_are_the_kubelets() {
        let d = "/k";
        assert_eq!(moved_kubelet_path("/var/lib/kubelet", d), "/k");
        assert_eq!(moved_kubelet_path("/var/lib/kubelet/pods", d), "/k/pods");
        assert_eq!(
            moved_kubelet_path("unix:///var/lib/kubelet/x.sock", d),
            "unix:///k/x.sock"
        );
        assert_eq!(
            moved_kubelet_path("/opt/var/lib/kubelet", d),
            "/opt/var/lib/kubelet"
        );
        assert_eq!(
            moved_kubelet_path("/var/lib/kubelets", d),
            "/var/lib/kubelets"
        );
        assert_eq!(
            moved_kubelet_path("a /var/lib/kubelet/x; b /var/lib/kubelet", d),
            "a /k/x; b /k"
        );
    }
}
