//! The request log and fault injection: what tests use to count an operator's requests and to
//! make the API server misbehave on purpose.
//!
//! Both are reachable from Rust (`KubeSim::requests`, `KubeSim::inject`) and over the admin
//! HTTP paths under `/__sim/` (see `admin`), so an operator running as a separate process can
//! be observed and disturbed the same way.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One API request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Milliseconds since the simulator started.
    pub at_ms: u64,
    /// The Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection;
    /// or `discovery`, `openapi`, `other` for non-resource paths.
    pub verb: String,
    pub method: String,
    pub path: String,
    pub query: String,
    /// The authenticated user (bearer token name), or `system:anonymous`.
    pub user: String,
    pub user_agent: String,
    /// `group/resource` (`apps/deployments`, `/configmaps`), empty for non-resource paths.
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    /// The object's name; for a create, the name in the request body (as an audit log's
    /// objectRef gives it), empty with `generateName`.
    pub name: String,
    pub code: u16,
}

impl RequestRecord {
    /// create, update, patch, delete, deletecollection.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

pub struct RequestLog {
    records: Mutex<std::collections::VecDeque<RequestRecord>>,
    /// How many records are kept; the oldest go first, so a long benchmark's emulator memory
    /// stays flat.
    capacity: usize,
}

/// The default number of requests remembered.
pub const DEFAULT_LOG_CAPACITY: usize = 200_000;

impl Default for RequestLog {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_LOG_CAPACITY)
    }
}

impl RequestLog {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            records: Mutex::new(std::collections::VecDeque::new()),
            capacity: capacity.max(1),
        }
    }

    pub fn push(&self, r: RequestRecord) {
        let mut records = lock(&self.records);
        if records.len() >= self.capacity {
            records.pop_front();
        }
        records.push_back(r);
    }

    pub fn snapshot(&self) -> Vec<RequestRecord> {
        lock(&self.records).iter().cloned().collect()
    }

    pub fn clear(&self) {
        lock(&self.records).clear();
    }
}

/// Which requests a fault applies to; empty fields match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RequestMatch {
    pub verb: String,
    /// `group/resource` as in the request log, or just the resource name.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub user: String,
    /// A substring of the path.
    pub path_contains: String,
}

impl RequestMatch {
    pub fn matches(&self, r: &RequestRecord) -> bool {
        let field = |want: &str, have: &str| want.is_empty() || want == have;
        let resource_ok = self.resource.is_empty()
            || self.resource == r.resource
            || r.resource
                .rsplit_once('/')
                .is_some_and(|(_, res)| res == self.resource);
        field(&self.verb, &r.verb)
            && resource_ok
            && field(&self.namespace, &r.namespace)
            && field(&self.name, &r.name)
            && field(&self.user, &r.user)
            && (self.path_contains.is_empty() || r.path.contains(&self.path_contains))
    }
}

/// An injected fault: answer matching requests with an error status, or delay them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    #[serde(default, rename = "match")]
    pub matches: RequestMatch,
    /// HTTP status to answer with (e.g. 500, 503, 409, 429); 0 means "only add latency".
    #[serde(default)]
    pub code: u16,
    /// How many matching requests it affects; 0 means until cleared.
    #[serde(default)]
    pub times: u32,
    #[serde(default)]
    pub latency_ms: u64,
}

#[derive(Default)]
pub struct Faults {
    rules: Mutex<Vec<(Fault, u32)>>,
}

/// What the faults decided for one request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub latency: Duration,
    pub error_code: Option<u16>,
}

impl Faults {
    pub fn add(&self, f: Fault) {
        lock(&self.rules).push((f, 0));
    }

    pub fn clear(&self) {
        lock(&self.rules).clear();
    }

    /// Each fault with how many requests it has matched.
    pub fn list_matched(&self) -> Vec<(Fault, u32)> {
        lock(&self.rules).clone()
    }

    /// Consumes one use of each matching rule.
    pub fn check(&self, r: &RequestRecord) -> Verdict {
        let mut rules = lock(&self.rules);
        let mut verdict = Verdict::default();
        for (fault, used) in rules.iter_mut() {
            if !fault.matches.matches(r) {
                continue;
            }
            *used += 1;
            verdict.latency += Duration::from_millis(fault.latency_ms);
            if fault.code != 0 && verdict.error_code.is_none() {
                verdict.error_code = Some(fault.code);
            }
        }
        rules.retain(|(f, used)| f.times == 0 || *used < f.times);
        verdict
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(verb: &str, resource: &str) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: "GET".into(),
            path: "/api/v1/configmaps".into(),
            query: String::new(),
            user: "admin".into(),
            user_agent: "test".into(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: "ns".into(),
            name: String::new(),
            code: 200,
        }
    }

    #[test]
    fn faults_fire_the_given_number_of_times() {
        let f = Faults::default();
        f.add(Fault {
            matches: RequestMatch {
                verb: "create".into(),
                resource: "configmaps".into(),
                ..Default::default()
            },
            code: 503,
            times: 2,
            latency_ms: 0,
        });
        assert_eq!(f.check(&rec("get", "/configmaps")).error_code, None);
        assert_eq!(f.check(&rec("create", "/configmaps")).error_code, Some(503));
        assert_eq!(f.list_matched()[0].1, 1, "only the create matched");
        assert_eq!(f.check(&rec("create", "/configmaps")).error_code, Some(503));
        assert_eq!(
            f.check(&rec("create", "/configmaps")).error_code,
            None,
            "used up"
        );
        assert!(f.list_matched().is_empty());
    }

    #[test]
    fn latency_only_faults_delay_without_failing() {
        let f = Faults::default();
        f.add(Fault {
            matches: RequestMatch::default(),
            code: 0,
            times: 0,
            latency_ms: 30,
        });
        let v = f.check(&rec("list", "apps/deployments"));
        assert_eq!(
            v,
            Verdict {
                latency: Duration::from_millis(30),
                error_code: None
            }
        );
        assert_eq!(f.list_matched().len(), 1, "times 0 lasts until cleared");
    }

    #[test]
    fn faults_can_single_out_one_client_and_one_object() {
        let f = Faults::default();
        f.add(Fault {
            matches: RequestMatch {
                resource: "coordination.k8s.io/leases".into(),
                name: "op-lock".into(),
                user: "replica-a".into(),
                ..Default::default()
            },
            code: 503,
            times: 0,
            latency_ms: 0,
        });
        let lease = |user: &str, name: &str| RequestRecord {
            user: user.into(),
            name: name.into(),
            ..rec("update", "coordination.k8s.io/leases")
        };
        assert_eq!(
            f.check(&lease("replica-a", "op-lock")).error_code,
            Some(503)
        );
        assert_eq!(
            f.check(&lease("replica-b", "op-lock")).error_code,
            None,
            "another user's renewal of the same lease"
        );
        assert_eq!(
            f.check(&lease("replica-a", "other-lock")).error_code,
            None,
            "the same user's other lease"
        );
        let mut configmap = lease("replica-a", "op-lock");
        configmap.resource = "/configmaps".into();
        assert_eq!(f.check(&configmap).error_code, None, "another resource");
    }

    #[test]
    fn the_log_keeps_the_newest_records() {
        let log = RequestLog::with_capacity(2);
        for verb in ["get", "list", "create"] {
            log.push(rec(verb, "x"));
        }
        let verbs: Vec<String> = log.snapshot().into_iter().map(|r| r.verb).collect();
        assert_eq!(verbs, vec!["list", "create"]);
    }

    #[test]
    fn writes_are_classified() {
        assert!(rec("patch", "x").is_write());
        assert!(!rec("watch", "x").is_write());
    }
}
