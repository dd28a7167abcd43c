//! realkube: the real control plane our operators are judged on, for tests and the bench.
//!
//! [`ControlPlane::start`] runs etcd (Debian's `etcd-server`) and OpenShift's own
//! `kube-apiserver`, `kube-controller-manager` and `kube-scheduler` (openshift/kubernetes, the
//! binaries in `../shared/realkube/`) as local processes on loopback, in one of two modes:
//! - [`Mode::OpenShift`]: `--openshift-config`, so OpenShift's admission chain runs (SCC
//!   admission with the default SCCs, restricted Pod Security by default), OpenShift's CRDs are
//!   installed, and namespaces get the SCC annotations cluster-policy-controller writes;
//! - [`Mode::Kubernetes`]: plain flags and no OpenShift API at all.
//!
//! Only two things are faked, and neither here decides anything the API server decides: the
//! kubelet ([`kubelet`]: Nodes kept alive, bound pods set Running and Ready, pods whose image
//! maps to a local program run as processes with their ServiceAccount's TokenRequest token) and
//! the cloud (the tests' openstack-sim). Every request is read back from the API server's audit
//! log ([`audit`]) in the shape of kube-sim's request log, so one set of checks reads both.
//!
//! What it must not do: talk to anything but loopback; leave a process or a directory behind
//! (every process is ended by its own pid, and dies with the test process); imitate a decision
//! of the API server (admission, RBAC, defaulting are the real ones); skip silently when a
//! binary is missing (the error says how to get it).

pub mod apply;
pub mod audit;
mod binaries;
mod certs;
pub mod cvo;
mod flags;
pub mod kubelet;
mod openshift;
mod plane;

pub use binaries::{Binaries, BinaryError};
pub use plane::{ControlPlane, Mode, Options, PlaneError};

/// The admin's user name (system:masters) in the static token file.
pub const ADMIN_USER: &str = "realkube-admin";
/// The kubelet stand-in's user name (system:masters; it plays every node).
pub const KUBELET_USER: &str = "realkube-kubelet";
