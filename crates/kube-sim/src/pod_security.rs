//! Pod Security Admission (PSA): the Pod Security Standards enforced by the namespace label
//! `pod-security.kubernetes.io/enforce`, as the `PodSecurity` admission plugin of
//! kube-apiserver v1.33 enforces them on pod creation, with its messages.
//!
//! What is modelled: the levels `privileged`, `baseline` and `restricted` at their latest
//! version (a `-version` label only changes the level's name in the message), an unreadable
//! level treated as `restricted` (PSA fails closed), and the checks of each level:
//! - baseline: host namespaces, privileged containers, capabilities beyond the default set,
//!   hostPath volumes, host ports, SELinux type/user/role, `/proc` mount type, `Unconfined`
//!   seccomp, unsafe sysctls, AppArmor `unconfined`;
//! - restricted, on top: volume types, `allowPrivilegeEscalation=false`, `runAsNonRoot=true`,
//!   no `runAsUser=0`, seccomp `RuntimeDefault`/`Localhost`, `drop: [ALL]` and only
//!   `NET_BIND_SERVICE` added.
//!
//! Not modelled: the `warn` and `audit` modes, exemptions, Windows pods, checks of pod
//! templates in workload objects (PSA only warns about those). Pure functions: the caller
//! reads the namespace.

use crate::json::strings;
use serde_json::Value;

/// The enforce label of a namespace.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
/// The version of the enforced level.
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";

/// A Pod Security Standards level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    #[default]
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "privileged" => Some(Self::Privileged),
            "baseline" => Some(Self::Baseline),
            "restricted" => Some(Self::Restricted),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Privileged => "privileged",
            Self::Baseline => "baseline",
            Self::Restricted => "restricted",
        }
    }
}

/// The level a namespace enforces and its name in messages (`restricted:latest`); `default`
/// when the namespace has no enforce label.
pub fn enforced(namespace: &Value, default: Level) -> (Level, String) {
    let label = |k: &str| {
        namespace
            .pointer(&format!("/metadata/labels/{}", k.replace('/', "~1")))
            .and_then(Value::as_str)
    };
    let level = match label(ENFORCE_LABEL) {
        None => default,
        // PSA fails closed: a level it cannot read is enforced as restricted.
        Some(l) => Level::parse(l).unwrap_or(Level::Restricted),
    };
    let version = label(ENFORCE_VERSION_LABEL)
        .filter(|v| *v == "latest" || v.starts_with('v'))
        .unwrap_or("latest");
    (level, format!("{}:{version}", level.as_str()))
}

/// Checks a pod (object) against the namespace's enforced level; `Err` is the reason after
/// `pods "<name>" is forbidden: `.
pub fn admit(pod: &Value, namespace: &Value, default: Level) -> Result<(), String> {
    let (level, name) = enforced(namespace, default);
    let failures = check(level, pod);
    if failures.is_empty() {
        return Ok(());
    }
    Err(format!(
        "violates PodSecurity {name:?}: {}",
        failures.join(", ")
    ))
}

/// The capabilities a baseline pod may add (the container runtimes' defaults).
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The volume types `restricted` allows: the same as OpenShift's `-v2` SCCs.
const RESTRICTED_VOLUMES: [&str; 8] = crate::scc::SAFE_VOLUMES;

const SAFE_SYSCTLS: [&str; 11] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
];

/// Every container of the pod (init, regular, ephemeral) with its name.
fn containers(spec: &Value) -> Vec<(&str, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec.get(*k).and_then(Value::as_array).into_iter().flatten())
        .map(|c| (c.get("name").and_then(Value::as_str).unwrap_or(""), c))
        .collect()
}

/// `container "a"` or `containers "a", "b"`.
fn named(what: &str, names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    if names.len() == 1 {
        format!("{what} {}", quoted.join(", "))
    } else {
        format!("{what}s {}", quoted.join(", "))
    }
}

