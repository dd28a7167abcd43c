//! Checks of command-line values shared by the subcommands, and the flags every operator
//! process shares: the metrics endpoint and the leader-election timing overrides.

use std::path::PathBuf;
use std::time::Duration;

use operator_kit::hooks::TopologyMode;
use operator_kit::leader_timing::LeaderTiming;
use operator_kit::process::EndpointOptions;
use operator_kit::serving::{CertSource, DEFAULT_CERT_DIR, Serving};

/// How `/metrics`, `/healthz` and `/readyz` are served (docs/metrics.md).
#[derive(clap::Args, Debug, Clone)]
pub struct MetricsFlags {
    /// Directory of the serving certificate (`tls.crt`, `tls.key`: service-ca's serving-cert
    /// Secret as mounted); changes are picked up within seconds. While the files are absent a
    /// self-signed certificate is served.
    #[arg(long, default_value = DEFAULT_CERT_DIR)]
    pub metrics_cert_dir: PathBuf,
    /// Serve HTTPS with a self-signed certificate generated at start, for clusters without
    /// service-ca.
    #[arg(long, conflicts_with = "metrics_insecure_http")]
    pub metrics_self_signed: bool,
    /// Serve plain HTTP and let anyone read `/metrics`: local development and benchmarks only.
    #[arg(long)]
    pub metrics_insecure_http: bool,
    /// Where no service-ca runs (plain Kubernetes): keep a stable self-signed certificate for
    /// the metrics Service `--metrics-service` in this Secret of the operator's namespace (with
    /// `ca.crt`, for a ServiceMonitor to verify) and serve it; a Secret the operator did not
    /// issue (cert-manager's) is served as it is.
    #[arg(long, requires = "metrics_service", conflicts_with_all = ["metrics_self_signed", "metrics_insecure_http"])]
    pub metrics_serving_cert_secret: Option<String>,
    /// The metrics Service whose DNS names `--metrics-serving-cert-secret`'s certificate holds.
    #[arg(long, requires = "metrics_serving_cert_secret")]
    pub metrics_service: Option<String>,
}

impl MetricsFlags {
    /// The endpoint options these flags select.
    pub fn endpoint(&self) -> EndpointOptions {
        let serving = if self.metrics_insecure_http {
            Serving::PlainHttp
        } else if let (Some(secret), Some(service)) =
            (&self.metrics_serving_cert_secret, &self.metrics_service)
        {
            Serving::Https(CertSource::Secret {
                service: service.clone(),
                secret: secret.clone(),
            })
        } else if self.metrics_self_signed {
            Serving::Https(CertSource::SelfSigned { names: Vec::new() })
        } else {
            Serving::Https(CertSource::dir(&self.metrics_cert_dir))
        };
        EndpointOptions {
            serving,
            ..EndpointOptions::default()
        }
    }
}

/// The flags' names, as client-go spells them; each is also named in error messages.
const LEASE_DURATION_FLAG: &str = "leader-elect-lease-duration";
const RENEW_DEADLINE_FLAG: &str = "leader-elect-renew-deadline";
const RETRY_PERIOD_FLAG: &str = "leader-elect-retry-period";

/// Where `--help` lists the leader-election flags.
const LEADER_ELECTION_HEADING: &str = "Leader election (for tests and slow API servers only)";

