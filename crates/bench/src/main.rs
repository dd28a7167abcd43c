//! `bench`: the project's benchmarks. Each scenario measures something a user of kube-sim or of
//! the operators would care about (throughput, latency, memory) and prints a table of figures;
//! `--write BENCHMARKS.md` regenerates that file wholly from the figures of this run.
//!
//! Benchmarks are not tests: nothing here asserts a timing. Run them in release builds:
//! `cargo run --release -p bench -- all --write BENCHMARKS.md`.
//!
//! A separate mode, `bench reliability` (module `reliability`), runs the fault matrix and
//! regenerates RELIABILITY.md: `cargo run --release -p bench -- reliability --write RELIABILITY.md`.

mod cluster;
mod measure;
mod operator_process;
mod reliability;
mod report;
mod scenarios;
mod sim_process;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "bench",
    about = "Run benchmarks, print their figures, optionally regenerate BENCHMARKS.md \
             (`bench reliability --help`: the fault matrix and RELIABILITY.md)"
)]
struct Cli {
    /// The scenario to run, or `all` for every scenario in order.
    #[arg(value_parser = scenario_parser())]
    scenario: String,
    /// Regenerate this file (normally BENCHMARKS.md) from the figures of this run.
    #[arg(long, value_name = "PATH")]
    write: Option<PathBuf>,
    /// Run with a tenth of the counts: for checking a scenario works, not for figures.
    #[arg(long)]
    quick: bool,
}

fn scenario_parser() -> clap::builder::PossibleValuesParser {
    let mut names: Vec<&'static str> = scenarios::ALL.iter().map(|s| s.name).collect();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names)
}

fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some(reliability::COMMAND) {
        return reliability::main(std::env::args().skip(1));
    }
    let cli = Cli::parse();
    let selected: Vec<&scenarios::Scenario> = scenarios::ALL
        .iter()
        .filter(|s| cli.scenario == "all" || s.name == cli.scenario)
        .collect();
    let options = scenarios::Options { quick: cli.quick };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut sections = Vec::new();
    for scenario in selected {
        eprintln!(
            "running {}{}",
            scenario.name,
            if cli.quick { " (quick)" } else { "" }
        );
        let section = runtime
            .block_on((scenario.run)(options))
            .with_context(|| format!("scenario {} failed", scenario.name))?;
        print!("{}", section.to_text());
        sections.push(section);
    }
    if let Some(path) = cli.write {
        let run = report::RunInfo::collect(cli.quick);
        report::write_file(&path, &run, &sections)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
