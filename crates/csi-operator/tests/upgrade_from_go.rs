//! The upgrade from OpenShift's Go operators: a cluster in the state the Go Cluster Storage
//! Operator and the Go Cinder and Manila driver operators leave it (`fixtures/go-cso/`: their
//! object names, roleRefs, labels, annotations, hash annotations and status conditions)
//! receives `manifests/openshift/` with the cluster version operator's update semantics (every
//! manifest updated in place, create-only where annotated, retired objects deleted). Then our
//! operators start as on a cluster (kube-sim runs their pods under RBAC) and take over the Go
//! operators' objects.
//!
//! It must converge: no manifest refused (a binding whose roleRef changed would be refused
//! forever), `ClusterOperator/storage` Available, not Progressing, not Degraded, with our
//! version; both ClusterCSIDrivers healthy with no abnormal condition left from the Go
//! operators; the retired objects gone. The test prints which Go objects our operators
//! rewrote, from kube-sim's request log.
//!
//! What rolls: the fixtures' driver workloads are exactly what the Go operators write on this
//! cluster, so the takeover must leave the Cinder controller and node pod templates unchanged
//! (no rollout) and change Manila's only at the paths a docs/compatibility.md entry explains
//! ([`deliberate_template_differences`]), once each (kube-sim's watch history shows every
//! template written, so a change written and then undone fails too). The object metadata our
//! operators rewrite (spec-hash, stable-generation, new dep- hashes) is printed for the docs.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::chain::*;
use common::*;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testbed::Settings;

/// The fixture files, in order, each parsed into its objects.
fn fixtures() -> Vec<(String, Vec<Value>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/go-cso");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/go-cso")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&p).expect("readable");
            let docs = operator_kit::assets::parse_values(&name, &text)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, docs)
        })
        .collect()
}

/// The API of `obj`'s kind, found by discovery (fixtures hold kinds operator-kit does not
/// manage, such as PrometheusRule).
async fn api_of(client: &kube::Client, obj: &Value) -> Api<DynamicObject> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk =
        kube::core::GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap_or_default());
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("{gvk:?} is not served: {e}"));
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        _ => Api::all_with(client.clone(), &ar),
    }
}

/// Writes the Go operators' objects (the `05-status.yaml` documents as status), as the admin.
async fn seed_go_cluster(client: &kube::Client) {
    for (file, docs) in fixtures() {
        let status_only = file.starts_with("05-");
        for mut obj in docs {
            if matches!(obj["kind"].as_str(), Some("Deployment" | "DaemonSet")) {
                go_dependency_hashes(client, &file, &mut obj).await;
            }
            let api = api_of(client, &obj).await;
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            if status_only {
                api.patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": obj["status"]})),
                )
                .await
                .unwrap_or_else(|e| panic!("{file}: status of {name}: {e}"));
                continue;
            }
            let dynamic: DynamicObject = serde_json::from_value(obj.clone()).expect("object");
            match api.create(&PostParams::default(), &dynamic).await {
                Ok(_) => {}
                // The testbed made some namespaces already, as the installer does: take the
                // Go release's metadata onto them.
                Err(kube::Error::Api(s)) if s.code == 409 && obj["kind"] == "Namespace" => {
                    api.patch(
                        name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": obj["metadata"]})),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("{file}: namespace {name}: {e}"));
                }
                Err(e) => panic!("{file}: {} {name}: {e}", obj["kind"]),
            }
        }
    }
}

/// The `operator.openshift.io/dep-…` hashes library-go's hooks write, checked or filled in
/// against the objects seeded before the workload (Go hashes what is on the cluster, and so do
/// we). A fixture value written literally must equal `operator_kit::hash` of that object's
/// data (the fixture is stale otherwise); a value `<…>` is filled in, for objects whose data
/// the test run decides (clouds.yaml names openstack-sim's port). Every key must name an
/// existing ConfigMap or Secret of the workload's namespace: Go writes no key for a missing
/// object.
async fn go_dependency_hashes(client: &kube::Client, file: &str, obj: &mut Value) {
    use operator_kit::hash::{self, DependencyKind};
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut live = BTreeMap::new();
    let cms = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), &ns);
    for cm in cms.list(&Default::default()).await.expect("list").items {
        let name = cm.metadata.name.clone().unwrap_or_default();
        let key = hash::dependency_annotation_key(DependencyKind::ConfigMap, &ns, &name);
        live.insert(
            key,
            (format!("ConfigMap {ns}/{name}"), hash::configmap_hash(&cm)),
        );
    }
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns);
    for s in secrets.list(&Default::default()).await.expect("list").items {
        let name = s.metadata.name.clone().unwrap_or_default();
        let key = hash::dependency_annotation_key(DependencyKind::Secret, &ns, &name);
        live.insert(key, (format!("Secret {ns}/{name}"), hash::secret_hash(&s)));
    }
    let what = format!("{file}: {} {ns}/{}", obj["kind"], obj["metadata"]["name"]);
    for pointer in [
        "/metadata/annotations",
        "/spec/template/metadata/annotations",
    ] {
        let Some(Value::Object(annotations)) = obj.pointer_mut(pointer) else {
            continue;
        };
        for (key, value) in annotations.iter_mut() {
            if !key.starts_with(hash::DEP_ANNOTATION_PREFIX) {
                continue;
            }
            let (object, hash) = live
                .get(key)
                .unwrap_or_else(|| panic!("{what}: {key} names no seeded ConfigMap or Secret"));
            match value.as_str() {
                Some(v) if v.starts_with('<') => *value = json!(hash),
                Some(v) => assert_eq!(v, hash, "{what}: {key} ({object}) is stale"),
                None => panic!("{what}: {key} is not a string"),
            }
        }
    }
}

