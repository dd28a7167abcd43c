//! Tests of the status roll-up: one per rule, the anchors §3.4 worked example verbatim, and
//! properties of how the unions and the Degraded inertia are used.

use super::*;
use crate::registry::{CINDER, MANILA, select};
use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;

fn ts(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn cond(t: &str, status: &str, reason: &str, message: &str) -> OperatorCondition {
    OperatorCondition::new(t, status, reason, message)
}

fn at(mut c: OperatorCondition, s: i64) -> OperatorCondition {
    c.last_transition_time = Some(ts(s));
    c
}

fn get<'a>(conds: &'a [OperatorCondition], t: &str) -> &'a OperatorCondition {
    conds.iter().find(|c| c.type_ == t).unwrap()
}

fn healthy_cinder_cr() -> Vec<OperatorCondition> {
    vec![
        cond(
            "OpenStackCinderDriverControllerServiceControllerAvailable",
            TRUE,
            "AsExpected",
            "Deployment is available",
        ),
        cond(
            "OpenStackCinderDriverControllerServiceControllerProgressing",
            FALSE,
            "AsExpected",
            "Deployment is not progressing",
        ),
        cond(
            "OpenStackCinderDriverControllerServiceControllerDegraded",
            FALSE,
            "AsExpected",
            "",
        ),
    ]
}

// ---- anchors §3.4 worked example -----------------------------------------------------------

#[test]
fn worked_example_from_anchors_3_4() {
    let cr = [cond(
        "OpenStackCinderDriverControllerServiceControllerAvailable",
        FALSE,
        "Deploying",
        "Waiting for Deployment",
    )];
    let storage = driver_cr_conditions(&CINDER, &cr, ts(1_000));
    let available = get(&storage, "OpenStackCinderCSIDriverOperatorCRAvailable");
    assert_eq!(available.status, "False");
    assert_eq!(
        available.reason,
        "OpenStackCinderDriverControllerServiceController_Deploying"
    );
    assert_eq!(
        available.message,
        "OpenStackCinderDriverControllerServiceControllerAvailable: Waiting for Deployment"
    );

    let co = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(1_000));
    let available = get(&co, "Available");
    assert_eq!(available.status, "False");
    assert_eq!(
        available.reason,
        "OpenStackCinderCSIDriverOperatorCR_OpenStackCinderDriverControllerServiceController_Deploying"
    );
    assert_eq!(
        available.message,
        "OpenStackCinderCSIDriverOperatorCRAvailable: OpenStackCinderDriverControllerServiceControllerAvailable: Waiting for Deployment"
    );
}

// ---- per-driver CR conditions ---------------------------------------------------------------

#[test]
fn cr_conditions_have_prefixed_types_in_order() {
    let out = driver_cr_conditions(&MANILA, &[], ts(0));
    let types: Vec<_> = out.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        [
            "ManilaCSIDriverOperatorCRAvailable",
            "ManilaCSIDriverOperatorCRProgressing",
            "ManilaCSIDriverOperatorCRDegraded",
            "ManilaCSIDriverOperatorCRUpgradeable"
        ]
    );
    assert!(out.iter().all(|c| c.last_transition_time.is_none()));
}

#[test]
fn no_conditions_yet_means_waiting_for_operator() {
    let out = driver_cr_conditions(&CINDER, &[], ts(0));
    let a = get(&out, "OpenStackCinderCSIDriverOperatorCRAvailable");
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("False", "WaitForOperator")
    );
    assert_eq!(
        a.message,
        "Waiting for OpenStackCinder operator to report status"
    );
    let p = get(&out, "OpenStackCinderCSIDriverOperatorCRProgressing");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "WaitForOperator")
    );
    assert_eq!(
        p.message,
        "Waiting for OpenStackCinder operator to report status"
    );
    let d = get(&out, "OpenStackCinderCSIDriverOperatorCRDegraded");
    // Unknown becomes False; the union's reason stays, as in Go.
    assert_eq!((d.status.as_str(), d.reason.as_str()), ("False", "NoData"));
    let u = get(&out, "OpenStackCinderCSIDriverOperatorCRUpgradeable");
    assert_eq!(
        (u.status.as_str(), u.reason.as_str(), u.message.as_str()),
        ("True", "", "")
    );
}

