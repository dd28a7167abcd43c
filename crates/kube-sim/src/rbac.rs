//! Opt-in RBAC authorization, as kube-apiserver's RBAC authorizer and the RBAC registry's
//! escalation checks do it, so that an operator running under its service account fails in
//! kube-sim exactly where a real API server answers `403 Forbidden`.
//!
//! What is modelled (Kubernetes v1.33, the version kube-sim reports):
//! - who: the user the bearer token authenticates (`authentication.rs`: the token is the user
//!   name on loopback, a token kube-sim issued to the user beyond it), `system:anonymous`
//!   without one. `system:serviceaccount:<ns>:<name>` has the groups
//!   `system:serviceaccounts`, `system:serviceaccounts:<ns>` and `system:authenticated`;
//!   `system:anonymous` has `system:unauthenticated`; every other name has
//!   `system:authenticated`; the names in [`RbacConfig::superusers`] are in `system:masters`
//!   and may do anything, as that group may on a real server.
//! - what: the request attributes of the apiserver's RequestInfo (verb from method, name and
//!   `watch`; `resource/subresource`; a Namespace's own name as its namespace; the name pinned
//!   by a `metadata.name` field selector for list and watch, so `resourceNames` rules can allow
//!   them), or the lower-case method and path for non-resource requests.
//! - rules: ClusterRoleBindings grant everywhere, RoleBindings in their namespace only; verbs,
//!   API groups, resources (`*`, `res/sub`, `*/sub`), resourceNames, nonResourceURLs (`*`
//!   suffix); User, Group and ServiceAccount subjects; aggregated ClusterRoles (evaluated at
//!   authorization time instead of by a controller); the bootstrap discovery roles
//!   (`system:discovery`, `system:public-info-viewer`, `system:basic-user`,
//!   `system:service-account-issuer-discovery`) as built-in roles bound to their groups.
//! - escalation: writing a Role/ClusterRole needs every permission it grants (or `escalate`),
//!   an aggregationRule needs `*` on everything, writing a binding needs `bind` on the role or
//!   all of its permissions; updates that only touch garbage-collection fields pass.
//!
//! The evaluation functions are pure: they read policy through [`PolicySource`] (the live store
//! or a [`StaticPolicy`] built from manifests) and never write. Only [`authorize_request`] and
//! [`WriteGuard`] touch the simulator's state, to read the policy and remember denials.
//! This module must not decide anything about requests when RBAC is switched off.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::Shared;
use crate::api::{Cluster, Outcome};
use crate::errors::ApiError;
use crate::observe::RequestRecord;
use crate::resources::{GroupResource, ResourceType};

/// The API group of the RBAC kinds.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// Members may do anything, and skip escalation checks, as on a real server.
pub const PRIVILEGED_GROUP: &str = "system:masters";
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// How many denials [`KubeSim::rbac_denials`](crate::KubeSim::rbac_denials) remembers.
const DENIAL_CAPACITY: usize = 10_000;

/// RBAC settings. `SimConfig::rbac: None` (the default) switches authorization off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RbacConfig {
    /// User names treated as members of `system:masters`: allowed everything, never checked
    /// for escalation. The default holds the names tests and the demo use for themselves.
    pub superusers: Vec<String>,
}

impl Default for RbacConfig {
    fn default() -> Self {
        Self {
            superusers: vec!["system:admin".into(), "admin".into(), "test".into()],
        }
    }
}

// ----- rules ---------------------------------------------------------------------------------

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn to_strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl PolicyRule {
    /// A resource rule.
    pub fn resource(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> Self {
        Self {
            verbs: to_strings(verbs),
            api_groups: to_strings(api_groups),
            resources: to_strings(resources),
            ..Default::default()
        }
    }

    /// A non-resource rule.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> Self {
        Self {
            verbs: to_strings(verbs),
            non_resource_urls: to_strings(urls),
            ..Default::default()
        }
    }

    pub fn with_names(mut self, names: &[&str]) -> Self {
        self.resource_names = to_strings(names);
        self
    }

    /// Reads a rule as JSON; fields of the wrong type count as empty (validation rejects them
    /// before they are stored).
    pub fn from_value(v: &Value) -> Self {
        Self {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rule as JSON, as it appears in a Role.
    pub fn to_value(&self) -> Value {
        let mut v = json!({"verbs": self.verbs});
        let mut put = |k: &str, items: &Vec<String>| {
            if !items.is_empty() {
                v[k] = json!(items);
            }
        };
        put("apiGroups", &self.api_groups);
        put("resources", &self.resources);
        put("resourceNames", &self.resource_names);
        put("nonResourceURLs", &self.non_resource_urls);
        v
    }

    /// The compact form of escalation messages (`rbacv1helpers.CompactString`):
    /// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, items) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !items.is_empty() {
                parts.push(format!("{label}:{}", go_quote_list(items)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.compact_string())
    }
}

/// The rules of a Role or ClusterRole object.
pub fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(PolicyRule::from_value).collect())
        .unwrap_or_default()
}

