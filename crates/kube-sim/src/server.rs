//! The HTTP front: routing of Kubernetes API paths, query parameters, content negotiation,
//! watch streaming, the request log and fault injection, and the accept loop that can be
//! "restarted" (all connections dropped, data kept).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::Shared;
use crate::admission::FieldValidation;
use crate::admission_policy::Requester;
use crate::api::{self, DeleteOptions, ListOptions, PatchType, WriteOptions};
use crate::errors::ApiError;
use crate::observe::RequestRecord;
use crate::resources::ResourceType;
use crate::selector::{self, FieldSelector, LabelSelector};
use crate::store::{Event, EventType, WatchStartError};
use crate::{admin, discovery, ssa, table};

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The largest request body a real server accepts (3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// A parsed resource path.
#[derive(Debug, Clone, Default, PartialEq)]
struct ResourcePath {
    group: String,
    version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Version,
    CoreVersions,
    Groups,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3Root,
    OpenApiV3(String),
    Health,
    Admin(String),
    Resource(ResourcePath),
    NotFound,
}

fn route(path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3(rest.join("/")),
        ["__sim", rest @ ..] => Route::Admin(rest.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::GroupVersion(String::new(), "v1".into()),
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::GroupVersion(g.to_string(), v.to_string()),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest),
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let mut p = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..Default::default()
    };
    let tail: &[&str] = match rest {
        // /api/v1/namespaces/{name}[/status|/finalize] addresses the Namespace itself.
        ["namespaces"] if group.is_empty() => {
            p.plural = "namespaces".into();
            return Route::Resource(p);
        }
        ["namespaces", name] if group.is_empty() => {
            p.plural = "namespaces".into();
            p.name = Some(name.to_string());
            return Route::Resource(p);
        }
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            p.plural = "namespaces".into();
            p.name = Some(name.to_string());
            p.sub = Some(sub.to_string());
            return Route::Resource(p);
        }
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => {
            p.namespace = Some(ns.to_string());
            tail
        }
        other => other,
    };
    match tail {
        [plural] => p.plural = plural.to_string(),
        [plural, name] => {
            p.plural = plural.to_string();
            p.name = Some(name.to_string());
        }
        [plural, name, sub] => {
            p.plural = plural.to_string();
            p.name = Some(name.to_string());
            p.sub = Some(sub.to_string());
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

fn query_map(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn json_response(code: u16, body: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(bytes)).boxed_unsync())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed_unsync()))
}

/// What a real server answers for a path no API group serves: plain text, not a Status, so
/// clients see "not found" as an error rather than as an absent object (kube-rs `get_opt` on
/// an API that is not installed fails instead of returning `None`).
fn plain_not_found() -> Response<Body> {
    Response::builder()
        .status(StatusCode::NOT_FOUND)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header("X-Content-Type-Options", "nosniff")
        .body(Full::new(Bytes::from_static(b"404 page not found\n")).boxed_unsync())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed_unsync()))
}

fn aggregated_response(doc: &Value) -> Response<Body> {
    let mut resp = json_response(200, doc);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(discovery::AGGREGATED_V2),
    );
    resp
}

