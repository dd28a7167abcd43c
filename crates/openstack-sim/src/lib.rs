//! openstack-sim: an in-process emulator of the OpenStack APIs the operators call, for tests
//! and the demo.
//!
//! It serves, on one port (HTTP, or HTTPS with a CA generated at start):
//! - Keystone v3 `POST /identity/v3/auth/tokens` (password and application-credential auth,
//!   checked against configured users; tokens with a configurable lifetime; a catalog with
//!   public and internal endpoints in one region; Keystone-shaped 401 bodies) and
//!   `GET /identity/v3/auth/catalog` (the token's catalog as the cloud is now);
//! - Nova `GET /{interface}/compute/v2.1/os-availability-zone`;
//! - Cinder `GET /{interface}/volume/v3/{project_id}/os-availability-zone`;
//! - Manila `GET /{interface}/share/v2[/{project_id}]/types` (absent when Manila is off);
//! - the volume, snapshot, share and access-rule calls of `csi-operator cleanup` (see
//!   `storage.rs`), on a store tests seed with [`SimHandle::set_storage`], and the volume and
//!   share creation, extension and deletion a CSI controller asks for, as Rust calls on
//!   [`SimHandle`] (see `provisioning.rs`);
//! - the filtered share listing, export locations and share networks with subnets that the
//!   Manila operator's export-network diagnostic reads (see `share_networks.rs`), seeded with
//!   [`SimHandle::set_storage`] and [`SimHandle::set_share_networks`].
//!
//! Everything can be changed while it runs through [`SimHandle`]: users, zones, share types,
//! token lifetime, hidden catalog entries and injected faults; every request is logged once
//! answered, and the ones still waiting for their answer can be counted.
//! It is a test substrate: it must not be used as a security boundary (tokens are predictable
//! and secrets are kept in memory in clear), and it must not depend on the client crate.

mod provisioning;
mod server;
mod share_networks;
mod storage;

pub use provisioning::{CloudError, ShareRequest, VolumeRequest};
pub use share_networks::{SimExportLocation, SimShareNetwork, SimShareNetworkSubnet};
pub use storage::{
    SimAccessRule, SimShare, SimShareSnapshot, SimStorage, SimVolume, SimVolumeSnapshot,
};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;

/// A Keystone domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimDomain {
    pub id: String,
    pub name: String,
}

impl Default for SimDomain {
    fn default() -> Self {
        Self {
            id: "default".into(),
            name: "Default".into(),
        }
    }
}

/// The project a user's tokens are scoped to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimProject {
    pub id: String,
    pub name: String,
    pub domain: SimDomain,
}

/// A Keystone user with a password and one project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimUser {
    pub id: String,
    pub name: String,
    pub domain: SimDomain,
    pub password: String,
    pub project: SimProject,
}

/// An application credential of a user (scoped to that user's project).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimAppCredential {
    pub id: String,
    pub name: String,
    pub secret: String,
    pub user_id: String,
}

/// A Nova or Cinder availability zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    pub name: String,
    pub available: bool,
}

impl Zone {
    pub fn available(name: &str) -> Self {
        Self {
            name: name.into(),
            available: true,
        }
    }

    pub fn unavailable(name: &str) -> Self {
        Self {
            name: name.into(),
            available: false,
        }
    }
}

/// A Cinder volume type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimVolumeType {
    pub id: String,
    pub name: String,
    pub is_public: bool,
}

impl SimVolumeType {
    /// A public type.
    pub fn public(name: &str) -> Self {
        Self {
            id: format!("vt-{name}"),
            name: name.into(),
            is_public: true,
        }
    }

    /// A private type, listed as the project has been granted access to it.
    pub fn private(name: &str) -> Self {
        Self {
            is_public: false,
            ..Self::public(name)
        }
    }
}

/// A Manila share type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimShareType {
    pub id: String,
    pub name: String,
    pub extra_specs: BTreeMap<String, String>,
}

impl SimShareType {
    pub fn new(name: &str) -> Self {
        let mut extra_specs = BTreeMap::new();
        extra_specs.insert("driver_handles_share_servers".into(), "False".into());
        Self {
            id: format!("st-{name}"),
            name: name.into(),
            extra_specs,
        }
    }
}

