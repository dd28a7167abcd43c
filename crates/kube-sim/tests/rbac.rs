//! RBAC authorization end to end: an administrator writes RBAC objects with kube-rs, a service
//! account's kube-rs client is allowed or refused exactly as a real API server would, and the
//! refusals are Status objects kube-rs understands and the simulator remembers.

mod common;

use common::{TestResult, client_for, start_with, status};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use kube_sim::{KubeSim, RbacConfig, SimConfig};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const NS: &str = "work";
const SA: &str = "system:serviceaccount:work:robot";

async fn start_rbac() -> (KubeSim, Client) {
    let (sim, admin) = start_with(SimConfig {
        workloads: None,
        rbac: Some(RbacConfig::default()),
        ..SimConfig::default()
    })
    .await;
    common::namespace(&admin, NS).await;
    common::namespace(&admin, "elsewhere").await;
    (sim, admin)
}

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

async fn create<K>(client: &Client, ns: Option<&str>, obj: Value) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    let api: Api<K> = match ns {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::default_namespaced(client.clone()),
    };
    api.create(&PostParams::default(), &typed(obj)).await
}

async fn create_cluster<K>(client: &Client, obj: Value) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    Api::<K>::all(client.clone())
        .create(&PostParams::default(), &typed(obj))
        .await
}

fn role(name: &str, rules_json: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": NS}, "rules": rules_json})
}

fn cluster_role(name: &str, rules_json: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name}, "rules": rules_json})
}

fn role_binding(name: &str, kind: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": NS},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
           "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": NS}]})
}

fn cluster_role_binding(name: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
           "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": NS}]})
}

/// Grants the robot `rules` in NS through a Role and RoleBinding named `name`.
async fn grant(admin: &Client, name: &str, rules_json: Value) {
    create::<Role>(admin, Some(NS), role(name, rules_json))
        .await
        .expect("admin creates the role");
    create::<RoleBinding>(admin, Some(NS), role_binding(name, "Role", name))
        .await
        .expect("admin binds the role");
}

/// Grants the robot `rules` cluster-wide.
async fn grant_cluster(admin: &Client, name: &str, rules_json: Value) {
    create_cluster::<ClusterRole>(admin, cluster_role(name, rules_json))
        .await
        .expect("admin creates the cluster role");
    create_cluster::<ClusterRoleBinding>(admin, cluster_role_binding(name, name))
        .await
        .expect("admin binds the cluster role");
}

#[tokio::test]
async fn a_service_account_without_bindings_is_refused_with_the_servers_status() -> TestResult {
    let (sim, _admin) = start_rbac().await;
    let robot = client_for(&sim, SA).await;
    let cms: Api<ConfigMap> = Api::namespaced(robot.clone(), NS);
    let s = status(cms.list(&ListParams::default()).await);
    assert_eq!(s.code, 403);
    assert_eq!(s.reason, "Forbidden");
    assert_eq!(
        s.message,
        "configmaps is forbidden: User \"system:serviceaccount:work:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"work\""
    );
    let s = status(cms.get("x").await);
    assert_eq!(
        s.message,
        "configmaps \"x\" is forbidden: User \"system:serviceaccount:work:robot\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"work\""
    );
    let details = s.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("x", "configmaps")
    );

    // Refused requests stay in the request log, and read as missing permissions.
    let refused: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|r| r.user == SA && r.code == 403)
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(
        sim.forbidden_requests(),
        vec![
            "system:serviceaccount:work:robot cannot list core/configmaps in namespace \"work\"; missing {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"list\"]}".to_string(),
            "system:serviceaccount:work:robot cannot get core/configmaps \"x\" in namespace \"work\"; missing {APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"x\"], Verbs:[\"get\"]}".to_string(),
        ]
    );
    // Discovery and /version are granted to every authenticated user.
    robot.apiserver_version().await?;
    Ok(())
}

#[tokio::test]
async fn rbac_is_off_unless_asked_for_and_can_be_switched_at_runtime() -> TestResult {
    let (sim, _client) = start_with(SimConfig {
        workloads: None,
        ..SimConfig::default()
    })
    .await;
    let robot = client_for(&sim, SA).await;
    let cms: Api<ConfigMap> = Api::namespaced(robot.clone(), "default");
    cms.list(&ListParams::default()).await?;
    sim.set_rbac(Some(RbacConfig::default()));
    assert_eq!(status(cms.list(&ListParams::default()).await).code, 403);
    sim.set_rbac(None);
    cms.list(&ListParams::default()).await?;
    Ok(())
}

