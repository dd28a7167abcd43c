//! Watch streams: rendering (full, partial metadata, tables), bookmarks, and the end of a
//! stream when history is gone.

use super::responses::Body;
use crate::api::ListOptions;
use crate::errors::ApiError;
use crate::resources::ResourceType;
use crate::store::{Event, EventType, WatchStartError};
use crate::{Shared, api, table};
use bytes::Bytes;
use futures::StreamExt;
use http::{Response, header};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How objects are rendered for the client, from its Accept header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Render {
    Full,
    /// `as=Table`: server-side printing (`kubectl get`).
    Table,
    /// `as=PartialObjectMetadata[List]`: metadata only (kube-rs `metadata_watcher`).
    Metadata,
}

impl Render {
    pub(super) fn from_accept(accept: &str) -> Self {
        if table::wants_table(accept) {
            Self::Table
        } else if accept
            .split(',')
            .next()
            .is_some_and(|a| a.contains("as=PartialObjectMetadata"))
        {
            Self::Metadata
        } else {
            Self::Full
        }
    }
}

/// The metadata-only form of an object.
pub(super) fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A list in the metadata-only form.
pub(super) fn partial_metadata_list(list: &Value) -> Value {
    let items: Vec<Value> = list["items"]
        .as_array()
        .map(|a| a.iter().map(partial_metadata).collect())
        .unwrap_or_default();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list.get("metadata").cloned().unwrap_or_else(|| json!({})),
        "items": items,
    })
}

pub(super) struct WatchState {
    pub(super) shared: Arc<Shared>,
    pub(super) rt: Arc<ResourceType>,
    pub(super) opts: ListOptions,
    pub(super) rx: mpsc::Receiver<Arc<Event>>,
    /// Lines ready to send, in order.
    pub(super) queued: std::collections::VecDeque<Value>,
    /// Events at or below this resourceVersion were asked not to be sent (a watch from a
    /// resourceVersion newer than the store's waits for it).
    pub(super) skip_through: u64,
    pub(super) bookmarks: bool,
    pub(super) bookmark_every: Duration,
    pub(super) next_bookmark: tokio::time::Instant,
    pub(super) deadline: tokio::time::Instant,
    pub(super) render: Render,
    pub(super) sent_columns: bool,
    pub(super) done: bool,
}

/// When the next bookmark is due: every interval, and once just before the watch ends so the
/// client resumes from a fresh resourceVersion (the watch cache aims at deadline − 2 s too).
pub(super) fn next_bookmark_at(
    now: tokio::time::Instant,
    every: Duration,
    deadline: tokio::time::Instant,
) -> tokio::time::Instant {
    let regular = now + every;
    match deadline.checked_sub(Duration::from_secs(2)) {
        Some(last) if last > now && last < regular => last,
        _ => regular,
    }
}

pub(super) fn watch(
    shared: Arc<Shared>,
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    opts: ListOptions,
    q: &HashMap<String, String>,
    render: Render,
) -> Result<Response<Body>, ApiError> {
    let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
    let bookmarks = q.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let send_initial_param = match q.get("sendInitialEvents").map(String::as_str) {
        None | Some("") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "sendInitialEvents: Invalid value: {other:?}: must be true or false"
            )));
        }
    };
    let rv_match = q
        .get("resourceVersionMatch")
        .filter(|m| !m.is_empty())
        .map(String::as_str);
    if send_initial_param.is_some() && rv_match != Some("NotOlderThan") {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if send_initial_param.is_none() && rv_match.is_some() {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if send_initial_param == Some(true) && !bookmarks {
        return Err(ApiError::invalid_list_options(
            "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
        ));
    }
    let timeout =
        match q.get("timeoutSeconds").map(String::as_str) {
            // 0 means "the server's default", not "end at once".
            None | Some("") | Some("0") => shared.config.default_watch_timeout,
            Some(t) => Duration::from_secs(t.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("timeoutSeconds: Invalid value: {t:?}"))
            })?),
        };
    let unset_rv = rv_param.is_empty() || rv_param == "0";
    let send_initial = send_initial_param.unwrap_or(unset_rv);
    let requested_rv =
        if unset_rv {
            None
        } else {
            Some(rv_param.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {rv_param}"))
            })?)
        };
    // With initial events the state is sent as of now; otherwise resume after the given rv.
    let from = if send_initial { None } else { requested_rv };
    let gr = rt.group_resource();
    let mut cluster = shared.lock();
    let (backlog, rx) = match cluster.watch(&gr, namespace.as_deref(), from) {
        Ok(x) => x,
        Err(WatchStartError::Gone { requested, oldest }) => {
            // As the watch cache does: 200, then one ERROR event with a 410 Status.
            let status =
                ApiError::gone(format!("too old resource version: {requested} ({oldest})"))
                    .to_status();
            let line = json!({"type": "ERROR", "object": status});
            return Ok(stream_response(
                futures::stream::iter(vec![line_bytes(&line)]).boxed(),
            ));
        }
    };
    let mut queued = std::collections::VecDeque::new();
    if send_initial {
        for (_, obj) in cluster.store().iter(&gr, namespace.as_deref(), None) {
            if opts.labels.matches(obj) && opts.fields.matches(obj) {
                queued.push_back(json!({"type": "ADDED", "object": api::present(&rt, obj)}));
            }
        }
    }
    if send_initial_param == Some(true) {
        let mut bookmark = bookmark_object(&rt, cluster.store().current_rv());
        bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        queued.push_back(json!({"type": "BOOKMARK", "object": bookmark}));
    }
    drop(cluster);
    // Replayed history goes out before live events; it is already filtered by collection.
    queued.extend(backlog.iter().filter_map(|e| event_line(&rt, &opts, e)));
    let now = tokio::time::Instant::now();
    let deadline = now + timeout;
    let state = WatchState {
        shared: shared.clone(),
        rt,
        opts,
        rx,
        queued,
        skip_through: from.unwrap_or(0),
        bookmarks,
        bookmark_every: shared.config.bookmark_interval,
        next_bookmark: next_bookmark_at(now, shared.config.bookmark_interval, deadline),
        deadline,
        render,
        sent_columns: false,
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        let line = next_watch_line(&mut st).await?;
        Some((line, st))
    });
    Ok(stream_response(stream.boxed()))
}

