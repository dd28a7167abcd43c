//! The driver's `cloud.conf` and the `cloud-conf` ConfigMap (anchors §4.5), as pure functions:
//!
//! * [`select_source`]: which user ConfigMap the configuration comes from
//!   (`openshift-config/cinder-csi-config`, else the ConfigMap named by the Infrastructure's
//!   `spec.cloudConfig`), and the user's `enable_topology` override from the same ConfigMap;
//! * [`select_ca`]: the custom CA bundle, from the synced `cloud-provider-config` ConfigMap, else
//!   the credentials Secret's `cacert` key, else none (not an error; anchors §8.11 fixed);
//! * [`generate_cloud_conf`]: keeps the user's `[BlockStorage]` section (minus the legacy
//!   `trust-device-path`), drops every other section and appends a fresh `[Global]` that points
//!   the driver at the mounted `clouds.yaml` (and CA file);
//! * [`cloud_conf_data`] / [`cloud_conf_configmap`]: the ConfigMap the driver mounts.
//!
//! The INI reader and writer ([`parse_ini`], [`IniFile::render`]) follow go-ini's default
//! behaviour (the library OpenShift's operator uses) closely enough that the same input gives the
//! same bytes, so switching operators does not change the ConfigMap's hash annotation and roll
//! the driver. This module does no I/O and reads no clock; it never puts Secret data into an
//! error message.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{CLOUD_CONF_CONFIGMAP, CREDENTIALS_SECRET, SYNCED_CLOUD_PROVIDER_CONFIGMAP};

/// Namespace of the user's configuration ConfigMaps.
pub const USER_CONFIG_NAMESPACE: &str = "openshift-config";
/// The Cinder-specific user ConfigMap; it wins over the cloud provider's one.
pub const USER_CONFIG_NAME: &str = "cinder-csi-config";
/// Key of the INI text in [`USER_CONFIG_NAME`].
pub const USER_CONFIG_KEY: &str = "config";
/// Key of the user's topology override, in whichever ConfigMap is the source.
pub const ENABLE_TOPOLOGY_KEY: &str = "enable_topology";
/// Key of the generated configuration in the `cloud-conf` ConfigMap.
pub const CLOUD_CONF_KEY: &str = "cloud.conf";
/// Key of the CA bundle in `cloud-conf` and in the synced `cloud-provider-config`.
pub const CA_BUNDLE_KEY: &str = "ca-bundle.pem";
/// Name of the ConfigMap [`select_ca`] reads first (in the operator namespace).
pub const CA_CONFIGMAP: &str = SYNCED_CLOUD_PROVIDER_CONFIGMAP;
/// Key of the CA bundle in the credentials Secret (set by the cloud credential operator).
pub const SECRET_CA_KEY: &str = "cacert";
/// Where the pods mount `clouds.yaml` (the `secret-cinderplugin` volume).
pub const CLOUDS_FILE: &str = "/etc/kubernetes/secret/clouds.yaml";
/// Where the pods mount `ca-bundle.pem` from `cloud-conf` (the `cacert` volume).
pub const CA_FILE: &str =
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";
/// The only user section carried into `cloud.conf`.
pub const BLOCK_STORAGE_SECTION: &str = "BlockStorage";
/// Legacy in-tree key the CSI driver does not understand; dropped from `[BlockStorage]`.
pub const TRUST_DEVICE_PATH_KEY: &str = "trust-device-path";

/// go-ini's name for the keys that appear before any section header.
const DEFAULT_SECTION: &str = "DEFAULT";

/// A malformed line in the user's INI text. Messages name the line and say how to fix it; they
/// never quote the line, which could hold a credential in a legacy config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IniError {
    #[error("line {line}: section header has no closing `]`; write it as `[SectionName]`")]
    UnclosedSection { line: usize },
    #[error("line {line}: section header `[]` has no name; write it as `[SectionName]`")]
    EmptySectionName { line: usize },
    #[error(
        "line {line} ({section}): expected `key = value`, a `[Section]` header or a comment \
         starting with `#` or `;`, but the line has no `=` or `:`"
    )]
    MissingDelimiter { line: usize, section: String },
    #[error("line {line} ({section}): the key name before `=` is empty")]
    EmptyKeyName { line: usize, section: String },
    #[error("line {line} ({section}): the quoted key name has no closing quote")]
    UnclosedKeyQuote { line: usize, section: String },
    #[error(
        "line {line} ({section}): the value opened with {quote} is never closed; \
         add the closing {quote}"
    )]
    UnclosedValueQuote {
        line: usize,
        section: String,
        quote: &'static str,
    },
}

/// Why the `cloud-conf` ConfigMap could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The source ConfigMap exists but lacks the key the configuration is expected under.
    #[error("config map {namespace}/{name} did not contain key {key}{hint}")]
    MissingKey {
        namespace: String,
        name: String,
        key: String,
        hint: String,
    },
    /// The user's INI text is malformed.
    #[error("failed to generate cloud.conf from config map {origin}: {cause}")]
    Ini { origin: String, cause: IniError },
    /// The credentials Secret's `cacert` is not text.
    #[error(
        "secret {namespace}/{name} key {key} is not UTF-8 text; it must hold PEM-encoded CA \
         certificates"
    )]
    CaNotText {
        namespace: String,
        name: String,
        key: String,
    },
}

// ------------------------------------------------------------------------------------------
// INI model, reader and writer
// ------------------------------------------------------------------------------------------

/// One `key = value` line with the comment lines that preceded it (and its inline comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniKey {
    pub name: String,
    pub value: String,
    /// Comment text as go-ini keeps it: the raw comment lines, `\n`-separated, trimmed.
    pub comment: String,
    /// A `- = value` line: go-ini stores it as `#1`, `#2`, … (numbered within the section) and
    /// writes it back as `-`.
    pub auto_increment: bool,
}

/// One section, keys in first-seen order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniSection {
    pub name: String,
    pub comment: String,
    pub keys: Vec<IniKey>,
}

impl IniSection {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            comment: String::new(),
            keys: Vec::new(),
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|k| k.name == key)
            .map(|k| k.value.as_str())
    }

    /// Sets a key the way go-ini does: a repeated key keeps its first position and takes the
    /// last value and comment.
    fn set(&mut self, name: String, value: String, comment: String, auto_increment: bool) {
        if let Some(existing) = self.keys.iter_mut().find(|k| k.name == name) {
            existing.value = value;
            existing.comment = comment;
        } else {
            self.keys.push(IniKey {
                name,
                value,
                comment,
                auto_increment,
            });
        }
    }
}

/// A parsed INI file. Section names and keys are case-sensitive; a repeated section header
/// continues the first section of that name; keys before any header land in `DEFAULT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniFile {
    pub sections: Vec<IniSection>,
}

