//! The OLM removal flow (anchors §3.7; Go `OLMOperatorRemovalController`, CSO 4.6–4.17): a
//! Manila CSI driver operator that OpenShift 4.5 installed through OLM is removed before the
//! CSO starts its own operator. This module is the pure decision part: from the observed
//! cluster state and the progress saved in `Storage/cluster` annotations, [`next_step`] says
//! what to do next (save progress, delete the Subscription, delete the CSV, wait for OLM to
//! remove the operator Deployment, strip and delete the old CR, finish), with the conditions to
//! write and when to look again. [`removal_complete`] is the gate the operator Deployment step
//! waits on.
//!
//! The flow is restart-safe by construction: nothing is remembered in memory, every decision is
//! taken from what the caller observed plus the saved annotations, so a CSO that restarts at any
//! point resumes where it stopped.
//!
//! How a caller uses it, once per sync and only while `Storage/cluster` is `Managed`:
//! 1. list every `Subscription` (an empty list when OLM's CRD is not served), parse each with
//!    [`SubscriptionFacts::from_object`], and parse the saved progress with
//!    [`Saved::from_annotations`];
//! 2. look up the objects [`targets`] names (CSVs and the OLM operator Deployment; report the
//!    ones that exist) and the old CR;
//! 3. call [`next_step`]; merge [`Step::annotations`] into `Storage/cluster` *before* performing
//!    [`Step::action`] when the action is [`Action::SaveProgress`], and *after* writing
//!    [`Step::conditions`] when it is [`Action::Finished`] or [`Action::NotInstalled`];
//! 4. requeue after [`Step::requeue_after`].
//!
//! What this module must not do: any I/O, reading a clock or the environment, or deleting the
//! OLM operator Deployment itself (that is OLM's job once the CSV is gone).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use operator_kit::conditions::{self, FALSE, OperatorCondition, TRUE};
use serde_json::Value;

/// OLM's API group.
pub const OLM_GROUP: &str = "operators.coreos.com";
/// The OLM API version the CSO reads.
pub const OLM_VERSION: &str = "v1alpha1";
/// `Subscription` kind.
pub const SUBSCRIPTION_KIND: &str = "Subscription";
/// `subscriptions` resource.
pub const SUBSCRIPTION_PLURAL: &str = "subscriptions";
/// `ClusterServiceVersion` kind.
pub const CSV_KIND: &str = "ClusterServiceVersion";
/// `clusterserviceversions` resource.
pub const CSV_PLURAL: &str = "clusterserviceversions";

/// The catalog a matching Subscription must come from (Go `olmSource`).
pub const OLM_SOURCE: &str = "redhat-operators";
/// The namespace of that catalog (Go `olmSourceNamespace`).
pub const OLM_SOURCE_NAMESPACE: &str = "openshift-marketplace";

/// How long to wait before looking again while something is being deleted (Go `waitInterval`).
pub const WAIT_INTERVAL: Duration = Duration::from_secs(5);

/// Infix of the flow's condition types: `<Prefix>OLMOperatorRemoval{Progressing,Available}`.
pub const CONDITION_INFIX: &str = "OLMOperatorRemoval";
/// Reason while removing.
pub const REASON_REMOVING: &str = "RemovingOLMOperator";
/// Reason once done (also when nothing was installed).
pub const REASON_FINISHED: &str = "Finished";

/// Message while the Subscription is being deleted.
pub const MSG_WAIT_SUBSCRIPTION: &str = "Waiting for OLM Subscription to be deleted";
/// Message while the CSV is being deleted.
pub const MSG_WAIT_CSV: &str = "Waiting for OLM CSV to be deleted";
/// Message while OLM removes the operator Deployment.
pub const MSG_WAIT_OPERATOR: &str = "Waiting for OLM to delete the operator";
/// Message while the old operator CR is being deleted.
pub const MSG_WAIT_OLD_CR: &str = "Waiting for the old operator CR to be deleted";
/// Message once the removal has finished.
pub const MSG_FINISHED: &str = "CSI driver has been removed from OLM";

/// Suffix of the annotation holding the namespace of the OLM-installed operator; the key is
/// `<Prefix>.olm-removal.storage.openshift.io/namespace` (Go `olmOperatorNamespaceAnnotation`).
pub const NAMESPACE_ANNOTATION_SUFFIX: &str = ".olm-removal.storage.openshift.io/namespace";
/// Suffix of the annotation holding its CSV name (Go `olmOperatorCSVAnnotation`).
pub const CSV_ANNOTATION_SUFFIX: &str = ".olm-removal.storage.openshift.io/csvName";

pub use operator_kit::spec::{OldCr, OlmOptions};

/// Manila's options (CSO `csioperatorclient/manila.go` up to release-4.17); no other driver
/// had any. Declared by the driver (`manila::OLM`, its spec's `olm`).
pub const MANILA_OLM: OlmOptions = manila::OLM;

/// `<prefix>OLMOperatorRemovalProgressing`.
pub fn progressing_type(prefix: &str) -> String {
    format!("{prefix}{CONDITION_INFIX}Progressing")
}

/// `<prefix>OLMOperatorRemovalAvailable`: `True` once the removal is complete.
pub fn available_type(prefix: &str) -> String {
    format!("{prefix}{CONDITION_INFIX}Available")
}

/// `<prefix>OLMOperatorRemovalDegraded`, for the caller's sync errors. Go reported them as
/// `<prefix>CSIDriverOperatorDegraded`, the condition the CR controller also writes, so the two
/// controllers overwrote each other's errors; this is the type the Go doc comment promised.
pub fn degraded_type(prefix: &str) -> String {
    conditions::degraded_type(&condition_prefix(prefix))
}

/// The prefix of the OLM removal's conditions, e.g. `ManilaOLMOperatorRemoval`.
pub fn condition_prefix(prefix: &str) -> String {
    format!("{prefix}{CONDITION_INFIX}")
}

/// The annotation key saving the operator namespace, e.g.
/// `Manila.olm-removal.storage.openshift.io/namespace`.
pub fn namespace_annotation(prefix: &str) -> String {
    format!("{prefix}{NAMESPACE_ANNOTATION_SUFFIX}")
}

/// The annotation key saving the CSV name, e.g. `Manila.olm-removal.storage.openshift.io/csvName`.
pub fn csv_annotation(prefix: &str) -> String {
    format!("{prefix}{CSV_ANNOTATION_SUFFIX}")
}

/// Whether the driver may be deployed: drivers without OLM options always may; the others once
/// `<prefix>OLMOperatorRemovalAvailable=True` is on `Storage/cluster` (Go `olmRemovalComplete`).
pub fn removal_complete(
    prefix: &str,
    olm: Option<&OlmOptions>,
    storage_conditions: &[OperatorCondition],
) -> bool {
    if olm.is_none() {
        return true;
    }
    conditions::find(storage_conditions, &available_type(prefix)).is_some_and(|c| c.status == TRUE)
}

/// A malformed input: saved progress an administrator edited, or an object the API server
/// should never have returned. Messages say what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OlmError {
    /// The saved namespace is not a namespace name.
    #[error(
        "Storage/cluster annotation {key} is {value:?}, which is not a namespace name; set it to the namespace of the OLM-installed operator, or to \"\" to restart the OLM removal from the Subscriptions"
    )]
    SavedNamespace {
        /// The annotation key.
        key: String,
        /// Its value.
        value: String,
    },
    /// A saved CSV name is not an object name.
    #[error(
        "Storage/cluster annotation {key} is {value:?}, which is not a comma-separated list of ClusterServiceVersion names; set it to the CSV names of the OLM-installed operator, or to \"\" if none is left"
    )]
    SavedCsv {
        /// The annotation key.
        key: String,
        /// Its value.
        value: String,
    },
    /// A Subscription object without a usable `metadata.namespace` or `metadata.name`.
    #[error(
        "a Subscription object has no valid metadata.{field}; this is not an object the API server returns, check what supplied it"
    )]
    SubscriptionMetadata {
        /// `namespace` or `name`.
        field: &'static str,
    },
    /// A saved CSV exists but is not the package's: the annotation was edited to name another
    /// operator's CSV, which the CSO must not delete on anyone's word.
    #[error(
        "Storage/cluster annotation {key} names ClusterServiceVersion {namespace}/{name}, which does not belong to the OLM package {package}; the CSO will not delete it. Remove that name from the annotation (or set it to \"\") to continue the OLM removal"
    )]
    ForeignCsv {
        /// The annotation key.
        key: String,
        /// The CSV's namespace.
        namespace: String,
        /// The CSV's name.
        name: String,
        /// The package whose CSVs may be deleted.
        package: &'static str,
    },
    /// A matching Subscription's CSV name is not an object name.
    #[error(
        "Subscription {namespace}/{name} reports CSV {csv:?}, which is not a ClusterServiceVersion name; the OLM removal cannot delete it: fix the Subscription's status or delete the CSV and the Subscription by hand"
    )]
    SubscriptionCsv {
        /// The Subscription's namespace.
        namespace: String,
        /// The Subscription's name.
        name: String,
        /// The reported CSV.
        csv: String,
    },
}