/// `group/plural namespace/name` of every object the fixtures hold, keyed as the request log
/// names them (`resource` is `group/plural`, core as `/plural`).
fn fixture_keys() -> BTreeSet<(String, String, String)> {
    let plural = |kind: &str| match kind {
        "NetworkPolicy" => "networkpolicies".to_owned(),
        "ValidatingAdmissionPolicy" => "validatingadmissionpolicies".to_owned(),
        "ValidatingAdmissionPolicyBinding" => "validatingadmissionpolicybindings".to_owned(),
        "StorageClass" => "storageclasses".to_owned(),
        "Storage" => "storages".to_owned(),
        "PodDisruptionBudget" => "poddisruptionbudgets".to_owned(),
        k => format!("{}s", k.to_lowercase()),
    };
    fixtures()
        .into_iter()
        .flat_map(|(_, docs)| docs)
        .map(|o| {
            let api_version = o["apiVersion"].as_str().unwrap_or_default();
            let group = api_version
                .split_once('/')
                .map(|(g, _)| g)
                .unwrap_or_default();
            (
                format!("{group}/{}", plural(o["kind"].as_str().unwrap_or_default())),
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upgrade_from_the_go_operators_converges() {
    let manifests = release(None, &[]);
    // The Go cluster first, with nothing of ours running: kube-sim simulates the Go pods
    // (their images map to no program) and runs ours once our manifests name our image.
    let chain = Chain::start(
        Settings::for_cluster_storage_operator(),
        processes_for(&manifests),
        None,
        &[],
    )
    .await;
    let client = chain.bed.client.clone();
    seed_go_cluster(&client).await;
    // The Go cluster's cloud credential operator had minted every CredentialsRequest's Secret
    // (the Manila namespace the last one targets exists only now).
    chain
        .wait("the Go release's credentials Secrets", || async {
            let secrets =
                Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), MANILA_NS);
            testbed::cco::provision_once(&client)
                .await
                .map_err(|e| e.to_string())?;
            match secrets.get_opt(MANILA_CREDENTIALS).await {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    let workloads_before = operand_workloads(&client).await;
    let rv_before = chain.bed.kube.cluster().store().current_rv();
    chain.bed.kube.clear_requests();

    // The cluster version operator applies our release. Nothing may be refused.
    let report = testbed::cvo::apply_with(&client, &manifests, &testbed::cvo::Options::default())
        .await
        .unwrap_or_else(|e| panic!("the upgrade does not converge: {e}"));
    let by_action = |a: testbed::cvo::Action| report.files(&[a]);
    let updated = by_action(testbed::cvo::Action::Updated);
    let deleted = by_action(testbed::cvo::Action::Deleted);
    eprintln!("CVO updated in place: {updated:#?}\nCVO retired: {deleted:#?}");
    for must in [
        "0000_50_cluster-storage-operator_10_deployment.yaml",
        "0000_50_cluster-storage-operator_12_prometheusrules.yaml",
        "0000_50_cluster-storage-operator_09_network_policy_cso_03_allow_ingress_to_operator_metrics.yaml",
    ] {
        assert!(updated.iter().any(|f| f == must), "{must} not updated");
    }
    assert!(
        deleted
            .iter()
            .any(|f| f.contains("retire_00_clusterrolebinding_cluster_admin")),
        "{deleted:?}"
    );
    assert!(
        deleted
            .iter()
            .any(|f| f.contains("retire_02_configmap_operator_config")),
        "{deleted:?}"
    );
    for validator in [
        "retire_03_deployment_volume_data_source_validator",
        "retire_04_clusterrolebinding_volume_data_source_validator",
        "retire_05_clusterrole_volume_data_source_validator",
        "retire_06_serviceaccount_volume_data_source_validator",
    ] {
        assert!(
            deleted.iter().any(|f| f.contains(validator)),
            "{validator}: {deleted:?}"
        );
    }
    // The Storage CR is create-only: the Go one stays as it was.
    let storage_writes = chain.writers(
        None,
        "operator.openshift.io/storages",
        Some(""),
        "",
        "cluster",
    );
    assert!(
        !storage_writes.contains("admin")
            && !storage_writes.iter().any(|u| u.contains("cluster-version")),
        "{storage_writes:?}"
    );

    // Our operators take over.
    chain.wait_running(CSO_NS, CSO_DEPLOYMENT).await;
    chain.wait_driver(CR, &CINDER_AVAILABLE).await;
    chain.wait_driver(MANILA_CR, &MANILA_AVAILABLE).await;
    // The Go status said healthy too: wait for our CSO's version (what the CVO waits for) with
    // the conditions healthy at once.
    let co = chain
        .wait(
            "ClusterOperator/storage at our version and healthy",
            || async {
                let pending = testbed::cvo::pending_cluster_operators(&client, &manifests)
                    .await
                    .map_err(|e| e.to_string())?;
                let co = cluster_operator(&chain.bed).await;
                let c = conditions_of(&co);
                let healthy = [
                    ("Available", "True"),
                    ("Progressing", "False"),
                    ("Degraded", "False"),
                    ("Upgradeable", "True"),
                ]
                .iter()
                .all(|(t, s)| c.get(*t).is_some_and(|(status, _, _)| status == s));
                if pending.is_empty() && healthy {
                    Ok(co)
                } else {
                    Err(format!("{pending:?} {c:#?}"))
                }
            },
        )
        .await;
    assert_eq!(
        co["status"]["versions"],
        json!([{"name": "operator", "version": "0.0.1-snapshot"}])
    );
    // The driver operators run our image, not the Go one.
    chain.wait_running(NS, CINDER_OPERATOR).await;
    chain.wait_running(NS, MANILA_OPERATOR).await;

    // Each driver operator takes over the Go driver's workloads (library-go semantics: the
    // spec is written over, the hash annotations recomputed).
    for (resource, ns, name, operator) in [
        (
            "apps/deployments",
            NS,
            "openstack-cinder-csi-driver-controller",
            CINDER_OPERATOR,
        ),
        (
            "apps/daemonsets",
            NS,
            "openstack-cinder-csi-driver-node",
            CINDER_OPERATOR,
        ),
        (
            "apps/deployments",
            MANILA_NS,
            "openstack-manila-csi-controllerplugin",
            MANILA_OPERATOR,
        ),
        (
            "apps/daemonsets",
            MANILA_NS,
            "csi-nodeplugin-nfsplugin",
            MANILA_OPERATOR,
        ),
    ] {
        chain
            .wait(&format!("{operator} to take over {ns}/{name}"), || async {
                let writers = chain.writers(None, resource, Some(""), ns, name);
                if writers.iter().any(|u| u.ends_with(&format!(":{operator}"))) {
                    Ok(())
                } else {
                    Err(format!("{writers:?}"))
                }
            })
            .await;
    }

    // No condition the Go operators left stays abnormal: once the rollouts our operators
    // started settle, every Degraded and Progressing is False on both ClusterCSIDrivers, on
    // Storage and on the ClusterOperator (a stuck one times out here, listed).
    chain
        .wait(
            "every Degraded and Progressing condition to settle at False",
            || async {
                let mut stuck = Vec::new();
                for (what, conditions) in [
                    ("ClusterCSIDriver cinder", chain.cr_conditions(CR).await),
                    (
                        "ClusterCSIDriver manila",
                        chain.cr_conditions(MANILA_CR).await,
                    ),
                    ("Storage cluster", conditions_of(&storage(&chain.bed).await)),
                    ("ClusterOperator storage", chain.co_conditions().await),
                ] {
                    for (t, (status, reason, message)) in conditions {
                        if (t.ends_with("Degraded") || t.ends_with("Progressing"))
                            && status != "False"
                        {
                            stuck.push(format!("{what}: {t}={status} {reason}: {message}"));
                        }
                    }
                }
                if stuck.is_empty() {
                    Ok(())
                } else {
                    Err(stuck.join("\n"))
                }
            },
        )
        .await;

    // Condition types only the Go operators wrote are gone (the fixtures leave two of them
    // Degraded=True, which the wait above would otherwise never see settle).
    for (cr, retired) in [
        (
            CR,
            &[
                "OpenStackCinderDriverStaticResourcesControllerDegraded",
                "OpenStackCinderDriverConditionalStaticResourcesControllerDegraded",
            ][..],
        ),
        (
            MANILA_CR,
            &["ManilaDriverConditionalStaticResourcesControllerDegraded"][..],
        ),
    ] {
        let conditions = chain.cr_conditions(cr).await;
        for t in retired {
            assert!(!conditions.contains_key(*t), "{cr}: {t} stayed");
        }
    }

    // The Go CSO's conditions of controllers ours does not run are gone from Storage (the
    // fixtures leave one Progressing=True and one Upgradeable=False, which would otherwise hold
    // the ClusterOperator forever).
    let storage_conditions = conditions_of(&storage(&chain.bed).await);
    for t in cluster_storage::operator::RETIRED_STORAGE_CONDITIONS {
        assert!(!storage_conditions.contains_key(*t), "Storage: {t} stayed");
    }
    // Every condition type left on the CRs is one the Go operators write (and so rewrite after
    // a rollback) or one docs/compatibility.md's rollback runbook removes.
    for (what, conditions) in [
        ("ClusterCSIDriver cinder", chain.cr_conditions(CR).await),
        (
            "ClusterCSIDriver manila",
            chain.cr_conditions(MANILA_CR).await,
        ),
        ("Storage cluster", storage_conditions),
    ] {
        let go = go_condition_types(what);
        for t in conditions.keys() {
            assert!(
                go.contains(t) || OURS_ONLY_CONDITIONS.contains(&t.as_str()),
                "{what}: {t} is neither written by the Go operators nor in the rollback runbook \
                 (OURS_ONLY_CONDITIONS and docs/compatibility.md)"
            );
        }
    }

    // The validator the Go CSO ran is gone with its RBAC; the VolumePopulator CRD stays.
    let gone = [
        ("apps/v1", "Deployment", Some(CSO_NS)),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", None),
        ("v1", "ServiceAccount", Some(CSO_NS)),
    ];
    for (api_version, kind, ns) in gone {
        let obj = json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "volume-data-source-validator", "namespace": ns},
        });
        let api = api_of(&client, &obj).await;
        assert!(
            api.get_opt("volume-data-source-validator")
                .await
                .expect("readable")
                .is_none(),
            "{kind} volume-data-source-validator stayed"
        );
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "volumepopulators.populator.storage.k8s.io"},
    });
    assert!(
        api_of(&client, &crd)
            .await
            .get_opt("volumepopulators.populator.storage.k8s.io")
            .await
            .expect("readable")
            .is_some(),
        "the VolumePopulator CRD must stay"
    );

    // Retired objects are gone; the CSO's rights are ours, not cluster-admin.
    let crb = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(client.clone());
    assert!(
        crb.get_opt("cluster-storage-operator-role")
            .await
            .expect("readable")
            .is_none()
    );
    assert_eq!(
        crb.get("cluster-storage-operator")
            .await
            .expect("ours")
            .role_ref
            .name,
        "cluster-storage-operator"
    );
    let cms = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), CSO_NS);
    assert!(
        cms.get_opt("cluster-storage-operator-config")
            .await
            .expect("readable")
            .is_none()
    );
    let related = co["status"]["relatedObjects"].to_string();
    assert!(
        !related.contains("cluster-storage-operator-role"),
        "{related}"
    );
    chain.assert_no_denials();

    // What our operators rewrote of the Go operators' objects (the docs' takeover table).
    let fixtures = fixture_keys();
    let mut rewritten: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in chain.bed.kube.requests() {
        if !r.is_write() || !(200..300).contains(&r.code) {
            continue;
        }
        let key = (r.resource.clone(), r.namespace.clone(), r.name.clone());
        if fixtures.contains(&key) {
            let sub = if r.subresource.is_empty() {
                String::new()
            } else {
                format!("/{}", r.subresource)
            };
            rewritten
                .entry(format!("{} {}/{}{sub}", r.resource, r.namespace, r.name))
                .or_default()
                .insert(format!(
                    "{} by {} ({})",
                    r.verb,
                    short_user(&r.user),
                    r.user_agent
                ));
        }
    }
    let mut table = String::new();
    for (object, how) in &rewritten {
        table.push_str(&format!(
            "{object}: {}\n",
            how.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    eprintln!("=== Go objects rewritten during the upgrade ===\n{table}");

    // What rolls: a workload rolls when its pod template changes. Cinder's templates are
    // exactly the Go operator's; Manila's differ only where docs/compatibility.md says why, and
    // each is written once. Everything else of these objects stays as the Go operator wrote it,
    // but for metadata-only updates (printed, for the docs).
    let workloads_after = operand_workloads(&client).await;
    let history = template_history(&chain.bed.kube, rv_before);
    let deliberate = deliberate_template_differences();
    assert_eq!(
        workloads_before.keys().collect::<Vec<_>>(),
        deliberate.keys().collect::<Vec<_>>(),
        "the driver workloads"
    );
    let mut rolled = BTreeMap::new();
    let mut metadata_only = BTreeMap::new();
    for (workload, before) in &workloads_before {
        let after = &workloads_after[workload];
        let mut paths = Vec::new();
        diff_paths(
            "",
            &before["spec"]["template"],
            &after["spec"]["template"],
            &mut paths,
        );
        paths.sort();
        let expected = &deliberate[workload.as_str()];
        let explained: Vec<String> = expected.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(
            paths, explained,
            "{workload}: the pod template changed where no compatibility entry explains it \
             (expected: {expected:#?})"
        );
        // Every template the workload went through: a template written and then restored is
        // a rollout too.
        let mut templates = vec![before["spec"]["template"].clone()];
        for template in history.get(workload).into_iter().flatten() {
            if templates.last() != Some(template) {
                templates.push(template.clone());
            }
        }
        assert_eq!(
            templates.len() - 1,
            usize::from(!paths.is_empty()),
            "{workload}: pod templates written at takeover: {:#?}",
            &templates[1..]
        );
        let mut spec_rest = Vec::new();
        let strip = |v: &Value| {
            let mut v = v["spec"].clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("template");
            }
            v
        };
        diff_paths(".spec", &strip(before), &strip(after), &mut spec_rest);
        assert!(spec_rest.is_empty(), "{workload}: {spec_rest:?}");
        if !paths.is_empty() {
            rolled.insert(
                workload.clone(),
                expected
                    .iter()
                    .map(|(p, why)| format!("{p} ({why})"))
                    .collect::<Vec<_>>(),
            );
        }
        let mut meta = Vec::new();
        for field in ["annotations", "labels"] {
            let mut changed = Vec::new();
            let (b, a) = (&before["metadata"][field], &after["metadata"][field]);
            diff_paths(&format!(".metadata.{field}"), b, a, &mut changed);
            for path in changed {
                let key = path
                    .strip_prefix(&format!(".metadata.{field}."))
                    .unwrap_or_default();
                meta.push(format!("{path}: {} -> {}", b[key], a[key]));
            }
        }
        metadata_only.insert(workload.clone(), meta);
    }
    eprintln!("=== Driver workloads whose pod template changed (they roll once) ===\n{rolled:#?}");
    eprintln!("=== Their object metadata written at takeover ===\n{metadata_only:#?}");
}

/// Condition types only our operators write on OpenShift (on the ClusterCSIDrivers and
/// `Storage/cluster`): no controller of the Go operators writes or removes them, so after a
/// rollback they stay as we left them, and a `…Degraded=True`, `…Progressing=True` or
/// `…Available=False` among them keeps `ClusterOperator/storage` so (library-go's union matches
/// every type with that suffix). docs/compatibility.md's rollback runbook removes exactly these;
/// [`the_rollback_runbook_removes_exactly_our_own_condition_types`] keeps the two in step.
/// (`MetricsServingCertControllerDegraded` and `HelmReleaseAdoption*` are plain Kubernetes only.)
const OURS_ONLY_CONDITIONS: &[&str] = &[
    // Both driver operators.
    "LoggingSyncerDegraded",
    "InsecureOpenStackConnection",
    // Cinder (opt-in volume-type classes, row 20).
    "CinderVolumeTypeStorageClassControllerDegraded",
    // Manila (M6, M7, M11).
    "ManilaServiceReachable",
    "ManilaExportNetworkReachable",
    "ManilaStorageClassControllerDegraded",
    "OpenStackManilaDriverCSIDriverControllerDegraded",
    // The CSO (C2, C11; the OLM removal's two others are Go's only up to 4.17).
    "CSIDriverStarterAvailable",
    "ManilaOLMOperatorRemovalDegraded",
    "ManilaOLMOperatorRemovalProgressing",
    "ManilaOLMOperatorRemovalAvailable",
];

/// The condition types OpenShift's Go operators write on each object (and so rewrite, with
/// server-side apply or read-modify-write, once they run again): `openshift/csi-operator`
/// `pkg/operator/{starter.go,starter_controller.go}`, `pkg/driver/openstack-*`,
/// `pkg/openstack-cinder/config/configsync.go`, library-go's controllers they build on
/// (anchors §1, §4.1, §5.2), and `openshift/cluster-storage-operator` `pkg/operator` for OpenStack
/// (anchors §3.4).
fn go_condition_types(what: &str) -> BTreeSet<String> {
    let workload =
        |prefix: &str| ["Available", "Progressing", "Degraded"].map(|s| format!("{prefix}{s}"));
    let mut types: BTreeSet<String> = ["ManagementStateDegraded", "ConfigObservationDegraded"]
        .map(String::from)
        .into();
    match what {
        "ClusterCSIDriver cinder" => {
            types.extend(
                [
                    "OpenStackCinderDriverControlPlaneStaticResourcesControllerDegraded",
                    "OpenStackCinderDriverGuestStaticResourcesControllerDegraded",
                    "StorageClassControllerDegraded",
                    "VolumeSnapshotClassControllerDegraded",
                    "ConfigSyncDegraded",
                ]
                .map(String::from),
            );
            types.extend(workload("OpenStackCinderDriverControllerServiceController"));
            types.extend(workload("OpenStackCinderDriverNodeServiceController"));
        }
        "ClusterCSIDriver manila" => {
            types.extend(
                [
                    "OpenStackManilaDriverControlPlaneStaticResourcesControllerDegraded",
                    "OpenStackManilaDriverGuestStaticResourcesControllerDegraded",
                    "VolumeSnapshotClassControllerDegraded",
                    "ResourceSyncControllerDegraded",
                    "StarterControllerDegraded",
                    "CSIControllerDisabled",
                ]
                .map(String::from),
            );
            types.extend(workload("OpenStackManilaDriverControllerServiceController"));
            types.extend(workload("OpenStackManilaDriverNodeServiceController"));
            types.extend(workload("NFSDriverNodeServiceController"));
        }
        "Storage cluster" => {
            types.extend(
                [
                    "CSIDriverStarterDegraded",
                    "StorageOperatorUpgradeable",
                    "ResourceSyncControllerDegraded",
                    "DefaultStorageClassControllerAvailable",
                    "DefaultStorageClassControllerProgressing",
                ]
                .map(String::from),
            );
            for p in ["OpenStackCinder", "Manila"] {
                for suffix in [
                    "CSIDriverOperatorStaticControllerDegraded",
                    "CSIDriverOperatorDegraded",
                    "CSIDriverOperatorCRAvailable",
                    "CSIDriverOperatorCRProgressing",
                    "CSIDriverOperatorCRDegraded",
                    "CSIDriverOperatorCRUpgradeable",
                    "Progressing",
                    "CSIDriverOperatorDeploymentDegraded",
                ] {
                    types.insert(format!("{p}{suffix}"));
                }
            }
        }
        other => panic!("{other}"),
    }
    types
}

/// The rollback runbook in docs/compatibility.md removes exactly [`OURS_ONLY_CONDITIONS`], and
/// none of them is a type the Go operators write anywhere (removing it would then erase theirs).
#[test]
fn the_rollback_runbook_removes_exactly_our_own_condition_types() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/compatibility.md"),
    )
    .expect("docs/compatibility.md");
    let line = doc
        .lines()
        .find(|l| l.trim_start().starts_with("OURS='"))
        .expect("the runbook's OURS='…' line");
    let listed: BTreeSet<&str> = line
        .trim_start()
        .trim_start_matches("OURS='")
        .trim_end_matches('\'')
        .split(',')
        .map(|t| t.trim().trim_matches('"'))
        .collect();
    let ours: BTreeSet<&str> = OURS_ONLY_CONDITIONS.iter().copied().collect();
    assert_eq!(listed, ours, "docs/compatibility.md rollback runbook");
    for what in [
        "ClusterCSIDriver cinder",
        "ClusterCSIDriver manila",
        "Storage cluster",
    ] {
        for t in go_condition_types(what) {
            assert!(
                !ours.contains(t.as_str()),
                "{t} is the Go operators' on {what}"
            );
        }
    }
}

