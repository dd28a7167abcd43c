//! The shapes of answers (JSON bodies, Status errors, warnings) and who is asking.

use super::routing::ResourcePath;
use crate::errors::ApiError;
use crate::{Shared, discovery};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use std::collections::HashMap;
use std::convert::Infallible;

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

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
pub(super) fn plain_not_found() -> Response<Body> {
    Response::builder()
        .status(StatusCode::NOT_FOUND)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header("X-Content-Type-Options", "nosniff")
        .body(Full::new(Bytes::from_static(b"404 page not found\n")).boxed_unsync())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed_unsync()))
}

pub(super) fn aggregated_response(doc: &Value) -> Response<Body> {
    let mut resp = json_response(200, doc);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(discovery::AGGREGATED_V2),
    );
    resp
}

pub(super) fn error_response(e: &ApiError) -> Response<Body> {
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

pub(super) fn with_warnings(mut resp: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let text = format!("299 - {}", serde_json::to_string(w).unwrap_or_default());
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// The authenticated user (see `authentication.rs`), or the 401 for an unknown bearer token.
pub(super) fn identity(shared: &Shared, headers: &HeaderMap) -> Result<String, ApiError> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    crate::authentication::authenticate(shared, authorization)
}

pub(super) fn verb_of(
    method: &Method,
    p: &ResourcePath,
    q: &HashMap<String, String>,
) -> &'static str {
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
