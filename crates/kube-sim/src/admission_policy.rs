//! ValidatingAdmissionPolicy admission (admissionregistration.k8s.io/v1), as kube-apiserver's
//! `ValidatingAdmissionPolicy` plugin runs it, so that a policy a release ships refuses in
//! kube-sim what it refuses on a cluster.
//!
//! Every create, update (patch and server-side apply included) and delete of any resource that
//! comes through the API is admitted after the object passed validation and before it is stored
//! (the generic registry's `createValidation` / `updateValidation` / `deleteValidation`), dry
//! runs included. For each policy that a binding names (policies and bindings sorted by name):
//! - the policy's `matchConstraints`, then the binding's `matchResources`: `resourceRules` and
//!   `excludeResourceRules` (API groups, versions, resources with `res/sub` and `*`, operations,
//!   `resourceNames`, `scope`), `matchPolicy: Equivalent` (another served version of the same
//!   resource matches), `namespaceSelector` (a Namespace's own labels for its create and update)
//!   and `objectSelector` (the new or the old object);
//! - `paramKind` with the binding's `paramRef` (`name` or `selector`, `namespace`,
//!   `parameterNotFoundAction`), each parameter object evaluated in turn;
//! - `matchConditions`, `variables` (in order, as `variables.<name>`) and `validations`
//!   (`expression`, `message`, `messageExpression`, `reason`), with the variables `object`,
//!   `oldObject`, `request`, `params`, `namespaceObject` and `variables`;
//! - `failurePolicy` for evaluation and configuration errors, the binding's
//!   `validationActions`: `Deny` refuses (the first denial, with the server's message, reason
//!   and code), `Warn` adds a `Warning` header, `Audit` is accepted and does nothing.
//!
//! Writing a policy or binding is validated as the API server does (field errors, expressions
//! compiled: a syntax error or undeclared name is a 422 on the policy), with the server's
//! defaults (`failurePolicy: Fail`, `matchPolicy: Equivalent`, empty selectors, `scope: "*"`,
//! `parameterNotFoundAction: Deny`).
//!
//! Not emulated (docs/kube-sim.md): the `authorizer` variable (using it is an evaluation error,
//! so `failurePolicy` decides), type checking against schemas (`status.typeChecking` stays
//! unset), cost budgets, `auditAnnotations` evaluation, conversion for `Equivalent` matches (the
//! object is seen in its stored version), regular expressions (`matches`) and the Kubernetes CEL
//! libraries (`quantity`, `url`, `ip`, ...). Writes by kube-sim's own controllers (garbage
//! collector, namespace controller) and in-process `KubeSim::write` calls are not admitted.

mod cel_eval;
mod objects;

use crate::json::strings;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::admission_plugins::{AdmissionPlugin, Attributes, Requester, Write};
use crate::errors::ApiError;
use crate::resources::{GroupResource, ResourceType};
use crate::selector::{object_is_empty, object_matches};
use crate::store::ClusterView;
use cel_eval::Declarations;
pub use objects::{default, validate};

pub const GROUP: &str = "admissionregistration.k8s.io";
/// The longest message a `messageExpression` may produce (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// The admission attributes of one write.
struct Request<'a> {
    operation: Operation,
    rt: &'a ResourceType,
    /// The request's namespace: a Namespace's own name for its update and delete.
    namespace: String,
    name: String,
    /// The kind the request is for (`autoscaling/v1 Scale` through `scale`).
    kind: (String, String, String),
    object: Option<Value>,
    old_object: Option<Value>,
    requester: &'a Requester,
}

impl Request<'_> {
    fn subresource(&self) -> &str {
        &self.requester.subresource
    }

    fn is_namespace(&self) -> bool {
        self.rt.group.is_empty() && self.rt.plural == "namespaces"
    }
}

/// Admits a create; `generated` when the name came from `generateName` (admission sees none).
fn on_create(
    cluster: &dyn ClusterView,
    rt: &ResourceType,
    obj: &Value,
    generated: bool,
    requester: Option<&Requester>,
) -> Result<Vec<String>, ApiError> {
    let Some(requester) = requester else {
        return Ok(Vec::new());
    };
    let name = if generated { "" } else { meta_str(obj, "name") };
    let namespace = if rt.namespaced {
        meta_str(obj, "namespace")
    } else {
        ""
    };
    let req = request(
        rt,
        Operation::Create,
        namespace,
        name,
        Some(obj),
        None,
        requester,
    );
    admit(cluster, &req)
}

