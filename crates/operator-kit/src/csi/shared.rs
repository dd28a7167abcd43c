//! The sidecar and RBAC YAML every CSI driver ships, written once (`assets/csi/` of this crate)
//! and made a driver's own by two names, its prefixes.
//!
//! The objects around a CSI driver's controller and node pods are the same for every driver but
//! for their names: the controller and node ServiceAccounts, the trusted-CA-bundle ConfigMap, the
//! kube-rbac-proxy, leader-election, Prometheus and privileged-SCC roles, and the bindings of the
//! sidecars to the ClusterRoles the Cluster Storage Operator ships. OpenShift's csi-operator
//! writes them once with `${ASSET_PREFIX}` and `${ASSET_SHORT_PREFIX}` and fills them per driver;
//! so do we, with the same names and the same derived object names:
//!
//! | placeholder             | Cinder                        | Manila              |
//! |-------------------------|-------------------------------|---------------------|
//! | `${ASSET_PREFIX}`       | `openstack-cinder-csi-driver` | `manila-csi-driver` |
//! | `${ASSET_SHORT_PREFIX}` | `openstack-cinder`            | `openstack-manila`  |
//!
//! The ServiceAccounts follow from the long prefix (`${ASSET_PREFIX}-controller-sa`,
//! `${ASSET_PREFIX}-node-sa`), as in OpenShift, so every binding names them without a value of
//! its own. Namespaces stay run-time placeholders for [`crate::assets`]' replacer:
//! `${NAMESPACE}` (control plane) and `${NODE_NAMESPACE}` (guest; the same one when standalone).
//!
//! # Filled when the driver compiles
//!
//! [`shared_asset!`](crate::shared_asset) fills the two prefixes at compile time and gives an
//! ordinary [`Asset`](crate::assets::Asset) whose `content` already carries the driver's names:
//! the driver's asset lists stay `const` slices, its `render`, hash annotations and
//! apply order do not know where a file came from, and a wrong prefix or an `${ASSET_…}`
//! placeholder the kit does not know is a compile error (the message says which), never a
//! literal in a shipped object. The run-time placeholders are left for
//! [`Asset::render`](crate::assets::Asset::render); an `${ASSET_…}` that reaches it (a shared
//! file embedded with plain [`asset!`](crate::asset)) fails with a hint to use `shared_asset!`.
//!
//! # Opting in, for a driver
//!
//! Declare the prefixes once and list the shared assets the driver needs among its own, in the
//! order they are applied; each line opts into one object:
//!
//! ```
//! use operator_kit::assets::Asset;
//! use operator_kit::csi::shared::Prefixes;
//! use operator_kit::shared_asset;
//!
//! pub const PREFIXES: Prefixes = Prefixes {
//!     asset: "smb-csi-driver",
//!     short: "smb",
//! };
//!
//! pub const GUEST_STATIC: &[Asset] = &[
//!     shared_asset!(PREFIXES, KUBE_RBAC_PROXY_ROLE),
//!     shared_asset!(PREFIXES, PRIVILEGED_ROLE),
//!     shared_asset!(PREFIXES, KUBE_RBAC_PROXY_BINDING),
//!     shared_asset!(PREFIXES, MAIN_PROVISIONER_BINDING),
//!     shared_asset!(PREFIXES, NODE_PRIVILEGED_BINDING),
//!     // asset!("csidriver.yaml"), the driver's own files, in the same list.
//!     shared_asset!(PREFIXES, NODE_SA),
//! ];
//! # let role = GUEST_STATIC[0].render(&operator_kit::assets::Replacements::new()).unwrap();
//! # assert!(role.contains("name: smb-kube-rbac-proxy-role"));
//! ```
//!
//! Which ones to take:
//! - **Always** (every driver with a controller pod, kube-rbac-proxy metrics and a privileged
//!   node plugin): [`CONTROLLER_SA`], [`NODE_SA`], [`KUBE_RBAC_PROXY_ROLE`] and
//!   [`KUBE_RBAC_PROXY_BINDING`], [`PROMETHEUS_ROLE`] and [`PROMETHEUS_BINDING`],
//!   [`PRIVILEGED_ROLE`] and [`NODE_PRIVILEGED_BINDING`], [`CABUNDLE_CM`] when the driver
//!   mounts the cluster's trusted CA bundle.
//! - **Leader election** of the controller sidecars (`--leader-election`):
//!   [`LEASE_LEADER_ELECTION_ROLE`] and [`LEASE_LEADER_ELECTION_BINDING`].
//! - **One binding per controller sidecar** the driver runs: [`MAIN_PROVISIONER_BINDING`] and
//!   [`VOLUMESNAPSHOT_READER_PROVISIONER_BINDING`] (csi-provisioner),
//!   [`MAIN_ATTACHER_BINDING`] (csi-attacher: only when the CSIDriver has
//!   `attachRequired: true`), [`MAIN_RESIZER_BINDING`] and
//!   [`STORAGECLASS_READER_RESIZER_BINDING`] (csi-resizer), [`MAIN_SNAPSHOTTER_BINDING`]
//!   (csi-snapshotter). The ClusterRoles they bind are the CSO's.
//!
//! What stays the driver's own files: its workloads (controller Deployment, node DaemonSets),
//! the metrics Service and ServiceMonitor (their ports are the driver's sidecars), the PDB (its
//! selector is the controller's labels), the CSIDriver, StorageClasses, VolumeSnapshotClass,
//! and RBAC only it needs (Manila's Secret reader). A driver whose object must differ from a
//! shared one (another namespace for a subject, say) keeps its own file for that object rather
//! than patching the shared one, and says why in the file.
//!
//! Every shared asset binds the controller ServiceAccount in `${NODE_NAMESPACE}` except
//! [`KUBE_RBAC_PROXY_BINDING`], whose subject is in `${NAMESPACE}` (the kube-rbac-proxies run in
//! the controller pod, which is in the control-plane namespace on HyperShift).

