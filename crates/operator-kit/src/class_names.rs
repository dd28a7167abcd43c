//! StorageClass names for the types a cloud offers (Manila share types, Cinder volume types):
//! `<prefix><type>`, made valid.
//!
//! OpenShift's Manila operator lowercases the type name and replaces `_` with `-` (anchors
//! §5.3) and does nothing else, so a name with a space or any other character outside
//! `[a-z0-9.-]` gave a StorageClass the API server rejects, and two types such as `Gold` and
//! `gold` fought over one StorageClass. Here:
//!
//! * every name OpenShift handled gets exactly OpenShift's StorageClass name (drop-in);
//! * any other name is repaired into a valid DNS-1123 subdomain (invalid characters become
//!   `-`, empty or dangling dot-separated labels are dropped, the length is capped at 253) and
//!   gets a short digest of the original name appended, so two different names do not end up
//!   with the same repaired name;
//! * a remaining collision (two types, one StorageClass name) is detected: one type keeps the
//!   name, chosen by a fixed rule, and the others are reported as errors;
//! * at most [`MAX_CLASSES`] classes are made ([`ClassNaming::limit`]): a cloud with thousands
//!   of types would otherwise get thousands of StorageClasses, and a condition message
//!   naming them all.
//!
//! Pure functions; no I/O.

use std::collections::{BTreeMap, BTreeSet};

/// The annotation that makes a StorageClass the cluster's default (the one definition; the
/// apply engine keeps the administrator's value of it).
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

/// Longest valid DNS-1123 subdomain (the rule for StorageClass names).
pub const MAX_NAME_LEN: usize = 253;
/// Hex digits of the digest appended to repaired names.
pub const DIGEST_LEN: usize = 8;
/// The most StorageClasses made from one service's types. Clouds offer a handful of volume
/// or share types, rarely dozens; past this, the types are not meant one class each.
pub const MAX_CLASSES: usize = 100;
/// How many of the types left out by [`ClassNaming::limit`] its message names.
const NAMED_LEFT_OUT: usize = 5;

/// How one driver names the StorageClasses of the types its service offers, and the words
/// its error messages use for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassNaming {
    /// Prefix of every class name (`csi-manila-`); must itself be a valid name start.
    pub prefix: &'static str,
    /// The OpenStack service that offers the types (`Manila`).
    pub service: &'static str,
    /// What the types are called (`share type`).
    pub noun: &'static str,
}

/// Why a type gets no StorageClass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(
        "{service} returned a {noun} with an empty name; it gets no StorageClass (give the {noun} a name in {service})"
    )]
    Empty {
        service: &'static str,
        noun: &'static str,
    },
    #[error(
        "{noun}s {item:?} and {kept:?} both map to StorageClass {storage_class}; it is used for {kept:?}, and {item:?} gets no StorageClass (rename one of the {noun}s in {service})"
    )]
    Collision {
        service: &'static str,
        noun: &'static str,
        item: String,
        kept: String,
        storage_class: String,
    },
}

/// Whether `name` is a valid DNS-1123 subdomain (what the API server requires of a
/// StorageClass name).
pub fn is_dns1123_subdomain(name: &str) -> bool {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return false;
    }
    name.split('.').all(|label| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            }
            _ => false,
        }
    })
}