/// What the flow needs of one Subscription.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubscriptionFacts {
    /// `metadata.namespace`: the namespace OLM installed the operator into.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.name`: the package.
    pub package: Option<String>,
    /// `spec.source`: the catalog.
    pub source: Option<String>,
    /// `spec.sourceNamespace`.
    pub source_namespace: Option<String>,
    /// `status.currentCSV`.
    pub current_csv: Option<String>,
    /// `status.installedCSV`.
    pub installed_csv: Option<String>,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl SubscriptionFacts {
    /// Reads a Subscription as the API returns it (e.g. a serialized `DynamicObject`).
    /// Fields of the wrong type count as absent: such a Subscription does not match, and one
    /// odd Subscription elsewhere in the cluster must not stop the flow (Go failed the whole
    /// sync). Only missing metadata is an error.
    pub fn from_object(obj: &Value) -> Result<Self, OlmError> {
        let meta = |field: &'static str| {
            obj.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or(OlmError::SubscriptionMetadata { field })
        };
        let text = |ptr: &str| obj.pointer(ptr).and_then(Value::as_str).map(str::to_owned);
        Ok(SubscriptionFacts {
            namespace: meta("namespace")?,
            name: meta("name")?,
            package: text("/spec/name"),
            source: text("/spec/source"),
            source_namespace: text("/spec/sourceNamespace"),
            current_csv: text("/status/currentCSV"),
            installed_csv: text("/status/installedCSV"),
            deleting: obj
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|v| !v.is_null()),
        })
    }

    /// Whether this Subscription installed `opts`' operator from Red Hat's catalog (Go
    /// `findSubscription`: package, source and source namespace all equal).
    pub fn matches(&self, opts: &OlmOptions) -> bool {
        self.package.as_deref() == Some(opts.package)
            && self.source.as_deref() == Some(OLM_SOURCE)
            && self.source_namespace.as_deref() == Some(OLM_SOURCE_NAMESPACE)
    }

    /// The CSV this Subscription installed: `status.currentCSV`, else `status.installedCSV`
    /// (Go read only currentCSV), `None` when OLM has not resolved one yet.
    pub fn csv(&self) -> Option<&str> {
        [&self.current_csv, &self.installed_csv]
            .into_iter()
            .filter_map(|c| c.as_deref())
            .find(|c| !c.is_empty())
    }

    fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }
}

/// A namespaced object's identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key from borrowed parts.
    pub fn new(namespace: &str, name: &str) -> Self {
        ObjectKey {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// An existing object the flow waits on (a CSV or the OLM operator Deployment).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectFacts {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// For a ClusterServiceVersion: whether it is the package's ([`csv_of_package`]). The
    /// saved CSV names live in `Storage/cluster` annotations that anyone allowed to edit that
    /// object can change, so the flow deletes only CSVs that prove they are the package's.
    /// Always `true` for other kinds.
    pub of_package: bool,
}

/// Whether a ClusterServiceVersion (as the API returns it) belongs to the OLM package of
/// `opts`: OLM labels the CSVs it installs `operators.coreos.com/<package>.<namespace>`, CSV
/// names are `<package>.<version>` by OLM convention, and the package's install strategy
/// deploys the operator Deployment.
pub fn csv_of_package(opts: &OlmOptions, csv: &serde_json::Value) -> bool {
    let namespace = csv["metadata"]["namespace"].as_str().unwrap_or_default();
    let label = format!("operators.coreos.com/{}.{namespace}", opts.package);
    let labelled = csv["metadata"]["labels"]
        .as_object()
        .is_some_and(|l| l.contains_key(&label));
    let named = csv["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n.starts_with(&format!("{}.", opts.package)));
    let deploys_operator = csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .is_some_and(|ds| {
            ds.iter()
                .any(|d| d["name"].as_str() == Some(opts.operator_deployment))
        });
    labelled || named || deploys_operator
}

impl ObjectFacts {
    fn is(&self, namespace: &str, name: &str) -> bool {
        self.namespace == namespace && self.name == name
    }
}

/// What the flow needs of the old operator CR, when it exists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OldCrFacts {
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

/// The progress saved on `Storage/cluster`: which OLM installation is being removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Saved {
    /// The namespace of the OLM-installed operator (its Subscription's namespace).
    pub namespace: String,
    /// Its CSVs, oldest first. Go saved exactly one; more than one is written (comma-separated)
    /// only when a second matching Subscription or a CSV upgrade appears in the same namespace
    /// during the removal, so that no CSV is forgotten.
    pub csv_names: Vec<String>,
}

impl Saved {
    /// Reads the saved progress from `Storage/cluster`'s annotations. A missing or empty
    /// namespace means nothing is saved (Go clears the annotations to `""`); a malformed value
    /// is an error naming the annotation.
    pub fn from_annotations(
        prefix: &str,
        annotations: &BTreeMap<String, String>,
    ) -> Result<Option<Saved>, OlmError> {
        let ns_key = namespace_annotation(prefix);
        let csv_key = csv_annotation(prefix);
        let namespace = annotations.get(&ns_key).map(String::as_str).unwrap_or("");
        if namespace.is_empty() {
            return Ok(None);
        }
        if !is_dns1123_label(namespace) {
            return Err(OlmError::SavedNamespace {
                key: ns_key,
                value: namespace.to_owned(),
            });
        }
        let csvs = annotations.get(&csv_key).map(String::as_str).unwrap_or("");
        let mut csv_names = Vec::new();
        for name in csvs.split(',').filter(|s| !s.is_empty()) {
            if !is_dns1123_subdomain(name) {
                return Err(OlmError::SavedCsv {
                    key: csv_key,
                    value: csvs.to_owned(),
                });
            }
            if !csv_names.iter().any(|n| n == name) {
                csv_names.push(name.to_owned());
            }
        }
        Ok(Some(Saved {
            namespace: namespace.to_owned(),
            csv_names,
        }))
    }

    /// The annotations that save this progress.
    pub fn to_annotations(&self, prefix: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (namespace_annotation(prefix), self.namespace.clone()),
            (csv_annotation(prefix), self.csv_names.join(",")),
        ])
    }
}

/// The annotations that clear the saved progress: both keys set to `""`, as Go does.
pub fn cleared_annotations(prefix: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (namespace_annotation(prefix), String::new()),
        (csv_annotation(prefix), String::new()),
    ])
}

/// The objects the caller must look up before calling [`next_step`]: the saved CSVs and the
/// OLM operator Deployment in the saved namespace. Report each that exists in
/// [`Observed::csvs`] and [`Observed::operator_deployments`]; a missing entry means "gone".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Targets {
    /// CSVs to look up.
    pub csvs: Vec<ObjectKey>,
    /// Deployments to look up.
    pub operator_deployments: Vec<ObjectKey>,
}

/// The objects to look up for this saved progress (none when nothing is saved).
pub fn targets(opts: &OlmOptions, saved: Option<&Saved>) -> Targets {
    let Some(saved) = saved else {
        return Targets::default();
    };
    Targets {
        csvs: saved
            .csv_names
            .iter()
            .map(|c| ObjectKey::new(&saved.namespace, c))
            .collect(),
        operator_deployments: vec![ObjectKey::new(&saved.namespace, opts.operator_deployment)],
    }
}

