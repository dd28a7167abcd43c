//! The HTTP front of openstack-sim: accept loop, fault injection, request log and the routes of
//! Keystone (tokens and the current catalog), Nova, Cinder and Manila.
//!
//! Never panics on client input: malformed bodies and unknown paths get the error answers the
//! real services give (400 / 401 / 404 with a JSON body).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::{
    FaultAction, FaultTarget, IssuedToken, RequestRecord, Shared, SimAppCredential, SimService,
    SimUser, State,
};

pub(crate) async fn serve(
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(shared.clone(), stream, tls.clone()));
            }
            _ = shutdown.changed() => return,
        }
    }
}

async fn connection(
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut shutdown = shared.shutdown.subscribe();
    let svc_shared = shared.clone();
    let service = hyper::service::service_fn(move |req| handle(svc_shared.clone(), req));
    let stop = async {
        let _ = shutdown.changed().await;
    };
    sim_tls::serve_connection(stream, tls, service, stop).await;
}

/// What a route produced, before it is logged and turned into a response.
struct Outcome {
    status: u16,
    body: Value,
    /// Sent instead of `body` when set (an injected raw answer).
    raw: Option<String>,
    subject_token: Option<String>,
    user_id: Option<String>,
    auth_method: Option<String>,
}

impl Outcome {
    fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            raw: None,
            subject_token: None,
            user_id: None,
            auth_method: None,
        }
    }

    fn error(status: u16, message: &str) -> Self {
        Self::json(status, error_body(status, message))
    }
}

fn title(status: u16) -> &'static str {
    StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}

/// Keystone's error shape; the services' shapes differ in the outer key only, and clients read
/// `message` from either.
fn error_body(status: u16, message: &str) -> Value {
    json!({ "error": { "code": status, "title": title(status), "message": message } })
}

const UNAUTHORIZED: &str = "The request you have made requires authentication.";

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Service and interface from the path prefix.
fn classify(path: &str) -> (SimService, Option<String>) {
    if path.starts_with("/identity") {
        return (SimService::Identity, None);
    }
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    let iface = parts.next().unwrap_or("");
    let service = parts.next().unwrap_or("");
    if !matches!(iface, "public" | "internal") {
        return (SimService::Unknown, None);
    }
    let s = match service {
        "compute" => SimService::Compute,
        "volume" => SimService::Volume,
        "share" => SimService::Share,
        _ => SimService::Unknown,
    };
    (s, Some(iface.to_string()))
}

/// Consumes matching faults: the total latency and the first answer to give instead of serving.
fn take_faults(state: &mut State, service: SimService, path: &str) -> (Duration, Option<Outcome>) {
    let mut delay = Duration::ZERO;
    let mut status = None;
    for f in state.faults.iter_mut() {
        let hit = match &f.target {
            FaultTarget::Any => true,
            FaultTarget::Service(s) => *s == service,
            FaultTarget::PathPrefix(p) => path.starts_with(p.as_str()),
        };
        if !hit || f.remaining == Some(0) {
            continue;
        }
        match &f.action {
            FaultAction::Latency(d) => delay += *d,
            FaultAction::Status(_) | FaultAction::Respond { .. } if status.is_some() => continue,
            FaultAction::Status(code) => status = Some(Outcome::error(*code, "injected fault")),
            FaultAction::Respond { status: code, body } => {
                let mut out = Outcome::json(*code, Value::Null);
                out.raw = Some(body.clone());
                status = Some(out);
            }
        }
        if let Some(n) = f.remaining.as_mut() {
            *n -= 1;
        }
    }
    state.faults.retain(|f| f.remaining != Some(0));
    (delay, status)
}

/// A request between its arrival and its answer (or the client giving up), for
/// [`crate::SimHandle::in_flight`].
struct Pending {
    shared: Arc<Shared>,
    id: u64,
}

