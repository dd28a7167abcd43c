//! Server-side defaulting of built-in kinds, as a real kube-apiserver v1.33 applies it on write.
//!
//! A real server decodes every write into its Go types, runs the scheme's `SetDefaults_*`
//! functions (and the generated defaulters' `+default` markers), runs mutating admission and the
//! registry strategy's `PrepareForCreate`, and serialises the typed object back. Each step adds
//! fields the client never sent: `replicas: 1`, `imagePullPolicy`, `terminationMessagePath`,
//! `status: {}`, a Secret's `stringData` folded into `data`, `1024Mi` rewritten as `1Gi`. An
//! operator that compares its desired object with the live one field by field sees those
//! differences and writes forever; kube-sim must show that, so this module reproduces them.
//!
//! Entry points, in the order a server runs them:
//! - [`apply_defaults`] on every write (create, update, patch result): scheme defaults,
//!   conversion artefacts and the always-serialised zero fields. Idempotent.
//! - [`prepare_for_create`] after it on create only: admission and `PrepareForCreate` mutations
//!   (Namespace `kubernetes` finalizer, Pod service account / tolerations / priority, Service IP
//!   families), which must not be re-applied on update.
//! - [`allocate_cluster_ip`] on Service create, after `prepare_for_create`.
//! - [`prepare_for_update`] after `apply_defaults` on update only: values a server carries over
//!   from the stored object (a Service's cluster IPs and node ports, a Namespace's finalizers).
//!
//! This module must not validate: a field of the wrong JSON type is left exactly as it is, so that
//! validation can report it, and nothing here may panic on any input. It does no I/O and knows
//! nothing of storage, generations or resource versions (the caller decides those).

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// Fills in the server-side defaults for a built-in kind, in place. Unknown kinds: no-op.
///
/// `group` is the API group (`""` for the core group), `kind` the object's kind. Safe to run on
/// every write: applying it twice gives the same object as applying it once.
pub fn apply_defaults(group: &str, kind: &str, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("apps", "Deployment") => deployment(root),
        ("apps", "DaemonSet") => daemon_set(root),
        ("apps", "StatefulSet") => stateful_set(root),
        ("apps", "ReplicaSet") => replica_set(root),
        ("", "Pod") => pod(root),
        ("", "PodTemplate") => pod_template(root, "template"),
        ("", "Service") => service(root),
        ("", "Namespace") => namespace(root),
        ("", "Secret") => secret(root),
        ("", "Node") => node(root),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(root),
        ("", "PersistentVolume") => persistent_volume(root),
        ("", "Endpoints") => endpoints(root),
        ("storage.k8s.io", "StorageClass") => storage_class(root),
        ("storage.k8s.io", "CSIDriver") => csi_driver(root),
        ("policy", "PodDisruptionBudget") => pod_disruption_budget(root),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(root),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(root),
        ("coordination.k8s.io", "Lease") => lease(root),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(root),
        ("scheduling.k8s.io", "PriorityClass") => {
            set_str_if_empty(root, "preemptionPolicy", "PreemptLowerPriority");
        }
        // ConfigMap (`data` defaults to an empty map, which serialises as nothing), ServiceAccount,
        // Role, ClusterRole and Event have no visible server-side defaults.
        _ => {}
    }
}

/// Create-only mutations of admission plugins and registry strategies. Call after
/// [`apply_defaults`] on create, never on update. Unknown kinds: no-op.
///
/// - Namespace: `status` reset to `{phase: Active}`, `kubernetes` appended to `spec.finalizers`
///   (the namespace controller removes it later, so re-adding it on update would be wrong).
/// - Pod: `status` reset to `{phase: Pending, qosClass}`; the ServiceAccount admission plugin's
///   `serviceAccountName: default`, DefaultTolerationSeconds' two 300 s tolerations, Priority
///   admission's `priority` and `preemptionPolicy`.
/// - Service: `ipFamilyPolicy` and `ipFamilies` as the REST storage initialises them on a
///   single-stack IPv4 cluster, and `clusterIPs` from a client-set `clusterIP`.
pub fn prepare_for_create(group: &str, kind: &str, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("", "Namespace") => {
            root.insert("status".into(), json!({"phase": "Active"}));
            if let Some(spec) = ensure_obj(root, "spec") {
                match spec.get_mut("finalizers") {
                    None | Some(Value::Null) => {
                        spec.insert("finalizers".into(), json!(["kubernetes"]));
                    }
                    Some(Value::Array(list)) => {
                        if !list.iter().any(|f| f == "kubernetes") {
                            list.push(json!("kubernetes"));
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        ("", "Pod") => pod_admission(root),
        ("", "Service") => service_ip_families(root),
        _ => {}
    }
}

/// Values a server keeps from the stored object on update. Call after [`apply_defaults`] on the
/// new object, before validation. Unknown kinds: no-op.
///
/// - Service (REST `patchAllocatedValues` + `normalizeClusterIPs`): a PUT that omits the
///   allocated `clusterIP`/`clusterIPs`, `nodePort`s or `healthCheckNodePort` gets the old ones, and
///   so do an omitted `ipFamilyPolicy`/`ipFamilies`; a changed `clusterIP` with unchanged
///   `clusterIPs` rewrites `clusterIPs[0]` (validation then rejects the change).
/// - Namespace: `spec.finalizers` only change through the `finalize` subresource.
pub fn prepare_for_update(group: &str, kind: &str, old: &Value, new: &mut Value) {
    let (Some(old_root), Some(new_root)) = (old.as_object(), new.as_object_mut()) else {
        return;
    };
    match (group, kind) {
        ("", "Service") => service_carry_over(old_root, new_root),
        ("", "Namespace") => {
            let old_finalizers = old_root
                .get("spec")
                .and_then(|s| s.get("finalizers"))
                .cloned();
            if let Some(spec) = ensure_obj(new_root, "spec") {
                match old_finalizers {
                    Some(f) => {
                        spec.insert("finalizers".into(), f);
                    }
                    None => {
                        spec.remove("finalizers");
                    }
                }
            }
        }
        _ => {}
    }
}

/// Gives a Service its cluster IP from the caller's counter: `next` 1 is 10.96.0.1 (the address
/// of the `kubernetes` Service on a default cluster), 2 is 10.96.0.2, and so on through the
/// default 10.96.0.0/12 range, wrapping around inside it.
///
/// Does nothing for `ExternalName` Services, headless ones (`clusterIP: None`) and ones whose
/// client chose an address; in those cases only `clusterIP` and `clusterIPs` are brought in line.
/// Returns whether the counter was used, so the caller knows to advance it.
pub fn allocate_cluster_ip(obj: &mut Value, next: u32) -> bool {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return false;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return false;
    }
    let single = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first_plural = match spec.get("clusterIPs") {
        Some(Value::Array(ips)) => ips.first().and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    match (single.is_empty(), first_plural) {
        (false, None) => {
            if matches!(
                spec.get("clusterIPs"),
                None | Some(Value::Null) | Some(Value::Array(_))
            ) {
                spec.insert("clusterIPs".into(), json!([single]));
            }
            false
        }
        (true, Some(first)) => {
            spec.insert("clusterIP".into(), json!(first));
            false
        }
        (false, Some(_)) => false,
        (true, None) => {
            // Host part 1..=2^20-2 of 10.96.0.0/12: never the network or broadcast address.
            const HOSTS: u32 = (1 << 20) - 2;
            let offset = next.wrapping_sub(1) % HOSTS + 1;
            let addr = 0x0A60_0000_u32 + offset;
            let ip = format!(
                "{}.{}.{}.{}",
                addr >> 24,
                (addr >> 16) & 0xff,
                (addr >> 8) & 0xff,
                addr & 0xff
            );
            spec.insert("clusterIP".into(), json!(ip));
            spec.insert("clusterIPs".into(), json!([ip]));
            true
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers over JSON maps. "Unset" follows Go: a nil pointer is an absent or null field; a
// zero-valued string or number field is also unset when the Go field is not a pointer.
// ---------------------------------------------------------------------------------------------

fn is_absent(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// Sets `key` when absent or null (a Go pointer field that is nil).
fn set_if_unset(m: &mut Map<String, Value>, key: &str, value: Value) {
    if is_absent(m.get(key)) {
        m.insert(key.to_string(), value);
    }
}

/// Sets a Go string field when absent, null or "".
fn set_str_if_empty(m: &mut Map<String, Value>, key: &str, value: &str) {
    let empty = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if empty {
        m.insert(key.to_string(), json!(value));
    }
}

/// Sets a Go integer field when absent, null or 0.
fn set_int_if_zero(m: &mut Map<String, Value>, key: &str, value: i64) {
    let zero = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    };
    if zero {
        m.insert(key.to_string(), json!(value));
    }
}

/// The child object at `key`, created when absent or null. `None` when it has another type.
fn ensure_obj<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let entry = m.entry(key.to_string()).or_insert(Value::Null);
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// The child object at `key` when present.
fn obj_at<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// Runs `f` on every object element of the list at `key`; other elements are left alone.
fn for_each_obj(m: &mut Map<String, Value>, key: &str, mut f: impl FnMut(&mut Map<String, Value>)) {
    if let Some(Value::Array(items)) = m.get_mut(key) {
        for item in items.iter_mut() {
            if let Some(o) = item.as_object_mut() {
                f(o);
            }
        }
    }
}

fn str_at<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Non-omitempty Go status fields serialise even when zero.
fn zero_fields(m: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        set_if_unset(m, k, json!(0));
    }
}

// ---------------------------------------------------------------------------------------------
// apps
// ---------------------------------------------------------------------------------------------

fn deployment(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_if_unset(spec, "replicas", json!(1));
        if let Some(strategy) = ensure_obj(spec, "strategy") {
            set_str_if_empty(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
            {
                set_if_unset(ru, "maxUnavailable", json!("25%"));
                set_if_unset(ru, "maxSurge", json!("25%"));
            }
        }
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        set_if_unset(spec, "progressDeadlineSeconds", json!(600));
        pod_template(spec, "template");
    }
    ensure_obj(root, "status");
}

fn daemon_set(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
            set_str_if_empty(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
            {
                set_if_unset(ru, "maxUnavailable", json!(1));
                set_if_unset(ru, "maxSurge", json!(0));
            }
        }
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        pod_template(spec, "template");
    }
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(
            status,
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
            ],
        );
    }
}

fn stateful_set(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_str_if_empty(spec, "podManagementPolicy", "OrderedReady");
        if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
            // Only an unset type brings an empty rollingUpdate; an explicit RollingUpdate without
            // one stays without one (SetDefaults_StatefulSet).
            let unset = matches!(strategy.get("type"), None | Some(Value::Null))
                || strategy.get("type").and_then(Value::as_str) == Some("");
            if unset {
                strategy.insert("type".into(), json!("RollingUpdate"));
                set_if_unset(strategy, "rollingUpdate", json!({}));
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = obj_at(strategy, "rollingUpdate")
            {
                set_if_unset(ru, "partition", json!(0));
            }
        }
        if let Some(policy) = ensure_obj(spec, "persistentVolumeClaimRetentionPolicy") {
            set_str_if_empty(policy, "whenDeleted", "Retain");
            set_str_if_empty(policy, "whenScaled", "Retain");
        }
        set_if_unset(spec, "replicas", json!(1));
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        pod_template(spec, "template");
        for_each_obj(spec, "volumeClaimTemplates", |pvc| {
            // Embedded PersistentVolumeClaims serialise with their TypeMeta and a zero status.
            set_str_if_empty(pvc, "apiVersion", "v1");
            set_str_if_empty(pvc, "kind", "PersistentVolumeClaim");
            if let Some(meta) = ensure_obj(pvc, "metadata") {
                set_if_unset_null(meta, "creationTimestamp");
            }
            persistent_volume_claim(pvc);
        });
    }
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(status, &["replicas", "availableReplicas"]);
    }
}

fn replica_set(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_if_unset(spec, "replicas", json!(1));
        pod_template(spec, "template");
    }
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(status, &["replicas"]);
    }
}