/// Everything [`next_step`] decides from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observed {
    /// Every Subscription in the cluster (any package: the flow picks the matching ones);
    /// empty when OLM's Subscription CRD is not served.
    pub subscriptions: Vec<SubscriptionFacts>,
    /// The saved progress ([`Saved::from_annotations`]).
    pub saved: Option<Saved>,
    /// The [`Targets::csvs`] that exist.
    pub csvs: Vec<ObjectFacts>,
    /// The [`Targets::operator_deployments`] that exist.
    pub operator_deployments: Vec<ObjectFacts>,
    /// The old operator CR, if it exists (absent also when its CRD is not served).
    pub old_cr: Option<OldCrFacts>,
    /// `Storage/cluster`'s conditions, so a finished removal keeps saying so after a restart.
    pub storage_conditions: Vec<OperatorCondition>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Merge [`Step::annotations`] into `Storage/cluster`; nothing else yet.
    SaveProgress,
    /// Delete this Subscription.
    DeleteSubscription(ObjectKey),
    /// The Subscription is terminating; look again later.
    WaitSubscriptionGone(ObjectKey),
    /// Delete this ClusterServiceVersion.
    DeleteCsv(ObjectKey),
    /// The CSV is terminating; look again later.
    WaitCsvGone(ObjectKey),
    /// OLM has not yet removed the operator Deployment; look again later (never delete it).
    WaitOperatorDeploymentGone(ObjectKey),
    /// Remove the old CR's finalizers if `strip_finalizers`, then delete it.
    DeleteOldCr {
        /// The CR's name.
        name: String,
        /// Whether to set `metadata.finalizers` to empty first.
        strip_finalizers: bool,
    },
    /// The old CR is terminating; look again later.
    WaitOldCrGone {
        /// The CR's name.
        name: String,
    },
    /// The removal has finished: write the conditions, then clear the annotations.
    Finished,
    /// Nothing was ever installed through OLM: write the conditions and (as Go does) the
    /// cleared annotations.
    NotInstalled,
}

impl Action {
    /// Whether the flow is over (the new operator may be deployed).
    pub fn is_done(&self) -> bool {
        matches!(self, Action::Finished | Action::NotInstalled)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::SaveProgress => write!(f, "save the OLM removal progress on Storage/cluster"),
            Action::DeleteSubscription(k) => write!(f, "delete Subscription {k}"),
            Action::WaitSubscriptionGone(k) => write!(f, "wait for Subscription {k} to go"),
            Action::DeleteCsv(k) => write!(f, "delete ClusterServiceVersion {k}"),
            Action::WaitCsvGone(k) => write!(f, "wait for ClusterServiceVersion {k} to go"),
            Action::WaitOperatorDeploymentGone(k) => {
                write!(f, "wait for OLM to delete Deployment {k}")
            }
            Action::DeleteOldCr {
                name,
                strip_finalizers,
            } => {
                if *strip_finalizers {
                    write!(f, "strip the finalizers of the old CR {name} and delete it")
                } else {
                    write!(f, "delete the old CR {name}")
                }
            }
            Action::WaitOldCrGone { name } => write!(f, "wait for the old CR {name} to go"),
            Action::Finished => write!(f, "finish: the OLM-installed operator is removed"),
            Action::NotInstalled => write!(f, "finish: no OLM-installed operator"),
        }
    }
}

/// One decision of the flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What to do.
    pub action: Action,
    /// `<P>OLMOperatorRemovalProgressing` then `<P>OLMOperatorRemovalAvailable`, to set on
    /// `Storage/cluster` (transition times are the setter's job).
    pub conditions: [OperatorCondition; 2],
    /// Annotations to merge into `Storage/cluster` (empty when there is nothing to write).
    pub annotations: BTreeMap<String, String>,
    /// When to sync again: `Some(ZERO)` right away (after saving progress),
    /// `Some(WAIT_INTERVAL)` while waiting on a deletion, `None` once done.
    pub requeue_after: Option<Duration>,
}

/// Decides the next step of the removal of `opts`' OLM-installed operator; `prefix` is the
/// driver's condition prefix (`Manila`).
///
/// Order: the Subscriptions of the saved installation first (saving any CSV they name that is
/// not saved yet, then deleting them), then its CSVs, then waiting for OLM to remove the
/// operator Deployment; only then another matching Subscription (saved over the finished
/// installation); and once no OLM object is left, the old CR. Without any matching
/// Subscription or saved progress, nothing was installed.
pub fn next_step(prefix: &str, opts: &OlmOptions, observed: &Observed) -> Result<Step, OlmError> {
    let mut matching: Vec<&SubscriptionFacts> = observed
        .subscriptions
        .iter()
        .filter(|s| s.matches(opts))
        .collect();
    matching.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    for sub in &matching {
        if let Some(csv) = sub.csv().filter(|c| !is_dns1123_subdomain(c)) {
            return Err(OlmError::SubscriptionCsv {
                namespace: sub.namespace.clone(),
                name: sub.name.clone(),
                csv: csv.to_owned(),
            });
        }
    }

    if let Some(saved) = &observed.saved {
        // 1. The saved installation's own Subscriptions: while one exists OLM keeps the CSV.
        if let Some(sub) = matching.iter().find(|s| s.namespace == saved.namespace) {
            if let Some(csv) = sub
                .csv()
                .filter(|c| !saved.csv_names.iter().any(|n| n == c))
            {
                let mut more = saved.clone();
                more.csv_names.push(csv.to_owned());
                return Ok(save(prefix, &more));
            }
            return Ok(subscription_step(prefix, sub));
        }
        // 2. Its CSVs.
        for csv in &saved.csv_names {
            if let Some(found) = observed.csvs.iter().find(|c| c.is(&saved.namespace, csv)) {
                if !found.of_package {
                    return Err(OlmError::ForeignCsv {
                        key: csv_annotation(prefix),
                        namespace: saved.namespace.clone(),
                        name: csv.clone(),
                        package: opts.package,
                    });
                }
                let key = ObjectKey::new(&saved.namespace, csv);
                let action = if found.deleting {
                    Action::WaitCsvGone(key)
                } else {
                    Action::DeleteCsv(key)
                };
                return Ok(waiting(prefix, action, MSG_WAIT_CSV));
            }
        }
        // 3. OLM removes the operator Deployment once the CSV is gone.
        if observed
            .operator_deployments
            .iter()
            .any(|d| d.is(&saved.namespace, opts.operator_deployment))
        {
            let key = ObjectKey::new(&saved.namespace, opts.operator_deployment);
            return Ok(waiting(
                prefix,
                Action::WaitOperatorDeploymentGone(key),
                MSG_WAIT_OPERATOR,
            ));
        }
    }

    // Another installation (in another namespace, or the first one): save it before touching it.
    if let Some(sub) = matching.first() {
        let saved = Saved {
            namespace: sub.namespace.clone(),
            csv_names: sub.csv().map(str::to_owned).into_iter().collect(),
        };
        return Ok(save(prefix, &saved));
    }

    if observed.saved.is_none() {
        return Ok(not_installed(prefix, &observed.storage_conditions));
    }

    // 4. The old CR, once no OLM object of the old operator is left.
    if let Some(cr) = &observed.old_cr {
        let name = opts.old_cr.name.to_owned();
        let action = if !cr.finalizers.is_empty() || !cr.deleting {
            Action::DeleteOldCr {
                name,
                strip_finalizers: !cr.finalizers.is_empty(),
            }
        } else {
            Action::WaitOldCrGone { name }
        };
        return Ok(waiting(prefix, action, MSG_WAIT_OLD_CR));
    }

    // 5. Done.
    Ok(Step {
        action: Action::Finished,
        conditions: finished_conditions(prefix, MSG_FINISHED),
        annotations: cleared_annotations(prefix),
        requeue_after: None,
    })
}

fn subscription_step(prefix: &str, sub: &SubscriptionFacts) -> Step {
    let action = if sub.deleting {
        Action::WaitSubscriptionGone(sub.key())
    } else {
        Action::DeleteSubscription(sub.key())
    };
    waiting(prefix, action, MSG_WAIT_SUBSCRIPTION)
}

fn save(prefix: &str, saved: &Saved) -> Step {
    Step {
        action: Action::SaveProgress,
        conditions: removing_conditions(prefix, MSG_WAIT_SUBSCRIPTION),
        annotations: saved.to_annotations(prefix),
        requeue_after: Some(Duration::ZERO),
    }
}

fn waiting(prefix: &str, action: Action, message: &str) -> Step {
    Step {
        action,
        conditions: removing_conditions(prefix, message),
        annotations: BTreeMap::new(),
        requeue_after: Some(WAIT_INTERVAL),
    }
}

fn not_installed(prefix: &str, storage_conditions: &[OperatorCondition]) -> Step {
    // Go said "" here, and so lost the "removed" message after a restart; keep it when the
    // conditions already record a finished removal.
    let finished_before = conditions::find(storage_conditions, &available_type(prefix))
        .is_some_and(|c| {
            c.status == TRUE && c.reason == REASON_FINISHED && c.message == MSG_FINISHED
        });
    let message = if finished_before { MSG_FINISHED } else { "" };
    Step {
        action: Action::NotInstalled,
        conditions: finished_conditions(prefix, message),
        annotations: cleared_annotations(prefix),
        requeue_after: None,
    }
}

