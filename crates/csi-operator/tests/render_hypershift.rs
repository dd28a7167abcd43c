//! `csi-operator render openstack-cinder|openstack-manila --hypershift` as a process.
//!
//! 1. The output for fixed flags is compared byte for byte with the reviewed golden files
//!    `tests/golden/render-openstack-{cinder,manila}-hypershift.yaml` (regenerate with
//!    `UPDATE_GOLDEN=1 cargo nextest run -p csi-operator --test render_hypershift`, then review).
//! 2. The same output is compared, object by object and field by field, with what the Go
//!    operators write on HyperShift for the same inputs (`tests/fixtures/go-hcp/`, restated from
//!    openshift/csi-operator's generated hypershift assets and hooks; see its README). The first
//!    difference is reported with its JSON path; the deliberate differences are exempted by
//!    path below, each with its reason, and listed in docs/compatibility.md.
//! 3. Malformed hosted inputs fail with a clear message and a non-zero exit status.
//!
//! The child's environment is cleared so that variables of the caller's shell cannot change the
//! output.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const CP_NS: &str = "clusters-guest";

/// Every image variable, as `restate.py` sets them.
const IMAGE_VARS: &[&str] = &[
    "DRIVER_IMAGE",
    "PROVISIONER_IMAGE",
    "ATTACHER_IMAGE",
    "RESIZER_IMAGE",
    "SNAPSHOTTER_IMAGE",
    "LIVENESS_PROBE_IMAGE",
    "NODE_DRIVER_REGISTRAR_IMAGE",
    "KUBE_RBAC_PROXY_IMAGE",
    "TOOLS_IMAGE",
    "NFS_DRIVER_IMAGE",
    "DRIVER_CONTROL_PLANE_IMAGE",
    "LIVENESS_PROBE_CONTROL_PLANE_IMAGE",
    "KUBE_RBAC_PROXY_CONTROL_PLANE_IMAGE",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/go-hcp")
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn render(driver: &str, args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(["render", driver])
        .args(args)
        .env_clear()
        .output()
        .expect("csi-operator runs")
}

fn fixed_flags(driver: &str) -> Vec<String> {
    let mut args: Vec<String> = IMAGE_VARS
        .iter()
        .flat_map(|k| {
            [
                "--image".to_string(),
                format!("{k}=quay.io/go/{}:4.20", k.to_lowercase().replace('_', "-")),
            ]
        })
        .collect();
    let hcp = fixtures().join("hosted-control-plane.yaml");
    for a in [
        "--hypershift",
        "--control-plane-namespace",
        CP_NS,
        "--hosted-control-plane",
        &hcp.to_string_lossy(),
        "--run-as-user",
        "1001",
        "--management-proxy",
        "HTTP_PROXY=http://mgmt-proxy:3128",
        "--management-proxy",
        "NO_PROXY=.cluster.local",
        "--release-version",
        "4.20.0",
        "--cluster-id",
        "mycluster-x7k2p",
    ] {
        args.push(a.to_string());
    }
    if driver == "openstack-manila" {
        for st in ["default", "Gold_Fast"] {
            args.extend(["--share-type".to_string(), st.to_string()]);
        }
    }
    args
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn rendered(driver: &str) -> String {
    let out = render(driver, &fixed_flags(driver));
    assert!(out.status.success(), "render failed: {}", stderr(&out));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn check_golden(driver: &str) {
    let got = rendered(driver);
    let golden = golden_dir().join(format!("render-{driver}-hypershift.yaml"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).expect("write the golden file");
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; generate it with UPDATE_GOLDEN=1",
            golden.display()
        )
    });
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| got.lines().count().min(want.lines().count()));
        panic!(
            "render output differs from {} at line {}:\n  got:  {:?}\n  want: {:?}\n\
             (regenerate with UPDATE_GOLDEN=1 and review the diff)",
            golden.display(),
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first)
        );
    }
}

#[test]
fn cinder_render_matches_the_reviewed_golden_file() {
    check_golden("openstack-cinder");
}