fn error_response(e: &ApiError) -> Response<Body> {
    let mut resp = json_response(e.code, &e.to_status());
    // The server sets Retry-After whenever the Status asks the client to retry later; client
    // retry layers (client-go, kube-rs) read the header, not the body.
    let retry = e
        .details
        .as_ref()
        .and_then(|d| d.get("retryAfterSeconds"))
        .and_then(Value::as_u64)
        .filter(|s| *s > 0);
    if let Some(seconds) = retry
        && let Ok(v) = HeaderValue::from_str(&seconds.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

fn with_warnings(mut resp: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let text = format!("299 - {}", serde_json::to_string(w).unwrap_or_default());
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// The authenticated user (see `authentication.rs`), or the 401 for an unknown bearer token.
fn identity(shared: &Shared, headers: &HeaderMap) -> Result<String, ApiError> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    crate::authentication::authenticate(shared, authorization)
}

fn verb_of(method: &Method, p: &ResourcePath, q: &HashMap<String, String>) -> &'static str {
    let watching = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    match (method.as_str(), p.name.is_some()) {
        ("GET", _) if watching => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "other",
    }
}

/// Entry point for every HTTP request.
pub async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or_default().to_string();
    let q = query_map(&query);
    let route = route(&path);
    let authenticated = identity(&shared, &parts.headers);
    let mut record = RequestRecord {
        at_ms: shared.started.elapsed().as_millis() as u64,
        verb: "other".into(),
        method: parts.method.to_string(),
        path: path.clone(),
        query: query.clone(),
        // An unauthenticated request is recorded without a user, as an audit log does.
        user: authenticated.clone().unwrap_or_default(),
        user_agent: parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        code: 0,
    };
    match &route {
        Route::Resource(p) => {
            record.verb = verb_of(&parts.method, p, &q).into();
            record.resource = format!("{}/{}", p.group, p.plural);
            record.subresource = p.sub.clone().unwrap_or_default();
            record.namespace = p.namespace.clone().unwrap_or_default();
            record.name = p.name.clone().unwrap_or_default();
        }
        Route::OpenApiV2 | Route::OpenApiV3Root | Route::OpenApiV3(_) => {
            record.verb = "openapi".into()
        }
        Route::Admin(_) => record.verb = "admin".into(),
        Route::Health | Route::NotFound => {}
        _ => record.verb = "discovery".into(),
    }
    let is_admin = matches!(route, Route::Admin(_));
    if let Err(e) = authenticated {
        if !is_admin {
            record.code = e.code;
            shared.log.push(record);
        }
        return Ok(error_response(&e));
    }
    if is_admin
        && let Err(e) = crate::authentication::authorize_admin(
            &shared,
            &record.user,
            parts.method.as_str(),
            &path,
        )
    {
        return Ok(error_response(&e));
    }
    if !is_admin {
        let verdict = shared.faults.check(&record);
        if !verdict.latency.is_zero() {
            tokio::time::sleep(verdict.latency).await;
        }
        if let Some(code) = verdict.error_code {
            let e = injected_error(code);
            record.code = code;
            shared.log.push(record);
            return Ok(error_response(&e));
        }
    }
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let e = ApiError::injected(
                413,
                "RequestEntityTooLarge",
                "the request body is too large".into(),
            );
            record.code = 413;
            shared.log.push(record);
            return Ok(error_response(&e));
        }
    };
    // As an audit log's objectRef does, a create names the object it creates (from the body;
    // `generateName` creates stay unnamed), so a test can tell who created what.
    if record.verb == "create" && record.name.is_empty() {
        let protobuf = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(crate::protobuf::is_protobuf);
        let object = if protobuf {
            crate::protobuf::decode(&body, "", "").ok()
        } else {
            serde_json::from_slice::<serde_json::Value>(&body).ok()
        };
        record.name = object
            .and_then(|v| v.pointer("/metadata/name")?.as_str().map(str::to_owned))
            .unwrap_or_default();
    }
    if !is_admin {
        let resource_request = matches!(route, Route::Resource(_));
        if let Err(e) = crate::rbac::authorize_request(&shared, &record, &q, resource_request) {
            record.code = e.code;
            shared.log.push(record);
            return Ok(error_response(&e));
        }
    }
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let resp = match route {
        Route::Admin(rest) => admin::handle(&shared, &parts.method, &rest, &q, &body).await,
        Route::Resource(p) if crate::reviews::is_review(&p.group, &p.plural) => review(
            &shared,
            &parts.method,
            &p,
            &content_type,
            &body,
            &record.user,
        ),
        Route::Resource(p) => {
            resource(
                &shared,
                &parts.method,
                &p,
                &q,
                &accept,
                &content_type,
                &body,
                &record.user_agent,
                &record.user,
            )
            .await
        }
        other => non_resource(&shared, other, &accept, &parts.headers),
    };
    if !is_admin {
        record.code = resp.status().as_u16();
        shared.log.push(record);
    }
    Ok(resp)
}

/// TokenReview and SubjectAccessReview: answered from kube-sim's authenticator and RBAC
/// authorizer, never stored (`reviews.rs`).
fn review(
    shared: &Shared,
    method: &Method,
    p: &ResourcePath,
    content_type: &str,
    body: &Bytes,
    user: &str,
) -> Response<Body> {
    let rt = shared.lock().resource(&p.group, &p.version, &p.plural);
    let result = match rt {
        None => return plain_not_found(),
        Some(_) if p.namespace.is_some() || p.sub.is_some() => Err(ApiError::no_route()),
        Some(rt) => crate::reviews::handle(
            shared,
            &rt,
            method.as_str(),
            p.name.as_deref(),
            user,
            || parse_body(body, content_type, protobuf_endpoint(&rt)),
        ),
    };
    match result {
        Ok(v) => json_response(201, &v),
        Err(e) => error_response(&e),
    }
}

fn injected_error(code: u16) -> ApiError {
    match code {
        409 => ApiError::injected(
            409,
            "Conflict",
            "Operation cannot be fulfilled: injected conflict".into(),
        ),
        410 => ApiError::gone("injected: too old resource version"),
        429 => ApiError::too_many_requests(),
        503 => ApiError::service_unavailable(
            "injected: the server is currently unable to handle the request",
        ),
        504 => ApiError::injected(
            504,
            "Timeout",
            "injected: the server was unable to return a response in the time allotted".into(),
        ),
        403 => ApiError::injected(403, "Forbidden", "injected: forbidden".into()),
        401 => ApiError::injected(401, "Unauthorized", "Unauthorized".into()),
        404 => ApiError::injected(404, "NotFound", "injected: not found".into()),
        c => ApiError::injected(
            c,
            "InternalError",
            format!("Internal error occurred: injected error {c}"),
        ),
    }
}

