//! `csi-operator`: the operators' binary. Each component is a subcommand: the Cluster Storage
//! Operator, the OpenStack Cinder and Manila CSI driver operators and `render` (print what an
//! operator would apply). Built with the `lab` feature (the default in a checkout, never in the
//! image) it also holds the Kubernetes API emulator (`sim`) and `demo` (the whole chain on both
//! emulators).
//!
//! This file only parses the command line and wires components together; the behaviour lives
//! in the library crates.

mod cinder;
mod cleanup;
mod client;
mod cluster_storage;
#[cfg(feature = "lab")]
mod demo;
mod duration;
mod flags;
mod hosted_render;
mod manila;
mod reference_docs;
mod render;
#[cfg(feature = "lab")]
mod sim;
mod smb;

use clap::{Parser, Subcommand};

#[cfg(feature = "lab")]
const ABOUT: &str =
    "OpenStack CSI driver operators, the Cluster Storage Operator, and their emulators";
#[cfg(not(feature = "lab"))]
const ABOUT: &str = "OpenStack CSI driver operators and the Cluster Storage Operator";

/// `--version`: the release version, the commit it was built from, and whether the emulators
/// are linked (an image never has them).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ",
    env!("CSI_OPERATOR_GIT_COMMIT"),
    "\nbuild: ",
    env!("CSI_OPERATOR_BUILD_KIND"),
);

#[derive(Parser)]
#[command(
    name = "csi-operator",
    version,
    long_version = LONG_VERSION,
    propagate_version = true,
    about = ABOUT,
    // A flag given twice takes the last value, so that a launcher can append overrides to a
    // Deployment's args (kube-sim's process runner does, e.g. --metrics-listen).
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The Cluster Storage Operator: starts the driver operators of the platform and reports
    /// through Storage/cluster and ClusterOperator/storage.
    #[command(name = "cluster-storage", subcommand)]
    ClusterStorage(ClusterStorageCommand),
    /// The OpenStack Cinder CSI driver operator.
    #[command(name = ::cinder::SPEC.name, subcommand)]
    OpenStackCinder(CinderCommand),
    /// The OpenStack Manila CSI driver operator.
    #[command(name = ::manila::SPEC.name, subcommand)]
    OpenStackManila(ManilaCommand),
    /// The SMB CSI driver operator (smb.csi.k8s.io); the Cluster Storage Operator starts it
    /// only when opted in (`cluster-storage start --optional-driver smb`).
    #[command(name = ::smb::SPEC.name, subcommand)]
    Smb(SmbCommand),
    /// Print, as YAML, every object an operator would apply, with no cluster.
    #[command(subcommand)]
    Render(RenderCommand),
    /// Print, as clouds.yaml, the credentials of a cloud-provider-openstack cloud.conf (the
    /// upstream Helm charts' Secret), read from --file or stdin; see
    /// docs/install-kubernetes.md.
    #[command(name = "convert-cloud-conf")]
    ConvertCloudConf(cinder::ConvertArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout, e.g.
    /// `source <(csi-operator completion bash)`.
    Completion(reference_docs::CompletionArgs),
    /// Write man pages for every subcommand into a directory.
    Man(reference_docs::ManArgs),
    /// After a cluster is destroyed, list (and with --yes delete) the Cinder volumes and
    /// snapshots and Manila shares its drivers tagged with its cluster ID.
    Cleanup(cleanup::CleanupArgs),
    /// Run kube-sim, the Kubernetes API emulator, for kubectl and operators to talk to.
    #[cfg(feature = "lab")]
    Sim(sim::SimArgs),
    /// Run the Cinder and Manila operators against emulated Kubernetes and OpenStack, show the
    /// installs converge, and keep the cluster up for kubectl.
    #[cfg(feature = "lab")]
    Demo(demo::DemoArgs),
}

/// What `cluster-storage start` needs besides its flags (printed by `--help`); the image
/// variables are those of the registry's driver specs.
fn cso_needs() -> String {
    use ::cluster_storage::registry::{DRIVERS, OPTIONAL_DRIVERS, SIDECAR_IMAGE_VARS};
    let (operators, operands): (Vec<_>, Vec<_>) = DRIVERS
        .iter()
        .flat_map(|d| d.image_vars)
        .partition(|v| v.placeholder == "${OPERATOR_IMAGE}");
    let env = |vars: &mut dyn Iterator<Item = &operator_kit::spec::ImageVar>| {
        wrap_list(vars.map(|v| v.cso_env), "  ", 92)
    };
    format!(
        "\
Environment (set by the CSO Deployment in manifests/openshift/):
{}
                      the driver operators' image (this binary)
{}
                      images handed to the driver operators
  OPERATOR_IMAGE_VERSION, OPERAND_IMAGE_VERSION
                      the versions reported in ClusterOperator/storage
  POD_NAME            the lease identity (or --identity)
  CSO_OPTIONAL_DRIVERS (or --optional-driver), opted in only:
{}
                      the optional drivers' images (docs/smb.md)

Objects it reads: Infrastructure/cluster (platform; without it, or on another platform, it
installs no driver and says why in ClusterOperator/storage), Storage/cluster, the
root credentials the CredentialsRequests are answered from (cloud credential operator).",
        env(&mut operators.into_iter()),
        env(&mut operands.into_iter().chain(SIDECAR_IMAGE_VARS)),
        env(&mut OPTIONAL_DRIVERS.iter().flat_map(|d| d.image_vars)),
    )
}

