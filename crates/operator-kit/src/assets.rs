//! Embedded YAML assets and strict `${NAME}` replacement.
//!
//! Assets are YAML files compiled into the binary (`include_str!`), with `${NAME}`
//! placeholders (NAME = `[A-Z0-9_]+`, the names OpenShift's assets use, DESIGN §2). Rendering
//! replaces every placeholder in one pass and fails, naming the placeholder and the asset, if
//! one has no value: an unreplaced placeholder is never shipped as a literal (Go's
//! `strings.Replacer` leaves it). Kubernetes' own `$(ENV_VAR)` expansion, bare `$` and other
//! `${…}` forms (e.g. shell `${var:-x}` in a script) are left alone.
//!
//! The only YAML parser in the crate sits behind [`parse_documents`] / [`parse_values`] (and
//! [`to_yaml`] for output), so the serde-saphyr API is used in one place.
//!
//! Pure: the environment is passed in as a map, nothing here reads `std::env` or files.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::leader_timing::LeaderTiming;
use crate::loglevel::LogLevel;
use crate::observed_config::ServingInfo;

/// Image placeholders filled from the operator's environment variables of the same name.
pub const IMAGE_ENV_VARS: [&str; 14] = [
    "DRIVER_IMAGE",
    "PROVISIONER_IMAGE",
    "ATTACHER_IMAGE",
    "RESIZER_IMAGE",
    "SNAPSHOTTER_IMAGE",
    "LIVENESS_PROBE_IMAGE",
    "NODE_DRIVER_REGISTRAR_IMAGE",
    "KUBE_RBAC_PROXY_IMAGE",
    "TOOLS_IMAGE",
    "HYPERSHIFT_IMAGE",
    "NFS_DRIVER_IMAGE",
    "DRIVER_CONTROL_PLANE_IMAGE",
    "LIVENESS_PROBE_CONTROL_PLANE_IMAGE",
    "KUBE_RBAC_PROXY_CONTROL_PLANE_IMAGE",
];

/// Env var whose value becomes `${RELEASE_VERSION}`.
pub const RELEASE_VERSION_ENV: &str = "OPERATOR_IMAGE_VERSION";

/// Every placeholder a driver operator's assets may hold other than an image
/// ([`IMAGE_ENV_VARS`]); [`AssetSet::inventory`] fails on anything else of the form `${…}`,
/// and the replacer fails on a placeholder it has no value for rather than ship it.
pub const PLACEHOLDERS: &[&str] = &[
    "NAMESPACE",
    "NODE_NAMESPACE",
    "CLUSTER_ID",
    "LOG_LEVEL",
    "TLS_CIPHER_SUITES",
    "TLS_MIN_VERSION",
    "LEADER_ELECTION_LEASE_DURATION",
    "LEADER_ELECTION_RENEW_DEADLINE",
    "LEADER_ELECTION_RETRY_PERIOD",
    "RELEASE_VERSION",
];

/// Whether `name` is a placeholder this kit knows how to fill ([`PLACEHOLDERS`] or an image).
pub fn is_known_placeholder(name: &str) -> bool {
    PLACEHOLDERS.contains(&name) || IMAGE_ENV_VARS.contains(&name)
}

/// A driver's assets, as its lists in render order (static lists, then its single objects).
#[derive(Debug, Clone, Copy)]
pub struct AssetSet(pub &'static [&'static [Asset]]);

impl AssetSet {
    /// Every asset once, in the order `render` prints them.
    pub fn all(&self) -> impl Iterator<Item = &'static Asset> + use<> {
        self.0.iter().flat_map(|list| list.iter())
    }
    /// The images the assets use (the environment variables the operator reads them from), in
    /// [`IMAGE_ENV_VARS`] order; derived from the assets so it cannot disagree with them.
    pub fn image_placeholders(&self) -> Vec<&'static str> {
        image_placeholders(self.all())
    }
    /// The asset with this file name, if any.
    pub fn get(&self, name: &str) -> Option<&'static Asset> {
        self.all().find(|a| a.name == name)
    }

    /// The kit's contract for a driver's assets, checked by rendering each with `repl`: the
    /// object every asset declares, in render order. Fails on the first asset that uses a
    /// placeholder the kit does not know, does not render or parse, does not hold exactly one
    /// object, lacks `apiVersion`, `kind` or `metadata.name`, has a kind
    /// [`crate::kinds::api_resource`] does not know (the apply engine could not write it), sets
    /// a namespace its kind's scope contradicts, is listed twice, or declares an object another
    /// asset of the set declares too (two writers of one object).
    ///
    /// A driver's tests compare the result with its literal inventory (file, kind, name,
    /// namespace: the anchors' list), so a renamed or reordered object shows up as a diff.
    pub fn inventory(&self, repl: &Replacements) -> Result<Vec<Declared>, AssetError> {
        let mut out: Vec<Declared> = Vec::new();
        for asset in self.all() {
            if out.iter().any(|d| d.file == asset.name) {
                return Err(AssetError::ListedTwice {
                    asset: asset.name.to_owned(),
                });
            }
            let declared = asset.declared(repl)?;
            if let Some(first) = out.iter().find(|d| {
                d.kind == declared.kind
                    && d.name == declared.name
                    && d.namespace == declared.namespace
            }) {
                return Err(AssetError::SameObject {
                    asset: asset.name.to_owned(),
                    other: first.file.to_owned(),
                    object: declared.object(),
                });
            }
            out.push(declared);
        }
        Ok(out)
    }
}

