//! Property tests of decoding the operator resources the operators read and write back
//! (`ClusterCSIDriver`, `Storage`) with [`openshift_api::decode::from_value`]:
//!
//! * any JSON is decoded or refused without a panic, and a refusal names the kind and object;
//! * a spec or status written by anyone (unknown enum values, fields of a newer API, free-form
//!   `observedConfig`) reads and writes back unchanged, so a read-modify-write never loses or
//!   alters what another writer put there;
//! * a field of the wrong type is refused, and the message names the field and quotes no string
//!   value of the object.

use openshift_api::decode::from_value;
use openshift_api::{ClusterCSIDriver, Storage};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON, with strings that may be the planted marker.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-zA-Z]{0,8}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Any JSON but null (a null optional field is not written back, as on a real server).
fn any_value() -> impl Strategy<Value = Value> {
    any_json().prop_filter("not null", |v| !v.is_null())
}

/// Any string an enum field may hold: the known values, empty, unknown ones, any script.
fn enum_value(known: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::sample::select(known).prop_map(|s| json!(s)),
        Just(json!("")),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

const OPERATOR_SPEC_FIELDS: [&str; 5] = [
    "managementState",
    "logLevel",
    "operatorLogLevel",
    "unsupportedConfigOverrides",
    "observedConfig",
];

/// Fields of a newer API: any name the crate does not model.
fn extra_fields(modelled: &'static [&'static str]) -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("[a-z][a-zA-Z0-9]{0,10}", any_json(), 0..4).prop_map(move |m| {
        m.into_iter()
            .filter(|(k, _)| !modelled.contains(&k.as_str()))
            .collect()
    })
}

fn operator_spec() -> impl Strategy<Value = Map<String, Value>> {
    (
        proptest::option::of(enum_value(&["Managed", "Unmanaged", "Force", "Removed"])),
        proptest::option::of(enum_value(&["Normal", "Debug", "Trace", "TraceAll"])),
        proptest::option::of(enum_value(&["Normal", "Debug", "Trace", "TraceAll"])),
        proptest::option::of(any_value()),
        proptest::option::of(any_value()),
    )
        .prop_map(|fields| {
            let (a, b, c, d, e) = fields;
            OPERATOR_SPEC_FIELDS
                .iter()
                .zip([a, b, c, d, e])
                .filter_map(|(k, v)| Some(((*k).to_string(), v?)))
                .collect()
        })
}

const CSI_SPEC_FIELDS: [&str; 7] = [
    "managementState",
    "logLevel",
    "operatorLogLevel",
    "unsupportedConfigOverrides",
    "observedConfig",
    "storageClassState",
    "driverConfig",
];

fn cluster_csi_driver_spec() -> impl Strategy<Value = Value> {
    (
        operator_spec(),
        proptest::option::of(enum_value(&["Managed", "Unmanaged", "Removed"])),
        proptest::option::of((
            enum_value(&["AWS", "Azure", "GCP", "IBMCloud", "vSphere", "SecretsStore"]),
            extra_fields(&["driverType"]),
        )),
        extra_fields(&CSI_SPEC_FIELDS),
    )
        .prop_map(|(mut spec, state, driver, extra)| {
            if let Some(s) = state {
                spec.insert("storageClassState".into(), s);
            }
            if let Some((driver_type, mut members)) = driver {
                members.insert("driverType".into(), driver_type);
                spec.insert("driverConfig".into(), Value::Object(members));
            }
            spec.extend(extra);
            Value::Object(spec)
        })
}

const STORAGE_SPEC_FIELDS: [&str; 6] = [
    "managementState",
    "logLevel",
    "operatorLogLevel",
    "unsupportedConfigOverrides",
    "observedConfig",
    "vsphereStorageDriver",
];

fn storage_spec() -> impl Strategy<Value = Value> {
    (
        operator_spec(),
        proptest::option::of(enum_value(&[
            "LegacyDeprecatedInTreeDriver",
            "CSIWithMigrationDriver",
        ])),
        extra_fields(&STORAGE_SPEC_FIELDS),
    )
        .prop_map(|(mut spec, vsphere, extra)| {
            if let Some(v) = vsphere {
                spec.insert("vsphereStorageDriver".into(), v);
            }
            spec.extend(extra);
            Value::Object(spec)
        })
}

