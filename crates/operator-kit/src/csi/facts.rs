//! [`Facts`]: what a driver's builders take. The kit's [`BaseFacts`] once, the objects every
//! driver's pods mount (read by the kit, with their guest copies when hosted), and the
//! driver's own fields `E`; plus the builders' common pieces: the `${NAME}` replacements, the
//! node side's namespace and inputs, and the hooks of the controller Deployment and the node
//! DaemonSet in the Go operators' order (anchors §4.1, §4.8).
//!
//! Its `Debug` shows the Secrets' names and keys only, never their values; a driver's `E`
//! must hold no Secret (or print it with [`crate::redact::RedactedSecret`]).

use std::ops::{Deref, DerefMut};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use super::BaseFacts;
use crate::assets::{Asset, Replacements};
use crate::cache::Cache;
use crate::desired::{self, BuildError, Desired};
use crate::hooks;
use crate::leader_timing::LeaderTiming;
use crate::redact::RedactedSecret;

/// The names of the objects a driver's pods mount from its namespace (and, hosted, from the
/// guest namespace too). Their hashes roll the pods; the kit reads them for [`Facts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mounts {
    /// The trusted CA bundle ConfigMap (the network operator injects `ca-bundle.crt`), if the
    /// driver's pods take one.
    pub trusted_ca_bundle: Option<&'static str>,
    /// The driver's cloud credentials Secret, if it has any (SMB has none).
    pub credentials: Option<&'static str>,
    /// The controller's metrics serving certificate Secret.
    pub metrics_cert: &'static str,
}

impl Mounts {
    /// What the operator must read in the guest namespace `guest` on a hosted control plane:
    /// the node plugins' copies of the trusted CA bundle and the credentials (their hashes roll
    /// the node DaemonSets). A driver adds whatever else it reads there.
    pub fn hosted_reads(&self, guest: &str) -> crate::hosted::HostedReads {
        let in_guest = |name: &str| (guest.to_string(), name.to_string());
        crate::hosted::HostedReads {
            config_maps: self.trusted_ca_bundle.map(in_guest).into_iter().collect(),
            secrets: self.credentials.map(in_guest).into_iter().collect(),
        }
    }
}

/// Everything a driver's desired objects depend on, gathered by the operator (or given to
/// `render`): the kit's [`BaseFacts`] (reached through `Deref`), the mounted objects as read
/// from the cache, and the driver's own fields in `driver`.
#[derive(Clone, Default)]
pub struct Facts<E> {
    pub base: BaseFacts,
    /// The live trusted CA bundle ConfigMap of the driver namespace.
    pub trusted_ca_bundle: Option<ConfigMap>,
    /// The driver's credentials Secret of the driver namespace.
    pub credentials: Option<Secret>,
    /// The metrics serving certificate Secret.
    pub metrics_cert: Option<Secret>,
    /// Hosted only: the trusted CA bundle ConfigMap of the guest namespace (the node
    /// DaemonSet's; standalone it is `trusted_ca_bundle`).
    pub node_trusted_ca_bundle: Option<ConfigMap>,
    /// Hosted only: the credentials Secret of the guest namespace (the node DaemonSet's;
    /// standalone it is `credentials`).
    pub node_credentials: Option<Secret>,
    /// What only this driver's builders need.
    pub driver: E,
}

impl<E> Deref for Facts<E> {
    type Target = BaseFacts;

    fn deref(&self) -> &BaseFacts {
        &self.base
    }
}

impl<E> DerefMut for Facts<E> {
    fn deref_mut(&mut self) -> &mut BaseFacts {
        &mut self.base
    }
}

impl<E: std::fmt::Debug> std::fmt::Debug for Facts<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured, so a new field cannot be added without deciding how it prints.
        let Facts {
            base,
            trusted_ca_bundle,
            credentials,
            metrics_cert,
            node_trusted_ca_bundle,
            node_credentials,
            driver,
        } = self;
        f.debug_struct("Facts")
            .field("base", base)
            .field("trusted_ca_bundle", trusted_ca_bundle)
            .field("credentials", &RedactedSecret(credentials))
            .field("metrics_cert", &RedactedSecret(metrics_cert))
            .field("node_trusted_ca_bundle", node_trusted_ca_bundle)
            .field("node_credentials", &RedactedSecret(node_credentials))
            .field("driver", driver)
            .finish()
    }
}