/// The object one asset declares: a row of a driver's inventory ([`AssetSet::inventory`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The asset's file name (`controller.yaml`).
    pub file: &'static str,
    /// The object's `kind`.
    pub kind: String,
    /// Its `metadata.name`.
    pub name: String,
    /// Its `metadata.namespace`; `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
}

impl Declared {
    /// `Kind namespace/name` (`Kind name` when cluster-scoped), for messages.
    pub fn object(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// A row written out literally as `(file, kind, name, namespace)`, as drivers' inventory tables
/// are, so a table compares with [`AssetSet::inventory`]'s answer as a whole.
impl PartialEq<(&str, &str, &str, Option<&str>)> for Declared {
    fn eq(&self, (file, kind, name, namespace): &(&str, &str, &str, Option<&str>)) -> bool {
        self.file == *file
            && self.kind == *kind
            && self.name == *name
            && self.namespace.as_deref() == *namespace
    }
}

/// The images `assets` use, in [`IMAGE_ENV_VARS`] order: what a driver reads from its
/// environment, derived from its assets so the list cannot fall out of step with them.
pub fn image_placeholders<'a>(assets: impl IntoIterator<Item = &'a Asset>) -> Vec<&'static str> {
    let used: std::collections::BTreeSet<String> = assets
        .into_iter()
        .flat_map(|a| placeholders(a.content))
        .collect();
    IMAGE_ENV_VARS
        .into_iter()
        .filter(|name| used.contains(*name))
        .collect()
}

/// An asset compiled into the binary, holding one object (or, for the CSO's RBAC lists,
/// several documents). Declare one with [`asset!`](crate::asset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    /// File name, used in error messages and by `render` (e.g. `controller.yaml`).
    pub name: &'static str,
    /// The YAML template, placeholders not yet replaced.
    pub content: &'static str,
    /// The CustomResourceDefinition that must be served before this object can be applied,
    /// for kinds that are not built in. A step skips such an asset while the CRD is absent
    /// instead of failing (the ServiceMonitor on clusters without monitoring, the
    /// VolumeSnapshotClass before the snapshot CRDs exist).
    pub requires_crd: Option<&'static str>,
}

/// Embeds `assets/<file>` of the calling crate (the path is relative to the calling source
/// file, as `include_str!`'s is) as an [`Asset`]: `asset!("controller.yaml")`, or
/// `asset!("servicemonitor.yaml", crd = SERVICE_MONITOR_CRD)` for an object whose kind a CRD
/// serves.
#[macro_export]
macro_rules! asset {
    ($file:literal) => {
        $crate::assets::Asset {
            name: $file,
            content: include_str!(concat!("../assets/", $file)),
            requires_crd: None,
        }
    };
    ($file:literal, crd = $crd:expr) => {
        $crate::assets::Asset {
            name: $file,
            content: include_str!(concat!("../assets/", $file)),
            requires_crd: Some($crd),
        }
    };
}

impl Asset {
    /// [`render`] this asset.
    pub fn render(&self, repl: &Replacements) -> Result<String, AssetError> {
        render(self.name, self.content, repl)
    }

    /// Renders and parses the single object in this asset.
    pub fn render_object<T: DeserializeOwned>(&self, repl: &Replacements) -> Result<T, AssetError> {
        parse_single(self.name, &self.render(repl)?)
    }

    /// Checks this asset against the kit's contract ([`AssetSet::inventory`], but for the
    /// checks that need the whole set) and names the object it declares.
    pub fn declared(&self, repl: &Replacements) -> Result<Declared, AssetError> {
        let unknown = self.unknown_placeholders();
        if !unknown.is_empty() {
            return Err(AssetError::UnknownPlaceholders {
                asset: self.name.to_owned(),
                names: unknown,
            });
        }
        let object: serde_json::Value = self.render_object(repl)?;
        let field = |path: &[&str], field: &'static str| {
            path.iter()
                .try_fold(&object, |v, key| v.get(key))
                .and_then(serde_json::Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| AssetError::MissingField {
                    asset: self.name.to_owned(),
                    field,
                })
        };
        let api_version = field(&["apiVersion"], "apiVersion")?;
        let kind = field(&["kind"], "kind")?;
        let name = field(&["metadata", "name"], "metadata.name")?;
        let namespace = match object.get("metadata").and_then(|m| m.get("namespace")) {
            None | Some(serde_json::Value::Null) => None,
            Some(_) => Some(field(&["metadata", "namespace"], "metadata.namespace")?),
        };
        if crate::kinds::api_resource(&api_version, &kind).is_err() {
            return Err(AssetError::UnknownKind {
                asset: self.name.to_owned(),
                api_version,
                kind,
            });
        }
        let namespaced = crate::kinds::is_namespaced(&api_version, &kind);
        if namespaced != namespace.is_some() {
            return Err(AssetError::Scope {
                asset: self.name.to_owned(),
                kind,
                namespaced,
            });
        }
        Ok(Declared {
            file: self.name,
            kind,
            name,
            namespace,
        })
    }

    /// The placeholders of this asset that the kit does not know (a typo, or a name a driver
    /// made up): each would fail every render, so [`AssetSet::inventory`] fails on any.
    pub fn unknown_placeholders(&self) -> Vec<String> {
        placeholders(self.content)
            .into_iter()
            .filter(|name| !is_known_placeholder(name))
            .collect()
    }
}

