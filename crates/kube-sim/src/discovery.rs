//! Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{g}`, `/apis/{g}/{v}`)
//! and the OpenAPI documents clients fetch before they validate or patch.
//!
//! The OpenAPI v3 documents declare, for every served kind, the operations a real server
//! declares and that PATCH takes `fieldValidation`, so kubectl ≥ 1.27 validates on the server
//! (strict decoding here) rather than client-side. The v2 document carries no schemas, which
//! kubectl treats as "nothing to validate client-side" and falls back to its compiled-in patch
//! metadata; that is documented as a known difference.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::resources::{Catalogue, ResourceType};

pub const GIT_VERSION: &str = "v1.33.0-kube-sim";

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(catalogue: &Catalogue, group: &str) -> Option<Value> {
    let versions: Vec<&String> = catalogue
        .group_versions()
        .filter(|((g, _), _)| g == group)
        .map(|((_, v), _)| v)
        .collect();
    if versions.is_empty() {
        return None;
    }
    // The preferred version is the highest by Kubernetes version ordering (v1 > v1beta1 > v1alpha1).
    let mut sorted = versions.clone();
    sorted.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    let preferred = sorted.first().map(|v| v.as_str()).unwrap_or_default();
    let vs: Vec<Value> = sorted
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    Some(json!({
        "name": group,
        "versions": vs,
        "preferredVersion": {"groupVersion": format!("{group}/{preferred}"), "version": preferred},
    }))
}

/// Orders `v2 > v1 > v1beta2 > v1beta1 > v1alpha1`, as the server sorts group versions.
fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (stage, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (stage, major, minor)
}