/// Admits an update (put, patch, apply; `status`, `scale` and `finalize` included).
fn on_update(
    cluster: &dyn ClusterView,
    rt: &ResourceType,
    old: &Value,
    new: &Value,
    requester: Option<&Requester>,
) -> Result<Vec<String>, ApiError> {
    let Some(requester) = requester else {
        return Ok(Vec::new());
    };
    let name = meta_str(new, "name");
    let namespace = own_namespace(rt, new);
    let req = request(
        rt,
        Operation::Update,
        namespace,
        name,
        Some(new),
        Some(old),
        requester,
    );
    admit(cluster, &req)
}

/// Admits a delete: `object` is null, `oldObject` the object being deleted.
fn on_delete(
    cluster: &dyn ClusterView,
    rt: &ResourceType,
    old: &Value,
    requester: Option<&Requester>,
) -> Result<Vec<String>, ApiError> {
    let Some(requester) = requester else {
        return Ok(Vec::new());
    };
    let name = meta_str(old, "name");
    let namespace = own_namespace(rt, old);
    let req = request(
        rt,
        Operation::Delete,
        namespace,
        name,
        None,
        Some(old),
        requester,
    );
    admit(cluster, &req)
}

/// The ValidatingAdmissionPolicy plugin in the admission chain (`admission_plugins`).
pub(crate) struct PolicyPlugin;

impl AdmissionPlugin for PolicyPlugin {
    fn validate(
        &self,
        cluster: &dyn ClusterView,
        a: &Attributes<'_>,
    ) -> Result<Vec<String>, ApiError> {
        match a.write {
            Write::Create { object, generated } => {
                on_create(cluster, a.rt, object, generated, a.requester)
            }
            Write::Update { old, new } => on_update(cluster, a.rt, old, new, a.requester),
            Write::Delete { old } => on_delete(cluster, a.rt, old, a.requester),
        }
    }
}

fn own_namespace<'a>(rt: &ResourceType, obj: &'a Value) -> &'a str {
    if rt.group.is_empty() && rt.plural == "namespaces" {
        meta_str(obj, "name")
    } else if rt.namespaced {
        meta_str(obj, "namespace")
    } else {
        ""
    }
}

