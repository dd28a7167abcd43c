//! kube-rs against kube-sim, part 2: watches (resumption, bookmarks, 410 Gone, selectors,
//! timeouts), kube-rs' `watcher()` and `Controller`, and kube-sim's own test levers (the
//! request log, fault injection, dropped watches, restarts).
//!
//! The watch semantics asserted here are the ones kube-rs' runtime relies on against a real
//! kube-apiserver; a divergence would make an operator behave differently on a cluster.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{
    TestResult, client_for, config_map, eventually, namespace, next, start, start_with, status,
};
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{
    Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use kube_sim::{Fault, RequestMatch, SimConfig};
use serde_json::json;

/// The list resourceVersion of a namespace's ConfigMaps: where a watch starts.
async fn list_rv(api: &Api<ConfigMap>) -> String {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("a list resourceVersion")
}

fn set_data(key: &str, value: &str) -> Patch<serde_json::Value> {
    Patch::Merge(json!({"data": {key: value}}))
}

/// A short description of a watch event, for order assertions.
fn describe(e: &WatchEvent<ConfigMap>) -> String {
    match e {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(_) => "BOOKMARK".into(),
        WatchEvent::Error(s) => format!("ERROR {}", s.code),
    }
}

/// The next non-bookmark event of a watch.
async fn next_change<S>(stream: &mut S) -> WatchEvent<ConfigMap>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    loop {
        match next(stream).await {
            Some(Ok(WatchEvent::Bookmark(_))) => continue,
            Some(Ok(e)) => return e,
            other => panic!("expected a watch event, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn watch_from_a_resource_version_sees_changes_in_order() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("before", &[], &[]))
        .await?;
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(60), &rv)
        .await?
        .boxed();
    cms.create(&PostParams::default(), &config_map("w", &[], &[("k", "1")]))
        .await?;
    cms.patch("w", &PatchParams::default(), &set_data("k", "2"))
        .await?;
    cms.delete("w", &DeleteParams::default()).await?;
    let mut seen = Vec::new();
    let mut rvs = Vec::new();
    for _ in 0..3 {
        let e = next_change(&mut stream).await;
        if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &e {
            rvs.push(o.resource_version().unwrap_or_default().parse::<u64>()?);
        }
        seen.push(describe(&e));
    }
    assert_eq!(
        seen,
        ["ADDED w", "MODIFIED w", "DELETED w"],
        "`before` existed at the list rv and is not replayed"
    );
    assert!(
        rvs.windows(2).all(|w| w[0] < w[1]),
        "resourceVersions increase: {rvs:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_watch_resumed_from_an_older_version_replays_what_it_missed() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_rv(&cms).await;
    cms.create(&PostParams::default(), &config_map("missed", &[], &[]))
        .await?;
    cms.patch("missed", &PatchParams::default(), &set_data("k", "v"))
        .await?;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(60), &rv)
        .await?
        .boxed();
    assert_eq!(describe(&next_change(&mut stream).await), "ADDED missed");
    let modified = next_change(&mut stream).await;
    assert_eq!(describe(&modified), "MODIFIED missed");
    if let WatchEvent::Modified(cm) = modified {
        assert_eq!(
            cm.data.unwrap_or_default().get("k").map(String::as_str),
            Some("v")
        );
    }
    Ok(())
}

#[tokio::test]
async fn bookmarks_arrive_when_allowed() -> TestResult {
    let config = SimConfig {
        bookmark_interval: Duration::from_millis(100),
        ..SimConfig::default()
    };
    let (_sim, client) = start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(60), &rv)
        .await?
        .boxed();
    match next(&mut stream).await {
        Some(Ok(WatchEvent::Bookmark(b))) => {
            let at: u64 = b.metadata.resource_version.parse()?;
            assert!(
                at >= rv.parse::<u64>()?,
                "a bookmark never goes back in time"
            );
            assert_eq!(b.types.kind, "ConfigMap");
        }
        other => panic!("expected a BOOKMARK, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn no_bookmarks_unless_allowed() -> TestResult {
    let config = SimConfig {
        bookmark_interval: Duration::from_millis(50),
        ..SimConfig::default()
    };
    let (_sim, client) = start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_rv(&cms).await;
    let events: Vec<_> = cms
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), &rv)
        .await?
        .collect()
        .await;
    assert!(
        events.is_empty(),
        "a quiet watch without allowWatchBookmarks sends nothing: {events:?}"
    );
    Ok(())
}

#[tokio::test]
async fn timeout_seconds_ends_the_watch() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(1), &rv)
        .await?
        .boxed();
    loop {
        match next(&mut stream).await {
            None => break,
            Some(Ok(WatchEvent::Bookmark(_))) => {}
            other => panic!("a quiet watch ends without events, got {other:?}"),
        }
    }
    Ok(())
}