fn removing_conditions(prefix: &str, message: &str) -> [OperatorCondition; 2] {
    [
        OperatorCondition::new(progressing_type(prefix), TRUE, REASON_REMOVING, message),
        OperatorCondition::new(available_type(prefix), FALSE, REASON_REMOVING, message),
    ]
}

fn finished_conditions(prefix: &str, message: &str) -> [OperatorCondition; 2] {
    [
        OperatorCondition::new(progressing_type(prefix), FALSE, REASON_FINISHED, message),
        OperatorCondition::new(available_type(prefix), TRUE, REASON_FINISHED, message),
    ]
}

/// RFC 1123 label: a namespace name.
fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// RFC 1123 subdomain: an object name such as a CSV's.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[cfg(test)]
mod tests {
    //! One test per rule of the flow, the Go names and messages verbatim, the restart cases,
    //! and a property: from any observed state, applying the steps to a simulated cluster
    //! (with lagging deletions and lost actions) ends in `Finished`/`NotInstalled`.

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const P: &str = "Manila";
    const NS: &str = "openshift-manila-csi-driver-operator";
    const CSV: &str = "manila-csi-driver-operator.v4.5.0";
    const CSV2: &str = "manila-csi-driver-operator.v4.5.1";

    fn sub(ns: &str, name: &str, pkg: &str, source: &str, src_ns: &str) -> SubscriptionFacts {
        SubscriptionFacts {
            namespace: ns.into(),
            name: name.into(),
            package: Some(pkg.into()),
            source: Some(source.into()),
            source_namespace: Some(src_ns.into()),
            current_csv: None,
            installed_csv: None,
            deleting: false,
        }
    }

    fn manila_sub(ns: &str, name: &str, csv: Option<&str>) -> SubscriptionFacts {
        SubscriptionFacts {
            current_csv: csv.map(Into::into),
            ..sub(
                ns,
                name,
                "manila-csi-driver-operator",
                "redhat-operators",
                "openshift-marketplace",
            )
        }
    }

    fn saved(ns: &str, csvs: &[&str]) -> Option<Saved> {
        Some(Saved {
            namespace: ns.into(),
            csv_names: csvs.iter().map(|c| c.to_string()).collect(),
        })
    }

    fn obj(ns: &str, name: &str) -> ObjectFacts {
        ObjectFacts {
            namespace: ns.into(),
            name: name.into(),
            deleting: false,
            of_package: true,
        }
    }

    fn step(o: &Observed) -> Step {
        next_step(P, &MANILA_OLM, o).unwrap()
    }

    fn assert_removing(s: &Step, message: &str) {
        assert_eq!(
            s.conditions,
            [
                OperatorCondition::new(
                    "ManilaOLMOperatorRemovalProgressing",
                    "True",
                    "RemovingOLMOperator",
                    message
                ),
                OperatorCondition::new(
                    "ManilaOLMOperatorRemovalAvailable",
                    "False",
                    "RemovingOLMOperator",
                    message
                ),
            ]
        );
    }

    fn assert_finished(s: &Step, message: &str) {
        assert_eq!(
            s.conditions,
            [
                OperatorCondition::new(
                    "ManilaOLMOperatorRemovalProgressing",
                    "False",
                    "Finished",
                    message
                ),
                OperatorCondition::new(
                    "ManilaOLMOperatorRemovalAvailable",
                    "True",
                    "Finished",
                    message
                ),
            ]
        );
        assert_eq!(s.requeue_after, None);
        assert_eq!(
            s.annotations,
            BTreeMap::from([
                (
                    "Manila.olm-removal.storage.openshift.io/namespace".to_string(),
                    String::new()
                ),
                (
                    "Manila.olm-removal.storage.openshift.io/csvName".to_string(),
                    String::new()
                ),
            ])
        );
    }

    #[test]
    fn names_and_messages_are_the_go_ones() {
        assert_eq!(progressing_type(P), "ManilaOLMOperatorRemovalProgressing");
        assert_eq!(available_type(P), "ManilaOLMOperatorRemovalAvailable");
        assert_eq!(degraded_type(P), "ManilaOLMOperatorRemovalDegraded");
        assert_eq!(
            namespace_annotation(P),
            "Manila.olm-removal.storage.openshift.io/namespace"
        );
        assert_eq!(
            csv_annotation(P),
            "Manila.olm-removal.storage.openshift.io/csvName"
        );
        assert_eq!(
            MSG_WAIT_SUBSCRIPTION,
            "Waiting for OLM Subscription to be deleted"
        );
        assert_eq!(MSG_WAIT_CSV, "Waiting for OLM CSV to be deleted");
        assert_eq!(MSG_WAIT_OPERATOR, "Waiting for OLM to delete the operator");
        assert_eq!(
            MSG_WAIT_OLD_CR,
            "Waiting for the old operator CR to be deleted"
        );
        assert_eq!(MSG_FINISHED, "CSI driver has been removed from OLM");
        assert_eq!(WAIT_INTERVAL, Duration::from_secs(5));
        assert_eq!(MANILA_OLM.operator_deployment, "csi-driver-manila-operator");
        assert_eq!(MANILA_OLM.package, "manila-csi-driver-operator");
        assert_eq!(MANILA_OLM.old_cr.api_version(), "csi.openshift.io/v1alpha1");
        assert_eq!(MANILA_OLM.old_cr.plural, "maniladrivers");
        assert_eq!(MANILA_OLM.old_cr.name, "cluster");
        assert_eq!(
            (OLM_GROUP, OLM_VERSION),
            ("operators.coreos.com", "v1alpha1")
        );
        assert_eq!(
            (SUBSCRIPTION_PLURAL, CSV_PLURAL),
            ("subscriptions", "clusterserviceversions")
        );
    }

    #[test]
    fn removal_complete_waits_for_available_true() {
        let c = |status: &str| {
            vec![OperatorCondition::new(
                "ManilaOLMOperatorRemovalAvailable",
                status,
                "Finished",
                "",
            )]
        };
        assert!(
            removal_complete(P, None, &[]),
            "no OLM options: nothing to wait for"
        );
        assert!(!removal_complete(P, Some(&MANILA_OLM), &[]));
        assert!(!removal_complete(P, Some(&MANILA_OLM), &c("False")));
        assert!(!removal_complete(P, Some(&MANILA_OLM), &c("Unknown")));
        assert!(removal_complete(P, Some(&MANILA_OLM), &c("True")));
        assert!(!removal_complete(
            "OpenStackCinder",
            Some(&MANILA_OLM),
            &c("True")
        ));
    }

    #[test]
    fn nothing_installed_finishes_with_an_empty_message_and_cleared_annotations() {
        let s = step(&Observed::default());
        assert_eq!(s.action, Action::NotInstalled);
        assert!(s.action.is_done());
        assert_finished(&s, "");
    }

    #[test]
    fn without_olm_progress_the_old_cr_is_left_alone() {
        // Go only deletes the old CR as part of a removal it started.
        let o = Observed {
            old_cr: Some(OldCrFacts::default()),
            ..Default::default()
        };
        assert_eq!(step(&o).action, Action::NotInstalled);
    }

    #[test]
    fn a_finished_removal_keeps_its_message_after_a_restart() {
        let o = Observed {
            storage_conditions: finished_conditions(P, MSG_FINISHED).to_vec(),
            ..Default::default()
        };
        let s = step(&o);
        assert_eq!(s.action, Action::NotInstalled);
        assert_finished(&s, MSG_FINISHED);
        // Anything else recorded before (e.g. a removal in progress) does not count.
        let o = Observed {
            storage_conditions: removing_conditions(P, MSG_WAIT_CSV).to_vec(),
            ..Default::default()
        };
        assert_finished(&step(&o), "");
    }