/// The failed checks of `level` for `pod`, each as `<check> (<detail>)`, in PSA's order.
pub fn check(level: Level, pod: &Value) -> Vec<String> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    let psc = spec.get("securityContext").cloned().unwrap_or(Value::Null);
    let cs = containers(&spec);
    let csc = |c: &Value, k: &str| c.get("securityContext").and_then(|s| s.get(k)).cloned();
    let restricted = level == Level::Restricted;
    let mut out = Vec::new();

    // --- baseline ---
    let host: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|k| spec.get(**k).and_then(Value::as_bool) == Some(true))
        .map(|k| format!("{k}=true"))
        .collect();
    if !host.is_empty() {
        out.push(format!("host namespaces ({})", host.join(", ")));
    }
    let privileged: Vec<String> = cs
        .iter()
        .filter(|(_, c)| csc(c, "privileged").and_then(|v| v.as_bool()) == Some(true))
        .map(|(n, _)| n.to_string())
        .collect();
    if !privileged.is_empty() {
        out.push(format!(
            "privileged ({} must not set securityContext.privileged=true)",
            named("container", &privileged)
        ));
    }
    if !restricted {
        let mut bad_caps: Vec<String> = Vec::new();
        let mut who: Vec<String> = Vec::new();
        for (n, c) in &cs {
            let adds = strings(c.pointer("/securityContext/capabilities/add"));
            let bad: Vec<String> = adds
                .into_iter()
                .filter(|a| !BASELINE_CAPABILITIES.contains(&a.as_str()))
                .collect();
            if !bad.is_empty() {
                who.push(n.to_string());
                for b in bad {
                    if !bad_caps.contains(&b) {
                        bad_caps.push(b);
                    }
                }
            }
        }
        if !who.is_empty() {
            let caps: Vec<String> = bad_caps.iter().map(|c| format!("{c:?}")).collect();
            out.push(format!(
                "non-default capabilities ({} must not include {} in securityContext.capabilities.add)",
                named("container", &who),
                caps.join(", ")
            ));
        }
    }
    let volumes: Vec<(String, String)> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let name = v
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let kind = v
                .as_object()
                .and_then(|m| m.keys().find(|k| *k != "name").cloned())
                .unwrap_or_default();
            (name, kind)
        })
        .collect();
    if !restricted {
        let host_paths: Vec<String> = volumes
            .iter()
            .filter(|(_, k)| k == "hostPath")
            .map(|(n, _)| n.clone())
            .collect();
        if !host_paths.is_empty() {
            out.push(format!(
                "hostPath volumes ({})",
                named("volume", &host_paths)
            ));
        }
    }
    let mut host_ports: Vec<String> = Vec::new();
    let mut port_users: Vec<String> = Vec::new();
    for (n, c) in &cs {
        let ports: Vec<String> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .map(|p| p.to_string())
            .collect();
        if !ports.is_empty() {
            port_users.push(n.to_string());
            host_ports.extend(ports);
        }
    }
    if !port_users.is_empty() {
        let word = if host_ports.len() == 1 {
            "hostPort"
        } else {
            "hostPorts"
        };
        out.push(format!(
            "hostPort ({} uses {word} {})",
            named("container", &port_users),
            host_ports.join(", ")
        ));
    }
    let apparmor_bad = |p: Option<Value>| {
        p.and_then(|p| p.get("type").and_then(Value::as_str).map(str::to_string))
            .is_some_and(|t| t == "Unconfined")
    };
    if apparmor_bad(psc.get("appArmorProfile").cloned())
        || cs
            .iter()
            .any(|(_, c)| apparmor_bad(csc(c, "appArmorProfile")))
    {
        out.push("appArmorProfile (pod or containers must not set appArmorProfile.type to \"Unconfined\")".into());
    }
    let selinux_bad = |o: Option<Value>| {
        o.is_some_and(|o| {
            let t = o.get("type").and_then(Value::as_str).unwrap_or("");
            ![
                "",
                "container_t",
                "container_init_t",
                "container_kvm_t",
                "container_engine_t",
            ]
            .contains(&t)
                || o.get("user")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
                || o.get("role")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
        })
    };
    let mut selinux_who: Vec<String> = Vec::new();
    if selinux_bad(psc.get("seLinuxOptions").cloned()) {
        selinux_who.push("pod".into());
    }
    let bad_containers: Vec<String> = cs
        .iter()
        .filter(|(_, c)| selinux_bad(csc(c, "seLinuxOptions")))
        .map(|(n, _)| n.to_string())
        .collect();
    if !bad_containers.is_empty() {
        selinux_who.push(named("container", &bad_containers));
    }
    if !selinux_who.is_empty() {
        out.push(format!(
            "seLinuxOptions ({} set forbidden securityContext.seLinuxOptions)",
            selinux_who.join(" and ")
        ));
    }
    let proc_mount: Vec<String> = cs
        .iter()
        .filter(|(_, c)| {
            csc(c, "procMount")
                .and_then(|v| v.as_str().map(str::to_string))
                .is_some_and(|m| m != "Default")
        })
        .map(|(n, _)| n.to_string())
        .collect();
    if !proc_mount.is_empty() {
        out.push(format!(
            "procMount ({} must not set securityContext.procMount to \"Unmasked\")",
            named("container", &proc_mount)
        ));
    }
    let seccomp_type = |p: Option<Value>| {
        p.and_then(|p| p.get("type").and_then(Value::as_str).map(str::to_string))
    };
    let pod_seccomp = seccomp_type(psc.get("seccompProfile").cloned());
    if !restricted {
        let mut who = Vec::new();
        if pod_seccomp.as_deref() == Some("Unconfined") {
            who.push("pod".to_string());
        }
        let unconfined: Vec<String> = cs
            .iter()
            .filter(|(_, c)| {
                seccomp_type(csc(c, "seccompProfile")).as_deref() == Some("Unconfined")
            })
            .map(|(n, _)| n.to_string())
            .collect();
        if !unconfined.is_empty() {
            who.push(named("container", &unconfined));
        }
        if !who.is_empty() {
            out.push(format!(
                "seccompProfile ({} must not set securityContext.seccompProfile.type to \"Unconfined\")",
                who.join(" and ")
            ));
        }
    }
    let sysctls: Vec<String> = psc
        .get("sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|n| !SAFE_SYSCTLS.contains(n))
        .map(str::to_string)
        .collect();
    if !sysctls.is_empty() {
        out.push(format!("forbidden sysctls ({})", sysctls.join(", ")));
    }
    if !restricted {
        return out;
    }

    // --- restricted ---
    let escalating: Vec<String> = cs
        .iter()
        .filter(|(_, c)| {
            csc(c, "allowPrivilegeEscalation").and_then(|v| v.as_bool()) != Some(false)
        })
        .map(|(n, _)| n.to_string())
        .collect();
    if !escalating.is_empty() {
        out.push(format!(
            "allowPrivilegeEscalation != false ({} must set securityContext.allowPrivilegeEscalation=false)",
            named("container", &escalating)
        ));
    }
    let mut no_drop: Vec<String> = Vec::new();
    let mut bad_add: Vec<String> = Vec::new();
    let mut bad_caps: Vec<String> = Vec::new();
    for (n, c) in &cs {
        let drops = strings(c.pointer("/securityContext/capabilities/drop"));
        if !drops.iter().any(|d| d == "ALL") {
            no_drop.push(n.to_string());
        }
        let adds: Vec<String> = strings(c.pointer("/securityContext/capabilities/add"))
            .into_iter()
            .filter(|a| a != "NET_BIND_SERVICE")
            .collect();
        if !adds.is_empty() {
            bad_add.push(n.to_string());
            for a in adds {
                if !bad_caps.contains(&a) {
                    bad_caps.push(a);
                }
            }
        }
    }
    let mut caps_detail = Vec::new();
    if !no_drop.is_empty() {
        caps_detail.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            named("container", &no_drop)
        ));
    }
    if !bad_add.is_empty() {
        let caps: Vec<String> = bad_caps.iter().map(|c| format!("{c:?}")).collect();
        caps_detail.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            named("container", &bad_add),
            caps.join(", ")
        ));
    }
    if !caps_detail.is_empty() {
        out.push(format!(
            "unrestricted capabilities ({})",
            caps_detail.join("; ")
        ));
    }
    let restricted_volumes: Vec<(String, String)> = volumes
        .iter()
        .filter(|(_, k)| !RESTRICTED_VOLUMES.contains(&k.as_str()))
        .cloned()
        .collect();
    if !restricted_volumes.is_empty() {
        let names: Vec<String> = restricted_volumes.iter().map(|(n, _)| n.clone()).collect();
        let mut kinds: Vec<String> = Vec::new();
        for (_, k) in &restricted_volumes {
            if !kinds.contains(k) {
                kinds.push(k.clone());
            }
        }
        let kinds_q: Vec<String> = kinds.iter().map(|k| format!("{k:?}")).collect();
        let word = if kinds.len() == 1 { "type" } else { "types" };
        let verb = if names.len() == 1 { "uses" } else { "use" };
        out.push(format!(
            "restricted volume types ({} {verb} restricted volume {word} {})",
            named("volume", &names),
            kinds_q.join(", ")
        ));
    }
    // runAsNonRoot: the pod's or each container's must be true, and none may say false.
    let pod_non_root = psc.get("runAsNonRoot").and_then(Value::as_bool);
    let mut explicit_false = Vec::new();
    if pod_non_root == Some(false) {
        explicit_false.push("pod".to_string());
    }
    let false_containers: Vec<String> = cs
        .iter()
        .filter(|(_, c)| csc(c, "runAsNonRoot").and_then(|v| v.as_bool()) == Some(false))
        .map(|(n, _)| n.to_string())
        .collect();
    if !false_containers.is_empty() {
        explicit_false.push(named("container", &false_containers));
    }
    let unset: Vec<String> = if pod_non_root == Some(true) {
        Vec::new()
    } else {
        cs.iter()
            .filter(|(_, c)| csc(c, "runAsNonRoot").is_none())
            .map(|(n, _)| n.to_string())
            .collect()
    };
    if !explicit_false.is_empty() {
        out.push(format!(
            "runAsNonRoot != true ({} must not set securityContext.runAsNonRoot=false)",
            explicit_false.join(" and ")
        ));
    } else if !unset.is_empty() {
        out.push(format!(
            "runAsNonRoot != true (pod or {} must set securityContext.runAsNonRoot=true)",
            named("container", &unset)
        ));
    }
    let mut root = Vec::new();
    if psc.get("runAsUser").and_then(Value::as_i64) == Some(0) {
        root.push("pod".to_string());
    }
    let root_containers: Vec<String> = cs
        .iter()
        .filter(|(_, c)| csc(c, "runAsUser").and_then(|v| v.as_i64()) == Some(0))
        .map(|(n, _)| n.to_string())
        .collect();
    if !root_containers.is_empty() {
        root.push(named("container", &root_containers));
    }
    if !root.is_empty() {
        out.push(format!(
            "runAsUser=0 ({} must not set runAsUser=0)",
            root.join(" and ")
        ));
    }
    let allowed = |t: &Option<String>| matches!(t.as_deref(), Some("RuntimeDefault" | "Localhost"));
    let mut seccomp_bad = Vec::new();
    let bad_set: Vec<String> = cs
        .iter()
        .filter(|(_, c)| {
            let t = seccomp_type(csc(c, "seccompProfile"));
            t.is_some() && !allowed(&t)
        })
        .map(|(n, _)| n.to_string())
        .collect();
    if pod_seccomp.is_some() && !allowed(&pod_seccomp) {
        seccomp_bad.push(format!(
            "pod must not set securityContext.seccompProfile.type to {:?}",
            pod_seccomp.clone().unwrap_or_default()
        ));
    }
    if !bad_set.is_empty() {
        seccomp_bad.push(format!(
            "{} must not set securityContext.seccompProfile.type to a value other than \"RuntimeDefault\" or \"Localhost\"",
            named("container", &bad_set)
        ));
    }
    if !allowed(&pod_seccomp) {
        let unset: Vec<String> = cs
            .iter()
            .filter(|(_, c)| seccomp_type(csc(c, "seccompProfile")).is_none())
            .map(|(n, _)| n.to_string())
            .collect();
        if !unset.is_empty() && pod_seccomp.is_none() {
            seccomp_bad.push(format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                named("container", &unset)
            ));
        }
    }
    if !seccomp_bad.is_empty() {
        out.push(format!("seccompProfile ({})", seccomp_bad.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": spec})
    }

    fn ns(labels: Value) -> Value {
        json!({"metadata": {"name": "n", "labels": labels}})
    }

    fn good_restricted() -> Value {
        pod(json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "i", "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            }}],
            "volumes": [{"name": "s", "secret": {"secretName": "s"}}],
        }))
    }

    #[test]
    fn privileged_allows_anything_and_is_the_default() {
        let p = pod(
            json!({"hostNetwork": true, "containers": [{"name": "c", "securityContext": {"privileged": true}}]}),
        );
        assert_eq!(admit(&p, &ns(json!({})), Level::Privileged), Ok(()));
        assert_eq!(
            admit(
                &p,
                &ns(json!({ENFORCE_LABEL: "privileged"})),
                Level::Restricted
            ),
            Ok(())
        );
    }

    #[test]
    fn baseline_refuses_host_access_and_privilege_with_the_real_message() {
        let p = pod(json!({
            "hostNetwork": true, "hostPID": true,
            "containers": [
                {"name": "a", "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}},
                 "ports": [{"containerPort": 80, "hostPort": 80}]},
            ],
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        }));
        let err = admit(
            &p,
            &ns(json!({ENFORCE_LABEL: "baseline"})),
            Level::Privileged,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true, hostPID=true), \
             privileged (container \"a\" must not set securityContext.privileged=true), \
             non-default capabilities (container \"a\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add), \
             hostPath volumes (volume \"h\"), hostPort (container \"a\" uses hostPort 80)"
        );
    }

    #[test]
    fn baseline_accepts_an_ordinary_pod_restricted_does_not() {
        let p = pod(json!({"containers": [{"name": "c", "image": "i"}]}));
        assert!(check(Level::Baseline, &p).is_empty());
        let err = admit(
            &p,
            &ns(json!({ENFORCE_LABEL: "restricted"})),
            Level::Privileged,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn restricted_accepts_a_hardened_pod_and_names_each_violation() {
        assert!(check(Level::Restricted, &good_restricted()).is_empty());
        let mut p = good_restricted();
        p["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["SYS_TIME"]);
        p["spec"]["containers"][0]["securityContext"]["runAsUser"] = json!(0);
        p["spec"]["volumes"] = json!([{"name": "h", "hostPath": {"path": "/"}}]);
        assert_eq!(
            check(Level::Restricted, &p),
            vec![
                "unrestricted capabilities (container \"c\" must not include \"SYS_TIME\" in securityContext.capabilities.add)".to_string(),
                "restricted volume types (volume \"h\" uses restricted volume type \"hostPath\")".into(),
                "runAsUser=0 (container \"c\" must not set runAsUser=0)".into(),
            ]
        );
    }

    #[test]
    fn labels_pick_the_level_and_version_and_bad_levels_fail_closed() {
        let (l, name) = enforced(
            &ns(json!({ENFORCE_LABEL: "baseline", ENFORCE_VERSION_LABEL: "v1.29"})),
            Level::Privileged,
        );
        assert_eq!((l, name.as_str()), (Level::Baseline, "baseline:v1.29"));
        let (l, _) = enforced(&ns(json!({ENFORCE_LABEL: "strict"})), Level::Privileged);
        assert_eq!(l, Level::Restricted);
        let (l, name) = enforced(&ns(json!({})), Level::Baseline);
        assert_eq!((l, name.as_str()), (Level::Baseline, "baseline:latest"));
    }
}
