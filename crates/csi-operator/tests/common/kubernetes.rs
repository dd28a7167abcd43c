//! The plain-Kubernetes install base, `manifests/kubernetes/`, for the tests that check it
//! (`kubernetes_manifests.rs`) and install from it (`kubernetes_e2e.rs`): generating it from
//! the assets, reading it as `kubectl apply -k` reads it (the files `kustomization.yaml`
//! lists, in that order), and applying and deleting it as kubectl does.

use std::path::{Path, PathBuf};

use cluster_storage::kubernetes::{self, KubernetesInputs, ManifestFile};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

/// `manifests/kubernetes/`.
pub fn kubernetes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/kubernetes")
}

/// The operator image the base names: this crate's version as the tag.
pub fn operator_image() -> String {
    format!(
        "{}:v{}",
        kubernetes::OPERATOR_IMAGE,
        env!("CARGO_PKG_VERSION")
    )
}

/// `charts/openstack-csi-operators/`.
pub fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../charts")
        .join(cluster_storage::chart::CHART_NAME)
}

fn inputs() -> KubernetesInputs {
    let openshift = testbed::cvo::load(&super::manifest_dir())
        .expect("manifests/openshift/ loads")
        .into_iter()
        .map(|m| m.object)
        .collect();
    KubernetesInputs {
        operator_image: operator_image(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        openshift,
    }
}

/// What the chart generator writes: every file of the chart, as `(path under the chart, text)`.
pub fn generate_chart() -> Vec<(String, String)> {
    let inputs = inputs();
    let files: Vec<ManifestFile> = kubernetes::manifests(&inputs).expect("the base generates");
    let rbac_path = kubernetes_dir().join("../adopt-helm-cinder/rbac.yaml");
    let rbac = std::fs::read_to_string(&rbac_path).expect("manifests/adopt-helm-cinder/rbac.yaml");
    let adoption_rbac =
        operator_kit::assets::parse_values("rbac.yaml", &rbac).expect("rbac.yaml parses");
    cluster_storage::chart::chart(&cluster_storage::chart::ChartInputs {
        kubernetes: &inputs,
        files: &files,
        adoption_rbac,
    })
    .expect("the chart generates")
    .into_iter()
    .map(|f| (f.path, f.text))
    .collect()
}

/// What the generator writes: every object file and `kustomization.yaml`, as `(name, text)`.
pub fn generate() -> Vec<(String, String)> {
    let inputs = inputs();
    let files: Vec<ManifestFile> = kubernetes::manifests(&inputs).expect("the base generates");
    let mut out: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                kubernetes::file_text(f).expect("serializes"),
            )
        })
        .collect();
    out.push((
        "kustomization.yaml".to_owned(),
        kubernetes::kustomization(&files, &inputs),
    ));
    for (name, text) in kubernetes::monitoring_files(&files).expect("the monitoring generates") {
        out.push((format!("monitoring/{name}"), text));
    }
    out
}

/// The `resources:` of `manifests/kubernetes/kustomization.yaml`, in order.
pub fn kustomization_resources() -> Vec<String> {
    let text = std::fs::read_to_string(kubernetes_dir().join("kustomization.yaml"))
        .expect("kustomization.yaml");
    let k = operator_kit::assets::parse_values("kustomization.yaml", &text)
        .expect("kustomization.yaml parses")
        .pop()
        .expect("one document");
    k["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().expect("a file name").to_owned())
        .collect()
}

/// The objects `kubectl apply -k manifests/kubernetes` applies, in order, with the
/// kustomization's image override applied (there is one: the operator image).
pub fn base_objects() -> Vec<Value> {
    kustomization_resources()
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(kubernetes_dir().join(f))
                .unwrap_or_else(|e| panic!("{f}: {e}"));
            let mut docs =
                operator_kit::assets::parse_values(f, &text).unwrap_or_else(|e| panic!("{f}: {e}"));
            assert_eq!(docs.len(), 1, "{f}: one object per file");
            docs.remove(0)
        })
        .collect()
}

/// The operator Deployments of the base.
pub fn operator_deployments(objects: &[Value]) -> Vec<&Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect()
}

/// Applies `objects` as `kubectl apply` does: the REST mappings are resolved from one
/// discovery before anything is written (so a custom resource whose CRD is in the same set
/// fails, as with kubectl), then each object is created with the last-applied annotation, or
/// merge-patched when it exists. Returns the refusals, one line each.
pub async fn kubectl_apply(client: &kube::Client, objects: &[Value]) -> Vec<String> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let mut refused = Vec::new();
    for o in objects {
        let kind = o["kind"].as_str().unwrap_or_default();
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let (group, version) = match o["apiVersion"].as_str().unwrap_or_default().split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", o["apiVersion"].as_str().unwrap_or_default()),
        };
        let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
        let Some((ar, caps)) = discovery.resolve_gvk(&gvk) else {
            refused.push(format!(
                "{kind} {name}: resource mapping not found; ensure CRDs are installed first"
            ));
            continue;
        };
        let api: Api<DynamicObject> = match (&caps.scope, o["metadata"]["namespace"].as_str()) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
            (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &ar),
            (Scope::Cluster, _) => Api::all_with(client.clone(), &ar),
        };
        let mut obj = o.clone();
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!(o.to_string());
        let dynamic: DynamicObject = serde_json::from_value(obj.clone()).expect("an object");
        let result = match api.create(&PostParams::default(), &dynamic).await {
            Err(kube::Error::Api(e)) if e.code == 409 => api
                .patch(name, &PatchParams::default(), &Patch::Merge(&obj))
                .await
                .map(|_| ()),
            other => other.map(|_| ()),
        };
        if let Err(e) = result {
            refused.push(format!("{kind} {name}: {e}"));
        }
    }
    refused
}

