//! Where rules come from (the live store or a [`StaticPolicy`]), the bootstrap roles,
//! resolution of bindings and aggregated roles, and the authorization decision.

use super::rules::{PolicyRule, compact_rules, covers, go_quote_list, rule_allows, rules_of};
use super::subjects::{Attributes, UserInfo, has};
use super::{
    AUTHENTICATED_GROUP, RBAC_GROUP, SERVICE_ACCOUNT_PREFIX, SERVICE_ACCOUNTS_GROUP,
    UNAUTHENTICATED_GROUP,
};
use crate::api::Cluster;
use crate::errors::ApiError;
use crate::json::go_quote;
use crate::resources::GroupResource;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

pub(super) fn status_details(group: &str, resource: &str, name: &str) -> Value {
    let mut d = json!({});
    if !name.is_empty() {
        d["name"] = json!(name);
    }
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    if !resource.is_empty() {
        d["kind"] = json!(resource);
    }
    d
}

/// Where RBAC objects are read from.
pub trait PolicySource {
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>>;
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>>;
    fn cluster_roles(&self) -> Vec<Arc<Value>>;
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>>;
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>>;
}

pub(super) fn gr(resource: &str) -> GroupResource {
    GroupResource::new(RBAC_GROUP, resource)
}

impl PolicySource for Cluster {
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.store().get(&gr("roles"), namespace, name)
    }
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>> {
        self.store().get(&gr("clusterroles"), "", name)
    }
    fn cluster_roles(&self) -> Vec<Arc<Value>> {
        let g = gr("clusterroles");
        self.store()
            .iter(&g, None, None)
            .map(|(_, o)| o.clone())
            .collect()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>> {
        let g = gr("rolebindings");
        self.store()
            .iter(&g, Some(namespace), None)
            .map(|(_, o)| o.clone())
            .collect()
    }
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>> {
        let g = gr("clusterrolebindings");
        self.store()
            .iter(&g, None, None)
            .map(|(_, o)| o.clone())
            .collect()
    }
}

/// RBAC objects held in memory, e.g. parsed from install manifests, to evaluate policy
/// without a server. Objects of other kinds are ignored.
#[derive(Debug, Clone, Default)]
pub struct StaticPolicy {
    pub(super) objects: Vec<Arc<Value>>,
}

impl StaticPolicy {
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Self {
        let objects = objects
            .into_iter()
            .filter(|o| {
                o.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("rbac.authorization.k8s.io/"))
            })
            .map(Arc::new)
            .collect();
        Self { objects }
    }

    pub(super) fn of_kind<'a>(
        &'a self,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        self.objects
            .iter()
            .filter(move |o| o.get("kind").and_then(Value::as_str) == Some(kind))
    }
}

pub(super) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl PolicySource for StaticPolicy {
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.of_kind("Role")
            .find(|o| meta_str(o, "namespace") == namespace && meta_str(o, "name") == name)
            .cloned()
    }
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>> {
        self.of_kind("ClusterRole")
            .find(|o| meta_str(o, "name") == name)
            .cloned()
    }
    fn cluster_roles(&self) -> Vec<Arc<Value>> {
        self.of_kind("ClusterRole").cloned().collect()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>> {
        self.of_kind("RoleBinding")
            .filter(|o| meta_str(o, "namespace") == namespace)
            .cloned()
            .collect()
    }
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>> {
        self.of_kind("ClusterRoleBinding").cloned().collect()
    }
}

// ----- built-in (bootstrap) policy -----------------------------------------------------------

