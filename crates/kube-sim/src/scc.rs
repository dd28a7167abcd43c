//! OpenShift's SecurityContextConstraints (SCC) admission, as pure functions: which SCC admits a
//! pod, how it changes the pod (the defaults it assigns), and the message a refused pod gets.
//!
//! What is modelled (OpenShift 4.x `security.openshift.io/SecurityContextConstraint` admission):
//! - the ten default SCCs (`restricted-v2`, `restricted`, `nonroot-v2`, `nonroot`,
//!   `hostnetwork-v2`, `hostnetwork`, `hostmount-anyuid`, `hostaccess`, `anyuid`, `privileged`)
//!   with their real field values, the `system:openshift:scc:<name>` ClusterRoles and the
//!   binding that lets every authenticated user use `restricted-v2` ([`default_objects`]);
//! - the order SCCs are tried in (priority, then most restrictive, then name), the
//!   `openshift.io/required-scc` pin (only that SCC is tried), who may use an SCC (its `users`,
//!   `groups`, or RBAC `use`, decided by the caller through [`Usable`]);
//! - per SCC: the namespace's pre-allocated UID range, MCS level and group ranges
//!   (`openshift.io/sa.scc.*` annotations), the runAsUser strategies (MustRunAs,
//!   MustRunAsRange, MustRunAsNonRoot, RunAsAny) including the UID they assign when none is
//!   set, fsGroup and supplementalGroups, SELinux level, privileged containers, host namespaces
//!   and ports, capabilities (allowed, default-added, required-dropped), privilege escalation,
//!   read-only root filesystems, volume types and seccomp profiles;
//! - the messages: `unable to validate against any security context constraint: [...]` with one
//!   entry per SCC tried, each as OpenShift prints it.
//!
//! Not modelled: sysctls, AppArmor, flex volume drivers, `runAsGroup`, the audit annotations,
//! admission of pod updates, Windows pods. The store, RBAC and the namespace lookups are the
//! caller's (`pod_admission.rs`); this module never touches the simulator's state.

use crate::json::strings;
use std::cmp::Ordering;

use serde_json::{Map, Value, json};

use crate::field_error::FieldError;

/// The pod annotation that pins the one SCC a pod may be admitted by.
pub const REQUIRED_SCC_ANNOTATION: &str = "openshift.io/required-scc";
/// The pod annotation the admission sets to the SCC that admitted the pod.
pub const VALIDATED_SCC_ANNOTATION: &str = "openshift.io/scc";
/// The namespace's pre-allocated UID block, `<first>/<size>` (or `<first>-<last>`).
pub const UID_RANGE_ANNOTATION: &str = "openshift.io/sa.scc.uid-range";
/// The namespace's SELinux MCS level, e.g. `s0:c26,c5`.
pub const MCS_ANNOTATION: &str = "openshift.io/sa.scc.mcs";
/// The namespace's supplemental group blocks (comma-separated), defaulting to the UID range.
pub const SUPPLEMENTAL_GROUPS_ANNOTATION: &str = "openshift.io/sa.scc.supplemental-groups";
/// The API group of SecurityContextConstraints.
pub const SCC_GROUP: &str = "security.openshift.io";
pub const SCC_RESOURCE: &str = "securitycontextconstraints";

/// The volume types of the `-v2` and `restricted` SCCs: nothing that reaches the host. The
/// Pod Security Standards' `restricted` level allows the same list.
pub(crate) const SAFE_VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

// ----- the SCC object ----------------------------------------------------------------------------

/// `runAsUser.type` and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAsUser {
    MustRunAs { uid: Option<i64> },
    MustRunAsRange { min: Option<i64>, max: Option<i64> },
    MustRunAsNonRoot,
    RunAsAny,
}

/// fsGroup and supplementalGroups: `MustRunAs` with ranges (empty: from the namespace), or
/// `RunAsAny`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Groups {
    MustRunAs(Vec<(i64, i64)>),
    RunAsAny,
}