/// Go's `%q` for a string, as the server's messages print names.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` for a `[]string`: `["a" "b"]`.
fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

/// `VerbMatches`.
fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
}

/// `APIGroupMatches`.
fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == "*" || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
    })
}

/// `ResourceNameMatches`: no names means all; otherwise the request must name one of them
/// (a request without a name, e.g. create or an unpinned list, matches none).
fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || has(&rule.resource_names, name)
}

/// `NonResourceURLMatches`: exact, `*`, or a prefix ending in `*`.
fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == "*"
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
    })
}

/// Whether one rule allows a request (`RuleAllows`).
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name)
    } else {
        verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
    }
}

// ----- coverage (escalation) -----------------------------------------------------------------

/// Splits a rule into rules of one group, resource, verb and name each (`BreakdownRule`).
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let one = PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(one);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: vec![name.clone()],
                            ..one.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule::non_resource(&[verb], &[url]));
        }
    }
    out
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, "*") || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path
        || owner
            .strip_suffix('*')
            .is_some_and(|p| path.starts_with(p.trim_end_matches('*')))
}

/// `ruleCovers`: whether `owner` grants everything the broken-down `sub` rule grants.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|p| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, p))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// Whether `owner` rules cover `servant` rules (`validation.Covers`), and the broken-down
/// rules they do not cover.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// Merges rules of one group and resource that differ only by verb (`CompactRules`).
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule.clone());
            continue;
        }
        match simple
            .iter_mut()
            .find(|s| s.api_groups == rule.api_groups && s.resources == rule.resources)
        {
            Some(existing) => existing.verbs.extend(rule.verbs.iter().cloned()),
            None => simple.push(rule.clone()),
        }
    }
    out.extend(simple);
    out
}

// ----- users and requests --------------------------------------------------------------------

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

// ----- policy sources ------------------------------------------------------------------------

/// Where RBAC objects are read from.
pub trait PolicySource {
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>>;
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>>;
    fn cluster_roles(&self) -> Vec<Arc<Value>>;
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>>;
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>>;
}

fn gr(resource: &str) -> GroupResource {
    GroupResource::new(RBAC_GROUP, resource)
}

impl PolicySource for Cluster {
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.store.get(&gr("roles"), namespace, name)
    }
    fn cluster_role(&self, name: &str) -> Option<Arc<Value>> {
        self.store.get(&gr("clusterroles"), "", name)
    }
    fn cluster_roles(&self) -> Vec<Arc<Value>> {
        let g = gr("clusterroles");
        self.store
            .iter(&g, None, None)
            .map(|(_, o)| o.clone())
            .collect()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<Value>> {
        let g = gr("rolebindings");
        self.store
            .iter(&g, Some(namespace), None)
            .map(|(_, o)| o.clone())
            .collect()
    }
    fn cluster_role_bindings(&self) -> Vec<Arc<Value>> {
        let g = gr("clusterrolebindings");
        self.store
            .iter(&g, None, None)
            .map(|(_, o)| o.clone())
            .collect()
    }
}

/// RBAC objects held in memory, e.g. parsed from install manifests, to evaluate policy
/// without a server. Objects of other kinds are ignored.
#[derive(Debug, Clone, Default)]
pub struct StaticPolicy {
    objects: Vec<Arc<Value>>,
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

    fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        self.objects
            .iter()
            .filter(move |o| o.get("kind").and_then(Value::as_str) == Some(kind))
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
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
fn bootstrap_roles() -> Vec<(&'static str, &'static [&'static str], Vec<PolicyRule>)> {
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

fn bootstrap_role_rules(name: &str) -> Option<Vec<PolicyRule>> {
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
    fn lister_message(&self) -> String {
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
    fn registry_error(&self) -> ApiError {
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

fn labels_match_selector(labels: Option<&serde_json::Map<String, Value>>, sel: &Value) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| get(k) == v.as_str()));
    let expressions = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|exprs| {
            exprs.iter().all(|e| {
                let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
                let values = strings(e.get("values"));
                match e.get("operator").and_then(Value::as_str) {
                    Some("In") => get(key).is_some_and(|v| has(&values, v)),
                    Some("NotIn") => get(key).is_none_or(|v| !has(&values, v)),
                    Some("Exists") => get(key).is_some(),
                    Some("DoesNotExist") => get(key).is_none(),
                    _ => false,
                }
            })
        });
    match_labels && expressions
}

fn aggregation_selectors(role: &Value) -> Option<&Vec<Value>> {
    role.get("aggregationRule")
        .and_then(|a| a.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
}

/// A ClusterRole's rules; an aggregated one's are the union of the rules of the ClusterRoles
/// its selectors match, as the aggregation controller would have written them.
fn cluster_role_rules(src: &dyn PolicySource, role: &Value, depth: usize) -> Vec<PolicyRule> {
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
            let labels = other
                .get("metadata")
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object);
            if !labels_match_selector(labels, sel) {
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
fn subject_applies(user: &UserInfo, subject: &Value, binding_namespace: &str) -> bool {
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

fn binding_applies(user: &UserInfo, binding: &Value, namespace: &str) -> bool {
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
fn aggregate(messages: &[String]) -> String {
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

// ----- errors --------------------------------------------------------------------------------

fn status_details(group: &str, resource: &str, name: &str) -> Value {
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

/// `apierrors.NewForbidden`.
fn new_forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
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
    config: Mutex<Option<RbacConfig>>,
    denials: Mutex<VecDeque<Denial>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

    fn push(&self, d: Denial) {
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
enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    fn of(rt: &ResourceType) -> Option<Self> {
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

    fn plural(self) -> &'static str {
        match self {
            Self::Role => "roles",
            Self::ClusterRole => "clusterroles",
            Self::RoleBinding => "rolebindings",
            Self::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    fn namespaced(self) -> bool {
        matches!(self, Self::Role | Self::RoleBinding)
    }
}

/// The escalation checks of the RBAC registry for one create, update or patch of a Role,
/// ClusterRole, RoleBinding or ClusterRoleBinding by a user outside `system:masters`.
pub(crate) struct WriteGuard {
    shared: Arc<Shared>,
    user: UserInfo,
    kind: RbacKind,
    verb: String,
    namespace: String,
    request_name: String,
}

/// `IsOnlyMutatingGCFields`: the new object equals the old one but for owner references,
/// finalizers and managed fields (and the resourceVersion, for a patch's merged result).
fn only_gc_fields_changed(new: &Value, old: &Value, ignore_rv: bool) -> bool {
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
fn full_authority() -> Vec<PolicyRule> {
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

    fn check_object(&self, cluster: &Cluster, new: &Value, patch: bool) -> Result<(), ApiError> {
        let name = match meta_str(new, "name") {
            "" => self.request_name.clone(),
            n => n.to_string(),
        };
        let old = cluster
            .store
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

    fn forbidden(&self, name: &str, why: &str) -> ApiError {
        new_forbidden(RBAC_GROUP, self.kind.plural(), name, why)
    }

    fn check_role(
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

    fn check_binding(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::new(name, groups)
    }

    fn res(verb: &str, group: &str, resource: &str) -> Attributes {
        Attributes::resource(user("u", &[]), verb, group, resource, "ns", "")
    }

    fn url(verb: &str, path: &str) -> Attributes {
        Attributes::non_resource(user("u", &[]), verb, path)
    }

    fn r(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule::resource(verbs, groups, resources)
    }

    fn role(ns: &str, name: &str, rules: &[PolicyRule]) -> Value {
        let rules: Vec<Value> = rules.iter().map(PolicyRule::to_value).collect();
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"namespace": ns, "name": name}, "rules": rules})
    }

    fn cluster_role(name: &str, rules: &[PolicyRule]) -> Value {
        let rules: Vec<Value> = rules.iter().map(PolicyRule::to_value).collect();
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules})
    }

    /// Subjects as "User:alice", "Group:g", "ServiceAccount:ns/name" or "ServiceAccount:name".
    fn subjects(subs: &[&str]) -> Vec<Value> {
        subs.iter()
            .map(|s| {
                let (kind, name) = s.split_once(':').expect("kind:name");
                match (kind, name.split_once('/')) {
                    ("ServiceAccount", Some((ns, n))) => {
                        json!({"kind": kind, "name": n, "namespace": ns})
                    }
                    ("ServiceAccount", None) => json!({"kind": kind, "name": name}),
                    _ => json!({"kind": kind, "name": name, "apiGroup": RBAC_GROUP}),
                }
            })
            .collect()
    }

    fn crb(name: &str, role: &str, subs: &[&str]) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
               "subjects": subjects(subs)})
    }

    fn rb(ns: &str, name: &str, kind: &str, role: &str, subs: &[&str]) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"namespace": ns, "name": name},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role},
               "subjects": subjects(subs)})
    }

    fn ns_attrs(u: UserInfo, verb: &str, resource: &str, ns: &str) -> Attributes {
        Attributes::resource(u, verb, "", resource, ns, "")
    }

    // Kubernetes' TestRuleMatches vectors.
    #[test]
    fn star_verb_matches_any_verb_only() {
        let rule = r(&["*"], &["group1"], &["resource1"]);
        assert!(rule_allows(&res("verb1", "group1", "resource1"), &rule));
        assert!(rule_allows(&res("verb2", "group1", "resource1"), &rule));
        assert!(!rule_allows(&res("verb1", "group2", "resource1"), &rule));
        assert!(!rule_allows(&res("verb1", "group1", "resource2"), &rule));
    }

