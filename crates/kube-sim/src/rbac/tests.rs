//! Tests of RBAC authorization and escalation checks, as kube-apiserver decides them.

use super::enforce::{Denial, forbidden_error, only_gc_fields_changed};
use super::policy::{Decision, StaticPolicy, authorize, confirm_no_escalation};
use super::rules::{PolicyRule, breakdown_rule, compact_rules, covers, rule_allows};
use super::subjects::{Attributes, UserInfo, pinned_name};
use super::*;
use crate::observe::RequestRecord;
use serde_json::{Value, json};
use std::collections::HashMap;

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
    let rule = r(&["get", "list", "watch", "update"], &[""], &["configmaps"]).with_names(&["a"]);
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
        confirm_no_escalation(&p, &alice, "", &[r(&["get"], &["apps"], &["deployments"])]).is_ok()
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
        msg.ends_with("; resolution errors: [roles.rbac.authorization.k8s.io \"gone\" not found]"),
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
