//! End-to-end test of the plain-Kubernetes install: a kube-sim cluster with no OpenShift API at
//! all (no OpenShift CRD, no Infrastructure, no ClusterOperator, no service-ca, no SCC; only
//! Pod Security admission by namespace labels), RBAC enforced, and control-plane nodes labelled
//! as Kubernetes 1.24+ labels them. The test installs as a user following
//! docs/install-kubernetes.md would: `kubectl apply -k manifests/kubernetes` (the files the
//! kustomization lists, applied as kubectl applies them) and the two credentials Secrets. From
//! there kube-sim runs both operator pods as processes of this crate's binary, under their
//! service accounts; they create their ClusterCSIDrivers and install the drivers. The test only
//! watches, then removes everything with `kubectl delete -k`. The credentials come from a
//! chart-style cloud.conf through `csi-operator convert-cloud-conf`.

mod common;

use std::collections::BTreeMap;

use common::chain::*;
use common::kubernetes::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ObjectMeta, PostParams};
use kube_sim::ProcessConfig;
use serde_json::Value;
use testbed::Settings;

const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const MANILA_NS: &str = "openshift-manila-csi-driver";

/// A Secret with `clouds.yaml` (and the cloud's CA, when it has one), as the install guide
/// has the user create it.
fn credentials(name: &str, clouds_yaml: &str, ca: Option<&str>) -> Secret {
    let mut data = BTreeMap::from([(
        "clouds.yaml".to_owned(),
        ByteString(clouds_yaml.as_bytes().to_vec()),
    )]);
    if let Some(ca) = ca {
        data.insert("cacert".to_owned(), ByteString(ca.as_bytes().to_vec()));
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// `csi-operator convert-cloud-conf` with `cloud_conf` on stdin: its stdout, or its stderr.
fn convert_cloud_conf(cloud_conf: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .arg("convert-cloud-conf")
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("csi-operator runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(cloud_conf.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("csi-operator exits");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("UTF-8"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn a_malformed_cloud_conf_is_refused_without_its_secrets() {
    for (conf, want) in [
        (
            "[Global]\nusername = u\npassword = hunter2\n",
            "no auth-url",
        ),
        ("[Global\npassword = hunter2\n", "line 1"),
        ("", "no [Global] section"),
    ] {
        let err = convert_cloud_conf(conf).expect_err(conf);
        assert!(err.contains(want), "{conf:?}: {err}");
        assert!(!err.contains("hunter2"), "{conf:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_drivers_install_from_the_kustomize_base_on_plain_kubernetes() {
    let mut settings = Settings::plain_kubernetes();
    settings.openstack.share_types = Some(vec![openstack_sim::SimShareType::new("default")]);
    let objects = base_objects();
    let mut processes = ProcessConfig::default();
    for d in operator_deployments(&objects) {
        let image = d["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .expect("an image");
        processes = processes.with_image(image, csi_operator(&[]));
    }
    let chain = Chain::bare(settings, processes).await;
    let bed = &chain.bed;

    // `kubectl apply -k manifests/kubernetes`: every object accepted on the first run.
    let refused = kubectl_apply(&bed.client, &objects).await;
    assert!(
        refused.is_empty(),
        "kubectl apply -k refused:\n{}",
        refused.join("\n")
    );

    // Until the credentials exist, each operator says so with the command that creates them
    // (no cloud credential operator here).
    for (cr, condition, command) in [
        (
            "cinder.csi.openstack.org",
            "ConfigSyncDegraded",
            format!(
                "kubectl -n {DRIVERS_NS} create secret generic openstack-cloud-credentials --from-file=clouds.yaml=./clouds.yaml"
            ),
        ),
        (
            "manila.csi.openstack.org",
            "CSIControllerDisabled",
            format!(
                "kubectl -n {DRIVERS_NS} create secret generic openstack-cloud-credentials --from-file=clouds.yaml=./clouds.yaml"
            ),
        ),
    ] {
        let message = chain
            .wait(&format!("{cr} {condition} to name the Secret"), || async {
                match chain.cr_conditions(cr).await.get(condition) {
                    Some((status, _, message)) if status == "True" => Ok(message.clone()),
                    other => Err(format!("{other:?}")),
                }
            })
            .await;
        assert!(message.contains(&command), "{cr} {condition}: {message}");
        assert!(!message.contains("CredentialsRequest"), "{cr}: {message}");
    }

    // The credentials, as the guide says for users of the upstream charts: their cloud.conf,
    // converted by `csi-operator convert-cloud-conf`.
    let cloud_conf = format!(
        "[Global]\nauth-url = {}\nusername = {}\npassword = {}\ntenant-name = {}\n\
         domain-name = Default\nregion = {}\n\n[BlockStorage]\nbs-version = v3\n",
        bed.openstack.auth_url(),
        openstack_sim::DEFAULT_USER,
        openstack_sim::DEFAULT_PASSWORD,
        openstack_sim::DEFAULT_PROJECT,
        bed.openstack.region(),
    );
    let clouds = convert_cloud_conf(&cloud_conf).expect("the chart's cloud.conf converts");
    let ca = bed.openstack.ca_pem();
    Api::<Secret>::namespaced(bed.client.clone(), DRIVERS_NS)
        .create(
            &PostParams::default(),
            &credentials("openstack-cloud-credentials", &clouds, ca),
        )
        .await
        .expect("openstack-cloud-credentials");
    Api::<Secret>::namespaced(bed.client.clone(), MANILA_NS)
        .create(
            &PostParams::default(),
            &credentials("manila-cloud-credentials", &clouds, ca),
        )
        .await
        .expect("manila-cloud-credentials");

    // The operators create their ClusterCSIDrivers and bring both drivers up.
    chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;
    chain.wait_running(DRIVERS_NS, MANILA_OPERATOR).await;
    chain
        .wait_driver("cinder.csi.openstack.org", &CINDER_AVAILABLE)
        .await;
    chain
        .wait_driver("manila.csi.openstack.org", &MANILA_AVAILABLE)
        .await;
    // Every pod we ship passed Pod Security admission for its namespace.
    let workloads = chain.wait_pods_admitted().await;
    assert!(workloads >= 5, "{workloads} workloads");
    chain.assert_no_denials();

    // Each operator wrote its own CR into existence (no CSO here).
    for (cr, operator) in [
        ("cinder.csi.openstack.org", CINDER_OPERATOR),
        ("manila.csi.openstack.org", MANILA_OPERATOR),
    ] {
        let creators = chain.writers(
            Some("create"),
            "operator.openshift.io/clustercsidrivers",
            Some(""),
            "",
            cr,
        );
        assert_eq!(
            creators,
            [format!("system:serviceaccount:{DRIVERS_NS}:{operator}")].into(),
            "{cr}"
        );
    }

    // No service-ca: each operator issued its controller's metrics serving certificate (the
    // controller pods, which mount it, could not have started otherwise) ...
    let cinder_cert = "openstack-cinder-csi-driver-controller-metrics-serving-cert";
    for (ns, name) in [
        (DRIVERS_NS, cinder_cert),
        (
            MANILA_NS,
            "manila-csi-driver-controller-metrics-serving-cert",
        ),
    ] {
        let s = Api::<Secret>::namespaced(bed.client.clone(), ns)
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("{ns}/{name}: {e}"));
        assert_eq!(s.type_.as_deref(), Some("kubernetes.io/tls"), "{name}");
        assert!(
            s.metadata
                .annotations
                .unwrap_or_default()
                .contains_key(operator_kit::metrics_cert::ISSUED_UNTIL_ANNOTATION),
            "{name}"
        );
    }
    // ... and issues a new one when it is due, which rolls the controller.
    let secrets = Api::<Secret>::namespaced(bed.client.clone(), DRIVERS_NS);
    let before = secrets.get(cinder_cert).await.expect("the certificate");
    let controller_hash = |d: &Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.starts_with("operator.openshift.io/dep-"))
            .collect::<BTreeMap<_, _>>()
    };
    let deployments = Api::<Deployment>::namespaced(bed.client.clone(), DRIVERS_NS);
    let hashes_before = controller_hash(
        &deployments
            .get("openstack-cinder-csi-driver-controller")
            .await
            .expect("controller"),
    );
    secrets
        .patch(
            cinder_cert,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"annotations": {
                operator_kit::metrics_cert::ISSUED_UNTIL_ANNOTATION: "2000-01-01T00:00:00Z"}}})),
        )
        .await
        .expect("age the certificate");
    chain
        .wait(
            "the certificate to be renewed and the controller to roll",
            || async {
                let now = secrets.get(cinder_cert).await.map_err(|e| e.to_string())?;
                let d = deployments
                    .get("openstack-cinder-csi-driver-controller")
                    .await
                    .map_err(|e| e.to_string())?;
                if now.data != before.data && controller_hash(&d) != hashes_before {
                    Ok(())
                } else {
                    Err("not yet".to_owned())
                }
            },
        )
        .await;
    chain
        .wait_driver("cinder.csi.openstack.org", &CINDER_AVAILABLE)
        .await;
    chain.assert_no_denials();

    // The controllers are placed as Kubernetes labels nodes, not by OpenShift's `master`.
    for (ns, name) in [
        (DRIVERS_NS, "openstack-cinder-csi-driver-controller"),
        (MANILA_NS, "openstack-manila-csi-controllerplugin"),
    ] {
        let d = Api::<Deployment>::namespaced(bed.client.clone(), ns)
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("{ns}/{name}: {e}"));
        let pod = serde_json::to_value(&d.spec.expect("spec").template.spec).expect("json");
        assert!(
            pod["nodeSelector"]
                .get("node-role.kubernetes.io/master")
                .is_none(),
            "{name}: {}",
            pod["nodeSelector"]
        );
        assert_eq!(
            pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"]
                ["matchExpressions"][0]["key"],
            "node-role.kubernetes.io/control-plane",
            "{name}"
        );
    }

    // Nothing OpenShift appeared: no ClusterOperator, Infrastructure or their CRDs.
    let crds: Vec<Value> = Api::<CustomResourceDefinition>::all(bed.client.clone())
        .list(&Default::default())
        .await
        .expect("list CRDs")
        .items
        .iter()
        .map(|c| serde_json::to_value(c).expect("json"))
        .collect();
    let names: Vec<&str> = crds
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["clustercsidrivers.operator.openshift.io"]);

    // `kubectl delete -k manifests/kubernetes` removes every object it created.
    let failed = kubectl_delete(&bed.client, &objects).await;
    assert!(
        failed.is_empty(),
        "kubectl delete -k:\n{}",
        failed.join("\n")
    );
}