impl Pending {
    fn new(shared: &Arc<Shared>, service: SimService, path: &str) -> Self {
        let mut state = shared.lock();
        let id = state.next_request;
        state.next_request += 1;
        state.in_flight.insert(id, (service, path.to_string()));
        Self {
            shared: shared.clone(),
            id,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.shared.lock().in_flight.remove(&self.id);
    }
}

async fn handle(
    shared: Arc<Shared>,
    req: hyper::Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let uri = req.uri().clone();
    let headers = req.headers().clone();
    let path = uri.path().to_string();
    let query = uri.query().map(str::to_string);
    let proxied_host = uri.authority().map(|a| a.to_string());
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let (service, interface) = classify(&path);
    let _pending = Pending::new(&shared, service, &path);
    let (delay, fault) = take_faults(&mut shared.lock(), service, &path);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let presented = header(&headers, "x-auth-token");
    let microversion = header(&headers, "x-openstack-manila-api-version");
    let out = match fault {
        Some(out) => out,
        None => {
            let mut state = shared.lock();
            route(
                &mut state,
                &shared.base_url,
                &method,
                &path,
                service,
                &body,
                presented.as_deref(),
                microversion.as_deref(),
                query.as_deref(),
            )
        }
    };
    let record = RequestRecord {
        method: method.to_string(),
        path: path.clone(),
        service,
        interface,
        status: out.status,
        user_id: out.user_id.clone(),
        token: out.subject_token.clone().or(presented),
        issued_token: out.subject_token.is_some(),
        auth_method: out.auth_method.clone(),
        manila_microversion: microversion,
        proxied_host,
        user_agent: header(&headers, "user-agent"),
    };
    shared.lock().log.push(record);

    let bytes = match out.raw {
        Some(raw) => raw.into_bytes(),
        // A 202 of a delete has no body, as in Cinder and Manila.
        None if out.body.is_null() => Vec::new(),
        None => serde_json::to_vec(&out.body).unwrap_or_default(),
    };
    let mut resp = Response::new(Full::new(Bytes::from(bytes)));
    *resp.status_mut() =
        StatusCode::from_u16(out.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if let Some(t) = out.subject_token
        && let Ok(v) = http::HeaderValue::from_str(&t)
    {
        resp.headers_mut().insert("x-subject-token", v);
    }
    Ok(resp)
}

#[allow(clippy::too_many_arguments)]
fn route(
    state: &mut State,
    base: &str,
    method: &Method,
    path: &str,
    service: SimService,
    body: &[u8],
    token: Option<&str>,
    microversion: Option<&str>,
    query: Option<&str>,
) -> Outcome {
    if service == SimService::Identity {
        return match (method, path.trim_end_matches('/')) {
            (&Method::POST, "/identity/v3/auth/tokens") => authenticate(state, base, body),
            (&Method::GET, "/identity/v3/auth/catalog") => current_catalog(state, base, token),
            (&Method::GET, "/identity/v3") => Outcome::json(
                200,
                json!({"version": {"id": "v3.14", "status": "stable",
                    "links": [{"rel": "self", "href": format!("{base}/identity/v3/")}]}}),
            ),
            _ => Outcome::error(404, "The resource could not be found."),
        };
    }
    if service == SimService::Unknown {
        return Outcome::error(404, "The resource could not be found.");
    }
    // Every service call needs a valid token.
    let Some(tok) = token else {
        return Outcome::error(401, UNAUTHORIZED);
    };
    let now = Instant::now();
    let Some((user_id, project_id)) = state
        .tokens
        .get(tok)
        .filter(|t| t.expires > now)
        .map(|t| (t.user_id.clone(), t.project_id.clone()))
    else {
        return Outcome::error(401, UNAUTHORIZED);
    };
    // Path below /{interface}/{service}/.
    let rest: Vec<&str> = path.trim_matches('/').split('/').skip(2).collect();
    let manila_tail = match (service, rest.as_slice()) {
        (SimService::Share, ["v2", pid, tail @ ..]) if *pid == project_id => Some(tail),
        (SimService::Share, ["v2", tail @ ..]) => Some(tail),
        _ => None,
    };
    let networks = manila_tail
        .filter(|_| state.share_types.is_some())
        .and_then(|tail| {
            crate::share_networks::route(
                &state.storage,
                &state.share_networks,
                method,
                tail,
                microversion,
                query,
            )
        });
    let stored = match (service, rest.as_slice()) {
        _ if networks.is_some() => networks,
        (SimService::Volume, ["v3", pid, tail @ ..]) if *pid == project_id => {
            crate::storage::cinder(&mut state.storage, method, tail)
        }
        (SimService::Share, ["v2", pid, tail @ ..])
            if *pid == project_id && state.share_types.is_some() =>
        {
            crate::storage::manila(&mut state.storage, method, tail, body)
        }
        (SimService::Share, ["v2", tail @ ..]) if state.share_types.is_some() => {
            crate::storage::manila(&mut state.storage, method, tail, body)
        }
        _ => None,
    };
    let mut out = if let Some((status, body)) = stored {
        Outcome::json(status, body)
    } else if method != Method::GET {
        Outcome::error(405, "The method is not allowed for the requested URL.")
    } else {
        match (service, rest.as_slice()) {
            (SimService::Compute, ["v2.1", "os-availability-zone"]) => {
                zones_body(&state.compute_zones)
            }
            (SimService::Volume, ["v3", pid, "os-availability-zone"]) if *pid == project_id => {
                zones_body(&state.volume_zones)
            }
            (SimService::Volume, ["v3", pid, "types"]) if *pid == project_id => {
                volume_types_body(&state.volume_types)
            }
            (SimService::Share, ["v2", "types"]) => share_types(state, microversion),
            (SimService::Share, ["v2", pid, "types"]) if *pid == project_id => {
                share_types(state, microversion)
            }
            _ => Outcome::error(404, "The resource could not be found."),
        }
    };
    out.user_id = Some(user_id);
    out
}

/// Keystone's `GET /v3/auth/catalog`: the catalog of the presented token's project as it is
/// now (so a service added after the token was issued is listed), 401 for an unknown or
/// expired token.
fn current_catalog(state: &State, base: &str, token: Option<&str>) -> Outcome {
    let now = Instant::now();
    let Some(issued) = token
        .and_then(|t| state.tokens.get(t))
        .filter(|t| t.expires > now)
    else {
        return Outcome::error(401, UNAUTHORIZED);
    };
    let mut out = Outcome::json(
        200,
        json!({
            "catalog": catalog(state, base, &issued.project_id),
            "links": {"self": format!("{base}/identity/v3/auth/catalog"),
                      "previous": null, "next": null},
        }),
    );
    out.user_id = Some(issued.user_id.clone());
    out
}

fn zones_body(zones: &[crate::Zone]) -> Outcome {
    let list: Vec<Value> = zones
        .iter()
        .map(
            |z| json!({"zoneName": z.name, "zoneState": {"available": z.available}, "hosts": null}),
        )
        .collect();
    Outcome::json(200, json!({ "availabilityZoneInfo": list }))
}

/// Cinder's `GET /v3/{project_id}/types`, with both visibility fields as Cinder sends them.
fn volume_types_body(types: &[crate::SimVolumeType]) -> Outcome {
    let list: Vec<Value> = types
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "name": t.name,
                "description": null,
                "is_public": t.is_public,
                "os-volume-type-access:is_public": t.is_public,
                "extra_specs": {},
                "qos_specs_id": null,
            })
        })
        .collect();
    Outcome::json(200, json!({ "volume_types": list }))
}