fn request<'a>(
    rt: &'a ResourceType,
    operation: Operation,
    namespace: &str,
    name: &str,
    object: Option<&Value>,
    old_object: Option<&Value>,
    requester: &'a Requester,
) -> Request<'a> {
    let scale = requester.subresource == "scale";
    let view = |o: &Value| {
        if scale {
            crate::resources::scale_of(o)
        } else {
            o.clone()
        }
    };
    let kind = if scale {
        ("autoscaling".into(), "v1".into(), "Scale".into())
    } else {
        (rt.group.clone(), rt.version.clone(), rt.kind.clone())
    };
    Request {
        operation,
        rt,
        namespace: namespace.into(),
        name: name.into(),
        kind,
        object: object.map(view),
        old_object: old_object.map(view),
        requester,
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

// ----- dispatch ----------------------------------------------------------------------------

/// One policy and binding to evaluate, with everything the CEL thread needs.
struct Job {
    policy: String,
    binding: String,
    spec: Value,
    ignore_failures: bool,
    /// The parameter objects; `[null]` without a paramKind.
    params: Vec<Value>,
    /// `request`, with the resource and kind the policy matched.
    request: Value,
}

/// A failed validation (or an error the failure policy turns into one).
#[derive(Debug, Clone)]
struct Decision {
    message: String,
    reason: String,
}

/// A decision with the policy and binding it came from and the binding's actions.
struct Verdict {
    policy: String,
    binding: Option<String>,
    actions: Vec<String>,
    decision: Decision,
}

fn admit(cluster: &dyn ClusterView, req: &Request) -> Result<Vec<String>, ApiError> {
    let bindings_gr = GroupResource::new(GROUP, "validatingadmissionpolicybindings");
    let mut by_policy: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for ((_, name), binding) in cluster.store().iter(&bindings_gr, None, None) {
        let policy = binding
            .pointer("/spec/policyName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !policy.is_empty() {
            by_policy
                .entry(policy.to_owned())
                .or_default()
                .push((name.clone(), (**binding).clone()));
        }
    }
    if by_policy.is_empty() {
        return Ok(Vec::new());
    }
    let policies_gr = GroupResource::new(GROUP, "validatingadmissionpolicies");
    let mut jobs = Vec::new();
    let mut verdicts = Vec::new();
    for (policy_name, mut bindings) in by_policy {
        let Some(policy) = cluster.store().get(&policies_gr, "", &policy_name) else {
            continue;
        };
        let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
        let ignore_failures = spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
        let Some(matched) = matches(cluster, spec.get("matchConstraints"), req, true) else {
            continue;
        };
        bindings.sort_by(|a, b| a.0.cmp(&b.0));
        for (binding_name, binding) in bindings {
            let bspec = binding.get("spec").cloned().unwrap_or(Value::Null);
            if let Some(criteria) = bspec.get("matchResources").filter(|m| m.is_object())
                && matches(cluster, Some(criteria), req, false).is_none()
            {
                continue;
            }
            let actions: Vec<String> = strings(bspec.get("validationActions"));
            let params = match collect_params(cluster, &spec, &bspec, req) {
                Ok(Some(p)) => p,
                Ok(None) => continue,
                Err(e) => {
                    if !ignore_failures {
                        verdicts.push(Verdict {
                            policy: policy_name.clone(),
                            binding: Some(binding_name.clone()),
                            actions: vec!["Deny".into()],
                            decision: Decision {
                                message: format!("failed to configure binding: {e}"),
                                reason: String::new(),
                            },
                        });
                    }
                    continue;
                }
            };
            jobs.push((
                actions,
                Job {
                    policy: policy_name.clone(),
                    binding: binding_name,
                    spec: spec.clone(),
                    ignore_failures,
                    params,
                    request: request_value(req, &matched),
                },
            ));
        }
    }
    if !jobs.is_empty() {
        let object = req.object.clone().unwrap_or(Value::Null);
        let old_object = req.old_object.clone().unwrap_or(Value::Null);
        let namespace_object = namespace_object(cluster, req);
        let work: Vec<&Job> = jobs.iter().map(|(_, j)| j).collect();
        let results = cel_eval::on_cel_thread(|| {
            let inputs = Inputs {
                object: cel_eval::to_cel(&object),
                old_object: cel_eval::to_cel(&old_object),
                namespace_object: cel_eval::to_cel(&namespace_object),
            };
            work.iter().map(|job| run(job, &inputs)).collect::<Vec<_>>()
        });
        for (i, (actions, job)) in jobs.iter().enumerate() {
            let decisions = match &results {
                Some(r) => r.get(i).cloned().unwrap_or_default(),
                // The evaluator itself failed: an evaluation error for every job.
                None if job.ignore_failures => Vec::new(),
                None => vec![Decision {
                    message: "internal error evaluating CEL".into(),
                    reason: String::new(),
                }],
            };
            for decision in decisions {
                verdicts.push(Verdict {
                    policy: job.policy.clone(),
                    binding: Some(job.binding.clone()),
                    actions: actions.clone(),
                    decision,
                });
            }
        }
    }
    let mut warnings = Vec::new();
    let mut denied = None;
    for v in verdicts {
        for action in &v.actions {
            match action.as_str() {
                "Deny" if denied.is_none() => denied = Some(denial(req, &v)),
                "Warn" => warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    v.policy,
                    v.binding.as_deref().unwrap_or_default(),
                    v.decision.message
                )),
                _ => {}
            }
        }
    }
    match denied {
        Some(e) => Err(e),
        None => Ok(warnings),
    }
}

/// The error of the first denial, as the dispatcher builds it: `admission.NewForbidden`'s
/// message (the object's name, `Unknown` without an object as on delete) with the decision's
/// reason and its code.
fn denial(req: &Request, v: &Verdict) -> ApiError {
    let text = match &v.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
            v.policy, v.decision.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            v.policy, v.decision.message
        ),
    };
    let name = match &req.object {
        None => "Unknown",
        Some(_) if !req.name.is_empty() => req.name.as_str(),
        Some(o) if !meta_str(o, "generateName").is_empty() => meta_str(o, "generateName"),
        Some(_) => "Unknown",
    };
    let mut e = ApiError::forbidden(req.rt, name, &text);
    (e.code, e.reason) = match v.decision.reason.as_str() {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    if let Some(d) = e.details.as_mut() {
        d["causes"] = json!([{"message": text}]);
    }
    e
}