/// `metadata.creationTimestamp` of an embedded ObjectMeta serialises as `null` in v1.33.
fn set_if_unset_null(m: &mut Map<String, Value>, key: &str) {
    if !m.contains_key(key) {
        m.insert(key.to_string(), Value::Null);
    }
}

// ---------------------------------------------------------------------------------------------
// Pods and pod templates
// ---------------------------------------------------------------------------------------------

/// A PodTemplateSpec at `parent[key]`, created when absent (the Go field is a struct).
fn pod_template(parent: &mut Map<String, Value>, key: &str) {
    let Some(template) = ensure_obj(parent, key) else {
        return;
    };
    if let Some(meta) = ensure_obj(template, "metadata") {
        set_if_unset_null(meta, "creationTimestamp");
    }
    if let Some(spec) = ensure_obj(template, "spec") {
        pod_spec(spec);
    }
}

fn pod(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        pod_spec(spec);
        // SetDefaults_Pod: only Pods, not templates.
        for list in ["containers", "initContainers"] {
            for_each_obj(spec, list, requests_from_limits);
        }
        set_if_unset(spec, "enableServiceLinks", json!(true));
        if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
            for list in ["containers", "initContainers"] {
                for_each_obj(spec, list, |c| {
                    for_each_obj(c, "ports", |p| {
                        let unset = match p.get("hostPort") {
                            None | Some(Value::Null) => true,
                            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
                            Some(_) => false,
                        };
                        if unset && let Some(cp) = p.get("containerPort").cloned() {
                            p.insert("hostPort".into(), cp);
                        }
                    });
                });
            }
        }
    }
    let qos = root.get("spec").map(pod_qos_class);
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Pending");
        if let Some(qos) = qos {
            set_str_if_empty(status, "qosClass", qos);
        }
    }
}

