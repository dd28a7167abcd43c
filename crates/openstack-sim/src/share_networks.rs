//! Where the emulated Manila's shares can be mounted from: share networks with their subnets,
//! each share's export locations, and the filtered share listing the Manila operator's
//! export-network diagnostic makes. Answers as Manila does:
//! - `GET /v2[/{project}]/shares/detail?metadata=…&status=…&limit=…&sort_dir=…`: the shares
//!   whose metadata holds every given pair (Manila reads `metadata` as a dictionary literal),
//!   of that status, at most `limit`, in creation order or reversed with `sort_dir=desc`;
//!   `share_type_name` only from microversion 2.6;
//! - `GET …/shares/{id}/export_locations`: from 2.9 (404 below, as Manila answers a method
//!   that does not exist in the asked version), `preferred` from 2.14; 404 for a missing share;
//! - `GET …/share-networks/{id}`: from 2.51 with `share_network_subnets[]`, before it with the
//!   first subnet's `neutron_net_id`, `neutron_subnet_id`, `cidr` and `ip_version` on the
//!   network itself; 404 for a missing network.
//!
//! A microversion above the emulated maximum is 406 and one that does not parse is 400, on
//! every route here. Tests seed networks with [`crate::SimHandle::set_share_networks`] and
//! export locations on [`crate::SimShare`].

use serde_json::{Value, json};

use crate::storage::SimStorage;

/// Highest microversion the emulated Manila serves (as for share types).
const MAX_MINOR: u32 = 84;

/// An export location of a share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimExportLocation {
    pub path: String,
    pub preferred: bool,
    pub is_admin_only: bool,
}

impl SimExportLocation {
    /// A preferred location for clients.
    pub fn new(path: &str) -> Self {
        Self {
            path: path.into(),
            preferred: true,
            is_admin_only: false,
        }
    }

    /// A location for the cloud's administrators only.
    pub fn admin_only(path: &str) -> Self {
        Self {
            path: path.into(),
            preferred: false,
            is_admin_only: true,
        }
    }
}

/// A subnet of a share network. `cidr` is `None` until Manila looked the Neutron subnet up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimShareNetworkSubnet {
    pub id: String,
    pub neutron_net_id: String,
    pub neutron_subnet_id: String,
    pub cidr: Option<String>,
    pub availability_zone: Option<String>,
}

impl SimShareNetworkSubnet {
    pub fn new(id: &str, cidr: &str) -> Self {
        Self {
            id: id.into(),
            neutron_net_id: format!("net-{id}"),
            neutron_subnet_id: format!("subnet-{id}"),
            cidr: Some(cidr.into()),
            availability_zone: None,
        }
    }
}

/// A share network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimShareNetwork {
    pub id: String,
    pub name: String,
    pub subnets: Vec<SimShareNetworkSubnet>,
}

impl SimShareNetwork {
    pub fn new(id: &str, name: &str, subnets: Vec<SimShareNetworkSubnet>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            subnets,
        }
    }
}

fn error(key: &str, code: u16, message: &str) -> Value {
    json!({ key: { "code": code, "message": message } })
}

fn not_found(what: &str, id: &str) -> (u16, Value) {
    (
        404,
        error(
            "itemNotFound",
            404,
            &format!("{what} {id} could not be found."),
        ),
    )
}

/// The minor version asked for (2.0 when no header), or Manila's answer to a bad one.
fn minor(microversion: Option<&str>) -> Result<u32, (u16, Value)> {
    let Some(v) = microversion else {
        return Ok(0);
    };
    match v
        .trim()
        .strip_prefix("2.")
        .and_then(|m| m.parse::<u32>().ok())
    {
        None => Err((
            400,
            error(
                "badRequest",
                400,
                &format!("Invalid API version request: {v}"),
            ),
        )),
        Some(m) if m > MAX_MINOR => Err((
            406,
            error(
                "notAcceptable",
                406,
                &format!(
                    "Version {v} is not supported by the API. Minimum is 2.0 and maximum is \
                     2.{MAX_MINOR}."
                ),
            ),
        )),
        Some(m) => Ok(m),
    }
}

