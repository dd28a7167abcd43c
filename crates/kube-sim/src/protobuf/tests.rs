//! The protobuf decoder on bodies built as client-go's generated marshallers build them
//! (every non-pointer field written, zero or not), and on malformed bytes.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

// ----- a minimal encoder, as gogo-protobuf's generated Marshal writes -----------------------

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn key(out: &mut Vec<u8>, number: u32, wire: u8) {
    varint(out, (u64::from(number) << 3) | u64::from(wire));
}

/// A message under construction.
#[derive(Default, Clone)]
struct Msg(Vec<u8>);

impl Msg {
    fn new() -> Self {
        Self::default()
    }
    fn str(mut self, n: u32, s: &str) -> Self {
        self.bytes_field(n, s.as_bytes());
        self
    }
    fn bytes(mut self, n: u32, b: &[u8]) -> Self {
        self.bytes_field(n, b);
        self
    }
    fn int(mut self, n: u32, v: i64) -> Self {
        key(&mut self.0, n, VARINT);
        varint(&mut self.0, v as u64);
        self
    }
    fn msg(mut self, n: u32, m: Msg) -> Self {
        self.bytes_field(n, &m.0);
        self
    }
    fn entry(self, n: u32, k: &str, v: &[u8]) -> Self {
        self.msg(n, Msg::new().str(1, k).bytes(2, v))
    }
    fn bytes_field(&mut self, n: u32, b: &[u8]) {
        key(&mut self.0, n, LEN);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
    }
}

/// `k8s\0` + `runtime.Unknown{typeMeta, raw}`, as client-go's protobuf serializer writes.
fn envelope(api_version: &str, kind: &str, raw: &Msg) -> Vec<u8> {
    let unknown = Msg::new()
        .msg(1, Msg::new().str(1, api_version).str(2, kind))
        .bytes(2, &raw.0)
        .str(3, "")
        .str(4, "");
    [MAGIC, &unknown.0].concat()
}

/// ObjectMeta as Go writes it for a new object: every non-pointer field, zero or not.
fn object_meta(name: &str, namespace: &str) -> Msg {
    Msg::new()
        .str(1, name)
        .str(2, "")
        .str(3, namespace)
        .str(4, "")
        .str(5, "")
        .str(6, "")
        .int(7, 0)
        .msg(8, Msg::new()) // a zero creationTimestamp: an empty Timestamp
}

fn decode_ok(body: &[u8]) -> Value {
    decode(body, "", "").unwrap_or_else(|e| panic!("decode failed: {e:?}"))
}

fn decode_err(body: &[u8]) -> ApiError {
    match decode(body, "", "") {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e,
    }
}

// ----- the table ---------------------------------------------------------------------------

#[test]
fn the_table_parses_and_every_message_has_a_finite_zero_value() {
    let schema = schema().expect("the table parses");
    let decoder = Decoder { schema };
    for (i, m) in schema.messages.iter().enumerate() {
        decoder
            .message(i, &[], 0)
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
    }
    for kind in [
        "v1 ConfigMap",
        "v1 Namespace",
        "v1 Secret",
        "v1 Service",
        "v1 ServiceAccount",
        "v1 Pod",
        "apps/v1 Deployment",
        "apps/v1 DaemonSet",
        "rbac.authorization.k8s.io/v1 ClusterRole",
        "rbac.authorization.k8s.io/v1 RoleBinding",
        "policy/v1 PodDisruptionBudget",
        "coordination.k8s.io/v1 Lease",
        "storage.k8s.io/v1 StorageClass",
        "meta.k8s.io/v1 DeleteOptions",
    ] {
        assert!(schema.kind_list().contains(kind), "{kind} is missing");
    }
}

