//! Tests of CRDs and custom resources, with the server's exact messages (the ClusterCSIDriver
//! CRD of openshift/api is the main fixture).

use super::common::go_float;
use super::defaulting::apply_defaults;
use super::definition::{crd_info, prepare_crd, validate_crd};
use super::formats::format_ok;
use super::pruning::prune;
use super::schema::Schema;
use super::validation::{validate, validate_status};
use crate::field_error::FieldError;
use crate::json::go_quote;
use crate::list_types::{ListKind, ListTypes};
use crate::validation::{dns1035_label_errors, dns1123_subdomain_errors};
use serde_json::Value;
use serde_json::json;

/// OpenShift's ClusterCSIDriver CRD (openshift/api, operator/v1,
/// zz_generated.crd-manifests/0000_90_csi-driver_01_clustercsidrivers.crd.yaml), with the
/// descriptions removed.
const CLUSTER_CSI_DRIVER_CRD: &str = r##"
{
 "apiVersion": "apiextensions.k8s.io/v1",
 "kind": "CustomResourceDefinition",
 "metadata": {
  "annotations": {
   "api-approved.openshift.io": "https://github.com/openshift/api/pull/701",
   "include.release.openshift.io/self-managed-high-availability": "true"
  },
  "name": "clustercsidrivers.operator.openshift.io"
 },
 "spec": {
  "group": "operator.openshift.io",
  "names": {
   "kind": "ClusterCSIDriver",
   "listKind": "ClusterCSIDriverList",
   "plural": "clustercsidrivers",
   "singular": "clustercsidriver"
  },
  "scope": "Cluster",
  "versions": [
   {
"name": "v1",
"schema": {
 "openAPIV3Schema": {
  "properties": {
   "apiVersion": {
    "type": "string"
   },
   "kind": {
    "type": "string"
   },
   "metadata": {
    "properties": {
     "name": {
      "enum": [
       "ebs.csi.aws.com",
       "efs.csi.aws.com",
       "disk.csi.azure.com",
       "file.csi.azure.com",
       "filestore.csi.storage.gke.io",
       "pd.csi.storage.gke.io",
       "cinder.csi.openstack.org",
       "csi.vsphere.vmware.com",
       "manila.csi.openstack.org",
       "csi.ovirt.org",
       "csi.kubevirt.io",
       "csi.sharedresource.openshift.io",
       "diskplugin.csi.alibabacloud.com",
       "vpc.block.csi.ibm.io",
       "powervs.csi.ibm.com",
       "secrets-store.csi.k8s.io",
       "smb.csi.k8s.io"
      ],
      "type": "string"
     }
    },
    "type": "object"
   },
   "spec": {
    "properties": {
     "driverConfig": {
      "properties": {
       "aws": {
        "properties": {
         "kmsKeyARN": {
          "pattern": "^arn:(aws|aws-cn|aws-us-gov|aws-iso|aws-iso-b|aws-iso-e|aws-iso-f):kms:[a-z0-9-]+:[0-9]{12}:(key|alias)\\/.*$",
          "type": "string"
         }
        },
        "type": "object"
       },
       "azure": {
        "properties": {
         "diskEncryptionSet": {
          "properties": {
           "name": {
            "maxLength": 80,
            "pattern": "^[a-zA-Z0-9\\_-]+$",
            "type": "string"
           },
           "resourceGroup": {
            "maxLength": 90,
            "pattern": "^[\\w\\.\\-\\(\\)]*[\\w\\-\\(\\)]$",
            "type": "string"
           },
           "subscriptionID": {
            "maxLength": 36,
            "pattern": "^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}$",
            "type": "string"
           }
          },
          "required": [
           "name",
           "resourceGroup",
           "subscriptionID"
          ],
          "type": "object"
         }
        },
        "type": "object"
       },
       "driverType": {
        "enum": [
         "",
         "AWS",
         "Azure",
         "GCP",
         "IBMCloud",
         "vSphere"
        ],
        "type": "string"
       },
       "gcp": {
        "properties": {
         "kmsKey": {
          "properties": {
           "keyRing": {
            "maxLength": 63,
            "minLength": 1,
            "pattern": "^[a-zA-Z0-9\\_-]+$",
            "type": "string"
           },
           "location": {
            "pattern": "^[a-zA-Z0-9\\_-]+$",
            "type": "string"
           },
           "name": {
            "maxLength": 63,
            "minLength": 1,
            "pattern": "^[a-zA-Z0-9\\_-]+$",
            "type": "string"
           },
           "projectID": {
            "maxLength": 30,
            "minLength": 6,
            "pattern": "^[a-z][a-z0-9-]+[a-z0-9]$",
            "type": "string"
           }
          },
          "required": [
           "keyRing",
           "name",
           "projectID"
          ],
          "type": "object"
         }
        },
        "type": "object"
       },
       "ibmcloud": {
        "properties": {
         "encryptionKeyCRN": {
          "maxLength": 154,
          "minLength": 144,
          "pattern": "^crn:v[0-9]+:bluemix:(public|private):(kms|hs-crypto):[a-z-]+:a/[0-9a-f]+:[0-9a-f-]{36}:key:[0-9a-f-]{36}$",
          "type": "string"
         }
        },
        "required": [
         "encryptionKeyCRN"
        ],
        "type": "object"
       },
       "vSphere": {
        "properties": {
         "globalMaxSnapshotsPerBlockVolume": {
          "format": "int32",
          "maximum": 32,
          "minimum": 1,
          "type": "integer"
         },
         "granularMaxSnapshotsPerBlockVolumeInVSAN": {
          "format": "int32",
          "maximum": 32,
          "minimum": 1,
          "type": "integer"
         },
         "granularMaxSnapshotsPerBlockVolumeInVVOL": {
          "format": "int32",
          "maximum": 32,
          "minimum": 1,
          "type": "integer"
         },
         "topologyCategories": {
          "items": {
           "type": "string"
          },
          "type": "array",
          "x-kubernetes-list-type": "atomic"
         }
        },
        "type": "object"
       }
      },
      "required": [
       "driverType"
      ],
      "type": "object",
      "x-kubernetes-validations": [
       {
        "message": "ibmcloud must be set if driverType is 'IBMCloud', but remain unset otherwise",
        "rule": "has(self.driverType) && self.driverType == 'IBMCloud' ? has(self.ibmcloud) : !has(self.ibmcloud)"
       }
      ]
     },
     "logLevel": {
      "default": "Normal",
      "enum": [
       "",
       "Normal",
       "Debug",
       "Trace",
       "TraceAll"
      ],
      "type": "string"
     },
     "managementState": {
      "pattern": "^(Managed|Unmanaged|Force|Removed)$",
      "type": "string"
     },
     "observedConfig": {
      "nullable": true,
      "type": "object",
      "x-kubernetes-preserve-unknown-fields": true
     },
     "operatorLogLevel": {
      "default": "Normal",
      "enum": [
       "",
       "Normal",
       "Debug",
       "Trace",
       "TraceAll"
      ],
      "type": "string"
     },
     "storageClassState": {
      "enum": [
       "",
       "Managed",
       "Unmanaged",
       "Removed"
      ],
      "type": "string"
     },
     "unsupportedConfigOverrides": {
      "nullable": true,
      "type": "object",
      "x-kubernetes-preserve-unknown-fields": true
     }
    },
    "type": "object"
   },
   "status": {
    "properties": {
     "conditions": {
      "items": {
       "properties": {
        "lastTransitionTime": {
         "format": "date-time",
         "type": "string"
        },
        "message": {
         "type": "string"
        },
        "reason": {
         "type": "string"
        },
        "status": {
         "type": "string"
        },
        "type": {
         "type": "string"
        }
       },
       "required": [
        "type"
       ],
       "type": "object"
      },
      "type": "array",
      "x-kubernetes-list-map-keys": [
       "type"
      ],
      "x-kubernetes-list-type": "map"
     },
     "generations": {
      "items": {
       "properties": {
        "group": {
         "type": "string"
        },
        "hash": {
         "type": "string"
        },
        "lastGeneration": {
         "format": "int64",
         "type": "integer"
        },
        "name": {
         "type": "string"
        },
        "namespace": {
         "type": "string"
        },
        "resource": {
         "type": "string"
        }
       },
       "type": "object"
      },
      "type": "array",
      "x-kubernetes-list-type": "atomic"
     },
     "observedGeneration": {
      "format": "int64",
      "type": "integer"
     },
     "readyReplicas": {
      "format": "int32",
      "type": "integer"
     },
     "version": {
      "type": "string"
     }
    },
    "type": "object"
   }
  },
  "required": [
   "spec"
  ],
  "type": "object"
 }
},
"served": true,
"storage": true,
"subresources": {
 "status": {}
}
   }
  ]
 }
}"##;

