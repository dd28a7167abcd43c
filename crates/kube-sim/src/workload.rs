//! The workload simulator: fills in Deployment and DaemonSet status as the controllers and
//! kubelets of a real cluster would, so operators see their workloads become available.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::Shared;

/// Settings of the workload simulator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadConfig {
    /// How long after a change the status catches up, in milliseconds.
    pub delay_ms: u64,
}

pub async fn run(_shared: Arc<Shared>) {}