fn non_resource(
    shared: &Shared,
    route: Route,
    accept: &str,
    headers: &HeaderMap,
) -> Response<Body> {
    let cluster = shared.lock();
    match route {
        Route::Version => json_response(200, &discovery::version()),
        Route::Health => Response::new(Full::new(Bytes::from_static(b"ok")).boxed_unsync()),
        Route::CoreVersions if discovery::wants_aggregated(accept) => {
            aggregated_response(&discovery::aggregated(&cluster.catalogue, true))
        }
        Route::Groups if discovery::wants_aggregated(accept) => {
            aggregated_response(&discovery::aggregated(&cluster.catalogue, false))
        }
        Route::CoreVersions => json_response(200, &discovery::core_versions(&shared.address())),
        Route::Groups => json_response(200, &discovery::api_groups(&cluster.catalogue)),
        Route::Group(g) => match discovery::api_group(&cluster.catalogue, &g) {
            Some(doc) => json_response(200, &doc),
            None => plain_not_found(),
        },
        Route::GroupVersion(g, v) => match discovery::resource_list(&cluster.catalogue, &g, &v) {
            Some(doc) => json_response(200, &doc),
            None => plain_not_found(),
        },
        Route::OpenApiV2 => {
            if accept.contains("protobuf") {
                // An empty protobuf message is a valid, empty OpenAPI v2 Document: clients see
                // no schemas and skip client-side validation, as documented.
                let _ = headers;
                Response::builder()
                    .header(
                        header::CONTENT_TYPE,
                        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                    )
                    .body(Full::new(Bytes::new()).boxed_unsync())
                    .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed_unsync()))
            } else {
                json_response(200, &discovery::openapi_v2())
            }
        }
        Route::OpenApiV3Root => json_response(200, &discovery::openapi_v3_root(&cluster.catalogue)),
        Route::OpenApiV3(path) => {
            match discovery::openapi_v3_group_version(&cluster.catalogue, &path) {
                Some(doc) => json_response(200, &doc),
                None => plain_not_found(),
            }
        }
        Route::Admin(_) | Route::Resource(_) | Route::NotFound => plain_not_found(),
    }
}

fn parse_list_options(
    rt: &ResourceType,
    q: &HashMap<String, String>,
) -> Result<ListOptions, ApiError> {
    let labels = LabelSelector::parse(
        q.get("labelSelector")
            .map(String::as_str)
            .unwrap_or_default(),
    )
    .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(
        q.get("fieldSelector")
            .map(String::as_str)
            .unwrap_or_default(),
        selector::extra_fields(&rt.group, &rt.kind),
    )
    .map_err(ApiError::bad_request)?;
    let limit = match q.get("limit").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(l) => Some(l.parse::<usize>().map_err(|_| {
            ApiError::bad_request(format!(
                "limit: Invalid value: {l:?}: must be a non-negative integer"
            ))
        })?),
    };
    let continue_token = q.get("continue").filter(|c| !c.is_empty()).cloned();
    Ok(ListOptions {
        labels,
        fields,
        limit,
        continue_token,
        resource_version: q.get("resourceVersion").cloned().unwrap_or_default(),
        resource_version_match: q
            .get("resourceVersionMatch")
            .filter(|m| !m.is_empty())
            .cloned(),
    })
}

fn parse_write_options(
    q: &HashMap<String, String>,
    user_agent: &str,
    patch_type: Option<PatchType>,
    requester: Requester,
) -> Result<WriteOptions, ApiError> {
    let dry_run = match q.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid dryRun value: {other:?}: supported values: \"All\""
            )));
        }
    };
    let explicit = q.get("fieldManager").cloned().unwrap_or_default();
    if explicit.len() > 128 {
        return Err(ApiError::bad_request(
            "fieldManager: Too long: must have at most 128 bytes",
        ));
    }
    let manager = if explicit.is_empty() && patch_type != Some(PatchType::Apply) {
        ssa::default_manager(user_agent)
    } else {
        explicit
    };
    let force = match q.get("force").map(String::as_str) {
        None | Some("") | Some("false") => false,
        Some("true") => {
            if patch_type != Some(PatchType::Apply) {
                return Err(ApiError::bad_request(
                    "force: Invalid value: true: may not be specified for non-apply patch",
                ));
            }
            true
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "force: Invalid value: {other:?}: must be true or false"
            )));
        }
    };
    Ok(WriteOptions {
        manager,
        dry_run,
        field_validation: FieldValidation::parse(q.get("fieldValidation").map(String::as_str))?,
        force,
        requester: Some(Requester {
            dry_run,
            ..requester
        }),
    })
}

