//! TokenReview and SubjectAccessReview through kube-rs, as an operator's delegated
//! authentication uses them: discovery lists them create-only, creating one needs `create` on
//! it, tokens authenticate as kube-sim's users, and access reviews follow RBAC.

mod common;

use common::{client_for, start_with, status};
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, PostParams};
use kube_sim::{KubeSim, RbacConfig, SimConfig};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const OPERATOR: &str = "system:serviceaccount:ops:operator";
const PROMETHEUS: &str = "system:serviceaccount:openshift-monitoring:prometheus-k8s";

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

/// RBAC on; `ops/operator` may create reviews (as `system:auth-delegator` grants) and
/// `prometheus-k8s` may `get /metrics`.
async fn start() -> (KubeSim, Client) {
    let (sim, admin) = start_with(SimConfig {
        workloads: None,
        rbac: Some(RbacConfig::default()),
        ..SimConfig::default()
    })
    .await;
    for (ns, name) in [
        ("ops", "operator"),
        ("openshift-monitoring", "prometheus-k8s"),
    ] {
        common::namespace(&admin, ns).await;
        Api::<ServiceAccount>::namespaced(admin.clone(), ns)
            .create(
                &PostParams::default(),
                &typed(json!({"metadata": {"name": name}})),
            )
            .await
            .expect("service account");
    }
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    for (role, rules, subject_ns, subject) in [
        (
            "auth-delegator",
            json!([
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            ]),
            "ops",
            "operator",
        ),
        (
            "metrics-reader",
            json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
            "openshift-monitoring",
            "prometheus-k8s",
        ),
    ] {
        roles
            .create(
                &PostParams::default(),
                &typed(json!({"metadata": {"name": role}, "rules": rules})),
            )
            .await
            .expect("cluster role");
        bindings
            .create(
                &PostParams::default(),
                &typed(json!({"metadata": {"name": role},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": subject_ns}]})),
            )
            .await
            .expect("binding");
    }
    (sim, admin)
}

async fn token_review(client: &Client, token: &str) -> Result<TokenReview, kube::Error> {
    Api::<TokenReview>::all(client.clone())
        .create(
            &PostParams::default(),
            &typed(json!({"spec": {"token": token}})),
        )
        .await
}

async fn metrics_review(client: &Client, review: &TokenReview) -> SubjectAccessReview {
    let user = review
        .status
        .as_ref()
        .and_then(|s| s.user.clone())
        .expect("user");
    Api::<SubjectAccessReview>::all(client.clone())
        .create(
            &PostParams::default(),
            &typed(json!({"spec": {
                "user": user.username, "groups": user.groups,
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}})),
        )
        .await
        .expect("access review")
}

#[tokio::test]
async fn a_scraper_is_authenticated_and_authorized_by_rbac() {
    let (sim, _admin) = start().await;
    let operator = client_for(&sim, OPERATOR).await;

    let prometheus = token_review(&operator, PROMETHEUS).await.expect("review");
    let st = prometheus.status.clone().expect("status");
    assert_eq!(st.authenticated, Some(true));
    let user = st.user.expect("user");
    assert_eq!(user.username.as_deref(), Some(PROMETHEUS));
    let groups = user.groups.unwrap_or_default();
    assert!(
        groups.contains(&"system:serviceaccounts:openshift-monitoring".to_string())
            && groups.contains(&"system:authenticated".to_string()),
        "{groups:?}"
    );
    let allowed = metrics_review(&operator, &prometheus).await;
    assert!(allowed.status.expect("status").allowed);

    let other = token_review(&operator, OPERATOR).await.expect("review");
    let denied = metrics_review(&operator, &other).await;
    assert!(
        !denied.status.expect("status").allowed,
        "the operator's own SA holds no /metrics right"
    );
}

#[tokio::test]
async fn unknown_and_malformed_tokens_are_not_authenticated() {
    let (sim, _admin) = start().await;
    let operator = client_for(&sim, OPERATOR).await;
    for token in [
        "system:serviceaccount:openshift-monitoring:deleted",
        "system:anonymous",
        "two words",
    ] {
        let st = token_review(&operator, token)
            .await
            .expect("review")
            .status
            .expect("status");
        assert_ne!(st.authenticated, Some(true), "{token}");
        assert!(st.error.is_some_and(|e| !e.is_empty()), "{token}: says why");
    }
}

#[tokio::test]
async fn creating_reviews_needs_the_right_and_nothing_else_is_allowed() {
    let (sim, admin) = start().await;
    let prometheus = client_for(&sim, PROMETHEUS).await;
    let refused = status(token_review(&prometheus, OPERATOR).await);
    assert_eq!(refused.code, 403, "{refused:?}");

    // Create-only: no get, list or named requests.
    let api: Api<TokenReview> = Api::all(admin.clone());
    assert_eq!(status(api.list(&Default::default()).await).code, 405);

    // An invalid access review says what is missing.
    let bad = Api::<SubjectAccessReview>::all(admin.clone())
        .create(
            &PostParams::default(),
            &typed(json!({"spec": {"user": "x"}})),
        )
        .await;
    assert_eq!(status(bad).code, 422);
}

#[tokio::test]
async fn discovery_lists_the_reviews_create_only() {
    let (_sim, admin) = start().await;
    let discovery = kube::discovery::Discovery::new(admin.clone())
        .run()
        .await
        .expect("discovery");
    for (group, kind) in [
        ("authentication.k8s.io", "TokenReview"),
        ("authorization.k8s.io", "SubjectAccessReview"),
    ] {
        let g = discovery
            .get(group)
            .unwrap_or_else(|| panic!("{group} served"));
        let (_, caps) = g
            .recommended_resources()
            .into_iter()
            .find(|(ar, _)| ar.kind == kind)
            .unwrap_or_else(|| panic!("{kind} listed"));
        assert_eq!(caps.operations, vec!["create".to_string()], "{kind}");
    }
}

#[tokio::test]
async fn with_rbac_off_every_access_review_is_allowed() {
    let (sim, admin) = start_with(SimConfig {
        workloads: None,
        ..SimConfig::default()
    })
    .await;
    let _ = sim;
    let review = token_review(&admin, "someone").await.expect("review");
    assert_eq!(
        review.status.clone().expect("status").authenticated,
        Some(true)
    );
    assert!(
        metrics_review(&admin, &review)
            .await
            .status
            .expect("status")
            .allowed
    );
}

/// `kubectl auth whoami` and `kubectl auth can-i`: the requester's own reviews, which every
/// authenticated user may create and an anonymous one may not.
#[tokio::test]
async fn self_reviews_answer_for_the_requester() {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let (sim, admin) = start().await;
    let operator = client_for(&sim, OPERATOR).await;
    let whoami = Api::<SelfSubjectReview>::all(operator.clone())
        .create(&PostParams::default(), &typed(json!({})))
        .await
        .expect("self review");
    let user = whoami.status.and_then(|s| s.user_info).expect("user info");
    assert_eq!(user.username.as_deref(), Some(OPERATOR));
    assert!(
        user.groups
            .unwrap_or_default()
            .contains(&"system:serviceaccounts:ops".to_string())
    );
    let admin_user = Api::<SelfSubjectReview>::all(admin.clone())
        .create(&PostParams::default(), &typed(json!({})))
        .await
        .expect("self review")
        .status
        .and_then(|s| s.user_info)
        .expect("user info");
    assert_eq!(
        admin_user.groups.unwrap_or_default(),
        ["system:masters", "system:authenticated"]
    );

    let can_i = |client: &Client, verb: &str, resource: &str| {
        let api = Api::<SelfSubjectAccessReview>::all(client.clone());
        let review: SelfSubjectAccessReview = typed(json!({"spec": {"resourceAttributes": {
            "verb": verb, "group": "authentication.k8s.io", "resource": resource}}}));
        async move {
            api.create(&PostParams::default(), &review)
                .await
                .expect("access review")
        }
    };
    // The operator's role grants tokenreviews, not anything else.
    let yes = can_i(&operator, "create", "tokenreviews").await;
    assert!(yes.status.expect("status").allowed);
    let no = can_i(&operator, "delete", "tokenreviews").await;
    assert!(!no.status.expect("status").allowed);

    // No credentials at all: system:anonymous, whom system:basic-user does not cover.
    let anonymous_client = Client::try_from(kube::Config::new(
        sim.url().parse().expect("kube-sim's URL"),
    ))
    .expect("client");
    let anonymous = Api::<SelfSubjectReview>::all(anonymous_client)
        .create(&PostParams::default(), &typed(json!({})))
        .await;
    assert_eq!(status(anonymous).code, 403);
}