fn csi_crd() -> Value {
    serde_json::from_str(CLUSTER_CSI_DRIVER_CRD).unwrap()
}

fn csi_schema() -> Schema {
    let crd = csi_crd();
    Schema::parse(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]).unwrap()
}

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

fn has(errs: &[FieldError], want: &str) -> bool {
    let got = messages(errs);
    if !got.iter().any(|g| g == want) {
        eprintln!("missing {want:?} in:");
        for g in &got {
            eprintln!("  {g}");
        }
        return false;
    }
    true
}

/// The server's processing of a CR body: prune, default, validate.
fn admit(schema: &Schema, mut obj: Value) -> (Value, Vec<String>, Vec<FieldError>) {
    let pruned = prune(schema, &mut obj);
    apply_defaults(schema, &mut obj);
    let errs = validate(schema, &obj);
    (obj, pruned, errs)
}

// ----- helpers -------------------------------------------------------------------------

#[test]
fn go_formatting() {
    assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
    assert_eq!(go_float(32.0), "32");
    assert_eq!(go_float(1.5), "1.5");
    assert_eq!(go_float(1e21), "1e+21");
    assert_eq!(go_float(0.00001), "1e-05");
}

#[test]
fn dns_rules() {
    // apimachinery's messages, word for word.
    const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    assert!(dns1123_subdomain_errors("operator.openshift.io").is_empty());
    assert_eq!(
        dns1123_subdomain_errors("Bad_Group"),
        vec![DNS1123_SUBDOMAIN_MSG.to_string()]
    );
    assert!(dns1035_label_errors("v1beta1").is_empty());
    assert_eq!(
        dns1035_label_errors("1v"),
        vec![DNS1035_LABEL_MSG.to_string()]
    );
    assert_eq!(dns1035_label_errors(&"a".repeat(64)).len(), 1);
}

// ----- the ClusterCSIDriver CRD ---------------------------------------------------------

#[test]
fn cluster_csi_driver_crd_is_valid_and_served() {
    let crd = csi_crd();
    let errs = validate_crd(&crd, None);
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
    let info = crd_info(&crd).unwrap();
    assert_eq!(info.group, "operator.openshift.io");
    assert_eq!(info.plural, "clustercsidrivers");
    assert_eq!(info.singular, "clustercsidriver");
    assert_eq!(info.kind, "ClusterCSIDriver");
    assert_eq!(info.list_kind, "ClusterCSIDriverList");
    assert!(!info.namespaced);
    assert_eq!(info.versions.len(), 1);
    let v = &info.versions[0];
    assert!(
        v.storage && v.status_subresource && v.scale_subresource.is_none() && v.schema.is_some()
    );
}

#[test]
fn prepare_crd_defaults_like_the_server() {
    let mut crd = csi_crd();
    crd["spec"]["names"]
        .as_object_mut()
        .unwrap()
        .remove("listKind");
    crd["spec"]["names"]
        .as_object_mut()
        .unwrap()
        .remove("singular");
    prepare_crd(&mut crd, None);
    assert_eq!(crd["spec"]["names"]["listKind"], "ClusterCSIDriverList");
    assert_eq!(crd["spec"]["names"]["singular"], "clustercsidriver");
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    // Update keeps the old stored versions and adds the new storage version.
    let old = json!({"spec": crd["spec"].clone(), "status": {"storedVersions": ["v1alpha1"], "conditions": []}});
    let mut new = crd.clone();
    prepare_crd(&mut new, Some(&old));
    assert_eq!(new["status"]["storedVersions"], json!(["v1alpha1", "v1"]));
}

