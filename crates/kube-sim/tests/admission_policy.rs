//! ValidatingAdmissionPolicies through the API, as a client meets them on a cluster: the
//! namespace-label policy the release ships refuses what OpenShift refuses; match constraints,
//! binding match resources, match conditions, variables, parameters and the failure policy
//! decide what is judged; `Warn` bindings warn; and a policy that does not compile is refused
//! when written, without taking the server down.

mod common;

use std::path::Path;

use common::{TestResult, client_for, start, status};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

const GROUP: &str = "admissionregistration.k8s.io";

fn api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", kind), plural);
    Api::all_with(client.clone(), &ar)
}

async fn create_object(client: &Client, obj: Value) -> Result<DynamicObject, kube::Error> {
    let (kind, plural) = match obj["kind"].as_str() {
        Some("ValidatingAdmissionPolicy") => {
            ("ValidatingAdmissionPolicy", "validatingadmissionpolicies")
        }
        _ => (
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        ),
    };
    let obj: DynamicObject = serde_json::from_value(obj).expect("an object");
    api(client, kind, plural)
        .create(&PostParams::default(), &obj)
        .await
}

/// A policy on `rules` with `spec` merged in, and its binding with `binding` merged in.
async fn install(client: &Client, name: &str, spec: Value, binding: Value) -> TestResult {
    let mut policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["configmaps"]}]}}
    });
    merge(&mut policy["spec"], &spec);
    let mut b = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": format!("{name}-binding")},
        "spec": {"policyName": name, "validationActions": ["Deny"]}
    });
    merge(&mut b["spec"], &binding);
    create_object(client, policy).await?;
    create_object(client, b).await?;
    Ok(())
}

fn merge(into: &mut Value, from: &Value) {
    if let (Some(a), Some(b)) = (into.as_object_mut(), from.as_object()) {
        for (k, v) in b {
            a.insert(k.clone(), v.clone());
        }
    }
}

