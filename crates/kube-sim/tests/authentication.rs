//! Issued-tokens authentication, the mode kube-sim chooses beyond loopback (forced here on
//! 127.0.0.1): only tokens kube-sim issued authenticate, a token that is merely a user name is
//! `401 Unauthorized`, no token is `system:anonymous`, TokenReview agrees with the request
//! authenticator, the process runner's pods get working issued tokens, and the `/__sim/` admin
//! paths need a superuser's token.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::{TestResult, client_for, eventually, namespace, status};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kube_sim::{
    Authentication, KubeSim, LocalProgram, ProcessConfig, ProcessInfo, RbacConfig, SimConfig,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const IMAGE: &str = "quay.io/example/csi-operator:v4.20";

fn issued_tokens(processes: Option<ProcessConfig>) -> SimConfig {
    SimConfig {
        workloads: None,
        rbac: Some(RbacConfig::default()),
        processes,
        authentication: Some(Authentication::IssuedTokens),
        ..SimConfig::default()
    }
}

async fn start(processes: Option<ProcessConfig>) -> KubeSim {
    let sim = KubeSim::start(
        issued_tokens(processes),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim starts");
    assert_eq!(sim.authentication(), Authentication::IssuedTokens);
    sim
}

/// A kube-rs client from a kubeconfig text, as an operator builds one.
async fn client_from(kubeconfig: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).expect("kube-rs parses the kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig");
    Client::try_from(config).expect("a kube-rs client")
}

/// One raw HTTP/1.1 request: the status code and body exactly as sent.
async fn raw(sim: &KubeSim, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(sim.addr())
        .await
        .expect("connect");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: kube-sim\r\n{auth}Accept: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (code, body.to_string())
}

fn anonymous_client(sim: &KubeSim) -> Client {
    Client::try_from(Config::new(sim.url().parse().expect("a URL"))).expect("a kube-rs client")
}

#[tokio::test]
async fn only_issued_tokens_authenticate() -> TestResult {
    let sim = start(None).await;
    // The issued-token kubeconfig works, for a superuser and for anyone else.
    let kubeconfig = sim.kubeconfig("admin");
    let token = sim.token("admin");
    assert_ne!(token, "admin");
    assert!(kubeconfig.contains(&token), "{kubeconfig}");
    let admin = client_for(&sim, "admin").await;
    namespace(&admin, "team").await;
    assert_eq!(
        sim.kubeconfig("admin"),
        kubeconfig,
        "a user keeps its token"
    );
    let alice = client_for(&sim, "alice").await;
    let forbidden = status(
        Api::<ConfigMap>::namespaced(alice, "team")
            .list(&Default::default())
            .await,
    );
    assert_eq!(
        forbidden.code, 403,
        "alice is authenticated, not authorized"
    );
    assert!(
        forbidden.message.contains("User \"alice\" cannot list"),
        "{forbidden:?}"
    );

    // A token equal to a user name, or any token kube-sim did not issue, is 401.
    let guessed = client_from(&kube_sim::kubeconfig::render(&sim.url(), "admin", None)).await;
    let refused = status(
        Api::<Namespace>::all(guessed)
            .list(&Default::default())
            .await,
    );
    assert_eq!(
        (refused.code, refused.reason.as_str()),
        (401, "Unauthorized")
    );
    for guess in ["admin", "system:admin", "not-a-token"] {
        let (code, body) = raw(&sim, "GET", "/api/v1/namespaces", Some(guess)).await;
        assert_eq!(code, 401);
        let body: Value = serde_json::from_str(&body)?;
        assert_eq!(
            body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        );
    }

    // No token is system:anonymous, whom RBAC refuses.
    let anonymous = status(
        Api::<Namespace>::all(anonymous_client(&sim))
            .list(&Default::default())
            .await,
    );
    assert_eq!(anonymous.code, 403);
    assert!(
        anonymous.message.contains("User \"system:anonymous\""),
        "{anonymous:?}"
    );

    // The request log names users, never tokens; refused tokens have no user.
    let log = sim.requests();
    assert!(log.iter().any(|r| r.user == "admin" && r.code == 201));
    assert!(
        log.iter()
            .any(|r| r.user == "system:anonymous" && r.code == 403)
    );
    assert!(log.iter().any(|r| r.user.is_empty() && r.code == 401));
    let text = serde_json::to_string(&log)?;
    assert!(!text.contains(&token), "no token in the request log");
    Ok(())
}

