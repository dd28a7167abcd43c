//! API errors and their `Status` bodies, with the reasons, codes and messages of a real
//! kube-apiserver, so that clients' error matching (`kube::Error::Api`, `get_opt`,
//! `apierrors.IsConflict`) behaves exactly as against a cluster.

use serde_json::{Value, json};

use crate::field_error::FieldError;
use crate::resources::ResourceType;

/// A failed request, convertible into a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", rt.group_resource().qualified(), name),
        )
        .with_details(details(rt, name))
    }

    /// 404 for a path that names no served resource.
    pub fn no_route() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
            .with_details(json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}))
    }

    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} \"{}\" already exists",
                rt.group_resource().qualified(),
                name
            ),
        )
        .with_details(details(rt, name))
    }

    pub fn conflict(rt: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                rt.group_resource().qualified(),
                name,
                why
            ),
        )
        .with_details(details(rt, name))
    }

    /// The message of a stale-resourceVersion update.
    pub fn stale(rt: &ResourceType, name: &str) -> Self {
        Self::conflict(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn invalid(rt: &ResourceType, name: &str, errors: &[FieldError]) -> Self {
        let list = if errors.len() == 1 {
            errors[0].to_string()
        } else {
            format!(
                "[{}]",
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.kind.cause_reason(), "message": e.message(), "field": e.field}))
            .collect();
        let mut d = details_kind(rt, name);
        d["causes"] = Value::Array(causes);
        Self::new(
            422,
            "Invalid",
            format!("{} \"{}\" is invalid: {}", rt.qualified_kind(), name, list),
        )
        .with_details(d)
    }

    /// 409 from server-side apply with the conflicting managers listed.
    pub fn apply_conflict(
        rt: &ResourceType,
        name: &str,
        message: String,
        causes: Vec<Value>,
    ) -> Self {
        let mut d = details(rt, name);
        d["causes"] = Value::Array(causes);
        Self::new(409, "Conflict", message).with_details(d)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn forbidden(rt: &ResourceType, name: &str, why: &str) -> Self {
        let what = if name.is_empty() {
            String::new()
        } else {
            format!(" \"{name}\"")
        };
        Self::new(
            403,
            "Forbidden",
            format!(
                "{}{} is forbidden: {}",
                rt.group_resource().qualified(),
                what,
                why
            ),
        )
        .with_details(details(rt, name))
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 415 for a create or update body in a format the resource does not take: JSON, YAML and,
    /// for built-in kinds, protobuf (`protobuf`); custom resources have no protobuf form.
    pub fn unsupported_body_type(content_type: &str, protobuf: bool) -> Self {
        let protobuf = if protobuf {
            ", application/vnd.kubernetes.protobuf"
        } else {
            ""
        };
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml{protobuf} (got {content_type:?})"
            ),
        )
    }

    /// 415 for a protobuf body of a kind kube-sim's protobuf decoder has no table for.
    pub fn unsupported_protobuf_kind(api_version: &str, kind: &str, supported: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "kube-sim cannot decode a protobuf body of kind {kind:?} (apiVersion {api_version:?}): send it as application/json or application/yaml; protobuf is decoded for {supported}"
            ),
        )
    }

    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io",
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// An error injected by a test; keeps whatever code and reason the test chose.
    pub fn injected(code: u16, reason: &'static str, message: String) -> Self {
        Self::new(code, reason, message)
    }

    /// As an API server throttles (apimachinery's `NewTooManyRequests(message, 1)`; the
    /// priority-and-fairness and max-in-flight filters also send `Retry-After: 1`): the body
    /// asks for a retry after one second, and so does the `Retry-After` header made from it.
    pub fn too_many_requests() -> Self {
        Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        )
        .with_details(json!({"retryAfterSeconds": 1}))
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The Status object a real server sends.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        if self.reason.is_empty()
            && let Some(o) = s.as_object_mut()
        {
            o.remove("reason");
        }
        s
    }
}

fn details(rt: &ResourceType, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": rt.plural});
    if !rt.group.is_empty() {
        d["group"] = Value::String(rt.group.clone());
    }
    d
}

/// Invalid errors name the Kind rather than the resource.
fn details_kind(rt: &ResourceType, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": rt.kind});
    if !rt.group.is_empty() {
        d["group"] = Value::String(rt.group.clone());
    }
    d
}

/// A success Status, as returned by deletes of most built-in types.
pub fn success_status(rt: &ResourceType, name: &str, uid: &str) -> Value {
    let mut d = details(rt, name);
    d["uid"] = Value::String(uid.to_string());
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Catalogue;

    #[test]
    fn statuses_match_the_api_server() {
        let c = Catalogue::builtin();
        let cm = c.get("", "v1", "configmaps").expect("configmaps");
        let s = ApiError::not_found(&cm, "x").to_status();
        assert_eq!(s["message"], "configmaps \"x\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "configmaps");
        let dep = c.get("apps", "v1", "deployments").expect("deployments");
        let s = ApiError::stale(&dep, "d").to_status();
        assert_eq!(
            s["message"],
            "Operation cannot be fulfilled on deployments.apps \"d\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let s =
            ApiError::invalid(&dep, "d", &[FieldError::required("spec.selector", "")]).to_status();
        assert_eq!(
            s["message"],
            "Deployment.apps \"d\" is invalid: spec.selector: Required value"
        );
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(s["code"], 422);
    }
}