impl<E> Facts<E> {
    /// Facts with nothing mounted read (for `render`, tests and the watches' placeholders).
    pub fn new(base: BaseFacts, driver: E) -> Self {
        Self {
            base,
            trusted_ca_bundle: None,
            credentials: None,
            metrics_cert: None,
            node_trusted_ca_bundle: None,
            node_credentials: None,
            driver,
        }
    }

    /// Facts with the `mounts` read from the cache: in the driver namespace, and hosted also
    /// the node side's in the guest namespace.
    pub fn read(cache: &Cache, base: BaseFacts, mounts: &Mounts, driver: E) -> Self {
        let ns = base.namespace.as_str();
        let (node_trusted_ca_bundle, node_credentials) = match &base.hosted {
            Some(_) => {
                let node_ns = base.node_namespace.as_str();
                (
                    mounts
                        .trusted_ca_bundle
                        .and_then(|n| cache.config_map(node_ns, n)),
                    mounts.credentials.and_then(|n| cache.secret(node_ns, n)),
                )
            }
            None => (None, None),
        };
        Self {
            trusted_ca_bundle: mounts
                .trusted_ca_bundle
                .and_then(|n| cache.config_map(ns, n)),
            credentials: mounts.credentials.and_then(|n| cache.secret(ns, n)),
            metrics_cert: cache.secret(ns, mounts.metrics_cert),
            node_trusted_ca_bundle,
            node_credentials,
            ..Self::new(base, driver)
        }
    }

    /// The namespace of the guest-side objects: `node_namespace`, or `namespace` when unset.
    pub fn node_namespace(&self) -> &str {
        if self.base.node_namespace.is_empty() {
            &self.base.namespace
        } else {
            &self.base.node_namespace
        }
    }

    /// The node DaemonSets' trusted CA bundle and credentials: the guest namespace's when
    /// hosted, the one namespace's otherwise.
    pub fn node_inputs(&self) -> (Option<&ConfigMap>, Option<&Secret>) {
        if self.base.hosted.is_some() {
            (
                self.node_trusted_ca_bundle.as_ref(),
                self.node_credentials.as_ref(),
            )
        } else {
            (self.trusted_ca_bundle.as_ref(), self.credentials.as_ref())
        }
    }

    /// The `${NAME}` replacements every asset gets.
    pub fn replacements(&self) -> Replacements {
        Replacements::new()
            .images_from_env(&self.base.images)
            .namespaces(&self.base.namespace, self.node_namespace())
            .cluster_id(&self.base.cluster_id)
            .log_level(self.base.log_level)
            // Sidecars always use the HA timings, also on single-replica control planes (§1.5).
            .leader_election(&LeaderTiming::DEFAULT)
            .tls(&self.base.serving)
    }

    /// One static asset with the replacements.
    pub fn render(&self, asset: &Asset) -> Result<Desired, BuildError> {
        desired::from_asset(asset, &self.replacements())
    }

    /// The control-plane static objects of `assets` (ordered roles, bindings, the rest).
    /// Hosted: without `hosted_skips` (the hypershift set has no ServiceMonitor, for one), and
    /// the `controller_sa` asset's ServiceAccount pulls with the plane's pull secret.
    pub fn control_plane_static(
        &self,
        assets: &[Asset],
        hosted_skips: &[&str],
        controller_sa: &str,
    ) -> Result<Vec<Desired>, BuildError> {
        let hosted = self.base.hosted.is_some();
        assets
            .iter()
            .filter(|a| !(hosted && hosted_skips.contains(&a.name)))
            .map(|a| {
                let mut d = self.render(a)?;
                if hosted && a.name == controller_sa {
                    crate::hosted::hosted_service_account(&mut d.object);
                }
                Ok(d)
            })
            .collect()
    }