/// `names` joined with ", " into lines of at most `width` characters, each starting with
/// `indent` (a line holds at least one name).
fn wrap_list<'a>(names: impl Iterator<Item = &'a str>, indent: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for name in names {
        match lines.last_mut() {
            Some(line) if line.len() + 2 + name.len() < width => {
                line.push_str(", ");
                line.push_str(name);
            }
            Some(line) => {
                line.push(',');
                lines.push(format!("{indent}{name}"));
            }
            None => lines.push(format!("{indent}{name}")),
        }
    }
    lines.join("\n")
}

/// What `openstack-cinder start` needs besides its flags.
fn cinder_needs() -> String {
    format!(
        "\
Environment (set by the Cluster Storage Operator, or by you on plain Kubernetes):
  DRIVER_IMAGE, PROVISIONER_IMAGE, ATTACHER_IMAGE, RESIZER_IMAGE, SNAPSHOTTER_IMAGE,
  LIVENESS_PROBE_IMAGE, NODE_DRIVER_REGISTRAR_IMAGE, KUBE_RBAC_PROXY_IMAGE
                      the driver's and sidecars' images
  OPERATOR_IMAGE_VERSION
                      the version reported in the ClusterCSIDriver status
  POD_NAME            the lease identity (or --identity)

Objects: ClusterCSIDriver {} (nothing is installed until it exists),
Secret openstack-cloud-credentials (clouds.yaml) in --namespace, the cloud-provider-config
ConfigMap (the user's cloud.conf) that Infrastructure/cluster names, or the one synced into
--namespace; Infrastructure/cluster when present (else --cluster-id).",
        ::cinder::SPEC.cluster_csi_driver
    )
}

/// What `openstack-manila start` needs besides its flags.
fn manila_needs() -> String {
    format!(
        "\
Environment (set by the Cluster Storage Operator, or by you on plain Kubernetes):
  DRIVER_IMAGE, NFS_DRIVER_IMAGE, PROVISIONER_IMAGE, RESIZER_IMAGE, SNAPSHOTTER_IMAGE,
  LIVENESS_PROBE_IMAGE, NODE_DRIVER_REGISTRAR_IMAGE, KUBE_RBAC_PROXY_IMAGE
                      the driver's and sidecars' images
  OPERATOR_IMAGE_VERSION
                      the version reported in the ClusterCSIDriver status
  CSI_FSGROUP_POLICY  the CSIDriver's fsGroupPolicy: None (default), File or
                      ReadWriteOnceWithFSType
  POD_NAME            the lease identity (or --identity)

Objects: ClusterCSIDriver {} (nothing is installed until it exists),
Secret openstack-cloud-credentials (clouds.yaml) in {}, Secret
manila-cloud-credentials in the driver namespace; Infrastructure/cluster when present (else
--cluster-id). Without a Shared File Systems service in the catalog nothing is installed and
CSIControllerDisabled says why.",
        ::manila::SPEC.cluster_csi_driver,
        ::manila::SPEC.operator_namespace,
    )
}

#[derive(Subcommand)]
enum ClusterStorageCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    #[command(after_long_help = cso_needs())]
    Start(cluster_storage::StartArgs),
}

#[derive(Subcommand)]
enum CinderCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    #[command(after_long_help = cinder_needs())]
    Start(cinder::StartArgs),
}

#[derive(Subcommand)]
enum ManilaCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    #[command(after_long_help = manila_needs())]
    Start(manila::StartArgs),
}

/// What `smb start` needs besides its flags.
const SMB_NEEDS: &str = "\
Environment (set by the Cluster Storage Operator, or by you on plain Kubernetes):
  DRIVER_IMAGE, PROVISIONER_IMAGE, RESIZER_IMAGE, LIVENESS_PROBE_IMAGE,
  NODE_DRIVER_REGISTRAR_IMAGE, KUBE_RBAC_PROXY_IMAGE
                      the driver's and sidecars' images
  OPERATOR_IMAGE_VERSION
                      the version reported in the ClusterCSIDriver status
  POD_NAME            the lease identity (or --identity)

