//! What a cluster runs besides the API server, as far as operators can tell: the workload
//! simulator (`workload`: Deployment and DaemonSet status from Nodes), the process runner
//! (`processes`: mapped images run as local programs) and the control-plane controllers
//! (`controllers`: garbage collector, namespace deletion, CRD instance cleanup, and with
//! `protection` the pvc- and pv-protection controllers).
//!
//! `workload` and `processes` are re-exported at the crate root under their old paths
//! (`kube_sim::workload`, `kube_sim::processes`), which other crates use.

pub(crate) mod controllers;
pub mod processes;
pub(crate) mod protection;
pub mod workload;
