//! Deadlines for the operators' Kubernetes client, and the watch settings that go with them.
//!
//! kube-rs sets no read timeout by default. A request on a connection whose peer vanished
//! without a FIN or RST (a control-plane node powered off, a NAT or load-balancer entry
//! dropped) then waits for the kernel to give up retransmitting, about 15 minutes on Linux:
//! a watch cache's first LIST, a status write or the metrics endpoint's TokenReview hangs that
//! long. kube 5 offers no TCP keepalive setting (it builds its connector inside
//! `Client::try_from`), so the read timeout is what notices a dead peer: [`configure`] sets
//! it, with connect and write timeouts.
//!
//! The read timeout counts from the last byte read, or from the last byte written
//! (`reset_reader_on_write`), so neither the time a pooled connection sat idle nor a request
//! body counts against the answer. A watch may be silent for as long as nothing changes, so
//! every watch the operators open asks the server to end it after [`WATCH_TIMEOUT_SECS`]
//! ([`watcher_config`]): a quiet watch ends cleanly and is resumed from its resourceVersion
//! before the read timeout could cut it. kube-runtime's watcher adds its own idle timeout of
//! the watch timeout plus 5 s, which also stays below the read timeout.

use std::time::Duration;

use kube::Config;
use kube::runtime::watcher;

/// The deadlines of one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect and TLS handshake.
    pub connect: Duration,
    /// No byte of an answer for this long after the request was sent: the request fails.
    pub read: Duration,
    /// A request that cannot be written for this long fails.
    pub write: Duration,
}

impl Timeouts {
    /// What the operators use.
    pub const DEFAULT: Self = Self {
        // An API server answers a connect within milliseconds; a SYN left unanswered would
        // otherwise be retried by the kernel for about two minutes.
        connect: Duration::from_secs(10),
        // A little over the API server's own 60 s limit on a non-watch request
        // (`--request-timeout`), so a slow but live server's own answer (a 504) comes first.
        read: Duration::from_secs(65),
        // Our requests are small; a write that makes no progress for this long has a dead peer.
        write: Duration::from_secs(30),
    };
}

/// How long the server keeps a watch open before ending it (`timeoutSeconds`). Below
/// [`Timeouts::DEFAULT`]'s read timeout minus kube-runtime's 5 s idle margin, so a watch on
/// which nothing happens ends by itself first.
pub const WATCH_TIMEOUT_SECS: u32 = 55;

/// `config` with the operators' deadlines.
pub fn configure(config: Config) -> Config {
    configure_with(config, Timeouts::DEFAULT)
}

/// `config` with these deadlines.
pub fn configure_with(mut config: Config, timeouts: Timeouts) -> Config {
    config.connect_timeout = Some(timeouts.connect);
    config.read_timeout = Some(timeouts.read);
    config.write_timeout = Some(timeouts.write);
    // Without this the read timer of a pooled connection runs while it sits idle, and a
    // request handed a connection idle for almost the timeout would fail at once.
    config.reset_reader_on_write = true;
    config
}

/// The watcher settings every watch of a client made by [`configure`] must use.
pub fn watcher_config() -> watcher::Config {
    watcher::Config::default().timeout(WATCH_TIMEOUT_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-runtime ends a watch stream silent for its timeout plus this margin
    /// (`WATCH_IDLE_TIMEOUT_MARGIN` in kube-runtime 5's watcher).
    const WATCHER_IDLE_MARGIN: Duration = Duration::from_secs(5);

    #[test]
    fn a_quiet_watch_ends_before_the_read_timeout_could_cut_it() {
        let watch = Duration::from_secs(u64::from(WATCH_TIMEOUT_SECS));
        assert!(watch + WATCHER_IDLE_MARGIN < Timeouts::DEFAULT.read);
        assert_eq!(watcher_config().timeout, Some(WATCH_TIMEOUT_SECS));
    }

    #[test]
    fn every_deadline_is_set() {
        let config = configure(Config::new("https://127.0.0.1:6443".parse().expect("uri")));
        assert_eq!(config.read_timeout, Some(Timeouts::DEFAULT.read));
        assert_eq!(config.write_timeout, Some(Timeouts::DEFAULT.write));
        assert_eq!(config.connect_timeout, Some(Timeouts::DEFAULT.connect));
        assert!(config.reset_reader_on_write);
    }
}
