//! The process runner through the API, as the demo and the end-to-end tests use it: a
//! Deployment whose image maps to a local program (here `/bin/sh`) runs it as a real process,
//! with the pod's command line and environment and a kubeconfig for its service account; the
//! Deployment is available only while the process runs; template changes, scaling and
//! deletion stop and start it; exits are restarted with back-off; nothing outlives the sim.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{TestResult, eventually, namespace, start_with};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_sim::{KubeSim, LocalProgram, ProcessConfig, ProcessInfo, ProcessState, SimConfig};
use serde_json::{Value, json};

const IMAGE: &str = "quay.io/example/csi-operator:v4.20";

/// `/bin/sh` standing in for the operator binary: the image's command is
/// `[csi-operator, -c]`, so dropping one entry leaves `sh -c <script>`.
fn shell(env: &[(&str, &str)]) -> LocalProgram {
    LocalProgram {
        program: "/bin/sh".into(),
        drop_leading: 1,
        extra_args: vec!["extra-arg".into()],
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn config(program: LocalProgram, log_dir: Option<PathBuf>) -> SimConfig {
    SimConfig {
        processes: Some(ProcessConfig {
            images: BTreeMap::from([(IMAGE.to_string(), program)]),
            log_dir,
            kubeconfig_dir: None,
        }),
        ..SimConfig::default()
    }
}

/// A scratch directory for one test, removed by the caller at the end.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("kube-sim-processes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A Deployment running `script` under `sh -c`, with extra pod spec and container fields.
fn operator(name: &str, script: &str, pod_spec: Value, container: Value) -> Deployment {
    let mut c = json!({"name": "operator", "image": IMAGE, "command": ["csi-operator", "-c"], "args": [script]});
    merge(&mut c, container);
    let mut spec = json!({"containers": [c], "terminationGracePeriodSeconds": 5});
    merge(&mut spec, pod_spec);
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }))
    .expect("a Deployment")
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

async fn create(client: &Client, ns: &str, dep: &Deployment) -> TestResult {
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), dep)
        .await?;
    Ok(())
}

async fn patch(client: &Client, ns: &str, name: &str, body: Value) -> TestResult {
    Api::<Deployment>::namespaced(client.clone(), ns)
        .patch(name, &PatchParams::default(), &Patch::Strategic(body))
        .await?;
    Ok(())
}

/// The status of the Deployment's `type` condition.
async fn condition(client: &Client, ns: &str, name: &str, type_: &str) -> Option<(String, String)> {
    let dep = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .ok()?;
    let v = serde_json::to_value(dep).ok()?;
    v.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
}

async fn available(client: &Client, ns: &str, name: &str) -> Option<bool> {
    condition(client, ns, name, "Available")
        .await
        .map(|(s, _)| s == "True")
}

async fn wait_available(client: &Client, ns: &str, name: &str, want: bool) {
    eventually(&format!("{ns}/{name} Available={want}"), || async {
        (available(client, ns, name).await == Some(want)).then_some(())
    })
    .await;
}

fn pods_of(sim: &KubeSim, ns: &str, deployment: &str) -> Vec<ProcessInfo> {
    sim.processes()
        .into_iter()
        .filter(|p| p.namespace == ns && p.deployment == deployment)
        .collect()
}

/// The single running pod of the Deployment, once its output contains `marker`.
async fn running_with(
    sim: &KubeSim,
    ns: &str,
    deployment: &str,
    marker: &str,
) -> (ProcessInfo, String) {
    eventually(
        &format!("a running pod of {ns}/{deployment} printing {marker:?}"),
        || async {
            let pods: Vec<ProcessInfo> = pods_of(sim, ns, deployment)
                .into_iter()
                .filter(ProcessInfo::running)
                .collect();
            let [pod] = pods.as_slice() else { return None };
            let out = sim.process_output(ns, &pod.pod)?;
            out.contains(marker).then(|| (pod.clone(), out))
        },
    )
    .await
}

/// Gone, or a zombie nobody has reaped yet (it no longer runs either way).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

async fn wait_gone(pid: u32) {
    eventually(&format!("process {pid} to end"), || async {
        gone(pid).then_some(())
    })
    .await;
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_mapped_deployment_runs_with_the_pods_environment_and_service_account() -> TestResult {
    let (sim, client) = start_with(config(shell(&[("FROM_PROGRAM", "yes")]), None)).await;
    let ns = namespace(&client, "storage").await;
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "settings"}, "data": {"level": "4", "extra": "e"}}),
            )?,
        )
        .await?;
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "creds"}, "stringData": {"token": "s3cr3t"}}),
            )?,
        )
        .await?;
    let script = r#"echo "pod=$POD_NAME"; echo "ns=$POD_NAMESPACE"; echo "sa=$SA"; echo "node=$NODE"; echo "ip=$IP"
