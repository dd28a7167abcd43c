//! Where a Manila share can be mounted from: the shares a cluster's driver created (with their
//! share type and share network), each share's export locations, and the subnets of a share
//! network. Used by the Manila operator's export-network diagnostic, which compares the
//! export networks with the nodes' addresses.
//!
//! Every call is bounded: the share listing asks for one page of at most [`MAX_SHARES`] shares
//! (no paging), and every parsed list is cut to a fixed size, so a hostile or huge answer
//! cannot grow the operator's memory. Parsing is pure and tolerant: missing or `null` fields
//! become `None`, an export path without an IP address (a host name) yields no address, a
//! CIDR that does not parse is kept as text only. Nothing here decides what is reachable.
//!
//! Microversions: shares are listed with [`SHARES_MICROVERSION`] (2.14: `share_type_name`
//! from 2.6, the `export_locations` resource from 2.9, `preferred` from 2.14). A share
//! network is read with [`SUBNETS_MICROVERSION`] (2.51, `share_network_subnets[]`); a cloud
//! older than that answers 406 and the network is read again with 2.14, where the one subnet's
//! `cidr` is a field of the share network itself.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::Deserialize;

use crate::client::{Client, bad};
use crate::error::{Error, Step};
use crate::keystone::Service;
use crate::volumes::{check_id, strings};

/// The floor for everything this module reads from shares (see the module doc).
pub const SHARES_MICROVERSION: &str = "2.14";
/// Share network subnets (Ussuri).
pub const SUBNETS_MICROVERSION: &str = "2.51";
const VERSION_HEADER: &str = "X-OpenStack-Manila-API-Version";

/// At most this many shares are asked for (one page, `limit`) and kept from an answer.
pub const MAX_SHARES: usize = 50;
/// At most this many export locations are kept per share.
pub const MAX_EXPORT_LOCATIONS: usize = 16;
/// At most this many subnets are kept per share network.
pub const MAX_SUBNETS: usize = 16;
/// At most this many addresses are read from one export path (CephFS lists its monitors).
const MAX_PATH_ADDRESSES: usize = 16;