#[test]
fn unknown_available_union_also_waits_for_operator() {
    let cr = [cond("XAvailable", UNKNOWN, "Hmm", "")];
    let a = &driver_cr_conditions(&CINDER, &cr, ts(0))[0];
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("False", "WaitForOperator")
    );
}

#[test]
fn healthy_driver_is_available_not_progressing_not_degraded() {
    let out = driver_cr_conditions(&CINDER, &healthy_cinder_cr(), ts(0));
    let a = &out[0];
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("True", "AsExpected")
    );
    assert_eq!(
        a.message,
        "OpenStackCinderDriverControllerServiceControllerAvailable: Deployment is available"
    );
    assert_eq!(out[1].status, "False");
    assert_eq!(out[1].reason, "AsExpected");
    assert_eq!(out[2].status, "False");
    assert_eq!(out[2].message, "All is well");
}

#[test]
fn degraded_cr_is_copied() {
    let cr = [cond(
        "OpenStackCinderConfigSyncDegraded",
        TRUE,
        "SyncError",
        "no clouds.yaml",
    )];
    let d = &driver_cr_conditions(&CINDER, &cr, ts(0))[2];
    assert_eq!(d.status, "True");
    assert_eq!(d.reason, "OpenStackCinderConfigSync_SyncError");
    assert_eq!(
        d.message,
        "OpenStackCinderConfigSyncDegraded: no clouds.yaml"
    );
}

#[test]
fn upgradeable_is_true_unless_the_driver_says_otherwise() {
    let cr = [cond("FooUpgradeable", FALSE, "Blocked", "old config")];
    let u = &driver_cr_conditions(&CINDER, &cr, ts(0))[3];
    assert_eq!(
        (u.status.as_str(), u.reason.as_str()),
        ("False", "Foo_Blocked")
    );
    assert_eq!(u.message, "FooUpgradeable: old config");
}

#[test]
fn disabled_manila_is_available_with_driver_disabled() {
    let cr = [
        cond(
            "CSIControllerDisabled",
            TRUE,
            "PreConditionNotSatisfied",
            "Pre-condition not satisfied: manila does not provide any share types",
        ),
        cond("StarterControllerDegraded", FALSE, "AsExpected", ""),
    ];
    let out = driver_cr_conditions(&MANILA, &cr, ts(0));
    let a = &out[0];
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("True", "DriverDisabled")
    );
    assert_eq!(
        a.message,
        "CSI driver for Manila is disabled: Pre-condition not satisfied: manila does not provide any share types"
    );
    // No Progressing condition: False, not waiting for the operator.
    assert_eq!(out[1].status, "False");
    assert_eq!(out[1].reason, "NoData");
    assert_eq!(out[2].status, "False");
}

#[test]
fn cinder_may_not_be_disabled() {
    let cr = [cond("CSIControllerDisabled", TRUE, "X", "off")];
    let out = driver_cr_conditions(&CINDER, &cr, ts(0));
    assert_eq!(out[0].status, "False");
    assert_eq!(out[0].reason, "WaitForOperator");
    assert_eq!(out[1].status, "True");
}

#[test]
fn disabled_false_does_not_count() {
    // Deliberate difference from Go (anchors §8.9): only a True Disabled condition counts.
    let cr = [
        cond("CSIControllerDisabled", FALSE, "", "stale"),
        cond(
            "ManilaControllerAvailable",
            FALSE,
            "Deploying",
            "Waiting for Deployment",
        ),
    ];
    let a = &driver_cr_conditions(&MANILA, &cr, ts(0))[0];
    assert_eq!(a.status, "False");
    assert_eq!(a.reason, "ManilaController_Deploying");
}

// ---- operator Deployment --------------------------------------------------------------------

