//! Every right the operands' containers and the driver operators use, checked against every RBAC
//! object we ship with kube-sim's RBAC authorizer (DESIGN §8: "the rights the operands' sidecars
//! use, checked from their documented needs").
//!
//! The policy is the union of what reaches a cluster: `manifests/openshift/` (less the files the
//! cluster version operator deletes), what the CSO applies per driver operator
//! ([`cluster_storage::build::operator_objects`]), and what each driver operator applies (the
//! output of `csi-operator render`, Manila with share types).
//!
//! The rights come from a catalog of what each container does against the API, taken from the
//! upstream sidecars' `deploy/kubernetes/rbac.yaml` and their code (see [`catalog`]), made
//! conditional on the flags the rendered container runs with (`--leader-election`,
//! `--feature-gates=Topology=true`, `--handle-volume-inuse-error`) and on the CSIDriver
//! (`attachRequired`). A container is mapped to its catalog entry by its image placeholder: the
//! test renders with `${X_IMAGE}` = `registry.invalid/X_IMAGE`, so a container with an image the
//! catalog does not know fails the test rather than escaping it. The Secrets a sidecar reads are
//! the ones the rendered StorageClasses and VolumeSnapshotClasses name in their
//! `csi.storage.k8s.io/*-secret-{name,namespace}` parameters.
//!
//! A refusal names the ServiceAccount, the container and its sidecar, the verb, the
//! group/resource and the namespace/name.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use kube_sim::rbac::{
    self, Attributes, Decision, PolicyRule, PolicySource, StaticPolicy, UserInfo,
};
use serde_json::Value;

const CSO_NS: &str = "openshift-cluster-storage-operator";
/// A namespace of no operator: where users' PVCs, VolumeSnapshots, Pods and Events live.
const USER_NS: &str = "user-project";
/// The prefix of every image the test renders with; the rest is the placeholder's name.
const IMAGE_PREFIX: &str = "registry.invalid/";

// ---- The catalog -------------------------------------------------------------------------------

/// When a right is needed, decided from the rendered container and its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    Always,
    /// The container runs with `--leader-election`.
    LeaderElection,
    /// The container runs with `--feature-gates=...Topology=true...`.
    Topology,
    /// The driver's CSIDriver has `attachRequired` true (controller publish/unpublish).
    AttachRequired,
    /// `--handle-volume-inuse-error` is not `false` (the resizer watches pods then).
    HandleVolumeInUse,
}

/// Where a right is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// A cluster-scoped resource.
    Cluster,
    /// A namespaced resource in any namespace (checked in a user namespace).
    AnyNamespace,
    /// The container's leader-election namespace (`--leader-election-namespace`, else its own).
    LeaseNamespace,
}

/// One right of a container: `verbs` on `group/resource`.
#[derive(Debug, Clone, Copy)]
struct Right {
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    scope: Scope,
    when: When,
}

const fn right(
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    scope: Scope,
    when: When,
) -> Right {
    Right {
        group,
        resource,
        verbs,
        scope,
        when,
    }
}

const READ: &[&str] = &["get", "list", "watch"];
const EVENTS: &[&str] = &["create", "update", "patch"];
/// client-go's `leaderelection` with a `LeaseLock`: get, create, update (and watch/list in the
/// informer-based sidecars).
const LEASE: &[&str] = &["get", "list", "watch", "create", "update"];

/// One kind of container: what it is called in messages, and what it does against the API.
struct Component {
    name: &'static str,
    rights: &'static [Right],
    /// Secret parameter prefixes (`csi.storage.k8s.io/<prefix>-secret-name`) this container
    /// resolves and GETs itself (the kubelet reads the node-stage/-publish/-expand ones).
    secret_params: &'static [&'static str],
}