// ----- matching ------------------------------------------------------------------------------

/// The resource and kind a policy matched (another version's under `Equivalent`).
struct Matched {
    group: String,
    version: String,
    resource: String,
    kind: String,
}

/// `Matcher.Matches`: selectors, exclusions, then the rules. `require_rules`: a policy's
/// constraints need rules to match anything; a binding without rules takes the policy's.
fn matches(
    cluster: &dyn ClusterView,
    criteria: Option<&Value>,
    req: &Request,
    require_rules: bool,
) -> Option<Matched> {
    let criteria = criteria.filter(|c| c.is_object())?;
    if !namespace_selector_matches(cluster, criteria.get("namespaceSelector"), req) {
        return None;
    }
    if let Some(sel) = criteria
        .get("objectSelector")
        .filter(|s| !object_is_empty(Some(s)))
    {
        let labels = |o: &Option<Value>| {
            o.as_ref()
                .is_some_and(|o| object_matches(sel, o.pointer("/metadata/labels")))
        };
        if !labels(&req.object) && !labels(&req.old_object) {
            return None;
        }
    }
    let equivalent = criteria.get("matchPolicy").and_then(Value::as_str) != Some("Exact");
    let rules = |key: &str| {
        criteria
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if rules_match(cluster, &rules("excludeResourceRules"), equivalent, req).is_some() {
        return None;
    }
    let include = rules("resourceRules");
    if include.is_empty() {
        return (!require_rules).then(|| own_match(req));
    }
    rules_match(cluster, &include, equivalent, req)
}

fn own_match(req: &Request) -> Matched {
    Matched {
        group: req.rt.group.clone(),
        version: req.rt.version.clone(),
        resource: req.rt.plural.clone(),
        kind: req.kind.2.clone(),
    }
}

/// `matchesResourceRules`: the first rule that matches the request as it is, else (under
/// `Equivalent`) one that matches another served version of the same resource.
fn rules_match(
    cluster: &dyn ClusterView,
    rules: &[Value],
    equivalent: bool,
    req: &Request,
) -> Option<Matched> {
    let rt = req.rt;
    for rule in rules {
        if rule_matches(rule, req, &rt.version) && names_match(rule, &req.name) {
            return Some(own_match(req));
        }
    }
    if !equivalent {
        return None;
    }
    for rule in rules {
        for version in strings(rule.get("apiVersions")) {
            if version == "*" || version == rt.version {
                continue;
            }
            let Some(other) = cluster.catalogue().get(&rt.group, &version, &rt.plural) else {
                continue;
            };
            if rule_matches(rule, req, &version) {
                return Some(Matched {
                    group: other.group.clone(),
                    version: other.version.clone(),
                    resource: other.plural.clone(),
                    kind: if req.subresource() == "scale" {
                        req.kind.2.clone()
                    } else {
                        other.kind.clone()
                    },
                });
            }
        }
    }
    None
}

/// `rules.Matcher`: scope, operation, group, version and resource (`res/sub`, `*`, `*/*`).
fn rule_matches(rule: &Value, req: &Request, version: &str) -> bool {
    let any_or =
        |key: &str, want: &str| strings(rule.get(key)).iter().any(|v| v == "*" || v == want);
    let scope = match rule.get("scope").and_then(Value::as_str) {
        None | Some("*") => true,
        Some("Cluster") => req.is_namespace() || !req.rt.namespaced,
        Some("Namespaced") => !req.is_namespace() && req.rt.namespaced,
        Some(_) => false,
    };
    let resource = strings(rule.get("resources")).iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == req.rt.plural) && (sub == "*" || sub == req.subresource())
    });
    scope
        && any_or("operations", req.operation.as_str())
        && any_or("apiGroups", &req.rt.group)
        && any_or("apiVersions", version)
        && resource
}

fn names_match(rule: &Value, name: &str) -> bool {
    let names = strings(rule.get("resourceNames"));
    names.is_empty() || names.iter().any(|n| n == name)
}

