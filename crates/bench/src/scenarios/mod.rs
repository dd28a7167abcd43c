//! The registry of scenarios: one module per scenario, each returning one report section.
//!
//! A scenario owns everything it starts (emulator processes, operators) and stops it before it
//! returns, also on error, so `bench all` runs scenarios one after another on a quiet machine.

mod cinder;
mod cluster_storage;
mod kube_sim_scale;
mod manila;

use std::future::Future;
use std::pin::Pin;

use crate::report::Section;

/// What every scenario is told about the run.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// A tenth of the counts: checks that the scenario works, its figures mean little.
    pub quick: bool,
}

pub type ScenarioFuture = Pin<Box<dyn Future<Output = anyhow::Result<Section>>>>;

pub struct Scenario {
    /// The command-line name, also the section anchor in BENCHMARKS.md.
    pub name: &'static str,
    pub run: fn(Options) -> ScenarioFuture,
}

/// Every scenario, in the order `bench all` runs them and BENCHMARKS.md lists them.
pub const ALL: &[Scenario] = &[
    Scenario {
        name: kube_sim_scale::NAME,
        run: |options| Box::pin(kube_sim_scale::run(options)),
    },
    Scenario {
        name: cinder::NAME,
        run: |options| Box::pin(cinder::run(options)),
    },
    Scenario {
        name: manila::NAME,
        run: |options| Box::pin(manila::run(options)),
    },
    Scenario {
        name: cluster_storage::NAME,
        run: |options| Box::pin(cluster_storage::run(options)),
    },
];