/// The requester admission policies see: the user with the groups its authentication gives,
/// and the subresource of the path.
fn requester(shared: &Shared, user: &str, p: &ResourcePath) -> Requester {
    let config = shared.rbac.config().unwrap_or_default();
    let info = crate::rbac::UserInfo::resolve(user, &config);
    Requester {
        username: info.name,
        groups: info.groups,
        subresource: p.sub.clone().unwrap_or_default(),
        dry_run: false,
    }
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    shared: &Arc<Shared>,
    method: &Method,
    p: &ResourcePath,
    q: &HashMap<String, String>,
    accept: &str,
    content_type: &str,
    body: &Bytes,
    user_agent: &str,
    user: &str,
) -> Response<Body> {
    match resource_inner(
        shared,
        method,
        p,
        q,
        accept,
        content_type,
        body,
        user_agent,
        user,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

#[allow(clippy::too_many_arguments)]
async fn resource_inner(
    shared: &Arc<Shared>,
    method: &Method,
    p: &ResourcePath,
    q: &HashMap<String, String>,
    accept: &str,
    content_type: &str,
    body: &Bytes,
    user_agent: &str,
    user: &str,
) -> Result<Response<Body>, ApiError> {
    if !accept_ok(accept) {
        return Err(ApiError::not_acceptable());
    }
    let rt = {
        let cluster = shared.lock();
        match cluster.resource(&p.group, &p.version, &p.plural) {
            Some(rt) => rt,
            None if !cluster.catalogue.has_group_version(&p.group, &p.version) => {
                return Ok(plain_not_found());
            }
            None => return Err(ApiError::no_route()),
        }
    };
    // Shape checks: a cluster-scoped resource has no namespace in its path; a namespaced one
    // may omit it only to list or watch across namespaces.
    if !rt.namespaced && p.namespace.is_some() {
        return Err(ApiError::no_route());
    }
    if rt.namespaced && p.namespace.is_none() && (p.name.is_some() || *method != Method::GET) {
        return Err(ApiError::no_route());
    }
    if let Some(sub) = &p.sub {
        let known = (sub == "status" && rt.status_subresource)
            || (sub == "scale" && rt.scale_subresource)
            || (sub == "finalize" && rt.kind == "Namespace");
        if !known {
            return Err(ApiError::no_route());
        }
    }
    let ns = p.namespace.clone().unwrap_or_default();
    let watching = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    let render = Render::from_accept(accept);
    let who = requester(shared, user, p);
    if p.sub.as_deref() == Some("scale") {
        return scale(
            shared,
            method,
            &rt,
            &ns,
            p.name.as_deref().unwrap_or_default(),
            q,
            content_type,
            body,
            user_agent,
            who,
        );
    }
    match (method.as_str(), &p.name) {
        ("GET", _) if watching => {
            let opts = parse_list_options(&rt, q)?;
            let mut opts = opts;
            if let Some(name) = &p.name {
                // GET .../name?watch=true is the legacy form of a fieldSelector on the name.
                opts.fields = FieldSelector::parse(&format!("metadata.name={name}"), &[])
                    .map_err(ApiError::bad_request)?;
            }
            watch(shared.clone(), rt, p.namespace.clone(), opts, q, render)
        }
        ("GET", Some(name)) => {
            let obj = shared.lock().get(&rt, &ns, name)?;
            if render == Render::Metadata {
                return Ok(json_response(200, &partial_metadata(&obj)));
            }
            if render == Render::Table {
                let rv = obj
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                return Ok(json_response(
                    200,
                    &table::table(&rt, std::slice::from_ref(&obj), &rv, None),
                ));
            }
            Ok(json_response(200, &obj))
        }
        ("GET", None) => {
            let opts = parse_list_options(&rt, q)?;
            let list = shared.lock().list(&rt, p.namespace.as_deref(), &opts)?;
            if render == Render::Metadata {
                return Ok(json_response(200, &partial_metadata_list(&list)));
            }
            if render == Render::Table {
                let items: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
                let rv = list
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let cont = list.pointer("/metadata/continue").and_then(Value::as_str);
                return Ok(json_response(200, &table::table(&rt, &items, &rv, cont)));
            }
            Ok(json_response(200, &list))
        }
        ("POST", None) => {
            let opts = parse_write_options(q, user_agent, None, who)?;
            let mut obj = parse_body(body, content_type, protobuf_endpoint(&rt))?;
            if rt.is(("", "Pod")) && obj.get("kind").and_then(Value::as_str) == Some("Pod") {
                obj = crate::pod_admission::admit_api_create(shared, &ns, obj, user).await?;
            }
            let guard = crate::rbac::WriteGuard::new(shared, &rt, "create", &ns, "", user);
            let out = shared.write(|c| {
                if let Some(g) = &guard {
                    g.check(c, &obj)?;
                }
                c.create(&rt, &ns, obj, &opts)
            })?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        ("PUT", Some(name)) => {
            let opts = parse_write_options(q, user_agent, None, who)?;
            let obj = parse_body(body, content_type, protobuf_endpoint(&rt))?;
            let sub = p.sub.as_deref().filter(|s| *s != "finalize");
            let guard = crate::rbac::WriteGuard::new(shared, &rt, "update", &ns, name, user);
            let out = shared.write(|c| {
                if let Some(g) = &guard {
                    g.check(c, &obj)?;
                }
                c.update(&rt, &ns, name, sub, obj, &opts)
            })?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        ("PATCH", Some(name)) => {
            let patch_type = PatchType::from_content_type(content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
            let opts = parse_write_options(q, user_agent, Some(patch_type), who)?;
            let guard = crate::rbac::WriteGuard::new(shared, &rt, "patch", &ns, name, user);
            let out = shared.write(|c| {
                if let Some(g) = &guard {
                    // The escalation check previews the patch; admission runs on the real write.
                    let dry = WriteOptions {
                        dry_run: true,
                        requester: None,
                        ..opts.clone()
                    };
                    g.check_patch(c, |c| {
                        c.patch(&rt, &ns, name, p.sub.as_deref(), patch_type, body, &dry)
                    })?;
                }
                c.patch(&rt, &ns, name, p.sub.as_deref(), patch_type, body, &opts)
            })?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        ("DELETE", Some(name)) => {
            let opts = delete_options(q, body, content_type, who)?;
            let out = shared.write(|c| c.delete(&rt, &ns, name, &opts))?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        ("DELETE", None) if rt.is(("", "Namespace")) => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
        ("DELETE", None) => {
            let list = parse_list_options(&rt, q)?;
            let opts = delete_options(q, body, content_type, who)?;
            let out =
                shared.write(|c| c.delete_collection(&rt, p.namespace.as_deref(), &list, &opts))?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({m})"
        ))),
    }
}

/// The `scale` subresource: GET, PUT and PATCH of an autoscaling/v1 Scale.
#[allow(clippy::too_many_arguments)]
fn scale(
    shared: &Arc<Shared>,
    method: &Method,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    q: &HashMap<String, String>,
    content_type: &str,
    body: &Bytes,
    user_agent: &str,
    who: Requester,
) -> Result<Response<Body>, ApiError> {
    match method.as_str() {
        "GET" => Ok(json_response(200, &shared.lock().get_scale(rt, ns, name)?)),
        "PUT" => {
            let opts = parse_write_options(q, user_agent, None, who)?;
            let protobuf = (!rt.is_custom()).then(|| ("autoscaling/v1".into(), "Scale".into()));
            let scale = parse_body(body, content_type, protobuf)?;
            let out = shared.write(|c| c.update_scale(rt, ns, name, &scale, &opts))?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        "PATCH" => {
            let patch_type = PatchType::from_content_type(content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
            let opts = parse_write_options(q, user_agent, Some(patch_type), who)?;
            let doc: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let out = shared.write(|c| {
                let current = c.get_scale(rt, ns, name)?;
                let patched = match patch_type {
                    PatchType::Json => crate::patch::json_patch(&current, &doc),
                    _ => crate::patch::merge_patch(&current, &doc),
                }
                .map_err(ApiError::from)?;
                c.update_scale(rt, ns, name, &patched, &opts)
            })?;
            Ok(with_warnings(
                json_response(out.code, &out.body),
                &out.warnings,
            ))
        }
        m => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({m})"
        ))),
    }
}

fn accept_ok(accept: &str) -> bool {
    accept.split(',').any(|a| {
        let a = a.trim();
        a.is_empty()
            || a.starts_with("application/json")
            || a.starts_with("*/*")
            || a.starts_with("application/*")
            || a.starts_with("application/yaml")
    })
}

/// The apiVersion and kind a protobuf body sent to `rt` decodes as when its envelope names
/// none; `None` for custom resources, which have no protobuf form.
fn protobuf_endpoint(rt: &ResourceType) -> Option<(String, String)> {
    (!rt.is_custom()).then(|| (rt.api_version(), rt.kind.clone()))
}

/// The object a create or update body stands for: JSON, YAML, or protobuf where `protobuf`
/// (the endpoint's apiVersion and kind, from `protobuf_endpoint`) allows it.
fn parse_body(
    body: &Bytes,
    content_type: &str,
    protobuf: Option<(String, String)>,
) -> Result<Value, ApiError> {
    let ct = content_type.split(';').next().unwrap_or_default().trim();
    if crate::protobuf::is_protobuf(ct)
        && let Some((api_version, kind)) = &protobuf
    {
        return crate::protobuf::decode(body, api_version, kind);
    }
    if ct == "application/yaml" {
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
        return crate::yaml::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
    }
    if !ct.is_empty() && ct != "application/json" && ct != "*/*" {
        return Err(ApiError::unsupported_body_type(
            content_type,
            protobuf.is_some(),
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

fn delete_options(
    q: &HashMap<String, String>,
    body: &Bytes,
    content_type: &str,
    who: Requester,
) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions::default();
    if crate::protobuf::is_protobuf(content_type) && !body.is_empty() {
        // client-go's typed Delete sends its DeleteOptions in the client's content type.
        let decoded = crate::protobuf::decode(body, "meta.k8s.io/v1", "DeleteOptions")?;
        api::parse_delete_body(&serde_json::to_vec(&decoded).unwrap_or_default(), &mut opts)?;
    } else {
        api::parse_delete_body(body, &mut opts)?;
    }
    if let Some(p) = q.get("propagationPolicy").filter(|p| !p.is_empty()) {
        opts.propagation = Some(api::parse_propagation(p)?);
    }
    if q.get("dryRun").map(String::as_str) == Some("All") {
        opts.dry_run = true;
    }
    opts.requester = Some(Requester {
        dry_run: opts.dry_run,
        ..who
    });
    Ok(opts)
}

// ----- watch -------------------------------------------------------------------------------

/// How objects are rendered for the client, from its Accept header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Render {
    Full,
    /// `as=Table`: server-side printing (`kubectl get`).
    Table,
    /// `as=PartialObjectMetadata[List]`: metadata only (kube-rs `metadata_watcher`).
    Metadata,
}

impl Render {
    fn from_accept(accept: &str) -> Self {
        if table::wants_table(accept) {
            Self::Table
        } else if accept
            .split(',')
            .next()
            .is_some_and(|a| a.contains("as=PartialObjectMetadata"))
        {
            Self::Metadata
        } else {
            Self::Full
        }
    }
}

/// The metadata-only form of an object.
fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A list in the metadata-only form.
fn partial_metadata_list(list: &Value) -> Value {
    let items: Vec<Value> = list["items"]
        .as_array()
        .map(|a| a.iter().map(partial_metadata).collect())
        .unwrap_or_default();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list.get("metadata").cloned().unwrap_or_else(|| json!({})),
        "items": items,
    })
}

struct WatchState {
    shared: Arc<Shared>,
    rt: Arc<ResourceType>,
    opts: ListOptions,
    rx: mpsc::Receiver<Arc<Event>>,
    /// Lines ready to send, in order.
    queued: std::collections::VecDeque<Value>,
    /// Events at or below this resourceVersion were asked not to be sent (a watch from a
    /// resourceVersion newer than the store's waits for it).
    skip_through: u64,
    bookmarks: bool,
    bookmark_every: Duration,
    next_bookmark: tokio::time::Instant,
    deadline: tokio::time::Instant,
    render: Render,
    sent_columns: bool,
    done: bool,
}

/// When the next bookmark is due: every interval, and once just before the watch ends so the
/// client resumes from a fresh resourceVersion (the watch cache aims at deadline − 2 s too).
fn next_bookmark_at(
    now: tokio::time::Instant,
    every: Duration,
    deadline: tokio::time::Instant,
) -> tokio::time::Instant {
    let regular = now + every;
    match deadline.checked_sub(Duration::from_secs(2)) {
        Some(last) if last > now && last < regular => last,
        _ => regular,
    }
}

fn watch(
    shared: Arc<Shared>,
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    opts: ListOptions,
    q: &HashMap<String, String>,
    render: Render,
) -> Result<Response<Body>, ApiError> {
    let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
    let bookmarks = q.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let send_initial_param = match q.get("sendInitialEvents").map(String::as_str) {
        None | Some("") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "sendInitialEvents: Invalid value: {other:?}: must be true or false"
            )));
        }
    };
    let rv_match = q
        .get("resourceVersionMatch")
        .filter(|m| !m.is_empty())
        .map(String::as_str);
    if send_initial_param.is_some() && rv_match != Some("NotOlderThan") {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if send_initial_param.is_none() && rv_match.is_some() {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if send_initial_param == Some(true) && !bookmarks {
        return Err(ApiError::invalid_list_options(
            "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
        ));
    }
    let timeout =
        match q.get("timeoutSeconds").map(String::as_str) {
            // 0 means "the server's default", not "end at once".
            None | Some("") | Some("0") => shared.config.default_watch_timeout,
            Some(t) => Duration::from_secs(t.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("timeoutSeconds: Invalid value: {t:?}"))
            })?),
        };
    let unset_rv = rv_param.is_empty() || rv_param == "0";
    let send_initial = send_initial_param.unwrap_or(unset_rv);
    let requested_rv =
        if unset_rv {
            None
        } else {
            Some(rv_param.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {rv_param}"))
            })?)
        };
    // With initial events the state is sent as of now; otherwise resume after the given rv.
    let from = if send_initial { None } else { requested_rv };
    let gr = rt.group_resource();
    let mut cluster = shared.lock();
    let (backlog, rx) = match cluster.store.watch(&gr, namespace.as_deref(), from) {
        Ok(x) => x,
        Err(WatchStartError::Gone { requested, oldest }) => {
            // As the watch cache does: 200, then one ERROR event with a 410 Status.
            let status =
                ApiError::gone(format!("too old resource version: {requested} ({oldest})"))
                    .to_status();
            let line = json!({"type": "ERROR", "object": status});
            return Ok(stream_response(
                futures::stream::iter(vec![line_bytes(&line)]).boxed(),
            ));
        }
    };
    let mut queued = std::collections::VecDeque::new();
    if send_initial {
        for (_, obj) in cluster.store.iter(&gr, namespace.as_deref(), None) {
            if opts.labels.matches(obj) && opts.fields.matches(obj) {
                queued.push_back(json!({"type": "ADDED", "object": api::present(&rt, obj)}));
            }
        }
    }
    if send_initial_param == Some(true) {
        let mut bookmark = bookmark_object(&rt, cluster.store.current_rv());
        bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        queued.push_back(json!({"type": "BOOKMARK", "object": bookmark}));
    }
    drop(cluster);
    // Replayed history goes out before live events; it is already filtered by collection.
    queued.extend(backlog.iter().filter_map(|e| event_line(&rt, &opts, e)));
    let now = tokio::time::Instant::now();
    let deadline = now + timeout;
    let state = WatchState {
        shared: shared.clone(),
        rt,
        opts,
        rx,
        queued,
        skip_through: from.unwrap_or(0),
        bookmarks,
        bookmark_every: shared.config.bookmark_interval,
        next_bookmark: next_bookmark_at(now, shared.config.bookmark_interval, deadline),
        deadline,
        render,
        sent_columns: false,
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        let line = next_watch_line(&mut st).await?;
        Some((line, st))
    });
    Ok(stream_response(stream.boxed()))
}