/// Errors from rendering or parsing assets. Messages name the asset and say how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum AssetError {
    /// A `${NAME}` placeholder has no value.
    #[error("asset {asset}: placeholder ${{{name}}} has no value{hint}")]
    Unreplaced {
        /// Asset file name.
        asset: String,
        /// Placeholder name, without `${}`.
        name: String,
        /// How to provide it.
        hint: &'static str,
    },
    /// The rendered YAML does not parse.
    #[error("asset {asset}: invalid YAML: {message}")]
    Yaml {
        /// Asset file name.
        asset: String,
        /// Parser message (with line and column).
        message: String,
    },
    /// A document does not match the expected type.
    #[error("asset {asset}, document {index}: {message}")]
    Shape {
        /// Asset file name.
        asset: String,
        /// Zero-based index among the non-empty documents.
        index: usize,
        /// What does not match.
        message: String,
    },
    /// A single object was expected.
    #[error("asset {asset}: expected exactly one YAML document, found {found}")]
    DocumentCount {
        /// Asset file name.
        asset: String,
        /// Number of non-empty documents.
        found: usize,
    },
    /// The asset uses placeholders the kit has no value for, whatever the cluster.
    #[error(
        "asset {asset}: placeholders {} are not ones operator-kit fills: fix their spelling, or \
         add the name to operator_kit::assets::PLACEHOLDERS with a value in Replacements",
        dollar_names(.names)
    )]
    UnknownPlaceholders {
        /// Asset file name.
        asset: String,
        /// The unknown names, without `${}`, in order of first appearance.
        names: Vec<String>,
    },
    /// The object lacks a field every asset must set (or it is not a non-empty string).
    #[error(
        "asset {asset}: the object has no {field}: every asset must set apiVersion, kind and \
         metadata.name as non-empty strings"
    )]
    MissingField {
        /// Asset file name.
        asset: String,
        /// The field's path (`metadata.name`).
        field: &'static str,
    },
    /// The object's kind is not in the kit's kinds table, so the apply engine cannot write it.
    #[error(
        "asset {asset}: kind {kind} ({api_version}) is not one operator-kit manages: fix the \
         apiVersion or kind, or add the kind to operator_kit::kinds' table"
    )]
    UnknownKind {
        /// Asset file name.
        asset: String,
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// A namespaced kind without `metadata.namespace`, or a cluster-scoped one with it.
    #[error(
        "asset {asset}: {kind} is {}",
        scope_fix(*.namespaced)
    )]
    Scope {
        /// Asset file name.
        asset: String,
        /// The object's kind.
        kind: String,
        /// Whether the kind is namespaced.
        namespaced: bool,
    },
    /// The same file appears twice in a driver's asset set.
    #[error("asset {asset} is listed twice in the driver's asset set: keep it in one list")]
    ListedTwice {
        /// Asset file name.
        asset: String,
    },
    /// Two assets of a set declare the same object, which would then have two writers.
    #[error(
        "asset {asset} declares {object}, which asset {other} declares already: rename one or \
         drop one of the files"
    )]
    SameObject {
        /// Asset file name (the later one).
        asset: String,
        /// The earlier asset declaring the object.
        other: String,
        /// `Kind namespace/name`.
        object: String,
    },
    /// An object could not be written as YAML.
    #[error("cannot write YAML: {0}")]
    Serialize(String),
}

/// `${A}, ${B}` for an error message.
fn dollar_names(names: &[String]) -> String {
    let spelled: Vec<String> = names.iter().map(|n| format!("${{{n}}}")).collect();
    spelled.join(", ")
}

/// What is wrong with an object's namespace, and the fix, by its kind's scope.
fn scope_fix(namespaced: bool) -> &'static str {
    if namespaced {
        "namespaced but the object sets no metadata.namespace: set it (${NAMESPACE} for the \
         driver's namespace)"
    } else {
        "cluster-scoped but the object sets metadata.namespace: remove it"
    }
}

/// Placeholder values, by name without `${}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replacements {
    values: BTreeMap<String, String>,
}