/// Percent-decoding of a query component (`+` is a space, as in forms).
fn decode(s: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// A dictionary literal (`{"k": "v"}` or Python's `{'k': 'v'}`) as string pairs.
fn dictionary(text: &str) -> Option<Vec<(String, String)>> {
    let value: Value = serde_json::from_str(text)
        .or_else(|_| serde_json::from_str(&text.replace('\'', "\"")))
        .ok()?;
    value
        .as_object()?
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

fn share_json(s: &crate::SimShare, minor: u32) -> Value {
    let mut v = json!({"id": s.id, "name": s.name, "status": s.status, "size": s.size,
        "share_proto": "NFS", "metadata": s.metadata, "share_type": s.share_type_id,
        "share_network_id": s.share_network_id, "is_public": false});
    if minor >= 6 {
        v["share_type_name"] = json!(s.share_type_name);
    }
    v
}

/// The routes of this module below `/v2[/{project}]/`; `None` when the path is not one of
/// them (the caller goes on to the other routes).
pub(crate) fn route(
    storage: &SimStorage,
    networks: &[SimShareNetwork],
    method: &http::Method,
    rest: &[&str],
    microversion: Option<&str>,
    query: Option<&str>,
) -> Option<(u16, Value)> {
    if method != http::Method::GET {
        return None;
    }
    let ours = matches!(
        rest,
        ["shares", _, "export_locations"] | ["share-networks", _]
    ) || (rest == ["shares", "detail"] && query.is_some_and(|q| !q.is_empty()));
    if !ours || rest == ["share-networks", "detail"] {
        return None;
    }
    let minor = match minor(microversion) {
        Ok(m) => m,
        Err(answer) => return Some(answer),
    };
    Some(match rest {
        ["shares", "detail"] => shares_detail(storage, minor, query),
        ["shares", id, "export_locations"] => {
            if minor < 9 {
                return Some((
                    404,
                    error("itemNotFound", 404, "The resource could not be found."),
                ));
            }
            let Some(share) = storage.shares.iter().find(|s| s.id == *id) else {
                return Some(not_found("Share", id));
            };
            let list: Vec<Value> = share
                .export_locations
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut v = json!({"id": format!("el-{}-{i}", share.id), "path": l.path,
                        "share_instance_id": format!("si-{}", share.id),
                        "is_admin_only": l.is_admin_only});
                    if minor >= 14 {
                        v["preferred"] = json!(l.preferred);
                    }
                    v
                })
                .collect();
            (200, json!({ "export_locations": list }))
        }
        ["share-networks", id] => match networks.iter().find(|n| n.id == *id) {
            Some(n) => (200, json!({ "share_network": network_json(n, minor) })),
            None => not_found("Share network", id),
        },
        _ => return None,
    })
}

fn shares_detail(storage: &SimStorage, minor: u32, query: Option<&str>) -> (u16, Value) {
    let mut metadata: Vec<(String, String)> = Vec::new();
    let mut status: Option<String> = None;
    let mut limit: Option<usize> = None;
    let mut descending = false;
    for (k, v) in query_pairs(query) {
        match k.as_str() {
            "metadata" => match dictionary(&v) {
                Some(pairs) => metadata.extend(pairs),
                None => {
                    return (
                        400,
                        error("badRequest", 400, &format!("Invalid metadata filter: {v}")),
                    );
                }
            },
            "status" => status = Some(v),
            "limit" => match v.parse::<usize>() {
                Ok(n) => limit = Some(n),
                Err(_) => {
                    return (
                        400,
                        error("badRequest", 400, "limit param must be an integer"),
                    );
                }
            },
            "sort_dir" => descending = v == "desc",
            _ => {}
        }
    }
    let mut shares: Vec<&crate::SimShare> = storage
        .shares
        .iter()
        .filter(|s| {
            metadata
                .iter()
                .all(|(k, v)| s.metadata.get(k).is_some_and(|m| m == v))
        })
        .filter(|s| status.as_ref().is_none_or(|st| &s.status == st))
        .collect();
    if descending {
        shares.reverse();
    }
    let list: Vec<Value> = shares
        .into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|s| share_json(s, minor))
        .collect();
    (200, json!({ "shares": list }))
}