/// What the simulator starts with.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub tls: bool,
    pub region: String,
    pub token_lifetime: Duration,
    pub users: Vec<SimUser>,
    pub app_credentials: Vec<SimAppCredential>,
    pub compute_zones: Vec<Zone>,
    pub volume_zones: Vec<Zone>,
    /// Cinder's volume types; a real Cinder always has `__DEFAULT__` (since Train).
    pub volume_types: Vec<SimVolumeType>,
    /// `None`: no Manila at all (no `sharev2` in the catalog, 404 on its paths).
    pub share_types: Option<Vec<SimShareType>>,
}

/// The default user's credentials.
pub const DEFAULT_USER: &str = "admin";
pub const DEFAULT_PASSWORD: &str = "sim-password";
pub const DEFAULT_PROJECT: &str = "demo";
pub const DEFAULT_APP_CREDENTIAL_ID: &str = "ac-operator";
pub const DEFAULT_APP_CREDENTIAL_SECRET: &str = "sim-app-secret";

impl Default for SimConfig {
    fn default() -> Self {
        let domain = SimDomain::default();
        let project = SimProject {
            id: "p-demo".into(),
            name: DEFAULT_PROJECT.into(),
            domain: domain.clone(),
        };
        Self {
            tls: false,
            region: "RegionOne".into(),
            token_lifetime: Duration::from_secs(3600),
            users: vec![SimUser {
                id: "u-admin".into(),
                name: DEFAULT_USER.into(),
                domain,
                password: DEFAULT_PASSWORD.into(),
                project,
            }],
            app_credentials: vec![SimAppCredential {
                id: DEFAULT_APP_CREDENTIAL_ID.into(),
                name: "operator".into(),
                secret: DEFAULT_APP_CREDENTIAL_SECRET.into(),
                user_id: "u-admin".into(),
            }],
            compute_zones: vec![Zone::available("nova")],
            volume_zones: vec![Zone::available("nova")],
            volume_types: vec![SimVolumeType::public("__DEFAULT__")],
            share_types: Some(vec![SimShareType::new("default")]),
        }
    }
}

/// Which emulated service a request went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimService {
    Identity,
    Compute,
    Volume,
    Share,
    Unknown,
}

impl SimService {
    /// The catalog type the simulator lists the service under.
    pub fn catalog_type(self) -> &'static str {
        match self {
            SimService::Identity => "identity",
            SimService::Compute => "compute",
            SimService::Volume => "volumev3",
            SimService::Share => "sharev2",
            SimService::Unknown => "",
        }
    }
}

/// Where a fault applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultTarget {
    Any,
    Service(SimService),
    /// Requests whose path starts with this prefix.
    PathPrefix(String),
}

/// What a fault does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// Answer with this status (a Keystone-shaped error body) instead of serving.
    Status(u16),
    /// Wait this long, then serve normally (or apply the other faults).
    Latency(Duration),
    /// Answer with this status and exactly these body bytes: an oversized, truncated or
    /// malformed answer, or an error that echoes what the client sent (a password).
    Respond { status: u16, body: String },
}

/// An injected fault: `Fault::status(503).on(SimService::Compute).times(2)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub target: FaultTarget,
    pub action: FaultAction,
    /// `None`: until cleared.
    pub remaining: Option<u32>,
}

impl Fault {
    pub fn status(code: u16) -> Self {
        Self {
            target: FaultTarget::Any,
            action: FaultAction::Status(code),
            remaining: None,
        }
    }

    /// Answer `status` with `body` verbatim (see [`FaultAction::Respond`]).
    pub fn respond(status: u16, body: impl Into<String>) -> Self {
        Self {
            target: FaultTarget::Any,
            action: FaultAction::Respond {
                status,
                body: body.into(),
            },
            remaining: None,
        }
    }

    pub fn latency(delay: Duration) -> Self {
        Self {
            target: FaultTarget::Any,
            action: FaultAction::Latency(delay),
            remaining: None,
        }
    }