impl IniFile {
    /// The section called `name`, if present.
    pub fn section(&self, name: &str) -> Option<&IniSection> {
        self.sections.iter().find(|s| s.name == name)
    }

    fn section_index(&mut self, name: &str) -> usize {
        match self.sections.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sections.push(IniSection::new(name));
                self.sections.len() - 1
            }
        }
    }

    /// Writes the file as go-ini's `WriteTo` does with its default settings: comments first,
    /// `=` aligned within each section, a blank line between sections, values quoted when they
    /// would not read back the same.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let last = self.sections.len().saturating_sub(1);
        for (i, section) in self.sections.iter().enumerate() {
            write_comment(&mut out, &section.comment, false);
            // Like go-ini, a leading DEFAULT section is written without a header, and not at
            // all when it is empty.
            if i == 0 && section.name.eq_ignore_ascii_case(DEFAULT_SECTION) {
                if section.keys.is_empty() {
                    continue;
                }
            } else {
                out.push('[');
                out.push_str(&section.name);
                out.push_str("]\n");
            }
            let align = section
                .keys
                .iter()
                .map(|k| quoted_key_len(&k.name))
                .max()
                .unwrap_or(0);
            for key in &section.keys {
                write_comment(&mut out, &key.comment, true);
                let name = if key.auto_increment {
                    "-".to_string()
                } else {
                    quote_key(&key.name)
                };
                out.push_str(&name);
                out.push_str(&" ".repeat(align.saturating_sub(name.len())));
                out.push_str(" = ");
                out.push_str(&quote_value(&key.value));
                out.push('\n');
            }
            if i != last {
                out.push('\n');
            }
        }
        out
    }
}

/// go-ini writes each comment line as `# text` (or `; text`), normalising the space after the
/// marker; a line without a marker gets `; `.
fn write_comment(out: &mut String, comment: &str, trim_unmarked: bool) {
    if comment.is_empty() {
        return;
    }
    for line in comment.split('\n') {
        let mut chars = line.chars();
        match chars.next() {
            Some(marker @ ('#' | ';')) => {
                out.push(marker);
                out.push(' ');
                out.push_str(chars.as_str().trim());
            }
            _ => {
                out.push_str("; ");
                out.push_str(if trim_unmarked { line.trim() } else { line });
            }
        }
        out.push('\n');
    }
}

fn key_needs_backticks(name: &str) -> bool {
    name.contains(['"', '=', ':'])
}

fn quoted_key_len(name: &str) -> usize {
    if key_needs_backticks(name) {
        name.len() + 2
    } else if name.contains('`') {
        name.len() + 6
    } else {
        name.len()
    }
}

fn quote_key(name: &str) -> String {
    if key_needs_backticks(name) {
        format!("`{name}`")
    } else if name.contains('`') {
        format!("\"\"\"{name}\"\"\"")
    } else {
        name.to_string()
    }
}

fn quote_value(value: &str) -> String {
    if value.contains(['\n', '`']) {
        format!("\"\"\"{value}\"\"\"")
    } else if value.contains(['#', ';']) {
        format!("`{value}`")
    } else if value.trim().len() != value.len() {
        format!("\"{value}\"")
    } else {
        value.to_string()
    }
}

/// Cursor over the input lines (each with its line break), numbered from 1.
struct Lines<'a> {
    lines: Vec<&'a str>,
    next: usize,
}

impl<'a> Lines<'a> {
    fn next_line(&mut self) -> Option<&'a str> {
        let line = self.lines.get(self.next).copied();
        if line.is_some() {
            self.next += 1;
        }
        line
    }

    /// Number of the line returned last.
    fn number(&self) -> usize {
        self.next
    }
}

fn section_label(name: &str) -> String {
    if name == DEFAULT_SECTION {
        "before any section header".to_string()
    } else {
        format!("in section [{name}]")
    }
}

/// Parses INI text with go-ini's default rules:
///
/// * `#` and `;` start comment lines, and also inline comments after a value (anywhere in an
///   unquoted value, as go-ini does by default);
/// * `key = value` or `key: value`; surrounding whitespace is trimmed; a value wholly wrapped in
///   `"…"` or `'…'` loses the quotes; a value wrapped in `` `…` `` or `"""…"""` is taken
///   literally and may span lines;
/// * a line ending in `\` continues on the next line;
/// * a repeated key keeps its first position and its last value; a repeated section header
///   continues the earlier section; keys before any header go to a `DEFAULT` section;
/// * a key named `-` is numbered (`#1`, `#2`, … within the section);
/// * a leading UTF-8 byte-order mark is ignored; CRLF line ends are accepted.
pub fn parse_ini(text: &str) -> Result<IniFile, IniError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut file = IniFile {
        sections: vec![IniSection::new(DEFAULT_SECTION)],
    };
    let mut current = 0usize;
    let mut comment = String::new();
    let mut auto_count = 1usize;
    let mut lines = Lines {
        lines: text.split_inclusive('\n').collect(),
        next: 0,
    };

    while let Some(raw) = lines.next_line() {
        let line_no = lines.number();
        let line = raw.trim_start();
        if line.is_empty() {
            continue;
        }
        if line.starts_with(['#', ';']) {
            comment.push_str(line);
            continue;
        }
        if let Some(after_open) = line.strip_prefix('[') {
            // go-ini takes the name up to the last `]` on the line, untrimmed.
            let Some(close) = after_open.rfind(']') else {
                return Err(IniError::UnclosedSection { line: line_no });
            };
            let name = &after_open[..close];
            if name.is_empty() {
                return Err(IniError::EmptySectionName { line: line_no });
            }
            current = file.section_index(name);
            let rest = &after_open[close + 1..];
            if let Some(i) = rest.find(['#', ';']) {
                comment.push_str(&rest[i..]);
            }
            if let Some(section) = file.sections.get_mut(current) {
                section.comment = comment.trim().to_string();
            }
            comment.clear();
            auto_count = 1;
            continue;
        }

        let section_name = file
            .sections
            .get(current)
            .map_or(DEFAULT_SECTION, |s| &s.name);
        let section = section_label(section_name);
        let (mut name, offset) = read_key_name(line, line_no, &section)?;
        let auto_increment = name == "-";
        if auto_increment {
            name = format!("#{auto_count}");
            auto_count += 1;
        }
        let value = read_value(&line[offset..], &mut lines, &mut comment, line_no, &section)?;
        if let Some(s) = file.sections.get_mut(current) {
            s.set(name, value, comment.trim().to_string(), auto_increment);
        }
        comment.clear();
    }
    Ok(file)
}

