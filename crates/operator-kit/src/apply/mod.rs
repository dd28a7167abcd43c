//! The one apply engine: writes an operand object only when it differs from what is live, with
//! library-go's per-kind semantics (anchors §1.7; the decisions are in [`plan`]).
//!
//! Reads come from the watch [`Cache`], never from a live GET while the cache covers the
//! object; after each write the engine remembers what it wrote (by resourceVersion), so a
//! reconcile that runs before the watch event arrives does not write again. A 409 (stale cache
//! or a racing writer) costs one GET and one retry. Every write records an Event.
//!
//! It must not use server-side apply for operands (OpenShift does not; taking over fields from
//! the Go operator's managers would conflict), and it never logs or reports object content.

pub mod plan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::ApiResource;

use crate::cache::{Cache, Lookup, resource_version};
use crate::events::{EventRecorder, describe};
pub use crate::kinds::is_kind_not_served;
pub use plan::{Plan, SPEC_HASH_ANNOTATION, is_subset, merge_metadata, spec_hash};

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Unchanged,
    Created,
    Updated,
    /// Deleted and created again (an immutable field changed).
    Recreated,
}

/// The result of [`Applier::apply`].
#[derive(Clone)]
pub struct Applied {
    pub action: Action,
    /// `metadata.generation` of the live object after the apply (record it in
    /// `status.generations` and pass it back as the next expected generation).
    pub generation: Option<i64>,
    /// The live object after the apply (from the cache, or the server's answer to the write).
    pub object: Arc<DynamicObject>,
}

/// By hand: the object may be a Secret.
impl std::fmt::Debug for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applied")
            .field("action", &self.action)
            .field("generation", &self.generation)
            .field("object", &crate::redact::RedactedObject(&self.object))
            .finish()
    }
}

impl Applied {
    /// Whether the apply wrote anything.
    pub fn wrote(&self) -> bool {
        self.action != Action::Unchanged
    }
}

/// Why an apply failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The API server does not serve the kind: its CRD is not installed. Callers may treat
    /// this as "not a failure" for optional kinds (e.g. ServiceMonitor without monitoring).
    #[error(
        "the API server does not serve {kind} ({api_version}): its CustomResourceDefinition is not installed"
    )]
    KindNotServed { kind: String, api_version: String },
    /// The desired object is not acceptable; the message says what to fix in the asset.
    #[error("{what} is invalid: {reason}")]
    Invalid { what: String, reason: String },
    /// A delete-and-recreate found the old object still present (finalizers).
    #[error("failed to re-create {kind} {name}, waiting for the original object to be deleted")]
    RecreatePending { kind: String, name: String },
    /// The API server refused a request.
    #[error("failed to {verb} {what}: {source}")]
    Api {
        verb: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// Objects read from a list (a watch cache's initial state) carry no apiVersion/kind, as real
/// servers omit them from list items; a write needs them.
fn with_types<'a>(obj: &'a mut DynamicObject, ar: &ApiResource) -> &'a DynamicObject {
    obj.types = Some(kube::core::TypeMeta {
        api_version: ar.api_version.clone(),
        kind: ar.kind.clone(),
    });
    obj
}

fn is_code(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == code)
}

