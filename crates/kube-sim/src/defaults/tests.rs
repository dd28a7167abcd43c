//! Tests of the built-in kinds' defaults, compared with what kube-apiserver returns.

use super::dispatch::{
    allocate_cluster_ip, apply_defaults, prepare_for_create, prepare_for_update,
};
use super::quantity::{format_quantity, parse_quantity};
use serde_json::{Value, json};

fn defaulted(group: &str, kind: &str, obj: Value) -> Value {
    let mut obj = obj;
    apply_defaults(group, kind, &mut obj);
    obj
}

#[test]
fn minimal_deployment_reads_back_with_every_default() {
    let obj = defaulted(
        "apps",
        "Deployment",
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
                }
            }
        }),
    );
    let expected = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "web", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            }
        },
        "status": {}
    });
    assert_eq!(obj, expected);
    // Idempotent: a second pass changes nothing.
    assert_eq!(defaulted("apps", "Deployment", obj.clone()), obj);
}

#[test]
fn deployment_keeps_explicit_values_and_recreate_gets_no_rolling_update() {
    let obj = defaulted(
        "apps",
        "Deployment",
        json!({"spec": {"replicas": 0, "revisionHistoryLimit": 0, "strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(obj["spec"]["replicas"], json!(0));
    assert_eq!(obj["spec"]["revisionHistoryLimit"], json!(0));
    assert_eq!(obj["spec"]["strategy"], json!({"type": "Recreate"}));
    let obj = defaulted(
        "apps",
        "Deployment",
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
    );
    assert_eq!(
        obj["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": 1, "maxUnavailable": "25%"})
    );
}

#[test]
fn image_pull_policy_follows_the_tag() {
    let cases = [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("registry.example.com:5000/team/app", "Always"),
        ("registry.example.com:5000/team/app:v1", "IfNotPresent"),
        ("nginx:1.27", "IfNotPresent"),
        (
            "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "IfNotPresent",
        ),
        (
            "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "Always",
        ),
        ("NGINX", "IfNotPresent"),
        ("", "IfNotPresent"),
    ];
    for (image, policy) in cases {
        let obj = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": image}]}}),
        );
        assert_eq!(
            obj["spec"]["containers"][0]["imagePullPolicy"],
            json!(policy),
            "{image}"
        );
    }
    let obj = defaulted(
        "",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Never"}]}}),
    );
    assert_eq!(
        obj["spec"]["containers"][0]["imagePullPolicy"],
        json!("Never")
    );
}

#[test]
fn probes_volumes_and_env_get_their_defaults() {
    let obj = defaulted(
        "apps",
        "DaemonSet",
        json!({"spec": {"template": {"spec": {
            "containers": [{
                "name": "c", "image": "i:1",
                "livenessProbe": {"httpGet": {"port": 8080}},
                "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
                "lifecycle": {"preStop": {"httpGet": {"port": 1, "path": "/stop"}}},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
            }],
            "volumes": [
                {"name": "a", "secret": {"secretName": "s"}},
                {"name": "b", "configMap": {"name": "c"}},
                {"name": "c", "hostPath": {"path": "/dev"}},
                {"name": "d"},
                {"name": "e", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}},
                    {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
                {"name": "f", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}
            ]
        }}}}),
    );
    let spec = &obj["spec"]["template"]["spec"];
    let c = &spec["containers"][0];
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
               "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["readinessProbe"]["periodSeconds"], json!(5));
    assert_eq!(c["readinessProbe"]["grpc"]["service"], json!(""));
    assert_eq!(
        c["lifecycle"]["preStop"]["httpGet"],
        json!({"port": 1, "path": "/stop", "scheme": "HTTP"})
    );
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"],
        json!("v1")
    );
    let vols = &spec["volumes"];
    assert_eq!(vols[0]["secret"]["defaultMode"], json!(420));
    assert_eq!(vols[1]["configMap"]["defaultMode"], json!(420));
    assert_eq!(vols[2]["hostPath"]["type"], json!(""));
    assert_eq!(vols[3]["emptyDir"], json!({}));
    assert_eq!(vols[4]["projected"]["defaultMode"], json!(420));
    assert_eq!(
        vols[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        json!(3600)
    );
    assert_eq!(
        vols[4]["projected"]["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        json!("v1")
    );
    assert_eq!(vols[5]["downwardAPI"]["defaultMode"], json!(420));
    assert_eq!(
        vols[5]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        json!("v1")
    );
    assert_eq!(
        obj["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(obj["spec"]["revisionHistoryLimit"], json!(10));
    assert_eq!(
        obj["status"],
        json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
    );
}

#[test]
fn service_account_alias_is_written_back() {
    let obj = defaulted(
        "apps",
        "Deployment",
        json!({"spec": {"template": {"spec": {"serviceAccountName": "sa", "containers": []}}}}),
    );
    assert_eq!(
        obj["spec"]["template"]["spec"]["serviceAccount"],
        json!("sa")
    );
    let obj = defaulted(
        "",
        "Pod",
        json!({"spec": {"serviceAccount": "old", "containers": []}}),
    );
    assert_eq!(obj["spec"]["serviceAccountName"], json!("old"));
}

#[test]
fn quantities_are_canonicalised() {
    let cases = [
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1000m", "1"),
        ("100m", "100m"),
        ("1500m", "1500m"),
        ("1000", "1k"),
        ("1000M", "1G"),
        ("128974848", "128974848"),
        ("129e6", "129e6"),
        ("1e3", "1e3"),
        ("0.1Ki", "102400m"),
        ("512Ki", "512Ki"),
        ("0.0001", "1m"),
        ("0", "0"),
        ("-1500m", "-1500m"),
    ];
    for (input, want) in cases {
        let q = parse_quantity(input).unwrap_or_else(|| panic!("parse {input}"));
        assert_eq!(format_quantity(q), want, "{input}");
    }
    for bad in ["", "abc", "1..2", "1Zi", "1e", "."] {
        assert_eq!(parse_quantity(bad), None, "{bad}");
    }
    let obj = defaulted(
        "",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "i:1",
            "resources": {"limits": {"cpu": 1, "memory": "1024Mi"}}}]}}),
    );
    let res = &obj["spec"]["containers"][0]["resources"];
    assert_eq!(res["limits"], json!({"cpu": "1", "memory": "1Gi"}));
    // Pods (not templates) copy limits into missing requests.
    assert_eq!(res["requests"], json!({"cpu": "1", "memory": "1Gi"}));
    assert_eq!(obj["status"]["qosClass"], json!("Guaranteed"));
}

