//! `csi-operator sim`: kube-sim as a standalone server until Ctrl-C.
//!
//! On loopback the kubeconfig's bearer token is the user name, as in every test. Beyond
//! loopback kube-sim issues tokens (see kube-sim's `authentication.rs`): the kubeconfig written
//! holds the token issued to `--user`, any other token is 401, and RBAC is switched on with
//! `--user` a superuser, so that a request without a token (`system:anonymous`) is refused
//! instead of allowed everything.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::duration::parse_duration;
use anyhow::Context;
use kube_sim::{Authentication, KubeSim, RbacConfig, SimConfig, WorkloadConfig};

#[derive(clap::Args)]
pub struct SimArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write a kubeconfig for kubectl and operators.
    #[arg(long, default_value = "kube-sim.kubeconfig")]
    kubeconfig: PathBuf,
    /// The user name the kubeconfig authenticates as (recorded in the request log).
    #[arg(long, default_value = "admin")]
    user: String,
    /// How bearer tokens are read: `user-name-tokens` (the token is the user name: anyone who
    /// can connect can be anyone) or `issued-tokens` (only tokens kube-sim issued, with RBAC
    /// on). Default: user-name tokens on a loopback `--listen`, issued tokens beyond it.
    #[arg(long, value_enum)]
    authentication: Option<AuthenticationArg>,
    /// Serve HTTPS with a generated CA (written into the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Do not simulate workloads (Deployment and DaemonSet status stay empty).
    #[arg(long)]
    no_workloads: bool,
    /// Delay before the workload simulator reports a change, e.g. `500ms`, `2s`.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    workload_delay: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AuthenticationArg {
    UserNameTokens,
    IssuedTokens,
}

/// The authentication and RBAC settings for `listen`, `--authentication` and `--user`, and a
/// warning to print when the choice exposes the server.
fn access(
    listen: SocketAddr,
    chosen: Option<AuthenticationArg>,
    tls: bool,
    user: &str,
) -> (Authentication, Option<RbacConfig>, Vec<String>) {
    let by_address = Authentication::for_listen_address(listen.ip());
    let mode = match chosen {
        None => by_address,
        Some(AuthenticationArg::UserNameTokens) => Authentication::UserNameTokens,
        Some(AuthenticationArg::IssuedTokens) => Authentication::IssuedTokens,
    };
    let beyond_loopback = by_address == Authentication::IssuedTokens;
    let mut warnings = Vec::new();
    if beyond_loopback && mode == Authentication::UserNameTokens {
        warnings.push(format!(
            "warning: {listen} is not a loopback address and --authentication user-name-tokens \
             lets anyone who can reach it act as any user, including the superusers, and use \
             the /__sim/ admin paths"
        ));
    }
    if beyond_loopback && !tls {
        warnings.push(format!(
            "warning: {listen} is not a loopback address and without --tls bearer tokens cross \
             the network in clear text (and kubectl sends none over HTTP: it is anonymous)"
        ));
    } else if mode == Authentication::IssuedTokens && !tls {
        warnings.push(
            "warning: RBAC is on and without --tls a current kubectl sends no bearer token over \
             plain HTTP: it is system:anonymous and refused; add --tls"
                .to_string(),
        );
    }
    // Without RBAC every request is allowed, an anonymous one too: issued tokens would protect
    // nothing.
    let rbac = (mode == Authentication::IssuedTokens).then(|| {
        let mut config = RbacConfig::default();
        if !config.superusers.iter().any(|s| s == user) {
            config.superusers.push(user.to_string());
        }
        config
    });
    (mode, rbac, warnings)
}

/// Writes `text` readable by its owner only (a kubeconfig with an issued token is a credential).
pub(crate) fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // `mode` applies to a new file only; an existing one may have been readable by others.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes())
}

pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    let (authentication, rbac, warnings) =
        access(args.listen, args.authentication, args.tls, &args.user);
    for w in &warnings {
        eprintln!("{w}");
    }
    let config = SimConfig {
        tls: args.tls,
        authentication: Some(authentication),
        rbac,
        workloads: (!args.no_workloads).then(|| WorkloadConfig {
            delay_ms: args.workload_delay.as_millis() as u64,
            ..Default::default()
        }),
        ..Default::default()
    };
    let sim = KubeSim::start(config, args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    write_private(&args.kubeconfig, &sim.kubeconfig(&args.user))
        .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
    let path = std::fs::canonicalize(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    println!("kube-sim serving at {}", sim.url());
    match authentication {
        // The token itself is never printed: it is in the file only.
        Authentication::IssuedTokens => {
            println!(
                "kubeconfig written to {} with the token issued to {:?} (keep it private; \
                 other bearer tokens get 401, RBAC is on)",
                path.display(),
                args.user
            );
            if args.listen.ip().is_unspecified() {
                println!(
                    "clients on other hosts: put this host's address in the kubeconfig's server \
                     (with --tls, listen on that address instead: the certificate names the \
                     listen address)"
                );
            }
        }
        Authentication::UserNameTokens => {
            println!("kubeconfig written to {}", path.display())
        }
    }
    println!(
        "try: kubectl --kubeconfig {} get namespaces",
        path.display()
    );
    println!("press Ctrl-C to stop");
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    println!("stopping");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_loopback_tokens_are_issued_and_rbac_is_on() {
        let any: SocketAddr = "0.0.0.0:6443".parse().expect("address");
        let (mode, rbac, warnings) = access(any, None, true, "alice");
        assert_eq!(mode, Authentication::IssuedTokens);
        let rbac = rbac.expect("RBAC on with issued tokens");
        assert!(rbac.superusers.contains(&"alice".to_string()));
        assert!(warnings.is_empty(), "{warnings:?}");

        let (mode, rbac, warnings) = access(any, None, false, "admin");
        assert_eq!(mode, Authentication::IssuedTokens);
        assert_eq!(rbac, Some(RbacConfig::default()));
        assert!(warnings[0].contains("clear text"), "{warnings:?}");

        let (mode, rbac, warnings) =
            access(any, Some(AuthenticationArg::UserNameTokens), true, "admin");
        assert_eq!(mode, Authentication::UserNameTokens);
        assert_eq!(rbac, None);
        assert!(warnings[0].contains("act as any user"), "{warnings:?}");
    }

    #[test]
    fn on_loopback_the_token_is_the_user_name_unless_asked() {
        let lo: SocketAddr = "127.0.0.1:6443".parse().expect("address");
        assert_eq!(
            access(lo, None, false, "admin"),
            (Authentication::UserNameTokens, None, vec![])
        );
        let (mode, rbac, warnings) =
            access(lo, Some(AuthenticationArg::IssuedTokens), false, "admin");
        assert_eq!(mode, Authentication::IssuedTokens);
        assert!(rbac.is_some());
        assert!(warnings[0].contains("add --tls"), "{warnings:?}");
        let (_, _, warnings) = access(lo, Some(AuthenticationArg::IssuedTokens), true, "admin");
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
