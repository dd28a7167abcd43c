//! The objects the CSO applies for each driver operator (anchors §3.3): its ServiceAccount,
//! Roles and RoleBindings, ClusterRole and ClusterRoleBinding, metrics Service, operator config
//! ConfigMap (with the APIServer TLS profile) and Deployment, plus the `ClusterCSIDriver` the
//! CSO creates once ([`cluster_csi_driver`]).
//!
//! The YAML lives in `assets/<driver>/` with `${PLACEHOLDER}`s; the image placeholders are
//! filled from the CSO's own environment (passed in as a map) through the registry's
//! [`ImageVar`](crate::registry::ImageVar)s, `${LOG_LEVEL}` from `Storage.spec.logLevel`, and the
//! Deployment then goes through operator-kit's proxy and control-plane hooks.
//!
//! What this module must not do: read the environment, a file or the API, or apply anything.
//! It is `facts in, objects out`; the CSO's steps read the facts from their caches and apply.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use openshift_api::common::{LogLevel as ApiLogLevel, ManagementState};
use openshift_api::operator::{ClusterCSIDriver, ClusterCSIDriverSpec};
use operator_kit::assets::{self, Asset, AssetError, Replacements};
use operator_kit::desired::{self, Desired};
use operator_kit::hooks::{self, TopologyMode};
use operator_kit::loglevel::LogLevel;
use operator_kit::observed_config::ServingInfo;

use crate::registry::Driver;

/// The env var (of the CSO, and of the operator it starts) carrying the release version.
pub const OPERATOR_IMAGE_VERSION_ENV: &str = "OPERATOR_IMAGE_VERSION";

/// The key of the operator config ConfigMap that holds the `GenericOperatorConfig`.
pub const OPERATOR_CONFIG_KEY: &str = "config.yaml";

pub use crate::registry::DriverAssets;

/// The assets of a registered driver ([`Driver::assets`]); `Option` so that callers handle a
/// driver registered without assets as an error rather than a panic.
pub fn assets_for(driver: &Driver) -> Option<&'static DriverAssets> {
    Some(driver.assets)
}

/// What is wrong when the objects cannot be built. Messages say what to fix.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The CSO's environment lacks an image the operator Deployment needs.
    #[error(
        "cannot build the {driver} operator Deployment: the environment variable {env} of the \
         cluster-storage-operator is unset or empty; set it to the image reference for \
         {placeholder} (its Deployment in openshift-cluster-storage-operator lists every image)"
    )]
    MissingImage {
        /// Registry name of the driver.
        driver: &'static str,
        /// The CSO env var.
        env: &'static str,
        /// The placeholder it fills, e.g. `${OPERATOR_IMAGE}`.
        placeholder: &'static str,
    },
    /// The CSO's environment lacks `OPERATOR_IMAGE_VERSION`.
    #[error(
        "cannot build the {driver} operator Deployment: the environment variable \
         OPERATOR_IMAGE_VERSION of the cluster-storage-operator is unset or empty; set it to the \
         release version (e.g. 4.20.0)"
    )]
    MissingVersion {
        /// Registry name of the driver.
        driver: &'static str,
    },
    /// The driver is registered but this crate has no assets for it.
    #[error("the driver operator {0} has no assets in the cluster-storage crate; add assets/{0}/")]
    NoAssets(&'static str),
    /// An asset does not render or parse (a bug in the assets, caught by the tests).
    #[error(transparent)]
    Asset(#[from] AssetError),
    /// A built object does not convert to a desired object (a bug caught by the tests).
    #[error(transparent)]
    Desired(desired::BuildError),
    /// The hosted control plane's objects cannot be built ([`crate::hosted`]).
    #[error("cannot build the {driver} operator objects for the hosted control plane: {message}")]
    Hosted {
        /// Registry name of the driver.
        driver: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// The facts the per-driver objects depend on, read by the caller from its caches.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The CSO's own environment (image variables and `OPERATOR_IMAGE_VERSION`).
    pub env: BTreeMap<String, String>,
    /// `Storage/cluster` `spec.logLevel`; drives the operator's `-v=`.
    pub log_level: ApiLogLevel,
    /// The cluster proxy as env vars (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`), from
    /// `Storage.spec.observedConfig` `targetconfig.proxy`; empty for none.
    pub proxy: BTreeMap<String, String>,
    /// The APIServer TLS profile for the operator's serving endpoint.
    pub serving: ServingInfo,
    /// `Infrastructure.status.controlPlaneTopology`.
    pub topology: TopologyMode,
}

/// No environment, `Normal`, no proxy, the Intermediate profile, `HighlyAvailable`.
impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            env: BTreeMap::new(),
            log_level: ApiLogLevel::Normal,
            proxy: BTreeMap::new(),
            serving: ServingInfo::intermediate(),
            topology: TopologyMode::HighlyAvailable,
        }
    }
}

/// Everything the CSO applies for one driver operator, apart from the ClusterCSIDriver.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorObjects {
    /// The driver's Namespace (Manila's `openshift-manila-csi-driver`), if it has its own.
    pub namespace: Option<Namespace>,
    /// The operator's ServiceAccount.
    pub service_account: ServiceAccount,
    /// One Role per namespace the operator uses.
    pub roles: Vec<Role>,
    /// One RoleBinding per Role.
    pub role_bindings: Vec<RoleBinding>,
    /// `<operator>-clusterrole`.
    pub cluster_role: ClusterRole,
    /// `<operator>-clusterrolebinding`.
    pub cluster_role_binding: ClusterRoleBinding,
    /// `<operator>-metrics`.
    pub metrics_service: Service,
    /// `<operator>-config`, with `config.yaml`.
    pub config_map: ConfigMap,
    /// The operator Deployment.
    pub deployment: Deployment,
}