#[test]
fn cluster_csi_driver_cr_round_trip() {
    let s = csi_schema();
    let cr = json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "ClusterCSIDriver",
        "metadata": {"name": "cinder.csi.openstack.org", "labels": {"a": "b"}},
        "spec": {
            "managementState": "Managed",
            "unknownField": 1,
            "observedConfig": {"anything": {"goes": [1, 2]}},
            "driverConfig": {"driverType": "", "mystery": true, "vSphere": {"topologyCategories": ["a"], "x": 1}}
        },
        "status": {"conditions": [{"type": "Available", "status": "True", "bogus": "x"}]},
        "topLevelJunk": {}
    });
    let (obj, pruned, errs) = admit(&s, cr);
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
    assert_eq!(
        pruned,
        vec![
            "spec.driverConfig.mystery",
            "spec.driverConfig.vSphere.x",
            "spec.unknownField",
            "status.conditions[0].bogus",
            "topLevelJunk",
        ]
    );
    assert_eq!(
        obj["metadata"]["labels"]["a"], "b",
        "root metadata is left to the caller"
    );
    assert_eq!(
        obj["spec"]["observedConfig"]["anything"]["goes"],
        json!([1, 2]),
        "preserve-unknown-fields keeps everything"
    );
    assert_eq!(obj["spec"]["logLevel"], "Normal");
    assert_eq!(obj["spec"]["operatorLogLevel"], "Normal");
    assert!(
        obj["spec"].get("storageClassState").is_none(),
        "no default, stays absent"
    );
}

#[test]
fn pattern_perl_classes_are_ascii_as_in_go() {
    // kube-apiserver runs `pattern` through Go's regexp, whose `\d` is [0-9] only.
    let s = Schema::parse(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "count": {"type": "string", "pattern": "^\\d+$"}
        }}}
    }))
    .unwrap();
    let cr = |v: &str| json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"count": v}});
    assert!(validate(&s, &cr("42")).is_empty());
    let errs = validate(&s, &cr("\u{663}"));
    assert!(
        has(
            &errs,
            "spec.count: Invalid value: \"\u{663}\": spec.count in body should match '^\\d+$'"
        ),
        "{:#?}",
        messages(&errs)
    );
}

#[test]
fn cluster_csi_driver_cr_errors_read_like_the_server() {
    let s = csi_schema();
    let cr = json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "ClusterCSIDriver",
        "metadata": {"name": "foo.csi.example.com"},
        "spec": {
            "managementState": "Sometimes",
            "logLevel": "Foo",
            "driverConfig": {
                "driverType": "OpenStack",
                "vSphere": {"globalMaxSnapshotsPerBlockVolume": "3", "granularMaxSnapshotsPerBlockVolumeInVSAN": 33},
                "gcp": {"kmsKey": {"keyRing": "", "name": "n", "projectID": "abc"}},
                "azure": {"diskEncryptionSet": {"name": "x".repeat(81), "resourceGroup": "rg", "subscriptionID": 5}}
            }
        }
    });
    let (_, _, errs) = admit(&s, cr);
    for want in [
        "metadata.name: Unsupported value: \"foo.csi.example.com\": supported values: \"ebs.csi.aws.com\", \"efs.csi.aws.com\", \"disk.csi.azure.com\", \"file.csi.azure.com\", \"filestore.csi.storage.gke.io\", \"pd.csi.storage.gke.io\", \"cinder.csi.openstack.org\", \"csi.vsphere.vmware.com\", \"manila.csi.openstack.org\", \"csi.ovirt.org\", \"csi.kubevirt.io\", \"csi.sharedresource.openshift.io\", \"diskplugin.csi.alibabacloud.com\", \"vpc.block.csi.ibm.io\", \"powervs.csi.ibm.com\", \"secrets-store.csi.k8s.io\", \"smb.csi.k8s.io\"",
        "spec.managementState: Invalid value: \"Sometimes\": spec.managementState in body should match '^(Managed|Unmanaged|Force|Removed)$'",
        "spec.logLevel: Unsupported value: \"Foo\": supported values: \"\", \"Normal\", \"Debug\", \"Trace\", \"TraceAll\"",
        "spec.driverConfig.driverType: Unsupported value: \"OpenStack\": supported values: \"\", \"AWS\", \"Azure\", \"GCP\", \"IBMCloud\", \"vSphere\"",
        "spec.driverConfig.vSphere.globalMaxSnapshotsPerBlockVolume: Invalid value: \"string\": spec.driverConfig.vSphere.globalMaxSnapshotsPerBlockVolume in body must be of type integer: \"string\"",
        "spec.driverConfig.vSphere.granularMaxSnapshotsPerBlockVolumeInVSAN: Invalid value: 33: spec.driverConfig.vSphere.granularMaxSnapshotsPerBlockVolumeInVSAN in body should be less than or equal to 32",
        "spec.driverConfig.gcp.kmsKey.keyRing: Invalid value: \"\": spec.driverConfig.gcp.kmsKey.keyRing in body should be at least 1 chars long",
        "spec.driverConfig.gcp.kmsKey.projectID: Invalid value: \"abc\": spec.driverConfig.gcp.kmsKey.projectID in body should be at least 6 chars long",
        "spec.driverConfig.azure.diskEncryptionSet.name: Too long: may not be more than 80 bytes",
        "spec.driverConfig.azure.diskEncryptionSet.subscriptionID: Invalid value: \"integer\": spec.driverConfig.azure.diskEncryptionSet.subscriptionID in body must be of type string: \"integer\"",
    ] {
        assert!(has(&errs, want), "{want}");
    }
    assert_eq!(errs.len(), 10, "{:#?}", messages(&errs));
}

#[test]
fn required_fields_are_reported_at_their_path() {
    let s = csi_schema();
    let (_, _, errs) = admit(
        &s,
        json!({"metadata": {"name": "cinder.csi.openstack.org"}}),
    );
    assert_eq!(messages(&errs), vec!["spec: Required value"]);
    let (_, _, errs) = admit(
        &s,
        json!({"metadata": {"name": "cinder.csi.openstack.org"}, "spec": {"driverConfig": {"ibmcloud": {}}}}),
    );
    assert!(has(&errs, "spec.driverConfig.driverType: Required value"));
    assert!(has(
        &errs,
        "spec.driverConfig.ibmcloud.encryptionKeyCRN: Required value"
    ));
}

#[test]
fn status_subresource_validation_names_values_relative_to_status() {
    let s = csi_schema();
    let obj = json!({"status": {"readyReplicas": "2", "conditions": [{"type": "A"}, {"type": "A"}, {"status": "x"}]}});
    let errs = validate_status(&s, &obj);
    assert!(has(
        &errs,
        "status.readyReplicas: Invalid value: \"string\": readyReplicas in body must be of type integer: \"string\""
    ));
    assert!(has(&errs, "status.conditions[2].type: Required value"));
    assert!(has(
        &errs,
        "status.conditions[1]: Duplicate value: {\"type\":\"A\"}"
    ));
    assert!(
        validate_status(&s, &json!({"spec": {}})).is_empty(),
        "no status, nothing to check"
    );
}

