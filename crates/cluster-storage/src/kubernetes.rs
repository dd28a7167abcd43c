//! The plain-Kubernetes install (`manifests/kubernetes/`, a kustomize base), generated from the
//! same assets the Cluster Storage Operator applies on OpenShift, so the two installs cannot
//! drift: the driver operators' ServiceAccounts, Roles, bindings, ClusterRoles, config
//! ConfigMaps, metrics Services and Deployments come from [`build::operator_objects`]; the
//! namespaces, the shared sidecar ClusterRoles and the Manila StorageClass admission policy
//! come from `manifests/openshift/` (handed in by the caller, parsed); the ClusterCSIDriver CRD
//! from `openshift-api`.
//!
//! What changes on the way, and why (each is in docs/compatibility.md):
//! - OpenShift-only metadata goes (release inclusion, capabilities, SCC pins, workload
//!   partitioning, service-ca and proxy-injection annotations, the cluster-monitoring label):
//!   nothing on Kubernetes reads it, and it would only confuse.
//! - The operators' ClusterRoles may also create their ClusterCSIDriver, because there is no CSO
//!   to do it and a CR shipped beside its CRD fails a first `kubectl apply -k`. They keep the
//!   read rights on `config.openshift.io`: the API server authorizes before it looks the resource
//!   up, so without them the operators' probes for Infrastructure, Proxy and APIServer would be
//!   refused (403, retried forever) instead of found not served (404, then only their CRDs are
//!   watched).
//! - The operator Deployments run with `--create-cluster-csi-driver` and `--cluster-id`, and are
//!   placed on control-plane nodes only when the cluster has some
//!   ([`hooks::kubernetes_control_plane`]).
//! - The operators issue their drivers' metrics serving certificates (no service-ca), so their
//!   Roles may create those Secrets and update them by name; or, where cert-manager runs, they
//!   apply cert-manager `Certificate`s and a self-signed `Issuer` for them, so the same Roles
//!   (in the drivers' namespaces only) manage those two kinds.
//! - `openshift-config` is created: both operators read their cloud.conf overrides there, as on
//!   OpenShift.
//!
//! What this module must not do: read files, the environment or the API. The test that writes
//! and checks `manifests/kubernetes/` (`csi-operator/tests/kubernetes_manifests.rs`) does the
//! reading.

use std::collections::BTreeMap;

use operator_kit::assets;
use operator_kit::hooks;
use serde_json::{Value, json};

use crate::build::{self, BuildError, Inputs, OPERATOR_IMAGE_VERSION_ENV};
use crate::registry::{CSI_OPERATOR_NAMESPACE, DRIVERS, Driver};

/// The namespace of the users' cloud.conf overrides, read by both operators.
pub const CONFIG_NAMESPACE: &str = build::CONFIG_NAMESPACE;

/// The cluster ID the operators get when the cluster has no Infrastructure object: the
/// upstream charts' default (`--cluster=kubernetes`), so volumes created by a chart install
/// keep the same cluster tag.
pub const DEFAULT_CLUSTER_ID: &str = "kubernetes";

/// The operator image: the product binary (Containerfile). Overridden with kustomize's
/// `images:` (docs/install-kubernetes.md).
pub const OPERATOR_IMAGE: &str = "quay.io/example/csi-operator";

