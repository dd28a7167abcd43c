//! Tests of the HTTP front's routing and query-string decoding.

use super::routing::{ResourcePath, Route, percent_decode, query_map, route};

fn rp(path: &str) -> ResourcePath {
    match route(path) {
        Route::Resource(p) => p,
        _ => panic!("{path} is not a resource path"),
    }
}

#[test]
fn paths_route_like_the_api_server() {
    let p = rp("/api/v1/namespaces/default/configmaps/x");
    assert_eq!(
        (p.namespace.as_deref(), p.plural.as_str(), p.name.as_deref()),
        (Some("default"), "configmaps", Some("x"))
    );
    let p = rp("/api/v1/namespaces/default");
    assert_eq!(
        (p.plural.as_str(), p.name.as_deref(), p.namespace),
        ("namespaces", Some("default"), None)
    );
    let p = rp("/api/v1/namespaces/default/status");
    assert_eq!(p.sub.as_deref(), Some("status"));
    let p = rp("/apis/apps/v1/deployments");
    assert_eq!(
        (p.group.as_str(), p.plural.as_str(), p.namespace),
        ("apps", "deployments", None)
    );
    let p = rp("/apis/apps/v1/namespaces/ns/deployments/d/status");
    assert_eq!(p.sub.as_deref(), Some("status"));
    let p = rp("/apis/storage.k8s.io/v1/csidrivers/x");
    assert_eq!(
        (p.plural.as_str(), p.name.as_deref()),
        ("csidrivers", Some("x"))
    );
    assert!(matches!(
        route("/apis/apps/v1/namespaces/ns/deployments/d/status/extra"),
        Route::NotFound
    ));
    assert!(matches!(route("/apis/apps"), Route::Group(_)));
}

#[test]
fn query_strings_are_decoded() {
    let q = query_map("labelSelector=app%3Dweb%2Ctier+in+%28a%29&watch=1&limit=");
    assert_eq!(q["labelSelector"], "app=web,tier in (a)");
    assert_eq!(q["watch"], "1");
    assert_eq!(q["limit"], "");
    assert_eq!(percent_decode("%zz"), "%zz");
    assert_eq!(percent_decode("%4"), "%4");
}
