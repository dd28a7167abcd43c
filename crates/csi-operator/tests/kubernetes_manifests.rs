//! Tests of `manifests/kubernetes/`, the plain-Kubernetes kustomize base: that it is exactly
//! what the generator (`cluster_storage::kubernetes`) makes from the assets the Cluster Storage
//! Operator deploys on OpenShift (run with `UPDATE_MANIFESTS=1` to rewrite it), that
//! `kustomization.yaml` lists every file, that nothing OpenShift-only is left in it, that the
//! operators' placement works on a cluster without `master` nodes, and that `kubectl
//! kustomize` builds the same objects offline. Installing from it is `kubernetes_e2e.rs`.
//! These tests write only with `UPDATE_MANIFESTS=1`, and reach no network.

mod common;

use std::collections::BTreeSet;

use common::kubernetes::*;
use serde_json::Value;

/// With `UPDATE_MANIFESTS` set, writes `generated` into `dir` (paths relative to it) and
/// removes the files there it does not name; then returns how `dir` differs from `generated`.
fn sync_dir(dir: &std::path::Path, generated: &[(String, String)]) -> Vec<String> {
    fn files(dir: &std::path::Path, under: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                files(&path, under, out);
            } else if let Ok(rel) = path.strip_prefix(under) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let wanted: BTreeSet<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
    if std::env::var_os("UPDATE_MANIFESTS").is_some() {
        let mut on_disk = Vec::new();
        files(dir, dir, &mut on_disk);
        for name in on_disk {
            if !wanted.contains(name.as_str()) {
                std::fs::remove_file(dir.join(&name)).expect("remove a stale file");
            }
        }
        for (name, text) in generated {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("create a directory");
            std::fs::write(path, text).expect("write");
        }
    }
    let mut stale = Vec::new();
    for (name, text) in generated {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(on_disk) if on_disk == *text => {}
            Ok(_) => stale.push(format!("{name}: differs")),
            Err(_) => stale.push(format!("{name}: missing")),
        }
    }
    let mut on_disk = Vec::new();
    files(dir, dir, &mut on_disk);
    for name in on_disk {
        if !wanted.contains(name.as_str()) {
            stale.push(format!("{name}: not generated (remove it)"));
        }
    }
    stale
}

#[test]
fn the_checked_in_base_is_what_the_generator_makes() {
    let stale = sync_dir(&kubernetes_dir(), &generate());
    assert!(
        stale.is_empty(),
        "manifests/kubernetes/ is not what the assets give; regenerate with \
         UPDATE_MANIFESTS=1 cargo test -p csi-operator --test kubernetes_manifests:\n{}",
        stale.join("\n")
    );
}

/// The Helm chart is generated from the same objects as the base (`cluster_storage::chart`);
/// `chart.rs` checks that it renders them.
#[test]
fn the_checked_in_chart_is_what_the_generator_makes() {
    let stale = sync_dir(&chart_dir(), &generate_chart());
    assert!(
        stale.is_empty(),
        "charts/{}/ is not what the assets give; regenerate with \
         UPDATE_MANIFESTS=1 cargo test -p csi-operator --test kubernetes_manifests:\n{}",
        cluster_storage::chart::CHART_NAME,
        stale.join("\n")
    );
}

#[test]
fn the_kustomization_lists_every_file_once() {
    let listed = kustomization_resources();
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "a file listed twice: {listed:?}"
    );
    let on_disk: BTreeSet<String> = std::fs::read_dir(kubernetes_dir())
        .expect("manifests/kubernetes")
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "kustomization.yaml")
        .collect();
    assert_eq!(
        unique.into_iter().cloned().collect::<BTreeSet<_>>(),
        on_disk
    );
}