echo "level=$LEVEL"; echo "token=$TOKEN"; echo "optional=${OPTIONAL-unset}"; echo "from-env-from=$CFG_extra"
echo "program-env=$FROM_PROGRAM"; echo "cargo-vars=$(env | grep -c '^CARGO_')"; echo "argv=$0 $*"
echo "kubeconfig=$KUBECONFIG"; cat "$KUBECONFIG"; echo ready; exec sleep 60"#;
    let dep = operator(
        "csi-operator",
        script,
        json!({"serviceAccountName": "operator-sa"}),
        json!({
            // $(LEVEL) in args is expanded by kube-sim as the kubelet does; $0/$* are sh's.
            "args": [script, "$(LEVEL)"],
            "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                {"name": "OPTIONAL", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "x", "optional": true}}},
            ],
        }),
    );
    create(&client, &ns, &dep).await?;
    // A Deployment with another image keeps its virtual pods.
    let other = operator(
        "other",
        "exit 1",
        json!({}),
        json!({"image": "registry.example/other:1"}),
    );
    create(&client, &ns, &other).await?;

    let (pod, out) = running_with(&sim, &ns, "csi-operator", "\nready").await;
    assert!(
        pod.pod
            .starts_with(&format!("csi-operator-{}-", pod.template_hash)),
        "{pod:?}"
    );
    assert_eq!(
        pod.pod.len(),
        format!("csi-operator-{}-", pod.template_hash).len() + 5
    );
    assert_eq!(line(&out, "pod="), pod.pod);
    assert_eq!(line(&out, "ns="), ns);
    assert_eq!(line(&out, "sa="), "operator-sa");
    assert_eq!(line(&out, "node="), "kube-sim");
    assert_eq!(line(&out, "ip="), "127.0.0.1");
    assert_eq!(line(&out, "level="), "4");
    assert_eq!(line(&out, "token="), "s3cr3t");
    assert_eq!(line(&out, "optional="), "unset");
    assert_eq!(line(&out, "from-env-from="), "e");
    assert_eq!(line(&out, "program-env="), "yes");
    assert_eq!(line(&out, "cargo-vars="), "0", "the environment is clean");
    assert_eq!(
        line(&out, "argv="),
        "4 extra-arg",
        "pod args, expanded, then the extra args"
    );
    assert!(
        out.contains("token: \"system:serviceaccount:storage:operator-sa\""),
        "{out}"
    );
    assert!(out.contains(&format!("server: {}", sim.url())), "{out}");
    assert!(Path::new(line(&out, "kubeconfig=")).is_file());
    assert_eq!(
        pods_of(&sim, &ns, "other"),
        [],
        "unmapped images do not run"
    );

    wait_available(&client, &ns, "csi-operator", true).await;
    let listed: Value = serde_json::from_str(
        &client
            .request_text(http::Request::get("/__sim/processes").body(Vec::new())?)
            .await?,
    )?;
    assert_eq!(listed[0]["pod"], pod.pod.as_str(), "{listed}");
    assert_eq!(listed[0]["state"], "running", "{listed}");
    assert_eq!(
        listed[0]["pid"],
        pod.pid.map(Value::from).unwrap_or_default()
    );
    Ok(())
}