    /// The controller Deployment of `asset` with its hooks, in the Go operators' order.
    /// Hosted: the hypershift shape, then `reshape` (the driver's own edits of that shape),
    /// then the hypershift hooks in place of topology, proxy and replicas (anchors §4.8).
    /// Standalone: topology, plain Kubernetes' control-plane placement, proxy, replicas. Then
    /// the trusted CA bundle and the hashes of the credentials and the metrics certificate of
    /// `mounts`; a driver adds the hashes of its own inputs.
    pub fn controller_deployment(
        &self,
        asset: &Asset,
        mounts: &Mounts,
        reshape: impl FnOnce(&mut Deployment),
    ) -> Result<Deployment, BuildError> {
        let repl = self.replacements();
        let mut d: Deployment = asset.render_object(&repl)?;
        let base = &self.base;
        let ns = base.namespace.as_str();
        if let Some(hosted) = &base.hosted {
            // `${RELEASE_VERSION}` (`OPERATOR_IMAGE_VERSION`), or the replacer's error naming
            // the variable to set: a hosted controller carries it as its desired version.
            let version = crate::assets::render(asset.name, "${RELEASE_VERSION}", &repl)?;
            crate::hosted::hosted_controller_shape(&mut d, ns, &version);
            reshape(&mut d);
            crate::hosted::hosted_controller_hooks(&mut d, hosted, &base.images);
        } else {
            hooks::control_plane_topology(&mut d, &base.topology);
            if base.kubernetes {
                hooks::kubernetes_control_plane(&mut d);
            }
            hooks::inject_proxy(&mut d, &base.proxy);
            hooks::replicas(&mut d, &base.topology);
        }
        if let Some(name) = mounts.trusted_ca_bundle {
            hooks::inject_trusted_ca_bundle(&mut d, ns, name, self.trusted_ca_bundle.as_ref());
        }
        if let Some(name) = mounts.credentials {
            hooks::secret_hash_annotation(&mut d, ns, name, self.credentials.as_ref());
        }
        hooks::secret_hash_annotation(&mut d, ns, mounts.metrics_cert, self.metrics_cert.as_ref());
        Ok(d)
    }

