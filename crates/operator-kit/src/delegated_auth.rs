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
//!
//! Anyone who can reach the port can send tokens, so what an unseen token costs is bounded:
//! reviews are made at most [`AuthOptions::reviews_per_second`] on average (a burst of
//! [`AuthOptions::review_burst`]) and [`AuthOptions::max_in_flight`] at a time, and a request
//! past either limit is answered `429` without a review ([`Verdict::Throttled`]). A full cache
//! drops expired entries, then the least recently used one, so a stream of random tokens
//! cannot push out the scraper's own entry (the rate limit lets through far fewer new tokens
//! than a scraper's period would take to age it out).

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
    /// An unseen token while reviews are at their rate or concurrency limit: `429`, no review
    /// made, not cached.
    Throttled,
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

/// Cache and throttle settings.
#[derive(Debug, Clone, Copy)]
pub struct AuthOptions {
    pub allowed_ttl: Duration,
    pub denied_ttl: Duration,
    /// At most this many tokens are remembered (random tokens must not grow memory).
    pub max_entries: usize,
    /// Reviews (of tokens not in the cache) made per second on average...
    pub reviews_per_second: f64,
    /// ...and at most this many at once after a quiet spell.
    pub review_burst: u32,
    /// Reviews waiting on the API server at the same time.
    pub max_in_flight: usize,
}

impl Default for AuthOptions {
    fn default() -> Self {
        Self {
            allowed_ttl: Duration::from_secs(60),
            denied_ttl: Duration::from_secs(10),
            max_entries: 256,
            // A Prometheus pair scraping every 30 s needs a review per token per minute; these
            // leave room for many scrapers and restarts, and keep a flood of made-up tokens
            // to a trickle of API requests.
            reviews_per_second: 1.0,
            review_burst: 10,
            max_in_flight: 4,
        }
    }
}

type TokenKey = [u8; 32];
type CacheKey = (TokenKey, String);

/// A cached verdict: when it was decided, and when it was last used (a tick of
/// [`DelegatedAuth`]'s use counter, for least-recently-used eviction).
struct Entry {
    at: Instant,
    verdict: Verdict,
    used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<CacheKey, Entry>,
    /// Bumped on every hit and insert.
    tick: u64,
}

/// A token bucket: `tokens` refill at `rate` per second up to `burst`.
struct Bucket {
    tokens: f64,
    refilled: Instant,
}

/// Authenticates and authorizes requests, with the cache and the review throttle.
pub struct DelegatedAuth {
    reviewer: Box<dyn Reviewer>,
    options: AuthOptions,
    cache: Mutex<Cache>,
    bucket: Mutex<Bucket>,
    in_flight: Arc<tokio::sync::Semaphore>,
}