fn deployment(
    generation: i64,
    observed: i64,
    replicas: i32,
    status: DeploymentStatus,
) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("openstack-cinder-csi-driver-operator".into()),
            namespace: Some("openshift-cluster-csi-drivers".into()),
            generation: Some(generation),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            ..Default::default()
        }),
        status: Some(DeploymentStatus {
            observed_generation: Some(observed),
            ..status
        }),
    }
}

fn dcond(t: &str, status: &str, reason: &str, message: &str) -> DeploymentCondition {
    DeploymentCondition {
        type_: t.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        ..Default::default()
    }
}

fn ready_status() -> DeploymentStatus {
    DeploymentStatus {
        replicas: Some(1),
        updated_replicas: Some(1),
        available_replicas: Some(1),
        ready_replicas: Some(1),
        conditions: Some(vec![
            dcond("Available", "True", "MinimumReplicasAvailable", ""),
            dcond("Progressing", "True", "NewReplicaSetAvailable", ""),
        ]),
        ..Default::default()
    }
}

#[test]
fn ready_operator_deployment_is_quiet() {
    let d = deployment(3, 3, 1, ready_status());
    let out = operator_deployment_conditions(&CINDER, &d);
    assert_eq!(out[0], cond("OpenStackCinderProgressing", FALSE, "", ""));
    assert_eq!(
        out[1],
        cond(
            "OpenStackCinderCSIDriverOperatorDeploymentDegraded",
            FALSE,
            "AsExpected",
            ""
        )
    );
    assert_eq!(check_deployment_health(&d), Ok(()));
}

#[test]
fn rolling_operator_deployment_is_progressing() {
    let d = deployment(4, 3, 1, ready_status());
    let out = operator_deployment_conditions(&MANILA, &d);
    assert_eq!(
        out[0],
        cond(
            "ManilaProgressing",
            TRUE,
            "Deploying",
            "Waiting for Deployment to act on changes"
        )
    );
    let d = deployment(
        1,
        1,
        1,
        DeploymentStatus {
            unavailable_replicas: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(
        operator_deployment_conditions(&CINDER, &d)[0].message,
        "Waiting for Deployment to deploy pods"
    );
}

#[test]
fn operator_deployment_has_no_available_condition() {
    let d = deployment(1, 1, 1, DeploymentStatus::default());
    let out = operator_deployment_conditions(&CINDER, &d);
    assert!(out.iter().all(|c| !c.type_.ends_with("Available")));
}

#[test]
fn deadline_exceeded_degrades() {
    let status = DeploymentStatus {
        conditions: Some(vec![dcond(
            "Progressing",
            "False",
            "ProgressDeadlineExceeded",
            "ReplicaSet \"x\" has timed out progressing.",
        )]),
        ..Default::default()
    };
    let d = deployment(1, 1, 1, status);
    let out = operator_deployment_conditions(&CINDER, &d);
    assert_eq!(out[1].status, "True");
    assert_eq!(out[1].reason, "SyncError");
    assert_eq!(
        out[1].message,
        "deployment openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator is Progressing=False: ProgressDeadlineExceeded: ReplicaSet \"x\" has timed out progressing."
    );
}

#[test]
fn replica_failure_degrades() {
    let status = DeploymentStatus {
        unavailable_replicas: Some(1),
        conditions: Some(vec![dcond(
            "ReplicaFailure",
            "True",
            "FailedCreate",
            "quota",
        )]),
        ..Default::default()
    };
    let err = check_deployment_health(&deployment(1, 1, 1, status)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "deployment openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator has some pods failing; unavailable replicas=1"
    );
}

#[test]
fn not_available_and_not_progressing_degrades() {
    let status = DeploymentStatus {
        replicas: Some(1),
        updated_replicas: Some(1),
        available_replicas: Some(0),
        conditions: Some(vec![
            dcond("Available", "False", "MinimumReplicasUnavailable", ""),
            dcond("Progressing", "False", "Other", ""),
        ]),
        ..Default::default()
    };
    let err = check_deployment_health(&deployment(1, 1, 1, status.clone())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "deployment openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator is not available and not progressing; updated replicas=1 of 1, available replicas=0 of 1"
    );
    // Still progressing: not (yet) degraded.
    let mut progressing = status;
    progressing.conditions = Some(vec![
        dcond("Available", "False", "MinimumReplicasUnavailable", ""),
        dcond("Progressing", "True", "ReplicaSetUpdated", ""),
    ]);
    assert_eq!(
        check_deployment_health(&deployment(1, 1, 1, progressing)),
        Ok(())
    );
}

#[test]
fn deployment_without_status_is_not_unhealthy() {
    let d = Deployment::default();
    assert_eq!(check_deployment_health(&d), Ok(()));
}

// ---- starter ----------------------------------------------------------------------------------

#[test]
fn starter_without_driver_is_upgradeable_and_says_why() {
    let (set, remove) = starter_conditions(&select(Some("AWS")));
    assert!(remove.is_empty());
    assert_eq!(set[0], cond("StorageOperatorUpgradeable", TRUE, "", ""));
    assert_eq!(set[1].type_, "CSIDriverStarterAvailable");
    assert_eq!(set[1].status, "True");
    assert_eq!(set[1].reason, "NoDriverForPlatform");
    assert!(set[1].message.contains("\"AWS\""));
    // It shows in the ClusterOperator's Available message, and the ClusterOperator stays
    // Available.
    let co = cluster_operator_conditions(&ManagementState::Managed, &set, ts(0));
    let a = get(&co, "Available");
    assert_eq!(a.status, "True");
    assert!(
        a.message
            .starts_with("CSIDriverStarterAvailable: No CSI driver operator started")
    );
}

#[test]
fn starter_with_drivers_removes_its_condition() {
    let (set, remove) = starter_conditions(&select(Some("OpenStack")));
    assert!(set.is_empty());
    assert_eq!(remove, ["CSIDriverStarterAvailable"]);
}

// ---- ClusterOperator ----------------------------------------------------------------------------

#[test]
fn unmanaged_is_unknown_everywhere() {
    let storage = [cond("ADegraded", TRUE, "Boom", "boom")];
    let co = cluster_operator_conditions(&ManagementState::Unmanaged, &storage, ts(0));
    let types: Vec<_> = co.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        [
            "Degraded",
            "Progressing",
            "Available",
            "Upgradeable",
            "EvaluationConditionsDetected"
        ]
    );
    for c in &co {
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("Unknown", "Unmanaged", "")
        );
    }
}

