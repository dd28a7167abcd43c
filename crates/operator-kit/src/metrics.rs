//! The operator's own Prometheus metrics and the HTTP endpoint that serves them.
//!
//! What an administrator wants to see about an operator (not about its driver): how often it
//! reconciles and how long that takes, which errors it meets by category, and how many writes
//! it makes per kind (a steady-state operator makes none). Served as Prometheus text on
//! `/metrics`, behind delegated authentication and authorization when the endpoint is HTTPS
//! (`delegated_auth`), with the open `/healthz` and `/readyz` (`health`) beside it; nothing
//! here reads cluster state. docs/metrics.md lists the metrics.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tracing::warn;

use crate::delegated_auth::{DelegatedAuth, Verdict};
use crate::health::{Health, Report};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    category: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    revision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WriteLabels {
    kind: String,
    verb: &'static str,
}

/// The metrics one operator process exports.
pub struct Metrics {
    registry: Mutex<Registry>,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    writes: Family<WriteLabels, Counter>,
    duration: Histogram,
    build_info: Family<BuildLabels, prometheus_client::metrics::gauge::Gauge>,
}

/// A write the apply engine made, for the `writes` counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteVerb {
    Create,
    Update,
    Delete,
}

impl WriteVerb {
    fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }
}

impl Metrics {
    /// Metrics named `<prefix>_reconciles_total` and so on (prefix e.g. `openstack_cinder_operator`),
    /// beside the process's `process_*` metrics ([`crate::process_metrics`]) and
    /// `<prefix>_build_info` (1, labelled with the version and revision set by
    /// [`Metrics::set_build_info`]).
    pub fn new(prefix: &str) -> Arc<Self> {
        let mut root = Registry::default();
        root.register_collector(Box::new(crate::process_metrics::ProcessCollector));
        let registry = root.sub_registry_with_prefix(prefix);
        let build_info = Family::<BuildLabels, prometheus_client::metrics::gauge::Gauge>::default();
        registry.register(
            "build_info",
            "1, labelled with the operator's version and the source revision it was built from",
            build_info.clone(),
        );
        let reconciles = Family::<ResultLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let writes = Family::<WriteLabels, Counter>::default();
        // Reconciles take milliseconds when in sync and seconds when OpenStack is slow.
        let duration = Histogram::new([
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
        ]);
        registry.register(
            "reconciles",
            "Reconciles of the operator's custom resource, by result",
            reconciles.clone(),
        );
        registry.register(
            "errors",
            "Errors met while reconciling, by category",
            errors.clone(),
        );
        registry.register(
            "apply_writes",
            "Writes the apply engine made, by kind and verb",
            writes.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "How long one reconcile took",
            duration.clone(),
        );
        Arc::new(Self {
            registry: Mutex::new(root),
            reconciles,
            errors,
            writes,
            duration,
            build_info,
        })
    }

    /// Sets `<prefix>_build_info{version, revision} 1` (replacing an earlier value).
    pub fn set_build_info(&self, version: &str, revision: &str) {
        self.build_info.clear();
        self.build_info
            .get_or_create(&BuildLabels {
                version: version.to_string(),
                revision: revision.to_string(),
            })
            .set(1);
    }

    /// One finished reconcile.
    pub fn reconciled(&self, took: Duration, ok: bool) {
        let result = if ok { "success" } else { "error" };
        self.reconciles
            .get_or_create(&ResultLabels { result })
            .inc();
        self.duration.observe(took.as_secs_f64());
    }