#[test]
fn pod_defaults_and_qos() {
    let obj = defaulted(
        "",
        "Pod",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    assert_eq!(obj["spec"]["enableServiceLinks"], json!(true));
    assert_eq!(
        obj["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    let obj = defaulted(
        "",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "i:1", "resources": {"requests": {"cpu": "100m"}}}]}}),
    );
    assert_eq!(obj["status"]["qosClass"], json!("Burstable"));
    let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "i:1"}]}});
    apply_defaults("", "Pod", &mut pod);
    prepare_for_create("", "Pod", &mut pod);
    assert_eq!(pod["spec"]["serviceAccountName"], json!("default"));
    assert_eq!(pod["spec"]["serviceAccount"], json!("default"));
    assert_eq!(pod["spec"]["priority"], json!(0));
    assert_eq!(
        pod["spec"]["preemptionPolicy"],
        json!("PreemptLowerPriority")
    );
    assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        pod["spec"]["tolerations"][0]["tolerationSeconds"],
        json!(300)
    );
    // Host networking copies container ports into host ports.
    let obj = defaulted(
        "",
        "Pod",
        json!({"spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 9000}]}]}}),
    );
    assert_eq!(
        obj["spec"]["containers"][0]["ports"][0]["hostPort"],
        json!(9000)
    );
}

#[test]
fn secret_string_data_is_folded_into_data() {
    let obj = defaulted(
        "",
        "Secret",
        json!({"metadata": {"name": "s"}, "data": {"a": "b2xk", "keep": "eA=="}, "stringData": {"a": "new", "b": "hello"}}),
    );
    assert_eq!(
        obj["data"],
        json!({"a": "bmV3", "keep": "eA==", "b": "aGVsbG8="})
    );
    assert!(obj.get("stringData").is_none());
    assert_eq!(obj["type"], json!("Opaque"));
    let obj = defaulted(
        "",
        "Secret",
        json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": "x"}}),
    );
    assert_eq!(obj["data"], json!({"tls.crt": "eA=="}));
    assert_eq!(obj["type"], json!("kubernetes.io/tls"));
    // Malformed stringData is left for validation.
    let obj = defaulted("", "Secret", json!({"stringData": {"a": 1}}));
    assert_eq!(obj["stringData"], json!({"a": 1}));
    let obj = defaulted("", "Secret", json!({"stringData": "nope"}));
    assert_eq!(obj["stringData"], json!("nope"));
}

#[test]
fn service_defaults_and_allocation() {
    let mut svc = json!({"metadata": {"name": "s"}, "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}});
    apply_defaults("", "Service", &mut svc);
    prepare_for_create("", "Service", &mut svc);
    assert!(allocate_cluster_ip(&mut svc, 7));
    assert_eq!(
        svc["spec"],
        json!({
            "selector": {"app": "a"},
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}, {"port": 443, "protocol": "TCP", "targetPort": "https"}],
            "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
            "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
            "clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"]
        })
    );
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    let mut big = json!({"spec": {}});
    assert!(allocate_cluster_ip(&mut big, 300));
    assert_eq!(big["spec"]["clusterIP"], json!("10.96.1.44"));

    let mut headless = json!({"spec": {"clusterIP": "None", "ports": [{"port": 1}]}});
    apply_defaults("", "Service", &mut headless);
    prepare_for_create("", "Service", &mut headless);
    assert!(!allocate_cluster_ip(&mut headless, 1));
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(
        headless["spec"]["ipFamilyPolicy"],
        json!("RequireDualStack")
    );
    assert_eq!(headless["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));

    let mut ext = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
    apply_defaults("", "Service", &mut ext);
    prepare_for_create("", "Service", &mut ext);
    assert!(!allocate_cluster_ip(&mut ext, 1));
    assert!(ext["spec"].get("clusterIP").is_none());
    assert!(ext["spec"].get("ipFamilyPolicy").is_none());
    assert!(ext["spec"].get("internalTrafficPolicy").is_none());

    let lb = defaulted(
        "",
        "Service",
        json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP"}}),
    );
    assert_eq!(lb["spec"]["externalTrafficPolicy"], json!("Cluster"));
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], json!(true));
    assert_eq!(
        lb["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
}

#[test]
fn service_update_carries_allocated_values() {
    let old = json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
        "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
        "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}});
    let mut new = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    apply_defaults("", "Service", &mut new);
    prepare_for_update("", "Service", &old, &mut new);
    assert_eq!(new["spec"]["clusterIP"], json!("10.96.0.9"));
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.9"]));
    assert_eq!(new["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(new["spec"]["ports"][0]["nodePort"], json!(30080));
    // A changed singular with the old plural rewrites the plural, for validation to reject.
    let mut changed = json!({"spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.9"]}});
    prepare_for_update("", "Service", &old, &mut changed);
    assert_eq!(changed["spec"]["clusterIPs"], json!(["10.96.0.10"]));
}

#[test]
fn namespace_defaults_and_finalizers() {
    let mut ns = json!({"metadata": {"name": "team-a", "labels": {"x": "y"}}});
    apply_defaults("", "Namespace", &mut ns);
    prepare_for_create("", "Namespace", &mut ns);
    assert_eq!(
        ns["metadata"]["labels"],
        json!({"x": "y", "kubernetes.io/metadata.name": "team-a"})
    );
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    // The label is enforced on every write, the finalizer only on create.
    let mut update =
        json!({"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "other"}}});
    apply_defaults("", "Namespace", &mut update);
    prepare_for_update("", "Namespace", &json!({"spec": {}}), &mut update);
    assert_eq!(
        update["metadata"]["labels"]["kubernetes.io/metadata.name"],
        json!("team-a")
    );
    assert!(update["spec"].get("finalizers").is_none());
}

#[test]
fn storage_kinds() {
    let sc = defaulted(
        "storage.k8s.io",
        "StorageClass",
        json!({"provisioner": "p"}),
    );
    assert_eq!(sc["reclaimPolicy"], json!("Delete"));
    assert_eq!(sc["volumeBindingMode"], json!("Immediate"));
    let d = defaulted(
        "storage.k8s.io",
        "CSIDriver",
        json!({"metadata": {"name": "d"}, "spec": {"attachRequired": false}}),
    );
    assert_eq!(
        d["spec"],
        json!({"attachRequired": false, "podInfoOnMount": false, "storageCapacity": false,
               "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
               "requiresRepublish": false, "seLinuxMount": false})
    );
}

#[test]
fn policy_rbac_network_lease_crd() {
    let pdb = defaulted(
        "policy",
        "PodDisruptionBudget",
        json!({"spec": {"minAvailable": 1}}),
    );
    assert_eq!(pdb["spec"], json!({"minAvailable": 1}));
    assert_eq!(
        pdb["status"],
        json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
    );

    let rb = defaulted(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        json!({"roleRef": {"kind": "Role", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "User", "name": "u"}]}),
    );
    assert_eq!(
        rb["roleRef"]["apiGroup"],
        json!("rbac.authorization.k8s.io")
    );
    assert!(rb["subjects"][0].get("apiGroup").is_none(), "{rb}");
    assert_eq!(
        rb["subjects"][1]["apiGroup"],
        json!("rbac.authorization.k8s.io")
    );

    let np = defaulted(
        "networking.k8s.io",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
    let np = defaulted(
        "networking.k8s.io",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        np["spec"]["egress"][0]["ports"][0]["protocol"],
        json!("TCP")
    );

    let lease = defaulted(
        "coordination.k8s.io",
        "Lease",
        json!({"spec": {"holderIdentity": "a", "strategy": "x"}}),
    );
    assert_eq!(lease["spec"], json!({"holderIdentity": "a"}));

    let crd = defaulted(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        json!({"spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
               "versions": [{"name": "v1", "served": true, "storage": true}]}}),
    );
    assert_eq!(crd["spec"]["names"]["singular"], json!("widget"));
    assert_eq!(crd["spec"]["names"]["listKind"], json!("WidgetList"));
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(
        crd["status"],
        json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": ["v1"]})
    );
}

#[test]
fn stateful_set_and_node() {
    let sts = defaulted(
        "apps",
        "StatefulSet",
        json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
            "spec": {"resources": {"requests": {"storage": "1024Mi"}}}}]}}),
    );
    assert_eq!(sts["spec"]["podManagementPolicy"], json!("OrderedReady"));
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        sts["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    let pvc = &sts["spec"]["volumeClaimTemplates"][0];
    assert_eq!(pvc["kind"], json!("PersistentVolumeClaim"));
    assert_eq!(pvc["spec"]["volumeMode"], json!("Filesystem"));
    assert_eq!(
        pvc["spec"]["resources"]["requests"]["storage"],
        json!("1Gi")
    );
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));
    let explicit = defaulted(
        "apps",
        "StatefulSet",
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
    );
    assert_eq!(
        explicit["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate"})
    );

    let node = defaulted(
        "",
        "Node",
        json!({"status": {"capacity": {"cpu": "4", "memory": "8192Mi"}}}),
    );
    assert_eq!(
        node["status"]["allocatable"],
        json!({"cpu": "4", "memory": "8Gi"})
    );
    assert_eq!(
        node["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], json!(""));
}

#[test]
fn smaller_kinds() {
    let pc = defaulted("scheduling.k8s.io", "PriorityClass", json!({"value": 10}));
    assert_eq!(pc["preemptionPolicy"], json!("PreemptLowerPriority"));
    let pv = defaulted(
        "",
        "PersistentVolume",
        json!({"spec": {"capacity": {"storage": "1024Gi"}}}),
    );
    assert_eq!(
        pv["spec"],
        json!({"capacity": {"storage": "1Ti"}, "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"})
    );
    assert_eq!(pv["status"], json!({"phase": "Pending"}));
    let ep = defaulted(
        "",
        "Endpoints",
        json!({"subsets": [{"ports": [{"port": 1}]}]}),
    );
    assert_eq!(ep["subsets"][0]["ports"][0]["protocol"], json!("TCP"));
    let rs = defaulted("apps", "ReplicaSet", json!({"spec": {}}));
    assert_eq!(rs["spec"]["replicas"], json!(1));
    assert_eq!(rs["status"], json!({"replicas": 0}));
    let pt = defaulted(
        "",
        "PodTemplate",
        json!({"template": {"spec": {"containers": []}}}),
    );
    assert_eq!(pt["template"]["spec"]["restartPolicy"], json!("Always"));
    // The counter wraps inside 10.96.0.0/12 and never yields the network address.
    let mut svc = json!({"spec": {}});
    assert!(allocate_cluster_ip(&mut svc, 0));
    assert_ne!(svc["spec"]["clusterIP"], json!("10.96.0.0"));
    let mut chosen = json!({"spec": {"clusterIP": "10.96.5.5"}});
    assert!(!allocate_cluster_ip(&mut chosen, 1));
    assert_eq!(chosen["spec"]["clusterIPs"], json!(["10.96.5.5"]));
}

#[test]
fn malformed_input_never_panics_and_is_left_alone() {
    let kinds = [
        ("apps", "Deployment"),
        ("apps", "DaemonSet"),
        ("apps", "StatefulSet"),
        ("apps", "ReplicaSet"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "Service"),
        ("", "Namespace"),
        ("", "Secret"),
        ("", "Node"),
        ("", "PersistentVolumeClaim"),
        ("", "PersistentVolume"),
        ("", "Endpoints"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("policy", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("coordination.k8s.io", "Lease"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("scheduling.k8s.io", "PriorityClass"),
    ];
    let shapes = [
        json!("a string"),
        json!(null),
        json!([1, 2]),
        json!({"spec": "a string", "status": 3, "metadata": []}),
        json!({"spec": {"template": "x", "selector": 1, "containers": {"a": 1}, "ports": "x", "type": 7}}),
        json!({"spec": {"template": {"metadata": 5, "spec": {"containers": "nope", "volumes": [1, "x", null]}}}}),
        json!({"spec": {"containers": [1, {"image": 5, "ports": [null, {"protocol": 3}], "resources": "x",
            "livenessProbe": "x", "env": [{"valueFrom": 1}]}], "volumes": {"a": 1}}}),
        json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "abc", "memory": []}}}]}}),
        json!({"data": "x", "stringData": {"a": "b"}}),
        json!({"spec": {"names": 1, "versions": "x", "conversion": 3}, "status": {"storedVersions": 4}}),
        json!({"spec": {"strategy": "x", "updateStrategy": [1]}}),
    ];
    for (group, kind) in kinds {
        for shape in &shapes {
            let mut obj = shape.clone();
            apply_defaults(group, kind, &mut obj);
            prepare_for_create(group, kind, &mut obj);
            let mut upd = shape.clone();
            prepare_for_update(group, kind, shape, &mut upd);
            let _ = allocate_cluster_ip(&mut obj, 1);
        }
    }
    // Wrong types stay as they are for validation to report.
    let obj = defaulted("apps", "Deployment", json!({"spec": "a string"}));
    assert_eq!(obj["spec"], json!("a string"));
    let obj = defaulted("", "Pod", json!({"spec": {"containers": "nope"}}));
    assert_eq!(obj["spec"]["containers"], json!("nope"));
    let obj = defaulted(
        "",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "abc"}}}]}}),
    );
    assert_eq!(
        obj["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        json!("abc")
    );
    let obj = defaulted("", "Secret", json!({"data": "x", "stringData": {"a": "b"}}));
    assert_eq!(obj["data"], json!("x"));
    assert_eq!(obj["stringData"], json!({"a": "b"}));
    // Unknown kinds are untouched.
    let obj = defaulted("example.com", "Widget", json!({"spec": {}}));
    assert_eq!(obj, json!({"spec": {}}));
}