impl Replacements {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `${name}` to `value` (replacing an earlier value).
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.values.insert(name.into(), value.into());
        self
    }

    /// Builder form of [`Replacements::set`].
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set(name, value);
        self
    }

    /// The value of `${name}`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Adds all of `other`'s values, which win over ours.
    pub fn extend(&mut self, other: &Replacements) -> &mut Self {
        for (k, v) in &other.values {
            self.values.insert(k.clone(), v.clone());
        }
        self
    }

    /// All values, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Image placeholders from `env` (the operator's environment, passed in): each of
    /// [`IMAGE_ENV_VARS`] that is set and non-empty, plus `${RELEASE_VERSION}` from
    /// `OPERATOR_IMAGE_VERSION`. Unset images stay unset, so an asset that uses one fails to
    /// render with a message naming the variable.
    pub fn images_from_env(mut self, env: &BTreeMap<String, String>) -> Self {
        for name in IMAGE_ENV_VARS {
            if let Some(v) = env.get(name).filter(|v| !v.is_empty()) {
                self.set(name, v.clone());
            }
        }
        if let Some(v) = env.get(RELEASE_VERSION_ENV).filter(|v| !v.is_empty()) {
            self.set("RELEASE_VERSION", v.clone());
        }
        self
    }

    /// A value for every placeholder the kit knows, as a real run on a standalone cluster in
    /// `namespace` would fill them (images `quay.io/test/<name>:latest`), so drivers' asset
    /// tests render their assets the way the operator does without spelling the list out.
    pub fn examples(namespace: &str) -> Self {
        let mut repl = Self::new()
            .namespaces(namespace, namespace)
            .cluster_id("mycluster-x7k2p")
            .log_level(LogLevel::default())
            .leader_election(&LeaderTiming::DEFAULT)
            .with(
                "TLS_CIPHER_SUITES",
                "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
            )
            .with("TLS_MIN_VERSION", "VersionTLS12")
            .with("RELEASE_VERSION", "0.0.1-snapshot");
        for image in IMAGE_ENV_VARS {
            repl.set(
                image,
                format!("quay.io/test/{}:latest", image.to_lowercase()),
            );
        }
        repl
    }

    /// `${NAMESPACE}` (control-plane namespace) and `${NODE_NAMESPACE}` (guest namespace; the
    /// same one on a standalone cluster).
    pub fn namespaces(self, namespace: &str, node_namespace: &str) -> Self {
        self.with("NAMESPACE", namespace)
            .with("NODE_NAMESPACE", node_namespace)
    }

    /// `${CLUSTER_ID}`: `Infrastructure.status.infrastructureName`.
    pub fn cluster_id(self, cluster_id: &str) -> Self {
        self.with("CLUSTER_ID", cluster_id)
    }

    /// `${LOG_LEVEL}`: the klog verbosity of the CR's `spec.logLevel`.
    pub fn log_level(self, level: LogLevel) -> Self {
        self.with("LOG_LEVEL", level.verbosity().to_string())
    }

    /// `${LEADER_ELECTION_LEASE_DURATION}`, `${LEADER_ELECTION_RENEW_DEADLINE}` and
    /// `${LEADER_ELECTION_RETRY_PERIOD}` as Go formats them (`137s`). OpenShift passes
    /// [`LeaderTiming::DEFAULT`] here on every topology.
    pub fn leader_election(self, timing: &LeaderTiming) -> Self {
        let [lease, renew, retry] = timing.as_go_seconds();
        self.with("LEADER_ELECTION_LEASE_DURATION", lease)
            .with("LEADER_ELECTION_RENEW_DEADLINE", renew)
            .with("LEADER_ELECTION_RETRY_PERIOD", retry)
    }

    /// `${TLS_CIPHER_SUITES}` (comma-joined IANA names) and `${TLS_MIN_VERSION}`. Take `serving`
    /// from [`crate::observed_config::serving_info_from_observed`], which yields the
    /// Intermediate profile before the config observer has run (anchors §8.5 fixed).
    pub fn tls(self, serving: &ServingInfo) -> Self {
        let min = serving.min_tls_version_arg().to_owned();
        self.with("TLS_CIPHER_SUITES", serving.cipher_suites_arg())
            .with("TLS_MIN_VERSION", min)
    }
}

const fn is_name_byte(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'
}

/// Finds the next `${NAME}` at or after `from`: returns (start of `$`, name range end) where the
/// name spans `start + 2 .. end` and `}` is at `end`. `const`, so the shared CSI assets
/// ([`crate::csi::shared`]) are filled at compile time with the same grammar.
pub(crate) const fn next_placeholder(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while i + 1 < bytes.len() {
        if bytes[i] == b'$' && bytes[i + 1] == b'{' {
            let name_start = i + 2;
            let mut j = name_start;
            while j < bytes.len() && is_name_byte(bytes[j]) {
                j += 1;
            }
            if j > name_start && j < bytes.len() && bytes[j] == b'}' {
                return Some((i, j));
            }
        }
        i += 1;
    }
    None
}

/// Every distinct `${NAME}` placeholder in `template`, in order of first appearance.
pub fn placeholders(template: &str) -> Vec<String> {
    let bytes = template.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut pos = 0;
    while let Some((start, end)) = next_placeholder(bytes, pos) {
        if let Some(name) = template.get(start + 2..end)
            && !out.iter().any(|n| n == name)
        {
            out.push(name.to_owned());
        }
        pos = end + 1;
    }
    out
}