/// The operand images on Kubernetes: the upstream projects' own releases, as the current
/// cloud-provider-openstack charts ship them (`openstack-cinder-csi` and `openstack-manila-csi`
/// 2.36.0, appVersion v1.36.0: their `values.yaml` name the sidecars). The one place that names
/// them: `manifests/kubernetes/`, the Helm chart's operator environment and `render`'s
/// defaults all come from here, and `csi-operator/tests/kubernetes_manifests.rs` checks they
/// agree. The NFS node plugin is not in those charts (Manila's chart expects one installed
/// beside it); it is csi-driver-nfs's release. Keyed by the CSO environment variable that
/// carries each on OpenShift.
pub const UPSTREAM_IMAGES: &[(&str, &str)] = &[
    (
        "OPENSTACK_CINDER_DRIVER_IMAGE",
        "registry.k8s.io/provider-os/cinder-csi-plugin:v1.36.0",
    ),
    (
        "MANILA_DRIVER_IMAGE",
        "registry.k8s.io/provider-os/manila-csi-plugin:v1.36.0",
    ),
    (
        "MANILA_NFS_DRIVER_IMAGE",
        "registry.k8s.io/sig-storage/nfsplugin:v4.9.0",
    ),
    (
        "PROVISIONER_IMAGE",
        "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0",
    ),
    (
        "ATTACHER_IMAGE",
        "registry.k8s.io/sig-storage/csi-attacher:v4.10.0",
    ),
    (
        "RESIZER_IMAGE",
        "registry.k8s.io/sig-storage/csi-resizer:v1.14.0",
    ),
    (
        "SNAPSHOTTER_IMAGE",
        "registry.k8s.io/sig-storage/csi-snapshotter:v8.4.0",
    ),
    (
        "NODE_DRIVER_REGISTRAR_IMAGE",
        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.15.0",
    ),
    (
        "LIVENESS_PROBE_IMAGE",
        "registry.k8s.io/sig-storage/livenessprobe:v2.17.0",
    ),
    (
        "KUBE_RBAC_PROXY_IMAGE",
        "quay.io/brancz/kube-rbac-proxy:v0.18.1",
    ),
];

/// The upstream operand images of `driver` as its operator's environment names them
/// (`DRIVER_IMAGE`, `PROVISIONER_IMAGE`, ...): what `manifests/kubernetes/` gives the operator,
/// and what `render` uses for images it is not given.
pub fn upstream_operand_images(driver: &Driver) -> BTreeMap<String, String> {
    driver
        .all_image_vars()
        .filter_map(|var| {
            let name = var.placeholder.strip_prefix("${")?.strip_suffix('}')?;
            let (_, image) = UPSTREAM_IMAGES
                .iter()
                .find(|(env, _)| *env == var.cso_env)?;
            Some((name.to_owned(), (*image).to_owned()))
        })
        .collect()
}

/// What the generator needs besides the assets.
#[derive(Debug, Clone)]
pub struct KubernetesInputs {
    /// The operator image with its tag, e.g. `quay.io/example/csi-operator:v0.1.0`.
    pub operator_image: String,
    /// `OPERATOR_IMAGE_VERSION`, reported in the ClusterCSIDrivers' status.
    pub version: String,
    /// From `manifests/openshift/`, parsed: the Namespace `openshift-cluster-csi-drivers`,
    /// the shared sidecar ClusterRoles (`openshift-csi-*`) and the Manila StorageClass
    /// ValidatingAdmissionPolicy with its binding, in any order.
    pub openshift: Vec<Value>,
}

/// One file of the kustomize base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    /// File name, ordered as `kubectl apply -k` applies (kustomize's legacy order).
    pub name: String,
    /// Its single object.
    pub object: Value,
}

/// Why the base cannot be generated.
#[derive(Debug, thiserror::Error)]
pub enum KubernetesError {
    /// The operator objects do not build.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// An object does not serialize (a bug caught by the tests).
    #[error("cannot serialize {0}: {1}")]
    Serialize(String, String),
    /// An expected object from `manifests/openshift/` was not handed in.
    #[error("manifests/openshift/ has no {0}; the Kubernetes base is generated from it")]
    Missing(String),
    /// The ClusterCSIDriver CRD embedded in openshift-api does not parse.
    #[error("the ClusterCSIDriver CRD: {0}")]
    Crd(String),
}

/// Annotation and label key prefixes only OpenShift reads.
const OPENSHIFT_ONLY: &[&str] = &[
    "include.release.openshift.io/",
    "release.openshift.io/",
    "capability.openshift.io/",
    "openshift.io/",
    "workload.openshift.io/",
    "target.workload.openshift.io/",
    "config.openshift.io/",
    "service.beta.openshift.io/",
    "service.alpha.openshift.io/",
];

fn openshift_only(key: &str) -> bool {
    OPENSHIFT_ONLY.iter().any(|p| key.starts_with(p))
}

/// Drops OpenShift-only annotations and labels from `meta` (an object's or a pod template's
/// metadata), and the maps left empty.
fn strip_meta(meta: &mut Value) {
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    for field in ["annotations", "labels"] {
        if let Some(map) = meta.get_mut(field).and_then(Value::as_object_mut) {
            map.retain(|k, _| !openshift_only(k));
            if map.is_empty() {
                meta.remove(field);
            }
        }
    }
}

