//! The operator's own logging: tracing with a filter that follows the klog verbosity the
//! ClusterCSIDriver's `operatorLogLevel` asks for, changeable at runtime without a restart.
//!
//! klog levels map onto tracing levels for our crates (2 → info, 4 → debug, 6 and 8 → trace);
//! at 8 the libraries we use log at trace too, as klog's `-v=8` shows HTTP traffic.

use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry, reload};

use crate::log_format::{self, KlogJson, LogFormat};

/// operator-kit's own target: its verbosity always follows the operator log level, with the
/// targets the process names (its binary and driver crates).
const KIT: &str = "operator_kit";

/// The filter directives for a klog verbosity: operator-kit and `own` (the process's crates)
/// at the level's verbosity, everything else (kube, hyper) quieter.
pub fn directives(klog_level: u8, own: &[&str]) -> String {
    let (ours, others) = match klog_level {
        0..=3 => ("info", "warn"),
        4..=5 => ("debug", "info"),
        6..=7 => ("trace", "info"),
        _ => ("trace", "debug"),
    };
    let mut parts = vec![others.to_string()];
    parts.extend(
        std::iter::once(KIT)
            .chain(own.iter().copied().filter(|c| *c != KIT))
            .map(|c| format!("{c}={ours}")),
    );
    parts.join(",")
}

/// Changes the process's log filter; cheap to clone.
#[derive(Clone)]
pub struct LogControl {
    handle: Option<reload::Handle<EnvFilter, Registry>>,
    /// The process's crates whose verbosity follows the level.
    own: &'static [&'static str],
}

impl LogControl {
    /// Installs the global subscriber at `klog_level`, writing text lines to stderr; `own`
    /// names the process's crates (tracing targets) whose verbosity follows the level.
    pub fn init(klog_level: u8, own: &'static [&'static str]) -> Self {
        Self::init_with(klog_level, LogFormat::Text, own)
    }

    /// Installs the global subscriber at `klog_level`, writing `format` lines to stderr.
    /// `RUST_LOG`, when set, wins over the level until `set_level` is called. A second call
    /// (tests) returns a handle that changes nothing.
    pub fn init_with(klog_level: u8, format: LogFormat, own: &'static [&'static str]) -> Self {
        let initial = std::env::var("RUST_LOG")
            .ok()
            .and_then(|s| EnvFilter::try_new(s).ok());
        let filter = initial.unwrap_or_else(|| EnvFilter::new(directives(klog_level, own)));
        let (layer, handle) = reload::Layer::new(filter);
        let output = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(log_format::ansi_for_stderr())
                .boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .event_format(KlogJson)
                .boxed(),
        };
        let installed = tracing_subscriber::registry()
            .with(layer)
            .with(output)
            .try_init()
            .is_ok();
        Self {
            handle: installed.then_some(handle),
            own,
        }
    }

    /// A handle that changes nothing (when someone else owns the subscriber).
    pub fn detached() -> Self {
        Self {
            handle: None,
            own: &[],
        }
    }

    /// Switches to a klog verbosity; returns whether the filter changed.
    pub fn set_level(&self, klog_level: u8) -> bool {
        match &self.handle {
            Some(h) => h
                .reload(EnvFilter::new(directives(klog_level, self.own)))
                .is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn klog_levels_map_to_tracing_directives() {
        let own = &["cinder", "openstack"];
        assert_eq!(
            directives(2, own),
            "warn,operator_kit=info,cinder=info,openstack=info"
        );
        assert!(directives(4, own).contains("cinder=debug"));
        assert!(
            directives(6, own).contains("openstack=trace")
                && directives(6, own).starts_with("info,")
        );
        assert!(directives(8, own).starts_with("debug,"));
        assert_eq!(
            directives(4, &["operator_kit"]),
            "info,operator_kit=debug",
            "the kit is named once"
        );
        assert_eq!(
            directives(2, &[]),
            "warn,operator_kit=info",
            "no driver crate is assumed"
        );
        for level in [0, 2, 4, 6, 8, 200] {
            assert!(
                EnvFilter::try_new(directives(level, own)).is_ok(),
                "level {level} gives a valid filter"
            );
        }
    }

    #[test]
    fn a_detached_handle_changes_nothing() {
        assert!(!LogControl::detached().set_level(4));
    }
}
