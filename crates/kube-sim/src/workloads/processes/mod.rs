//! The process runner: the kubelet part of the workload simulator for Deployments whose
//! container image maps to a local program. Their pods run as real child processes, so the
//! demo and the end-to-end tests run the real chain (the Cluster Storage Operator's Deployment
//! starts the CSO, which creates the Cinder and Manila operator Deployments, which run too).
//!
//! The model, and why:
//! - Only images listed in [`ProcessConfig::images`] run, one process per replica (at most
//!   [`MAX_REPLICAS`]), from the first container whose image is mapped. Every other Deployment
//!   keeps its virtual pods.
//! - The command line and environment are built as the kubelet builds a container's:
//!   `command` (minus [`LocalProgram::drop_leading`]) and `args` with `$(VAR)` expansion,
//!   `envFrom` then `env` with the downward API and ConfigMap/Secret references read from the
//!   store; a missing non-optional reference keeps the pod from starting
//!   (`CreateContainerConfigError`) until the object appears. The environment is otherwise
//!   clean (PATH, HOME, RUST_LOG, RUST_BACKTRACE pass through), and `KUBECONFIG` points at a
//!   kubeconfig whose user is the pod's service account (its token the user name, or the
//!   token kube-sim issued to it in issued-tokens mode), so the request log says who asked.
//! - A process that exits is restarted with exponential back-off (restartPolicy Always); a
//!   template change, scale-down or deletion stops the pod with SIGTERM, then SIGKILL after the
//!   grace period. Recreate waits for the old pods to be gone before starting new ones;
//!   RollingUpdate starts the new pods at once, while the old ones terminate.
//! - A pod runs only once admission (`pod_admission.rs`: SCCs, Pod Security) admits it, as the
//!   ReplicaSet controller's create would be refused: a refused template starts no process
//!   (a RollingUpdate keeps the old template's pods, a Recreate has stopped them), and is
//!   judged again after every write, so fixing the template, an SCC, a grant or the namespace
//!   starts it.
//! - A process-backed pod is up only while its process runs: [`Readiness`] tells the status
//!   simulation in `workload.rs`, which keeps its pure status functions and its delay.
//!
//! What it must not do: run anything not mapped explicitly; hand kube-sim's own environment to
//! a pod; echo Secret values (errors name objects and keys, never values); outlive the
//! simulator (shutdown stops every pod, dropping the `KubeSim` kills them, `kill_on_drop` is
//! the last resort); use `unsafe` or a signal API (signals go through `/bin/kill`).
//!
//! Where things are: `state` the configuration, what is observable and the shared state,
//! `desired` what the Deployments ask for, `command` a container's command line and
//! environment, and `runner` the loop and the life of one pod.

mod command;
mod desired;
mod runner;
mod state;
#[cfg(test)]
mod tests;

use std::time::Duration;

/// At most this many processes per Deployment, whatever its replica count.
pub const MAX_REPLICAS: usize = 3;
/// The restart back-off: first wait, cap, and how long a run must last to reset it.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
pub const BACKOFF_RESET: Duration = Duration::from_secs(60);
/// The longest a pod is given to stop after SIGTERM (its terminationGracePeriodSeconds,
/// default 30, is capped so tests and the demo do not hang on a stuck process).
pub const MAX_GRACE: Duration = Duration::from_secs(10);
/// How much of a pod's output is kept in memory when there is no log directory.
pub const TAIL_BYTES: usize = 64 * 1024;
/// The pod IP (and host IP) the downward API reports: every process runs on loopback.
pub const POD_IP: &str = "127.0.0.1";
/// The node name the downward API reports when the pod template names none.
pub const NODE_NAME: &str = "kube-sim";
/// Environment variables passed from kube-sim's own environment when set.
const PASSED_THROUGH: [&str; 4] = ["PATH", "HOME", "RUST_LOG", "RUST_BACKTRACE"];

pub use command::{ConfigError, Lookup, PodFacts, Source, command_line, expand, resolve_env};
pub use desired::next_backoff;
pub(crate) use runner::run;
pub use state::{LocalProgram, ProcessConfig, ProcessInfo, ProcessState};
pub(crate) use state::{Processes, Readiness};