const STATUS_FIELDS: [&str; 6] = [
    "observedGeneration",
    "conditions",
    "version",
    "readyReplicas",
    "latestAvailableRevision",
    "generations",
];

fn status() -> impl Strategy<Value = Value> {
    let condition = (
        "[A-Za-z]{1,12}",
        prop_oneof![Just("True"), Just("False"), Just("Unknown")],
        "[A-Za-z]{1,8}",
        "\\PC{1,20}",
        proptest::option::of(Just("2025-01-02T03:04:05Z")),
    )
        .prop_map(|(t, s, reason, message, at)| {
            let mut c = json!({"type": t, "status": s, "reason": reason, "message": message});
            if let Some(at) = at {
                c["lastTransitionTime"] = json!(at);
            }
            c
        });
    let generation = (
        "[a-z.]{0,8}",
        "[a-z]{1,8}",
        "[a-z-]{0,8}",
        "[a-z-]{1,8}",
        any::<i64>(),
        "[a-f0-9]{0,8}",
    )
        .prop_map(|(group, resource, namespace, name, last, hash)| {
            json!({"group": group, "resource": resource, "namespace": namespace,
                "name": name, "lastGeneration": last, "hash": hash})
        });
    (
        proptest::option::of(any::<i64>()),
        proptest::collection::vec(condition, 0..3),
        proptest::option::of("\\PC{0,8}"),
        any::<i32>(),
        proptest::option::of(any::<i32>()),
        proptest::collection::vec(generation, 0..3),
        extra_fields(&STATUS_FIELDS),
    )
        .prop_map(
            |(observed, conditions, version, ready, latest, generations, extra)| {
                let mut s = Map::new();
                if let Some(o) = observed {
                    s.insert("observedGeneration".into(), json!(o));
                }
                // Conditions are a list-map keyed by type: one per type.
                let mut seen = std::collections::BTreeSet::new();
                let conditions: Vec<Value> = conditions
                    .into_iter()
                    .filter(|c| seen.insert(c["type"].to_string()))
                    .collect();
                if !conditions.is_empty() {
                    s.insert("conditions".into(), Value::Array(conditions));
                }
                if let Some(v) = version {
                    s.insert("version".into(), json!(v));
                }
                s.insert("readyReplicas".into(), json!(ready));
                if let Some(l) = latest {
                    s.insert("latestAvailableRevision".into(), json!(l));
                }
                if !generations.is_empty() {
                    s.insert("generations".into(), Value::Array(generations));
                }
                s.extend(extra);
                Value::Object(s)
            },
        )
}

fn object(api_version: &str, kind: &str, name: &str, spec: Value, status: Option<Value>) -> Value {
    let mut o = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "resourceVersion": "7", "generation": 3},
        "spec": spec,
    });
    if let Some(s) = status {
        o["status"] = s;
    }
    o
}

