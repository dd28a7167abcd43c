//! The I/O half of the OLM removal flow (anchors §3.7): reads what [`crate::olm::next_step`]
//! decides from, performs the step it returns and posts its conditions on the board.
//!
//! It talks to the API directly rather than through watch caches: the flow runs once, at the
//! upgrade from an OLM-installed Manila operator, and afterwards (`…OLMOperatorRemovalAvailable
//! = True` with no saved progress) it is skipped without any request. A cluster without OLM
//! (the Subscription CRD not served) counts as "nothing installed".

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use operator_kit::board::{StepBoard, StepError};
use operator_kit::conditions;
use operator_kit::steps;
use serde_json::{Value, json};
use tracing::info;

use crate::olm::{self, Action, ObjectFacts, ObjectKey, Observed, OlmError, OlmOptions, Saved};
use crate::registry::Driver;

/// Why a run of the flow failed: the message of `<P>OLMOperatorRemovalDegraded` (reason
/// `Error`).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Saved progress or an object the flow cannot use.
    #[error(transparent)]
    Input(#[from] OlmError),
    #[error(transparent)]
    Serialize(#[from] serde_json::Error),
    #[error(transparent)]
    Kind(#[from] operator_kit::kinds::KindError),
    #[error("cannot list OLM Subscriptions: {0}")]
    ListSubscriptions(#[source] kube::Error),
    #[error("cannot read {what} {name}: {source}")]
    Read {
        what: String,
        name: String,
        source: kube::Error,
    },
    #[error("cannot delete OLM {what} {key}: {source}")]
    Delete {
        what: &'static str,
        key: ObjectKey,
        source: kube::Error,
    },
    #[error("cannot remove the finalizers of the old operator CR {name}: {source}")]
    StripFinalizers { name: String, source: kube::Error },
    #[error("cannot delete the old operator CR {name}: {source}")]
    DeleteOldCr { name: String, source: kube::Error },
    #[error("cannot save the OLM removal progress on Storage/{name}: {source}")]
    SaveProgress { name: String, source: kube::Error },
}

/// What one run of the flow left for the rest of the reconcile.
#[derive(Debug)]
pub struct OlmOutcome {
    /// `Storage/cluster` after any annotation write.
    pub storage: Arc<DynamicObject>,
    /// Whether the new operator may be deployed.
    pub complete: bool,
    /// When to look again.
    pub requeue_after: Option<Duration>,
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn subscriptions() -> ApiResource {
    resource(
        olm::OLM_GROUP,
        olm::OLM_VERSION,
        olm::SUBSCRIPTION_KIND,
        olm::SUBSCRIPTION_PLURAL,
    )
}

fn csvs() -> ApiResource {
    resource(
        olm::OLM_GROUP,
        olm::OLM_VERSION,
        olm::CSV_KIND,
        olm::CSV_PLURAL,
    )
}

fn old_cr(opts: &OlmOptions) -> ApiResource {
    let c = &opts.old_cr;
    resource(c.group, c.version, c.kind, c.plural)
}

/// 404: the object, or its kind, is not there.
fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn facts(obj: &DynamicObject) -> ObjectFacts {
    ObjectFacts {
        namespace: obj.metadata.namespace.clone().unwrap_or_default(),
        name: obj.metadata.name.clone().unwrap_or_default(),
        deleting: obj.metadata.deletion_timestamp.is_some(),
        of_package: true,
    }
}

fn package_csv_facts(opts: &OlmOptions, obj: &DynamicObject) -> ObjectFacts {
    let of_package = serde_json::to_value(obj)
        .map(|v| olm::csv_of_package(opts, &v))
        .unwrap_or(false);
    ObjectFacts {
        of_package,
        ..facts(obj)
    }
}

/// Whether the flow has nothing left to do: finished before, and no progress saved.
pub fn settled(driver: &Driver, storage: &DynamicObject) -> bool {
    let annotations = storage.metadata.annotations.clone().unwrap_or_default();
    let nothing_saved = matches!(
        Saved::from_annotations(driver.condition_prefix, &annotations),
        Ok(None)
    );
    nothing_saved
        && olm::removal_complete(
            driver.condition_prefix,
            driver.olm,
            &steps::previous_conditions(storage),
        )
}

/// Runs one step of `driver`'s OLM removal.
pub async fn sync(
    client: &Client,
    driver: &Driver,
    opts: &OlmOptions,
    storage: Arc<DynamicObject>,
    board: &mut StepBoard,
) -> OlmOutcome {
    let prefix = driver.condition_prefix;
    let result = step(client, driver, opts, &storage, board)
        .await
        .map_err(|e| StepError::with_reason(conditions::reasons::ERROR, e));
    match board.post(&olm::condition_prefix(prefix), result) {
        Some((storage, complete, requeue_after)) => OlmOutcome {
            storage,
            complete,
            requeue_after,
        },
        None => OlmOutcome {
            complete: olm::removal_complete(
                prefix,
                Some(opts),
                &steps::previous_conditions(&storage),
            ),
            storage,
            requeue_after: Some(olm::WAIT_INTERVAL),
        },
    }
}

async fn step(
    client: &Client,
    driver: &Driver,
    opts: &OlmOptions,
    storage: &Arc<DynamicObject>,
    board: &mut StepBoard,
) -> Result<(Arc<DynamicObject>, bool, Option<Duration>), SyncError> {
    let prefix = driver.condition_prefix;
    let observed = observe(client, prefix, opts, storage).await?;
    let step = olm::next_step(prefix, opts, &observed)?;
    let [progressing, available] = step.conditions.clone();
    let already_finished = olm::removal_complete(prefix, Some(opts), &observed.storage_conditions);
    board.set_condition(progressing);
    board.set_condition(available);
    let mut storage = storage.clone();
    match &step.action {
        Action::SaveProgress => {
            storage = annotate(client, &storage, &step.annotations).await?;
        }
        Action::DeleteSubscription(key) => {
            delete(client, &subscriptions(), key, "Subscription").await?
        }
        Action::DeleteCsv(key) => delete(client, &csvs(), key, "ClusterServiceVersion").await?,
        Action::DeleteOldCr {
            name,
            strip_finalizers,
        } => {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &old_cr(opts));
            if *strip_finalizers {
                api.patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                )
                .await
                .or_else(|e| {
                    if not_found(&e) {
                        Ok(DynamicObject::new(name, &old_cr(opts)))
                    } else {
                        Err(e)
                    }
                })
                .map_err(|source| SyncError::StripFinalizers {
                    name: name.clone(),
                    source,
                })?;
            }
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if not_found(&e) => {}
                Err(source) => {
                    return Err(SyncError::DeleteOldCr {
                        name: name.clone(),
                        source,
                    });
                }
            }
        }
        Action::Finished | Action::NotInstalled => {
            // The conditions are written first; the saved progress is cleared (to "", as Go
            // does) once Storage says Finished, so a restart in between still knows what was
            // removed.
            let current = storage.metadata.annotations.clone().unwrap_or_default();
            let stale = step
                .annotations
                .iter()
                .any(|(k, v)| current.get(k) != Some(v));
            if already_finished && stale {
                storage = annotate(client, &storage, &step.annotations).await?;
            }
        }
        Action::WaitSubscriptionGone(_)
        | Action::WaitCsvGone(_)
        | Action::WaitOperatorDeploymentGone(_)
        | Action::WaitOldCrGone { .. } => {}
    }
    if !matches!(step.action, Action::Finished | Action::NotInstalled) {
        info!(driver = driver.name, "OLM removal: {}", step.action);
    }
    let requeue = match &step.action {
        // Clear the saved progress on the next pass, after the conditions are written.
        Action::Finished | Action::NotInstalled if !already_finished => {
            Some(Duration::from_secs(1))
        }
        _ => step.requeue_after,
    };
    Ok((storage, step.action.is_done(), requeue))
}

async fn observe(
    client: &Client,
    prefix: &str,
    opts: &OlmOptions,
    storage: &DynamicObject,
) -> Result<Observed, SyncError> {
    let annotations = storage.metadata.annotations.clone().unwrap_or_default();
    let saved = Saved::from_annotations(prefix, &annotations)?;
    let subs_api: Api<DynamicObject> = Api::all_with(client.clone(), &subscriptions());
    let list = match subs_api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        // No OLM on this cluster: nothing can have been installed through it.
        Err(e) if not_found(&e) => Vec::new(),
        Err(e) => return Err(SyncError::ListSubscriptions(e)),
    };
    let mut subscriptions = Vec::new();
    for obj in &list {
        let value = serde_json::to_value(obj)?;
        subscriptions.push(olm::SubscriptionFacts::from_object(&value)?);
    }
    let targets = olm::targets(opts, saved.as_ref());
    let mut csv_facts = Vec::new();
    for key in &targets.csvs {
        if let Some(obj) = get(
            client,
            &csvs(),
            Some(&key.namespace),
            &key.name,
            "ClusterServiceVersion",
        )
        .await?
        {
            csv_facts.push(package_csv_facts(opts, &obj));
        }
    }
    let deployments = ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&());
    let mut operator_deployments = Vec::new();
    for key in &targets.operator_deployments {
        if let Some(obj) = get(
            client,
            &deployments,
            Some(&key.namespace),
            &key.name,
            "Deployment",
        )
        .await?
        {
            operator_deployments.push(facts(&obj));
        }
    }
    let old = get(
        client,
        &old_cr(opts),
        None,
        opts.old_cr.name,
        opts.old_cr.kind,
    )
    .await?
    .map(|obj| olm::OldCrFacts {
        finalizers: obj.metadata.finalizers.clone().unwrap_or_default(),
        deleting: obj.metadata.deletion_timestamp.is_some(),
    });
    Ok(Observed {
        subscriptions,
        saved,
        csvs: csv_facts,
        operator_deployments,
        old_cr: old,
        storage_conditions: steps::previous_conditions(storage),
    })
}

