//! Pod admission: where kube-sim decides whether a pod may exist, for every way a pod comes
//! about (a Pod created through the API, a Deployment's or DaemonSet's virtual pod in
//! `workload.rs`, a process-backed pod in `processes.rs`), so each gets the same answer and the
//! same message a real API server gives.
//!
//! Two admission plugins run, in the API server's order:
//! 1. OpenShift's SCC admission (`scc.rs`), when [`AdmissionConfig::openshift`] is on. Who may
//!    use an SCC is read from the RBAC objects in the store with kube-sim's RBAC authorizer
//!    (`use` on `securitycontextconstraints.security.openshift.io`, named, in the pod's
//!    namespace), for the pod's creator and its service account, whether or not RBAC
//!    *enforcement* of requests is switched on: the grants are data the SCC plugin reads, as
//!    it asks the cluster's authorizer. The OpenShift mode also serves the SCC kind and seeds
//!    the default SCCs and their ClusterRoles ([`seed`]), and plays the cluster-policy-
//!    controller that gives every namespace its UID range, MCS level and supplemental groups
//!    ([`run`]).
//! 2. Pod Security Admission (`pod_security.rs`), when [`AdmissionConfig::pod_security`] is on
//!    (the default, as on any cluster since Kubernetes 1.25), on the pod as SCC admission left
//!    it. Unlabelled namespaces get [`AdmissionConfig::pod_security_default`]: `privileged`,
//!    the API server's default and OpenShift's global enforcement level (OpenShift's label
//!    syncer, which labels non-`openshift-` namespaces from their SCCs, is not emulated).
//!
//! Controllers that create pods (replicaset, daemonset) act as
//! `system:serviceaccount:kube-system:<controller>`, which holds no SCC grant of its own, so
//! their pods are admitted by what the pod's service account may use, as on OpenShift.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Shared;
use crate::api::{Cluster, WriteOptions};
use crate::pod_security::{self, Level};
use crate::rbac::{self, Attributes, UserInfo};
use crate::resources::GroupResource;
use crate::scc::{self, Scc};

/// Which admission plugins judge pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// OpenShift: SCC admission, the SCC kind and default SCCs, namespace UID ranges.
    pub openshift: bool,
    /// Pod Security Admission by namespace labels.
    pub pod_security: bool,
    /// The enforced level of namespaces without a `pod-security.kubernetes.io/enforce` label.
    pub pod_security_default: Level,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            openshift: false,
            pod_security: true,
            pod_security_default: Level::Privileged,
        }
    }
}

impl AdmissionConfig {
    /// OpenShift's admission: SCCs and Pod Security Admission.
    pub fn openshift() -> Self {
        Self {
            openshift: true,
            ..Self::default()
        }
    }
}

/// What admission says about a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Admitted; the pod as the admission plugins changed it.
    Admitted(Value),
    /// Refused, with the API server's message (`pods "x" is forbidden: ...`).
    Refused(String),
    /// Not decidable yet: the namespace has no UID range yet (the SCC plugin waits up to 10 s
    /// for the cluster-policy-controller; controllers retry).
    Pending(String),
}

/// The user a pod-creating controller acts as.
pub fn controller_user(controller: &str) -> UserInfo {
    UserInfo::new(
        &format!("system:serviceaccount:kube-system:{controller}"),
        &[
            rbac::SERVICE_ACCOUNTS_GROUP,
            "system:serviceaccounts:kube-system",
            rbac::AUTHENTICATED_GROUP,
        ],
    )
}