/// An IP network: an address and a prefix length, the address's host bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// `addr/prefix`; `None` when the prefix is longer than the address family allows.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Self> {
        let network = match addr {
            IpAddr::V4(a) if prefix <= 32 => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) if prefix <= 128 => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
            _ => return None,
        };
        Some(Self { network, prefix })
    }

    pub fn network(&self) -> IpAddr {
        self.network
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` is in this network. An IPv4 address is never in an IPv6 network and the
    /// other way round (an IPv4-mapped IPv6 address is compared as the IPv4 address it maps).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        Cidr::new(ip, self.prefix).is_some_and(|c| c.network == self.network)
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (addr, prefix) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} has no prefix length"))?;
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?}: {addr:?} is not an IP address"))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| format!("{s:?}: {prefix:?} is not a prefix length"))?;
        Cidr::new(addr, prefix).ok_or_else(|| format!("{s:?}: the prefix is too long"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// A share as the listing shows it, with what says where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharePlacement {
    pub id: String,
    pub name: String,
    pub status: String,
    /// The share type's id (`share_type`).
    pub share_type_id: String,
    /// The share type's name (`share_type_name`, 2.6+); empty when the cloud did not say.
    pub share_type_name: String,
    /// `None` for shares of `driver_handles_share_servers=False` types, which live on a
    /// network the cloud administrator configured (not known to the API).
    pub share_network_id: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

impl SharePlacement {
    /// The share type's name, else its id.
    pub fn share_type(&self) -> &str {
        if self.share_type_name.is_empty() {
            &self.share_type_id
        } else {
            &self.share_type_name
        }
    }
}

/// One export location of a share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportLocation {
    /// As Manila gives it: `10.0.0.5:/path`, `[fd00::5]:/path`, `mon1:6789,mon2:6789:/path`,
    /// `\\10.0.0.5\share`.
    pub path: String,
    /// The IP addresses in `path` (none when it names hosts).
    pub addresses: Vec<IpAddr>,
    pub preferred: bool,
    /// Meant for the cloud's administrators (e.g. a service network), not for clients.
    pub is_admin_only: bool,
}

/// One subnet of a share network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareNetworkSubnet {
    pub id: String,
    pub neutron_subnet_id: Option<String>,
    /// `None` until Manila has looked the Neutron subnet up (when it creates a share server
    /// there), or when the text does not parse.
    pub cidr: Option<Cidr>,
    pub availability_zone: Option<String>,
}

/// A share network and its subnets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareNetwork {
    pub id: String,
    pub name: String,
    pub subnets: Vec<ShareNetworkSubnet>,
}

#[derive(Deserialize)]
struct RawShare {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    share_type: Option<String>,
    #[serde(default)]
    share_type_name: Option<String>,
    #[serde(default)]
    share_network_id: Option<String>,
    #[serde(default)]
    metadata: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Deserialize)]
struct RawExportLocation {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    preferred: Option<bool>,
    #[serde(default)]
    is_admin_only: Option<bool>,
}

#[derive(Deserialize)]
struct RawSubnet {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    neutron_subnet_id: Option<String>,
    #[serde(default)]
    cidr: Option<String>,
    #[serde(default)]
    availability_zone: Option<String>,
}

#[derive(Deserialize)]
struct RawShareNetwork {
    id: String,
    #[serde(default)]
    name: Option<String>,
    /// 2.51+.
    #[serde(default)]
    share_network_subnets: Option<Vec<RawSubnet>>,
    /// Before 2.51 the one subnet's fields are the network's own.
    #[serde(default)]
    neutron_subnet_id: Option<String>,
    #[serde(default)]
    cidr: Option<String>,
}

fn json_of(body: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))
}

/// The first `max` items of the list under `key`; items that do not parse are skipped (one
/// odd share must not hide the others).
fn capped_list<T: serde::de::DeserializeOwned>(
    body: &[u8],
    key: &str,
    max: usize,
) -> Result<Vec<T>, String> {
    let mut value = json_of(body)?;
    let list = match value.get_mut(key).map(serde_json::Value::take) {
        Some(serde_json::Value::Array(items)) => items,
        Some(_) => return Err(format!("{key:?} is not a list")),
        None => return Err(format!("the answer has no {key:?} list")),
    };
    Ok(list
        .into_iter()
        .take(max)
        .filter_map(|item| serde_json::from_value(item).ok())
        .collect())
}

/// `GET /shares/detail`'s answer, cut to [`MAX_SHARES`].
pub fn parse_shares(body: &[u8]) -> Result<Vec<SharePlacement>, String> {
    let raw: Vec<RawShare> = capped_list(body, "shares", MAX_SHARES)?;
    Ok(raw
        .into_iter()
        .map(|s| SharePlacement {
            id: s.id,
            name: s.name.unwrap_or_default(),
            status: s.status.unwrap_or_default(),
            share_type_id: s.share_type.unwrap_or_default(),
            share_type_name: s.share_type_name.unwrap_or_default(),
            share_network_id: s.share_network_id.filter(|n| !n.is_empty()),
            metadata: strings(s.metadata.unwrap_or_default()),
        })
        .collect())
}

/// `GET /shares/{id}/export_locations`'s answer, cut to [`MAX_EXPORT_LOCATIONS`].
pub fn parse_export_locations(body: &[u8]) -> Result<Vec<ExportLocation>, String> {
    let raw: Vec<RawExportLocation> = capped_list(body, "export_locations", MAX_EXPORT_LOCATIONS)?;
    Ok(raw
        .into_iter()
        .filter_map(|l| {
            let path = l.path?;
            Some(ExportLocation {
                addresses: export_addresses(&path),
                path,
                preferred: l.preferred.unwrap_or(false),
                is_admin_only: l.is_admin_only.unwrap_or(false),
            })
        })
        .collect())
}

/// `GET /share-networks/{id}`'s answer in either shape (with `share_network_subnets`, or the
/// one subnet's fields on the network before 2.51).
pub fn parse_share_network(body: &[u8]) -> Result<ShareNetwork, String> {
    let mut value = json_of(body)?;
    let raw = value
        .get_mut("share_network")
        .map(serde_json::Value::take)
        .ok_or("the answer has no \"share_network\"")?;
    let raw: RawShareNetwork =
        serde_json::from_value(raw).map_err(|e| format!("not a share network: {e}"))?;
    let subnet = |s: RawSubnet| ShareNetworkSubnet {
        id: s.id.unwrap_or_default(),
        neutron_subnet_id: s.neutron_subnet_id.filter(|n| !n.is_empty()),
        cidr: s.cidr.and_then(|c| c.parse().ok()),
        availability_zone: s.availability_zone.filter(|z| !z.is_empty()),
    };
    let subnets = match raw.share_network_subnets {
        Some(list) => list.into_iter().take(MAX_SUBNETS).map(subnet).collect(),
        None if raw.cidr.is_some() || raw.neutron_subnet_id.is_some() => vec![subnet(RawSubnet {
            id: None,
            neutron_subnet_id: raw.neutron_subnet_id,
            cidr: raw.cidr,
            availability_zone: None,
        })],
        None => Vec::new(),
    };
    Ok(ShareNetwork {
        id: raw.id,
        name: raw.name.unwrap_or_default(),
        subnets,
    })
}

/// The IP addresses an export path names: the hosts before `:/` (comma-separated, each with
/// an optional `:port`; IPv6 in brackets), or the server of a CIFS `\\server\share` path.
/// Host names are not resolved (that would be the node's DNS, not ours): they yield nothing.
pub fn export_addresses(path: &str) -> Vec<IpAddr> {
    let path = path.trim();
    let hosts = if let Some(rest) = path.strip_prefix("\\\\") {
        rest.split('\\').next().unwrap_or_default()
    } else if let Some(i) = path.find(":/") {
        &path[..i]
    } else {
        return Vec::new();
    };
    let mut out: Vec<IpAddr> = Vec::new();
    for host in hosts.split(',').take(MAX_PATH_ADDRESSES) {
        if let Some(ip) = host_address(host.trim())
            && !out.contains(&ip)
        {
            out.push(ip);
        }
    }
    out
}

/// `10.0.0.5`, `10.0.0.5:6789`, `[fd00::5]`, `[fd00::5]:6789`, or a bare IPv6 address.
fn host_address(host: &str) -> Option<IpAddr> {
    if let Some(rest) = host.strip_prefix('[') {
        let (inside, _) = rest.split_once(']')?;
        // A zone (`fe80::1%eth0`) is not part of the address.
        let inside = inside.split('%').next().unwrap_or(inside);
        return inside.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip);
    }
    let (addr, port) = host.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    addr.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
fn query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path and query of the share listing: available shares tagged `key=value`, newest
/// first, one page of at most `limit` (≤ [`MAX_SHARES`]). Manila reads `metadata` as a
/// dictionary literal, which JSON text is.
pub fn shares_query(key: &str, value: &str, limit: usize) -> String {
    let metadata = serde_json::json!({ key: value }).to_string();
    format!(
        "shares/detail?metadata={}&status=available&sort_key=created_at&sort_dir=desc&limit={}",
        query_value(&metadata),
        limit.clamp(1, MAX_SHARES)
    )
}

impl Client {
    /// Up to `limit` available shares whose metadata has `key` = `value`, newest first (one
    /// page; never more than [`MAX_SHARES`]). Shares without the tag that a cloud returns
    /// anyway (one that ignores the filter) are dropped.
    pub async fn shares_tagged(
        &self,
        key: &str,
        value: &str,
        limit: usize,
    ) -> Result<Vec<SharePlacement>, Error> {
        let step = Step::ListShares;
        let (url, body) = self
            .request(
                step,
                Service::SharedFileSystem,
                reqwest::Method::GET,
                &shares_query(key, value, limit),
                None,
                Some((VERSION_HEADER, SHARES_MICROVERSION)),
            )
            .await?;
        let shares = parse_shares(&body).map_err(|r| bad(step, &url, r))?;
        Ok(shares
            .into_iter()
            .filter(|s| s.metadata.get(key).map(String::as_str) == Some(value))
            .take(limit)
            .collect())
    }

    /// The export locations of a share.
    pub async fn share_export_locations(
        &self,
        share_id: &str,
    ) -> Result<Vec<ExportLocation>, Error> {
        let step = Step::ListShareExportLocations;
        check_id(step, share_id)?;
        let (url, body) = self
            .request(
                step,
                Service::SharedFileSystem,
                reqwest::Method::GET,
                &format!("shares/{share_id}/export_locations"),
                None,
                Some((VERSION_HEADER, SHARES_MICROVERSION)),
            )
            .await?;
        parse_export_locations(&body).map_err(|r| bad(step, &url, r))
    }

    /// A share network with its subnets: asked with 2.51, and again with 2.14 when the cloud
    /// is older (406).
    pub async fn share_network(&self, id: &str) -> Result<ShareNetwork, Error> {
        let step = Step::ReadShareNetwork;
        check_id(step, id)?;
        let path = format!("share-networks/{id}");
        let get = |version: &'static str| {
            self.request(
                step,
                Service::SharedFileSystem,
                reqwest::Method::GET,
                &path,
                None,
                Some((VERSION_HEADER, version)),
            )
        };
        let (url, body) = match get(SUBNETS_MICROVERSION).await {
            Err(e) if e.status() == Some(406) => get(SHARES_MICROVERSION).await?,
            other => other?,
        };
        parse_share_network(&body).map_err(|r| bad(step, &url, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn cidrs_parse_normalise_and_contain() {
        let c: Cidr = "10.0.0.77/24".parse().expect("parses");
        assert_eq!(c.to_string(), "10.0.0.0/24");
        assert!(c.contains(ip("10.0.0.0")) && c.contains(ip("10.0.0.255")));
        assert!(!c.contains(ip("10.0.1.0")) && !c.contains(ip("9.255.255.255")));
        let all: Cidr = "0.0.0.0/0".parse().expect("parses");
        assert!(all.contains(ip("203.0.113.9")));
        assert!(!all.contains(ip("fd00::1")), "families never mix");
        let host: Cidr = "192.0.2.7/32".parse().expect("parses");
        assert!(host.contains(ip("192.0.2.7")) && !host.contains(ip("192.0.2.6")));
        let v6: Cidr = "fd00:10::/64".parse().expect("parses");
        assert!(v6.contains(ip("fd00:10::5")) && !v6.contains(ip("fd00:11::5")));
        assert!(!v6.contains(ip("10.0.0.1")));
        let mapped: Cidr = "10.0.0.0/8".parse().expect("parses");
        assert!(mapped.contains(ip("::ffff:10.1.2.3")));
        let any6: Cidr = "::/0".parse().expect("parses");
        assert!(any6.contains(ip("2001:db8::1")));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "fd00::/129",
            "x/8",
            "10.0.0.0/-1",
            "",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn export_paths_yield_their_addresses() {
        assert_eq!(export_addresses("10.0.0.5:/share-1"), [ip("10.0.0.5")]);
        assert_eq!(export_addresses("[fd00::5]:/share-1"), [ip("fd00::5")]);
        assert_eq!(
            export_addresses("10.0.0.1:6789,10.0.0.2:6789,[fd00::3]:6789:/volumes/_nogroup/x"),
            [ip("10.0.0.1"), ip("10.0.0.2"), ip("fd00::3")]
        );
        assert_eq!(export_addresses("\\\\192.0.2.9\\share"), [ip("192.0.2.9")]);
        assert!(
            export_addresses("nfs.example.com:/share").is_empty(),
            "host names"
        );
        assert!(export_addresses("/just/a/path").is_empty());
        assert!(export_addresses("").is_empty());
        assert!(export_addresses("[fd00::5:/broken").is_empty());
        assert_eq!(
            export_addresses("10.0.0.5:/a,10.0.0.5:/b"),
            [ip("10.0.0.5")],
            "only what is before the first :/"
        );
        let many = (0..100).map(|i| format!("10.0.0.{i}")).collect::<Vec<_>>();
        assert_eq!(
            export_addresses(&format!("{}:/x", many.join(","))).len(),
            MAX_PATH_ADDRESSES
        );
    }

    #[test]
    fn shares_parse_tolerantly_and_are_capped() {
        let body = br#"{"shares": [
            {"id": "s1", "name": "pvc-1", "status": "available", "share_type": "st-1",
             "share_type_name": "default", "share_network_id": "sn-1",
             "metadata": {"manila.csi.openstack.org/cluster": "c1", "n": 1}, "new": true},
            {"id": "s2", "share_network_id": null, "metadata": null},
            {"name": "no id"}
        ]}"#;
        let shares = parse_shares(body).expect("parses");
        assert_eq!(shares.len(), 2, "an item without id is skipped");
        assert_eq!(shares[0].share_type(), "default");
        assert_eq!(shares[0].share_network_id.as_deref(), Some("sn-1"));
        assert_eq!(shares[0].metadata.len(), 1, "non-string values dropped");
        assert_eq!(shares[1].share_type(), "", "nothing known");
        assert_eq!(shares[1].share_network_id, None);
        let only_id = br#"{"shares": [{"id": "s3", "share_type": "st-9"}]}"#;
        assert_eq!(
            parse_shares(only_id).expect("parses")[0].share_type(),
            "st-9"
        );
        assert!(parse_shares(b"<html>").is_err());
        assert!(parse_shares(br#"{"shares": {}}"#).is_err());
        assert!(parse_shares(br#"{"volumes": []}"#).is_err());
        let huge = serde_json::json!({"shares": (0..10_000)
            .map(|i| serde_json::json!({"id": format!("s{i}")})).collect::<Vec<_>>()});
        let huge = serde_json::to_vec(&huge).expect("json");
        assert_eq!(parse_shares(&huge).expect("parses").len(), MAX_SHARES);
    }

    #[test]
    fn export_locations_parse_tolerantly() {
        let body = br#"{"export_locations": [
            {"id": "e1", "path": "10.0.0.5:/share-1", "preferred": true, "is_admin_only": false,
             "share_instance_id": "i1"},
            {"id": "e2", "path": "[fd00::5]:/share-1"},
            {"id": "e3", "path": "nfs.example.com:/share-1", "is_admin_only": true},
            {"id": "e4"}
        ]}"#;
        let locations = parse_export_locations(body).expect("parses");
        assert_eq!(locations.len(), 3, "a location without a path is skipped");
        assert!(locations[0].preferred && !locations[0].is_admin_only);
        assert_eq!(locations[1].addresses, [ip("fd00::5")]);
        assert!(!locations[1].preferred, "absent before 2.14");
        assert!(locations[2].addresses.is_empty() && locations[2].is_admin_only);
        assert!(parse_export_locations(b"{").is_err());
        assert!(parse_export_locations(br#"{"export_locations": null}"#).is_err());
        let huge = serde_json::json!({"export_locations": (0..1000)
            .map(|i| serde_json::json!({"path": format!("10.0.{}.{}:/x", i / 256, i % 256)}))
            .collect::<Vec<_>>()});
        let huge = serde_json::to_vec(&huge).expect("json");
        assert_eq!(
            parse_export_locations(&huge).expect("parses").len(),
            MAX_EXPORT_LOCATIONS
        );
    }

    #[test]
    fn share_networks_parse_in_both_shapes() {
        let v251 = br#"{"share_network": {"id": "sn-1", "name": "storage",
            "share_network_subnets": [
              {"id": "sub-1", "neutron_subnet_id": "n-1", "cidr": "172.16.0.0/24",
               "ip_version": 4, "availability_zone": null},
              {"id": "sub-2", "neutron_subnet_id": "n-2", "cidr": null},
              {"id": "sub-3", "cidr": "not a cidr"}
            ]}}"#;
        let n = parse_share_network(v251).expect("parses");
        assert_eq!(n.subnets.len(), 3);
        assert_eq!(
            n.subnets[0].cidr,
            Some("172.16.0.0/24".parse().expect("cidr"))
        );
        assert_eq!(n.subnets[1].cidr, None, "not looked up by Manila yet");
        assert_eq!(n.subnets[2].cidr, None, "unparsable text is no subnet");
        let old = br#"{"share_network": {"id": "sn-2", "neutron_subnet_id": "n-1",
            "cidr": "fd00:10::/64", "ip_version": 6}}"#;
        let n = parse_share_network(old).expect("parses");
        assert_eq!(n.subnets.len(), 1);
        assert_eq!(
            n.subnets[0].cidr,
            Some("fd00:10::/64".parse().expect("cidr"))
        );
        let bare = br#"{"share_network": {"id": "sn-3"}}"#;
        assert!(
            parse_share_network(bare)
                .expect("parses")
                .subnets
                .is_empty()
        );
        assert!(parse_share_network(br#"{"share_network": {"name": "x"}}"#).is_err());
        assert!(parse_share_network(br#"{"share_networks": []}"#).is_err());
        assert!(parse_share_network(b"").is_err());
    }

    #[test]
    fn the_share_query_is_encoded_and_capped() {
        let q = shares_query("manila.csi.openstack.org/cluster", "c1", 500);
        assert!(
            q.starts_with(
                "shares/detail?metadata=%7B%22manila.csi.openstack.org%2Fcluster%22%3A%22c1%22%7D&"
            ),
            "{q}"
        );
        assert!(q.ends_with(&format!("limit={MAX_SHARES}")), "{q}");
        assert!(q.contains("status=available"));
        assert!(shares_query("k", "v", 0).ends_with("limit=1"));
    }
}