#[test]
fn cluster_operator_defaults() {
    let storage = driver_cr_conditions(&CINDER, &healthy_cinder_cr(), ts(0));
    let co = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(10_000));
    assert_eq!(get(&co, "Available").status, "True");
    assert_eq!(get(&co, "Progressing").status, "False");
    assert_eq!(get(&co, "Degraded").status, "False");
    assert_eq!(get(&co, "Upgradeable").status, "True");
    // Nobody reports EvaluationConditionsDetected: Unknown / NoData, as library-go.
    let e = get(&co, "EvaluationConditionsDetected");
    assert_eq!(
        (e.status.as_str(), e.reason.as_str()),
        ("Unknown", "NoData")
    );
}

#[test]
fn degraded_waits_two_minutes() {
    let storage = [at(
        cond(
            "OpenStackCinderCSIDriverOperatorCRDegraded",
            TRUE,
            "X_SyncError",
            "x",
        ),
        1_000,
    )];
    let young = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(1_100));
    assert_eq!(get(&young, "Degraded").status, "False");
    let old = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(1_121));
    let d = get(&old, "Degraded");
    assert_eq!(d.status, "True");
    assert_eq!(d.reason, "OpenStackCinderCSIDriverOperatorCR_X_SyncError");
    // Progressing and Available have no inertia.
    let storage = [at(cond("FooProgressing", TRUE, "R", ""), 1_000)];
    let co = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(1_000));
    assert_eq!(get(&co, "Progressing").status, "True");
}