fn bookmark_object(rt: &ResourceType, rv: u64) -> Value {
    json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": {"resourceVersion": rv.to_string()}})
}

async fn next_watch_line(st: &mut WatchState) -> Option<Bytes> {
    if st.done {
        return None;
    }
    loop {
        if let Some(mut line) = st.queued.pop_front() {
            render_line(st, &mut line);
            return Some(line_bytes(&line));
        }
        let wake = if st.bookmarks {
            st.next_bookmark.min(st.deadline)
        } else {
            st.deadline
        };
        tokio::select! {
            ev = st.rx.recv() => match ev {
                Some(e) => {
                    if e.rv > st.skip_through {
                        st.queued.extend(event_line(&st.rt, &st.opts, &e));
                    }
                }
                None => { st.done = true; return None; }
            },
            _ = tokio::time::sleep_until(wake) => {
                let now = tokio::time::Instant::now();
                if now >= st.deadline {
                    st.done = true;
                    return None;
                }
                st.next_bookmark = next_bookmark_at(now, st.bookmark_every, st.deadline);
                // Everything up to `rv` for this watcher is already in the channel (events are
                // queued under the same lock that advances rv): send those first, so a bookmark
                // never runs ahead of an unsent event.
                let rv = st.shared.lock().store.current_rv();
                let mut pending = false;
                while let Ok(e) = st.rx.try_recv() {
                    pending = true;
                    if e.rv > st.skip_through {
                        st.queued.extend(event_line(&st.rt, &st.opts, &e));
                    }
                }
                if pending {
                    continue;
                }
                let mut line = json!({"type": "BOOKMARK", "object": bookmark_object(&st.rt, rv.max(st.skip_through))});
                if st.render == Render::Table {
                    line["object"] = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv.to_string()}, "rows": []});
                }
                return Some(line_bytes(&line));
            }
        }
    }
}