/// Deletes `objects` as `kubectl delete -k` does (in reverse order; an absent object is an
/// error there, so it is one here). Returns the failures.
pub async fn kubectl_delete(client: &kube::Client, objects: &[Value]) -> Vec<String> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let mut failed = Vec::new();
    for o in objects.iter().rev() {
        let kind = o["kind"].as_str().unwrap_or_default();
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let (group, version) = match o["apiVersion"].as_str().unwrap_or_default().split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", o["apiVersion"].as_str().unwrap_or_default()),
        };
        let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
        let Some((ar, caps)) = discovery.resolve_gvk(&gvk) else {
            failed.push(format!("{kind} {name}: not served"));
            continue;
        };
        let api: Api<DynamicObject> = match (&caps.scope, o["metadata"]["namespace"].as_str()) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
            _ => Api::all_with(client.clone(), &ar),
        };
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            // Deleting its namespace already took it, as on a cluster.
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => failed.push(format!("{kind} {name}: {e}")),
        }
    }
    failed
}

/// The upstream chart's release this project's adoption overlay names.
pub const RELEASE: &str = "cinder-csi";
pub const RELEASE_NS: &str = "kube-system";
const CHART_DRIVER: &str = "cinder.csi.openstack.org";

/// Helm's ownership metadata, as Helm 3 sets it on every object of release `cinder-csi`.
pub fn helm(name: &str, namespace: Option<&str>, labels: Value) -> Value {
    let mut labels = labels;
    labels["app.kubernetes.io/managed-by"] = json!("Helm");
    let mut meta = json!({
        "name": name,
        "labels": labels,
        "annotations": {
            "meta.helm.sh/release-name": RELEASE,
            "meta.helm.sh/release-namespace": RELEASE_NS,
        },
    });
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    meta
}

/// What the chart (v2.36, default values but `storageClass.delete.isDefault: true` and
/// `storageClass.retain.allowVolumeExpansion: false`) installs at cluster scope and the two
/// workloads, written from the chart's facts: names, the CSIDriver's spec, the classes' fields,
/// the workloads' selectors and the kubelet plugin paths.
/// What `helm install cinder-csi -n kube-system` of the upstream chart leaves: the CSIDriver,
/// the two StorageClasses, the controller Deployment and node DaemonSet, with Helm's metadata.
pub fn chart_objects() -> Vec<Value> {
    let pod_labels = |component: &str| json!({"component": component, "app": "openstack-cinder-csi", "release": RELEASE});
    let workload = |kind: &str, name: &str, component: &str| {
        let mut spec = json!({
            "selector": {"matchLabels": pod_labels(component)},
            "template": {
                "metadata": {"labels": pod_labels(component)},
                "spec": {
                    "containers": [{
                        "name": "cinder-csi-plugin",
                        "image": "registry.k8s.io/provider-os/cinder-csi-plugin:v1.36.0",
                        "args": ["/bin/cinder-csi-plugin", "--endpoint=$(CSI_ENDPOINT)",
                                 "--cloud-config=$(CLOUD_CONFIG)", "--cluster=kubernetes"],
                        "volumeMounts": [{"name": "socket-dir", "mountPath": "/csi"}],
                    }],
                    "volumes": [{"name": "socket-dir", "hostPath": {
                        "path": "/var/lib/kubelet/plugins/cinder.csi.openstack.org",
                        "type": "DirectoryOrCreate"}}],
                },
            },
        });
        if kind == "Deployment" {
            spec["replicas"] = json!(1);
        }
        json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": helm(name, Some(RELEASE_NS), pod_labels(component)),
            "spec": spec,
        })
    };
    let mut delete_meta = helm("csi-cinder-sc-delete", None, json!({}));
    delete_meta["annotations"]["storageclass.kubernetes.io/is-default-class"] = json!("true");
    vec![
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": helm(CHART_DRIVER, None, json!({})),
            "spec": {"attachRequired": true, "podInfoOnMount": true,
                     "volumeLifecycleModes": ["Persistent", "Ephemeral"]},
        }),
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": delete_meta,
            "provisioner": CHART_DRIVER, "reclaimPolicy": "Delete", "allowVolumeExpansion": true,
        }),
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": helm("csi-cinder-sc-retain", None, json!({})),
            "provisioner": CHART_DRIVER, "reclaimPolicy": "Retain", "allowVolumeExpansion": false,
        }),
        workload(
            "Deployment",
            "openstack-cinder-csi-controllerplugin",
            "controllerplugin",
        ),
        workload("DaemonSet", "openstack-cinder-csi-nodeplugin", "nodeplugin"),
    ]
}