#[test]
fn inertia_wakeup_points_at_the_youngest_bad_degraded_condition() {
    let inertia = Duration::from_secs(120);
    let storage = [
        at(cond("ADegraded", TRUE, "R", "a"), 1_000),
        at(cond("BDegraded", TRUE, "R", "b"), 1_050),
        at(cond("CDegraded", FALSE, "", ""), 1_090),
        at(cond("DProgressing", TRUE, "R", ""), 1_095),
    ];
    assert_eq!(
        inertia_wakeup(&storage, inertia, ts(1_100)),
        Some(Duration::from_secs(20)),
        "A expires at 1120, before B at 1170"
    );
    assert_eq!(
        inertia_wakeup(&storage, inertia, ts(1_130)),
        Some(Duration::from_secs(40))
    );
    assert_eq!(inertia_wakeup(&storage, inertia, ts(1_170)), None);
    // A shorter inertia (tests) turns Degraded sooner.
    let co = cluster_operator_conditions_with_inertia(
        &ManagementState::Managed,
        &storage,
        Duration::from_secs(5),
        ts(1_100),
    );
    assert_eq!(get(&co, "Degraded").status, "True");
}

#[test]
fn status_change_messages_name_each_changed_condition() {
    let before = [
        cond("Available", TRUE, "AsExpected", ""),
        cond("Degraded", FALSE, "AsExpected", ""),
    ];
    let after = [
        cond("Available", FALSE, "X_Y", "waiting"),
        cond("Degraded", FALSE, "AsExpected", ""),
        cond("Upgradeable", TRUE, "AsExpected", ""),
    ];
    assert_eq!(
        status_change_message(&before, &after).as_deref(),
        Some(
            "Status for clusteroperator/storage changed: Available changed from True to False (\"waiting\"),Upgradeable set to True (\"\")"
        )
    );
    assert_eq!(status_change_message(&before, &before), None);
}

#[test]
fn api_condition_conversion_keeps_every_field() {
    let c = at(cond("Available", FALSE, "R", "m"), 42);
    let api = to_api_condition(&c);
    assert_eq!(api.type_, "Available");
    assert_eq!(api.status, "False");
    assert_eq!(api.reason, "R");
    assert_eq!(api.message, "m");
    assert_eq!(api.last_transition_time, Some(Time(ts(42))));
}

#[test]
fn related_objects_dynamic_first_then_static() {
    let ro = related_objects(&[&MANILA, &CINDER], &[]);
    let names: Vec<_> = ro
        .iter()
        .map(|r| format!("{}/{}/{}/{}", r.group, r.resource, r.namespace, r.name))
        .collect();
    assert_eq!(
        names,
        [
            "/namespaces//openshift-manila-csi-driver",
            "/serviceaccounts/openshift-cluster-csi-drivers/manila-csi-driver-operator",
            "rbac.authorization.k8s.io/roles/openshift-cluster-csi-drivers/manila-csi-driver-operator-role",
            "rbac.authorization.k8s.io/rolebindings/openshift-cluster-csi-drivers/manila-csi-driver-operator-rolebinding",
            "rbac.authorization.k8s.io/clusterroles//manila-csi-driver-operator-clusterrole",
            "rbac.authorization.k8s.io/clusterrolebindings//manila-csi-driver-operator-clusterrolebinding",
            "operator.openshift.io/clustercsidrivers//manila.csi.openstack.org",
            "/serviceaccounts/openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator",
            "rbac.authorization.k8s.io/roles/openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator-role",
            "rbac.authorization.k8s.io/rolebindings/openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator-rolebinding",
            "rbac.authorization.k8s.io/clusterroles//openstack-cinder-csi-driver-operator-clusterrole",
            "rbac.authorization.k8s.io/clusterrolebindings//openstack-cinder-csi-driver-operator-clusterrolebinding",
            "operator.openshift.io/clustercsidrivers//cinder.csi.openstack.org",
            "/namespaces//openshift-cluster-storage-operator",
            "/namespaces//openshift-cluster-csi-drivers",
            "operator.openshift.io/storages//cluster",
            "rbac.authorization.k8s.io/clusterrolebindings//cluster-storage-operator",
        ]
    );
}