// k8s-openapi's re-export: the crate needs no serde dependency of its own for this.
fn to_value<T: k8s_openapi::serde::Serialize>(what: &str, v: &T) -> Result<Value, KubernetesError> {
    let mut value = serde_json::to_value(v)
        .map_err(|e| KubernetesError::Serialize(what.into(), e.to_string()))?;
    strip_meta(&mut value["metadata"]);
    Ok(value)
}

/// The CSO environment the generator fills the operator Deployments from.
fn environment(inputs: &KubernetesInputs) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = UPSTREAM_IMAGES
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    for d in DRIVERS {
        for var in d.image_vars {
            if var.placeholder == "${OPERATOR_IMAGE}" {
                env.insert(var.cso_env.to_owned(), inputs.operator_image.clone());
            }
        }
    }
    env.insert(
        OPERATOR_IMAGE_VERSION_ENV.to_owned(),
        inputs.version.clone(),
    );
    env
}

/// The operator's ClusterRole on Kubernetes: OpenShift's plus `create` on ClusterCSIDrivers
/// (for `--create-cluster-csi-driver`; creation cannot be limited by name).
fn cluster_role(role: &mut Value) {
    if let Some(rules) = role["rules"].as_array_mut() {
        let at = rules
            .iter()
            .position(|r| {
                r["apiGroups"] == json!(["operator.openshift.io"])
                    && r["resources"] == json!(["clustercsidrivers"])
            })
            .map_or(rules.len(), |i| i + 1);
        rules.insert(
            at,
            json!({"apiGroups": ["operator.openshift.io"], "resources": ["clustercsidrivers"], "verbs": ["create"]}),
        );
    }
}

/// Adds `create` on Secrets to `rules` unless a rule already grants it.
fn may_create_secrets(rules: &mut Vec<Value>) {
    let creates = rules.iter().any(|r| {
        r["apiGroups"] == json!([""])
            && r["resources"] == json!(["secrets"])
            && r["resourceNames"].is_null()
            && r["verbs"] == json!(["create"])
    });
    if !creates {
        rules.push(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}));
    }
}

/// A Role of `driver`'s operator on Kubernetes: OpenShift's, plus what the operator needs to
/// keep its serving certificates where no service-ca does. In the driver's namespace: `create`
/// on Secrets (not limitable by name) and `update`/`patch` of the driver's metrics serving
/// certificate ([`Driver::metrics_serving_cert_secret`], `operator_kit::metrics_cert`), and
/// the cert-manager objects for it (`operator_kit::cert_manager`). In the operator's namespace:
/// `create` on Secrets and `get`/`update`/`patch` of `own_serving_cert`, the Secret its
/// Deployment's `serving-cert` volume mounts (`--metrics-serving-cert-secret`,
/// `operator_kit::own_serving_cert`). The plain-Kubernetes chain test fails on any missing
/// right. The CRD the operators watch for is readable through their ClusterRoles already.
fn role(role: &mut Value, driver: &Driver, own_serving_cert: Option<&str>) {
    let ns = role["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let Some(rules) = role["rules"].as_array_mut() else {
        return;
    };
    if ns == driver.driver_namespace {
        may_create_secrets(rules);
        rules.push(json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": [driver.metrics_serving_cert_secret], "verbs": ["update", "patch"]}));
        rules.push(
            json!({"apiGroups": ["cert-manager.io"], "resources": ["certificates", "issuers"],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}),
        );
    }
    if let Some(secret) = own_serving_cert.filter(|_| ns == driver.operator_namespace) {
        may_create_secrets(rules);
        rules.push(json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret], "verbs": ["get", "update", "patch"]}));
    }
}

/// The Secret the operator Deployment's `serving-cert` volume mounts, if it has one.
fn serving_cert_secret(d: &k8s_openapi::api::apps::v1::Deployment) -> Option<String> {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == "serving-cert"))
        .and_then(|v| v.secret.as_ref())
        .and_then(|s| s.secret_name.clone())
}