/// One SecurityContextConstraints object, read leniently from its JSON (absent lists are
/// empty, absent booleans false, `allowPrivilegeEscalation` true as the API defaults it).
#[derive(Debug, Clone, PartialEq)]
pub struct Scc {
    pub name: String,
    pub priority: i64,
    pub allow_privileged_container: bool,
    pub allow_host_network: bool,
    pub allow_host_pid: bool,
    pub allow_host_ipc: bool,
    pub allow_host_ports: bool,
    pub allow_privilege_escalation: bool,
    pub default_allow_privilege_escalation: Option<bool>,
    pub allowed_capabilities: Vec<String>,
    pub default_add_capabilities: Vec<String>,
    pub required_drop_capabilities: Vec<String>,
    pub read_only_root_filesystem: bool,
    pub run_as_user: RunAsUser,
    /// `seLinuxContext`: `Some(level)` for MustRunAs (the level, `None` from the namespace),
    /// `None` for RunAsAny.
    pub se_linux: Option<Option<String>>,
    pub fs_group: Groups,
    pub supplemental_groups: Groups,
    pub volumes: Vec<String>,
    pub seccomp_profiles: Vec<String>,
    pub users: Vec<String>,
    pub groups: Vec<String>,
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn ranges(v: &Value) -> Vec<(i64, i64)> {
    v.get("ranges")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| Some((r.get("min")?.as_i64()?, r.get("max")?.as_i64()?)))
                .collect()
        })
        .unwrap_or_default()
}

impl Scc {
    /// Reads an SCC; an unknown strategy type is an error, as it makes OpenShift's provider
    /// creation fail.
    pub fn from_value(v: &Value) -> Result<Self, String> {
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let rau = v.get("runAsUser").cloned().unwrap_or(Value::Null);
        let run_as_user = match rau.get("type").and_then(Value::as_str).unwrap_or("") {
            "MustRunAs" => RunAsUser::MustRunAs {
                uid: rau.get("uid").and_then(Value::as_i64),
            },
            "MustRunAsRange" => RunAsUser::MustRunAsRange {
                min: rau.get("uidRangeMin").and_then(Value::as_i64),
                max: rau.get("uidRangeMax").and_then(Value::as_i64),
            },
            "MustRunAsNonRoot" => RunAsUser::MustRunAsNonRoot,
            "RunAsAny" => RunAsUser::RunAsAny,
            other => return Err(format!("Unrecognized RunAsUser strategy type {other}")),
        };
        let sel = v.get("seLinuxContext").cloned().unwrap_or(Value::Null);
        let se_linux = match sel.get("type").and_then(Value::as_str).unwrap_or("") {
            "MustRunAs" => Some(
                sel.pointer("/seLinuxOptions/level")
                    .and_then(Value::as_str)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            ),
            "RunAsAny" => None,
            other => return Err(format!("Unrecognized SELinuxContext strategy type {other}")),
        };
        let groups = |key: &str| -> Result<Groups, String> {
            let g = v.get(key).cloned().unwrap_or(Value::Null);
            match g.get("type").and_then(Value::as_str).unwrap_or("") {
                "MustRunAs" => Ok(Groups::MustRunAs(ranges(&g))),
                "RunAsAny" => Ok(Groups::RunAsAny),
                other => Err(format!(
                    "Unrecognized {} strategy type {other}",
                    if key == "fsGroup" {
                        "FSGroup"
                    } else {
                        "SupplementalGroups"
                    }
                )),
            }
        };
        Ok(Self {
            name,
            priority: v.get("priority").and_then(Value::as_i64).unwrap_or(0),
            allow_privileged_container: flag(v, "allowPrivilegedContainer"),
            allow_host_network: flag(v, "allowHostNetwork"),
            allow_host_pid: flag(v, "allowHostPID"),
            allow_host_ipc: flag(v, "allowHostIPC"),
            allow_host_ports: flag(v, "allowHostPorts"),
            allow_privilege_escalation: v
                .get("allowPrivilegeEscalation")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            default_allow_privilege_escalation: v
                .get("defaultAllowPrivilegeEscalation")
                .and_then(Value::as_bool),
            allowed_capabilities: strings(v.get("allowedCapabilities")),
            default_add_capabilities: strings(v.get("defaultAddCapabilities")),
            required_drop_capabilities: strings(v.get("requiredDropCapabilities")),
            read_only_root_filesystem: flag(v, "readOnlyRootFilesystem"),
            run_as_user,
            se_linux,
            fs_group: groups("fsGroup")?,
            supplemental_groups: groups("supplementalGroups")?,
            volumes: strings(v.get("volumes")),
            seccomp_profiles: strings(v.get("seccompProfiles")),
            users: strings(v.get("users")),
            groups: strings(v.get("groups")),
        })
    }

