//! A small OpenStack client for the operators, without any Kubernetes dependency.
//!
//! It parses clouds.yaml ([`CloudConfig`]), gets a Keystone v3 token with its catalog and
//! reuses it until shortly before it expires, finds endpoints by service type, interface and
//! region, and lists Nova and Cinder availability zones and Manila share types. For
//! `csi-operator cleanup` it also lists and deletes Cinder volumes and snapshots and Manila
//! shares, share snapshots and access rules (`volumes`, `shares`), and for the Manila
//! operator's export-network diagnostic a cluster's shares, their export locations and share
//! network subnets (`share_networks`). A [`Session`]
//! keeps one [`Client`] per set of credentials and drops its token when they change.
//!
//! It must not: read Kubernetes objects (callers pass clouds.yaml text and CA bytes), read
//! files on its own (the system's trusted CA certificates aside, once per process, as every
//! TLS client does), or put a password, application-credential secret or token into a log,
//! an error or a `Debug` string. The process must install a rustls crypto provider
//! (`rustls::crypto::ring::default_provider().install_default()`) before building a client.

mod client;
mod clouds;
mod error;
mod keystone;
mod redact;
mod retry;
mod secret;
mod services;
mod share_networks;
mod shares;
mod tls;
mod volumes;
mod yaml;

pub use client::{Client, ClientOptions, Fingerprint, MANILA_MICROVERSION, ProxySetting, Session};
pub use clouds::{
    AppCredentialRef, AuthMethod, CloudConfig, CloudsFile, DEFAULT_CLOUD, DomainRef, Interface,
    ProjectRef, UserRef, insecure_settings_in,
};
pub use error::{Error, ErrorKind, Failure, Step};
pub use keystone::{CatalogEndpoint, CatalogService, Service, select_endpoint, tokens_url};
pub use retry::{Backoff, FIRST_RETRY_SLOWLY, FIRST_RETRY_SOON, Retry};
pub use secret::Secret;
pub use services::{ShareType, VolumeType, topology_enabled};
pub use share_networks::{
    Cidr, ExportLocation, MAX_SHARES, ShareNetwork, ShareNetworkSubnet, SharePlacement,
    export_addresses,
};
pub use shares::{
    AccessRule, MANILA_CLEANUP_MICROVERSION, MANILA_CLUSTER_KEY, Share, ShareSnapshot,
};
pub use volumes::{CINDER_CLUSTER_KEY, Deleted, Volume, VolumeSnapshot, is_safe_id};