/// Rewrites an event's object for the client's Accept: a one-row Table (`kubectl get -w`) or
/// metadata only.
fn render_line(st: &mut WatchState, line: &mut Value) {
    if line["type"] == "BOOKMARK" || line["type"] == "ERROR" {
        return;
    }
    match st.render {
        Render::Full => {}
        Render::Table => {
            let obj = line["object"].take();
            line["object"] = table::watch_table(&st.rt, &obj, !st.sent_columns);
            st.sent_columns = true;
        }
        Render::Metadata => {
            let obj = line["object"].take();
            line["object"] = partial_metadata(&obj);
        }
    }
}

/// Turns a store event into a watch line for this watcher, applying selector transitions.
fn event_line(rt: &ResourceType, opts: &ListOptions, e: &Event) -> Option<Value> {
    let sel = |o: &Value| opts.labels.matches(o) && opts.fields.matches(o);
    let now = sel(&e.object);
    let before = e.previous.as_deref().is_some_and(sel);
    let (kind, object) = match e.kind {
        EventType::Added if now => (EventType::Added, e.object.as_ref().clone()),
        EventType::Modified if now && before => (EventType::Modified, e.object.as_ref().clone()),
        EventType::Modified if now => (EventType::Added, e.object.as_ref().clone()),
        // An object that stops matching leaves the watch with its previous (matching) state,
        // stamped with the event's resourceVersion, as the watch cache sends it.
        EventType::Modified if before => {
            let mut prev = e.previous.as_deref().cloned().unwrap_or(Value::Null);
            if let Some(meta) = prev.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(e.rv.to_string()));
            }
            (EventType::Deleted, prev)
        }
        EventType::Deleted if before => (EventType::Deleted, e.object.as_ref().clone()),
        _ => return None,
    };
    Some(json!({"type": kind.as_str(), "object": api::present(rt, &object)}))
}