    #[test]
    fn every_step_of_a_removal_in_order() {
        // 1. A Subscription from redhat-operators: save where it is, before touching it.
        let mut o = Observed {
            subscriptions: vec![manila_sub(NS, "manila", Some(CSV))],
            ..Default::default()
        };
        let s = step(&o);
        assert_eq!(s.action, Action::SaveProgress);
        assert_removing(&s, "Waiting for OLM Subscription to be deleted");
        assert_eq!(
            s.annotations,
            BTreeMap::from([
                (namespace_annotation(P), NS.to_string()),
                (csv_annotation(P), CSV.to_string()),
            ])
        );
        assert_eq!(s.requeue_after, Some(Duration::ZERO));
        assert!(!s.action.is_done());

        // 2. Saved: delete the Subscription, then wait for it.
        o.saved = Saved::from_annotations(P, &s.annotations).unwrap();
        assert_eq!(o.saved, saved(NS, &[CSV]));
        let s = step(&o);
        assert_eq!(
            s.action,
            Action::DeleteSubscription(ObjectKey::new(NS, "manila"))
        );
        assert_removing(&s, MSG_WAIT_SUBSCRIPTION);
        assert_eq!(s.requeue_after, Some(WAIT_INTERVAL));
        assert!(s.annotations.is_empty());
        o.subscriptions[0].deleting = true;
        let s = step(&o);
        assert_eq!(
            s.action,
            Action::WaitSubscriptionGone(ObjectKey::new(NS, "manila"))
        );
        assert_removing(&s, MSG_WAIT_SUBSCRIPTION);
        assert_eq!(s.requeue_after, Some(WAIT_INTERVAL));

        // 3. The CSV.
        o.subscriptions.clear();
        let t = targets(&MANILA_OLM, o.saved.as_ref());
        assert_eq!(t.csvs, vec![ObjectKey::new(NS, CSV)]);
        assert_eq!(
            t.operator_deployments,
            vec![ObjectKey::new(NS, "csi-driver-manila-operator")]
        );
        o.csvs = vec![obj(NS, CSV)];
        o.operator_deployments = vec![obj(NS, "csi-driver-manila-operator")];
        let s = step(&o);
        assert_eq!(s.action, Action::DeleteCsv(ObjectKey::new(NS, CSV)));
        assert_removing(&s, "Waiting for OLM CSV to be deleted");
        assert_eq!(s.requeue_after, Some(WAIT_INTERVAL));
        o.csvs[0].deleting = true;
        let s = step(&o);
        assert_eq!(s.action, Action::WaitCsvGone(ObjectKey::new(NS, CSV)));
        assert_removing(&s, MSG_WAIT_CSV);

        // 4. OLM removes the operator Deployment; the CSO only waits.
        o.csvs.clear();
        let s = step(&o);
        assert_eq!(
            s.action,
            Action::WaitOperatorDeploymentGone(ObjectKey::new(NS, "csi-driver-manila-operator"))
        );
        assert_removing(&s, "Waiting for OLM to delete the operator");
        assert_eq!(s.requeue_after, Some(WAIT_INTERVAL));

        // 5. The old CR: finalizers stripped, deleted, waited for.
        o.operator_deployments.clear();
        o.old_cr = Some(OldCrFacts {
            finalizers: vec!["finalizer.manila.csi.openshift.io".into()],
            deleting: false,
        });
        let s = step(&o);
        assert_eq!(
            s.action,
            Action::DeleteOldCr {
                name: "cluster".into(),
                strip_finalizers: true
            }
        );
        assert_removing(&s, "Waiting for the old operator CR to be deleted");
        assert_eq!(s.requeue_after, Some(WAIT_INTERVAL));
        // A finalizer that reappears on a terminating CR is stripped again.
        o.old_cr = Some(OldCrFacts {
            finalizers: vec!["x.example.com/y".into()],
            deleting: true,
        });
        assert_eq!(
            step(&o).action,
            Action::DeleteOldCr {
                name: "cluster".into(),
                strip_finalizers: true
            }
        );
        o.old_cr = Some(OldCrFacts::default());
        assert_eq!(
            step(&o).action,
            Action::DeleteOldCr {
                name: "cluster".into(),
                strip_finalizers: false
            }
        );
        o.old_cr = Some(OldCrFacts {
            finalizers: vec![],
            deleting: true,
        });
        let s = step(&o);
        assert_eq!(
            s.action,
            Action::WaitOldCrGone {
                name: "cluster".into()
            }
        );
        assert_removing(&s, MSG_WAIT_OLD_CR);

        // 6. Done.
        o.old_cr = None;
        let s = step(&o);
        assert_eq!(s.action, Action::Finished);
        assert!(s.action.is_done());
        assert_finished(&s, "CSI driver has been removed from OLM");
    }

    #[test]
    fn only_redhat_operators_subscriptions_of_the_package_match() {
        let others = [
            sub(
                NS,
                "a",
                "other-operator",
                "redhat-operators",
                "openshift-marketplace",
            ),
            sub(
                NS,
                "b",
                "manila-csi-driver-operator",
                "community-operators",
                "openshift-marketplace",
            ),
            sub(
                NS,
                "c",
                "manila-csi-driver-operator",
                "redhat-operators",
                "my-catalogs",
            ),
            sub(
                NS,
                "d",
                "Manila-CSI-Driver-Operator",
                "redhat-operators",
                "openshift-marketplace",
            ),
            SubscriptionFacts {
                source: None,
                ..manila_sub(NS, "e", Some(CSV))
            },
            SubscriptionFacts {
                package: None,
                ..manila_sub(NS, "f", Some(CSV))
            },
            SubscriptionFacts {
                source_namespace: None,
                ..manila_sub(NS, "g", Some(CSV))
            },
        ];
        for other in others {
            assert!(!other.matches(&MANILA_OLM), "{other:?}");
            let o = Observed {
                subscriptions: vec![other.clone()],
                ..Default::default()
            };
            assert_eq!(step(&o).action, Action::NotInstalled, "{other:?}");
        }
        assert!(manila_sub(NS, "m", None).matches(&MANILA_OLM));
    }

    #[test]
    fn non_matching_subscriptions_are_never_touched_during_a_removal() {
        let other = sub(
            NS,
            "other",
            "other-operator",
            "redhat-operators",
            "openshift-marketplace",
        );
        let o = Observed {
            subscriptions: vec![other, manila_sub(NS, "manila", Some(CSV))],
            saved: saved(NS, &[CSV]),
            ..Default::default()
        };
        assert_eq!(
            step(&o).action,
            Action::DeleteSubscription(ObjectKey::new(NS, "manila"))
        );
        let o = Observed {
            subscriptions: vec![sub(
                NS,
                "other",
                "other-operator",
                "redhat-operators",
                "openshift-marketplace",
            )],
            saved: saved(NS, &[CSV]),
            ..Default::default()
        };
        assert_eq!(step(&o).action, Action::Finished);
    }

    #[test]
    fn restart_after_the_subscription_went_resumes_with_the_saved_csv() {
        let o = Observed {
            saved: saved(NS, &[CSV]),
            csvs: vec![obj(NS, CSV)],
            ..Default::default()
        };
        assert_eq!(step(&o).action, Action::DeleteCsv(ObjectKey::new(NS, CSV)));
    }

    #[test]
    fn restart_with_saved_progress_and_everything_gone_finishes() {
        let o = Observed {
            saved: saved(NS, &[CSV]),
            ..Default::default()
        };
        let s = step(&o);
        assert_eq!(s.action, Action::Finished);
        assert_finished(&s, MSG_FINISHED);
    }

    #[test]
    fn restart_with_only_the_operator_deployment_left_waits_for_olm() {
        let o = Observed {
            saved: saved(NS, &[CSV]),
            operator_deployments: vec![obj(NS, "csi-driver-manila-operator")],
            ..Default::default()
        };
        assert_eq!(
            step(&o).action,
            Action::WaitOperatorDeploymentGone(ObjectKey::new(NS, "csi-driver-manila-operator"))
        );
        // A Deployment of that name elsewhere is not OLM's for this installation.
        let o = Observed {
            saved: saved(NS, &[CSV]),
            operator_deployments: vec![obj("elsewhere", "csi-driver-manila-operator")],
            ..Default::default()
        };
        assert_eq!(step(&o).action, Action::Finished);
    }

    #[test]
    fn restart_after_saving_deletes_the_subscription_without_saving_again() {
        let o = Observed {
            subscriptions: vec![manila_sub(NS, "manila", Some(CSV))],
            saved: saved(NS, &[CSV]),
            ..Default::default()
        };
        assert_eq!(
            step(&o).action,
            Action::DeleteSubscription(ObjectKey::new(NS, "manila"))
        );
    }