/// An object (a missing one, or a kind not served, is `None`).
async fn get(
    client: &Client,
    ar: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    what: &str,
) -> Result<Option<DynamicObject>, SyncError> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    match api.get_opt(name).await {
        Ok(found) => Ok(found),
        Err(e) if not_found(&e) => Ok(None),
        Err(source) => Err(SyncError::Read {
            what: what.to_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

async fn delete(
    client: &Client,
    ar: &ApiResource,
    key: &ObjectKey,
    what: &'static str,
) -> Result<(), SyncError> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &key.namespace, ar);
    match api.delete(&key.name, &DeleteParams::default()).await {
        Ok(_) => {
            info!("deleted OLM {what} {key}");
            Ok(())
        }
        Err(e) if not_found(&e) => Ok(()),
        Err(source) => Err(SyncError::Delete {
            what,
            key: key.clone(),
            source,
        }),
    }
}

/// Merges annotations into `Storage/cluster`; returns the object as written.
async fn annotate(
    client: &Client,
    storage: &DynamicObject,
    annotations: &BTreeMap<String, String>,
) -> Result<Arc<DynamicObject>, SyncError> {
    let ar = operator_kit::kinds::api_resource("operator.openshift.io/v1", "Storage")?;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let name = storage.metadata.name.clone().unwrap_or_default();
    let patch: Value = json!({"metadata": {"annotations": annotations}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(|mut o| {
            o.metadata.managed_fields = None;
            Arc::new(o)
        })
        .map_err(|source| SyncError::SaveProgress { name, source })
}