#[test]
fn a_broken_table_is_an_error_not_a_panic() {
    for text in [
        "a.v1.X\n  1 name nosuch.v1.Y\n",
        "a.v1.X\n  0 name string\n",
        "a.v1.X\n  1 name string\n  1 other string\n",
        "  1 name string\n",
        "a.v1.X\na.v1.X\n",
        "a.v1.X = v1\n",
        "a.v1.X\n  1 name string sometimes\n",
        "a.v1.X\n  1 - string inline\n",
        "a.v1.X\n  1\n",
    ] {
        assert!(Schema::parse(text).is_err(), "{text:?} parsed");
    }
}

// ----- what kubectl create sends -----------------------------------------------------------

#[test]
fn a_configmap_decodes_to_the_json_the_server_stores() {
    let cm = Msg::new()
        .msg(1, object_meta("c", "default"))
        .entry(2, "a", b"b")
        .entry(3, "bin", &[0, 1, 2]);
    let v = decode_ok(&envelope("v1", "ConfigMap", &cm));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "creationTimestamp": null},
            "data": {"a": "b"},
            "binaryData": {"bin": "AAEC"},
        })
    );
}

#[test]
fn secret_data_is_base64_and_string_data_stays_text() {
    let secret = Msg::new()
        .msg(1, object_meta("s", ""))
        .entry(2, "a", b"b")
        .str(3, "Opaque")
        .entry(4, "plain", b"text")
        .int(5, 0); // *bool immutable = false: present, so kept
    let v = decode_ok(&envelope("v1", "Secret", &secret));
    assert_eq!(v["data"], json!({"a": "Yg=="}));
    assert_eq!(v["stringData"], json!({"plain": "text"}));
    assert_eq!(v["type"], "Opaque");
    assert_eq!(v["immutable"], false);
    assert_eq!(
        v["metadata"],
        json!({"name": "s", "creationTimestamp": null})
    );
}

#[test]
fn a_deployment_keeps_pointer_zeros_and_drops_omitempty_zeros() {
    let container = Msg::new()
        .str(1, "nginx")
        .str(2, "nginx")
        .msg(8, Msg::new()) // resources: a non-pointer struct
        .str(5, "")
        .str(13, "")
        .str(14, "")
        .int(16, 0) // stdin false: omitempty
        .msg(9, Msg::new().str(1, "data").str(3, "/data").int(2, 1)); // a volume mount
    let template = Msg::new()
        .msg(
            1,
            object_meta("", "").msg(11, Msg::new().str(1, "app").str(2, "d")),
        )
        .msg(
            2,
            Msg::new()
                .msg(2, container)
                .str(3, "")
                .int(4, 0) // *int64 terminationGracePeriodSeconds = 0: kept
                .str(6, "")
                .str(8, "")
                .int(11, 0) // hostNetwork false: omitempty
                .msg(
                    1,
                    Msg::new()
                        .str(1, "data")
                        .msg(2, Msg::new().msg(2, Msg::new())),
                ),
        );
    let deployment = Msg::new()
        .msg(
            1,
            object_meta("d", "").msg(11, Msg::new().str(1, "app").str(2, "d")),
        )
        .msg(
            2,
            Msg::new()
                .int(1, 0) // *int32 replicas = 0: kept, or it would default to 1
                .msg(2, Msg::new().msg(1, Msg::new().str(1, "app").str(2, "d")))
                .msg(3, template)
                .msg(4, Msg::new().str(1, ""))
                .int(5, 0)
                .int(7, 0),
        )
        .msg(3, Msg::new().int(1, 0).int(2, 0));
    let v = decode_ok(&envelope("apps/v1", "Deployment", &deployment));
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "d"}, "creationTimestamp": null},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}, "creationTimestamp": null},
                    "spec": {
                        "volumes": [{"name": "data", "emptyDir": {}}],
                        "containers": [{
                            "name": "nginx",
                            "image": "nginx",
                            "resources": {},
                            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
                        }],
                        "terminationGracePeriodSeconds": 0,
                    },
                },
                "strategy": {},
            },
            "status": {},
        })
    );
}

