//! Checks of command-line values shared by the subcommands.

use operator_kit::hooks::TopologyMode;

/// `--control-plane-topology` for `render`: the values Infrastructure can report.
pub fn topology(value: &str) -> anyhow::Result<TopologyMode> {
    match TopologyMode::parse(value) {
        TopologyMode::Other(other) => anyhow::bail!(
            "--control-plane-topology {other:?} is not one of HighlyAvailable, HighlyAvailableArbiter, SingleReplica, DualReplica, External"
        ),
        known => Ok(known),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topologies_are_checked() {
        assert_eq!(
            topology("SingleReplica").expect("known"),
            TopologyMode::SingleReplica
        );
        let err = topology("Bogus").expect_err("unknown").to_string();
        assert!(
            err.contains("Bogus") && err.contains("HighlyAvailable"),
            "{err}"
        );
    }
}