#[tokio::test]
async fn token_review_authenticates_only_issued_tokens() -> TestResult {
    let sim = start(None).await;
    let admin = client_for(&sim, "admin").await;
    namespace(&admin, "ops").await;
    Api::<ServiceAccount>::namespaced(admin.clone(), "ops")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "operator"}}))?,
        )
        .await?;
    let reviews: Api<TokenReview> = Api::all(admin);
    let review = |token: String| {
        let reviews = reviews.clone();
        async move {
            let r: TokenReview =
                serde_json::from_value(json!({"spec": {"token": token, "audiences": ["api"]}}))
                    .expect("a TokenReview");
            reviews
                .create(&PostParams::default(), &r)
                .await
                .expect("a review")
                .status
                .expect("a review status")
        }
    };
    let operator = "system:serviceaccount:ops:operator";
    let issued = review(sim.token(operator)).await;
    assert_eq!(issued.authenticated, Some(true), "{issued:?}");
    let user = issued.user.expect("a user");
    assert_eq!(user.username.as_deref(), Some(operator));
    assert!(
        user.groups
            .unwrap_or_default()
            .contains(&"system:serviceaccounts:ops".to_string())
    );
    let admin_review = review(sim.token("admin")).await;
    assert_eq!(admin_review.authenticated, Some(true));
    assert_eq!(
        admin_review.user.and_then(|u| u.username).as_deref(),
        Some("admin")
    );

    for guess in [operator, "admin", "garbage"] {
        let refused = review(guess.to_string()).await;
        assert_ne!(refused.authenticated, Some(true), "{guess}: {refused:?}");
        assert_eq!(refused.error.as_deref(), Some("invalid bearer token"));
    }
    Ok(())
}

#[tokio::test]
async fn a_process_runner_pod_gets_a_working_issued_token() -> TestResult {
    let processes = ProcessConfig {
        images: BTreeMap::from([(
            IMAGE.to_string(),
            LocalProgram {
                program: "/bin/sh".into(),
                drop_leading: 1,
                extra_args: Vec::new(),
                env: BTreeMap::new(),
            },
        )]),
        log_dir: None,
        kubeconfig_dir: None,
    };
    let sim = start(Some(processes)).await;
    let admin = client_for(&sim, "admin").await;
    let ns = namespace(&admin, "storage").await;
    Api::<ServiceAccount>::namespaced(admin.clone(), &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "operator-sa"}}))?,
        )
        .await?;
    Api::<RoleBinding>::namespaced(admin.clone(), &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "view"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "operator-sa", "namespace": ns}]}))?,
        )
        .await?;
    Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}))?,
        )
        .await?;
    let script = r#"echo "kubeconfig=$KUBECONFIG"; echo ready; exec sleep 60"#;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "operator"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "operator"}},
            "template": {"metadata": {"labels": {"app": "operator"}}, "spec": {
                "serviceAccountName": "operator-sa",
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "operator", "image": IMAGE,
                                "command": ["csi-operator", "-c"], "args": [script]}],
            }},
        },
    }))?;
    Api::<Deployment>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &deployment)
        .await?;
    let out = eventually("the operator pod prints its kubeconfig", || async {
        let pods: Vec<ProcessInfo> = sim
            .processes()
            .into_iter()
            .filter(|p| p.namespace == "storage" && p.running())
            .collect();
        let [pod] = pods.as_slice() else { return None };
        let out = sim.process_output("storage", &pod.pod)?;
        out.contains("\nready").then_some(out)
    })
    .await;
    let path: PathBuf = out
        .lines()
        .find_map(|l| l.strip_prefix("kubeconfig="))
        .expect("the pod's KUBECONFIG")
        .into();
    let kubeconfig = std::fs::read_to_string(&path)?;
    let user = "system:serviceaccount:storage:operator-sa";
    assert!(
        kubeconfig.contains(&sim.token(user)),
        "the service account's issued token"
    );
    assert!(!kubeconfig.contains(&format!("token: \"{user}\"")));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)?.permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a credential is readable by its owner only");
    }
    let pod_client = client_from(&kubeconfig).await;
    Api::<ConfigMap>::namespaced(pod_client, &ns)
        .list(&Default::default())
        .await?;
    assert!(
        sim.requests()
            .iter()
            .any(|r| r.user == user && r.resource == "/configmaps" && r.code == 200),
        "the pod's request is its service account's"
    );
    Ok(())
}

#[tokio::test]
async fn admin_paths_need_a_superusers_issued_token() -> TestResult {
    let sim = start(None).await;
    let admin_token = sim.token("admin");
    let (code, body) = raw(&sim, "GET", "/__sim/requests", Some(&admin_token)).await;
    assert_eq!(code, 200, "{body}");
    let (code, _) = raw(&sim, "GET", "/__sim/requests", Some("admin")).await;
    assert_eq!(code, 401, "a guessed token");
    let (code, body) = raw(&sim, "POST", "/__sim/compact", None).await;
    assert_eq!(code, 403, "anonymous: {body}");
    let alice = sim.token("alice");
    let (code, body) = raw(&sim, "DELETE", "/__sim/faults", Some(&alice)).await;
    assert_eq!(code, 403, "not a superuser: {body}");
    let status: Value = serde_json::from_str(&body)?;
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("User \"alice\" cannot delete path \"/__sim/faults\""),
        "{status}"
    );
    Ok(())
}

#[tokio::test]
async fn loopback_keeps_user_name_tokens_by_default() -> TestResult {
    let sim = KubeSim::start(SimConfig::default(), "127.0.0.1:0".parse()?).await?;
    assert_eq!(sim.authentication(), Authentication::UserNameTokens);
    assert_eq!(sim.token("admin"), "admin");
    let (code, _) = raw(&sim, "GET", "/__sim/requests", None).await;
    assert_eq!(code, 200, "admin paths stay open on loopback");
    Ok(())
}