/// A JSON value of a type other than `expected` ("string", "object").
fn wrong_type(expected: &'static str) -> impl Strategy<Value = Value> {
    let planted = "S3CRET-[a-z]{6}".prop_map(Value::String);
    let others = prop_oneof![
        any::<i64>().prop_map(|i| json!(i)),
        any::<bool>().prop_map(Value::Bool),
        Just(json!([1, "two"])),
        Just(json!({"nested": "S3CRET-nested"})),
    ];
    match expected {
        "string" => others
            .prop_filter("not a string", |v| !v.is_string())
            .boxed(),
        _ => prop_oneof![planted, others]
            .prop_filter("not an object", |v| !v.is_object())
            .boxed(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_json_is_decoded_or_refused_with_the_object_named(
        value in prop_oneof![
            any_json(),
            (any_json(), any_json()).prop_map(|(spec, status)| {
                json!({"metadata": {"name": "cinder.csi.openstack.org"}, "spec": spec, "status": status})
            }),
            (any_json(), "[a-z]{1,8}", "[a-z]{1,8}").prop_map(|(meta, ns, name)| {
                let mut v = json!({"metadata": meta, "spec": {}});
                if meta.is_object() {
                    v["metadata"]["namespace"] = json!(ns);
                    v["metadata"]["name"] = json!(name);
                }
                v
            }),
        ]
    ) {
        let meta = value.get("metadata");
        let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str);
        let name = match (field("namespace"), field("name")) {
            (Some(ns), Some(n)) => format!("{ns}/{n}"),
            (None, Some(n)) => n.to_string(),
            _ => "<no name>".to_string(),
        };
        if let Err(e) = from_value::<ClusterCSIDriver>(value.clone()) {
            let msg = e.to_string();
            let prefix = format!("ClusterCSIDriver {name:?} does not match the ClusterCSIDriver API");
            prop_assert!(msg.starts_with(&prefix), "{}", msg);
        }
        if let Err(e) = from_value::<Storage>(value) {
            let msg = e.to_string();
            let prefix = format!("Storage {name:?} does not match the Storage API");
            prop_assert!(msg.starts_with(&prefix), "{}", msg);
        }
    }

    #[test]
    fn a_cluster_csi_driver_writes_back_what_it_read(
        spec in cluster_csi_driver_spec(),
        status in proptest::option::of(status()),
    ) {
        let value = object("operator.openshift.io/v1", "ClusterCSIDriver",
            "cinder.csi.openstack.org", spec, status);
        let cr = from_value::<ClusterCSIDriver>(value.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = serde_json::to_value(&cr).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back["spec"], &value["spec"]);
        prop_assert_eq!(back.get("status"), value.get("status"));
        // And again: a second read-modify-write is the same.
        let again = from_value::<ClusterCSIDriver>(back).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(again, cr);
    }

    #[test]
    fn a_storage_writes_back_what_it_read(
        spec in storage_spec(),
        status in proptest::option::of(status()),
    ) {
        let value = object("operator.openshift.io/v1", "Storage", "cluster", spec, status);
        let cr = from_value::<Storage>(value.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = serde_json::to_value(&cr).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back["spec"], &value["spec"]);
        prop_assert_eq!(back.get("status"), value.get("status"));
    }

    /// A known field of the wrong type is refused with a message that names the object and
    /// says what was expected.
    #[test]
    fn a_field_of_the_wrong_type_is_refused(spec in cluster_csi_driver_spec(), (field, bad) in wrong_field()) {
        let msg = refusal(spec, field, bad)?;
        let prefix = "ClusterCSIDriver \"cinder.csi.openstack.org\" does not match the ClusterCSIDriver API at spec.";
        prop_assert!(msg.starts_with(prefix), "{}", msg);
        prop_assert!(msg.contains("expected"), "{}", msg);
    }

    /// The field is named although serde's message names none (and `#[serde(flatten)]` loses
    /// the path even for a path-tracking deserializer), and a string where an object is
    /// expected is not quoted back.
    #[test]
    fn a_field_of_the_wrong_type_is_named_and_not_quoted(
        spec in cluster_csi_driver_spec(),
        (field, bad) in wrong_field(),
    ) {
        let msg = refusal(spec, field, bad)?;
        prop_assert!(!msg.contains("S3CRET"), "{}", msg);
        prop_assert!(msg.contains(&format!("spec.{field}")), "{} does not name spec.{}", msg, field);
    }
}

/// A known spec field and a value of the wrong type for it.
fn wrong_field() -> impl Strategy<Value = (&'static str, Value)> {
    prop_oneof![
        wrong_type("string").prop_map(|v| ("managementState", v)),
        wrong_type("string").prop_map(|v| ("logLevel", v)),
        wrong_type("string").prop_map(|v| ("operatorLogLevel", v)),
        wrong_type("string").prop_map(|v| ("storageClassState", v)),
        wrong_type("object").prop_map(|v| ("driverConfig", v)),
    ]
}

/// The message refusing `spec` with `field` set to `bad`.
fn refusal(mut spec: Value, field: &str, bad: Value) -> Result<String, TestCaseError> {
    spec[field] = bad;
    let value = object(
        "operator.openshift.io/v1",
        "ClusterCSIDriver",
        "cinder.csi.openstack.org",
        spec,
        None,
    );
    match from_value::<ClusterCSIDriver>(value) {
        Ok(cr) => Err(TestCaseError::fail(format!("accepted: {cr:?}"))),
        Err(e) => Ok(e.to_string()),
    }
}
