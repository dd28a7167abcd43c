//! Enforcement: the 403 errors as the server words them, the log of denials, and the hooks
//! the HTTP front calls before reads and writes.

use super::policy::{
    Decision, aggregation_selectors, authorize, confirm_no_escalation, gr, meta_str,
    role_ref_rules, status_details,
};
use super::rules::{PolicyRule, rules_of};
use super::subjects::{Attributes, UserInfo};
use super::{DENIAL_CAPACITY, RBAC_GROUP, RbacConfig};
use crate::Shared;
use crate::api::{Cluster, Outcome};
use crate::errors::ApiError;
use crate::json::go_quote;
use crate::observe::RequestRecord;
use crate::resources::{GroupResource, ResourceType};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};

/// `apierrors.NewForbidden`.
pub(super) fn new_forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let message = if resource.is_empty() && group.is_empty() {
        format!("forbidden: {why}")
    } else {
        let qualified = GroupResource::new(group, resource).qualified();
        if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {} is forbidden: {why}", go_quote(name))
        }
    };
    ApiError {
        code: 403,
        reason: "Forbidden",
        message,
        details: Some(status_details(group, resource, name)),
    }
}

/// What the authorization filter says when the authorizer denies (`forbiddenMessage`).
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = go_quote(&attrs.user.name);
    if !attrs.resource_request {
        return format!(
            "User {user} cannot {} path {}",
            attrs.verb,
            go_quote(&attrs.path)
        );
    }
    let resource = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {}", go_quote(&attrs.namespace))
    };
    format!(
        "User {user} cannot {} resource {} in API group {} {scope}",
        attrs.verb,
        go_quote(&resource),
        go_quote(&attrs.api_group)
    )
}

/// The `403` Status of a denied request (`responsewriters.Forbidden`).
pub fn forbidden_error(attrs: &Attributes, reason: &str) -> ApiError {
    // The filter HTML-escapes its message.
    let msg = forbidden_message(attrs)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let why = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    if attrs.resource_request {
        new_forbidden(&attrs.api_group, &attrs.resource, &attrs.name, &why)
    } else {
        new_forbidden("", "", "", &why)
    }
}

// ----- denials -------------------------------------------------------------------------------

/// A request RBAC refused, for tests to say which permission is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub user: String,
    /// The verb checked (`get`, `create`, ...; for escalation, the write's verb).
    pub verb: String,
    pub api_group: String,
    /// `resource` or `resource/subresource`; empty for non-resource requests.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub path: String,
    /// The message of the 403 the client got.
    pub message: String,
    /// Rules that would have allowed it: the request itself as a rule, or for an escalation,
    /// the permissions the role or binding grants that the user does not hold.
    pub missing: Vec<PolicyRule>,
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.resource.is_empty() {
            return write!(f, "{} cannot {} {}", self.user, self.verb, self.path);
        }
        let group = if self.api_group.is_empty() {
            "core"
        } else {
            &self.api_group
        };
        write!(
            f,
            "{} cannot {} {group}/{}",
            self.user, self.verb, self.resource
        )?;
        if !self.name.is_empty() {
            write!(f, " {:?}", self.name)?;
        }
        if self.namespace.is_empty() {
            write!(f, " (cluster scope)")?;
        } else {
            write!(f, " in namespace {:?}", self.namespace)?;
        }
        let missing: Vec<String> = self
            .missing
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        write!(f, "; missing {}", missing.join(" "))
    }
}

