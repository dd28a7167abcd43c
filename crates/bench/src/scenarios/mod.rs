//! The registry of scenarios: one module per scenario, each returning one report section.
//!
//! A scenario owns everything it starts (emulator processes, operators) and stops it before it
//! returns, also on error, so `bench all` runs scenarios one after another on a quiet machine.

mod cinder;
mod cluster_storage;
mod image;
mod kube_sim_scale;
mod manila;
mod substrates;

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
    Scenario {
        name: substrates::NAME,
        run: |options| Box::pin(substrates::run(options)),
    },
    Scenario {
        name: image::NAME,
        run: |options| Box::pin(image::run(options)),
    },
];

/// DESIGN §7 budgets and the timing every operator scenario shares.
pub mod budget {
    use std::time::Duration;

    /// CR created → every operand object applied.
    pub const INSTALL: Duration = Duration::from_millis(100);
    /// Resident memory per operator.
    pub const MEMORY_KIB: u64 = 20 * 1024;
    /// The operators' resync period in the scenarios (short, so idle windows see several).
    pub const RESYNC: Duration = Duration::from_secs(2);
    /// How long an idle operator is watched for requests.
    pub const IDLE_WINDOW: Duration = Duration::from_secs(10);
    /// No write for this long ends an install (or change) window.
    pub const QUIET: Duration = Duration::from_secs(2);
    /// Bound on waiting for an install, so a stuck operator fails the run instead of hanging it.
    pub const CONVERGE_LIMIT: Duration = Duration::from_secs(120);
}
