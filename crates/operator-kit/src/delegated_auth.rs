//! Delegated authentication and authorization of scrapers, as library-go's controllercmd (and
//! kube-rbac-proxy) do it: the bearer token is checked with a `TokenReview`, the user it
//! names with a `SubjectAccessReview` for the non-resource path (`get /metrics`), so who may
//! scrape is decided by the cluster's RBAC (OpenShift grants `prometheus-k8s` a ClusterRole
//! with `nonResourceURLs: [/metrics]`) and nobody else gets the page.
//!
//! Answers are cached per token (keyed by its SHA-256, the token itself is not kept) so that
//! a scrape every 30 s costs at most one review of each kind per cache period: allowed
//! verdicts for [`AuthOptions::allowed_ttl`], refusals for the shorter
//! [`AuthOptions::denied_ttl`] so that a fixed RoleBinding shows soon. API errors are never
//! cached. Token values never reach a log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

/// Who a token belongs to, as the TokenReview said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// The outcome for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Authenticated and authorized.
    Allowed { user: String },
    /// No token, or one the API server does not accept: `401`.
    Unauthenticated,
    /// Authenticated, not authorized: `403`.
    Forbidden { user: String },
    /// The reviews could not be made (API unreachable, or this operator may not create
    /// them): `503`, not cached.
    Unavailable { reason: String },
}

/// The two reviews, behind a trait so the cache can be tested without a server.
pub trait Reviewer: Send + Sync {
    /// `Ok(None)` when the token is not authenticated.
    fn token_review(&self, token: &str) -> BoxFuture<'_, Result<Option<User>, String>>;
    fn access_review(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> BoxFuture<'_, Result<bool, String>>;
}

/// The reviews made through the operator's own client (it needs `create` on `tokenreviews`
/// and `subjectaccessreviews`, as `system:auth-delegator` grants).
pub struct KubeReviewer {
    client: kube::Client,
}

impl KubeReviewer {
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

fn api_error(what: &str, e: kube::Error) -> String {
    // kube's error for a refused review names the resource, never the token.
    format!("cannot create a {what}: {e}")
}

impl Reviewer for KubeReviewer {
    fn token_review(&self, token: &str) -> BoxFuture<'_, Result<Option<User>, String>> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        Box::pin(async move {
            let api: Api<TokenReview> = Api::all(self.client.clone());
            let got = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| api_error("TokenReview", e))?;
            let Some(status) = got.status else {
                return Ok(None);
            };
            if status.authenticated != Some(true) {
                return Ok(None);
            }
            let info = status.user.unwrap_or_default();
            Ok(Some(User {
                name: info.username.unwrap_or_default(),
                uid: info.uid.unwrap_or_default(),
                groups: info.groups.unwrap_or_default(),
                extra: info.extra.unwrap_or_default(),
            }))
        })
    }

    fn access_review(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> BoxFuture<'_, Result<bool, String>> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        Box::pin(async move {
            let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
            let got = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| api_error("SubjectAccessReview", e))?;
            Ok(got
                .status
                .is_some_and(|s| s.allowed && s.denied != Some(true)))
        })
    }
}

/// Cache settings.
#[derive(Debug, Clone, Copy)]
pub struct AuthOptions {
    pub allowed_ttl: Duration,
    pub denied_ttl: Duration,
    /// At most this many tokens are remembered (random tokens must not grow memory).
    pub max_entries: usize,
}

impl Default for AuthOptions {
    fn default() -> Self {
        Self {
            allowed_ttl: Duration::from_secs(60),
            denied_ttl: Duration::from_secs(10),
            max_entries: 256,
        }
    }
}

type TokenKey = [u8; 32];

/// Authenticates and authorizes requests, with the cache.
pub struct DelegatedAuth {
    reviewer: Box<dyn Reviewer>,
    options: AuthOptions,
    cache: Mutex<HashMap<(TokenKey, String), (Instant, Verdict)>>,
}