/// FNV-1a over the original name: stable across versions and platforms, which a StorageClass
/// name must be (a new name would mean a second class for the same type).
pub fn digest(name: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.as_bytes() {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

impl ClassNaming {
    /// OpenShift's StorageClass name for a type (anchors §5.3), valid or not.
    pub fn openshift_name(&self, item: &str) -> String {
        format!("{}{}", self.prefix, item.to_lowercase().replace('_', "-"))
    }

    /// The StorageClass name of one type. Never fails for a non-empty name.
    pub fn name(&self, item: &str) -> Result<String, NameError> {
        if item.is_empty() {
            return Err(NameError::Empty {
                service: self.service,
                noun: self.noun,
            });
        }
        let compatible = self.openshift_name(item);
        if is_dns1123_subdomain(&compatible) {
            return Ok(compatible);
        }
        // Repair: keep [a-z0-9.-], everything else becomes '-'.
        let mapped: String = item
            .to_lowercase()
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '.' | '-' => c,
                _ => '-',
            })
            .collect();
        // Each dot-separated label must start and end with [a-z0-9]; the first one continues
        // the prefix's label, so only its end matters.
        let mut labels: Vec<&str> = Vec::new();
        for (i, label) in mapped.split('.').enumerate() {
            let trimmed = if i == 0 {
                label.trim_end_matches('-')
            } else {
                label.trim_matches('-')
            };
            if !trimmed.is_empty() {
                labels.push(trimmed);
            }
        }
        let mut body = labels.join(".");
        // Room for the prefix, '-' and the digest.
        let room = MAX_NAME_LEN - self.prefix.len() - 1 - DIGEST_LEN;
        if body.len() > room {
            body.truncate(room);
        }
        let body = body.trim_end_matches(['-', '.']);
        let name = if body.is_empty() {
            format!("{}{}", self.prefix, digest(item))
        } else {
            format!("{}{body}-{}", self.prefix, digest(item))
        };
        debug_assert!(is_dns1123_subdomain(&name), "{name}");
        Ok(name)
    }

    /// StorageClass names for a set of types: name → type, and the types that get none with
    /// the reason. When several types map to one name, the one whose name already is the
    /// StorageClass suffix wins (then the smallest name), so the result does not depend on the
    /// order the service listed them in.
    pub fn names<'a>(
        &self,
        items: impl IntoIterator<Item = &'a str>,
    ) -> (BTreeMap<String, String>, Vec<(String, NameError)>) {
        let unique: BTreeSet<&str> = items.into_iter().collect();
        let mut claims: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        let mut errors = Vec::new();
        for item in unique {
            match self.name(item) {
                Ok(name) => claims.entry(name).or_default().push(item),
                Err(e) => errors.push((item.to_string(), e)),
            }
        }
        let mut out = BTreeMap::new();
        for (name, mut items) in claims {
            let suffix = name.strip_prefix(self.prefix).unwrap_or_default();
            // BTreeSet order already sorts by name; an exact match moves to the front.
            items.sort_by_key(|t| (*t != suffix, *t));
            let mut it = items.into_iter();
            let Some(kept) = it.next() else { continue };
            for other in it {
                errors.push((
                    other.to_string(),
                    NameError::Collision {
                        service: self.service,
                        noun: self.noun,
                        item: other.to_string(),
                        kept: kept.to_string(),
                        storage_class: name.clone(),
                    },
                ));
            }
            out.insert(name, kept.to_string());
        }
        (out, errors)
    }

    /// At most `max` of the classes `names` gives (name → type), and, when some are left
    /// out, a sentence for the step's condition saying how many. Classes `exists` says are
    /// already there are kept first, so a class made before stays managed when new types sort
    /// ahead of it; then the first by StorageClass name. Classes left out are not deleted.
    pub fn limit(
        &self,
        names: BTreeMap<String, String>,
        max: usize,
        exists: impl Fn(&str) -> bool,
    ) -> (BTreeMap<String, String>, Option<String>) {
        let total = names.len();
        if total <= max {
            return (names, None);
        }
        let (existing, new): (Vec<_>, Vec<_>) =
            names.into_iter().partition(|(name, _)| exists(name));
        let mut kept = BTreeMap::new();
        let mut left_out = Vec::new();
        for (name, item) in existing.into_iter().chain(new) {
            if kept.len() < max {
                kept.insert(name, item);
            } else {
                left_out.push(item);
            }
        }
        left_out.sort();
        let shown: Vec<String> = left_out
            .iter()
            .take(NAMED_LEFT_OUT)
            .map(|t| format!("{t:?}"))
            .collect();
        let more = if left_out.len() > NAMED_LEFT_OUT {
            ", …"
        } else {
            ""
        };
        let message = format!(
            "{total} {noun}s would each get a StorageClass, more than the limit of {max}: {skipped} {noun}s get none ({shown}{more}); the {max} kept are those whose StorageClass exists, then the first by name (remove the {noun}s not meant for this cluster from {service})",
            noun = self.noun,
            service = self.service,
            skipped = left_out.len(),
            shown = shown.join(", "),
        );
        (kept, Some(message))
    }
}