#[test]
fn manila_render_matches_the_reviewed_golden_file() {
    check_golden("openstack-manila");
}

// ---- the field-for-field comparison with Go ----

/// Fields Go's typed objects leave out when empty (`omitempty` maps); empty lists and nulls are
/// left out everywhere.
const MAP_FIELDS: &[&str] = &[
    "nodeSelector",
    "labels",
    "annotations",
    "matchLabels",
    "data",
    "stringData",
    "parameters",
];

/// As Go's JSON encoder writes a typed object: no nulls, no empty lists, no empty maps of
/// `omitempty` map fields.
fn go_typed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter_map(|(k, v)| {
                    let v = go_typed(v);
                    let empty = v.is_null()
                        || v.as_array().is_some_and(Vec::is_empty)
                        || (MAP_FIELDS.contains(&k.as_str())
                            && v.as_object().is_some_and(|o| o.is_empty()));
                    (!empty).then(|| (k.clone(), v))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(go_typed).collect()),
        other => other.clone(),
    }
}

fn id(v: &Value) -> String {
    let ns = v["metadata"]["namespace"].as_str().unwrap_or("");
    format!(
        "{} {}/{}",
        v["kind"].as_str().unwrap_or("?"),
        ns,
        v["metadata"]["name"].as_str().unwrap_or("?")
    )
}

fn objects(what: &str, yaml: &str) -> BTreeMap<String, Value> {
    let values = operator_kit::assets::parse_values(what, yaml).expect("YAML stream");
    let mut out = BTreeMap::new();
    for v in values.iter().filter(|v| !v.is_null()) {
        let v = go_typed(v);
        assert!(
            out.insert(id(&v), v.clone()).is_none(),
            "{what}: {} twice",
            id(&v)
        );
    }
    out
}

