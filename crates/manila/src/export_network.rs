//! Can the nodes reach the networks Manila exports shares on? The pure comparison behind the
//! `ManilaExportNetworkReachable` condition (seed 002, "Implement Secondary NIC support").
//!
//! Manila NFS traffic often runs on a second, storage network. When the nodes are not attached
//! to it, a mount only times out. What can be told from the API, and what cannot:
//!
//! * A share of a `driver_handles_share_servers=True` type lives on a share network; its
//!   subnets carry a CIDR (once Manila has created a share server there). An export address
//!   inside such a subnet names that subnet as the share's **export network**.
//! * If no node has an `InternalIP` or `ExternalIP` inside the export network, the nodes are
//!   not attached to it. That is a strong hint, not a proof: a router may still connect the
//!   nodes' networks to it. The condition says so.
//! * A share whose export address is in no known subnet (shares of `DHSS=False` types have no
//!   share network; a subnet's CIDR may still be unknown; the path may name a host) is **not a
//!   finding**: nothing is claimed about it.
//! * A share is judged unreachable only when every one of its client export addresses is in a
//!   known export network and none of those networks has a node on it (one address in an
//!   unknown place might be the one clients use). Admin-only locations are not for clients and
//!   are left out before this module sees them.
//! * No share yet, or no node address known: nothing to compare, nothing reported as wrong.
//!
//! No I/O: the operator passes what OpenStack and the node watch said.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use openstack::Cidr;
use operator_kit::conditions::{self, OperatorCondition, reasons};

use crate::nodes::NodeAddresses;

/// Whether the nodes have addresses on the networks Manila exports this cluster's shares on.
pub const EXPORT_NETWORK_REACHABLE: &str = "ManilaExportNetworkReachable";
/// Reason of `False`.
pub const NO_NODE_ON_EXPORT_NETWORK: &str = "NoNodeOnExportNetwork";
/// Reason of `Unknown` with nothing to compare.
pub const NOTHING_TO_COMPARE: &str = "NothingToCompare";
/// Reason of `Unknown` when the nodes' addresses cannot be read.
pub const NODE_ADDRESSES_UNKNOWN: &str = "NodeAddressesUnknown";
/// Where the fix is explained.
pub const DOC: &str = "docs/manila-network.md";
/// Findings named in a message; the rest are counted.
const NAMED_FINDINGS: usize = 3;

/// What OpenStack said about one share of this cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareExports {
    pub share_id: String,
    /// The share type's name (else its id).
    pub share_type: String,
    /// Its share network's id, if it has one.
    pub share_network: Option<String>,
    /// The IP addresses of its export locations meant for clients (not admin-only).
    pub addresses: Vec<IpAddr>,
    /// The subnets of its share network whose CIDR is known.
    pub subnets: Vec<Cidr>,
    /// Export locations meant for clients with no IP address (host names).
    pub unaddressed: usize,
}

/// An export network no node is on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub share_type: String,
    pub cidr: Cidr,
    pub share_network: String,
    /// One of its shares and the address it is exported at.
    pub share_id: String,
    pub address: IpAddr,
    /// How many of the checked shares are exported only there.
    pub shares: usize,
}

/// An export network with nodes on it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reached {
    pub share_type: String,
    pub cidr: Cidr,
    /// Nodes with an address in it.
    pub nodes: usize,
}

/// The outcome of one comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No share has an export address in a known subnet (or there is no share yet).
    NothingToCompare { shares: usize },
    /// No node has an IP address at all: the comparison would blame every network.
    NoNodeAddresses,
    /// Every compared share has a node on one of its export networks.
    Reachable {
        reached: Vec<Reached>,
        nodes: usize,
        shares: usize,
    },
    /// Some shares are exported only on networks no node is on.
    Unreachable {
        findings: Vec<Finding>,
        reached: Vec<Reached>,
        nodes: usize,
    },
}