/// The pod a controller creates from `template` in `namespace`, named by `generate_name`
/// (`<replicaset>-` or `<daemonset>-`), before admission.
pub fn pod_from_template(template: &Value, namespace: &str, generate_name: &str) -> Value {
    let mut metadata = template
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.insert("generateName".into(), json!(generate_name));
        m.insert("namespace".into(), json!(namespace));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

fn name_of(pod: &Value) -> &str {
    let meta = |k: &str| {
        pod.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    meta("name").or_else(|| meta("generateName")).unwrap_or("")
}

fn namespace_object(c: &Cluster, ns: &str) -> Option<Arc<Value>> {
    c.store().get(&GroupResource::new("", "namespaces"), "", ns)
}

/// Whether `user` may use `scc` in `namespace`: listed in its users or groups, or granted
/// `use` by the RBAC objects of `policy` (the store, or manifests through `StaticPolicy`).
pub fn may_use(
    policy: &dyn rbac::PolicySource,
    user: &UserInfo,
    namespace: &str,
    scc: &Scc,
) -> bool {
    if scc.users.contains(&user.name) || user.groups.iter().any(|g| scc.groups.contains(g)) {
        return true;
    }
    let attrs = Attributes::resource(
        user.clone(),
        "use",
        scc::SCC_GROUP,
        scc::SCC_RESOURCE,
        namespace,
        &scc.name,
    );
    rbac::authorize(policy, &attrs).allowed()
}

/// Admits `pod` (a Pod object with its namespace set) created by `creator`.
pub fn admit(c: &Cluster, config: &AdmissionConfig, pod: &Value, creator: &UserInfo) -> Verdict {
    if !config.openshift && !config.pod_security {
        return Verdict::Admitted(pod.clone());
    }
    let ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // A pod in a missing namespace is refused by the namespace check, not here.
    let Some(namespace) = namespace_object(c, ns) else {
        return Verdict::Admitted(pod.clone());
    };
    if !pod.get("spec").is_some_and(Value::is_object) {
        return Verdict::Admitted(pod.clone());
    }
    let forbidden = |why: &str| format!("pods {:?} is forbidden: {why}", name_of(pod));
    let mut pod = pod.clone();
    if config.openshift {
        if let Err(why) = scc::Allocation::of(&namespace).ready() {
            return Verdict::Pending(forbidden(&why));
        }
        let sccs: Vec<Value> = c
            .store()
            .iter(
                &GroupResource::new(scc::SCC_GROUP, scc::SCC_RESOURCE),
                None,
                None,
            )
            .map(|(_, o)| (**o).clone())
            .collect();
        let sa = match pod
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
        {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => "default".to_string(),
        };
        let sa_user = UserInfo::resolve(
            &format!("{}{ns}:{sa}", rbac::SERVICE_ACCOUNT_PREFIX),
            &rbac::RbacConfig {
                superusers: Vec::new(),
            },
        );
        let usable = |s: &Scc| may_use(c, creator, ns, s) || may_use(c, &sa_user, ns, s);
        match scc::admit(&pod, &namespace, &sccs, &usable) {
            Ok(admitted) => pod = admitted.pod,
            Err(why) => return Verdict::Refused(forbidden(&why)),
        }
    }
    if config.pod_security
        && let Err(why) = pod_security::admit(&pod, &namespace, config.pod_security_default)
    {
        return Verdict::Refused(forbidden(&why));
    }
    Verdict::Admitted(pod)
}

/// The admission of the pod `controller` would create from `template` in `namespace`.
pub fn admit_template(
    c: &Cluster,
    config: &AdmissionConfig,
    template: &Value,
    namespace: &str,
    generate_name: &str,
    controller: &str,
) -> Verdict {
    let pod = pod_from_template(template, namespace, generate_name);
    admit(c, config, &pod, &controller_user(controller))
}

// ----- the OpenShift mode's objects and controller --------------------------------------------

/// Creates what OpenShift has from its first boot and kube-sim lacks: the SCC CRD, the default
/// SCCs and their ClusterRoles and binding. Create-only: existing objects are kept.
pub fn seed(c: &mut Cluster) {
    let opts = WriteOptions {
        manager: "cluster-kube-apiserver-operator".into(),
        ..Default::default()
    };
    for obj in scc::default_objects() {
        let Some((group, version)) = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(|a| a.split_once('/').unwrap_or(("", a)))
        else {
            continue;
        };
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let plural = match kind {
            "CustomResourceDefinition" => "customresourcedefinitions",
            "SecurityContextConstraints" => scc::SCC_RESOURCE,
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            _ => continue,
        };
        if let Some(rt) = c.resource(group, version, plural) {
            // AlreadyExists is the create-only case; nothing else can fail on these objects.
            let _ = c.create(&rt, "", obj, &opts);
        }
    }
}

/// The first UID of OpenShift's allocation range and the size of a namespace's block.
pub const UID_RANGE_START: i64 = 1_000_000_000;
pub const UID_BLOCK_SIZE: i64 = 10_000;
/// How many blocks the range `1000000000-1999999999` holds.
const UID_BLOCKS: i64 = 100_000;

/// Gives every namespace without one a UID block, MCS level and supplemental groups, as
/// OpenShift's cluster-policy-controller does; returns whether it wrote.
pub fn allocate_namespaces(c: &mut Cluster) -> bool {
    let Some(rt) = c.resource("", "v1", "namespaces") else {
        return false;
    };
    let all: Vec<Arc<Value>> = c
        .store()
        .iter(&rt.group_resource(), None, None)
        .map(|(_, o)| o.clone())
        .collect();
    let mut used: std::collections::BTreeSet<i64> = all
        .iter()
        .filter_map(|n| scc::Allocation::of(n).uid_range)
        .filter_map(|r| scc::parse_block(&r).ok())
        .map(|b| (b.first - UID_RANGE_START) / UID_BLOCK_SIZE)
        .collect();
    let mut wrote = false;
    for ns in all {
        if scc::Allocation::of(&ns).uid_range.is_some()
            || ns.pointer("/metadata/deletionTimestamp").is_some()
        {
            continue;
        }
        let Some(n) = (0..UID_BLOCKS).find(|n| !used.contains(n)) else {
            return wrote;
        };
        used.insert(n);
        let block = format!("{}/{UID_BLOCK_SIZE}", UID_RANGE_START + n * UID_BLOCK_SIZE);
        let mut updated = (*ns).clone();
        let Some(meta) = updated.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        if !ann.is_object() {
            *ann = json!({});
        }
        ann[scc::UID_RANGE_ANNOTATION] = json!(block);
        ann[scc::SUPPLEMENTAL_GROUPS_ANNOTATION] = json!(block);
        if ann.get(scc::MCS_ANNOTATION).is_none() {
            ann[scc::MCS_ANNOTATION] = json!(scc::mcs_level(n.unsigned_abs()));
        }
        c.controller_put(&rt, updated);
        wrote = true;
    }
    wrote
}

/// The cluster-policy-controller of the OpenShift mode: allocates namespaces after every write
/// while the mode is on.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut changed = shared.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        if *shutdown.borrow() {
            return;
        }
        if shared.admission().openshift && allocate_namespaces(&mut shared.lock()) {
            shared.changed.send_modify(|n| *n += 1);
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            r = shutdown.changed() => if r.is_err() { return },
        }
    }
}