/// Every path where `a` and `b` differ; lists of named items are matched by name
/// (`[name=x]`), and a different order of the same names is a difference of its own.
fn diff_paths(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    let named = |v: &Vec<Value>| !v.is_empty() && v.iter().all(|i| i["name"].is_string());
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                diff_paths(
                    &format!("{at}.{k}"),
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if named(x) && named(y) => {
            let names = |v: &Vec<Value>| -> Vec<String> {
                v.iter()
                    .map(|i| i["name"].as_str().unwrap_or_default().to_owned())
                    .collect()
            };
            let (nx, ny) = (names(x), names(y));
            let all: BTreeSet<&String> = nx.iter().chain(ny.iter()).collect();
            if nx != ny && nx.len() == ny.len() && all.len() == nx.len() {
                out.push(format!("{at} (order)"));
            }
            for n in all {
                let find = |v: &Vec<Value>| {
                    v.iter()
                        .find(|i| i["name"].as_str() == Some(n))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                diff_paths(&format!("{at}[name={n}]"), &find(x), &find(y), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff_paths(&format!("{at}[{i}]"), p, q, out);
            }
        }
        _ if a != b => out.push(at.to_string()),
        _ => {}
    }
}

/// A deliberate difference: an object (by [`id`]) and a path prefix in it (`""`: the whole
/// object, present on one side only), with the reason (docs/compatibility.md has the row).
#[derive(Clone, Copy)]
struct Exempt {
    object: &'static str,
    path: &'static str,
    reason: &'static str,
}

/// The first difference between ours and Go's that no exemption covers, as text naming the
/// object and the JSON path, or `None` when they agree.
fn first_difference(
    ours: &BTreeMap<String, Value>,
    go: &BTreeMap<String, Value>,
    exempt: &[Exempt],
) -> Option<String> {
    let covered = |object: &str, path: &str| {
        exempt
            .iter()
            .any(|e| e.object == object && path.starts_with(e.path))
    };
    let all: BTreeSet<&String> = ours.keys().chain(go.keys()).collect();
    for object in all {
        match (ours.get(object), go.get(object)) {
            (Some(a), Some(b)) => {
                let mut paths = Vec::new();
                diff_paths("", a, b, &mut paths);
                if let Some(p) = paths.iter().find(|p| !covered(object, p)) {
                    let at = |v: &Value| {
                        let pointer = p.split(" (").next().unwrap_or("");
                        lookup(v, pointer).map_or("<absent>".to_string(), |v| v.to_string())
                    };
                    return Some(format!(
                        "{object}: first difference at {p}\n  ours: {}\n  go:   {}",
                        at(a),
                        at(b)
                    ));
                }
            }
            (Some(_), None) if !covered(object, "") => {
                return Some(format!("{object}: only in our render"));
            }
            (None, Some(_)) if !covered(object, "") => {
                return Some(format!("{object}: only in what Go writes"));
            }
            _ => {}
        }
    }
    None
}

/// The value at a path of [`diff_paths`] (`.a.b[name=x][0]`), for the message.
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("[name=") {
            let end = r.find(']')?;
            let name = &r[..end];
            cur = cur
                .as_array()?
                .iter()
                .find(|i| i["name"].as_str() == Some(name))?;
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            cur = cur.get(r[..end].parse::<usize>().ok()?)?;
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(cur)
}

fn go_fixture(driver: &str) -> BTreeMap<String, Value> {
    let path = fixtures().join(format!("{driver}.yaml"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    objects(driver, &text)
}

/// kube-rbac-proxy authorizes scrapers with SubjectAccessReviews (docs/metrics.md; as on a
/// standalone cluster): without the grant every scrape is refused.
const SAR_REASON: &str = "kube-rbac-proxy needs subjectaccessreviews to authorize scrapers";

const CINDER_EXEMPT: &[Exempt] = &[Exempt {
    object: "ClusterRole /openstack-cinder-kube-rbac-proxy-role",
    path: ".rules",
    reason: SAR_REASON,
}];

const MANILA_EXEMPT: &[Exempt] = &[
    Exempt {
        object: "ClusterRole /openstack-manila-kube-rbac-proxy-role",
        path: ".rules",
        reason: SAR_REASON,
    },
    Exempt {
        object: "Namespace /openshift-manila-csi-driver",
        path: "",
        reason: "the operator creates its guest namespace when missing (the Go CSO creates it; \
                 ours too, so it is left alone when it exists)",
    },
    Exempt {
        object: "Role openshift-manila-csi-driver/manila-csi-driver-secret-reader",
        path: "",
        reason: "M9: the sidecars read csi-manila-secrets through this Role only",
    },
    Exempt {
        object: "RoleBinding openshift-manila-csi-driver/manila-csi-driver-secret-reader",
        path: "",
        reason: "M9: the sidecars read csi-manila-secrets through this Role only",
    },
    Exempt {
        object: "StorageClass /csi-manila-default",
        path: ".metadata.labels",
        reason: "M10: one watch by label covers every share-type class",
    },
    Exempt {
        object: "StorageClass /csi-manila-gold-fast",
        path: ".metadata.labels",
        reason: "M10: one watch by label covers every share-type class",
    },
];

fn compare(driver: &str, fixture: &str, exempt: &[Exempt]) {
    let ours = objects(driver, &rendered(driver));
    let go = go_fixture(fixture);
    if std::env::var_os("GO_DIFF_ALL").is_some() {
        // Every difference, exempted or not, for a reviewer.
        for object in ours.keys().chain(go.keys()).collect::<BTreeSet<_>>() {
            let mut paths = Vec::new();
            let none = Value::Null;
            let (a, b) = (
                ours.get(object).unwrap_or(&none),
                go.get(object).unwrap_or(&none),
            );
            diff_paths("", a, b, &mut paths);
            for p in paths {
                eprintln!("{object}: {p}");
            }
        }
    }
    if let Some(diff) = first_difference(&ours, &go, exempt) {
        panic!("{driver} --hypershift differs from what Go writes: {diff}");
    }
    // Every exemption is still needed: a fixed difference must leave the list.
    for e in exempt {
        let others: Vec<Exempt> = exempt
            .iter()
            .filter(|o| !(o.object == e.object && o.path == e.path))
            .copied()
            .collect();
        assert!(
            first_difference(&ours, &go, &others).is_some(),
            "the exemption {} {} ({}) covers no difference any more: remove it",
            e.object,
            e.path,
            e.reason
        );
    }
}

#[test]
fn cinder_render_is_what_the_go_operator_writes_on_hypershift() {
    compare("openstack-cinder", "cinder", CINDER_EXEMPT);
}

#[test]
fn manila_render_is_what_the_go_operator_writes_on_hypershift() {
    compare("openstack-manila", "manila", MANILA_EXEMPT);
}

/// The comparison is not vacuous: a changed field, a changed container argument, a missing
/// and an extra object are each reported, with the path of the change.
#[test]
fn the_comparison_names_the_first_changed_field() {
    let go = go_fixture("cinder");
    let deployment = format!("Deployment {CP_NS}/openstack-cinder-csi-driver-controller");
    assert_eq!(first_difference(&go, &go, &[]), None);

    let mut changed = go.clone();
    changed.get_mut(&deployment).expect("the controller")["spec"]["template"]["spec"]["priorityClassName"] =
        "system-cluster-critical".into();
    let diff = first_difference(&changed, &go, &[]).expect("a difference");
    assert!(
        diff.contains(&deployment) && diff.contains(".spec.template.spec.priorityClassName"),
        "{diff}"
    );
    assert!(diff.contains("system-cluster-critical") && diff.contains("hypershift-control-plane"));

    let mut changed = go.clone();
    let containers =
        changed.get_mut(&deployment).unwrap()["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap();
    let provisioner = containers
        .iter_mut()
        .find(|c| c["name"] == "csi-provisioner")
        .unwrap();
    provisioner["args"].as_array_mut().unwrap().pop();
    let diff = first_difference(&changed, &go, &[]).expect("a difference");
    assert!(
        diff.contains(".spec.template.spec.containers[name=csi-provisioner].args"),
        "{diff}"
    );

    let mut missing = go.clone();
    missing.remove(&deployment);
    let diff = first_difference(&missing, &go, &[]).expect("a difference");
    assert!(diff.contains("only in what Go writes"), "{diff}");
    let mut extra = go.clone();
    let mut sm = go[&deployment].clone();
    sm["kind"] = "ServiceMonitor".into();
    extra.insert(id(&sm), sm);
    let diff = first_difference(&extra, &go, &[]).expect("a difference");
    assert!(diff.contains("only in our render"), "{diff}");
    // An exemption covers its path and nothing else.
    let mut changed = go.clone();
    changed.get_mut(&deployment).unwrap()["metadata"]["labels"]["x"] = "y".into();
    let exempt = [Exempt {
        object: "Deployment clusters-guest/openstack-cinder-csi-driver-controller",
        path: ".metadata.labels.x",
        reason: "test",
    }];
    assert_eq!(first_difference(&changed, &go, &exempt), None);
    changed.get_mut(&deployment).unwrap()["spec"]["replicas"] = 2.into();
    let diff = first_difference(&changed, &go, &exempt).expect("not covered");
    assert!(diff.contains(".spec.replicas"), "{diff}");
}

// ---- malformed hosted input ----

fn fails_with(driver: &str, change: impl Fn(&mut Vec<String>), wanted: &[&str]) {
    let mut args = fixed_flags(driver);
    change(&mut args);
    let out = render(driver, &args);
    let err = stderr(&out);
    assert!(!out.status.success(), "accepted: {args:?}");
    assert!(out.stdout.is_empty(), "nothing is rendered");
    for w in wanted {
        assert!(err.contains(w), "{w:?} missing from: {err}");
    }
}

fn set_flag(args: &mut [String], flag: &str, value: &str) {
    let i = args.iter().position(|a| a == flag).expect("flag") + 1;
    args[i] = value.to_string();
}

#[test]
fn a_malformed_run_as_user_is_refused_with_its_value() {
    for bad in ["-1", "root", "1.5"] {
        fails_with(
            "openstack-cinder",
            |a| set_flag(a, "--run-as-user", bad),
            &["RUN_AS_USER", &format!("{bad:?}"), "non-negative integer"],
        );
    }
}

#[test]
fn a_malformed_hosted_control_plane_names_its_field() {
    let dir = std::env::temp_dir().join(format!("hcp-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let head = "apiVersion: hypershift.openshift.io/v1beta1\nkind: HostedControlPlane\n\
                metadata:\n  name: guest\n  namespace: clusters-guest\n";
    let selector = write(
        "selector.yaml",
        &format!("{head}spec:\n  nodeSelector:\n  - a\n"),
    );
    fails_with(
        "openstack-manila",
        |a| set_flag(a, "--hosted-control-plane", &selector),
        &[
            "spec.nodeSelector",
            "clusters-guest/guest",
            "map of strings",
        ],
    );
    let tolerations = write(
        "tolerations.yaml",
        &format!("{head}spec:\n  tolerations: {{a: b}}\n"),
    );
    fails_with(
        "openstack-cinder",
        |a| set_flag(a, "--hosted-control-plane", &tolerations),
        &["spec.tolerations", "list of tolerations"],
    );
    let other = write(
        "other.yaml",
        &head.replace("clusters-guest", "clusters-other"),
    );
    fails_with(
        "openstack-cinder",
        |a| set_flag(a, "--hosted-control-plane", &other),
        &["clusters-other", "--control-plane-namespace clusters-guest"],
    );
    let kind = write(
        "kind.yaml",
        &head.replace("HostedControlPlane", "HostedCluster"),
    );
    fails_with(
        "openstack-cinder",
        |a| set_flag(a, "--hosted-control-plane", &kind),
        &["HostedCluster", "not HostedControlPlane"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hosted_flags_need_each_other_and_refuse_what_hosted_does_not_read() {
    fails_with(
        "openstack-cinder",
        |a| {
            let i = a
                .iter()
                .position(|x| x == "--control-plane-namespace")
                .unwrap();
            a.drain(i..i + 2);
            let i = a
                .iter()
                .position(|x| x == "--hosted-control-plane")
                .unwrap();
            a.drain(i..i + 2);
        },
        &["--control-plane-namespace"],
    );
    fails_with(
        "openstack-cinder",
        |a| a.retain(|x| x != "--hypershift"),
        &["--hypershift"],
    );
    fails_with(
        "openstack-cinder",
        |a| a.extend(["--cloud-config".into(), "/dev/null".into()]),
        &["--cloud-config", "reads no user cloud config"],
    );
    fails_with(
        "openstack-manila",
        |a| a.extend(["--management-proxy".into(), "FTP_PROXY=x".into()]),
        &["FTP_PROXY", "HTTP_PROXY, HTTPS_PROXY, NO_PROXY"],
    );
    fails_with(
        "openstack-manila",
        |a| {
            let i = a.iter().position(|x| x == "--release-version").unwrap();
            a.drain(i..i + 2);
        },
        &["--release-version", "OPERATOR_IMAGE_VERSION"],
    );
}

/// The standalone render is unchanged by the hosted code: no hosted label, annotation,
/// toleration or volume leaks into it.
#[test]
fn standalone_render_carries_nothing_hosted() {
    for driver in ["openstack-cinder", "openstack-manila"] {
        let mut args = fixed_flags(driver);
        let i = args.iter().position(|x| x == "--hypershift").unwrap();
        args.truncate(i);
        args.extend(["--image".into(), "OPERATOR_IMAGE_VERSION=4.20.0".into()]);
        if driver == "openstack-manila" {
            args.extend(["--share-type".into(), "default".into()]);
        }
        let out = render(driver, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        for hosted in [
            "hypershift.openshift.io",
            "hosted-kubeconfig",
            "release.openshift.io/desired-version",
            "pull-secret",
            "control-plane-image",
            "openstack-cloud-config",
        ] {
            assert!(
                !text.contains(hosted),
                "{driver}: {hosted} in the standalone render"
            );
        }
        assert!(text.contains("kind: ServiceMonitor"), "{driver}");
    }
}