/// Replaces every `${NAME}` in `template` with its value from `repl`, in one pass (values are
/// not scanned again). `asset` names the template in errors.
///
/// Fails on the first placeholder without a value. `$(VAR)`, bare `$` and `${…}` that is not
/// `${` + `[A-Z0-9_]+` + `}` are copied unchanged.
pub fn render(asset: &str, template: &str, repl: &Replacements) -> Result<String, AssetError> {
    let bytes = template.as_bytes();
    let mut out = String::with_capacity(template.len() + 256);
    let mut pos = 0;
    while let Some((start, end)) = next_placeholder(bytes, pos) {
        // `$`, `{`, `}` and the name are ASCII, so these are char boundaries.
        let name = template.get(start + 2..end).unwrap_or_default();
        let Some(value) = repl.get(name) else {
            return Err(AssetError::Unreplaced {
                asset: asset.to_owned(),
                name: name.to_owned(),
                hint: hint_for(name),
            });
        };
        out.push_str(template.get(pos..start).unwrap_or_default());
        out.push_str(value);
        pos = end + 1;
    }
    out.push_str(template.get(pos..).unwrap_or_default());
    Ok(out)
}

fn hint_for(name: &str) -> &'static str {
    if IMAGE_ENV_VARS.contains(&name) {
        " (set the operator's environment variable of the same name to the image reference)"
    } else if name == "RELEASE_VERSION" {
        " (set the operator's environment variable OPERATOR_IMAGE_VERSION)"
    } else if name.starts_with("ASSET_") {
        " (a shared CSI asset's prefix: embed the file with operator_kit::shared_asset! and the \
         driver's Prefixes, which fill it at compile time)"
    } else {
        " (the operator provides no value for it: check the placeholder's spelling in the asset)"
    }
}

/// The YAML reader's options, in one place: YAML 1.2 core booleans (only `true`/`false`, so
/// `on`, `yes`, `no` stay strings) and numbers with leading zeros kept as strings (`0052`).
/// Quoted scalars are always strings.
fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options
}

/// Parses a (rendered) multi-document YAML string into JSON values, skipping empty documents
/// (a leading or trailing `---`, a document of comments only).
pub fn parse_values(asset: &str, yaml: &str) -> Result<Vec<serde_json::Value>, AssetError> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple_with_options(yaml, yaml_options()).map_err(|e| {
            AssetError::Yaml {
                asset: asset.to_owned(),
                message: e.to_string(),
            }
        })?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Parses a (rendered) multi-document YAML string into typed objects (e.g. k8s-openapi types).
pub fn parse_documents<T: DeserializeOwned>(asset: &str, yaml: &str) -> Result<Vec<T>, AssetError> {
    parse_values(asset, yaml)?
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            let what = describe(&value);
            serde_json::from_value(value).map_err(|e| AssetError::Shape {
                asset: asset.to_owned(),
                index,
                message: format!("{what}: {e}"),
            })
        })
        .collect()
}

/// Parses YAML holding exactly one document.
pub fn parse_single<T: DeserializeOwned>(asset: &str, yaml: &str) -> Result<T, AssetError> {
    let mut docs = parse_documents::<T>(asset, yaml)?;
    match docs.len() {
        1 => docs.pop().ok_or(AssetError::DocumentCount {
            asset: asset.to_owned(),
            found: 0,
        }),
        found => Err(AssetError::DocumentCount {
            asset: asset.to_owned(),
            found,
        }),
    }
}

