//! PolicyRules: reading them, matching a request, and coverage (whether one set of rules
//! grants everything another does, for the escalation checks).

use super::subjects::{Attributes, has, to_strings};
use crate::json::go_quote;
use crate::json::strings;
use serde_json::{Value, json};
use std::fmt;

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A resource rule.
    pub fn resource(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> Self {
        Self {
            verbs: to_strings(verbs),
            api_groups: to_strings(api_groups),
            resources: to_strings(resources),
            ..Default::default()
        }
    }

    /// A non-resource rule.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> Self {
        Self {
            verbs: to_strings(verbs),
            non_resource_urls: to_strings(urls),
            ..Default::default()
        }
    }

    pub fn with_names(mut self, names: &[&str]) -> Self {
        self.resource_names = to_strings(names);
        self
    }

    /// Reads a rule as JSON; fields of the wrong type count as empty (validation rejects them
    /// before they are stored).
    pub fn from_value(v: &Value) -> Self {
        Self {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rule as JSON, as it appears in a Role.
    pub fn to_value(&self) -> Value {
        let mut v = json!({"verbs": self.verbs});
        let mut put = |k: &str, items: &Vec<String>| {
            if !items.is_empty() {
                v[k] = json!(items);
            }
        };
        put("apiGroups", &self.api_groups);
        put("resources", &self.resources);
        put("resourceNames", &self.resource_names);
        put("nonResourceURLs", &self.non_resource_urls);
        v
    }

    /// The compact form of escalation messages (`rbacv1helpers.CompactString`):
    /// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, items) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !items.is_empty() {
                parts.push(format!("{label}:{}", go_quote_list(items)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.compact_string())
    }
}

/// The rules of a Role or ClusterRole object.
pub fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(PolicyRule::from_value).collect())
        .unwrap_or_default()
}

/// Go's `%q` for a `[]string`: `["a" "b"]`.
pub(super) fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// `VerbMatches`.
pub(super) fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
}

/// `APIGroupMatches`.
pub(super) fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == "*" || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/subresource`.
pub(super) fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
    })
}

/// `ResourceNameMatches`: no names means all; otherwise the request must name one of them
/// (a request without a name, e.g. create or an unpinned list, matches none).
pub(super) fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || has(&rule.resource_names, name)
}

/// `NonResourceURLMatches`: exact, `*`, or a prefix ending in `*`.
pub(super) fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == "*"
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
    })
}

/// Whether one rule allows a request (`RuleAllows`).
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name)
    } else {
        verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
    }
}

// ----- coverage (escalation) -----------------------------------------------------------------

/// Splits a rule into rules of one group, resource, verb and name each (`BreakdownRule`).
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let one = PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(one);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: vec![name.clone()],
                            ..one.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule::non_resource(&[verb], &[url]));
        }
    }
    out
}

pub(super) fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

pub(super) fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, "*") || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

pub(super) fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path
        || owner
            .strip_suffix('*')
            .is_some_and(|p| path.starts_with(p.trim_end_matches('*')))
}

/// `ruleCovers`: whether `owner` grants everything the broken-down `sub` rule grants.
pub(super) fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|p| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, p))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// Whether `owner` rules cover `servant` rules (`validation.Covers`), and the broken-down
/// rules they do not cover.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// Merges rules of one group and resource that differ only by verb (`CompactRules`).
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule.clone());
            continue;
        }
        match simple
            .iter_mut()
            .find(|s| s.api_groups == rule.api_groups && s.resources == rule.resources)
        {
            Some(existing) => existing.verbs.extend(rule.verbs.iter().cloned()),
            None => simple.push(rule.clone()),
        }
    }
    out.extend(simple);
    out
}