/// Returns the key name and the byte offset just past the delimiter.
fn read_key_name(line: &str, line_no: usize, section: &str) -> Result<(String, usize), IniError> {
    let quote = if line.starts_with("\"\"\"") && line.len() > 6 {
        Some("\"\"\"")
    } else if line.starts_with('"') {
        Some("\"")
    } else if line.starts_with('`') {
        Some("`")
    } else {
        None
    };
    let (name, offset) = match quote {
        Some(q) => {
            let start = q.len();
            let Some(pos) = line[start..].find(q).map(|p| p + start) else {
                return Err(IniError::UnclosedKeyQuote {
                    line: line_no,
                    section: section.into(),
                });
            };
            let after_quote = pos + q.len();
            let Some(delim) = line[after_quote..].find(['=', ':']) else {
                return Err(IniError::MissingDelimiter {
                    line: line_no,
                    section: section.into(),
                });
            };
            (line[start..pos].trim(), after_quote + delim + 1)
        }
        None => {
            let Some(delim) = line.find(['=', ':']) else {
                return Err(IniError::MissingDelimiter {
                    line: line_no,
                    section: section.into(),
                });
            };
            (line[..delim].trim(), delim + 1)
        }
    };
    if name.is_empty() {
        return Err(IniError::EmptyKeyName {
            line: line_no,
            section: section.into(),
        });
    }
    Ok((name.to_string(), offset))
}

fn has_surrounding_quote(value: &str, quote: char) -> bool {
    value.len() >= 2
        && value.starts_with(quote)
        && value.ends_with(quote)
        && value[1..].find(quote) == Some(value.len() - 2)
}

fn read_value(
    input: &str,
    lines: &mut Lines<'_>,
    comment: &mut String,
    line_no: usize,
    section: &str,
) -> Result<String, IniError> {
    let line = input.trim_start();
    if line.is_empty() {
        return Ok(String::new());
    }

    let quote = if line.len() > 3 && line.starts_with("\"\"\"") {
        Some("\"\"\"")
    } else if line.starts_with('`') {
        Some("`")
    } else {
        None
    };
    if let Some(q) = quote {
        let body = &line[q.len()..];
        if let Some(end) = body.rfind(q) {
            return Ok(body[..end].to_string());
        }
        // Multi-line literal: everything up to the last quote on a later line, line breaks kept.
        let mut value = body.to_string();
        loop {
            let Some(next) = lines.next_line() else {
                return Err(IniError::UnclosedValueQuote {
                    line: line_no,
                    section: section.into(),
                    quote: if q == "`" { "`" } else { "\"\"\"" },
                });
            };
            if let Some(end) = next.rfind(q) {
                value.push_str(&next[..end]);
                if let Some(i) = next[end..].find(['#', ';']) {
                    comment.push_str(next[end + i..].trim());
                }
                return Ok(value);
            }
            value.push_str(next);
        }
    }

    let line = line.trim();
    if let Some(first) = line.strip_suffix('\\') {
        // go-ini joins continuation lines without a separator and stops at a blank line; it
        // applies no comment or quote handling to the joined value.
        let mut value = first.to_string();
        while let Some(next) = lines.next_line() {
            let next = next.trim();
            if next.is_empty() {
                break;
            }
            value.push_str(next);
            match value.strip_suffix('\\') {
                Some(stripped) => value = stripped.to_string(),
                None => break,
            }
        }
        return Ok(value);
    }

    let mut value = line;
    if let Some(i) = value.find(['#', ';']) {
        comment.push_str(&value[i..]);
        value = value[..i].trim();
    }
    if has_surrounding_quote(value, '"') || has_surrounding_quote(value, '\'') {
        value = &value[1..value.len() - 1];
    }
    Ok(value.to_string())
}

// ------------------------------------------------------------------------------------------
// cloud.conf generation
// ------------------------------------------------------------------------------------------

/// Generates `cloud.conf` from the user's INI text (`None` when there is no user source):
/// only `[BlockStorage]` survives, without `trust-device-path` and dropped when empty; a fresh
/// `[Global]` points the driver at the mounted `clouds.yaml` (cloud `openstack`) and, when the
/// cloud has a custom CA, at the mounted CA file.
pub fn generate_cloud_conf(source: Option<&str>, has_ca: bool) -> Result<String, IniError> {
    let parsed = match source {
        Some(text) => parse_ini(text)?,
        None => IniFile {
            sections: Vec::new(),
        },
    };
    let mut out = IniFile {
        sections: Vec::new(),
    };
    if let Some(block) = parsed.section(BLOCK_STORAGE_SECTION) {
        let mut block = block.clone();
        block.keys.retain(|k| k.name != TRUST_DEVICE_PATH_KEY);
        if !block.keys.is_empty() {
            out.sections.push(block);
        }
    }
    let mut global = IniSection::new("Global");
    for (key, value) in [
        ("use-clouds", "true"),
        ("clouds-file", CLOUDS_FILE),
        ("cloud", "openstack"),
    ] {
        global.set(key.into(), value.into(), String::new(), false);
    }
    if has_ca {
        global.set("ca-file".into(), CA_FILE.into(), String::new(), false);
    }
    out.sections.push(global);
    Ok(out.render())
}

// ------------------------------------------------------------------------------------------
// Source and CA selection
// ------------------------------------------------------------------------------------------

/// The Infrastructure object's `spec.cloudConfig` reference (a ConfigMap in
/// `openshift-config`). On plain Kubernetes the caller may pass `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudConfigRef {
    pub name: String,
    pub key: String,
}

/// Where the user configuration was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOrigin {
    pub namespace: String,
    pub name: String,
    pub key: String,
}

impl std::fmt::Display for ConfigOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} key {}", self.namespace, self.name, self.key)
    }
}

/// The user's configuration as selected by [`select_source`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceConfig {
    /// `None` when neither ConfigMap exists: the driver then gets only the generated `[Global]`.
    pub origin: Option<ConfigOrigin>,
    /// The INI text, present exactly when `origin` is.
    pub content: Option<String>,
    /// The user's `enable_topology` value from the same ConfigMap; an empty value counts as
    /// absent (as in OpenShift). Not validated here: see `topology::parse_override`.
    pub enable_topology: Option<String>,
}

fn extract(
    cm: &ConfigMap,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<SourceConfig, ConfigError> {
    let data = cm.data.as_ref();
    let Some(content) = data.and_then(|d| d.get(key)) else {
        let in_binary = cm.binary_data.as_ref().is_some_and(|b| b.contains_key(key));
        let hint = if in_binary {
            format!("; the key is under binaryData, put the INI text under data.{key} instead")
        } else if key.is_empty() {
            "; the Infrastructure object's spec.cloudConfig.key is empty, set it to the key that \
             holds the INI text"
                .to_string()
        } else {
            format!("; add the INI text under data.{key}")
        };
        return Err(ConfigError::MissingKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
            key: key.to_string(),
            hint,
        });
    };
    let enable_topology = data
        .and_then(|d| d.get(ENABLE_TOPOLOGY_KEY))
        .filter(|v| !v.is_empty())
        .cloned();
    Ok(SourceConfig {
        origin: Some(ConfigOrigin {
            namespace: namespace.to_string(),
            name: name.to_string(),
            key: key.to_string(),
        }),
        content: Some(content.clone()),
        enable_topology,
    })
}