/// What each image does against the API, keyed by its image placeholder.
///
/// * external-provisioner (v5): PVs get/list/watch/create/patch/delete, PVCs get/list/watch/
///   update, StorageClasses get/list/watch, Events, VolumeSnapshots and VolumeSnapshotContents
///   get/list (restore from a snapshot), with `Topology` CSINodes and Nodes get/list/watch, and
///   VolumeAttachments get/list/watch for drivers with controller publish (it waits for
///   detachment before deleting). Secrets: `provisioner-secret-*`.
/// * external-attacher: PVs get/list/watch/patch, Nodes and CSINodes get/list/watch,
///   VolumeAttachments get/list/watch/patch and their status patch. Secrets:
///   `controller-publish-secret-*`.
/// * external-resizer: PVs get/list/watch/patch, PVCs get/list/watch and their status patch,
///   Events, and Pods get/list/watch unless `--handle-volume-inuse-error=false`. Secrets:
///   `controller-expand-secret-*`.
/// * csi-snapshotter (the sidecar, v8): Events, VolumeSnapshotClasses get/list/watch,
///   VolumeSnapshotContents get/list/watch/update/patch and their status update/patch. Secrets:
///   `snapshotter-secret-*`, `snapshotter-list-secret-*`.
/// * Every leader-electing sidecar: Leases in its leader-election namespace.
/// * kube-rbac-proxy: TokenReviews and SubjectAccessReviews create (it authenticates the
///   scraper's token and authorizes it).
/// * node-driver-registrar and livenessprobe talk only to the kubelet and the CSI socket.
/// * The Cinder, Manila and NFS drivers talk to OpenStack, the metadata service and the CSI
///   socket, not to the Kubernetes API (the upstream Helm chart's node `events` role is unused by
///   their code, and OpenShift grants the node ServiceAccount nothing but its SCC either).
fn catalog() -> BTreeMap<&'static str, Component> {
    use Scope::*;
    use When::*;
    const PROVISIONER: &[Right] = &[
        right(
            "",
            "persistentvolumes",
            &["get", "list", "watch", "create", "patch", "delete"],
            Cluster,
            Always,
        ),
        right(
            "",
            "persistentvolumeclaims",
            &["get", "list", "watch", "update"],
            AnyNamespace,
            Always,
        ),
        right("storage.k8s.io", "storageclasses", READ, Cluster, Always),
        right("", "events", EVENTS, AnyNamespace, Always),
        right(
            "snapshot.storage.k8s.io",
            "volumesnapshots",
            &["get", "list"],
            AnyNamespace,
            Always,
        ),
        right(
            "snapshot.storage.k8s.io",
            "volumesnapshotcontents",
            &["get", "list"],
            Cluster,
            Always,
        ),
        right("storage.k8s.io", "csinodes", READ, Cluster, Topology),
        right("", "nodes", READ, Cluster, Topology),
        right(
            "storage.k8s.io",
            "volumeattachments",
            READ,
            Cluster,
            AttachRequired,
        ),
        right(
            "coordination.k8s.io",
            "leases",
            LEASE,
            LeaseNamespace,
            LeaderElection,
        ),
    ];
    const ATTACHER: &[Right] = &[
        right(
            "",
            "persistentvolumes",
            &["get", "list", "watch", "patch"],
            Cluster,
            Always,
        ),
        right("", "nodes", READ, Cluster, Always),
        right("storage.k8s.io", "csinodes", READ, Cluster, Always),
        right(
            "storage.k8s.io",
            "volumeattachments",
            &["get", "list", "watch", "patch"],
            Cluster,
            Always,
        ),
        right(
            "storage.k8s.io",
            "volumeattachments/status",
            &["patch"],
            Cluster,
            Always,
        ),
        right(
            "coordination.k8s.io",
            "leases",
            LEASE,
            LeaseNamespace,
            LeaderElection,
        ),
    ];
    const RESIZER: &[Right] = &[
        right(
            "",
            "persistentvolumes",
            &["get", "list", "watch", "patch"],
            Cluster,
            Always,
        ),
        right("", "persistentvolumeclaims", READ, AnyNamespace, Always),
        right(
            "",
            "persistentvolumeclaims/status",
            &["patch"],
            AnyNamespace,
            Always,
        ),
        right("", "events", EVENTS, AnyNamespace, Always),
        right("", "pods", READ, AnyNamespace, HandleVolumeInUse),
        right(
            "coordination.k8s.io",
            "leases",
            LEASE,
            LeaseNamespace,
            LeaderElection,
        ),
    ];
    const SNAPSHOTTER: &[Right] = &[
        right("", "events", EVENTS, AnyNamespace, Always),
        right(
            "snapshot.storage.k8s.io",
            "volumesnapshotclasses",
            READ,
            Cluster,
            Always,
        ),
        right(
            "snapshot.storage.k8s.io",
            "volumesnapshotcontents",
            &["get", "list", "watch", "update", "patch"],
            Cluster,
            Always,
        ),
        right(
            "snapshot.storage.k8s.io",
            "volumesnapshotcontents/status",
            &["update", "patch"],
            Cluster,
            Always,
        ),
        right(
            "coordination.k8s.io",
            "leases",
            LEASE,
            LeaseNamespace,
            LeaderElection,
        ),
    ];
    const KUBE_RBAC_PROXY: &[Right] = &[
        right(
            "authentication.k8s.io",
            "tokenreviews",
            &["create"],
            Cluster,
            Always,
        ),
        right(
            "authorization.k8s.io",
            "subjectaccessreviews",
            &["create"],
            Cluster,
            Always,
        ),
    ];
    let c = |name, rights, secret_params| Component {
        name,
        rights,
        secret_params,
    };
    BTreeMap::from([
        (
            "PROVISIONER_IMAGE",
            c("external-provisioner", PROVISIONER, &["provisioner"]),
        ),
        (
            "ATTACHER_IMAGE",
            c("external-attacher", ATTACHER, &["controller-publish"]),
        ),
        (
            "RESIZER_IMAGE",
            c("external-resizer", RESIZER, &["controller-expand"]),
        ),
        (
            "SNAPSHOTTER_IMAGE",
            c(
                "csi-snapshotter",
                SNAPSHOTTER,
                &["snapshotter", "snapshotter-list"],
            ),
        ),
        (
            "KUBE_RBAC_PROXY_IMAGE",
            c("kube-rbac-proxy", KUBE_RBAC_PROXY, &[]),
        ),
        ("LIVENESS_PROBE_IMAGE", c("livenessprobe", &[], &[])),
        (
            "NODE_DRIVER_REGISTRAR_IMAGE",
            c("node-driver-registrar", &[], &[]),
        ),
        ("DRIVER_IMAGE", c("CSI driver", &[], &[])),
        ("NFS_DRIVER_IMAGE", c("NFS CSI driver", &[], &[])),
    ])
}