#[tokio::test]
async fn a_role_binding_grants_in_its_namespace_only() -> TestResult {
    let (sim, admin) = start_rbac().await;
    grant(
        &admin,
        "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    let robot = client_for(&sim, SA).await;
    let here: Api<ConfigMap> = Api::namespaced(robot.clone(), NS);
    here.list(&ListParams::default()).await?;
    let there: Api<ConfigMap> = Api::namespaced(robot.clone(), "elsewhere");
    assert_eq!(status(there.list(&ListParams::default()).await).code, 403);
    let everywhere: Api<ConfigMap> = Api::all(robot.clone());
    let s = status(everywhere.list(&ListParams::default()).await);
    assert!(s.message.ends_with("at the cluster scope"), "{}", s.message);
    let s = status(
        here.create(&PostParams::default(), &common::config_map("new", &[], &[]))
            .await,
    );
    assert!(
        s.message.contains("cannot create resource"),
        "{}",
        s.message
    );
    let secrets: Api<Secret> = Api::namespaced(robot, NS);
    assert_eq!(status(secrets.list(&ListParams::default()).await).code, 403);
    Ok(())
}

#[tokio::test]
async fn resource_names_allow_gets_and_name_pinned_lists() -> TestResult {
    let (sim, admin) = start_rbac().await;
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin.clone(), NS);
    for name in ["mine", "theirs"] {
        admin_cms
            .create(&PostParams::default(), &common::config_map(name, &[], &[]))
            .await?;
    }
    grant(
        &admin,
        "one-cm",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["mine"],
                "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    let robot = client_for(&sim, SA).await;
    let cms: Api<ConfigMap> = Api::namespaced(robot, NS);
    cms.get("mine").await?;
    assert_eq!(status(cms.get("theirs").await).code, 403);
    assert_eq!(status(cms.list(&ListParams::default()).await).code, 403);
    let pinned = cms
        .list(&ListParams::default().fields("metadata.name=mine"))
        .await?;
    assert_eq!(pinned.items.len(), 1);
    assert_eq!(
        status(
            cms.list(&ListParams::default().fields("metadata.name=theirs"))
                .await
        )
        .code,
        403
    );
    Ok(())
}

#[tokio::test]
async fn subresources_need_their_own_rule() -> TestResult {
    let (sim, admin) = start_rbac().await;
    grant_cluster(
        &admin,
        "ns-status",
        json!([{"apiGroups": [""], "resources": ["namespaces/status"], "verbs": ["get"]}]),
    )
    .await;
    let robot = client_for(&sim, SA).await;
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(robot);
    nss.get_status(NS).await?;
    let s = status(nss.get(NS).await);
    assert_eq!(
        s.message,
        "namespaces \"work\" is forbidden: User \"system:serviceaccount:work:robot\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"work\"",
        "a Namespace's own name is the namespace of the request"
    );
    Ok(())
}

#[tokio::test]
async fn creating_a_cluster_role_needs_the_permissions_it_grants() -> TestResult {
    let (sim, admin) = start_rbac().await;
    grant_cluster(
        &admin,
        "role-writer",
        json!([
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
             "verbs": ["create", "update", "patch", "get"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}
        ]),
    )
    .await;
    let robot = client_for(&sim, SA).await;
    // Within what it holds: allowed.
    create_cluster::<ClusterRole>(
        &robot,
        cluster_role(
            "held",
            json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]),
        ),
    )
    .await?;
    // Beyond: refused with the escalation message.
    let s = status(
        create_cluster::<ClusterRole>(
            &robot,
            cluster_role(
                "more",
                json!([{"apiGroups": ["apps"], "resources": ["deployments"],
                        "verbs": ["get", "list", "watch", "delete"]}]),
            ),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        s.message,
        "clusterroles.rbac.authorization.k8s.io \"more\" is forbidden: user \"system:serviceaccount:work:robot\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:work\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"watch\" \"delete\"]}"
    );
    let denial = sim.rbac_denials().pop().expect("a denial");
    assert_eq!(denial.verb, "create");
    assert_eq!(
        denial.missing[0].compact_string(),
        "{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"watch\" \"delete\"]}"
    );
    assert!(
        sim.requests()
            .iter()
            .any(|r| r.user == SA && r.code == 403 && r.verb == "create"),
        "the refused create is in the request log"
    );

    // A patch that adds a permission not held is refused too; one within is allowed.
    let api: Api<ClusterRole> = Api::all(robot.clone());
    let add_delete = json!({"rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "delete"]}]});
    let s = status(
        api.patch("held", &PatchParams::default(), &Patch::Merge(&add_delete))
            .await,
    );
    assert!(s.message.contains("Verbs:[\"delete\"]"), "{}", s.message);
    let add_list = json!({"rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]});
    api.patch("held", &PatchParams::default(), &Patch::Merge(&add_list))
        .await?;

    // The `escalate` verb lifts the check.
    grant_cluster(
        &admin,
        "escalator",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["escalate"]}]),
    )
    .await;
    create_cluster::<ClusterRole>(
        &robot,
        cluster_role(
            "more",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        ),
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn an_aggregation_rule_needs_cluster_admin() -> TestResult {
    let (sim, admin) = start_rbac().await;
    grant_cluster(
        &admin,
        "role-writer",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]}]),
    )
    .await;
    let robot = client_for(&sim, SA).await;
    let mut agg = cluster_role("agg", json!([]));
    agg["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]});
    let s = status(create_cluster::<ClusterRole>(&robot, agg).await);
    assert_eq!(
        s.message,
        "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );
    Ok(())
}

#[tokio::test]
async fn bindings_need_bind_or_every_permission_of_the_role() -> TestResult {
    let (sim, admin) = start_rbac().await;
    grant(
        &admin,
        "binder",
        json!([
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        ]),
    )
    .await;
    create_cluster::<ClusterRole>(
        &admin,
        cluster_role(
            "cm-get",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
        ),
    )
    .await?;
    create_cluster::<ClusterRole>(
        &admin,
        cluster_role(
            "secret-get",
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
        ),
    )
    .await?;
    let robot = client_for(&sim, SA).await;
    // Holds everything cm-get grants in NS: allowed.
    create::<RoleBinding>(
        &robot,
        Some(NS),
        role_binding("b1", "ClusterRole", "cm-get"),
    )
    .await?;
    // secret-get is not held.
    let s = status(
        create::<RoleBinding>(
            &robot,
            Some(NS),
            role_binding("b2", "ClusterRole", "secret-get"),
        )
        .await,
    );
    assert_eq!(
        s.message,
        "rolebindings.rbac.authorization.k8s.io \"b2\" is forbidden: user \"system:serviceaccount:work:robot\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:work\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    // A missing role is NotFound for whoever may not bind it.
    let s = status(
        create::<RoleBinding>(&robot, Some(NS), role_binding("b3", "Role", "nothing")).await,
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, "roles.rbac.authorization.k8s.io \"nothing\" not found")
    );
    // `bind` on that ClusterRole, by name, lifts the check.
    grant(
        &admin,
        "may-bind",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                "resourceNames": ["secret-get"], "verbs": ["bind"]}]),
    )
    .await;
    create::<RoleBinding>(
        &robot,
        Some(NS),
        role_binding("b2", "ClusterRole", "secret-get"),
    )
    .await?;
    // The binding took effect.
    let secrets: Api<Secret> = Api::namespaced(robot, NS);
    assert_eq!(
        status(secrets.get("none").await).code,
        404,
        "allowed now, and the secret does not exist"
    );
    Ok(())
}

