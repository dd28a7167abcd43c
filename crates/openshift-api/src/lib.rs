//! Typed OpenShift and ecosystem objects that the storage operators read or write, and the
//! CustomResourceDefinitions that serve them.
//!
//! - [`operator`] — `ClusterCSIDriver`, `Storage` (`operator.openshift.io/v1`);
//! - [`config`] — `ClusterOperator`, `Infrastructure`, `Proxy`, `APIServer`
//!   (`config.openshift.io/v1`);
//! - [`cloudcredential`] — `CredentialsRequest`;
//! - [`monitoring`] — `ServiceMonitor`; [`snapshot`] — `VolumeSnapshotClass`;
//! - [`common`] — `OperatorSpec`, `OperatorStatus`, `Condition` and the enums they use;
//! - [`crds`] — the CRD YAML of all of the above; [`decode`] — typed decoding with clear errors.
//!
//! Two rules shape every type here. An enum value the crate does not know is kept as
//! `Unknown(String)` rather than failing the whole object, so an operator can report it as a
//! condition. And every spec or status an operator writes back keeps the fields it does not
//! model (`extra`), so a read-modify-write never drops what a newer API or a user put there.
//!
//! What this crate must not do: any I/O, any policy (which condition to set, what to do when
//! `Removed`), or depend on a Kubernetes version feature of `k8s-openapi` beyond the workspace's.

pub mod cloudcredential;
pub mod common;
pub mod config;
pub mod crds;
pub mod decode;
pub mod monitoring;
pub mod operator;
pub mod snapshot;
mod string_enum;

pub use cloudcredential::{CredentialsRequest, CredentialsRequestSpec, CredentialsRequestStatus};
pub use common::{
    CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN, Condition, GenerationStatus, LogLevel,
    ManagementState, OperatorSpec, OperatorStatus,
};
pub use config::{
    APIServer, APIServerSpec, ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus,
    Infrastructure, InfrastructureSpec, InfrastructureStatus, PlatformType, Proxy, ProxySpec,
    ProxyStatus, TlsProfileSpec, TlsSecurityProfile, TopologyMode,
};
pub use monitoring::{ServiceMonitor, ServiceMonitorSpec};
pub use operator::{
    ClusterCSIDriver, ClusterCSIDriverSpec, Storage, StorageClassState, StorageSpec,
};
pub use snapshot::{DeletionPolicy, VolumeSnapshotClass};