    #[test]
    fn a_second_subscription_elsewhere_waits_until_the_saved_installation_is_clean() {
        let mut o = Observed {
            subscriptions: vec![manila_sub("ns-b", "manila", Some(CSV2))],
            saved: saved("ns-a", &[CSV]),
            csvs: vec![obj("ns-a", CSV)],
            ..Default::default()
        };
        assert_eq!(
            step(&o).action,
            Action::DeleteCsv(ObjectKey::new("ns-a", CSV))
        );
        o.csvs.clear();
        o.operator_deployments = vec![obj("ns-a", "csi-driver-manila-operator")];
        assert!(matches!(
            step(&o).action,
            Action::WaitOperatorDeploymentGone(_)
        ));
        o.operator_deployments.clear();
        // ns-a is clean: the second installation is saved over it; the old CR waits for both.
        o.old_cr = Some(OldCrFacts::default());
        let s = step(&o);
        assert_eq!(s.action, Action::SaveProgress);
        assert_eq!(
            Saved::from_annotations(P, &s.annotations).unwrap(),
            saved("ns-b", &[CSV2])
        );
    }

    #[test]
    fn without_saved_progress_the_first_subscription_by_namespace_and_name_is_taken() {
        let o = Observed {
            subscriptions: vec![
                manila_sub("ns-b", "a", Some(CSV)),
                manila_sub("ns-a", "z", Some(CSV2)),
                manila_sub("ns-a", "y", None),
            ],
            ..Default::default()
        };
        let s = step(&o);
        assert_eq!(
            Saved::from_annotations(P, &s.annotations).unwrap(),
            saved("ns-a", &[])
        );
    }

    #[test]
    fn a_second_subscription_in_the_same_namespace_adds_its_csv() {
        let mut o = Observed {
            subscriptions: vec![manila_sub(NS, "second", Some(CSV2))],
            saved: saved(NS, &[CSV]),
            csvs: vec![obj(NS, CSV)],
            ..Default::default()
        };
        let s = step(&o);
        assert_eq!(s.action, Action::SaveProgress);
        assert_eq!(
            s.annotations.get(&csv_annotation(P)).map(String::as_str),
            Some("manila-csi-driver-operator.v4.5.0,manila-csi-driver-operator.v4.5.1")
        );
        o.saved = Saved::from_annotations(P, &s.annotations).unwrap();
        assert_eq!(
            step(&o).action,
            Action::DeleteSubscription(ObjectKey::new(NS, "second"))
        );
        o.subscriptions.clear();
        o.csvs = vec![obj(NS, CSV2), obj(NS, CSV)];
        assert_eq!(step(&o).action, Action::DeleteCsv(ObjectKey::new(NS, CSV)));
        o.csvs = vec![obj(NS, CSV2)];
        assert_eq!(step(&o).action, Action::DeleteCsv(ObjectKey::new(NS, CSV2)));
    }

    #[test]
    fn an_unresolved_subscription_is_removed_without_a_csv_step() {
        // Go saved csvName "" and then failed every sync deleting a CSV without a name.
        let mut o = Observed {
            subscriptions: vec![manila_sub(NS, "manila", None)],
            ..Default::default()
        };
        let s = step(&o);
        assert_eq!(s.action, Action::SaveProgress);
        assert_eq!(
            s.annotations.get(&csv_annotation(P)).map(String::as_str),
            Some("")
        );
        o.saved = Saved::from_annotations(P, &s.annotations).unwrap();
        assert_eq!(o.saved, saved(NS, &[]));
        assert!(targets(&MANILA_OLM, o.saved.as_ref()).csvs.is_empty());
        assert_eq!(
            step(&o).action,
            Action::DeleteSubscription(ObjectKey::new(NS, "manila"))
        );
        o.subscriptions.clear();
        assert_eq!(step(&o).action, Action::Finished);
    }

    #[test]
    fn installed_csv_is_used_when_current_csv_is_empty() {
        let s = SubscriptionFacts {
            current_csv: Some(String::new()),
            installed_csv: Some(CSV.into()),
            ..manila_sub(NS, "m", None)
        };
        assert_eq!(s.csv(), Some(CSV));
        let s = SubscriptionFacts {
            current_csv: Some(CSV2.into()),
            installed_csv: Some(CSV.into()),
            ..manila_sub(NS, "m", None)
        };
        assert_eq!(s.csv(), Some(CSV2));
    }

    #[test]
    fn saved_progress_parses_and_round_trips() {
        let a = |ns: &str, csv: &str| {
            BTreeMap::from([
                (namespace_annotation(P), ns.to_string()),
                (csv_annotation(P), csv.to_string()),
            ])
        };
        assert_eq!(Saved::from_annotations(P, &BTreeMap::new()), Ok(None));
        assert_eq!(Saved::from_annotations(P, &a("", "")), Ok(None));
        assert_eq!(
            Saved::from_annotations(P, &a("", CSV)),
            Ok(None),
            "Go ignores a CSV without namespace"
        );
        assert_eq!(Saved::from_annotations(P, &a(NS, "")), Ok(saved(NS, &[])));
        assert_eq!(
            Saved::from_annotations(P, &a(NS, &format!("{CSV},,{CSV2},{CSV}"))),
            Ok(saved(NS, &[CSV, CSV2]))
        );
        // Another driver's annotations are not ours.
        assert_eq!(
            Saved::from_annotations("OpenStackCinder", &a(NS, CSV)),
            Ok(None)
        );
        let s = saved(NS, &[CSV, CSV2]).unwrap();
        assert_eq!(
            Saved::from_annotations(P, &s.to_annotations(P)),
            Ok(Some(s))
        );
    }

    #[test]
    fn malformed_saved_progress_is_a_clear_error() {
        let a = |ns: &str, csv: &str| {
            BTreeMap::from([
                (namespace_annotation(P), ns.to_string()),
                (csv_annotation(P), csv.to_string()),
            ])
        };
        for ns in ["Bad_NS", "a/b", "-a", "a-", &"x".repeat(64), "a.b"] {
            let err = Saved::from_annotations(P, &a(ns, CSV)).unwrap_err();
            assert!(matches!(err, OlmError::SavedNamespace { .. }), "{ns}");
            let msg = err.to_string();
            assert!(
                msg.contains("Manila.olm-removal.storage.openshift.io/namespace")
                    && msg.contains("not a namespace name")
                    && msg.contains("set it to"),
                "{msg}"
            );
        }
        for csv in [
            "UPPER.v1",
            "a b",
            "x/y",
            &format!("{CSV},bad!"),
            &"a".repeat(254),
        ] {
            let err = Saved::from_annotations(P, &a(NS, csv)).unwrap_err();
            assert!(matches!(err, OlmError::SavedCsv { .. }), "{csv}");
            let msg = err.to_string();
            assert!(
                msg.contains("Manila.olm-removal.storage.openshift.io/csvName")
                    && msg.contains("set it to"),
                "{msg}"
            );
        }
    }