async fn ns(client: &Client, name: &str, labels: Value) -> Result<Namespace, kube::Error> {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
            .expect("a Namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
}

async fn config_map(
    client: &Client,
    ns: &str,
    name: &str,
    labels: Value,
    data: Value,
) -> Result<ConfigMap, kube::Error> {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": data}))
            .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
}

fn manifest(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../manifests/openshift")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("the manifest exists");
    serde_saphyr::from_str(&text).expect("YAML")
}

#[tokio::test]
async fn the_shipped_namespace_label_policy_refuses_unknown_values() -> TestResult {
    let (_sim, client) = start().await;
    for file in [
        "0000_50_cluster-storage-operator_13_validating_admission_policy.yaml",
        "0000_50_cluster-storage-operator_14_validating_admission_policy_binding.yaml",
    ] {
        create_object(&client, manifest(file)).await?;
    }
    let fs_group = "storage.openshift.io/fsgroup-change-policy";
    let selinux = "storage.openshift.io/selinux-change-policy";

    let refused = status(ns(&client, "bad", json!({fs_group: "Sometimes"})).await);
    assert_eq!(refused.code, 422);
    assert_eq!(refused.reason, "Invalid");
    assert_eq!(
        refused.message,
        "namespaces \"bad\" is forbidden: ValidatingAdmissionPolicy 'openshift-storage-policy-validation' \
         with binding 'openshift-storage-policy-validation-binding' denied request: Invalid value \
         'Sometimes' for label storage.openshift.io/fsgroup-change-policy. Valid values are: Always, \
         OnRootMismatch"
    );

    ns(
        &client,
        "good",
        json!({fs_group: "OnRootMismatch", selinux: "MountOption"}),
    )
    .await?;
    ns(&client, "plain", json!({"team": "a"})).await?;

    // An update is judged too: a bad SELinux value on an existing namespace.
    let namespaces = Api::<Namespace>::all(client.clone());
    let patch = json!({"metadata": {"labels": {selinux: "Whenever"}}});
    let refused = status(
        namespaces
            .patch("plain", &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.ends_with(
            "denied request: Invalid value 'Whenever' for label \
             storage.openshift.io/selinux-change-policy. Valid values are: Recursive, MountOption"
        ),
        "{}",
        refused.message
    );
    let fixed = json!({"metadata": {"labels": {selinux: "Recursive"}}});
    namespaces
        .patch("plain", &PatchParams::default(), &Patch::Merge(&fixed))
        .await?;
    // Deletes are not in its rules.
    namespaces.delete("good", &DeleteParams::default()).await?;
    Ok(())
}

#[tokio::test]
async fn policies_and_bindings_are_defaulted_and_validated() -> TestResult {
    let (_sim, client) = start().await;
    install(
        &client,
        "defaults",
        json!({"validations": [{"expression": "true"}]}),
        json!({"matchResources": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["*"], "resources": ["configmaps"]}]}}),
    )
    .await?;
    let policy = api(
        &client,
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
    )
    .get("defaults")
    .await?;
    let spec = &policy.data["spec"];
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(spec["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(spec["matchConstraints"]["namespaceSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["resourceRules"][0]["scope"], "*");
    let binding = api(
        &client,
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
    )
    .get("defaults-binding")
    .await?;
    assert_eq!(
        binding.data["spec"]["matchResources"]["matchPolicy"],
        "Equivalent"
    );

    let policy = |name: &str, spec: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": name}, "spec": spec})
    };
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["configmaps"]}]});
    let refused = status(
        create_object(
            &client,
            policy(
                "syntax",
                json!({"matchConstraints": rules, "validations": [{"expression": "1 +"}]}),
            ),
        )
        .await,
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.starts_with(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"syntax\" is invalid: \
             spec.validations[0].expression: Invalid value: \"1 +\": compilation failed: ERROR: \
             <input>:1:4: Syntax error:"
        ),
        "{}",
        refused.message
    );
    let refused = status(
        create_object(
            &client,
            policy(
                "typo",
                json!({"matchConstraints": rules,
                       "validations": [{"expression": "objet.data.x == 'y'"}]}),
            ),
        )
        .await,
    );
    assert!(
        refused.message.ends_with(
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'objet' (in container '')\n | objet.data.x == 'y'\n | ^"
        ),
        "{}",
        refused.message
    );
    let refused = status(
        create_object(
            &client,
            policy(
                "shape",
                json!({"failurePolicy": "Sometimes", "validations": [
                    {"expression": "true", "reason": "Teapot", "messageExpression": "'x' +"}]}),
            ),
        )
        .await,
    );
    for part in [
        "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
        "spec.matchConstraints: Required value",
        "spec.validations[0].messageExpression: Invalid value: \"'x' +\": compilation failed",
        "spec.validations[0].reason: Unsupported value: \"Teapot\"",
    ] {
        assert!(
            refused.message.contains(part),
            "{part}: {}",
            refused.message
        );
    }
    let binding = |actions: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
               "spec": {"policyName": "defaults", "validationActions": actions}})
    };
    let refused = status(create_object(&client, binding(json!(["Deny", "Warn"]))).await);
    assert!(
        refused
            .message
            .contains("spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn"),
        "{}",
        refused.message
    );
    let refused = status(create_object(&client, binding(json!([]))).await);
    assert!(refused.message.contains(
        "spec.validationActions: Required value: at least one validation action is required"
    ));
    Ok(())
}

#[tokio::test]
async fn hostile_expressions_are_refused_and_the_server_keeps_serving() -> TestResult {
    let (_sim, client) = start().await;
    let deep = "(".repeat(3_000) + "true" + &")".repeat(3_000);
    // `&&` and `||` chains are balanced by the parser, as cel-go does; `+` chains are not.
    let long_chain = "1".to_owned() + &" + 1".repeat(1_200) + " > 0";
    let huge = "'".to_owned() + &"x".repeat(50_000) + "' == ''";
    for (i, expression) in [deep, long_chain, huge, "\u{0}".into(), "}{".into()]
        .into_iter()
        .enumerate()
    {
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": format!("hostile-{i}")},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"],
                "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
                "validations": [{"expression": expression}]}});
        assert_eq!(status(create_object(&client, policy).await).code, 422);
    }
    namespace_still_served(&client).await
}

async fn namespace_still_served(client: &Client) -> TestResult {
    ns(client, "still-serving", json!({})).await?;
    Api::<Namespace>::all(client.clone())
        .get("still-serving")
        .await?;
    Ok(())
}

