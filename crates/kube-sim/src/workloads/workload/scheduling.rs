//! Scheduling: which Nodes a pod fits (selectors, affinity, taints and tolerations).

use super::helpers::text;
use serde_json::{Value, json};

/// The tolerations the DaemonSet controller adds to every daemon pod, so node problems and
/// cordoning do not keep or drive daemons off their nodes.
pub(super) const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];

/// The DaemonSet controller's NodeShouldRunDaemonPod for a pod spec: `(should_run,
/// should_continue_running)`. A pod that may not start on a node (an untolerated NoSchedule
/// taint) may still keep running there unless a NoExecute taint is untolerated.
pub fn node_should_run(node: &Value, pod_spec: &Value) -> (bool, bool) {
    DaemonPodFit::new(pod_spec).on(node)
}

/// A daemon pod's spec read once for placing it on many Nodes: its tolerations, with those
/// the DaemonSet controller adds, are built here rather than for every Node.
pub(super) struct DaemonPodFit<'a> {
    pod_spec: &'a Value,
    wanted: &'a str,
    tolerations: Vec<Value>,
}

impl<'a> DaemonPodFit<'a> {
    pub(super) fn new(pod_spec: &'a Value) -> Self {
        let wanted = pod_spec
            .get("nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut tolerations: Vec<Value> = pod_spec
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut automatic: Vec<(&str, &str)> = DAEMON_TOLERATIONS.to_vec();
        if pod_spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
            automatic.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
        }
        tolerations.extend(
            automatic
                .into_iter()
                .map(|(key, effect)| json!({"key": key, "operator": "Exists", "effect": effect})),
        );
        Self {
            pod_spec,
            wanted,
            tolerations,
        }
    }

    /// `(should_run, should_continue_running)` on `node`.
    pub(super) fn on(&self, node: &Value) -> (bool, bool) {
        if !self.wanted.is_empty() && self.wanted != text(node, "/metadata/name") {
            return (false, false);
        }
        if !fits_node_affinity(node, self.pod_spec) {
            return (false, false);
        }
        let taints = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // The node lifecycle controller taints cordoned nodes; mirror it for nodes created bare.
        let cordon = (node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true)
            && !taints.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some("node.kubernetes.io/unschedulable")
            }))
        .then(|| json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}));
        let untolerated = |effects: &[&str]| {
            taints.iter().chain(cordon.as_ref()).any(|taint| {
                let effect = taint
                    .get("effect")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                effects.contains(&effect) && !self.tolerations.iter().any(|t| tolerates(t, taint))
            })
        };
        if untolerated(&["NoSchedule", "NoExecute"]) {
            return (false, !untolerated(&["NoExecute"]));
        }
        (true, true)
    }
}

/// Toleration.ToleratesTaint: an empty effect matches every effect, an empty key (only valid
/// with `Exists`) every key; `Equal` (the default operator) also compares the value.
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let field = |v: &Value, f: &str| {
        v.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let effect = field(toleration, "effect");
    if !effect.is_empty() && effect != field(taint, "effect") {
        return false;
    }
    let key = field(toleration, "key");
    if !key.is_empty() && key != field(taint, "key") {
        return false;
    }
    match field(toleration, "operator").as_str() {
        "" | "Equal" => field(toleration, "value") == field(taint, "value"),
        "Exists" => true,
        _ => false,
    }
}

/// `nodeSelector` and required node affinity.
pub(super) fn fits_node_affinity<'a>(node: &Value, pod_spec: &'a Value) -> bool {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(selector) = pod_spec.get("nodeSelector").and_then(Value::as_object)
        && !selector.iter().all(|(k, v)| label(k) == v.as_str())
    {
        return false;
    }
    let Some(required) =
        pod_spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
    else {
        return true;
    };
    let list = |v: &'a Value, field: &str| -> &'a [Value] {
        v.get(field)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let terms = list(required, "nodeSelectorTerms");
    let name = text(node, "/metadata/name");
    terms.iter().any(|term| {
        let exprs = list(term, "matchExpressions");
        let fields = list(term, "matchFields");
        // An empty term matches no node.
        (!exprs.is_empty() || !fields.is_empty())
            && exprs
                .iter()
                .all(|r| requirement_matches(r, label(text(r, "/key"))))
            && fields
                .iter()
                .all(|r| text(r, "/key") == "metadata.name" && requirement_matches(r, Some(name)))
    })
}

pub(super) fn requirement_matches(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match text(req, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|s| number(s))), (Some(v), Some(w)) if v > w)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|s| number(s))), (Some(v), Some(w)) if v < w)
        }
        _ => false,
    }
}

pub(super) fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}
