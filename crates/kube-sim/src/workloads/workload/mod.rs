//! The workload simulator: plays the Deployment and DaemonSet controllers, the scheduler and the
//! kubelets of a real cluster, so operators see their workloads' status move as it would.
//!
//! The model, and why it looks the way it does:
//! - Controllers react within milliseconds on a real cluster, so `observedGeneration`, the
//!   replica counts and the conditions are written as soon as a change is seen. What takes time
//!   is pods starting: a pod becomes ready `delayMs` after it is created, and available
//!   `minReadySeconds` after that. An operator that treats `observedGeneration == generation`
//!   as "rolled out" is wrong on a real cluster and is wrong here too. A pod once ready stays
//!   ready, so changing the delay affects only pods still starting.
//! - No Pods or ReplicaSets are stored: the simulator keeps its virtual pods in memory and
//!   writes only the status a real controller would write, with the real condition reasons and
//!   messages, and only when it differs from the stored one.
//! - DaemonSet placement follows the DaemonSet controller: node name, `nodeSelector`, required
//!   node affinity and taints (with the tolerations every daemon pod gets automatically). A
//!   Deployment's pods are assumed to find room somewhere.
//! - Workloads listed in [`WorkloadConfig::unavailable`] never get a ready pod, so their
//!   conditions say so and, past `progressDeadlineSeconds`, the rollout times out.
//! - A Deployment whose image maps to a local program runs real processes (`processes.rs`);
//!   its pods are up only while their processes run, which the status functions are told.
//! - Pods go through admission (`pod_admission.rs`: SCCs, Pod Security) when the controller
//!   would create them. A refused pod is never created: the Deployment reports
//!   `ReplicaFailure=True / FailedCreate` with the API server's message (as the ReplicaSet
//!   controller's condition reaches it), the DaemonSet schedules nothing new, and each new
//!   refusal is a `FailedCreate` Warning Event. Admission is judged again on every pass, so a
//!   changed template, SCC, RBAC grant or namespace lets the pods come (controllers retry).
//!
//! The status computations are pure functions of the object, the nodes, what the simulator
//! remembers of its virtual pods, and the time; [`run`] feeds them and writes the results.
//!
//! Where things are: `config` the simulator's settings, `sim_loop` the loop that reacts to
//! writes, `deployments`, `daemonsets` and `pods` the controllers' and kubelets' parts,
//! `scheduling` which Nodes a pod fits, `helpers` small readers of the objects.

mod config;
mod daemonsets;
mod deployments;
mod helpers;
mod pods;
mod scheduling;
mod sim_loop;
#[cfg(test)]
mod tests;

pub use config::{WorkloadConfig, WorkloadKind, WorkloadRef, missing_volume_sources};
pub use daemonsets::{DaemonSetTrack, daemonset_status, daemonset_status_admitted};
pub use deployments::{
    DeploymentTrack, deployment_status, deployment_status_admitted, deployment_status_with,
};
pub use helpers::pod_template_hash;
pub use pods::PodCreation;
pub use scheduling::{node_should_run, tolerates};
pub use sim_loop::run;