/// How long a Pod create waits for its namespace's UID range before it is refused, as the SCC
/// plugin waits for the cluster-policy-controller.
pub const NAMESPACE_WAIT: Duration = Duration::from_secs(10);

/// The admission of a Pod created through the API by `user`: waits while pending (up to
/// [`NAMESPACE_WAIT`]), then `Ok(pod as admitted)` or the 403 to answer.
pub(crate) async fn admit_api_create(
    shared: &Shared,
    namespace: &str,
    mut pod: Value,
    user: &str,
) -> Result<Value, crate::errors::ApiError> {
    let config = shared.admission();
    if !config.openshift && !config.pod_security {
        return Ok(pod);
    }
    if let Some(m) = pod.get_mut("metadata").and_then(Value::as_object_mut)
        && !m.contains_key("namespace")
    {
        m.insert("namespace".into(), json!(namespace));
    }
    let creator = UserInfo::resolve(user, &shared.rbac.config().unwrap_or_default());
    let until = tokio::time::Instant::now() + NAMESPACE_WAIT;
    loop {
        let verdict = admit(&shared.lock(), &config, &pod, &creator);
        match verdict {
            Verdict::Admitted(p) => return Ok(p),
            Verdict::Refused(message) => return Err(forbidden(&message)),
            Verdict::Pending(message) if tokio::time::Instant::now() >= until => {
                return Err(forbidden(&message));
            }
            Verdict::Pending(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn forbidden(message: &str) -> crate::errors::ApiError {
    crate::errors::ApiError {
        code: 403,
        reason: "Forbidden",
        message: message.to_string(),
        details: Some(json!({"kind": "pods"})),
    }
}

#[cfg(test)]
mod tests;
