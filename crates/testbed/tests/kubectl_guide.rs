//! The guide's commands with the real `kubectl` against the testbed: an administrator
//! creates a claim of the installed Cinder driver's class, sees it Bound in `kubectl get pvc`
//! and reads `ProvisioningSucceeded` in `kubectl describe pvc`; a Manila claim is shared
//! ReadWriteMany.
//!
//! Uses `KUBECTL` or the `kubectl` on PATH; without one the test says so and passes, as the
//! guides' own test will only run where kubectl is installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::storage::v1::CSIDriver;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use testbed::{DRIVER_NAMESPACE, Settings, Testbed};

fn kubectl() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KUBECTL").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
}

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

/// Runs kubectl off the runtime's threads (kube-sim serves on them).
async fn run(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let (kubectl, kubeconfig) = (kubectl.to_path_buf(), kubeconfig.to_path_buf());
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let out = Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(&args)
            .output()
            .expect("kubectl runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    })
    .await
    .expect("kubectl thread")
}

async fn install(bed: &Testbed, driver: &str, controller: &str) {
    Api::<CSIDriver>::all(bed.client.clone())
        .create(
            &PostParams::default(),
            &typed(
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                "metadata": {"name": driver}, "spec": {"attachRequired": false}}),
            ),
        )
        .await
        .expect("CSIDriver");
    Api::<Deployment>::namespaced(bed.client.clone(), DRIVER_NAMESPACE)
        .create(
            &PostParams::default(),
            &typed(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": controller},
                "spec": {"selector": {"matchLabels": {"app": controller}},
                    "template": {"metadata": {"labels": {"app": controller}},
                        "spec": {"containers": [{"name": "driver", "image": "quay.io/example/driver:v1"}]}}}})),
        )
        .await
        .expect("Deployment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_a_claim_and_see_it_bound_with_kubectl() {
    let Some(kubectl) = kubectl() else {
        eprintln!("no kubectl on PATH and KUBECTL unset: skipping");
        return;
    };
    let bed = Testbed::start(Settings::default()).await.expect("testbed");
    install(
        &bed,
        "cinder.csi.openstack.org",
        "openstack-cinder-csi-driver-controller",
    )
    .await;
    install(
        &bed,
        "manila.csi.openstack.org",
        "openstack-manila-csi-controllerplugin",
    )
    .await;
    let dir = std::env::temp_dir().join(format!("testbed-kubectl-guide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, bed.kube.kubeconfig("admin")).expect("kubeconfig");
    let manifest = dir.join("storage.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard-csi\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: cinder.csi.openstack.org\nreclaimPolicy: Delete\nallowVolumeExpansion: true\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: csi-manila-default\nprovisioner: manila.csi.openstack.org\nparameters:\n  type: default\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: shared\nspec:\n  storageClassName: csi-manila-default\n  accessModes: [ReadWriteMany]\n  resources:\n    requests:\n      storage: 2Gi\n",
    )
    .expect("manifest");
    let (ok, out) = run(
        &kubectl,
        &kubeconfig,
        &["apply", "-f", &manifest.display().to_string()],
    )
    .await;
    assert!(ok, "{out}");
    assert!(out.contains("persistentvolumeclaim/data created"), "{out}");

    let start = Instant::now();
    let table = loop {
        let (ok, out) = run(&kubectl, &kubeconfig, &["get", "pvc"]).await;
        assert!(ok, "{out}");
        let bound = out
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some("Bound"))
            .count();
        if bound == 2 {
            break out;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never Bound:\n{out}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let row = |name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let data = row("data");
    assert!(data[2].starts_with("pvc-"), "{table}");
    assert_eq!(data[3..6], ["1Gi", "RWO", "standard-csi"], "{table}");
    let shared = row("shared");
    assert_eq!(
        shared[3..6],
        ["2Gi", "RWX", "csi-manila-default"],
        "{table}"
    );

    let (ok, out) = run(&kubectl, &kubeconfig, &["describe", "pvc", "data"]).await;
    eprintln!("{table}\n{out}");
    assert!(ok, "{out}");
    assert!(
        out.contains("ProvisioningSucceeded")
            && out.contains("Successfully provisioned volume pvc-"),
        "{out}"
    );
    let (ok, out) = run(&kubectl, &kubeconfig, &["get", "pv"]).await;
    assert!(ok, "{out}");
    assert!(
        out.contains("default/data") && out.contains("default/shared"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