fn pod_admission(root: &mut Map<String, Value>) {
    let qos = root.get("spec").map(pod_qos_class).unwrap_or("BestEffort");
    root.insert(
        "status".into(),
        json!({"phase": "Pending", "qosClass": qos}),
    );
    let Some(spec) = ensure_obj(root, "spec") else {
        return;
    };
    // ServiceAccount admission; the v1 alias `serviceAccount` mirrors it on output. The projected
    // `kube-api-access-<random>` volume it also adds is not reproduced (its name is random).
    set_str_if_empty(spec, "serviceAccountName", "default");
    if let Some(name) = spec.get("serviceAccountName").cloned() {
        spec.insert("serviceAccount".into(), name);
    }
    // DefaultTolerationSeconds admission.
    let tolerations = spec.entry("tolerations").or_insert(Value::Null);
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    if let Value::Array(list) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = list.iter().any(|t| {
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                let tkey = t.get("key").and_then(Value::as_str).unwrap_or("");
                let op = t.get("operator").and_then(Value::as_str).unwrap_or("");
                (effect.is_empty() || effect == "NoExecute")
                    && (tkey == key || (tkey.is_empty() && op == "Exists"))
            });
            if !tolerated {
                list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
    // Priority admission: no global default PriorityClass exists on a fresh cluster.
    let class = str_at(spec, "priorityClassName").to_string();
    let priority = match class.as_str() {
        "" => Some(0),
        "system-cluster-critical" => Some(2_000_000_000),
        "system-node-critical" => Some(2_000_001_000),
        _ => None,
    };
    if let Some(p) = priority {
        set_if_unset(spec, "priority", json!(p));
        set_str_if_empty(spec, "preemptionPolicy", "PreemptLowerPriority");
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    set_str_if_empty(spec, "dnsPolicy", "ClusterFirst");
    set_str_if_empty(spec, "restartPolicy", "Always");
    set_if_unset(spec, "securityContext", json!({}));
    set_if_unset(spec, "terminationGracePeriodSeconds", json!(30));
    set_str_if_empty(spec, "schedulerName", "default-scheduler");
    // v1 conversion: `serviceAccount` is a deprecated alias of `serviceAccountName`; the new
    // field wins on input and the alias is written back on output.
    if str_at(spec, "serviceAccountName").is_empty()
        && let Some(Value::String(alias)) = spec.get("serviceAccount").cloned()
        && !alias.is_empty()
    {
        spec.insert("serviceAccountName".into(), json!(alias));
    }
    if let Some(Value::String(name)) = spec.get("serviceAccountName").cloned()
        && !name.is_empty()
    {
        spec.insert("serviceAccount".into(), json!(name));
    }
    for_each_obj(spec, "volumes", volume);
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for_each_obj(spec, list, container);
    }
    if let Some(overhead) = obj_at(spec, "overhead") {
        canonicalize_quantities(overhead);
    }
}

/// The volume source fields of a Pod volume (exactly one may be set).
pub(crate) const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn volume(v: &mut Map<String, Value>) {
    if VOLUME_SOURCES.iter().all(|k| is_absent(v.get(*k))) {
        v.insert("emptyDir".into(), json!({}));
    }
    if let Some(src) = obj_at(v, "hostPath") {
        set_if_unset(src, "type", json!(""));
    }
    if let Some(src) = obj_at(v, "emptyDir")
        && let Some(limit) = src.get_mut("sizeLimit")
    {
        canonicalize_quantity(limit);
    }
    for key in ["secret", "configMap"] {
        if let Some(src) = obj_at(v, key) {
            set_if_unset(src, "defaultMode", json!(420));
        }
    }
    if let Some(src) = obj_at(v, "downwardAPI") {
        set_if_unset(src, "defaultMode", json!(420));
        for_each_obj(src, "items", downward_api_item);
    }
    if let Some(src) = obj_at(v, "projected") {
        set_if_unset(src, "defaultMode", json!(420));
        for_each_obj(src, "sources", |s| {
            if let Some(d) = obj_at(s, "downwardAPI") {
                for_each_obj(d, "items", downward_api_item);
            }
            if let Some(t) = obj_at(s, "serviceAccountToken") {
                set_if_unset(t, "expirationSeconds", json!(3600));
            }
        });
    }
    if let Some(src) = obj_at(v, "iscsi") {
        set_str_if_empty(src, "iscsiInterface", "default");
    }
    if let Some(src) = obj_at(v, "rbd") {
        set_str_if_empty(src, "pool", "rbd");
        set_str_if_empty(src, "user", "admin");
        set_str_if_empty(src, "keyring", "/etc/ceph/keyring");
    }
    if let Some(src) = obj_at(v, "azureDisk") {
        set_if_unset(src, "cachingMode", json!("ReadWrite"));
        set_if_unset(src, "kind", json!("Shared"));
        set_if_unset(src, "fsType", json!("ext4"));
        set_if_unset(src, "readOnly", json!(false));
    }
    if let Some(src) = obj_at(v, "scaleIO") {
        set_str_if_empty(src, "storageMode", "ThinProvisioned");
        set_str_if_empty(src, "fsType", "xfs");
    }
    if let Some(src) = obj_at(v, "ephemeral")
        && let Some(tmpl) = obj_at(src, "volumeClaimTemplate")
    {
        if let Some(meta) = ensure_obj(tmpl, "metadata") {
            set_if_unset_null(meta, "creationTimestamp");
        }
        if let Some(spec) = ensure_obj(tmpl, "spec") {
            pvc_spec(spec);
        }
    }
}

fn downward_api_item(item: &mut Map<String, Value>) {
    if let Some(f) = obj_at(item, "fieldRef") {
        set_str_if_empty(f, "apiVersion", "v1");
    }
}

fn container(c: &mut Map<String, Value>) {
    let pull_unset = match c.get("imagePullPolicy") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if pull_unset {
        let image = str_at(c, "image");
        let policy = if image_tag(image).as_deref() == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    set_str_if_empty(c, "terminationMessagePath", "/dev/termination-log");
    set_str_if_empty(c, "terminationMessagePolicy", "File");
    for_each_obj(c, "ports", |p| set_str_if_empty(p, "protocol", "TCP"));
    for_each_obj(c, "env", |e| {
        if let Some(from) = obj_at(e, "valueFrom")
            && let Some(f) = obj_at(from, "fieldRef")
        {
            set_str_if_empty(f, "apiVersion", "v1");
        }
    });
    // ResourceRequirements is a struct in Go: it always serialises, at least as `{}`.
    if let Some(res) = ensure_obj(c, "resources") {
        for key in ["limits", "requests"] {
            if let Some(list) = obj_at(res, key) {
                canonicalize_quantities(list);
            }
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = obj_at(c, key) {
            set_int_if_zero(p, "timeoutSeconds", 1);
            set_int_if_zero(p, "periodSeconds", 10);
            set_int_if_zero(p, "successThreshold", 1);
            set_int_if_zero(p, "failureThreshold", 3);
            if let Some(h) = obj_at(p, "httpGet") {
                http_get(h);
            }
            if let Some(g) = obj_at(p, "grpc") {
                set_if_unset(g, "service", json!(""));
            }
        }
    }
    if let Some(lc) = obj_at(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(h) = obj_at(lc, key).and_then(|h| obj_at(h, "httpGet")) {
                http_get(h);
            }
        }
    }
}

fn http_get(h: &mut Map<String, Value>) {
    set_str_if_empty(h, "path", "/");
    set_str_if_empty(h, "scheme", "HTTP");
}

/// The tag `parsers.ParseImageName` finds: `latest` when the reference has neither tag nor
/// digest, `None` when the reference does not parse (the server then assumes no tag).
fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name.get(last..).and_then(|s| s.rfind(':')) {
        Some(i) => (name.get(..last + i).unwrap_or(""), name.get(last + i + 1..)),
        None => (name, None),
    };
    if repo.is_empty() || repo.ends_with('/') {
        return None;
    }
    // Every path component after a registry host must be lowercase.
    let mut parts = repo.split('/');
    let first = parts.next().unwrap_or("");
    let host_like =
        repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let path_ok = |p: &str| {
        !p.is_empty()
            && p.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
    };
    if !host_like && !path_ok(first) {
        return None;
    }
    if !parts.all(path_ok) {
        return None;
    }
    match tag {
        Some(t) if !t.is_empty() && t.len() <= 128 => Some(t.to_string()),
        Some(_) => None,
        None if digest.is_some() => Some(String::new()),
        None => Some("latest".to_string()),
    }
}

/// SetDefaults_Pod: a resource with a limit and no request gets the limit as its request.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(res) = obj_at(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = ensure_obj(res, "requests") {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

/// `qos.GetPodQOS` over the (already defaulted) containers and init containers.
fn pod_qos_class(spec: &Value) -> &'static str {
    let mut requests: std::collections::BTreeMap<String, i128> = Default::default();
    let mut limits: std::collections::BTreeMap<String, i128> = Default::default();
    let mut guaranteed = true;
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(items)) = spec.get(list) else {
            continue;
        };
        for c in items {
            let res = c.get("resources");
            let mut found_limits = Vec::new();
            for (kind, acc) in [("requests", &mut requests), ("limits", &mut limits)] {
                let Some(Value::Object(list)) = res.and_then(|r| r.get(kind)) else {
                    continue;
                };
                for (name, q) in list {
                    if name != "cpu" && name != "memory" {
                        continue;
                    }
                    let Some(q) = quantity_value(q) else {
                        continue;
                    };
                    if q.milli > 0 {
                        *acc.entry(name.clone()).or_insert(0) += q.milli;
                        if kind == "limits" {
                            found_limits.push(name.clone());
                        }
                    }
                }
            }
            if !(found_limits.iter().any(|n| n == "cpu")
                && found_limits.iter().any(|n| n == "memory"))
            {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}

// ---------------------------------------------------------------------------------------------
// Resource quantities: the server re-serialises every Quantity in canonical form, and
// SetDefaults_ResourceList rounds resource lists up to milli precision first.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum QuantityFormat {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Quantity {
    /// The value in thousandths, rounded away from zero.
    milli: i128,
    format: QuantityFormat,
}

