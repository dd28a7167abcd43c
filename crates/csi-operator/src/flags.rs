//! Checks of command-line values shared by the subcommands, and the metrics endpoint flags
//! every operator process shares.

use std::path::PathBuf;

use operator_kit::hooks::TopologyMode;
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
}

impl MetricsFlags {
    /// The endpoint options these flags select.
    pub fn endpoint(&self) -> EndpointOptions {
        let serving = if self.metrics_insecure_http {
            Serving::PlainHttp
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