/// The `sh` block of docs/compatibility.md's rollback runbook (the one that sets `OURS`).
fn rollback_runbook() -> String {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/compatibility.md"),
    )
    .expect("docs/compatibility.md");
    doc.split("```sh\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\n```").map(|(block, _)| block))
        .find(|block| block.contains("OURS='"))
        .expect("the rollback runbook's sh block")
        .to_owned()
}

/// What library-go's union makes `ClusterOperator/storage` say of these conditions (anchors
/// §1.15: a type counts by its suffix, and is bad when its status is not the default).
fn go_union_bad(conditions: &Value) -> Vec<String> {
    conditions
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let (t, s) = (c["type"].as_str()?, c["status"].as_str()?);
            let default = if t.ends_with("Degraded") || t.ends_with("Progressing") {
                "False"
            } else if t.ends_with("Available") {
                "True"
            } else {
                s
            };
            let bad = s != default;
            bad.then(|| format!("{t}={s}"))
        })
        .collect()
}

/// The runbook itself, run as written (bash, jq, and `oc` played by today's kubectl) against
/// objects in the state a rollback leaves them: every condition type the Go operators write,
/// healthy again, beside every type only ours write, one of them `Degraded=True` and one
/// `Progressing=True`. Before it, Go's union says Degraded and Progressing; after it, only the
/// Go operators' types are left, untouched, and the union is healthy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rollback_runbook_leaves_only_what_the_go_operators_write() {
    let bed = testbed::Testbed::start(Settings::for_cluster_storage_operator())
        .await
        .expect("testbed starts");
    let client = bed.client.clone();
    let time = "2026-01-05T10:00:00Z";
    let objects = [
        ("ClusterCSIDriver cinder", "ClusterCSIDriver", CR),
        ("ClusterCSIDriver manila", "ClusterCSIDriver", MANILA_CR),
        ("Storage cluster", "Storage", "cluster"),
    ];
    for (what, kind, name) in objects {
        let obj = json!({
            "apiVersion": "operator.openshift.io/v1", "kind": kind,
            "metadata": {"name": name},
            "spec": {"managementState": "Managed"},
        });
        let api = api_of(&client, &obj).await;
        let dynamic: DynamicObject = serde_json::from_value(obj).expect("object");
        if api.get_opt(name).await.expect("readable").is_none() {
            api.create(&PostParams::default(), &dynamic)
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        let go = go_condition_types(what).into_iter().map(|t| {
            let status = if t.ends_with("Available") || t.ends_with("Upgradeable") {
                "True"
            } else {
                "False"
            };
            json!({"type": t, "status": status, "reason": "AsExpected", "lastTransitionTime": time})
        });
        let ours = OURS_ONLY_CONDITIONS.iter().map(|t| {
            let status = match *t {
                "ManilaStorageClassControllerDegraded" | "ManilaOLMOperatorRemovalProgressing" => {
                    "True"
                }
                t if t.ends_with("Available") || t.ends_with("Reachable") => "True",
                _ => "False",
            };
            json!({"type": t, "status": status, "reason": "Ours", "lastTransitionTime": time})
        });
        let conditions: Vec<Value> = go.chain(ours).collect();
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": conditions}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{what}: status: {e}"));
        let before = api.get(name).await.expect("readable");
        assert_eq!(
            go_union_bad(&before.data["status"]["conditions"]),
            [
                "ManilaStorageClassControllerDegraded=True",
                "ManilaOLMOperatorRemovalProgressing=True"
            ],
            "{what}: a rollback leaves ours counted"
        );
    }

    // The runbook, with `oc` played by kubectl and the testbed's administrator.
    let dir = std::env::temp_dir().join(format!("rollback-runbook-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("scratch directory");
    let kubectl = std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("kubectl"))
                .find(|p| p.is_file())
        })
        .expect("kubectl on PATH (the guides need it too)");
    std::os::unix::fs::symlink(kubectl, bin.join("oc")).expect("oc");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, bed.kube.kubeconfig("admin")).expect("kubeconfig");
    let out = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &rollback_runbook()])
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", &dir)
        .output()
        .expect("bash runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "the runbook failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    for (what, kind, name) in objects {
        let obj = json!({"apiVersion": "operator.openshift.io/v1", "kind": kind, "metadata": {"name": name}});
        let after = api_of(&client, &obj)
            .await
            .get(name)
            .await
            .expect("readable");
        let conditions = &after.data["status"]["conditions"];
        let left: BTreeSet<String> = conditions
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["type"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(
            left,
            go_condition_types(what),
            "{what}: what the runbook left"
        );
        assert!(
            conditions
                .as_array()
                .into_iter()
                .flatten()
                .all(|c| c["reason"] == "AsExpected" && c["lastTransitionTime"] == time),
            "{what}: the Go operators' conditions are untouched"
        );
        assert!(go_union_bad(conditions).is_empty(), "{what}: {conditions}");
    }
}

/// The pod template paths (as [`diff_paths`] names them) where our operators deliberately
/// write something else than the Go operators on this cluster, with the docs/compatibility.md
/// entry that explains each, by workload (`kind namespace/name`). A workload with none must not
/// roll at takeover.
fn deliberate_template_differences() -> BTreeMap<&'static str, Vec<(String, &'static str)>> {
    use operator_kit::hash::{DependencyKind, dependency_annotation_key};
    let annotation = |kind, name| {
        format!(
            ".metadata.annotations.{}",
            dependency_annotation_key(kind, MANILA_NS, name)
        )
    };
    const M1: &str = "compatibility M1: trusted CA bundle looked up in openshift-manila-csi-driver";
    const M3: &str = "compatibility M3: manila-cloud-credentials hash rolls the driver pods";
    let trusted_ca = "manila-csi-driver-trusted-ca-bundle";
    let mut paths = vec![
        (annotation(DependencyKind::ConfigMap, trusted_ca), M1),
        (annotation(DependencyKind::Secret, MANILA_CREDENTIALS), M3),
        (
            ".spec.containers[name=csi-driver].volumeMounts[name=non-standard-root-system-trust-ca-bundle]"
                .to_owned(),
            M1,
        ),
        (
            ".spec.volumes[name=non-standard-root-system-trust-ca-bundle]".to_owned(),
            M1,
        ),
    ];
    paths.sort();
    BTreeMap::from([
        (
            "Deployment openshift-cluster-csi-drivers/openstack-cinder-csi-driver-controller",
            vec![],
        ),
        (
            "DaemonSet openshift-cluster-csi-drivers/openstack-cinder-csi-driver-node",
            vec![],
        ),
        (
            "Deployment openshift-manila-csi-driver/openstack-manila-csi-controllerplugin",
            paths,
        ),
        (
            "DaemonSet openshift-manila-csi-driver/openstack-manila-csi-nodeplugin",
            // The Go hook already mounts the trusted CA on the node plugin.
            vec![(annotation(DependencyKind::Secret, MANILA_CREDENTIALS), M3)],
        ),
        (
            "DaemonSet openshift-manila-csi-driver/csi-nodeplugin-nfsplugin",
            vec![],
        ),
    ])
}

