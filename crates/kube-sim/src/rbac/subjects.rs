//! Users and request attributes, as the apiserver's user.Info and RequestInfo carry them.

use super::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, PRIVILEGED_GROUP, RbacConfig, SERVICE_ACCOUNT_PREFIX,
    SERVICE_ACCOUNTS_GROUP, UNAUTHENTICATED_GROUP,
};
use crate::observe::RequestRecord;
use std::collections::HashMap;

/// An authenticated identity: a name and the groups the authenticator gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The identity kube-sim gives a bearer-token user name (see the module documentation).
    pub fn resolve(name: &str, config: &RbacConfig) -> Self {
        let mut groups = Vec::new();
        if name == ANONYMOUS_USER {
            groups.push(UNAUTHENTICATED_GROUP.to_string());
            return Self {
                name: name.into(),
                groups,
            };
        }
        if config.superusers.iter().any(|s| s == name) {
            groups.push(PRIVILEGED_GROUP.to_string());
        }
        if let Some((ns, _)) = service_account_of(name) {
            groups.push(SERVICE_ACCOUNTS_GROUP.to_string());
            groups.push(format!("{SERVICE_ACCOUNTS_GROUP}:{ns}"));
        }
        groups.push(AUTHENTICATED_GROUP.to_string());
        Self {
            name: name.into(),
            groups,
        }
    }

    /// A user with explicit groups (for evaluating policy without a server).
    pub fn new(name: &str, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            groups: to_strings(groups),
        }
    }

    /// Members of `system:masters` bypass authorization and escalation checks.
    pub fn is_privileged(&self) -> bool {
        has(&self.groups, PRIVILEGED_GROUP)
    }
}

/// `system:serviceaccount:<ns>:<name>` split into namespace and name (`SplitUsername`).
pub fn service_account_of(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// What the authorizer decides on (`authorizer.Attributes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    pub resource_request: bool,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The URL path of a non-resource request.
    pub path: String,
}

impl Attributes {
    /// A resource request.
    pub fn resource(
        user: UserInfo,
        verb: &str,
        api_group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Self {
            user,
            verb: verb.into(),
            resource_request: true,
            api_group: api_group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            path: String::new(),
        }
    }

    /// A non-resource request (`/healthz`, `/apis`, ...).
    pub fn non_resource(user: UserInfo, verb: &str, path: &str) -> Self {
        Self {
            user,
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    /// The attributes of an HTTP request, as the apiserver's RequestInfo derives them, from
    /// kube-sim's request record (which already holds verb, resource, namespace and name).
    pub fn from_request(
        user: UserInfo,
        record: &RequestRecord,
        query: &HashMap<String, String>,
        resource_request: bool,
    ) -> Self {
        if !resource_request {
            return Self::non_resource(user, &record.method.to_ascii_lowercase(), &record.path);
        }
        let (group, resource) = record
            .resource
            .split_once('/')
            .unwrap_or(("", record.resource.as_str()));
        let verb = match record.verb.as_str() {
            "other" => match record.method.as_str() {
                "HEAD" if record.name.is_empty() => "list",
                "HEAD" => "get",
                _ => "",
            },
            v => v,
        };
        let mut name = record.name.clone();
        if name.is_empty() && (verb == "list" || verb == "watch") {
            name = query
                .get("fieldSelector")
                .and_then(|s| pinned_name(s))
                .unwrap_or_default();
        }
        // /api/v1/namespaces/{name}[/status|/finalize]: the namespace of the request is the
        // Namespace itself, so a RoleBinding in it can grant `get namespaces`.
        let namespace = if group.is_empty() && resource == "namespaces" && !record.name.is_empty() {
            record.name.clone()
        } else {
            record.namespace.clone()
        };
        Self {
            user,
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: record.subresource.clone(),
            namespace,
            name,
            path: record.path.clone(),
        }
    }
}

/// The name a field selector requires exactly (`metadata.name=X` or `==X` among its terms),
/// if it is a valid path segment, as the RequestInfo of list and watch requests records it.
pub fn pinned_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        if term.contains("!=") {
            return None;
        }
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        let value = value.trim();
        let valid = !value.is_empty()
            && value != "."
            && value != ".."
            && !value.contains('/')
            && !value.contains('%');
        (field.trim() == "metadata.name" && valid).then(|| value.to_string())
    })
}

pub(super) fn to_strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(super) fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}