/// The operator Deployment on Kubernetes; see the module doc. `metrics_service`: the name of
/// its metrics Service, whose serving certificate the operator keeps in the Secret its
/// `serving-cert` volume mounts.
fn deployment(d: &mut k8s_openapi::api::apps::v1::Deployment, metrics_service: &str) {
    hooks::kubernetes_control_plane(d);
    let serving_secret = serving_cert_secret(d);
    if let Some(c) = d
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .and_then(|p| p.containers.first_mut())
    {
        let args = c.args.get_or_insert_with(Vec::new);
        args.push(format!("--cluster-id={DEFAULT_CLUSTER_ID}"));
        args.push("--create-cluster-csi-driver".to_owned());
        if let Some(secret) = serving_secret {
            args.push(format!("--metrics-serving-cert-secret={secret}"));
            args.push(format!("--metrics-service={metrics_service}"));
        }
    }
}

/// `apiVersion`, `kind`, `metadata.name` of `v`, for file names and messages.
fn describe(v: &Value) -> (String, String) {
    (
        v["kind"].as_str().unwrap_or_default().to_owned(),
        v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// kustomize's legacy apply order (`kustomize build`'s default `--reorder legacy`): the kinds
/// others depend on first.
fn kind_rank(kind: &str) -> usize {
    const ORDER: &[&str] = &[
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Service",
        "Deployment",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ];
    ORDER.iter().position(|k| *k == kind).unwrap_or(ORDER.len())
}

/// Every object of the base, in apply order, each with its file name.
pub fn manifests(inputs: &KubernetesInputs) -> Result<Vec<ManifestFile>, KubernetesError> {
    let mut objects: Vec<Value> = Vec::new();

    // Namespaces: the operators' (as OpenShift ships it: privileged, for the Cinder node
    // plugin), Manila's (from its asset) and openshift-config.
    let ns = inputs
        .openshift
        .iter()
        .find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == CSI_OPERATOR_NAMESPACE)
        .ok_or_else(|| KubernetesError::Missing(format!("Namespace {CSI_OPERATOR_NAMESPACE}")))?;
    let mut ns = ns.clone();
    strip_meta(&mut ns["metadata"]);
    objects.push(ns);
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CONFIG_NAMESPACE}}),
    );

    // As YAML values, not the typed CRD: its schema numbers are floats (`maximum: 100.0`).
    let mut crd = assets::parse_values(
        "clustercsidrivers.operator.openshift.io",
        openshift_api::crds::CLUSTER_CSI_DRIVERS,
    )
    .map_err(|e| KubernetesError::Crd(e.to_string()))?;
    if crd.len() != 1 {
        return Err(KubernetesError::Crd(format!(
            "expected one document, found {}",
            crd.len()
        )));
    }
    let mut crd = crd.remove(0);
    strip_meta(&mut crd["metadata"]);
    objects.push(crd);

    for o in &inputs.openshift {
        let (kind, name) = describe(o);
        let wanted = match kind.as_str() {
            "ClusterRole" => name.starts_with("openshift-csi-"),
            "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding" => DRIVERS
                .iter()
                .any(|d| name.starts_with(d.operator_deployment)),
            _ => false,
        };
        if wanted {
            let mut o = o.clone();
            strip_meta(&mut o["metadata"]);
            objects.push(o);
        }
    }
    for driver in DRIVERS {
        let binding = format!("{}-storageclasses-binding", driver.operator_deployment);
        if !objects.iter().any(|o| {
            o["kind"] == "ValidatingAdmissionPolicyBinding" && o["metadata"]["name"] == *binding
        }) {
            return Err(KubernetesError::Missing(format!(
                "ValidatingAdmissionPolicyBinding {binding}"
            )));
        }
    }

    let cso_inputs = Inputs {
        env: environment(inputs),
        ..Inputs::default()
    };
    // The drivers that run in the operators' namespace (Cinder) first, then those with a
    // namespace of their own (Manila), each group in registry order.
    let mut drivers: Vec<&Driver> = DRIVERS.iter().collect();
    drivers.sort_by_key(|d| d.driver_namespace != d.operator_namespace);
    for driver in drivers {
        let mut o = build::operator_objects(driver, &cso_inputs)?;
        let own_serving_cert = serving_cert_secret(&o.deployment);
        if let Some(ns) = &o.namespace {
            objects.push(to_value("namespace", ns)?);
        }
        objects.push(to_value("service account", &o.service_account)?);
        for r in &o.roles {
            let mut r = to_value("role", r)?;
            role(&mut r, driver, own_serving_cert.as_deref());
            objects.push(r);
        }
        for b in &o.role_bindings {
            objects.push(to_value("role binding", b)?);
        }
        let mut role = to_value("cluster role", &o.cluster_role)?;
        cluster_role(&mut role);
        objects.push(role);
        objects.push(to_value("cluster role binding", &o.cluster_role_binding)?);
        objects.push(to_value("metrics service", &o.metrics_service)?);
        objects.push(to_value("config map", &o.config_map)?);
        let metrics_service = o.metrics_service.metadata.name.clone().unwrap_or_default();
        deployment(&mut o.deployment, &metrics_service);
        let mut d = to_value("deployment", &o.deployment)?;
        strip_meta(&mut d["spec"]["template"]["metadata"]);
        objects.push(d);
    }

    // Stable: objects of one kind keep the order above.
    objects.sort_by_key(|o| kind_rank(o["kind"].as_str().unwrap_or_default()));
    let mut files = Vec::new();
    for (i, object) in objects.into_iter().enumerate() {
        let (kind, name) = describe(&object);
        let ns = object["metadata"]["namespace"]
            .as_str()
            .map(|n| format!("{n}_"))
            .unwrap_or_default();
        files.push(ManifestFile {
            name: format!("{i:02}_{}_{ns}{name}.yaml", kind.to_lowercase()),
            object,
        });
    }
    Ok(files)
}

