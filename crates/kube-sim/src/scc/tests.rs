//! Unit tests of SCC admission: each strategy, the order, the pin, the namespace allocations
//! and the messages, against the default SCCs.

use super::allocation::{Block, mcs_level, parse_block};
use super::defaults::default_sccs;
use super::*;

fn namespace(uid_range: Option<&str>) -> Value {
    let mut ann = json!({MCS_ANNOTATION: "s0:c26,c5"});
    if let Some(r) = uid_range {
        ann[UID_RANGE_ANNOTATION] = json!(r);
    }
    json!({"metadata": {"name": "ns", "annotations": ann}})
}

fn ns() -> Value {
    namespace(Some("1000650000/10000"))
}

fn pod(annotations: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "p-", "namespace": "ns", "annotations": annotations},
        "spec": spec,
    })
}

/// A container hardened as the v2 SCCs want it.
fn hardened() -> Value {
    json!({"name": "c", "image": "i", "securityContext": {
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
    }})
}

fn pinned(scc: &str, spec: Value) -> Value {
    pod(json!({REQUIRED_SCC_ANNOTATION: scc}), spec)
}

fn everyone(_: &Scc) -> bool {
    true
}

fn only(names: &'static [&'static str]) -> impl Fn(&Scc) -> bool {
    move |s: &Scc| names.contains(&s.name.as_str())
}

/// The CSO pod as the manifest shipped it before the fix: restricted-v2 and a fixed UID.
fn old_cso(scc: &str) -> Value {
    pinned(
        scc,
        json!({
            "serviceAccountName": "cluster-storage-operator",
            "securityContext": {"runAsNonRoot": true, "runAsUser": 11411,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [hardened()],
        }),
    )
}

#[test]
fn the_defaults_sort_as_on_a_cluster() {
    let mut sccs: Vec<Scc> = default_sccs()
        .iter()
        .map(|v| Scc::from_value(v).expect("a default SCC parses"))
        .collect();
    sccs.sort_by(by_priority);
    let names: Vec<&str> = sccs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "anyuid",
            "restricted-v2",
            "restricted",
            "nonroot-v2",
            "nonroot",
            "hostmount-anyuid",
            "hostnetwork-v2",
            "hostnetwork",
            "hostaccess",
            "privileged",
        ]
    );
}

#[test]
fn restricted_v2_refuses_a_uid_outside_the_namespace_range() {
    let err = admit(&old_cso("restricted-v2"), &ns(), &default_sccs(), &everyone).unwrap_err();
    assert_eq!(
        err,
        "unable to validate against any security context constraint: provider restricted-v2: \
         .containers[0].runAsUser: Invalid value: 11411: must be in the ranges: [1000650000, 1000659999]"
    );
}

#[test]
fn nonroot_v2_admits_the_fixed_uid_and_says_so() {
    let admitted = admit(&old_cso("nonroot-v2"), &ns(), &default_sccs(), &everyone).unwrap();
    assert_eq!(admitted.scc, "nonroot-v2");
    assert_eq!(
        admitted.pod["metadata"]["annotations"][VALIDATED_SCC_ANNOTATION],
        "nonroot-v2"
    );
    // The pod's own UID is kept; the SCC adds the MCS level.
    let sc = &admitted.pod["spec"]["securityContext"];
    assert_eq!(sc["runAsUser"], 11411);
    assert_eq!(sc["seLinuxOptions"]["level"], "s0:c26,c5");
    assert!(admitted.pod["spec"]["containers"][0]["securityContext"]["runAsUser"].is_null());
}

#[test]
fn restricted_v2_assigns_the_first_uid_of_the_range_and_its_defaults() {
    let p = pinned(
        "restricted-v2",
        json!({"containers": [{"name": "c", "image": "i"}]}),
    );
    let admitted = admit(&p, &ns(), &default_sccs(), &everyone).unwrap();
    let c = &admitted.pod["spec"]["containers"][0]["securityContext"];
    assert_eq!(c["runAsUser"], 1_000_650_000);
    assert_eq!(c["runAsNonRoot"], true);
    assert_eq!(c["allowPrivilegeEscalation"], false);
    assert_eq!(c["capabilities"]["drop"], json!(["ALL"]));
    let psc = &admitted.pod["spec"]["securityContext"];
    assert_eq!(psc["fsGroup"], 1_000_650_000);
    assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault");
}