    pub fn on(mut self, service: SimService) -> Self {
        self.target = FaultTarget::Service(service);
        self
    }

    pub fn on_path(mut self, prefix: &str) -> Self {
        self.target = FaultTarget::PathPrefix(prefix.into());
        self
    }

    pub fn times(mut self, n: u32) -> Self {
        self.remaining = Some(n);
        self
    }
}

/// One served request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub service: SimService,
    /// `public` / `internal` for service calls, `None` for Keystone.
    pub interface: Option<String>,
    pub status: u16,
    /// The user whose token (or credentials) the request carried, if valid.
    pub user_id: Option<String>,
    /// The token presented (`X-Auth-Token`) or, for a successful auth, the one issued.
    pub token: Option<String>,
    /// True for a successful `POST /v3/auth/tokens`.
    pub issued_token: bool,
    /// `password` or `application_credential` for auth requests.
    pub auth_method: Option<String>,
    /// The `X-OpenStack-Manila-API-Version` header, if sent.
    pub manila_microversion: Option<String>,
    /// The host of an absolute-form request URI, i.e. the request came through us as a proxy.
    pub proxied_host: Option<String>,
    pub user_agent: Option<String>,
}

pub(crate) struct IssuedToken {
    pub user_id: String,
    pub project_id: String,
    pub app_credential: Option<String>,
    pub expires: Instant,
}

/// Mutable state behind the handle.
pub(crate) struct State {
    pub region: String,
    pub token_lifetime: Duration,
    pub users: Vec<SimUser>,
    pub app_credentials: Vec<SimAppCredential>,
    pub compute_zones: Vec<Zone>,
    pub volume_zones: Vec<Zone>,
    pub volume_types: Vec<SimVolumeType>,
    pub share_types: Option<Vec<SimShareType>>,
    pub hidden: BTreeSet<String>,
    pub tokens: HashMap<String, IssuedToken>,
    pub faults: Vec<Fault>,
    pub log: Vec<RequestRecord>,
    pub next_token: u64,
    /// Requests received and not answered yet (logged only once answered), by arrival.
    pub in_flight: BTreeMap<u64, (SimService, String)>,
    pub next_request: u64,
    /// Volumes, shares and their snapshots and rules.
    pub storage: SimStorage,
    /// Manila share networks.
    pub share_networks: Vec<SimShareNetwork>,
}

pub(crate) struct Shared {
    pub state: Mutex<State>,
    pub base_url: String,
    pub shutdown: watch::Sender<bool>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A cheap, cloneable handle to change and observe a running simulator.
#[derive(Clone)]
pub struct SimHandle {
    shared: Arc<Shared>,
}

impl SimHandle {
    /// `http://127.0.0.1:PORT` or `https://…`.
    pub fn url(&self) -> String {
        self.shared.base_url.clone()
    }

    /// The Keystone URL for clouds.yaml `auth_url`.
    pub fn auth_url(&self) -> String {
        format!("{}/identity/v3", self.shared.base_url)
    }

    pub fn region(&self) -> String {
        self.shared.lock().region.clone()
    }

    pub fn set_compute_zones(&self, zones: Vec<Zone>) {
        self.shared.lock().compute_zones = zones;
    }

    pub fn set_volume_zones(&self, zones: Vec<Zone>) {
        self.shared.lock().volume_zones = zones;
    }

    /// Replaces Cinder's volume types.
    pub fn set_volume_types(&self, types: Vec<SimVolumeType>) {
        self.shared.lock().volume_types = types;
    }

    /// Turns Manila on with no share types if it was off.
    pub fn add_share_type(&self, share_type: SimShareType) {
        let mut s = self.shared.lock();
        let list = s.share_types.get_or_insert_with(Vec::new);
        list.retain(|t| t.name != share_type.name);
        list.push(share_type);
    }

    pub fn remove_share_type(&self, name: &str) {
        if let Some(list) = self.shared.lock().share_types.as_mut() {
            list.retain(|t| t.name != name);
        }
    }

    /// `false` removes Manila entirely (catalog and API).
    pub fn set_manila_enabled(&self, enabled: bool) {
        let mut s = self.shared.lock();
        match (enabled, s.share_types.is_some()) {
            (true, false) => s.share_types = Some(Vec::new()),
            (false, true) => s.share_types = None,
            _ => {}
        }
    }