#[test]
fn related_objects_keep_existing_while_no_driver_started() {
    let existing = related_objects(&[&CINDER], &[]);
    assert_eq!(related_objects(&[], &existing), existing);
    assert_eq!(related_objects(&[], &[]), static_related_objects());
    // A static entry already present is not repeated.
    let mut with_static = static_related_objects();
    with_static.reverse();
    assert_eq!(related_objects(&[], &with_static), with_static);
}

#[test]
fn versions_from_operator_image_version() {
    assert_eq!(
        versions(Some("4.19.0")),
        vec![OperandVersion {
            name: "operator".into(),
            version: "4.19.0".into()
        }]
    );
    assert!(versions(Some("")).is_empty());
    assert!(versions(None).is_empty());
}

// ---- properties ---------------------------------------------------------------------------------

fn arb_status() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![TRUE, FALSE, UNKNOWN])
}

fn arb_cr_condition() -> impl Strategy<Value = OperatorCondition> {
    (
        prop::sample::select(vec!["A", "B", "CSIController", "Starter"]),
        prop::sample::select(vec![
            "Available",
            "Progressing",
            "Degraded",
            "Upgradeable",
            "Disabled",
            "Other",
        ]),
        arb_status(),
        prop::sample::select(vec!["", "R1", "AsExpected"]),
        "[a-c\\n]{0,5}",
        prop::option::of(0i64..5_000),
    )
        .prop_map(|(p, s, status, reason, message, ltt)| {
            let mut c = cond(&format!("{p}{s}"), status, reason, &message);
            c.last_transition_time = ltt.map(ts);
            c
        })
}