use std::fmt;

use crate::assets::next_placeholder;

/// The two names that make the shared assets a driver's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefixes {
    /// `${ASSET_PREFIX}`: the long prefix of namespaced objects and ServiceAccounts
    /// (`openstack-cinder-csi-driver`).
    pub asset: &'static str,
    /// `${ASSET_SHORT_PREFIX}`: the prefix of cluster-scoped RBAC (`openstack-cinder`).
    pub short: &'static str,
}

/// The longest prefix accepted: a DNS label, so every object name built from it stays one.
pub const MAX_PREFIX_LEN: usize = 63;

/// Why a shared asset cannot be filled for a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillError {
    /// `Prefixes::asset` or `Prefixes::short` is not a DNS label.
    BadPrefix,
    /// The template holds an `${ASSET_…}` placeholder other than the two prefixes.
    UnknownAssetPlaceholder,
    /// The output buffer is not the filled length (an internal error of [`shared_asset!`]).
    Length,
}

impl FillError {
    /// What is wrong and how to fix it; `const` so a compile error can say it.
    pub const fn message(self) -> &'static str {
        match self {
            Self::BadPrefix => {
                "shared CSI asset: each of Prefixes { asset, short } must be a DNS label: 1 to 63 \
                 characters of a-z, 0-9 and '-', starting and ending with a letter or digit"
            }
            Self::UnknownAssetPlaceholder => {
                "shared CSI asset: the template holds an ${ASSET_...} placeholder other than \
                 ${ASSET_PREFIX} and ${ASSET_SHORT_PREFIX}; check its spelling"
            }
            Self::Length => "shared CSI asset: the output buffer is not the filled length",
        }
    }
}

impl fmt::Display for FillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for FillError {}

const fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > MAX_PREFIX_LEN {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let alnum = c.is_ascii_lowercase() || c.is_ascii_digit();
        if !(alnum || (c == b'-' && i != 0 && i != b.len() - 1)) {
            return false;
        }
        i += 1;
    }
    true
}