#[tokio::test]
async fn resuming_after_compaction_is_gone() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let old = list_rv(&cms).await;
    cms.create(&PostParams::default(), &config_map("newer", &[], &[]))
        .await?;
    sim.compact();
    // As the watch cache does: the watch starts (200) and its first event is an ERROR
    // carrying a 410 Expired Status, which kube-rs surfaces as `WatchEvent::Error`.
    let mut stream = cms
        .watch(&WatchParams::default().timeout(60), &old)
        .await?
        .boxed();
    match next(&mut stream).await {
        Some(Ok(WatchEvent::Error(s))) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(
                s.message.starts_with("too old resource version"),
                "{}",
                s.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    // The current version is still good to resume from.
    let now = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(60), &now)
        .await?
        .boxed();
    cms.create(&PostParams::default(), &config_map("latest", &[], &[]))
        .await?;
    assert_eq!(describe(&next_change(&mut stream).await), "ADDED latest");
    Ok(())
}

#[tokio::test]
async fn watch_label_selector_turns_transitions_into_added_and_deleted() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().labels("app=web").timeout(60), &rv)
        .await?
        .boxed();
    cms.create(
        &PostParams::default(),
        &config_map("in", &[("app", "web")], &[]),
    )
    .await?;
    cms.create(
        &PostParams::default(),
        &config_map("out", &[("app", "db")], &[]),
    )
    .await?;
    cms.patch("out", &PatchParams::default(), &set_data("ignored", "yes"))
        .await?;
    cms.patch(
        "in",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})),
    )
    .await?;
    cms.patch(
        "out",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await?;
    cms.patch("out", &PatchParams::default(), &set_data("k", "v"))
        .await?;
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(describe(&next_change(&mut stream).await));
    }
    assert_eq!(
        seen,
        ["ADDED in", "DELETED in", "ADDED out", "MODIFIED out"]
    );
    Ok(())
}

#[tokio::test]
async fn watch_field_selector_sees_only_the_named_object() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(
            &WatchParams::default()
                .fields("metadata.name=wanted")
                .timeout(60),
            &rv,
        )
        .await?
        .boxed();
    cms.create(&PostParams::default(), &config_map("other", &[], &[]))
        .await?;
    cms.create(&PostParams::default(), &config_map("wanted", &[], &[]))
        .await?;
    cms.delete("other", &DeleteParams::default()).await?;
    cms.delete("wanted", &DeleteParams::default()).await?;
    assert_eq!(describe(&next_change(&mut stream).await), "ADDED wanted");
    assert_eq!(describe(&next_change(&mut stream).await), "DELETED wanted");
    Ok(())
}

