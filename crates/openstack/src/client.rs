//! The HTTP client: one Keystone token reused until shortly before it expires, endpoint lookup
//! in the token's catalog (refreshed with `GET /v3/auth/catalog` when a service is missing from
//! it), and the three list calls the operators need.
//!
//! A [`Client`] belongs to one set of credentials; a [`Session`] hands out the client for the
//! current credentials and replaces it (dropping its token) when they change, which is how a
//! rotated Secret takes effect at once. Nothing here logs or formats a secret: tokens and
//! passwords live in [`Secret`], the token header is marked sensitive, server messages are
//! scrubbed, and `Debug` is written by hand.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};

use crate::clouds::CloudConfig;
use crate::error::{Error, Failure, Step};
use crate::keystone::{self, CatalogService, Service};
use crate::redact::display_url;
use crate::secret::Secret;
use crate::services::{self, ShareType, VolumeType};

/// The Manila microversion we ask for. 2.0 is the floor every Manila v2 API serves, and share
/// type id, name and extra specs (all we read) exist there; asking for more would make old
/// clouds answer 406.
pub const MANILA_MICROVERSION: &str = "2.0";
const MANILA_VERSION_HEADER: &str = "X-OpenStack-Manila-API-Version";

/// Tokens are renewed this long before they expire (at most; a tenth of the lifetime for
/// short-lived tokens), so a call never starts with a token about to lapse.
const MAX_REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// The largest answer read from any endpoint. A catalog of a large cloud or thousands of share
/// types stays well below it.
const MAX_BODY_BYTES: usize = 8 << 20;

/// Server messages are cut to this many characters (after secrets are scrubbed).
const MAX_MESSAGE_CHARS: usize = 300;

/// How to reach the cloud through a proxy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProxySetting {
    /// `HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY` (and lower-case forms) from the environment, as
    /// the Go operators do with `ProxyFromEnvironment`.
    #[default]
    Environment,
    /// Every request through this proxy, except hosts in the comma-separated `no_proxy`.
    Explicit {
        url: String,
        no_proxy: Option<String>,
    },
    /// Direct connections only.
    Disabled,
}

/// Transport settings that are not in clouds.yaml.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientOptions {
    /// PEM bundle added to the system roots (the Secret's `cacert` key or a ConfigMap's
    /// `ca-bundle.pem`). `None` means the system roots only.
    pub ca_bundle: Option<Vec<u8>>,
    pub connect_timeout: Duration,
    /// The whole exchange, body included.
    pub request_timeout: Duration,
    pub user_agent: String,
    pub proxy: ProxySetting,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            ca_bundle: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            user_agent: format!("csi-operator/{}", env!("CARGO_PKG_VERSION")),
            proxy: ProxySetting::Environment,
        }
    }
}

/// A digest of everything a client is built from, secrets included. Equal fingerprints mean
/// the same credentials and transport; it is opaque and prints nothing of its input.
#[derive(Clone, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Fingerprint(..)")
    }
}

/// Feeds `Hash` output into SHA-256, so the fingerprint covers every field without a second
/// serialization that could leak somewhere.
struct Sha256Hasher(ring::digest::Context);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

impl Fingerprint {
    pub fn of(config: &CloudConfig, options: &ClientOptions) -> Self {
        let mut h = Sha256Hasher(ring::digest::Context::new(&ring::digest::SHA256));
        config.hash(&mut h);
        options.hash(&mut h);
        let digest = h.0.finish();
        let mut out = [0u8; 32];
        for (o, b) in out.iter_mut().zip(digest.as_ref()) {
            *o = *b;
        }
        Self(out)
    }
}

struct CachedToken {
    value: Secret,
    catalog: Arc<Vec<CatalogService>>,
    refresh_at: Instant,
}

/// An OpenStack client for one set of credentials.
pub struct Client {
    http: reqwest::Client,
    config: CloudConfig,
    fingerprint: Fingerprint,
    request_timeout: Duration,
    /// Held across authentication, so concurrent callers wait for one token instead of each
    /// asking Keystone for their own.
    token: tokio::sync::Mutex<Option<CachedToken>>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("cloud", &self.config.cloud_name)
            .field("auth_url", &display_url(&self.config.auth_url))
            .field("region", &self.config.region)
            .field("interface", &self.config.interface)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Builds the HTTP client (no request is made). A rustls crypto provider must be installed
    /// in the process (`rustls::crypto::ring::default_provider().install_default()`).
    pub fn new(config: CloudConfig, options: &ClientOptions) -> Result<Self, Error> {
        let fingerprint = Fingerprint::of(&config, options);
        let http = build_http(&config, options)?;
        Ok(Self {
            http,
            config,
            fingerprint,
            request_timeout: options.request_timeout,
            token: tokio::sync::Mutex::new(None),
        })
    }