/// klog verbosity for `${LOG_LEVEL}`: Normal 2, Debug 4, Trace 6, TraceAll 8; `""` and unknown
/// values 2 (library-go `LogLevelToVerbosity`).
pub fn verbosity(level: &ApiLogLevel) -> u8 {
    LogLevel::parse(level.as_str()).level.verbosity()
}

/// The placeholder values for `driver`'s assets: every image the registry maps (an unset one is
/// left out; [`operator_objects`] reports it when an asset uses it), `${OPERATOR_IMAGE_VERSION}`
/// and `${LOG_LEVEL}`.
pub fn replacements(driver: &Driver, inputs: &Inputs) -> Replacements {
    let mut repl = Replacements::new();
    for var in driver.all_image_vars() {
        if let Some(value) = inputs.env.get(var.cso_env).filter(|v| !v.is_empty()) {
            repl.set(placeholder_name(var.placeholder), value.clone());
        }
    }
    if let Some(v) = inputs
        .env
        .get(OPERATOR_IMAGE_VERSION_ENV)
        .filter(|v| !v.is_empty())
    {
        repl.set(OPERATOR_IMAGE_VERSION_ENV, v.clone());
    }
    repl.set("LOG_LEVEL", verbosity(&inputs.log_level).to_string());
    repl
}

/// `${NAME}` → `NAME`.
fn placeholder_name(placeholder: &str) -> &str {
    placeholder
        .strip_prefix("${")
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(placeholder)
}

/// Fails with a message naming the CSO env var for the first placeholder of `asset` that is an
/// image (or the version) and has no value.
fn check_images(driver: &Driver, asset: &Asset, repl: &Replacements) -> Result<(), BuildError> {
    for name in assets::placeholders(asset.content) {
        if repl.get(&name).is_some() {
            continue;
        }
        if name == OPERATOR_IMAGE_VERSION_ENV {
            return Err(BuildError::MissingVersion {
                driver: driver.name,
            });
        }
        if let Some(var) = driver
            .all_image_vars()
            .find(|v| placeholder_name(v.placeholder) == name)
        {
            return Err(BuildError::MissingImage {
                driver: driver.name,
                env: var.cso_env,
                placeholder: var.placeholder,
            });
        }
    }
    Ok(())
}

/// The `GenericOperatorConfig` the CSO writes into `<operator>-config` (`config.yaml`), with
/// `servingInfo.minTLSVersion` and `servingInfo.cipherSuites` from the APIServer profile.
pub fn operator_config_yaml(serving: &ServingInfo) -> Result<String, BuildError> {
    let config = serde_json::json!({
        "apiVersion": "operator.openshift.io/v1alpha1",
        "kind": "GenericOperatorConfig",
        "servingInfo": {
            "cipherSuites": serving.cipher_suites,
            "minTLSVersion": serving.min_tls_version_arg(),
        },
    });
    Ok(assets::to_yaml(&config)?)
}

/// The objects the CSO applies for `driver`'s operator (anchors §3.3).
pub fn operator_objects(driver: &Driver, inputs: &Inputs) -> Result<OperatorObjects, BuildError> {
    let a = assets_for(driver).ok_or(BuildError::NoAssets(driver.name))?;
    let repl = replacements(driver, inputs);
    for asset in a.all().into_iter().chain(a.namespace) {
        check_images(driver, &asset, &repl)?;
    }

    let mut config_map: ConfigMap = a.config_map.render_object(&repl)?;
    config_map.data.get_or_insert_with(BTreeMap::new).insert(
        OPERATOR_CONFIG_KEY.to_owned(),
        operator_config_yaml(&inputs.serving)?,
    );

    let mut deployment: Deployment = a.deployment.render_object(&repl)?;
    hooks::inject_proxy(&mut deployment, &inputs.proxy);
    hooks::control_plane_topology(&mut deployment, &inputs.topology);

    Ok(OperatorObjects {
        namespace: a.namespace.map(|n| n.render_object(&repl)).transpose()?,
        service_account: a.service_account.render_object(&repl)?,
        roles: assets::parse_documents(a.roles.name, &a.roles.render(&repl)?)?,
        role_bindings: assets::parse_documents(
            a.role_bindings.name,
            &a.role_bindings.render(&repl)?,
        )?,
        cluster_role: a.cluster_role.render_object(&repl)?,
        cluster_role_binding: a.cluster_role_binding.render_object(&repl)?,
        metrics_service: a.metrics_service.render_object(&repl)?,
        config_map,
        deployment,
    })
}

/// The asset names of a driver for condition messages; a driver without assets cannot have
/// built objects, so the fallback only keeps this total.
fn asset_names(driver: &Driver) -> [&'static str; 8] {
    match assets_for(driver) {
        Some(a) => a.all().map(|x| x.name),
        None => ["cluster-storage"; 8],
    }
}

impl OperatorObjects {
    /// Everything but the Deployment, in apply order (the CSO's static-resources step), each
    /// named after its asset for condition messages.
    pub fn static_desired(&self, driver: &Driver) -> Result<Vec<Desired>, desired::BuildError> {
        let [sa, roles, bindings, cr, crb, svc, cm, _] = asset_names(driver);
        let mut out = Vec::new();
        if let Some(ns) = &self.namespace {
            let name = assets_for(driver)
                .and_then(|a| a.namespace)
                .map_or("namespace", |a| a.name);
            out.push(desired::from_typed(name, None, ns)?);
        }
        out.push(desired::from_typed(sa, None, &self.service_account)?);
        for role in &self.roles {
            out.push(desired::from_typed(roles, None, role)?);
        }
        for binding in &self.role_bindings {
            out.push(desired::from_typed(bindings, None, binding)?);
        }
        out.push(desired::from_typed(cr, None, &self.cluster_role)?);
        out.push(desired::from_typed(crb, None, &self.cluster_role_binding)?);
        out.push(desired::from_typed(svc, None, &self.metrics_service)?);
        out.push(desired::from_typed(cm, None, &self.config_map)?);
        Ok(out)
    }

