//! `csi-operator openstack-cinder start` and `csi-operator render openstack-cinder`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use cinder::build::{self, Facts};
use cinder::operator::{self, Operator, Options};
use k8s_openapi::api::core::v1::ConfigMap;
use operator_kit::logging::LogControl;
use operator_kit::loglevel::LogLevel;
use operator_kit::metrics::Metrics;
use operator_kit::observed_config::ServingInfo;

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
    /// Cluster ID for `--cluster` when the cluster has no Infrastructure object (plain Kubernetes).
    #[arg(long)]
    cluster_id: Option<String>,
    /// Create the ClusterCSIDriver (Managed) when it does not exist, as the Cluster Storage
    /// Operator does on OpenShift; for plain Kubernetes (manifests/kubernetes/ sets it).
    #[arg(long)]
    create_cluster_csi_driver: bool,
    #[command(flatten)]
    cert_manager: crate::flags::CertManagerFlags,
    /// Take over the CSIDriver and the StorageClasses csi-cinder-sc-delete and
    /// csi-cinder-sc-retain that the upstream cinder-csi-plugin Helm chart installed as this
    /// release (`[NAMESPACE/]NAME`, namespace kube-system when omitted), keeping their
    /// immutable fields, and start the driver's controller and node plugin only once `helm
    /// uninstall` has removed the chart's; plain Kubernetes only, see docs/switch-from-helm.md.
    #[arg(long, value_name = "[NAMESPACE/]NAME")]
    adopt_helm_release: Option<cinder::helm_adoption::Release>,
}

pub async fn start(
    args: StartArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    args.process.leader_election.check()?;
    let log = LogControl::init_with(
        args.process.verbosity,
        args.process.log_format,
        crate::client::LOG_TARGETS,
    );
    let crate::client::ProcessClients {
        own,
        clients,
        hosted,
    } = args.process.clients(&args.namespace).await?;
    let client = clients.guest().clone();
    let opts = Options {
        namespace: args.namespace.clone(),
        images: operator::images_from_env(),
        topology_refresh: args.topology_refresh,
        cluster_id: args.cluster_id.clone(),
        cert_manager: args.cert_manager.settings(&client).await,
        adopt_helm_release: args.adopt_helm_release.clone(),
        hosted,
    };
    let cache = operator::watches(clients.clone(), &opts)
        .context("cannot prepare the watches")?
        .start();
    let metrics = Metrics::new(cinder::SPEC.metrics_prefix);
    let op = Operator::new(clients, opts, cache.clone(), metrics.clone(), log)
        .create_cluster_csi_driver(args.create_cluster_csi_driver);
    let launch = crate::client::Launch {
        namespace: args.namespace,
        lock_name: cinder::SPEC.lock_name,
        identity: args.process.identity,
        component: cinder::SPEC.user_agent,
        metrics_listen: args.metrics_listen,
        endpoint: args.process.metrics.endpoint(),
        resync: args.process.resync,
        leader_election: args.process.leader_election,
    };
    crate::client::run_operator(own, &client, launch, cache, metrics, op, shutdown).await
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Namespace of the driver.
    #[arg(long, default_value = cinder::SPEC.driver_namespace)]
    namespace: String,
    /// The cluster ID (Infrastructure status.infrastructureName).
    #[arg(long, default_value = "cluster-id")]
    cluster_id: String,
    /// Control-plane topology: HighlyAvailable, SingleReplica, External, ...
    #[arg(long, default_value = "HighlyAvailable")]
    control_plane_topology: String,
    /// Operand log level: Normal, Debug, Trace, TraceAll.
    #[arg(long, default_value = "Normal")]
    log_level: String,
    /// An image, as NAME=IMAGE (e.g. DRIVER_IMAGE=quay.io/...); repeatable. Images not given
    /// are taken from the environment variables of the same names, else are the upstream
    /// releases that manifests/kubernetes/ uses.
    #[arg(long = "image", value_parser = crate::flags::parse_pair)]
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
    /// Proxy settings as observed (HTTP_PROXY=..., HTTPS_PROXY=..., NO_PROXY=...); repeatable.
    #[arg(long = "proxy", value_parser = crate::flags::parse_pair)]
    proxy: Vec<(String, String)>,
    #[command(flatten)]
    hosted: crate::hosted_render::HostedArgs,
    /// A public Cinder volume type to render a StorageClass for (`csi-cinder-<type>`), as the
    /// operator keeps one when the ClusterCSIDriver carries the annotation
    /// cinder.csi.openstack.org/volume-type-storage-classes=true; repeatable.
    #[arg(long = "volume-type", value_name = "NAME")]
    volume_types: Vec<String>,
}

/// The facts `render` builds from its flags, with no cluster.
pub fn render_facts(args: &RenderArgs) -> anyhow::Result<Facts> {
    // Images matter little to what `render` shows; without any, the upstream releases that
    // manifests/kubernetes/ uses, so the command works as the docs type it.
    let mut images = cluster_storage::kubernetes::upstream_operand_images(&cinder::SPEC);
    images.extend(operator::images_from_env());
    images.extend(args.images.iter().cloned());
    let level = LogLevel::parse(&args.log_level);
    if let Some(bad) = level.unknown {
        anyhow::bail!("--log-level {bad:?} is not one of Normal, Debug, Trace, TraceAll");
    }
    let hosted = args.hosted.hosted(&mut images)?;
    if hosted.is_some() && args.cloud_config.is_some() {
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
    // Hosted, the control-plane objects go to the control-plane namespace and --namespace is
    // the guest's.
    let namespace = match &hosted {
        Some(h) => h.control_plane.namespace.clone(),
        None => args.namespace.clone(),
    };
    let cloud_conf: ConfigMap = cinder::config::cloud_conf_configmap(&namespace, data);
    Ok(Facts {
        namespace,
        node_namespace: args.namespace.clone(),
        hosted,
        images,
        cluster_id: args.cluster_id.clone(),
        topology: crate::flags::topology(&args.control_plane_topology)?,
        log_level: level.level,
        proxy: args.proxy.iter().cloned().collect(),
        serving: ServingInfo::intermediate(),
        cloud_conf: Some(cloud_conf),
        ..Facts::default()
    })
}

/// Prints every object the operator would apply, as a YAML stream.
pub fn render(args: &RenderArgs) -> anyhow::Result<String> {
    let facts = render_facts(args)?;
    let mut objects = build::everything(&facts).context(
        "cannot build the objects; give every image with --image NAME=IMAGE (or the environment variable of the same name)",
    )?;
    objects.extend(volume_type_classes(&args.volume_types)?);
    crate::flags::yaml_stream(&objects)
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