    /// Lifetime of tokens issued from now on.
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.shared.lock().token_lifetime = lifetime;
    }

    /// Changes a user's password; like Keystone, this revokes that user's tokens.
    pub fn set_password(&self, user_name: &str, password: &str) {
        let mut s = self.shared.lock();
        let mut revoked = None;
        for u in s.users.iter_mut().filter(|u| u.name == user_name) {
            u.password = password.into();
            revoked = Some(u.id.clone());
        }
        if let Some(id) = revoked {
            s.tokens.retain(|_, t| t.user_id != id);
        }
    }

    pub fn add_user(&self, user: SimUser) {
        let mut s = self.shared.lock();
        s.users.retain(|u| u.id != user.id);
        s.users.push(user);
    }

    pub fn add_app_credential(&self, credential: SimAppCredential) {
        let mut s = self.shared.lock();
        s.app_credentials.retain(|c| c.id != credential.id);
        s.app_credentials.push(credential);
    }

    /// Deletes an application credential and (like Keystone) the tokens it could have made.
    pub fn remove_app_credential(&self, id: &str) {
        let mut s = self.shared.lock();
        s.app_credentials.retain(|c| c.id != id);
        s.tokens
            .retain(|_, t| t.app_credential.as_deref() != Some(id));
    }

    /// Invalidates every issued token (services answer 401 to them).
    pub fn revoke_tokens(&self) {
        self.shared.lock().tokens.clear();
    }

    /// Leaves the service of this catalog type (e.g. `sharev2`, `volumev3`) out of the catalog
    /// (new tokens' and `GET /v3/auth/catalog`).
    pub fn hide_catalog_entry(&self, catalog_type: &str) {
        self.shared.lock().hidden.insert(catalog_type.into());
    }

    pub fn show_catalog_entry(&self, catalog_type: &str) {
        self.shared.lock().hidden.remove(catalog_type);
    }

    /// Replaces the project's volumes, shares, snapshots and access rules.
    pub fn set_storage(&self, storage: SimStorage) {
        self.shared.lock().storage = storage;
    }

    /// Replaces the project's Manila share networks.
    pub fn set_share_networks(&self, networks: Vec<SimShareNetwork>) {
        self.shared.lock().share_networks = networks;
    }

    /// The project's volumes, shares, snapshots and access rules as they are now.
    pub fn storage(&self) -> SimStorage {
        self.shared.lock().storage.clone()
    }

