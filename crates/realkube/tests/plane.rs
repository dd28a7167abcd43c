//! The harness itself on the real control plane: both modes come up, the real admission chain
//! decides (a privileged pod is refused in OpenShift mode with the real `FailedCreate`), the
//! real scheduler places pods on the stand-in's Nodes, a mapped image runs as a process under
//! its ServiceAccount's token, and the audit log reads as a request log.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod};
use kube::api::{Api, ListParams, PostParams};
use realkube::kubelet::{self, Kubelet, LocalProgram};
use realkube::{ControlPlane, Mode, Options};
use serde_json::json;

async fn wait<T>(what: &str, plane: &mut ControlPlane, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        plane.check_alive().expect("the plane runs");
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The message of the first FailedCreate Event in `namespace`: the controller-manager's report
/// of a pod that admission refused.
async fn failed_create(client: &kube::Client, namespace: &str, plane: &mut ControlPlane) -> String {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    wait(
        &format!("a FailedCreate in {namespace}"),
        plane,
        async || {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("FailedCreate"))
                .and_then(|e| e.message)
        },
    )
    .await
}

fn deployment(name: &str, image: &str, privileged: bool) -> Deployment {
    let security = if privileged {
        json!({"privileged": true})
    } else {
        json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
    };
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "main", "image": image, "command": ["sleep", "$(SECONDS_TO_SLEEP)"],
                    "env": [{"name": "SECONDS_TO_SLEEP", "value": "600"}, {"name": "ME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "securityContext": security,
                }]},
            },
        },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openshift_mode_admits_schedules_and_runs_pods_as_the_real_cluster_does() {
    let mut plane = ControlPlane::start(Options::full(Mode::OpenShift))
        .await
        .expect("the plane starts");
    let config = kubelet::Config::cluster(1, 2).with_image(
        "example/sleep:1",
        LocalProgram {
            program: "/bin/sleep".into(),
            drop_leading: 1,
            extra_args: Vec::new(),
            env: BTreeMap::new(),
        },
    );
    let kubelet = Kubelet::start(&plane, config)
        .await
        .expect("the kubelet stand-in starts");
    let client = plane.admin_client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "smoke"}})).unwrap(),
        )
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "smoke");
    deployments
        .create(
            &PostParams::default(),
            &deployment("sleeper", "example/sleep:1", false),
        )
        .await
        .unwrap();
    deployments
        .create(
            &PostParams::default(),
            &deployment("privileged", "example/other:1", true),
        )
        .await
        .unwrap();

    // The restricted pod is admitted, scheduled on a worker by the real scheduler, and runs.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "smoke");
    let pod = wait("the sleeper pod Ready", &mut plane, async || {
        let list = pods
            .list(&ListParams::default().labels("app=sleeper"))
            .await
            .ok()?;
        let pod = list.items.into_iter().next()?;
        let ready = pod
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        ready.then_some(pod)
    })
    .await;
    let node = pod.spec.as_ref().unwrap().node_name.clone().unwrap();
    assert!(
        node.starts_with("worker-"),
        "a pod without a toleration lands on a worker, not {node}"
    );
    let scc = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("openshift.io/scc"))
        .cloned();
    assert_eq!(
        scc.as_deref(),
        Some("restricted-v2"),
        "admitted by the real SCC admission"
    );
    let processes = kubelet.processes();
    assert_eq!(processes.len(), 1, "{}", kubelet.report());
    assert!(processes[0].pid.is_some(), "{}", kubelet.report());

    // The privileged one is refused (by restricted Pod Security, the default): the real
    // controller-manager's FailedCreate.
    let refusal = failed_create(&client, "smoke", &mut plane).await;
    assert!(refusal.contains("forbidden"), "{refusal}");

    // Where Pod Security allows it, SCC admission alone decides, on the pod's ServiceAccount:
    // the controller-manager creates pods as its controllers' ServiceAccounts (as OpenShift's
    // does), never as an identity that may use every SCC.
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "smoke-privileged", "labels": {
                "pod-security.kubernetes.io/enforce": "privileged",
                "security.openshift.io/scc.podSecurityLabelSync": "false"}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<Deployment>::namespaced(client.clone(), "smoke-privileged")
        .create(
            &PostParams::default(),
            &deployment("privileged", "example/other:1", true),
        )
        .await
        .unwrap();
    let refusal = failed_create(&client, "smoke-privileged", &mut plane).await;
    assert!(refusal.contains("security context constraint"), "{refusal}");

    // The audit log: our create, as the admin, and the controller-manager's pod creates.
    let requests = plane.requests();
    assert!(requests.iter().any(|r| r.verb == "create"
        && r.resource == "apps/deployments"
        && r.name == "sleeper"
        && r.user == realkube::ADMIN_USER));
    assert!(
        requests
            .iter()
            .any(|r| r.verb == "create" && r.resource == "/pods" && r.code == 403),
        "the refused pod create is in the audit log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_mode_has_no_openshift_api_and_rbac_is_the_servers() {
    let plane = ControlPlane::start(Options::api_only(Mode::Kubernetes))
        .await
        .expect("the plane starts");
    let client = plane.admin_client().await.unwrap();
    let groups = client.list_api_groups().await.unwrap();
    assert!(
        groups
            .groups
            .iter()
            .all(|g| !g.name.ends_with("openshift.io")),
        "no OpenShift API on plain Kubernetes"
    );
    // A ServiceAccount with no grant is refused by the real RBAC.
    let sa: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "default");
    sa.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "nobody"}})).unwrap(),
    )
    .await
    .unwrap();
    let nobody = plane
        .service_account_client("default", "nobody")
        .await
        .unwrap();
    let err = Api::<Namespace>::all(nobody)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err}"
    );
    let refused = plane
        .requests()
        .into_iter()
        .find(|r| r.user == "system:serviceaccount:default:nobody" && r.code == 403);
    assert!(refused.is_some(), "the refusal is in the audit log");
}