/// The switch and the denials, shared by the HTTP front and `KubeSim`.
#[derive(Default)]
pub(crate) struct RbacState {
    pub(super) config: Mutex<Option<RbacConfig>>,
    pub(super) denials: Mutex<VecDeque<Denial>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RbacState {
    pub(crate) fn new(config: Option<RbacConfig>) -> Self {
        Self {
            config: Mutex::new(config),
            denials: Mutex::default(),
        }
    }

    pub(crate) fn config(&self) -> Option<RbacConfig> {
        lock(&self.config).clone()
    }

    pub(crate) fn set_config(&self, config: Option<RbacConfig>) {
        *lock(&self.config) = config;
    }

    pub(crate) fn denials(&self) -> Vec<Denial> {
        lock(&self.denials).iter().cloned().collect()
    }

    pub(crate) fn clear_denials(&self) {
        lock(&self.denials).clear();
    }

    pub(super) fn push(&self, d: Denial) {
        let mut all = lock(&self.denials);
        if all.len() >= DENIAL_CAPACITY {
            all.pop_front();
        }
        all.push_back(d);
    }
}

// ----- the HTTP hooks ------------------------------------------------------------------------

/// Authorizes one request before it runs; `Err` is the 403 to answer. Allows everything when
/// RBAC is off.
pub(crate) fn authorize_request(
    shared: &Shared,
    record: &RequestRecord,
    query: &HashMap<String, String>,
    resource_request: bool,
) -> Result<(), ApiError> {
    let Some(config) = shared.rbac.config() else {
        return Ok(());
    };
    let user = UserInfo::resolve(&record.user, &config);
    if user.is_privileged() {
        return Ok(());
    }
    let attrs = Attributes::from_request(user, record, query, resource_request);
    let decision = authorize(&*shared.lock(), &attrs);
    let Decision::Deny { reason } = decision else {
        return Ok(());
    };
    let err = forbidden_error(&attrs, &reason);
    let combined = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let missing = if attrs.resource_request {
        let rule = PolicyRule::resource(&[&attrs.verb], &[&attrs.api_group], &[&combined]);
        if attrs.name.is_empty() {
            rule
        } else {
            rule.with_names(&[&attrs.name])
        }
    } else {
        PolicyRule::non_resource(&[&attrs.verb], &[&attrs.path])
    };
    shared.rbac.push(Denial {
        user: attrs.user.name.clone(),
        verb: attrs.verb.clone(),
        api_group: attrs.api_group.clone(),
        resource: combined,
        namespace: attrs.namespace.clone(),
        name: attrs.name.clone(),
        path: attrs.path.clone(),
        message: err.message.clone(),
        missing: vec![missing],
    });
    Err(err)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    pub(super) fn of(rt: &ResourceType) -> Option<Self> {
        if rt.group != RBAC_GROUP {
            return None;
        }
        match rt.plural.as_str() {
            "roles" => Some(Self::Role),
            "clusterroles" => Some(Self::ClusterRole),
            "rolebindings" => Some(Self::RoleBinding),
            "clusterrolebindings" => Some(Self::ClusterRoleBinding),
            _ => None,
        }
    }

    pub(super) fn plural(self) -> &'static str {
        match self {
            Self::Role => "roles",
            Self::ClusterRole => "clusterroles",
            Self::RoleBinding => "rolebindings",
            Self::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    pub(super) fn namespaced(self) -> bool {
        matches!(self, Self::Role | Self::RoleBinding)
    }
}

/// The escalation checks of the RBAC registry for one create, update or patch of a Role,
/// ClusterRole, RoleBinding or ClusterRoleBinding by a user outside `system:masters`.
pub(crate) struct WriteGuard {
    pub(super) shared: Arc<Shared>,
    pub(super) user: UserInfo,
    pub(super) kind: RbacKind,
    pub(super) verb: String,
    pub(super) namespace: String,
    pub(super) request_name: String,
}

/// `IsOnlyMutatingGCFields`: the new object equals the old one but for owner references,
/// finalizers and managed fields (and the resourceVersion, for a patch's merged result).
pub(super) fn only_gc_fields_changed(new: &Value, old: &Value, ignore_rv: bool) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in ["ownerReferences", "finalizers", "managedFields", "selfLink"] {
                m.remove(k);
            }
            if ignore_rv {
                m.remove("resourceVersion");
            }
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("apiVersion");
            o.remove("kind");
        }
        v
    };
    strip(new) == strip(old)
}

/// The rules that stand for cluster-admin: `*` on everything and every URL.
pub(super) fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&["*"], &["*"], &["*"]),
        PolicyRule::non_resource(&["*"], &["*"]),
    ]
}

impl WriteGuard {
    /// A guard when RBAC is on, `rt` is an RBAC kind and `user` is not privileged.
    pub(crate) fn new(
        shared: &Arc<Shared>,
        rt: &ResourceType,
        verb: &str,
        namespace: &str,
        request_name: &str,
        user: &str,
    ) -> Option<Self> {
        let kind = RbacKind::of(rt)?;
        let config = shared.rbac.config()?;
        let user = UserInfo::resolve(user, &config);
        if user.is_privileged() {
            return None;
        }
        Some(Self {
            shared: shared.clone(),
            user,
            kind,
            verb: verb.into(),
            namespace: if kind.namespaced() {
                namespace.into()
            } else {
                String::new()
            },
            request_name: request_name.into(),
        })
    }

