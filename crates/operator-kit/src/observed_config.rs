//! The config observer's pure half (library-go CSIConfigObserverController, anchors §1.11):
//! the cluster `Proxy` status becomes `targetcsiconfig.proxy`, the `APIServer` TLS security
//! profile becomes `targetcsiconfig.servingInfo`, and both are read back out of a
//! ClusterCSIDriver's `spec.observedConfig` for the proxy hook and the `${TLS_*}` placeholders.
//!
//! Inputs are `serde_json::Value`s of the Proxy / APIServer objects (any shape: a malformed
//! field is an [`ObserveError`] naming it, never a panic). No I/O here: the caller reads the
//! objects from its caches and writes `spec.observedConfig` when the result differs.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Top-level key of the CSI operators' observed config.
pub const TARGET_CONFIG_KEY: &str = "targetcsiconfig";
/// TLS version of the Intermediate profile, and the fallback for an empty `minTLSVersion`.
pub const DEFAULT_MIN_TLS_VERSION: &str = "VersionTLS12";

/// A field of the Proxy or APIServer object, or of `spec.observedConfig`, has the wrong shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: field {path} {problem}")]
pub struct ObserveError {
    /// Which object: `proxies.config.openshift.io/cluster`, `apiservers.config.openshift.io/cluster`
    /// or `spec.observedConfig`.
    pub object: &'static str,
    /// JSON path of the field, e.g. `spec.tlsSecurityProfile.custom.ciphers`.
    pub path: String,
    /// What is wrong with it, e.g. `must be a list of strings`.
    pub problem: String,
}

const PROXY_OBJECT: &str = "proxies.config.openshift.io/cluster";
const APISERVER_OBJECT: &str = "apiservers.config.openshift.io/cluster";
const OBSERVED_OBJECT: &str = "spec.observedConfig";

/// TLS settings for the operands' serving endpoints (kube-rbac-proxy flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingInfo {
    /// `VersionTLS10` … `VersionTLS13`.
    pub min_tls_version: String,
    /// IANA cipher suite names.
    pub cipher_suites: Vec<String>,
}

/// The Intermediate profile: what a cluster without an APIServer TLS profile gets.
impl Default for ServingInfo {
    fn default() -> Self {
        Self::intermediate()
    }
}

impl ServingInfo {
    /// The Intermediate profile as the observer writes it: `VersionTLS12` and the nine suites
    /// Go supports (the DHE suites of the profile have no Go implementation and are dropped).
    pub fn intermediate() -> ServingInfo {
        let (min, ciphers) = profile_spec(TlsProfileType::Intermediate);
        ServingInfo {
            min_tls_version: min.to_owned(),
            cipher_suites: openssl_to_iana(ciphers),
        }
    }

    /// `${TLS_CIPHER_SUITES}`: the suites joined with `,`.
    pub fn cipher_suites_arg(&self) -> String {
        self.cipher_suites.join(",")
    }

    /// `${TLS_MIN_VERSION}`: the version, `VersionTLS12` when empty (library-go's default).
    pub fn min_tls_version_arg(&self) -> &str {
        if self.min_tls_version.is_empty() {
            DEFAULT_MIN_TLS_VERSION
        } else {
            &self.min_tls_version
        }
    }
}

/// The predefined TLS profiles of `config.openshift.io/v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsProfileType {
    /// Mozilla "old": TLS 1.0 and many ciphers.
    Old,
    /// Mozilla "intermediate": TLS 1.2 (the default).
    Intermediate,
    /// Mozilla "modern": TLS 1.3 only.
    Modern,
}

const TLS13_CIPHERS: [&str; 3] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

const INTERMEDIATE_CIPHERS: [&str; 11] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256",
    "DHE-RSA-AES256-GCM-SHA384",
];

const OLD_CIPHERS: [&str; 29] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256",
    "DHE-RSA-AES256-GCM-SHA384",
    "DHE-RSA-CHACHA20-POLY1305",
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "DHE-RSA-AES128-SHA256",
    "DHE-RSA-AES256-SHA256",
    "AES128-GCM-SHA256",
    "AES256-GCM-SHA384",
    "AES128-SHA256",
    "AES256-SHA256",
    "AES128-SHA",
    "AES256-SHA",
    "DES-CBC3-SHA",
];

