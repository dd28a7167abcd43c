//! A namespace's allocations (UID range, supplemental groups, MCS level) as OpenShift's
//! cluster-policy-controller writes them in namespace annotations, and their parsing.

use super::{MCS_ANNOTATION, SUPPLEMENTAL_GROUPS_ANNOTATION, UID_RANGE_ANNOTATION};
use serde_json::Value;

/// A block of IDs, first and last inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub first: i64,
    pub last: i64,
}

/// Parses `<first>/<size>` or `<first>-<last>` as library-go's `uid.ParseBlock` accepts them.
pub fn parse_block(s: &str) -> Result<Block, String> {
    let bad = || format!("block not in the format \"<start>/<size>\" or \"<start>-<end>\": {s:?}");
    let number = |t: &str| t.trim().parse::<u32>().map(i64::from).map_err(|_| bad());
    let block = if let Some((first, size)) = s.split_once('/') {
        let first = number(first)?;
        let size = number(size)?;
        if size == 0 {
            return Err(bad());
        }
        Block {
            first,
            last: first + size - 1,
        }
    } else if let Some((first, last)) = s.split_once('-') {
        Block {
            first: number(first)?,
            last: number(last)?,
        }
    } else {
        return Err(bad());
    };
    if block.last < block.first || block.last > i64::from(u32::MAX) {
        return Err(format!(
            "{s:?} is not a valid block: its end is before its start"
        ));
    }
    Ok(block)
}

/// The `openshift.io/sa.scc.*` annotations of a namespace, as admission reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    pub namespace: String,
    pub uid_range: Option<String>,
    pub mcs: Option<String>,
    pub supplemental_groups: Option<String>,
}

impl Allocation {
    pub fn of(namespace: &Value) -> Self {
        let ann = |k: &str| {
            namespace
                .pointer(&format!("/metadata/annotations/{}", k.replace('/', "~1")))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Self {
            namespace: namespace
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            uid_range: ann(UID_RANGE_ANNOTATION),
            mcs: ann(MCS_ANNOTATION),
            supplemental_groups: ann(SUPPLEMENTAL_GROUPS_ANNOTATION),
        }
    }

    /// `Err` while an annotation the admission needs before anything else is missing: the
    /// cluster-policy-controller has not got to the namespace yet.
    pub fn ready(&self) -> Result<(), String> {
        for (key, value) in [
            (UID_RANGE_ANNOTATION, &self.uid_range),
            (MCS_ANNOTATION, &self.mcs),
        ] {
            if value.is_none() {
                return Err(format!(
                    "error fetching namespace {:?}: unable to find annotation {key}",
                    self.namespace
                ));
            }
        }
        Ok(())
    }

    pub(super) fn uid_block(&self, scc: &str) -> Result<Block, String> {
        let configure = |why: String| {
            format!(
                "unable to find pre-allocated uid annotation for namespace {} while trying to configure SCC {scc}: {why}",
                self.namespace
            )
        };
        match self.uid_range.as_deref() {
            None => Err(configure(format!(
                "unable to find annotation {UID_RANGE_ANNOTATION}"
            ))),
            Some("") => Err(configure(format!(
                "found annotation {UID_RANGE_ANNOTATION} but it was empty"
            ))),
            Some(s) => parse_block(s).map_err(configure),
        }
    }

    pub(super) fn group_blocks(&self, scc: &str) -> Result<Vec<Block>, String> {
        let configure = |why: String| {
            format!(
                "unable to find pre-allocated group annotation for namespace {} while trying to configure SCC {scc}: {why}",
                self.namespace
            )
        };
        let groups = self
            .supplemental_groups
            .as_deref()
            .or(self.uid_range.as_deref())
            .ok_or_else(|| {
                configure(format!(
                    "unable to find supplemental group or uid annotation for namespace {}",
                    self.namespace
                ))
            })?;
        groups
            .split(',')
            .map(parse_block)
            .collect::<Result<Vec<_>, _>>()
            .map_err(configure)
    }
}

/// The MCS level OpenShift gives the namespace holding block number `n` (0-based): the n-th
/// pair of categories `c<high>,c<low>`, counting pairs in order of their higher category.
pub fn mcs_level(n: u64) -> String {
    let mut high: u64 = 1;
    let mut left = n;
    while left >= high {
        left -= high;
        high += 1;
    }
    format!("s0:c{high},c{left}")
}