    /// Checks the object a create or update would store (its body).
    pub(crate) fn check(&self, cluster: &Cluster, new: &Value) -> Result<(), ApiError> {
        self.check_object(cluster, new, false)
    }

    /// Checks a patch: previews it as a dry run and checks the result.
    pub(crate) fn check_patch(
        &self,
        cluster: &mut Cluster,
        preview: impl FnOnce(&mut Cluster) -> Result<Outcome, ApiError>,
    ) -> Result<(), ApiError> {
        let out = preview(cluster)?;
        self.check_object(cluster, &out.body, true)
    }

    pub(super) fn check_object(
        &self,
        cluster: &Cluster,
        new: &Value,
        patch: bool,
    ) -> Result<(), ApiError> {
        let name = match meta_str(new, "name") {
            "" => self.request_name.clone(),
            n => n.to_string(),
        };
        let old = cluster
            .store()
            .get(&gr(self.kind.plural()), &self.namespace, &name);
        if old
            .as_deref()
            .is_some_and(|old| only_gc_fields_changed(new, old, patch))
        {
            return Ok(());
        }
        let result = match self.kind {
            RbacKind::Role | RbacKind::ClusterRole => {
                self.check_role(cluster, new, old.as_deref(), &name)
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                self.check_binding(cluster, new, &name)
            }
        };
        if let Err((err, missing)) = &result
            && err.code == 403
        {
            self.shared.rbac.push(Denial {
                user: self.user.name.clone(),
                verb: self.verb.clone(),
                api_group: RBAC_GROUP.into(),
                resource: self.kind.plural().into(),
                namespace: self.namespace.clone(),
                name: name.clone(),
                path: String::new(),
                message: err.message.clone(),
                missing: missing.clone(),
            });
        }
        result.map_err(|(e, _)| e)
    }

    pub(super) fn forbidden(&self, name: &str, why: &str) -> ApiError {
        new_forbidden(RBAC_GROUP, self.kind.plural(), name, why)
    }

    pub(super) fn check_role(
        &self,
        cluster: &Cluster,
        new: &Value,
        old: Option<&Value>,
        name: &str,
    ) -> Result<(), (ApiError, Vec<PolicyRule>)> {
        // RoleEscalationAuthorized: `escalate` on the role, with the request's own name.
        let escalate = Attributes::resource(
            self.user.clone(),
            "escalate",
            RBAC_GROUP,
            self.kind.plural(),
            &self.namespace,
            &self.request_name,
        );
        if authorize(cluster, &escalate).allowed() {
            return Ok(());
        }
        confirm_no_escalation(cluster, &self.user, &self.namespace, &rules_of(new))
            .map_err(|(msg, missing)| (self.forbidden(name, &msg), missing))?;
        let aggregates = |v: Option<&Value>| v.is_some_and(|v| aggregation_selectors(v).is_some());
        if self.kind == RbacKind::ClusterRole && (aggregates(Some(new)) || aggregates(old)) {
            confirm_no_escalation(cluster, &self.user, "", &full_authority()).map_err(
                |(_, missing)| {
                    (
                        self.forbidden(
                            name,
                            "must have cluster-admin privileges to use the aggregationRule",
                        ),
                        missing,
                    )
                },
            )?;
        }
        Ok(())
    }

    pub(super) fn check_binding(
        &self,
        cluster: &Cluster,
        new: &Value,
        name: &str,
    ) -> Result<(), (ApiError, Vec<PolicyRule>)> {
        let role_ref = new.get("roleRef").cloned().unwrap_or(Value::Null);
        let field = |k: &str| role_ref.get(k).and_then(Value::as_str).unwrap_or_default();
        // BindingAuthorized: `bind` on the referenced role, in the binding's namespace.
        let resource = match field("kind") {
            "ClusterRole" => Some("clusterroles"),
            "Role" => Some("roles"),
            _ => None,
        };
        if let Some(resource) = resource {
            let bind = Attributes::resource(
                self.user.clone(),
                "bind",
                field("apiGroup"),
                resource,
                &self.namespace,
                field("name"),
            );
            if authorize(cluster, &bind).allowed() {
                return Ok(());
            }
        }
        let rules = role_ref_rules(cluster, &role_ref, &self.namespace)
            .map_err(|e| (e.registry_error(), Vec::new()))?;
        confirm_no_escalation(cluster, &self.user, &self.namespace, &rules)
            .map_err(|(msg, missing)| (self.forbidden(name, &msg), missing))
    }
}