#[test]
fn list_types_come_from_the_schema() {
    let s = csi_schema();
    assert_eq!(
        s.list_kind(&["status", "conditions"]),
        ListKind::Map(vec!["type".into()])
    );
    assert_eq!(s.list_kind(&["status", "generations"]), ListKind::Atomic);
    assert_eq!(
        s.list_kind(&["spec", "driverConfig", "vSphere", "topologyCategories"]),
        ListKind::Atomic
    );
    assert_eq!(s.list_kind(&["spec", "nope"]), ListKind::Atomic);
    assert_eq!(s.list_kind(&[]), ListKind::Atomic);
}

// ----- a namespaced CRD with nested lists ------------------------------------------------

fn widget_crd() -> Value {
    // A raw string: the json! macro would exceed the recursion limit at this depth.
    serde_json::from_str(
        r#"{
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["replicas"],
                            "properties": {
                                "replicas": {"type": "integer", "minimum": 0},
                                "ratio": {"type": "number", "maximum": 1.5, "nullable": true},
                                "size": {"type": "string"},
                                "mode": {"type": "string", "default": "auto"},
                                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                                "created": {"type": "string", "format": "date-time"},
                                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}},
                                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
                                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                                "groups": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "items": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {
                                            "name": {"type": "string"},
                                            "members": {
                                                "type": "array",
                                                "items": {
                                                    "type": "object",
                                                    "properties": {
                                                        "user": {"type": "string", "minLength": 1},
                                                        "role": {"type": "string", "enum": ["admin", "viewer"], "default": "viewer"}
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        },
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    }
                }}
            }]
        }
    }"#,
    )
    .unwrap()
}

fn widget_schema() -> Schema {
    Schema::parse(&widget_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]).unwrap()
}

#[test]
fn widget_crd_is_valid_and_namespaced() {
    let crd = widget_crd();
    assert!(
        validate_crd(&crd, None).is_empty(),
        "{:#?}",
        messages(&validate_crd(&crd, None))
    );
    let info = crd_info(&crd).unwrap();
    assert!(info.namespaced);
    assert_eq!(info.list_kind, "WidgetList");
    assert_eq!(info.singular, "widget");
    assert_eq!(info.short_names, vec!["wd"]);
    assert_eq!(info.categories, vec!["all"]);
    assert!(info.versions[0].scale_subresource.is_some());
    assert_eq!(info.versions[0].printer_columns.len(), 1);
    let s = info.versions[0].schema.as_ref().unwrap();
    assert_eq!(
        s.list_kind(&["spec", "groups"]),
        ListKind::Map(vec!["name".into()])
    );
    assert_eq!(s.list_kind(&["spec", "tags"]), ListKind::Set);
    assert_eq!(
        s.list_kind(&["spec", "groups", "members"]),
        ListKind::Atomic
    );
}

#[test]
fn defaults_apply_inside_arrays_and_maps() {
    let s = widget_schema();
    let cr = json!({"spec": {
        "replicas": 1,
        "labels": {"a": "b", "c": null},
        "groups": [{"name": "g", "members": [{"user": "u"}, {"user": "v", "role": "admin"}]}]
    }});
    let (obj, pruned, errs) = admit(&s, cr);
    assert!(pruned.is_empty(), "{pruned:?}");
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
    assert_eq!(obj["spec"]["mode"], "auto");
    assert_eq!(obj["spec"]["labels"], json!({"a": "b", "c": "x"}));
    assert_eq!(obj["spec"]["groups"][0]["members"][0]["role"], "viewer");
    assert_eq!(obj["spec"]["groups"][0]["members"][1]["role"], "admin");
}

#[test]
fn nulls_are_dropped_defaulted_or_rejected_like_the_server() {
    let s = widget_schema();
    let cr =
        json!({"spec": {"replicas": 1, "size": null, "mode": null, "ratio": null, "tags": [null]}});
    let (obj, _, errs) = admit(&s, cr);
    assert!(
        obj["spec"].get("size").is_none(),
        "non-nullable null without default is dropped"
    );
    assert_eq!(
        obj["spec"]["mode"], "auto",
        "non-nullable null with a default is defaulted"
    );
    assert_eq!(obj["spec"]["ratio"], Value::Null, "nullable null stays");
    assert_eq!(
        messages(&errs),
        vec![
            "spec.tags[0]: Invalid value: \"null\": spec.tags[0] in body must be of type string: \"null\""
        ]
    );
}

#[test]
fn widget_type_errors_at_several_depths() {
    let s = widget_schema();
    let cr = json!({"spec": {
        "replicas": "string",
        "ratio": 2.5,
        "port": true,
        "created": "yesterday",
        "tags": ["a", "b", "a", "c"],
        "template": {"kind": "Pod"},
        "groups": [{"name": "g", "members": [{"user": ""}, {"user": 5, "role": "owner"}]}, {"name": "g"}, "x"]
    }});
    let (_, _, errs) = admit(&s, cr);
    for want in [
        "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        "spec.ratio: Invalid value: 2.5: spec.ratio in body should be less than or equal to 1.5",
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
        "spec.created: Invalid value: \"yesterday\": spec.created in body must be of type date-time: \"yesterday\"",
        "spec.tags: Invalid value: 4: must have at most 3 items",
        "spec.tags[2]: Duplicate value: \"a\"",
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.groups[0].members[0].user: Invalid value: \"\": spec.groups[0].members[0].user in body should be at least 1 chars long",
        "spec.groups[0].members[1].user: Invalid value: \"integer\": spec.groups[0].members[1].user in body must be of type string: \"integer\"",
        "spec.groups[0].members[1].role: Unsupported value: \"owner\": supported values: \"admin\", \"viewer\"",
        "spec.groups[2]: Invalid value: \"string\": spec.groups[2] in body must be of type object: \"string\"",
        "spec.groups[2]: Invalid value: \"x\": must be an object for an array of list-type map",
    ] {
        assert!(has(&errs, want), "{want}");
    }
}

#[test]
fn list_map_duplicate_keys() {
    let s = widget_schema();
    let (_, _, errs) = admit(
        &s,
        json!({"spec": {"replicas": 0, "groups": [{"name": "a"}, {"name": "a"}, {"name": "a"}]}}),
    );
    assert_eq!(
        messages(&errs),
        vec!["spec.groups[1]: Duplicate value: {\"name\":\"a\"}"]
    );
}

