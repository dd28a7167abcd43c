//! cluster-storage: the Cluster Storage Operator (CSO), which sees the platform, starts the CSI
//! driver operators that fit it, and tells the cluster through `Storage/cluster` and
//! `ClusterOperator/storage` whether storage works (anchors §3).
//!
//! This crate holds the CSO's pure parts: [`registry`] (which driver operators exist and which
//! a platform gets), [`build`] (the objects applied per driver operator) and [`status`] (how
//! their conditions roll up). They take facts and return
//! values; nothing here talks to the API, reads the environment or a clock.

pub mod build;
pub mod registry;
pub mod status;