#[tokio::test]
async fn the_deployment_is_available_only_while_its_process_runs() -> TestResult {
    let dir = scratch("crashloop");
    let (sim, client) = start_with(SimConfig {
        workloads: Some(kube_sim::WorkloadConfig {
            // Longer than a crashing process lives: only a steady run makes the pod ready.
            delay_ms: 700,
            ..Default::default()
        }),
        ..config(shell(&[]), None)
    })
    .await;
    let ns = namespace(&client, "crash").await;
    let crash = dir.join("crash");
    std::fs::create_dir_all(&dir)?;
    // Runs until the file `crash` exists, then exits 3 (and again at every restart).
    let script = format!(
        "echo up; while [ ! -e '{}' ]; do sleep 0.05; done; exit 3",
        crash.display()
    );
    create(&client, &ns, &operator("op", &script, json!({}), json!({}))).await?;
    wait_available(&client, &ns, "op", true).await;
    let first = running_with(&sim, &ns, "op", "up").await.0;
    assert_eq!(first.restarts, 0);

    std::fs::write(&crash, "")?;
    wait_available(&client, &ns, "op", false).await;
    let looping = eventually("two restarts in back-off", || async {
        let pods = pods_of(&sim, &ns, "op");
        let [p] = pods.as_slice() else { return None };
        matches!(&p.state, ProcessState::Waiting { reason, .. } if reason == "CrashLoopBackOff" && p.restarts >= 2).then(|| p.clone())
    })
    .await;
    assert_eq!(looping.pod, first.pod, "restarts keep the pod");
    assert_eq!(looping.last_exit.as_deref(), Some("exit status: 3"));
    assert_eq!(looping.pid, None);
    assert_eq!(
        available(&client, &ns, "op").await,
        Some(false),
        "a crash-looping pod is not available"
    );
    let out = sim.process_output(&ns, &first.pod).unwrap_or_default();
    assert!(
        out.contains("exited: exit status: 3; restarting in 2s"),
        "back-off doubles: {out}"
    );

    std::fs::remove_file(&crash)?;
    // The back-off may have grown to several seconds by now: a longer deadline.
    let until = tokio::time::Instant::now() + Duration::from_secs(45);
    while available(&client, &ns, "op").await != Some(true) {
        assert!(
            tokio::time::Instant::now() < until,
            "timed out waiting for the restarted pod to be available"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test]
async fn a_template_change_restarts_the_process_with_the_new_env() -> TestResult {
    let (sim, client) = start_with(config(shell(&[]), None)).await;
    let ns = namespace(&client, "roll").await;
    let script = "echo version=$VERSION; exec sleep 60";
    for (name, strategy) in [
        ("rolling", json!({"type": "RollingUpdate"})),
        ("recreate", json!({"type": "Recreate"})),
    ] {
        let mut dep = operator(
            name,
            script,
            json!({}),
            json!({"env": [{"name": "VERSION", "value": "1"}]}),
        );
        if let Some(spec) = dep.spec.as_mut() {
            spec.strategy = Some(serde_json::from_value(strategy)?);
        }
        create(&client, &ns, &dep).await?;
        let (old, _) = running_with(&sim, &ns, name, "version=1").await;
        wait_available(&client, &ns, name, true).await;

        patch(
            &client,
            &ns,
            name,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "operator", "env": [{"name": "VERSION", "value": "2"}]}]}}}}),
        )
        .await?;
        let (new, _) = running_with(&sim, &ns, name, "version=2").await;
        assert_ne!(new.template_hash, old.template_hash);
        assert_ne!(new.pod, old.pod, "a new pod for the new template");
        wait_gone(old.pid.unwrap_or_default()).await;
        eventually("the old pod to be forgotten", || async {
            (pods_of(&sim, &ns, name).len() == 1).then_some(())
        })
        .await;
        wait_available(&client, &ns, name, true).await;
    }
    Ok(())
}