#[test]
fn integers_numbers_and_formats() {
    let s = widget_schema();
    // 2.0 is an integral float: accepted for an integer field, as in Go.
    let (_, _, errs) = admit(
        &s,
        json!({"spec": {"replicas": 2.0, "created": "2024-02-29T10:00:00Z"}}),
    );
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
    let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 2.5}}));
    assert_eq!(
        messages(&errs),
        vec![
            "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""
        ]
    );
    let (_, _, errs) = admit(&s, json!({"spec": {"replicas": -1}}));
    assert_eq!(
        messages(&errs),
        vec![
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        ]
    );
    let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 1, "created": 5}}));
    assert_eq!(
        messages(&errs),
        vec![
            "spec.created: Invalid value: \"int64\": spec.created in body must be of type date-time: \"int64\""
        ]
    );
    let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 1, "port": "http"}}));
    assert!(errs.is_empty());
    let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 1, "port": 8080}}));
    assert!(errs.is_empty());
}

#[test]
fn embedded_resources_keep_type_meta_and_prune_object_meta() {
    let s = widget_schema();
    let cr = json!({"spec": {"replicas": 1, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}}}});
    let (obj, pruned, errs) = admit(&s, cr);
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
    assert_eq!(pruned, vec!["spec.template.metadata.bogus"]);
    assert_eq!(obj["spec"]["template"]["spec"]["x"], 1);
    assert_eq!(obj["spec"]["template"]["kind"], "Pod");
    let (_, _, errs) = admit(
        &s,
        json!({"spec": {"replicas": 1, "template": {"apiVersion": 1, "kind": "bad kind"}}}),
    );
    assert!(has(
        &errs,
        "spec.template.apiVersion: Invalid value: 1: must be a string"
    ));
    assert!(errs.iter().any(
        |e| e.field == "spec.template.kind" && e.detail.starts_with("may have mixed case")
    ));
}

#[test]
fn preserve_unknown_fields_at_the_root() {
    let s = Schema::parse(&json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
    }))
    .unwrap();
    let mut obj = json!({"anything": {"x": 1}, "spec": {"a": "b", "junk": 1}});
    let pruned = prune(&s, &mut obj);
    assert_eq!(
        pruned,
        vec!["spec.junk"],
        "known fields are still pruned inside"
    );
    assert_eq!(obj, json!({"anything": {"x": 1}, "spec": {"a": "b"}}));
}

#[test]
fn additional_properties_false_keeps_keys_and_fails_validation() {
    let s = Schema::parse(&json!({
        "type": "object",
        "properties": {"m": {"type": "object", "additionalProperties": false}}
    }))
    .unwrap();
    let (obj, pruned, errs) = admit(&s, json!({"m": {"k": {"deep": 1}}}));
    assert_eq!(pruned, vec!["m.k.deep"]);
    assert_eq!(obj, json!({"m": {"k": {}}}));
    assert_eq!(
        messages(&errs),
        vec!["m: Invalid value: \"k\": m.k in body is a forbidden property"]
    );
}

// ----- malformed CRDs -------------------------------------------------------------------

fn minimal_crd() -> Value {
    json!({
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "kind": "Foo"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}
            }}}]
        }
    })
}

/// Sets the value at a JSON pointer, creating the last key if needed.
fn with(mut crd: Value, pointer: &str, v: Value) -> Value {
    let (parent, last) = pointer.rsplit_once('/').unwrap();
    let target = if parent.is_empty() {
        &mut crd
    } else {
        crd.pointer_mut(parent).unwrap()
    };
    match target {
        Value::Object(m) => {
            m.insert(last.to_string(), v);
        }
        Value::Array(a) => a[last.parse::<usize>().unwrap()] = v,
        _ => panic!("{pointer}"),
    }
    crd
}

fn crd_errors(crd: &Value) -> Vec<FieldError> {
    validate_crd(crd, None)
}

#[test]
fn minimal_crd_is_valid() {
    assert!(
        crd_errors(&minimal_crd()).is_empty(),
        "{:#?}",
        messages(&crd_errors(&minimal_crd()))
    );
}

#[test]
fn crd_names_and_group() {
    let errs = crd_errors(&with(minimal_crd(), "/spec/names", json!({})));
    assert!(has(&errs, "spec.names.plural: Required value"));
    assert!(has(&errs, "spec.names.kind: Required value"));
    assert!(has(&errs, "spec.names.listKind: Required value"));
    assert!(has(
        &errs,
        "metadata.name: Invalid value: \"foos.example.com\": must be spec.names.plural+\".\"+spec.group"
    ));
    let errs = crd_errors(&with(
        with(minimal_crd(), "/spec/group", json!("example")),
        "/metadata/name",
        json!("foos.example"),
    ));
    assert_eq!(
        messages(&errs),
        vec!["spec.group: Invalid value: \"example\": should be a domain with at least one dot"]
    );
    let errs = crd_errors(&with(minimal_crd(), "/spec/names/kind", json!("Foo_Bar")));
    assert!(errs.iter().any(|e| {
        e.field == "spec.names.kind"
            && e.detail
                .starts_with("may have mixed case, but should otherwise match: a DNS-1035 label")
    }));
    let errs = crd_errors(&with(minimal_crd(), "/spec/names/listKind", json!("Foo")));
    assert!(has(
        &errs,
        "spec.names.listKind: Invalid value: \"Foo\": kind and listKind may not be the same"
    ));
    let errs = crd_errors(&with(minimal_crd(), "/metadata", json!({})));
    assert!(has(
        &errs,
        "metadata.name: Required value: name or generateName is required"
    ));
}

#[test]
fn crd_scope_and_versions() {
    let errs = crd_errors(&with(minimal_crd(), "/spec/scope", json!("Global")));
    assert_eq!(
        messages(&errs),
        vec![
            "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
        ]
    );
    let errs = crd_errors(&with(minimal_crd(), "/spec/versions", json!([])));
    assert!(errs.iter().any(|e| e.field == "spec.versions"
        && e.detail == "must have exactly one version marked as storage version"));
    assert!(has(
        &errs,
        "status.storedVersions: Invalid value: []: must have at least one stored version"
    ));
    let mut crd = minimal_crd();
    let v = crd["spec"]["versions"][0].clone();
    let mut v2 = v.clone();
    v2["name"] = json!("v2");
    crd["spec"]["versions"] = json!([v, v2]);
    let errs = crd_errors(&crd);
    assert_eq!(errs.len(), 2, "{:#?}", messages(&errs));
    assert_eq!(errs[0].field, "spec.versions");
    assert_eq!(
        errs[0].detail,
        "must have exactly one version marked as storage version"
    );
    // Only the first storage version is recorded on create, so the server also says this.
    assert_eq!(
        errs[1].to_string(),
        "status.storedVersions: Invalid value: [\"v1\"]: must have the storage version v2"
    );
    let v = crd["spec"]["versions"][0].clone();
    crd["spec"]["versions"] = json!([v.clone(), v]);
    let errs = crd_errors(&crd);
    assert!(
        errs.iter()
            .any(|e| e.detail == "must contain unique version names")
    );
    let errs = crd_errors(&with(minimal_crd(), "/spec/versions/0/name", json!("V1")));
    assert!(errs.iter().any(|e| e.field == "spec.versions[0].name"));
    assert!(
        errs.iter().any(|e| e.field == "spec.version"),
        "the internal spec.version repeats it"
    );
}