    pub fn config(&self) -> &CloudConfig {
        &self.config
    }

    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// Makes sure a valid token is held (asks Keystone only if needed).
    pub async fn authenticate(&self) -> Result<(), Error> {
        self.token().await.map(|_| ())
    }

    /// Forgets the token; the next call authenticates again.
    pub async fn forget_token(&self) {
        *self.token.lock().await = None;
    }

    /// The endpoint URL of `service` for the configured interface and region.
    pub async fn endpoint(&self, service: Service) -> Result<String, Error> {
        let (_, catalog) = self.token().await?;
        keystone::select_endpoint(
            &catalog,
            service,
            self.config.interface,
            self.config.region.as_deref(),
        )
    }

    /// Whether the catalog lists `service` at all (Manila detection).
    ///
    /// A catalog comes with its token and a token lives for hours, so an absent service is
    /// confirmed with the catalog as it is now (`GET /v3/auth/catalog` with the cached token)
    /// before the answer is `false`: a cloud that adds Manila after install is then seen at the
    /// caller's next check, not when the token expires, and without a new token (the budget is
    /// one token per token lifetime). The fresh catalog replaces the token's for later calls.
    /// Only if Keystone refuses the token there (401: expired or revoked) is a new one asked
    /// for, whose catalog is current. A present service needs no such check (a removed one
    /// fails its own calls).
    pub async fn has_service(&self, service: Service) -> Result<bool, Error> {
        let lists = |catalog: &[CatalogService]| {
            service
                .catalog_types()
                .iter()
                .any(|t| catalog.iter().any(|s| s.service_type == *t))
        };
        let (token, catalog, fresh) = self.token_and_freshness().await?;
        if lists(&catalog) || fresh {
            return Ok(lists(&catalog));
        }
        if let Some(catalog) = self.current_catalog(&token).await? {
            return Ok(lists(&catalog));
        }
        self.discard(&token).await;
        let (_, catalog) = self.token().await?;
        Ok(lists(&catalog))
    }

