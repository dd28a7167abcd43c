//! The TestDriver manifests of the Kubernetes external storage suite (`test/e2e/cinder.yaml`,
//! `test/e2e/manila.yaml`, run as in `docs/e2e.md`) checked against what the operators really
//! install: `csi-operator render` is run as a process and every capability, class name, fs type
//! and topology key a manifest claims is compared with the rendered CSIDriver, StorageClass,
//! VolumeSnapshotClass, controller Deployment and node DaemonSets.
//!
//! Why: a manifest that claims more than the driver does makes the suite fail on a healthy
//! cluster, and one that claims less silently skips tests. Capabilities the objects cannot
//! show (cloning) come from the upstream drivers' advertised CSI capabilities, in
//! [`DRIVER_FACTS`]. Field and capability names are those of k8s
//! `test/e2e/storage/external/external.go` and `framework/testdriver.go`; an unknown one is an
//! error here (upstream would ignore a typo silently).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// Images for `render` (any value: only the objects' shape matters here).
const IMAGES: &[&str] = &[
    "DRIVER_IMAGE",
    "NFS_DRIVER_IMAGE",
    "PROVISIONER_IMAGE",
    "ATTACHER_IMAGE",
    "RESIZER_IMAGE",
    "SNAPSHOTTER_IMAGE",
    "LIVENESS_PROBE_IMAGE",
    "NODE_DRIVER_REGISTRAR_IMAGE",
    "KUBE_RBAC_PROXY_IMAGE",
];

/// What a driver binary does that no Kubernetes object shows (from the upstream
/// cloud-provider-openstack drivers: cinder-csi-plugin advertises CLONE_VOLUME, Manila creates
/// shares from snapshots only; both label nodes with `topology.<driver>/zone` when started
/// with `--with-topology`).
struct DriverFacts {
    name: &'static str,
    clones_volumes: bool,
    /// File systems the node plugin formats (mkfs) on an attached device.
    formats: &'static [&'static str],
}

const DRIVER_FACTS: &[DriverFacts] = &[
    DriverFacts {
        name: "cinder.csi.openstack.org",
        clones_volumes: true,
        formats: &["ext2", "ext3", "ext4", "xfs"],
    },
    DriverFacts {
        name: "manila.csi.openstack.org",
        clones_volumes: false,
        formats: &[],
    },
];

const TOP_LEVEL_KEYS: &[&str] = &[
    "DriverInfo",
    "StorageClass",
    "SnapshotClass",
    "VolumeAttributesClass",
    "InlineVolumes",
    "ClientNodeName",
    "NodeSelectors",
    "Timeouts",
];

const DRIVER_INFO_KEYS: &[&str] = &[
    "Name",
    "InTreePluginName",
    "TestTags",
    "MaxFileSize",
    "SupportedSizeRange",
    "SupportedFsType",
    "SupportedMountOption",
    "RequiredMountOption",
    "Capabilities",
    "RequiredAccessModes",
    "TopologyKeys",
    "NumAllowedTopologies",
    "StressTestOptions",
    "VolumeSnapshotStressTestOptions",
    "PerformanceTestOptions",
];

/// The capabilities of `storageframework` (k8s test/e2e/storage/framework/testdriver.go).
const CAPABILITIES: &[&str] = &[
    "persistence",
    "block",
    "fsGroup",
    "volumeMountGroup",
    "exec",
    "snapshotDataSource",
    "pvcDataSource",
    "offlineSnapshotClone",
    "multipods",
    "RWX",
    "controllerExpansion",
    "nodeExpansion",
    "offlineExpansion",
    "onlineExpansion",
    "volumeLimits",
    "singleNodeVolume",
    "topology",
    "capacity",
    "FSResizeFromSourceNotSupported",
    "readWriteOncePod",
    "multiplePVsSameID",
    "capReadOnlyMany",
];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn manifest(name: &str) -> Value {
    let path = repo_root().join("test/e2e").join(name);
    let text = std::fs::read_to_string(&path).expect("the manifest exists");
    let mut docs = operator_kit::assets::parse_values(name, &text).expect("the manifest is YAML");
    assert_eq!(docs.len(), 1, "{name}: one document");
    docs.remove(0)
}

