//! Construction of a [`Cluster`], get and list (with resourceVersion semantics and continue
//! tokens).

use super::support::{decode_continue, encode_continue, last_key, present};
use super::{Cluster, ListOptions};
use crate::errors::ApiError;
use crate::resources::{Catalogue, ResourceType};
use crate::store;
use crate::store::Store;
use serde_json::{Value, json};
use std::sync::Arc;

impl Cluster {
    pub fn new(history_limit: usize, watch_buffer: usize) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            catalogue: Catalogue::builtin(),
            store: Store::new(history_limit, watch_buffer),
            next_cluster_ip: 1,
            random: seed | 1,
        }
    }

    pub(super) fn next_random(&mut self) -> u64 {
        // xorshift64*: unpredictable enough for uids and generated names, no dependency.
        let mut x = self.random;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.random = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(super) fn new_uid(&mut self) -> String {
        let a = self.next_random();
        let b = self.next_random();
        let hex = format!("{a:016x}{b:016x}");
        // Version 4, variant 10xx, as a real server's uuid.NewUUID-based uids look.
        format!(
            "{}-{}-4{}-{:x}{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[13..16],
            8 | (b & 3),
            &hex[17..20],
            &hex[20..32]
        )
    }

    pub(super) fn generated_suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5)
            .map(|_| ALPHABET[(self.next_random() % ALPHABET.len() as u64) as usize] as char)
            .collect()
    }

    /// Looks a served resource up.
    pub fn resource(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.catalogue.get(group, version, plural)
    }

    pub fn get(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let obj = self
            .store
            .get(&rt.group_resource(), namespace, name)
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        Ok(self.present(rt, &obj))
    }

    /// An object as served at `rt`'s version.
    pub fn present(&self, rt: &ResourceType, obj: &Value) -> Value {
        present(rt, obj)
    }

    pub fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        let gr = rt.group_resource();
        let requested_rv = self.check_list_resource_version(opts)?;
        let (snapshot_rv, after) = match &opts.continue_token {
            Some(token) => {
                let (rv, key) = decode_continue(token)?;
                if rv < self.store.compacted_rv() {
                    return Err(ApiError::gone(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    ));
                }
                (rv, Some(key))
            }
            None => match requested_rv {
                // An exact list is read at that resourceVersion, from the undone history.
                Some(rv) if opts.resource_version_match.as_deref() == Some("Exact") => {
                    let start = (namespace.unwrap_or_default().to_string(), String::new());
                    (rv, Some(start))
                }
                _ => (self.store.current_rv(), None),
            },
        };
        let mut items = Vec::new();
        let mut next_key = None;
        let mut remaining = 0usize;
        // Later pages are read at the first page's resourceVersion, as etcd would.
        let source: Box<dyn Iterator<Item = (store::ObjectKey, Arc<Value>)> + '_> = match &after {
            Some(after) => Box::new(
                self.store
                    .snapshot_after(&gr, namespace, snapshot_rv, after),
            ),
            None => Box::new(
                self.store
                    .iter(&gr, namespace, None)
                    .map(|(k, v)| (k.clone(), v.clone())),
            ),
        };
        let pinned = opts.fields.pinned_name();
        for (key, obj) in source {
            if pinned.is_some_and(|p| key.1 != p)
                || !opts.labels.matches(&obj)
                || !opts.fields.matches(&obj)
            {
                continue;
            }
            if opts.limit.is_some_and(|limit| items.len() >= limit) {
                // Past the page: only count what remains, without copying it.
                remaining += 1;
                if next_key.is_none() {
                    next_key = Some(last_key(&items));
                }
                continue;
            }
            items.push(self.list_item(rt, &obj));
        }
        let mut metadata = json!({"resourceVersion": snapshot_rv.to_string()});
        if let Some(Some(key)) = next_key {
            metadata["continue"] = Value::String(encode_continue(snapshot_rv, &key));
            if opts.labels.is_empty() && opts.fields.is_empty() {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        Ok(
            json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": metadata, "items": items}),
        )
    }

    /// Checks a list's resourceVersion and match the way the server does; returns the requested
    /// resourceVersion when one was given.
    pub(super) fn check_list_resource_version(
        &self,
        opts: &ListOptions,
    ) -> Result<Option<u64>, ApiError> {
        let rv = opts.resource_version.as_str();
        if opts.continue_token.is_some() && !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        match opts.resource_version_match.as_deref() {
            None => {}
            Some(_) if rv.is_empty() => {
                return Err(ApiError::invalid_list(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            Some("Exact") if rv == "0" => {
                return Err(ApiError::invalid_list(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            Some("Exact" | "NotOlderThan") => {}
            Some(other) => {
                return Err(ApiError::invalid_list(&format!(
                    "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        }
        if rv.is_empty() || rv == "0" {
            return Ok(None);
        }
        let requested: u64 = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
        let current = self.store.current_rv();
        if requested > current {
            let mut e = ApiError::injected(
                504,
                "Timeout",
                format!("Too large resource version: {requested}, current: {current}"),
            );
            e.details = Some(
                json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
            );
            return Err(e);
        }
        if opts.resource_version_match.as_deref() == Some("Exact")
            && requested < self.store.compacted_rv()
        {
            return Err(ApiError::gone(
                "The resourceVersion for the provided list is too old.",
            ));
        }
        Ok(Some(requested))
    }

    /// Built-in list items come without apiVersion/kind, as from a real server; custom
    /// resources keep them.
    pub(super) fn list_item(&self, rt: &ResourceType, obj: &Value) -> Value {
        let mut item = self.present(rt, obj);
        if !rt.is_custom()
            && let Some(o) = item.as_object_mut()
        {
            o.remove("apiVersion");
            o.remove("kind");
        }
        item
    }
}
