//! `csi-operator openstack-cinder start` and `csi-operator render openstack-cinder`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use cinder::build::{self, DriverFacts, Facts};
use cinder::operator::{self, Options};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::client::{Names, Shell};
use crate::duration::parse_duration;

#[derive(clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    process: crate::client::ProcessFlags,
    /// Namespace of the driver and of the operator's lease.
    #[arg(long, default_value = cinder::SPEC.driver_namespace)]
    namespace: String,
    /// How often to list OpenStack availability zones again to decide `enable_topology`
    /// (`0s`: only when the credentials change).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    topology_refresh: Duration,
    /// Where to serve Prometheus metrics (`/metrics`) and `/healthz`.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_listen: SocketAddr,
    #[command(flatten)]
    driver: crate::flags::DriverFlags,
    /// Take over the CSIDriver and the StorageClasses csi-cinder-sc-delete and
    /// csi-cinder-sc-retain that the upstream cinder-csi-plugin Helm chart installed as this
    /// release (`[NAMESPACE/]NAME`, namespace kube-system when omitted), keeping their
    /// immutable fields, and start the driver's controller and node plugin only once `helm
    /// uninstall` has removed the chart's; plain Kubernetes only, see docs/switch-from-helm.md.
    #[arg(long, value_name = "[NAMESPACE/]NAME")]
    adopt_helm_release: Option<cinder::helm_adoption::Release>,
}

/// The Cinder operator process's lease, component and metrics prefix.
const NAMES: Names = Names::of(&cinder::SPEC);

pub async fn start(
    args: StartArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let StartArgs {
        process,
        namespace,
        topology_refresh,
        metrics_listen,
        driver,
        adopt_helm_release,
    } = args;
    let own = |common| Options {
        common,
        topology_refresh,
        adopt_helm_release,
    };
    // Cinder's operator and driver share one namespace.
    Shell::new(process, &namespace, metrics_listen, NAMES)
        .start_driver(
            (&driver, namespace.clone()),
            own,
            operator::watches,
            shutdown,
        )
        .await
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Namespace of the driver.
    #[arg(long, default_value = cinder::SPEC.driver_namespace)]
    namespace: String,
    #[command(flatten)]
    cluster: crate::render::ClusterFlags,
    /// An image, as NAME=IMAGE (e.g. DRIVER_IMAGE=quay.io/...); repeatable. Images not given
    /// are taken from the environment variables of the same names, else are the upstream
    /// releases that manifests/kubernetes/ uses.
    #[arg(long = "image", value_parser = crate::render::parse_pair)]
    images: Vec<(String, String)>,
    /// The user's cloud configuration (INI, as in the cinder-csi-config ConfigMap).
    #[arg(long)]
    cloud_config: Option<PathBuf>,
    /// `enable_topology` to publish (as the operator would compute it from the AZs).
    #[arg(long, default_value = "true")]
    enable_topology: String,
    /// A CA bundle file for the cloud (PEM).
    #[arg(long)]
    ca_file: Option<PathBuf>,
    #[command(flatten)]
    environment: crate::render::EnvironmentFlags,
    /// A public Cinder volume type to render a StorageClass for (`csi-cinder-<type>`), as the
    /// operator keeps one when the ClusterCSIDriver carries the annotation
    /// cinder.csi.openstack.org/volume-type-storage-classes=true; repeatable.
    #[arg(long = "volume-type", value_name = "NAME")]
    volume_types: Vec<String>,
}

/// The facts `render` builds from its flags, with no cluster.
pub fn render_facts(args: &RenderArgs) -> anyhow::Result<Facts> {
    let images = crate::render::images::<Options>(&args.images);
    let base =
        crate::render::base_facts(&args.namespace, &args.cluster, &args.environment, images)?;
    if base.hosted.is_some() && args.cloud_config.is_some() {
        anyhow::bail!(
            "--cloud-config with --hypershift: a hosted control plane reads no user cloud config (anchors §4.5)"
        );
    }
    let user = match &args.cloud_config {
        Some(p) => Some(
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        ),
        None => None,
    };
    let ca = match &args.ca_file {
        Some(p) => Some(
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        ),
        None => None,
    };
    let source = cinder::config::SourceConfig {
        origin: user.as_ref().map(|_| cinder::config::ConfigOrigin {
            namespace: "openshift-config".into(),
            name: "cinder-csi-config".into(),
            key: "config".into(),
        }),
        content: user,
        enable_topology: None,
    };
    let ca_bundle = ca.map(|pem| cinder::config::CaBundle {
        pem,
        origin: cinder::config::CaOrigin::CloudProviderConfig,
    });
    let topology = cinder::topology::parse_override(cinder::topology::UserOverride {
        value: &args.enable_topology,
        origin: "--enable-topology",
    })
    .map_err(|_| {
        anyhow::anyhow!(
            "--enable-topology {:?} is not a boolean; use true or false",
            args.enable_topology
        )
    })?;
    let data = cinder::config::cloud_conf_data(&source, ca_bundle.as_ref(), &topology)
        .with_context(|| match &args.cloud_config {
            Some(p) => format!("--cloud-config {}", p.display()),
            None => "the generated cloud.conf".to_string(),
        })?;
    let cloud_conf: ConfigMap = cinder::config::cloud_conf_configmap(&base.namespace, data);
    let own = DriverFacts {
        cloud_conf: Some(cloud_conf),
    };
    Ok(Facts::new(base, own))
}

/// Prints every object the operator would apply, as a YAML stream.
pub fn render(args: &RenderArgs) -> anyhow::Result<String> {
    let facts = render_facts(args)?;
    let mut objects = build::everything(&facts).context(
        "cannot build the objects; give every image with --image NAME=IMAGE (or the environment variable of the same name)",
    )?;
    objects.extend(volume_type_classes(&args.volume_types)?);
    crate::render::yaml_stream(objects)
}

/// The per-volume-type StorageClasses of `--volume-type`, named and built as the operator does;
/// a type that would get none is an error naming why.
fn volume_type_classes(types: &[String]) -> anyhow::Result<Vec<cinder::build::Desired>> {
    use cinder::volume_types;
    if types.iter().any(|t| t == volume_types::CINDER_DEFAULT_TYPE) {
        anyhow::bail!(
            "--volume-type {}: Cinder's default type gets no StorageClass of its own; standard-csi provisions with it",
            volume_types::CINDER_DEFAULT_TYPE
        );
    }
    let (names, errors) = volume_types::class_names(types);
    if let Some((_, e)) = errors.first() {
        anyhow::bail!("--volume-type: {e}");
    }
    names
        .iter()
        .map(|(name, volume_type)| {
            volume_types::storage_class(name, volume_type)
                .with_context(|| format!("--volume-type {volume_type:?}"))
        })
        .collect()
}

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// The cloud.conf to read (INI with a `[Global]` section); stdin when absent.
    #[arg(long)]
    file: Option<PathBuf>,
}

/// The clouds.yaml (cloud `openstack`) with the credentials of a chart's cloud.conf.
pub fn convert_cloud_conf(args: &ConvertArgs) -> anyhow::Result<String> {
    let (text, source) = match &args.file {
        Some(p) => (
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
            p.display().to_string(),
        ),
        None => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("cannot read the cloud.conf from stdin")?;
            (text, "stdin".to_owned())
        }
    };
    cinder::legacy_credentials::clouds_yaml_from_cloud_conf(&text)
        .with_context(|| format!("cannot convert the cloud.conf from {source}"))
}
