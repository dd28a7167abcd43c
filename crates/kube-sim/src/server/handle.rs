//! One request: admin paths, faults, authentication and authorization, reviews, non-resource
//! paths, then the resource verbs with their options and bodies.

use super::responses::{
    Body, aggregated_response, error_response, identity, json_response, plain_not_found, verb_of,
    with_warnings,
};
use super::routing::{ResourcePath, Route, query_map, route};
use super::watch::{Render, partial_metadata, partial_metadata_list, watch};
use super::{MAX_BODY, admin};
use crate::admission::FieldValidation;
use crate::admission_plugins::Requester;
use crate::api::{DeleteOptions, ListOptions, PatchType, WriteOptions};
use crate::errors::ApiError;
use crate::observe::RequestRecord;
use crate::resources::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::{Shared, api, discovery, selector, ssa, table};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

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
        Route::Resource(p) if crate::resources::is_review(&p.group, &p.plural) => review(
            &shared,
            &parts.method,
            &p,
            &content_type,
            &body,
            &record.user,
        ),
        Route::Resource(p) => resource(
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
        .unwrap_or_else(|e| error_response(&e)),
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
pub(super) fn review(
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

pub(super) fn injected_error(code: u16) -> ApiError {
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

pub(super) fn non_resource(
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
            aggregated_response(&discovery::aggregated(cluster.catalogue(), true))
        }
        Route::Groups if discovery::wants_aggregated(accept) => {
            aggregated_response(&discovery::aggregated(cluster.catalogue(), false))
        }
        Route::CoreVersions => json_response(200, &discovery::core_versions(&shared.address())),
        Route::Groups => json_response(200, &discovery::api_groups(cluster.catalogue())),
        Route::Group(g) => match discovery::api_group(cluster.catalogue(), &g) {
            Some(doc) => json_response(200, &doc),
            None => plain_not_found(),
        },
        Route::GroupVersion(g, v) => match discovery::resource_list(cluster.catalogue(), &g, &v) {
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
        Route::OpenApiV3Root => {
            json_response(200, &discovery::openapi_v3_root(cluster.catalogue()))
        }
        Route::OpenApiV3(path) => {
            match discovery::openapi_v3_group_version(cluster.catalogue(), &path) {
                Some(doc) => json_response(200, &doc),
                None => plain_not_found(),
            }
        }
        Route::Admin(_) | Route::Resource(_) | Route::NotFound => plain_not_found(),
    }
}

pub(super) fn parse_list_options(
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

pub(super) fn parse_write_options(
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
pub(super) fn requester(shared: &Shared, user: &str, p: &ResourcePath) -> Requester {
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
pub(super) async fn resource(
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
            None if !cluster.catalogue().has_group_version(&p.group, &p.version) => {
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
pub(super) fn scale(
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

pub(super) fn accept_ok(accept: &str) -> bool {
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
pub(super) fn protobuf_endpoint(rt: &ResourceType) -> Option<(String, String)> {
    (!rt.is_custom()).then(|| (rt.api_version(), rt.kind.clone()))
}

/// The object a create or update body stands for: JSON, YAML, or protobuf where `protobuf`
/// (the endpoint's apiVersion and kind, from `protobuf_endpoint`) allows it.
pub(super) fn parse_body(
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

pub(super) fn delete_options(
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
