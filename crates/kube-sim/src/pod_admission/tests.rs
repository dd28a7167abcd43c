//! Unit tests of the admission glue: namespace allocation, SCC grants read from RBAC objects,
//! and Pod Security Admission after SCC mutation.

use super::*;

fn opts() -> WriteOptions {
    WriteOptions {
        manager: "test".into(),
        ..Default::default()
    }
}

fn create(c: &mut Cluster, obj: Value) {
    let api = obj["apiVersion"].as_str().unwrap_or_default().to_string();
    let (group, version) = api.split_once('/').unwrap_or(("", &api));
    let kind = obj["kind"].as_str().unwrap_or_default();
    let plural = match kind {
        "Namespace" => "namespaces",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        other => panic!("no plural for {other}"),
    };
    let rt = c.resource(group, version, plural).expect("served");
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    c.create(&rt, &ns, obj, &opts()).expect("created");
}

fn cluster(namespaces: &[(&str, Value)]) -> Cluster {
    let mut c = Cluster::new(1000, 1000);
    seed(&mut c);
    for (name, labels) in namespaces {
        create(
            &mut c,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": name, "labels": labels}}),
        );
    }
    allocate_namespaces(&mut c);
    c
}

fn annotation(c: &Cluster, ns: &str, key: &str) -> String {
    namespace_object(c, ns)
        .and_then(|n| {
            n.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

fn operator_pod(ns: &str, scc: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "op-", "namespace": ns,
                     "annotations": {"openshift.io/required-scc": scc}},
        "spec": {
            "serviceAccountName": "op",
            "securityContext": {"runAsNonRoot": true, "runAsUser": 11411,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "i", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
        },
    })
}

#[test]
fn every_namespace_gets_its_own_block_once() {
    let mut c = cluster(&[("a", json!({})), ("b", json!({}))]);
    let a = annotation(&c, "a", scc::UID_RANGE_ANNOTATION);
    let b = annotation(&c, "b", scc::UID_RANGE_ANNOTATION);
    assert!(a.ends_with("/10000") && b.ends_with("/10000"), "{a} {b}");
    assert_ne!(a, b);
    assert_eq!(annotation(&c, "a", scc::SUPPLEMENTAL_GROUPS_ANNOTATION), a);
    assert!(annotation(&c, "a", scc::MCS_ANNOTATION).starts_with("s0:c"));
    assert!(!allocate_namespaces(&mut c), "a second pass writes nothing");
}

#[test]
fn the_service_accounts_rbac_grant_decides_a_pinned_scc() {
    let mut c = cluster(&[("ops", json!({}))]);
    let config = AdmissionConfig::openshift();
    let creator = controller_user("replicaset-controller");
    let pod = operator_pod("ops", "nonroot-v2");
    let Verdict::Refused(message) = admit(&c, &config, &pod, &creator) else {
        panic!("admitted without a grant");
    };
    assert_eq!(
        message,
        "pods \"op-\" is forbidden: unable to validate against any security context constraint: \
         provider \"nonroot-v2\": Forbidden: not usable by user or serviceaccount"
    );
    create(
        &mut c,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "op-nonroot"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "system:openshift:scc:nonroot-v2"},
               "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]}),
    );
    let Verdict::Admitted(admitted) = admit(&c, &config, &pod, &creator) else {
        panic!("refused with the grant");
    };
    assert_eq!(
        admitted["metadata"]["annotations"]["openshift.io/scc"],
        "nonroot-v2"
    );
    // restricted-v2 is every authenticated user's, but not for this UID.
    let Verdict::Refused(message) =
        admit(&c, &config, &operator_pod("ops", "restricted-v2"), &creator)
    else {
        panic!("admitted outside the range");
    };
    assert!(message.contains("must be in the ranges"), "{message}");
}

#[test]
fn pod_security_judges_the_pod_the_scc_admitted() {
    let c = cluster(&[(
        "strict",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    )]);
    let creator = controller_user("replicaset-controller");
    // restricted-v2 fills in what the restricted level wants (runAsNonRoot, seccomp, drop
    // ALL, no escalation), so a bare pod passes both on OpenShift...
    let bare = json!({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"generateName": "bare-", "namespace": "strict"},
                      "spec": {"containers": [{"name": "c", "image": "i"}]}});
    assert!(matches!(
        admit(&c, &AdmissionConfig::openshift(), &bare, &creator),
        Verdict::Admitted(_)
    ));
    // ... and fails Pod Security alone on plain Kubernetes.
    let Verdict::Refused(message) = admit(&c, &AdmissionConfig::default(), &bare, &creator) else {
        panic!("a bare pod passed restricted");
    };
    assert!(
        message.starts_with(
            "pods \"bare-\" is forbidden: violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false"
        ),
        "{message}"
    );
}

#[test]
fn a_namespace_not_yet_allocated_is_pending() {
    let mut c = Cluster::new(1000, 1000);
    seed(&mut c);
    create(
        &mut c,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}}),
    );
    let verdict = admit(
        &c,
        &AdmissionConfig::openshift(),
        &operator_pod("new", "nonroot-v2"),
        &controller_user("replicaset-controller"),
    );
    assert!(matches!(verdict, Verdict::Pending(_)), "{verdict:?}");
}