    /// The catalog of `token` as Keystone has it now, kept as the cached token's catalog.
    /// `None` when Keystone refuses the token (401).
    async fn current_catalog(
        &self,
        token: &Secret,
    ) -> Result<Option<Arc<Vec<CatalogService>>>, Error> {
        let step = Step::ReadCatalog;
        let url = keystone::catalog_url(&self.config.auth_url);
        let shown = display_url(&url);
        let mut value = HeaderValue::from_str(token.expose())
            .map_err(|_| bad(step, &shown, "the token is not a header value"))?;
        value.set_sensitive(true);
        tracing::debug!(url = %shown, "reading the current Keystone catalog");
        let resp = self
            .http
            .get(&url)
            .header("X-Auth-Token", value)
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| self.transport_error(step, &shown, &e))?;
        let status = resp.status();
        let location = header_text(resp.headers(), "location");
        let body = self.read_body(step, &shown, resp).await?;
        if status.as_u16() == 401 {
            tracing::debug!(url = %shown, "token rejected; authenticating again for a current catalog");
            return Ok(None);
        }
        self.check_status(step, &shown, status, location, &body, Some(token))?;
        let catalog =
            Arc::new(keystone::parse_catalog_body(&body).map_err(|r| bad(step, &shown, r))?);
        let mut slot = self.token.lock().await;
        if let Some(t) = slot.as_mut()
            && &t.value == token
        {
            t.catalog = catalog.clone();
        }
        Ok(Some(catalog))
    }

    /// Nova's available zones, sorted. None available is an error, as in the Go operator.
    pub async fn compute_availability_zones(&self) -> Result<Vec<String>, Error> {
        let step = Step::ListComputeZones;
        let (url, body) = self
            .get(step, Service::Compute, "os-availability-zone", None)
            .await?;
        let (_, zones) = services::parse_zones(&body).map_err(|reason| bad(step, &url, reason))?;
        if zones.is_empty() {
            return Err(Error::Empty {
                step,
                reason: "Nova reports no available availability zone".into(),
            });
        }
        Ok(zones)
    }

    /// Cinder's zones with `zoneState.available`, sorted. An empty list from Cinder is an
    /// error; a list whose zones are all unavailable gives an empty result (as in Go).
    pub async fn volume_availability_zones(&self) -> Result<Vec<String>, Error> {
        let step = Step::ListVolumeZones;
        let (url, body) = self
            .get(step, Service::Volume, "os-availability-zone", None)
            .await?;
        let (total, zones) =
            services::parse_zones(&body).map_err(|reason| bad(step, &url, reason))?;
        if total == 0 {
            return Err(Error::Empty {
                step,
                reason: "Cinder reports no availability zone".into(),
            });
        }
        Ok(zones)
    }

    /// Cinder's volume types visible to the project (catalog type `volumev3`).
    pub async fn volume_types(&self) -> Result<Vec<VolumeType>, Error> {
        let step = Step::ListVolumeTypes;
        let (url, body) = self.get(step, Service::Volume, "types", None).await?;
        services::parse_volume_types(&body).map_err(|reason| bad(step, &url, reason))
    }

    /// Manila's share types (catalog type `sharev2`).
    pub async fn share_types(&self) -> Result<Vec<ShareType>, Error> {
        let step = Step::ListShareTypes;
        let (url, body) = self
            .get(
                step,
                Service::SharedFileSystem,
                "types",
                Some((MANILA_VERSION_HEADER, MANILA_MICROVERSION)),
            )
            .await?;
        services::parse_share_types(&body).map_err(|reason| bad(step, &url, reason))
    }

    /// The current token, authenticating if there is none or it is about to expire.
    async fn token(&self) -> Result<(Secret, Arc<Vec<CatalogService>>), Error> {
        let (token, catalog, _) = self.token_and_freshness().await?;
        Ok((token, catalog))
    }

    /// [`Self::token`], and whether Keystone issued it for this call (its catalog is current).
    async fn token_and_freshness(&self) -> Result<(Secret, Arc<Vec<CatalogService>>, bool), Error> {
        let mut slot = self.token.lock().await;
        if let Some(t) = slot.as_ref()
            && Instant::now() < t.refresh_at
        {
            return Ok((t.value.clone(), t.catalog.clone(), false));
        }
        *slot = None;
        let fresh = self.issue_token().await?;
        let out = (fresh.value.clone(), fresh.catalog.clone(), true);
        *slot = Some(fresh);
        Ok(out)
    }

    /// Drops the cached token if it is still `used` (another caller may have renewed it).
    async fn discard(&self, used: &Secret) {
        let mut slot = self.token.lock().await;
        if slot.as_ref().is_some_and(|t| &t.value == used) {
            *slot = None;
        }
    }

    async fn issue_token(&self) -> Result<CachedToken, Error> {
        let step = Step::Authenticate;
        let url = keystone::tokens_url(&self.config.auth_url);
        let shown = display_url(&url);
        let started = Instant::now();
        tracing::debug!(url = %shown, cloud = %self.config.cloud_name, "requesting a Keystone token");
        let resp = self
            .http
            .post(&url)
            .json(&keystone::auth_request_body(&self.config.auth))
            .send()
            .await
            .map_err(|e| self.transport_error(step, &shown, &e))?;
        let status = resp.status();
        let token = resp
            .headers()
            .get("X-Subject-Token")
            .map(|v| v.to_str().map(Secret::new));
        let location = header_text(resp.headers(), "location");
        let body = self.read_body(step, &shown, resp).await?;
        self.check_status(step, &shown, status, location, &body, None)?;
        let value = match token {
            Some(Ok(v)) if !v.is_empty() => v,
            Some(_) => return Err(bad(step, &shown, "X-Subject-Token is not a valid token")),
            None => {
                return Err(bad(
                    step,
                    &shown,
                    "the answer has no X-Subject-Token header",
                ));
            }
        };
        let info = keystone::parse_token_body(&body).map_err(|r| bad(step, &shown, r))?;
        // Lifetime from the server's own clock (issued_at → expires_at), so a skewed local
        // clock does not make us reuse an expired token or renew on every call.
        let lifetime = match info.issued_at {
            Some(issued) => info.expires_at.duration_since(issued),
            None => info.expires_at.duration_since(jiff::Timestamp::now()),
        };
        let lifetime = Duration::try_from(lifetime).unwrap_or(Duration::ZERO);
        let margin = MAX_REFRESH_MARGIN.min(lifetime / 10);
        let refresh_at = started + lifetime.saturating_sub(margin);
        tracing::debug!(cloud = %self.config.cloud_name, lifetime_s = lifetime.as_secs(), "got a Keystone token");
        Ok(CachedToken {
            value,
            catalog: Arc::new(info.catalog),
            refresh_at,
        })
    }

    /// GET `path` under the endpoint of `service`, re-authenticating once on a 401 (the token
    /// may have been revoked or expired early).
    async fn get(
        &self,
        step: Step,
        service: Service,
        path: &str,
        header: Option<(&'static str, &'static str)>,
    ) -> Result<(String, bytes::Bytes), Error> {
        self.request(step, service, reqwest::Method::GET, path, None, header)
            .await
    }

    /// `method` on `path` under the endpoint of `service`, with an optional JSON body; a 401
    /// re-authenticates once. Any non-2xx answer is an [`Error::Request`] whose
    /// [`Error::status`] the caller may read (cleanup treats 404 on a delete as done).
    pub(crate) async fn request(
        &self,
        step: Step,
        service: Service,
        method: reqwest::Method,
        path: &str,
        json: Option<&serde_json::Value>,
        header: Option<(&'static str, &'static str)>,
    ) -> Result<(String, bytes::Bytes), Error> {
        let mut retried = false;
        loop {
            let (token, catalog) = self.token().await?;
            let base = keystone::select_endpoint(
                &catalog,
                service,
                self.config.interface,
                self.config.region.as_deref(),
            )?;
            let url = format!("{}/{path}", base.trim_end_matches('/'));
            let shown = display_url(&url);
            let mut value = HeaderValue::from_str(token.expose()).map_err(|_| {
                bad(
                    Step::Authenticate,
                    &shown,
                    "the token is not a header value",
                )
            })?;
            value.set_sensitive(true);
            let mut req = self
                .http
                .request(method.clone(), &url)
                .header("X-Auth-Token", value)
                .header("Accept", "application/json");
            if let Some((k, v)) = header {
                req = req.header(k, v);
            }
            if let Some(body) = json {
                req = req.json(body);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| self.transport_error(step, &shown, &e))?;
            let status = resp.status();
            let location = header_text(resp.headers(), "location");
            let body = self.read_body(step, &shown, resp).await?;
            if status.as_u16() == 401 && !retried {
                tracing::debug!(url = %shown, "token rejected; authenticating again");
                self.discard(&token).await;
                retried = true;
                continue;
            }
            self.check_status(step, &shown, status, location, &body, Some(&token))?;
            return Ok((shown, body));
        }
    }

    /// The response body, refused past [`MAX_BODY_BYTES`] so a broken or hostile endpoint
    /// cannot make the operator buffer without bound (its memory budget is 20 MiB).
    async fn read_body(
        &self,
        step: Step,
        url: &str,
        mut resp: reqwest::Response,
    ) -> Result<bytes::Bytes, Error> {
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_BODY_BYTES as u64)
        {
            return Err(too_large(step, url));
        }
        let mut body = bytes::BytesMut::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| self.transport_error(step, url, &e))?
        {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(too_large(step, url));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    }

    fn check_status(
        &self,
        step: Step,
        url: &str,
        status: reqwest::StatusCode,
        location: Option<String>,
        body: &[u8],
        token: Option<&Secret>,
    ) -> Result<(), Error> {
        if status.is_success() {
            return Ok(());
        }
        let failure = if status.is_redirection() {
            Failure::Redirect {
                code: status.as_u16(),
                location: location
                    .map(|l| display_url(&l))
                    .unwrap_or_else(|| "an unnamed location".into()),
            }
        } else {
            let mut secrets = self.config.secrets();
            if let Some(t) = token {
                secrets.push(t.expose());
            }
            Failure::Status {
                code: status.as_u16(),
                message: server_message(body).map(|m| shown_message(&m, &secrets)),
            }
        };
        Err(Error::Request {
            step,
            url: url.to_string(),
            failure,
        })
    }

    fn transport_error(&self, step: Step, url: &str, e: &reqwest::Error) -> Error {
        let chain = error_chain(e);
        let failure = if e.is_timeout() {
            Failure::Timeout {
                after: self.request_timeout,
            }
        } else if looks_like_tls(&chain) {
            Failure::Tls {
                reason: innermost(e),
            }
        } else if e.is_connect() || e.is_request() {
            Failure::Unreachable {
                reason: innermost(e),
            }
        } else {
            Failure::BadResponse {
                reason: innermost(e),
            }
        };
        let secrets = self.config.secrets();
        let failure = match failure {
            Failure::Tls { reason } => Failure::Tls {
                reason: scrub(&reason, &secrets),
            },
            Failure::Unreachable { reason } => Failure::Unreachable {
                reason: scrub(&reason, &secrets),
            },
            Failure::BadResponse { reason } => Failure::BadResponse {
                reason: scrub(&reason, &secrets),
            },
            other => other,
        };
        Error::Request {
            step,
            url: url.to_string(),
            failure,
        }
    }
}

