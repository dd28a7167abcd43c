//! The admission chain the verb handlers run: which plugins, in kube-apiserver's order (the
//! built-in volume plugins before the ValidatingAdmissionPolicy plugin). The interface is
//! `admission_plugins`; the rules are the plugins'.

use serde_json::Value;

use crate::admission_plugins::{AdmissionPlugin, Attributes};
use crate::admission_policy::PolicyPlugin;
use crate::errors::ApiError;
use crate::resources::ResourceType;
use crate::storage_admission::VolumePlugins;
use crate::store::ClusterView;

/// The chain, in kube-apiserver's order (the built-in plugins before the policy plugin).
const CHAIN: &[&dyn AdmissionPlugin] = &[&VolumePlugins, &PolicyPlugin];

/// Every plugin's mutating phase for a new object.
pub(crate) fn mutate(cluster: &dyn ClusterView, rt: &ResourceType, object: &mut Value) {
    for plugin in CHAIN {
        plugin.mutate_create(cluster, rt, object);
    }
}

/// Every plugin's validating phase, stopping at the first refusal; the warnings of all.
pub(crate) fn validate(
    cluster: &dyn ClusterView,
    attributes: &Attributes<'_>,
) -> Result<Vec<String>, ApiError> {
    let mut warnings = Vec::new();
    for plugin in CHAIN {
        warnings.extend(plugin.validate(cluster, attributes)?);
    }
    Ok(warnings)
}