#[tokio::test]
async fn scaling_to_zero_and_deleting_stop_the_process_with_sigterm() -> TestResult {
    let dir = scratch("logs");
    let (sim, client) = start_with(config(shell(&[]), Some(dir.clone()))).await;
    let ns = namespace(&client, "stop").await;
    let script = "trap 'echo got-term; exit 0' TERM; echo started; while true; do sleep 0.05; done";
    create(&client, &ns, &operator("op", script, json!({}), json!({}))).await?;
    let (first, _) = running_with(&sim, &ns, "op", "started").await;
    let log = first.log.clone().unwrap_or_default();
    assert_eq!(log, dir.join(format!("{ns}_{}.log", first.pod)));

    patch(&client, &ns, "op", json!({"spec": {"replicas": 0}})).await?;
    wait_gone(first.pid.unwrap_or_default()).await;
    eventually("no pods at zero replicas", || async {
        pods_of(&sim, &ns, "op").is_empty().then_some(())
    })
    .await;
    let text = std::fs::read_to_string(&log)?;
    assert!(text.contains("got-term"), "SIGTERM first: {text}");
    assert!(text.contains("stopped: exit status: 0"), "{text}");

    patch(&client, &ns, "op", json!({"spec": {"replicas": 1}})).await?;
    let second = eventually("a pod started again", || async {
        pods_of(&sim, &ns, "op").into_iter().find(|p| p.running())
    })
    .await;
    assert_eq!(
        second.pod, first.pod,
        "the same template and replica give the same pod name"
    );
    eventually("the log appended", || async {
        let text = std::fs::read_to_string(&log).ok()?;
        (text.matches("started process").count() == 2).then_some(())
    })
    .await;

    Api::<Deployment>::namespaced(client.clone(), &ns)
        .delete("op", &DeleteParams::default())
        .await?;
    wait_gone(second.pid.unwrap_or_default()).await;
    eventually("no pods after deletion", || async {
        sim.processes().is_empty().then_some(())
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test]
async fn a_missing_program_never_becomes_available() -> TestResult {
    let program = LocalProgram {
        program: "/nonexistent/csi-operator".into(),
        ..shell(&[])
    };
    let (sim, client) = start_with(config(program, None)).await;
    let ns = namespace(&client, "missing").await;
    let mut dep = operator("op", "exit 0", json!({}), json!({}));
    if let Some(spec) = dep.spec.as_mut() {
        spec.progress_deadline_seconds = Some(1);
    }
    create(&client, &ns, &dep).await?;
    let pod = eventually("a RunContainerError", || async {
        pods_of(&sim, &ns, "op").into_iter().find(|p| {
            matches!(&p.state, ProcessState::Waiting { reason, message } if reason == "RunContainerError" && message.contains("/nonexistent/csi-operator"))
        })
    })
    .await;
    assert_eq!(pod.pid, None);
    eventually("the rollout to time out", || async {
        (condition(&client, &ns, "op", "Progressing").await?.1 == "ProgressDeadlineExceeded")
            .then_some(())
    })
    .await;
    assert_eq!(available(&client, &ns, "op").await, Some(false));
    eventually("retries counted as restarts", || async {
        pods_of(&sim, &ns, "op")
            .first()
            .is_some_and(|p| p.restarts >= 1)
            .then_some(())
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn a_missing_secret_holds_the_pod_until_it_appears() -> TestResult {
    let (sim, client) = start_with(config(shell(&[]), None)).await;
    let ns = namespace(&client, "config").await;
    let dep = operator(
        "op",
        "echo password-is-$PASSWORD; exec sleep 60",
        json!({}),
        json!({"env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}]}),
    );
    create(&client, &ns, &dep).await?;
    eventually("a CreateContainerConfigError", || async {
        pods_of(&sim, &ns, "op").into_iter().find(|p| {
            p.state
                == ProcessState::Waiting {
                    reason: "CreateContainerConfigError".into(),
                    message: "secret \"creds\" not found".into(),
                }
        })
    })
    .await;
    wait_available(&client, &ns, "op", false).await;

    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "creds"}, "stringData": {"other": "x"}}),
            )?,
        )
        .await?;
    eventually("the missing key reported", || async {
        pods_of(&sim, &ns, "op").into_iter().find(|p| {
            matches!(&p.state, ProcessState::Waiting { message, .. } if message == &format!("couldn't find key password in Secret {ns}/creds"))
        })
    })
    .await;

    Api::<Secret>::namespaced(client.clone(), &ns)
        .patch(
            "creds",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": "pw"}})),
        )
        .await?;
    let (pod, _) = running_with(&sim, &ns, "op", "password-is-pw").await;
    assert_eq!(pod.restarts, 0, "configuration errors are not restarts");
    wait_available(&client, &ns, "op", true).await;
    Ok(())
}

#[tokio::test]
async fn dropping_the_simulator_kills_its_processes() -> TestResult {
    let (sim, client) = start_with(config(shell(&[]), None)).await;
    let ns = namespace(&client, "drop").await;
    // A background child too: the whole process group goes.
    create(
        &client,
        &ns,
        &operator(
            "op",
            "sleep 60 & echo bg=$!; exec sleep 60",
            json!({}),
            json!({}),
        ),
    )
    .await?;
    let (pod, out) = running_with(&sim, &ns, "op", "bg=").await;
    let leader = pod.pid.unwrap_or_default();
    let background: u32 = line(&out, "bg=").trim().parse()?;
    assert!(!gone(leader) && !gone(background));
    drop(client);
    drop(sim);
    wait_gone(leader).await;
    wait_gone(background).await;
    Ok(())
}

#[tokio::test]
async fn processes_can_be_switched_on_at_runtime() -> TestResult {
    let (sim, client) = start_with(SimConfig::default()).await;
    let ns = namespace(&client, "later").await;
    create(
        &client,
        &ns,
        &operator("op", "echo hello; exec sleep 60", json!({}), json!({})),
    )
    .await?;
    wait_available(&client, &ns, "op", true).await;
    assert!(sim.processes().is_empty(), "no configuration, virtual pods");

    sim.set_processes(Some(ProcessConfig::default().with_image(IMAGE, shell(&[]))));
    let (pod, _) = running_with(&sim, &ns, "op", "hello").await;
    sim.set_processes(None);
    wait_gone(pod.pid.unwrap_or_default()).await;
    eventually("no pods once switched off", || async {
        sim.processes().is_empty().then_some(())
    })
    .await;
    Ok(())
}