impl DelegatedAuth {
    pub fn new(reviewer: impl Reviewer + 'static, options: AuthOptions) -> Arc<Self> {
        Arc::new(Self {
            reviewer: Box::new(reviewer),
            options,
            cache: Mutex::new(Cache::default()),
            bucket: Mutex::new(Bucket {
                tokens: f64::from(options.review_burst),
                refilled: Instant::now(),
            }),
            in_flight: Arc::new(tokio::sync::Semaphore::new(options.max_in_flight)),
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
        // Held until both reviews are answered; a refusal sends nothing to the API server.
        let Ok(_permit) = self.in_flight.clone().try_acquire_owned() else {
            return Verdict::Throttled;
        };
        if !self.take_review(now) {
            return Verdict::Throttled;
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

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cached(&self, key: &CacheKey, now: Instant) -> Option<Verdict> {
        let mut cache = self.lock_cache();
        cache.tick += 1;
        let tick = cache.tick;
        let entry = cache.entries.get_mut(key)?;
        if now.saturating_duration_since(entry.at) >= self.ttl(&entry.verdict)? {
            return None;
        }
        entry.used = tick;
        Some(entry.verdict.clone())
    }

    /// Takes one review from the rate limit's bucket, if there is one.
    fn take_review(&self, now: Instant) -> bool {
        let mut bucket = self
            .bucket
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let elapsed = now.saturating_duration_since(bucket.refilled).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.options.reviews_per_second)
            .min(f64::from(self.options.review_burst));
        bucket.refilled = now.max(bucket.refilled);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn ttl(&self, verdict: &Verdict) -> Option<Duration> {
        match verdict {
            Verdict::Allowed { .. } => Some(self.options.allowed_ttl),
            Verdict::Unauthenticated | Verdict::Forbidden { .. } => Some(self.options.denied_ttl),
            Verdict::Unavailable { .. } | Verdict::Throttled => None,
        }
    }

    fn remember(&self, key: CacheKey, now: Instant, verdict: &Verdict) {
        if self.ttl(verdict).is_none() || self.options.max_entries == 0 {
            return;
        }
        let mut cache = self.lock_cache();
        if !cache.entries.contains_key(&key) && cache.entries.len() >= self.options.max_entries {
            cache.entries.retain(|_, e| {
                self.ttl(&e.verdict)
                    .is_some_and(|ttl| now.saturating_duration_since(e.at) < ttl)
            });
            if cache.entries.len() >= self.options.max_entries {
                // One entry goes, the least recently used: the scraper's own token, used every
                // scrape, stays.
                let oldest = cache
                    .entries
                    .iter()
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    cache.entries.remove(&oldest);
                }
            }
        }
        cache.tick += 1;
        let used = cache.tick;
        cache.entries.insert(
            key,
            Entry {
                at: now,
                verdict: verdict.clone(),
                used,
            },
        );
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
            ..unthrottled()
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
        let size = auth.cache.lock().expect("lock").entries.len();
        assert!(size <= 2, "the cache stays bounded: {size}");
    }

    fn unthrottled() -> AuthOptions {
        AuthOptions {
            reviews_per_second: 1e6,
            review_burst: 1_000_000,
            ..AuthOptions::default()
        }
    }

    #[tokio::test]
    async fn a_full_cache_drops_the_least_recently_used_token_not_all_of_them() {
        let fake = Fake::default();
        let options = AuthOptions {
            max_entries: 3,
            ..unthrottled()
        };
        let auth = DelegatedAuth::new(fake.clone(), options);
        let scrape = |token: &str| {
            let auth = auth.clone();
            let header = format!("Bearer {token}");
            async move { auth.check(Some(&header), "get", "/metrics").await }
        };
        scrape("admin").await;
        // A stream of tokens never seen before, the scraper's own coming back between them.
        for n in 0..20 {
            scrape(&format!("random{n}")).await;
            scrape("admin").await;
        }
        assert_eq!(
            counts(&fake),
            (21, 21),
            "the scraper's token was reviewed once; each random token once"
        );
        assert!(auth.cache.lock().expect("lock").entries.len() <= 3);
    }

    #[tokio::test]
    async fn unseen_tokens_past_the_rate_are_refused_without_a_review() {
        let fake = Fake::default();
        let options = AuthOptions {
            reviews_per_second: 0.001,
            review_burst: 3,
            ..AuthOptions::default()
        };
        let auth = DelegatedAuth::new(fake.clone(), options);
        auth.check(Some("Bearer admin"), "get", "/metrics").await;
        let mut throttled = 0;
        for n in 0..50 {
            let header = format!("Bearer made-up-{n}");
            if auth.check(Some(&header), "get", "/metrics").await == Verdict::Throttled {
                throttled += 1;
            }
        }
        assert_eq!(counts(&fake).0, 3, "the burst, then no review");
        assert_eq!(throttled, 48);
        assert_eq!(
            auth.check(Some("Bearer admin"), "get", "/metrics").await,
            Verdict::Allowed {
                user: "admin".into()
            },
            "a cached token is still answered"
        );
        assert!(
            auth.cache.lock().expect("lock").entries.len() <= 3,
            "refusals are not cached"
        );
    }

    /// Reviews that hang (a stalled API server) hold their slots; further unseen tokens are
    /// refused at once instead of piling up requests.
    #[derive(Clone, Default)]
    struct Stalled {
        started: Arc<AtomicUsize>,
    }

    impl Reviewer for Stalled {
        fn token_review(&self, _token: &str) -> BoxFuture<'_, Result<Option<User>, String>> {
            self.started.fetch_add(1, Ordering::SeqCst);
            Box::pin(futures::future::pending())
        }
        fn access_review(&self, _: &User, _: &str, _: &str) -> BoxFuture<'_, Result<bool, String>> {
            Box::pin(async { Ok(false) })
        }
    }

    #[tokio::test]
    async fn at_most_max_in_flight_reviews_wait_on_the_api_server() {
        let stalled = Stalled::default();
        let options = AuthOptions {
            max_in_flight: 2,
            ..unthrottled()
        };
        let auth = DelegatedAuth::new(stalled.clone(), options);
        let mut waiting = Vec::new();
        for n in 0..2 {
            let auth = auth.clone();
            waiting.push(tokio::spawn(async move {
                auth.check(Some(&format!("Bearer t{n}")), "get", "/metrics")
                    .await
            }));
        }
        while stalled.started.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        for n in 2..10 {
            let header = format!("Bearer t{n}");
            let answer = tokio::time::timeout(
                Duration::from_secs(5),
                auth.check(Some(&header), "get", "/metrics"),
            )
            .await;
            assert_eq!(answer, Ok(Verdict::Throttled), "answered at once");
        }
        assert_eq!(stalled.started.load(Ordering::SeqCst), 2);
        for w in waiting {
            w.abort();
        }
    }
}