/// Every string in `v`, with its path.
fn strings<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) => out.push((path, s)),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                strings(x, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                out.push((format!("{path}.{k}"), k));
                strings(x, format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn nothing_needs_an_openshift_api() {
    let objects = base_objects();
    for o in &objects {
        let api = o["apiVersion"].as_str().unwrap_or_default();
        assert!(
            !api.ends_with("openshift.io/v1") || o["kind"] == "CustomResourceDefinition",
            "{} {} is an OpenShift API object",
            o["kind"],
            o["metadata"]["name"]
        );
    }
    let mut found = Vec::new();
    for o in &objects {
        strings(
            o,
            o["metadata"]["name"].as_str().unwrap_or("").into(),
            &mut found,
        );
    }
    for (path, s) in found {
        for forbidden in [
            "service.beta.openshift.io",
            "openshift.io/required-scc",
            "include.release.openshift.io",
            "node-role.kubernetes.io/master\"",
        ] {
            assert!(!s.contains(forbidden), "{path}: {s}");
        }
    }
    // The one thing the operators may do that OpenShift's CSO does for them.
    for d in operator_deployments(&objects) {
        let args = &d["spec"]["template"]["spec"]["containers"][0]["args"];
        let args: Vec<&str> = args
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(args.contains(&"--create-cluster-csi-driver"), "{args:?}");
        assert!(args.contains(&"--cluster-id=kubernetes"), "{args:?}");
    }
}

/// Both operators land on the control plane where there is one, and anywhere where there is
/// none (a managed cluster), and never ask for the `master` role Kubernetes dropped in 1.24.
#[test]
fn the_operators_can_run_with_and_without_control_plane_nodes() {
    let objects = base_objects();
    let control_plane = serde_json::json!({"metadata": {"name": "cp-0", "labels": {
        "node-role.kubernetes.io/control-plane": ""}},
        "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}});
    let worker = serde_json::json!({"metadata": {"name": "w-0", "labels": {}}});
    for d in operator_deployments(&objects) {
        let pod = &d["spec"]["template"]["spec"];
        assert!(pod["nodeSelector"].is_null(), "{pod}");
        for node in [&control_plane, &worker] {
            assert!(
                kube_sim::workload::node_should_run(node, pod).0,
                "{} cannot run on {}",
                d["metadata"]["name"],
                node["metadata"]["name"]
            );
        }
        assert_eq!(
            pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"]
                ["matchExpressions"][0]["key"],
            "node-role.kubernetes.io/control-plane"
        );
    }
}

/// `kubectl kustomize` (kustomize inside kubectl, offline) builds the base and yields the same
/// objects as the files, with the operator image as the kustomization sets it.
#[test]
fn kubectl_kustomize_builds_the_same_objects() {
    let out = match std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(kubernetes_dir())
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIPPED: kubectl is not on PATH ({e}); cannot check `kubectl kustomize`");
            return;
        }
    };
    assert!(
        out.status.success(),
        "kubectl kustomize failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let built = operator_kit::assets::parse_values("kubectl kustomize", &text).expect("YAML");
    let key = |o: &Value| {
        (
            o["kind"].as_str().unwrap_or_default().to_owned(),
            o["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let mut files = base_objects();
    files.sort_by_key(key);
    let mut built = built;
    built.sort_by_key(key);
    assert_eq!(
        built.iter().map(key).collect::<Vec<_>>(),
        files.iter().map(key).collect::<Vec<_>>()
    );
    for (b, f) in built.iter().zip(&files) {
        assert_eq!(b, f, "{:?}", key(f));
    }
    for d in operator_deployments(&built) {
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            operator_image().as_str()
        );
    }
}

/// The images `csi-operator render <operator>` puts in its objects when given none.
fn render_images(operator: &str, extra: &[&str]) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(["render", operator])
        .args(extra)
        .env_clear()
        .output()
        .expect("csi-operator runs");
    assert!(
        out.status.success(),
        "render {operator}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    fn images(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| images(x, out)),
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("image", Value::String(s)) => {
                            out.insert(s.clone());
                        }
                        _ => images(x, out),
                    }
                }
            }
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    for o in operator_kit::assets::parse_values("render", &text).expect("YAML") {
        images(&o, &mut found);
    }
    found
}

/// The `*_IMAGE` environment of the operator Deployment `name` in `objects`.
fn deployment_images(objects: &[Value], name: &str) -> std::collections::BTreeMap<String, String> {
    let d = operator_deployments(objects)
        .into_iter()
        .find(|d| d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no Deployment {name}"));
    d["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
        .filter(|(k, _)| k.ends_with("_IMAGE"))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// One place names the upstream images (`cluster_storage::kubernetes::UPSTREAM_IMAGES`), and
/// everything that installs on plain Kubernetes agrees with it: the operators' environment in
/// `manifests/kubernetes/`, the Helm chart's `images` values, and the images `render` uses when
/// it is given none. Each image
/// `render` shows is one the operator Deployment of `manifests/kubernetes/` would give it.
#[test]
fn the_default_images_agree_everywhere() {
    use cluster_storage::kubernetes::{UPSTREAM_IMAGES, upstream_operand_images};
    use cluster_storage::registry::{CINDER, MANILA};
    let objects = base_objects();
    for (driver, deployment, operator, extra) in [
        (
            &CINDER,
            "openstack-cinder-csi-driver-operator",
            "openstack-cinder",
            &[][..],
        ),
        (
            &MANILA,
            "manila-csi-driver-operator",
            "openstack-manila",
            &["--share-type", "default"][..],
        ),
    ] {
        let manifest = deployment_images(&objects, deployment);
        let upstream = upstream_operand_images(driver);
        assert_eq!(manifest, upstream, "{deployment}: manifests/kubernetes/");
        let rendered = render_images(operator, extra);
        let given: BTreeSet<String> = manifest.values().cloned().collect();
        assert!(
            rendered.is_subset(&given),
            "render {operator} uses images manifests/kubernetes/ does not give: {:?}",
            rendered.difference(&given).collect::<Vec<_>>()
        );
        assert!(
            rendered.contains(&manifest["DRIVER_IMAGE"]),
            "render {operator}: {rendered:?}"
        );
    }
    // The chart's values (its Deployments take the operand images from them only; chart.rs
    // checks they render as manifests/kubernetes/ does).
    let values = std::fs::read_to_string(chart_dir().join("values.yaml")).expect("values.yaml");
    let values = operator_kit::assets::parse_values("values.yaml", &values)
        .expect("values.yaml parses")
        .remove(0);
    for (i, (env, image)) in UPSTREAM_IMAGES.iter().enumerate() {
        let key = cluster_storage::chart::image_key(i);
        assert_eq!(
            values["images"][&key], *image,
            "the chart's images.{key} ({env})"
        );
    }
    assert_eq!(
        values["images"].as_object().map(|m| m.len()),
        Some(UPSTREAM_IMAGES.len())
    );
    // And the one place holds the upstream charts' current release (cloud-provider-openstack
    // openstack-cinder-csi / openstack-manila-csi 2.36.0).
    let upstream: std::collections::BTreeMap<_, _> = UPSTREAM_IMAGES.iter().copied().collect();
    for (env, image) in [
        (
            "OPENSTACK_CINDER_DRIVER_IMAGE",
            "registry.k8s.io/provider-os/cinder-csi-plugin:v1.36.0",
        ),
        (
            "MANILA_DRIVER_IMAGE",
            "registry.k8s.io/provider-os/manila-csi-plugin:v1.36.0",
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
    ] {
        assert_eq!(upstream[env], image, "{env}");
    }
}
