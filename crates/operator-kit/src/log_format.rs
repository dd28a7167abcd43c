//! How log lines look: klog-compatible JSON (`--log-format json`), or text, coloured only when
//! stderr is a terminal (a pod's log never holds ANSI escape codes).
//!
//! The JSON shape is the one Kubernetes components write with `--logging-format=json`
//! (k8s.io/component-base/logs/json): one object per line with `ts` (seconds since the epoch,
//! as a float), `caller` (`file:line`), `msg`, `v` (the klog verbosity of an info line) or
//! `err` (the error of an error line), then the line's own key/value pairs. Log pipelines that
//! already parse kube-apiserver's or kubelet's JSON parse ours the same way. `level` is added
//! because tracing has warnings and klog's JSON has no other way to tell them from info lines.

use std::fmt;
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `--log-format`: how log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines; ANSI colours only when stderr is a terminal.
    #[default]
    Text,
    /// One klog-compatible JSON object per line.
    Json,
}

impl LogFormat {
    /// The values `--log-format` accepts.
    pub const VALUES: [&'static str; 2] = ["text", "json"];

    /// Parses a `--log-format` value; the error says which values exist.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "unknown log format {other:?}: use one of {}",
                Self::VALUES.join(", ")
            )),
        }
    }
}

/// Whether text lines should carry colour codes: only for a person at a terminal.
pub fn ansi_for_stderr() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The klog verbosity a tracing level stands for (the inverse of `logging::directives`).
fn klog_verbosity(level: &Level) -> u8 {
    match *level {
        Level::TRACE => 6,
        Level::DEBUG => 4,
        _ => 0,
    }
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// Formats events as klog JSON lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct KlogJson;

impl<S, N> FormatEvent<S, N> for KlogJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let line = json_line(event, std::time::SystemTime::now());
        writeln!(writer, "{line}")
    }
}

/// The JSON object of one event at `now`.
fn json_line(event: &Event<'_>, now: std::time::SystemTime) -> String {
    let meta = event.metadata();
    let mut fields = Fields::default();
    event.record(&mut fields);
    let ts = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("ts".into(), Value::from(ts));
    let caller = match (meta.file(), meta.line()) {
        (Some(file), Some(line)) => format!("{}:{line}", short_path(file)),
        _ => meta.target().to_string(),
    };
    out.insert("caller".into(), Value::from(caller));
    out.insert(
        "msg".into(),
        Value::from(fields.message.unwrap_or_default()),
    );
    let level = meta.level();
    if *level == Level::ERROR {
        // klog's ErrorS: `err` holds the error, no verbosity.
        let err = fields.values.remove("error").unwrap_or(Value::Null);
        out.insert("err".into(), err);
    } else {
        out.insert("v".into(), Value::from(klog_verbosity(level)));
        if let Some(err) = fields.values.remove("error") {
            out.insert("err".into(), err);
        }
    }
    out.insert("level".into(), Value::from(level_name(level)));
    for (key, value) in fields.values {
        // The line's own pairs never overwrite the fixed keys.
        out.entry(key).or_insert(value);
    }
    Value::Object(out).to_string()
}

/// `crates/operator-kit/src/runtime.rs` → `operator-kit/src/runtime.rs`: the crate and file,
/// as klog's caller shows a package and file, without the build machine's directories.
fn short_path(file: &str) -> &str {
    let parts: Vec<&str> = file.rsplitn(4, '/').collect();
    if parts.len() == 4 {
        let keep: usize = parts[..3].iter().map(|p| p.len() + 1).sum::<usize>() - 1;
        &file[file.len() - keep..]
    } else {
        file
    }
}

/// An event's fields as JSON values: numbers and booleans stay typed, everything else is the
/// field's `Display` or `Debug` text.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    values: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                Value::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.values.insert(field.name().to_string(), value);
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::from(value.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// Collects what a subscriber writes.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines_of(log: impl FnOnce()) -> Vec<Value> {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .event_format(KlogJson)
                .with_writer(move || writer.clone()),
        );
        tracing::subscriber::with_default(subscriber, log);
        let bytes = sink.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is one JSON object"))
            .collect()
    }

    #[test]
    fn info_lines_have_klog_fields_and_typed_pairs() {
        let lines = lines_of(|| {
            tracing::info!(
                count = 3,
                ready = true,
                name = "csi-manila-default",
                "listed share types"
            );
        });
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert!(line["ts"].as_f64().unwrap() > 1.7e9, "{line}");
        let caller = line["caller"].as_str().unwrap();
        assert!(
            caller.starts_with("operator-kit/src/log_format.rs:"),
            "{line}"
        );
        assert_eq!(line["msg"], "listed share types");
        assert_eq!(line["v"], 0);
        assert_eq!(line["level"], "info");
        assert_eq!(line["count"], 3);
        assert_eq!(line["ready"], true);
        assert_eq!(line["name"], "csi-manila-default");
        assert!(line.get("err").is_none());
    }

    #[test]
    fn errors_carry_err_and_no_verbosity_debug_lines_carry_v4() {
        let lines = lines_of(|| {
            let e = std::io::Error::other("connection refused");
            tracing::error!(error = %e, "the ClusterCSIDriver cannot be read");
            tracing::debug!("nothing to do");
            tracing::warn!(error = "timeout", "leadership lost");
        });
        assert_eq!(lines[0]["err"], "connection refused");
        assert!(lines[0].get("v").is_none());
        assert_eq!(lines[1]["v"], 4);
        assert_eq!(lines[2]["level"], "warning");
        assert_eq!(lines[2]["err"], "timeout");
    }

    #[test]
    fn a_field_named_like_a_fixed_key_does_not_replace_it() {
        let lines = lines_of(|| tracing::info!(ts = "x", v = 9, "m"));
        assert!(lines[0]["ts"].is_f64());
        assert_eq!(lines[0]["v"], 0);
    }

    #[test]
    fn messages_with_quotes_and_newlines_stay_one_line() {
        let lines = lines_of(|| tracing::info!("a \"quoted\"\nsecond line"));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["msg"], "a \"quoted\"\nsecond line");
    }

    #[test]
    fn caller_keeps_the_last_three_path_parts() {
        assert_eq!(
            short_path("/build/crates/operator-kit/src/runtime.rs"),
            "operator-kit/src/runtime.rs"
        );
        assert_eq!(short_path("src/main.rs"), "src/main.rs");
        assert_eq!(short_path("main.rs"), "main.rs");
    }

    #[test]
    fn log_format_values_parse_and_unknown_ones_are_named() {
        assert_eq!(LogFormat::parse("json"), Ok(LogFormat::Json));
        assert_eq!(LogFormat::parse("text"), Ok(LogFormat::Text));
        let e = LogFormat::parse("JSON ").unwrap_err();
        assert!(e.contains("\"JSON \"") && e.contains("text, json"), "{e}");
    }
}