/// The label kube-prometheus-stack's Prometheus selects ServiceMonitors by (its Helm release's
/// name, `kube-prometheus-stack` by default), on the operators' own ServiceMonitors.
pub const MONITOR_LABEL: (&str, &str) = ("release", "kube-prometheus-stack");

/// The operators' own ServiceMonitors (`manifests/kubernetes/monitoring`, the chart's
/// `monitoring`), made from the base's objects: for each operator Deployment that keeps its
/// serving certificate in a Secret (`--metrics-serving-cert-secret`, `--metrics-service`), one
/// ServiceMonitor selecting that metrics Service by its labels, scraping its port over HTTPS
/// with the Prometheus ServiceAccount's token (the operators authorize `/metrics` by
/// SubjectAccessReview, as kube-rbac-proxy does for the drivers), verifying the certificate
/// against the Secret's `ca.crt` for the Service's DNS name. Not in the base: a ServiceMonitor
/// without its CRD fails `kubectl apply -k`.
pub fn operator_service_monitors(files: &[ManifestFile]) -> Result<Vec<Value>, KubernetesError> {
    let mut out = Vec::new();
    for d in files
        .iter()
        .map(|f| &f.object)
        .filter(|o| o["kind"] == "Deployment")
    {
        let (_, name) = describe(d);
        let ns = d["metadata"]["namespace"].as_str().unwrap_or_default();
        let args: Vec<&str> = d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let flag = |f: &str| {
            args.iter()
                .find_map(|a| a.strip_prefix(&format!("--{f}=")))
                .map(str::to_owned)
        };
        let (Some(secret), Some(service)) =
            (flag("metrics-serving-cert-secret"), flag("metrics-service"))
        else {
            return Err(KubernetesError::Missing(format!(
                "--metrics-serving-cert-secret and --metrics-service in Deployment {name}"
            )));
        };
        let svc = files
            .iter()
            .map(|f| &f.object)
            .find(|o| {
                o["kind"] == "Service"
                    && o["metadata"]["name"] == service.as_str()
                    && o["metadata"]["namespace"] == ns
            })
            .ok_or_else(|| KubernetesError::Missing(format!("Service {ns}/{service}")))?;
        let labels = svc["metadata"]["labels"].clone();
        let port = svc["spec"]["ports"][0]["name"].clone();
        if !labels.is_object() || !port.is_string() {
            return Err(KubernetesError::Missing(format!(
                "labels and a named port on Service {ns}/{service}"
            )));
        }
        out.push(json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {
                "name": format!("{name}-monitor"),
                "namespace": ns,
                "labels": {MONITOR_LABEL.0: MONITOR_LABEL.1},
            },
            "spec": {
                "selector": {"matchLabels": labels},
                "endpoints": [{
                    "port": port,
                    "interval": "30s",
                    "scheme": "https",
                    "path": "/metrics",
                    "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                    "tlsConfig": {
                        "ca": {"secret": {"name": secret, "key": "ca.crt"}},
                        "serverName": format!("{service}.{ns}.svc"),
                    },
                }],
            },
        }));
    }
    if out.is_empty() {
        return Err(KubernetesError::Missing("an operator Deployment".into()));
    }
    Ok(out)
}