#[test]
fn crd_schema_required_and_paths_per_version() {
    let errs = crd_errors(&with(minimal_crd(), "/spec/versions/0/schema", Value::Null));
    assert_eq!(
        messages(&errs),
        vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
    );
    // Identical schemas are reported under spec.validation, different ones per version.
    let bad =
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {}}}}});
    let errs = crd_errors(&with(minimal_crd(), "/spec/versions/0/schema", bad.clone()));
    assert_eq!(
        messages(&errs),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ]
    );
    let mut crd = minimal_crd();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"] = bad;
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let errs = crd_errors(&crd);
    assert_eq!(
        messages(&errs),
        vec![
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ]
    );
}

fn schema_errors(schema: Value) -> Vec<FieldError> {
    crd_errors(&with(
        minimal_crd(),
        "/spec/versions/0/schema/openAPIV3Schema",
        schema,
    ))
}

#[test]
fn non_structural_schemas() {
    let p = "spec.validation.openAPIV3Schema";
    let errs = schema_errors(json!({"properties": {"spec": {"type": "object"}}}));
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.type: Required value: must not be empty at the root"
        )]
    );
    let errs = schema_errors(json!({"type": "object", "properties": {"l": {"type": "array"}}}));
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[l].items: Required value: must be specified"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"namespace": {"type": "string"}}}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string", "description": "d"}]}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![
            format!(
                "{p}.properties[a].anyOf[0].description: Forbidden: must be empty to be structural"
            ),
            format!("{p}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"),
        ]
    );
    let errs = schema_errors(
        json!({"type": "object", "anyOf": [{"properties": {"ghost": {"maxLength": 1}}}]}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[ghost]: Required value: because it is defined in {p}.anyOf[0].properties[ghost]"
        )]
    );
    let errs = schema_errors(json!({"type": "string"}));
    assert!(has(
        &errs,
        &format!("{p}.type: Invalid value: \"string\": must be object at the root")
    ));
    let errs = schema_errors(json!({"type": "object", "properties": {"a": {"type": "strin"}}}));
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[a].type: Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
        )
    ));
    let errs = schema_errors(
        json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(x"}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[a].pattern: Invalid value: \"(x\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(x`"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true}}}),
    );
    assert!(
        errs.is_empty(),
        "int-or-string needs no type: {:#?}",
        messages(&errs)
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"p": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        )]
    );
    let errs = schema_errors(json!({"type": "object", "nullable": true}));
    assert!(has(
        &errs,
        &format!("{p}.nullable: Forbidden: nullable cannot be true at the root")
    ));
    let errs = schema_errors(
        json!({"type": "object", "properties": {"u": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}),
    );
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        )
    ));
}

#[test]
fn crd_defaults_must_validate_and_be_pruned() {
    let p = "spec.validation.openAPIV3Schema";
    let errs = schema_errors(
        json!({"type": "object", "properties": {"l": {"type": "string", "enum": ["A"], "default": "B"}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[l].default: Unsupported value: \"B\": supported values: \"A\""
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "integer"}}, "default": {"a": 1, "b": 2}}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[o].default: Invalid value: {{\"a\":1,\"b\":2}}: must not have unknown fields"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}}}),
    );
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
        )
    ));
}

#[test]
fn crd_list_type_markers() {
    let p = "spec.validation.openAPIV3Schema";
    let errs = schema_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-type": "map"}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"]}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"l": {"type": "string", "x-kubernetes-list-type": "bag"}}}),
    );
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[l].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
        )
    ));
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[l].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
        )
    ));
}

#[test]
fn crd_status_subresource_restricts_the_root() {
    let mut crd = with(
        minimal_crd(),
        "/spec/versions/0/subresources",
        json!({"status": {}}),
    );
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-embedded-resource"] =
        json!(true);
    let errs = crd_errors(&crd);
    assert!(
        errs.iter()
            .any(|e| e.field == "spec.validation.openAPIV3Schema"
                && e.detail.starts_with("only [Description Type Format Title"))
    );
}

#[test]
fn crd_subresources_columns_and_conversion() {
    let crd = with(
        minimal_crd(),
        "/spec/versions/0/subresources",
        json!({"scale": {"specReplicasPath": "spec.replicas"}}),
    );
    let errs = crd_errors(&crd);
    assert!(has(
        &errs,
        "spec.subresources.scale.specReplicasPath: Invalid value: \"spec.replicas\": must be a simple json path starting with ."
    ));
    assert!(has(
        &errs,
        "spec.subresources.scale.statusReplicasPath: Required value"
    ));
    let crd = with(
        minimal_crd(),
        "/spec/versions/0/additionalPrinterColumns",
        json!([{"name": "X", "type": "int", "jsonPath": ""}]),
    );
    let errs = crd_errors(&crd);
    assert!(has(
        &errs,
        "spec.additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string"
    ));
    assert!(has(
        &errs,
        "spec.additionalPrinterColumns[0].JSONPath: Required value"
    ));
    let crd = with(
        minimal_crd(),
        "/spec/conversion",
        json!({"strategy": "Webhook"}),
    );
    let errs = crd_errors(&crd);
    assert!(has(
        &errs,
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"
    ));
    assert!(has(
        &errs,
        "spec.conversion.conversionReviewVersions: Required value"
    ));
}

#[test]
fn crd_protected_groups_need_approval() {
    let crd = with(
        with(minimal_crd(), "/spec/group", json!("x.k8s.io")),
        "/metadata/name",
        json!("foos.x.k8s.io"),
    );
    let errs = crd_errors(&crd);
    assert_eq!(
        messages(&errs),
        vec![
            "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        ]
    );
    let ok = with(
        crd.clone(),
        "/metadata/annotations",
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}),
    );
    assert!(crd_errors(&ok).is_empty());
    let bypass = with(
        crd.clone(),
        "/metadata/annotations",
        json!({"api-approved.kubernetes.io": "unapproved, testing"}),
    );
    assert!(crd_errors(&bypass).is_empty());
    let bad = with(
        crd,
        "/metadata/annotations",
        json!({"api-approved.kubernetes.io": "yes"}),
    );
    assert!(
        crd_errors(&bad)[0]
            .detail
            .contains("with either a URL or a reason starting with \"unapproved\"")
    );
}