fn too_large(step: Step, url: &str) -> Error {
    bad(
        step,
        url,
        format!(
            "the answer is larger than {} MiB; is the endpoint in the catalog the right service?",
            MAX_BODY_BYTES >> 20
        ),
    )
}

pub(crate) fn bad(step: Step, url: &str, reason: impl Into<String>) -> Error {
    Error::Request {
        step,
        url: url.to_string(),
        failure: Failure::BadResponse {
            reason: reason.into(),
        },
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn build_http(config: &CloudConfig, options: &ClientOptions) -> Result<reqwest::Client, Error> {
    // reqwest panics when no provider is installed; say so instead.
    let Some(provider) = rustls::crypto::CryptoProvider::get_default().cloned() else {
        return Err(Error::HttpClient(
            "no rustls crypto provider is installed in this process (call \
             rustls::crypto::ring::default_provider().install_default() at start)"
                .into(),
        ));
    };
    let mut builder = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        .timeout(options.request_timeout)
        .user_agent(options.user_agent.clone())
        // A redirect could carry X-Auth-Token to another host; report it instead.
        .redirect(reqwest::redirect::Policy::none());
    match &options.proxy {
        ProxySetting::Environment => {}
        ProxySetting::Disabled => builder = builder.no_proxy(),
        ProxySetting::Explicit { url, no_proxy } => {
            let proxy = reqwest::Proxy::all(url.as_str())
                .map_err(|e| Error::HttpClient(format!("proxy URL \"{url}\" is not valid: {e}")))?
                .no_proxy(no_proxy.as_deref().and_then(reqwest::NoProxy::from_string));
            builder = builder.proxy(proxy);
        }
    }
    let extra = match &options.ca_bundle {
        Some(pem) => crate::tls::parse_bundle(pem)?,
        None => Vec::new(),
    };
    if config.verify {
        builder = builder.use_preconfigured_tls(crate::tls::client_config(provider, &extra)?);
    } else {
        tracing::warn!(cloud = %config.cloud_name, "clouds.yaml sets verify: false; TLS certificates are not checked");
        builder = builder.tls_danger_accept_invalid_certs(true);
    }
    builder
        .build()
        .map_err(|e| Error::HttpClient(innermost(&e)))
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push(s.to_string());
        cur = s.source();
    }
    out
}

fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    while let Some(s) = cur.source() {
        cur = s;
    }
    cur.to_string()
}