/// `(minTLSVersion, OpenSSL cipher names)` of a predefined profile (openshift/api `TLSProfiles`).
pub fn profile_spec(profile: TlsProfileType) -> (&'static str, &'static [&'static str]) {
    match profile {
        TlsProfileType::Old => ("VersionTLS10", &OLD_CIPHERS),
        TlsProfileType::Intermediate => ("VersionTLS12", &INTERMEDIATE_CIPHERS),
        TlsProfileType::Modern => ("VersionTLS13", &TLS13_CIPHERS),
    }
}

/// OpenSSL → IANA cipher names (library-go `openSSLToIANACiphersMap`); `None` for names Go
/// does not implement (DHE, CBC-SHA384, …).
pub fn openssl_to_iana_name(openssl: &str) -> Option<&'static str> {
    Some(match openssl {
        "TLS_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384" => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384" => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305" => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305" => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-AES128-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-RSA-AES128-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "AES128-GCM-SHA256" => "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "AES256-GCM-SHA384" => "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "AES128-SHA256" => "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-ECDSA-AES128-SHA" => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "ECDHE-RSA-AES128-SHA" => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "ECDHE-ECDSA-AES256-SHA" => "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "ECDHE-RSA-AES256-SHA" => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        "AES128-SHA" => "TLS_RSA_WITH_AES_128_CBC_SHA",
        "AES256-SHA" => "TLS_RSA_WITH_AES_256_CBC_SHA",
        "DES-CBC3-SHA" => "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        _ => return None,
    })
}

/// Converts OpenSSL cipher names to IANA names in order, dropping the unsupported ones
/// (library-go `OpenSSLToIANACipherSuites`).
pub fn openssl_to_iana<S: AsRef<str>>(ciphers: &[S]) -> Vec<String> {
    ciphers
        .iter()
        .filter_map(|c| openssl_to_iana_name(c.as_ref()))
        .map(str::to_owned)
        .collect()
}

fn expect_object<'a>(
    value: &'a Value,
    object: &'static str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, ObserveError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        _ => Err(ObserveError {
            object,
            path: path.to_owned(),
            problem: "must be an object".to_owned(),
        }),
    }
}

/// Walks `path` (dot-separated) through nested objects; `None` when any step is absent or null.
fn lookup<'a>(
    root: &'a Value,
    object: &'static str,
    path: &str,
) -> Result<Option<&'a Value>, ObserveError> {
    let mut current = root;
    let mut walked = String::new();
    for part in path.split('.') {
        let Some(map) = expect_object(
            current,
            object,
            if walked.is_empty() { "<root>" } else { &walked },
        )?
        else {
            return Ok(None);
        };
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(part);
        match map.get(part) {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => current = v,
        }
    }
    Ok(Some(current))
}

fn optional_string(
    root: &Value,
    object: &'static str,
    path: &str,
) -> Result<Option<String>, ObserveError> {
    match lookup(root, object, path)? {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ObserveError {
            object,
            path: path.to_owned(),
            problem: "must be a string".to_owned(),
        }),
    }
}

fn string_list(
    root: &Value,
    object: &'static str,
    path: &str,
) -> Result<Option<Vec<String>>, ObserveError> {
    let bad = || ObserveError {
        object,
        path: path.to_owned(),
        problem: "must be a list of strings".to_owned(),
    };
    match lookup(root, object, path)? {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(bad()),
    }
}

/// The proxy settings of the cluster `Proxy` object (`None` when it does not exist):
/// `status.httpProxy` → `HTTP_PROXY`, `status.httpsProxy` → `HTTPS_PROXY`, `status.noProxy`
/// → `NO_PROXY`, empty values left out. An empty map means "no proxy".
pub fn observe_proxy(proxy: Option<&Value>) -> Result<BTreeMap<String, String>, ObserveError> {
    let mut out = BTreeMap::new();
    let Some(proxy) = proxy else { return Ok(out) };
    for (field, env) in [
        ("status.httpProxy", "HTTP_PROXY"),
        ("status.httpsProxy", "HTTPS_PROXY"),
        ("status.noProxy", "NO_PROXY"),
    ] {
        if let Some(v) = optional_string(proxy, PROXY_OBJECT, field)?
            && !v.is_empty()
        {
            out.insert(env.to_owned(), v);
        }
    }
    Ok(out)
}

