//! What the operator scenarios read from and put into the testbed cluster: kube-sim's request
//! log classified by verb and by what each request was for, the objects named by an
//! operator's write Events, and unrelated Secrets and ConfigMaps that an operator with scoped
//! watches must not pay for in memory.
//!
//! Measuring only: nothing here asserts a figure or starts a process.

use std::collections::BTreeMap;

use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kube_sim::RequestRecord;

use crate::measure::run_bounded;
use crate::report::Table;

/// Bounds the seeding, so a stuck emulator fails the run instead of hanging it.
const SEED_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);
const CONCURRENCY: usize = 32;

/// What a request of the operator was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    /// An object the operator deploys (RBAC, Deployment, ConfigMap, StorageClass, ...).
    Operand,
    /// Its own ClusterCSIDriver (status, observedConfig).
    Cr,
    Event,
    /// Leader election.
    Lease,
}

impl Target {
    pub(crate) const ALL: [Target; 4] = [Target::Operand, Target::Cr, Target::Event, Target::Lease];

    pub(crate) fn of(r: &RequestRecord) -> Target {
        match r.resource.as_str() {
            "coordination.k8s.io/leases" => Target::Lease,
            "/events" | "events.k8s.io/events" => Target::Event,
            "operator.openshift.io/clustercsidrivers" => Target::Cr,
            _ => Target::Operand,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Target::Operand => "operand objects",
            Target::Cr => "ClusterCSIDriver",
            Target::Event => "Events",
            Target::Lease => "Lease",
        }
    }
}

/// Requests counted by verb and by what they were for.
#[derive(Debug, Default, Clone)]
pub(crate) struct VerbCounts {
    counts: BTreeMap<String, BTreeMap<Target, usize>>,
}

impl VerbCounts {
    pub(crate) fn of(records: &[RequestRecord]) -> Self {
        let mut counts: BTreeMap<String, BTreeMap<Target, usize>> = BTreeMap::new();
        for r in records {
            *counts
                .entry(r.verb.clone())
                .or_default()
                .entry(Target::of(r))
                .or_default() += 1;
        }
        VerbCounts { counts }
    }

    pub(crate) fn get(&self, verb: &str, target: Option<Target>) -> usize {
        self.counts.get(verb).map_or(0, |by| match target {
            Some(t) => by.get(&t).copied().unwrap_or(0),
            None => by.values().sum(),
        })
    }

    /// Requests of `verbs` for anything but leader election.
    pub(crate) fn without_lease(&self, verbs: &[&str]) -> usize {
        verbs
            .iter()
            .map(|v| self.get(v, None) - self.get(v, Some(Target::Lease)))
            .sum()
    }

    pub(crate) fn table(&self, title: &str) -> Table {
        let mut header = vec!["Verb"];
        header.extend(Target::ALL.iter().map(|t| t.label()));
        header.push("all");
        let mut table = Table::new(title, &header);
        let order = [
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ];
        let mut verbs: Vec<&str> = order
            .iter()
            .copied()
            .filter(|v| self.counts.contains_key(*v))
            .collect();
        verbs.extend(
            self.counts
                .keys()
                .map(String::as_str)
                .filter(|v| !order.contains(v)),
        );
        if verbs.is_empty() {
            let mut row = vec!["(no requests)".to_string()];
            row.extend((0..=Target::ALL.len()).map(|_| "0".to_string()));
            table.row(row);
        }
        for verb in verbs {
            let mut row = vec![verb.to_string()];
            row.extend(
                Target::ALL
                    .iter()
                    .map(|t| self.get(verb, Some(*t)).to_string()),
            );
            row.push(self.get(verb, None).to_string());
            table.row(row);
        }
        table
    }
}

/// Where a scenario reads the requests an operator made: kube-sim's request log, or the real
/// API server's audit log.
pub(crate) trait RequestLog {
    fn all_requests(&self) -> Vec<RequestRecord>;
}

impl RequestLog for testbed::Testbed {
    fn all_requests(&self) -> Vec<RequestRecord> {
        self.kube.requests()
    }
}

impl RequestLog for realkube::ControlPlane {
    fn all_requests(&self) -> Vec<RequestRecord> {
        self.requests()
    }
}

/// Writes other than leader election: what "the operator is still working" means.
pub(crate) fn working_writes(records: &[RequestRecord]) -> usize {
    records
        .iter()
        .filter(|r| r.is_write() && Target::of(r) != Target::Lease)
        .count()
}

pub(crate) fn query_suffix(query: &str) -> String {
    if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    }
}

/// `verb path?query → code`, for listing requests nobody expected.
pub(crate) fn describe(r: &RequestRecord) -> String {
    format!(
        "{} {}{} → {}",
        r.verb,
        r.path,
        query_suffix(&r.query),
        r.code
    )
}

/// PASS or OVER, as the budget tables print a verdict.
pub(crate) fn verdict(ok: bool) -> String {
    if ok { "PASS" } else { "OVER" }.to_string()
}

