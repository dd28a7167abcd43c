//! The admin HTTP paths under `/__sim/`: the request log and fault injection for operators
//! running as separate processes (tests in Rust use the `KubeSim` methods instead).
//!
//! | method and path | effect |
//! |---|---|
//! | `GET /__sim/requests` | the request log as a JSON array |
//! | `DELETE /__sim/requests` | clear the log |
//! | `GET /__sim/faults`, `POST /__sim/faults` (a `Fault` as JSON), `DELETE /__sim/faults` | list (each with the requests it `matched`), add, clear faults |
//! | `POST /__sim/drop-watches` | end every open watch |
//! | `POST /__sim/compact` | forget watch history (resuming watches get 410) |
//! | `POST /__sim/restart?downtimeMs=N` | drop every connection, refuse new ones for N ms |
//! | `GET /__sim/workloads`, `PUT /__sim/workloads` (a `WorkloadConfig`), `DELETE /__sim/workloads` | workload simulator settings |
//! | `GET /__sim/processes` | the pods running as local processes (`ProcessInfo` as JSON) |
//!
//! Admin requests are not recorded in the request log and are not subject to faults.
//!
//! Who may use them: anyone on loopback (user-name-tokens mode); in issued-tokens mode (kube-sim
//! beyond loopback) only a superuser's issued token (a member of `system:masters`), so nobody
//! who can merely reach the port can read the request log, break requests or restart the
//! server. An unknown token is 401, anyone else 403 (`authentication.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};
use serde_json::json;

use crate::Shared;
use crate::errors::ApiError;
use crate::observe::Fault;
use crate::workload::WorkloadConfig;

use super::responses::{Body, json_response};

pub async fn handle(
    shared: &Arc<Shared>,
    method: &Method,
    path: &str,
    q: &HashMap<String, String>,
    body: &Bytes,
) -> Response<Body> {
    match answer(shared, method, path, q, body) {
        Ok(v) => json_response(200, &v),
        Err(e) => json_response(e.code, &e.to_status()),
    }
}

fn answer(
    shared: &Arc<Shared>,
    method: &Method,
    path: &str,
    q: &HashMap<String, String>,
    body: &Bytes,
) -> Result<serde_json::Value, ApiError> {
    let ok = || json!({"ok": true});
    match (method.as_str(), path) {
        ("GET", "requests") => Ok(serde_json::to_value(shared.log.snapshot()).unwrap_or_default()),
        ("DELETE", "requests") => {
            shared.log.clear();
            Ok(ok())
        }
        // Each fault with how many requests it has matched so far: a request a fault delays
        // and whose client gives up never reaches the request log, so this is where a test
        // sees that its fault touched anyone.
        ("GET", "faults") => Ok(serde_json::Value::Array(
            shared
                .faults
                .list_matched()
                .into_iter()
                .map(|(fault, matched)| {
                    let mut v = serde_json::to_value(fault).unwrap_or_default();
                    v["matched"] = json!(matched);
                    v
                })
                .collect(),
        )),
        ("POST", "faults") => {
            let f: Fault = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid fault: {e}")))?;
            shared.faults.add(f);
            Ok(ok())
        }
        ("DELETE", "faults") => {
            shared.faults.clear();
            Ok(ok())
        }
        ("POST", "drop-watches") => {
            shared.lock().drop_watches();
            Ok(ok())
        }
        ("POST", "compact") => {
            shared.lock().compact();
            Ok(ok())
        }
        ("POST", "restart") => {
            let ms = match q.get("downtimeMs") {
                None => 0,
                Some(s) => s.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!("downtimeMs: not a number: {s:?}"))
                })?,
            };
            shared.lock().drop_watches();
            // Answer first: the restart would otherwise cut this very response.
            let shared = shared.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                shared.restart.send_modify(|v| *v = ms);
            });
            Ok(ok())
        }
        ("GET", "workloads") => Ok(serde_json::to_value(
            shared
                .workloads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        )
        .unwrap_or_default()),
        ("PUT", "workloads") => {
            let w: WorkloadConfig = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid workload config: {e}")))?;
            *shared
                .workloads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(w);
            shared.changed.send_modify(|n| *n += 1);
            Ok(ok())
        }
        ("DELETE", "workloads") => {
            *shared
                .workloads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            Ok(ok())
        }
        ("GET", "processes") => {
            Ok(serde_json::to_value(shared.processes.list()).unwrap_or_default())
        }
        _ => Err(ApiError::no_route()),
    }
}