#[tokio::test]
async fn superusers_and_their_writes_are_never_checked() -> TestResult {
    let (sim, admin) = start_rbac().await;
    // The admin holds no binding at all, yet may grant anything.
    create_cluster::<ClusterRole>(
        &admin,
        cluster_role(
            "all",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        ),
    )
    .await?;
    for user in ["admin", "system:admin"] {
        let c = client_for(&sim, user).await;
        Api::<Secret>::all(c).list(&ListParams::default()).await?;
    }
    let other = client_for(&sim, "alice").await;
    assert_eq!(
        status(Api::<Secret>::all(other).list(&ListParams::default()).await).code,
        403
    );
    assert!(
        sim.forbidden_requests()[0].starts_with("alice cannot list core/secrets (cluster scope)")
    );
    Ok(())
}

#[tokio::test]
async fn updates_are_checked_unless_they_only_touch_garbage_collection_fields() -> TestResult {
    let (sim, admin) = start_rbac().await;
    grant_cluster(
        &admin,
        "role-updater",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["get", "update"]}]),
    )
    .await;
    create_cluster::<ClusterRole>(
        &admin,
        cluster_role(
            "big",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        ),
    )
    .await?;
    let robot = client_for(&sim, SA).await;
    let api: Api<ClusterRole> = Api::all(robot);
    let mut big = api.get("big").await?;
    big.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    let s = status(api.replace("big", &PostParams::default(), &big).await);
    assert!(
        s.message
            .contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        s.message
    );
    let mut big = api.get("big").await?;
    big.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    api.replace("big", &PostParams::default(), &big).await?;
    Ok(())
}