/// Which object each operand write was for, counted per object. kube-sim's request log does
/// not name the object of a create (the name is in the body), so this reads the write Events
/// the apply engine records ("Created <Kind.group/name -n ns> because it was missing", as
/// library-go words them); the caller cross-checks their number with the log. A repeat of the
/// same write is one Event whose `count` went up (client-go's correlation), so counts are
/// summed; writes folded into a `(combined from similar events)` Event name no object and are
/// left out.
pub(crate) async fn written_objects(
    client: &Client,
    component: &str,
) -> anyhow::Result<BTreeMap<String, usize>> {
    let events = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("cannot list Events")?;
    let mut per_object = BTreeMap::new();
    for e in events.items {
        let ours = e.reporting_component.as_deref() == Some(component)
            || e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(component);
        if let (true, Some(object)) = (ours, e.message.as_deref().and_then(write_event_object)) {
            let count = usize::try_from(e.count.unwrap_or(1)).unwrap_or(1).max(1);
            *per_object.entry(object.to_string()).or_insert(0) += count;
        }
    }
    Ok(per_object)
}

/// The object a write Event's message names, or `None` for any other message.
pub(crate) fn write_event_object(message: &str) -> Option<&str> {
    let rest = ["Created ", "Updated ", "Deleted "]
        .iter()
        .find_map(|verb| message.strip_prefix(verb))?;
    let object = rest.split(" because").next()?.trim();
    (!object.is_empty()).then_some(object)
}

/// Unrelated objects to create before an operator starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unrelated {
    pub namespaces: usize,
    pub secrets: usize,
    pub config_maps: usize,
}

/// About 1 KiB of printable filler, like a CA bundle or a small config file.
fn filler(i: usize) -> String {
    let line = format!("{i:08}-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n");
    line.repeat(1024 / line.len() + 1)
}

/// Secrets and ConfigMaps the operator has no business with, in namespaces of their own: its
/// memory must not grow with them (DESIGN §3, scoped watches).
pub(crate) async fn seed_unrelated(client: &Client, scale: Unrelated) -> anyhow::Result<()> {
    eprintln!(
        "  creating {} Secrets and {} ConfigMaps in {} other namespaces",
        scale.secrets, scale.config_maps, scale.namespaces
    );
    let namespace_of = move |i: usize| format!("unrelated-{}", i % scale.namespaces);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    run_bounded(scale.namespaces, CONCURRENCY, SEED_LIMIT, |i| {
        let api = namespaces.clone();
        async move {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace_of(i)),
                    ..Default::default()
                },
                ..Default::default()
            };
            api.create(&PostParams::default(), &ns)
                .await
                .with_context(|| format!("creating namespace {}", namespace_of(i)))?;
            Ok(())
        }
    })
    .await?;
    run_bounded(scale.secrets, CONCURRENCY, SEED_LIMIT, |i| {
        let api: Api<Secret> = Api::namespaced(client.clone(), &namespace_of(i));
        async move {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(format!("secret-{i}")),
                    ..Default::default()
                },
                type_: Some("Opaque".into()),
                data: Some(BTreeMap::from([
                    (
                        "password".to_string(),
                        ByteString(format!("{i:032x}").into_bytes()),
                    ),
                    ("ca.crt".to_string(), ByteString(filler(i).into_bytes())),
                ])),
                ..Default::default()
            };
            api.create(&PostParams::default(), &secret)
                .await
                .with_context(|| format!("creating secret-{i}"))?;
            Ok(())
        }
    })
    .await?;
    run_bounded(scale.config_maps, CONCURRENCY, SEED_LIMIT, |i| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace_of(i));
        async move {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("config-{i}")),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("config.yaml".to_string(), filler(i))])),
                ..Default::default()
            };
            api.create(&PostParams::default(), &cm)
                .await
                .with_context(|| format!("creating config-{i}"))?;
            Ok(())
        }
    })
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(verb: &str, resource: &str) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: String::new(),
            path: String::new(),
            query: String::new(),
            user: "operator".into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            code: 200,
        }
    }

    #[test]
    fn requests_are_split_by_what_they_were_for() {
        let counts = VerbCounts::of(&[
            record("get", "coordination.k8s.io/leases"),
            record("update", "coordination.k8s.io/leases"),
            record("create", "/events"),
            record("update", "operator.openshift.io/clustercsidrivers"),
            record("create", "apps/deployments"),
            record("watch", "/secrets"),
        ]);
        assert_eq!(counts.get("update", None), 2);
        assert_eq!(counts.get("update", Some(Target::Lease)), 1);
        assert_eq!(counts.get("create", Some(Target::Operand)), 1);
        assert_eq!(counts.get("create", Some(Target::Event)), 1);
        assert_eq!(counts.without_lease(&["get", "list"]), 0);
        assert_eq!(counts.without_lease(&["create", "update"]), 3);
        let table = counts.table("t");
        assert!(table.rows.iter().all(|r| r.len() == table.header.len()));
        assert_eq!(table.rows[0][0], "get", "verbs in the usual order");
        assert_eq!(table.rows.len(), 4);
        let empty = VerbCounts::default().table("t");
        assert_eq!(empty.rows.len(), 1);
        assert_eq!(empty.rows[0].len(), empty.header.len());
    }

    #[test]
    fn write_events_name_their_object() {
        assert_eq!(
            write_event_object("Created ConfigMap/cloud-conf -n ns because it was missing"),
            Some("ConfigMap/cloud-conf -n ns")
        );
        assert_eq!(
            write_event_object("Updated Deployment.apps/x -n ns because it changed"),
            Some("Deployment.apps/x -n ns")
        );
        assert_eq!(
            write_event_object("Deleted StorageClass.storage.k8s.io/sc"),
            Some("StorageClass.storage.k8s.io/sc")
        );
        assert_eq!(
            write_event_object("Operator log level changed to Debug"),
            None
        );
        assert_eq!(write_event_object("Created  because"), None);
    }
}