pub fn api_groups(catalogue: &Catalogue) -> Value {
    let mut groups: Vec<String> = catalogue
        .group_versions()
        .map(|((g, _), _)| g.clone())
        .filter(|g| !g.is_empty())
        .collect();
    groups.dedup();
    let entries: Vec<Value> = groups
        .iter()
        .filter_map(|g| group_entry(catalogue, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": entries})
}

pub fn api_group(catalogue: &Catalogue, group: &str) -> Option<Value> {
    let mut g = group_entry(catalogue, group)?;
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

pub fn resource_list(catalogue: &Catalogue, group: &str, version: &str) -> Option<Value> {
    let (_, resources) = catalogue
        .group_versions()
        .find(|((g, v), _)| g == group && v == version)?;
    let mut list = Vec::new();
    for rt in resources.values() {
        list.push(resource_entry(rt));
        if rt.status_subresource {
            list.push(json!({"name": format!("{}/status", rt.plural), "singularName": "", "namespaced": rt.namespaced, "kind": rt.kind, "verbs": ["get", "patch", "update"]}));
        }
        if rt.scale_subresource {
            list.push(json!({"name": format!("{}/scale", rt.plural), "singularName": "", "namespaced": rt.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
        if group.is_empty() && rt.kind == "Namespace" {
            list.push(json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]}));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

fn resource_entry(rt: &ResourceType) -> Value {
    let mut e = json!({
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": rt.verbs(),
        "storageVersionHash": storage_version_hash(rt),
    });
    if !rt.short_names.is_empty() {
        e["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        e["categories"] = json!(rt.categories);
    }
    e
}

/// A stable opaque hash per group/resource/version, like the server's (clients only compare it).
fn storage_version_hash(rt: &ResourceType) -> String {
    use base64::Engine;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{}/{}/{}", rt.group, rt.storage_version, rt.kind).bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    base64::engine::general_purpose::STANDARD.encode(h.to_be_bytes())
}

// ----- aggregated discovery ----------------------------------------------------------------

/// The media type of aggregated discovery documents.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an Accept header asks for aggregated discovery (v2), which current kubectl and
/// kube-rs try before the legacy documents.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|a| {
        let params: Vec<&str> = a.split(';').map(str::trim).collect();
        params.contains(&"as=APIGroupDiscoveryList")
            && params.contains(&"v=v2")
            && params.contains(&"g=apidiscovery.k8s.io")
    })
}

/// `/api` (core only) or `/apis` (every named group) as an APIGroupDiscoveryList.
pub fn aggregated(catalogue: &Catalogue, core: bool) -> Value {
    let mut groups: Vec<String> = catalogue
        .group_versions()
        .map(|((g, _), _)| g.clone())
        .filter(|g| g.is_empty() == core)
        .collect();
    groups.dedup();
    let items: Vec<Value> = groups
        .iter()
        .map(|group| {
            let mut versions: Vec<(&String, &BTreeMap<String, std::sync::Arc<ResourceType>>)> =
                catalogue
                    .group_versions()
                    .filter(|((g, _), _)| g == group)
                    .map(|((_, v), r)| (v, r))
                    .collect();
            versions.sort_by_key(|(v, _)| std::cmp::Reverse(version_priority(v)));
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|(v, resources)| {
                    let list: Vec<Value> = resources
                        .values()
                        .map(|rt| aggregated_resource(rt))
                        .collect();
                    json!({"version": v, "resources": list, "freshness": "Current"})
                })
                .collect();
            let mut metadata = json!({"creationTimestamp": null});
            if !group.is_empty() {
                metadata["name"] = json!(group);
            }
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let kind = |k: &str| json!({"group": rt.group, "version": rt.version, "kind": k});
    let mut subresources = Vec::new();
    if rt.status_subresource {
        subresources.push(json!({"subresource": "status", "responseKind": kind(&rt.kind), "verbs": ["get", "patch", "update"]}));
    }
    if rt.scale_subresource {
        subresources.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
    }
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": kind(&rt.kind),
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": rt.verbs(),
    });
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

// ----- OpenAPI ---------------------------------------------------------------------------

/// `/openapi/v3`: one entry per served group version.
pub fn openapi_v3_root(catalogue: &Catalogue) -> Value {
    let mut paths = Map::new();
    for ((group, version), _) in catalogue.group_versions() {
        let key = gv_path(group, version);
        paths.insert(key.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", gv_hash(catalogue, group, version))}));
    }
    json!({"paths": paths})
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Changes whenever the resources of the group version change, so clients refetch.
fn gv_hash(catalogue: &Catalogue, group: &str, version: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    if let Some((_, resources)) = catalogue
        .group_versions()
        .find(|((g, v), _)| g == group && v == version)
    {
        for rt in resources.values() {
            for b in format!(
                "{}:{}:{}:{};",
                rt.plural, rt.kind, rt.namespaced, rt.status_subresource
            )
            .bytes()
            {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    format!("{h:016X}")
}

/// `/openapi/v3/apis/{group}/{version}`: the paths of each kind with its GVK extension and the
/// query parameters the server supports.
pub fn openapi_v3_group_version(catalogue: &Catalogue, gv_path_requested: &str) -> Option<Value> {
    let (group, version) = if let Some(v) = gv_path_requested.strip_prefix("api/") {
        (String::new(), v.to_string())
    } else {
        let rest = gv_path_requested.strip_prefix("apis/")?;
        let (g, v) = rest.split_once('/')?;
        (g.to_string(), v.to_string())
    };
    let (_, resources) = catalogue
        .group_versions()
        .find(|((g, v), _)| *g == group && *v == version)?;
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for rt in resources.values() {
        let gvk = json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]);
        let prefix = format!("/{}", gv_path(&group, &version));
        let item = if rt.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", rt.plural)
        } else {
            format!("{prefix}/{}/{{name}}", rt.plural)
        };
        let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string"}});
        let op = |id: &str, extra: Vec<Value>| {
            let mut params = vec![query("dryRun"), query("fieldManager")];
            params.extend(extra);
            json!({
                "operationId": format!("{id}{}", rt.kind),
                "x-kubernetes-action": id,
                "x-kubernetes-group-version-kind": gvk[0],
                "parameters": params,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", schema_name(rt))}}}}},
            })
        };
        paths.insert(
            item,
            json!({
                "get": op("read", vec![]),
                "put": op("replace", vec![query("fieldValidation")]),
                "patch": op("patch", vec![query("fieldValidation"), query("force")]),
                "delete": op("delete", vec![]),
            }),
        );
        schemas.insert(
            schema_name(rt),
            json!({
                "type": "object",
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-preserve-unknown-fields": true,
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

fn schema_name(rt: &ResourceType) -> String {
    let mut parts: Vec<&str> = rt.group.split('.').collect();
    parts.reverse();
    let group = if rt.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        parts.join(".")
    };
    format!("{group}.{}.{}", rt.version, rt.kind)
}

/// `/openapi/v2` as JSON: the shape without schemas (see the module docs).
pub fn openapi_v2() -> Value {
    json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": GIT_VERSION}, "paths": {}, "definitions": {}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_resources_are_listed() {
        let c = Catalogue::builtin();
        let groups = api_groups(&c);
        let names: Vec<&str> = groups["groups"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|g| g["name"].as_str())
            .collect();
        assert!(
            names.contains(&"apps") && names.contains(&"storage.k8s.io") && !names.contains(&"")
        );
        let apps = resource_list(&c, "apps", "v1").expect("apps/v1");
        let res: Vec<&str> = apps["resources"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(
            res.contains(&"deployments")
                && res.contains(&"deployments/status")
                && res.contains(&"deployments/scale")
        );
        assert!(resource_list(&c, "apps", "v2").is_none());
    }

    #[test]
    fn openapi_v3_declares_field_validation_for_each_kind() {
        let c = Catalogue::builtin();
        let root = openapi_v3_root(&c);
        assert!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .expect("url")
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
        let doc = openapi_v3_group_version(&c, "apis/apps/v1").expect("doc");
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .expect("params")
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
    }

    #[test]
    fn aggregated_discovery_describes_groups_and_subresources() {
        let c = Catalogue::builtin();
        assert!(wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated("application/json"));
        let apis = aggregated(&c, false);
        let apps = apis["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|i| i["metadata"]["name"] == "apps")
            .expect("apps");
        let deploy = apps["versions"][0]["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["resource"] == "deployments")
            .expect("deployments");
        assert_eq!(deploy["scope"], "Namespaced");
        assert_eq!(deploy["responseKind"]["kind"], "Deployment");
        assert_eq!(deploy["subresources"][0]["subresource"], "status");
        let core = aggregated(&c, true);
        assert_eq!(core["items"].as_array().expect("items").len(), 1);
        assert!(core["items"][0]["metadata"].get("name").is_none());
    }

    #[test]
    fn version_ordering() {
        assert!(version_priority("v1") > version_priority("v1beta1"));
        assert!(version_priority("v1beta2") > version_priority("v1beta1"));
        assert!(version_priority("v2") > version_priority("v1"));
        assert!(version_priority("v1alpha1") < version_priority("v1beta1"));
    }
}