#[test]
fn absent_non_pointer_fields_are_written_as_go_writes_them() {
    // A RoleRef's fields have no omitempty: absent, they are written empty; a Subject's
    // apiGroup and namespace are omitempty.
    let binding = Msg::new()
        .msg(1, object_meta("rb", "ns"))
        .msg(2, Msg::new().str(1, "ServiceAccount").str(3, "sa"))
        .msg(3, Msg::new().str(2, "Role").str(3, "r"));
    let v = decode_ok(&envelope(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        &binding,
    ));
    assert_eq!(
        v["subjects"],
        json!([{"kind": "ServiceAccount", "name": "sa"}])
    );
    assert_eq!(
        v["roleRef"],
        json!({"apiGroup": "", "kind": "Role", "name": "r"})
    );
}

#[test]
fn special_types_render_as_their_json_forms() {
    let service = Msg::new().msg(1, object_meta("svc", "")).msg(
        2,
        Msg::new()
            .msg(
                1,
                Msg::new()
                    .str(2, "TCP")
                    .int(3, 80)
                    .msg(4, Msg::new().int(1, 1).str(3, "http")),
            )
            .msg(
                1,
                Msg::new()
                    .str(1, "metrics")
                    .int(3, 9090)
                    .msg(4, Msg::new().int(1, 0).int(2, 9091)),
            ),
    );
    let v = decode_ok(&envelope("v1", "Service", &service));
    assert_eq!(v["spec"]["ports"][0]["targetPort"], "http");
    assert_eq!(v["spec"]["ports"][1]["targetPort"], 9091);
    assert_eq!(v["spec"]["ports"][0]["port"], 80);

    // Time keeps seconds; MicroTime keeps microseconds; quantities stay strings.
    let lease = Msg::new().msg(1, object_meta("l", "")).msg(
        2,
        Msg::new()
            .str(1, "me")
            .msg(4, Msg::new().int(1, 1_700_000_000).int(2, 123_456_789)),
    );
    let v = decode_ok(&envelope("coordination.k8s.io/v1", "Lease", &lease));
    assert_eq!(v["spec"]["renewTime"], "2023-11-14T22:13:20.123456Z");
    let meta = object_meta("t", "").msg(8, Msg::new().int(1, 1_700_000_000).int(2, 5));
    let v = decode_ok(&envelope("v1", "Namespace", &Msg::new().msg(1, meta)));
    assert_eq!(v["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
    // A Go zero time written as a Timestamp is null too.
    let meta = object_meta("t", "").msg(8, Msg::new().int(1, GO_ZERO_TIME_SECONDS));
    let v = decode_ok(&envelope("v1", "Namespace", &Msg::new().msg(1, meta)));
    assert_eq!(v["metadata"]["creationTimestamp"], Value::Null);

    let requests = Msg::new().entry(2, "cpu", &Msg::new().str(1, "100m").0);
    let pod = Msg::new().msg(1, object_meta("p", "")).msg(
        2,
        Msg::new().msg(2, Msg::new().str(1, "c").msg(8, requests)),
    );
    let v = decode_ok(&envelope("v1", "Pod", &pod));
    assert_eq!(
        v["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "100m"}})
    );

    // Managed fields carry their FieldsV1 JSON as bytes.
    let entry = Msg::new()
        .str(1, "kubectl")
        .str(2, "Update")
        .str(3, "v1")
        .str(6, "FieldsV1")
        .msg(7, Msg::new().bytes(1, br#"{"f:data":{}}"#));
    let meta = object_meta("m", "").msg(17, entry);
    let v = decode_ok(&envelope("v1", "ConfigMap", &Msg::new().msg(1, meta)));
    assert_eq!(
        v["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {}})
    );

    // ExtraValue is a message holding a list.
    let review = Msg::new().msg(1, object_meta("", "")).msg(
        2,
        Msg::new()
            .str(3, "alice")
            .entry(5, "scopes", &Msg::new().str(1, "a").str(1, "b").0),
    );
    let v = decode_ok(&envelope(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &review,
    ));
    assert_eq!(v["spec"]["extra"], json!({"scopes": ["a", "b"]}));
}

#[test]
fn repeated_scalars_are_read_packed_or_not() {
    let packed = {
        let mut ints = Vec::new();
        varint(&mut ints, 5);
        varint(&mut ints, 6);
        ints
    };
    let ctx = Msg::new().int(4, 7).bytes(4, &packed);
    let pod = Msg::new()
        .msg(1, object_meta("p", ""))
        .msg(2, Msg::new().msg(14, ctx));
    let v = decode_ok(&envelope("v1", "Pod", &pod));
    assert_eq!(
        v["spec"]["securityContext"]["supplementalGroups"],
        json!([7, 5, 6])
    );
}

#[test]
fn unknown_fields_are_skipped_as_a_real_server_skips_them() {
    let cm = Msg::new()
        .msg(1, object_meta("c", "").str(99, "from a newer client"))
        .int(77, 1)
        .entry(2, "a", b"b");
    let v = decode_ok(&envelope("v1", "ConfigMap", &cm));
    assert_eq!(v["data"], json!({"a": "b"}));
    assert_eq!(v["metadata"]["name"], "c");
}

#[test]
fn an_envelope_without_type_meta_takes_the_endpoints() {
    let unknown = Msg::new().msg(2, Msg::new().msg(1, object_meta("x", "")));
    let body = [MAGIC, &unknown.0].concat();
    let v = decode(&body, "v1", "Namespace").expect("decodes");
    assert_eq!(v["kind"], "Namespace");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["metadata"]["name"], "x");
}

#[test]
fn delete_options_decode_under_any_group_version() {
    let opts = Msg::new()
        .str(4, "Foreground")
        .msg(2, Msg::new().str(1, "uid-1"))
        .str(5, "All");
    let v = decode_ok(&envelope("apps/v1", "DeleteOptions", &opts));
    assert_eq!(v["propagationPolicy"], "Foreground");
    assert_eq!(v["preconditions"], json!({"uid": "uid-1"}));
    assert_eq!(v["dryRun"], json!(["All"]));
}

// ----- malformed and unsupported bodies -----------------------------------------------------

#[test]
fn a_body_without_the_magic_is_a_bad_request() {
    for body in [
        &b""[..],
        b"k8s",
        b"{\"kind\":\"ConfigMap\"}",
        b"k8x\0\x0a\x00",
    ] {
        let e = decode_err(body);
        assert_eq!(e.code, 400, "{body:?}");
        assert!(
            e.message.contains("expected prefix [107 56 115 0]"),
            "{e:?}"
        );
    }
}

#[test]
fn malformed_bytes_are_bad_requests_that_say_why() {
    let good = envelope(
        "v1",
        "ConfigMap",
        &Msg::new().msg(1, object_meta("c", "")).entry(2, "a", b"b"),
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // Every truncation of a valid body.
        (good[..good.len() - 1].to_vec(), "unexpected EOF"),
        (good[..10].to_vec(), "unexpected EOF"),
        // A length running past the end.
        ([MAGIC, &[0x12, 0x7f, 0x0a]].concat(), "unexpected EOF"),
        // A varint that never ends, and one longer than 64 bits.
        ([MAGIC, &[0x28, 0xff, 0xff]].concat(), "unexpected EOF"),
        (
            [MAGIC, &[0x28], &[0xff; 10], &[0x01]].concat(),
            "integer overflow",
        ),
        // Field number 0, groups, an unknown wire type.
        ([MAGIC, &[0x00, 0x00]].concat(), "illegal tag 0"),
        ([MAGIC, &[0x2b]].concat(), "groups"),
        ([MAGIC, &[0x2e]].concat(), "illegal wire type 6"),
    ];
    for (body, why) in cases {
        let e = decode_err(&body);
        assert_eq!(e.code, 400, "{body:?}: {e:?}");
        assert_eq!(e.reason, "BadRequest");
        assert!(e.message.contains(why), "{body:?}: {e:?} should say {why}");
    }
}

#[test]
fn a_wrong_wire_type_for_a_known_field_names_it() {
    // metadata.name as a varint.
    let cm = Msg::new().msg(1, Msg::new().int(1, 5));
    let e = decode_err(&envelope("v1", "ConfigMap", &cm));
    assert_eq!(e.code, 400);
    assert!(
        e.message.contains("ObjectMeta.name: wrong wire type 0"),
        "{e:?}"
    );
    // replicas as a string.
    let d = Msg::new().msg(2, Msg::new().str(1, "3"));
    let e = decode_err(&envelope("apps/v1", "Deployment", &d));
    assert!(e.message.contains("DeploymentSpec.replicas"), "{e:?}");
    // A map entry that is not a message.
    let cm = Msg::new().int(2, 1);
    let e = decode_err(&envelope("v1", "ConfigMap", &cm));
    assert!(e.message.contains("ConfigMap.data"), "{e:?}");
}

#[test]
fn bad_embedded_json_and_impossible_times_are_bad_requests() {
    let entry = Msg::new().msg(7, Msg::new().bytes(1, b"{not json"));
    let cm = Msg::new().msg(1, object_meta("m", "").msg(17, entry));
    let e = decode_err(&envelope("v1", "ConfigMap", &cm));
    assert_eq!(e.code, 400);
    assert!(e.message.contains("embedded JSON"), "{e:?}");

    for seconds in [i64::MAX, i64::MIN, 300_000_000_000] {
        let meta = object_meta("t", "").msg(8, Msg::new().int(1, seconds));
        let e = decode_err(&envelope("v1", "Namespace", &Msg::new().msg(1, meta)));
        assert_eq!(e.code, 400, "{seconds}");
    }
}

#[test]
fn deep_nesting_is_refused() {
    // Unknown fields are skipped, not descended into, so a body nests only as deep as the
    // table, which has no cycles; the guard is checked directly.
    let schema = schema().expect("table");
    let decoder = Decoder { schema };
    let index = schema.root("v1", "ConfigMap").expect("ConfigMap");
    let e = decoder
        .message(index, &[], MAX_DEPTH + 1)
        .expect_err("too deep");
    assert!(e.contains("nested too deeply"), "{e}");
}

#[test]
fn kinds_without_a_table_are_unsupported_media_types_naming_what_is_supported() {
    for (api_version, kind) in [
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("batch/v1", "Job"),
        ("example.com/v1", "Widget"),
        ("v1", ""),
    ] {
        let e = decode_err(&envelope(api_version, kind, &Msg::new()));
        assert_eq!(e.code, 415, "{kind}");
        assert_eq!(e.reason, "UnsupportedMediaType");
        assert!(e.message.contains("apps/v1 Deployment"), "{e:?}");
        assert!(e.message.contains("v1 ConfigMap"), "{e:?}");
    }
}

proptest! {
    /// Any bytes after the magic: an object or an error, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&[MAGIC, &bytes].concat(), "v1", "ConfigMap");
        let _ = decode(&bytes, "v1", "ConfigMap");
    }

    /// A valid Deployment with bytes flipped: decoding never panics.
    #[test]
    fn corrupted_objects_never_panic(at in 0usize..400, byte in any::<u8>()) {
        let template = Msg::new().msg(2, Msg::new().msg(2, Msg::new().str(1, "c").str(2, "img")));
        let d = Msg::new()
            .msg(1, object_meta("d", "ns"))
            .msg(2, Msg::new().int(1, 3).msg(3, template));
        let mut body = envelope("apps/v1", "Deployment", &d);
        let at = at % body.len();
        body[at] = byte;
        let _ = decode(&body, "apps/v1", "Deployment");
    }
}