/// `manifests/kubernetes/monitoring/`: its files (relative to it) and their text.
pub fn monitoring_files(files: &[ManifestFile]) -> Result<Vec<(String, String)>, KubernetesError> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for sm in operator_service_monitors(files)? {
        let (_, name) = describe(&sm);
        let file = format!("servicemonitor_{name}.yaml");
        let yaml = assets::to_yaml(&sm)
            .map_err(|e| KubernetesError::Serialize(file.clone(), e.to_string()))?;
        out.push((file.clone(), format!("{GENERATED_HEADER}{yaml}")));
        names.push(file);
    }
    let mut k = String::from(GENERATED_HEADER);
    k.push_str(
        "# The operators' own ServiceMonitors; apply after the base, where the Prometheus
# operator's CRDs are installed (docs/metrics.md).
",
    );
    k.push_str("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n");
    for n in names {
        k.push_str(&format!("- {n}\n"));
    }
    out.push(("kustomization.yaml".into(), k));
    Ok(out)
}

/// The file text of `file`: a header saying it is generated, then the YAML.
pub fn file_text(file: &ManifestFile) -> Result<String, KubernetesError> {
    let yaml = assets::to_yaml(&file.object)
        .map_err(|e| KubernetesError::Serialize(file.name.clone(), e.to_string()))?;
    Ok(format!("{GENERATED_HEADER}{yaml}"))
}

/// The first lines of every generated file.
pub const GENERATED_HEADER: &str = "\
# Generated from crates/cluster-storage/assets and manifests/openshift; do not edit.
# Regenerate: UPDATE_MANIFESTS=1 cargo test -p csi-operator --test kubernetes_manifests
";