/// `MatchNamespaceSelector`: cluster-scoped objects other than Namespaces always match; a
/// Namespace's create and update are judged by its own new labels.
fn namespace_selector_matches(
    cluster: &dyn ClusterView,
    selector: Option<&Value>,
    req: &Request,
) -> bool {
    let Some(selector) = selector.filter(|s| !object_is_empty(Some(s))) else {
        return true;
    };
    if req.namespace.is_empty() && !req.is_namespace() {
        return true;
    }
    if req.is_namespace()
        && req.subresource().is_empty()
        && matches!(req.operation, Operation::Create | Operation::Update)
    {
        let labels = req
            .object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/labels"));
        return object_matches(selector, labels);
    }
    let namespaces = GroupResource::new("", "namespaces");
    match cluster.store().get(&namespaces, "", &req.namespace) {
        Some(ns) => object_matches(selector, ns.pointer("/metadata/labels")),
        None => false,
    }
}

// ----- inputs --------------------------------------------------------------------------------

/// `CollectParams`: `Ok(None)` when the binding has nothing to evaluate (no parameter found and
/// `parameterNotFoundAction: Allow`).
fn collect_params(
    cluster: &dyn ClusterView,
    spec: &Value,
    binding_spec: &Value,
    req: &Request,
) -> Result<Option<Vec<Value>>, String> {
    let Some(param_kind) = spec.get("paramKind").filter(|p| p.is_object()) else {
        return Ok(Some(vec![Value::Null]));
    };
    let api_version = param_kind
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = param_kind
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(param_ref) = binding_spec.get("paramRef").filter(|p| p.is_object()) else {
        return Err(format!(
            "paramKind kind `{kind}` is defined but paramRef is not defined in the binding"
        ));
    };
    let Some(rt) = cluster.catalogue().by_kind(api_version, kind) else {
        return Err(format!(
            "failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'"
        ));
    };
    let ref_namespace = param_ref
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = if !rt.namespaced {
        ""
    } else if !ref_namespace.is_empty() {
        ref_namespace
    } else if !req.namespace.is_empty() && !req.is_namespace() {
        req.namespace.as_str()
    } else {
        return Err(
            "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                .into(),
        );
    };
    let gr = rt.group_resource();
    let found: Vec<Value> = match param_ref.get("name").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => cluster
            .store()
            .get(&gr, namespace, name)
            .map(|o| vec![(*o).clone()])
            .unwrap_or_default(),
        _ => {
            let selector = param_ref.get("selector").cloned().unwrap_or(json!({}));
            cluster
                .store()
                .iter(&gr, Some(namespace), None)
                .filter(|(_, o)| object_matches(&selector, o.pointer("/metadata/labels")))
                .map(|(_, o)| (**o).clone())
                .collect()
        }
    };
    if !found.is_empty() {
        return Ok(Some(found));
    }
    match param_ref
        .get("parameterNotFoundAction")
        .and_then(Value::as_str)
    {
        Some("Allow") => Ok(None),
        _ => Err("no params found for policy binding with `Deny` parameterNotFoundAction".into()),
    }
}

/// `CreateAdmissionRequest`, as CEL's `request` sees it.
fn request_value(req: &Request, matched: &Matched) -> Value {
    let mut r = json!({
        "uid": "",
        "kind": {"group": req.kind.0, "version": req.kind.1, "kind": matched.kind},
        "resource": {"group": matched.group, "version": matched.version, "resource": matched.resource},
        "requestKind": {"group": req.kind.0, "version": req.kind.1, "kind": req.kind.2},
        "requestResource": {"group": req.rt.group, "version": req.rt.version, "resource": req.rt.plural},
        "operation": req.operation.as_str(),
        "userInfo": {"username": req.requester.username, "groups": req.requester.groups},
        "dryRun": req.requester.dry_run,
        "options": {
            "apiVersion": "meta.k8s.io/v1",
            "kind": match req.operation {
                Operation::Create => "CreateOptions",
                Operation::Update => "UpdateOptions",
                Operation::Delete => "DeleteOptions",
            }
        },
    });
    if matched.version != req.rt.version {
        r["kind"]["version"] = Value::String(matched.version.clone());
    }
    let mut optional = |key: &str, value: &str| {
        if !value.is_empty() {
            r[key] = Value::String(value.to_owned());
        }
    };
    optional("subResource", req.subresource());
    optional("requestSubResource", req.subresource());
    optional("name", &req.name);
    optional("namespace", &req.namespace);
    r
}