pub(super) fn bookmark_object(rt: &ResourceType, rv: u64) -> Value {
    json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": {"resourceVersion": rv.to_string()}})
}

pub(super) async fn next_watch_line(st: &mut WatchState) -> Option<Bytes> {
    if st.done {
        return None;
    }
    loop {
        if let Some(mut line) = st.queued.pop_front() {
            render_line(st, &mut line);
            return Some(line_bytes(&line));
        }
        let wake = if st.bookmarks {
            st.next_bookmark.min(st.deadline)
        } else {
            st.deadline
        };
        tokio::select! {
            ev = st.rx.recv() => match ev {
                Some(e) => {
                    if e.rv > st.skip_through {
                        st.queued.extend(event_line(&st.rt, &st.opts, &e));
                    }
                }
                None => { st.done = true; return None; }
            },
            _ = tokio::time::sleep_until(wake) => {
                let now = tokio::time::Instant::now();
                if now >= st.deadline {
                    st.done = true;
                    return None;
                }
                st.next_bookmark = next_bookmark_at(now, st.bookmark_every, st.deadline);
                // Everything up to `rv` for this watcher is already in the channel (events are
                // queued under the same lock that advances rv): send those first, so a bookmark
                // never runs ahead of an unsent event.
                let rv = st.shared.lock().store().current_rv();
                let mut pending = false;
                while let Ok(e) = st.rx.try_recv() {
                    pending = true;
                    if e.rv > st.skip_through {
                        st.queued.extend(event_line(&st.rt, &st.opts, &e));
                    }
                }
                if pending {
                    continue;
                }
                let mut line = json!({"type": "BOOKMARK", "object": bookmark_object(&st.rt, rv.max(st.skip_through))});
                if st.render == Render::Table {
                    line["object"] = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv.to_string()}, "rows": []});
                }
                return Some(line_bytes(&line));
            }
        }
    }
}

/// Rewrites an event's object for the client's Accept: a one-row Table (`kubectl get -w`) or
/// metadata only.
pub(super) fn render_line(st: &mut WatchState, line: &mut Value) {
    if line["type"] == "BOOKMARK" || line["type"] == "ERROR" {
        return;
    }
    match st.render {
        Render::Full => {}
        Render::Table => {
            let obj = line["object"].take();
            line["object"] = table::watch_table(&st.rt, &obj, !st.sent_columns);
            st.sent_columns = true;
        }
        Render::Metadata => {
            let obj = line["object"].take();
            line["object"] = partial_metadata(&obj);
        }
    }
}

/// Turns a store event into a watch line for this watcher, applying selector transitions.
pub(super) fn event_line(rt: &ResourceType, opts: &ListOptions, e: &Event) -> Option<Value> {
    let sel = |o: &Value| opts.labels.matches(o) && opts.fields.matches(o);
    let now = sel(&e.object);
    let before = e.previous.as_deref().is_some_and(sel);
    let (kind, object) = match e.kind {
        EventType::Added if now => (EventType::Added, e.object.as_ref().clone()),
        EventType::Modified if now && before => (EventType::Modified, e.object.as_ref().clone()),
        EventType::Modified if now => (EventType::Added, e.object.as_ref().clone()),
        // An object that stops matching leaves the watch with its previous (matching) state,
        // stamped with the event's resourceVersion, as the watch cache sends it.
        EventType::Modified if before => {
            let mut prev = e.previous.as_deref().cloned().unwrap_or(Value::Null);
            if let Some(meta) = prev.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(e.rv.to_string()));
            }
            (EventType::Deleted, prev)
        }
        EventType::Deleted if before => (EventType::Deleted, e.object.as_ref().clone()),
        _ => return None,
    };
    Some(json!({"type": kind.as_str(), "object": api::present(rt, &object)}))
}

pub(super) fn line_bytes(v: &Value) -> Bytes {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

pub(super) fn stream_response(
    stream: futures::stream::BoxStream<'static, Bytes>,
) -> Response<Body> {
    let body = StreamBody::new(stream.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed_unsync(body))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed_unsync()))
}

impl ApiError {
    pub(super) fn invalid_list_options(message: &str) -> Self {
        let mut e = ApiError::bad_request(message);
        e.code = 422;
        e.reason = "Invalid";
        e.message = format!("ListOptions.meta.k8s.io \"\" is invalid: {message}");
        e
    }
}