proptest! {
    /// A bad Degraded condition younger than the inertia never degrades the ClusterOperator.
    #[test]
    fn young_degraded_never_degrades_cluster_operator(
        others in prop::collection::vec(arb_cr_condition(), 0..8),
        young in prop::collection::vec((arb_status(), 0i64..120), 1..4),
        now in 10_000i64..20_000,
    ) {
        // Only good or young Degraded conditions on Storage.
        let mut storage: Vec<OperatorCondition> = others
            .into_iter()
            .filter(|c| !c.type_.ends_with("Degraded") || c.status == FALSE)
            .collect();
        for (i, (status, age)) in young.into_iter().enumerate() {
            storage.push(at(cond(&format!("Young{i}Degraded"), status, "Boom", "boom"), now - age));
        }
        let co = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(now));
        prop_assert_eq!(&get(&co, "Degraded").status, FALSE);
    }

    /// An old bad Degraded condition always degrades the ClusterOperator.
    #[test]
    fn old_degraded_always_degrades_cluster_operator(
        others in prop::collection::vec(arb_cr_condition(), 0..8),
        age in 121i64..5_000,
        now in 10_000i64..20_000,
    ) {
        let mut storage = others;
        storage.push(at(cond("OldDegraded", TRUE, "Boom", "boom"), now - age));
        let co = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(now));
        prop_assert_eq!(&get(&co, "Degraded").status, TRUE);
    }

    /// A disabled Manila never makes the ClusterOperator unavailable, whatever else Manila's
    /// ClusterCSIDriver says.
    #[test]
    fn disabled_manila_never_makes_cluster_operator_unavailable(
        mut manila in prop::collection::vec(arb_cr_condition(), 0..8),
        position in 0usize..8,
        message in "[a-z ]{0,20}",
    ) {
        let disabled = cond("CSIControllerDisabled", TRUE, "PreConditionNotSatisfied", &message);
        let position = position.min(manila.len());
        manila.insert(position, disabled);
        let mut storage = driver_cr_conditions(&MANILA, &manila, ts(0));
        prop_assert_eq!(&storage[0].status, TRUE);
        prop_assert_eq!(&storage[0].reason, REASON_DRIVER_DISABLED);
        prop_assert!(storage[0].message.starts_with("CSI driver for Manila is disabled: "));
        // Progressing is never "waiting for the operator" when disabled.
        prop_assert_ne!(&storage[1].reason, REASON_WAIT_FOR_OPERATOR);
        storage.extend(driver_cr_conditions(&CINDER, &healthy_cinder_cr(), ts(0)));
        let co = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(0));
        prop_assert_eq!(&get(&co, "Available").status, TRUE);
    }

    /// Cinder is never reported as disabled, whatever its conditions.
    #[test]
    fn cinder_is_never_disabled(cr in prop::collection::vec(arb_cr_condition(), 0..8)) {
        let out = driver_cr_conditions(&CINDER, &cr, ts(0));
        prop_assert_ne!(&out[0].reason, REASON_DRIVER_DISABLED);
    }

    /// Available, Progressing and Degraded of a driver are never Unknown, and every type
    /// carries the driver's prefix.
    #[test]
    fn cr_conditions_are_decided(
        cr in prop::collection::vec(arb_cr_condition(), 0..8),
        manila in any::<bool>(),
    ) {
        let driver = if manila { &MANILA } else { &CINDER };
        let out = driver_cr_conditions(driver, &cr, ts(0));
        prop_assert_eq!(out.len(), 4);
        for c in &out[..3] {
            prop_assert!(c.status == TRUE || c.status == FALSE, "{:?}", c);
        }
        for c in &out {
            let prefix = format!("{}CSIDriverOperatorCR", driver.condition_prefix);
            prop_assert!(c.type_.starts_with(&prefix));
        }
    }

    /// Unmanaged hides everything; Managed always reports the five types.
    #[test]
    fn cluster_operator_types(storage in prop::collection::vec(arb_cr_condition(), 0..10), now in 0i64..10_000) {
        let unmanaged = cluster_operator_conditions(&ManagementState::Unmanaged, &storage, ts(now));
        prop_assert!(unmanaged.iter().all(|c| c.status == UNKNOWN && c.reason == "Unmanaged"));
        let managed = cluster_operator_conditions(&ManagementState::Managed, &storage, ts(now));
        let types: Vec<_> = managed.iter().map(|c| c.type_.as_str()).collect();
        prop_assert_eq!(types, CLUSTER_OPERATOR_CONDITIONS.to_vec());
    }

    /// relatedObjects always hold every static entry once, after the dynamic ones.
    #[test]
    fn related_objects_hold_static_entries(mask in 0u8..4, existing_n in 0usize..3) {
        let started: Vec<&Driver> = [&MANILA, &CINDER]
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, d)| d)
            .collect();
        let existing: Vec<ObjectReference> = static_related_objects().into_iter().take(existing_n).collect();
        let ro = related_objects(&started, &existing);
        for s in static_related_objects() {
            prop_assert_eq!(ro.iter().filter(|r| **r == s).count(), 1);
        }
        let dynamic: usize = started.iter().map(|d| d.related_objects.len() + 1).sum();
        if !started.is_empty() {
            prop_assert_eq!(ro.len(), dynamic + static_related_objects().len());
            prop_assert_eq!(&ro[dynamic - 1], &started[started.len() - 1].cluster_csi_driver_reference());
        }
    }
}

#[test]
fn hosted_related_objects_name_only_what_the_guest_holds() {
    let hosted = hosted_related_objects(&[&MANILA], &[]);
    let standalone = related_objects(&[&MANILA], &[]);
    assert!(hosted.len() < standalone.len(), "{hosted:#?}");
    // Manila's guest side has no namespaced object of the CSO's (the management cluster has
    // them); its ClusterCSIDriver and the static entries stay.
    let namespaced: Vec<_> = hosted
        .iter()
        .filter(|r| {
            !r.namespace.is_empty()
                && r.namespace != "openshift-cluster-storage-operator"
                && r.resource != "namespaces"
        })
        .collect();
    assert!(namespaced.is_empty(), "{namespaced:#?}");
    assert!(
        hosted
            .iter()
            .any(|r| r.resource == "clustercsidrivers" && r.name == "manila.csi.openstack.org"),
        "{hosted:#?}"
    );
}