impl Prefixes {
    /// Checks both prefixes are DNS labels.
    pub const fn check(&self) -> Result<(), FillError> {
        if is_label(self.asset) && is_label(self.short) {
            Ok(())
        } else {
            Err(FillError::BadPrefix)
        }
    }
}

/// A YAML template shared by the CSI drivers, with `${ASSET_PREFIX}` and
/// `${ASSET_SHORT_PREFIX}` where a driver's names go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedAsset {
    /// File name, which the filled [`Asset`](crate::assets::Asset) keeps.
    pub name: &'static str,
    /// The template.
    pub template: &'static str,
}

macro_rules! shared {
    ($file:literal) => {
        SharedAsset {
            name: $file,
            template: include_str!(concat!("../../assets/csi/", $file)),
        }
    };
}

/// ConfigMap `${ASSET_PREFIX}-trusted-ca-bundle` (control plane), filled by the CA injector.
pub const CABUNDLE_CM: SharedAsset = shared!("cabundle_cm.yaml");
/// ServiceAccount `${ASSET_PREFIX}-controller-sa` (control plane).
pub const CONTROLLER_SA: SharedAsset = shared!("controller_sa.yaml");
/// ServiceAccount `${ASSET_PREFIX}-node-sa` (guest).
pub const NODE_SA: SharedAsset = shared!("node_sa.yaml");
/// ClusterRole `${ASSET_SHORT_PREFIX}-kube-rbac-proxy-role`: TokenReviews and
/// SubjectAccessReviews for the metrics proxies.
pub const KUBE_RBAC_PROXY_ROLE: SharedAsset = shared!("kube_rbac_proxy_role.yaml");
/// Its ClusterRoleBinding to the controller ServiceAccount in `${NAMESPACE}`.
pub const KUBE_RBAC_PROXY_BINDING: SharedAsset = shared!("kube_rbac_proxy_binding.yaml");
/// Role `${ASSET_PREFIX}-lease-leader-election` on Leases (guest).
pub const LEASE_LEADER_ELECTION_ROLE: SharedAsset = shared!("lease_leader_election_role.yaml");
/// Its RoleBinding to the controller ServiceAccount.
pub const LEASE_LEADER_ELECTION_BINDING: SharedAsset =
    shared!("lease_leader_election_binding.yaml");
/// csi-attacher's binding to the CSO's `openshift-csi-main-attacher-role`.
pub const MAIN_ATTACHER_BINDING: SharedAsset = shared!("main_attacher_binding.yaml");
/// csi-provisioner's binding to the CSO's `openshift-csi-main-provisioner-role`.
pub const MAIN_PROVISIONER_BINDING: SharedAsset = shared!("main_provisioner_binding.yaml");
/// csi-resizer's binding to the CSO's `openshift-csi-main-resizer-role`.
pub const MAIN_RESIZER_BINDING: SharedAsset = shared!("main_resizer_binding.yaml");
/// csi-snapshotter's binding to the CSO's `openshift-csi-main-snapshotter-role`.
pub const MAIN_SNAPSHOTTER_BINDING: SharedAsset = shared!("main_snapshotter_binding.yaml");
/// ClusterRole `${ASSET_SHORT_PREFIX}-privileged-role`: use of the privileged SCC.
pub const PRIVILEGED_ROLE: SharedAsset = shared!("privileged_role.yaml");
/// Its ClusterRoleBinding to the node ServiceAccount.
pub const NODE_PRIVILEGED_BINDING: SharedAsset = shared!("node_privileged_binding.yaml");
/// Role `${ASSET_PREFIX}-prometheus`: service discovery for the cluster Prometheus (guest).
pub const PROMETHEUS_ROLE: SharedAsset = shared!("prometheus_role.yaml");
/// Its RoleBinding to `openshift-monitoring/prometheus-k8s`.
pub const PROMETHEUS_BINDING: SharedAsset = shared!("prometheus_binding.yaml");
/// csi-resizer's binding to the CSO's StorageClass reader role.
pub const STORAGECLASS_READER_RESIZER_BINDING: SharedAsset =
    shared!("storageclass_reader_resizer_binding.yaml");