    /// An error of some category (e.g. `openstack`, `kube_api`, `config`, `apply`).
    pub fn error(&self, category: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                category: category.to_string(),
            })
            .inc();
    }

    /// A write of one object.
    pub fn write(&self, kind: &str, verb: WriteVerb) {
        self.writes
            .get_or_create(&WriteLabels {
                kind: kind.to_string(),
                verb: verb.as_str(),
            })
            .inc();
    }

    /// Counts what one apply did (a re-creation is a delete and a create).
    pub fn applied(&self, kind: &str, action: crate::apply::Action) {
        use crate::apply::Action;
        match action {
            Action::Unchanged => {}
            Action::Created => self.write(kind, WriteVerb::Create),
            Action::Updated => self.write(kind, WriteVerb::Update),
            Action::Recreated => {
                self.write(kind, WriteVerb::Delete);
                self.write(kind, WriteVerb::Create);
            }
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Encoding into a String cannot fail; an error would only mean a half-written page.
        if encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

/// What the endpoint serves: the metrics, the health of the process, and who may scrape.
#[derive(Clone)]
pub struct Endpoint {
    pub metrics: Arc<Metrics>,
    pub health: Arc<Health>,
    /// `None` serves `/metrics` to anyone (plain HTTP for local development only).
    pub auth: Option<Arc<DelegatedAuth>>,
}

fn text(code: StatusCode, body: impl Into<String>) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

async fn metrics_page(State(ep): State<Endpoint>, headers: HeaderMap) -> Response {
    if let Some(auth) = &ep.auth {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        match auth.check(authorization, "get", "/metrics").await {
            Verdict::Allowed { .. } => {}
            Verdict::Unauthenticated => {
                let mut r = text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
                return r;
            }
            Verdict::Forbidden { user } => {
                return text(
                    StatusCode::FORBIDDEN,
                    format!("Forbidden: user {user:?} may not get /metrics\n"),
                );
            }
            Verdict::Throttled => {
                let mut r = text(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many unknown tokens to check at once; try again\n",
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
                return r;
            }
            Verdict::Unavailable { reason } => {
                warn!(%reason, "cannot authorize a metrics scrape");
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "cannot check the request's credentials now; try again\n",
                );
            }
        }
    }
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        ep.metrics.render(),
    )
        .into_response()
}

fn verbose(query: &Option<String>) -> bool {
    query.as_deref().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv == "verbose" || kv.starts_with("verbose="))
    })
}

