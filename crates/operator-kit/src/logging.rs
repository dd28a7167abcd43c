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

/// The crates whose verbosity follows the operator log level.
const OUR_CRATES: &[&str] = &[
    "operator_kit",
    "cinder",
    "manila",
    "cluster_storage",
    "openstack",
    "csi_operator",
];

/// The filter directives for a klog verbosity.
pub fn directives(klog_level: u8) -> String {
    let (ours, others) = match klog_level {
        0..=3 => ("info", "warn"),
        4..=5 => ("debug", "info"),
        6..=7 => ("trace", "info"),
        _ => ("trace", "debug"),
    };
    let mut parts = vec![others.to_string()];
    parts.extend(OUR_CRATES.iter().map(|c| format!("{c}={ours}")));
    parts.join(",")
}

/// Changes the process's log filter; cheap to clone.
#[derive(Clone)]
pub struct LogControl {
    handle: Option<reload::Handle<EnvFilter, Registry>>,
}

impl LogControl {
    /// Installs the global subscriber at `klog_level`, writing text lines to stderr.
    pub fn init(klog_level: u8) -> Self {
        Self::init_with(klog_level, LogFormat::Text)
    }

    /// Installs the global subscriber at `klog_level`, writing `format` lines to stderr.
    /// `RUST_LOG`, when set, wins over the level until `set_level` is called. A second call
    /// (tests) returns a handle that changes nothing.
    pub fn init_with(klog_level: u8, format: LogFormat) -> Self {
        let initial = std::env::var("RUST_LOG")
            .ok()
            .and_then(|s| EnvFilter::try_new(s).ok());
        let filter = initial.unwrap_or_else(|| EnvFilter::new(directives(klog_level)));
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
        }
    }

    /// A handle that changes nothing (when someone else owns the subscriber).
    pub fn detached() -> Self {
        Self { handle: None }
    }

    /// Switches to a klog verbosity; returns whether the filter changed.
    pub fn set_level(&self, klog_level: u8) -> bool {
        match &self.handle {
            Some(h) => h.reload(EnvFilter::new(directives(klog_level))).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn klog_levels_map_to_tracing_directives() {
        assert!(directives(2).starts_with("warn,") && directives(2).contains("operator_kit=info"));
        assert!(directives(4).contains("cinder=debug"));
        assert!(directives(6).contains("openstack=trace") && directives(6).starts_with("info,"));
        assert!(directives(8).starts_with("debug,"));
        for level in [0, 2, 4, 6, 8, 200] {
            assert!(
                EnvFilter::try_new(directives(level)).is_ok(),
                "level {level} gives a valid filter"
            );
        }
    }

    #[test]
    fn a_detached_handle_changes_nothing() {
        assert!(!LogControl::detached().set_level(4));
    }
}