    fn allows_volume(&self, kind: &str) -> bool {
        self.volumes.iter().any(|v| v == "*" || v == kind)
    }

    /// How much the SCC allows: the lower, the more restrictive. The weights make host access
    /// outweigh user strategies, which outweigh capabilities, so the defaults sort as on a
    /// cluster: restricted-v2, restricted, nonroot-v2, nonroot, hostmount-anyuid,
    /// hostnetwork-v2, hostnetwork, hostaccess, privileged.
    pub fn restriction_points(&self) -> i64 {
        let mut points = 0;
        if self.allow_privileged_container {
            points += 1_000_000;
        }
        if self.allow_host_ports {
            points += 400_000;
        }
        for host in [
            self.allow_host_network,
            self.allow_host_pid,
            self.allow_host_ipc,
        ] {
            if host {
                points += 200_000;
            }
        }
        if self.allows_volume("hostPath") {
            points += 100_000;
        } else if self
            .volumes
            .iter()
            .any(|v| v != "none" && !SAFE_VOLUMES.contains(&v.as_str()))
        {
            points += 50_000;
        }
        points += match self.run_as_user {
            RunAsUser::RunAsAny => 40_000,
            RunAsUser::MustRunAsNonRoot => 30_000,
            RunAsUser::MustRunAsRange { .. } => 20_000,
            RunAsUser::MustRunAs { .. } => 10_000,
        };
        let caps: i64 = if self.allowed_capabilities.iter().any(|c| c == "*") {
            4_000
        } else {
            10 * self.allowed_capabilities.len() as i64
        };
        let drops: i64 = if self
            .required_drop_capabilities
            .iter()
            .any(|c| c.eq_ignore_ascii_case("ALL"))
        {
            -1_000
        } else {
            -10 * self.required_drop_capabilities.len() as i64
        };
        points + caps + 300 * self.default_add_capabilities.len() as i64 + drops
    }
}

/// OpenShift's SCC order: higher priority first, then the more restrictive, then by name.
pub fn by_priority(a: &Scc, b: &Scc) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| a.restriction_points().cmp(&b.restriction_points()))
        .then_with(|| a.name.cmp(&b.name))
}

// ----- providers: one SCC resolved for one namespace ----------------------------------------

/// An SCC with the namespace's allocations filled in (OpenShift's "provider").
#[derive(Debug, Clone)]
struct Provider<'a> {
    scc: &'a Scc,
    uid: Option<(i64, i64)>,
    level: Option<String>,
    fs_group: Option<Vec<(i64, i64)>>,
    supplemental: Option<Vec<(i64, i64)>>,
}

