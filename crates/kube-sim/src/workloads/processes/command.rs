//! A container's command line and environment (pure), resolved as the kubelet would.

use super::POD_IP;
use super::state::{LocalProgram, text};
use crate::api::Cluster;
use crate::json::strings;
use base64::Engine;
use serde_json::Value;
use std::collections::BTreeMap;

/// Why a container cannot be configured, with the kubelet's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("configmap \"{name}\" not found")]
    ConfigMapNotFound { name: String },
    #[error("secret \"{name}\" not found")]
    SecretNotFound { name: String },
    #[error("couldn't find key {key} in ConfigMap {namespace}/{name}")]
    ConfigMapKeyNotFound {
        namespace: String,
        name: String,
        key: String,
    },
    #[error("couldn't find key {key} in Secret {namespace}/{name}")]
    SecretKeyNotFound {
        namespace: String,
        name: String,
        key: String,
    },
    #[error(
        "env var {var:?}: unsupported fieldPath {path:?} (kube-sim supports metadata.name, metadata.namespace, metadata.uid, metadata.labels['…'], metadata.annotations['…'], spec.nodeName, spec.serviceAccountName, status.podIP(s), status.hostIP(s))"
    )]
    UnsupportedField { var: String, path: String },
}

/// Where a `valueFrom` or `envFrom` reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    ConfigMap,
    Secret,
}

/// A ConfigMap's or Secret's data by name (Secret values decoded), `None` when it is missing.
pub type Lookup<'a> = dyn Fn(Source, &str) -> Option<BTreeMap<String, String>> + 'a;

/// The pod facts the downward API exposes.
#[derive(Debug, Clone)]
pub struct PodFacts {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub hash: String,
    pub service_account: String,
    pub node_name: String,
}