/// Highest microversion the emulated Manila serves.
const MANILA_MAX_MINOR: u32 = 84;

fn share_types(state: &State, microversion: Option<&str>) -> Outcome {
    let Some(types) = &state.share_types else {
        return Outcome::error(404, "The resource could not be found.");
    };
    if let Some(v) = microversion {
        let minor = v
            .trim()
            .strip_prefix("2.")
            .and_then(|m| m.parse::<u32>().ok());
        match minor {
            None => {
                return Outcome::error(400, &format!("Invalid API version request: {v}"));
            }
            Some(m) if m > MANILA_MAX_MINOR => {
                return Outcome::error(
                    406,
                    &format!(
                        "Version {v} is not supported by the API. Minimum is 2.0 and maximum \
                         is 2.{MANILA_MAX_MINOR}."
                    ),
                );
            }
            Some(_) => {}
        }
    }
    let list: Vec<Value> = types
        .iter()
        .map(|t| {
            let dhss = t
                .extra_specs
                .get("driver_handles_share_servers")
                .cloned()
                .unwrap_or_else(|| "False".into());
            json!({
                "id": t.id,
                "name": t.name,
                "extra_specs": t.extra_specs,
                "required_extra_specs": {"driver_handles_share_servers": dhss},
                "share_type_access:is_public": true,
                "os-share-type-access:is_public": true,
            })
        })
        .collect();
    Outcome::json(200, json!({ "share_types": list }))
}

