//! Tests of the built-in kinds' validation, with the server's exact field paths and messages.

use super::create::validate_create;
use super::names::{
    MAX_SECRET_SIZE, TOTAL_ANNOTATION_SIZE, dns1123_label_errors, dns1123_subdomain_errors,
    validate_finalizers, validate_labels_and_annotations, validate_name,
};
use super::update::validate_update;
use crate::defaults::apply_defaults;
use crate::field_error::FieldError;
use base64::Engine as _;
use serde_json::{Value, json};

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn has(errs: &[FieldError], needle: &str) -> bool {
    errs.iter().any(|e| e.to_string().contains(needle))
}

fn defaulted(group: &str, kind: &str, mut obj: Value) -> Value {
    apply_defaults(group, kind, &mut obj);
    obj
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}
        }
    })
}

#[test]
fn name_rules() {
    let long = "a".repeat(254);
    let sub = "Invalid value";
    assert!(validate_name("apps", "Deployment", "web.example-1").is_empty());
    assert!(validate_name("apps", "Deployment", &"a".repeat(253)).is_empty());
    for bad in [
        "Web",
        "web_1",
        "-web",
        "web-",
        ".web",
        "web..x",
        long.as_str(),
    ] {
        let errs = validate_name("apps", "Deployment", bad);
        assert!(!errs.is_empty(), "{bad}");
        assert!(
            errs.iter()
                .all(|e| e.field == "metadata.name" && e.to_string().contains(sub)),
            "{bad}"
        );
    }
    let errs = validate_name("", "ConfigMap", &long);
    assert_eq!(
        messages(&errs),
        vec![format!(
            "metadata.name: Invalid value: \"{long}\": must be no more than 253 characters"
        )]
    );
    assert_eq!(
        messages(&validate_name("", "Secret", "Bad_Name")),
        vec!["metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()]
    );
    // Namespaces: DNS-1123 labels.
    assert!(validate_name("", "Namespace", "team-a").is_empty());
    assert_eq!(
        messages(&validate_name("", "Namespace", "team.a")),
        vec!["metadata.name: Invalid value: \"team.a\": must not contain dots".to_string()]
    );
    assert!(has(
        &validate_name("", "Namespace", "Team"),
        "a lowercase RFC 1123 label must consist of"
    ));
    assert!(has(
        &validate_name("", "Namespace", &"a".repeat(64)),
        "must be no more than 63 characters"
    ));
    assert!(has(
        &validate_name("apps", "StatefulSet", "db.x"),
        "must not contain dots"
    ));
    // Services: DNS-1035 labels (no leading digit).
    assert!(validate_name("", "Service", "api").is_empty());
    assert_eq!(
        messages(&validate_name("", "Service", "1api")),
        vec!["metadata.name: Invalid value: \"1api\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
    );
    // RBAC: path segments, so uppercase and colons are fine.
    assert!(
        validate_name(
            "rbac.authorization.k8s.io",
            "ClusterRole",
            "system:Controller_X"
        )
        .is_empty()
    );
    assert_eq!(
        messages(&validate_name("rbac.authorization.k8s.io", "Role", "a/b%c")),
        vec![
            "metadata.name: Invalid value: \"a/b%c\": may not contain '/'".to_string(),
            "metadata.name: Invalid value: \"a/b%c\": may not contain '%'".to_string()
        ]
    );
    assert!(has(
        &validate_name("rbac.authorization.k8s.io", "RoleBinding", ".."),
        "may not be '..'"
    ));
    assert_eq!(
        messages(&validate_name("", "Pod", "")),
        vec!["metadata.name: Required value: name or generateName is required".to_string()]
    );
    assert!(dns1123_label_errors("ok-1").is_empty());
    assert!(!dns1123_label_errors("no_").is_empty());
    assert!(dns1123_subdomain_errors("a.b").is_empty());
    assert!(!dns1123_subdomain_errors("").is_empty());
}

#[test]
fn labels_and_annotations() {
    let meta = json!({"labels": {"app": "ok", "example.com/tier": "a_b.c", "bad key": "x", "k": "-bad"},
                      "annotations": {"Example.COM/Anything": "free text", "a/b/c": "x"}});
    let errs = validate_labels_and_annotations(&meta);
    assert!(has(
        &errs,
        "metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters"
    ));
    assert!(has(
        &errs,
        "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of"
    ));
    assert!(has(
        &errs,
        "metadata.annotations: Invalid value: \"a/b/c\": a qualified name must consist of"
    ));
    assert_eq!(errs.len(), 3, "{:?}", messages(&errs));
    let big = json!({"annotations": {"a": "x".repeat(TOTAL_ANNOTATION_SIZE)}});
    assert_eq!(
        messages(&validate_labels_and_annotations(&big)),
        vec!["metadata.annotations: Too long: may not be more than 262144 bytes".to_string()]
    );
    assert!(has(
        &validate_labels_and_annotations(&json!({"labels": {"a": 1}})),
        "metadata.labels[a]"
    ));
    assert!(has(
        &validate_labels_and_annotations(&json!({"labels": "x"})),
        "must be of type object"
    ));
    assert!(validate_labels_and_annotations(&json!({"labels": {"a": ""}})).is_empty());
    let fin = validate_finalizers(
        &json!({"finalizers": ["example.com/cleanup", "custom", "orphan", "foregroundDeletion"]}),
        true,
    );
    assert!(has(
        &fin,
        "name is neither a standard finalizer name nor is it fully qualified"
    ));
    assert!(has(&fin, "cannot be both set"));
    // Custom resources: only the qualified-name rule (the 4.5 Manila operator's finalizer).
    let cr = json!({"finalizers": ["finalizer.manila.csi.openshift.io"]});
    assert!(validate_finalizers(&cr, false).is_empty());
    assert!(!validate_finalizers(&cr, true).is_empty());
    assert!(!validate_finalizers(&json!({"finalizers": ["Bad_Name!"]}), false).is_empty());
}

#[test]
fn deployment_create_rules() {
    let ok = defaulted("apps", "Deployment", deployment());
    assert!(
        validate_create("apps", "Deployment", &ok).is_empty(),
        "{:?}",
        messages(&validate_create("apps", "Deployment", &ok))
    );

    let mut mismatch = deployment();
    mismatch["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let errs = validate_create(
        "apps",
        "Deployment",
        &defaulted("apps", "Deployment", mismatch),
    );
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.template.metadata.labels");
    assert_eq!(
        errs[0].detail,
        "`selector` does not match template `labels`"
    );

    let mut no_selector = deployment();
    no_selector["spec"]
        .as_object_mut()
        .map(|s| s.remove("selector"));
    let errs = validate_create(
        "apps",
        "Deployment",
        &defaulted("apps", "Deployment", no_selector),
    );
    assert!(has(&errs, "spec.selector: Required value"));
    assert!(has(&errs, "spec.template.metadata.labels: Invalid value"));

    let mut empty_sel = deployment();
    empty_sel["spec"]["selector"] = json!({});
    assert!(has(
        &validate_create(
            "apps",
            "Deployment",
            &defaulted("apps", "Deployment", empty_sel)
        ),
        "empty selector is invalid for deployment"
    ));

    let mut bad = deployment();
    bad["spec"]["template"]["spec"] = json!({
        "containers": [
            {"name": "Web", "ports": [{"containerPort": 70000}, {"containerPort": 0, "protocol": "ICMP"}],
             "volumeMounts": [{"name": "missing", "mountPath": "/x"}]},
            {"name": "Web", "image": "x"}
        ],
        "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
        "restartPolicy": "Never"
    });
    bad["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {}});
    let errs = validate_create("apps", "Deployment", &defaulted("apps", "Deployment", bad));
    for want in [
        "spec.template.spec.containers[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label",
        "spec.template.spec.containers[1].name: Duplicate value: \"Web\"",
        "spec.template.spec.containers[0].image: Required value",
        "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        "spec.template.spec.containers[0].ports[1].containerPort: Required value",
        "spec.template.spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
        "spec.template.spec.volumes[1].name: Duplicate value: \"v\"",
        "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
    ] {
        assert!(has(&errs, want), "missing {want}\n{:#?}", messages(&errs));
    }

    let mut no_containers = deployment();
    no_containers["spec"]["template"]["spec"]["containers"] = json!([]);
    assert!(has(
        &validate_create(
            "apps",
            "Deployment",
            &defaulted("apps", "Deployment", no_containers)
        ),
        "spec.template.spec.containers: Required value"
    ));

    let mut zero = deployment();
    zero["spec"]["strategy"] = json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}});
    zero["spec"]["replicas"] = json!(-1);
    let errs = validate_create("apps", "Deployment", &defaulted("apps", "Deployment", zero));
    assert!(has(
        &errs,
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
    ));
    assert!(has(
        &errs,
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    ));

    let mut template_label = deployment();
    template_label["spec"]["template"]["metadata"]["labels"]["bad key"] = json!("x");
    assert!(has(
        &validate_create(
            "apps",
            "Deployment",
            &defaulted("apps", "Deployment", template_label)
        ),
        "spec.template.labels: Invalid value: \"bad key\""
    ));
}

