//! What `render openstack-cinder` and `render openstack-manila` share: the kit's facts from
//! the flags every driver's `render` has, `NAME=VALUE` flags, and the YAML stream printed.

use std::collections::BTreeMap;

use anyhow::Context;
use operator_kit::csi::BaseFacts;
use operator_kit::desired::Desired;
use operator_kit::hosted::Hosted;
use operator_kit::loglevel::LogLevel;
use operator_kit::observed_config::ServingInfo;

/// The flags of a driver's `render` that become the kit's facts.
pub struct BaseFlags<'a> {
    /// `--namespace`: the driver's, the guest's when hosted.
    pub namespace: &'a str,
    pub cluster_id: &'a str,
    pub control_plane_topology: &'a str,
    pub log_level: &'a str,
    pub proxy: &'a [(String, String)],
}

/// The [`BaseFlags`] of a driver's `RenderArgs`, whose fields of these flags have the same
/// names in every driver.
macro_rules! base_flags {
    ($args:expr) => {
        crate::render::BaseFlags {
            namespace: &$args.namespace,
            cluster_id: &$args.cluster_id,
            control_plane_topology: &$args.control_plane_topology,
            log_level: &$args.log_level,
            proxy: &$args.proxy,
        }
    };
}
pub(crate) use base_flags;

/// `--log-level`, or an error naming the values it takes.
pub fn log_level(value: &str) -> anyhow::Result<LogLevel> {
    let level = LogLevel::parse(value);
    if let Some(bad) = level.unknown {
        anyhow::bail!("--log-level {bad:?} is not one of Normal, Debug, Trace, TraceAll");
    }
    Ok(level.level)
}

/// The kit's facts of a `render`, with no cluster. Hosted, the control-plane objects go to the
/// control-plane namespace and `--namespace` is the guest's.
pub fn base_facts(
    flags: &BaseFlags<'_>,
    hosted: Option<Hosted>,
    images: BTreeMap<String, String>,
) -> anyhow::Result<BaseFacts> {
    let namespace = match &hosted {
        Some(h) => h.control_plane.namespace.clone(),
        None => flags.namespace.to_string(),
    };
    Ok(BaseFacts {
        namespace,
        node_namespace: flags.namespace.to_string(),
        hosted,
        images,
        cluster_id: flags.cluster_id.to_string(),
        topology: crate::flags::topology(flags.control_plane_topology)?,
        log_level: log_level(flags.log_level)?,
        proxy: flags.proxy.iter().cloned().collect(),
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
        let flags = BaseFlags {
            namespace: "guest-ns",
            cluster_id: "c",
            control_plane_topology: "External",
            log_level: "Debug",
            proxy: &[],
        };
        let standalone = base_facts(&flags, None, BTreeMap::new()).expect("valid");
        assert_eq!(
            (
                standalone.namespace.as_str(),
                standalone.node_namespace.as_str()
            ),
            ("guest-ns", "guest-ns")
        );
        let mut hosted = Hosted::default();
        hosted.control_plane.namespace = "clusters-x".into();
        let hosted = base_facts(&flags, Some(hosted), BTreeMap::new()).expect("valid");
        assert_eq!(
            (hosted.namespace.as_str(), hosted.node_namespace.as_str()),
            ("clusters-x", "guest-ns")
        );
        let bad = BaseFlags {
            log_level: "Loud",
            ..flags
        };
        let e = base_facts(&bad, None, BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("--log-level \"Loud\""), "{e}");
    }
}
