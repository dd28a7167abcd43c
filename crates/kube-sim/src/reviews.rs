//! `TokenReview` (`authentication.k8s.io/v1`) and `SubjectAccessReview`
//! (`authorization.k8s.io/v1`): the create-only, never-stored resources through which a
//! workload delegates authentication and authorization to the API server, as library-go's
//! controllercmd and kube-rbac-proxy do for `/metrics`; and their "self" forms about the
//! requester, `SelfSubjectReview` (`kubectl auth whoami`) and `SelfSubjectAccessReview`
//! (`kubectl auth can-i`), which every authenticated user may create (`system:basic-user`).
//!
//! They answer with kube-sim's own notions, the same ones every request is judged by:
//! - a token authenticates whom it authenticates on a request (see `authentication.rs`): with
//!   user-name tokens a non-empty token made of visible characters is that user, with issued
//!   tokens only a token kube-sim issued is anyone (its user); either way with the groups
//!   kube-sim gives the user. A token of a ServiceAccount that does not exist is not
//!   authenticated (a real token of a deleted ServiceAccount no longer is; kube-sim's own
//!   request authentication does not check that, a known difference), nor is
//!   `system:anonymous`.
//! - a SubjectAccessReview runs the RBAC authorizer on the attributes in its spec, with the
//!   groups as given (not re-resolved), as the API server does; with RBAC switched off every
//!   review is allowed (the AlwaysAllow authorizer).
//!
//! Creating either needs `create` on it, which the normal request authorization checks first
//! (`system:auth-delegator` grants it on a real cluster). Nothing here writes the store.

use serde_json::{Value, json};

use crate::Shared;
use crate::errors::ApiError;
use crate::field_error::FieldError;
use crate::rbac::{self, Attributes, Decision, RbacConfig, UserInfo};
use crate::resources::ResourceType;

pub const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
pub const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";

/// Whether `group/plural` is one of the review resources this module answers.
/// Answers a request of `requester` (the authenticated user) to a review resource: only
/// `POST` to the collection.
pub fn handle(
    shared: &Shared,
    rt: &ResourceType,
    method: &str,
    name: Option<&str>,
    requester: &str,
    body: impl FnOnce() -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    if method != "POST" || name.is_some() {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let body = body()?;
    check_kind(rt, &body)?;
    match rt.plural.as_str() {
        "tokenreviews" => Ok(token_review(shared, &body)),
        "selfsubjectreviews" => Ok(self_subject_review(shared, requester)),
        "selfsubjectaccessreviews" => {
            let user = requester_info(shared, requester);
            let mut body = body;
            if let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("user".into(), json!(user.name));
                spec.insert("groups".into(), json!(user.groups));
            }
            let mut review = subject_access_review(shared, rt, &body)?;
            // The answer echoes the spec as sent, without the requester filled in.
            if let Some(spec) = review.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("user");
                spec.remove("groups");
            }
            review["kind"] = json!(rt.kind);
            Ok(review)
        }
        _ => subject_access_review(shared, rt, &body),
    }
}

fn check_kind(rt: &ResourceType, body: &Value) -> Result<(), ApiError> {
    let kind = body["kind"].as_str().unwrap_or_default();
    let api_version = body["apiVersion"].as_str().unwrap_or_default();
    if (!kind.is_empty() && kind != rt.kind)
        || (!api_version.is_empty() && api_version != rt.api_version())
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    Ok(())
}

fn rbac_config(shared: &Shared) -> Option<RbacConfig> {
    shared.rbac.config()
}

/// Who a token is, or why it is not anyone.
fn authenticate(shared: &Shared, token: &str) -> Result<UserInfo, &'static str> {
    let token = token.trim();
    if token.is_empty() || token.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("invalid bearer token");
    }
    let Some(user) = shared.tokens.user_of(token) else {
        return Err("invalid bearer token");
    };
    if user == rbac::ANONYMOUS_USER {
        return Err("invalid bearer token");
    }
    if let Some((ns, name)) = rbac::service_account_of(&user) {
        let cluster = shared.lock();
        let exists = cluster
            .store()
            .get(
                &crate::resources::GroupResource::new("", "serviceaccounts"),
                ns,
                name,
            )
            .is_some();
        if !exists {
            return Err("service account token is no longer valid");
        }
    }
    let config = rbac_config(shared).unwrap_or_default();
    Ok(UserInfo::resolve(&user, &config))
}

