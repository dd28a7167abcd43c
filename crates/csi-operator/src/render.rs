//! What `render openstack-cinder` and `render openstack-manila` share: the kit's facts from
//! the flags every driver's `render` has, `NAME=VALUE` flags, and the YAML stream printed.

use std::collections::BTreeMap;

use anyhow::Context;
use operator_kit::csi::{BaseFacts, DriverOptions};
use operator_kit::desired::Desired;
use operator_kit::loglevel::LogLevel;
use operator_kit::observed_config::ServingInfo;

/// The flags of every driver's `render` about the cluster, in this order.
#[derive(clap::Args)]
pub struct ClusterFlags {
    /// The cluster ID (Infrastructure status.infrastructureName).
    #[arg(long, default_value = "cluster-id")]
    pub cluster_id: String,
    /// Control-plane topology: HighlyAvailable, SingleReplica, External, ...
    #[arg(long, default_value = "HighlyAvailable")]
    pub control_plane_topology: String,
    /// Operand log level: Normal, Debug, Trace, TraceAll.
    #[arg(long, default_value = "Normal")]
    pub log_level: String,
}

/// The flags of every driver's `render` about the operator's environment, in this order.
#[derive(clap::Args)]
pub struct EnvironmentFlags {
    /// Proxy settings as observed (HTTP_PROXY=..., HTTPS_PROXY=..., NO_PROXY=...); repeatable.
    #[arg(long = "proxy", value_parser = parse_pair)]
    pub proxy: Vec<(String, String)>,
    #[command(flatten)]
    pub hosted: crate::hosted_render::HostedArgs,
}

/// `--log-level`, or an error naming the values it takes.
pub fn log_level(value: &str) -> anyhow::Result<LogLevel> {
    let level = LogLevel::parse(value);
    if let Some(bad) = level.unknown {
        anyhow::bail!("--log-level {bad:?} is not one of Normal, Debug, Trace, TraceAll");
    }
    Ok(level.level)
}

/// The images a `render` of the driver of `O` shows: the upstream releases that
/// manifests/kubernetes/ uses (images matter little to what `render` shows, and so the command
/// works as the docs type it), then the operator's environment, then `--image` (`given`).
pub fn images<O: DriverOptions>(given: &[(String, String)]) -> BTreeMap<String, String> {
    let mut images = cluster_storage::kubernetes::upstream_operand_images(O::SPEC);
    images.extend(O::images_from_env());
    images.extend(given.iter().cloned());
    images
}

/// The kit's facts of a `render`, with no cluster. Hosted (`--hypershift`, which also sets
/// the control-plane images), the control-plane objects go to the control-plane namespace and
/// `--namespace` is the guest's.
pub fn base_facts(
    namespace: &str,
    cluster: &ClusterFlags,
    environment: &EnvironmentFlags,
    mut images: BTreeMap<String, String>,
) -> anyhow::Result<BaseFacts> {
    let log_level = log_level(&cluster.log_level)?;
    let hosted = environment.hosted.hosted(&mut images)?;
    let control_plane_namespace = match &hosted {
        Some(h) => h.control_plane.namespace.clone(),
        None => namespace.to_string(),
    };
    Ok(BaseFacts {
        namespace: control_plane_namespace,
        node_namespace: namespace.to_string(),
        hosted,
        images,
        cluster_id: cluster.cluster_id.clone(),
        topology: crate::flags::topology(&cluster.control_plane_topology)?,
        log_level,
        proxy: environment.proxy.iter().cloned().collect(),
        serving: ServingInfo::intermediate(),
        ..BaseFacts::default()
    })
}

/// A `NAME=VALUE` flag (`--image`, `--proxy`).
pub fn parse_pair(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=VALUE"))?;
    if k.is_empty() {
        return Err(format!("{s:?}: the name before '=' is empty"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// The objects as a YAML stream (`---` before each), without `managedFields`.
pub fn yaml_stream(objects: impl IntoIterator<Item = Desired>) -> anyhow::Result<String> {
    let mut out = String::new();
    for d in objects {
        let mut value = serde_json::to_value(&d.object).context("cannot serialize")?;
        if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.remove("managedFields");
        }
        out.push_str("---\n");
        out.push_str(&operator_kit::assets::to_yaml(&value)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_need_a_name_and_an_equals_sign() {
        assert_eq!(parse_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert!(parse_pair("A").unwrap_err().contains("expected NAME=VALUE"));
        assert!(
            parse_pair("=x")
                .unwrap_err()
                .contains("name before '=' is empty")
        );
    }

    #[test]
    fn hosted_facts_put_the_control_plane_apart_from_the_guest() {
        let mut cluster = ClusterFlags {
            cluster_id: "c".into(),
            control_plane_topology: "External".into(),
            log_level: "Debug".into(),
        };
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            environment: EnvironmentFlags,
        }
        let standalone = <Flags as clap::Parser>::parse_from(["render"]).environment;
        let facts = |cluster: &ClusterFlags, environment: &EnvironmentFlags| {
            base_facts("guest-ns", cluster, environment, BTreeMap::new())
        };
        let standalone_facts = facts(&cluster, &standalone).expect("valid");
        assert_eq!(
            (
                standalone_facts.namespace.as_str(),
                standalone_facts.node_namespace.as_str()
            ),
            ("guest-ns", "guest-ns")
        );
        let hosted = <Flags as clap::Parser>::parse_from([
            "render",
            "--hypershift",
            "--control-plane-namespace",
            "clusters-x",
            "--release-version",
            "4.99.0",
        ])
        .environment;
        let hosted = facts(&cluster, &hosted).expect("valid");
        assert_eq!(
            (hosted.namespace.as_str(), hosted.node_namespace.as_str()),
            ("clusters-x", "guest-ns")
        );
        cluster.log_level = "Loud".into();
        let e = facts(&cluster, &standalone).unwrap_err();
        assert!(e.to_string().contains("--log-level \"Loud\""), "{e}");
    }
}