impl DelegatedAuth {
    pub fn new(reviewer: impl Reviewer + 'static, options: AuthOptions) -> Arc<Self> {
        Arc::new(Self {
            reviewer: Box::new(reviewer),
            options,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Through the operator's kube client, with the default cache.
    pub fn kube(client: kube::Client) -> Arc<Self> {
        Self::new(KubeReviewer::new(client), AuthOptions::default())
    }

    /// The verdict for a request with this `Authorization` header value to `verb path`.
    pub async fn check(&self, authorization: Option<&str>, verb: &str, path: &str) -> Verdict {
        let Some(token) = bearer(authorization) else {
            return Verdict::Unauthenticated;
        };
        let key = (digest(token), format!("{verb} {path}"));
        let now = Instant::now();
        if let Some(v) = self.cached(&key, now) {
            return v;
        }
        let verdict = match self.reviewer.token_review(token).await {
            Err(reason) => Verdict::Unavailable { reason },
            Ok(None) => Verdict::Unauthenticated,
            Ok(Some(user)) => match self.reviewer.access_review(&user, verb, path).await {
                Err(reason) => Verdict::Unavailable { reason },
                Ok(true) => Verdict::Allowed { user: user.name },
                Ok(false) => Verdict::Forbidden { user: user.name },
            },
        };
        self.remember(key, now, &verdict);
        verdict
    }

    fn cached(&self, key: &(TokenKey, String), now: Instant) -> Option<Verdict> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (at, verdict) = cache.get(key)?;
        (now.saturating_duration_since(*at) < self.ttl(verdict)?).then(|| verdict.clone())
    }

    fn ttl(&self, verdict: &Verdict) -> Option<Duration> {
        match verdict {
            Verdict::Allowed { .. } => Some(self.options.allowed_ttl),
            Verdict::Unauthenticated | Verdict::Forbidden { .. } => Some(self.options.denied_ttl),
            Verdict::Unavailable { .. } => None,
        }
    }

    fn remember(&self, key: (TokenKey, String), now: Instant, verdict: &Verdict) {
        if self.ttl(verdict).is_none() {
            return;
        }
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= self.options.max_entries {
            cache.retain(|_, (at, v)| {
                self.ttl(v)
                    .is_some_and(|ttl| now.saturating_duration_since(*at) < ttl)
            });
            if cache.len() >= self.options.max_entries {
                cache.clear();
            }
        }
        cache.insert(key, (now, verdict.clone()));
    }
}

/// The token of `Bearer <token>` (scheme case-insensitive, as Go's authenticator reads it).
fn bearer(authorization: Option<&str>) -> Option<&str> {
    let value = authorization?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn digest(token: &str) -> TokenKey {
    let mut out = [0u8; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Tokens are user names; `admin` may scrape, `nobody` may not, `bad` is not a token,
    /// `down` makes the API fail.
    #[derive(Default, Clone)]
    struct Fake {
        token_reviews: Arc<AtomicUsize>,
        access_reviews: Arc<AtomicUsize>,
    }

    impl Reviewer for Fake {
        fn token_review(&self, token: &str) -> BoxFuture<'_, Result<Option<User>, String>> {
            self.token_reviews.fetch_add(1, Ordering::SeqCst);
            let token = token.to_string();
            Box::pin(async move {
                match token.as_str() {
                    "bad" => Ok(None),
                    "down" => Err("connection refused".into()),
                    name => Ok(Some(User {
                        name: name.into(),
                        ..User::default()
                    })),
                }
            })
        }
        fn access_review(
            &self,
            user: &User,
            verb: &str,
            path: &str,
        ) -> BoxFuture<'_, Result<bool, String>> {
            self.access_reviews.fetch_add(1, Ordering::SeqCst);
            let ok = user.name == "admin" && verb == "get" && path == "/metrics";
            Box::pin(async move { Ok(ok) })
        }
    }

    fn counts(f: &Fake) -> (usize, usize) {
        (
            f.token_reviews.load(Ordering::SeqCst),
            f.access_reviews.load(Ordering::SeqCst),
        )
    }

    #[tokio::test]
    async fn verdicts_follow_the_reviews() {
        let auth = DelegatedAuth::new(Fake::default(), AuthOptions::default());
        let check = |h: Option<&'static str>| {
            let auth = auth.clone();
            async move { auth.check(h, "get", "/metrics").await }
        };
        assert_eq!(check(None).await, Verdict::Unauthenticated);
        assert_eq!(
            check(Some("Basic YWRtaW4=")).await,
            Verdict::Unauthenticated
        );
        assert_eq!(check(Some("Bearer ")).await, Verdict::Unauthenticated);
        assert_eq!(check(Some("Bearer bad")).await, Verdict::Unauthenticated);
        assert_eq!(
            check(Some("Bearer admin")).await,
            Verdict::Allowed {
                user: "admin".into()
            }
        );
        assert_eq!(
            check(Some("bearer admin")).await,
            Verdict::Allowed {
                user: "admin".into()
            }
        );
        assert_eq!(
            check(Some("Bearer nobody")).await,
            Verdict::Forbidden {
                user: "nobody".into()
            }
        );
        assert!(matches!(
            check(Some("Bearer down")).await,
            Verdict::Unavailable { .. }
        ));
    }

    #[tokio::test]
    async fn one_review_of_each_kind_per_token_per_period() {
        let fake = Fake::default();
        let auth = DelegatedAuth::new(fake.clone(), AuthOptions::default());
        for _ in 0..10 {
            auth.check(Some("Bearer admin"), "get", "/metrics").await;
        }
        assert_eq!(counts(&fake), (1, 1), "ten scrapes, two API calls");
        auth.check(Some("Bearer nobody"), "get", "/metrics").await;
        auth.check(Some("Bearer nobody"), "get", "/metrics").await;
        assert_eq!(counts(&fake), (2, 2), "refusals are cached too");
        auth.check(Some("Bearer admin"), "get", "/other").await;
        assert_eq!(counts(&fake).1, 3, "another path is another question");
    }

    #[tokio::test]
    async fn entries_expire_and_errors_are_not_cached() {
        let fake = Fake::default();
        let options = AuthOptions {
            allowed_ttl: Duration::from_millis(30),
            denied_ttl: Duration::from_millis(30),
            max_entries: 2,
        };
        let auth = DelegatedAuth::new(fake.clone(), options);
        auth.check(Some("Bearer admin"), "get", "/metrics").await;
        tokio::time::sleep(Duration::from_millis(60)).await;
        auth.check(Some("Bearer admin"), "get", "/metrics").await;
        assert_eq!(counts(&fake), (2, 2), "expired entries are asked again");
        auth.check(Some("Bearer down"), "get", "/metrics").await;
        auth.check(Some("Bearer down"), "get", "/metrics").await;
        assert_eq!(
            counts(&fake).0,
            4,
            "an API error is retried on the next scrape"
        );
        for n in 0..10 {
            let h = format!("Bearer user{n}");
            auth.check(Some(&h), "get", "/metrics").await;
        }
        let size = auth.cache.lock().expect("lock").len();
        assert!(size <= 2, "the cache stays bounded: {size}");
    }
}
