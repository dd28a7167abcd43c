//! operator-kit: the reusable machinery the CSI driver operators are made of, the role
//! library-go's CSI controller set plays for OpenShift's Go operators.
//!
//! A driver operator is its YAML assets plus a small module: it builds desired objects with
//! pure functions (`assets`, `hooks`, `hash`), applies them with the one `apply` engine, and
//! reports conditions through the `status` board; `leader` keeps one writer per cluster.
//! Nothing here knows about a particular driver.

pub mod apply;
pub mod assets;
pub mod board;
pub mod cache;
pub mod cert_manager;
pub mod class_names;
pub mod client_config;
pub mod clusters;
pub mod conditions;
pub mod config_observer;
pub mod csi;
pub mod delegated_auth;
pub mod desired;
pub mod events;
pub mod hash;
pub mod health;
pub mod hooks;
pub mod hosted;
pub mod kinds;
pub mod leader;
pub mod leader_timing;
pub mod log_format;
pub mod logging;
pub mod loglevel;
pub mod metrics;
pub mod metrics_cert;
pub mod observed_config;
pub mod own_serving_cert;
pub mod process;
pub mod process_metrics;
pub mod progressing;
pub mod redact;
pub mod runtime;
pub mod serving;
pub mod settings;
pub mod spec;
pub mod status;
pub mod steps;