// ---- What we ship ------------------------------------------------------------------------------

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift")
}

/// The install manifests the cluster version operator keeps (not `release.openshift.io/delete`).
fn manifests() -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifest_dir())
        .expect("manifests/openshift exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("readable manifest");
            operator_kit::assets::parse_values(&path.display().to_string(), &text)
                .expect("manifest parses")
        })
        .filter(|o| o["metadata"]["annotations"]["release.openshift.io/delete"] != "true")
        .collect()
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// `csi-operator render <driver>` with every image `registry.invalid/<PLACEHOLDER>`.
fn render(driver: &str, images: &[&str], extra: &[String]) -> Vec<Value> {
    let mut args = vec!["render".to_string(), driver.to_string()];
    for image in images {
        args.extend(["--image".into(), format!("{image}={IMAGE_PREFIX}{image}")]);
    }
    args.extend(["--cluster-id".into(), "ostest-x7k2p".into()]);
    args.extend(extra.iter().cloned());
    let out = Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(&args)
        .env_clear()
        .env("OPERATOR_IMAGE_VERSION", "4.20.0")
        .output()
        .expect("csi-operator runs");
    assert!(
        out.status.success(),
        "render {driver} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 render");
    operator_kit::assets::parse_values(driver, &text).expect("render parses")
}

fn render_cinder() -> Vec<Value> {
    let ini = golden_dir().join("render-cloud-config.ini");
    render(
        "openstack-cinder",
        &cinder::assets::ASSETS.image_placeholders(),
        &[
            "--cloud-config".into(),
            ini.to_string_lossy().into_owned(),
            "--enable-topology".into(),
            "true".into(),
        ],
    )
}

fn render_manila() -> Vec<Value> {
    let mut extra = Vec::new();
    for share_type in ["default", "CEPHFS_gold"] {
        extra.extend(["--share-type".to_string(), share_type.to_string()]);
    }
    render(
        "openstack-manila",
        &manila::assets::ASSETS.image_placeholders(),
        &extra,
    )
}

/// The CSO's Deployment env (its image variables), as the CSO builds the driver operators with.
fn cso_env(manifests: &[Value]) -> BTreeMap<String, String> {
    let cso = manifests
        .iter()
        .find(|m| {
            m["kind"] == "Deployment"
                && m["metadata"]["namespace"] == CSO_NS
                && m["metadata"]["name"] == "cluster-storage-operator"
        })
        .expect("the CSO Deployment is shipped");
    cso["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["name"].as_str()?.into(), e["value"].as_str()?.into())))
        .collect()
}

/// What the CSO applies for every driver operator, as JSON objects.
fn cso_objects(manifests: &[Value]) -> Vec<Value> {
    let inputs = cluster_storage::build::Inputs {
        env: cso_env(manifests),
        ..Default::default()
    };
    let mut out = Vec::new();
    for driver in cluster_storage::registry::DRIVERS {
        let objects = cluster_storage::build::operator_objects(driver, &inputs).expect("builds");
        let mut desired = objects.static_desired(driver).expect("desired");
        desired.push(objects.deployment_desired(driver).expect("deployment"));
        for d in desired {
            let mut v = serde_json::to_value(&d.object).expect("serializable");
            v["apiVersion"] = Value::String(d.resource.api_version.clone());
            v["kind"] = Value::String(d.resource.kind.clone());
            out.push(v);
        }
    }
    out
}

/// Everything shipped: manifests, the CSO's per-driver objects, both renders.
struct Shipped {
    manifests: Vec<Value>,
    cso: Vec<Value>,
    cinder: Vec<Value>,
    manila: Vec<Value>,
}

impl Shipped {
    fn load() -> Self {
        let manifests = manifests();
        let cso = cso_objects(&manifests);
        Self {
            manifests,
            cso,
            cinder: render_cinder(),
            manila: render_manila(),
        }
    }

    fn policy(&self) -> StaticPolicy {
        StaticPolicy::new(
            self.manifests
                .iter()
                .chain(&self.cso)
                .chain(&self.cinder)
                .chain(&self.manila)
                .cloned(),
        )
    }
}

// ---- Checking ----------------------------------------------------------------------------------

fn sa_user(namespace: &str, name: &str) -> UserInfo {
    UserInfo::resolve(
        &format!("system:serviceaccount:{namespace}:{name}"),
        &kube_sim::RbacConfig::default(),
    )
}

/// Collects refusals, each with who asked and why.
struct Checker<'a> {
    policy: &'a StaticPolicy,
    refused: Vec<String>,
    checked: usize,
}