/// `kind namespace/name` of a parsed document, for error messages.
fn describe(value: &serde_json::Value) -> String {
    let kind = value
        .get("kind")
        .and_then(|v| v.as_str())
        .unwrap_or("object");
    let meta = value.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(|v| v.as_str())
        .unwrap_or("<unnamed>");
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(|v| v.as_str())
    {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Writes an object as YAML (for `render` output and golden files).
pub fn to_yaml<T: Serialize>(value: &T) -> Result<String, AssetError> {
    serde_saphyr::to_string(value).map_err(|e| AssetError::Serialize(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn repl() -> Replacements {
        Replacements::new()
            .with("DRIVER_IMAGE", "quay.io/driver:1")
            .with("LOG_LEVEL", "2")
    }

    #[test]
    fn replaces_all_occurrences_and_keeps_env_expansion() {
        let t = "image: ${DRIVER_IMAGE}\nargs: [--v=${LOG_LEVEL}, --endpoint=$(CSI_ENDPOINT), cost $5, ${DRIVER_IMAGE}]\nsh: ${home:-x} ${ ALSO} $${}";
        let out = render("a.yaml", t, &repl()).unwrap();
        assert_eq!(
            out,
            "image: quay.io/driver:1\nargs: [--v=2, --endpoint=$(CSI_ENDPOINT), cost $5, quay.io/driver:1]\nsh: ${home:-x} ${ ALSO} $${}"
        );
    }

    #[test]
    fn unreplaced_placeholder_is_an_error_naming_it_and_the_asset() {
        let err = render(
            "controller.yaml",
            "a: ${DRIVER_IMAGE}\nb: ${PROVISIONER_IMAGE}\n",
            &repl(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("controller.yaml"), "{msg}");
        assert!(msg.contains("${PROVISIONER_IMAGE}"), "{msg}");
        assert!(msg.contains("environment variable"), "{msg}");
        let err = render("x.yaml", "${TYPO_NAME}", &repl()).unwrap_err();
        assert!(err.to_string().contains("spelling"), "{err}");
    }

    #[test]
    fn values_are_not_rescanned() {
        let r = Replacements::new().with("A", "${B}");
        assert_eq!(render("x", "${A}", &r).unwrap(), "${B}");
    }

    #[test]
    fn unicode_and_edge_positions() {
        let r = Replacements::new().with("X", "é");
        assert_eq!(render("x", "ü${X}ü${X}", &r).unwrap(), "üéüé");
        assert_eq!(render("x", "$", &r).unwrap(), "$");
        assert_eq!(render("x", "${", &r).unwrap(), "${");
        assert_eq!(render("x", "${X", &r).unwrap(), "${X");
        assert_eq!(placeholders("${A} ${B} ${A} $(C) ${d}"), ["A", "B"]);
    }

    #[test]
    fn standard_replacements() {
        let env = BTreeMap::from([
            ("DRIVER_IMAGE".to_owned(), "d".to_owned()),
            ("ATTACHER_IMAGE".to_owned(), String::new()),
            ("OPERATOR_IMAGE_VERSION".to_owned(), "4.20.0".to_owned()),
            ("UNRELATED".to_owned(), "u".to_owned()),
        ]);
        let r = Replacements::new()
            .images_from_env(&env)
            .namespaces("ns", "node-ns")
            .cluster_id("mycluster-abcde")
            .log_level(LogLevel::Debug)
            .leader_election(&LeaderTiming::DEFAULT)
            .tls(&ServingInfo::intermediate());
        assert_eq!(r.get("DRIVER_IMAGE"), Some("d"));
        assert_eq!(r.get("ATTACHER_IMAGE"), None);
        assert_eq!(r.get("UNRELATED"), None);
        assert_eq!(r.get("RELEASE_VERSION"), Some("4.20.0"));
        assert_eq!(r.get("NAMESPACE"), Some("ns"));
        assert_eq!(r.get("NODE_NAMESPACE"), Some("node-ns"));
        assert_eq!(r.get("CLUSTER_ID"), Some("mycluster-abcde"));
        assert_eq!(r.get("LOG_LEVEL"), Some("4"));
        assert_eq!(r.get("LEADER_ELECTION_LEASE_DURATION"), Some("137s"));
        assert_eq!(r.get("LEADER_ELECTION_RENEW_DEADLINE"), Some("107s"));
        assert_eq!(r.get("LEADER_ELECTION_RETRY_PERIOD"), Some("26s"));
        assert_eq!(r.get("TLS_MIN_VERSION"), Some("VersionTLS12"));
        assert!(
            r.get("TLS_CIPHER_SUITES")
                .unwrap()
                .starts_with("TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,")
        );
        let mut merged = Replacements::new()
            .with("NAMESPACE", "old")
            .with("KEEP", "k");
        merged.extend(&r);
        assert_eq!(merged.get("NAMESPACE"), Some("ns"));
        assert_eq!(merged.get("KEEP"), Some("k"));
        assert!(merged.iter().count() > r.iter().count());
    }

    const MULTI: &str = r#"
---
# leading empty document
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: ns
  annotations:
    quoted-true: "true"
    bare-on: on
    bare-yes: yes
    quoted-number: "0052"
    bare-number: 0052
data:
  enable_topology: "true"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dep
spec:
  replicas: 2
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
      - name: c
        image: img
        args: ["--endpoint=$(CSI_ENDPOINT)"]
        ports:
        - {name: healthz, containerPort: 10301}
        resources:
          requests: {cpu: 10m, memory: 50Mi}
---
"#;

    #[test]
    fn parses_multi_document_yaml_and_skips_empty_documents() {
        let values = parse_values("multi.yaml", MULTI).unwrap();
        assert_eq!(values.len(), 2);
        let ann = &values[0]["metadata"]["annotations"];
        // YAML 1.1 booleans and leading-zero numbers must not sneak in.
        assert_eq!(ann["quoted-true"], "true");
        assert_eq!(ann["bare-on"], "on");
        assert_eq!(ann["bare-yes"], "yes");
        assert_eq!(ann["quoted-number"], "0052");
        assert_eq!(ann["bare-number"], "0052");
        assert_eq!(values[0]["data"]["enable_topology"], "true");
    }

    #[test]
    fn parses_typed_objects() {
        let docs: Vec<serde_json::Value> = parse_documents("multi.yaml", MULTI).unwrap();
        let cm: ConfigMap = serde_json::from_value(docs[0].clone()).unwrap();
        assert_eq!(cm.metadata.annotations.unwrap()["quoted-true"], "true");
        let dep: Deployment = serde_json::from_value(docs[1].clone()).unwrap();
        let spec = dep.spec.unwrap();
        assert_eq!(spec.replicas, Some(2));
        let c = &spec.template.spec.unwrap().containers[0];
        assert_eq!(c.args.as_ref().unwrap()[0], "--endpoint=$(CSI_ENDPOINT)");
        assert_eq!(c.ports.as_ref().unwrap()[0].container_port, 10301);
    }

    #[test]
    fn parse_errors_name_the_asset_and_document() {
        let err = parse_values("bad.yaml", "a: [unclosed\n").unwrap_err();
        assert!(matches!(err, AssetError::Yaml { .. }));
        assert!(
            err.to_string().starts_with("asset bad.yaml: invalid YAML"),
            "{err}"
        );
        let err = parse_documents::<Deployment>(
            "dep.yaml",
            "kind: Deployment\nmetadata: {name: d, namespace: n}\nspec: {replicas: many}\n",
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("dep.yaml") && msg.contains("Deployment n/d"),
            "{msg}"
        );
        let err = parse_single::<ConfigMap>("two.yaml", "kind: ConfigMap\n---\nkind: ConfigMap\n")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "asset two.yaml: expected exactly one YAML document, found 2"
        );
        assert!(parse_single::<ConfigMap>("none.yaml", "# nothing\n").is_err());
    }

    #[test]
    fn the_vocabulary_names_unknown_placeholders_and_the_images_used() {
        let asset = Asset {
            name: "x.yaml",
            content: "a: ${NAMESPACE}\nb: ${DRIVER_IMAGE}\nc: ${NAMESAPCE}\nd: ${ATTACHER_IMAGE}\n",
            requires_crd: None,
        };
        assert_eq!(asset.unknown_placeholders(), ["NAMESAPCE"]);
        // IMAGE_ENV_VARS order, not the asset's.
        assert_eq!(
            image_placeholders([&asset]),
            ["DRIVER_IMAGE", "ATTACHER_IMAGE"]
        );
        let examples = Replacements::examples("ns");
        for name in PLACEHOLDERS.iter().chain(IMAGE_ENV_VARS.iter()) {
            assert!(examples.get(name).is_some(), "no example for {name}");
        }
    }

    #[test]
    fn asset_render_object() {
        let asset = Asset {
            name: "cm.yaml",
            content: "kind: ConfigMap\nmetadata:\n  name: x\n  namespace: ${NAMESPACE}\n",
            requires_crd: None,
        };
        let cm: ConfigMap = asset
            .render_object(&Replacements::new().namespaces("ns", "ns"))
            .unwrap();
        assert_eq!(cm.metadata.namespace.as_deref(), Some("ns"));
        assert!(asset.render(&Replacements::new()).is_err());
    }

    const fn yaml(name: &'static str, content: &'static str) -> Asset {
        Asset {
            name,
            content,
            requires_crd: None,
        }
    }

    const NAMESPACE: Asset = yaml(
        "namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NAMESPACE}\n",
    );
    const CONFIG_MAP: Asset = yaml(
        "cm.yaml",
        "# a comment first\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ${NAMESPACE}\n",
    );
    const ROLE: Asset = yaml(
        "role.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: []\n",
    );
    const DEPLOYMENT: Asset = yaml(
        "controller.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ${NAMESPACE}}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: '${DRIVER_IMAGE}'}]\n",
    );
    const GOOD: AssetSet = AssetSet(&[&[NAMESPACE, CONFIG_MAP, ROLE], &[DEPLOYMENT]]);

    fn declared(content: &'static str) -> Result<Declared, AssetError> {
        yaml("x.yaml", content).declared(&Replacements::examples("ns"))
    }

    #[test]
    fn inventory_names_every_object_in_render_order() {
        let inventory = GOOD.inventory(&Replacements::examples("ns")).unwrap();
        let expected: &[(&str, &str, &str, Option<&str>)] = &[
            ("namespace.yaml", "Namespace", "ns", None),
            ("cm.yaml", "ConfigMap", "cm", Some("ns")),
            ("role.yaml", "ClusterRole", "r", None),
            ("controller.yaml", "Deployment", "d", Some("ns")),
        ];
        assert_eq!(inventory, expected);
        // The comparison sees order, names and namespaces.
        let mut swapped = expected.to_vec();
        swapped.swap(0, 1);
        assert_ne!(inventory, swapped);
        assert_ne!(inventory[1], ("cm.yaml", "ConfigMap", "cm", None));
        assert_ne!(inventory[1], ("cm.yaml", "ConfigMap", "cm", Some("other")));
        assert_ne!(inventory[2], ("role.yaml", "Role", "r", None));
        assert_eq!(inventory[3].object(), "Deployment ns/d");
        assert_eq!(inventory[2].object(), "ClusterRole r");
    }

    #[test]
    fn inventory_fails_on_an_unknown_placeholder() {
        let err = declared("apiVersion: v1\nkind: Namespace\nmetadata: {name: '${NAMESAPCE}-${CLUSTER_ID}-${DRIVR_IMAGE}'}\n")
            .unwrap_err();
        assert!(
            matches!(&err, AssetError::UnknownPlaceholders { asset, names }
                if asset == "x.yaml" && names == &["NAMESAPCE", "DRIVR_IMAGE"]),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("asset x.yaml: placeholders ${NAMESAPCE}, ${DRIVR_IMAGE} are not")
                && msg.contains("spelling"),
            "{msg}"
        );
        // Unknown even when the caller happens to have a value for it: no cluster would.
        let err = yaml(
            "x.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: '${MINE}'}\n",
        )
        .declared(&Replacements::examples("ns").with("MINE", "m"))
        .unwrap_err();
        assert!(
            matches!(err, AssetError::UnknownPlaceholders { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn inventory_fails_on_an_asset_that_does_not_render_or_parse() {
        assert!(GOOD.inventory(&Replacements::examples("ns")).is_ok());
        // Known placeholders, but no image values: the Deployment does not render.
        let err = GOOD
            .inventory(&Replacements::new().namespaces("ns", "ns"))
            .unwrap_err();
        assert!(
            matches!(&err, AssetError::Unreplaced { asset, name, .. }
                if asset == "controller.yaml" && name == "DRIVER_IMAGE"),
            "{err:?}"
        );
        let err = declared("apiVersion: v1\nkind: [unclosed\n").unwrap_err();
        assert!(matches!(err, AssetError::Yaml { .. }), "{err:?}");
    }

    #[test]
    fn inventory_fails_unless_an_asset_holds_exactly_one_object() {
        let two = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n";
        let err = declared(two).unwrap_err();
        assert!(
            matches!(err, AssetError::DocumentCount { found: 2, .. }),
            "{err:?}"
        );
        let err = declared("# only a comment\n---\n").unwrap_err();
        assert!(
            matches!(err, AssetError::DocumentCount { found: 0, .. }),
            "{err:?}"
        );
        assert!(declared(two.split("---").next().unwrap_or_default()).is_ok());
    }

    #[test]
    fn inventory_fails_on_a_missing_api_version_kind_or_name() {
        for (content, missing) in [
            ("kind: Namespace\nmetadata: {name: a}\n", "apiVersion"),
            (
                "apiVersion: ''\nkind: Namespace\nmetadata: {name: a}\n",
                "apiVersion",
            ),
            ("apiVersion: v1\nmetadata: {name: a}\n", "kind"),
            ("apiVersion: v1\nkind: Namespace\n", "metadata.name"),
            (
                "apiVersion: v1\nkind: Namespace\nmetadata: {generateName: a-}\n",
                "metadata.name",
            ),
            (
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: 5}\n",
                "metadata.name",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: [x]}\n",
                "metadata.namespace",
            ),
            ("just a string\n", "apiVersion"),
        ] {
            let err = declared(content).unwrap_err();
            assert!(
                matches!(&err, AssetError::MissingField { asset, field } if asset == "x.yaml" && *field == missing),
                "{content}: {err:?}"
            );
            assert!(
                err.to_string().contains(&format!("has no {missing}:")),
                "{err}"
            );
        }
        assert!(declared("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").is_ok());
    }

    #[test]
    fn inventory_fails_on_a_kind_the_kit_cannot_write() {
        for (api_version, kind) in [("example.com/v1", "Widget"), ("apps/v2", "Deployment")] {
            let content = format!(
                "apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: w, namespace: ns}}\n"
            );
            let err = yaml("w.yaml", content.leak())
                .declared(&Replacements::new())
                .unwrap_err();
            assert!(
                matches!(&err, AssetError::UnknownKind { asset, api_version: v, kind: k }
                    if asset == "w.yaml" && v == api_version && k == kind),
                "{err:?}"
            );
            assert!(err.to_string().contains("operator_kit::kinds"), "{err}");
        }
    }

    #[test]
    fn inventory_fails_when_the_namespace_contradicts_the_scope() {
        let err = declared("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n").unwrap_err();
        assert!(
            matches!(&err, AssetError::Scope { kind, namespaced: true, .. } if kind == "ConfigMap"),
            "{err:?}"
        );
        assert!(err.to_string().contains("set it"), "{err}");
        let err = declared(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a, namespace: ns}\n",
        )
        .unwrap_err();
        assert!(
            matches!(
                &err,
                AssetError::Scope {
                    namespaced: false,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("remove it"), "{err}");
        // `namespace: null` is no namespace.
        assert!(
            declared("apiVersion: v1\nkind: Namespace\nmetadata: {name: a, namespace: null}\n")
                .is_ok()
        );
    }

    #[test]
    fn inventory_fails_on_an_asset_listed_twice_or_an_object_declared_twice() {
        const TWICE: AssetSet = AssetSet(&[&[NAMESPACE, CONFIG_MAP], &[ROLE, CONFIG_MAP]]);
        let err = TWICE.inventory(&Replacements::examples("ns")).unwrap_err();
        assert!(
            matches!(&err, AssetError::ListedTwice { asset } if asset == "cm.yaml"),
            "{err:?}"
        );
        const OTHER_FILE: Asset = yaml(
            "cm2.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: ns}\n",
        );
        const SAME: AssetSet = AssetSet(&[&[CONFIG_MAP, ROLE, OTHER_FILE]]);
        let err = SAME.inventory(&Replacements::examples("ns")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "asset cm2.yaml declares ConfigMap ns/cm, which asset cm.yaml declares already: \
             rename one or drop one of the files"
        );
        // The same name in another namespace, or of another kind, is another object.
        let elsewhere = SAME.inventory(&Replacements::examples("other"));
        assert!(elsewhere.is_ok(), "{elsewhere:?}");
    }

    #[test]
    fn yaml_output_round_trips_string_booleans() {
        let v = serde_json::json!({"metadata": {"annotations": {"a": "true", "b": "on", "c": "0052"}}, "n": 3});
        let yaml = to_yaml(&v).unwrap();
        let back = parse_values("out", &yaml).unwrap();
        assert_eq!(back, vec![v]);
    }
}