fn domain_matches(d: &crate::SimDomain, v: Option<&Value>) -> Option<bool> {
    let v = v?;
    if let Some(id) = v.get("id").and_then(Value::as_str) {
        return Some(d.id == id);
    }
    v.get("name").and_then(Value::as_str).map(|n| d.name == n)
}

/// Finds the user an auth request names (`{"id"}` or `{"name", "domain"}`).
/// The error is the 400 message Keystone gives.
fn find_user<'a>(users: &'a [SimUser], v: &Value) -> Result<Option<&'a SimUser>, &'static str> {
    if let Some(id) = v.get("id").and_then(Value::as_str) {
        return Ok(users.iter().find(|u| u.id == id));
    }
    let Some(name) = v.get("name").and_then(Value::as_str) else {
        return Err("Expecting to find id or name in user.");
    };
    if v.get("domain").is_none() {
        return Err("Expecting to find domain in user.");
    }
    Ok(users
        .iter()
        .find(|u| u.name == name && domain_matches(&u.domain, v.get("domain")) == Some(true)))
}

fn authenticate(state: &mut State, base: &str, body: &[u8]) -> Outcome {
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return Outcome::error(400, "Malformed request body.");
    };
    let identity = &req["auth"]["identity"];
    let methods: Vec<&str> = identity["methods"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let scope = req["auth"].get("scope");
    let (user, method, app_cred): (SimUser, &str, Option<String>) = if methods.contains(&"password")
    {
        let u = &identity["password"]["user"];
        let user = match find_user(&state.users, u) {
            Err(m) => return Outcome::error(400, m),
            Ok(None) => return Outcome::error(401, UNAUTHORIZED),
            Ok(Some(user)) => user.clone(),
        };
        if u.get("password").and_then(Value::as_str) != Some(user.password.as_str()) {
            return Outcome::error(401, UNAUTHORIZED);
        }
        if let Some(p) = scope.and_then(|s| s.get("project")) {
            let ok = if let Some(id) = p.get("id").and_then(Value::as_str) {
                user.project.id == id
            } else {
                p.get("name").and_then(Value::as_str) == Some(user.project.name.as_str())
                    && domain_matches(&user.project.domain, p.get("domain")) == Some(true)
            };
            if !ok {
                return Outcome::error(401, UNAUTHORIZED);
            }
        }
        (user, "password", None)
    } else if methods.contains(&"application_credential") {
        let ac = &identity["application_credential"];
        let found: Option<SimAppCredential> = if let Some(id) = ac.get("id").and_then(Value::as_str)
        {
            state.app_credentials.iter().find(|c| c.id == id).cloned()
        } else if let Some(name) = ac.get("name").and_then(Value::as_str) {
            let owner = match find_user(&state.users, &ac["user"]) {
                Err(m) => return Outcome::error(400, m),
                Ok(owner) => owner.map(|u| u.id.clone()),
            };
            state
                .app_credentials
                .iter()
                .find(|c| c.name == name && Some(&c.user_id) == owner.as_ref())
                .cloned()
        } else {
            return Outcome::error(
                400,
                "Expecting to find id or name in application_credential.",
            );
        };
        let Some(cred) = found else {
            return Outcome::error(401, UNAUTHORIZED);
        };
        if ac.get("secret").and_then(Value::as_str) != Some(cred.secret.as_str()) {
            return Outcome::error(401, UNAUTHORIZED);
        }
        if scope.is_some() {
            return Outcome::error(401, UNAUTHORIZED);
        }
        let Some(user) = state.users.iter().find(|u| u.id == cred.user_id).cloned() else {
            return Outcome::error(401, UNAUTHORIZED);
        };
        (user, "application_credential", Some(cred.id))
    } else {
        return Outcome::error(401, UNAUTHORIZED);
    };

    let token = format!("gAAAAAsim{:08}", state.next_token);
    state.next_token += 1;
    let lifetime = state.token_lifetime;
    state.tokens.insert(
        token.clone(),
        IssuedToken {
            user_id: user.id.clone(),
            project_id: user.project.id.clone(),
            app_credential: app_cred,
            expires: Instant::now() + lifetime,
        },
    );
    let issued = jiff::Timestamp::now();
    let expires = jiff::SignedDuration::try_from(lifetime)
        .ok()
        .and_then(|d| issued.checked_add(d).ok())
        .unwrap_or(issued);
    let body = json!({ "token": {
        "methods": [method],
        "user": {"id": user.id, "name": user.name,
                 "domain": {"id": user.domain.id, "name": user.domain.name}},
        "project": {"id": user.project.id, "name": user.project.name,
                    "domain": {"id": user.project.domain.id, "name": user.project.domain.name}},
        "roles": [{"id": "r-member", "name": "member"}],
        "issued_at": issued.to_string(),
        "expires_at": expires.to_string(),
        "catalog": catalog(state, base, &user.project.id),
    }});
    Outcome {
        status: 201,
        body,
        raw: None,
        subject_token: Some(token),
        user_id: Some(user.id),
        auth_method: Some(method.into()),
    }
}