/// Chooses the user configuration, first that exists:
/// 1. `openshift-config/cinder-csi-config`, key `config` (`user_config`);
/// 2. `openshift-config/<cloud_config_ref.name>`, key `<cloud_config_ref.key>` (`cloud_config`,
///    the ConfigMap the caller found under that name; ignored when the reference is absent or
///    has an empty name).
///
/// The chosen ConfigMap must contain its key; neither existing is not an error.
pub fn select_source(
    user_config: Option<&ConfigMap>,
    cloud_config_ref: Option<&CloudConfigRef>,
    cloud_config: Option<&ConfigMap>,
) -> Result<SourceConfig, ConfigError> {
    if let Some(cm) = user_config {
        return extract(cm, USER_CONFIG_NAMESPACE, USER_CONFIG_NAME, USER_CONFIG_KEY);
    }
    match (cloud_config_ref, cloud_config) {
        (Some(r), Some(cm)) if !r.name.is_empty() => {
            extract(cm, USER_CONFIG_NAMESPACE, &r.name, &r.key)
        }
        _ => Ok(SourceConfig::default()),
    }
}

/// Where the custom CA came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaOrigin {
    /// `ca-bundle.pem` of the CSO-synced `cloud-provider-config` in the operator namespace.
    CloudProviderConfig,
    /// `cacert` of the `openstack-cloud-credentials` Secret.
    CredentialsSecret,
}

/// The cloud's custom CA bundle (PEM text). Debug output omits the PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CaBundle {
    pub pem: String,
    pub origin: CaOrigin,
}

impl std::fmt::Debug for CaBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaBundle")
            .field("origin", &self.origin)
            .field("pem_bytes", &self.pem.len())
            .finish()
    }
}

/// Finds the custom CA: `ca-bundle.pem` of the synced `cloud-provider-config` ConfigMap, else
/// `cacert` of the credentials Secret. Missing objects, missing keys and blank values all mean
/// "no custom CA", which is not an error (OpenShift fails when the ConfigMap is missing, anchors
/// §8.11). `secret_namespace` only names the Secret in an error message.
pub fn select_ca(
    synced_cloud_provider_config: Option<&ConfigMap>,
    credentials: Option<&Secret>,
    secret_namespace: &str,
) -> Result<Option<CaBundle>, ConfigError> {
    let from_cm = synced_cloud_provider_config
        .and_then(|cm| cm.data.as_ref())
        .and_then(|d| d.get(CA_BUNDLE_KEY))
        .filter(|v| !v.trim().is_empty());
    if let Some(pem) = from_cm {
        return Ok(Some(CaBundle {
            pem: pem.clone(),
            origin: CaOrigin::CloudProviderConfig,
        }));
    }
    let from_secret = credentials
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get(SECRET_CA_KEY))
        .map(|b| b.0.as_slice());
    let Some(bytes) = from_secret else {
        return Ok(None);
    };
    let Ok(pem) = std::str::from_utf8(bytes) else {
        return Err(ConfigError::CaNotText {
            namespace: secret_namespace.to_string(),
            name: CREDENTIALS_SECRET.to_string(),
            key: SECRET_CA_KEY.to_string(),
        });
    };
    if pem.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(CaBundle {
        pem: pem.to_string(),
        origin: CaOrigin::CredentialsSecret,
    }))
}

/// The data of the `cloud-conf` ConfigMap: `cloud.conf`, `enable_topology`, and
/// `ca-bundle.pem` only when there is a CA. The data is meant to replace the live data wholesale.
pub fn cloud_conf_data(
    source: &SourceConfig,
    ca: Option<&CaBundle>,
    enable_topology: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let cloud_conf = generate_cloud_conf(source.content.as_deref(), ca.is_some()).map_err(|e| {
        ConfigError::Ini {
            origin: source
                .origin
                .as_ref()
                .map_or_else(String::new, ToString::to_string),
            cause: e,
        }
    })?;
    let mut data = BTreeMap::new();
    data.insert(CLOUD_CONF_KEY.to_string(), cloud_conf);
    data.insert(ENABLE_TOPOLOGY_KEY.to_string(), enable_topology.to_string());
    if let Some(ca) = ca {
        data.insert(CA_BUNDLE_KEY.to_string(), ca.pem.clone());
    }
    Ok(data)
}