/// The service account a pod template runs as.
pub(super) fn service_account(template: &Value) -> String {
    ["/spec/serviceAccountName", "/spec/serviceAccount"]
        .iter()
        .map(|p| text(template, p))
        .find(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// Kubernetes' `$(VAR)` expansion: a defined variable is replaced, an undefined one is kept
/// as written, `$$` is an escaped `$`, and an unclosed `$(` is kept literally.
pub fn expand(input: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('(') {
            match tail.find(')') {
                Some(end) => {
                    let name = &tail[..end];
                    match vars.get(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = tail;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The downward API value of `path` for the pod.
pub(super) fn field_value(path: &str, pod: &PodFacts, template: &Value) -> Option<String> {
    let keyed = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|r| r.strip_prefix("['"))
            .and_then(|r| r.strip_suffix("']"))
    };
    Some(match path {
        "metadata.name" => pod.name.clone(),
        "metadata.namespace" => pod.namespace.clone(),
        "metadata.uid" => pod.uid.clone(),
        "spec.nodeName" => pod.node_name.clone(),
        "spec.serviceAccountName" => pod.service_account.clone(),
        "status.podIP" | "status.podIPs" | "status.hostIP" | "status.hostIPs" => POD_IP.into(),
        _ => {
            if let Some(key) = keyed("metadata.labels") {
                if key == "pod-template-hash" {
                    return Some(pod.hash.clone());
                }
                return Some(
                    text(
                        template,
                        &format!("/metadata/labels/{}", pointer_escape(key)),
                    )
                    .to_string(),
                );
            }
            let key = keyed("metadata.annotations")?;
            text(
                template,
                &format!("/metadata/annotations/{}", pointer_escape(key)),
            )
            .to_string()
        }
    })
}

pub(super) fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The container's environment as the kubelet builds it: `envFrom` sources in order, then
/// `env` entries in order (values expanded against what is defined so far), later names
/// overriding earlier ones. `lookup` returns a ConfigMap's or Secret's (decoded) data.
pub fn resolve_env(
    container: &Value,
    template: &Value,
    pod: &PodFacts,
    lookup: &Lookup<'_>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut env = BTreeMap::new();
    let not_found = |source: Source, name: &str| match source {
        Source::ConfigMap => ConfigError::ConfigMapNotFound { name: name.into() },
        Source::Secret => ConfigError::SecretNotFound { name: name.into() },
    };
    for from in container
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let prefix = text(from, "/prefix");
        let (source, reference) = match (from.get("configMapRef"), from.get("secretRef")) {
            (Some(r), _) => (Source::ConfigMap, r),
            (None, Some(r)) => (Source::Secret, r),
            (None, None) => continue,
        };
        let name = text(reference, "/name");
        match lookup(source, name) {
            Some(data) => {
                for (k, v) in data {
                    let key = format!("{prefix}{k}");
                    // The kubelet skips keys that cannot be environment variable names.
                    if !key.is_empty() && !key.contains('=') {
                        env.insert(key, v);
                    }
                }
            }
            None if optional(reference) => {}
            None => return Err(not_found(source, name)),
        }
    }
    for var in container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = text(var, "/name").to_string();
        if name.is_empty() {
            continue;
        }
        let Some(from) = var.get("valueFrom") else {
            let value = expand(text(var, "/value"), &env);
            env.insert(name, value);
            continue;
        };
        if let Some(field) = from.get("fieldRef") {
            let path = text(field, "/fieldPath");
            let value =
                field_value(path, pod, template).ok_or_else(|| ConfigError::UnsupportedField {
                    var: name.clone(),
                    path: path.into(),
                })?;
            env.insert(name, value);
            continue;
        }
        let (source, reference) = match (from.get("configMapKeyRef"), from.get("secretKeyRef")) {
            (Some(r), _) => (Source::ConfigMap, r),
            (None, Some(r)) => (Source::Secret, r),
            // resourceFieldRef: container resources are not modelled; the variable is unset.
            (None, None) => continue,
        };
        let object = text(reference, "/name");
        let key = text(reference, "/key");
        let value = match lookup(source, object) {
            None if optional(reference) => continue,
            None => return Err(not_found(source, object)),
            Some(data) => match data.get(key) {
                Some(v) => v.clone(),
                None if optional(reference) => continue,
                None => {
                    let (namespace, name, key) =
                        (pod.namespace.clone(), object.to_string(), key.to_string());
                    return Err(match source {
                        Source::ConfigMap => ConfigError::ConfigMapKeyNotFound {
                            namespace,
                            name,
                            key,
                        },
                        Source::Secret => ConfigError::SecretKeyNotFound {
                            namespace,
                            name,
                            key,
                        },
                    });
                }
            },
        };
        env.insert(name, value);
    }
    Ok(env)
}

pub(super) fn optional(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool) == Some(true)
}

/// The arguments after the program: the container's `command` minus `drop_leading` entries,
/// then its `args`, both with `$(VAR)` expansion from the container's environment, then the
/// program's `extra_args` as they are.
pub fn command_line(
    container: &Value,
    program: &LocalProgram,
    env: &BTreeMap<String, String>,
) -> Vec<String> {
    let list = |field: &str| strings(container.get(field));
    list("command")
        .into_iter()
        .skip(program.drop_leading)
        .chain(list("args"))
        .map(|a| expand(&a, env))
        .chain(program.extra_args.iter().cloned())
        .collect()
}

/// ConfigMap or Secret data from the store, Secret values base64-decoded.
pub(super) fn lookup_in(
    c: &Cluster,
    namespace: &str,
    source: Source,
    name: &str,
) -> Option<BTreeMap<String, String>> {
    let plural = match source {
        Source::ConfigMap => "configmaps",
        Source::Secret => "secrets",
    };
    let rt = c.resource("", "v1", plural)?;
    let obj = c.store().get(&rt.group_resource(), namespace, name)?;
    let data = obj.get("data").and_then(Value::as_object);
    Some(
        data.into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                let s = v.as_str()?;
                let value = match source {
                    Source::ConfigMap => s.to_string(),
                    Source::Secret => String::from_utf8_lossy(
                        &base64::engine::general_purpose::STANDARD.decode(s).ok()?,
                    )
                    .into_owned(),
                };
                Some((k.clone(), value))
            })
            .collect(),
    )
}
