//! Checks `operator_kit::hash` against every vector in `tests/data/hash-vectors.tsv`, which Go's
//! own standard library printed (a copy of `shared/reference/hash-vectors.tsv`, kept in the repo
//! so the build never reaches outside it).

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::ByteString;
use operator_kit::hash::{self, DependencyKind};

const VECTORS: &str = include_str!("data/hash-vectors.tsv");

fn kind_of(resource: &str) -> DependencyKind {
    match resource {
        "configmap" => DependencyKind::ConfigMap,
        "secret" => DependencyKind::Secret,
        other => panic!("unknown resource {other:?} in the vectors file"),
    }
}

#[test]
fn every_go_vector_matches() {
    let mut hashes = 0;
    let mut keys = 0;
    for (lineno, line) in VECTORS.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        match cols.as_slice() {
            ["hash", kind, input, expected] => {
                let got = match *kind {
                    "configmap" => {
                        let data: Option<BTreeMap<String, String>> =
                            serde_json::from_str(input).unwrap();
                        hash::configmap_data_hash(data.as_ref())
                    }
                    "secret" => {
                        let data: Option<BTreeMap<String, String>> =
                            serde_json::from_str(input).unwrap();
                        let data = data.map(|m| {
                            m.into_iter()
                                .map(|(k, v)| {
                                    let bytes = base64::engine::general_purpose::STANDARD
                                        .decode(v)
                                        .unwrap();
                                    (k, ByteString(bytes))
                                })
                                .collect::<BTreeMap<_, _>>()
                        });
                        hash::secret_data_hash(data.as_ref())
                    }
                    other => panic!("line {}: unknown kind {other:?}", lineno + 1),
                };
                assert_eq!(&got, expected, "line {}: {kind} {input}", lineno + 1);
                hashes += 1;
            }
            ["key", k, expected] => {
                let (rest, resource) = k.rsplit_once('.').unwrap();
                let (namespace, name) = rest.split_once('.').unwrap();
                let got = hash::dependency_annotation_key(kind_of(resource), namespace, name);
                assert_eq!(&got, expected, "line {}: key {k}", lineno + 1);
                keys += 1;
            }
            _ => panic!("line {}: unexpected columns {cols:?}", lineno + 1),
        }
    }
    // Every data row of the file was checked (guards against a silently skipped format change).
    assert_eq!((hashes, keys), (17, 7));
}