#[test]
fn daemon_set_rules() {
    let ds = json!({"spec": {"selector": {"matchLabels": {"app": "n"}},
        "template": {"metadata": {"labels": {"app": "n"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    let ok = defaulted("apps", "DaemonSet", ds.clone());
    assert!(
        validate_create("apps", "DaemonSet", &ok).is_empty(),
        "{:?}",
        messages(&validate_create("apps", "DaemonSet", &ok))
    );
    let mut both = ds.clone();
    both["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}});
    assert!(has(
        &validate_create("apps", "DaemonSet", &defaulted("apps", "DaemonSet", both)),
        "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"
    ));
    let mut mismatch = ds;
    mismatch["spec"]["selector"] =
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]});
    assert!(has(
        &validate_create(
            "apps",
            "DaemonSet",
            &defaulted("apps", "DaemonSet", mismatch)
        ),
        "`selector` does not match template `labels`"
    ));
}

#[test]
fn service_rules() {
    let ok = defaulted(
        "",
        "Service",
        json!({"spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
    );
    assert!(
        validate_create("", "Service", &ok).is_empty(),
        "{:?}",
        messages(&validate_create("", "Service", &ok))
    );
    let no_ports = defaulted("", "Service", json!({"spec": {}}));
    assert_eq!(
        messages(&validate_create("", "Service", &no_ports)),
        vec!["spec.ports: Required value".to_string()]
    );
    let headless = defaulted("", "Service", json!({"spec": {"clusterIP": "None"}}));
    assert!(validate_create("", "Service", &headless).is_empty());
    let ext = defaulted(
        "",
        "Service",
        json!({"spec": {"type": "ExternalName", "externalName": "db.example.com."}}),
    );
    assert!(
        validate_create("", "Service", &ext).is_empty(),
        "{:?}",
        messages(&validate_create("", "Service", &ext))
    );
    let ext_missing = defaulted("", "Service", json!({"spec": {"type": "ExternalName"}}));
    assert!(has(
        &validate_create("", "Service", &ext_missing),
        "spec.externalName: Required value"
    ));
    let dup = defaulted(
        "",
        "Service",
        json!({"spec": {"type": "Bogus", "ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "a"}, {"port": 0}]}}),
    );
    let errs = validate_create("", "Service", &dup);
    for want in [
        "spec.type: Unsupported value: \"Bogus\"",
        "spec.ports[1].name: Duplicate value: \"a\"",
        "spec.ports[1]: Duplicate value:",
        "spec.ports[2].name: Required value",
        "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive",
    ] {
        assert!(has(&errs, want), "missing {want}\n{:#?}", messages(&errs));
    }
    let node_port = defaulted(
        "",
        "Service",
        json!({"spec": {"ports": [{"port": 80, "nodePort": 30001}]}}),
    );
    assert!(has(
        &validate_create("", "Service", &node_port),
        "may not be used when `type` is 'ClusterIP'"
    ));
}

#[test]
fn config_map_and_secret_rules() {
    let cm = json!({"data": {"good.key": "v", "bad key": "v", "..x": "v"}});
    let errs = validate_create("", "ConfigMap", &cm);
    assert!(has(
        &errs,
        "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
    ));
    assert!(has(
        &errs,
        "data[..x]: Invalid value: \"..x\": must not start with '..'"
    ));
    assert_eq!(errs.len(), 2);
    let big = json!({"data": {"a": "x".repeat(MAX_SECRET_SIZE + 1)}});
    assert_eq!(
        messages(&validate_create("", "ConfigMap", &big)),
        vec![": Too long: may not be more than 1048576 bytes".to_string()]
    );
    let both = json!({"data": {"a": "x"}, "binaryData": {"a": "eA=="}});
    assert!(has(
        &validate_create("", "ConfigMap", &both),
        "duplicate of key present in binaryData"
    ));

    let secret = defaulted(
        "",
        "Secret",
        json!({"stringData": {"ok": "v"}, "data": {"bad/key": "eA=="}}),
    );
    let errs = validate_create("", "Secret", &secret);
    assert_eq!(errs.len(), 1, "{:?}", messages(&errs));
    assert_eq!(errs[0].field, "data[bad/key]");
    let tls = defaulted(
        "",
        "Secret",
        json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
    );
    assert_eq!(
        messages(&validate_create("", "Secret", &tls)),
        vec!["data[tls.key]: Required value".to_string()]
    );
    let bad_b64 = json!({"type": "Opaque", "data": {"a": "!!!"}});
    assert!(has(
        &validate_create("", "Secret", &bad_b64),
        "illegal base64 data at input byte 0"
    ));
    let big = json!({"data": {"a": base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_SECRET_SIZE + 1])}});
    assert!(has(
        &validate_create("", "Secret", &big),
        "data: Too long: may not be more than 1048576 bytes"
    ));
    let sa = json!({"type": "kubernetes.io/service-account-token"});
    assert!(has(
        &validate_create("", "Secret", &sa),
        "metadata.annotations[kubernetes.io/service-account.name]: Required value"
    ));
}

#[test]
fn storage_rules() {
    let sc = defaulted(
        "storage.k8s.io",
        "StorageClass",
        json!({"provisioner": "cinder.csi.openstack.org"}),
    );
    assert!(validate_create("storage.k8s.io", "StorageClass", &sc).is_empty());
    let bad = defaulted(
        "storage.k8s.io",
        "StorageClass",
        json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}),
    );
    let errs = validate_create("storage.k8s.io", "StorageClass", &bad);
    assert_eq!(
        messages(&errs),
        vec![
            "provisioner: Required value".to_string(),
            "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"".to_string(),
            "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"".to_string(),
        ]
    );
    let driver = defaulted(
        "storage.k8s.io",
        "CSIDriver",
        json!({"spec": {"fsGroupPolicy": "Sometimes"}}),
    );
    assert_eq!(
        messages(&validate_create("storage.k8s.io", "CSIDriver", &driver)),
        vec!["spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"".to_string()]
    );
    let undefaulted = json!({"spec": {}});
    assert!(has(
        &validate_create("storage.k8s.io", "CSIDriver", &undefaulted),
        "spec.attachedRequired: Required value"
    ));
}

#[test]
fn policy_rbac_network_lease_rules() {
    let pdb = defaulted(
        "policy",
        "PodDisruptionBudget",
        json!({"spec": {"minAvailable": 1, "maxUnavailable": "10%"}}),
    );
    assert!(has(
        &validate_create("policy", "PodDisruptionBudget", &pdb),
        "spec: Invalid value: {"
    ));
    assert!(has(
        &validate_create("policy", "PodDisruptionBudget", &pdb),
        "minAvailable and maxUnavailable cannot be both set"
    ));
    let pct = defaulted(
        "policy",
        "PodDisruptionBudget",
        json!({"spec": {"maxUnavailable": "150%"}}),
    );
    assert!(has(
        &validate_create("policy", "PodDisruptionBudget", &pct),
        "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"
    ));

    let role = json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}, {"nonResourceURLs": ["/x"], "verbs": ["get"]}]});
    let errs = validate_create("rbac.authorization.k8s.io", "Role", &role);
    assert_eq!(
        messages(&errs),
        vec![
            "rules[0].verbs: Required value: verbs must contain at least one value".to_string(),
            "rules[1].nonResourceURLs: Invalid value: [\"/x\"]: namespaced rules cannot apply to non-resource URLs".to_string(),
        ]
    );
    assert!(
        validate_create(
            "rbac.authorization.k8s.io",
            "ClusterRole",
            &json!({"rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]})
        )
        .is_empty()
    );
    let rb = defaulted(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        json!({"roleRef": {}, "subjects": [{"kind": "Robot", "name": "r"}]}),
    );
    let errs = validate_create("rbac.authorization.k8s.io", "RoleBinding", &rb);
    assert!(has(&errs, "roleRef.kind: Unsupported value: \"\""));
    assert!(has(&errs, "roleRef.name: Required value"));
    assert!(has(&errs, "subjects[0].kind: Unsupported value: \"Robot\""));
    let crb = defaulted(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        json!({"roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
    );
    assert_eq!(
        messages(&validate_create(
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            &crb
        )),
        vec!["subjects[0].namespace: Required value".to_string()]
    );

    let np = defaulted(
        "networking.k8s.io",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Sideways"]}}),
    );
    assert_eq!(
        messages(&validate_create("networking.k8s.io", "NetworkPolicy", &np)),
        vec!["spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"".to_string()]
    );
    let lease = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1, "renewTime": "yesterday"}});
    let errs = validate_create("coordination.k8s.io", "Lease", &lease);
    assert!(has(
        &errs,
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    ));
    assert!(has(
        &errs,
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
    ));
    assert!(has(&errs, "spec.renewTime"));
    let good = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 137, "renewTime": "2025-01-01T00:00:00.000000Z"}});
    assert!(validate_create("coordination.k8s.io", "Lease", &good).is_empty());
}

#[test]
fn pod_spec_details() {
    let pod = defaulted(
        "",
        "Pod",
        json!({"spec": {
            "containers": [{
                "name": "c", "image": "i:1",
                "env": [{"name": "A=B"}, {"name": ""},
                        {"name": "X", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s"}}}],
                "livenessProbe": {"periodSeconds": -1, "successThreshold": 2},
                "readinessProbe": {"httpGet": {"port": "Not_A_Name"}, "exec": {"command": ["true"]}},
                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                "volumeMounts": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}]
            }],
            "initContainers": [{"name": "c", "image": "i:1", "readinessProbe": {"exec": {"command": ["x"]}}}],
            "volumes": [{"name": "v", "hostPath": {"path": "/x", "type": "Weird"}},
                        {"name": "w", "secret": {"defaultMode": 4095}}],
            "tolerations": [{"operator": "Exists", "value": "x"}, {"key": "k", "operator": "Sometimes"}],
            "dnsPolicy": "Cloud",
            "activeDeadlineSeconds": 0
        }}),
    );
    let errs = validate_create("", "Pod", &pod);
    for want in [
        "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
        "spec.containers[0].env[1].name: Required value",
        "spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
        "spec.containers[0].env[2].valueFrom.secretKeyRef.key: Required value",
        "spec.containers[0].livenessProbe: Required value: must specify a handler type",
        "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        "spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
        "spec.containers[0].readinessProbe.httpGet.port: Invalid value: \"Not_A_Name\"",
        "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
        "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
        "spec.initContainers[0].name: Duplicate value: \"c\"",
        "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
        "spec.volumes[0].hostPath.type: Unsupported value: \"Weird\"",
        "spec.volumes[1].secret.secretName: Required value",
        "spec.volumes[1].secret.defaultMode: Invalid value: 4095: must be a number between 0 and 0777 (octal), both inclusive",
        "spec.tolerations[0].operator: Invalid value: {",
        "spec.tolerations[1].operator: Unsupported value: \"Sometimes\": supported values: \"Equal\", \"Exists\"",
        "spec.dnsPolicy: Unsupported value: \"Cloud\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
        "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
    ] {
        assert!(has(&errs, want), "missing {want}\n{:#?}", messages(&errs));
    }
}

#[test]
fn namespace_event_and_aggregation_rules() {
    let ns = json!({"spec": {"finalizers": ["kubernetes", "custom", "example.com/x"]}});
    assert_eq!(
        messages(&validate_create("", "Namespace", &ns)),
        vec!["spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified".to_string()]
    );
    let ev = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}});
    assert_eq!(
        messages(&validate_create("", "Event", &ev)),
        vec![
            "involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"
                .to_string()
        ]
    );
    let ok = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"}});
    assert!(validate_create("", "Event", &ok).is_empty());
    let series = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"}, "eventTime": "2025-01-01T00:00:00.000000Z"});
    let errs = validate_create("", "Event", &series);
    assert!(has(&errs, "reportingComponent: Required value"));
    assert!(has(&errs, "action: Required value"));
    let agg = json!({"aggregationRule": {}});
    assert_eq!(
        messages(&validate_create("rbac.authorization.k8s.io", "ClusterRole", &agg)),
        vec!["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil".to_string()]
    );
    let sel = json!({"spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}, {"key": "b", "operator": "In"}, {"key": "c", "operator": "Near"}]}}});
    let errs = validate_create(
        "networking.k8s.io",
        "NetworkPolicy",
        &defaulted("networking.k8s.io", "NetworkPolicy", sel),
    );
    assert!(has(
        &errs,
        "spec.podSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    ));
    assert!(has(
        &errs,
        "spec.podSelector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
    ));
    assert!(has(
        &errs,
        "spec.podSelector.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator"
    ));
}

#[test]
fn immutable_fields_on_update() {
    let old = defaulted("apps", "Deployment", deployment());
    let mut new = old.clone();
    new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "x"}});
    new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("x");
    let errs = validate_update("apps", "Deployment", &old, &new);
    assert_eq!(errs.len(), 1, "{:?}", messages(&errs));
    assert_eq!(errs[0].field, "spec.selector");
    assert_eq!(errs[0].detail, "field is immutable");
    // Semantically equal selectors are not a change.
    let mut same = old.clone();
    same["spec"]["selector"]["matchExpressions"] = json!([]);
    same["spec"]["replicas"] = json!(3);
    assert!(validate_update("apps", "Deployment", &old, &same).is_empty());

    let ds_old = defaulted(
        "apps",
        "DaemonSet",
        json!({"spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b", "c": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}),
    );
    let mut ds_new = ds_old.clone();
    ds_new["spec"]["selector"] = json!({"matchLabels": {"c": "d"}});
    assert_eq!(
        messages(&validate_update("apps", "DaemonSet", &ds_old, &ds_new))[0]
            .split(": ")
            .next(),
        Some("spec.selector")
    );

    let sts_old = defaulted(
        "apps",
        "StatefulSet",
        json!({"spec": {"serviceName": "db", "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}),
    );
    let mut sts_new = sts_old.clone();
    sts_new["spec"]["replicas"] = json!(5);
    assert!(validate_update("apps", "StatefulSet", &sts_old, &sts_new).is_empty());
    sts_new["spec"]["serviceName"] = json!("other");
    assert!(has(
        &validate_update("apps", "StatefulSet", &sts_old, &sts_new),
        "spec: Forbidden: updates to statefulset spec for fields other than"
    ));

    let svc_old = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"], "ports": [{"port": 80}]}});
    let svc_old = defaulted("", "Service", svc_old);
    let mut svc_new = svc_old.clone();
    svc_new["spec"]["clusterIP"] = json!("10.96.0.6");
    svc_new["spec"]["clusterIPs"] = json!(["10.96.0.6"]);
    assert_eq!(
        messages(&validate_update("", "Service", &svc_old, &svc_new)),
        vec![
            "spec.clusterIPs[0]: Invalid value: [\"10.96.0.6\"]: may not change once set"
                .to_string()
        ]
    );

    let sec_old = json!({"type": "Opaque", "data": {"a": "eA=="}, "immutable": true});
    let mut sec_new = sec_old.clone();
    sec_new["data"]["a"] = json!("eQ==");
    sec_new["immutable"] = json!(false);
    sec_new["type"] = json!("kubernetes.io/basic-auth");
    let errs = validate_update("", "Secret", &sec_old, &sec_new);
    for want in [
        "type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ] {
        assert!(has(&errs, want), "missing {want}: {:?}", messages(&errs));
    }
    let mutable_old = json!({"type": "Opaque", "data": {"a": "eA=="}});
    let mut mutable_new = mutable_old.clone();
    mutable_new["data"]["a"] = json!("eQ==");
    assert!(validate_update("", "Secret", &mutable_old, &mutable_new).is_empty());

    let cm_old = json!({"data": {"a": "1"}, "binaryData": {"b": "eA=="}, "immutable": true});
    let mut cm_new = cm_old.clone();
    cm_new["binaryData"] = json!({});
    assert_eq!(
        messages(&validate_update("", "ConfigMap", &cm_old, &cm_new)),
        vec!["binaryData: Forbidden: field is immutable when `immutable` is set".to_string()]
    );

    let sc_old = defaulted(
        "storage.k8s.io",
        "StorageClass",
        json!({"provisioner": "a.b", "parameters": {"type": "ssd"}}),
    );
    let mut sc_new = sc_old.clone();
    sc_new["provisioner"] = json!("c.d");
    sc_new["parameters"] = json!({"type": "hdd"});
    sc_new["reclaimPolicy"] = json!("Retain");
    sc_new["volumeBindingMode"] = json!("WaitForFirstConsumer");
    sc_new["allowVolumeExpansion"] = json!(true);
    assert_eq!(
        messages(&validate_update(
            "storage.k8s.io",
            "StorageClass",
            &sc_old,
            &sc_new
        )),
        vec![
            "parameters: Forbidden: updates to parameters are forbidden.".to_string(),
            "provisioner: Forbidden: updates to provisioner are forbidden.".to_string(),
            "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.".to_string(),
            "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable"
                .to_string(),
        ]
    );

    let d_old = defaulted("storage.k8s.io", "CSIDriver", json!({"spec": {}}));
    let mut d_new = d_old.clone();
    d_new["spec"]["attachRequired"] = json!(false);
    d_new["spec"]["volumeLifecycleModes"] = json!(["Persistent", "Ephemeral"]);
    // Mutable since v1.28 and earlier: podInfoOnMount, fsGroupPolicy, storageCapacity, ...
    d_new["spec"]["podInfoOnMount"] = json!(true);
    d_new["spec"]["fsGroupPolicy"] = json!("File");
    d_new["spec"]["storageCapacity"] = json!(true);
    d_new["spec"]["requiresRepublish"] = json!(true);
    d_new["spec"]["seLinuxMount"] = json!(true);
    assert_eq!(
        messages(&validate_update("storage.k8s.io", "CSIDriver", &d_old, &d_new)),
        vec![
            "spec.attachedRequired: Invalid value: false: field is immutable".to_string(),
            "spec.volumeLifecycleModes: Invalid value: [\"Persistent\",\"Ephemeral\"]: field is immutable".to_string(),
        ]
    );

    let rb_old = defaulted(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        json!({"roleRef": {"kind": "Role", "name": "a"}}),
    );
    let mut rb_new = rb_old.clone();
    rb_new["roleRef"]["name"] = json!("b");
    let errs = validate_update("rbac.authorization.k8s.io", "RoleBinding", &rb_old, &rb_new);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "roleRef");
    assert_eq!(errs[0].detail, "cannot change roleRef");

    // PodDisruptionBudget specs are mutable in policy/v1.
    let pdb_old = defaulted(
        "policy",
        "PodDisruptionBudget",
        json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}}),
    );
    let mut pdb_new = pdb_old.clone();
    pdb_new["spec"]["selector"] = json!({"matchLabels": {"a": "c"}});
    assert!(validate_update("policy", "PodDisruptionBudget", &pdb_old, &pdb_new).is_empty());
}