    #[test]
    fn star_group_matches_any_group_only() {
        let rule = r(&["verb1"], &["*"], &["resource1"]);
        assert!(rule_allows(&res("verb1", "group1", "resource1"), &rule));
        assert!(rule_allows(&res("verb1", "group2", "resource1"), &rule));
        assert!(!rule_allows(&res("verb1", "group1", "resource2"), &rule));
        assert!(!rule_allows(&res("verb2", "group1", "resource1"), &rule));
    }

    #[test]
    fn star_resource_matches_any_resource_only() {
        let rule = r(&["verb1"], &["group1"], &["*"]);
        assert!(rule_allows(&res("verb1", "group1", "resource1"), &rule));
        assert!(rule_allows(&res("verb1", "group1", "resource2"), &rule));
        assert!(!rule_allows(&res("verb1", "group2", "resource1"), &rule));
        assert!(!rule_allows(&res("verb2", "group1", "resource1"), &rule));
    }

    #[test]
    fn tuples_expand() {
        let rule = r(
            &["verb1", "verb2"],
            &["group1", "group2"],
            &["resource1", "resource2"],
        );
        for v in ["verb1", "verb2"] {
            for g in ["group1", "group2"] {
                for res_name in ["resource1", "resource2"] {
                    assert!(rule_allows(&res(v, g, res_name), &rule));
                }
            }
        }
    }

    #[test]
    fn core_group_is_the_empty_string() {
        let rule = r(&["get"], &[""], &["configmaps"]);
        assert!(rule_allows(&res("get", "", "configmaps"), &rule));
        assert!(!rule_allows(&res("get", "apps", "configmaps"), &rule));
    }

    #[test]
    fn subresources_match_exactly_or_by_star_prefix() {
        let rule = r(&["*"], &["*"], &["resource1/subresource1"]);
        assert!(rule_allows(
            &res("verb1", "group1", "resource1/subresource1"),
            &rule
        ));
        assert!(!rule_allows(
            &res("verb1", "group1", "resource1/subresource2"),
            &rule
        ));
        assert!(!rule_allows(
            &res("verb1", "group1", "resource2/subresource1"),
            &rule
        ));
        assert!(
            !rule_allows(&res("verb1", "group1", "resource1"), &rule),
            "res/sub does not grant the resource itself"
        );
        let plain = r(&["*"], &["*"], &["pods"]);
        assert!(
            !rule_allows(&res("get", "", "pods/status"), &plain),
            "the resource does not grant its subresources"
        );
        let star_sub = r(&["get"], &["*"], &["*/status"]);
        assert!(rule_allows(
            &res("get", "apps", "deployments/status"),
            &star_sub
        ));
        assert!(!rule_allows(
            &res("get", "apps", "deployments/scale"),
            &star_sub
        ));
        assert!(!rule_allows(&res("get", "apps", "deployments"), &star_sub));
    }