/// csi-provisioner's binding to the CSO's VolumeSnapshot reader role.
pub const VOLUMESNAPSHOT_READER_PROVISIONER_BINDING: SharedAsset =
    shared!("volumesnapshot_reader_provisioner_binding.yaml");

/// Every shared asset once.
pub const ALL: &[SharedAsset] = &[
    CABUNDLE_CM,
    CONTROLLER_SA,
    NODE_SA,
    KUBE_RBAC_PROXY_ROLE,
    KUBE_RBAC_PROXY_BINDING,
    LEASE_LEADER_ELECTION_ROLE,
    LEASE_LEADER_ELECTION_BINDING,
    MAIN_ATTACHER_BINDING,
    MAIN_PROVISIONER_BINDING,
    MAIN_RESIZER_BINDING,
    MAIN_SNAPSHOTTER_BINDING,
    PRIVILEGED_ROLE,
    NODE_PRIVILEGED_BINDING,
    PROMETHEUS_ROLE,
    PROMETHEUS_BINDING,
    STORAGECLASS_READER_RESIZER_BINDING,
    VOLUMESNAPSHOT_READER_PROVISIONER_BINDING,
];

/// The placeholders filled here, at compile time; every other `${NAME}` is left for the
/// run-time replacer.
pub const PREFIX_PLACEHOLDERS: [&str; 2] = ["ASSET_PREFIX", "ASSET_SHORT_PREFIX"];

/// Whether `bytes[from..to]` is `word`.
const fn is(bytes: &[u8], from: usize, to: usize, word: &[u8]) -> bool {
    if to - from != word.len() {
        return false;
    }
    starts_with(bytes, from, to, word)
}