#[cfg(test)]
mod tests {
    //! The rules themselves are tested through Manila's names (crates/manila/src/names.rs),
    //! against the API server's validators; here, what differs between two namings.
    use super::*;

    const VOLUME: ClassNaming = ClassNaming {
        prefix: "csi-cinder-",
        service: "Cinder",
        noun: "volume type",
    };

    fn names_of(types: &[&str]) -> BTreeMap<String, String> {
        VOLUME.names(types.iter().copied()).0
    }

    #[test]
    fn at_most_the_limit_of_classes_is_kept_and_the_rest_counted() {
        let many: Vec<String> = (0..130).map(|n| format!("type-{n:03}")).collect();
        let names = names_of(&many.iter().map(String::as_str).collect::<Vec<_>>());
        let (kept, message) = VOLUME.limit(names.clone(), MAX_CLASSES, |_| false);
        assert_eq!(kept.len(), MAX_CLASSES);
        assert!(kept.contains_key("csi-cinder-type-000"));
        assert!(
            !kept.contains_key("csi-cinder-type-100"),
            "the first by name"
        );
        let message = message.expect("the excess is reported");
        assert!(message.contains("130 volume types"), "{message}");
        assert!(message.contains("30 volume types get none"), "{message}");
        assert!(message.contains("\"type-100\""), "{message}");
        assert!(message.ends_with("from Cinder)"), "{message}");
        assert!(message.len() < 600, "only a few are named: {message}");

        // A class that exists already stays, even when new types sort before it.
        let (kept, _) = VOLUME.limit(names.clone(), MAX_CLASSES, |n| n == "csi-cinder-type-129");
        assert_eq!(kept.len(), MAX_CLASSES);
        assert!(kept.contains_key("csi-cinder-type-129"));
        assert!(!kept.contains_key("csi-cinder-type-099"));

        let (all, none) = VOLUME.limit(names_of(&["a", "b"]), MAX_CLASSES, |_| false);
        assert_eq!(
            (all.len(), none),
            (2, None),
            "under the limit nothing changes"
        );
    }

    #[test]
    fn messages_use_the_service_and_noun_of_the_naming() {
        let empty = VOLUME.name("").unwrap_err().to_string();
        assert_eq!(
            empty,
            "Cinder returned a volume type with an empty name; it gets no StorageClass (give the volume type a name in Cinder)"
        );
        let (names, errors) = VOLUME.names(["SSD", "ssd"]);
        assert_eq!(names.len(), 1);
        assert_eq!(
            errors[0].1.to_string(),
            "volume types \"SSD\" and \"ssd\" both map to StorageClass csi-cinder-ssd; it is used for \"ssd\", and \"SSD\" gets no StorageClass (rename one of the volume types in Cinder)"
        );
        assert_eq!(VOLUME.name("fast_ssd").unwrap(), "csi-cinder-fast-ssd");
        let (_, message) = VOLUME.limit(names_of(&["a", "b"]), 1, |_| false);
        assert!(
            message.is_some_and(|m| m.contains("2 volume types would")
                && m.contains("1 volume types get none")
                && m.contains("from Cinder")),
            "the message uses the naming's words"
        );
        let repaired = VOLUME.name("__DEFAULT__").unwrap();
        assert!(is_dns1123_subdomain(&repaired), "{repaired}");
        assert!(repaired.starts_with("csi-cinder-"), "{repaired}");
    }
}
