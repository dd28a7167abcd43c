//! Objects from YAML files applied to a plane as an administrator would with
//! `kubectl apply --server-side`: kinds resolved by discovery (so any served kind works), CRDs
//! waited for until Established (a new CRD is served a moment after that, not before).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

/// The field manager of everything applied here.
pub const FIELD_MANAGER: &str = "realkube";

/// Why a file could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0}: not Established within 60 s")]
    NotEstablished(String),
}

/// The objects of a YAML file (`---`-separated; empty documents skipped).
pub fn read(path: &Path) -> Result<Vec<Value>, ApplyError> {
    let text = std::fs::read_to_string(path).map_err(|e| ApplyError::Read {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    parse(&text).map_err(|reason| ApplyError::Read {
        path: path.to_owned(),
        reason,
    })
}

/// The objects of a YAML text.
pub fn parse(text: &str) -> Result<Vec<Value>, String> {
    // YAML 1.2 core booleans and leading-zero numbers kept as strings, as operator-kit reads
    // its assets: `on`, `yes` and `0052` are strings to the API server too.
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    let docs: Vec<Value> =
        serde_saphyr::from_str_multiple_with_options(text, options).map_err(|e| e.to_string())?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

/// Applies every object of `files`, in order.
pub async fn files(client: &Client, files: &[PathBuf]) -> Result<(), ApplyError> {
    for path in files {
        for obj in read(path)? {
            object(client, &obj).await?;
        }
    }
    Ok(())
}

/// Applies one object (server-side apply, forced: this is the administrator's word).
pub async fn object(client: &Client, obj: &Value) -> Result<DynamicObject, ApplyError> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = obj["metadata"]["namespace"].as_str();
    let what = format!(
        "{kind} {}{name}",
        namespace.map(|n| format!("{n}/")).unwrap_or_default()
    );
    let api_err = |source| ApplyError::Api {
        what: what.clone(),
        source,
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(api_err)?;
    let api: Api<DynamicObject> = match (caps.scope, namespace) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        (kube::discovery::Scope::Namespaced, None) => {
            Api::default_namespaced_with(client.clone(), &resource)
        }
        (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .map_err(api_err)
}

/// Applies CRD files and waits until each is Established.
pub async fn crds(client: &Client, files: &[PathBuf]) -> Result<(), ApplyError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for path in files {
        for obj in read(path)? {
            if obj["kind"] == "CustomResourceDefinition" {
                names.push(
                    obj["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
            object(client, &obj).await?;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for name in names {
        loop {
            let crd = api.get(&name).await.map_err(|source| ApplyError::Api {
                what: format!("CustomResourceDefinition {name}"),
                source,
            })?;
            let established = crd
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                break;
            }
            if Instant::now() > deadline {
                return Err(ApplyError::NotEstablished(name));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_objects_and_empty_ones_are_skipped() {
        let docs = parse("---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n").unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["metadata"]["name"], "a");
    }

    #[test]
    fn malformed_yaml_is_an_error_not_a_panic() {
        assert!(parse("kind: [unclosed").is_err());
    }
}
