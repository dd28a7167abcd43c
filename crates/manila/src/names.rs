//! The StorageClass name of a Manila share type: `csi-manila-<name>`, made valid and kept
//! apart from the names of other share types by operator-kit's [`ClassNaming`] (which says
//! how, and how it stays OpenShift's name wherever OpenShift's name was valid).
//!
//! Pure functions; no I/O.

use std::collections::BTreeMap;

use operator_kit::class_names::ClassNaming;
pub use operator_kit::class_names::{MAX_NAME_LEN, NameError, is_dns1123_subdomain};

use crate::STORAGE_CLASS_PREFIX;

/// How share types are named.
pub const NAMING: ClassNaming = ClassNaming {
    prefix: STORAGE_CLASS_PREFIX,
    service: "Manila",
    noun: "share type",
};

/// OpenShift's StorageClass name for a share type (anchors §5.3), valid or not.
pub fn openshift_name(share_type: &str) -> String {
    NAMING.openshift_name(share_type)
}

/// The StorageClass name of one share type. Never fails for a non-empty name.
pub fn storage_class_name(share_type: &str) -> Result<String, NameError> {
    NAMING.name(share_type)
}

/// StorageClass names for a set of share types: name → share type, and the share types that
/// get none with the reason (see [`ClassNaming::names`]).
pub fn storage_class_names<'a>(
    share_types: impl IntoIterator<Item = &'a str>,
) -> (BTreeMap<String, String>, Vec<(String, NameError)>) {
    NAMING.names(share_types)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::Desired;
    use operator_kit::class_names::{DIGEST_LEN, digest};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn openshift_names_are_kept() {
        for (st, sc) in [
            ("default", "csi-manila-default"),
            ("Gold_Fast", "csi-manila-gold-fast"),
            ("ceph.nfs", "csi-manila-ceph.nfs"),
            ("a__b", "csi-manila-a--b"),
            ("_x", "csi-manila--x"),
        ] {
            assert_eq!(storage_class_name(st), Ok(sc.to_string()), "{st}");
            assert_eq!(openshift_name(st), sc);
        }
    }

    #[test]
    fn invalid_names_are_repaired_with_a_digest() {
        let n = storage_class_name("gold fast").unwrap();
        assert!(n.starts_with("csi-manila-gold-fast-"), "{n}");
        assert!(is_dns1123_subdomain(&n));
        let dots = storage_class_name("a..b.").unwrap();
        assert!(dots.starts_with("csi-manila-a.b-"), "{dots}");
        let ending = storage_class_name("gold_").unwrap();
        assert!(ending.starts_with("csi-manila-gold-"), "{ending}");
        assert_ne!(ending, "csi-manila-gold-");
        let unicode = storage_class_name("日本").unwrap();
        assert_eq!(unicode.len(), "csi-manila-".len() + 8, "{unicode}");
        let long = storage_class_name(&"x".repeat(400)).unwrap();
        assert_eq!(long.len(), MAX_NAME_LEN);
        assert!(is_dns1123_subdomain(&long));
        // Stable: the same input gives the same name on every run and platform.
        assert_eq!(
            storage_class_name("gold fast"),
            storage_class_name("gold fast")
        );
        assert_eq!(digest("a"), "e40c292c");
    }

    #[test]
    fn empty_name_is_an_error() {
        let e = storage_class_name("").unwrap_err();
        assert!(e.to_string().contains("empty name"), "{e}");
    }

    #[test]
    fn collisions_are_reported_and_decided_by_a_fixed_rule() {
        let (names, errors) = storage_class_names(["Gold", "gold", "silver", "gold"]);
        assert_eq!(
            names.get("csi-manila-gold").map(String::as_str),
            Some("gold")
        );
        assert_eq!(names.len(), 2);
        assert_eq!(errors.len(), 1);
        let msg = errors[0].1.to_string();
        assert!(
            msg.contains("\"Gold\"") && msg.contains("csi-manila-gold"),
            "{msg}"
        );
        // Same result whatever the order.
        let (again, _) = storage_class_names(["silver", "gold", "Gold"]);
        assert_eq!(names, again);
        let (names, errors) = storage_class_names(["A_B", "A-B"]);
        assert_eq!(names.len(), 1);
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn validator_rejects_what_the_api_server_rejects() {
        for bad in [
            "",
            "-a",
            "a-",
            "a..b",
            "A",
            "a b",
            "a.",
            ".a",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad:?}");
        }
        for good in ["a", "a-b", "a.b", "0", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(good), "{good:?}");
        }
    }

    proptest! {
        #[test]
        fn any_name_gives_a_valid_name_or_a_clear_error(st in ".{0,300}") {
            match storage_class_name(&st) {
                Ok(name) => {
                    prop_assert!(is_dns1123_subdomain(&name), "{name:?}");
                    prop_assert!(name.starts_with(STORAGE_CLASS_PREFIX));
                }
                Err(e) => {
                    prop_assert!(st.is_empty());
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }

        #[test]
        fn a_set_of_names_never_collides_silently(
            types in proptest::collection::vec("[a-zA-Z0-9_ .\\-]{0,12}", 0..12)
        ) {
            let (names, errors) = storage_class_names(types.iter().map(String::as_str));
            let unique: BTreeSet<&String> = types.iter().collect();
            // Every share type is either served by exactly one class or reported.
            let served: BTreeSet<&String> = names.values().collect();
            prop_assert_eq!(served.len(), names.len(), "one class per share type");
            for t in &unique {
                let reported = errors.iter().any(|(s, _)| s == *t);
                prop_assert!(served.contains(t) != reported, "{:?}", t);
            }
            for (name, t) in &names {
                prop_assert!(is_dns1123_subdomain(name));
                prop_assert_eq!(storage_class_name(t), Ok(name.clone()));
            }
        }
    }

    // --- names against the API server's own rules (kube-sim's port of apimachinery) ---------

    /// The StorageClass this operator would apply for `share_type`, checked as the API server
    /// checks a create: `metadata.name` and the body. Returns the class as JSON.
    fn accepted_class(share_type: &str) -> Result<serde_json::Value, TestCaseError> {
        let name = storage_class_name(share_type)
            .map_err(|e| TestCaseError::fail(format!("{share_type:?}: {e}")))?;
        let errors = kube_sim::validation::validate_name("storage.k8s.io", "StorageClass", &name);
        prop_assert!(errors.is_empty(), "{name:?}: {errors:?}");
        let desired = crate::build::storage_class(crate::DRIVER_NAMESPACE, &name, share_type)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let object = serde_json::to_value(&desired.object)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let errors =
            kube_sim::validation::validate_create("storage.k8s.io", "StorageClass", &object);
        prop_assert!(errors.is_empty(), "{share_type:?}: {errors:?}");
        prop_assert_eq!(object["metadata"]["name"].as_str(), Some(name.as_str()));
        Ok(object)
    }

    proptest! {
        /// Our validator is the one the repair relies on; it must agree with the server's.
        #[test]
        fn the_validator_agrees_with_the_api_server(
            name in prop_oneof![
                "[a-z0-9.-]{0,20}",
                "[a-zA-Z0-9._ -]{0,20}",
                "\\PC{0,20}",
                "[a-z0-9]{250,256}",
                "([a-z0-9]{1,62}\\.){3,5}[a-z0-9]{1,62}",
            ]
        ) {
            let server = kube_sim::validation::dns1123_subdomain_errors(&name);
            prop_assert_eq!(is_dns1123_subdomain(&name), server.is_empty(), "{:?}: {:?}", name, server);
        }

        /// Non-ASCII names (including characters whose lowercase is longer, such as `İ`) give a
        /// class the server accepts, whose `type` parameter is the share type as Manila wrote it.
        #[test]
        fn non_ascii_names_give_an_accepted_class(
            st in prop_oneof!["\\PC{1,40}", "[İẞΣσςÅﬃ日本_ .a-zA-Z]{1,40}", "[\u{300}-\u{36f}\u{200b}\u{feff}]{1,10}"]
        ) {
            let object = accepted_class(&st)?;
            prop_assert_eq!(object["parameters"]["type"].as_str(), Some(st.as_str()));
        }

        /// A name of nothing but whitespace is not empty: it gets a class (prefix and digest).
        #[test]
        fn whitespace_only_names_give_an_accepted_class(
            // ASCII, no-break, ideographic, line and paragraph separators.
            st in "[ \t\n\r\u{0b}\u{0c}\u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}\u{3000}]{1,40}"
        ) {
            let object = accepted_class(&st)?;
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            prop_assert_eq!(name.len(), STORAGE_CLASS_PREFIX.len() + DIGEST_LEN, "{}", name);
            prop_assert_eq!(object["parameters"]["type"].as_str(), Some(st.as_str()));
        }

        /// Every name OpenShift turned into a valid StorageClass name keeps that name
        /// (switching operators must not create a second class for a share type).
        #[test]
        fn names_openshift_handled_keep_openshift_s_name(
            // Shaped so that OpenShift's lowercasing and `_` → `-` give a valid name: the first
            // label continues `csi-manila-`, later ones start and end with a letter or digit.
            st in "[a-zA-Z0-9_-]{0,20}[a-zA-Z0-9](\\.[a-zA-Z0-9]([a-zA-Z0-9_-]{0,10}[a-zA-Z0-9])?){0,3}"
        ) {
            prop_assume!(is_dns1123_subdomain(&openshift_name(&st)));
            prop_assert_eq!(storage_class_name(&st), Ok(openshift_name(&st)));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// 10,000-character names, ASCII or not: capped at 253, accepted by the server, the full
        /// name kept in the `type` parameter.
        #[test]
        fn ten_thousand_character_names_give_an_accepted_class(
            st in prop_oneof![
                "[a-z]{10000}",
                "[a-zA-Z0-9_ .-]{10000}",
                proptest::collection::vec(any::<char>(), 10_000)
                    .prop_map(|c| c.into_iter().collect::<String>()),
            ]
        ) {
            let object = accepted_class(&st)?;
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            prop_assert!(name.len() <= MAX_NAME_LEN, "{}", name.len());
            prop_assert_eq!(object["parameters"]["type"].as_str(), Some(st.as_str()));
        }
    }

    #[test]
    fn empty_and_whitespace_examples() {
        assert!(matches!(
            storage_class_name(""),
            Err(NameError::Empty { .. })
        ));
        for st in [" ", "\t", "\u{3000}", " \n "] {
            let name = storage_class_name(st).expect("a name");
            assert!(kube_sim::validation::dns1123_subdomain_errors(&name).is_empty());
        }
        // Distinct whitespace names get distinct classes (the digest tells them apart).
        assert_ne!(storage_class_name(" "), storage_class_name("  "));
    }

    /// 5,000 share types (valid, repaired, colliding, non-ASCII, long): every class name is
    /// decided and every StorageClass built in well under the 2 s a refresh may take in a debug
    /// build, i.e. nothing here is quadratic in the number of share types.
    #[test]
    fn five_thousand_share_types_are_named_and_built_quickly() {
        let types: Vec<String> = (0..5_000)
            .map(|i| match i % 5 {
                0 => format!("type_{i}"),
                1 => format!("Type {i} fast"),
                2 => format!("TYPE_{}", i - 2), // collides with `type_{i-2}`
                3 => format!("日本-{i}"),
                _ => format!("{}{i}", "x".repeat(300)),
            })
            .collect();
        let start = std::time::Instant::now();
        let (names, errors) = storage_class_names(types.iter().map(String::as_str));
        let classes: Vec<Desired> = names
            .iter()
            .map(|(name, st)| crate::build::storage_class(crate::DRIVER_NAMESPACE, name, st))
            .collect::<Result<_, _>>()
            .expect("every class builds");
        let elapsed = start.elapsed();
        assert_eq!(names.len() + errors.len(), 5_000);
        assert_eq!(errors.len(), 1_000, "each TYPE_n collides with type_n");
        assert_eq!(classes.len(), 4_000);
        for (name, class) in names.keys().zip(&classes) {
            assert!(is_dns1123_subdomain(name), "{name}");
            assert_eq!(class.object.metadata.name.as_deref(), Some(name.as_str()));
        }
        assert!(
            elapsed < std::time::Duration::from_secs(2),
            "5,000 share types took {elapsed:?}"
        );
    }
}