fn catalog(state: &State, base: &str, project_id: &str) -> Vec<Value> {
    let region = &state.region;
    let entry = |ty: &str, name: &str, public: String, internal: String| {
        json!({
            "type": ty, "name": name, "id": format!("svc-{ty}"),
            "endpoints": [
                {"id": format!("{ty}-public"), "interface": "public", "region": region,
                 "region_id": region, "url": public},
                {"id": format!("{ty}-internal"), "interface": "internal", "region": region,
                 "region_id": region, "url": internal},
            ]
        })
    };
    let mut out = vec![
        entry(
            "identity",
            "keystone",
            format!("{base}/identity/v3"),
            format!("{base}/identity/v3"),
        ),
        entry(
            "compute",
            "nova",
            format!("{base}/public/compute/v2.1"),
            format!("{base}/internal/compute/v2.1"),
        ),
        entry(
            "volumev3",
            "cinderv3",
            format!("{base}/public/volume/v3/{project_id}"),
            format!("{base}/internal/volume/v3/{project_id}"),
        ),
    ];
    if state.share_types.is_some() {
        out.push(entry(
            "sharev2",
            "manilav2",
            format!("{base}/public/share/v2"),
            format!("{base}/internal/share/v2"),
        ));
    }
    out.retain(|e| e["type"].as_str().is_none_or(|t| !state.hidden.contains(t)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fault, SimConfig};

    fn state() -> State {
        let c = SimConfig::default();
        State {
            region: c.region,
            token_lifetime: c.token_lifetime,
            users: c.users,
            app_credentials: c.app_credentials,
            compute_zones: c.compute_zones,
            volume_zones: c.volume_zones,
            volume_types: c.volume_types,
            share_types: c.share_types,
            hidden: Default::default(),
            tokens: Default::default(),
            faults: Vec::new(),
            log: Vec::new(),
            next_token: 1,
            in_flight: Default::default(),
            next_request: 0,
            storage: Default::default(),
            share_networks: Vec::new(),
        }
    }

    fn password_body(user: Value, password: &str, scope: Option<Value>) -> Vec<u8> {
        let mut user = user;
        user["password"] = json!(password);
        let mut body = json!({"auth": {"identity": {"methods": ["password"],
            "password": {"user": user}}}});
        if let Some(s) = scope {
            body["auth"]["scope"] = s;
        }
        serde_json::to_vec(&body).expect("json")
    }

    #[test]
    fn password_auth_by_name_and_id() {
        let mut s = state();
        let out = authenticate(
            &mut s,
            "http://x",
            &password_body(
                json!({"name": "admin", "domain": {"name": "Default"}}),
                crate::DEFAULT_PASSWORD,
                Some(json!({"project": {"name": "demo", "domain": {"id": "default"}}})),
            ),
        );
        assert_eq!(out.status, 201);
        assert!(out.subject_token.is_some());
        let catalog = out.body["token"]["catalog"].as_array().expect("catalog");
        let types: Vec<&str> = catalog.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(types, ["identity", "compute", "volumev3", "sharev2"]);

        let out = authenticate(
            &mut s,
            "http://x",
            &password_body(json!({"id": "u-admin"}), crate::DEFAULT_PASSWORD, None),
        );
        assert_eq!(out.status, 201, "no scope: the user's project");
        assert_eq!(s.tokens.len(), 2);
    }

    #[test]
    fn keystone_errors() {
        let mut s = state();
        let wrong = password_body(json!({"id": "u-admin"}), "nope", None);
        let out = authenticate(&mut s, "http://x", &wrong);
        assert_eq!(out.status, 401);
        assert_eq!(out.body["error"]["title"], "Unauthorized");
        let no_domain = password_body(json!({"name": "admin"}), crate::DEFAULT_PASSWORD, None);
        assert_eq!(authenticate(&mut s, "http://x", &no_domain).status, 400);
        let other_project = password_body(
            json!({"id": "u-admin"}),
            crate::DEFAULT_PASSWORD,
            Some(json!({"project": {"id": "p-other"}})),
        );
        assert_eq!(authenticate(&mut s, "http://x", &other_project).status, 401);
        assert_eq!(authenticate(&mut s, "http://x", b"{").status, 400);
        assert!(s.tokens.is_empty());
    }

    #[test]
    fn hidden_entries_and_absent_manila_leave_the_catalog() {
        let mut s = state();
        s.hidden.insert("compute".into());
        s.share_types = None;
        let types: Vec<String> = catalog(&s, "http://x", "p")
            .iter()
            .filter_map(|e| e["type"].as_str().map(str::to_string))
            .collect();
        assert_eq!(types, ["identity", "volumev3"]);
    }

    #[test]
    fn the_current_catalog_follows_the_cloud_and_needs_a_valid_token() {
        let mut s = state();
        s.share_types = None;
        let out = authenticate(
            &mut s,
            "http://x",
            &password_body(json!({"id": "u-admin"}), crate::DEFAULT_PASSWORD, None),
        );
        let token = out.subject_token.expect("token");
        let types = |out: &Outcome| -> Vec<String> {
            out.body["catalog"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|e| e["type"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let before = current_catalog(&s, "http://x", Some(&token));
        assert_eq!(before.status, 200);
        assert_eq!(before.user_id.as_deref(), Some("u-admin"));
        assert_eq!(types(&before), ["identity", "compute", "volumev3"]);
        s.share_types = Some(Vec::new());
        let after = current_catalog(&s, "http://x", Some(&token));
        assert_eq!(
            types(&after),
            ["identity", "compute", "volumev3", "sharev2"]
        );
        let volume = &after.body["catalog"][2]["endpoints"][0]["url"];
        assert_eq!(
            volume, "http://x/public/volume/v3/p-demo",
            "the token's project"
        );
        assert_eq!(current_catalog(&s, "http://x", Some("nope")).status, 401);
        assert_eq!(current_catalog(&s, "http://x", None).status, 401);
        s.tokens.clear();
        assert_eq!(current_catalog(&s, "http://x", Some(&token)).status, 401);
    }

    #[test]
    fn faults_count_down_and_match_their_target() {
        let mut s = state();
        s.faults
            .push(Fault::status(503).on(SimService::Compute).times(2));
        s.faults
            .push(Fault::latency(Duration::from_millis(5)).on_path("/identity"));
        let status = |s: &mut State, service, path| {
            let (delay, out) = take_faults(s, service, path);
            (delay, out.map(|o| o.status))
        };
        assert_eq!(
            status(&mut s, SimService::Volume, "/public/volume"),
            (Duration::ZERO, None)
        );
        assert_eq!(
            status(&mut s, SimService::Compute, "/public/compute"),
            (Duration::ZERO, Some(503))
        );
        assert_eq!(
            status(&mut s, SimService::Compute, "/public/compute").1,
            Some(503)
        );
        assert_eq!(
            status(&mut s, SimService::Compute, "/public/compute").1,
            None
        );
        assert_eq!(
            take_faults(&mut s, SimService::Identity, "/identity/v3/auth/tokens").0,
            Duration::from_millis(5),
            "latency until cleared"
        );
        assert_eq!(s.faults.len(), 1);
    }

    #[test]
    fn manila_microversion_is_checked() {
        let s = state();
        assert_eq!(share_types(&s, None).status, 200);
        assert_eq!(share_types(&s, Some("2.0")).status, 200);
        assert_eq!(share_types(&s, Some("2.999")).status, 406);
        assert_eq!(share_types(&s, Some("banana")).status, 400);
    }

    #[test]
    fn paths_classify() {
        assert_eq!(classify("/identity/v3"), (SimService::Identity, None));
        assert_eq!(
            classify("/internal/share/v2/types"),
            (SimService::Share, Some("internal".into()))
        );
        assert_eq!(classify("/x/compute").0, SimService::Unknown);
    }
}