/// Whether `bytes[from..to]` starts with `word`.
const fn starts_with(bytes: &[u8], from: usize, to: usize, word: &[u8]) -> bool {
    if to - from < word.len() {
        return false;
    }
    let mut i = 0;
    while i < word.len() {
        if bytes[from + i] != word[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Copies `src[from..to]` into `out` at `at` (only counting when `out` is empty); returns the
/// position after it.
const fn copy(src: &[u8], from: usize, to: usize, out: &mut [u8], mut at: usize) -> usize {
    let mut i = from;
    while i < to {
        if at < out.len() {
            out[at] = src[i];
        }
        at += 1;
        i += 1;
    }
    at
}

/// Fills `template`'s `${ASSET_PREFIX}` and `${ASSET_SHORT_PREFIX}` with `prefixes` into
/// `out` and returns the filled length. With an empty `out` it only measures; otherwise `out`
/// must be exactly that long. Other placeholders are copied as they are. The placeholder
/// grammar is [`crate::assets`]' (one scanner for both passes).
pub const fn fill_into(
    template: &str,
    prefixes: &Prefixes,
    out: &mut [u8],
) -> Result<usize, FillError> {
    if let Err(e) = prefixes.check() {
        return Err(e);
    }
    let t = template.as_bytes();
    let mut pos = 0;
    let mut len = 0;
    while let Some((start, end)) = next_placeholder(t, pos) {
        let name = start + 2;
        let value = if is(t, name, end, b"ASSET_PREFIX") {
            prefixes.asset
        } else if is(t, name, end, b"ASSET_SHORT_PREFIX") {
            prefixes.short
        } else if starts_with(t, name, end, b"ASSET_") {
            return Err(FillError::UnknownAssetPlaceholder);
        } else {
            // A run-time placeholder: keep it, `}` included.
            len = copy(t, pos, end + 1, out, len);
            pos = end + 1;
            continue;
        };
        len = copy(t, pos, start, out, len);
        len = copy(value.as_bytes(), 0, value.len(), out, len);
        pos = end + 1;
    }
    len = copy(t, pos, t.len(), out, len);
    if !out.is_empty() && len != out.len() {
        return Err(FillError::Length);
    }
    Ok(len)
}

/// The filled length of `template` for `prefixes`; a compile error naming the problem when
/// evaluated in a `const` (as [`shared_asset!`](crate::shared_asset) does).
pub const fn filled_len(template: &str, prefixes: &Prefixes) -> usize {
    match fill_into(template, prefixes, &mut []) {
        Ok(n) => n,
        Err(e) => panic!("{}", e.message()),
    }
}

/// `template` filled for `prefixes`, as `N` bytes ([`filled_len`]).
pub const fn filled<const N: usize>(template: &str, prefixes: &Prefixes) -> [u8; N] {
    let mut out = [0u8; N];
    match fill_into(template, prefixes, &mut out) {
        Ok(_) => out,
        Err(e) => panic!("{}", e.message()),
    }
}

/// The filled bytes as text. Filling replaces ASCII placeholders with ASCII prefixes, so text
/// that was UTF-8 stays UTF-8.
pub const fn as_str(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("shared CSI asset: filled template is not UTF-8"),
    }
}

/// [`fill_into`] at run time, for tests and tools: `template` filled for `prefixes`.
pub fn fill(template: &str, prefixes: &Prefixes) -> Result<String, FillError> {
    let len = fill_into(template, prefixes, &mut [])?;
    let mut out = vec![0u8; len];
    fill_into(template, prefixes, &mut out)?;
    // ASCII prefixes at ASCII boundaries of UTF-8 text: nothing here is lossy.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A shared CSI asset filled with a driver's [`Prefixes`] at compile time, as an
/// [`Asset`](crate::assets::Asset) with the shared file's name:
/// `shared_asset!(PREFIXES, KUBE_RBAC_PROXY_ROLE)`, where the second argument names a constant
/// of [`operator_kit::csi::shared`](crate::csi::shared) and the first is a `const` path or
/// expression of type `Prefixes`. A bad prefix or an unknown `${ASSET_…}` placeholder fails the
/// build with a message that says which.
#[macro_export]
macro_rules! shared_asset {
    ($prefixes:expr, $shared:ident) => {{
        // Items are not hygienic: these names must not be ones a caller passes in.
        const __SHARED_ASSET: $crate::csi::shared::SharedAsset = $crate::csi::shared::$shared;
        const __SHARED_ASSET_PREFIXES: $crate::csi::shared::Prefixes = $prefixes;
        const __SHARED_ASSET_LEN: usize =
            $crate::csi::shared::filled_len(__SHARED_ASSET.template, &__SHARED_ASSET_PREFIXES);
        const __SHARED_ASSET_BYTES: [u8; __SHARED_ASSET_LEN] =
            $crate::csi::shared::filled::<__SHARED_ASSET_LEN>(
                __SHARED_ASSET.template,
                &__SHARED_ASSET_PREFIXES,
            );
        $crate::assets::Asset {
            name: __SHARED_ASSET.name,
            content: $crate::csi::shared::as_str(&__SHARED_ASSET_BYTES),
            requires_crd: None,
        }
    }};
}

/// A driver's list of assets, in order, as a `&[Asset]`: each `NAME` is the shared asset of
/// that name filled with the driver's prefixes ([`shared_asset!`](crate::shared_asset)), each
/// `"file.yaml"` the driver's own file ([`asset!`](crate::asset)), and `"file.yaml" => CRD`
/// its own file for a kind that `CRD` serves:
///
/// ```ignore
/// pub const GUEST_STATIC: &[Asset] = asset_list![PREFIXES;
///     KUBE_RBAC_PROXY_ROLE, PRIVILEGED_ROLE, "secret_reader_role.yaml",
///     KUBE_RBAC_PROXY_BINDING, "servicemonitor.yaml" => SERVICE_MONITOR_CRD,
/// ];
/// ```
#[macro_export]
macro_rules! asset_list {
    ($prefixes:expr; $($items:tt)*) => {
        $crate::asset_list!(@list $prefixes; []; $($items)*)
    };
    (@list $p:expr; [$($done:expr),*]; ) => {
        &[$($done),*]
    };
    (@list $p:expr; [$($done:expr),*]; $file:literal => $crd:expr $(, $($rest:tt)*)?) => {
        $crate::asset_list!(@list $p; [$($done,)* $crate::asset!($file, crd = $crd)]; $($($rest)*)?)
    };
    (@list $p:expr; [$($done:expr),*]; $file:literal $(, $($rest:tt)*)?) => {
        $crate::asset_list!(@list $p; [$($done,)* $crate::asset!($file)]; $($($rest)*)?)
    };
    (@list $p:expr; [$($done:expr),*]; $shared:ident $(, $($rest:tt)*)?) => {
        $crate::asset_list!(@list $p; [$($done,)* $crate::shared_asset!($p, $shared)]; $($($rest)*)?)
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assets::{Asset, Replacements, placeholders};

    const SMB: Prefixes = Prefixes {
        asset: "smb-csi-driver",
        short: "smb",
    };
    /// The name drivers give theirs, which the macro's own items must not shadow.
    const PREFIXES: Prefixes = SMB;

    #[test]
    fn fills_both_prefixes_and_keeps_run_time_placeholders() {
        let t = "a: ${ASSET_PREFIX}-controller-sa\nb: ${ASSET_SHORT_PREFIX}-role\n\
                 ns: ${NAMESPACE} $(ENV) ${lower} ü\n";
        let out = fill(t, &SMB).unwrap();
        assert_eq!(
            out,
            "a: smb-csi-driver-controller-sa\nb: smb-role\nns: ${NAMESPACE} $(ENV) ${lower} ü\n"
        );
        assert_eq!(fill_into(t, &SMB, &mut []), Ok(out.len()));
        assert_eq!(fill("", &SMB).unwrap(), "");
        assert_eq!(fill("${ASSET_PREFIX}", &SMB).unwrap(), "smb-csi-driver");
    }

    #[test]
    fn an_unknown_asset_placeholder_is_an_error() {
        for t in ["${ASSET_PREFX}", "x ${ASSET_} y", "${ASSET_SHORT_PREFIX_2}"] {
            assert_eq!(
                fill(t, &SMB),
                Err(FillError::UnknownAssetPlaceholder),
                "{t}"
            );
        }
        let msg = FillError::UnknownAssetPlaceholder.to_string();
        assert!(
            msg.contains("${ASSET_PREFIX}") && msg.contains("spelling"),
            "{msg}"
        );
        // Not placeholders by the kit's grammar, so not ours to judge.
        assert_eq!(fill("${ASSET_PREFIX", &SMB).unwrap(), "${ASSET_PREFIX");
    }

    #[test]
    fn prefixes_must_be_dns_labels() {
        let long: &'static str = Box::leak("a".repeat(MAX_PREFIX_LEN + 1).into_boxed_str());
        let ok: &'static str = Box::leak("a".repeat(MAX_PREFIX_LEN).into_boxed_str());
        for bad in ["", "-smb", "smb-", "SMB", "s_mb", "s.mb", "smb ${X}", long] {
            for p in [
                Prefixes {
                    asset: bad,
                    short: "smb",
                },
                Prefixes {
                    asset: "smb-csi-driver",
                    short: bad,
                },
            ] {
                assert_eq!(p.check(), Err(FillError::BadPrefix), "{bad:?}");
                assert_eq!(fill("x", &p), Err(FillError::BadPrefix), "{bad:?}");
            }
        }
        for good in ["a", "smb", "openstack-cinder-csi-driver", "a1-2b", ok] {
            let p = Prefixes {
                asset: good,
                short: good,
            };
            assert_eq!(p.check(), Ok(()), "{good:?}");
        }
        assert!(FillError::BadPrefix.to_string().contains("DNS label"));
    }

    #[test]
    fn a_wrong_buffer_is_an_error() {
        let mut short = [0u8; 3];
        assert_eq!(
            fill_into("${ASSET_SHORT_PREFIX}-x", &SMB, &mut short),
            Err(FillError::Length)
        );
        let mut long = [0u8; 10];
        assert_eq!(
            fill_into("${ASSET_SHORT_PREFIX}-x", &SMB, &mut long),
            Err(FillError::Length)
        );
    }

    /// The macro gives the same text as the run-time fill, with the shared file's name.
    #[test]
    fn the_macro_fills_at_compile_time() {
        const ROLE: Asset = crate::shared_asset!(PREFIXES, KUBE_RBAC_PROXY_ROLE);
        assert_eq!(ROLE.name, "kube_rbac_proxy_role.yaml");
        assert_eq!(ROLE.requires_crd, None);
        assert_eq!(
            ROLE.content,
            fill(KUBE_RBAC_PROXY_ROLE.template, &SMB).unwrap()
        );
        assert!(ROLE.content.contains("name: smb-kube-rbac-proxy-role\n"));
    }

    /// Every shared file: its own name once, only the two prefixes and the kit's run-time
    /// placeholders, one object whose names all carry a prefix, the same filled for any driver.
    #[test]
    fn every_shared_asset_is_one_object_named_by_the_prefixes() {
        let mut names = std::collections::BTreeSet::new();
        for shared in ALL {
            assert!(names.insert(shared.name), "{} listed twice", shared.name);
            let path = format!("{}/assets/csi/{}", env!("CARGO_MANIFEST_DIR"), shared.name);
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                shared.template,
                "{path}"
            );
            let used = placeholders(shared.template);
            assert!(
                used.iter()
                    .any(|p| PREFIX_PLACEHOLDERS.contains(&p.as_str())),
                "{} has no prefix: it would be the same object for every driver",
                shared.name
            );
            let filled = fill(shared.template, &SMB).unwrap();
            let asset = Asset {
                name: shared.name,
                content: Box::leak(filled.into_boxed_str()),
                requires_crd: None,
            };
            assert_eq!(
                asset.unknown_placeholders(),
                Vec::<String>::new(),
                "{}",
                shared.name
            );
            let v: serde_json::Value = asset
                .render_object(&Replacements::examples("smb-ns"))
                .unwrap_or_else(|e| panic!("{e}"));
            let name = v["metadata"]["name"].as_str().unwrap();
            assert!(name.starts_with("smb-"), "{}: {name}", shared.name);
            for subject in v["subjects"].as_array().into_iter().flatten() {
                let sa = subject["name"].as_str().unwrap();
                assert!(
                    sa.starts_with("smb-csi-driver-") || sa == "prometheus-k8s",
                    "{}: subject {sa}",
                    shared.name
                );
            }
        }
        // Every file in the directory is listed.
        let dir = format!("{}/assets/csi", env!("CARGO_MANIFEST_DIR"));
        let on_disk: std::collections::BTreeSet<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let listed: std::collections::BTreeSet<String> =
            names.iter().map(|n| n.to_string()).collect();
        assert_eq!(on_disk, listed);
    }

    /// A shared file embedded without its prefixes fails to render, and says how to fix it.
    #[test]
    fn an_unfilled_prefix_fails_the_render_with_a_hint() {
        let raw = Asset {
            name: "node_sa.yaml",
            content: NODE_SA.template,
            requires_crd: None,
        };
        assert_eq!(raw.unknown_placeholders(), ["ASSET_PREFIX"]);
        let err = raw
            .render(&Replacements::examples("ns"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("${ASSET_PREFIX}") && err.contains("shared_asset!"),
            "{err}"
        );
    }
}