#[test]
fn nonroot_v2_needs_a_non_root_user() {
    let sccs = default_sccs();
    let root = pinned(
        "nonroot-v2",
        json!({"securityContext": {"runAsUser": 0}, "containers": [hardened()]}),
    );
    assert_eq!(
        admit(&root, &ns(), &sccs, &everyone).unwrap_err(),
        "unable to validate against any security context constraint: provider nonroot-v2: \
         .containers[0].runAsUser: Invalid value: 0: running with the root UID is forbidden"
    );
    let explicit = pinned(
        "nonroot-v2",
        json!({"securityContext": {"runAsNonRoot": false}, "containers": [hardened()]}),
    );
    assert!(
        admit(&explicit, &ns(), &sccs, &everyone)
            .unwrap_err()
            .ends_with(".containers[0].runAsNonRoot: Invalid value: false: must be true")
    );
    // Unset: the SCC marks the container non-root, for the kubelet to check the image.
    let unset = pinned("nonroot-v2", json!({"containers": [hardened()]}));
    let admitted = admit(&unset, &ns(), &sccs, &everyone).unwrap();
    assert_eq!(
        admitted.pod["spec"]["containers"][0]["securityContext"]["runAsNonRoot"],
        true
    );
}

#[test]
fn must_run_as_wants_its_uid_and_run_as_any_takes_anything() {
    let mut custom = default_sccs()
        .into_iter()
        .find(|s| s["metadata"]["name"] == "restricted-v2")
        .unwrap();
    custom["metadata"]["name"] = json!("fixed");
    custom["runAsUser"] = json!({"type": "MustRunAs", "uid": 5000});
    let sccs = vec![custom];
    let p = |uid: Option<i64>| {
        let mut c = hardened();
        if let Some(u) = uid {
            c["securityContext"]["runAsUser"] = json!(u);
        }
        pinned("fixed", json!({"containers": [c]}))
    };
    let admitted = admit(&p(None), &ns(), &sccs, &everyone).unwrap();
    assert_eq!(
        admitted.pod["spec"]["containers"][0]["securityContext"]["runAsUser"],
        5000
    );
    assert!(
        admit(&p(Some(7)), &ns(), &sccs, &everyone)
            .unwrap_err()
            .ends_with(".containers[0].runAsUser: Invalid value: 7: must be: 5000")
    );
    let anything = pinned(
        "privileged",
        json!({"hostNetwork": true, "securityContext": {"runAsUser": 0},
               "containers": [{"name": "c", "securityContext": {"privileged": true,
                               "capabilities": {"add": ["SYS_ADMIN"]}}}],
               "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}),
    );
    assert_eq!(
        admit(&anything, &ns(), &default_sccs(), &everyone)
            .unwrap()
            .scc,
        "privileged"
    );
}

#[test]
fn host_access_privilege_capabilities_and_volumes_are_refused_by_restricted_v2() {
    let p = pinned(
        "restricted-v2",
        json!({
            "hostNetwork": true,
            "containers": [{"name": "c", "securityContext": {"privileged": true,
                            "capabilities": {"add": ["SYS_ADMIN"]}},
                            "ports": [{"containerPort": 80, "hostPort": 80}]}],
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        }),
    );
    let err = admit(&p, &ns(), &default_sccs(), &everyone).unwrap_err();
    for expected in [
        "provider restricted-v2: .spec.securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used",
        "provider restricted-v2: .spec.volumes[0]: Invalid value: \"hostPath\": hostPath volumes are not allowed to be used",
        "provider restricted-v2: .containers[0].privileged: Invalid value: true: Privileged containers are not allowed",
        "provider restricted-v2: .containers[0].capabilities.add: Invalid value: \"SYS_ADMIN\": capability may not be added",
        "provider restricted-v2: .containers[0].containerPort: Invalid value: 80: Host ports are not allowed to be used",
    ] {
        assert!(err.contains(expected), "{expected}\nnot in\n{err}");
    }
    assert!(err.starts_with("unable to validate against any security context constraint: ["));
}

#[test]
fn hostnetwork_v2_admits_host_networking_only_when_usable() {
    let p = pod(
        json!({}),
        json!({"hostNetwork": true, "containers": [hardened()]}),
    );
    let admitted = admit(
        &p,
        &ns(),
        &default_sccs(),
        &only(&["restricted-v2", "hostnetwork-v2"]),
    )
    .unwrap();
    assert_eq!(admitted.scc, "hostnetwork-v2");
    // Without a grant, every SCC is listed in order, the unusable ones as such.
    let err = admit(&p, &ns(), &default_sccs(), &only(&["restricted-v2"])).unwrap_err();
    assert!(
        err.starts_with(
            "unable to validate against any security context constraint: [provider \"anyuid\": \
             Forbidden: not usable by user or serviceaccount, provider restricted-v2: \
             .spec.securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used, \
             provider \"restricted\": Forbidden: not usable by user or serviceaccount"
        ),
        "{err}"
    );
    assert!(
        err.ends_with("provider \"privileged\": Forbidden: not usable by user or serviceaccount]")
    );
}

#[test]
fn a_pin_to_an_unusable_or_missing_scc_is_refused() {
    let p = pinned("privileged", json!({"containers": [hardened()]}));
    assert_eq!(
        admit(&p, &ns(), &default_sccs(), &only(&["restricted-v2"])).unwrap_err(),
        "unable to validate against any security context constraint: provider \"privileged\": \
         Forbidden: not usable by user or serviceaccount"
    );
    let missing = pinned("restricted-v3", json!({"containers": [hardened()]}));
    assert_eq!(
        admit(&missing, &ns(), &default_sccs(), &everyone).unwrap_err(),
        "failed to retrieve the required SCC \"restricted-v3\": \
         securitycontextconstraints.security.openshift.io \"restricted-v3\" not found"
    );
}

#[test]
fn uid_blocks_parse_in_both_forms_and_bad_ones_say_why() {
    assert_eq!(
        parse_block("1000650000/10000"),
        Ok(Block {
            first: 1_000_650_000,
            last: 1_000_659_999
        })
    );
    assert_eq!(parse_block("5-9"), Ok(Block { first: 5, last: 9 }));
    for bad in ["", "abc", "100/0", "100/x", "-1/5", "9-5", "1000650000"] {
        assert!(parse_block(bad).is_err(), "{bad:?} parsed");
    }
    let err = admit(
        &old_cso("restricted-v2"),
        &namespace(Some("1000650000:10000")),
        &default_sccs(),
        &everyone,
    )
    .unwrap_err();
    assert_eq!(
        err,
        "unable to find pre-allocated uid annotation for namespace ns while trying to configure SCC \
         restricted-v2: block not in the format \"<start>/<size>\" or \"<start>-<end>\": \"1000650000:10000\""
    );
}

#[test]
fn a_namespace_without_allocations_is_not_ready() {
    let err = admit(
        &old_cso("nonroot-v2"),
        &namespace(None),
        &default_sccs(),
        &everyone,
    )
    .unwrap_err();
    assert_eq!(
        err,
        "error fetching namespace \"ns\": unable to find annotation openshift.io/sa.scc.uid-range"
    );
}

#[test]
fn mcs_levels_count_pairs_of_categories() {
    let levels: Vec<String> = (0..4).map(mcs_level).collect();
    assert_eq!(levels, ["s0:c1,c0", "s0:c2,c0", "s0:c2,c1", "s0:c3,c0"]);
}

#[test]
fn an_unknown_strategy_is_a_provider_error() {
    let mut bad = default_sccs().remove(0);
    bad["runAsUser"]["type"] = json!("Sometimes");
    let p = pod(json!({}), json!({"containers": [hardened()]}));
    assert_eq!(
        admit(&p, &ns(), &[bad], &everyone).unwrap_err(),
        "error creating provider for SCC anyuid in namespace ns: Unrecognized RunAsUser strategy type Sometimes"
    );
}