    pub fn inject(&self, fault: Fault) {
        self.shared.lock().faults.push(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.lock().faults.clear();
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.lock().log.clone()
    }

    pub fn clear_requests(&self) {
        self.shared.lock().log.clear();
    }

    /// How many tokens Keystone has issued (successful auth requests in the log).
    pub fn token_issuances(&self) -> usize {
        self.shared
            .lock()
            .log
            .iter()
            .filter(|r| r.issued_token)
            .count()
    }

    /// How many requests to `service` with a path ending in `suffix` have arrived and are not
    /// answered yet (held by a latency fault, say). The request log holds answered ones only.
    pub fn in_flight(&self, service: SimService, suffix: &str) -> usize {
        self.shared
            .lock()
            .in_flight
            .values()
            .filter(|(s, path)| *s == service && path.ends_with(suffix))
            .count()
    }

    /// How many requests reached `service` with a path ending in `suffix`.
    pub fn count(&self, service: SimService, suffix: &str) -> usize {
        self.shared
            .lock()
            .log
            .iter()
            .filter(|r| r.service == service && r.path.ends_with(suffix))
            .count()
    }
}

/// A running simulator. Dropping it stops the server and removes the CA file.
pub struct OpenStackSim {
    handle: SimHandle,
    addr: SocketAddr,
    ca_pem: Option<String>,
    ca_file: Option<PathBuf>,
}

impl std::ops::Deref for OpenStackSim {
    type Target = SimHandle;
    fn deref(&self) -> &SimHandle {
        &self.handle
    }
}

impl OpenStackSim {
    /// Starts serving on `listen` (port 0 picks a free port).
    pub async fn start(config: SimConfig, listen: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (acceptor, ca_pem) = if config.tls {
            let names = sim_tls::Names {
                ca: "openstack-sim-ca",
                server: "openstack-sim",
                dns: &["localhost", "openstack-sim.local"],
            };
            let (a, ca) = sim_tls::self_signed(addr, names).map_err(std::io::Error::other)?;
            (Some(a), Some(ca))
        } else {
            (None, None)
        };
        let ca_file = match &ca_pem {
            Some(pem) => {
                let path = std::env::temp_dir().join(format!(
                    "openstack-sim-ca-{}-{}.pem",
                    std::process::id(),
                    addr.port()
                ));
                std::fs::write(&path, pem)?;
                Some(path)
            }
            None => None,
        };
        let scheme = if config.tls { "https" } else { "http" };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                region: config.region,
                token_lifetime: config.token_lifetime,
                users: config.users,
                app_credentials: config.app_credentials,
                compute_zones: config.compute_zones,
                volume_zones: config.volume_zones,
                volume_types: config.volume_types,
                share_types: config.share_types,
                hidden: BTreeSet::new(),
                tokens: HashMap::new(),
                faults: Vec::new(),
                log: Vec::new(),
                next_token: 1,
                in_flight: BTreeMap::new(),
                next_request: 0,
                storage: SimStorage::default(),
                share_networks: Vec::new(),
            }),
            base_url: format!("{scheme}://{addr}"),
            shutdown: watch::channel(false).0,
        });
        tokio::spawn(server::serve(shared.clone(), listener, acceptor));
        Ok(Self {
            handle: SimHandle { shared },
            addr,
            ca_pem,
            ca_file,
        })
    }

    pub fn handle(&self) -> SimHandle {
        self.handle.clone()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The generated CA (PEM) when serving HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A file holding [`Self::ca_pem`], for clouds.yaml `cacert`.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        self.ca_file.as_deref()
    }

    /// A clouds.yaml with one cloud `cloud_name` for the default user and password.
    pub fn clouds_yaml(&self, cloud_name: &str) -> String {
        self.clouds_yaml_password(cloud_name, DEFAULT_USER, DEFAULT_PASSWORD)
    }

    /// A clouds.yaml with password auth for `username` (in the default domain and project).
    pub fn clouds_yaml_password(&self, cloud_name: &str, username: &str, password: &str) -> String {
        let region = self.region();
        let mut out = format!(
            "clouds:\n  {}:\n    auth:\n      auth_url: {}\n      username: {}\n      \
             password: {}\n      project_name: {}\n      user_domain_name: Default\n      \
             project_domain_name: Default\n    region_name: {}\n",
            q(cloud_name),
            q(&self.auth_url()),
            q(username),
            q(password),
            q(DEFAULT_PROJECT),
            q(&region),
        );
        self.push_tls(&mut out);
        out
    }

    /// A clouds.yaml with application-credential auth (`auth_type: v3applicationcredential`).
    pub fn clouds_yaml_app_credential(&self, cloud_name: &str, id: &str, secret: &str) -> String {
        let region = self.region();
        let mut out = format!(
            "clouds:\n  {}:\n    auth_type: v3applicationcredential\n    auth:\n      \
             auth_url: {}\n      application_credential_id: {}\n      \
             application_credential_secret: {}\n    region_name: {}\n",
            q(cloud_name),
            q(&self.auth_url()),
            q(id),
            q(secret),
            q(&region),
        );
        self.push_tls(&mut out);
        out
    }

    fn push_tls(&self, out: &mut String) {
        if let Some(path) = &self.ca_file {
            out.push_str(&format!("    cacert: {}\n", q(&path.to_string_lossy())));
        }
    }
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn q(s: &str) -> String {
    serde_json::Value::String(s.into()).to_string()
}

impl Drop for OpenStackSim {
    fn drop(&mut self) {
        let _ = self.handle.shared.shutdown.send(true);
        if let Some(path) = &self.ca_file {
            let _ = std::fs::remove_file(path);
        }
    }
}