/// cert-manager's CRDs, as the tests install them (the testbed's stand-in then issues).
const CERT_MANAGER_CRDS: &str = include_str!("fixtures/cert-manager-crds.yaml");
const CINDER_CERT: &str = "openstack-cinder-csi-driver-controller-metrics-serving-cert";
const MANILA_CERT: &str = "manila-csi-driver-controller-metrics-serving-cert";

/// A plain-Kubernetes chain with the cert-manager stand-in, and the base objects.
async fn cert_manager_chain() -> (Chain, Vec<Value>) {
    let mut settings = Settings::plain_kubernetes();
    settings.cert_manager = true;
    settings.openstack.share_types = Some(vec![openstack_sim::SimShareType::new("default")]);
    let objects = base_objects();
    let mut processes = ProcessConfig::default();
    for d in operator_deployments(&objects) {
        let image = d["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .expect("an image");
        processes = processes.with_image(image, csi_operator(&[]));
    }
    (Chain::bare(settings, processes).await, objects)
}

/// `kubectl apply -k manifests/kubernetes` and the credentials of both drivers, straight as
/// clouds.yaml.
async fn install(chain: &Chain, objects: &[Value]) {
    let bed = &chain.bed;
    let refused = kubectl_apply(&bed.client, objects).await;
    assert!(
        refused.is_empty(),
        "kubectl apply -k refused:\n{}",
        refused.join("\n")
    );
    let ca = bed.openstack.ca_pem();
    for (ns, name) in [
        (DRIVERS_NS, "openstack-cloud-credentials"),
        (MANILA_NS, "manila-cloud-credentials"),
    ] {
        Api::<Secret>::namespaced(bed.client.clone(), ns)
            .create(
                &PostParams::default(),
                &credentials(name, &bed.clouds_yaml(), ca),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

fn cert_manager_api(
    client: &kube::Client,
    ns: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("cert-manager.io", "v1", kind),
        plural,
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

fn annotation(s: &Secret, key: &str) -> Option<String> {
    s.metadata.annotations.as_ref()?.get(key).cloned()
}

/// The successful writes to Secret `ns/name` by `user` from request `from` of kube-sim's log on.
fn secret_writes(chain: &Chain, from: usize, user: &str, ns: &str, name: &str) -> usize {
    chain.bed.kube.requests()[from..]
        .iter()
        .filter(|r| {
            r.is_write()
                && (200..300).contains(&r.code)
                && r.resource == "/secrets"
                && r.namespace == ns
                && r.name == name
                && r.user == user
        })
        .count()
}

fn service_account(name: &str) -> String {
    format!("system:serviceaccount:{DRIVERS_NS}:{name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_cert_manager_the_operators_ask_it_for_their_metrics_certificates() {
    let (chain, objects) = cert_manager_chain().await;
    let bed = &chain.bed;
    testbed::cert_manager::install_crds(&bed.client, CERT_MANAGER_CRDS)
        .await
        .expect("cert-manager's CRDs");
    install(&chain, &objects).await;
    chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;
    chain.wait_running(DRIVERS_NS, MANILA_OPERATOR).await;
    // The controllers mount the Secrets: Available means cert-manager filled them.
    chain
        .wait_driver("cinder.csi.openstack.org", &CINDER_AVAILABLE)
        .await;
    chain
        .wait_driver("manila.csi.openstack.org", &MANILA_AVAILABLE)
        .await;

    for (ns, secret, operator) in [
        (
            DRIVERS_NS,
            CINDER_CERT,
            "openstack-cinder-csi-driver-operator",
        ),
        (
            MANILA_NS,
            MANILA_CERT,
            "openstack-manila-csi-driver-operator",
        ),
    ] {
        let issuer_name = format!("{operator}-selfsigned");
        let cert = cert_manager_api(&bed.client, ns, "Certificate", "certificates")
            .get(secret)
            .await
            .unwrap_or_else(|e| panic!("Certificate {ns}/{secret}: {e}"));
        let spec = &cert.data["spec"];
        assert_eq!(spec["secretName"], secret);
        assert_eq!(
            spec["issuerRef"],
            serde_json::json!({"group": "cert-manager.io", "kind": "Issuer", "name": issuer_name})
        );
        assert_eq!(spec["privateKey"]["rotationPolicy"], "Always");
        let dns: Vec<&str> = spec["dnsNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            dns.iter().all(|n| n.ends_with(&format!(".{ns}.svc"))
                || n.ends_with(&format!(".{ns}.svc.cluster.local")))
                && dns.len() == 2,
            "{dns:?}"
        );
        let issuer = cert_manager_api(&bed.client, ns, "Issuer", "issuers")
            .get(&issuer_name)
            .await
            .unwrap_or_else(|e| panic!("Issuer {ns}/{issuer_name}: {e}"));
        assert_eq!(issuer.data["spec"], serde_json::json!({"selfSigned": {}}));

        let s = Api::<Secret>::namespaced(bed.client.clone(), ns)
            .get(secret)
            .await
            .expect("the serving certificate");
        assert_eq!(s.type_.as_deref(), Some("kubernetes.io/tls"));
        assert_eq!(
            annotation(&s, testbed::cert_manager::CERTIFICATE_NAME).as_deref(),
            Some(secret)
        );
        assert_eq!(
            annotation(&s, operator_kit::metrics_cert::ISSUED_UNTIL_ANNOTATION).as_deref(),
            Some(operator_kit::cert_manager::ISSUED_BY_CERT_MANAGER)
        );
    }
    // The operators never wrote the Secrets: cert-manager (the stand-in, as admin) did.
    for (ns, secret, operator) in [
        (DRIVERS_NS, CINDER_CERT, CINDER_OPERATOR),
        (MANILA_NS, MANILA_CERT, MANILA_OPERATOR),
    ] {
        let writers = chain.writers(None, "/secrets", None, ns, secret);
        assert!(
            !writers.contains(&service_account(operator)),
            "{ns}/{secret}: {writers:?}"
        );
    }
    chain.assert_no_denials();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cert_manager_installed_later_takes_the_certificate_over_and_back_when_removed() {
    let (chain, objects) = cert_manager_chain().await;
    let bed = &chain.bed;
    install(&chain, &objects).await;
    chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;
    chain
        .wait_driver("cinder.csi.openstack.org", &CINDER_AVAILABLE)
        .await;
    let secrets = Api::<Secret>::namespaced(bed.client.clone(), DRIVERS_NS);
    let self_signed = secrets.get(CINDER_CERT).await.expect("the certificate");
    let until = annotation(
        &self_signed,
        operator_kit::metrics_cert::ISSUED_UNTIL_ANNOTATION,
    )
    .expect("issued by the operator");
    assert!(
        until.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "{until}"
    );

    // cert-manager arrives: the operator applies its Certificate, and cert-manager re-issues
    // into the operator's Secret (it lacks cert-manager's annotations).
    let mark = bed.kube.requests().len();
    testbed::cert_manager::install_crds(&bed.client, CERT_MANAGER_CRDS)
        .await
        .expect("cert-manager's CRDs");
    chain
        .wait("cert-manager to fill the operator's Secret", || async {
            let s = secrets.get(CINDER_CERT).await.map_err(|e| e.to_string())?;
            match annotation(&s, testbed::cert_manager::CERTIFICATE_NAME) {
                Some(_) if s.data != self_signed.data => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    chain
        .wait_driver("cinder.csi.openstack.org", &CINDER_AVAILABLE)
        .await;
    // A few resyncs for a fight to show, had there been one.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let operator = service_account(CINDER_OPERATOR);
    assert_eq!(
        secret_writes(&chain, mark, &operator, DRIVERS_NS, CINDER_CERT),
        0,
        "the operator wrote the Secret cert-manager manages"
    );
    assert_eq!(
        secret_writes(&chain, mark, "admin", DRIVERS_NS, CINDER_CERT),
        1,
        "cert-manager issued more than once: something kept undoing its Secret"
    );

    // cert-manager goes (its CRDs, and so the Certificates): the operator issues its own again
    // instead of keeping a certificate nobody renews.
    let mark = bed.kube.requests().len();
    testbed::cert_manager::remove_crds(&bed.client, CERT_MANAGER_CRDS)
        .await
        .expect("remove cert-manager's CRDs");
    chain
        .wait(
            "the operator to issue its own certificate again",
            || async {
                let s = secrets.get(CINDER_CERT).await.map_err(|e| e.to_string())?;
                let until = annotation(&s, operator_kit::metrics_cert::ISSUED_UNTIL_ANNOTATION);
                match until
                    .as_deref()
                    .map(str::parse::<k8s_openapi::jiff::Timestamp>)
                {
                    Some(Ok(_)) => Ok(()),
                    other => Err(format!("{until:?}: {other:?}")),
                }
            },
        )
        .await;
    assert_eq!(
        secret_writes(&chain, mark, &operator, DRIVERS_NS, CINDER_CERT),
        1
    );
    chain
        .wait_driver("cinder.csi.openstack.org", &CINDER_AVAILABLE)
        .await;
    chain.assert_no_denials();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_without_cert_manager_rights_is_reported_with_what_to_grant() {
    let (chain, mut objects) = cert_manager_chain().await;
    let bed = &chain.bed;
    testbed::cert_manager::install_crds(&bed.client, CERT_MANAGER_CRDS)
        .await
        .expect("cert-manager's CRDs");
    // An install whose Cinder Role predates cert-manager support.
    for o in objects.iter_mut().filter(|o| {
        o["kind"] == "Role"
            && o["metadata"]["name"] == "openstack-cinder-csi-driver-operator-role"
            && o["metadata"]["namespace"] == DRIVERS_NS
    }) {
        if let Some(rules) = o["rules"].as_array_mut() {
            rules.retain(|r| r["apiGroups"] != serde_json::json!(["cert-manager.io"]));
        }
    }
    install(&chain, &objects).await;
    chain
        .wait(
            "the refusal in MetricsServingCertControllerDegraded",
            || async {
                let c = chain.cr_conditions("cinder.csi.openstack.org").await;
                match c.get("MetricsServingCertControllerDegraded") {
                    Some((s, _, m))
                        if s == "True"
                            && m.contains("certificates and issuers in group cert-manager.io") =>
                    {
                        Ok(())
                    }
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
    // The operator did not fall back to writing the Secret itself.
    let writers = chain.writers(None, "/secrets", None, DRIVERS_NS, CINDER_CERT);
    assert!(
        !writers.contains(&service_account(CINDER_OPERATOR)),
        "{writers:?}"
    );
}

/// The Cinder driver settings (docs/driver-settings.md) of the e2e tests: every knob.
const CINDER_SETTINGS: &str = r#"
kubeletDir: /var/lib/k0s/kubelet
controller:
  replicas: 1
  containers:
    csi-provisioner:
      extraArgs: ["--worker-threads=20"]
      resources: {requests: {cpu: 20m, memory: 64Mi}}
node:
  containers:
    csi-driver:
      resources: {limits: {memory: 512Mi}}
imagePullSecrets: [{name: my-registry}]
serviceMonitor: {enabled: false}
storageClasses:
  - name: fast-ssd
    parameters: {type: ssd}
    reclaimPolicy: Retain
"#;

fn settings_config_map(text: &str) -> k8s_openapi::api::core::v1::ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "openstack-cinder-csi-driver-operator-settings", "namespace": DRIVERS_NS},
        "data": {"settings.yaml": text},
    }))
    .expect("a ConfigMap")
}

/// The node DaemonSet's host paths, the controller's replicas and its provisioner's args.
async fn cinder_workloads(client: &kube::Client) -> Result<(Vec<String>, i64, Value), String> {
    let ds: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        DRIVERS_NS,
        &kube::core::ApiResource::erase::<k8s_openapi::api::apps::v1::DaemonSet>(&()),
    );
    let ds = ds
        .get("openstack-cinder-csi-driver-node")
        .await
        .map_err(|e| e.to_string())?;
    let paths = ds.data["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["hostPath"]["path"].as_str().map(str::to_string))
        .collect();
    let d = Api::<Deployment>::namespaced(client.clone(), DRIVERS_NS)
        .get("openstack-cinder-csi-driver-controller")
        .await
        .map_err(|e| e.to_string())?;
    let d = serde_json::to_value(d).map_err(|e| e.to_string())?;
    let replicas = d["spec"]["replicas"].as_i64().unwrap_or(-1);
    let spec = d["spec"]["template"]["spec"].clone();
    Ok((paths, replicas, spec))
}

fn kubelet_paths_moved(paths: &[String]) -> bool {
    !paths.is_empty()
        && paths.iter().any(|p| p.starts_with("/var/lib/k0s/kubelet"))
        && !paths.iter().any(|p| p.starts_with("/var/lib/kubelet"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_settings_reach_the_driver_and_are_kept() {
    let mut settings = Settings::plain_kubernetes();
    settings.openstack.share_types = Some(vec![openstack_sim::SimShareType::new("default")]);
    let objects = base_objects();
    let mut processes = ProcessConfig::default();
    for d in operator_deployments(&objects) {
        let image = d["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .expect("an image");
        processes = processes.with_image(image, csi_operator(&[]));
    }
    let chain = Chain::bare(settings, processes).await;
    let bed = &chain.bed;
    install(&chain, &objects).await;
    let config_maps =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(bed.client.clone(), DRIVERS_NS);
    config_maps
        .create(
            &PostParams::default(),
            &settings_config_map(CINDER_SETTINGS),
        )
        .await
        .expect("the settings ConfigMap");
    chain.wait_running(DRIVERS_NS, CINDER_OPERATOR).await;

    // Every knob shows in what the operator applied.
    let spec = chain
        .wait("the settings applied", || async {
            let (paths, replicas, spec) = cinder_workloads(&bed.client).await?;
            if kubelet_paths_moved(&paths) && replicas == 1 {
                Ok(spec)
            } else {
                Err(format!("{paths:?} replicas {replicas}"))
            }
        })
        .await;
    let provisioner = spec["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == "csi-provisioner")
        .expect("the provisioner")
        .clone();
    assert!(
        provisioner["args"]
            .as_array()
            .expect("args")
            .contains(&Value::from("--worker-threads=20")),
        "{provisioner}"
    );
    assert_eq!(
        provisioner["resources"],
        serde_json::json!({"requests": {"cpu": "20m", "memory": "64Mi"}})
    );
    assert_eq!(
        spec["imagePullSecrets"],
        serde_json::json!([{"name": "my-registry"}])
    );
    let sc = chain
        .wait("the extra StorageClass", || async {
            Api::<k8s_openapi::api::storage::v1::StorageClass>::all(bed.client.clone())
                .get("fast-ssd")
                .await
                .map_err(|e| e.to_string())
        })
        .await;
    assert_eq!(sc.provisioner, "cinder.csi.openstack.org");
    assert_eq!(sc.reclaim_policy.as_deref(), Some("Retain"));
    let cr = "cinder.csi.openstack.org";
    let c = chain.cr_conditions(cr).await;
    assert_eq!(
        c.get("DriverSettingsDegraded").map(|c| c.0.as_str()),
        Some("False"),
        "{c:#?}"
    );

    // Someone edits the DaemonSet and scales the Deployment: the operator puts them back.
    let ds: Api<DynamicObject> = Api::namespaced_with(
        bed.client.clone(),
        DRIVERS_NS,
        &kube::core::ApiResource::erase::<k8s_openapi::api::apps::v1::DaemonSet>(&()),
    );
    let mut live = ds
        .get("openstack-cinder-csi-driver-node")
        .await
        .expect("the DaemonSet");
    for v in live.data["spec"]["template"]["spec"]["volumes"]
        .as_array_mut()
        .expect("volumes")
    {
        if let Some(p) = v["hostPath"]["path"].as_str() {
            let back = p.replace("/var/lib/k0s/kubelet", "/var/lib/kubelet");
            v["hostPath"]["path"] = Value::from(back);
        }
    }
    ds.replace(
        "openstack-cinder-csi-driver-node",
        &PostParams::default(),
        &live,
    )
    .await
    .expect("the edit");
    Api::<Deployment>::namespaced(bed.client.clone(), DRIVERS_NS)
        .patch(
            "openstack-cinder-csi-driver-controller",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("the scale");
    chain
        .wait("the edits reverted", || async {
            let (paths, replicas, _) = cinder_workloads(&bed.client).await?;
            if kubelet_paths_moved(&paths) && replicas == 1 {
                Ok(())
            } else {
                Err(format!("{paths:?} replicas {replicas}"))
            }
        })
        .await;

    // A mistake in the ConfigMap: the condition names the key; nothing applied is lost.
    config_maps
        .replace(
            "openstack-cinder-csi-driver-operator-settings",
            &PostParams::default(),
            &settings_config_map("kubeletDir: /var/lib/k0s/kubelet\ncontroller: {replica: 2}\n"),
        )
        .await
        .expect("the bad settings");
    let message = chain
        .wait("DriverSettingsDegraded", || async {
            match chain.cr_conditions(cr).await.get("DriverSettingsDegraded") {
                Some((s, _, m)) if s == "True" => Ok(m.clone()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    assert!(
        message.contains("controller.replica: unknown key; the keys allowed here are replicas"),
        "{message}"
    );
    assert!(
        message.contains("the settings last read stay applied"),
        "{message}"
    );
    let (paths, replicas, _) = cinder_workloads(&bed.client).await.expect("workloads");
    assert!(kubelet_paths_moved(&paths), "{paths:?}");
    assert_eq!(replicas, 1);

    // The operator restarts with the mistake still there: it knows no good settings, so it
    // leaves the workloads as they are (no fall-back to /var/lib/kubelet) and says so.
    let pid = chain
        .wait_running(DRIVERS_NS, CINDER_OPERATOR)
        .await
        .pid
        .expect("a pid");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    chain
        .wait("the restarted operator to report the settings", || async {
            let restarted = chain
                .pods(DRIVERS_NS, CINDER_OPERATOR)
                .iter()
                .any(|p| p.running() && p.pid.is_some_and(|p| p != pid));
            match chain.cr_conditions(cr).await.get("DriverSettingsDegraded") {
                Some((s, _, m))
                    if restarted && s == "True" && m.contains("are left as they are") =>
                {
                    Ok(())
                }
                other => Err(format!("restarted {restarted}: {other:?}")),
            }
        })
        .await;
    // Its status write ends the reconcile that skipped the workloads: they are as they were.
    let (paths, replicas, _) = cinder_workloads(&bed.client).await.expect("workloads");
    assert!(kubelet_paths_moved(&paths), "after a restart: {paths:?}");
    assert_eq!(replicas, 1, "after a restart");

    // Fixed, without the StorageClass: it goes, the condition clears.
    config_maps
        .replace(
            "openstack-cinder-csi-driver-operator-settings",
            &PostParams::default(),
            &settings_config_map("kubeletDir: /var/lib/k0s/kubelet\ncontroller: {replicas: 1}\n"),
        )
        .await
        .expect("the fixed settings");
    chain
        .wait("the extra StorageClass deleted", || async {
            let gone = Api::<k8s_openapi::api::storage::v1::StorageClass>::all(bed.client.clone())
                .get_opt("fast-ssd")
                .await
                .map_err(|e| e.to_string())?
                .is_none();
            let c = chain.cr_conditions(cr).await;
            match c.get("DriverSettingsDegraded") {
                Some((s, _, _)) if s == "False" && gone => Ok(()),
                other => Err(format!("gone {gone}, {other:?}")),
            }
        })
        .await;

    // Manila's settings, in its driver's namespace: both node DaemonSets move to k0s's kubelet
    // directory, and a container named with its DaemonSet gets resources only there (both
    // have a `csi-driver`).
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(bed.client.clone(), MANILA_NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": "openstack-manila-csi-driver-operator-settings"},
                "data": {"settings.yaml": "kubeletDir: /var/lib/k0s/kubelet\n\
                    node: {containers: {csi-nodeplugin-nfsplugin/csi-driver: {resources: {limits: {memory: 256Mi}}}}}\n\
                    storageClasses: [{name: manila-gold, parameters: {type: gold}}]\n"},
            }))
            .expect("a ConfigMap"),
        )
        .await
        .expect("Manila's settings");
    let daemonsets: Api<DynamicObject> = Api::namespaced_with(
        bed.client.clone(),
        MANILA_NS,
        &kube::core::ApiResource::erase::<k8s_openapi::api::apps::v1::DaemonSet>(&()),
    );
    let (node, nfs) = chain
        .wait("Manila's settings applied", || async {
            let mut both = Vec::new();
            for name in [
                "openstack-manila-csi-nodeplugin",
                "csi-nodeplugin-nfsplugin",
            ] {
                let ds = daemonsets.get(name).await.map_err(|e| e.to_string())?;
                let text = serde_json::to_string(&ds.data).map_err(|e| e.to_string())?;
                if text.contains("/var/lib/kubelet") || !text.contains("/var/lib/k0s/kubelet") {
                    return Err(format!("{name} not moved"));
                }
                both.push(ds.data["spec"]["template"]["spec"]["containers"].clone());
            }
            Ok((both[0].clone(), both[1].clone()))
        })
        .await;
    assert_eq!(
        nfs[0]["resources"],
        serde_json::json!({"limits": {"memory": "256Mi"}}),
        "{nfs}"
    );
    assert!(
        node.as_array()
            .expect("containers")
            .iter()
            .all(|c| c["resources"]["limits"]["memory"] != "256Mi"),
        "{node}"
    );
    let sc = chain
        .wait("Manila's extra StorageClass", || async {
            Api::<k8s_openapi::api::storage::v1::StorageClass>::all(bed.client.clone())
                .get("manila-gold")
                .await
                .map_err(|e| e.to_string())
        })
        .await;
    assert_eq!(sc.provisioner, "manila.csi.openstack.org");
    let c = chain.cr_conditions("manila.csi.openstack.org").await;
    assert_eq!(
        c.get("DriverSettingsDegraded").map(|c| c.0.as_str()),
        Some("False"),
        "{c:#?}"
    );
    chain.assert_no_denials();
}