#[tokio::test]
async fn constraints_select_operations_objects_and_namespaces() -> TestResult {
    let (_sim, client) = start().await;
    ns(&client, "team-a", json!({"team": "a"})).await?;
    ns(&client, "team-b", json!({"team": "b"})).await?;
    install(
        &client,
        "checked",
        json!({
            "matchConstraints": {
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}],
                "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["*"], "resources": ["configmaps"],
                    "resourceNames": ["exempt"]}],
                "namespaceSelector": {"matchLabels": {"team": "a"}},
                "objectSelector": {"matchExpressions": [
                    {"key": "checked", "operator": "In", "values": ["yes"]}]}
            },
            "validations": [{"expression": "object.data.x == 'ok'",
                             "message": "x must be ok", "reason": "Forbidden"}]
        }),
        json!({}),
    )
    .await?;
    let checked = json!({"checked": "yes"});
    let refused =
        status(config_map(&client, "team-a", "c1", checked.clone(), json!({"x": "no"})).await);
    assert_eq!(refused.code, 403);
    assert_eq!(refused.reason, "Forbidden");
    assert_eq!(
        refused.message,
        "configmaps \"c1\" is forbidden: ValidatingAdmissionPolicy 'checked' with binding \
         'checked-binding' denied request: x must be ok"
    );
    // Not selected: another namespace, an unlabelled object, an excluded name.
    config_map(&client, "team-b", "c1", checked.clone(), json!({"x": "no"})).await?;
    config_map(&client, "team-a", "c2", json!({}), json!({"x": "no"})).await?;
    config_map(
        &client,
        "team-a",
        "exempt",
        checked.clone(),
        json!({"x": "no"}),
    )
    .await?;
    // Admitted, then updated (UPDATE is not in the rules).
    config_map(&client, "team-a", "c3", checked.clone(), json!({"x": "ok"})).await?;
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "team-a");
    let patch = json!({"data": {"x": "changed"}});
    cms.patch("c3", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;

    // A binding narrows further with its own match resources.
    install(
        &client,
        "named",
        json!({"validations": [{"expression": "false"}]}),
        json!({"matchResources": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"], "resourceNames": ["locked"]}]}}),
    )
    .await?;
    let refused = status(config_map(&client, "team-b", "locked", json!({}), json!({})).await);
    assert!(
        refused
            .message
            .ends_with("with binding 'named-binding' denied request: failed expression: false"),
        "{}",
        refused.message
    );
    config_map(&client, "team-b", "open", json!({}), json!({})).await?;
    Ok(())
}

#[tokio::test]
async fn conditions_variables_and_the_request_are_seen() -> TestResult {
    let (sim, client) = start().await;
    ns(&client, "apps", json!({"tier": "gold"})).await?;
    install(
        &client,
        "alice-only",
        json!({
            "matchConditions": [{"name": "is-alice",
                "expression": "request.userInfo.username == 'alice'"}],
            "variables": [{"name": "tier", "expression": "namespaceObject.metadata.labels.tier"},
                          {"name": "want", "expression": "'tier-' + variables.tier"}],
            "validations": [{"expression": "object.data.tier == variables.want",
                "messageExpression": "'tier must be ' + variables.want + ', not ' + object.data.tier + ' (' + request.operation + ' ' + request.namespace + '/' + request.name + ')'"}]
        }),
        json!({}),
    )
    .await?;
    let alice = client_for(&sim, "alice").await;
    let refused = status(config_map(&alice, "apps", "cm", json!({}), json!({"tier": "x"})).await);
    assert_eq!(refused.code, 422);
    assert!(
        refused
            .message
            .ends_with("denied request: tier must be tier-gold, not x (CREATE apps/cm)"),
        "{}",
        refused.message
    );
    config_map(
        &alice,
        "apps",
        "cm",
        json!({}),
        json!({"tier": "tier-gold"}),
    )
    .await?;
    // Another user is not matched.
    config_map(&client, "apps", "cm2", json!({}), json!({"tier": "x"})).await?;
    Ok(())
}

#[tokio::test]
async fn failure_policy_decides_on_evaluation_errors() -> TestResult {
    let (_sim, client) = start().await;
    ns(&client, "apps", json!({})).await?;
    let spec = |failure: &str, resource: &str| {
        json!({"failurePolicy": failure,
               "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": [resource]}]},
               "validations": [{"expression": "object.data.missing == 'x'"}]})
    };
    install(&client, "strict", spec("Fail", "configmaps"), json!({})).await?;
    let refused = status(config_map(&client, "apps", "cm", json!({}), json!({"a": "b"})).await);
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.message,
        "configmaps \"cm\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding \
         'strict-binding' denied request: expression 'object.data.missing == 'x'' resulted in \
         error: no such key: missing"
    );
    // The same error under Ignore admits; so does `authorizer`, which kube-sim does not offer.
    let secrets = |failure: &str, expression: &str| {
        json!({"failurePolicy": failure,
               "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": ["secrets"]}]},
               "validations": [{"expression": expression}]})
    };
    install(
        &client,
        "lenient",
        secrets("Ignore", "object.data.missing == 'x'"),
        json!({}),
    )
    .await?;
    install(
        &client,
        "authz",
        secrets(
            "Ignore",
            "authorizer.group('').resource('secrets').check('get').allowed()",
        ),
        json!({}),
    )
    .await?;
    let secret: k8s_openapi::api::core::v1::Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"a": "b"}}))?;
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), "apps")
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