/// Compares the export networks of `shares` with the nodes' addresses.
pub fn compare(shares: &[ShareExports], nodes: &[NodeAddresses]) -> Verdict {
    let with_addresses = nodes.iter().filter(|n| !n.addresses.is_empty()).count();
    let nodes_in = |cidr: &Cidr| {
        nodes
            .iter()
            .filter(|n| n.addresses.iter().any(|a| cidr.contains(*a)))
            .count()
    };
    let mut findings: BTreeMap<(String, Cidr), Finding> = BTreeMap::new();
    let mut reached: BTreeSet<Reached> = BTreeSet::new();
    let mut compared = 0;
    for share in shares {
        // Each client address with the subnet it is in, if one is known.
        let placed: Vec<(IpAddr, Option<Cidr>)> = share
            .addresses
            .iter()
            .map(|a| (*a, share.subnets.iter().find(|c| c.contains(*a)).copied()))
            .collect();
        if placed.is_empty() || share.unaddressed > 0 || placed.iter().any(|(_, c)| c.is_none()) {
            // Somewhere we cannot place: no claim about this share.
            continue;
        }
        if with_addresses == 0 {
            return Verdict::NoNodeAddresses;
        }
        compared += 1;
        let mut any_reached = false;
        for (_, cidr) in &placed {
            let Some(cidr) = cidr else { continue };
            let n = nodes_in(cidr);
            if n > 0 {
                any_reached = true;
                reached.insert(Reached {
                    share_type: share.share_type.clone(),
                    cidr: *cidr,
                    nodes: n,
                });
            }
        }
        if any_reached {
            continue;
        }
        for (address, cidr) in &placed {
            let Some(cidr) = cidr else { continue };
            findings
                .entry((share.share_type.clone(), *cidr))
                .and_modify(|f| f.shares += 1)
                .or_insert_with(|| Finding {
                    share_type: share.share_type.clone(),
                    cidr: *cidr,
                    share_network: share.share_network.clone().unwrap_or_default(),
                    share_id: share.share_id.clone(),
                    address: *address,
                    shares: 1,
                });
        }
    }
    let reached: Vec<Reached> = reached.into_iter().collect();
    if !findings.is_empty() {
        return Verdict::Unreachable {
            findings: findings.into_values().collect(),
            reached,
            nodes: with_addresses,
        };
    }
    if compared == 0 {
        return Verdict::NothingToCompare {
            shares: shares.len(),
        };
    }
    Verdict::Reachable {
        reached,
        nodes: with_addresses,
        shares: compared,
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The condition for a verdict.
pub fn condition(verdict: &Verdict) -> OperatorCondition {
    match verdict {
        Verdict::Reachable {
            reached,
            nodes,
            shares,
        } => {
            let mut networks: Vec<String> = reached
                .iter()
                .take(NAMED_FINDINGS)
                .map(|r| {
                    format!(
                        "share type {:?} on {} ({} of {nodes})",
                        r.share_type, r.cidr, r.nodes
                    )
                })
                .collect();
            if reached.len() > NAMED_FINDINGS {
                networks.push(format!("and {} more", reached.len() - NAMED_FINDINGS));
            }
            OperatorCondition::new(
                EXPORT_NETWORK_REACHABLE,
                conditions::TRUE,
                reasons::AS_EXPECTED,
                format!(
                    "Nodes have addresses on the export network of every share checked ({}): {}",
                    plural(*shares, "share", "shares"),
                    networks.join(", ")
                ),
            )
        }
        Verdict::Unreachable {
            findings, nodes, ..
        } => {
            let named: Vec<String> = findings
                .iter()
                .take(NAMED_FINDINGS)
                .map(|f| {
                    format!(
                        "share type {:?} exports {} (e.g. share {} at {}) on {} of share network {}",
                        f.share_type,
                        plural(f.shares, "share", "shares"),
                        f.share_id,
                        f.address,
                        f.cidr,
                        f.share_network
                    )
                })
                .collect();
            let more = findings.len().saturating_sub(NAMED_FINDINGS);
            let more = match more {
                0 => String::new(),
                1 => "; and 1 more network".to_string(),
                n => format!("; and {n} more networks"),
            };
            let it = if findings.len() == 1 {
                "it"
            } else {
                "any of them"
            };
            OperatorCondition::new(
                EXPORT_NETWORK_REACHABLE,
                conditions::FALSE,
                NO_NODE_ON_EXPORT_NETWORK,
                format!(
                    "No node has an address on the network these shares are exported on: {}{more}. None of the {} checked has an InternalIP or ExternalIP in {it}, so unless a router connects the nodes' networks to it, mounting these shares times out. Attach the nodes to that network (an additional network of the machines) or create the shares on a share network the nodes are on; see {DOC}",
                    named.join("; "),
                    plural(*nodes, "node", "nodes"),
                ),
            )
        }
        Verdict::NothingToCompare { shares } => OperatorCondition::new(
            EXPORT_NETWORK_REACHABLE,
            conditions::UNKNOWN,
            NOTHING_TO_COMPARE,
            if *shares == 0 {
                "Nothing to compare yet: this cluster has no available Manila share".to_string()
            } else {
                format!(
                    "Nothing to compare: none of the {} checked is exported on a subnet Manila names (shares of types without a share network are on a network only the cloud administrator knows); see {DOC} to check it by hand",
                    plural(*shares, "share", "shares")
                )
            },
        ),
        Verdict::NoNodeAddresses => OperatorCondition::new(
            EXPORT_NETWORK_REACHABLE,
            conditions::UNKNOWN,
            NODE_ADDRESSES_UNKNOWN,
            "No node reports an InternalIP or ExternalIP address, so the export networks cannot be compared with them",
        ),
    }
}

/// The condition when the nodes cannot be read at all.
pub fn nodes_unknown(why: &str) -> OperatorCondition {
    OperatorCondition::new(
        EXPORT_NETWORK_REACHABLE,
        conditions::UNKNOWN,
        NODE_ADDRESSES_UNKNOWN,
        format!(
            "The nodes' addresses cannot be read ({why}), so the export networks cannot be compared with them"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn cidr(s: &str) -> Cidr {
        s.parse().expect("cidr")
    }

    fn node(name: &str, ips: &[&str]) -> NodeAddresses {
        NodeAddresses {
            name: name.into(),
            addresses: ips.iter().map(|s| ip(s)).collect(),
        }
    }

    fn share(id: &str, ty: &str, addresses: &[&str], subnets: &[&str]) -> ShareExports {
        ShareExports {
            share_id: id.into(),
            share_type: ty.into(),
            share_network: (!subnets.is_empty()).then(|| format!("sn-{ty}")),
            addresses: addresses.iter().map(|s| ip(s)).collect(),
            subnets: subnets.iter().map(|s| cidr(s)).collect(),
            unaddressed: 0,
        }
    }

    fn workers() -> Vec<NodeAddresses> {
        vec![
            node("master-0", &["10.0.0.10"]),
            node("worker-0", &["10.0.0.20", "203.0.113.20"]),
            node("worker-1", &["10.0.0.21", "fd00:1::21"]),
        ]
    }

    #[test]
    fn no_share_is_nothing_to_compare() {
        let v = compare(&[], &workers());
        assert_eq!(v, Verdict::NothingToCompare { shares: 0 });
        let c = condition(&v);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("Unknown", NOTHING_TO_COMPARE)
        );
        assert!(
            c.message.contains("no available Manila share"),
            "{}",
            c.message
        );
    }

    #[test]
    fn an_export_network_without_a_node_is_a_finding_with_what_to_do() {
        let shares = [share("sh1", "gold", &["172.16.0.5"], &["172.16.0.0/24"])];
        let v = compare(&shares, &workers());
        let Verdict::Unreachable {
            findings, nodes, ..
        } = &v
        else {
            panic!("{v:?}");
        };
        assert_eq!(*nodes, 3);
        assert_eq!(findings.len(), 1);
        let c = condition(&v);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", NO_NODE_ON_EXPORT_NETWORK)
        );
        for part in [
            "\"gold\"",
            "172.16.0.0/24",
            "sh1",
            "172.16.0.5",
            "sn-gold",
            "3 nodes",
            "router",
            DOC,
        ] {
            assert!(c.message.contains(part), "{part}: {}", c.message);
        }
    }

    #[test]
    fn one_node_on_the_export_network_is_enough() {
        let shares = [share("sh1", "gold", &["172.16.0.5"], &["172.16.0.0/24"])];
        let mut nodes = workers();
        nodes[2].addresses.push(ip("172.16.0.21"));
        let v = compare(&shares, &nodes);
        assert_eq!(
            v,
            Verdict::Reachable {
                reached: vec![Reached {
                    share_type: "gold".into(),
                    cidr: cidr("172.16.0.0/24"),
                    nodes: 1
                }],
                nodes: 3,
                shares: 1
            }
        );
        let c = condition(&v);
        assert_eq!(c.status, "True");
        assert!(
            c.message.contains("172.16.0.0/24 (1 of 3)"),
            "{}",
            c.message
        );
        // Many reached networks: the message names a few and counts the rest.
        let many: Vec<ShareExports> = (0..8)
            .map(|i| {
                share(
                    &format!("s{i}"),
                    &format!("t{i}"),
                    &["10.0.0.99"],
                    &["10.0.0.0/24"],
                )
            })
            .collect();
        let c = condition(&compare(&many, &workers()));
        assert_eq!(c.status, "True");
        assert!(c.message.contains("and 5 more"), "{}", c.message);
        assert!(!c.message.contains("\"t7\""), "{}", c.message);
    }

    #[test]
    fn ipv6_exports_compare_with_ipv6_node_addresses() {
        let shares = [share("sh6", "v6", &["fd00:1::99"], &["fd00:1::/64"])];
        assert!(matches!(
            compare(&shares, &workers()),
            Verdict::Reachable { .. }
        ));
        let far = [share("sh7", "v6", &["fd00:2::99"], &["fd00:2::/64"])];
        assert!(matches!(
            compare(&far, &workers()),
            Verdict::Unreachable { .. }
        ));
    }

    #[test]
    fn cidr_edges_count_exactly() {
        // The nodes' 10.0.0.x addresses are just outside 10.0.1.0/24 and inside 10.0.0.0/23.
        let outside = [share("a", "t", &["10.0.1.5"], &["10.0.1.0/24"])];
        assert!(matches!(
            compare(&outside, &workers()),
            Verdict::Unreachable { .. }
        ));
        let wider = [share("a", "t", &["10.0.1.5"], &["10.0.0.0/23"])];
        assert!(matches!(
            compare(&wider, &workers()),
            Verdict::Reachable { .. }
        ));
        // A /32 export network holds only itself.
        let host = [share("a", "t", &["10.0.0.20"], &["10.0.0.20/32"])];
        assert!(matches!(
            compare(&host, &workers()),
            Verdict::Reachable { .. }
        ));
    }

    #[test]
    fn no_known_subnet_is_not_a_finding() {
        // DHSS=False: no share network at all.
        let no_network = [share("a", "default", &["192.168.50.5"], &[])];
        assert_eq!(
            compare(&no_network, &workers()),
            Verdict::NothingToCompare { shares: 1 }
        );
        // A share network whose subnet does not hold the export address.
        let elsewhere = [share("a", "t", &["192.168.50.5"], &["172.16.0.0/24"])];
        assert!(matches!(
            compare(&elsewhere, &workers()),
            Verdict::NothingToCompare { .. }
        ));
        // No parsable address (a host name).
        let mut named = share("a", "t", &[], &["172.16.0.0/24"]);
        named.unaddressed = 1;
        assert!(matches!(
            compare(&[named], &workers()),
            Verdict::NothingToCompare { .. }
        ));
        let c = condition(&Verdict::NothingToCompare { shares: 1 });
        assert_eq!(c.status, "Unknown");
        assert!(c.message.contains("1 share checked"), "{}", c.message);
    }

    #[test]
    fn one_unplaced_address_or_one_reached_network_clears_the_share() {
        // Exported on the storage network and on another address we cannot place.
        let mixed = [share(
            "a",
            "t",
            &["172.16.0.5", "192.168.9.9"],
            &["172.16.0.0/24"],
        )];
        assert!(matches!(
            compare(&mixed, &workers()),
            Verdict::NothingToCompare { .. }
        ));
        // Exported on two known networks, the nodes are on one of them.
        let two = [share(
            "a",
            "t",
            &["172.16.0.5", "10.0.0.99"],
            &["172.16.0.0/24", "10.0.0.0/24"],
        )];
        assert!(matches!(
            compare(&two, &workers()),
            Verdict::Reachable { .. }
        ));
    }

    #[test]
    fn findings_group_by_share_type_and_network_and_are_capped_in_the_message() {
        let mut shares = vec![
            share("a1", "gold", &["172.16.0.5"], &["172.16.0.0/24"]),
            share("a2", "gold", &["172.16.0.6"], &["172.16.0.0/24"]),
            share("ok", "silver", &["10.0.0.50"], &["10.0.0.0/24"]),
        ];
        for i in 0..5 {
            shares.push(share(
                &format!("x{i}"),
                &format!("t{i}"),
                &[&format!("172.17.{i}.5")],
                &[&format!("172.17.{i}.0/24")],
            ));
        }
        let v = compare(&shares, &workers());
        let Verdict::Unreachable {
            findings, reached, ..
        } = &v
        else {
            panic!("{v:?}");
        };
        assert_eq!(findings.len(), 6);
        let gold = findings
            .iter()
            .find(|f| f.share_type == "gold")
            .expect("gold");
        assert_eq!((gold.shares, gold.share_id.as_str()), (2, "a1"));
        assert_eq!(reached.len(), 1, "silver is fine");
        let c = condition(&v);
        assert!(c.message.contains("exports 2 shares"), "{}", c.message);
        assert!(c.message.contains("and 3 more networks"), "{}", c.message);
    }

    #[test]
    fn nodes_without_addresses_are_not_counted_and_none_at_all_is_unknown() {
        let shares = [share("a", "t", &["172.16.0.5"], &["172.16.0.0/24"])];
        let v = compare(&shares, &[node("n", &[])]);
        assert_eq!(v, Verdict::NoNodeAddresses);
        assert_eq!(condition(&v).status, "Unknown");
        let mut nodes = workers();
        nodes.push(node("starting", &[]));
        let Verdict::Unreachable { nodes, .. } = compare(&shares, &nodes) else {
            panic!()
        };
        assert_eq!(nodes, 3);
        // With no share to compare, missing addresses do not matter.
        assert_eq!(compare(&[], &[]), Verdict::NothingToCompare { shares: 0 });
        let c = nodes_unknown("RBAC refuses the watch");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("Unknown", NODE_ADDRESSES_UNKNOWN)
        );
    }
}