/// `namespaceObject`: the request's Namespace (not for a Namespace itself), trimmed as
/// `CreateNamespaceObject` trims it.
fn namespace_object(cluster: &dyn ClusterView, req: &Request) -> Value {
    if req.namespace.is_empty() || req.is_namespace() {
        return Value::Null;
    }
    let Some(ns) = cluster
        .store()
        .get(&GroupResource::new("", "namespaces"), "", &req.namespace)
    else {
        return Value::Null;
    };
    let mut out = Map::new();
    for key in ["spec", "status"] {
        if let Some(v) = ns.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(meta) = ns.get("metadata").and_then(Value::as_object) {
        let kept: Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "managedFields" | "ownerReferences"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert("metadata".into(), Value::Object(kept));
    }
    Value::Object(out)
}

// ----- evaluation (on the CEL thread) -------------------------------------------------------

struct Inputs {
    object: cel::Value,
    old_object: cel::Value,
    namespace_object: cel::Value,
}

fn declarations(spec: &Value, authorizer: bool) -> Declarations {
    Declarations {
        params: spec.get("paramKind").is_some_and(Value::is_object),
        authorizer,
    }
}

fn expression_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn items<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Evaluates one policy and binding: the failed validations, and errors the failure policy
/// turns into failures.
fn run(job: &Job, inputs: &Inputs) -> Vec<Decision> {
    let spec = &job.spec;
    let with_authorizer = declarations(spec, true);
    let request = cel_eval::to_cel(&job.request);
    let error = |message: String| Decision {
        message,
        reason: String::new(),
    };
    let mut out = Vec::new();
    for param in &job.params {
        let params = cel_eval::to_cel(param);
        let mut vars: Vec<(String, cel::Value)> = Vec::new();
        let eval = |expression: &str, decl: Declarations, vars: &[(String, cel::Value)]| {
            let program = cel_eval::compile(expression, decl)
                .map_err(|e| format!("compilation error: {e}"))?;
            let variables = cel_eval::cel_map(vars);
            cel_eval::evaluate(
                &program,
                &[
                    ("object", &inputs.object),
                    ("oldObject", &inputs.old_object),
                    ("request", &request),
                    ("params", &params),
                    ("namespaceObject", &inputs.namespace_object),
                    ("variables", &variables),
                ],
            )
            .map_err(|e| format!("expression '{expression}' resulted in error: {e}"))
        };
        // matchConditions: any false skips; errors (without a false) follow the failure policy.
        let mut errors = Vec::new();
        let mut skip = false;
        for condition in items(spec, "matchConditions") {
            match eval(
                expression_of(condition, "expression"),
                with_authorizer,
                &vars,
            ) {
                Ok(cel::Value::Bool(false)) => {
                    skip = true;
                    break;
                }
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        if skip {
            continue;
        }
        if !errors.is_empty() {
            if !job.ignore_failures {
                out.push(error(aggregate(&errors)));
            }
            continue;
        }
        // Variables in order; one that fails is absent (using it is an error then).
        for variable in items(spec, "variables") {
            let name = expression_of(variable, "name").to_owned();
            if let Ok(value) = eval(
                expression_of(variable, "expression"),
                with_authorizer,
                &vars,
            ) {
                vars.push((name, value));
            }
        }
        for validation in items(spec, "validations") {
            let expression = expression_of(validation, "expression");
            match eval(expression, with_authorizer, &vars) {
                Ok(cel::Value::Bool(true)) => {}
                Ok(_) => {
                    let message_expression = expression_of(validation, "messageExpression");
                    let evaluated = if message_expression.trim().is_empty() {
                        None
                    } else {
                        match eval(message_expression, declarations(spec, false), &vars) {
                            Ok(cel::Value::String(s)) => Some(s.trim().to_owned()),
                            _ => None,
                        }
                    };
                    let message = evaluated
                        .filter(|m| {
                            !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n')
                        })
                        .or_else(|| {
                            Some(expression_of(validation, "message").trim().to_owned())
                                .filter(|m| !m.is_empty())
                        })
                        .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
                    let reason = expression_of(validation, "reason");
                    out.push(Decision {
                        message,
                        reason: if reason.is_empty() {
                            "Invalid".into()
                        } else {
                            reason.into()
                        },
                    });
                }
                Err(e) if !job.ignore_failures => out.push(error(e)),
                Err(_) => {}
            }
        }
    }
    out
}

/// `utilerrors.NewAggregate(...).Error()`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}