fn network_json(n: &SimShareNetwork, minor: u32) -> Value {
    let subnet = |s: &SimShareNetworkSubnet| {
        let ip_version = s
            .cidr
            .as_deref()
            .map(|c| if c.contains(':') { 6 } else { 4 });
        json!({"id": s.id, "neutron_net_id": s.neutron_net_id,
               "neutron_subnet_id": s.neutron_subnet_id, "cidr": s.cidr,
               "ip_version": ip_version, "availability_zone": s.availability_zone,
               "network_type": "flat", "segmentation_id": null, "gateway": null, "mtu": 1500})
    };
    let mut v = json!({"id": n.id, "name": n.name, "description": null,
        "project_id": "p-demo", "created_at": "2026-01-01T00:00:00.000000",
        "updated_at": null});
    if minor >= 51 {
        v["share_network_subnets"] = Value::Array(n.subnets.iter().map(subnet).collect());
    } else {
        let first = n.subnets.first().map(subnet).unwrap_or_else(|| json!({}));
        for key in ["neutron_net_id", "neutron_subnet_id", "cidr", "ip_version"] {
            v[key] = first.get(key).cloned().unwrap_or(Value::Null);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimShare;
    use http::Method;

    fn seeded() -> (SimStorage, Vec<SimShareNetwork>) {
        let storage = SimStorage {
            shares: vec![
                SimShare::new("sh1", "pvc-1")
                    .with_metadata("manila.csi.openstack.org/cluster", "c1")
                    .of_type("gold")
                    .on_share_network("sn-1")
                    .exported_at(SimExportLocation::new("172.16.0.5:/share-1"))
                    .exported_at(SimExportLocation::admin_only("10.254.0.5:/share-1")),
                SimShare::new("sh2", "other")
                    .with_metadata("manila.csi.openstack.org/cluster", "c2"),
                SimShare::new("sh3", "pvc-3")
                    .with_metadata("manila.csi.openstack.org/cluster", "c1"),
            ],
            ..SimStorage::default()
        };
        let networks = vec![SimShareNetwork::new(
            "sn-1",
            "storage",
            vec![SimShareNetworkSubnet::new("sub-1", "172.16.0.0/24")],
        )];
        (storage, networks)
    }

    fn get(rest: &[&str], version: Option<&str>, query: Option<&str>) -> Option<(u16, Value)> {
        let (s, n) = seeded();
        route(&s, &n, &Method::GET, rest, version, query)
    }

    #[test]
    fn export_locations_exist_from_2_9_and_preferred_from_2_14() {
        let path = ["shares", "sh1", "export_locations"];
        assert_eq!(get(&path, None, None).map(|r| r.0), Some(404));
        assert_eq!(get(&path, Some("2.8"), None).map(|r| r.0), Some(404));
        let (code, body) = get(&path, Some("2.9"), None).expect("ours");
        assert_eq!(code, 200);
        assert_eq!(body["export_locations"][0]["path"], "172.16.0.5:/share-1");
        assert!(body["export_locations"][0].get("preferred").is_none());
        let (_, body) = get(&path, Some("2.14"), None).expect("ours");
        assert_eq!(body["export_locations"][0]["preferred"], true);
        assert_eq!(body["export_locations"][1]["is_admin_only"], true);
        let missing = ["shares", "nope", "export_locations"];
        assert_eq!(get(&missing, Some("2.14"), None).map(|r| r.0), Some(404));
        assert_eq!(get(&path, Some("2.99"), None).map(|r| r.0), Some(406));
        assert_eq!(get(&path, Some("two"), None).map(|r| r.0), Some(400));
    }

    #[test]
    fn share_networks_have_subnets_from_2_51() {
        let (code, body) = get(&["share-networks", "sn-1"], Some("2.51"), None).expect("ours");
        assert_eq!(code, 200);
        let sn = &body["share_network"];
        assert_eq!(sn["share_network_subnets"][0]["cidr"], "172.16.0.0/24");
        assert!(sn.get("cidr").is_none());
        let (_, body) = get(&["share-networks", "sn-1"], Some("2.50"), None).expect("ours");
        let sn = &body["share_network"];
        assert_eq!(sn["cidr"], "172.16.0.0/24");
        assert_eq!(sn["ip_version"], 4);
        assert!(sn.get("share_network_subnets").is_none());
        assert_eq!(
            get(&["share-networks", "sn-9"], Some("2.51"), None).map(|r| r.0),
            Some(404)
        );
        assert!(get(&["share-networks", "detail"], None, None).is_none());
    }

    #[test]
    fn the_share_listing_filters_limits_and_sorts() {
        let q =
            "metadata=%7B%22manila.csi.openstack.org%2Fcluster%22%3A%22c1%22%7D&status=available";
        let (code, body) = get(&["shares", "detail"], Some("2.14"), Some(q)).expect("ours");
        assert_eq!(code, 200);
        let ids: Vec<&str> = body["shares"]
            .as_array()
            .expect("list")
            .iter()
            .map(|s| s["id"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(ids, ["sh1", "sh3"]);
        assert_eq!(body["shares"][0]["share_type_name"], "gold");
        assert_eq!(body["shares"][0]["share_network_id"], "sn-1");
        let desc = format!("{q}&sort_dir=desc&limit=1");
        let (_, body) = get(&["shares", "detail"], Some("2.14"), Some(&desc)).expect("ours");
        assert_eq!(body["shares"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["shares"][0]["id"], "sh3");
        let python = "metadata=%7B%27manila.csi.openstack.org%2Fcluster%27%3A+%27c2%27%7D";
        let (_, body) = get(&["shares", "detail"], Some("2.5"), Some(python)).expect("ours");
        assert_eq!(body["shares"][0]["id"], "sh2");
        assert!(body["shares"][0].get("share_type_name").is_none(), "2.6+");
        assert_eq!(
            get(&["shares", "detail"], None, Some("metadata=nope")).map(|r| r.0),
            Some(400)
        );
        assert_eq!(
            get(&["shares", "detail"], None, Some("limit=x")).map(|r| r.0),
            Some(400)
        );
        assert!(
            get(&["shares", "detail"], None, None).is_none(),
            "unfiltered: storage's"
        );
    }

    #[test]
    fn decoding() {
        assert_eq!(decode("a%2Fb+c%7"), "a/b c%7");
        assert_eq!(decode("%"), "%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%C3%A9%"), "é%");
        assert_eq!(decode("é%4"), "é%4", "no split inside a character");
    }
}