fn looks_like_tls(chain: &[String]) -> bool {
    chain.iter().any(|m| {
        let m = m.to_ascii_lowercase();
        m.contains("certificate") || m.contains("tls") || m.contains("handshake")
    })
}

/// The human message of an OpenStack error body: Keystone's `{"error": {"message"}}`, Nova,
/// Cinder and Manila's `{"<kind>": {"message"}}`, or a top-level `message`.
fn server_message(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object()?;
    let msg = obj.get("message").and_then(|m| m.as_str()).or_else(|| {
        obj.values()
            .find_map(|inner| inner.get("message").and_then(|m| m.as_str()))
    })?;
    Some(msg.to_string())
}

/// A server message as a condition or log may show it: secrets scrubbed first, since
/// stripping control characters or cutting to length could change a secret's spelling (a
/// password with a tab in it, one cut in half) so that the scrub no longer finds it; then
/// control characters stripped, then the cut.
fn shown_message(raw: &str, secrets: &[&str]) -> String {
    let scrubbed = scrub(raw, secrets);
    let printable: String = scrubbed.chars().filter(|c| !c.is_control()).collect();
    shorten(&printable)
}

/// A server message cut to [`MAX_MESSAGE_CHARS`] for conditions and logs.
fn shorten(msg: &str) -> String {
    if msg.chars().count() > MAX_MESSAGE_CHARS {
        msg.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…"
    } else {
        msg.to_string()
    }
}