/// `kustomization.yaml`: every file, in apply order, and the operator image as a kustomize
/// image (so `kustomize edit set image` and overlays can change it).
pub fn kustomization(files: &[ManifestFile], inputs: &KubernetesInputs) -> String {
    let mut out = String::from(GENERATED_HEADER);
    out.push_str("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n");
    for f in files {
        out.push_str(&format!("- {}\n", f.name));
    }
    let (name, tag) = inputs
        .operator_image
        .rsplit_once(':')
        .unwrap_or((inputs.operator_image.as_str(), "latest"));
    out.push_str(&format!("images:\n- name: {name}\n  newTag: {tag}\n"));
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn render_defaults_to_the_upstream_images_under_the_operators_names() {
        let cinder = super::upstream_operand_images(&crate::registry::CINDER);
        assert_eq!(
            cinder["DRIVER_IMAGE"],
            "registry.k8s.io/provider-os/cinder-csi-plugin:v1.36.0"
        );
        assert!(cinder.contains_key("PROVISIONER_IMAGE"));
        assert!(!cinder.contains_key("OPERATOR_IMAGE"));
        let manila = super::upstream_operand_images(&crate::registry::MANILA);
        assert_eq!(
            manila["NFS_DRIVER_IMAGE"],
            "registry.k8s.io/sig-storage/nfsplugin:v4.9.0"
        );
    }

    use super::*;

    #[test]
    fn only_openshift_metadata_is_dropped() {
        let mut meta = json!({"name": "x", "annotations": {
            "include.release.openshift.io/self-managed-high-availability": "true",
            "openshift.io/required-scc": "restricted-v2",
            "example.com/keep": "yes"},
            "labels": {"openshift.io/cluster-monitoring": "true"}});
        strip_meta(&mut meta);
        assert_eq!(
            meta,
            json!({"name": "x", "annotations": {"example.com/keep": "yes"}})
        );
    }

    #[test]
    fn the_cluster_role_may_create_the_cr() {
        let mut role = json!({"rules": [
            {"apiGroups": ["operator.openshift.io"], "resources": ["clustercsidrivers"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
        ]});
        cluster_role(&mut role);
        assert_eq!(
            role["rules"],
            json!([
                {"apiGroups": ["operator.openshift.io"], "resources": ["clustercsidrivers"], "verbs": ["get"]},
                {"apiGroups": ["operator.openshift.io"], "resources": ["clustercsidrivers"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
            ])
        );
    }

    /// The Secret `driver`'s operator Deployment mounts as `serving-cert`, as built.
    fn own_serving_cert(driver: &Driver) -> Option<String> {
        let inputs = Inputs {
            env: environment(&KubernetesInputs {
                operator_image: "x:1".into(),
                version: "1".into(),
                openshift: Vec::new(),
            }),
            ..Inputs::default()
        };
        let o = build::operator_objects(driver, &inputs).expect("the operator objects build");
        serving_cert_secret(&o.deployment)
    }

    /// The rules `role` adds for `driver` to an empty Role in `ns` that match `keep`.
    fn added_rules(driver: &Driver, ns: &str, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut r = json!({"metadata": {"namespace": ns, "name": "r"}, "rules": []});
        role(&mut r, driver, own_serving_cert(driver).as_deref());
        r["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|rule| keep(rule))
            .cloned()
            .collect()
    }

    fn secrets(rule: &Value) -> bool {
        rule["resources"] == json!(["secrets"])
    }

    #[test]
    fn each_operator_may_keep_its_own_serving_cert_secret_and_no_other_by_name() {
        use crate::registry::{CINDER, MANILA};
        assert_eq!(
            own_serving_cert(&MANILA).as_deref(),
            Some("manila-csi-driver-operator-serving-cert")
        );
        assert_eq!(
            added_rules(&MANILA, CSI_OPERATOR_NAMESPACE, secrets),
            [
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}),
                json!({"apiGroups": [""], "resources": ["secrets"],
                       "resourceNames": ["manila-csi-driver-operator-serving-cert"],
                       "verbs": ["get", "update", "patch"]}),
            ]
        );
        // Cinder's operator and driver share a namespace: one create, both Secrets by name.
        let cinder = added_rules(&CINDER, CSI_OPERATOR_NAMESPACE, secrets);
        assert_eq!(
            cinder
                .iter()
                .filter(|r| r["verbs"] == json!(["create"]))
                .count(),
            1,
            "{cinder:?}"
        );
        for name in [
            "openstack-cinder-csi-driver-operator-serving-cert",
            "openstack-cinder-csi-driver-controller-metrics-serving-cert",
        ] {
            assert!(
                cinder.iter().any(|r| r["resourceNames"] == json!([name])),
                "{name}: {cinder:?}"
            );
        }
        assert_eq!(
            added_rules(&MANILA, MANILA.driver_namespace, secrets),
            [
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}),
                json!({"apiGroups": [""], "resources": ["secrets"],
                       "resourceNames": ["manila-csi-driver-controller-metrics-serving-cert"],
                       "verbs": ["update", "patch"]}),
            ]
        );
        assert!(added_rules(&MANILA, CONFIG_NAMESPACE, secrets).is_empty());
    }

    #[test]
    fn only_the_driver_namespace_roles_manage_cert_manager_objects() {
        let cert_manager = |rule: &Value| rule["apiGroups"] == json!(["cert-manager.io"]);
        for d in DRIVERS {
            assert_eq!(
                added_rules(d, d.driver_namespace, cert_manager),
                [
                    json!({"apiGroups": ["cert-manager.io"], "resources": ["certificates", "issuers"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]})
                ],
                "{}",
                d.name
            );
            assert!(added_rules(d, CONFIG_NAMESPACE, cert_manager).is_empty());
            if d.driver_namespace != d.operator_namespace {
                assert!(added_rules(d, d.operator_namespace, cert_manager).is_empty());
            }
        }
    }

    #[test]
    fn without_the_openshift_namespace_nothing_is_generated() {
        let err = manifests(&KubernetesInputs {
            operator_image: "x:1".into(),
            version: "1".into(),
            openshift: Vec::new(),
        })
        .expect_err("no input");
        assert!(err.to_string().contains(CSI_OPERATOR_NAMESPACE), "{err}");
    }
}