#[tokio::test]
async fn watcher_with_streaming_lists_syncs_then_follows() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "streaming").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for name in ["a", "b"] {
        cms.create(&PostParams::default(), &config_map(name, &[], &[]))
            .await?;
    }
    let mut events = watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        match next(&mut events).await.expect("the watcher keeps going")? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    initial.sort();
    assert_eq!(initial, ["a", "b"]);
    cms.create(&PostParams::default(), &config_map("c", &[], &[]))
        .await?;
    match next(&mut events).await.expect("the watcher keeps going")? {
        watcher::Event::Apply(cm) => assert_eq!(cm.name_any(), "c"),
        other => panic!("expected Apply(c), got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn watcher_with_list_watch_syncs_then_follows() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "listwatch").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    let mut events = watcher(cms.clone(), watcher::Config::default().page_size(1)).boxed();
    let mut initial = Vec::new();
    loop {
        match next(&mut events).await.expect("the watcher keeps going")? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    assert_eq!(initial, ["a"]);
    cms.delete("a", &DeleteParams::default()).await?;
    match next(&mut events).await.expect("the watcher keeps going")? {
        watcher::Event::Delete(cm) => assert_eq!(cm.name_any(), "a"),
        other => panic!("expected Delete(a), got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn the_request_log_counts_writes() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    sim.clear_requests();
    cms.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    cms.get("a").await?;
    cms.list(&ListParams::default()).await?;
    cms.patch("a", &PatchParams::default(), &set_data("k", "v"))
        .await?;
    cms.delete("a", &DeleteParams::default()).await?;
    let log = sim.requests();
    let writes: Vec<&str> = log
        .iter()
        .filter(|r| r.is_write())
        .map(|r| r.verb.as_str())
        .collect();
    assert_eq!(writes, ["create", "patch", "delete"]);
    let reads: Vec<&str> = log
        .iter()
        .filter(|r| !r.is_write())
        .map(|r| r.verb.as_str())
        .collect();
    assert_eq!(reads, ["get", "list"]);
    let patch = log
        .iter()
        .find(|r| r.verb == "patch")
        .expect("the patch is logged");
    assert_eq!(
        (
            patch.resource.as_str(),
            patch.namespace.as_str(),
            patch.name.as_str(),
            patch.code
        ),
        ("/configmaps", "default", "a", 200)
    );
    assert_eq!(patch.user, "test", "the bearer token names the user");
    Ok(())
}

#[tokio::test]
async fn injected_errors_fail_the_given_number_of_requests() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let only_creates = RequestMatch {
        verb: "create".into(),
        resource: "configmaps".into(),
        ..Default::default()
    };
    sim.inject(Fault {
        matches: only_creates,
        code: 500,
        times: 2,
        latency_ms: 0,
    });
    cms.list(&ListParams::default())
        .await
        .expect("other verbs are unaffected");
    for _ in 0..2 {
        let s = status(
            cms.create(&PostParams::default(), &config_map("a", &[], &[]))
                .await,
        );
        assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
    }
    cms.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await
        .expect("the third create succeeds");
    let codes: Vec<u16> = sim
        .requests()
        .iter()
        .filter(|r| r.verb == "create")
        .map(|r| r.code)
        .collect();
    assert_eq!(codes, [500, 500, 201]);
    Ok(())
}

/// kube-rs retries 503s by itself; the log shows the failed attempts.
#[tokio::test]
async fn injected_unavailability_is_retried_by_kube_rs() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "get".into(),
            ..Default::default()
        },
        code: 503,
        times: 2,
        latency_ms: 0,
    });
    cms.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    cms.get("a")
        .await
        .expect("kube-rs retries 503 and succeeds");
    let codes: Vec<u16> = sim
        .requests()
        .iter()
        .filter(|r| r.verb == "get")
        .map(|r| r.code)
        .collect();
    assert_eq!(codes, [503, 503, 200]);
    Ok(())
}

#[tokio::test]
async fn injected_latency_trips_a_client_timeout() -> TestResult {
    let (sim, _client) = start().await;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig("impatient"))?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.read_timeout = Some(Duration::from_millis(300));
    let client = Client::try_from(config)?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("slow", &[], &[]))
        .await?;
    // Far longer than the client waits, so the outcome does not depend on machine load.
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "get".into(),
            ..Default::default()
        },
        code: 0,
        times: 1,
        latency_ms: 10_000,
    });
    let slow = cms.get("slow").await;
    assert!(
        slow.is_err(),
        "the delayed answer comes after the client gave up"
    );
    assert!(
        !matches!(slow, Err(kube::Error::Api(_))),
        "a timeout, not an API error"
    );
    cms.get("slow").await.expect("only one request was delayed");
    Ok(())
}

#[tokio::test]
async fn drop_watches_ends_open_watches() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(
            &WatchParams::default().disable_bookmarks().timeout(300),
            &rv,
        )
        .await?
        .boxed();
    cms.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    assert_eq!(describe(&next_change(&mut stream).await), "ADDED a");
    sim.drop_watches();
    assert!(next(&mut stream).await.is_none(), "the stream ends");
    Ok(())
}

#[tokio::test]
async fn restart_drops_connections_and_keeps_the_data() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("kept", &[], &[("k", "v")]),
    )
    .await?;
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(
            &WatchParams::default().disable_bookmarks().timeout(300),
            &rv,
        )
        .await?
        .boxed();
    sim.restart(Duration::from_millis(300));
    assert!(
        next(&mut stream).await.is_none_or(|e| e.is_err()),
        "the open watch ends"
    );
    let kept = eventually("the server to answer again", || async {
        cms.get("kept").await.ok()
    })
    .await;
    assert_eq!(
        kept.data.unwrap_or_default().get("k").map(String::as_str),
        Some("v")
    );
    cms.create(&PostParams::default(), &config_map("after", &[], &[]))
        .await?;
    // A new client (a restarted operator) sees the same state.
    let fresh: Api<ConfigMap> = Api::namespaced(client_for(&sim, "other").await, "default");
    let mut names: Vec<String> = fresh
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    assert_eq!(names, ["after", "kept"]);
    Ok(())
}

// ----- a kube-rs Controller --------------------------------------------------------------

struct Ctx {
    client: Client,
}