impl<'a> Checker<'a> {
    fn new(policy: &'a StaticPolicy) -> Self {
        Self {
            policy,
            refused: Vec::new(),
            checked: 0,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check(
        &mut self,
        who: &str,
        user: &UserInfo,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) {
        self.checked += 1;
        let attrs = Attributes::resource(user.clone(), verb, group, resource, namespace, name);
        if let Decision::Deny { reason } = rbac::authorize(self.policy, &attrs) {
            let group = if group.is_empty() { "core" } else { group };
            let at = match (namespace, name) {
                ("", "") => "cluster-wide".to_string(),
                ("", n) => format!("name {n}"),
                (ns, "") => format!("in namespace {ns}"),
                (ns, n) => format!("{ns}/{n}"),
            };
            let why = if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            };
            let line = format!(
                "ServiceAccount {}: {who} may not {verb} {group}/{resource} {at}{why}",
                user.name.trim_start_matches("system:serviceaccount:")
            );
            // Two classes naming one Secret are one refusal.
            if !self.refused.contains(&line) {
                self.refused.push(line);
            }
        }
    }

    fn assert_none_refused(&self, what: &str) {
        assert!(self.checked > 0, "{what}: nothing was checked");
        assert!(
            self.refused.is_empty(),
            "{what}: {} missing right(s):\n{}",
            self.refused.len(),
            self.refused.join("\n")
        );
    }
}

/// One container of a rendered pod template.
struct Container {
    workload: String,
    namespace: String,
    name: String,
    placeholder: String,
    args: Vec<String>,
    service_account: String,
}

impl Container {
    fn flag(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}=");
        self.args.iter().find_map(|a| {
            if a == name {
                Some("")
            } else {
                a.strip_prefix(&prefix)
            }
        })
    }

    fn applies(&self, when: When, attach_required: bool) -> bool {
        match when {
            When::Always => true,
            When::LeaderElection => {
                matches!(self.flag("--leader-election"), Some("") | Some("true"))
            }
            When::Topology => self
                .flag("--feature-gates")
                .is_some_and(|g| g.split(',').any(|f| f == "Topology=true")),
            When::AttachRequired => attach_required,
            When::HandleVolumeInUse => self.flag("--handle-volume-inuse-error") != Some("false"),
        }
    }

    fn lease_namespace(&self) -> &str {
        self.flag("--leader-election-namespace")
            .unwrap_or(&self.namespace)
    }

    fn describe(&self, component: &str) -> String {
        format!(
            "container {} ({component}) of {} {}",
            self.name, self.workload, self.namespace
        )
    }
}