/// `csi-operator render <driver> <args>` parsed into objects.
fn render(driver: &str, args: &[&str]) -> Vec<Value> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_csi-operator"));
    cmd.args(["render", driver]).args(args).env_clear();
    for name in IMAGES {
        cmd.args(["--image", &format!("{name}=example.com/{name}:1")]);
    }
    let out = cmd.output().expect("csi-operator runs");
    assert!(
        out.status.success(),
        "render {driver}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    operator_kit::assets::parse_values("render", &text).expect("render prints YAML")
}

fn rendered_cinder(topology: bool) -> Vec<Value> {
    render(
        "openstack-cinder",
        &["--enable-topology", if topology { "true" } else { "false" }],
    )
}

fn rendered_manila() -> Vec<Value> {
    render("openstack-manila", &["--share-type", "default"])
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn kind(v: &Value) -> &str {
    s(v, &["kind"]).unwrap_or("")
}

fn name(v: &Value) -> &str {
    s(v, &["metadata", "name"]).unwrap_or("")
}

/// The rendered objects of one driver, with the facts the rules read.
struct Rendered<'a> {
    objects: &'a [Value],
    driver: &'a str,
}

impl<'a> Rendered<'a> {
    fn csi_driver(&self) -> Result<&'a Value, String> {
        self.objects
            .iter()
            .find(|o| kind(o) == "CSIDriver" && name(o) == self.driver)
            .ok_or_else(|| format!("no CSIDriver {} is rendered", self.driver))
    }

    fn storage_classes(&self) -> impl Iterator<Item = &'a Value> + use<'a, '_> {
        self.objects
            .iter()
            .filter(|o| kind(o) == "StorageClass" && s(o, &["provisioner"]) == Some(self.driver))
    }

    fn snapshot_classes(&self) -> impl Iterator<Item = &'a Value> + use<'a, '_> {
        self.objects
            .iter()
            .filter(|o| kind(o) == "VolumeSnapshotClass" && s(o, &["driver"]) == Some(self.driver))
    }

    fn containers(&self, workload: &str) -> Vec<&'a Value> {
        self.objects
            .iter()
            .filter(|o| kind(o) == workload)
            .flat_map(|o| {
                get(o, &["spec", "template", "spec", "containers"])
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .collect()
    }

    /// A sidecar of the controller Deployment, by the program its image runs (its name).
    fn controller_has(&self, sidecar: &str) -> bool {
        self.containers("Deployment")
            .iter()
            .any(|c| s(c, &["name"]).is_some_and(|n| n.contains(sidecar)))
    }

    /// The node plugin: the DaemonSet container started with `--provide-node-service=true`.
    fn node_plugin(&self) -> Result<&'a Value, String> {
        self.containers("DaemonSet")
            .into_iter()
            .find(|c| args(c).any(|a| a == "--provide-node-service=true"))
            .ok_or_else(|| format!("no node plugin of {} is rendered", self.driver))
    }

    fn node_mounts_host_dev(&self) -> bool {
        self.objects
            .iter()
            .filter(|o| kind(o) == "DaemonSet")
            .flat_map(|o| {
                get(o, &["spec", "template", "spec", "volumes"])
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .any(|v| s(v, &["hostPath", "path"]) == Some("/dev"))
    }

    /// `--with-topology` of the node plugin, resolving `$(VAR)` through its env and the
    /// rendered ConfigMap it names (Cinder's `cloud-conf` `enable_topology`).
    fn topology_enabled(&self) -> Result<bool, String> {
        let node = self.node_plugin()?;
        let Some(value) = args(node).find_map(|a| a.strip_prefix("--with-topology=")) else {
            return Ok(false);
        };
        let value = match value.strip_prefix("$(").and_then(|v| v.strip_suffix(')')) {
            None => value.to_string(),
            Some(var) => self.env_value(node, var)?,
        };
        match value.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(format!("--with-topology is {other:?}")),
        }
    }

    fn env_value(&self, container: &Value, var: &str) -> Result<String, String> {
        let env = get(container, &["env"])
            .and_then(Value::as_array)
            .and_then(|e| e.iter().find(|e| s(e, &["name"]) == Some(var)))
            .ok_or_else(|| format!("the node plugin has no env {var}"))?;
        if let Some(v) = s(env, &["value"]) {
            return Ok(v.to_string());
        }
        let cm = s(env, &["valueFrom", "configMapKeyRef", "name"]);
        let key = s(env, &["valueFrom", "configMapKeyRef", "key"]);
        let (Some(cm), Some(key)) = (cm, key) else {
            return Err(format!("env {var} is neither a value nor a ConfigMap key"));
        };
        self.objects
            .iter()
            .find(|o| kind(o) == "ConfigMap" && name(o) == cm)
            .and_then(|o| s(o, &["data", key]))
            .map(str::to_string)
            .ok_or_else(|| format!("env {var} names ConfigMap {cm} key {key}, not rendered"))
    }

    fn config_map_text(&self) -> String {
        self.objects
            .iter()
            .filter(|o| kind(o) == "ConfigMap")
            .filter_map(|o| get(o, &["data"]).and_then(Value::as_object))
            .flat_map(|d| d.values().filter_map(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn provisioner_default_fs_type(&self) -> Option<&'a str> {
        self.containers("Deployment")
            .into_iter()
            .flat_map(args)
            .find_map(|a| a.strip_prefix("--default-fstype="))
    }
}

fn args(container: &Value) -> impl Iterator<Item = &str> {
    get(container, &["args"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// A quantity such as `1Gi` or `16Ti` in bytes (binary suffixes only: the suite's sizes).
fn quantity(q: &str) -> Option<u128> {
    let units = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50)];
    for (suffix, shift) in units {
        if let Some(n) = q.strip_suffix(suffix) {
            return n.parse::<u128>().ok().map(|n| n << shift);
        }
    }
    q.parse().ok()
}

fn unknown_keys(v: &Value, allowed: &[&str], what: &str, errors: &mut Vec<String>) {
    if let Some(map) = v.as_object() {
        for k in map.keys() {
            if !allowed.contains(&k.as_str()) {
                errors.push(format!(
                    "{what}: unknown field {k:?} (the suite would ignore it)"
                ));
            }
        }
    }
}

/// Resolves `StorageClass` / `SnapshotClass` of the manifest to a rendered object. `FromName`
/// is a class with no parameters: allowed only when one rendered class has none (Manila's need
/// secrets). `FromFile` is refused: the class checked must be the one the operator installs.
fn class_ref<'a>(
    manifest: &Value,
    field: &str,
    mut candidates: impl Iterator<Item = &'a Value>,
    errors: &mut Vec<String>,
) -> Option<&'a Value> {
    let r = manifest.get(field)?;
    unknown_keys(
        r,
        &["FromName", "FromFile", "FromExistingClassName"],
        field,
        errors,
    );
    if r.get("FromFile").is_some() {
        errors.push(format!(
            "{field}.FromFile: use FromExistingClassName, so the class tested is the one the operator installs"
        ));
        return None;
    }
    if let Some(want) = s(r, &["FromExistingClassName"]) {
        let found = candidates.find(|c| name(c) == want);
        if found.is_none() {
            errors.push(format!(
                "{field}.FromExistingClassName {want:?}: the operator renders no such class for this driver"
            ));
        }
        return found;
    }
    if get(r, &["FromName"]).and_then(Value::as_bool) == Some(true) {
        let found = candidates.find(|c| {
            get(c, &["parameters"])
                .and_then(Value::as_object)
                .is_none_or(|p| p.keys().all(|k| k == "force-create"))
        });
        if found.is_none() {
            errors.push(format!(
                "{field}.FromName: every rendered class of this driver has parameters (secrets) a class from the name alone lacks"
            ));
        }
        return found;
    }
    None
}

/// Every contradiction between a manifest and the rendered objects, as readable lines; empty
/// when the manifest is consistent.
fn check(manifest: &Value, objects: &[Value]) -> Vec<String> {
    let mut errors = Vec::new();
    unknown_keys(manifest, TOP_LEVEL_KEYS, "manifest", &mut errors);
    let Some(info) = manifest.get("DriverInfo") else {
        return vec!["DriverInfo is missing".into()];
    };
    unknown_keys(info, DRIVER_INFO_KEYS, "DriverInfo", &mut errors);
    let Some(driver) = s(info, &["Name"]) else {
        return vec!["DriverInfo.Name is missing".into()];
    };
    let Some(facts) = DRIVER_FACTS.iter().find(|f| f.name == driver) else {
        return vec![format!(
            "DriverInfo.Name {driver:?} is not one of our drivers"
        )];
    };
    let r = Rendered { objects, driver };
    let csi = match r.csi_driver() {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    let attach = get(csi, &["spec", "attachRequired"]).and_then(Value::as_bool) != Some(false);
    let fs_group_policy = s(csi, &["spec", "fsGroupPolicy"]).unwrap_or("ReadWriteOnceWithFSType");
    let storage_capacity =
        get(csi, &["spec", "storageCapacity"]).and_then(Value::as_bool) == Some(true);
    let persistent = get(csi, &["spec", "volumeLifecycleModes"])
        .and_then(Value::as_array)
        .is_none_or(|m| m.iter().any(|m| m == "Persistent"));

    let sc = class_ref(manifest, "StorageClass", r.storage_classes(), &mut errors);
    if manifest.get("StorageClass").is_none() {
        errors.push("StorageClass is missing: no dynamic provisioning test would run".into());
    }
    let vsc = class_ref(manifest, "SnapshotClass", r.snapshot_classes(), &mut errors);
    let expandable = sc
        .and_then(|c| get(c, &["allowVolumeExpansion"]))
        .and_then(Value::as_bool)
        == Some(true);
    let mount_options: BTreeSet<&str> = sc
        .and_then(|c| get(c, &["mountOptions"]))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let topology = match r.topology_enabled() {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            false
        }
    };

    let caps = info.get("Capabilities").and_then(Value::as_object);
    let Some(caps) = caps else {
        errors.push("DriverInfo.Capabilities is missing".into());
        return errors;
    };
    let cap = |n: &str| caps.get(n).and_then(Value::as_bool).unwrap_or(false);
    for (k, v) in caps {
        if !CAPABILITIES.contains(&k.as_str()) {
            errors.push(format!(
                "Capabilities: unknown capability {k:?} (names are case-sensitive)"
            ));
        }
        if !v.is_boolean() {
            errors.push(format!("Capabilities.{k}: {v} is not true or false"));
        }
    }
    let mut claim = |n: &str, ok: bool, why: &str| {
        if !ok {
            errors.push(format!("{n}: {why}"));
        }
    };

    claim(
        "persistence",
        cap("persistence") == persistent,
        "must equal whether the CSIDriver lists the Persistent lifecycle mode",
    );
    claim(
        "block",
        !cap("block") || (attach && r.node_mounts_host_dev()),
        "raw block needs an attached device (CSIDriver attachRequired) and the host's /dev in the node plugin",
    );
    claim(
        "fsGroup",
        cap("fsGroup") == (fs_group_policy != "None"),
        &format!(
            "must equal whether the CSIDriver applies fsGroup (fsGroupPolicy {fs_group_policy})"
        ),
    );
    claim(
        "volumeMountGroup",
        !cap("volumeMountGroup"),
        "neither driver advertises the VOLUME_MOUNT_GROUP node capability",
    );
    claim(
        "exec",
        !cap("exec") || !mount_options.contains("noexec"),
        "the StorageClass mounts with noexec",
    );
    claim(
        "snapshotDataSource",
        !cap("snapshotDataSource") || (vsc.is_some() && r.controller_has("snapshotter")),
        "needs a SnapshotClass naming a rendered VolumeSnapshotClass of the driver and the csi-snapshotter sidecar",
    );
    claim(
        "pvcDataSource",
        !cap("pvcDataSource") || (facts.clones_volumes && r.controller_has("provisioner")),
        "the driver cannot create a volume from another volume",
    );
    claim(
        "multipods",
        !cap("multipods") || r.node_plugin().is_ok(),
        "needs a node plugin that stages volumes",
    );
    claim(
        "RWX",
        cap("RWX") != attach,
        "ReadWriteMany is exactly the drivers that need no attach (shares, not disks)",
    );
    claim(
        "controllerExpansion",
        cap("controllerExpansion") == expandable,
        "must equal the StorageClass's allowVolumeExpansion",
    );
    claim(
        "controllerExpansion",
        !cap("controllerExpansion") || r.controller_has("resizer"),
        "needs the csi-resizer sidecar",
    );
    claim(
        "nodeExpansion",
        !cap("nodeExpansion") || (cap("controllerExpansion") && attach),
        "only a file system on an attached device is grown on the node",
    );
    for n in ["onlineExpansion", "offlineExpansion"] {
        claim(
            n,
            !cap(n) || cap("controllerExpansion"),
            "needs controllerExpansion",
        );
    }
    claim(
        "volumeLimits",
        !cap("volumeLimits") || r.config_map_text().contains("node-volume-attach-limit"),
        "the driver is given no per-node volume limit",
    );
    claim(
        "singleNodeVolume",
        !cap("singleNodeVolume"),
        "volumes are network storage provisioned by a controller, usable from any node",
    );
    claim(
        "capacity",
        !cap("capacity") || storage_capacity,
        "the CSIDriver has storageCapacity false",
    );
    claim(
        "readWriteOncePod",
        !cap("readWriteOncePod"),
        "not claimed for these drivers (SINGLE_NODE_MULTI_WRITER is not verified)",
    );
    claim(
        "topology",
        cap("topology") == topology,
        &format!("the node plugin runs with --with-topology={topology}"),
    );

    let keys: Vec<&str> = info
        .get("TopologyKeys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let labelled = format!("topology.{driver}/zone");
    let want: Vec<&str> = if topology { vec![&labelled] } else { vec![] };
    if keys != want {
        errors.push(format!(
            "TopologyKeys {keys:?}: the driver labels nodes with {want:?}"
        ));
    }

    let fs: BTreeSet<&str> = info
        .get("SupportedFsType")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_else(|| BTreeSet::from([""]));
    for t in &fs {
        if t.is_empty() {
            continue;
        }
        if !attach {
            errors.push(format!(
                "SupportedFsType {t:?}: shares have no file system type"
            ));
        } else if !facts.formats.contains(t) {
            errors.push(format!(
                "SupportedFsType {t:?}: the node plugin formats only {:?}",
                facts.formats
            ));
        }
    }
    if let Some(default) = r.provisioner_default_fs_type()
        && fs.contains("")
        && !facts.formats.contains(&default)
    {
        errors.push(format!(
            "the provisioner's default fs type {default:?} is not one the driver formats"
        ));
    }
    if let Some(t) = sc.and_then(|c| s(c, &["parameters", "csi.storage.k8s.io/fstype"]))
        && !fs.contains(t)
    {
        errors.push(format!(
            "the StorageClass's fstype {t:?} is not in SupportedFsType"
        ));
    }

    let range = info.get("SupportedSizeRange");
    let min = range.and_then(|r| s(r, &["Min"])).map(|q| (q, quantity(q)));
    let max = range.and_then(|r| s(r, &["Max"])).map(|q| (q, quantity(q)));
    match min {
        Some((_, Some(b))) if b >= 1 << 30 && b % (1 << 30) == 0 => {}
        Some((q, _)) => errors.push(format!(
            "SupportedSizeRange.Min {q:?}: Cinder and Manila allocate whole GiB, at least 1Gi"
        )),
        None => errors.push(
            "SupportedSizeRange.Min is missing (the suite's default 5Gi wastes quota)".into(),
        ),
    }
    if let (Some((_, Some(lo))), Some((q, hi))) = (min, max)
        && hi.is_none_or(|hi| hi < lo)
    {
        errors.push(format!(
            "SupportedSizeRange.Max {q:?} is not a size at least Min"
        ));
    }
    let options = info.get("SupportedMountOption").and_then(Value::as_object);
    if cap("exec") && options.is_some_and(|o| o.contains_key("noexec")) {
        errors.push("SupportedMountOption noexec contradicts exec".into());
    }
    errors
}

#[test]
fn cinder_manifest_matches_the_rendered_objects() {
    let errors = check(&manifest("cinder.yaml"), &rendered_cinder(true));
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn manila_manifest_matches_the_rendered_objects() {
    let errors = check(&manifest("manila.yaml"), &rendered_manila());
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Sets `DriverInfo.Capabilities.<cap>` (or any path) in a copy of the manifest.
fn with(manifest: &Value, path: &[&str], value: Value) -> Value {
    let mut m = manifest.clone();
    let (last, parents) = path.split_last().expect("a path");
    let mut at = &mut m;
    for p in parents {
        at = at
            .as_object_mut()
            .expect("an object")
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    at.as_object_mut()
        .expect("an object")
        .insert(last.to_string(), value);
    m
}

fn expect_caught(manifest: &Value, objects: &[Value], needle: &str) {
    let errors = check(manifest, objects);
    assert!(
        errors.iter().any(|e| e.contains(needle)),
        "a contradiction about {needle:?} went unnoticed: {errors:#?}"
    );
}

fn caps(name: &str) -> Vec<&str> {
    vec!["DriverInfo", "Capabilities", name]
}

#[test]
fn the_checker_catches_contradicting_manifests() {
    let cinder = manifest("cinder.yaml");
    let manila = manifest("manila.yaml");
    let c = rendered_cinder(true);
    let m = rendered_manila();

    // Capabilities the objects contradict.
    expect_caught(&with(&cinder, &caps("RWX"), true.into()), &c, "RWX");
    expect_caught(&with(&manila, &caps("RWX"), false.into()), &m, "RWX");
    expect_caught(&with(&manila, &caps("block"), true.into()), &m, "block");
    expect_caught(&with(&manila, &caps("fsGroup"), true.into()), &m, "fsGroup");
    expect_caught(
        &with(&cinder, &caps("fsGroup"), false.into()),
        &c,
        "fsGroup",
    );
    expect_caught(
        &with(&manila, &caps("nodeExpansion"), true.into()),
        &m,
        "nodeExpansion",
    );
    expect_caught(
        &with(&manila, &caps("pvcDataSource"), true.into()),
        &m,
        "pvcDataSource",
    );
    expect_caught(
        &with(&cinder, &caps("controllerExpansion"), false.into()),
        &c,
        "controllerExpansion",
    );
    expect_caught(
        &with(&cinder, &caps("capacity"), true.into()),
        &c,
        "capacity",
    );
    expect_caught(
        &with(&cinder, &caps("singleNodeVolume"), true.into()),
        &c,
        "singleNodeVolume",
    );
    expect_caught(
        &with(&manila, &caps("topology"), true.into()),
        &m,
        "topology",
    );
    expect_caught(
        &with(&cinder, &caps("rwx"), false.into()),
        &c,
        "unknown capability",
    );
    expect_caught(
        &with(&manila, &caps("volumeLimits"), true.into()),
        &m,
        "volumeLimits",
    );

    // Cinder's manifest on a cloud where the operator turned topology off.
    expect_caught(&cinder, &rendered_cinder(false), "topology");
    expect_caught(&cinder, &rendered_cinder(false), "TopologyKeys");
    expect_caught(
        &with(
            &cinder,
            &["DriverInfo", "TopologyKeys"],
            serde_json::json!(["topology.kubernetes.io/zone"]),
        ),
        &c,
        "TopologyKeys",
    );

    // Classes and sizes.
    expect_caught(
        &with(
            &cinder,
            &["StorageClass"],
            serde_json::json!({"FromExistingClassName": "fast-ssd"}),
        ),
        &c,
        "StorageClass.FromExistingClassName",
    );
    expect_caught(
        &with(
            &manila,
            &["SnapshotClass"],
            serde_json::json!({"FromName": true}),
        ),
        &m,
        "SnapshotClass.FromName",
    );
    expect_caught(
        &with(
            &cinder,
            &["DriverInfo", "SupportedFsType"],
            serde_json::json!({"ext4": {}, "ntfs": {}}),
        ),
        &c,
        "ntfs",
    );
    expect_caught(
        &with(
            &manila,
            &["DriverInfo", "SupportedFsType"],
            serde_json::json!({"": {}, "ext4": {}}),
        ),
        &m,
        "shares have no file system",
    );
    expect_caught(
        &with(
            &cinder,
            &["DriverInfo", "SupportedSizeRange", "Min"],
            "500Mi".into(),
        ),
        &c,
        "whole GiB",
    );
    // A manifest of one driver is not satisfied by the other's objects.
    expect_caught(&manila, &c, "no CSIDriver");
}

/// The Manila CSIDriver follows `CSI_FSGROUP_POLICY`: with `File` the manifest must say
/// fsGroup (and the shipped one, for the default None, must not).
#[test]
fn manila_fs_group_follows_the_rendered_policy() {
    let file = render(
        "openstack-manila",
        &["--share-type", "default", "--fs-group-policy", "File"],
    );
    let manila = manifest("manila.yaml");
    expect_caught(&manila, &file, "fsGroup");
    let errors = check(&with(&manila, &caps("fsGroup"), true.into()), &file);
    assert!(errors.is_empty(), "{errors:#?}");
}