    #[test]
    fn resource_names_need_a_named_request() {
        let rule =
            r(&["get", "list", "watch", "update"], &[""], &["configmaps"]).with_names(&["a"]);
        let named = |verb: &str, name: &str| {
            Attributes::resource(user("u", &[]), verb, "", "configmaps", "ns", name)
        };
        assert!(rule_allows(&named("get", "a"), &rule));
        assert!(!rule_allows(&named("get", "b"), &rule));
        assert!(
            !rule_allows(&named("list", ""), &rule),
            "an unpinned list has no name"
        );
        assert!(
            rule_allows(&named("list", "a"), &rule),
            "a list pinned by metadata.name carries the name"
        );
        assert!(rule_allows(&named("watch", "a"), &rule));
        let create = r(&["create"], &[""], &["configmaps"]).with_names(&["a"]);
        assert!(
            !rule_allows(&named("create", ""), &create),
            "create has no name at authorization time"
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_by_star_or_prefix() {
        let all = PolicyRule::non_resource(&["verb1"], &["*"]);
        assert!(rule_allows(&url("verb1", "/foo/bar/one"), &all));
        assert!(!rule_allows(&url("verb2", "/foo"), &all));
        let sub = PolicyRule::non_resource(&["verb1"], &["/foo/*"]);
        assert!(!rule_allows(&url("verb1", "/foo"), &sub));
        assert!(rule_allows(&url("verb1", "/foo/bar"), &sub));
        assert!(rule_allows(&url("verb1", "/foo/baz/one"), &sub));
        let exact = PolicyRule::non_resource(&["get"], &["/apis"]);
        assert!(rule_allows(&url("get", "/apis"), &exact));
        assert!(!rule_allows(&url("get", "/apis/v1"), &exact));
        assert!(
            !rule_allows(&res("get", "", "apis"), &exact),
            "URL rules never grant resources"
        );
        assert!(
            !rule_allows(&url("get", "/apis"), &r(&["*"], &["*"], &["*"])),
            "resource rules never grant URLs"
        );
    }

    // Kubernetes' TestAuthorizer, first case: a ClusterRole bound by a RoleBinding grants in
    // that namespace only; user and group subjects.
    #[test]
    fn cluster_role_through_role_binding_is_namespaced() {
        let p = StaticPolicy::new([
            cluster_role("admin", &[r(&["*"], &["*"], &["*"])]),
            rb(
                "ns1",
                "b",
                "ClusterRole",
                "admin",
                &["User:admin", "Group:admins"],
            ),
        ]);
        let pass = [
            ns_attrs(user("admin", &[]), "get", "Pods", "ns1"),
            ns_attrs(user("admin", &[]), "watch", "Pods", "ns1"),
            ns_attrs(user("admin", &["group1"]), "watch", "Foobar", "ns1"),
            ns_attrs(user("joe", &["admins"]), "watch", "Foobar", "ns1"),
            ns_attrs(user("joe", &["group1", "admins"]), "watch", "Foobar", "ns1"),
        ];
        for a in &pass {
            assert!(authorize(&p, a).allowed(), "{a:?}");
        }
        let fail = [
            ns_attrs(user("admin", &[]), "GET", "Pods", "ns2"),
            ns_attrs(user("admin", &[]), "GET", "Nodes", ""),
            ns_attrs(user("admin", &["admins"]), "GET", "Pods", "ns2"),
            ns_attrs(user("admin", &["admins"]), "GET", "Nodes", ""),
            ns_attrs(user("admin", &[]), "get", "Pods", ""),
        ];
        for a in &fail {
            assert!(!authorize(&p, a).allowed(), "{a:?}");
        }
    }

    #[test]
    fn cluster_role_bindings_grant_everywhere() {
        let p = StaticPolicy::new([
            cluster_role("reader", &[r(&["get"], &[""], &["configmaps"])]),
            crb("b", "reader", &["User:alice"]),
        ]);
        assert!(authorize(&p, &ns_attrs(user("alice", &[]), "get", "configmaps", "x")).allowed());
        assert!(authorize(&p, &ns_attrs(user("alice", &[]), "get", "configmaps", "")).allowed());
        assert!(!authorize(&p, &ns_attrs(user("bob", &[]), "get", "configmaps", "x")).allowed());
    }

    #[test]
    fn roles_bind_in_their_own_namespace_only() {
        let p = StaticPolicy::new([
            role("a", "r", &[r(&["get"], &[""], &["secrets"])]),
            rb("a", "b", "Role", "r", &["User:alice"]),
            // A RoleBinding in b to a Role named r: no such Role in b.
            rb("b", "b", "Role", "r", &["User:alice"]),
        ]);
        assert!(authorize(&p, &ns_attrs(user("alice", &[]), "get", "secrets", "a")).allowed());
        let d = authorize(&p, &ns_attrs(user("alice", &[]), "get", "secrets", "b"));
        assert_eq!(
            d,
            Decision::Deny {
                reason: "RBAC: role.rbac.authorization.k8s.io \"r\" not found".into()
            }
        );
    }

    #[test]
    fn service_account_subjects_default_to_the_binding_namespace() {
        let p = StaticPolicy::new([
            cluster_role("reader", &[r(&["list"], &["apps"], &["deployments"])]),
            rb(
                "ns",
                "local",
                "ClusterRole",
                "reader",
                &["ServiceAccount:sa"],
            ),
            crb("global", "reader", &["ServiceAccount:other/sa2"]),
            // A ServiceAccount subject without namespace in a ClusterRoleBinding matches nobody.
            crb("broken", "reader", &["ServiceAccount:sa3"]),
        ]);
        let cfg = RbacConfig::default();
        let sa = UserInfo::resolve("system:serviceaccount:ns:sa", &cfg);
        let list = |u: &UserInfo, ns: &str| {
            authorize(
                &p,
                &Attributes::resource(u.clone(), "list", "apps", "deployments", ns, ""),
            )
            .allowed()
        };
        assert!(list(&sa, "ns"));
        assert!(!list(&sa, "elsewhere"));
        let sa2 = UserInfo::resolve("system:serviceaccount:other:sa2", &cfg);
        assert!(list(&sa2, "anywhere"));
        assert!(list(&sa2, ""));
        let sa3 = UserInfo::resolve("system:serviceaccount:x:sa3", &cfg);
        assert!(!list(&sa3, "x"));
    }

    #[test]
    fn groups_of_service_accounts_and_users() {
        let cfg = RbacConfig::default();
        assert_eq!(
            UserInfo::resolve("system:serviceaccount:ns:sa", &cfg).groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        assert_eq!(
            UserInfo::resolve("alice", &cfg).groups,
            vec!["system:authenticated"]
        );
        assert_eq!(
            UserInfo::resolve("system:anonymous", &cfg).groups,
            vec!["system:unauthenticated"]
        );
        assert!(UserInfo::resolve("admin", &cfg).is_privileged());
        assert!(UserInfo::resolve("system:admin", &cfg).is_privileged());
        assert!(!UserInfo::resolve("alice", &cfg).is_privileged());
        assert_eq!(
            UserInfo::resolve("system:serviceaccount:a:b:c", &cfg).groups,
            vec!["system:authenticated"],
            "not a service account name"
        );
        let p = StaticPolicy::new([
            cluster_role("reader", &[r(&["get"], &[""], &["nodes"])]),
            crb("b", "reader", &["Group:system:serviceaccounts:ns"]),
        ]);
        let get = |name: &str| {
            authorize(
                &p,
                &Attributes::resource(UserInfo::resolve(name, &cfg), "get", "", "nodes", "", ""),
            )
            .allowed()
        };
        assert!(get("system:serviceaccount:ns:any"));
        assert!(!get("system:serviceaccount:other:any"));
        assert!(
            get("admin"),
            "superusers are in system:masters and need no binding"
        );
    }

    #[test]
    fn discovery_is_built_in_for_authenticated_users() {
        let p = StaticPolicy::default();
        let cfg = RbacConfig::default();
        let sa = UserInfo::resolve("system:serviceaccount:ns:sa", &cfg);
        let anon = UserInfo::resolve("system:anonymous", &cfg);
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps/v1",
            "/version",
            "/openapi/v2",
        ] {
            assert!(
                authorize(&p, &Attributes::non_resource(sa.clone(), "get", path)).allowed(),
                "{path}"
            );
        }
        assert!(!authorize(&p, &Attributes::non_resource(sa.clone(), "post", "/api")).allowed());
        assert!(!authorize(&p, &Attributes::non_resource(sa.clone(), "get", "/metrics")).allowed());
        assert!(
            authorize(
                &p,
                &Attributes::non_resource(anon.clone(), "get", "/healthz")
            )
            .allowed()
        );
        assert!(!authorize(&p, &Attributes::non_resource(anon, "get", "/apis")).allowed());
        assert!(
            !authorize(&p, &Attributes::resource(sa, "list", "", "pods", "ns", "")).allowed(),
            "no resources for free"
        );
    }

    #[test]
    fn aggregated_cluster_roles_collect_matching_roles() {
        let mut agg = cluster_role("agg", &[]);
        agg["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.example/aggregate": "true"}}]});
        let mut part = cluster_role("part", &[r(&["get"], &[""], &["secrets"])]);
        part["metadata"]["labels"] = json!({"rbac.example/aggregate": "true"});
        let other = cluster_role("other", &[r(&["get"], &[""], &["nodes"])]);
        let p = StaticPolicy::new([agg, part, other, crb("b", "agg", &["User:alice"])]);
        let alice = user("alice", &[]);
        assert!(authorize(&p, &ns_attrs(alice.clone(), "get", "secrets", "x")).allowed());
        assert!(!authorize(&p, &ns_attrs(alice, "get", "nodes", "")).allowed());
    }

    #[test]
    fn selectors_support_expressions() {
        let labels = json!({"a": "1", "b": "2"});
        let l = labels.as_object();
        assert!(labels_match_selector(l, &json!({})));
        assert!(labels_match_selector(
            l,
            &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]})
        ));
        assert!(!labels_match_selector(
            l,
            &json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]})
        ));
        assert!(labels_match_selector(
            l,
            &json!({"matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]})
        ));
        assert!(!labels_match_selector(
            l,
            &json!({"matchExpressions": [{"key": "c", "operator": "Exists"}]})
        ));
        assert!(!labels_match_selector(
            l,
            &json!({"matchLabels": {"b": "3"}})
        ));
    }

    #[test]
    fn pinned_names_come_from_exact_name_selectors() {
        assert_eq!(pinned_name("metadata.name=x"), Some("x".into()));
        assert_eq!(
            pinned_name("metadata.namespace=n,metadata.name==x"),
            Some("x".into())
        );
        assert_eq!(pinned_name("metadata.name!=x"), None);
        assert_eq!(pinned_name("metadata.namespace=x"), None);
        assert_eq!(pinned_name("metadata.name=a/b"), None);
        assert_eq!(pinned_name("metadata.name=.."), None);
        assert_eq!(pinned_name(""), None);
    }

    fn record(method: &str, verb: &str, resource: &str, ns: &str, name: &str) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: method.into(),
            path: "/x".into(),
            query: String::new(),
            user: "u".into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: ns.into(),
            name: name.into(),
            code: 0,
        }
    }

    #[test]
    fn request_attributes_follow_request_info() {
        let q: HashMap<String, String> =
            [("fieldSelector".to_string(), "metadata.name=cm".to_string())].into();
        let a = Attributes::from_request(
            user("u", &[]),
            &record("GET", "list", "/configmaps", "ns", ""),
            &q,
            true,
        );
        assert_eq!(
            (
                a.verb.as_str(),
                a.api_group.as_str(),
                a.resource.as_str(),
                a.name.as_str()
            ),
            ("list", "", "configmaps", "cm")
        );
        let a = Attributes::from_request(
            user("u", &[]),
            &record("GET", "get", "/namespaces", "", "foo"),
            &HashMap::new(),
            true,
        );
        assert_eq!(a.namespace, "foo", "a Namespace is in itself");
        let mut rec = record("PUT", "update", "apps/deployments", "ns", "d");
        rec.subresource = "status".into();
        let a = Attributes::from_request(user("u", &[]), &rec, &HashMap::new(), true);
        assert_eq!(
            (
                a.api_group.as_str(),
                a.resource.as_str(),
                a.subresource.as_str()
            ),
            ("apps", "deployments", "status")
        );
        let mut rec = record("GET", "discovery", "", "", "");
        rec.path = "/apis".into();
        let a = Attributes::from_request(user("u", &[]), &rec, &HashMap::new(), false);
        assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", "/apis"));
    }

    #[test]
    fn forbidden_messages_match_the_api_server() {
        let sa = user("system:serviceaccount:ns:sa", &[]);
        let a = Attributes::resource(sa.clone(), "get", "apps", "deployments", "ns", "x");
        let e = forbidden_error(&a, "");
        assert_eq!(
            e.message,
            "deployments.apps \"x\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot get resource \"deployments\" in API group \"apps\" in the namespace \"ns\""
        );
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert_eq!(
            e.details,
            Some(json!({"name": "x", "group": "apps", "kind": "deployments"}))
        );
        let a = Attributes::resource(sa.clone(), "list", "", "nodes", "", "");
        assert_eq!(
            forbidden_error(
                &a,
                "RBAC: clusterrole.rbac.authorization.k8s.io \"r\" not found"
            )
            .message,
            "nodes is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"r\" not found"
        );
        let a = Attributes::resource(
            sa.clone(),
            "update",
            "apps",
            "deployments/status",
            "ns",
            "d",
        );
        assert!(
            forbidden_error(&a, "")
                .message
                .contains("cannot update resource \"deployments/status\"")
        );
        let e = forbidden_error(&Attributes::non_resource(sa, "get", "/metrics"), "");
        assert_eq!(
            e.message,
            "forbidden: User \"system:serviceaccount:ns:sa\" cannot get path \"/metrics\""
        );
        assert_eq!(e.details, Some(json!({})));
    }

    // Coverage, after Kubernetes' policy_comparator tests.
    #[test]
    fn covers_exact_and_star_rules() {
        let owner = [r(&["*"], &["*"], &["*"])];
        assert!(covers(&owner, &[r(&["get"], &["apps"], &["deployments"])]).0);
        let owner = [r(&["get", "list"], &["apps"], &["deployments"])];
        assert!(covers(&owner, &[r(&["get"], &["apps"], &["deployments"])]).0);
        let (ok, missing) = covers(
            &owner,
            &[r(&["get", "delete"], &["apps"], &["deployments"])],
        );
        assert!(!ok);
        assert_eq!(missing, vec![r(&["delete"], &["apps"], &["deployments"])]);
    }

    #[test]
    fn covers_subresources_by_star_prefix_but_not_by_parent() {
        let owner = [r(&["get"], &[""], &["*/status"])];
        assert!(covers(&owner, &[r(&["get"], &[""], &["pods/status"])]).0);
        assert!(!covers(&owner, &[r(&["get"], &[""], &["pods"])]).0);
        let parent = [r(&["get"], &[""], &["pods"])];
        assert!(!covers(&parent, &[r(&["get"], &[""], &["pods/status"])]).0);
    }

    #[test]
    fn covers_resource_names() {
        let named = [r(&["get"], &[""], &["secrets"]).with_names(&["a", "b"])];
        assert!(
            covers(
                &named,
                &[r(&["get"], &[""], &["secrets"]).with_names(&["a"])]
            )
            .0
        );
        assert!(
            !covers(&named, &[r(&["get"], &[""], &["secrets"])]).0,
            "named rules do not cover all names"
        );
        let all = [r(&["get"], &[""], &["secrets"])];
        assert!(covers(&all, &[r(&["get"], &[""], &["secrets"]).with_names(&["z"])]).0);
    }

    #[test]
    fn covers_non_resource_urls_by_prefix() {
        let owner = [PolicyRule::non_resource(&["get"], &["/apis/*"])];
        assert!(
            covers(
                &owner,
                &[PolicyRule::non_resource(&["get"], &["/apis/apps"])]
            )
            .0
        );
        assert!(!covers(&owner, &[PolicyRule::non_resource(&["get"], &["/apis"])]).0);
        assert!(!covers(&owner, &[PolicyRule::non_resource(&["post"], &["/apis/x"])]).0);
        assert!(
            !covers(
                &[r(&["*"], &["*"], &["*"])],
                &[PolicyRule::non_resource(&["get"], &["/x"])]
            )
            .0
        );
    }

    #[test]
    fn compact_strings_and_compaction() {
        let rule = r(&["get", "list"], &["apps"], &["deployments"]);
        assert_eq!(
            rule.compact_string(),
            "{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\" \"list\"]}"
        );
        assert_eq!(
            PolicyRule::non_resource(&["get"], &["/x"]).compact_string(),
            "{NonResourceURLs:[\"/x\"], Verbs:[\"get\"]}"
        );
        let compact = compact_rules(&breakdown_rule(&rule));
        assert_eq!(compact, vec![rule]);
        let named = r(&["get"], &[""], &["secrets"]).with_names(&["a"]);
        assert_eq!(
            named.compact_string(),
            "{APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"a\"], Verbs:[\"get\"]}"
        );
    }

    #[test]
    fn escalation_messages_list_what_is_not_held() {
        let p = StaticPolicy::new([
            cluster_role("some", &[r(&["get"], &["apps"], &["deployments"])]),
            crb("b", "some", &["User:alice"]),
        ]);
        let alice = user("alice", &["system:authenticated"]);
        assert!(
            confirm_no_escalation(&p, &alice, "", &[r(&["get"], &["apps"], &["deployments"])])
                .is_ok()
        );
        let (msg, missing) = confirm_no_escalation(
            &p,
            &alice,
            "",
            &[r(&["get", "list", "watch"], &["apps"], &["deployments"])],
        )
        .expect_err("list and watch are not held");
        assert_eq!(
            msg,
            "user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"list\" \"watch\"]}"
        );
        assert_eq!(
            missing,
            vec![r(&["list", "watch"], &["apps"], &["deployments"])]
        );
    }

    #[test]
    fn escalation_checks_use_rules_in_the_target_namespace() {
        let p = StaticPolicy::new([
            cluster_role("cm", &[r(&["*"], &[""], &["configmaps"])]),
            rb("a", "b", "ClusterRole", "cm", &["User:alice"]),
            rb("c", "dangling", "Role", "gone", &["User:alice"]),
        ]);
        let alice = user("alice", &[]);
        let want = [r(&["get"], &[""], &["configmaps"])];
        assert!(confirm_no_escalation(&p, &alice, "a", &want).is_ok());
        assert!(confirm_no_escalation(&p, &alice, "b", &want).is_err());
        assert!(confirm_no_escalation(&p, &alice, "", &want).is_err());
        let (msg, _) = confirm_no_escalation(&p, &alice, "c", &want).expect_err("not held");
        assert!(
            msg.ends_with(
                "; resolution errors: [roles.rbac.authorization.k8s.io \"gone\" not found]"
            ),
            "{msg}"
        );
    }

    #[test]
    fn gc_only_updates_skip_escalation() {
        let old = json!({"metadata": {"name": "r", "resourceVersion": "1"}, "rules": []});
        let mut new = old.clone();
        new["metadata"]["ownerReferences"] = json!([{"uid": "x"}]);
        new["metadata"]["finalizers"] = json!(["f"]);
        assert!(only_gc_fields_changed(&new, &old, false));
        new["metadata"]["labels"] = json!({"a": "b"});
        assert!(!only_gc_fields_changed(&new, &old, false));
        let mut bumped = old.clone();
        bumped["metadata"]["resourceVersion"] = json!("2");
        assert!(!only_gc_fields_changed(&bumped, &old, false));
        assert!(only_gc_fields_changed(&bumped, &old, true));
    }

    #[test]
    fn denials_read_as_missing_permissions() {
        let d = Denial {
            user: "system:serviceaccount:ns:sa".into(),
            verb: "list".into(),
            api_group: "apps".into(),
            resource: "deployments".into(),
            namespace: "ns".into(),
            name: String::new(),
            path: String::new(),
            message: String::new(),
            missing: vec![r(&["list"], &["apps"], &["deployments"])],
        };
        assert_eq!(
            d.to_string(),
            "system:serviceaccount:ns:sa cannot list apps/deployments in namespace \"ns\"; missing {APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"list\"]}"
        );
    }
}