fn is_already_exists(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

/// What the engine last did to an object, until the watch shows it. No `Debug`: the object
/// may be a Secret.
#[derive(Clone)]
enum Memo {
    Written(Arc<DynamicObject>),
    /// Deleted; a cached copy at or below this resourceVersion is stale.
    Deleted(u64),
}

/// The apply engine of one operator.
pub struct Applier {
    /// Picks the cluster of each object (one client unless the control plane is hosted).
    clients: crate::clusters::Clients,
    cache: Cache,
    events: EventRecorder,
    memo: Mutex<HashMap<String, Memo>>,
}

impl Applier {
    pub fn new(
        clients: impl Into<crate::clusters::Clients>,
        cache: Cache,
        events: EventRecorder,
    ) -> Self {
        Self {
            clients: clients.into(),
            cache,
            events,
            memo: Mutex::new(HashMap::new()),
        }
    }

    /// The cache the engine reads from.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Makes the live object match `desired` (see the module docs and [`plan::plan`]).
    /// `expected_generation` is the generation recorded for this object in the CR's
    /// `status.generations` (Deployments and DaemonSets only; `None` forces one write).
    pub async fn apply(
        &self,
        ar: &ApiResource,
        desired: &DynamicObject,
        expected_generation: Option<i64>,
    ) -> Result<Applied, ApplyError> {
        let name = desired.metadata.name.clone().unwrap_or_default();
        let namespace = desired
            .metadata
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty());
        let ns = namespace.as_deref();
        let api = self.api(ar, ns);
        let mut live = self.read(ar, ns, &name).await?;
        let mut retried = false;
        loop {
            let plan = plan::plan(ar, desired, live.as_deref(), expected_generation)?;
            let result = match plan {
                Plan::Unchanged => {
                    let object = live.clone().ok_or_else(|| ApplyError::Invalid {
                        what: describe(ar, ns, &name),
                        reason: "planned as unchanged without a live object (engine bug)".into(),
                    })?;
                    return Ok(Applied {
                        action: Action::Unchanged,
                        generation: object.metadata.generation,
                        object,
                    });
                }
                Plan::Create(obj) => {
                    self.create(&api, ar, ns, &name, &obj, Action::Created)
                        .await
                }
                Plan::Update(mut obj) => match api
                    .replace(&name, &PostParams::default(), with_types(&mut obj, ar))
                    .await
                {
                    Ok(written) => {
                        self.events.updated(ar, ns, &name).await;
                        Ok(self.remember(ar, ns, &name, written, Action::Updated))
                    }
                    Err(e) => Err(("update", e)),
                },
                Plan::Recreate(obj) => {
                    self.delete_live(
                        &api,
                        ar,
                        ns,
                        &name,
                        live.as_deref(),
                        DeleteParams::default(),
                    )
                    .await?;
                    match self
                        .create(&api, ar, ns, &name, &obj, Action::Recreated)
                        .await
                    {
                        Err(("create", e)) if is_already_exists(&e) => {
                            return Err(ApplyError::RecreatePending {
                                kind: ar.kind.clone(),
                                name: name.clone(),
                            });
                        }
                        other => other,
                    }
                }
            };
            let (verb, error) = match result {
                Ok(applied) => return Ok(applied),
                Err(e) => e,
            };
            if is_kind_not_served(&error) {
                return Err(self.not_served(ar));
            }
            // A 409 (stale cache, racing writer) or a 404 on update (deleted meanwhile) means
            // our picture of the live object is wrong: read it once and try once more.
            let stale = is_code(&error, 409) || (verb == "update" && is_code(&error, 404));
            if stale && !retried {
                retried = true;
                tracing::debug!(object = %describe(ar, ns, &name), %error, "stale view; reading live and retrying once");
                live = self.get_live(&api, ar, ns, &name).await?;
                continue;
            }
            let what = describe(ar, ns, &name);
            let verb_title = if verb == "create" { "Create" } else { "Update" };
            self.events
                .failed(verb_title, ar, ns, &name, &api_message(&error))
                .await;
            return Err(ApplyError::Api {
                verb,
                what,
                source: error,
            });
        }
    }

    /// Deletes an object; a missing object (or kind) is fine. Returns whether it deleted.
    /// Reads the cache first, so deleting something already gone costs no request.
    pub async fn delete(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, ApplyError> {
        let ns = namespace.filter(|n| !n.is_empty());
        let live = match self.read(ar, ns, name).await {
            Ok(live) => live,
            Err(ApplyError::KindNotServed { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        let Some(live) = live else {
            return Ok(false);
        };
        let api = self.api(ar, ns);
        self.delete_live(&api, ar, ns, name, Some(&live), DeleteParams::default())
            .await
    }

    /// Deletes an object only when `owned` says the live one is ours (by the marker our
    /// builders put on it), and only that very object: the delete carries its uid as a
    /// precondition, so one that someone else created under the same name after our view of
    /// it was taken is not deleted either. Returns whether it deleted; a missing object, one
    /// that is not ours and one replaced meanwhile are all `false`, the last two with no
    /// delete sent or none done.
    pub async fn delete_owned(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        owned: impl Fn(&DynamicObject) -> bool,
    ) -> Result<bool, ApplyError> {
        let ns = namespace.filter(|n| !n.is_empty());
        let live = match self.read(ar, ns, name).await {
            Ok(Some(live)) => live,
            Ok(None) | Err(ApplyError::KindNotServed { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        if !owned(&live) {
            tracing::debug!(object = %describe(ar, ns, name), "not ours; left alone");
            return Ok(false);
        }
        let Some(uid) = live.metadata.uid.clone() else {
            // Every stored object has a uid; without one this is not a stored object of ours.
            return Ok(false);
        };
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let api = self.api(ar, ns);
        match self
            .delete_live(&api, ar, ns, name, Some(&live), params)
            .await
        {
            // The uid precondition failed: the object of that name is no longer the one we
            // checked. The watch will show the new one; the next reconcile looks at it.
            Err(ApplyError::Api { source, .. }) if is_code(&source, 409) => Ok(false),
            other => other,
        }
    }

    async fn delete_live(
        &self,
        api: &Api<DynamicObject>,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
        live: Option<&DynamicObject>,
        params: DeleteParams,
    ) -> Result<bool, ApplyError> {
        match api.delete(name, &params).await {
            Ok(_) => {
                let rv = live.and_then(resource_version).unwrap_or(u64::MAX);
                self.set_memo(ar, ns, name, Some(Memo::Deleted(rv)));
                self.events.deleted(ar, ns, name).await;
                Ok(true)
            }
            Err(e) if is_code(&e, 404) => {
                self.set_memo(ar, ns, name, Some(Memo::Deleted(u64::MAX)));
                Ok(false)
            }
            Err(e) => {
                // A failed precondition is the caller's decision not to delete, not a failure.
                let precondition = params.preconditions.is_some() && is_code(&e, 409);
                if !precondition {
                    self.events
                        .failed("Delete", ar, ns, name, &api_message(&e))
                        .await;
                }
                Err(ApplyError::Api {
                    verb: "delete",
                    what: describe(ar, ns, name),
                    source: e,
                })
            }
        }
    }

    async fn create(
        &self,
        api: &Api<DynamicObject>,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
        obj: &DynamicObject,
        action: Action,
    ) -> Result<Applied, (&'static str, kube::Error)> {
        let mut obj = obj.clone();
        match api
            .create(&PostParams::default(), with_types(&mut obj, ar))
            .await
        {
            Ok(written) => {
                self.events.created(ar, ns, name).await;
                Ok(self.remember(ar, ns, name, written, action))
            }
            Err(e) => Err(("create", e)),
        }
    }

    fn remember(
        &self,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
        mut written: DynamicObject,
        action: Action,
    ) -> Applied {
        written.metadata.managed_fields = None;
        let object = Arc::new(written);
        self.set_memo(ar, ns, name, Some(Memo::Written(object.clone())));
        Applied {
            action,
            generation: object.metadata.generation,
            object,
        }
    }

    /// The live object as best known without a request: the cache, corrected by what this
    /// engine wrote since. Falls back to a GET only when no synced watch covers the object.
    async fn read(
        &self,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<DynamicObject>>, ApplyError> {
        let memo = self.memo_of(ar, ns, name);
        match self.cache.lookup(ar, ns, name) {
            Lookup::NotServed => Err(self.not_served(ar)),
            Lookup::NotCached => {
                let api = self.api(ar, ns);
                self.get_live(&api, ar, ns, name).await
            }
            Lookup::Found(cached) => {
                let cached_rv = resource_version(&cached);
                match memo {
                    Some(Memo::Written(w)) if matches!((resource_version(&w), cached_rv), (Some(a), Some(b)) if a > b) => {
                        Ok(Some(w))
                    }
                    Some(Memo::Deleted(rv)) if cached_rv.is_some_and(|c| c <= rv) => Ok(None),
                    Some(_) => {
                        // The watch has caught up with our write.
                        self.set_memo(ar, ns, name, None);
                        Ok(Some(cached))
                    }
                    None => Ok(Some(cached)),
                }
            }
            Lookup::Absent { seen_rv } => match memo {
                Some(Memo::Written(w)) if resource_version(&w).is_some_and(|rv| rv > seen_rv) => {
                    Ok(Some(w))
                }
                Some(_) => {
                    self.set_memo(ar, ns, name, None);
                    Ok(None)
                }
                None => Ok(None),
            },
        }
    }

    async fn get_live(
        &self,
        api: &Api<DynamicObject>,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<DynamicObject>>, ApplyError> {
        self.set_memo(ar, ns, name, None);
        match api.get(name).await {
            Ok(mut obj) => {
                obj.metadata.managed_fields = None;
                Ok(Some(Arc::new(obj)))
            }
            Err(e) if is_kind_not_served(&e) => Err(self.not_served(ar)),
            Err(e) if is_code(&e, 404) => Ok(None),
            Err(e) => Err(ApplyError::Api {
                verb: "get",
                what: describe(ar, ns, name),
                source: e,
            }),
        }
    }

    fn api(&self, ar: &ApiResource, ns: Option<&str>) -> Api<DynamicObject> {
        match ns {
            Some(ns) => Api::namespaced_with(self.clients.for_namespace(Some(ns)).clone(), ns, ar),
            None => Api::all_with(self.clients.guest().clone(), ar),
        }
    }

    fn not_served(&self, ar: &ApiResource) -> ApplyError {
        ApplyError::KindNotServed {
            kind: ar.kind.clone(),
            api_version: ar.api_version.clone(),
        }
    }

    fn memo_key(ar: &ApiResource, ns: Option<&str>, name: &str) -> String {
        format!(
            "{}/{}/{}/{}",
            ar.api_version,
            ar.plural,
            ns.unwrap_or_default(),
            name
        )
    }

    fn memo_of(&self, ar: &ApiResource, ns: Option<&str>, name: &str) -> Option<Memo> {
        self.memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&Self::memo_key(ar, ns, name))
            .cloned()
    }

    fn set_memo(&self, ar: &ApiResource, ns: Option<&str>, name: &str, memo: Option<Memo>) {
        let mut map = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = Self::memo_key(ar, ns, name);
        match memo {
            Some(m) => {
                map.insert(key, m);
            }
            None => {
                map.remove(&key);
            }
        }
    }
}

/// The server's message of an API error (no request bodies, so no Secret values).
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}