/// The serving TLS settings from the cluster `APIServer` object's `spec.tlsSecurityProfile`
/// (`None` when the object does not exist). A missing, unknown or `Custom`-without-`custom`
/// profile is Intermediate. Cipher names are converted to IANA and unsupported ones dropped.
pub fn observe_serving_info(apiserver: Option<&Value>) -> Result<ServingInfo, ObserveError> {
    let Some(apiserver) = apiserver else {
        return Ok(ServingInfo::intermediate());
    };
    let profile_type =
        optional_string(apiserver, APISERVER_OBJECT, "spec.tlsSecurityProfile.type")?;
    let predefined = match profile_type.as_deref() {
        Some("Old") => TlsProfileType::Old,
        Some("Modern") => TlsProfileType::Modern,
        Some("Custom") => {
            if lookup(
                apiserver,
                APISERVER_OBJECT,
                "spec.tlsSecurityProfile.custom",
            )?
            .is_none()
            {
                TlsProfileType::Intermediate
            } else {
                let ciphers = string_list(
                    apiserver,
                    APISERVER_OBJECT,
                    "spec.tlsSecurityProfile.custom.ciphers",
                )?
                .unwrap_or_default();
                let min = optional_string(
                    apiserver,
                    APISERVER_OBJECT,
                    "spec.tlsSecurityProfile.custom.minTLSVersion",
                )?
                .unwrap_or_default();
                return Ok(ServingInfo {
                    min_tls_version: min,
                    cipher_suites: openssl_to_iana(&ciphers),
                });
            }
        }
        // Intermediate, empty, absent or a value this version does not know.
        _ => TlsProfileType::Intermediate,
    };
    let (min, ciphers) = profile_spec(predefined);
    Ok(ServingInfo {
        min_tls_version: min.to_owned(),
        cipher_suites: openssl_to_iana(ciphers),
    })
}

/// The observed config the operator writes into `spec.observedConfig`:
/// `{"targetcsiconfig": {"proxy": {…}, "servingInfo": {"minTLSVersion": …, "cipherSuites": […]}}}`,
/// with `proxy` left out when empty.
pub fn observed_config(proxy: &BTreeMap<String, String>, serving: &ServingInfo) -> Value {
    let mut target = Map::new();
    if !proxy.is_empty() {
        let proxy: Map<String, Value> = proxy
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        target.insert("proxy".to_owned(), Value::Object(proxy));
    }
    let mut serving_info = Map::new();
    serving_info.insert(
        "cipherSuites".to_owned(),
        Value::Array(
            serving
                .cipher_suites
                .iter()
                .cloned()
                .map(Value::String)
                .collect(),
        ),
    );
    serving_info.insert(
        "minTLSVersion".to_owned(),
        Value::String(serving.min_tls_version.clone()),
    );
    target.insert("servingInfo".to_owned(), Value::Object(serving_info));
    let mut root = Map::new();
    root.insert(TARGET_CONFIG_KEY.to_owned(), Value::Object(target));
    Value::Object(root)
}

/// The Cluster Storage Operator's observed config on `Storage/cluster`:
/// `{"targetconfig": {"proxy": {…}}}`, or `{}` without a proxy (CSO observes only the proxy,
/// at `targetconfig.proxy`, anchors §3.4). The serving info is not part of it: CSO renders the
/// TLS profile into each driver operator's config ConfigMap instead.
pub fn cso_observed_config(proxy: &BTreeMap<String, String>, _serving: &ServingInfo) -> Value {
    let mut root = Map::new();
    if !proxy.is_empty() {
        let proxy: Map<String, Value> = proxy
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let mut target = Map::new();
        target.insert("proxy".to_owned(), Value::Object(proxy));
        root.insert("targetconfig".to_owned(), Value::Object(target));
    }
    Value::Object(root)
}

/// The proxy map under `targetcsiconfig.proxy` of a ClusterCSIDriver's `spec.observedConfig`
/// (empty when absent). Every value must be a string, as library-go's `NestedStringMap` requires.
pub fn proxy_from_observed(
    observed: Option<&Value>,
) -> Result<BTreeMap<String, String>, ObserveError> {
    let Some(observed) = observed else {
        return Ok(BTreeMap::new());
    };
    let path = "targetcsiconfig.proxy";
    match lookup(observed, OBSERVED_OBJECT, path)? {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(ObserveError {
                    object: OBSERVED_OBJECT,
                    path: format!("{path}.{k}"),
                    problem: "must be a string".to_owned(),
                }),
            })
            .collect(),
        Some(_) => Err(ObserveError {
            object: OBSERVED_OBJECT,
            path: path.to_owned(),
            problem: "must be an object".to_owned(),
        }),
    }
}