    /// The operator Deployment as a desired object.
    pub fn deployment_desired(&self, driver: &Driver) -> Result<Desired, desired::BuildError> {
        desired::from_typed(asset_names(driver)[7], None, &self.deployment)
    }
}

/// Namespace of the installer's cloud config (`cloud-provider-config`).
pub const CONFIG_NAMESPACE: &str = "openshift-config";

/// The ConfigMap the CA syncer copies (anchors §3.6).
pub const CLOUD_PROVIDER_CONFIG: &str = "cloud-provider-config";

/// The CA syncer's copy of `openshift-config/cloud-provider-config` in `namespace`: the whole
/// ConfigMap (`data` and `binaryData`), as library-go's resource syncer copies it, without the
/// source's labels, annotations or owner (they describe the source, not the copy).
pub fn cloud_ca_copy(source: &ConfigMap, namespace: &str) -> ConfigMap {
    ConfigMap {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(CLOUD_PROVIDER_CONFIG.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        immutable: None,
    }
}

/// The `ClusterCSIDriver` the CSO creates when it is missing (and never updates, so admin edits
/// persist): `managementState: Managed`, `logLevel` and `operatorLogLevel` both
/// `Storage.spec.logLevel`, `""` or an unknown value becoming `Normal` (a value the CRD would
/// reject must not block the creation).
pub fn cluster_csi_driver(driver: &Driver, storage_log_level: &ApiLogLevel) -> ClusterCSIDriver {
    let level = match storage_log_level.effective() {
        ApiLogLevel::Unknown(_) => ApiLogLevel::Normal,
        known => known,
    };
    ClusterCSIDriver::new(
        driver.cluster_csi_driver,
        ClusterCSIDriverSpec::new(ManagementState::Managed, level),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{CINDER, DRIVERS, MANILA, OPTIONAL_DRIVERS};
    use k8s_openapi::api::rbac::v1::PolicyRule;
    use std::path::Path;

    const UNION_ROLE: &str = "csi-driver-operator-union-role";

    /// A CSO environment with every image and the version set.
    fn full_env() -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            for v in d.all_image_vars() {
                env.insert(
                    v.cso_env.to_owned(),
                    format!("quay.io/test/{}:1", v.cso_env),
                );
            }
        }
        env.insert(OPERATOR_IMAGE_VERSION_ENV.to_owned(), "4.20.0".to_owned());
        env
    }

    fn inputs() -> Inputs {
        Inputs {
            env: full_env(),
            ..Inputs::default()
        }
    }

    fn build(driver: &Driver, inputs: &Inputs) -> OperatorObjects {
        operator_objects(driver, inputs).unwrap_or_else(|e| panic!("{}: {e}", driver.name))
    }

    fn container(o: &OperatorObjects) -> &k8s_openapi::api::core::v1::Container {
        &o.deployment
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
    }

    fn pod_spec(o: &OperatorObjects) -> &k8s_openapi::api::core::v1::PodSpec {
        o.deployment
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
    }

    /// Every object of the install manifests, as JSON.
    fn manifests() -> Vec<serde_json::Value> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.extend(assets::parse_values(&path.display().to_string(), &text).unwrap());
        }
        out
    }

    fn manifest_rules(kind: &str, namespace: Option<&str>, name: &str) -> Option<Vec<PolicyRule>> {
        manifests()
            .into_iter()
            .find(|m| {
                m["kind"] == kind
                    && m["metadata"]["name"] == name
                    && m["metadata"]["namespace"].as_str() == namespace
            })
            .map(|m| serde_json::from_value(m["rules"].clone()).unwrap())
    }

    /// Every (group, resource, verb, name) a rule grants; `None` name = any name.
    fn atoms(rule: &PolicyRule) -> Vec<(String, String, String, Option<String>)> {
        let names: Vec<Option<String>> = match &rule.resource_names {
            Some(n) if !n.is_empty() => n.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        let mut out = Vec::new();
        for g in rule.api_groups.iter().flatten() {
            for r in rule.resources.iter().flatten() {
                for v in &rule.verbs {
                    for n in &names {
                        out.push((g.clone(), r.clone(), v.clone(), n.clone()));
                    }
                }
            }
        }
        out
    }

    /// The atoms of `wanted` that no rule of `held` grants.
    fn not_covered(
        held: &[PolicyRule],
        wanted: &[PolicyRule],
    ) -> Vec<(String, String, String, Option<String>)> {
        let granted = |(g, r, v, n): &(String, String, String, Option<String>)| {
            held.iter().any(|h| {
                let has = |list: &Option<Vec<String>>, x: &str| {
                    list.iter().flatten().any(|i| i == x || i == "*")
                };
                has(&h.api_groups, g)
                    && has(&h.resources, r)
                    && h.verbs.iter().any(|hv| hv == v || hv == "*")
                    && match &h.resource_names {
                        Some(hn) if !hn.is_empty() => n.as_ref().is_some_and(|n| hn.contains(n)),
                        _ => true,
                    }
            })
        };
        wanted
            .iter()
            .flat_map(atoms)
            .filter(|a| !granted(a))
            .collect()
    }

    /// The Go CSO creates `openshift-manila-csi-driver` as the first static asset of the
    /// Manila operator (so only where Manila runs: OpenStack), with the PSA labels and node
    /// annotations; Cinder has no namespace of its own.
    #[test]
    fn the_manila_namespace_is_the_first_object_the_cso_applies_for_manila() {
        let o = build(&MANILA, &inputs());
        let statics = o.static_desired(&MANILA).expect("desired");
        let first = &statics[0];
        assert_eq!(first.resource.kind, "Namespace");
        assert_eq!(
            first.object.metadata.name.as_deref(),
            Some(MANILA.driver_namespace)
        );
        let labels = first.object.metadata.labels.clone().unwrap_or_default();
        for mode in ["enforce", "audit", "warn"] {
            assert_eq!(
                labels[&format!("pod-security.kubernetes.io/{mode}")],
                "privileged"
            );
        }
        let annotations = first
            .object
            .metadata
            .annotations
            .clone()
            .unwrap_or_default();
        assert_eq!(annotations["openshift.io/node-selector"], "");
        assert_eq!(annotations["workload.openshift.io/allowed"], "management");
        let cinder = build(&CINDER, &inputs())
            .static_desired(&CINDER)
            .expect("desired");
        assert!(cinder.iter().all(|d| d.resource.kind != "Namespace"));
        assert!(crate::registry::drivers_for(Some("AWS")).is_empty());
    }

    /// The Go assets' Deployment strategy (unset: RollingUpdate by default), no Deployment
    /// labels, and the metrics Service labelled `app: <operator>` (anchors §3.3), so a takeover
    /// from the Go CSO changes neither.
    #[test]
    fn deployment_strategy_and_service_labels_are_the_go_assets() {
        for driver in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let o = build(driver, &inputs());
            let spec = o.deployment.spec.as_ref().expect("spec");
            assert_eq!(
                spec.strategy,
                Some(Default::default()),
                "{}: strategy {{}}",
                driver.name
            );
            assert_eq!(o.deployment.metadata.labels, None, "{}", driver.name);
            let labels = o
                .metrics_service
                .metadata
                .labels
                .clone()
                .unwrap_or_default();
            assert_eq!(
                labels,
                BTreeMap::from([("app".to_string(), driver.operator_deployment.to_string())]),
                "{}",
                driver.name
            );
        }
    }

    #[test]
    fn every_asset_renders_with_no_placeholder_left() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let a = assets_for(d).unwrap();
            let repl = replacements(d, &inputs());
            for asset in a.all() {
                let out = asset.render(&repl).unwrap();
                assert!(
                    assets::placeholders(&out).is_empty(),
                    "{}: {:?}",
                    asset.name,
                    assets::placeholders(&out)
                );
                assert!(!out.contains("${"), "{}", asset.name);
                assert!(
                    !assets::parse_values(asset.name, &out).unwrap().is_empty(),
                    "{}",
                    asset.name
                );
            }
            build(d, &inputs());
        }
    }

    #[test]
    fn versions_and_images_that_look_like_numbers_stay_strings() {
        for version in ["0", "4.20", "4", "true"] {
            let mut env = full_env();
            env.insert(OPERATOR_IMAGE_VERSION_ENV.to_owned(), version.to_owned());
            env.insert("PROVISIONER_IMAGE".to_owned(), "1.5".to_owned());
            for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
                let o = operator_objects(
                    d,
                    &Inputs {
                        env: env.clone(),
                        ..Inputs::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{} with version {version}: {e}", d.name));
                let c = &o.deployment.spec.unwrap().template.spec.unwrap().containers[0];
                let value = |n: &str| {
                    c.env
                        .iter()
                        .flatten()
                        .find(|e| e.name == n)
                        .and_then(|e| e.value.clone())
                };
                assert_eq!(value("OPERATOR_IMAGE_VERSION").as_deref(), Some(version));
                assert_eq!(value("PROVISIONER_IMAGE").as_deref(), Some("1.5"));
            }
        }
    }

    #[test]
    fn desired_objects_cover_every_static_object_then_the_deployment() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let o = build(d, &inputs());
            let statics = o.static_desired(d).unwrap();
            let kinds: Vec<&str> = statics.iter().map(|x| x.resource.kind.as_str()).collect();
            // The driver's own Namespace (Manila) comes first, then the ServiceAccount.
            let own_ns = usize::from(o.namespace.is_some());
            assert_eq!(kinds.get(own_ns), Some(&"ServiceAccount"), "{}", d.name);
            assert_eq!(kinds.last(), Some(&"ConfigMap"), "{}", d.name);
            assert_eq!(
                statics.len(),
                own_ns + 5 + o.roles.len() + o.role_bindings.len(),
                "{}",
                d.name
            );
            assert!(!kinds.contains(&"Deployment"));
            let dep = o.deployment_desired(d).unwrap();
            assert_eq!(dep.resource.kind, "Deployment");
            assert_eq!(
                dep.object.metadata.name.as_deref(),
                Some(d.operator_deployment)
            );
        }
    }

    #[test]
    fn the_ca_copy_is_the_whole_config_map_in_the_target_namespace() {
        let source = ConfigMap {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(CLOUD_PROVIDER_CONFIG.into()),
                namespace: Some(CONFIG_NAMESPACE.into()),
                labels: Some(BTreeMap::from([("a".into(), "b".into())])),
                resource_version: Some("7".into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                ("config".into(), "[Global]\n".into()),
                ("ca-bundle.pem".into(), "PEM".into()),
            ])),
            binary_data: Some(BTreeMap::from([(
                "x".into(),
                k8s_openapi::ByteString(vec![0, 1]),
            )])),
            immutable: Some(true),
        };
        let copy = cloud_ca_copy(&source, "openshift-cluster-csi-drivers");
        assert_eq!(copy.metadata.name.as_deref(), Some("cloud-provider-config"));
        assert_eq!(
            copy.metadata.namespace.as_deref(),
            Some("openshift-cluster-csi-drivers")
        );
        assert_eq!(copy.data, source.data);
        assert_eq!(copy.binary_data, source.binary_data);
        assert!(copy.metadata.labels.is_none() && copy.metadata.resource_version.is_none());
        assert!(copy.immutable.is_none(), "the copy must stay updatable");
    }

    #[test]
    fn names_and_namespaces_are_openshifts() {
        for d in DRIVERS {
            let o = build(d, &inputs());
            let op = d.operator_deployment;
            let ns = d.operator_namespace;
            let meta = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
                (m.name.clone().unwrap(), m.namespace.clone())
            };
            assert_eq!(
                meta(&o.service_account.metadata),
                (op.to_owned(), Some(ns.into()))
            );
            assert_eq!(
                meta(&o.deployment.metadata),
                (op.to_owned(), Some(ns.into()))
            );
            assert_eq!(
                meta(&o.metrics_service.metadata),
                (format!("{op}-metrics"), Some(ns.into()))
            );
            assert_eq!(
                meta(&o.config_map.metadata),
                (format!("{op}-config"), Some(ns.into()))
            );
            assert_eq!(
                meta(&o.cluster_role.metadata),
                (format!("{op}-clusterrole"), None)
            );
            assert_eq!(
                meta(&o.cluster_role_binding.metadata),
                (format!("{op}-clusterrolebinding"), None)
            );
            let crb = &o.cluster_role_binding;
            assert_eq!(crb.role_ref.name, format!("{op}-clusterrole"));
            assert_eq!(crb.role_ref.kind, "ClusterRole");
            // The registry's related objects are exactly what is built.
            for r in d.related_objects {
                let found = match r.resource {
                    "serviceaccounts" => o.service_account.metadata.name.as_deref() == Some(r.name),
                    "roles" => o.roles.iter().any(|x| {
                        x.metadata.name.as_deref() == Some(r.name)
                            && x.metadata.namespace.as_deref() == Some(r.namespace)
                    }),
                    "rolebindings" => o.role_bindings.iter().any(|x| {
                        x.metadata.name.as_deref() == Some(r.name)
                            && x.metadata.namespace.as_deref() == Some(r.namespace)
                    }),
                    "clusterroles" => o.cluster_role.metadata.name.as_deref() == Some(r.name),
                    "clusterrolebindings" => {
                        o.cluster_role_binding.metadata.name.as_deref() == Some(r.name)
                    }
                    _ => continue,
                };
                assert!(found, "{}: related object {r:?} is not built", d.name);
            }
            // One binding per Role, same namespace and name, for the operator's account.
            assert_eq!(o.roles.len(), o.role_bindings.len());
            for (role, binding) in o.roles.iter().zip(&o.role_bindings) {
                assert_eq!(role.metadata.namespace, binding.metadata.namespace);
                assert_eq!(role.metadata.name.as_deref(), Some(&*format!("{op}-role")));
                assert_eq!(
                    binding.metadata.name.as_deref(),
                    Some(&*format!("{op}-rolebinding"))
                );
                assert_eq!(binding.role_ref.kind, "Role");
                assert_eq!(Some(&binding.role_ref.name), role.metadata.name.as_ref());
            }
            for subjects in o
                .role_bindings
                .iter()
                .map(|b| &b.subjects)
                .chain([&crb.subjects])
            {
                let s = &subjects.as_ref().unwrap()[..];
                assert_eq!(s.len(), 1);
                assert_eq!(
                    (
                        s[0].kind.as_str(),
                        s[0].name.as_str(),
                        s[0].namespace.as_deref()
                    ),
                    ("ServiceAccount", op, Some(ns))
                );
            }
            assert_eq!(
                pod_spec(&o).service_account_name.as_deref(),
                Some(op),
                "{}",
                d.name
            );
        }
    }

    #[test]
    fn deployment_matches_the_anchors() {
        for (d, subcommand, extra_env, ca_mount) in [
            (
                &CINDER,
                "openstack-cinder",
                &[][..],
                "/etc/kubernetes/static-pod-resources/configmaps/cloud-config",
            ),
            (
                &MANILA,
                "openstack-manila",
                &["NFS_DRIVER_IMAGE"][..],
                "/etc/openstack-ca",
            ),
        ] {
            let o = build(d, &inputs());
            let op = d.operator_deployment;
            let spec = o.deployment.spec.as_ref().unwrap();
            assert_eq!(spec.replicas, Some(1));
            let annotations = o.deployment.metadata.annotations.as_ref().unwrap();
            assert_eq!(annotations[hooks::INJECT_PROXY_ANNOTATION], op);
            let tmeta = spec.template.metadata.as_ref().unwrap();
            let labels = tmeta.labels.as_ref().unwrap();
            for policy in ["all-egress", "api-server", "dns", "operator-metrics-range"] {
                assert_eq!(
                    labels[&format!("openshift.storage.network-policy.{policy}")],
                    "allow"
                );
            }
            let pod_annotations = tmeta.annotations.as_ref().unwrap();
            assert_eq!(
                pod_annotations["openshift.io/required-scc"],
                "restricted-v2"
            );
            assert_eq!(
                pod_annotations["target.workload.openshift.io/management"],
                r#"{"effect": "PreferredDuringScheduling"}"#
            );
            let pod = pod_spec(&o);
            assert_eq!(
                pod.node_selector.as_ref().unwrap()["node-role.kubernetes.io/master"],
                ""
            );
            assert_eq!(
                pod.priority_class_name.as_deref(),
                Some("system-cluster-critical")
            );
            let tolerations: Vec<_> = pod
                .tolerations
                .iter()
                .flatten()
                .map(|t| (t.key.as_deref(), t.operator.as_deref(), t.effect.as_deref()))
                .collect();
            assert_eq!(
                tolerations,
                [
                    (Some("CriticalAddonsOnly"), Some("Exists"), None),
                    (
                        Some("node-role.kubernetes.io/master"),
                        Some("Exists"),
                        Some("NoSchedule")
                    )
                ]
            );
            let psc = pod.security_context.as_ref().unwrap();
            assert_eq!(psc.run_as_non_root, Some(true));
            assert_eq!(
                psc.seccomp_profile.as_ref().unwrap().type_,
                "RuntimeDefault"
            );

            let c = container(&o);
            assert_eq!(c.name, op);
            let image_env = d.image_vars[0].cso_env;
            assert_eq!(
                c.image.as_deref(),
                Some(&*format!("quay.io/test/{image_env}:1"))
            );
            assert_eq!(
                c.command.as_deref().unwrap(),
                ["csi-operator", subcommand, "start"]
            );
            assert!(c.args.as_ref().unwrap().contains(&"-v=2".to_owned()));
            let req = c.resources.as_ref().unwrap();
            assert!(req.limits.is_none(), "no limits anywhere (anchors §6.1)");
            let requests = req.requests.as_ref().unwrap();
            assert_eq!(requests["cpu"].0, "10m");
            assert_eq!(requests["memory"].0, "50Mi");
            let sc = c.security_context.as_ref().unwrap();
            assert_eq!(sc.read_only_root_filesystem, Some(true));
            assert_eq!(sc.allow_privilege_escalation, Some(false));
            assert_eq!(
                sc.capabilities.as_ref().unwrap().drop.as_deref().unwrap(),
                ["ALL"]
            );
            let port = &c.ports.as_ref().unwrap()[0];
            assert_eq!(
                (port.name.as_deref(), port.container_port),
                (Some("metrics"), 8443)
            );

            // The env vars the operator reads, from the CSO's environment.
            let env: BTreeMap<_, _> = c
                .env
                .iter()
                .flatten()
                .map(|e| (e.name.as_str(), e))
                .collect();
            let mut want = vec![
                "DRIVER_IMAGE",
                "PROVISIONER_IMAGE",
                "ATTACHER_IMAGE",
                "RESIZER_IMAGE",
                "SNAPSHOTTER_IMAGE",
                "NODE_DRIVER_REGISTRAR_IMAGE",
                "LIVENESS_PROBE_IMAGE",
                "KUBE_RBAC_PROXY_IMAGE",
                "OPERATOR_IMAGE_VERSION",
                "POD_NAME",
            ];
            want.extend(extra_env);
            want.sort_unstable();
            assert_eq!(env.keys().copied().collect::<Vec<_>>(), want, "{}", d.name);
            assert_eq!(
                env["DRIVER_IMAGE"].value.as_deref(),
                Some(&*format!("quay.io/test/{}:1", d.image_vars[1].cso_env))
            );
            assert_eq!(
                env["PROVISIONER_IMAGE"].value.as_deref(),
                Some("quay.io/test/PROVISIONER_IMAGE:1")
            );
            assert_eq!(
                env["OPERATOR_IMAGE_VERSION"].value.as_deref(),
                Some("4.20.0")
            );
            assert_eq!(
                env["POD_NAME"]
                    .value_from
                    .as_ref()
                    .unwrap()
                    .field_ref
                    .as_ref()
                    .unwrap()
                    .field_path,
                "metadata.name"
            );

            // Volumes (anchors §3.3).
            let volumes: BTreeMap<_, _> = pod
                .volumes
                .iter()
                .flatten()
                .map(|v| (v.name.as_str(), v))
                .collect();
            let creds = volumes["cloud-credentials"].projected.as_ref().unwrap();
            for source in creds.sources.iter().flatten() {
                assert_eq!(
                    source.secret.as_ref().unwrap().name,
                    "openstack-cloud-credentials"
                );
            }
            let legacy = volumes["legacy-cacert"].config_map.as_ref().unwrap();
            assert_eq!(legacy.name, "cloud-provider-config");
            assert_eq!(legacy.optional, Some(true));
            assert_eq!(
                volumes["tmp"].empty_dir.as_ref().unwrap().medium.as_deref(),
                Some("Memory")
            );
            assert_eq!(
                volumes["operator-config"].config_map.as_ref().unwrap().name,
                format!("{op}-config")
            );
            let mounts: BTreeMap<_, _> = c
                .volume_mounts
                .iter()
                .flatten()
                .map(|m| (m.name.as_str(), m.mount_path.as_str()))
                .collect();
            assert_eq!(mounts["cloud-credentials"], "/etc/openstack");
            assert_eq!(mounts["legacy-cacert"], ca_mount);

            // Metrics Service 443 → 8443 with a service-ca serving cert.
            let svc = &o.metrics_service;
            assert_eq!(
                svc.metadata.annotations.as_ref().unwrap()["service.beta.openshift.io/serving-cert-secret-name"],
                format!("{op}-serving-cert")
            );
            let sp = &svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
            assert_eq!((sp.name.as_deref(), sp.port), (Some("https"), 443));
            assert_eq!(
                sp.target_port,
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8443))
            );
            // The Service selects the Deployment's pods.
            let selector = svc.spec.as_ref().unwrap().selector.as_ref().unwrap();
            for (k, v) in selector {
                assert_eq!(labels.get(k), Some(v));
            }
        }
    }

    #[test]
    fn operator_config_carries_the_apiserver_tls_profile() {
        let serving = ServingInfo {
            min_tls_version: "VersionTLS13".into(),
            cipher_suites: vec![
                "TLS_AES_128_GCM_SHA256".into(),
                "TLS_AES_256_GCM_SHA384".into(),
            ],
        };
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let o = build(
                d,
                &Inputs {
                    serving: serving.clone(),
                    ..inputs()
                },
            );
            let text = &o.config_map.data.as_ref().unwrap()[OPERATOR_CONFIG_KEY];
            let config = &assets::parse_values("config.yaml", text).unwrap()[0];
            assert_eq!(config["kind"], "GenericOperatorConfig");
            assert_eq!(config["apiVersion"], "operator.openshift.io/v1alpha1");
            assert_eq!(config["servingInfo"]["minTLSVersion"], "VersionTLS13");
            assert_eq!(
                config["servingInfo"]["cipherSuites"],
                serde_json::json!(["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"])
            );
        }
        // An empty version falls back to library-go's default.
        let empty = ServingInfo {
            min_tls_version: String::new(),
            cipher_suites: vec![],
        };
        let text = operator_config_yaml(&empty).unwrap();
        let config = &assets::parse_values("config.yaml", &text).unwrap()[0];
        assert_eq!(config["servingInfo"]["minTLSVersion"], "VersionTLS12");
    }

    #[test]
    fn cluster_roles_are_subsets_of_the_union_role_and_grant_no_secrets() {
        let union = manifest_rules("ClusterRole", None, UNION_ROLE).expect("union role shipped");
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let o = build(d, &inputs());
            let rules = o.cluster_role.rules.clone().unwrap_or_default();
            assert!(!rules.is_empty());
            let missing = not_covered(&union, &rules);
            assert!(
                missing.is_empty(),
                "{}: the ClusterRole grants what {UNION_ROLE} does not: {missing:?}",
                d.name
            );
            for rule in &rules {
                assert!(
                    rule.resources
                        .iter()
                        .flatten()
                        .all(|r| r != "secrets" && r != "*"),
                    "{}: {rule:?}",
                    d.name
                );
                assert!(rule.verbs.iter().all(|v| v != "*"));
                assert!(rule.api_groups.iter().flatten().all(|g| g != "*"));
                assert!(rule.non_resource_urls.is_none());
            }
        }
        // The subset check itself catches a broader grant.
        let broad = PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".into()]),
            verbs: vec!["get".into()],
            ..PolicyRule::default()
        };
        assert_eq!(not_covered(&union, &[broad]).len(), 1);
        let unnamed_update = PolicyRule {
            api_groups: Some(vec!["rbac.authorization.k8s.io".into()]),
            resources: Some(vec!["clusterroles".into()]),
            verbs: vec!["update".into()],
            ..PolicyRule::default()
        };
        assert_eq!(not_covered(&union, &[unnamed_update]).len(), 1);
    }

    #[test]
    fn roles_are_subsets_of_what_the_cso_holds_in_each_namespace() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let o = build(d, &inputs());
            for role in &o.roles {
                let ns = role.metadata.namespace.as_deref().unwrap();
                let rules = role.rules.clone().unwrap_or_default();
                assert!(!rules.is_empty(), "{ns}");
                let held = manifest_rules("Role", Some(ns), "cluster-storage-operator")
                    .unwrap_or_default();
                let missing: Vec<_> = not_covered(&held, &rules).into_iter().collect();
                assert!(
                    missing.is_empty(),
                    "{}: Role in {ns} grants what the CSO does not hold there: {missing:?}",
                    d.name
                );
                for rule in &rules {
                    assert!(rule.verbs.iter().all(|v| v != "*"));
                    assert!(rule.resources.iter().flatten().all(|r| r != "*"));
                }
            }
            // Secrets only in the two driver namespaces.
            for role in &o.roles {
                let ns = role.metadata.namespace.as_deref().unwrap();
                let grants_secrets = role
                    .rules
                    .iter()
                    .flatten()
                    .any(|r| r.resources.iter().flatten().any(|x| x == "secrets"));
                assert!(
                    !grants_secrets
                        || ns == crate::registry::CSI_OPERATOR_NAMESPACE
                        || ns == d.driver_namespace,
                    "{}: Secrets in {ns}",
                    d.name
                );
            }
        }
        // Manila writes csi-manila-secrets in its driver namespace; Cinder writes no Secret.
        let can = |d: &Driver, ns: &str, verb: &str| {
            build(d, &inputs())
                .roles
                .iter()
                .filter(|r| r.metadata.namespace.as_deref() == Some(ns))
                .flat_map(|r| r.rules.clone().unwrap_or_default())
                .any(|r| {
                    r.resources.iter().flatten().any(|x| x == "secrets")
                        && r.verbs.iter().any(|v| v == verb)
                })
        };
        assert!(can(&CINDER, "openshift-cluster-csi-drivers", "watch"));
        assert!(!can(&CINDER, "openshift-cluster-csi-drivers", "create"));
        assert!(can(&MANILA, "openshift-cluster-csi-drivers", "watch"));
        assert!(!can(&MANILA, "openshift-cluster-csi-drivers", "update"));
        assert!(can(&MANILA, "openshift-manila-csi-driver", "create"));
    }

    #[test]
    fn external_control_plane_clears_the_node_selector() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            for (topology, cleared) in [
                (TopologyMode::External, true),
                (TopologyMode::HighlyAvailable, false),
                (TopologyMode::SingleReplica, false),
            ] {
                let o = build(
                    d,
                    &Inputs {
                        topology: topology.clone(),
                        ..inputs()
                    },
                );
                let selector = pod_spec(&o).node_selector.clone().unwrap_or_default();
                assert_eq!(selector.is_empty(), cleared, "{} {topology:?}", d.name);
                // Tolerations stay either way.
                assert_eq!(pod_spec(&o).tolerations.as_ref().unwrap().len(), 2);
            }
        }
    }

    #[test]
    fn log_level_maps_to_verbosity() {
        for (level, v) in [
            ("", "2"),
            ("Normal", "2"),
            ("Debug", "4"),
            ("Trace", "6"),
            ("TraceAll", "8"),
            ("Loud", "2"),
        ] {
            for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
                let o = build(
                    d,
                    &Inputs {
                        log_level: ApiLogLevel::parse(level),
                        ..inputs()
                    },
                );
                let args = container(&o).args.clone().unwrap();
                assert_eq!(args[0], format!("-v={v}"), "{level:?}");
                assert_eq!(args.iter().filter(|a| a.starts_with("-v=")).count(), 1);
            }
        }
    }

    #[test]
    fn missing_image_is_a_clear_error() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            for var in d.all_image_vars() {
                let used = assets_for(d)
                    .unwrap()
                    .all()
                    .iter()
                    .any(|a| a.content.contains(var.placeholder));
                for value in [None, Some("")] {
                    let mut i = inputs();
                    match value {
                        None => i.env.remove(var.cso_env),
                        Some(v) => i.env.insert(var.cso_env.to_owned(), v.to_owned()),
                    };
                    let result = operator_objects(d, &i);
                    if !used {
                        // TOOLS_IMAGE: known to the registry, not used by the operator pod.
                        assert!(result.is_ok(), "{}: {}", d.name, var.cso_env);
                        continue;
                    }
                    let err = result.unwrap_err();
                    assert!(
                        matches!(err, BuildError::MissingImage { env, .. } if env == var.cso_env),
                        "{err}"
                    );
                    let msg = err.to_string();
                    assert!(msg.contains(var.cso_env), "{msg}");
                    assert!(msg.contains(var.placeholder), "{msg}");
                    assert!(msg.contains("cluster-storage-operator"), "{msg}");
                }
            }
            let mut i = inputs();
            i.env.remove(OPERATOR_IMAGE_VERSION_ENV);
            let err = operator_objects(d, &i).unwrap_err();
            assert!(matches!(err, BuildError::MissingVersion { .. }), "{err}");
            assert!(err.to_string().contains("OPERATOR_IMAGE_VERSION"));
        }
        // The operator image of one driver does not satisfy the other.
        let mut i = inputs();
        i.env.remove("MANILA_DRIVER_OPERATOR_IMAGE");
        assert!(operator_objects(&CINDER, &i).is_ok());
        assert!(operator_objects(&MANILA, &i).is_err());
    }

    #[test]
    fn proxy_is_injected_into_the_operator_container() {
        let proxy = BTreeMap::from([
            ("HTTPS_PROXY".to_owned(), "http://proxy:3128".to_owned()),
            ("NO_PROXY".to_owned(), ".cluster.local".to_owned()),
        ]);
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            let o = build(
                d,
                &Inputs {
                    proxy: proxy.clone(),
                    ..inputs()
                },
            );
            let env: BTreeMap<_, _> = container(&o)
                .env
                .iter()
                .flatten()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect();
            assert_eq!(env["HTTPS_PROXY"].as_deref(), Some("http://proxy:3128"));
            assert_eq!(env["NO_PROXY"].as_deref(), Some(".cluster.local"));
            assert!(!env.contains_key("HTTP_PROXY"));
            let plain = build(d, &inputs());
            assert!(
                container(&plain)
                    .env
                    .iter()
                    .flatten()
                    .all(|e| !e.name.ends_with("PROXY"))
            );
        }
    }

    #[test]
    fn images_come_from_the_cso_environment() {
        let mut i = inputs();
        i.env.insert(
            "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE".into(),
            "registry/cinder-operator@sha256:1".into(),
        );
        i.env.insert(
            "PROVISIONER_IMAGE".into(),
            "registry/provisioner@sha256:2".into(),
        );
        let o = build(&CINDER, &i);
        assert_eq!(
            container(&o).image.as_deref(),
            Some("registry/cinder-operator@sha256:1")
        );
        let provisioner = container(&o)
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "PROVISIONER_IMAGE")
            .and_then(|e| e.value.clone());
        assert_eq!(
            provisioner.as_deref(),
            Some("registry/provisioner@sha256:2")
        );
        // Unrelated env vars are not used.
        let mut r = replacements(&CINDER, &i);
        assert_eq!(r.get("MANILA_DRIVER_IMAGE"), None);
        assert_eq!(r.get("NFS_DRIVER_IMAGE"), None);
        assert_eq!(r.get("LOG_LEVEL"), Some("2"));
        r.set("X", "y");
        assert_eq!(
            replacements(&MANILA, &i).get("NFS_DRIVER_IMAGE"),
            Some("quay.io/test/MANILA_NFS_DRIVER_IMAGE:1")
        );
    }

    #[test]
    fn cluster_csi_driver_takes_both_log_levels_from_storage() {
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            for (storage, want) in [
                (ApiLogLevel::Debug, ApiLogLevel::Debug),
                (ApiLogLevel::TraceAll, ApiLogLevel::TraceAll),
                (ApiLogLevel::Unset, ApiLogLevel::Normal),
                (ApiLogLevel::Unknown("Loud".into()), ApiLogLevel::Normal),
            ] {
                let cr = cluster_csi_driver(d, &storage);
                assert_eq!(cr.metadata.name.as_deref(), Some(d.cluster_csi_driver));
                assert_eq!(cr.metadata.namespace, None);
                let spec = &cr.spec.operator;
                assert_eq!(spec.management_state, Some(ManagementState::Managed));
                assert_eq!(spec.log_level.as_ref(), Some(&want));
                assert_eq!(spec.operator_log_level.as_ref(), Some(&want));
                assert!(cr.spec.driver_config.is_none());
                assert!(cr.status.is_none());
            }
        }
        let json = serde_json::to_value(cluster_csi_driver(&CINDER, &ApiLogLevel::Trace)).unwrap();
        assert_eq!(json["apiVersion"], "operator.openshift.io/v1");
        assert_eq!(json["kind"], "ClusterCSIDriver");
        assert_eq!(json["spec"]["logLevel"], "Trace");
        assert_eq!(json["spec"]["operatorLogLevel"], "Trace");
        assert_eq!(json["spec"]["managementState"], "Managed");
    }
}