/// `--leader-elect-*` (client-go's names): the operator's own lease timing. Left out, the
/// timing is OpenShift's for the control-plane topology (137 s / 107 s / 26 s, or 270 s / 240 s
/// / 60 s on SingleReplica); each flag given replaces one of those values. Meant for tests that
/// need a lease to expire in seconds and for API servers too slow for the defaults; a cluster
/// should not need them.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionFlags {
    /// How long a standby waits after the last renewal it saw before it takes the lease over;
    /// whole seconds (a Lease records seconds). Default 137s, 270s on SingleReplica.
    #[arg(
        long = LEASE_DURATION_FLAG,
        value_name = "DURATION",
        value_parser = crate::duration::parse_duration,
        help_heading = LEADER_ELECTION_HEADING
    )]
    pub lease_duration: Option<Duration>,
    /// How long the leader may fail to renew before it stops writing and exits; shorter than
    /// the lease duration. Default 107s, 240s on SingleReplica.
    #[arg(
        long = RENEW_DEADLINE_FLAG,
        value_name = "DURATION",
        value_parser = crate::duration::parse_duration,
        help_heading = LEADER_ELECTION_HEADING
    )]
    pub renew_deadline: Option<Duration>,
    /// How often the leader renews and a standby tries to acquire; shorter than the renew
    /// deadline. Default 26s, 60s on SingleReplica.
    #[arg(
        long = RETRY_PERIOD_FLAG,
        value_name = "DURATION",
        value_parser = crate::duration::parse_duration,
        help_heading = LEADER_ELECTION_HEADING
    )]
    pub retry_period: Option<Duration>,
}

/// One of the three timings: its flag, its value, and whether the flag gave it.
#[derive(Clone, Copy)]
struct Timing {
    flag: &'static str,
    value: Duration,
    given: bool,
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = self.value;
        let shown = if d.subsec_nanos() == 0 {
            format!("{}s", d.as_secs())
        } else {
            format!("{}ms", d.as_millis())
        };
        if self.given {
            write!(f, "--{} {shown}", self.flag)
        } else {
            write!(f, "--{} (default {shown})", self.flag)
        }
    }
}

impl LeaderElectionFlags {
    /// All three flags are given: the topology's defaults do not matter.
    pub fn is_complete(&self) -> bool {
        self.lease_duration.is_some()
            && self.renew_deadline.is_some()
            && self.retry_period.is_some()
    }

    /// Checks the flags given, alone and against each other, before anything else runs (the
    /// defaults they combine with are checked by [`LeaderElectionFlags::resolve`]).
    pub fn check(&self) -> anyhow::Result<()> {
        let given = |flag, value: Option<Duration>| {
            value.map(|value| Timing {
                flag,
                value,
                given: true,
            })
        };
        check_timings(
            given(LEASE_DURATION_FLAG, self.lease_duration),
            given(RENEW_DEADLINE_FLAG, self.renew_deadline),
            given(RETRY_PERIOD_FLAG, self.retry_period),
        )
    }

    /// `base` (the topology's timing) with the values the flags give; an error names a
    /// combination a lease cannot work with.
    pub fn resolve(&self, base: LeaderTiming) -> anyhow::Result<LeaderTiming> {
        let pick = |flag, value: Option<Duration>, default| Timing {
            flag,
            value: value.unwrap_or(default),
            given: value.is_some(),
        };
        let lease = pick(
            LEASE_DURATION_FLAG,
            self.lease_duration,
            base.lease_duration,
        );
        let renew = pick(
            RENEW_DEADLINE_FLAG,
            self.renew_deadline,
            base.renew_deadline,
        );
        let retry = pick(RETRY_PERIOD_FLAG, self.retry_period, base.retry_period);
        check_timings(Some(lease), Some(renew), Some(retry))?;
        Ok(LeaderTiming {
            lease_duration: lease.value,
            renew_deadline: renew.value,
            retry_period: retry.value,
        })
    }
}

/// client-go's rules (`NewLeaderElector`), for the timings known: every one above zero, the
/// lease in whole seconds, retry period < renew deadline < lease duration.
fn check_timings(
    lease: Option<Timing>,
    renew: Option<Timing>,
    retry: Option<Timing>,
) -> anyhow::Result<()> {
    for t in [lease, renew, retry].into_iter().flatten() {
        if t.value.is_zero() {
            anyhow::bail!("{t} must be greater than zero");
        }
    }
    if let Some(lease) = lease
        && lease.value.subsec_nanos() != 0
    {
        anyhow::bail!(
            "{lease} must be a whole number of seconds: a Lease records its duration in seconds, \
             and a standby rounding it down could take over while the leader still writes"
        );
    }
    if let (Some(renew), Some(lease)) = (renew, lease)
        && renew.value >= lease.value
    {
        anyhow::bail!(
            "{renew} must be shorter than {lease}: the leader must give up writing before a \
             standby may take the lease over"
        );
    }
    if let (Some(retry), Some(renew)) = (retry, renew)
        && retry.value >= renew.value
    {
        anyhow::bail!(
            "{retry} must be shorter than {renew}: the leader needs a renewal attempt within \
             the renew deadline"
        );
    }
    Ok(())
}