#[tokio::test]
async fn deletes_see_the_old_object() -> TestResult {
    let (_sim, client) = start().await;
    ns(&client, "apps", json!({})).await?;
    config_map(&client, "apps", "keep", json!({}), json!({})).await?;
    config_map(&client, "apps", "drop", json!({}), json!({})).await?;
    install(
        &client,
        "no-delete",
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                   "operations": ["DELETE"], "resources": ["configmaps"]}]},
               "validations": [{"expression": "object == null && oldObject.metadata.name != 'keep'",
                                "message": "keep stays"}]}),
        json!({}),
    )
    .await?;
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "apps");
    let refused = status(cms.delete("keep", &DeleteParams::default()).await);
    assert_eq!(refused.code, 422);
    // Admission has no object on delete, so the API server names it "Unknown".
    assert_eq!(
        refused.message,
        "configmaps \"Unknown\" is forbidden: ValidatingAdmissionPolicy 'no-delete' with binding \
         'no-delete-binding' denied request: keep stays"
    );
    cms.delete("drop", &DeleteParams::default()).await?;
    cms.get("keep").await?;
    Ok(())
}

#[tokio::test]
async fn parameters_come_from_the_binding() -> TestResult {
    let (_sim, client) = start().await;
    ns(&client, "apps", json!({})).await?;
    ns(&client, "config", json!({})).await?;
    config_map(
        &client,
        "config",
        "limits",
        json!({}),
        json!({"allowed": "blue"}),
    )
    .await?;
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"]}],
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["config"]}]}},
        "validations": [{"expression": "!has(object.data) || !('color' in object.data) || object.data.color == params.data.allowed",
                         "messageExpression": "'color must be ' + params.data.allowed"}]
    });
    install(
        &client,
        "colors",
        spec,
        json!({"paramRef": {"name": "limits", "namespace": "config"}}),
    )
    .await?;
    let refused =
        status(config_map(&client, "apps", "red", json!({}), json!({"color": "red"})).await);
    assert!(
        refused
            .message
            .ends_with("denied request: color must be blue"),
        "{}",
        refused.message
    );
    config_map(&client, "apps", "blue", json!({}), json!({"color": "blue"})).await?;
    // The parameter gone: the binding's default parameterNotFoundAction is Deny.
    Api::<ConfigMap>::namespaced(client.clone(), "config")
        .delete("limits", &DeleteParams::default())
        .await?;
    let refused = status(config_map(&client, "apps", "any", json!({}), json!({})).await);
    assert!(
        refused.message.ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        refused.message
    );
    Ok(())
}

#[tokio::test]
async fn warn_bindings_warn_and_audit_bindings_admit() -> TestResult {
    let (sim, client) = start().await;
    ns(&client, "apps", json!({})).await?;
    install(
        &client,
        "soft",
        json!({"validations": [{"expression": "object.metadata.name != 'frowned-upon'",
                                "message": "pick another name"}]}),
        json!({"validationActions": ["Warn", "Audit"]}),
    )
    .await?;
    // kube-rs does not surface warnings: read the raw response.
    let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "frowned-upon"}}))?;
    let request = http::Request::post("/api/v1/namespaces/apps/configmaps")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body))?;
    let raw = client_for(&sim, "test").await.send(request).await?;
    assert_eq!(raw.status(), 201);
    let warnings: Vec<String> = raw
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    assert_eq!(
        warnings,
        vec![
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'soft' with binding \
             'soft-binding': pick another name\""
                .to_owned()
        ]
    );
    Ok(())
}
