//! The typed objects and CRDs of `openshift-api` against kube-sim through kube-rs: every CRD is
//! accepted and served, typed create/get/replace/patch (including the status subresource) work,
//! the server's schema validation and defaulting apply as on a real cluster, unmodelled fields
//! survive a typed read-modify-write, and malformed objects are errors, never panics.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, Resource};
use kube_sim::{KubeSim, SimConfig};
use openshift_api::common::Condition;
use openshift_api::config::{ConfigMapFileReference, ObjectReference, OperandVersion};
use openshift_api::operator::CINDER_DRIVER_NAME;
use openshift_api::*;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

async fn start() -> (KubeSim, Client) {
    let sim = KubeSim::start(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("kube-sim starts");
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("test")).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let client = Client::try_from(config).unwrap();
    (sim, client)
}

/// Creates the given CRD and waits until its resource is served.
async fn install_crd(client: &Client, crd: &CustomResourceDefinition) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.create(&PostParams::default(), crd)
        .await
        .unwrap_or_else(|e| panic!("CRD {:?} accepted: {e}", crd.metadata.name));
    let group = crd.spec.group.clone();
    let plural = crd.spec.names.plural.clone();
    let version = crd.spec.versions[0].name.clone();
    let ar = ApiResource {
        group: group.clone(),
        version: version.clone(),
        api_version: format!("{group}/{version}"),
        kind: crd.spec.names.kind.clone(),
        plural,
    };
    let dynamic: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while dynamic.list(&Default::default()).await.is_err() {
        assert!(tokio::time::Instant::now() < until, "{} served", ar.kind);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn install_all(client: &Client) {
    for crd in crds::parsed().expect("embedded CRDs parse") {
        install_crd(client, &crd).await;
    }
}

async fn namespace(client: &Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// The API error status code and message, failing the test on success or transport errors.
fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> (u16, String) {
    match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn dynamic_api<K: Resource<DynamicType = ()>>(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ApiResource::erase::<K>(&()))
}

fn cinder() -> ClusterCSIDriver {
    ClusterCSIDriver::new(
        CINDER_DRIVER_NAME,
        ClusterCSIDriverSpec::new(ManagementState::Managed, LogLevel::Normal),
    )
}

fn time(s: &str) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(s.parse().unwrap())
}

#[tokio::test]
async fn every_crd_is_accepted_and_served() -> TestResult {
    let (_sim, client) = start().await;
    install_all(&client).await;
    namespace(&client, "ns").await;
    // Each typed Api lists its (empty) collection: the URL paths kube-rs derives from our
    // Resource impls are the ones the CRDs serve.
    assert!(
        Api::<ClusterCSIDriver>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<Storage>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<ClusterOperator>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<Infrastructure>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<Proxy>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<APIServer>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<VolumeSnapshotClass>::all(client.clone())
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<CredentialsRequest>::namespaced(client.clone(), "ns")
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    assert!(
        Api::<ServiceMonitor>::namespaced(client.clone(), "ns")
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn cluster_csi_driver_create_get_replace_and_status() -> TestResult {
    let (_sim, client) = start().await;
    install_all(&client).await;
    let api: Api<ClusterCSIDriver> = Api::all(client.clone());

    let created = api.create(&PostParams::default(), &cinder()).await?;
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.spec.operator.management_state(),
        ManagementState::Managed
    );

    // Spec read-modify-write (what the config observer does with observedConfig).
    let mut cr = api.get(CINDER_DRIVER_NAME).await?;
    cr.spec.operator.observed_config =
        Some(json!({"targetcsiconfig": {"proxy": {"HTTPS_PROXY": "http://proxy:3128"}}}));
    let replaced = api
        .replace(CINDER_DRIVER_NAME, &PostParams::default(), &cr)
        .await?;
    assert_eq!(replaced.metadata.generation, Some(2));
    assert_eq!(replaced.spec, cr.spec);

    // Status through a merge patch on /status.
    let patch = json!({"status": {
        "observedGeneration": 2,
        "readyReplicas": 0,
        "conditions": [{"type": "OpenStackCinderDriverControllerServiceControllerAvailable",
                        "status": "False", "lastTransitionTime": "2024-05-01T10:00:00Z",
                        "reason": "Deploying", "message": "Waiting for Deployment"}]
    }});
    let patched = api
        .patch_status(
            CINDER_DRIVER_NAME,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    let status = patched.status.clone().unwrap_or_default();
    assert_eq!(status.observed_generation, Some(2));
    let c = status
        .condition("OpenStackCinderDriverControllerServiceControllerAvailable")
        .expect("condition written");
    assert!(c.is_false());
    assert_eq!(c.reason, "Deploying");
    // The status write did not bump the generation.
    assert_eq!(patched.metadata.generation, Some(2));

    // Typed status replace (what a status writer does, with optimistic concurrency).
    let mut cr = patched;
    let mut status = cr.status.take().unwrap_or_default();
    status.conditions = vec![Condition {
        last_transition_time: Some(time("2024-05-01T10:05:00Z")),
        ..Condition::new(
            "OpenStackCinderDriverControllerServiceControllerAvailable",
            CONDITION_TRUE,
            "AsExpected",
            "",
        )
    }];
    status.generations = vec![GenerationStatus {
        group: "apps".into(),
        resource: "deployments".into(),
        namespace: "openshift-cluster-csi-drivers".into(),
        name: "openstack-cinder-csi-driver-controller".into(),
        last_generation: 3,
        hash: String::new(),
    }];
    cr.status = Some(status.clone());
    let written = api
        .replace_status(CINDER_DRIVER_NAME, &PostParams::default(), &cr)
        .await?;
    assert_eq!(written.status, Some(status));
    let read = api.get(CINDER_DRIVER_NAME).await?;
    assert_eq!(read.status, written.status);
    assert_eq!(read.spec, cr.spec, "a status write leaves the spec alone");

    // A stale resourceVersion is a conflict, not a silent overwrite.
    let (code, _) = api_error(
        api.replace(CINDER_DRIVER_NAME, &PostParams::default(), &cr)
            .await,
    );
    assert_eq!(code, 409);
    Ok(())
}

#[tokio::test]
async fn schema_rejects_bad_enum_values_and_defaults_log_levels() -> TestResult {
    let (_sim, client) = start().await;
    install_all(&client).await;
    let api: Api<ClusterCSIDriver> = Api::all(client.clone());
    let pp = PostParams::default();

    let mut bad = cinder();
    bad.spec.operator.management_state = Some(ManagementState::Unknown("Sideways".into()));
    let (code, message) = api_error(api.create(&pp, &bad).await);
    assert_eq!(code, 422);
    assert!(message.contains("spec.managementState"), "{message}");

    let mut bad = cinder();
    bad.spec.operator.log_level = Some(LogLevel::Unknown("Loud".into()));
    let (code, message) = api_error(api.create(&pp, &bad).await);
    assert_eq!(code, 422);
    assert!(message.contains("spec.logLevel"), "{message}");

    let mut bad = cinder();
    bad.spec.storage_class_state = Some(StorageClassState::Unknown("Sometimes".into()));
    let (code, message) = api_error(api.create(&pp, &bad).await);
    assert_eq!(code, 422);
    assert!(message.contains("spec.storageClassState"), "{message}");

    let bad = ClusterCSIDriver::new("cinder", cinder().spec);
    let (code, message) = api_error(api.create(&pp, &bad).await);
    assert_eq!(code, 422);
    assert!(message.contains("metadata.name"), "{message}");

    // No log levels given: the CRD defaults both to Normal.
    let mut cr = cinder();
    cr.spec.operator.log_level = None;
    cr.spec.operator.operator_log_level = None;
    let created = api.create(&pp, &cr).await?;
    assert_eq!(created.spec.operator.log_level, Some(LogLevel::Normal));
    assert_eq!(
        created.spec.operator.operator_log_level,
        Some(LogLevel::Normal)
    );

    // A condition status outside True/False/Unknown is rejected on /status too.
    let patch = json!({"status": {"conditions": [
        {"type": "XAvailable", "status": "Maybe", "lastTransitionTime": "2024-05-01T10:00:00Z"}]}});
    let (code, _) = api_error(
        api.patch_status(
            CINDER_DRIVER_NAME,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await,
    );
    assert_eq!(code, 422);
    Ok(())
}

#[tokio::test]
async fn unmodelled_spec_fields_survive_a_typed_read_modify_write() -> TestResult {
    let (_sim, client) = start().await;
    // A newer openshift/api: ClusterCSIDriver's spec gains a field this crate does not know.
    let mut crd = crds::get("clustercsidrivers.operator.openshift.io")?.expect("known CRD");
    let mut schema = serde_json::to_value(&crd.spec.versions[0].schema)?;
    schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["futureField"] =
        json!({"type": "object", "properties": {"knob": {"type": "integer"}}});
    crd.spec.versions[0].schema = Some(serde_json::from_value(schema)?);
    install_crd(&client, &crd).await;

    let raw = json!({
        "apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver",
        "metadata": {"name": CINDER_DRIVER_NAME},
        "spec": {
            "managementState": "Managed",
            "futureField": {"knob": 7},
            "unsupportedConfigOverrides": {"anything": ["goes"]},
            "driverConfig": {"driverType": "", "vSphere": {"topologyCategories": ["zone"]}}
        }
    });
    let dynamic = dynamic_api::<ClusterCSIDriver>(&client);
    dynamic
        .create(&PostParams::default(), &serde_json::from_value(raw)?)
        .await?;

    let api: Api<ClusterCSIDriver> = Api::all(client.clone());
    let mut cr = api.get(CINDER_DRIVER_NAME).await?;
    cr.spec.operator.log_level = Some(LogLevel::Debug);
    api.replace(CINDER_DRIVER_NAME, &PostParams::default(), &cr)
        .await?;

    let after = dynamic.get(CINDER_DRIVER_NAME).await?;
    let spec = &after.data["spec"];
    assert_eq!(spec["logLevel"], "Debug");
    assert_eq!(spec["futureField"], json!({"knob": 7}));
    assert_eq!(
        spec["unsupportedConfigOverrides"],
        json!({"anything": ["goes"]})
    );
    assert_eq!(
        spec["driverConfig"],
        json!({"driverType": "", "vSphere": {"topologyCategories": ["zone"]}})
    );
    Ok(())
}

/// A CRD for ClusterCSIDriver that validates nothing, standing in for an old or broken CRD
/// (or a client that bypassed validation), so malformed objects can reach the operator.
fn permissive_cluster_csi_driver_crd()
-> Result<CustomResourceDefinition, Box<dyn std::error::Error + Send + Sync>> {
    let mut crd = crds::get("clustercsidrivers.operator.openshift.io")?.expect("known CRD");
    crd.spec.versions[0].schema = Some(serde_json::from_value(json!({"openAPIV3Schema": {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    }}))?);
    Ok(crd)
}

#[tokio::test]
async fn unknown_enum_values_from_the_api_deserialize() -> TestResult {
    let (_sim, client) = start().await;
    install_crd(&client, &permissive_cluster_csi_driver_crd()?).await;
    let dynamic = dynamic_api::<ClusterCSIDriver>(&client);
    dynamic
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver",
                "metadata": {"name": CINDER_DRIVER_NAME},
                "spec": {"managementState": "Sideways", "logLevel": "Loud",
                         "storageClassState": "Sometimes"}
            }))?,
        )
        .await?;
    let api: Api<ClusterCSIDriver> = Api::all(client.clone());
    // The whole list still works: one bad value does not break a watch.
    let list = api.list(&Default::default()).await?;
    assert_eq!(list.items.len(), 1);
    let cr = api.get(CINDER_DRIVER_NAME).await?;
    assert_eq!(
        cr.spec.operator.management_state(),
        ManagementState::Unknown("Sideways".into())
    );
    assert_eq!(
        cr.spec.operator.log_level(),
        LogLevel::Unknown("Loud".into())
    );
    assert_eq!(
        cr.spec.storage_class_state(),
        StorageClassState::Unknown("Sometimes".into())
    );
    Ok(())
}

#[tokio::test]
async fn malformed_objects_from_the_api_are_clear_errors() -> TestResult {
    let (_sim, client) = start().await;
    install_crd(&client, &permissive_cluster_csi_driver_crd()?).await;
    let dynamic = dynamic_api::<ClusterCSIDriver>(&client);
    let raw = json!({
        "apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver",
        "metadata": {"name": CINDER_DRIVER_NAME},
        "spec": {"managementState": "Managed", "logLevel": 5}
    });
    dynamic
        .create(&PostParams::default(), &serde_json::from_value(raw)?)
        .await?;

    let api: Api<ClusterCSIDriver> = Api::all(client.clone());
    match api.get(CINDER_DRIVER_NAME).await {
        Err(kube::Error::SerdeError(e)) => {
            assert!(e.to_string().contains("invalid type: integer `5`"), "{e}")
        }
        other => panic!("expected a deserialization error, got {other:?}"),
    }

    // The same object through `decode`: the message names the kind and the object.
    let obj = dynamic.get(CINDER_DRIVER_NAME).await?;
    let err =
        decode::from_value::<ClusterCSIDriver>(serde_json::to_value(&obj)?).expect_err("malformed");
    let msg = err.to_string();
    assert!(
        msg.contains("ClusterCSIDriver \"cinder.csi.openstack.org\""),
        "{msg}"
    );
    assert!(
        msg.contains("invalid type: integer `5`, expected a string"),
        "{msg}"
    );

    // A status of the wrong shape is an error too.
    dynamic
        .patch(
            CINDER_DRIVER_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"logLevel": "Normal"}})),
        )
        .await?;
    dynamic
        .patch_status(
            CINDER_DRIVER_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": "all good"}})),
        )
        .await?;
    assert!(matches!(
        api.get(CINDER_DRIVER_NAME).await,
        Err(kube::Error::SerdeError(_))
    ));
    Ok(())
}