/// The pod templates each Deployment and DaemonSet was written with after resourceVersion
/// `from`, in order, by `kind ns/name` (kube-sim's watch history).
fn template_history(kube: &kube_sim::KubeSim, from: u64) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (kind, resource) in [("Deployment", "deployments"), ("DaemonSet", "daemonsets")] {
        let gr = kube_sim::resources::GroupResource::new("apps", resource);
        let (events, _live) = kube
            .write(|c| c.watch(&gr, None, Some(from)))
            .unwrap_or_else(|e| panic!("{resource}: the history since {from} is gone: {e:?}"));
        for event in events {
            let name = event.object["metadata"]["name"]
                .as_str()
                .unwrap_or_default();
            out.entry(format!("{kind} {}/{name}", event.namespace))
                .or_default()
                .push(typed_template(&event.object["spec"]["template"]));
        }
    }
    out
}

/// A pod template as the typed client reads it (how [`operand_workloads`] sees it).
fn typed_template(template: &Value) -> Value {
    let typed: k8s_openapi::api::core::v1::PodTemplateSpec =
        serde_json::from_value(template.clone()).expect("a pod template");
    serde_json::to_value(typed).expect("json")
}

/// The driver Deployments and DaemonSets (not the operators'), whole, by `kind ns/name`.
async fn operand_workloads(client: &kube::Client) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for ns in [NS, MANILA_NS] {
        let deployments =
            Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
                .list(&Default::default())
                .await
                .expect("list");
        for d in deployments.items {
            let name = d.metadata.name.clone().unwrap_or_default();
            if name.ends_with("-operator") {
                continue; // the operators themselves roll: that is the takeover
            }
            out.insert(
                format!("Deployment {ns}/{name}"),
                serde_json::to_value(d).expect("json"),
            );
        }
        let daemonsets =
            Api::<k8s_openapi::api::apps::v1::DaemonSet>::namespaced(client.clone(), ns)
                .list(&Default::default())
                .await
                .expect("list");
        for d in daemonsets.items {
            let name = d.metadata.name.clone().unwrap_or_default();
            out.insert(
                format!("DaemonSet {ns}/{name}"),
                serde_json::to_value(d).expect("json"),
            );
        }
    }
    out
}

