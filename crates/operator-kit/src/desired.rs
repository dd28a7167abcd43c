//! Desired objects: what a driver operator's pure builders return and the apply engine takes —
//! an object in dynamic form, its resource, and the asset it came from (named in conditions).

use kube::api::DynamicObject;
use kube::core::ApiResource;
use serde::Serialize;

use crate::assets::{self, AssetError, Replacements};
use crate::kinds::{self, KindError};

/// One object to apply.
#[derive(Clone)]
pub struct Desired {
    /// The asset file (or a description of a generated object) it came from.
    pub asset: &'static str,
    pub resource: ApiResource,
    pub object: DynamicObject,
    /// The CRD that must be served before this object can exist (ServiceMonitor,
    /// VolumeSnapshotClass): a step may skip it while the CRD is absent.
    pub requires_crd: Option<&'static str>,
}

/// By hand: the object may be a Secret (the Manila driver's `csi-manila-secrets`).
impl std::fmt::Debug for Desired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desired")
            .field("asset", &self.asset)
            .field("resource", &self.resource)
            .field("object", &crate::redact::RedactedObject(&self.object))
            .field("requires_crd", &self.requires_crd)
            .finish()
    }
}

/// Why an object cannot be built; the message names the asset and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Asset(#[from] AssetError),
    #[error("asset {asset}: {source}")]
    Kind {
        asset: &'static str,
        #[source]
        source: KindError,
    },
    /// The driver declares no VolumeSnapshotClass (the default of
    /// [`Driver::snapshot_class`](crate::csi::Driver::snapshot_class)): the kit then has no
    /// snapshot-class step and posts no condition for one.
    #[error("the driver declares no VolumeSnapshotClass")]
    NoSnapshotClass,
}

/// A JSON object (with apiVersion and kind) as a desired object.
pub fn from_value(
    asset: &'static str,
    requires_crd: Option<&'static str>,
    value: serde_json::Value,
) -> Result<Desired, BuildError> {
    let (resource, object) =
        kinds::from_value(value).map_err(|source| BuildError::Kind { asset, source })?;
    Ok(Desired {
        asset,
        resource,
        object,
        requires_crd,
    })
}

/// A typed object (k8s-openapi or openshift-api) as a desired object.
pub fn from_typed<T: Serialize>(
    asset: &'static str,
    requires_crd: Option<&'static str>,
    obj: &T,
) -> Result<Desired, BuildError> {
    let value = serde_json::to_value(obj).map_err(|e| BuildError::Kind {
        asset,
        source: KindError::Convert(e.to_string()),
    })?;
    from_value(asset, requires_crd, value)
}

/// Renders a one-object asset with strict `${NAME}` replacement.
pub fn render(
    asset: &'static str,
    yaml: &str,
    requires_crd: Option<&'static str>,
    repl: &Replacements,
) -> Result<Desired, BuildError> {
    let rendered = assets::render(asset, yaml, repl)?;
    let value: serde_json::Value = assets::parse_single(asset, &rendered)?;
    from_value(asset, requires_crd, value)
}

/// Renders a one-object [`Asset`](crate::assets::Asset), carrying the CRD it requires.
pub fn from_asset(
    asset: &crate::assets::Asset,
    repl: &Replacements,
) -> Result<Desired, BuildError> {
    render(asset.name, asset.content, asset.requires_crd, repl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_render_to_desired_objects_or_name_the_problem() {
        let repl = Replacements::new().with("NAMESPACE", "ns");
        let d = render(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ${NAMESPACE}\n",
            None,
            &repl,
        )
        .expect("renders");
        assert_eq!(
            (d.asset, d.resource.kind.as_str()),
            ("cm.yaml", "ConfigMap")
        );
        assert_eq!(d.object.metadata.namespace.as_deref(), Some("ns"));
        let err = render(
            "x.yaml",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: a\n",
            None,
            &repl,
        )
        .expect_err("unknown kind");
        assert!(err.to_string().starts_with("asset x.yaml:"), "{err}");
        let err = render("y.yaml", "kind: ${MISSING}\n", None, &repl).expect_err("placeholder");
        assert!(err.to_string().contains("MISSING"), "{err}");
    }
}