/// Writes a fully populated object of every other kind and reads it back unchanged: every
/// field the types serialize exists in the shipped CRD (nothing is pruned), and the types
/// round-trip through the server.
#[tokio::test]
async fn every_other_kind_round_trips_through_the_server() -> TestResult {
    let (_sim, client) = start().await;
    install_all(&client).await;
    let pp = PostParams::default();
    let ps = PatchParams::default();

    // Storage.
    let storage_api: Api<Storage> = Api::all(client.clone());
    let mut storage = Storage::new(operator::STORAGE_NAME, StorageSpec::default());
    storage.spec.operator =
        ClusterCSIDriverSpec::new(ManagementState::Managed, LogLevel::Debug).operator;
    let created = storage_api.create(&pp, &storage).await?;
    assert_eq!(created.spec, storage.spec);

    // Infrastructure: spec on create, status through /status.
    let infra_api: Api<Infrastructure> = Api::all(client.clone());
    let mut infra = Infrastructure::new(
        config::CLUSTER,
        InfrastructureSpec {
            cloud_config: Some(ConfigMapFileReference {
                name: "cloud-provider-config".into(),
                key: Some("config".into()),
            }),
            platform_spec: Some(json!({"type": "OpenStack", "openstack": {}})),
            ..Default::default()
        },
    );
    let created = infra_api.create(&pp, &infra).await?;
    assert_eq!(created.spec, infra.spec);
    let status: InfrastructureStatus = serde_json::from_value(json!({
        "infrastructureName": "ocp-x7k2p",
        "platform": "OpenStack",
        "platformStatus": {"type": "OpenStack", "openstack": {
            "cloudName": "openstack",
            // What the CRD would default; given so the read-back compares equal.
            "loadBalancer": {"type": "OpenShiftManagedDefault"}}},
        "apiServerURL": "https://api.ocp.example.com:6443",
        "apiServerInternalURI": "https://api-int.ocp.example.com:6443",
        "etcdDiscoveryDomain": "",
        "controlPlaneTopology": "SingleReplica",
        "infrastructureTopology": "HighlyAvailable",
        "cpuPartitioning": "None"
    }))?;
    infra.status = Some(status.clone());
    let written = infra_api
        .patch_status(
            config::CLUSTER,
            &ps,
            &Patch::Merge(json!({"status": status})),
        )
        .await?;
    assert_eq!(written.status.as_ref(), infra.status.as_ref());
    assert_eq!(
        written.control_plane_topology(),
        TopologyMode::SingleReplica
    );
    assert_eq!(written.platform_type(), Some(&PlatformType::OpenStack));

    // Proxy.
    let proxy_api: Api<Proxy> = Api::all(client.clone());
    let proxy: Proxy = serde_json::from_value(json!({
        "metadata": {"name": "cluster"},
        "spec": {"httpProxy": "http://p:3128", "httpsProxy": "http://p:3128",
                 "noProxy": "example.com", "readinessEndpoints": ["http://www.google.com"],
                 "trustedCA": {"name": "user-ca-bundle"}}
    }))?;
    let created = proxy_api.create(&pp, &proxy).await?;
    assert_eq!(created.spec, proxy.spec);
    let status = json!({"status": {"httpProxy": "http://p:3128", "noProxy": "example.com,.svc"}});
    let written = proxy_api
        .patch_status("cluster", &ps, &Patch::Merge(status))
        .await?;
    assert_eq!(
        written.status.and_then(|s| s.no_proxy).as_deref(),
        Some("example.com,.svc")
    );

    // APIServer.
    let apiserver_api: Api<APIServer> = Api::all(client.clone());
    let apiserver: APIServer = serde_json::from_value(json!({
        "metadata": {"name": "cluster"},
        "spec": {"audit": {"profile": "Default"},
                 "tlsSecurityProfile": {"type": "Custom", "custom": {
                     "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256"], "minTLSVersion": "VersionTLS12"}}}
    }))?;
    let created = apiserver_api.create(&pp, &apiserver).await?;
    assert_eq!(created.spec, apiserver.spec);
    assert_eq!(
        created.tls_profile_spec().ciphers,
        vec!["ECDHE-RSA-AES128-GCM-SHA256".to_string()]
    );
    let mut bad = apiserver.clone();
    bad.metadata.name = Some("other".into());
    if let Some(p) = bad.spec.tls_security_profile.as_mut() {
        p.type_ = Some(config::TlsProfileType::Unknown("Paranoid".into()));
    }
    assert_eq!(api_error(apiserver_api.create(&pp, &bad).await).0, 422);

    // ClusterOperator: created empty, status written as CSO does.
    let co_api: Api<ClusterOperator> = Api::all(client.clone());
    co_api
        .create(
            &pp,
            &ClusterOperator::new(
                config::STORAGE_CLUSTER_OPERATOR,
                ClusterOperatorSpec::default(),
            ),
        )
        .await?;
    let status = ClusterOperatorStatus {
        conditions: vec![Condition {
            last_transition_time: Some(time("2024-05-01T10:00:00Z")),
            ..Condition::new("Available", CONDITION_TRUE, "AsExpected", "All is well")
        }],
        versions: vec![OperandVersion {
            name: "operator".into(),
            version: "4.18.0".into(),
        }],
        related_objects: vec![
            ObjectReference {
                group: String::new(),
                resource: "namespaces".into(),
                namespace: String::new(),
                name: "openshift-cluster-csi-drivers".into(),
            },
            ObjectReference {
                group: "operator.openshift.io".into(),
                resource: "clustercsidrivers".into(),
                namespace: String::new(),
                name: CINDER_DRIVER_NAME.into(),
            },
        ],
        extension: Some(json!({"anything": 1})),
        ..Default::default()
    };
    let written = co_api
        .patch_status(
            config::STORAGE_CLUSTER_OPERATOR,
            &ps,
            &Patch::Merge(json!({"status": status})),
        )
        .await?;
    assert_eq!(written.status, Some(status));

    // CredentialsRequest.
    namespace(&client, cloudcredential::CREDENTIALS_REQUEST_NAMESPACE).await;
    let cr_api: Api<CredentialsRequest> = Api::namespaced(
        client.clone(),
        cloudcredential::CREDENTIALS_REQUEST_NAMESPACE,
    );
    let request = CredentialsRequest::new(
        cloudcredential::CINDER_CREDENTIALS_REQUEST,
        CredentialsRequestSpec::openstack(
            "openshift-cluster-csi-drivers",
            "openstack-cloud-credentials",
        ),
    );
    let created = cr_api.create(&pp, &request).await?;
    assert_eq!(created.spec, request.spec);
    let written = cr_api
        .patch_status(
            cloudcredential::CINDER_CREDENTIALS_REQUEST,
            &ps,
            &Patch::Merge(
                json!({"status": {"provisioned": true, "lastSyncGeneration": 1,
                                            "lastSyncTimestamp": "2024-05-01T10:00:00Z"}}),
            ),
        )
        .await?;
    assert!(written.status.is_some_and(|s| s.provisioned));

    // ServiceMonitor.
    namespace(&client, "openshift-cluster-csi-drivers").await;
    let sm_api: Api<ServiceMonitor> =
        Api::namespaced(client.clone(), "openshift-cluster-csi-drivers");
    let sm: ServiceMonitor = serde_json::from_value(json!({
        "metadata": {"name": "openstack-cinder-csi-driver-controller-monitor"},
        "spec": {
            "endpoints": [{
                "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                "interval": "30s", "path": "/metrics", "port": "driver-m", "scheme": "https",
                "tlsConfig": {
                    "caFile": "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
                    "serverName": "openstack-cinder-csi-driver-controller-metrics.openshift-cluster-csi-drivers.svc"
                }
            }],
            "jobLabel": "component",
            "selector": {"matchLabels": {"app": "openstack-cinder-csi-driver-controller-metrics"}}
        }
    }))?;
    let created = sm_api.create(&pp, &sm).await?;
    assert_eq!(created.spec, sm.spec);
    let mut bad = sm.clone();
    bad.metadata.name = Some("bad".into());
    bad.spec.endpoints[0].interval = Some("thirty seconds".into());
    assert_eq!(api_error(sm_api.create(&pp, &bad).await).0, 422);

    // VolumeSnapshotClass: create, read-modify-write of parameters.
    let vsc_api: Api<VolumeSnapshotClass> = Api::all(client.clone());
    let mut vsc =
        VolumeSnapshotClass::new("standard-csi", CINDER_DRIVER_NAME, DeletionPolicy::Delete);
    vsc.metadata.annotations = Some(
        [(
            snapshot::DEFAULT_SNAPSHOT_CLASS_ANNOTATION.to_string(),
            "true".to_string(),
        )]
        .into(),
    );
    vsc.parameters = Some([("force-create".to_string(), "false".to_string())].into());
    let created = vsc_api.create(&pp, &vsc).await?;
    assert_eq!(
        (
            &created.driver,
            &created.deletion_policy,
            &created.parameters
        ),
        (&vsc.driver, &vsc.deletion_policy, &vsc.parameters)
    );
    let mut live = vsc_api.get("standard-csi").await?;
    live.parameters = Some([("force-create".to_string(), "true".to_string())].into());
    let replaced = vsc_api.replace("standard-csi", &pp, &live).await?;
    assert_eq!(
        replaced
            .parameters
            .and_then(|p| p.get("force-create").cloned())
            .as_deref(),
        Some("true")
    );
    let mut bad = VolumeSnapshotClass::new(
        "bad",
        CINDER_DRIVER_NAME,
        DeletionPolicy::Unknown("Archive".into()),
    );
    bad.parameters = None;
    assert_eq!(api_error(vsc_api.create(&pp, &bad).await).0, 422);
    Ok(())
}