/// The serving TLS settings under `targetcsiconfig.servingInfo` of `spec.observedConfig`.
///
/// Deliberate difference from library-go (anchors §8.5): when the observed config is empty or
/// has no `servingInfo` yet, the Intermediate defaults are returned, so `${TLS_CIPHER_SUITES}`
/// and `${TLS_MIN_VERSION}` are never left as literals in kube-rbac-proxy's arguments. A
/// missing `cipherSuites` with a present `minTLSVersion` (or the reverse) also takes the
/// Intermediate value for the missing half.
pub fn serving_info_from_observed(observed: Option<&Value>) -> Result<ServingInfo, ObserveError> {
    let default = ServingInfo::intermediate();
    let Some(observed) = observed else {
        return Ok(default);
    };
    let ciphers = string_list(
        observed,
        OBSERVED_OBJECT,
        "targetcsiconfig.servingInfo.cipherSuites",
    )?;
    let min = optional_string(
        observed,
        OBSERVED_OBJECT,
        "targetcsiconfig.servingInfo.minTLSVersion",
    )?;
    Ok(ServingInfo {
        min_tls_version: min.unwrap_or(default.min_tls_version),
        cipher_suites: ciphers.unwrap_or(default.cipher_suites),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const INTERMEDIATE_IANA: [&str; 9] = [
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ];

    #[test]
    fn cso_observed_config_keeps_only_the_proxy_under_targetconfig() {
        let serving = ServingInfo::intermediate();
        assert_eq!(cso_observed_config(&BTreeMap::new(), &serving), json!({}));
        let proxy = BTreeMap::from([("HTTPS_PROXY".to_owned(), "http://p:3128".to_owned())]);
        assert_eq!(
            cso_observed_config(&proxy, &serving),
            json!({"targetconfig": {"proxy": {"HTTPS_PROXY": "http://p:3128"}}})
        );
    }

    #[test]
    fn intermediate_default_matches_anchors() {
        let s = ServingInfo::intermediate();
        assert_eq!(s.min_tls_version, "VersionTLS12");
        assert_eq!(s.cipher_suites, INTERMEDIATE_IANA);
        assert_eq!(s.cipher_suites_arg(), INTERMEDIATE_IANA.join(","));
    }

    #[test]
    fn profiles() {
        for apiserver in [
            None,
            Some(json!({})),
            Some(json!({"spec": {"tlsSecurityProfile": null}})),
            Some(json!({"spec": {"tlsSecurityProfile": {"type": "Intermediate"}}})),
            Some(json!({"spec": {"tlsSecurityProfile": {"type": "Bogus"}}})),
            Some(json!({"spec": {"tlsSecurityProfile": {"type": "Custom"}}})),
        ] {
            assert_eq!(
                observe_serving_info(apiserver.as_ref()).unwrap(),
                ServingInfo::intermediate(),
                "{apiserver:?}"
            );
        }
        let modern = observe_serving_info(Some(
            &json!({"spec": {"tlsSecurityProfile": {"type": "Modern", "modern": {}}}}),
        ))
        .unwrap();
        assert_eq!(modern.min_tls_version, "VersionTLS13");
        assert_eq!(modern.cipher_suites, TLS13_CIPHERS);
        let old = observe_serving_info(Some(
            &json!({"spec": {"tlsSecurityProfile": {"type": "Old"}}}),
        ))
        .unwrap();
        assert_eq!(old.min_tls_version, "VersionTLS10");
        assert!(
            old.cipher_suites
                .contains(&"TLS_RSA_WITH_3DES_EDE_CBC_SHA".to_owned())
        );
        assert!(!old.cipher_suites.iter().any(|c| c.starts_with("TLS_DHE")));
        let custom = observe_serving_info(Some(&json!({"spec": {"tlsSecurityProfile": {"type": "Custom", "custom": {"ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES128-GCM-SHA256", "nonsense"], "minTLSVersion": "VersionTLS11"}}}}))).unwrap();
        assert_eq!(
            custom,
            ServingInfo {
                min_tls_version: "VersionTLS11".into(),
                cipher_suites: vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()]
            }
        );
    }

    #[test]
    fn malformed_apiserver_fields_are_named() {
        let err = observe_serving_info(Some(&json!({"spec": {"tlsSecurityProfile": {"type": 3}}})))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "apiservers.config.openshift.io/cluster: field spec.tlsSecurityProfile.type must be a string"
        );
        let err = observe_serving_info(Some(&json!({"spec": {"tlsSecurityProfile": {"type": "Custom", "custom": {"ciphers": "AES128-SHA"}}}}))).unwrap_err();
        assert_eq!(err.path, "spec.tlsSecurityProfile.custom.ciphers");
        assert_eq!(err.problem, "must be a list of strings");
        let err = observe_serving_info(Some(&json!({"spec": "oops"}))).unwrap_err();
        assert_eq!(err.path, "spec");
    }

    #[test]
    fn proxy_non_empty_values_only() {
        let p = observe_proxy(Some(
            &json!({"status": {"httpProxy": "http://p:3128", "httpsProxy": "", "noProxy": ".svc"}}),
        ))
        .unwrap();
        assert_eq!(
            p,
            BTreeMap::from([
                ("HTTP_PROXY".into(), "http://p:3128".into()),
                ("NO_PROXY".into(), ".svc".into())
            ])
        );
        assert!(observe_proxy(None).unwrap().is_empty());
        assert!(
            observe_proxy(Some(&json!({"spec": {"httpProxy": "x"}})))
                .unwrap()
                .is_empty()
        );
        let err = observe_proxy(Some(&json!({"status": {"noProxy": ["a"]}}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "proxies.config.openshift.io/cluster: field status.noProxy must be a string"
        );
    }

    #[test]
    fn observed_config_shape_and_round_trip() {
        let proxy = BTreeMap::from([("HTTPS_PROXY".to_owned(), "https://p".to_owned())]);
        let serving = ServingInfo::intermediate();
        let v = observed_config(&proxy, &serving);
        assert_eq!(
            v["targetcsiconfig"]["proxy"],
            json!({"HTTPS_PROXY": "https://p"})
        );
        assert_eq!(
            v["targetcsiconfig"]["servingInfo"]["minTLSVersion"],
            "VersionTLS12"
        );
        assert_eq!(proxy_from_observed(Some(&v)).unwrap(), proxy);
        assert_eq!(serving_info_from_observed(Some(&v)).unwrap(), serving);
        // Empty proxy is pruned.
        let v = observed_config(&BTreeMap::new(), &serving);
        assert!(v["targetcsiconfig"].get("proxy").is_none());
        assert!(proxy_from_observed(Some(&v)).unwrap().is_empty());
    }

    #[test]
    fn empty_observed_config_gives_intermediate_not_literals() {
        assert_eq!(
            serving_info_from_observed(None).unwrap(),
            ServingInfo::intermediate()
        );
        assert_eq!(
            serving_info_from_observed(Some(&json!({}))).unwrap(),
            ServingInfo::intermediate()
        );
        let only_min = serving_info_from_observed(Some(
            &json!({"targetcsiconfig": {"servingInfo": {"minTLSVersion": "VersionTLS13"}}}),
        ))
        .unwrap();
        assert_eq!(only_min.min_tls_version, "VersionTLS13");
        assert_eq!(only_min.cipher_suites, INTERMEDIATE_IANA);
        let empty_min = ServingInfo {
            min_tls_version: String::new(),
            cipher_suites: vec![],
        };
        assert_eq!(empty_min.min_tls_version_arg(), "VersionTLS12");
    }

    #[test]
    fn malformed_observed_config_is_an_error() {
        let err = proxy_from_observed(Some(
            &json!({"targetcsiconfig": {"proxy": {"HTTP_PROXY": 1}}}),
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.observedConfig: field targetcsiconfig.proxy.HTTP_PROXY must be a string"
        );
        let err =
            proxy_from_observed(Some(&json!({"targetcsiconfig": {"proxy": "x"}}))).unwrap_err();
        assert_eq!(err.problem, "must be an object");
        let err = proxy_from_observed(Some(&json!({"targetcsiconfig": []}))).unwrap_err();
        assert_eq!(err.path, "targetcsiconfig");
        let err = serving_info_from_observed(Some(
            &json!({"targetcsiconfig": {"servingInfo": {"cipherSuites": [1]}}}),
        ))
        .unwrap_err();
        assert_eq!(err.path, "targetcsiconfig.servingInfo.cipherSuites");
    }

    #[test]
    fn every_profile_cipher_is_known_or_deliberately_dropped() {
        // Only DHE and the CBC-SHA384 / AES256-SHA256 suites lack a Go implementation.
        for c in OLD_CIPHERS.iter().chain(INTERMEDIATE_CIPHERS.iter()) {
            let dropped =
                c.starts_with("DHE-") || c.ends_with("AES256-SHA384") || *c == "AES256-SHA256";
            assert_eq!(openssl_to_iana_name(c).is_none(), dropped, "{c}");
        }
    }
}
