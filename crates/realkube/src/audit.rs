//! The API server's audit log (JSON lines) read as a request log in kube-sim's shape
//! ([`kube_sim::RequestRecord`]), so the checks the kube-sim tests make (writes per object,
//! requests while idle, who asked, refusals) read the real server the same way.
//!
//! The plane's audit policy logs each request once: when it completes, or, for a watch, when it
//! starts. Lines that do not parse are skipped (the log is read while the server appends), and
//! never fail a reader.

use std::path::Path;
use std::time::Instant;

use kube_sim::RequestRecord;
use serde_json::Value;

/// Every request in the log at `path`, `at_ms` counted from `started` (the plane's start).
pub fn read(path: &Path, started: Instant) -> Vec<RequestRecord> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // The wall-clock time of `started`: audit timestamps are wall-clock.
    let origin = jiff::Timestamp::now().as_millisecond() - started.elapsed().as_millis() as i64;
    text.lines()
        .filter_map(|line| parse_line(line, origin))
        .collect()
}

/// One audit event as a request; `None` for a line that is not a complete event.
pub fn parse_line(line: &str, origin_ms: i64) -> Option<RequestRecord> {
    let event: Value = serde_json::from_str(line).ok()?;
    if event["kind"] != "Event" {
        return None;
    }
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let uri = text(&event["requestURI"]);
    let (path, query) = match uri.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (uri.clone(), String::new()),
    };
    let object = &event["objectRef"];
    let resource = if object["resource"].is_string() {
        format!(
            "{}/{}",
            text(&object["apiGroup"]),
            text(&object["resource"])
        )
    } else {
        String::new()
    };
    let at_ms = event["requestReceivedTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| (t.as_millisecond() - origin_ms).max(0) as u64)
        .unwrap_or(0);
    let verb = text(&event["verb"]);
    Some(RequestRecord {
        at_ms,
        method: method_of(&verb).to_owned(),
        verb,
        path,
        query,
        user: text(&event["user"]["username"]),
        user_agent: text(&event["userAgent"]),
        resource,
        subresource: text(&object["subresource"]),
        namespace: text(&object["namespace"]),
        name: text(&object["name"]),
        code: event["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
    })
}

/// The HTTP method of a Kubernetes verb.
fn method_of(verb: &str) -> &'static str {
    match verb {
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" | "deletecollection" => "DELETE",
        _ => "GET",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/ns/deployments/d?fieldManager=x","verb":"patch","user":{"username":"system:serviceaccount:ns:op","groups":["system:serviceaccounts"]},"userAgent":"op/1","objectRef":{"resource":"deployments","namespace":"ns","name":"d","apiGroup":"apps","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.500000Z","stageTimestamp":"2026-01-01T00:00:01.510000Z"}"#;

    #[test]
    fn an_audit_event_becomes_a_request() {
        let origin = "2026-01-01T00:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_millisecond();
        let r = parse_line(LINE, origin).unwrap();
        assert_eq!(r.verb, "patch");
        assert_eq!(r.method, "PATCH");
        assert_eq!(r.resource, "apps/deployments");
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("ns", "d"));
        assert_eq!(r.user, "system:serviceaccount:ns:op");
        assert_eq!(r.query, "fieldManager=x");
        assert_eq!(r.code, 200);
        assert_eq!(r.at_ms, 1500);
        assert!(r.is_write());
    }

    #[test]
    fn core_resources_have_an_empty_group_and_broken_lines_are_skipped() {
        let core = LINE
            .replace(r#""apiGroup":"apps","#, "")
            .replace("deployments", "configmaps");
        assert_eq!(parse_line(&core, 0).unwrap().resource, "/configmaps");
        assert!(parse_line(&LINE[..LINE.len() / 2], 0).is_none());
        assert!(parse_line("{}", 0).is_none());
    }
}
