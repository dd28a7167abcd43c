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
//!
//! Where things are: `rules` has PolicyRules, matching and coverage (escalation), `subjects`
//! users and request attributes, `policy` policy sources, the bootstrap roles, rule resolution
//! and the decision, and `enforce` the errors, the denial log and the HTTP hooks.

mod enforce;
mod policy;
mod rules;
mod subjects;
#[cfg(test)]
mod tests;

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

pub use enforce::{Denial, forbidden_error};
pub(crate) use enforce::{RbacState, WriteGuard, authorize_request};
pub use policy::{Decision, PolicySource, StaticPolicy, authorize, confirm_no_escalation};
pub use rules::{PolicyRule, rules_of};
pub use subjects::{Attributes, UserInfo, service_account_of};
