//! A stand-in for the cluster version operator: applies a directory of release manifests
//! (`manifests/openshift/`) in file-name order, as the CVO applies a release payload.
//!
//! Semantics kept from the CVO: manifests are applied in order, one object per file; objects
//! annotated `release.openshift.io/create-only: "true"` (`Storage/cluster`) are created when
//! missing and never updated; a `ClusterOperator` manifest only makes sure the object exists
//! (its status belongs to the operator). Everything else is applied with server-side apply
//! under the field manager `cluster-version-operator`, so a second run (an upgrade) updates
//! what changed and leaves fields others own alone.

use std::path::{Path, PathBuf};

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;

/// The CVO's field manager.
pub const FIELD_MANAGER: &str = "cluster-version-operator";
const CREATE_ONLY: &str = "release.openshift.io/create-only";

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
}

/// One parsed manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub file: String,
    pub object: Value,
}

/// Reads every `.yaml` file of `dir`, sorted by name, one object each.
pub fn load(dir: &Path) -> Result<Vec<Manifest>, CvoError> {
    let entries = std::fs::read_dir(dir).map_err(|source| CvoError::ReadDir {
        dir: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
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

/// Applies `manifests` in order; returns the files that changed something.
pub async fn apply(client: &Client, manifests: &[Manifest]) -> Result<Vec<String>, CvoError> {
    let mut changed = Vec::new();
    for m in manifests {
        if apply_one(client, m).await? {
            changed.push(m.file.clone());
        }
    }
    Ok(changed)
}

/// Loads and applies a directory.
pub async fn apply_dir(client: &Client, dir: &Path) -> Result<Vec<String>, CvoError> {
    apply(client, &load(dir)?).await
}

async fn apply_one(client: &Client, m: &Manifest) -> Result<bool, CvoError> {
    let parse = |message: String| CvoError::Parse {
        file: m.file.clone(),
        message,
    };
    let (ar, mut obj) =
        operator_kit::kinds::from_value(m.object.clone()).map_err(|e| parse(e.to_string()))?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    let api: Api<DynamicObject> = match obj.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => Api::namespaced_with(client.clone(), ns, &ar),
        _ => Api::all_with(client.clone(), &ar),
    };
    let create_only = obj
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CREATE_ONLY))
        .is_some_and(|v| v == "true");
    let err = |source| CvoError::Apply {
        file: m.file.clone(),
        source,
    };
    if create_only || ar.kind == "ClusterOperator" {
        if let Some(data) = obj.data.as_object_mut() {
            data.remove("status");
        }
        return match api.create(&PostParams::default(), &obj).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(err(e)),
        };
    }
    let before = api.get_opt(&name).await.map_err(err)?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let after = api
        .patch(&name, &params, &Patch::Apply(&obj))
        .await
        .map_err(err)?;
    Ok(before.and_then(|b| b.metadata.resource_version) != after.metadata.resource_version)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ]);
        let loaded = load(&dir).expect("loads");
        let files: Vec<&str> = loaded.iter().map(|m| m.file.as_str()).collect();
        assert_eq!(files, ["01_a.yaml", "02_b.yaml"]);

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
}