#[test]
fn malformed_input_is_reported_not_panicked_on() {
    let errs = validate_create("apps", "Deployment", &json!({"spec": "a string"}));
    assert_eq!(
        messages(&errs),
        vec!["spec: Invalid value: \"string\": must be of type object".to_string()]
    );
    let errs = validate_create(
        "apps",
        "Deployment",
        &json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": {"name": "x"}}}}}),
    );
    assert!(
        has(
            &errs,
            "spec.template.spec.containers: Invalid value: \"object\": must be of type array"
        ),
        "{:?}",
        messages(&errs)
    );
    let errs = validate_create(
        "",
        "Pod",
        &json!({"spec": {"containers": [1, {"name": 5, "image": "i", "ports": "x"}]}}),
    );
    assert!(has(
        &errs,
        "spec.containers[0]: Invalid value: \"integer\": must be of type object"
    ));
    assert!(has(
        &errs,
        "spec.containers[1].name: Invalid value: \"integer\": must be of type string"
    ));
    assert!(has(
        &errs,
        "spec.containers[1].ports: Invalid value: \"string\": must be of type array"
    ));
    assert!(has(
        &validate_create("", "Service", &json!([1])),
        ": Invalid value: \"array\": must be of type object"
    ));

    let kinds = [
        ("apps", "Deployment"),
        ("apps", "DaemonSet"),
        ("apps", "StatefulSet"),
        ("apps", "ReplicaSet"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "Service"),
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Namespace"),
        ("", "Event"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("policy", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("coordination.k8s.io", "Lease"),
    ];
    let shapes = [
        json!(null),
        json!("s"),
        json!(1),
        json!([]),
        json!({}),
        json!({"spec": [], "data": 1, "rules": {}, "roleRef": "x", "subjects": "x", "metadata": 1, "status": 1}),
        json!({"spec": {"selector": "x", "template": 1, "ports": [1, "x", {"port": "a", "targetPort": []}],
            "containers": [{"resources": {"limits": {"cpu": []}, "requests": 1}, "env": [1, {"valueFrom": 1}],
            "livenessProbe": {"httpGet": 1}, "volumeMounts": {}}], "volumes": [{"hostPath": 1}],
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": []}},
            "updateStrategy": {"type": 1}, "versions": [1], "names": "x", "policyTypes": [1, 2, 3],
            "minAvailable": [], "tokenRequests": [{"audience": 1}], "volumeLifecycleModes": "x",
            "finalizers": [1], "ingress": [{"ports": [{"port": {}}], "from": [1, {}]}]},
            "data": {"a": 1, "b": "***"}, "binaryData": {"c": 2}, "stringData": {"d": 3},
            "rules": [{"verbs": "x"}], "subjects": [1], "provisioner": 1, "parameters": {"a": 1},
            "involvedObject": 1, "eventTime": "x", "reportingComponent": 1}),
    ];
    for (group, kind) in kinds {
        for shape in &shapes {
            let _ = validate_create(group, kind, shape);
            for other in &shapes {
                let _ = validate_update(group, kind, shape, other);
            }
        }
    }
}