/// The `cloud-conf` ConfigMap in `namespace` with the given data.
pub fn cloud_conf_configmap(namespace: &str, data: BTreeMap<String, String>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(CLOUD_CONF_CONFIGMAP.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    const GLOBAL: &str = "[Global]\n\
        use-clouds  = true\n\
        clouds-file = /etc/kubernetes/secret/clouds.yaml\n\
        cloud       = openstack\n";

    fn cm(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    fn secret(data: &[(&str, &[u8])]) -> Secret {
        Secret {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    // ---- generation: the cases of OpenShift's configsync_test.go, byte for byte ----

    #[test]
    fn unset_and_empty_config_give_only_global() {
        assert_eq!(generate_cloud_conf(None, false).unwrap(), GLOBAL);
        assert_eq!(generate_cloud_conf(Some(""), false).unwrap(), GLOBAL);
    }

    #[test]
    fn minimal_config_keeps_block_storage() {
        let out = generate_cloud_conf(Some("[BlockStorage]\nignore-volume-az = True"), false);
        assert_eq!(
            out.unwrap(),
            format!("[BlockStorage]\nignore-volume-az = True\n\n{GLOBAL}")
        );
    }

    #[test]
    fn ca_adds_ca_file() {
        assert_eq!(
            generate_cloud_conf(None, true).unwrap(),
            "[Global]\n\
             use-clouds  = true\n\
             clouds-file = /etc/kubernetes/secret/clouds.yaml\n\
             cloud       = openstack\n\
             ca-file     = /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem\n"
        );
    }

    #[test]
    fn trust_device_path_dropped_and_empty_section_removed() {
        let out = generate_cloud_conf(
            Some("\n[BlockStorage]\ntrust-device-path = /dev/sdb1"),
            false,
        );
        assert_eq!(out.unwrap(), GLOBAL);
        let out = generate_cloud_conf(
            Some("[BlockStorage]\ntrust-device-path = x\nrescan-on-resize = true\n"),
            false,
        );
        assert_eq!(
            out.unwrap(),
            format!("[BlockStorage]\nrescan-on-resize = true\n\n{GLOBAL}")
        );
        // A header with no keys is dropped too.
        assert_eq!(
            generate_cloud_conf(Some("[BlockStorage]\n"), false).unwrap(),
            GLOBAL
        );
    }

    #[test]
    fn only_block_storage_survives_and_global_is_regenerated() {
        let input = "\
            [Global]\n\
            auth-url = https://keystone.example:5000/v3\n\
            secret-name = openstack-credentials\n\
            [Metadata]\n\
            search-order = configDrive\n\
            [LoadBalancer]\n\
            use-octavia = true\n\
            [BlockStorage]\n\
            node-volume-attach-limit = 100\n\
            ignore-volume-az = yes\n";
        let out = generate_cloud_conf(Some(input), false).unwrap();
        assert_eq!(
            out,
            format!(
                "[BlockStorage]\n\
                 node-volume-attach-limit = 100\n\
                 ignore-volume-az         = yes\n\n{GLOBAL}"
            )
        );
    }

    #[test]
    fn sections_are_case_sensitive() {
        let out = generate_cloud_conf(Some("[blockstorage]\nignore-volume-az = yes\n"), false);
        assert_eq!(out.unwrap(), GLOBAL);
        // go-ini does not trim inside the brackets either.
        let out = generate_cloud_conf(Some("[ BlockStorage ]\nignore-volume-az = yes\n"), false);
        assert_eq!(out.unwrap(), GLOBAL);
    }

    #[test]
    fn keys_before_any_section_are_ignored() {
        let out = generate_cloud_conf(Some("stray = 1\n[BlockStorage]\na = b\n"), false).unwrap();
        assert_eq!(out, format!("[BlockStorage]\na = b\n\n{GLOBAL}"));
        let parsed = parse_ini("stray = 1\n").unwrap();
        assert_eq!(parsed.section("DEFAULT").unwrap().get("stray"), Some("1"));
    }

    #[test]
    fn duplicate_keys_keep_first_position_and_last_value() {
        let out = generate_cloud_conf(
            Some(
                "[BlockStorage]\nrescan-on-resize = false\nignore-volume-az = yes\nrescan-on-resize = true\n",
            ),
            false,
        );
        assert_eq!(
            out.unwrap(),
            format!("[BlockStorage]\nrescan-on-resize = true\nignore-volume-az = yes\n\n{GLOBAL}")
        );
    }

    #[test]
    fn repeated_section_headers_merge() {
        let out = generate_cloud_conf(
            Some("[BlockStorage]\na = 1\n[Global]\nx = y\n[BlockStorage]\nb = 2\n"),
            false,
        );
        assert_eq!(
            out.unwrap(),
            format!("[BlockStorage]\na = 1\nb = 2\n\n{GLOBAL}")
        );
    }

    #[test]
    fn crlf_bom_whitespace_and_colon_delimiter() {
        let input = "\u{feff}[BlockStorage]\r\n  rescan-on-resize:true  \r\n\r\n\tignore-volume-az =   yes\r\n";
        let out = generate_cloud_conf(Some(input), false).unwrap();
        assert_eq!(
            out,
            format!("[BlockStorage]\nrescan-on-resize = true\nignore-volume-az = yes\n\n{GLOBAL}")
        );
    }

    #[test]
    fn comments_are_carried_like_go_ini() {
        let input = "\
            # Our storage settings\n\
            [BlockStorage] ; trailing\n\
            ;attach limit lowered for old hypervisors\n\
            node-volume-attach-limit = 100 # inline\n\
            # about to be dropped\n\
            trust-device-path = x\n\
            # dangling comment at the end is lost\n";
        let out = generate_cloud_conf(Some(input), false).unwrap();
        assert_eq!(
            out,
            format!(
                "# Our storage settings\n\
                 ; trailing\n\
                 [BlockStorage]\n\
                 ; attach limit lowered for old hypervisors\n\
                 # inline\n\
                 node-volume-attach-limit = 100\n\n{GLOBAL}"
            )
        );
        // Comments before a dropped section go with it.
        let out = generate_cloud_conf(Some("# global stuff\n[Global]\na = b\n"), false).unwrap();
        assert_eq!(out, GLOBAL);
    }

    #[test]
    fn value_quoting_and_continuations_like_go_ini() {
        let parsed = parse_ini(
            "[S]\n\
             dq = \"quoted value\"\n\
             sq = 'single'\n\
             inner = a\"b\"c\n\
             cut = abc#def\n\
             lit = `keep # and ;`\n\
             tri = \"\"\"x\"y\"\"\"\n\
             cont = one \\\n  two\\\n three\n\
             empty =\n\
             multi = `line1\nline2` ; note\n\
             after = z\n",
        )
        .unwrap();
        let s = parsed.section("S").unwrap();
        assert_eq!(s.get("dq"), Some("quoted value"));
        assert_eq!(s.get("sq"), Some("single"));
        assert_eq!(s.get("inner"), Some("a\"b\"c"));
        assert_eq!(s.get("cut"), Some("abc"));
        assert_eq!(s.get("lit"), Some("keep # and ;"));
        assert_eq!(s.get("tri"), Some("x\"y"));
        assert_eq!(s.get("cont"), Some("one twothree"));
        assert_eq!(s.get("empty"), Some(""));
        assert_eq!(s.get("multi"), Some("line1\nline2"));
        assert_eq!(s.get("after"), Some("z"));

        // Values that would not read back the same are quoted on output.
        let file = IniFile {
            sections: vec![IniSection {
                name: "BlockStorage".into(),
                comment: String::new(),
                keys: vec![
                    IniKey {
                        name: "a".into(),
                        value: "x;y".into(),
                        comment: String::new(),
                        auto_increment: false,
                    },
                    IniKey {
                        name: "b".into(),
                        value: " padded ".into(),
                        comment: String::new(),
                        auto_increment: false,
                    },
                    IniKey {
                        name: "c".into(),
                        value: "l1\nl2".into(),
                        comment: String::new(),
                        auto_increment: false,
                    },
                    IniKey {
                        name: "k:v".into(),
                        value: "1".into(),
                        comment: String::new(),
                        auto_increment: false,
                    },
                ],
            }],
        };
        assert_eq!(
            file.render(),
            "[BlockStorage]\na     = `x;y`\nb     = \" padded \"\nc     = \"\"\"l1\nl2\"\"\"\n`k:v` = 1\n"
        );
        // And they do read back the same.
        let again = parse_ini(&file.render()).unwrap();
        assert_eq!(again.section("BlockStorage"), file.section("BlockStorage"));
    }

    #[test]
    fn quoted_key_names() {
        let parsed = parse_ini("[S]\n\"my key\" = 1\n`a=b` = 2\n").unwrap();
        let s = parsed.section("S").unwrap();
        assert_eq!(s.get("my key"), Some("1"));
        assert_eq!(s.get("a=b"), Some("2"));
    }

    /// Vectors printed by Go itself: go-ini v1.67.3 (the version OpenShift's csi-operator
    /// vendors) running the same generation algorithm (keep `[BlockStorage]` minus
    /// `trust-device-path`, append `[Global]`), on inputs chosen to probe comments, quoting,
    /// continuations, duplicates, CRLF, BOM and odd headers. Output must match byte for byte so
    /// the `cloud-conf` hash annotation does not change when a cluster switches operators.
    /// Error messages differ on purpose (ours name the line and never quote it); only the fact of
    /// an error must match.
    #[test]
    fn matches_go_ini_vectors() {
        let vectors: Vec<serde_json::Value> =
            serde_json::from_str(include_str!("../testdata/go-ini-vectors.json")).unwrap();
        assert!(vectors.len() > 40);
        for v in &vectors {
            let input = v["input"].as_str().unwrap();
            let ca = v["ca"].as_bool().unwrap();
            let ours = generate_cloud_conf(Some(input), ca);
            match (v.get("output").and_then(|o| o.as_str()), ours) {
                (Some(want), Ok(got)) => assert_eq!(got, want, "input {input:?}"),
                (None, Err(_)) => {}
                (want, got) => panic!("input {input:?}: Go gave {want:?}, we gave {got:?}"),
            }
        }
    }

    #[test]
    fn auto_increment_keys() {
        let parsed = parse_ini("[S]\n- = a\n- = b\n[T]\n- = c\n").unwrap();
        assert_eq!(parsed.section("S").unwrap().get("#2"), Some("b"));
        assert_eq!(parsed.section("T").unwrap().get("#1"), Some("c"));
    }

    // ---- malformed INI ----

    #[test]
    fn malformed_ini_names_line_and_problem() {
        let cases: &[(&str, IniError)] = &[
            (
                "[BlockStorage\na = b\n",
                IniError::UnclosedSection { line: 1 },
            ),
            ("# c\n\n[]\n", IniError::EmptySectionName { line: 3 }),
            (
                "[BlockStorage]\nignore-volume-az = yes\nnode-volume-attach-limit 100\n",
                IniError::MissingDelimiter {
                    line: 3,
                    section: "in section [BlockStorage]".into(),
                },
            ),
            (
                "just some text\n",
                IniError::MissingDelimiter {
                    line: 1,
                    section: "before any section header".into(),
                },
            ),
            (
                "[BlockStorage]\n= yes\n",
                IniError::EmptyKeyName {
                    line: 2,
                    section: "in section [BlockStorage]".into(),
                },
            ),
            (
                "[S]\n\"open = 1\n",
                IniError::UnclosedKeyQuote {
                    line: 2,
                    section: "in section [S]".into(),
                },
            ),
            (
                "[S]\nv = `never closed\nmore\n",
                IniError::UnclosedValueQuote {
                    line: 2,
                    section: "in section [S]".into(),
                    quote: "`",
                },
            ),
            (
                "[S]\r\n\r\nbad line\r\n",
                IniError::MissingDelimiter {
                    line: 3,
                    section: "in section [S]".into(),
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_ini(input).unwrap_err(), *want, "input {input:?}");
            assert!(generate_cloud_conf(Some(input), false).is_err());
        }
        let msg = IniError::MissingDelimiter {
            line: 3,
            section: "in section [BlockStorage]".into(),
        }
        .to_string();
        assert!(
            msg.starts_with("line 3 (in section [BlockStorage])"),
            "{msg}"
        );
        assert!(msg.contains("`key = value`"), "{msg}");
    }

    #[test]
    fn malformed_line_content_is_not_echoed() {
        let err = parse_ini("[Global]\npassword hunter2\n")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }

    // ---- source selection ----

    fn infra_ref() -> CloudConfigRef {
        CloudConfigRef {
            name: "cloud-provider-config".into(),
            key: "config".into(),
        }
    }

    #[test]
    fn user_config_wins() {
        let user = cm(&[
            ("config", "[BlockStorage]\na = b\n"),
            ("enable_topology", "false"),
        ]);
        let infra = cm(&[
            ("config", "[BlockStorage]\nx = y\n"),
            ("enable_topology", "true"),
        ]);
        let src = select_source(Some(&user), Some(&infra_ref()), Some(&infra)).unwrap();
        assert_eq!(
            src.origin,
            Some(ConfigOrigin {
                namespace: "openshift-config".into(),
                name: "cinder-csi-config".into(),
                key: "config".into()
            })
        );
        assert_eq!(src.content.as_deref(), Some("[BlockStorage]\na = b\n"));
        assert_eq!(src.enable_topology.as_deref(), Some("false"));
    }

    #[test]
    fn infrastructure_config_is_the_fallback() {
        let infra = cm(&[("config", "[Global]\n"), ("enable_topology", "true")]);
        let src = select_source(None, Some(&infra_ref()), Some(&infra)).unwrap();
        assert_eq!(
            src.origin.unwrap().to_string(),
            "openshift-config/cloud-provider-config key config"
        );
        assert_eq!(src.content.as_deref(), Some("[Global]\n"));
        assert_eq!(src.enable_topology.as_deref(), Some("true"));
    }

    #[test]
    fn no_source_is_not_an_error() {
        assert_eq!(
            select_source(None, None, None).unwrap(),
            SourceConfig::default()
        );
        assert_eq!(
            select_source(None, Some(&infra_ref()), None).unwrap(),
            SourceConfig::default()
        );
        // An Infrastructure without a cloudConfig name ignores any ConfigMap the caller passes.
        let empty_ref = CloudConfigRef {
            name: String::new(),
            key: "config".into(),
        };
        let infra = cm(&[("config", "[BlockStorage]\na = b\n")]);
        assert_eq!(
            select_source(None, Some(&empty_ref), Some(&infra)).unwrap(),
            SourceConfig::default()
        );
    }

    #[test]
    fn missing_key_is_an_error_with_the_go_message() {
        let user = cm(&[("other", "x")]);
        let err = select_source(Some(&user), None, None).unwrap_err();
        assert!(matches!(err, ConfigError::MissingKey { .. }));
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "config map openshift-config/cinder-csi-config did not contain key config"
            ),
            "{msg}"
        );
        assert!(msg.contains("data.config"), "{msg}");

        // The chosen source must have its key even when the other one would: no fall-through.
        let infra = cm(&[("config", "[BlockStorage]\na = b\n")]);
        assert!(select_source(Some(&user), Some(&infra_ref()), Some(&infra)).is_err());

        let infra_without = cm(&[("enable_topology", "true")]);
        let msg = select_source(None, Some(&infra_ref()), Some(&infra_without))
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with(
            "config map openshift-config/cloud-provider-config did not contain key config"
        ));
    }

    #[test]
    fn empty_configmap_and_binary_only_configmap() {
        let empty = ConfigMap::default();
        let msg = select_source(Some(&empty), None, None)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("did not contain key config"), "{msg}");

        let binary = ConfigMap {
            binary_data: Some(
                [(
                    "config".to_string(),
                    ByteString(b"[BlockStorage]\n".to_vec()),
                )]
                .into(),
            ),
            ..ConfigMap::default()
        };
        let msg = select_source(Some(&binary), None, None)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("did not contain key config"), "{msg}");
        assert!(msg.contains("binaryData"), "{msg}");

        let empty_key_ref = CloudConfigRef {
            name: "cloud-provider-config".into(),
            key: String::new(),
        };
        let msg = select_source(None, Some(&empty_key_ref), Some(&cm(&[("config", "")])))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("spec.cloudConfig.key is empty"), "{msg}");
    }

    #[test]
    fn empty_values_count_as_absent_or_empty() {
        // An empty INI text is a valid (empty) source; an empty enable_topology is no override.
        let user = cm(&[("config", ""), ("enable_topology", "")]);
        let src = select_source(Some(&user), None, None).unwrap();
        assert_eq!(src.content.as_deref(), Some(""));
        assert_eq!(src.enable_topology, None);
    }

    // ---- CA ----

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn ca_from_synced_configmap_first() {
        let synced = cm(&[("ca-bundle.pem", PEM), ("config", "ignored")]);
        let creds = secret(&[("clouds.yaml", b"x"), ("cacert", b"other")]);
        let ca = select_ca(Some(&synced), Some(&creds), "ns")
            .unwrap()
            .unwrap();
        assert_eq!(ca.origin, CaOrigin::CloudProviderConfig);
        assert_eq!(ca.pem, PEM);
    }

    #[test]
    fn ca_from_secret_when_configmap_lacks_it() {
        let creds = secret(&[("clouds.yaml", b"x"), ("cacert", PEM.as_bytes())]);
        for synced in [
            None,
            Some(cm(&[])),
            Some(cm(&[("ca-bundle.pem", "")])),
            Some(ConfigMap::default()),
        ] {
            let ca = select_ca(synced.as_ref(), Some(&creds), "ns")
                .unwrap()
                .unwrap();
            assert_eq!(ca.origin, CaOrigin::CredentialsSecret);
            assert_eq!(ca.pem, PEM);
        }
    }

    #[test]
    fn no_ca_anywhere_is_not_an_error() {
        // Anchors §8.11: OpenShift fails when the synced ConfigMap is missing; we do not.
        assert_eq!(select_ca(None, None, "ns").unwrap(), None);
        let creds = secret(&[("clouds.yaml", b"x")]);
        assert_eq!(select_ca(None, Some(&creds), "ns").unwrap(), None);
        let blank = secret(&[("cacert", b"  \n")]);
        assert_eq!(select_ca(Some(&cm(&[])), Some(&blank), "ns").unwrap(), None);
        assert_eq!(
            select_ca(None, Some(&Secret::default()), "ns").unwrap(),
            None
        );
    }

    #[test]
    fn binary_cacert_is_an_error_without_its_bytes() {
        let creds = secret(&[("cacert", &[0xff, 0xfe, b's', b'3', b'c'])]);
        let err = select_ca(None, Some(&creds), "openshift-cluster-csi-drivers").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("openshift-cluster-csi-drivers/openstack-cloud-credentials"),
            "{msg}"
        );
        assert!(msg.contains("cacert"), "{msg}");
        assert!(!msg.contains("s3c"), "{msg}");
        let ca = CaBundle {
            pem: "secret-ish".into(),
            origin: CaOrigin::CredentialsSecret,
        };
        assert!(!format!("{ca:?}").contains("secret-ish"));
    }

    // ---- output ----

    #[test]
    fn configmap_data_with_and_without_ca() {
        let src = select_source(
            Some(&cm(&[("config", "[BlockStorage]\na = b\n")])),
            None,
            None,
        )
        .unwrap();
        let data = cloud_conf_data(&src, None, "true").unwrap();
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            ["cloud.conf", "enable_topology"]
        );
        assert_eq!(
            data["cloud.conf"],
            format!("[BlockStorage]\na = b\n\n{GLOBAL}")
        );
        assert_eq!(data["enable_topology"], "true");

        let ca = CaBundle {
            pem: PEM.into(),
            origin: CaOrigin::CredentialsSecret,
        };
        let data = cloud_conf_data(&SourceConfig::default(), Some(&ca), "false").unwrap();
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            ["ca-bundle.pem", "cloud.conf", "enable_topology"]
        );
        assert_eq!(data["ca-bundle.pem"], PEM);
        assert!(data["cloud.conf"].ends_with(&format!("ca-file     = {CA_FILE}\n")));

        let cm = cloud_conf_configmap("openshift-cluster-csi-drivers", data.clone());
        assert_eq!(cm.metadata.name.as_deref(), Some("cloud-conf"));
        assert_eq!(
            cm.metadata.namespace.as_deref(),
            Some("openshift-cluster-csi-drivers")
        );
        assert_eq!(cm.data, Some(data));
    }

    #[test]
    fn malformed_source_error_names_the_configmap_and_line() {
        let src = select_source(
            Some(&cm(&[("config", "[BlockStorage]\nbroken\n")])),
            None,
            None,
        )
        .unwrap();
        let msg = cloud_conf_data(&src, None, "true").unwrap_err().to_string();
        assert_eq!(
            msg,
            "failed to generate cloud.conf from config map openshift-config/cinder-csi-config key \
             config: line 2 (in section [BlockStorage]): expected `key = value`, a `[Section]` \
             header or a comment starting with `#` or `;`, but the line has no `=` or `:`"
        );
    }

    // ---- properties of the INI reader and writer and of the generated cloud.conf ----

    use proptest::prelude::*;

    /// What go-ini's writer cannot write so that it reads back the same (and neither can we:
    /// the bytes must match go-ini's). Such a name or value is still written as go-ini writes
    /// it; it only does not survive a second read.
    fn go_ini_cannot_round_trip_key(name: &str) -> bool {
        // Backticks are the quoting of a name with `"`, `=` or `:`, so it cannot hold one.
        name.contains('`') && name.contains(['"', '=', ':'])
    }

    /// As [`go_ini_cannot_round_trip_key`], for a value.
    fn go_ini_cannot_round_trip(value: &str) -> bool {
        let triple = value.contains(['\n', '`']);
        let quoted_whole = value.len() >= 2
            && ((value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\'')));
        // Written bare: a trailing `\` continues the line, surrounding quotes are stripped.
        let bare = !triple && !value.contains(['#', ';']) && value.trim() == value;
        (triple && value.contains("\"\"\""))
            || (bare && (value.ends_with('\\') || quoted_whole || value.starts_with("\"\"\"")))
            // Written in `"…"`: an inner `"` ends it early.
            || (!triple
                && !value.contains(['#', ';'])
                && value.trim() != value
                && value.contains('"'))
    }

    /// A comment as go-ini keeps it: marker, one space, text without surrounding space. (An
    /// empty comment line is written `# ` by go-ini, which reads back with its space: stable
    /// bytes, but not the same model, so it is left out here.)
    fn comment() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            (
                prop_oneof![Just('#'), Just(';')],
                "[a-zA-Z0-9=:#;`\"']([a-zA-Z0-9=:#;`\"' ]{0,10}[a-zA-Z0-9=:#;`\"'])?",
            )
                .prop_map(|(m, t)| format!("{m} {t}")),
            0..3,
        )
        .prop_map(|lines| lines.join("\n"))
    }

    fn ini_file() -> impl Strategy<Value = IniFile> {
        let key = (
            // Key names: not a comment, section header or `-`; may need quoting.
            "[a-zA-Z0-9_][a-zA-Z0-9_./ =:\"-]{0,12}",
            prop_oneof![
                "[a-zA-Z0-9_./:=-]{0,20}",
                "[ a-z#;`\"'\\\\\n]{0,12}",
                "\\PC{0,16}",
            ],
            comment(),
        )
            .prop_map(|(name, value, comment)| IniKey {
                name: name.trim().to_string(),
                value,
                comment,
                auto_increment: false,
            });
        let section = (
            "[a-zA-Z0-9_. -]{1,12}",
            comment(),
            proptest::collection::vec(key, 0..6),
        )
            .prop_map(|(name, comment, keys)| {
                let mut s = IniSection::new(&name);
                s.comment = comment;
                for k in keys {
                    if s.get(&k.name).is_none() {
                        s.keys.push(k);
                    }
                }
                s
            });
        proptest::collection::vec(section, 0..5).prop_map(|sections| {
            let mut file = IniFile {
                sections: Vec::new(),
            };
            for s in sections {
                if s.name != DEFAULT_SECTION && file.section(&s.name).is_none() {
                    file.sections.push(s);
                }
            }
            file
        })
    }

    /// Lines an administrator might write, malformed ones included, some carrying a secret.
    fn ini_text() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            "\\[[A-Za-z ]{0,8}\\]?[ #;a-z]{0,4}",
            "[a-z_-]{0,8} ?[=:]? ?S3CRET[a-z]{0,4}",
            "[#;] .{0,10}",
            "[a-z]{1,6} = (`|\"\"\")S3CRET.{0,6}",
            "S3CRET[a-z]{0,6}\\\\?",
            "\"[a-z]{0,4}\"? = [a-z]{0,4}",
            "`[a-z=]{0,4}`? = [a-z]{0,4}",
            "- = [a-z]{0,4}",
            "\\PC{0,20}",
            Just(String::new()),
        ];
        (
            proptest::collection::vec(line, 0..12),
            prop_oneof![Just("\n"), Just("\r\n")],
            any::<bool>(),
        )
            .prop_map(|(lines, eol, bom)| {
                let body = lines.join(eol);
                if bom { format!("\u{feff}{body}") } else { body }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the text, the reader answers; a refusal names a line that exists and never
        /// quotes what is on it.
        #[test]
        fn any_ini_text_is_read_or_refused_by_line(text in prop_oneof![ini_text(), any::<String>()]) {
            match parse_ini(&text) {
                Ok(file) => {
                    // What was read can be written and read again (unless it holds a value
                    // go-ini cannot write back either), and the bytes are stable from then on.
                    let writable = file
                        .sections
                        .iter()
                        .flat_map(|s| &s.keys)
                        .all(|k| {
                            !go_ini_cannot_round_trip(&k.value)
                                && !go_ini_cannot_round_trip_key(&k.name)
                        });
                    if writable {
                        let once = file.render();
                        let again = parse_ini(&once)
                            .map_err(|e| TestCaseError::fail(format!("{text:?} -> {once:?}: {e}")))?;
                        prop_assert_eq!(again.render(), once);
                    }
                }
                Err(e) => {
                    let msg = e.to_string();
                    let lines = text.split_inclusive('\n').count();
                    let named = (1..=lines).any(|n| msg.starts_with(&format!("line {n}")));
                    prop_assert!(named, "{} (of {} lines)", msg, lines);
                    prop_assert!(!msg.contains("S3CRET"), "{}", msg);
                }
            }
        }

        /// Written and read back, a file is the same file: sections, keys in order, values and
        /// comments, except for the values go-ini itself cannot write faithfully.
        #[test]
        fn written_ini_reads_back_the_same(file in ini_file()) {
            let representable = file
                .sections
                .iter()
                .flat_map(|s| &s.keys)
                .all(|k| !go_ini_cannot_round_trip(&k.value));
            prop_assume!(representable);
            let text = file.render();
            let mut back = parse_ini(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            // The reader always opens with the implicit DEFAULT section.
            back.sections.retain(|s| !(s.name == DEFAULT_SECTION && s.keys.is_empty()));
            prop_assert_eq!(&back, &file, "{}", text);
            prop_assert_eq!(back.render(), text);
        }

        /// The generated cloud.conf: only `[BlockStorage]` (without `trust-device-path`) and a
        /// fresh `[Global]`; generating again from it gives the same bytes, so the ConfigMap's
        /// hash does not change on every sync.
        #[test]
        fn generated_cloud_conf_is_stable_and_minimal(
            text in prop_oneof![
                ini_text(),
                ini_file().prop_map(|f| f.render()),
                ini_file().prop_map(|mut f| {
                    let mut block = IniSection::new(BLOCK_STORAGE_SECTION);
                    block.set("ignore-volume-az".into(), "yes".into(), String::new(), false);
                    block.set(TRUST_DEVICE_PATH_KEY.into(), "false".into(), String::new(), false);
                    f.sections.push(block);
                    f.render()
                }),
            ],
            has_ca in any::<bool>(),
        ) {
            let Ok(out) = generate_cloud_conf(Some(&text), has_ca) else {
                return Ok(());
            };
            let parsed = parse_ini(&out).map_err(|e| TestCaseError::fail(format!("{e}\n{out}")))?;
            let names: Vec<&str> = parsed
                .sections
                .iter()
                .filter(|s| !(s.name == DEFAULT_SECTION && s.keys.is_empty()))
                .map(|s| s.name.as_str())
                .collect();
            prop_assert!(
                names == ["Global"] || names == [BLOCK_STORAGE_SECTION, "Global"],
                "{:?}", names
            );
            let global = parsed.section("Global").map(|s| s.keys.len());
            prop_assert_eq!(global, Some(if has_ca { 4 } else { 3 }));
            if let Some(block) = parsed.section(BLOCK_STORAGE_SECTION) {
                prop_assert!(block.get(TRUST_DEVICE_PATH_KEY).is_none());
                prop_assert!(!block.keys.is_empty());
            }
            let again = generate_cloud_conf(Some(&out), has_ca);
            prop_assert_eq!(again.as_deref(), Ok(out.as_str()));
        }
    }
}
