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
//!
//! A server that answers 409, 429 or 5xx with `Retry-After` asks every client to hold off; the
//! operators' clients do not retry by themselves (their reconcile does, with backoff), but
//! without more a reconcile would go on sending its other requests at once. [`client`] adds
//! [`RetryAfterLayer`]: after such an answer, no request of that client is sent before the
//! time the server asked for (at most [`MAX_RETRY_AFTER`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use kube::runtime::watcher;
use kube::{Client, Config};
use tokio::time::Instant;

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

/// The operators' client: `config` with the default deadlines ([`configure`]) and
/// `Retry-After` honoured ([`RetryAfterLayer`]).
pub fn client(config: Config) -> Result<Client, kube::Error> {
    client_with(config, Timeouts::DEFAULT)
}

/// [`client`] with these deadlines.
pub fn client_with(config: Config, timeouts: Timeouts) -> Result<Client, kube::Error> {
    let builder = kube::client::ClientBuilder::try_from(configure_with(config, timeouts))?;
    Ok(builder.with_layer(&RetryAfterLayer::default()).build())
}

/// The longest `Retry-After` honoured. API servers ask for a second or a few; a longer wait
/// would hold the lease renewal (its own deadline is 107 s) and the reconcile deadline hostage
/// to one answer.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Holds every request of a client until the time the server last asked for with
/// `Retry-After` on a 409, 429 or 5xx answer. A tower layer over kube's own stack, so it sees
/// the header (a throttling API server's 429 carries it with a plain-text body, which kube's
/// error does not keep). The answer itself is passed on unchanged: the caller's error handling
/// and the reconcile's backoff stay as they are.
#[derive(Clone, Default)]
pub struct RetryAfterLayer {
    gate: Arc<Gate>,
}

impl<S> tower_layer::Layer<S> for RetryAfterLayer {
    type Service = RetryAfter<S>;

    fn layer(&self, inner: S) -> RetryAfter<S> {
        RetryAfter {
            inner,
            gate: self.gate.clone(),
        }
    }
}

/// The service of [`RetryAfterLayer`].
#[derive(Clone)]
pub struct RetryAfter<S> {
    inner: S,
    gate: Arc<Gate>,
}

/// The earliest time the next request may be sent.
#[derive(Default)]
struct Gate {
    not_before: Mutex<Option<Instant>>,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.not_before
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// When a request made now may be sent, if not at once.
    fn wait_until(&self, now: Instant) -> Option<Instant> {
        (*self.lock()).filter(|at| *at > now)
    }

    /// Records a server's request to hold off for `wait` from `now`.
    fn hold(&self, now: Instant, wait: Duration) {
        let until = now + wait.min(MAX_RETRY_AFTER);
        let mut not_before = self.lock();
        if not_before.is_none_or(|at| at < until) {
            *not_before = Some(until);
        }
    }
}

/// The wait a response asks for: `Retry-After` in seconds (the form API servers send) on a
/// 409, 429 or 5xx answer.
fn retry_after(status: http::StatusCode, headers: &http::HeaderMap) -> Option<Duration> {
    let asks = status == http::StatusCode::CONFLICT
        || status == http::StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error();
    if !asks {
        return None;
    }
    let seconds: u64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds > 0).then(|| Duration::from_secs(seconds))
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, ReqBody, ResBody> tower_service::Service<http::Request<ReqBody>> for RetryAfter<S>
where
    S: tower_service::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    ResBody: 'static,
{
    type Response = http::Response<ResBody>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let wait = self.gate.wait_until(Instant::now());
        // kube's stack sends nothing until its future is polled, so the request waits here.
        let response = self.inner.call(request);
        let gate = self.gate.clone();
        Box::pin(async move {
            if let Some(at) = wait {
                tokio::time::sleep_until(at).await;
            }
            let response = response.await?;
            if let Some(wait) = retry_after(response.status(), response.headers()) {
                tracing::debug!(
                    status = response.status().as_u16(),
                    wait_s = wait.as_secs(),
                    "the API server asked to retry later; holding this client's requests"
                );
                gate.hold(Instant::now(), wait);
            }
            Ok(response)
        })
    }
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
    fn retry_after_is_read_from_409_429_and_5xx_answers_only() {
        let with = |value: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from_str(value).expect("header"),
            );
            h
        };
        let two = Some(Duration::from_secs(2));
        for code in [409, 429, 500, 503, 504] {
            let status = http::StatusCode::from_u16(code).expect("status");
            assert_eq!(retry_after(status, &with("2")), two, "{code}");
        }
        assert_eq!(retry_after(http::StatusCode::OK, &with("2")), None);
        assert_eq!(retry_after(http::StatusCode::NOT_FOUND, &with("2")), None);
        let busy = http::StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(retry_after(busy, &http::HeaderMap::new()), None);
        assert_eq!(retry_after(busy, &with("0")), None);
        assert_eq!(
            retry_after(busy, &with("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
    }

    #[test]
    fn the_gate_keeps_the_latest_hold_and_caps_it() {
        let gate = Gate::default();
        let now = Instant::now();
        assert_eq!(gate.wait_until(now), None);
        gate.hold(now, Duration::from_secs(3));
        gate.hold(now, Duration::from_secs(1));
        assert_eq!(gate.wait_until(now), Some(now + Duration::from_secs(3)));
        gate.hold(now, Duration::from_secs(3600));
        assert_eq!(gate.wait_until(now), Some(now + MAX_RETRY_AFTER));
        assert_eq!(gate.wait_until(now + MAX_RETRY_AFTER), None);
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