/// Copies a ConfigMap's data into a Secret of the same name that the ConfigMap owns.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let ns = cm.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let data: BTreeMap<String, ByteString> = cm
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, ByteString(v.into_bytes())))
        .collect();
    match secrets.get_opt(&cm.name_any()).await? {
        None => {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(cm.name_any()),
                    owner_references: cm.controller_owner_ref(&()).map(|r| vec![r]),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            secrets.create(&PostParams::default(), &secret).await?;
        }
        Some(mut live) if live.data.as_ref() != Some(&data) => {
            live.data = Some(data);
            secrets
                .replace(&cm.name_any(), &PostParams::default(), &live)
                .await?;
        }
        Some(_) => {}
    }
    Ok(Action::await_change())
}

fn error_policy(_cm: Arc<ConfigMap>, _e: &kube::Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

async fn secret_value(secrets: &Api<Secret>, name: &str, key: &str) -> Option<String> {
    let s = secrets.get_opt(name).await.ok()??;
    let v = s.data?.get(key)?.0.clone();
    String::from_utf8(v).ok()
}

#[tokio::test]
async fn a_controller_converges_and_survives_dropped_watches_and_compaction() -> TestResult {
    let (sim, client) = start().await;
    let ns = namespace(&client, "ctl").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let controller = Controller::new(cms.clone(), watcher::Config::default())
        .owns(secrets.clone(), watcher::Config::default())
        .run(
            reconcile,
            error_policy,
            Arc::new(Ctx {
                client: client.clone(),
            }),
        );
    let sink = errors.clone();
    let task = tokio::spawn(controller.for_each(move |r| {
        if let Err(e) = r {
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{e:?}"));
        }
        futures::future::ready(())
    }));
    let errors_now = || {
        errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    };

    cms.create(
        &PostParams::default(),
        &config_map("app", &[], &[("color", "red")]),
    )
    .await?;
    eventually("the Secret to be created", || async {
        (secret_value(&secrets, "app", "color").await.as_deref() == Some("red")).then_some(())
    })
    .await;
    let owner = secrets
        .get("app")
        .await?
        .owner_references()
        .first()
        .map(|r| r.name.clone());
    assert_eq!(owner.as_deref(), Some("app"));

    // Dropped watches: the watchers resume from their resourceVersion without an error.
    sim.drop_watches();
    cms.patch("app", &PatchParams::default(), &set_data("color", "green"))
        .await?;
    eventually("the change after dropped watches", || async {
        (secret_value(&secrets, "app", "color").await.as_deref() == Some("green")).then_some(())
    })
    .await;
    assert_eq!(
        errors_now(),
        Vec::<String>::new(),
        "no errors across dropped watches"
    );

    // A drifted Secret (an owned object) is put back.
    let mut drifted = secrets.get("app").await?;
    drifted.data = Some([("color".to_string(), ByteString(b"tampered".to_vec()))].into());
    secrets
        .replace("app", &PostParams::default(), &drifted)
        .await?;
    eventually("the drift to be undone", || async {
        (secret_value(&secrets, "app", "color").await.as_deref() == Some("green")).then_some(())
    })
    .await;

    // Compaction then a dropped watch: resuming is 410 Gone, the watcher re-lists.
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    other
        .create(&PostParams::default(), &config_map("elsewhere", &[], &[]))
        .await?;
    sim.compact();
    sim.drop_watches();
    cms.patch("app", &PatchParams::default(), &set_data("color", "blue"))
        .await?;
    eventually("the change after compaction", || async {
        (secret_value(&secrets, "app", "color").await.as_deref() == Some("blue")).then_some(())
    })
    .await;
    cms.create(
        &PostParams::default(),
        &config_map("second", &[], &[("size", "xl")]),
    )
    .await?;
    eventually("a new object after compaction", || async {
        (secret_value(&secrets, "second", "size").await.as_deref() == Some("xl")).then_some(())
    })
    .await;

    // kube 5 surfaces the 410 as `QueueError(WatchError(Status { code: 410, .. }))` in the
    // controller's stream, then re-lists on its own; anything else is a failure.
    let (gone, unexpected): (Vec<String>, Vec<String>) = errors_now()
        .into_iter()
        .partition(|e| e.contains("WatchError") && e.contains("code: 410"));
    assert!(
        !gone.is_empty(),
        "resuming from before the compaction was answered 410 Gone"
    );
    assert_eq!(
        unexpected,
        Vec::<String>::new(),
        "only 410s from the compaction"
    );
    assert!(!task.is_finished(), "the controller keeps running");
    task.abort();
    Ok(())
}