/// The VolumeSnapshotClass keeps root fields it does not model (`allowedTopologies`) through a
/// typed read-modify-write.
#[tokio::test]
async fn volume_snapshot_class_keeps_unmodelled_root_fields() -> TestResult {
    let (_sim, client) = start().await;
    install_all(&client).await;
    let dynamic = dynamic_api::<VolumeSnapshotClass>(&client);
    let topologies = json!([{"matchLabelExpressions": [
        {"key": "topology.cinder.csi.openstack.org/zone", "values": ["nova"]}]}]);
    dynamic
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
                "metadata": {"name": "standard-csi"},
                "driver": CINDER_DRIVER_NAME, "deletionPolicy": "Delete",
                "allowedTopologies": topologies
            }))?,
        )
        .await?;
    let api: Api<VolumeSnapshotClass> = Api::all(client.clone());
    let mut vsc = api.get("standard-csi").await?;
    vsc.deletion_policy = DeletionPolicy::Retain;
    api.replace("standard-csi", &PostParams::default(), &vsc)
        .await?;
    let after: Value = serde_json::to_value(dynamic.get("standard-csi").await?)?;
    assert_eq!(after["deletionPolicy"], "Retain");
    assert_eq!(after["allowedTopologies"], topologies);
    Ok(())
}