/// `--control-plane-topology` for `render`: the values Infrastructure can report.
pub fn topology(value: &str) -> anyhow::Result<TopologyMode> {
    match TopologyMode::parse(value) {
        TopologyMode::Other(other) => anyhow::bail!(
            "--control-plane-topology {other:?} is not one of HighlyAvailable, HighlyAvailableArbiter, SingleReplica, DualReplica, External"
        ),
        known => Ok(known),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        metrics: MetricsFlags,
    }

    fn serving(args: &[&str]) -> Result<Serving, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))?;
        Ok(cli.metrics.endpoint().serving)
    }

    #[test]
    fn metrics_flags_select_the_serving() {
        assert_eq!(
            serving(&[]).expect("defaults"),
            Serving::Https(CertSource::dir(DEFAULT_CERT_DIR)),
            "service-ca's mount by default"
        );
        assert_eq!(
            serving(&["--metrics-cert-dir=/certs"]).expect("dir"),
            Serving::Https(CertSource::dir("/certs"))
        );
        assert_eq!(
            serving(&["--metrics-self-signed"]).expect("self-signed"),
            Serving::Https(CertSource::SelfSigned { names: Vec::new() })
        );
        assert_eq!(
            serving(&["--metrics-insecure-http"]).expect("plain"),
            Serving::PlainHttp
        );
        assert!(serving(&["--metrics-self-signed", "--metrics-insecure-http"]).is_err());
        assert_eq!(
            serving(&[
                "--metrics-serving-cert-secret=op-serving-cert",
                "--metrics-service=op-metrics"
            ])
            .expect("secret"),
            Serving::Https(CertSource::Secret {
                service: "op-metrics".into(),
                secret: "op-serving-cert".into()
            })
        );
        assert!(serving(&["--metrics-serving-cert-secret=op-serving-cert"]).is_err());
        assert!(serving(&["--metrics-service=op-metrics"]).is_err());
    }

    #[derive(Parser)]
    struct LeaderCli {
        #[command(flatten)]
        leader: LeaderElectionFlags,
    }

    fn leader(args: &[&str]) -> LeaderElectionFlags {
        LeaderCli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .expect("parses")
            .leader
    }

    /// The error `resolve` gives for `args` over OpenShift's default timing (after `check`,
    /// which must agree whenever only given values are involved).
    fn refused(args: &[&str]) -> String {
        let flags = leader(args);
        let err = flags
            .resolve(LeaderTiming::DEFAULT)
            .expect_err("refused")
            .to_string();
        if flags.is_complete() {
            assert_eq!(
                flags.check().expect_err("checked early too").to_string(),
                err
            );
        }
        err
    }

    fn timing(lease: u64, renew: u64, retry_ms: u64) -> LeaderTiming {
        LeaderTiming {
            lease_duration: Duration::from_secs(lease),
            renew_deadline: Duration::from_secs(renew),
            retry_period: Duration::from_millis(retry_ms),
        }
    }

    #[test]
    fn without_leader_flags_the_topology_decides() {
        let none = leader(&[]);
        assert!(none.check().is_ok());
        assert_eq!(
            none.resolve(LeaderTiming::DEFAULT).expect("default"),
            LeaderTiming::DEFAULT
        );
        assert_eq!(
            none.resolve(LeaderTiming::SINGLE_REPLICA)
                .expect("single replica"),
            LeaderTiming::SINGLE_REPLICA
        );
    }

    #[test]
    fn leader_flags_override_each_value() {
        let short = leader(&[
            "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline",
            "2s",
            "--leader-elect-retry-period=500ms",
        ]);
        assert!(short.is_complete());
        assert!(short.check().is_ok());
        assert_eq!(
            short.resolve(LeaderTiming::SINGLE_REPLICA).expect("valid"),
            timing(3, 2, 500),
            "all three given: the topology does not matter"
        );
        let retry_only = leader(&["--leader-elect-retry-period=2s"]);
        assert!(!retry_only.is_complete());
        assert_eq!(
            retry_only
                .resolve(LeaderTiming::SINGLE_REPLICA)
                .expect("valid"),
            timing(270, 240, 2000),
            "the rest stays the topology's"
        );
        assert_eq!(
            leader(&["--leader-elect-lease-duration=3m"])
                .resolve(LeaderTiming::DEFAULT)
                .expect("valid"),
            timing(180, 107, 26_000)
        );
    }

    #[test]
    fn a_zero_lease_duration_is_refused() {
        let err = refused(&[
            "--leader-elect-lease-duration=0s",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=1s",
        ]);
        assert_eq!(
            err,
            "--leader-elect-lease-duration 0s must be greater than zero"
        );
    }

    #[test]
    fn a_zero_renew_deadline_is_refused() {
        let err = refused(&["--leader-elect-renew-deadline=0ms"]);
        assert_eq!(
            err,
            "--leader-elect-renew-deadline 0s must be greater than zero"
        );
    }

    #[test]
    fn a_zero_retry_period_is_refused() {
        let err = refused(&["--leader-elect-retry-period=0s"]);
        assert_eq!(
            err,
            "--leader-elect-retry-period 0s must be greater than zero"
        );
    }

    #[test]
    fn a_lease_duration_in_fractions_of_a_second_is_refused() {
        let err = refused(&[
            "--leader-elect-lease-duration=2500ms",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=1s",
        ]);
        assert!(
            err.starts_with(
                "--leader-elect-lease-duration 2500ms must be a whole number of seconds"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_renew_deadline_not_shorter_than_the_lease_is_refused() {
        for renew in ["3s", "4s"] {
            let err = refused(&[
                "--leader-elect-lease-duration=3s",
                &format!("--leader-elect-renew-deadline={renew}"),
                "--leader-elect-retry-period=1s",
            ]);
            assert!(
                err.starts_with(&format!(
                    "--leader-elect-renew-deadline {renew} must be shorter than --leader-elect-lease-duration 3s"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn a_retry_period_not_shorter_than_the_renew_deadline_is_refused() {
        for retry in ["2s", "2500ms"] {
            let err = refused(&[
                "--leader-elect-lease-duration=3s",
                "--leader-elect-renew-deadline=2s",
                &format!("--leader-elect-retry-period={retry}"),
            ]);
            assert!(
                err.starts_with(&format!(
                    "--leader-elect-retry-period {retry} must be shorter than --leader-elect-renew-deadline 2s"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn a_lone_override_that_contradicts_a_default_names_the_default() {
        let flags = leader(&["--leader-elect-lease-duration=3s"]);
        assert!(flags.check().is_ok(), "nothing given contradicts it");
        let err = flags
            .resolve(LeaderTiming::DEFAULT)
            .expect_err("refused")
            .to_string();
        assert!(
            err.starts_with(
                "--leader-elect-renew-deadline (default 107s) must be shorter than --leader-elect-lease-duration 3s"
            ),
            "{err}"
        );
        let err = refused(&["--leader-elect-renew-deadline=20s"]);
        assert!(
            err.starts_with(
                "--leader-elect-retry-period (default 26s) must be shorter than --leader-elect-renew-deadline 20s"
            ),
            "{err}"
        );
    }

    #[test]
    fn leader_durations_are_parsed_like_the_other_durations() {
        for bad in ["3", "3x", "-1s", "s", ""] {
            assert!(
                LeaderCli::try_parse_from(["x", "--leader-elect-lease-duration", bad]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn leader_flags_are_marked_for_tests_in_help() {
        use clap::CommandFactory;
        let help = LeaderCli::command().render_long_help().to_string();
        assert!(help.contains(LEADER_ELECTION_HEADING), "{help}");
        for flag in [
            "--leader-elect-lease-duration <DURATION>",
            "--leader-elect-renew-deadline <DURATION>",
            "--leader-elect-retry-period <DURATION>",
        ] {
            assert!(help.contains(flag), "{flag}: {help}");
        }
    }

    #[test]
    fn topologies_are_checked() {
        assert_eq!(
            topology("SingleReplica").expect("known"),
            TopologyMode::SingleReplica
        );
        let err = topology("Bogus").expect_err("unknown").to_string();
        assert!(
            err.contains("Bogus") && err.contains("HighlyAvailable"),
            "{err}"
        );
    }
}

/// `--cert-manager-issuer`: where the driver's metrics serving certificate comes from on
/// plain Kubernetes while cert-manager's CRDs are served (docs/install-kubernetes.md,
/// "Metrics").
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CertManagerFlags {
    /// On plain Kubernetes, while cert-manager's Certificate CRD is served, the operator
    /// applies a cert-manager Certificate for its driver's metrics serving-cert Secret and
    /// lets cert-manager issue and renew it. This names the issuer, as KIND/NAME with KIND
    /// Issuer (in the driver's namespace) or ClusterIssuer, e.g. ClusterIssuer/my-ca. Left
    /// out, the operator applies a self-signed Issuer `<operator>-selfsigned` in the driver's
    /// namespace. Without cert-manager the operator issues a self-signed certificate itself.
    /// Ignored on OpenShift, where service-ca issues it.
    #[arg(long, value_name = "KIND/NAME", value_parser = parse_issuer)]
    pub cert_manager_issuer: Option<operator_kit::cert_manager::IssuerRef>,
}

fn parse_issuer(s: &str) -> Result<operator_kit::cert_manager::IssuerRef, String> {
    s.parse()
}

impl CertManagerFlags {
    /// The cert-manager settings of an operator: `Some` on plain Kubernetes only (asked once
    /// here; see `operator_kit::cert_manager::on_plain_kubernetes`).
    pub async fn settings(
        &self,
        client: &kube::Client,
    ) -> Option<operator_kit::cert_manager::CertManager> {
        if !operator_kit::cert_manager::on_plain_kubernetes(client).await {
            if let Some(issuer) = &self.cert_manager_issuer {
                tracing::info!(%issuer, "--cert-manager-issuer is ignored on OpenShift: service-ca issues the serving certificates");
            }
            return None;
        }
        Some(operator_kit::cert_manager::CertManager {
            issuer: self.cert_manager_issuer.clone(),
        })
    }
}

/// The `start` flags every driver operator takes, whatever its driver.
#[derive(clap::Args)]
pub struct DriverFlags {
    /// Cluster ID (the driver's `--cluster` or `--cluster-id`) when the cluster has no
    /// Infrastructure object (plain Kubernetes).
    #[arg(long)]
    cluster_id: Option<String>,
    /// Create the ClusterCSIDriver (Managed) when it does not exist, as the Cluster Storage
    /// Operator does on OpenShift; for plain Kubernetes (manifests/kubernetes/ sets it).
    #[arg(long)]
    create_cluster_csi_driver: bool,
    #[command(flatten)]
    cert_manager: CertManagerFlags,
}

impl DriverFlags {
    /// The kit's options of a driver operator in `operator_namespace` whose objects go to
    /// `driver_namespace`, with `images` and the cert-manager issuer read through `client`.
    /// Hosted, the driver's controller runs beside the operator in the control-plane namespace;
    /// the node side keeps the spec's driver namespace, in the guest.
    pub async fn options(
        &self,
        client: &kube::Client,
        (operator_namespace, driver_namespace): (String, String),
        images: std::collections::BTreeMap<String, String>,
        hosted: Option<operator_kit::hosted::Hosted>,
    ) -> operator_kit::csi::CommonOptions {
        operator_kit::csi::CommonOptions {
            namespace: match hosted {
                Some(_) => operator_namespace.clone(),
                None => driver_namespace,
            },
            operator_namespace,
            images,
            cluster_id: self.cluster_id.clone(),
            cert_manager: self.cert_manager.settings(client).await,
            hosted,
            create_cluster_csi_driver: self.create_cluster_csi_driver,
        }
    }
}