fn line_bytes(v: &Value) -> Bytes {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

fn stream_response(stream: futures::stream::BoxStream<'static, Bytes>) -> Response<Body> {
    let body = StreamBody::new(stream.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed_unsync(body))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed_unsync()))
}

impl ApiError {
    fn invalid_list_options(message: &str) -> Self {
        let mut e = ApiError::bad_request(message);
        e.code = 422;
        e.reason = "Invalid";
        e.message = format!("ListOptions.meta.k8s.io \"\" is invalid: {message}");
        e
    }
}

// ----- accept loop -----------------------------------------------------------------------

/// Serves until `shutdown` fires; a restart drops the listener and every connection, waits
/// the requested downtime, and binds the same address again.
pub async fn serve(
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let addr: SocketAddr = match listener.local_addr() {
        Ok(a) => a,
        Err(_) => return,
    };
    let mut listener = Some(listener);
    let mut restart = shared.restart.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let l = match listener.take() {
            Some(l) => l,
            None => match bind_again(addr).await {
                Some(l) => l,
                None => return,
            },
        };
        loop {
            tokio::select! {
                accepted = l.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(shared.clone(), stream, tls.clone()));
                }
                changed = restart.changed() => {
                    if changed.is_err() { return; }
                    break;
                }
                _ = shutdown.changed() => return,
            }
        }
        drop(l);
        let downtime = *restart.borrow_and_update();
        tokio::time::sleep(Duration::from_millis(downtime)).await;
    }
}

