//! Leader-election timings (OpenShift's `LeaderElectionDefaulting`, anchors §1.5 and §4.1).
//!
//! 137 s lease / 107 s renew deadline / 26 s retry period, or 270 / 240 / 60 s when the
//! control plane is `SingleReplica` (a single-node cluster restarts its API server during
//! upgrades and needs the longer lease). Pure values: no clock, no client.

use std::time::Duration;

use crate::hooks::TopologyMode;

/// The three durations of a client-go style leader election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderTiming {
    /// How long a lease is valid after its last renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// The interval between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaderTiming {
    /// OpenShift's defaults: 137 s / 107 s / 26 s.
    pub const DEFAULT: LeaderTiming = LeaderTiming {
        lease_duration: Duration::from_secs(137),
        renew_deadline: Duration::from_secs(107),
        retry_period: Duration::from_secs(26),
    };

    /// On a SingleReplica control plane: 270 s / 240 s / 60 s.
    pub const SINGLE_REPLICA: LeaderTiming = LeaderTiming {
        lease_duration: Duration::from_secs(270),
        renew_deadline: Duration::from_secs(240),
        retry_period: Duration::from_secs(60),
    };

    /// Timing for the operator's own lock on a control plane of this topology.
    ///
    /// Operands get [`LeaderTiming::DEFAULT`] whatever the topology: library-go's
    /// `WithLeaderElectionReplacerHook` does not apply the single-node values to the sidecars'
    /// `${LEADER_ELECTION_*}` placeholders, and we keep that.
    pub fn for_control_plane(topology: &TopologyMode) -> LeaderTiming {
        match topology {
            TopologyMode::SingleReplica => LeaderTiming::SINGLE_REPLICA,
            _ => LeaderTiming::DEFAULT,
        }
    }

    /// Go's `fmt.Sprintf("%ds", int(d.Seconds()))` of each duration, in the order lease,
    /// renew, retry: the values of the `${LEADER_ELECTION_*}` placeholders.
    pub fn as_go_seconds(&self) -> [String; 3] {
        [
            format!("{}s", self.lease_duration.as_secs()),
            format!("{}s", self.renew_deadline.as_secs()),
            format!("{}s", self.retry_period.as_secs()),
        ]
    }
}

impl Default for LeaderTiming {
    fn default() -> Self {
        LeaderTiming::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_replica_gets_the_long_lease() {
        assert_eq!(
            LeaderTiming::for_control_plane(&TopologyMode::SingleReplica).as_go_seconds(),
            ["270s", "240s", "60s"]
        );
    }

    #[test]
    fn everything_else_gets_the_default() {
        for t in [
            TopologyMode::HighlyAvailable,
            TopologyMode::External,
            TopologyMode::HighlyAvailableArbiter,
            TopologyMode::DualReplica,
            TopologyMode::Other("Weird".into()),
        ] {
            assert_eq!(
                LeaderTiming::for_control_plane(&t).as_go_seconds(),
                ["137s", "107s", "26s"],
                "{t:?}"
            );
        }
        assert_eq!(LeaderTiming::default(), LeaderTiming::DEFAULT);
    }
}