/// Replaces every occurrence of a secret (servers sometimes echo request fields).
fn scrub(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if !s.is_empty() {
            out = out.replace(s, "<redacted>");
        }
    }
    out
}

/// Hands out the client for the current credentials, keeping its token across calls and
/// replacing it when the credentials (or transport options) change.
#[derive(Default)]
pub struct Session {
    current: Mutex<Option<Arc<Client>>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let has = self.current.lock().map(|c| c.is_some()).unwrap_or_default();
        f.debug_struct("Session").field("has_client", &has).finish()
    }
}

impl Session {
    pub fn new() -> Self {
        Self::default()
    }

    /// The client for these credentials: the cached one (with its token) if nothing changed,
    /// else a new one; the old client and its token are dropped.
    pub fn client(
        &self,
        config: CloudConfig,
        options: &ClientOptions,
    ) -> Result<Arc<Client>, Error> {
        let fp = Fingerprint::of(&config, options);
        let mut cur = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = cur.as_ref()
            && c.fingerprint == fp
        {
            return Ok(c.clone());
        }
        if cur.is_some() {
            tracing::info!(cloud = %config.cloud_name, "OpenStack credentials changed; discarding the cached token");
        }
        let client = Arc::new(Client::new(config, options)?);
        *cur = Some(client.clone());
        Ok(client)
    }

    /// Drops the cached client and token (e.g. when the credentials Secret is deleted).
    pub fn clear(&self) {
        *self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages() {
        assert_eq!(
            server_message(br#"{"error": {"code": 401, "message": "nope", "title": "U"}}"#),
            Some("nope".into())
        );
        assert_eq!(
            server_message(br#"{"itemNotFound": {"code": 404, "message": "gone"}}"#),
            Some("gone".into())
        );
        assert_eq!(server_message(b"<html>"), None);
    }

    #[test]
    fn a_secret_across_the_length_limit_is_scrubbed_before_the_cut() {
        let secret = "s3cr3t-password-value";
        let padding = "x".repeat(MAX_MESSAGE_CHARS - 5);
        let body = format!(r#"{{"error": {{"message": "{padding}{secret} rest"}}}}"#);
        let msg = shown_message(&server_message(body.as_bytes()).expect("msg"), &[secret]);
        assert!(!msg.contains("s3cr3"), "{msg}");
        assert!(msg.ends_with('…'), "{msg}");
        assert!(msg.chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn a_secret_with_a_control_character_is_scrubbed_before_the_strip() {
        // The server echoes the password, tab included (JSON escapes it as \t).
        let secret = "hunter\t2-passw0rd";
        let body = r#"{"error": {"message": "bad password hunter\t2-passw0rd for user"}}"#;
        let raw = server_message(body.as_bytes()).expect("msg");
        assert!(raw.contains(secret), "the message is read as sent: {raw:?}");
        let msg = shown_message(&raw, &[secret]);
        assert!(
            !msg.contains("hunter") && !msg.contains("passw0rd"),
            "{msg}"
        );
        assert_eq!(msg, "bad password <redacted> for user");
        let noisy = shown_message("line one\nline two\u{7}", &[]);
        assert_eq!(noisy, "line oneline two", "control characters still go");
    }

    #[test]
    fn debug_output_drops_the_user_info_of_the_auth_url() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let yaml = "clouds:\n  openstack:\n    auth:\n      auth_url: https://admin:t0ps3cret@keystone.example:5000/v3\n      username: u\n      password: p\n      project_name: proj\n      user_domain_name: Default\n      project_domain_name: Default\n";
        let file = crate::clouds::CloudsFile::parse(yaml).expect("parses");
        let config = file.cloud("openstack").expect("valid");
        let client = Client::new(config.clone(), &ClientOptions::default()).expect("client");
        for shown in [
            format!("{client:?}"),
            format!("{config:?}"),
            format!("{file:?}"),
        ] {
            assert!(!shown.contains("t0ps3cret"), "{shown}");
            assert!(!shown.contains("admin:"), "{shown}");
            assert!(shown.contains("keystone.example:5000"), "{shown}");
        }
    }

    #[test]
    fn scrub_removes_secrets() {
        assert_eq!(
            scrub("bad password hunter2!", &["hunter2"]),
            "bad password <redacted>!"
        );
    }
}