    /// A node DaemonSet of `asset` with its hooks: the trusted CA bundle, proxy and the
    /// credentials hash of `mounts`, from the node side's namespace (the guest's when hosted).
    pub fn node_daemonset(&self, asset: &Asset, mounts: &Mounts) -> Result<DaemonSet, BuildError> {
        let mut ds: DaemonSet = asset.render_object(&self.replacements())?;
        let ns = self.node_namespace();
        let (ca_bundle, credentials) = self.node_inputs();
        if let Some(name) = mounts.trusted_ca_bundle {
            hooks::inject_trusted_ca_bundle(&mut ds, ns, name, ca_bundle);
        }
        hooks::inject_proxy(&mut ds, &self.base.proxy);
        if let Some(name) = mounts.credentials {
            hooks::secret_hash_annotation(&mut ds, ns, name, credentials);
        }
        Ok(ds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;
    use std::collections::BTreeMap;

    const MOUNTS: Mounts = Mounts {
        trusted_ca_bundle: Some("ca"),
        credentials: Some("creds"),
        metrics_cert: "metrics",
    };

    /// Hosted, the operator reads the node plugins' mounts in the guest namespace, and only
    /// those the driver has (SMB mounts no credentials and no CA bundle).
    #[test]
    fn hosted_reads_are_the_node_side_mounts_in_the_guest() {
        let reads = MOUNTS.hosted_reads("guest");
        let pair = |name: &str| ("guest".to_string(), name.to_string());
        assert_eq!(reads.config_maps, vec![pair("ca")]);
        assert_eq!(reads.secrets, vec![pair("creds")]);
        let bare = Mounts {
            trusted_ca_bundle: None,
            credentials: None,
            metrics_cert: "metrics",
        };
        assert_eq!(bare.hosted_reads("guest"), Default::default());
    }

    fn secret(name: &str, key: &str, value: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                // kubectl's copy of the whole object, values included.
                annotations: Some(BTreeMap::from([(
                    "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                    format!("{{\"stringData\":{{\"{key}\":\"{value}\"}}}}"),
                )])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                key.to_string(),
                ByteString(format!("password: {value}").into_bytes()),
            )])),
            string_data: Some(BTreeMap::from([("extra".to_string(), value.to_string())])),
            ..Default::default()
        }
    }

    /// Every Secret of the facts prints as names and keys; the planted value never shows,
    /// neither as text nor as the byte list `ByteString`'s own Debug would print.
    #[test]
    fn debug_shows_secret_names_and_keys_never_values() {
        let planted = "pl4nted-s3cret-value";
        let mut f = Facts::new(
            BaseFacts {
                cluster_id: "mycluster-x7k2p".into(),
                ..BaseFacts::default()
            },
            "own-field",
        );
        f.credentials = Some(secret("creds", "clouds.yaml", planted));
        f.metrics_cert = Some(secret("metrics", "tls.key", planted));
        f.node_credentials = Some(secret("node-creds", "clouds.yaml", planted));
        let bytes = format!("{:?}", planted.as_bytes());
        let bytes = bytes.trim_matches(|c| c == '[' || c == ']');
        for printed in [format!("{f:?}"), format!("{f:#?}")] {
            assert!(!printed.contains(planted), "{printed}");
            assert!(!printed.contains(bytes), "{printed}");
            for shown in [
                "creds",
                "node-creds",
                "clouds.yaml",
                "tls.key",
                "extra",
                "<redacted>",
                "mycluster-x7k2p",
                "own-field",
            ] {
                assert!(printed.contains(shown), "{shown} missing from {printed}");
            }
        }
    }

    /// Standalone, the node side uses the driver namespace's inputs; hosted, the guest's, and
    /// the guest namespace is the node namespace.
    #[test]
    fn the_node_side_reads_the_guest_namespace_only_when_hosted() {
        let mut f = Facts::new(
            BaseFacts {
                namespace: "cp".into(),
                ..BaseFacts::default()
            },
            (),
        );
        f.credentials = Some(secret("creds", "k", "cp"));
        f.node_credentials = Some(secret("creds", "k", "guest"));
        assert_eq!(f.node_namespace(), "cp", "empty means the one namespace");
        let node = |f: &Facts<()>| f.node_inputs().1.cloned();
        assert_eq!(node(&f), f.credentials);
        f.base.node_namespace = "guest".into();
        f.base.hosted = Some(crate::hosted::Hosted::default());
        assert_eq!(f.node_namespace(), "guest");
        assert_eq!(node(&f), f.node_credentials);
        assert_ne!(node(&f), f.credentials);
        // The node namespace reaches the assets as ${NODE_NAMESPACE}.
        let text = crate::assets::render("t", "${NAMESPACE}/${NODE_NAMESPACE}", &f.replacements())
            .expect("renders");
        assert_eq!(text, "cp/guest");
    }

    #[test]
    fn mounts_name_what_the_hooks_hash() {
        let asset = Asset {
            name: "node.yaml",
            content: "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: n\nspec:\n  selector: {}\n  template:\n    spec:\n      containers: []\n",
            requires_crd: None,
        };
        let mut f = Facts::new(
            BaseFacts {
                namespace: "ns".into(),
                ..BaseFacts::default()
            },
            (),
        );
        f.credentials = Some(secret("creds", "k", "v"));
        let ds = f.node_daemonset(&asset, &MOUNTS).expect("builds");
        let annotations = ds
            .spec
            .and_then(|s| s.template.metadata)
            .and_then(|m| m.annotations)
            .unwrap_or_default();
        let key = crate::hash::dependency_annotation_key(
            crate::hash::DependencyKind::Secret,
            "ns",
            "creds",
        );
        assert!(annotations.contains_key(&key), "{annotations:?}");
    }
}