Objects: ClusterCSIDriver smb.csi.k8s.io (nothing is installed until it exists);
Infrastructure/cluster when present (else --cluster-id). No cloud and no credentials: the
shares' credentials are Secrets the administrator names in each StorageClass (docs/smb.md).";

#[derive(Subcommand)]
enum SmbCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    #[command(after_long_help = SMB_NEEDS)]
    Start(smb::StartArgs),
}

#[derive(Subcommand)]
enum RenderCommand {
    /// The Cinder driver's objects.
    #[command(name = ::cinder::SPEC.name)]
    OpenStackCinder(cinder::RenderArgs),
    /// The Manila driver's objects, for the share types given.
    #[command(name = ::manila::SPEC.name)]
    OpenStackManila(manila::RenderArgs),
    /// The SMB driver's objects.
    #[command(name = ::smb::SPEC.name)]
    Smb(smb::RenderArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    client::install_crypto();
    // An operator waits on the network almost all the time: one thread serves it, and spares
    // it the worker and blocking-pool threads (and glibc's per-thread malloc arenas, which
    // showed as resident memory). The emulators serve many clients at once and keep a pool.
    let mut builder = if cli.command.runs_an_operator() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = builder.enable_all().build()?;
    runtime.block_on(async {
        match cli.command {
            #[cfg(feature = "lab")]
            Command::Sim(args) => {
                operator_kit::logging::LogControl::init(2, client::LOG_TARGETS);
                sim::run(args).await
            }
            Command::ClusterStorage(ClusterStorageCommand::Start(args)) => {
                cluster_storage::start(args, terminated()).await
            }
            Command::OpenStackCinder(CinderCommand::Start(args)) => {
                cinder::start(args, terminated()).await
            }
            Command::OpenStackManila(ManilaCommand::Start(args)) => {
                manila::start(args, terminated()).await
            }
            Command::Smb(SmbCommand::Start(args)) => smb::start(args, terminated()).await,
            Command::Render(RenderCommand::Smb(args)) => {
                print!("{}", smb::render(&args)?);
                Ok(())
            }
            Command::Render(RenderCommand::OpenStackManila(args)) => {
                print!("{}", manila::render(&args)?);
                Ok(())
            }
            #[cfg(feature = "lab")]
            Command::Demo(args) => demo::run(args, terminated()).await,
            Command::ConvertCloudConf(args) => {
                print!("{}", cinder::convert_cloud_conf(&args)?);
                Ok(())
            }
            Command::Completion(args) => {
                reference_docs::completion::<Cli>(args.shell, &mut std::io::stdout());
                Ok(())
            }
            Command::Man(args) => {
                let pages = reference_docs::man_pages::<Cli>(&args.dir)?;
                eprintln!("wrote {pages} man pages into {}", args.dir.display());
                Ok(())
            }
            Command::Cleanup(args) => cleanup::run(args).await,
            Command::Render(RenderCommand::OpenStackCinder(args)) => {
                print!("{}", cinder::render(&args)?);
                Ok(())
            }
        }
    })
}

impl Command {
    /// Whether this command runs one of the operators (as opposed to an emulator, the demo or
    /// a one-shot tool).
    fn runs_an_operator(&self) -> bool {
        matches!(
            self,
            Command::ClusterStorage(ClusterStorageCommand::Start(_))
                | Command::OpenStackCinder(CinderCommand::Start(_))
                | Command::OpenStackManila(ManilaCommand::Start(_))
                | Command::Smb(SmbCommand::Start(_))
        )
    }
}

/// Resolves on SIGTERM (how Kubernetes stops a pod) or Ctrl-C.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cso_help_names_every_image_variable_of_the_registry() {
        let help = cso_needs();
        use ::cluster_storage::registry::{DRIVERS, OPTIONAL_DRIVERS};
        for d in DRIVERS.iter().chain(OPTIONAL_DRIVERS) {
            for v in d.all_image_vars() {
                assert!(help.contains(v.cso_env), "{}: {}", d.name, v.cso_env);
            }
        }
        assert!(help.lines().all(|l| l.len() <= 92), "{help}");
    }

    #[test]
    fn lists_wrap_at_the_width_with_a_comma_at_each_break() {
        let names = ["AAAA", "BBBB", "CCCC"];
        assert_eq!(
            wrap_list(names.into_iter(), "  ", 14),
            "  AAAA, BBBB,\n  CCCC"
        );
        assert_eq!(wrap_list(names.into_iter(), "  ", 80), "  AAAA, BBBB, CCCC");
        // A name longer than the width still gets a line of its own.
        assert_eq!(
            wrap_list(["LONGER_THAN_WIDTH"].into_iter(), "", 4),
            "LONGER_THAN_WIDTH"
        );
    }
}
