//! The steps every driver runs the same way: the controller Deployment, the node DaemonSets
//! (with their Progressing and Available conditions and the generations recorded in the CR's
//! status), and the VolumeSnapshotClass.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};

use super::{Kit, Pass, SNAPSHOT_CLASS_PREFIX, StepError, VOLUME_SNAPSHOT_CLASS_CRD, Workload};
use crate::apply::ApplyError;
use crate::cache::Lookup;
use crate::desired::{BuildError, Desired};
use crate::kinds::known as ar;
use crate::progressing;
use crate::steps;

/// Each node DaemonSet's last generation that finished rolling out, by name: what OpenShift
/// keeps in the `storage.openshift.io/stable-generation` annotation, kept here so that the end
/// of a rollout does not cost a second write of the DaemonSet (see
/// [`progressing::stable_generation`]).
#[derive(Debug, Default)]
pub(super) struct StableGenerations(std::sync::Mutex<BTreeMap<String, i64>>);

impl StableGenerations {
    /// Replaces the entry of `name` with what `next` makes of it; returns the new value.
    fn update(&self, name: &str, next: impl FnOnce(Option<i64>) -> Option<i64>) -> Option<i64> {
        // A poisoned lock only means another reconcile panicked mid-update: the map is
        // still a valid cache of generations.
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let value = next(map.get(name).copied());
        match value {
            Some(v) => map.insert(name.to_string(), v),
            None => map.remove(name),
        };
        value
    }
}

impl Kit {
    /// Applies the controller Deployment and posts its Available, Progressing and Degraded.
    pub(super) async fn controller_step(&self, pass: &mut Pass, w: Workload) {
        let result = self.deployment(pass, w.prefix, w.name, w.desired).await;
        pass.post(w.prefix, result);
    }

    async fn deployment(
        &self,
        pass: &mut Pass,
        prefix: &str,
        name: &str,
        desired: Result<Desired, BuildError>,
    ) -> Result<(), StepError> {
        let desired = desired?;
        let ns = self.apply_workload(pass, &desired, name).await?;
        let ns = ns.as_str();
        let live: Option<Deployment> = self.cache.get(Some(ns), name);
        if let Some(live) = live {
            let previous = steps::previous_conditions(&pass.cr_obj);
            let now = jiff::Timestamp::now();
            let conditions = progressing::deployment_conditions(prefix, &live, &previous, now)?;
            for c in conditions.into_vec() {
                pass.board.set_condition(c);
            }
        }
        Ok(())
    }

    /// Applies a workload in its own namespace (hosted, the node DaemonSets live in the
    /// guest's namespace and the controller in the control-plane namespace); that namespace.
    async fn apply_workload(
        &self,
        pass: &mut Pass,
        desired: &Desired,
        name: &str,
    ) -> Result<String, StepError> {
        let ns = desired
            .object
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| self.namespace.clone());
        steps::apply_workload(
            &self.applier,
            &self.metrics,
            &mut pass.board,
            &pass.cr_obj,
            desired,
            &ns,
            name,
        )
        .await?;
        Ok(ns)
    }

    /// Applies a node DaemonSet and posts its Available, Progressing and Degraded.
    pub(super) async fn daemonset_step(&self, pass: &mut Pass, w: Workload) {
        let result = self.daemonset(pass, w.prefix, w.name, w.desired).await;
        pass.post(w.prefix, result);
    }

    async fn daemonset(
        &self,
        pass: &mut Pass,
        prefix: &str,
        name: &str,
        desired: Result<Desired, BuildError>,
    ) -> Result<(), StepError> {
        let desired = desired?;
        let ns = self.apply_workload(pass, &desired, name).await?;
        let ns = ns.as_str();
        if let Some(ds) = self.cache.get::<DaemonSet>(Some(ns), name) {
            let stable = self
                .stable_generations
                .update(name, |known| progressing::stable_generation(&ds, known));
            for c in progressing::daemonset_conditions(prefix, &ds, stable).into_vec() {
                pass.board.set_condition(c);
            }
        }
        Ok(())
    }

    /// Applies the VolumeSnapshotClass once its CRD is served; waits for the CRD rather than
    /// failing (anchors §4.6). A driver without one ([`BuildError::NoSnapshotClass`]) has no
    /// such step and no condition of it.
    pub(super) async fn snapshot_class_step(
        &self,
        pass: &mut Pass,
        desired: Result<Desired, BuildError>,
    ) {
        if matches!(desired, Err(BuildError::NoSnapshotClass)) {
            return;
        }
        let crd = ar("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        let served = matches!(
            self.cache.lookup(&crd, None, VOLUME_SNAPSHOT_CLASS_CRD),
            Lookup::Found(_)
        );
        let result = if served {
            self.snapshot_class(desired).await
        } else {
            Ok(())
        };
        pass.post(SNAPSHOT_CLASS_PREFIX, result);
    }

    async fn snapshot_class(&self, desired: Result<Desired, BuildError>) -> Result<(), StepError> {
        match self.apply(&desired?, None).await {
            Ok(_) => Ok(()),
            // The CRD was just created and its watch has not caught up: next time.
            Err(ApplyError::KindNotServed { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