fn provider<'a>(scc: &'a Scc, ns: &Allocation) -> Result<Provider<'a>, String> {
    let uid = match scc.run_as_user {
        RunAsUser::MustRunAsRange {
            min: Some(min),
            max: Some(max),
        } => Some((min, max)),
        RunAsUser::MustRunAsRange {
            min: None,
            max: None,
        } => {
            let b = ns.uid_block(&scc.name)?;
            Some((b.first, b.last))
        }
        RunAsUser::MustRunAsRange { .. } => {
            return Err(format!(
                "error creating provider for SCC {} in namespace {}: MustRunAsRange requires a UIDRangeMin and a UIDRangeMax",
                scc.name, ns.namespace
            ));
        }
        RunAsUser::MustRunAs { uid: None } => {
            return Err(format!(
                "error creating provider for SCC {} in namespace {}: MustRunAs requires a UID",
                scc.name, ns.namespace
            ));
        }
        _ => None,
    };
    let level = match &scc.se_linux {
        Some(Some(level)) => Some(level.clone()),
        Some(None) => match ns.mcs.as_deref() {
            Some(l) if !l.is_empty() => Some(l.to_string()),
            _ => {
                return Err(format!(
                    "unable to find pre-allocated mcs annotation for namespace {} while trying to configure SCC {}: unable to find annotation {MCS_ANNOTATION}",
                    ns.namespace, scc.name
                ));
            }
        },
        None => None,
    };
    let fs_group = match &scc.fs_group {
        Groups::MustRunAs(r) if r.is_empty() => {
            let first = ns.group_blocks(&scc.name)?[0].first;
            Some(vec![(first, first)])
        }
        Groups::MustRunAs(r) => Some(r.clone()),
        Groups::RunAsAny => None,
    };
    let supplemental = match &scc.supplemental_groups {
        Groups::MustRunAs(r) if r.is_empty() => Some(
            ns.group_blocks(&scc.name)?
                .iter()
                .map(|b| (b.first, b.last))
                .collect(),
        ),
        Groups::MustRunAs(r) => Some(r.clone()),
        Groups::RunAsAny => None,
    };
    Ok(Provider {
        scc,
        uid,
        level,
        fs_group,
        supplemental,
    })
}

fn seccomp_name(profile: &Value) -> Option<String> {
    match profile.get("type").and_then(Value::as_str)? {
        "RuntimeDefault" => Some("runtime/default".into()),
        "Unconfined" => Some("unconfined".into()),
        "Localhost" => Some(format!(
            "localhost/{}",
            profile
                .get("localhostProfile")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )),
        other => Some(other.to_string()),
    }
}

fn seccomp_field(name: &str) -> Value {
    match name {
        "runtime/default" | "docker/default" => json!({"type": "RuntimeDefault"}),
        "unconfined" => json!({"type": "Unconfined"}),
        other => match other.strip_prefix("localhost/") {
            Some(p) => json!({"type": "Localhost", "localhostProfile": p}),
            None => json!({"type": other}),
        },
    }
}

/// `obj[key]` as an object, made one when absent; `None` when `obj` is not an object (a body
/// the validation will refuse anyway).
fn sc_mut<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

/// The containers of a pod spec with their path prefix, as admission visits them.
fn container_lists() -> [(&'static str, &'static str); 2] {
    [
        ("initContainers", "initContainers"),
        ("containers", "containers"),
    ]
}

fn cap_name(c: &str) -> String {
    c.trim_start_matches("CAP_").to_ascii_uppercase()
}