fn health_response(report: &Report, query: &Option<String>) -> Response {
    let code = if report.ok() {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    text(code, report.render(verbose(query)))
}

async fn healthz(State(ep): State<Endpoint>, RawQuery(q): RawQuery) -> Response {
    health_response(&ep.health.healthz(), &q)
}

async fn readyz(State(ep): State<Endpoint>, RawQuery(q): RawQuery) -> Response {
    health_response(&ep.health.readyz(), &q)
}

/// The router serving `/metrics` (authorized when `auth` is set), `/healthz` and `/readyz`
/// (open, as the kubelet probes them without credentials).
pub fn router(endpoint: Endpoint) -> Router {
    Router::new()
        .route("/metrics", get(metrics_page))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(endpoint)
}

/// Serves the metrics over plain HTTP without authentication on `addr` until `shutdown`
/// resolves (local development; operators serve through `process`).
pub async fn serve(
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let endpoint = Endpoint {
        metrics,
        health,
        auth: None,
    };
    axum::serve(listener, router(endpoint))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {

    /// docs/metrics.md lists every metric this module exports, with each label name, so the
    /// page a user reads cannot fall behind the code.
    #[test]
    fn every_metric_and_label_is_documented() {
        let docs = include_str!("../../../docs/metrics.md");
        let metrics = Metrics::new("p");
        metrics.reconciled(Duration::from_millis(3), true);
        metrics.error("openstack");
        metrics.write("Deployment", WriteVerb::Create);
        metrics.set_build_info("1.2.3", "abc");
        let page = metrics.render();
        let mut checked = 0;
        for line in page.lines().filter(|l| l.starts_with("# TYPE ")) {
            let mut parts = line.split_whitespace().skip(2);
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap());
            let documented = match name.strip_prefix("p_") {
                Some(suffix) => format!("`<prefix>_{suffix}"),
                None => {
                    assert!(name.starts_with("process_"), "{name} is not prefixed");
                    format!("`{name}")
                }
            };
            let row = docs
                .lines()
                .find(|l| l.starts_with(&format!("| {documented}")))
                .unwrap_or_else(|| panic!("docs/metrics.md has no row for {name}"));
            assert!(
                row.contains(&format!("| {kind} |")),
                "{name} is a {kind}: {row}"
            );
            for sample in page
                .lines()
                .filter(|l| l.starts_with(name) && l.contains('{'))
            {
                let labels = &sample[sample.find('{').unwrap() + 1..sample.find('}').unwrap()];
                for label in labels.split(',').filter_map(|kv| kv.split('=').next()) {
                    if label == "le" {
                        continue; // a histogram's buckets
                    }
                    assert!(
                        row.contains(&format!("`{label}`")),
                        "label {label} of {name} is not documented: {row}"
                    );
                }
            }
            checked += 1;
        }
        // Four of the operator, build_info, and the six process_* of a Linux process.
        assert_eq!(checked, 11, "{page}");
    }

    #[test]
    fn process_metrics_and_build_info_are_on_the_page() {
        let m = Metrics::new("op");
        let page = m.render();
        assert!(!page.contains("op_build_info{"), "not set yet: {page}");
        m.set_build_info("0.1.0", "0123abc");
        let page = m.render();
        assert!(
            page.contains("op_build_info{version=\"0.1.0\",revision=\"0123abc\"} 1"),
            "{page}"
        );
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_virtual_memory_bytes ",
            "process_open_fds ",
            "process_max_fds ",
            "process_start_time_seconds ",
        ] {
            let line = page
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{name}: {page}"));
            let value: f64 = line[name.len()..].trim().parse().expect("a number");
            assert!(value >= 0.0, "{line}");
        }
        assert!(
            !page.contains("op_process_"),
            "process metrics are not prefixed"
        );
        assert!(page.trim_end().ends_with("# EOF"), "{page}");
        m.set_build_info("0.2.0", "def");
        assert_eq!(m.render().matches("op_build_info{").count(), 1);
    }

    use super::*;

    #[test]
    fn counters_and_histogram_are_exported() {
        let m = Metrics::new("test_operator");
        m.reconciled(Duration::from_millis(3), true);
        m.reconciled(Duration::from_millis(30), false);
        m.error("openstack");
        m.write("Deployment", WriteVerb::Create);
        m.write("Deployment", WriteVerb::Create);
        let page = m.render();
        assert!(
            page.contains("test_operator_reconciles_total{result=\"success\"} 1"),
            "{page}"
        );
        assert!(
            page.contains("test_operator_reconciles_total{result=\"error\"} 1"),
            "{page}"
        );
        assert!(
            page.contains("test_operator_errors_total{category=\"openstack\"} 1"),
            "{page}"
        );
        assert!(
            page.contains(
                "test_operator_apply_writes_total{kind=\"Deployment\",verb=\"create\"} 2"
            ),
            "{page}"
        );
        assert!(
            page.contains("test_operator_reconcile_duration_seconds_count 2"),
            "{page}"
        );
    }

    #[tokio::test]
    async fn the_endpoint_serves_the_page() {
        let m = Metrics::new("served");
        m.error("config");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let health = Health::new(Duration::from_secs(60));
        let endpoint = Endpoint {
            metrics: m,
            health,
            auth: None,
        };
        let server = tokio::spawn(async move { axum::serve(listener, router(endpoint)).await });
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut body = String::new();
        stream.read_to_string(&mut body).await.expect("read");
        assert!(body.starts_with("HTTP/1.1 200"), "{body}");
        assert!(
            body.contains("served_errors_total{category=\"config\"} 1"),
            "{body}"
        );
        server.abort();
    }

    /// No review can be made (the rate limit's bucket is empty): the scrape is answered 429
    /// with Retry-After, not 401 or 503, and no review is sent.
    #[tokio::test]
    async fn a_throttled_scrape_is_answered_429_with_retry_after() {
        use crate::delegated_auth::{AuthOptions, Reviewer, User};
        use futures::future::BoxFuture;
        struct Refuses;
        impl Reviewer for Refuses {
            fn token_review(&self, _: &str) -> BoxFuture<'_, Result<Option<User>, String>> {
                panic!("no review past the limit")
            }
            fn access_review(
                &self,
                _: &User,
                _: &str,
                _: &str,
            ) -> BoxFuture<'_, Result<bool, String>> {
                panic!("no review past the limit")
            }
        }
        let options = AuthOptions {
            review_burst: 0,
            ..AuthOptions::default()
        };
        let endpoint = Endpoint {
            metrics: Metrics::new("throttled"),
            health: Health::new(Duration::from_secs(60)),
            auth: Some(DelegatedAuth::new(Refuses, options)),
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_static("Bearer made-up"),
        );
        let response = metrics_page(State(endpoint), headers).await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
            Some("1")
        );
    }
}