async fn bind_again(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..100 {
        if let Ok(l) = TcpListener::bind(addr).await {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

async fn connection(
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut restart = shared.restart.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let svc_shared = shared.clone();
    let service = hyper::service::service_fn(move |req| handle(svc_shared.clone(), req));
    // A restart cuts open connections too, as a restarting API server's clients see.
    let stop = async {
        tokio::select! {
            _ = restart.changed() => {}
            _ = shutdown.changed() => {}
        }
    };
    sim_tls::serve_connection(stream, tls, service, stop).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(path: &str) -> ResourcePath {
        match route(path) {
            Route::Resource(p) => p,
            _ => panic!("{path} is not a resource path"),
        }
    }

    #[test]
    fn paths_route_like_the_api_server() {
        let p = rp("/api/v1/namespaces/default/configmaps/x");
        assert_eq!(
            (p.namespace.as_deref(), p.plural.as_str(), p.name.as_deref()),
            (Some("default"), "configmaps", Some("x"))
        );
        let p = rp("/api/v1/namespaces/default");
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.namespace),
            ("namespaces", Some("default"), None)
        );
        let p = rp("/api/v1/namespaces/default/status");
        assert_eq!(p.sub.as_deref(), Some("status"));
        let p = rp("/apis/apps/v1/deployments");
        assert_eq!(
            (p.group.as_str(), p.plural.as_str(), p.namespace),
            ("apps", "deployments", None)
        );
        let p = rp("/apis/apps/v1/namespaces/ns/deployments/d/status");
        assert_eq!(p.sub.as_deref(), Some("status"));
        let p = rp("/apis/storage.k8s.io/v1/csidrivers/x");
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref()),
            ("csidrivers", Some("x"))
        );
        assert!(matches!(
            route("/apis/apps/v1/namespaces/ns/deployments/d/status/extra"),
            Route::NotFound
        ));
        assert!(matches!(route("/apis/apps"), Route::Group(_)));
    }

    #[test]
    fn query_strings_are_decoded() {
        let q = query_map("labelSelector=app%3Dweb%2Ctier+in+%28a%29&watch=1&limit=");
        assert_eq!(q["labelSelector"], "app=web,tier in (a)");
        assert_eq!(q["watch"], "1");
        assert_eq!(q["limit"], "");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%4"), "%4");
    }
}