impl Provider<'_> {
    /// Assigns what the SCC defaults (on create), then validates; the errors carry OpenShift's
    /// `provider <name>: ` prefix.
    fn apply(&self, pod: &Value) -> Result<Value, Vec<String>> {
        let mut pod = pod.clone();
        self.mutate(&mut pod);
        let errors = self.validate(&pod);
        if errors.is_empty() {
            Ok(pod)
        } else {
            let prefix = format!("provider {}: ", self.scc.name);
            Err(errors.iter().map(|e| format!("{prefix}.{e}")).collect())
        }
    }

    fn mutate(&self, pod: &mut Value) {
        let s = self.scc;
        let Some(spec) = pod.get_mut("spec") else {
            return;
        };
        if let Some(psc) = sc_mut(spec, "securityContext") {
            if let Some(level) = &self.level
                && psc
                    .get("seLinuxOptions")
                    .and_then(|o| o.get("level"))
                    .is_none()
            {
                let opts = psc.entry("seLinuxOptions").or_insert_with(|| json!({}));
                if opts.is_object() {
                    opts["level"] = json!(level);
                }
            }
            if let Some(r) = &self.fs_group
                && !psc.contains_key("fsGroup")
                && let Some((min, _)) = r.first()
            {
                psc.insert("fsGroup".into(), json!(min));
            }
            if let Some(r) = &self.supplemental
                && !psc.contains_key("supplementalGroups")
                && let Some((min, _)) = r.first()
            {
                psc.insert("supplementalGroups".into(), json!([min]));
            }
            if !psc.contains_key("seccompProfile")
                && let Some(first) = s.seccomp_profiles.first()
                && first != "*"
            {
                psc.insert("seccompProfile".into(), seccomp_field(first));
            }
        }
        let pod_sc = spec["securityContext"].clone();
        for (list, _) in container_lists() {
            let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
                continue;
            };
            for c in containers {
                self.mutate_container(&pod_sc, c);
            }
        }
    }

    fn mutate_container(&self, pod_sc: &Value, c: &mut Value) {
        let s = self.scc;
        let Some(sc) = sc_mut(c, "securityContext") else {
            return;
        };
        let effective = |sc: &Map<String, Value>, k: &str| -> Option<Value> {
            sc.get(k).cloned().or_else(|| pod_sc.get(k).cloned())
        };
        if effective(sc, "runAsUser").is_none() {
            let uid = match s.run_as_user {
                RunAsUser::MustRunAsRange { .. } => self.uid.map(|(min, _)| min),
                RunAsUser::MustRunAs { uid } => uid,
                _ => None,
            };
            if let Some(uid) = uid {
                sc.insert("runAsUser".into(), json!(uid));
            }
        }
        if effective(sc, "runAsNonRoot").is_none() {
            let non_root = match effective(sc, "runAsUser").and_then(|v| v.as_i64()) {
                None => s.run_as_user == RunAsUser::MustRunAsNonRoot,
                Some(uid) => uid > 0,
            };
            if non_root {
                sc.insert("runAsNonRoot".into(), json!(true));
            }
        }
        if s.read_only_root_filesystem && !sc.contains_key("readOnlyRootFilesystem") {
            sc.insert("readOnlyRootFilesystem".into(), json!(true));
        }
        // Capabilities: the SCC's default adds (unless dropped) and its required drops.
        if !s.default_add_capabilities.is_empty() || !s.required_drop_capabilities.is_empty() {
            let caps = sc.entry("capabilities").or_insert_with(|| json!({}));
            if caps.is_object() {
                let listed = |caps: &Value, k: &str| -> Vec<String> {
                    caps.get(k)
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(cap_name).collect())
                        .unwrap_or_default()
                };
                let drops = listed(caps, "drop");
                let mut add: Vec<Value> = caps
                    .get("add")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for d in &s.default_add_capabilities {
                    let n = cap_name(d);
                    if !drops.contains(&n) && !listed(caps, "add").contains(&n) {
                        add.push(json!(d));
                    }
                }
                if !add.is_empty() {
                    caps["add"] = Value::Array(add);
                }
                let mut drop: Vec<Value> = caps
                    .get("drop")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for d in &s.required_drop_capabilities {
                    if !drops.contains(&cap_name(d)) {
                        drop.push(json!(d));
                    }
                }
                if !drop.is_empty() {
                    caps["drop"] = Value::Array(drop);
                }
            }
        }
        let privileged = sc.get("privileged").and_then(Value::as_bool) == Some(true);
        let adds_sys_admin = sc
            .get("capabilities")
            .and_then(|c| c.get("add"))
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|c| c.as_str() == Some("CAP_SYS_ADMIN")));
        if !sc.contains_key("allowPrivilegeEscalation") {
            if let Some(d) = s.default_allow_privilege_escalation
                && !privileged
                && !adds_sys_admin
            {
                sc.insert("allowPrivilegeEscalation".into(), json!(d));
            } else if !s.allow_privilege_escalation {
                sc.insert("allowPrivilegeEscalation".into(), json!(false));
            }
        }
    }

    fn validate(&self, pod: &Value) -> Vec<FieldError> {
        let s = self.scc;
        let mut errs = Vec::new();
        let spec = &pod["spec"];
        let psc = &spec["securityContext"];
        let path = "spec.securityContext";
        for (allowed, field, what) in [
            (s.allow_host_pid, "hostPID", "Host PID"),
            (s.allow_host_network, "hostNetwork", "Host network"),
            (s.allow_host_ipc, "hostIPC", "Host IPC"),
        ] {
            if !allowed && spec.get(field).and_then(Value::as_bool) == Some(true) {
                errs.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    json!(true),
                    format!("{what} is not allowed to be used"),
                ));
            }
        }
        if let Some(level) = &self.level
            && let Some(have) = psc.pointer("/seLinuxOptions/level").and_then(Value::as_str)
            && have != level
        {
            errs.push(FieldError::invalid(
                format!("{path}.seLinuxOptions.level"),
                json!(have),
                format!("must be {level}"),
            ));
        }
        if let Some(r) = &self.fs_group
            && let Some(g) = psc.get("fsGroup").and_then(Value::as_i64)
            && !r.iter().any(|(lo, hi)| (*lo..=*hi).contains(&g))
        {
            errs.push(FieldError::invalid(
                format!("{path}.fsGroup"),
                json!([g]),
                format!("{g} is not an allowed group"),
            ));
        }
        if let Some(r) = &self.supplemental {
            for g in psc
                .get("supplementalGroups")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_i64)
            {
                if !r.iter().any(|(lo, hi)| (*lo..=*hi).contains(&g)) {
                    errs.push(FieldError::invalid(
                        format!("{path}.supplementalGroups"),
                        json!([g]),
                        format!("{g} is not an allowed group"),
                    ));
                }
            }
        }
        if let Some(e) = self.check_seccomp(psc, &format!("{path}.seccompProfile")) {
            errs.push(e);
        }
        for (i, v) in spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let kind = v
                .as_object()
                .and_then(|m| m.keys().find(|k| *k != "name").cloned())
                .unwrap_or_else(|| "none".into());
            if !s.allows_volume(&kind) {
                errs.push(FieldError::invalid(
                    format!("spec.volumes[{i}]"),
                    json!(kind),
                    format!("{kind} volumes are not allowed to be used"),
                ));
            }
        }
        for (list, label) in container_lists() {
            for (i, c) in spec
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                errs.extend(self.validate_container(psc, c, &format!("{label}[{i}]")));
            }
        }
        errs
    }

    fn check_seccomp(&self, sc: &Value, field: &str) -> Option<FieldError> {
        let allowed = &self.scc.seccomp_profiles;
        let profile = sc.get("seccompProfile").and_then(seccomp_name)?;
        if allowed.iter().any(|p| p == "*") {
            return None;
        }
        let normal = |p: &str| {
            if p == "docker/default" {
                "runtime/default".to_string()
            } else {
                p.to_string()
            }
        };
        if allowed.iter().any(|p| normal(p) == normal(&profile)) {
            return None;
        }
        Some(if allowed.is_empty() {
            FieldError::forbidden(field, "seccomp may not be set")
        } else {
            FieldError::forbidden(
                field,
                format!(
                    "{profile} is not an allowed seccomp profile. Valid values are {}",
                    allowed.join(", ")
                ),
            )
        })
    }

    fn validate_container(&self, psc: &Value, c: &Value, path: &str) -> Vec<FieldError> {
        let s = self.scc;
        let mut errs = Vec::new();
        let sc = c.get("securityContext").cloned().unwrap_or(Value::Null);
        let effective = |k: &str| sc.get(k).or_else(|| psc.get(k)).cloned();
        if !s.allow_privileged_container
            && sc.get("privileged").and_then(Value::as_bool) == Some(true)
        {
            errs.push(FieldError::invalid(
                format!("{path}.privileged"),
                json!(true),
                "Privileged containers are not allowed",
            ));
        }
        if s.read_only_root_filesystem
            && sc.get("readOnlyRootFilesystem").and_then(Value::as_bool) != Some(true)
        {
            errs.push(FieldError::invalid(
                format!("{path}.readOnlyRootFilesystem"),
                json!(false),
                "ReadOnlyRootFilesystem must be set to true",
            ));
        }
        if !s.allow_privilege_escalation
            && sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false)
        {
            errs.push(FieldError::invalid(
                format!("{path}.allowPrivilegeEscalation"),
                json!(true),
                "Allowing privilege escalation for containers is not allowed",
            ));
        }
        let uid = effective("runAsUser").and_then(|v| v.as_i64());
        let non_root = effective("runAsNonRoot").and_then(|v| v.as_bool());
        match s.run_as_user {
            RunAsUser::MustRunAsRange { .. } => match (uid, self.uid) {
                (None, _) => errs.push(FieldError::required(format!("{path}.runAsUser"), "")),
                (Some(u), Some((min, max))) if u < min || u > max => {
                    errs.push(FieldError::invalid(
                        format!("{path}.runAsUser"),
                        json!(u),
                        format!("must be in the ranges: [{min}, {max}]"),
                    ));
                }
                _ => {}
            },
            RunAsUser::MustRunAs { uid: want } => match uid {
                None => errs.push(FieldError::required(format!("{path}.runAsUser"), "")),
                Some(u) if Some(u) != want => errs.push(FieldError::invalid(
                    format!("{path}.runAsUser"),
                    json!(u),
                    format!("must be: {}", want.unwrap_or_default()),
                )),
                _ => {}
            },
            RunAsUser::MustRunAsNonRoot => {
                if non_root.is_none() && uid.is_none() {
                    errs.push(FieldError::required(
                        format!("{path}.runAsNonRoot"),
                        "must be true",
                    ));
                } else if non_root == Some(false) {
                    errs.push(FieldError::invalid(
                        format!("{path}.runAsNonRoot"),
                        json!(false),
                        "must be true",
                    ));
                } else if uid == Some(0) {
                    errs.push(FieldError::invalid(
                        format!("{path}.runAsUser"),
                        json!(0),
                        "running with the root UID is forbidden",
                    ));
                }
            }
            RunAsUser::RunAsAny => {}
        }
        if let Some(level) = &self.level
            && let Some(have) = sc.pointer("/seLinuxOptions/level").and_then(Value::as_str)
            && have != level
        {
            errs.push(FieldError::invalid(
                format!("{path}.seLinuxOptions.level"),
                json!(have),
                format!("must be {level}"),
            ));
        }
        // Capabilities: every add must be allowed (or a default add), every required drop
        // dropped.
        let caps = sc.get("capabilities").cloned().unwrap_or(Value::Null);
        let listed = |k: &str| strings(caps.get(k));
        let any_allowed = s.allowed_capabilities.iter().any(|c| c == "*");
        for add in listed("add") {
            let n = cap_name(&add);
            let ok = any_allowed
                || s.allowed_capabilities
                    .iter()
                    .chain(&s.default_add_capabilities)
                    .any(|c| cap_name(c) == n);
            if !ok {
                errs.push(FieldError::invalid(
                    format!("{path}.capabilities.add"),
                    json!(add),
                    "capability may not be added",
                ));
            }
        }
        let drops: Vec<String> = listed("drop").iter().map(|d| cap_name(d)).collect();
        for required in &s.required_drop_capabilities {
            if !drops.contains(&cap_name(required)) {
                errs.push(FieldError::invalid(
                    format!("{path}.capabilities.drop"),
                    json!(listed("drop")),
                    format!("{required} is required to be dropped but was not found"),
                ));
            }
        }
        if let Some(e) = self.check_seccomp(&sc, &format!("{path}.seccompProfile")) {
            errs.push(e);
        }
        if !s.allow_host_ports {
            for p in c
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(hp) = p.get("hostPort").and_then(Value::as_i64)
                    && hp != 0
                {
                    errs.push(FieldError::invalid(
                        format!("{path}.containerPort"),
                        json!(hp),
                        "Host ports are not allowed to be used",
                    ));
                }
            }
        }
        errs
    }
}