    #[test]
    fn subscription_objects_parse_and_odd_fields_do_not_match() {
        let full = json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "manila", "namespace": NS,
                         "deletionTimestamp": "2020-08-01T10:00:00Z"},
            "spec": {"name": "manila-csi-driver-operator", "source": "redhat-operators",
                     "sourceNamespace": "openshift-marketplace", "channel": "preview"},
            "status": {"currentCSV": CSV, "installedCSV": CSV, "state": "AtLatestKnown"}
        });
        let s = SubscriptionFacts::from_object(&full).unwrap();
        assert_eq!(
            s,
            SubscriptionFacts {
                current_csv: Some(CSV.into()),
                installed_csv: Some(CSV.into()),
                deleting: true,
                ..manila_sub(NS, "manila", None)
            }
        );
        assert!(s.matches(&MANILA_OLM));

        let mut odd = full.clone();
        odd["spec"]["name"] = json!(7);
        odd["status"] = json!("broken");
        odd["metadata"]["deletionTimestamp"] = Value::Null;
        let s = SubscriptionFacts::from_object(&odd).unwrap();
        assert_eq!((s.package, s.current_csv, s.deleting), (None, None, false));

        for (field, patch) in [
            ("namespace", json!({"name": "m"})),
            ("namespace", json!({"name": "m", "namespace": ""})),
            ("name", json!({"namespace": NS, "name": 3})),
        ] {
            let mut bad = full.clone();
            bad["metadata"] = patch;
            let err = SubscriptionFacts::from_object(&bad).unwrap_err();
            assert_eq!(err, OlmError::SubscriptionMetadata { field });
            assert!(
                err.to_string().contains(&format!("metadata.{field}")),
                "{err}"
            );
        }
        assert!(SubscriptionFacts::from_object(&json!("not an object")).is_err());
    }

    #[test]
    fn a_matching_subscription_with_an_invalid_csv_name_is_an_error() {
        let o = Observed {
            subscriptions: vec![manila_sub(NS, "manila", Some("Not A Name"))],
            ..Default::default()
        };
        let err = next_step(P, &MANILA_OLM, &o).unwrap_err();
        assert!(matches!(err, OlmError::SubscriptionCsv { .. }));
        let msg = err.to_string();
        assert!(
            msg.contains("Subscription openshift-manila-csi-driver-operator/manila")
                && msg.contains("\"Not A Name\""),
            "{msg}"
        );
        // The same oddity on a Subscription that is not ours is none of our business.
        let o = Observed {
            subscriptions: vec![SubscriptionFacts {
                current_csv: Some("Not A Name".into()),
                ..sub(
                    NS,
                    "x",
                    "other",
                    "redhat-operators",
                    "openshift-marketplace",
                )
            }],
            ..Default::default()
        };
        assert_eq!(step(&o).action, Action::NotInstalled);
    }

    #[test]
    fn a_saved_csv_of_another_package_is_never_deleted() {
        // Someone allowed to edit storages/cluster points the saved progress at another
        // operator's CSV: the CSO refuses, names the annotation, and deletes nothing.
        let mut o = Observed {
            saved: saved("openshift-operators", &["etcd-operator.v0.9.4"]),
            ..Observed::default()
        };
        o.csvs = vec![ObjectFacts {
            of_package: false,
            ..obj("openshift-operators", "etcd-operator.v0.9.4")
        }];
        let err = next_step(P, &MANILA_OLM, &o).expect_err("foreign CSV");
        let msg = err.to_string();
        assert!(
            msg.contains("Manila.olm-removal.storage.openshift.io/csvName")
                && msg.contains("openshift-operators/etcd-operator.v0.9.4")
                && msg.contains("manila-csi-driver-operator"),
            "{msg}"
        );
        // The package's own CSV in the same place is deleted as usual.
        o.csvs[0].of_package = true;
        assert!(matches!(step(&o).action, Action::DeleteCsv(_)));
    }

    #[test]
    fn a_csv_proves_its_package_by_label_name_or_install_strategy() {
        let csv = |v: serde_json::Value| csv_of_package(&MANILA_OLM, &v);
        assert!(csv(serde_json::json!({"metadata": {
            "namespace": "ns", "name": "manila-csi-driver-operator.v4.5.0"}})));
        assert!(csv(
            serde_json::json!({"metadata": {"namespace": "ns", "name": "renamed",
            "labels": {"operators.coreos.com/manila-csi-driver-operator.ns": ""}}})
        ));
        assert!(csv(
            serde_json::json!({"metadata": {"namespace": "ns", "name": "renamed"},
            "spec": {"install": {"spec": {"deployments": [{"name": "csi-driver-manila-operator"}]}}}})
        ));
        for other in [
            serde_json::json!({"metadata": {"namespace": "ns", "name": "etcd-operator.v0.9.4"}}),
            // The label of the same package in another namespace proves nothing here.
            serde_json::json!({"metadata": {"namespace": "ns", "name": "x",
                "labels": {"operators.coreos.com/manila-csi-driver-operator.other": ""}}}),
            // A prefix without the dot is another package.
            serde_json::json!({"metadata": {"namespace": "ns", "name": "manila-csi-driver-operator-evil.v1"}}),
            serde_json::json!({"metadata": {"namespace": "ns", "name": "x"},
                "spec": {"install": {"spec": {"deployments": "not a list"}}}}),
            serde_json::json!(null),
        ] {
            assert!(!csv(other.clone()), "{other}");
        }
    }

    #[test]
    fn targets_are_the_saved_namespaces_objects() {
        assert_eq!(targets(&MANILA_OLM, None), Targets::default());
        let t = targets(&MANILA_OLM, saved(NS, &[CSV, CSV2]).as_ref());
        assert_eq!(
            t.csvs,
            vec![ObjectKey::new(NS, CSV), ObjectKey::new(NS, CSV2)]
        );
        assert_eq!(
            t.operator_deployments,
            vec![ObjectKey::new(NS, "csi-driver-manila-operator")]
        );
    }

    #[test]
    fn actions_describe_themselves_for_logs() {
        assert_eq!(
            Action::DeleteCsv(ObjectKey::new(NS, CSV)).to_string(),
            "delete ClusterServiceVersion openshift-manila-csi-driver-operator/manila-csi-driver-operator.v4.5.0"
        );
        assert!(
            Action::DeleteOldCr {
                name: "cluster".into(),
                strip_finalizers: true
            }
            .to_string()
            .contains("strip the finalizers")
        );
    }

    // ---- The simulated cluster -------------------------------------------------------------

    const OTHER_CSV: &str = "other-operator.v1";
    const OTHER_DEPLOYMENT: &str = "other-operator";
    const DEPLOYMENT: &str = "csi-driver-manila-operator";

    #[derive(Debug, Clone)]
    struct Obj {
        ns: String,
        name: String,
        /// Ticks until a pending deletion completes.
        deleting: Option<u8>,
    }

    #[derive(Debug, Clone)]
    struct Dep {
        ns: String,
        name: String,
        /// The CSVs that own it: the garbage collector deletes it once none exists.
        owners: Vec<String>,
    }

    #[derive(Debug, Clone)]
    struct World {
        subs: Vec<(SubscriptionFacts, Option<u8>)>,
        csvs: Vec<Obj>,
        deps: Vec<Dep>,
        /// Finalizers and a pending deletion.
        old_cr: Option<(Vec<String>, Option<u8>)>,
        annotations: BTreeMap<String, String>,
        conditions: Vec<OperatorCondition>,
    }

    impl World {
        fn observe(&self) -> Observed {
            let saved =
                Saved::from_annotations(P, &self.annotations).expect("our own annotations parse");
            let t = targets(&MANILA_OLM, saved.as_ref());
            let facts = |o: &Obj| ObjectFacts {
                namespace: o.ns.clone(),
                name: o.name.clone(),
                deleting: o.deleting.is_some(),
                of_package: true,
            };
            Observed {
                subscriptions: self
                    .subs
                    .iter()
                    .map(|(s, d)| SubscriptionFacts {
                        deleting: d.is_some(),
                        ..s.clone()
                    })
                    .collect(),
                saved,
                csvs: self
                    .csvs
                    .iter()
                    .filter(|c| t.csvs.contains(&ObjectKey::new(&c.ns, &c.name)))
                    .map(facts)
                    .collect(),
                operator_deployments: self
                    .deps
                    .iter()
                    .filter(|d| {
                        t.operator_deployments
                            .contains(&ObjectKey::new(&d.ns, &d.name))
                    })
                    .map(|d| obj(&d.ns, &d.name))
                    .collect(),
                old_cr: self.old_cr.as_ref().map(|(f, d)| OldCrFacts {
                    finalizers: f.clone(),
                    deleting: d.is_some(),
                }),
                storage_conditions: self.conditions.clone(),
            }
        }

        /// Pending deletions progress; the garbage collector removes orphaned Deployments.
        fn tick(&mut self) {
            fn advance(d: &mut Option<u8>) -> bool {
                match d {
                    Some(0) => true,
                    Some(n) => {
                        *n -= 1;
                        false
                    }
                    None => false,
                }
            }
            self.subs.retain_mut(|(_, d)| !advance(d));
            self.csvs.retain_mut(|c| !advance(&mut c.deleting));
            let csvs = self.csvs.clone();
            self.deps.retain(|d| {
                d.owners
                    .iter()
                    .any(|o| csvs.iter().any(|c| c.ns == d.ns && &c.name == o))
            });
            if let Some((fins, d)) = &mut self.old_cr
                && advance(d)
            {
                if fins.is_empty() {
                    self.old_cr = None;
                } else {
                    // Terminating until the finalizers are gone.
                    *d = Some(0);
                }
            }
        }

        fn matching_left(&self) -> bool {
            self.subs.iter().any(|(s, _)| s.matches(&MANILA_OLM))
                || self.csvs.iter().any(|c| c.name != OTHER_CSV)
                || self.deps.iter().any(|d| d.name == DEPLOYMENT)
        }
    }

    #[derive(Debug, Clone)]
    struct Install {
        /// Per Subscription: which CSV it names (None: unresolved).
        subs: Vec<Option<usize>>,
        csv_exists: [bool; 2],
        deployment: bool,
    }

    fn install() -> impl Strategy<Value = Option<Install>> {
        proptest::option::of(
            (
                proptest::collection::vec(proptest::option::of(0usize..2), 1..=2),
                any::<[bool; 2]>(),
                any::<bool>(),
            )
                .prop_map(|(subs, csv_exists, deployment)| Install {
                    subs,
                    csv_exists,
                    deployment,
                }),
        )
    }

    fn noise() -> impl Strategy<Value = Vec<(usize, usize)>> {
        // (kind of mismatch, namespace)
        proptest::collection::vec((0usize..3, 0usize..3), 0..3)
    }

    const NAMESPACES: [&str; 3] = ["ns-a", "ns-b", "ns-c"];
    const CSVS: [&str; 2] = [CSV, CSV2];

    fn build_world(
        installs: &[Option<Install>],
        noise: &[(usize, usize)],
        old_cr: Option<(bool, bool)>,
        saved_state: Option<(usize, Vec<usize>)>,
    ) -> World {
        let mut w = World {
            subs: vec![],
            csvs: vec![],
            deps: vec![],
            old_cr: old_cr.map(|(fin, deleting)| {
                (
                    if fin {
                        vec!["finalizer.manila.csi.openshift.io".to_string()]
                    } else {
                        vec![]
                    },
                    deleting.then_some(0),
                )
            }),
            annotations: BTreeMap::new(),
            conditions: vec![],
        };
        for (i, inst) in installs.iter().enumerate() {
            let Some(inst) = inst else { continue };
            let ns = NAMESPACES[i];
            let mut owners = vec![];
            for (j, csv) in inst.subs.iter().enumerate() {
                w.subs.push((
                    manila_sub(ns, &format!("manila-{j}"), csv.map(|c| CSVS[c])),
                    None,
                ));
                if let Some(c) = csv
                    && inst.csv_exists[*c]
                    && !owners.contains(&CSVS[*c].to_string())
                {
                    owners.push(CSVS[*c].to_string());
                    w.csvs.push(Obj {
                        ns: ns.into(),
                        name: CSVS[*c].into(),
                        deleting: None,
                    });
                }
            }
            if inst.deployment && !owners.is_empty() {
                w.deps.push(Dep {
                    ns: ns.into(),
                    name: DEPLOYMENT.into(),
                    owners,
                });
            }
        }
        for (k, (kind, ns)) in noise.iter().enumerate() {
            let ns = NAMESPACES[*ns];
            let mut s = match kind {
                0 => sub(
                    ns,
                    "x",
                    "other-operator",
                    "redhat-operators",
                    "openshift-marketplace",
                ),
                1 => sub(
                    ns,
                    "x",
                    "manila-csi-driver-operator",
                    "community-operators",
                    "openshift-marketplace",
                ),
                _ => sub(
                    ns,
                    "x",
                    "manila-csi-driver-operator",
                    "redhat-operators",
                    "elsewhere",
                ),
            };
            s.name = format!("other-{k}");
            s.current_csv = Some(OTHER_CSV.into());
            w.subs.push((s, None));
            if !w.csvs.iter().any(|c| c.ns == ns && c.name == OTHER_CSV) {
                w.csvs.push(Obj {
                    ns: ns.into(),
                    name: OTHER_CSV.into(),
                    deleting: None,
                });
                w.deps.push(Dep {
                    ns: ns.into(),
                    name: OTHER_DEPLOYMENT.into(),
                    owners: vec![OTHER_CSV.into()],
                });
            }
        }
        if let Some((ns, csvs)) = saved_state {
            let s = Saved {
                namespace: NAMESPACES[ns].into(),
                csv_names: csvs.iter().map(|c| CSVS[*c].to_string()).collect(),
            };
            w.annotations = s.to_annotations(P);
        }
        w
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_observed_state_ends_removed_or_not_installed(
            installs in proptest::collection::vec(install(), 3),
            noise in noise(),
            old_cr in proptest::option::of((any::<bool>(), any::<bool>())),
            saved_state in proptest::option::of((0usize..3, proptest::collection::vec(0usize..2, 0..=2))),
            lags in proptest::collection::vec(0u8..3, 1..8),
            crashes in proptest::collection::vec(any::<bool>(), 0..6),
        ) {
            let mut w = build_world(&installs, &noise, old_cr, saved_state.clone());
            let anything_to_remove = w.subs.iter().any(|(s, _)| s.matches(&MANILA_OLM)) || saved_state.is_some();
            let other_subs = w.subs.iter().filter(|(s, _)| !s.matches(&MANILA_OLM)).count();
            let other_csvs = w.csvs.iter().filter(|c| c.name == OTHER_CSV).count();
            let other_deps = w.deps.iter().filter(|d| d.name == OTHER_DEPLOYMENT).count();
            let mut old_cr_touched = false;
            let mut lag = lags.iter().cycle();
            let mut next_lag = || *lag.next().unwrap_or(&0);
            let mut last = None;
            for i in 0..200 {
                let o = w.observe();
                let s = next_step(P, &MANILA_OLM, &o).unwrap();
                // A restarted CSO (a lost action) decides again from the same state.
                if crashes.get(i).copied().unwrap_or(false) {
                    w.tick();
                    continue;
                }
                w.conditions = conditions::merge(&w.conditions, s.conditions.clone(), jiff::Timestamp::UNIX_EPOCH);
                match &s.action {
                    Action::SaveProgress => w.annotations.extend(s.annotations.clone()),
                    Action::DeleteSubscription(k) => {
                        let (sub, d) = w.subs.iter_mut()
                            .find(|(s, _)| s.namespace == k.namespace && s.name == k.name)
                            .expect("deletes an existing Subscription");
                        prop_assert!(sub.matches(&MANILA_OLM), "only matching Subscriptions are deleted");
                        prop_assert_eq!(
                            Saved::from_annotations(P, &w.annotations).unwrap().map(|s| s.namespace),
                            Some(k.namespace.clone()),
                            "progress is saved before the Subscription is deleted"
                        );
                        if d.is_none() { *d = Some(next_lag()); }
                    }
                    Action::DeleteCsv(k) => {
                        prop_assert_ne!(k.name.as_str(), OTHER_CSV);
                        prop_assert!(
                            !w.subs.iter().any(|(s, _)| s.matches(&MANILA_OLM) && s.namespace == k.namespace),
                            "a CSV is deleted only once its Subscriptions are gone"
                        );
                        if let Some(c) = w.csvs.iter_mut().find(|c| c.ns == k.namespace && c.name == k.name)
                            && c.deleting.is_none()
                        {
                            c.deleting = Some(next_lag());
                        }
                    }
                    Action::DeleteOldCr { strip_finalizers, .. } => {
                        prop_assert!(!w.matching_left(), "the old CR goes last: {:?}", w);
                        old_cr_touched = true;
                        let lag = next_lag();
                        if let Some((fins, d)) = &mut w.old_cr {
                            if *strip_finalizers { fins.clear(); }
                            if d.is_none() { *d = Some(lag); }
                        }
                    }
                    Action::WaitSubscriptionGone(_) | Action::WaitCsvGone(_)
                    | Action::WaitOperatorDeploymentGone(_) | Action::WaitOldCrGone { .. } => {}
                    Action::Finished | Action::NotInstalled => {
                        w.annotations.extend(s.annotations.clone());
                        last = Some(s.action.clone());
                        break;
                    }
                }
                prop_assert!(s.requeue_after.is_some());
                w.tick();
            }
            let last = last.expect("the flow ends within 200 steps");
            prop_assert_eq!(
                last.clone(),
                if anything_to_remove { Action::Finished } else { Action::NotInstalled }
            );
            prop_assert!(!w.matching_left(), "nothing of the OLM installation is left: {:?}", w);
            if last == Action::Finished {
                prop_assert!(w.old_cr.is_none(), "the old CR is gone");
            } else {
                prop_assert!(!old_cr_touched, "without an OLM installation the old CR is left alone");
            }
            prop_assert_eq!(w.subs.len(), other_subs, "other Subscriptions are untouched");
            prop_assert_eq!(w.csvs.iter().filter(|c| c.name == OTHER_CSV && c.deleting.is_none()).count(), other_csvs);
            prop_assert_eq!(w.deps.iter().filter(|d| d.name == OTHER_DEPLOYMENT).count(), other_deps);
            prop_assert_eq!(w.annotations.clone(), cleared_annotations(P));
            prop_assert!(removal_complete(P, Some(&MANILA_OLM), &w.conditions));
            // And it stays finished: the next sync (e.g. after a restart) says the same.
            let again = next_step(P, &MANILA_OLM, &w.observe()).unwrap();
            prop_assert_eq!(again.action, Action::NotInstalled);
            let done = conditions::merge(&w.conditions, again.conditions, jiff::Timestamp::UNIX_EPOCH);
            prop_assert!(conditions::equal_ignoring_time(&done, &w.conditions));
        }
    }
}