/// Every container and init container of every Deployment and DaemonSet in `objects`.
fn containers(objects: &[Value]) -> Vec<Container> {
    let mut out = Vec::new();
    for o in objects {
        let kind = o["kind"].as_str().unwrap_or_default();
        if kind != "Deployment" && kind != "DaemonSet" {
            continue;
        }
        let pod = &o["spec"]["template"]["spec"];
        let namespace = o["metadata"]["namespace"].as_str().unwrap_or("default");
        let service_account = pod["serviceAccountName"].as_str().unwrap_or("default");
        for c in pod["initContainers"]
            .as_array()
            .into_iter()
            .chain(pod["containers"].as_array())
            .flatten()
        {
            let image = c["image"].as_str().unwrap_or_default();
            out.push(Container {
                workload: format!("{kind} {}", o["metadata"]["name"].as_str().unwrap_or("?")),
                namespace: namespace.to_string(),
                name: c["name"].as_str().unwrap_or("?").to_string(),
                placeholder: image
                    .strip_prefix(IMAGE_PREFIX)
                    .unwrap_or(image)
                    .to_string(),
                args: c["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|a| a.as_str().map(str::to_string))
                    .collect(),
                service_account: service_account.to_string(),
            });
        }
    }
    out
}

/// `(parameter prefix, secret namespace, secret name)` of every Secret a StorageClass or
/// VolumeSnapshotClass of `driver` names.
fn class_secrets(objects: &[Value], driver: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for o in objects {
        let of_driver = match o["kind"].as_str() {
            Some("StorageClass") => o["provisioner"] == driver,
            Some("VolumeSnapshotClass") => o["driver"] == driver,
            _ => false,
        };
        let Some(params) = o["parameters"].as_object().filter(|_| of_driver) else {
            continue;
        };
        for (key, value) in params {
            let Some(prefix) = key
                .strip_prefix("csi.storage.k8s.io/")
                .and_then(|k| k.strip_suffix("-secret-name"))
            else {
                continue;
            };
            let ns_key = format!("csi.storage.k8s.io/{prefix}-secret-namespace");
            let namespace = params
                .get(&ns_key)
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push((
                prefix.to_string(),
                namespace.to_string(),
                value.as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    out
}

/// Checks every container of one driver's render against the catalog; an image the catalog
/// does not know is itself a failure.
fn check_operand(checker: &mut Checker, objects: &[Value]) {
    let catalog = catalog();
    let csi_driver = objects
        .iter()
        .find(|o| o["kind"] == "CSIDriver")
        .expect("the render has a CSIDriver");
    let driver = csi_driver["metadata"]["name"].as_str().expect("named");
    // `attachRequired` defaults to true.
    let attach_required = csi_driver["spec"]["attachRequired"] != false;
    let secrets = class_secrets(objects, driver);
    let all = containers(objects);
    assert!(!all.is_empty(), "{driver}: no containers rendered");
    for c in &all {
        let Some(component) = catalog.get(c.placeholder.as_str()) else {
            checker.refused.push(format!(
                "{}: image {:?} is not in the catalog of what containers do against the API",
                c.describe("unknown"),
                c.placeholder
            ));
            continue;
        };
        let who = c.describe(component.name);
        let user = sa_user(&c.namespace, &c.service_account);
        for r in component.rights {
            if !c.applies(r.when, attach_required) {
                continue;
            }
            let namespace = match r.scope {
                Scope::Cluster => "",
                Scope::AnyNamespace => USER_NS,
                Scope::LeaseNamespace => c.lease_namespace(),
            };
            for verb in r.verbs {
                checker.check(&who, &user, verb, r.group, r.resource, namespace, "");
            }
        }
        for (prefix, ns, name) in &secrets {
            if component.secret_params.contains(&prefix.as_str()) {
                let who = format!("{who}, for csi.storage.k8s.io/{prefix}-secret-name");
                checker.check(&who, &user, "get", "", "secrets", ns, name);
            }
        }
    }
}

#[test]
fn operand_containers_may_do_what_they_do() {
    let shipped = Shipped::load();
    let policy = shipped.policy();
    let mut checker = Checker::new(&policy);
    check_operand(&mut checker, &shipped.cinder);
    check_operand(&mut checker, &shipped.manila);
    checker.assert_none_refused("operand containers");
}

/// The Secrets the Manila classes name are read by the sidecars that resolve them, and the
/// catalog sees them (the regression of "Manila cannot provision, expand or snapshot").
#[test]
fn manila_sidecars_may_read_the_secret_its_classes_name() {
    let shipped = Shipped::load();
    let secrets = class_secrets(&shipped.manila, "manila.csi.openstack.org");
    for prefix in ["provisioner", "controller-expand", "snapshotter"] {
        assert!(
            secrets.iter().any(|(p, ns, n)| p == prefix
                && ns == "openshift-manila-csi-driver"
                && n == "csi-manila-secrets"),
            "the Manila classes name csi-manila-secrets for {prefix}: {secrets:?}"
        );
    }
    let policy = shipped.policy();
    let user = sa_user(
        "openshift-manila-csi-driver",
        "manila-csi-driver-controller-sa",
    );
    let may = |verb: &str, ns: &str, name: &str| {
        rbac::authorize(
            &policy,
            &Attributes::resource(user.clone(), verb, "", "secrets", ns, name),
        )
        .allowed()
    };
    assert!(may(
        "get",
        "openshift-manila-csi-driver",
        "csi-manila-secrets"
    ));
    // Least privilege: only that Secret, only there.
    assert!(!may(
        "get",
        "openshift-manila-csi-driver",
        "manila-cloud-credentials"
    ));
    assert!(!may(
        "get",
        "openshift-cluster-csi-drivers",
        "csi-manila-secrets"
    ));
    assert!(!may("list", "openshift-manila-csi-driver", ""));
}

/// The Manila operator reads the Secrets it watches by name and no other: not the namespace's
/// other credentials, not a list of all Secrets (issue: least privilege that holds).
#[test]
fn the_manila_operator_reads_only_the_secrets_it_names() {
    let shipped = Shipped::load();
    let policy = shipped.policy();
    let user = sa_user(
        "openshift-cluster-csi-drivers",
        "manila-csi-driver-operator",
    );
    let may = |verb: &str, ns: &str, name: &str| {
        rbac::authorize(
            &policy,
            &Attributes::resource(user.clone(), verb, "", "secrets", ns, name),
        )
        .allowed()
    };
    let opts = manila::operator::Options::new(Default::default());
    for (ns, name) in manila::operator::secrets_read(&opts) {
        for verb in ["get", "list", "watch"] {
            assert!(may(verb, ns, name), "{verb} {ns}/{name}");
        }
    }
    assert!(may(
        "update",
        "openshift-manila-csi-driver",
        "csi-manila-secrets"
    ));
    for (verb, ns, name) in [
        ("list", "openshift-cluster-csi-drivers", ""),
        ("watch", "openshift-manila-csi-driver", ""),
        (
            "get",
            "openshift-cluster-csi-drivers",
            "cinder-cloud-credentials",
        ),
        ("get", "openshift-cluster-csi-drivers", "some-other-secret"),
        ("get", "openshift-manila-csi-driver", "some-other-secret"),
        (
            "update",
            "openshift-manila-csi-driver",
            "manila-cloud-credentials",
        ),
        (
            "delete",
            "openshift-manila-csi-driver",
            "manila-cloud-credentials",
        ),
    ] {
        assert!(!may(verb, ns, name), "{verb} {ns}/{name} must be refused");
    }
}

/// The Cinder operator reads the Secrets it watches by name and no other: not the other
/// credentials of `openshift-cluster-csi-drivers` (the Manila operator's, the CSO's copies),
/// not a list of all Secrets there.
#[test]
fn the_cinder_operator_reads_only_the_secrets_it_names() {
    let shipped = Shipped::load();
    let policy = shipped.policy();
    let user = sa_user(
        cinder::DEFAULT_NAMESPACE,
        "openstack-cinder-csi-driver-operator",
    );
    let may = |verb: &str, ns: &str, name: &str| {
        rbac::authorize(
            &policy,
            &Attributes::resource(user.clone(), verb, "", "secrets", ns, name),
        )
        .allowed()
    };
    for (ns, name) in cinder::operator::secrets_read(cinder::DEFAULT_NAMESPACE) {
        for verb in ["get", "list", "watch"] {
            assert!(may(verb, ns, name), "{verb} {ns}/{name}");
        }
    }
    for (verb, ns, name) in [
        ("list", "openshift-cluster-csi-drivers", ""),
        ("watch", "openshift-cluster-csi-drivers", ""),
        (
            "get",
            "openshift-cluster-csi-drivers",
            "manila-cloud-credentials",
        ),
        ("get", "openshift-cluster-csi-drivers", "some-other-secret"),
        ("get", "openshift-manila-csi-driver", "csi-manila-secrets"),
        (
            "update",
            "openshift-cluster-csi-drivers",
            "openstack-cloud-credentials",
        ),
    ] {
        assert!(!may(verb, ns, name), "{verb} {ns}/{name} must be refused");
    }
}

/// The checker is not vacuous: a policy without the shared sidecar roles refuses the
/// provisioner, and the message names the ServiceAccount, container, verb and resource.
#[test]
fn a_missing_right_names_the_sidecar_verb_and_resource() {
    let shipped = Shipped::load();
    let policy = StaticPolicy::new(
        shipped
            .manifests
            .iter()
            .chain(&shipped.cso)
            .chain(&shipped.manila)
            .filter(|o| o["metadata"]["name"] != "openshift-csi-main-provisioner-role")
            .cloned(),
    );
    let mut checker = Checker::new(&policy);
    check_operand(&mut checker, &shipped.manila);
    let want = "ServiceAccount openshift-manila-csi-driver:manila-csi-driver-controller-sa: \
                container csi-provisioner (external-provisioner) of Deployment \
                openstack-manila-csi-controllerplugin openshift-manila-csi-driver may not create \
                core/persistentvolumes cluster-wide";
    assert!(
        checker.refused.iter().any(|r| r.starts_with(want)),
        "{:#?}",
        checker.refused
    );
    // An unknown image is reported, not skipped.
    let mut objects = shipped.manila.clone();
    for o in &mut objects {
        if o["kind"] == "DaemonSet" {
            o["spec"]["template"]["spec"]["containers"][0]["image"] =
                Value::String(format!("{IMAGE_PREFIX}SOMETHING_NEW_IMAGE"));
        }
    }
    let mut checker = Checker::new(&policy);
    check_operand(&mut checker, &objects);
    assert!(
        checker
            .refused
            .iter()
            .any(|r| r.contains("\"SOMETHING_NEW_IMAGE\" is not in the catalog")),
        "{:#?}",
        checker.refused
    );
}

// ---- The driver operators ----------------------------------------------------------------------

/// The plural of a rendered object's kind.
fn plural(kind: &str) -> String {
    match kind {
        "PodDisruptionBudget" => "poddisruptionbudgets".into(),
        "StorageClass" => "storageclasses".into(),
        "VolumeSnapshotClass" => "volumesnapshotclasses".into(),
        other => format!("{}s", other.to_ascii_lowercase()),
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// What one driver operator does: apply every object it renders (watch, create, update; delete
/// where it re-creates), grant every Role and ClusterRole it applies and bind the roles its
/// bindings name, read its CR and write its status, hold its lease, read the cluster singletons
/// and its namespaces' ConfigMaps and Secrets, and record Events in its own namespace.
/// The Secrets an operator watches, each by name (as `namespace, name` pairs): both driver
/// operators name theirs, so their Roles can.
struct SecretWatch<'a>(&'a [(&'a str, &'static str)]);

fn check_operator(
    checker: &mut Checker,
    policy: &StaticPolicy,
    service_account: &str,
    operator_namespace: &str,
    lock: &str,
    objects: &[Value],
    secrets: SecretWatch<'_>,
) {
    let user = sa_user(operator_namespace, service_account);
    let who = format!("operator {service_account}");
    let cr = objects
        .iter()
        .find(|o| o["kind"] == "CSIDriver")
        .and_then(|o| o["metadata"]["name"].as_str())
        .expect("a CSIDriver");
    for verb in ["get", "list", "watch"] {
        checker.check(
            &who,
            &user,
            verb,
            "operator.openshift.io",
            "clustercsidrivers",
            "",
            cr,
        );
        for singleton in ["infrastructures", "proxies", "apiservers"] {
            checker.check(
                &who,
                &user,
                verb,
                "config.openshift.io",
                singleton,
                "",
                "cluster",
            );
        }
    }
    checker.check(
        &who,
        &user,
        "update",
        "operator.openshift.io",
        "clustercsidrivers/status",
        "",
        cr,
    );
    for verb in ["get", "create", "update"] {
        let name = if verb == "create" { "" } else { lock };
        checker.check(
            &who,
            &user,
            verb,
            "coordination.k8s.io",
            "leases",
            operator_namespace,
            name,
        );
    }
    checker.check(&who, &user, "create", "", "events", operator_namespace, "");
    let mut namespaces: Vec<&str> = objects
        .iter()
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .collect();
    namespaces.push(operator_namespace);
    namespaces.sort_unstable();
    namespaces.dedup();
    for ns in &namespaces {
        for verb in ["list", "watch"] {
            checker.check(&who, &user, verb, "", "configmaps", ns, "");
        }
    }
    for (ns, name) in secrets.0 {
        for verb in ["get", "list", "watch"] {
            checker.check(&who, &user, verb, "", "secrets", ns, name);
        }
    }
    for o in objects {
        let kind = o["kind"].as_str().unwrap_or_default();
        let group = group_of(o["apiVersion"].as_str().unwrap_or_default());
        let resource = plural(kind);
        let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let what = format!("{who}, applying {kind} {name}");
        // Namespaced kinds are watched in the namespace, cluster-scoped ones and Secrets by
        // name.
        let by_name = kind == "Secret";
        let watched = if ns.is_empty() || by_name { name } else { "" };
        for verb in ["list", "watch"] {
            checker.check(&what, &user, verb, group, &resource, ns, watched);
        }
        checker.check(&what, &user, "create", group, &resource, ns, "");
        checker.check(&what, &user, "update", group, &resource, ns, name);
        // Immutable fields are changed by delete and re-create.
        if matches!(
            kind,
            "StorageClass" | "CSIDriver" | "RoleBinding" | "ClusterRoleBinding"
        ) {
            checker.check(&what, &user, "delete", group, &resource, ns, name);
        }
        if kind == "Role" || kind == "ClusterRole" {
            let rules: Vec<PolicyRule> = rbac::rules_of(o);
            if let Err((message, _)) = rbac::confirm_no_escalation(policy, &user, ns, &rules) {
                checker.refused.push(format!(
                    "ServiceAccount {service_account}: {what}: {message}"
                ));
            }
        }
        if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
            // The API server lets a binding through when its creator holds `bind` on the role
            // or every right the role grants.
            let role_kind = o["roleRef"]["kind"].as_str().unwrap_or_default();
            let role_name = o["roleRef"]["name"].as_str().unwrap_or_default();
            let (role_ns, role_resource) = if role_kind == "Role" {
                (ns, "roles")
            } else {
                ("", "clusterroles")
            };
            let bind = Attributes::resource(
                user.clone(),
                "bind",
                "rbac.authorization.k8s.io",
                role_resource,
                ns,
                role_name,
            );
            let role = if role_kind == "Role" {
                policy.role(role_ns, role_name)
            } else {
                policy.cluster_role(role_name)
            };
            let covered = role.is_some_and(|r| {
                rbac::confirm_no_escalation(policy, &user, ns, &rbac::rules_of(&r)).is_ok()
            });
            checker.checked += 1;
            if !covered && !rbac::authorize(policy, &bind).allowed() {
                checker.refused.push(format!(
                    "ServiceAccount {service_account}: {what}: may neither bind {role_kind} \
                     {role_name} nor grant all it grants"
                ));
            }
        }
    }
}

#[test]
fn driver_operators_may_do_what_they_do() {
    let shipped = Shipped::load();
    let policy = shipped.policy();
    let mut checker = Checker::new(&policy);
    check_operator(
        &mut checker,
        &policy,
        "openstack-cinder-csi-driver-operator",
        cinder::DEFAULT_NAMESPACE,
        cinder::OPERATOR_LOCK_NAME,
        &shipped.cinder,
        SecretWatch(&cinder::operator::secrets_read(cinder::DEFAULT_NAMESPACE)),
    );
    let manila_options = manila::operator::Options::new(Default::default());
    check_operator(
        &mut checker,
        &policy,
        "manila-csi-driver-operator",
        manila::OPERATOR_NAMESPACE,
        manila::OPERATOR_LOCK_NAME,
        &shipped.manila,
        SecretWatch(&manila::operator::secrets_read(&manila_options)),
    );
    checker.assert_none_refused("driver operators");
}

/// The driver operators record their Events about their own Deployment, in the namespace the
/// CSO made for them, which is a relatedObject of `ClusterOperator/storage` (so must-gather
/// collects it) and where their Role lets them write Events; not in `default`.
#[test]
fn driver_operator_events_land_where_must_gather_collects_them() {
    let shipped = Shipped::load();
    let policy = shipped.policy();
    let related = cluster_storage::status::static_related_objects();
    for (about, driver) in [
        (
            operator_kit::csi::events_about(
                cinder::DEFAULT_NAMESPACE,
                cinder::SPEC.operator_deployment,
            ),
            &cluster_storage::registry::CINDER,
        ),
        (
            operator_kit::csi::events_about(
                manila::OPERATOR_NAMESPACE,
                manila::SPEC.operator_deployment,
            ),
            &cluster_storage::registry::MANILA,
        ),
    ] {
        let ns = about.namespace.clone().unwrap_or_default();
        assert_ne!(ns, "default", "{}: Events in default", driver.name);
        assert_eq!(ns, driver.operator_namespace);
        assert_eq!(about.kind.as_deref(), Some("Deployment"));
        assert_eq!(about.name.as_deref(), Some(driver.operator_deployment));
        assert!(
            related
                .iter()
                .any(|r| r.resource == "namespaces" && r.name == ns),
            "{ns} is not a relatedObject: {related:?}"
        );
        let user = sa_user(driver.operator_namespace, driver.operator_deployment);
        for verb in ["create", "patch"] {
            let attrs = Attributes::resource(user.clone(), verb, "", "events", &ns, "");
            assert!(
                rbac::authorize(&policy, &attrs).allowed(),
                "{} may not {verb} Events in {ns}",
                driver.name
            );
        }
    }
}

/// The Manila operator's export-network diagnostic (`ManilaExportNetworkReachable`) watches
/// every Node for its addresses: it may list and watch Nodes, and no more than that (no get,
/// no write), as the shipped RBAC reaches a cluster.
#[test]
fn the_manila_operator_may_list_and_watch_nodes_and_nothing_more() {
    let shipped = Shipped::load();
    let policy = shipped.policy();
    let user = sa_user(manila::OPERATOR_NAMESPACE, "manila-csi-driver-operator");
    let mut checker = Checker::new(&policy);
    for verb in ["list", "watch"] {
        checker.check(
            "operator manila-csi-driver-operator, watching Nodes",
            &user,
            verb,
            "",
            "nodes",
            "",
            "",
        );
    }
    checker.assert_none_refused("the Manila operator's Node watch");
    // Only the Manila operator's own ClusterRole is looked at here: the CSO's union role
    // (which Manila's must be a subset of) holds `get` for the Cinder operator.
    let role = policy
        .cluster_role("manila-csi-driver-operator-clusterrole")
        .expect("the Manila operator's ClusterRole");
    let node_verbs: Vec<String> = rbac::rules_of(&role)
        .iter()
        .filter(|r| r.resources.iter().any(|res| res == "nodes"))
        .flat_map(|r| r.verbs.clone())
        .collect();
    assert_eq!(node_verbs, ["list", "watch"], "least privilege on nodes");
}
