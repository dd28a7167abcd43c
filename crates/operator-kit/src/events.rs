//! Kubernetes Events for the operator's writes: one core/v1 Event per create, update or delete
//! the apply engine makes, recorded against one involved object (normally the operator CR), with
//! library-go's reasons (`<Kind>Created`, `<Kind>Updated`, `<Kind>Deleted`, and the
//! `…CreateFailed` / `…UpdateFailed` / `…DeleteFailed` warnings) and messages.
//!
//! An Event lives in its involved object's namespace; for a cluster-scoped object (a
//! ClusterCSIDriver) that is `default`, the only namespace the API server accepts for it
//! (`kubectl describe clustercsidriver …` finds them there).
//!
//! Events are best-effort: a failed Event write is logged and never fails the caller. A message
//! names the object (kind, name, namespace) and never carries object content, so a Secret's
//! values can never end up in an Event.

use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Client;
use kube::api::{Api, PostParams};
use kube::core::ApiResource;

/// Normal or Warning, as the Event `type` field spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records Events about one operator CR into one namespace.
#[derive(Clone)]
pub struct EventRecorder {
    api: Api<Event>,
    namespace: String,
    involved: ObjectReference,
    component: String,
    instance: String,
}

/// Disambiguates Events created within the same nanosecond by one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

impl EventRecorder {
    /// `involved` is the object the Events are about (the operator CR); `component` is the
    /// reporting controller (e.g. `openstack-cinder-csi-driver-operator`); `instance` the pod.
    pub fn new(client: Client, involved: ObjectReference, component: &str, instance: &str) -> Self {
        // client-go's rule, enforced by the API server's Event validation.
        let namespace = involved
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_string());
        Self {
            api: Api::namespaced(client, &namespace),
            namespace,
            involved,
            component: component.to_string(),
            instance: instance.to_string(),
        }
    }

    /// Records one Event; a failure is logged at warning level and swallowed.
    pub async fn record(&self, type_: EventType, reason: &str, message: &str) {
        let now = jiff::Timestamp::now();
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let base = self.involved.name.as_deref().unwrap_or("operator");
        // client-go names Events `<object>.<hex nanos>`; the sequence keeps two Events of one
        // nanosecond apart.
        let name = format!("{base}.{:x}{seq:x}", now.as_nanosecond());
        // The legacy core/v1 shape (first/last timestamps, no eventTime), as client-go's
        // recorder writes it; mixing both shapes is rejected by the API server.
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            involved_object: self.involved.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(type_.as_str().to_string()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        if let Err(error) = self.api.create(&PostParams::default(), &event).await {
            tracing::warn!(%error, reason, "could not record an Event (best-effort, continuing)");
        }
    }

    /// `<Kind>Created`: "Created <object> because it was missing".
    pub async fn created(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}Created", ar.kind);
        self.record(
            EventType::Normal,
            &reason,
            &format!("Created {what} because it was missing"),
        )
        .await;
    }

    /// `<Kind>Updated`: "Updated <object> because it changed".
    pub async fn updated(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}Updated", ar.kind);
        self.record(
            EventType::Normal,
            &reason,
            &format!("Updated {what} because it changed"),
        )
        .await;
    }

    /// `<Kind>Deleted`: "Deleted <object>".
    pub async fn deleted(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}Deleted", ar.kind);
        self.record(EventType::Normal, &reason, &format!("Deleted {what}"))
            .await;
    }

    /// `<Kind><Verb>Failed` warning, `verb` being `Create`, `Update` or `Delete`. `error` is the
    /// API server's message, which names fields but not Secret values.
    pub async fn failed(
        &self,
        verb: &str,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        error: &str,
    ) {
        let what = describe(ar, namespace, name);
        let reason = format!("{}{verb}Failed", ar.kind);
        let lower = verb.to_ascii_lowercase();
        self.record(
            EventType::Warning,
            &reason,
            &format!("Failed to {lower} {what}: {error}"),
        )
        .await;
    }
}

/// `Kind.group/name -n namespace`, as library-go's `FormatResourceForCLIWithNamespace` prints.
pub fn describe(ar: &ApiResource, namespace: Option<&str>, name: &str) -> String {
    let kind = if ar.group.is_empty() {
        ar.kind.clone()
    } else {
        format!("{}.{}", ar.kind, ar.group)
    };
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{kind}/{name} -n {ns}"),
        _ => format!("{kind}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    #[test]
    fn describes_like_library_go() {
        let dep = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        );
        assert_eq!(describe(&dep, Some("ns"), "d"), "Deployment.apps/d -n ns");
        let cm = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        );
        assert_eq!(describe(&cm, Some("ns"), "c"), "ConfigMap/c -n ns");
        let sc = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("storage.k8s.io", "v1", "StorageClass"),
            "storageclasses",
        );
        assert_eq!(
            describe(&sc, None, "standard-csi"),
            "StorageClass.storage.k8s.io/standard-csi"
        );
    }
}