/// The bootstrap ClusterRoles a real cluster binds to every (or every unauthenticated) user,
/// so discovery and health checks work for service accounts: name, groups bound, rules.
pub(super) fn bootstrap_roles() -> Vec<(&'static str, &'static [&'static str], Vec<PolicyRule>)> {
    vec![
        (
            "system:discovery",
            &[AUTHENTICATED_GROUP],
            vec![PolicyRule::non_resource(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        (
            "system:public-info-viewer",
            &[AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP],
            vec![PolicyRule::non_resource(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        (
            "system:basic-user",
            &[AUTHENTICATED_GROUP],
            vec![
                PolicyRule::resource(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
                PolicyRule::resource(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
            ],
        ),
        (
            "system:service-account-issuer-discovery",
            &[SERVICE_ACCOUNTS_GROUP],
            vec![PolicyRule::non_resource(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
    ]
}

pub(super) fn bootstrap_role_rules(name: &str) -> Option<Vec<PolicyRule>> {
    bootstrap_roles()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, rules)| rules)
}

// ----- rule resolution -----------------------------------------------------------------------

/// Why a binding's roleRef gave no rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleRefError {
    NotFound { kind: String, name: String },
    Unsupported(String),
}

impl RoleRefError {
    /// The message as the authorizer's listers word it (`clusterrole.rbac... "x" not found`).
    pub(super) fn lister_message(&self) -> String {
        match self {
            Self::NotFound { kind, name } => format!(
                "{}.{RBAC_GROUP} {} not found",
                kind.to_ascii_lowercase(),
                go_quote(name)
            ),
            Self::Unsupported(kind) => {
                format!("unsupported role reference kind: {}", go_quote(kind))
            }
        }
    }

    /// The error as the RBAC registry returns it while checking a binding write.
    pub(super) fn registry_error(&self) -> ApiError {
        match self {
            Self::NotFound { kind, name } => {
                let plural = format!("{}s", kind.to_ascii_lowercase());
                ApiError {
                    code: 404,
                    reason: "NotFound",
                    message: format!("{plural}.{RBAC_GROUP} {} not found", go_quote(name)),
                    details: Some(status_details(RBAC_GROUP, &plural, name)),
                }
            }
            Self::Unsupported(_) => ApiError::internal(self.lister_message()),
        }
    }
}

pub(super) fn aggregation_selectors(role: &Value) -> Option<&Vec<Value>> {
    role.get("aggregationRule")
        .and_then(|a| a.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
}

/// A ClusterRole's rules; an aggregated one's are the union of the rules of the ClusterRoles
/// its selectors match, as the aggregation controller would have written them.
pub(super) fn cluster_role_rules(
    src: &dyn PolicySource,
    role: &Value,
    depth: usize,
) -> Vec<PolicyRule> {
    let Some(selectors) = aggregation_selectors(role) else {
        return rules_of(role);
    };
    let own_name = meta_str(role, "name");
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut others = src.cluster_roles();
    others.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
    for sel in selectors {
        for other in &others {
            if meta_str(other, "name") == own_name {
                continue;
            }
            if !crate::selector::object_matches(sel, other.pointer("/metadata/labels")) {
                continue;
            }
            // Nested aggregation resolves through the other role's own aggregation; the depth
            // bound stops cycles the controller would have left at their stored rules.
            let rules = if depth < 8 {
                cluster_role_rules(src, other, depth + 1)
            } else {
                rules_of(other)
            };
            for r in rules {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// The rules a roleRef points at, for a binding in `namespace` ("" for ClusterRoleBindings).
pub fn role_ref_rules(
    src: &dyn PolicySource,
    role_ref: &Value,
    namespace: &str,
) -> Result<Vec<PolicyRule>, RoleRefError> {
    let kind = role_ref
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = role_ref
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let not_found = || RoleRefError::NotFound {
        kind: kind.to_string(),
        name: name.to_string(),
    };
    match kind {
        "Role" => src
            .role(namespace, name)
            .map(|r| rules_of(&r))
            .ok_or_else(not_found),
        "ClusterRole" => match src.cluster_role(name) {
            Some(r) => Ok(cluster_role_rules(src, &r, 0)),
            None => bootstrap_role_rules(name).ok_or_else(not_found),
        },
        other => Err(RoleRefError::Unsupported(other.to_string())),
    }
}

/// `appliesToUser`: ServiceAccount subjects without a namespace mean the binding's namespace.
pub(super) fn subject_applies(user: &UserInfo, subject: &Value, binding_namespace: &str) -> bool {
    let field = |k: &str| subject.get(k).and_then(Value::as_str).unwrap_or_default();
    match field("kind") {
        "User" => user.name == field("name"),
        "Group" => has(&user.groups, field("name")),
        "ServiceAccount" => {
            let ns = match field("namespace") {
                "" => binding_namespace,
                ns => ns,
            };
            !ns.is_empty() && user.name == format!("{SERVICE_ACCOUNT_PREFIX}{ns}:{}", field("name"))
        }
        _ => false,
    }
}

pub(super) fn binding_applies(user: &UserInfo, binding: &Value, namespace: &str) -> bool {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .is_some_and(|subs| subs.iter().any(|s| subject_applies(user, s, namespace)))
}

/// Calls `visit` with every rule that applies to `user` in `namespace` (cluster-wide rules
/// only when it is empty) until it returns false; roleRefs that resolve to nothing are
/// returned as errors (`VisitRulesFor`).
pub fn visit_rules_for(
    src: &dyn PolicySource,
    user: &UserInfo,
    namespace: &str,
    visit: &mut dyn FnMut(&PolicyRule) -> bool,
) -> Vec<RoleRefError> {
    let mut errors = Vec::new();
    for (_, groups, rules) in bootstrap_roles() {
        if groups.iter().any(|g| has(&user.groups, g)) {
            for r in &rules {
                if !visit(r) {
                    return errors;
                }
            }
        }
    }
    let mut scopes = vec![(src.cluster_role_bindings(), "")];
    if !namespace.is_empty() {
        scopes.push((src.role_bindings(namespace), namespace));
    }
    for (bindings, ns) in scopes {
        for b in bindings {
            if !binding_applies(user, &b, ns) {
                continue;
            }
            let role_ref = b.get("roleRef").cloned().unwrap_or(Value::Null);
            match role_ref_rules(src, &role_ref, ns) {
                Ok(rules) => {
                    for r in &rules {
                        if !visit(r) {
                            return errors;
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
    }
    errors
}

/// Every rule that applies to `user` in `namespace`, and the roleRefs that did not resolve.
pub fn rules_for(
    src: &dyn PolicySource,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<RoleRefError>) {
    let mut rules = Vec::new();
    let errors = visit_rules_for(src, user, namespace, &mut |r| {
        rules.push(r.clone());
        true
    });
    (rules, errors)
}

/// `utilerrors.NewAggregate(...).Error()`: one message alone, several in brackets, deduplicated.
pub(super) fn aggregate(messages: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<&String> = messages
        .iter()
        .filter(|m| seen.insert(m.as_str()))
        .collect();
    match unique.as_slice() {
        [one] => (*one).clone(),
        many => format!(
            "[{}]",
            many.iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// No rule allows it; `reason` carries the roleRefs that did not resolve (`RBAC: ...`),
    /// empty when all did.
    Deny {
        reason: String,
    },
}

impl Decision {
    pub fn allowed(&self) -> bool {
        *self == Decision::Allow
    }
}

/// The RBAC authorizer (plus the `system:masters` authorizer in front of it).
pub fn authorize(src: &dyn PolicySource, attrs: &Attributes) -> Decision {
    if attrs.user.is_privileged() {
        return Decision::Allow;
    }
    let mut allowed = false;
    let errors = visit_rules_for(src, &attrs.user, &attrs.namespace, &mut |r| {
        allowed = rule_allows(attrs, r);
        !allowed
    });
    if allowed {
        return Decision::Allow;
    }
    let reason = if errors.is_empty() {
        String::new()
    } else {
        let messages: Vec<String> = errors.iter().map(RoleRefError::lister_message).collect();
        format!("RBAC: {}", aggregate(&messages))
    };
    Decision::Deny { reason }
}

/// `ConfirmNoEscalation`: `Err` with the server's message when `user`'s rules in `namespace`
/// do not cover `rules`; the uncovered rules come back compacted.
pub fn confirm_no_escalation(
    src: &dyn PolicySource,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), (String, Vec<PolicyRule>)> {
    let (owner, errors) = rules_for(src, user, namespace);
    let (ok, missing) = covers(&owner, rules);
    if ok {
        return Ok(());
    }
    let compact = compact_rules(&missing);
    let lines: BTreeSet<String> = compact.iter().map(PolicyRule::compact_string).collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        let messages: Vec<String> = errors
            .iter()
            .map(|e| match e {
                RoleRefError::NotFound { .. } => e.registry_error().message,
                RoleRefError::Unsupported(_) => e.lister_message(),
            })
            .collect();
        msg.push_str(&format!("; resolution errors: [{}]", aggregate(&messages)));
    }
    Err((msg, compact))
}