/// A resource quantity (`"500m"`, `"1Gi"`, `2`) in thousandths, rounded away from zero as
/// `SetDefaults_ResourceList` does; `None` when it does not parse. For validation's comparisons.
pub(crate) fn quantity_milli(v: &Value) -> Option<i128> {
    quantity_value(v).map(|q| q.milli)
}

fn quantity_value(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => parse_quantity(&n.to_string()),
        _ => None,
    }
}

fn parse_quantity(s: &str) -> Option<Quantity> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let number_start = i;
    while bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_digit() || *b == b'.')
    {
        i += 1;
    }
    let number = s.get(number_start..i)?;
    let suffix = s.get(i..)?;
    if number.is_empty()
        || number.matches('.').count() > 1
        || !number.bytes().any(|b| b.is_ascii_digit())
    {
        return None;
    }
    let (exp10, exp2, format) = match suffix {
        "" => (0, 0, QuantityFormat::DecimalSi),
        "n" => (-9, 0, QuantityFormat::DecimalSi),
        "u" => (-6, 0, QuantityFormat::DecimalSi),
        "m" => (-3, 0, QuantityFormat::DecimalSi),
        "k" => (3, 0, QuantityFormat::DecimalSi),
        "M" => (6, 0, QuantityFormat::DecimalSi),
        "G" => (9, 0, QuantityFormat::DecimalSi),
        "T" => (12, 0, QuantityFormat::DecimalSi),
        "P" => (15, 0, QuantityFormat::DecimalSi),
        "E" => (18, 0, QuantityFormat::DecimalSi),
        "Ki" => (0, 10, QuantityFormat::BinarySi),
        "Mi" => (0, 20, QuantityFormat::BinarySi),
        "Gi" => (0, 30, QuantityFormat::BinarySi),
        "Ti" => (0, 40, QuantityFormat::BinarySi),
        "Pi" => (0, 50, QuantityFormat::BinarySi),
        "Ei" => (0, 60, QuantityFormat::BinarySi),
        other => {
            let rest = other
                .strip_prefix('e')
                .or_else(|| other.strip_prefix('E'))?;
            let digits = rest
                .strip_prefix('+')
                .or_else(|| rest.strip_prefix('-'))
                .unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (
                rest.parse::<i32>().ok()?,
                0,
                QuantityFormat::DecimalExponent,
            )
        }
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let frac_len = i32::try_from(frac_part.len()).ok()?;
    // value = mantissa * 10^(exp10 - frac_len) * 2^exp2, in thousandths.
    let scale = exp10.checked_sub(frac_len)?.checked_add(3)?;
    let mut numerator = mantissa.checked_mul(1_i128.checked_shl(exp2)?)?;
    let mut denominator: i128 = 1;
    if scale >= 0 {
        numerator = numerator.checked_mul(10_i128.checked_pow(u32::try_from(scale).ok()?)?)?;
    } else {
        match 10_i128.checked_pow(scale.unsigned_abs()) {
            Some(d) => denominator = d,
            // Anything non-zero this small rounds up to one thousandth.
            None => {
                return Some(Quantity {
                    milli: if negative { -1 } else { 1 },
                    format,
                });
            }
        }
    }
    let mut milli = numerator / denominator;
    if numerator % denominator != 0 {
        milli += 1;
    }
    Some(Quantity {
        milli: if negative { -milli } else { milli },
        format,
    })
}

fn format_quantity(q: Quantity) -> String {
    if q.milli == 0 {
        return "0".into();
    }
    let sign = if q.milli < 0 { "-" } else { "" };
    let abs = q.milli.unsigned_abs();
    let mut format = q.format;
    // Small or fractional binary values print as decimal rather than lose precision.
    if format == QuantityFormat::BinarySi && (abs < 1024 * 1000 || !abs.is_multiple_of(1000)) {
        format = QuantityFormat::DecimalSi;
    }
    if format == QuantityFormat::BinarySi {
        let mut v = abs / 1000;
        let mut exp = 0;
        while v.is_multiple_of(1024) && exp < 6 {
            v /= 1024;
            exp += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(exp)
            .copied()
            .unwrap_or("");
        return format!("{sign}{v}{suffix}");
    }
    let mut mantissa = abs;
    let mut exp: i32 = -3;
    while mantissa.is_multiple_of(10) {
        mantissa /= 10;
        exp += 1;
    }
    match exp.rem_euclid(3) {
        1 => {
            mantissa *= 10;
            exp -= 1;
        }
        2 => {
            mantissa *= 100;
            exp -= 2;
        }
        _ => {}
    }
    let suffix = match (format, exp) {
        (QuantityFormat::DecimalExponent, 0) => String::new(),
        (QuantityFormat::DecimalExponent, e) => format!("e{e}"),
        (_, -3) => "m".into(),
        (_, 0) => String::new(),
        (_, 3) => "k".into(),
        (_, 6) => "M".into(),
        (_, 9) => "G".into(),
        (_, 12) => "T".into(),
        (_, 15) => "P".into(),
        (_, 18) => "E".into(),
        (_, e) => format!("e{e}"),
    };
    format!("{sign}{mantissa}{suffix}")
}

/// Rewrites one quantity in canonical form; an unparsable value is left for validation.
fn canonicalize_quantity(v: &mut Value) {
    if let Some(q) = quantity_value(v) {
        *v = Value::String(format_quantity(q));
    }
}

fn canonicalize_quantities(list: &mut Map<String, Value>) {
    for v in list.values_mut() {
        canonicalize_quantity(v);
    }
}

// ---------------------------------------------------------------------------------------------
// core
// ---------------------------------------------------------------------------------------------

fn service(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_str_if_empty(spec, "sessionAffinity", "None");
        match spec.get("sessionAffinity").and_then(Value::as_str) {
            Some("None") => {
                spec.remove("sessionAffinityConfig");
            }
            Some("ClientIP") => {
                let has_timeout = spec
                    .get("sessionAffinityConfig")
                    .and_then(|c| c.get("clientIP"))
                    .and_then(|c| c.get("timeoutSeconds"))
                    .is_some_and(|t| !t.is_null());
                if !has_timeout {
                    spec.insert(
                        "sessionAffinityConfig".into(),
                        json!({"clientIP": {"timeoutSeconds": 10800}}),
                    );
                }
            }
            _ => {}
        }
        set_str_if_empty(spec, "type", "ClusterIP");
        for_each_obj(spec, "ports", |p| {
            set_str_if_empty(p, "protocol", "TCP");
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Number(n)) => n.as_f64() == Some(0.0),
                Some(_) => false,
            };
            if unset && let Some(port) = p.get("port").filter(|v| v.is_number()).cloned() {
                p.insert("targetPort".into(), port);
            }
        });
        let service_type = str_at(spec, "type").to_string();
        let has_external_ips =
            matches!(spec.get("externalIPs"), Some(Value::Array(a)) if !a.is_empty());
        let externally_accessible = service_type == "LoadBalancer"
            || service_type == "NodePort"
            || (service_type == "ClusterIP" && has_external_ips);
        if externally_accessible {
            set_str_if_empty(spec, "externalTrafficPolicy", "Cluster");
        }
        if matches!(
            service_type.as_str(),
            "NodePort" | "LoadBalancer" | "ClusterIP"
        ) {
            set_if_unset(spec, "internalTrafficPolicy", json!("Cluster"));
        }
        if service_type == "LoadBalancer" {
            set_if_unset(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        ensure_obj(status, "loadBalancer");
    }
}

