//! Paths and query strings: which resource, subresource or document a request is for.

use std::collections::HashMap;

/// A parsed resource path.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct ResourcePath {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) namespace: Option<String>,
    pub(super) plural: String,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

pub(super) enum Route {
    Version,
    CoreVersions,
    Groups,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3Root,
    OpenApiV3(String),
    Health,
    Admin(String),
    Resource(ResourcePath),
    NotFound,
}

pub(super) fn route(path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3(rest.join("/")),
        ["__sim", rest @ ..] => Route::Admin(rest.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::GroupVersion(String::new(), "v1".into()),
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::GroupVersion(g.to_string(), v.to_string()),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest),
        _ => Route::NotFound,
    }
}

pub(super) fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let mut p = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..Default::default()
    };
    let tail: &[&str] = match rest {
        // /api/v1/namespaces/{name}[/status|/finalize] addresses the Namespace itself.
        ["namespaces"] if group.is_empty() => {
            p.plural = "namespaces".into();
            return Route::Resource(p);
        }
        ["namespaces", name] if group.is_empty() => {
            p.plural = "namespaces".into();
            p.name = Some(name.to_string());
            return Route::Resource(p);
        }
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            p.plural = "namespaces".into();
            p.name = Some(name.to_string());
            p.sub = Some(sub.to_string());
            return Route::Resource(p);
        }
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => {
            p.namespace = Some(ns.to_string());
            tail
        }
        other => other,
    };
    match tail {
        [plural] => p.plural = plural.to_string(),
        [plural, name] => {
            p.plural = plural.to_string();
            p.name = Some(name.to_string());
        }
        [plural, name, sub] => {
            p.plural = plural.to_string();
            p.name = Some(name.to_string());
            p.sub = Some(sub.to_string());
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

pub(super) fn query_map(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