#[test]
fn crd_update_rules() {
    let mut old = minimal_crd();
    prepare_crd(&mut old, None);
    // Not yet established: scope may change; group and plural never.
    let errs = validate_crd(
        &with(old.clone(), "/spec/scope", json!("Cluster")),
        Some(&old),
    );
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
    old["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    let errs = validate_crd(
        &with(old.clone(), "/spec/scope", json!("Cluster")),
        Some(&old),
    );
    assert_eq!(
        messages(&errs),
        vec!["spec.scope: Invalid value: \"Cluster\": field is immutable"]
    );
    let errs = validate_crd(
        &with(old.clone(), "/spec/names/kind", json!("Bar")),
        Some(&old),
    );
    assert_eq!(
        messages(&errs),
        vec!["spec.names.kind: Invalid value: \"Bar\": field is immutable"]
    );
    let changed = with(
        with(old.clone(), "/spec/group", json!("other.com")),
        "/metadata/name",
        json!("foos.other.com"),
    );
    assert!(has(
        &validate_crd(&changed, Some(&old)),
        "spec.group: Invalid value: \"other.com\": field is immutable"
    ));
    // A version that was once stored can't disappear from spec.versions.
    let mut renamed = old.clone();
    renamed["spec"]["versions"][0]["name"] = json!("v2");
    let errs = validate_crd(&renamed, Some(&old));
    assert_eq!(
        messages(&errs),
        vec![
            "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
        ]
    );
    // preserveUnknownFields can't be switched on.
    let errs = validate_crd(
        &with(old.clone(), "/spec/preserveUnknownFields", json!(true)),
        Some(&old),
    );
    assert!(has(
        &errs,
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
    ));
}

#[test]
fn junctors_numbers_and_object_sizes() {
    let s = Schema::parse(&json!({
        "type": "object",
        "properties": {
            "one": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
            "all": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
            "not": {"type": "string", "not": {"enum": ["x"]}},
            "mul": {"type": "integer", "multipleOf": 5},
            "exc": {"type": "number", "minimum": 1, "exclusiveMinimum": true},
            "obj": {"type": "object", "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "string"}}
        }
    }))
    .unwrap();
    let errs = validate(
        &s,
        &json!({"one": 5, "all": "a", "not": "x", "mul": 7, "exc": 1.0, "obj": {"a": "1"}}),
    );
    for want in [
        "<nil>: Invalid value: \"\": \"one\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        "all: Invalid value: \"a\": all in body should be at least 2 chars long",
        "<nil>: Invalid value: \"\": \"all\" must validate all the schemas (allOf)",
        "<nil>: Invalid value: \"\": \"not\" must not validate the schema (not)",
        "mul: Invalid value: 7: mul in body should be a multiple of 5",
        "exc: Invalid value: 1.0: exc in body should be greater than 1",
        "obj: Invalid value: 1: obj in body should have at least 2 properties",
    ] {
        assert!(has(&errs, want), "{want}");
    }
    assert_eq!(errs.len(), 7, "{:#?}", messages(&errs));
    let errs = validate(&s, &json!({"obj": {"a": "1", "b": "2", "c": "3", "d": 4}}));
    assert!(has(
        &errs,
        "obj: Invalid value: 4: must have at most 3 items"
    ));
    assert!(has(
        &errs,
        "obj.d: Invalid value: \"integer\": obj.d in body must be of type string: \"integer\""
    ));
}

#[test]
fn string_formats() {
    let cases: &[(&str, &str, bool)] = &[
        ("date-time", "2024-01-02T03:04:05.123+01:00", true),
        ("date-time", "2024-01-02 03:04:05Z", false),
        ("date-time", "2024-13-02T03:04:05Z", false),
        ("date", "2023-02-29", false),
        ("uuid", "F2007BBF-F802-4A47-9336-CF7C6B89B378", true),
        ("uuid", "f2007bbf-f802", false),
        ("uuid4", "f2007bbf-f802-4a47-9336-cf7c6b89b378", true),
        ("uuid3", "f2007bbf-f802-4a47-9336-cf7c6b89b378", false),
        ("ipv4", "10.0.0.1", true),
        ("ipv4", "10.0.0.256", false),
        ("ipv6", "fd00::1", true),
        ("ipv6", "10.0.0.1", false),
        ("cidr", "10.0.0.0/8", true),
        ("cidr", "10.0.0.0/33", false),
        ("mac", "00:1a:2b:3c:4d:5e", true),
        ("mac", "00:1a:2b", false),
        ("hostname", "api.example.com", true),
        ("hostname", "-bad.example.com", false),
        ("byte", "aGVsbG8=", true),
        ("byte", "hello", false),
        ("email", "a@b.c", true),
        ("email", "nobody", false),
        ("uri", "https://example.com/x", true),
        ("uri", "example.com", false),
        ("password", "anything", true),
    ];
    for (f, v, want) in cases {
        assert_eq!(format_ok(f, v), *want, "{f} {v}");
    }
    // Unsupported formats are stripped by the server, so they never fail.
    let s = Schema::parse(&json!({"type": "string", "format": "int-or-whatever"})).unwrap();
    assert!(validate(&s, &json!("x")).is_empty());
}

#[test]
fn more_crd_schema_rules() {
    let p = "spec.validation.openAPIV3Schema";
    let errs = schema_errors(
        json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true, "additionalProperties": {"type": "string"}}}}),
    );
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[e].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set"
        )
    ));
    let errs = schema_errors(
        json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"i": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{p}.properties[i].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
        )]
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"m": {"type": "string", "x-kubernetes-map-type": "sometimes"}}}),
    );
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[m].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"
        )
    ));
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[m].x-kubernetes-map-type: Unsupported value: \"sometimes\": supported values: \"atomic\", \"granular\""
        )
    ));
    let errs = schema_errors(
        json!({"type": "object", "x-kubernetes-validations": [{"rule": " "}, {"rule": "a\nb"}, {"rule": "x", "reason": "Nope"}]}),
    );
    assert!(has(
        &errs,
        &format!("{p}.x-kubernetes-validations[0].rule: Required value: rule is not specified")
    ));
    assert!(has(
        &errs,
        &format!(
            "{p}.x-kubernetes-validations[1].message: Required value: message must be specified if rule contains line breaks"
        )
    ));
    assert!(
        errs.iter()
            .any(|e| e.field == format!("{p}.x-kubernetes-validations[2].reason"))
    );
    let errs = schema_errors(
        json!({"type": "object", "properties": {"s": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"}}}),
    );
    assert!(has(
        &errs,
        &format!(
            "{p}.properties[s].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
        )
    ));
    let crd = with(
        minimal_crd(),
        "/spec/versions/0/subresources",
        json!({"status": {}}),
    );
    let errs = crd_errors(&with(
        crd,
        "/spec/versions/0/schema/openAPIV3Schema/type",
        json!("array"),
    ));
    assert!(has(
        &errs,
        &format!(
            "{p}.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
        )
    ));
}

#[test]
fn more_crd_version_rules() {
    let errs = crd_errors(&with(
        minimal_crd(),
        "/spec/versions/0/deprecationWarning",
        json!("old"),
    ));
    assert_eq!(
        messages(&errs),
        vec![
            "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions"
        ]
    );
    let crd = with(minimal_crd(), "/spec/versions/0/deprecated", json!(true));
    assert!(
        crd_errors(&with(
            crd.clone(),
            "/spec/versions/0/deprecationWarning",
            json!("use v2")
        ))
        .is_empty()
    );
    let errs = crd_errors(&with(
        crd,
        "/spec/versions/0/deprecationWarning",
        json!("a\tb"),
    ));
    assert!(
        errs[0]
            .detail
            .contains("non-printable character found at index 1")
    );
    let crd = with(
        minimal_crd(),
        "/spec/versions/0/subresources",
        json!({"scale": {"specReplicasPath": ".spec.r", "statusReplicasPath": ".status.r", "labelSelectorPath": ".metadata.x"}}),
    );
    assert!(has(
        &crd_errors(&crd),
        "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.x\": should be a json path under either .spec or .status"
    ));
    let crd = with(
        minimal_crd(),
        "/spec/versions/0/additionalPrinterColumns",
        json!([{"name": "A", "type": "string", "format": "uuid", "jsonPath": ".a"}]),
    );
    assert!(has(
        &crd_errors(&crd),
        "spec.additionalPrinterColumns[0].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password"
    ));
    let crd = with(
        minimal_crd(),
        "/spec/conversion",
        json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}}),
    );
    let errs = crd_errors(&crd);
    assert!(has(
        &errs,
        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"
    ));
    assert!(has(
        &errs,
        "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"
    ));
    let crd = with(
        minimal_crd(),
        "/spec/conversion",
        json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v3"]}}),
    );
    assert!(has(
        &crd_errors(&crd),
        "spec.conversion.conversionReviewVersions: Invalid value: [\"v3\"]: must include at least one of v1, v1beta1"
    ));
    // A stored CRD that already lacked a schema may keep lacking it on update, but only in
    // versions that are not served.
    let mut old = with(minimal_crd(), "/spec/versions/0/schema", Value::Null);
    prepare_crd(&mut old, None);
    assert_eq!(
        messages(&validate_crd(&old, Some(&old))),
        vec![
            "spec.versions[0].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
        ]
    );
    let unserved = with(old.clone(), "/spec/versions/0/served", json!(false));
    assert!(validate_crd(&unserved, Some(&old)).is_empty());
}