/// The JSON paths where `a` and `b` differ. Lists whose items all have a `name` (containers,
/// volumes, mounts, env) are matched by name, `[name=…]`, so an added item is one path; other
/// lists by index.
fn diff_paths(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    let named = |v: &Vec<Value>| v.iter().all(|i| i["name"].is_string());
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
            let by_name = |v: &Vec<Value>| -> Vec<(String, Value)> {
                v.iter()
                    .map(|i| (i["name"].as_str().unwrap_or_default().to_owned(), i.clone()))
                    .collect()
            };
            let (x, y) = (by_name(x), by_name(y));
            let names: Vec<&String> = x.iter().map(|(n, _)| n).collect();
            if names != y.iter().map(|(n, _)| n).collect::<Vec<_>>()
                && names.iter().all(|n| y.iter().any(|(m, _)| m == *n))
                && y.iter().all(|(m, _)| names.contains(&m))
            {
                out.push(format!("{at} (order)"));
            }
            let all: BTreeSet<&String> = x.iter().chain(y.iter()).map(|(n, _)| n).collect();
            for n in all {
                let find = |v: &[(String, Value)]| {
                    v.iter()
                        .find(|(m, _)| m == n)
                        .map(|(_, i)| i.clone())
                        .unwrap_or(Value::Null)
                };
                diff_paths(&format!("{at}[name={n}]"), &find(&x), &find(&y), out);
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

/// A request log user, shortened to the service account's name.
fn short_user(user: &str) -> String {
    user.rsplit(':').next().unwrap_or(user).to_owned()
}