// ----- admission -------------------------------------------------------------------------------

/// Decides whether the pod's creator or service account may use an SCC (its `users` and
/// `groups`, or RBAC `use`); the caller owns identities and policy.
pub trait Usable {
    fn usable(&self, scc: &Scc) -> bool;
}

impl<F: Fn(&Scc) -> bool> Usable for F {
    fn usable(&self, scc: &Scc) -> bool {
        self(scc)
    }
}

/// A pod admitted by an SCC: the pod as the SCC changed it (annotated with
/// `openshift.io/scc`), and the SCC's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    pub pod: Value,
    pub scc: String,
}

/// Admits `pod` (a Pod object) as OpenShift's SCC admission does on create. `sccs` are every
/// SCC object in the cluster, `namespace` the pod's Namespace object. `Err` is the reason the
/// API server gives after `pods "<name>" is forbidden: `.
pub fn admit(
    pod: &Value,
    namespace: &Value,
    sccs: &[Value],
    usable: &dyn Usable,
) -> Result<Admitted, String> {
    let required = pod
        .pointer(&format!(
            "/metadata/annotations/{}",
            REQUIRED_SCC_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let mut parsed = Vec::new();
    let mut bad = Vec::new();
    for v in sccs {
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if required.is_some_and(|r| r != name) {
            continue;
        }
        match Scc::from_value(v) {
            Ok(s) => parsed.push(s),
            Err(e) => bad.push(format!(
                "error creating provider for SCC {name} in namespace {}: {e}",
                namespace
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            )),
        }
    }
    if let Some(r) = required
        && parsed.is_empty()
        && bad.is_empty()
    {
        return Err(format!(
            "failed to retrieve the required SCC {r:?}: securitycontextconstraints.security.openshift.io {r:?} not found"
        ));
    }
    if parsed.is_empty() && bad.is_empty() {
        return Err("no SecurityContextConstraints found in cluster".into());
    }
    let alloc = Allocation::of(namespace);
    alloc.ready()?;
    parsed.sort_by(by_priority);
    let mut providers = Vec::new();
    for s in &parsed {
        match provider(s, &alloc) {
            Ok(p) => providers.push(p),
            Err(e) => bad.push(e),
        }
    }
    if !bad.is_empty() {
        return Err(aggregate(&bad));
    }
    let mut errors: Vec<String> = Vec::new();
    for p in &providers {
        if !usable.usable(p.scc) {
            errors.push(format!(
                "provider {:?}: Forbidden: not usable by user or serviceaccount",
                p.scc.name
            ));
            continue;
        }
        match p.apply(pod) {
            Ok(mut admitted) => {
                if let Some(meta) = admitted.get_mut("metadata").and_then(Value::as_object_mut) {
                    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
                    if ann.is_object() {
                        ann[VALIDATED_SCC_ANNOTATION] = json!(p.scc.name);
                    }
                }
                return Ok(Admitted {
                    pod: admitted,
                    scc: p.scc.name.clone(),
                });
            }
            Err(e) => errors.extend(e),
        }
    }
    Err(format!(
        "unable to validate against any security context constraint: {}",
        aggregate(&errors)
    ))
}

/// Go's error aggregate: one error as itself, several as `[a, b]`, repeats once.
pub fn aggregate(errors: &[String]) -> String {
    let mut unique: Vec<&String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [one] => (*one).clone(),
        many => format!(
            "[{}]",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

mod allocation;
mod defaults;

pub use allocation::{Allocation, Block, mcs_level, parse_block};
pub use defaults::{default_objects, default_sccs, scc_crd};

#[cfg(test)]
mod tests;