// ----- garbage in, errors out -------------------------------------------------------------

#[test]
fn malformed_crds_never_panic() {
    let garbage = [
        json!(null),
        json!(5),
        json!([]),
        json!({"spec": "x"}),
        json!({"spec": {"versions": "x", "names": 3, "group": 7}}),
        json!({"spec": {"versions": [1, null, "v1", {"name": 5, "schema": 3}]}}),
        json!({"spec": {"versions": [{"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {"properties": 5}}}]}}),
        json!({"spec": {"versions": [{"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {"type": 5, "items": [1]}}}]}}),
        json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": 5, "conversionReviewVersions": [1]}}}}),
        json!({"metadata": {"name": 5, "annotations": 5}, "status": {"storedVersions": "x"}}),
    ];
    for g in &garbage {
        let errs = validate_crd(g, None);
        assert!(!errs.is_empty(), "{g}");
        let _ = validate_crd(g, Some(g));
        let _ = crd_info(g);
        let mut m = g.clone();
        prepare_crd(&mut m, Some(g));
    }
    let errs = validate_crd(&garbage[6], None);
    assert!(has(
        &errs,
        "spec.validation.openAPIV3Schema: Invalid value: \"\": properties: must be an object"
    ));
}

#[test]
fn malformed_schemas_are_parse_errors() {
    assert_eq!(
        Schema::parse(&json!(5)).unwrap_err(),
        "must be an object, not integer"
    );
    assert_eq!(
        Schema::parse(&json!({"type": 5})).unwrap_err(),
        "type: must be a string, not integer"
    );
    assert_eq!(
        Schema::parse(&json!({"properties": {"a": {"items": [{}]}}})).unwrap_err(),
        "properties[a].items: must be a schema object and not an array"
    );
    assert!(Schema::parse(&json!({"maxLength": "3"})).is_err());
    assert!(crd_info(&json!({"spec": {"versions": [{"name": "v1", "served": true, "schema": {"openAPIV3Schema": 1}}]}})).is_err());
}

#[test]
fn malformed_objects_never_panic() {
    let schemas = [csi_schema(), widget_schema(), Schema::default()];
    let objs = [
        json!(null),
        json!(1),
        json!("x"),
        json!([1, {"a": null}]),
        json!({"spec": null}),
        json!({"spec": [], "status": "x"}),
        json!({"spec": {"groups": {"a": 1}, "tags": "x", "labels": [1], "template": []}}),
        json!({"spec": {"replicas": 1e300, "ratio": -1e300, "port": null, "groups": [null, null]}}),
        json!({"metadata": 5, "apiVersion": [], "kind": {}}),
    ];
    for s in &schemas {
        for o in &objs {
            let (_, _, _) = admit(s, o.clone());
            let _ = validate_status(s, o);
        }
    }
    let (obj, pruned, errs) = admit(&widget_schema(), json!({"spec": null}));
    assert_eq!(
        obj,
        json!({}),
        "non-nullable null without default is dropped"
    );
    assert!(pruned.is_empty());
    assert!(errs.is_empty(), "{:#?}", messages(&errs));
}