/// The requester as the request authenticated it, with the groups kube-sim gives the user.
fn requester_info(shared: &Shared, requester: &str) -> UserInfo {
    UserInfo::resolve(requester, &rbac_config(shared).unwrap_or_default())
}

/// `SelfSubjectReview`: who the requester is.
fn self_subject_review(shared: &Shared, requester: &str) -> Value {
    let user = requester_info(shared, requester);
    let mut user_json = json!({"username": user.name, "groups": user.groups});
    if let Some((ns, name)) = rbac::service_account_of(&user.name) {
        user_json["uid"] = json!(format!("kube-sim-sa-{ns}-{name}"));
    }
    json!({
        "kind": "SelfSubjectReview",
        "apiVersion": format!("{AUTHENTICATION_GROUP}/v1"),
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": user_json},
    })
}

fn token_review(shared: &Shared, body: &Value) -> Value {
    let token = body["spec"]["token"].as_str().unwrap_or_default();
    let audiences = body["spec"]["audiences"].clone();
    let status = match authenticate(shared, token) {
        Ok(user) => {
            let mut user_json = json!({"username": user.name, "groups": user.groups});
            if let Some((ns, name)) = rbac::service_account_of(&user.name) {
                // Real service-account tokens carry the pod-independent SA uid; a stable
                // stand-in is enough for callers that key caches on it.
                user_json["uid"] = json!(format!("kube-sim-sa-{ns}-{name}"));
            }
            let mut s = json!({"authenticated": true, "user": user_json});
            if audiences.is_array() {
                s["audiences"] = audiences.clone();
            }
            s
        }
        Err(why) => json!({"user": {}, "error": why}),
    };
    let mut spec = body["spec"].clone();
    if !spec.is_object() {
        spec = json!({});
    }
    json!({
        "kind": "TokenReview",
        "apiVersion": format!("{AUTHENTICATION_GROUP}/v1"),
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    })
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn subject_access_review(
    shared: &Shared,
    rt: &ResourceType,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let user = spec["user"].as_str().unwrap_or_default().to_owned();
    let groups = strings(&spec["groups"]);
    let resource = &spec["resourceAttributes"];
    let non_resource = &spec["nonResourceAttributes"];
    let mut errors = Vec::new();
    if user.is_empty() && groups.is_empty() {
        errors.push(FieldError::invalid(
            "spec.user",
            json!(user),
            "at least one of user or group must be specified",
        ));
    }
    match (resource.is_object(), non_resource.is_object()) {
        (false, false) => errors.push(FieldError::invalid(
            "spec.resourceAttributes",
            Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (true, true) => errors.push(FieldError::invalid(
            "spec.resourceAttributes",
            resource.clone(),
            "cannot be specified in combination with nonResourceAttributes",
        )),
        _ => {}
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid(rt, "", &errors));
    }
    let who = UserInfo {
        name: user,
        groups: groups.clone(),
    };
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let attrs = if non_resource.is_object() {
        Attributes::non_resource(who, &s(non_resource, "verb"), &s(non_resource, "path"))
    } else {
        let mut a = Attributes::resource(
            who,
            &s(resource, "verb"),
            &s(resource, "group"),
            &s(resource, "resource"),
            &s(resource, "namespace"),
            &s(resource, "name"),
        );
        a.subresource = s(resource, "subresource");
        a
    };
    let status = match rbac_config(shared) {
        None => {
            json!({"allowed": true, "reason": "kube-sim: RBAC is off, every request is allowed"})
        }
        Some(_) => match rbac::authorize(&*shared.lock(), &attrs) {
            Decision::Allow => json!({"allowed": true, "reason": "allowed by RBAC"}),
            Decision::Deny { reason } => {
                let mut st = json!({"allowed": false});
                if !reason.is_empty() {
                    st["reason"] = json!(reason);
                }
                st
            }
        },
    };
    Ok(json!({
        "kind": "SubjectAccessReview",
        "apiVersion": format!("{AUTHORIZATION_GROUP}/v1"),
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    }))
}
