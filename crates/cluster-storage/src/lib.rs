//! cluster-storage: the Cluster Storage Operator (CSO), which sees the platform, starts the CSI
//! driver operators that fit it, and tells the cluster through `Storage/cluster` and
//! `ClusterOperator/storage` whether storage works (anchors §3).
//!
//! The pure parts take facts and return values; nothing in them talks to the API, reads the
//! environment or a clock: [`registry`] (which driver operators exist and which a platform
//! gets), [`build`] (the objects applied per driver operator), [`status`] (how their conditions
//! roll up), [`ownership`] (whose CSIDriver it is) and [`hosted`] (the same objects split
//! between a hosted control plane's management cluster and its guest); [`kubernetes`] generates the plain-Kubernetes
//! install from the same assets. [`operator`] is the runtime that reads
//! the watch caches, applies and writes the two statuses.

pub mod build;
pub mod chart;
pub mod hosted;
pub mod kubernetes;
pub mod olm;
pub mod olm_sync;
pub mod operator;
pub mod ownership;
pub mod registry;
pub mod status;
