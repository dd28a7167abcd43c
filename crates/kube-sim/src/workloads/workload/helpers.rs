//! Small readers and writers of object fields the other parts share.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

/// The controllers' ComputeHash: FNV-1a over the pod template (here its canonical JSON, with
/// sorted keys so the same template always hashes the same) and the collision count, written
/// as a decimal and mapped onto the alphabet Kubernetes uses for generated names.
pub fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut canonical = String::new();
    write_canonical(template, &mut canonical);
    let mut h = fnv1a(0x811c_9dc5, canonical.as_bytes());
    if let Some(c) = collision_count {
        h = fnv1a(h, &(c as u32).to_le_bytes());
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

pub(super) fn fnv1a(mut h: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

pub(super) fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// An IntOrString scaled against `total` (a percentage rounded up or down), as
/// GetScaledValueFromIntOrPercent; an absent or malformed value takes `default`.
pub(super) fn scaled(v: Option<&Value>, default: &Value, total: i64, round_up: bool) -> i64 {
    let one = |v: &Value| match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let p = s.strip_suffix('%')?.parse::<i64>().ok()?;
            Some(if round_up {
                p.saturating_mul(total).saturating_add(99).div_euclid(100)
            } else {
                p.saturating_mul(total).div_euclid(100)
            })
        }
        _ => None,
    };
    v.and_then(one).or_else(|| one(default)).unwrap_or(0)
}

/// A condition of `type_`, keeping the previous one whole when nothing changed and its
/// lastTransitionTime when only the reason or message did.
pub(super) fn condition(
    previous: Option<&Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> Value {
    let field = |f: &str| previous.and_then(|p| p.get(f)).and_then(Value::as_str);
    if let Some(p) = previous
        && field("status") == Some(status)
        && field("reason") == Some(reason)
        && field("message") == Some(message)
    {
        return p.clone();
    }
    let transition = match field("status") {
        Some(s) if s == status => field("lastTransitionTime").unwrap_or(now).to_string(),
        _ => now.to_string(),
    };
    json!({
        "type": type_,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    })
}

pub(super) fn find<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// The status integers Kubernetes omits when zero (`omitempty`).
pub(super) fn put_nonzero(status: &mut Map<String, Value>, field: &str, value: i64) {
    if value != 0 {
        status.insert(field.into(), json!(value));
    }
}

pub(super) fn int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

pub(super) fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn later(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

/// A time as the API server writes it (RFC 3339, seconds).
pub(super) fn stamp(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
