//! The flags `render openstack-cinder|openstack-manila --hypershift` share: what the driver
//! operator would know when it runs in a hosted control plane (the control-plane namespace,
//! its `HostedControlPlane`, `RUN_AS_USER`, the management cluster's proxy and the release
//! version), turned into [`Hosted`] for the builders.

use std::path::PathBuf;

use anyhow::Context;
use kube::core::DynamicObject;
use operator_kit::hosted::{self, Hosted, HostedControlPlane};

#[derive(clap::Args, Default)]
pub struct HostedArgs {
    /// Render for a hosted control plane (HyperShift): the controller Deployment and the
    /// control-plane objects in --control-plane-namespace, the rest in --namespace (the guest).
    #[arg(long)]
    hypershift: bool,
    /// The control-plane namespace in the management cluster (with --hypershift).
    #[arg(long, value_name = "NS", requires = "hypershift")]
    control_plane_namespace: Option<String>,
    /// The HostedControlPlane of that namespace, as YAML (its nodeSelector, labels and
    /// tolerations place the controller); without it, a plane with none of them.
    #[arg(long, value_name = "FILE", requires = "hypershift")]
    hosted_control_plane: Option<PathBuf>,
    /// RUN_AS_USER of the operator's environment: the controller pod's runAsUser.
    #[arg(
        long,
        value_name = "UID",
        requires = "hypershift",
        allow_hyphen_values = true
    )]
    run_as_user: Option<String>,
    /// The management cluster's proxy as the operator's environment has it
    /// (HTTP_PROXY=..., HTTPS_PROXY=..., NO_PROXY=...); repeatable.
    #[arg(long = "management-proxy", value_name = "NAME=VALUE", value_parser = parse_proxy, requires = "hypershift")]
    management_proxy: Vec<(String, String)>,
    /// The operator's release (OPERATOR_IMAGE_VERSION): the controller's desired version.
    #[arg(long, value_name = "VERSION", requires = "hypershift")]
    release_version: Option<String>,
}

fn parse_proxy(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=VALUE"))?;
    if !hosted::MANAGEMENT_PROXY_ENV_VARS.contains(&k) {
        return Err(format!(
            "{k:?} is not one of {}",
            hosted::MANAGEMENT_PROXY_ENV_VARS.join(", ")
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

impl HostedArgs {
    /// The hosted facts and the control-plane namespace, when --hypershift is given; images
    /// gains `OPERATOR_IMAGE_VERSION` from --release-version.
    pub fn hosted(
        &self,
        images: &mut std::collections::BTreeMap<String, String>,
    ) -> anyhow::Result<Option<Hosted>> {
        if !self.hypershift {
            return Ok(None);
        }
        let namespace = self
            .control_plane_namespace
            .clone()
            .context("--hypershift needs --control-plane-namespace NS")?;
        let control_plane = match &self.hosted_control_plane {
            None => HostedControlPlane {
                namespace: namespace.clone(),
                ..HostedControlPlane::default()
            },
            Some(path) => read_hosted_control_plane(path, &namespace)?,
        };
        let version_env = operator_kit::assets::RELEASE_VERSION_ENV;
        if let Some(v) = &self.release_version {
            images.insert(version_env.to_string(), v.clone());
        }
        if images.get(version_env).is_none_or(|v| v.is_empty()) {
            anyhow::bail!(
                "--hypershift needs --release-version VERSION (the operator's {version_env}): the \
                 hosted controller carries it as release.openshift.io/desired-version"
            );
        }
        let run_as_user = self.run_as_user.clone();
        let proxy = self.management_proxy.clone();
        let lookup = move |name: &str| {
            if name == "RUN_AS_USER" {
                return run_as_user.clone();
            }
            proxy
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let hosted = Hosted::from_env(control_plane, lookup)
            .map_err(|e| anyhow::anyhow!("--run-as-user: {e}"))?;
        Ok(Some(hosted))
    }
}

/// Reads a HostedControlPlane from YAML; its namespace, when it has one, must be `namespace`.
fn read_hosted_control_plane(
    path: &std::path::Path,
    namespace: &str,
) -> anyhow::Result<HostedControlPlane> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut obj: DynamicObject =
        operator_kit::assets::parse_single("--hosted-control-plane", &text)
            .with_context(|| format!("{} is not one HostedControlPlane object", path.display()))?;
    let kind = obj.types.as_ref().map(|t| t.kind.as_str()).unwrap_or("");
    if kind != "HostedControlPlane" {
        anyhow::bail!(
            "{}: kind is {kind:?}, not HostedControlPlane",
            path.display()
        );
    }
    match obj.metadata.namespace.as_deref() {
        Some(ns) if ns != namespace => anyhow::bail!(
            "{}: the HostedControlPlane is in namespace {ns}, not --control-plane-namespace {namespace}",
            path.display()
        ),
        _ => obj.metadata.namespace = Some(namespace.to_string()),
    }
    HostedControlPlane::from_object(&obj).with_context(|| path.display().to_string())
}