/// The REST storage's `initIPFamilyFields` and create-time `normalizeClusterIPs`, for a
/// single-stack IPv4 cluster.
fn service_ip_families(root: &mut Map<String, Value>) {
    let Some(spec) = obj_at(root, "spec") else {
        return;
    };
    if str_at(spec, "type") == "ExternalName" {
        return;
    }
    let cluster_ip = str_at(spec, "clusterIP").to_string();
    if !cluster_ip.is_empty() && is_absent(spec.get("clusterIPs")) {
        spec.insert("clusterIPs".into(), json!([cluster_ip]));
    }
    let has_selector = matches!(spec.get("selector"), Some(Value::Object(s)) if !s.is_empty());
    let headless = cluster_ip == "None";
    if is_absent(spec.get("ipFamilyPolicy")) {
        let policy = if headless && !has_selector {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
    let policy = str_at(spec, "ipFamilyPolicy").to_string();
    let ips: Vec<String> = match spec.get("clusterIPs") {
        Some(Value::Array(ips)) => ips
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    if is_absent(spec.get("ipFamilies")) {
        spec.insert("ipFamilies".into(), json!([]));
    }
    let Some(Value::Array(families)) = spec.get_mut("ipFamilies") else {
        return;
    };
    // Families follow client-chosen IPs; otherwise the cluster's (IPv4) default.
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        if i >= families.len() {
            families.push(json!(if ip.contains(':') { "IPv6" } else { "IPv4" }));
        }
    }
    if families.is_empty() {
        families.push(json!("IPv4"));
    }
    // Headless without selector may list both families even on a single-stack cluster.
    if headless && !has_selector && families.len() < 2 && policy != "SingleStack" {
        let other = if families.first().and_then(Value::as_str) == Some("IPv6") {
            "IPv4"
        } else {
            "IPv6"
        };
        families.push(json!(other));
    }
}

fn service_carry_over(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let Some(old_spec) = old.get("spec").and_then(Value::as_object) else {
        return;
    };
    let Some(spec) = obj_at(new, "spec") else {
        return;
    };
    let needs_ip = |s: &Map<String, Value>| str_at(s, "type") != "ExternalName";
    if needs_ip(old_spec) && needs_ip(spec) {
        if str_at(spec, "clusterIP").is_empty()
            && let Some(ip) = old_spec.get("clusterIP").filter(|v| v.is_string())
        {
            spec.insert("clusterIP".into(), ip.clone());
        }
        let plural_empty = match spec.get("clusterIPs") {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        if plural_empty && let Some(ips) = old_spec.get("clusterIPs").filter(|v| v.is_array()) {
            spec.insert("clusterIPs".into(), ips.clone());
        }
        for key in ["ipFamilyPolicy", "ipFamilies"] {
            let empty = match spec.get(key) {
                None | Some(Value::Null) => true,
                Some(Value::Array(a)) => a.is_empty(),
                Some(_) => false,
            };
            if empty && let Some(v) = old_spec.get(key) {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    // A changed singular with unchanged plural means the client meant the singular.
    let old_single = str_at(old_spec, "clusterIP");
    let new_single = str_at(spec, "clusterIP").to_string();
    if old_single != new_single && spec.get("clusterIPs") == old_spec.get("clusterIPs") {
        if new_single.is_empty() {
            spec.remove("clusterIPs");
        } else if let Some(Value::Array(ips)) = spec.get_mut("clusterIPs")
            && let Some(first) = ips.first_mut()
        {
            *first = json!(new_single);
        }
    }
    let needs_node_port =
        |s: &Map<String, Value>| matches!(str_at(s, "type"), "NodePort" | "LoadBalancer");
    if needs_node_port(old_spec) && needs_node_port(spec) {
        let old_ports: Vec<&Map<String, Value>> = match old_spec.get("ports") {
            Some(Value::Array(p)) => p.iter().filter_map(Value::as_object).collect(),
            _ => Vec::new(),
        };
        for_each_obj(spec, "ports", |p| {
            let unset = match p.get("nodePort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_f64() == Some(0.0),
                Some(_) => false,
            };
            if !unset {
                return;
            }
            let found = old_ports.iter().find(|o| {
                o.get("port") == p.get("port") && str_at(o, "protocol") == str_at(p, "protocol")
            });
            if let Some(np) = found.and_then(|o| o.get("nodePort")) {
                p.insert("nodePort".into(), np.clone());
            }
        });
        if is_absent(spec.get("healthCheckNodePort"))
            && let Some(hc) = old_spec.get("healthCheckNodePort")
        {
            spec.insert("healthCheckNodePort".into(), hc.clone());
        }
    }
}

fn namespace(root: &mut Map<String, Value>) {
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty()
        && let Some(meta) = ensure_obj(root, "metadata")
        && let Some(labels) = ensure_obj(meta, "labels")
    {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    ensure_obj(root, "spec");
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Active");
    }
}

fn secret(root: &mut Map<String, Value>) {
    set_str_if_empty(root, "type", "Opaque");
    // v1 conversion folds `stringData` into `data`, `stringData` winning, and drops it. Anything
    // of the wrong shape stays for validation to report.
    let foldable = match root.get("stringData") {
        Some(Value::Object(sd)) => {
            sd.values().all(Value::is_string)
                && matches!(
                    root.get("data"),
                    None | Some(Value::Null | Value::Object(_))
                )
        }
        Some(Value::Null) => {
            root.remove("stringData");
            false
        }
        _ => false,
    };
    if !foldable {
        return;
    }
    let Some(Value::Object(string_data)) = root.remove("stringData") else {
        return;
    };
    if let Some(data) = ensure_obj(root, "data") {
        for (k, v) in string_data {
            if let Value::String(s) = v {
                data.insert(
                    k,
                    json!(base64::engine::general_purpose::STANDARD.encode(s.as_bytes())),
                );
            }
        }
    }
}

fn node(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        let single = str_at(spec, "podCIDR").to_string();
        let plural_first = match spec.get("podCIDRs") {
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        match (single.is_empty(), plural_first) {
            (false, None) if is_absent(spec.get("podCIDRs")) => {
                spec.insert("podCIDRs".into(), json!([single]));
            }
            (true, Some(first)) => {
                spec.insert("podCIDR".into(), json!(first));
            }
            _ => {}
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        for key in ["capacity", "allocatable"] {
            if let Some(list) = obj_at(status, key) {
                canonicalize_quantities(list);
            }
        }
        if is_absent(status.get("allocatable"))
            && let Some(cap) = status.get("capacity").filter(|c| c.is_object()).cloned()
        {
            status.insert("allocatable".into(), cap);
        }
        if let Some(endpoints) = ensure_obj(status, "daemonEndpoints")
            && let Some(kubelet) = ensure_obj(endpoints, "kubeletEndpoint")
        {
            set_if_unset(kubelet, "Port", json!(0));
        }
        if let Some(info) = ensure_obj(status, "nodeInfo") {
            for key in [
                "machineID",
                "systemUUID",
                "bootID",
                "kernelVersion",
                "osImage",
                "containerRuntimeVersion",
                "kubeletVersion",
                "kubeProxyVersion",
                "operatingSystem",
                "architecture",
            ] {
                set_if_unset(info, key, json!(""));
            }
        }
    }
}

fn pvc_spec(spec: &mut Map<String, Value>) {
    set_if_unset(spec, "volumeMode", json!("Filesystem"));
    if let Some(res) = ensure_obj(spec, "resources") {
        for key in ["limits", "requests"] {
            if let Some(list) = obj_at(res, key) {
                canonicalize_quantities(list);
            }
        }
    }
}

fn persistent_volume_claim(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        pvc_spec(spec);
    }
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Pending");
    }
}

fn persistent_volume(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_str_if_empty(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_if_unset(spec, "volumeMode", json!("Filesystem"));
        if let Some(cap) = obj_at(spec, "capacity") {
            canonicalize_quantities(cap);
        }
        if let Some(src) = obj_at(spec, "hostPath") {
            set_if_unset(src, "type", json!(""));
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        set_str_if_empty(status, "phase", "Pending");
    }
}

fn endpoints(root: &mut Map<String, Value>) {
    for_each_obj(root, "subsets", |s| {
        for_each_obj(s, "ports", |p| set_str_if_empty(p, "protocol", "TCP"));
    });
}

// ---------------------------------------------------------------------------------------------
// Other groups
// ---------------------------------------------------------------------------------------------

fn storage_class(root: &mut Map<String, Value>) {
    set_if_unset(root, "reclaimPolicy", json!("Delete"));
    set_if_unset(root, "volumeBindingMode", json!("Immediate"));
}

fn csi_driver(root: &mut Map<String, Value>) {
    let Some(spec) = ensure_obj(root, "spec") else {
        return;
    };
    set_if_unset(spec, "attachRequired", json!(true));
    set_if_unset(spec, "podInfoOnMount", json!(false));
    set_if_unset(spec, "storageCapacity", json!(false));
    set_if_unset(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    let modes_empty = match spec.get("volumeLifecycleModes") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if modes_empty {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    set_if_unset(spec, "requiresRepublish", json!(false));
    // SELinuxMountReadWriteOncePod is beta and on by default in v1.33.
    set_if_unset(spec, "seLinuxMount", json!(false));
}

fn pod_disruption_budget(root: &mut Map<String, Value>) {
    ensure_obj(root, "spec");
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(
            status,
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
        );
    }
}

fn role_binding(root: &mut Map<String, Value>) {
    if let Some(role_ref) = ensure_obj(root, "roleRef") {
        set_str_if_empty(role_ref, "apiGroup", "rbac.authorization.k8s.io");
    }
    for_each_obj(root, "subjects", |s| {
        let group_unset = match s.get("apiGroup") {
            None | Some(Value::Null) => true,
            Some(Value::String(g)) => g.is_empty(),
            Some(_) => false,
        };
        if !group_unset {
            return;
        }
        match str_at(s, "kind") {
            "ServiceAccount" => {
                s.insert("apiGroup".into(), json!(""));
            }
            "User" | "Group" => {
                s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
            }
            _ => {}
        }
    });
}

fn network_policy(root: &mut Map<String, Value>) {
    let Some(spec) = ensure_obj(root, "spec") else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for_each_obj(spec, direction, |rule| {
            for_each_obj(rule, "ports", |p| set_if_unset(p, "protocol", json!("TCP")));
        });
    }
    let types_empty = match spec.get("policyTypes") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if types_empty {
        let has_egress = matches!(spec.get("egress"), Some(Value::Array(a)) if !a.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

fn lease(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        // CoordinatedLeaderElection is off by default in v1.33: the strategy drops its fields.
        spec.remove("strategy");
        spec.remove("preferredHolder");
    }
}

fn crd(root: &mut Map<String, Value>) {
    let mut storage_version = None;
    if let Some(spec) = ensure_obj(root, "spec") {
        if let Some(names) = obj_at(spec, "names") {
            let kind = str_at(names, "kind").to_string();
            set_str_if_empty(names, "singular", &kind.to_lowercase());
            if !kind.is_empty() {
                set_str_if_empty(names, "listKind", &format!("{kind}List"));
            }
        }
        set_if_unset(spec, "conversion", json!({"strategy": "None"}));
        if let Some(service) = obj_at(spec, "conversion")
            .and_then(|c| obj_at(c, "webhook"))
            .and_then(|w| obj_at(w, "clientConfig"))
            .and_then(|c| obj_at(c, "service"))
        {
            set_if_unset(service, "port", json!(443));
        }
        if let Some(Value::Array(versions)) = spec.get("versions") {
            storage_version = versions
                .iter()
                .find(|v| v.get("storage") == Some(&Value::Bool(true)))
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        if let Some(accepted) = ensure_obj(status, "acceptedNames") {
            set_if_unset(accepted, "kind", json!(""));
            set_if_unset(accepted, "plural", json!(""));
        }
        // Both the defaulter and the strategy make sure the storage version is recorded.
        let stored = status.entry("storedVersions").or_insert(Value::Null);
        if stored.is_null() {
            *stored = json!([]);
        }
        if let (Value::Array(list), Some(v)) = (stored, storage_version)
            && !list.iter().any(|s| s.as_str() == Some(v.as_str()))
        {
            list.push(json!(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(group: &str, kind: &str, obj: Value) -> Value {
        let mut obj = obj;
        apply_defaults(group, kind, &mut obj);
        obj
    }

    #[test]
    fn minimal_deployment_reads_back_with_every_default() {
        let obj = defaulted(
            "apps",
            "Deployment",
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "ns"},
                "spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
                    }
                }
            }),
        );
        let expected = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
                "template": {
                    "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                    "spec": {
                        "containers": [{
                            "name": "web", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent"
                        }],
                        "restartPolicy": "Always",
                        "terminationGracePeriodSeconds": 30,
                        "dnsPolicy": "ClusterFirst",
                        "securityContext": {},
                        "schedulerName": "default-scheduler"
                    }
                }
            },
            "status": {}
        });
        assert_eq!(obj, expected);
        // Idempotent: a second pass changes nothing.
        assert_eq!(defaulted("apps", "Deployment", obj.clone()), obj);
    }

    #[test]
    fn deployment_keeps_explicit_values_and_recreate_gets_no_rolling_update() {
        let obj = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"replicas": 0, "revisionHistoryLimit": 0, "strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(obj["spec"]["replicas"], json!(0));
        assert_eq!(obj["spec"]["revisionHistoryLimit"], json!(0));
        assert_eq!(obj["spec"]["strategy"], json!({"type": "Recreate"}));
        let obj = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
        );
        assert_eq!(
            obj["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": 1, "maxUnavailable": "25%"})
        );
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("registry.example.com:5000/team/app", "Always"),
            ("registry.example.com:5000/team/app:v1", "IfNotPresent"),
            ("nginx:1.27", "IfNotPresent"),
            (
                "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "IfNotPresent",
            ),
            (
                "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "Always",
            ),
            ("NGINX", "IfNotPresent"),
            ("", "IfNotPresent"),
        ];
        for (image, policy) in cases {
            let obj = defaulted(
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "c", "image": image}]}}),
            );
            assert_eq!(
                obj["spec"]["containers"][0]["imagePullPolicy"],
                json!(policy),
                "{image}"
            );
        }
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Never"}]}}),
        );
        assert_eq!(
            obj["spec"]["containers"][0]["imagePullPolicy"],
            json!("Never")
        );
    }

    #[test]
    fn probes_volumes_and_env_get_their_defaults() {
        let obj = defaulted(
            "apps",
            "DaemonSet",
            json!({"spec": {"template": {"spec": {
                "containers": [{
                    "name": "c", "image": "i:1",
                    "livenessProbe": {"httpGet": {"port": 8080}},
                    "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
                    "lifecycle": {"preStop": {"httpGet": {"port": 1, "path": "/stop"}}},
                    "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
                }],
                "volumes": [
                    {"name": "a", "secret": {"secretName": "s"}},
                    {"name": "b", "configMap": {"name": "c"}},
                    {"name": "c", "hostPath": {"path": "/dev"}},
                    {"name": "d"},
                    {"name": "e", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}},
                        {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
                    {"name": "f", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}
                ]
            }}}}),
        );
        let spec = &obj["spec"]["template"]["spec"];
        let c = &spec["containers"][0];
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
                   "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], json!(5));
        assert_eq!(c["readinessProbe"]["grpc"]["service"], json!(""));
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 1, "path": "/stop", "scheme": "HTTP"})
        );
        assert_eq!(
            c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"],
            json!("v1")
        );
        let vols = &spec["volumes"];
        assert_eq!(vols[0]["secret"]["defaultMode"], json!(420));
        assert_eq!(vols[1]["configMap"]["defaultMode"], json!(420));
        assert_eq!(vols[2]["hostPath"]["type"], json!(""));
        assert_eq!(vols[3]["emptyDir"], json!({}));
        assert_eq!(vols[4]["projected"]["defaultMode"], json!(420));
        assert_eq!(
            vols[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            json!(3600)
        );
        assert_eq!(
            vols[4]["projected"]["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
            json!("v1")
        );
        assert_eq!(vols[5]["downwardAPI"]["defaultMode"], json!(420));
        assert_eq!(
            vols[5]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
            json!("v1")
        );
        assert_eq!(
            obj["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(obj["spec"]["revisionHistoryLimit"], json!(10));
        assert_eq!(
            obj["status"],
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
        );
    }

    #[test]
    fn service_account_alias_is_written_back() {
        let obj = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"template": {"spec": {"serviceAccountName": "sa", "containers": []}}}}),
        );
        assert_eq!(
            obj["spec"]["template"]["spec"]["serviceAccount"],
            json!("sa")
        );
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"serviceAccount": "old", "containers": []}}),
        );
        assert_eq!(obj["spec"]["serviceAccountName"], json!("old"));
    }

    #[test]
    fn quantities_are_canonicalised() {
        let cases = [
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5", "500m"),
            ("1000m", "1"),
            ("100m", "100m"),
            ("1500m", "1500m"),
            ("1000", "1k"),
            ("1000M", "1G"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("1e3", "1e3"),
            ("0.1Ki", "102400m"),
            ("512Ki", "512Ki"),
            ("0.0001", "1m"),
            ("0", "0"),
            ("-1500m", "-1500m"),
        ];
        for (input, want) in cases {
            let q = parse_quantity(input).unwrap_or_else(|| panic!("parse {input}"));
            assert_eq!(format_quantity(q), want, "{input}");
        }
        for bad in ["", "abc", "1..2", "1Zi", "1e", "."] {
            assert_eq!(parse_quantity(bad), None, "{bad}");
        }
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "i:1",
                "resources": {"limits": {"cpu": 1, "memory": "1024Mi"}}}]}}),
        );
        let res = &obj["spec"]["containers"][0]["resources"];
        assert_eq!(res["limits"], json!({"cpu": "1", "memory": "1Gi"}));
        // Pods (not templates) copy limits into missing requests.
        assert_eq!(res["requests"], json!({"cpu": "1", "memory": "1Gi"}));
        assert_eq!(obj["status"]["qosClass"], json!("Guaranteed"));
    }

    #[test]
    fn pod_defaults_and_qos() {
        let obj = defaulted(
            "",
            "Pod",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
        );
        assert_eq!(obj["spec"]["enableServiceLinks"], json!(true));
        assert_eq!(
            obj["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "i:1", "resources": {"requests": {"cpu": "100m"}}}]}}),
        );
        assert_eq!(obj["status"]["qosClass"], json!("Burstable"));
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "i:1"}]}});
        apply_defaults("", "Pod", &mut pod);
        prepare_for_create("", "Pod", &mut pod);
        assert_eq!(pod["spec"]["serviceAccountName"], json!("default"));
        assert_eq!(pod["spec"]["serviceAccount"], json!("default"));
        assert_eq!(pod["spec"]["priority"], json!(0));
        assert_eq!(
            pod["spec"]["preemptionPolicy"],
            json!("PreemptLowerPriority")
        );
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            pod["spec"]["tolerations"][0]["tolerationSeconds"],
            json!(300)
        );
        // Host networking copies container ports into host ports.
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 9000}]}]}}),
        );
        assert_eq!(
            obj["spec"]["containers"][0]["ports"][0]["hostPort"],
            json!(9000)
        );
    }

    #[test]
    fn secret_string_data_is_folded_into_data() {
        let obj = defaulted(
            "",
            "Secret",
            json!({"metadata": {"name": "s"}, "data": {"a": "b2xk", "keep": "eA=="}, "stringData": {"a": "new", "b": "hello"}}),
        );
        assert_eq!(
            obj["data"],
            json!({"a": "bmV3", "keep": "eA==", "b": "aGVsbG8="})
        );
        assert!(obj.get("stringData").is_none());
        assert_eq!(obj["type"], json!("Opaque"));
        let obj = defaulted(
            "",
            "Secret",
            json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": "x"}}),
        );
        assert_eq!(obj["data"], json!({"tls.crt": "eA=="}));
        assert_eq!(obj["type"], json!("kubernetes.io/tls"));
        // Malformed stringData is left for validation.
        let obj = defaulted("", "Secret", json!({"stringData": {"a": 1}}));
        assert_eq!(obj["stringData"], json!({"a": 1}));
        let obj = defaulted("", "Secret", json!({"stringData": "nope"}));
        assert_eq!(obj["stringData"], json!("nope"));
    }

    #[test]
    fn service_defaults_and_allocation() {
        let mut svc = json!({"metadata": {"name": "s"}, "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}});
        apply_defaults("", "Service", &mut svc);
        prepare_for_create("", "Service", &mut svc);
        assert!(allocate_cluster_ip(&mut svc, 7));
        assert_eq!(
            svc["spec"],
            json!({
                "selector": {"app": "a"},
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}, {"port": 443, "protocol": "TCP", "targetPort": "https"}],
                "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
                "clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"]
            })
        );
        assert_eq!(svc["status"], json!({"loadBalancer": {}}));
        let mut big = json!({"spec": {}});
        assert!(allocate_cluster_ip(&mut big, 300));
        assert_eq!(big["spec"]["clusterIP"], json!("10.96.1.44"));

        let mut headless = json!({"spec": {"clusterIP": "None", "ports": [{"port": 1}]}});
        apply_defaults("", "Service", &mut headless);
        prepare_for_create("", "Service", &mut headless);
        assert!(!allocate_cluster_ip(&mut headless, 1));
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(
            headless["spec"]["ipFamilyPolicy"],
            json!("RequireDualStack")
        );
        assert_eq!(headless["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));

        let mut ext = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        apply_defaults("", "Service", &mut ext);
        prepare_for_create("", "Service", &mut ext);
        assert!(!allocate_cluster_ip(&mut ext, 1));
        assert!(ext["spec"].get("clusterIP").is_none());
        assert!(ext["spec"].get("ipFamilyPolicy").is_none());
        assert!(ext["spec"].get("internalTrafficPolicy").is_none());

        let lb = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP"}}),
        );
        assert_eq!(lb["spec"]["externalTrafficPolicy"], json!("Cluster"));
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], json!(true));
        assert_eq!(
            lb["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
    }

    #[test]
    fn service_update_carries_allocated_values() {
        let old = json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
            "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}});
        let mut new = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        apply_defaults("", "Service", &mut new);
        prepare_for_update("", "Service", &old, &mut new);
        assert_eq!(new["spec"]["clusterIP"], json!("10.96.0.9"));
        assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.9"]));
        assert_eq!(new["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(new["spec"]["ports"][0]["nodePort"], json!(30080));
        // A changed singular with the old plural rewrites the plural, for validation to reject.
        let mut changed = json!({"spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.9"]}});
        prepare_for_update("", "Service", &old, &mut changed);
        assert_eq!(changed["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    }

    #[test]
    fn namespace_defaults_and_finalizers() {
        let mut ns = json!({"metadata": {"name": "team-a", "labels": {"x": "y"}}});
        apply_defaults("", "Namespace", &mut ns);
        prepare_for_create("", "Namespace", &mut ns);
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"x": "y", "kubernetes.io/metadata.name": "team-a"})
        );
        assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
        assert_eq!(ns["status"], json!({"phase": "Active"}));
        // The label is enforced on every write, the finalizer only on create.
        let mut update = json!({"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "other"}}});
        apply_defaults("", "Namespace", &mut update);
        prepare_for_update("", "Namespace", &json!({"spec": {}}), &mut update);
        assert_eq!(
            update["metadata"]["labels"]["kubernetes.io/metadata.name"],
            json!("team-a")
        );
        assert!(update["spec"].get("finalizers").is_none());
    }

    #[test]
    fn storage_kinds() {
        let sc = defaulted(
            "storage.k8s.io",
            "StorageClass",
            json!({"provisioner": "p"}),
        );
        assert_eq!(sc["reclaimPolicy"], json!("Delete"));
        assert_eq!(sc["volumeBindingMode"], json!("Immediate"));
        let d = defaulted(
            "storage.k8s.io",
            "CSIDriver",
            json!({"metadata": {"name": "d"}, "spec": {"attachRequired": false}}),
        );
        assert_eq!(
            d["spec"],
            json!({"attachRequired": false, "podInfoOnMount": false, "storageCapacity": false,
                   "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                   "requiresRepublish": false, "seLinuxMount": false})
        );
    }

    #[test]
    fn policy_rbac_network_lease_crd() {
        let pdb = defaulted(
            "policy",
            "PodDisruptionBudget",
            json!({"spec": {"minAvailable": 1}}),
        );
        assert_eq!(pdb["spec"], json!({"minAvailable": 1}));
        assert_eq!(
            pdb["status"],
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
        );

        let rb = defaulted(
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({"roleRef": {"kind": "Role", "name": "r"},
                   "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "User", "name": "u"}]}),
        );
        assert_eq!(
            rb["roleRef"]["apiGroup"],
            json!("rbac.authorization.k8s.io")
        );
        assert_eq!(rb["subjects"][0]["apiGroup"], json!(""));
        assert_eq!(
            rb["subjects"][1]["apiGroup"],
            json!("rbac.authorization.k8s.io")
        );

        let np = defaulted(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
        let np = defaulted(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(
            np["spec"]["egress"][0]["ports"][0]["protocol"],
            json!("TCP")
        );

        let lease = defaulted(
            "coordination.k8s.io",
            "Lease",
            json!({"spec": {"holderIdentity": "a", "strategy": "x"}}),
        );
        assert_eq!(lease["spec"], json!({"holderIdentity": "a"}));

        let crd = defaulted(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            json!({"spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
                   "versions": [{"name": "v1", "served": true, "storage": true}]}}),
        );
        assert_eq!(crd["spec"]["names"]["singular"], json!("widget"));
        assert_eq!(crd["spec"]["names"]["listKind"], json!("WidgetList"));
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(
            crd["status"],
            json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": ["v1"]})
        );
    }

    #[test]
    fn stateful_set_and_node() {
        let sts = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "1024Mi"}}}}]}}),
        );
        assert_eq!(sts["spec"]["podManagementPolicy"], json!("OrderedReady"));
        assert_eq!(
            sts["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(
            sts["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        let pvc = &sts["spec"]["volumeClaimTemplates"][0];
        assert_eq!(pvc["kind"], json!("PersistentVolumeClaim"));
        assert_eq!(pvc["spec"]["volumeMode"], json!("Filesystem"));
        assert_eq!(
            pvc["spec"]["resources"]["requests"]["storage"],
            json!("1Gi")
        );
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));
        let explicit = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
        );
        assert_eq!(
            explicit["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );

        let node = defaulted(
            "",
            "Node",
            json!({"status": {"capacity": {"cpu": "4", "memory": "8192Mi"}}}),
        );
        assert_eq!(
            node["status"]["allocatable"],
            json!({"cpu": "4", "memory": "8Gi"})
        );
        assert_eq!(
            node["status"]["daemonEndpoints"],
            json!({"kubeletEndpoint": {"Port": 0}})
        );
        assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], json!(""));
    }

    #[test]
    fn smaller_kinds() {
        let pc = defaulted("scheduling.k8s.io", "PriorityClass", json!({"value": 10}));
        assert_eq!(pc["preemptionPolicy"], json!("PreemptLowerPriority"));
        let pv = defaulted(
            "",
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "1024Gi"}}}),
        );
        assert_eq!(
            pv["spec"],
            json!({"capacity": {"storage": "1Ti"}, "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"})
        );
        assert_eq!(pv["status"], json!({"phase": "Pending"}));
        let ep = defaulted(
            "",
            "Endpoints",
            json!({"subsets": [{"ports": [{"port": 1}]}]}),
        );
        assert_eq!(ep["subsets"][0]["ports"][0]["protocol"], json!("TCP"));
        let rs = defaulted("apps", "ReplicaSet", json!({"spec": {}}));
        assert_eq!(rs["spec"]["replicas"], json!(1));
        assert_eq!(rs["status"], json!({"replicas": 0}));
        let pt = defaulted(
            "",
            "PodTemplate",
            json!({"template": {"spec": {"containers": []}}}),
        );
        assert_eq!(pt["template"]["spec"]["restartPolicy"], json!("Always"));
        // The counter wraps inside 10.96.0.0/12 and never yields the network address.
        let mut svc = json!({"spec": {}});
        assert!(allocate_cluster_ip(&mut svc, 0));
        assert_ne!(svc["spec"]["clusterIP"], json!("10.96.0.0"));
        let mut chosen = json!({"spec": {"clusterIP": "10.96.5.5"}});
        assert!(!allocate_cluster_ip(&mut chosen, 1));
        assert_eq!(chosen["spec"]["clusterIPs"], json!(["10.96.5.5"]));
    }

    #[test]
    fn malformed_input_never_panics_and_is_left_alone() {
        let kinds = [
            ("apps", "Deployment"),
            ("apps", "DaemonSet"),
            ("apps", "StatefulSet"),
            ("apps", "ReplicaSet"),
            ("", "Pod"),
            ("", "PodTemplate"),
            ("", "Service"),
            ("", "Namespace"),
            ("", "Secret"),
            ("", "Node"),
            ("", "PersistentVolumeClaim"),
            ("", "PersistentVolume"),
            ("", "Endpoints"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("policy", "PodDisruptionBudget"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("coordination.k8s.io", "Lease"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("scheduling.k8s.io", "PriorityClass"),
        ];
        let shapes = [
            json!("a string"),
            json!(null),
            json!([1, 2]),
            json!({"spec": "a string", "status": 3, "metadata": []}),
            json!({"spec": {"template": "x", "selector": 1, "containers": {"a": 1}, "ports": "x", "type": 7}}),
            json!({"spec": {"template": {"metadata": 5, "spec": {"containers": "nope", "volumes": [1, "x", null]}}}}),
            json!({"spec": {"containers": [1, {"image": 5, "ports": [null, {"protocol": 3}], "resources": "x",
                "livenessProbe": "x", "env": [{"valueFrom": 1}]}], "volumes": {"a": 1}}}),
            json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "abc", "memory": []}}}]}}),
            json!({"data": "x", "stringData": {"a": "b"}}),
            json!({"spec": {"names": 1, "versions": "x", "conversion": 3}, "status": {"storedVersions": 4}}),
            json!({"spec": {"strategy": "x", "updateStrategy": [1]}}),
        ];
        for (group, kind) in kinds {
            for shape in &shapes {
                let mut obj = shape.clone();
                apply_defaults(group, kind, &mut obj);
                prepare_for_create(group, kind, &mut obj);
                let mut upd = shape.clone();
                prepare_for_update(group, kind, shape, &mut upd);
                let _ = allocate_cluster_ip(&mut obj, 1);
            }
        }
        // Wrong types stay as they are for validation to report.
        let obj = defaulted("apps", "Deployment", json!({"spec": "a string"}));
        assert_eq!(obj["spec"], json!("a string"));
        let obj = defaulted("", "Pod", json!({"spec": {"containers": "nope"}}));
        assert_eq!(obj["spec"]["containers"], json!("nope"));
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "abc"}}}]}}),
        );
        assert_eq!(
            obj["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            json!("abc")
        );
        let obj = defaulted("", "Secret", json!({"data": "x", "stringData": {"a": "b"}}));
        assert_eq!(obj["data"], json!("x"));
        assert_eq!(obj["stringData"], json!({"a": "b"}));
        // Unknown kinds are untouched.
        let obj = defaulted("example.com", "Widget", json!({"spec": {}}));
        assert_eq!(obj, json!({"spec": {}}));
    }
}
