//! The Helm chart `charts/openstack-csi-operators`, generated from the very objects of the
//! plain-Kubernetes kustomize base ([`crate::kubernetes::manifests`]), so the chart and
//! `manifests/kubernetes/` cannot drift: with default values `helm template` renders exactly
//! the base's objects (`csi-operator/tests/chart.rs` checks it against `kubectl kustomize`).
//!
//! How: each object of the base is serialized as it is for the base, after the generator put
//! *tokens* where a value belongs ([`Token`]); the YAML text then gets the tokens swapped for
//! template expressions. A token is a plain, space-free scalar, so the YAML writer never quotes
//! or folds across it. Two kinds:
//! - inline: a namespace name, the cluster ID, an image, anywhere inside a string (a CEL
//!   expression, a service account username, an argument);
//! - block: a whole field of the pod spec or container (`affinity`, `tolerations`,
//!   `nodeSelector`, `imagePullSecrets`, `resources`) or extra list items (`args`), replaced by
//!   a `with`/`toYaml` block.
//!
//! Each object file is wrapped in `if .Values.cinder.enabled` / `.Values.manila.enabled` by
//! the driver it belongs to; the namespace of the operators, the sidecar ClusterRoles and
//! `openshift-config` are shared. The ClusterCSIDriver CRD goes to `crds/` (Helm installs it
//! first and never deletes it, so `helm uninstall` cannot take every ClusterCSIDriver with it).
//!
//! To add a knob: a [`Token`] (or a [`Block`]) where the generator should put it, its default in
//! [`values`], its type in [`schema`]; a new object: a [`Template`] in [`chart`].
//!
//! Like the base's generator, this reads no file, environment or API: the caller hands in the
//! base's files and the hand-written adoption RBAC (`manifests/adopt-helm-cinder/rbac.yaml`).

use serde_json::{Map, Value, json};

use crate::kubernetes::{
    CONFIG_NAMESPACE, DEFAULT_CLUSTER_ID, KubernetesError, KubernetesInputs, ManifestFile,
    UPSTREAM_IMAGES,
};
use crate::registry::CSI_OPERATOR_NAMESPACE;

/// The chart's name (and its directory under `charts/`).
pub const CHART_NAME: &str = "openstack-csi-operators";

/// The Manila driver's namespace, which the Manila operator does not let change (see
/// [`validate_template`]).
pub const MANILA_DRIVER_NAMESPACE: &str = manila::SPEC.driver_namespace;

/// The namespace of the upstream chart's release that `manifests/adopt-helm-cinder` names.
const ADOPTION_NAMESPACE: &str = "kube-system";

/// The first lines of every generated file of the chart.
pub const GENERATED_HEADER: &str = "\
# Generated from crates/cluster-storage/assets and manifests/openshift; do not edit.
# Regenerate: UPDATE_MANIFESTS=1 cargo test -p csi-operator --test kubernetes_manifests
";

/// An inline token: a scalar the templates fill from the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    OperatorsNamespace,
    ManilaNamespace,
    ConfigNamespace,
    AdoptionNamespace,
    ClusterId,
    OperatorImage,
    /// An operand image, by its index in [`UPSTREAM_IMAGES`].
    Image(usize),
}

impl Token {
    fn text(self) -> String {
        match self {
            Token::OperatorsNamespace => "zzhelm-ns-operators-zz".into(),
            Token::ManilaNamespace => "zzhelm-ns-manila-zz".into(),
            Token::ConfigNamespace => "zzhelm-ns-config-zz".into(),
            Token::AdoptionNamespace => "zzhelm-ns-adoption-zz".into(),
            Token::ClusterId => "zzhelm-cluster-id-zz".into(),
            Token::OperatorImage => "zzhelm-operator-image-zz".into(),
            Token::Image(i) => format!("zzhelm-image-{i}-zz"),
        }
    }

    /// What the template says instead.
    fn expression(self) -> String {
        match self {
            Token::OperatorsNamespace => "{{ .Values.namespaces.operators }}".into(),
            Token::ManilaNamespace => "{{ .Values.namespaces.manilaDriver }}".into(),
            Token::ConfigNamespace => "{{ .Values.namespaces.config }}".into(),
            Token::AdoptionNamespace => "{{ .Values.cinder.adoptHelmRelease.namespace }}".into(),
            Token::ClusterId => "{{ .Values.clusterID }}".into(),
            Token::OperatorImage => {
                "{{ printf \"%s:%s\" .Values.image.repository .Values.image.tag | quote }}".into()
            }
            Token::Image(i) => format!("{{{{ .Values.images.{} | quote }}}}", image_key(i)),
        }
    }

    fn all() -> impl Iterator<Item = Token> {
        [
            Token::OperatorsNamespace,
            Token::ManilaNamespace,
            Token::ConfigNamespace,
            Token::AdoptionNamespace,
            Token::ClusterId,
            Token::OperatorImage,
        ]
        .into_iter()
        .chain((0..UPSTREAM_IMAGES.len()).map(Token::Image))
    }
}

/// The values key of operand image `i` of [`UPSTREAM_IMAGES`]: its CSO environment name
/// without `_IMAGE`, in lower camel case (`NODE_DRIVER_REGISTRAR_IMAGE` → `nodeDriverRegistrar`).
pub fn image_key(i: usize) -> String {
    let env = UPSTREAM_IMAGES[i].0;
    let base = env.strip_suffix("_IMAGE").unwrap_or(env);
    let mut out = String::new();
    for (n, word) in base.split('_').enumerate() {
        let word = word.to_lowercase();
        if n == 0 {
            out.push_str(&word);
        } else {
            let mut c = word.chars();
            if let Some(f) = c.next() {
                out.extend(f.to_uppercase());
                out.push_str(c.as_str());
            }
        }
    }
    out
}

/// A block field: the whole field becomes a template block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Affinity,
    Tolerations,
    NodeSelector,
    ImagePullSecrets,
    Resources,
    /// Extra `args` items of the operator `driver` ("cinder" or "manila").
    Args(&'static str),
    /// The labels of the operators' ServiceMonitors.
    MonitoringLabels,
}

impl Block {
    fn text(self) -> String {
        match self {
            Block::Affinity => "zzhelm-block-affinity-zz".into(),
            Block::Tolerations => "zzhelm-block-tolerations-zz".into(),
            Block::NodeSelector => "zzhelm-block-node-selector-zz".into(),
            Block::ImagePullSecrets => "zzhelm-block-pull-secrets-zz".into(),
            Block::Resources => "zzhelm-block-resources-zz".into(),
            Block::Args(d) => format!("zzhelm-block-args-{d}-zz"),
            Block::MonitoringLabels => "zzhelm-block-monitoring-labels-zz".into(),
        }
    }

    fn all() -> [Block; 8] {
        [
            Block::Affinity,
            Block::Tolerations,
            Block::NodeSelector,
            Block::ImagePullSecrets,
            Block::Resources,
            Block::Args("cinder"),
            Block::Args("manila"),
            Block::MonitoringLabels,
        ]
    }

    /// The template lines for `key: TOKEN` (or `- TOKEN`) at `indent` spaces.
    fn lines(self, indent: usize, key: &str) -> String {
        let pad = " ".repeat(indent);
        let field = |values: &str| {
            format!(
                "{pad}{{{{- with .Values.{values} }}}}\n{pad}{key}:\n{pad}  {{{{- toYaml . | nindent {} }}}}\n{pad}{{{{- end }}}}\n",
                indent + 2
            )
        };
        match self {
            Block::Affinity => field("affinity"),
            Block::Tolerations => field("tolerations"),
            Block::NodeSelector => field("nodeSelector"),
            Block::MonitoringLabels => field("monitoring.labels"),
            Block::ImagePullSecrets => field("imagePullSecrets"),
            Block::Resources => format!(
                "{pad}{key}:\n{pad}  {{{{- toYaml .Values.resources | nindent {} }}}}\n",
                indent + 2
            ),
            Block::Args(driver) => {
                let mut out = format!(
                    "{pad}{{{{- with .Values.certManager.issuer }}}}{{{{ if .name }}}}\n{pad}- {{{{ printf \"--cert-manager-issuer=%s/%s\" .kind .name | quote }}}}\n{pad}{{{{- end }}}}{{{{ end }}}}\n"
                );
                if driver == "cinder" {
                    out.push_str(&format!(
                        "{pad}{{{{- with .Values.cinder.adoptHelmRelease }}}}{{{{ if .name }}}}\n{pad}- {{{{ printf \"--adopt-helm-release=%s/%s\" .namespace .name | quote }}}}\n{pad}{{{{- end }}}}{{{{ end }}}}\n"
                    ));
                }
                out
            }
        }
    }
}

/// Replaces `from` inside every string of `v` (keys too) with `to`.
fn replace_in_strings(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_in_strings(x, from, to)),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut x) in old {
                replace_in_strings(&mut x, from, to);
                m.insert(k.replace(from, to), x);
            }
        }
        _ => {}
    }
}

/// The namespaces as values: every mention of the three namespaces the base uses.
fn tokenize_namespaces(v: &mut Value) {
    for (ns, token) in [
        (CSI_OPERATOR_NAMESPACE, Token::OperatorsNamespace),
        (MANILA_DRIVER_NAMESPACE, Token::ManilaNamespace),
        (CONFIG_NAMESPACE, Token::ConfigNamespace),
    ] {
        replace_in_strings(v, ns, &token.text());
    }
}

/// Which driver an object of the base belongs to: `Some("cinder")`, `Some("manila")`, or
/// `None` for what both need.
fn driver_of(object: &Value) -> Option<&'static str> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if object["kind"] == "CustomResourceDefinition" {
        None
    } else if name.contains("manila") {
        Some("manila")
    } else if name.contains("cinder") {
        Some("cinder")
    } else {
        None
    }
}

/// The operator Deployment with its knobs as tokens; returns the placement and resources it
/// had (the values' defaults).
fn tokenize_deployment(
    d: &mut Value,
    driver: &'static str,
    cluster_id_arg: &str,
) -> Result<Value, KubernetesError> {
    let name = d["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let missing = |what: &str| KubernetesError::Missing(format!("{what} in Deployment {name}"));
    let pod = d["spec"]["template"]["spec"]
        .as_object_mut()
        .ok_or_else(|| missing("a pod spec"))?;
    let mut defaults = Map::new();
    for (field, block) in [
        ("affinity", Block::Affinity),
        ("tolerations", Block::Tolerations),
        ("nodeSelector", Block::NodeSelector),
        ("imagePullSecrets", Block::ImagePullSecrets),
    ] {
        let had = pod.insert(field.to_owned(), json!(block.text()));
        defaults.insert(field.to_owned(), had.unwrap_or(Value::Null));
    }
    let containers = pod
        .get_mut("containers")
        .and_then(Value::as_array_mut)
        .filter(|c| c.len() == 1)
        .ok_or_else(|| missing("exactly one container"))?;
    let c = containers[0]
        .as_object_mut()
        .ok_or_else(|| missing("a container"))?;
    let had = c.insert("resources".into(), json!(Block::Resources.text()));
    defaults.insert("resources".into(), had.unwrap_or_else(|| json!({})));
    c.insert("image".into(), json!(Token::OperatorImage.text()));
    let args = c
        .get_mut("args")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| missing("args"))?;
    let at = args
        .iter()
        .position(|a| a == cluster_id_arg)
        .ok_or_else(|| missing(cluster_id_arg))?;
    args[at] = json!(format!("--cluster-id={}", Token::ClusterId.text()));
    args.push(json!(Block::Args(driver).text()));
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for e in env {
            if let Some(i) = UPSTREAM_IMAGES
                .iter()
                .position(|(_, image)| e["value"] == *image)
            {
                e["value"] = json!(Token::Image(i).text());
            }
        }
    }
    Ok(Value::Object(defaults))
}

/// The YAML of `object` with its tokens as template expressions.
fn template_text(object: &Value, what: &str) -> Result<String, KubernetesError> {
    let yaml = operator_kit::assets::to_yaml(object)
        .map_err(|e| KubernetesError::Serialize(what.to_owned(), e.to_string()))?;
    let mut out = String::new();
    for line in yaml.lines() {
        let block = Block::all().into_iter().find(|b| line.contains(&b.text()));
        if let Some(block) = block {
            let indent = line.len() - line.trim_start().len();
            let rest = line.trim_start();
            let key = rest
                .strip_suffix(&block.text())
                .map(|k| k.trim_end().trim_end_matches(':'))
                .unwrap_or_default();
            if key == "-" {
                out.push_str(&block.lines(indent, ""));
            } else if !key.is_empty() && !key.starts_with('-') {
                out.push_str(&block.lines(indent, key));
            } else {
                return Err(KubernetesError::Serialize(
                    what.to_owned(),
                    format!("a template block where none can go: {line:?}"),
                ));
            }
            continue;
        }
        let mut line = line.to_owned();
        for t in Token::all() {
            line = line.replace(&t.text(), &t.expression());
        }
        if line.contains("zzhelm-") {
            return Err(KubernetesError::Serialize(
                what.to_owned(),
                format!("a token left in {line:?}"),
            ));
        }
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// One file of the chart: its path under the chart's directory and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFile {
    pub path: String,
    pub text: String,
}

/// What the chart is made of besides the base.
#[derive(Debug, Clone)]
pub struct ChartInputs<'a> {
    /// The base's inputs (operator image, version).
    pub kubernetes: &'a KubernetesInputs,
    /// The base, as [`crate::kubernetes::manifests`] made it.
    pub files: &'a [ManifestFile],
    /// `manifests/adopt-helm-cinder/rbac.yaml`, parsed: what `--adopt-helm-release` needs.
    pub adoption_rbac: Vec<Value>,
}

/// The template a file's objects go through.
struct Template {
    path: String,
    /// A condition on the values, e.g. `.Values.cinder.enabled`.
    condition: Option<String>,
    body: String,
}

impl Template {
    fn file(self) -> ChartFile {
        let text = match &self.condition {
            Some(c) => format!(
                "{GENERATED_HEADER}{{{{- if {c} }}}}\n{}{{{{- end }}}}\n",
                self.body
            ),
            None => format!("{GENERATED_HEADER}{}", self.body),
        };
        ChartFile {
            path: self.path,
            text,
        }
    }
}

/// Every file of the chart.
pub fn chart(inputs: &ChartInputs) -> Result<Vec<ChartFile>, KubernetesError> {
    let cluster_id_arg = format!("--cluster-id={DEFAULT_CLUSTER_ID}");
    let mut templates = Vec::new();
    let mut crds = Vec::new();
    let mut placement: Option<Value> = None;
    for f in inputs.files {
        let mut o = f.object.clone();
        if o["kind"] == "CustomResourceDefinition" {
            crds.push(ChartFile {
                path: format!("crds/{}", f.name),
                text: crate::kubernetes::file_text(f)?,
            });
            continue;
        }
        let driver = driver_of(&o);
        if o["kind"] == "Deployment" {
            let driver = driver.ok_or_else(|| {
                KubernetesError::Missing(format!("the driver of Deployment {}", f.name))
            })?;
            let defaults = tokenize_deployment(&mut o, driver, &cluster_id_arg)?;
            match &placement {
                None => placement = Some(defaults),
                Some(p) if *p == defaults => {}
                Some(p) => {
                    return Err(KubernetesError::Serialize(
                        f.name.clone(),
                        format!(
                            "the operator Deployments differ in placement or resources ({p} and {defaults}); the chart has one set of values for both"
                        ),
                    ));
                }
            }
        }
        tokenize_namespaces(&mut o);
        templates.push(Template {
            path: format!("templates/{}", f.name),
            condition: driver.map(|d| format!(".Values.{d}.enabled")),
            body: template_text(&o, &f.name)?,
        });
    }
    let placement = placement.ok_or_else(|| KubernetesError::Missing("a Deployment".into()))?;
    if inputs.adoption_rbac.is_empty() {
        return Err(KubernetesError::Missing(
            "manifests/adopt-helm-cinder/rbac.yaml's objects".into(),
        ));
    }
    let mut body = String::new();
    for (i, o) in inputs.adoption_rbac.iter().enumerate() {
        let mut o = o.clone();
        if o["metadata"]["namespace"] == ADOPTION_NAMESPACE {
            o["metadata"]["namespace"] = json!(Token::AdoptionNamespace.text());
        }
        tokenize_namespaces(&mut o);
        if i > 0 {
            body.push_str("---\n");
        }
        body.push_str(&template_text(&o, "adoption RBAC")?);
    }
    templates.push(Template {
        path: "templates/adopt-helm-cinder.yaml".into(),
        condition: Some("and .Values.cinder.enabled .Values.cinder.adoptHelmRelease.name".into()),
        body,
    });
    for mut sm in crate::kubernetes::operator_service_monitors(inputs.files)? {
        let driver = driver_of(&sm).ok_or_else(|| {
            KubernetesError::Missing(format!("the driver of {}", sm["metadata"]["name"]))
        })?;
        sm["metadata"]["labels"] = json!(Block::MonitoringLabels.text());
        tokenize_namespaces(&mut sm);
        templates.push(Template {
            path: format!("templates/servicemonitor-{driver}-operator.yaml"),
            condition: Some(format!(
                "and .Values.{driver}.enabled .Values.monitoring.enabled ({MONITORING_CAPABILITY})"
            )),
            body: template_text(&sm, "operator ServiceMonitor")?,
        });
    }
    for (driver, operator, namespace) in SETTINGS {
        templates.push(settings_template(driver, operator, namespace));
    }
    templates.push(Template {
        path: "templates/validate.yaml".into(),
        condition: None,
        body: format!("{{{{- include \"{CHART_NAME}.validate\" . }}}}\n"),
    });

    let mut files = vec![
        ChartFile {
            path: "Chart.yaml".into(),
            text: chart_yaml(inputs.kubernetes),
        },
        ChartFile {
            path: "values.yaml".into(),
            text: values_text(inputs.kubernetes, &placement)?,
        },
        ChartFile {
            path: "values.schema.json".into(),
            text: format!(
                "{}\n",
                serde_json::to_string_pretty(&schema())
                    .map_err(|e| KubernetesError::Serialize("schema".into(), e.to_string()))?
            ),
        },
        ChartFile {
            path: "templates/_helpers.tpl".into(),
            text: helpers(),
        },
    ];
    files.extend(crds);
    files.extend(templates.into_iter().map(Template::file));
    files.push(ChartFile {
        path: "templates/NOTES.txt".into(),
        text: notes(),
    });
    Ok(files)
}

/// Whether the cluster serves ServiceMonitors (the Prometheus operator's CRD): without it an
/// install with one would fail, so the chart leaves them out and `helm upgrade` adds them once
/// the CRD is there.
const MONITORING_CAPABILITY: &str =
    ".Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/ServiceMonitor\"";

/// The drivers' settings ConfigMaps (docs/driver-settings.md): the driver, the operator's name
/// (its user agent, which names the ConfigMap) and the value of the namespace it is read from.
const SETTINGS: [(&str, &str, &str); 2] = [
    (
        "cinder",
        cinder::SPEC.user_agent,
        ".Values.namespaces.operators",
    ),
    (
        "manila",
        manila::SPEC.user_agent,
        ".Values.namespaces.manilaDriver",
    ),
];

/// The settings ConfigMap of `driver`, rendered only when its `settings` value is not empty:
/// with the default values the chart renders exactly the base, and the operator keeps doing
/// what it does without the ConfigMap. Removing the settings from the values makes Helm delete
/// the ConfigMap, which returns the driver to the defaults.
fn settings_template(driver: &str, operator: &str, namespace: &str) -> Template {
    let name = operator_kit::settings::config_map_name(operator);
    let key = operator_kit::settings::DATA_KEY;
    Template {
        path: format!("templates/settings-{driver}.yaml"),
        condition: Some(format!(
            "and .Values.{driver}.enabled .Values.{driver}.settings"
        )),
        body: format!(
            "apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: {{{{ {namespace} }}}}
data:
  {key}: |
    {{{{- toYaml .Values.{driver}.settings | nindent 4 }}}}
"
        ),
    }
}

/// What `helm install` prints: the next steps of docs/install-kubernetes.md for the namespaces
/// and drivers of this release.
fn notes() -> String {
    let conditions = |driver: &str, cr: &str, conditions: &[&str]| {
        let mut out = format!(
            "{{{{ if .Values.{driver}.enabled }}}}\n  kubectl wait --for=create clustercsidriver/{cr} --timeout=5m\n"
        );
        for c in conditions {
            out.push_str(&format!(
                "  kubectl wait --for=condition={c} clustercsidriver/{cr} --timeout=5m\n"
            ));
        }
        out.push_str("{{- end }}\n");
        out
    };
    format!(
        r#"{{{{- /* Generated by crates/cluster-storage/src/chart.rs; do not edit. */ -}}}}
The operators are installed; each waits for the cloud's credentials (a clouds.yaml with the
cloud named "openstack"; add --from-file=cacert=./ca.pem where the cloud uses a private CA):
{{{{ if or .Values.cinder.enabled .Values.manila.enabled }}}}
  kubectl -n {{{{ .Values.namespaces.operators }}}} create secret generic openstack-cloud-credentials \
    --from-file=clouds.yaml=./clouds.yaml --save-config
{{{{- end }}}}
{{{{- if .Values.manila.enabled }}}}
  kubectl -n {{{{ .Values.namespaces.manilaDriver }}}} create secret generic manila-cloud-credentials \
    --from-file=clouds.yaml=./clouds.yaml --save-config
{{{{- end }}}}

Then each creates its ClusterCSIDriver and installs its driver:
{conditions_cinder}{conditions_manila}
docs/install-kubernetes.md has the rest (verification, configuration, metrics).
"#,
        conditions_cinder = conditions(
            "cinder",
            cinder::SPEC.cluster_csi_driver,
            &[
                "OpenStackCinderDriverControllerServiceControllerAvailable",
                "OpenStackCinderDriverNodeServiceControllerAvailable"
            ]
        ),
        conditions_manila = conditions(
            "manila",
            manila::SPEC.cluster_csi_driver,
            &["OpenStackManilaDriverControllerServiceControllerAvailable"]
        ),
    )
}

/// The operator image's repository and tag.
fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (image, "latest"),
    }
}

fn chart_yaml(inputs: &KubernetesInputs) -> String {
    let (_, tag) = split_image(&inputs.operator_image);
    format!(
        "{GENERATED_HEADER}apiVersion: v2
name: {CHART_NAME}
description: >-
  The OpenStack Cinder and Manila CSI driver operators for plain Kubernetes: each installs and
  keeps its CSI driver; the same objects as manifests/kubernetes.
type: application
version: {version}
appVersion: \"{tag}\"
kubeVersion: \">=1.30.0-0\"
home: https://github.com/openshift/cluster-storage-operator
keywords:
- openstack
- cinder
- manila
- csi
",
        version = inputs.version
    )
}

/// The values' defaults, each with what it does.
pub fn values(inputs: &KubernetesInputs, placement: &Value) -> Value {
    let (repo, tag) = split_image(&inputs.operator_image);
    let images: Map<String, Value> = UPSTREAM_IMAGES
        .iter()
        .enumerate()
        .map(|(i, (_, image))| (image_key(i), json!(image)))
        .collect();
    json!({
        "image": {"repository": repo, "tag": tag},
        "imagePullSecrets": placement["imagePullSecrets"].as_array().cloned().unwrap_or_default(),
        "images": images,
        "namespaces": {
            "operators": CSI_OPERATOR_NAMESPACE,
            "manilaDriver": MANILA_DRIVER_NAMESPACE,
            "config": CONFIG_NAMESPACE,
        },
        "clusterID": DEFAULT_CLUSTER_ID,
        "cinder": {"enabled": true, "adoptHelmRelease": {"name": "", "namespace": ADOPTION_NAMESPACE}, "settings": {}},
        "manila": {"enabled": true, "settings": {}},
        "certManager": {"issuer": {"kind": "ClusterIssuer", "name": ""}},
        "monitoring": {
            "enabled": true,
            "labels": {crate::kubernetes::MONITOR_LABEL.0: crate::kubernetes::MONITOR_LABEL.1},
        },
        "resources": placement["resources"],
        "nodeSelector": placement["nodeSelector"].as_object().cloned().unwrap_or_default(),
        "tolerations": placement["tolerations"].as_array().cloned().unwrap_or_default(),
        "affinity": placement["affinity"].as_object().cloned().unwrap_or_default(),
    })
}

/// What each top-level value is for, in the order values.yaml lists them.
const VALUE_DOCS: &[(&str, &str)] = &[
    (
        "image",
        "The operator image (both operators run it). Set it to the image you built or mirrored\n(docs/image.md); the tag defaults to this chart's appVersion.",
    ),
    (
        "imagePullSecrets",
        "Secrets in the operators' namespace to pull the operator image with, e.g.\n[{name: my-registry}].",
    ),
    (
        "images",
        "The driver and sidecar images the operators deploy (the operators' *_IMAGE environment);\nthe defaults are the upstream releases of the cloud-provider-openstack charts.",
    ),
    (
        "namespaces",
        "Where things go. operators: both operators and the Cinder driver. manilaDriver and config\ncannot change yet: the operators build those namespaces in (the chart refuses other names).",
    ),
    (
        "clusterID",
        "The drivers' --cluster (tags volumes); the upstream charts' default, so volumes a chart\ninstall made keep their tag.",
    ),
    (
        "cinder",
        "The Cinder operator. adoptHelmRelease: take over the CSIDriver and StorageClasses of a\nrunning openstack-cinder-csi release (docs/switch-from-helm.md); name empty = no adoption.\nsettings: the driver's settings (docs/driver-settings.md: kubeletDir, controller replicas,\ncontainers' resources and extraArgs, imagePullSecrets, serviceMonitor, storageClasses),\nrendered as its settings ConfigMap; {} = no ConfigMap, the operator's defaults.",
    ),
    (
        "manila",
        "The Manila operator. settings: as cinder.settings, for the Manila driver (its node\ncontainers: openstack-manila-csi-nodeplugin/csi-driver, csi-nodeplugin-nfsplugin/csi-driver).",
    ),
    (
        "certManager",
        "Where cert-manager runs, the issuer of the drivers' metrics serving certificates\n(kind Issuer or ClusterIssuer); name empty = a self-signed Issuer per driver namespace.",
    ),
    (
        "monitoring",
        "The operators' own ServiceMonitors (their /metrics: build_info, process_*, reconciles;\ndocs/metrics.md), rendered only where the monitoring.coreos.com/v1 ServiceMonitor CRD is\nserved (install the Prometheus operator first, or helm upgrade after it). labels: what your\nPrometheus selects (kube-prometheus-stack: release: <its release name>).",
    ),
    ("resources", "Resources of both operator containers."),
    ("nodeSelector", "Placement of both operator Deployments."),
    ("tolerations", ""),
    (
        "affinity",
        "Helm merges a map you give with these defaults: set a key to null to drop it\n(affinity.nodeAffinity: null drops the control-plane preference).",
    ),
];

fn values_text(inputs: &KubernetesInputs, placement: &Value) -> Result<String, KubernetesError> {
    let values = values(inputs, placement);
    let mut out = String::from(GENERATED_HEADER);
    for (key, doc) in VALUE_DOCS {
        out.push('\n');
        for line in doc.lines() {
            out.push_str(&format!("# {line}\n"));
        }
        let mut one = Map::new();
        one.insert((*key).to_owned(), values[*key].clone());
        let yaml = operator_kit::assets::to_yaml(&Value::Object(one))
            .map_err(|e| KubernetesError::Serialize("values.yaml".into(), e.to_string()))?;
        out.push_str(&yaml);
    }
    Ok(out)
}

/// A DNS-1123 label (namespaces).
const DNS_LABEL: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// An image repository: registry host (with port) and path, lower case, no tag.
const REPOSITORY: &str =
    "^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*)+$";
/// An image tag.
const TAG: &str = "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$";
/// A full image reference (repository with a tag or digest).
const IMAGE: &str = "^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$";

/// `values.schema.json`: Helm refuses values that do not match, before rendering anything.
pub fn schema() -> Value {
    let images: Map<String, Value> = (0..UPSTREAM_IMAGES.len())
        .map(|i| (image_key(i), json!({"type": "string", "pattern": IMAGE})))
        .collect();
    let strict = |properties: Value, required: &[&str]| {
        json!({"type": "object", "additionalProperties": false,
               "properties": properties, "required": required})
    };
    let ns = json!({"type": "string", "pattern": DNS_LABEL, "maxLength": 63});
    json!({
        "$schema": "https://json-schema.org/draft-07/schema#",
        "title": format!("{CHART_NAME} values"),
        "type": "object",
        "additionalProperties": false,
        "required": ["image", "images", "namespaces", "clusterID", "cinder", "manila"],
        "properties": {
            "image": strict(json!({
                "repository": {"type": "string", "pattern": REPOSITORY},
                "tag": {"type": "string", "pattern": TAG},
            }), &["repository", "tag"]),
            "imagePullSecrets": {"type": "array", "items": strict(json!({
                "name": {"type": "string", "minLength": 1},
            }), &["name"])},
            "images": strict(Value::Object(images), &[]),
            "namespaces": strict(json!({
                "operators": ns, "manilaDriver": ns, "config": ns,
            }), &["operators", "manilaDriver", "config"]),
            "clusterID": {"type": "string", "pattern": "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", "maxLength": 253},
            "cinder": strict(json!({
                "enabled": {"type": "boolean"},
                "adoptHelmRelease": strict(json!({
                    "name": {"type": "string", "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$", "maxLength": 53},
                    "namespace": ns,
                }), &["name", "namespace"]),
                "settings": settings_schema(),
            }), &["enabled"]),
            "manila": strict(json!({
                "enabled": {"type": "boolean"},
                "settings": settings_schema(),
            }), &["enabled"]),
            "certManager": strict(json!({
                "issuer": strict(json!({
                    "kind": {"type": "string", "enum": ["Issuer", "ClusterIssuer"]},
                    "name": {"type": "string", "pattern": "^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$"},
                }), &["kind", "name"]),
            }), &[]),
            "monitoring": strict(json!({
                "enabled": {"type": "boolean"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }), &["enabled"]),
            "resources": {"type": "object"},
            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
            "tolerations": {"type": "array", "items": {"type": "object"}},
            "affinity": {"type": "object"},
        },
    })
}

/// The keys of docs/driver-settings.md, typed as far as a schema can (the operator parses the
/// ConfigMap strictly and says what is wrong in `DriverSettingsDegraded`; this refuses what it
/// can before anything is installed).
fn settings_schema() -> Value {
    let strict = |properties: Value| json!({"type": "object", "additionalProperties": false, "properties": properties});
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let quantities =
        json!({"type": "object", "additionalProperties": {"type": ["string", "number"]}});
    let container = strict(json!({
        "extraArgs": strings,
        "resources": strict(json!({"requests": quantities, "limits": quantities})),
    }));
    let containers = json!({"type": "object", "additionalProperties": container});
    let name =
        json!({"type": "string", "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253});
    let mut class = strict(json!({
        "name": name,
        "parameters": {"type": "object", "additionalProperties": {"type": "string"}},
        "reclaimPolicy": {"type": "string", "enum": ["Delete", "Retain"]},
        "volumeBindingMode": {"type": "string", "enum": ["Immediate", "WaitForFirstConsumer"]},
        "allowVolumeExpansion": {"type": "boolean"},
        "mountOptions": strings,
        "isDefault": {"type": "boolean"},
    }));
    class["required"] = json!(["name"]);
    let mut secret = strict(json!({"name": name}));
    secret["required"] = json!(["name"]);
    strict(json!({
        "kubeletDir": {"type": "string", "pattern": "^/[^\\s]*[^/\\s]/?$"},
        "controller": strict(json!({
            "replicas": {"type": "integer", "minimum": 1, "maximum": i32::MAX},
            "containers": containers,
        })),
        "node": strict(json!({"containers": containers})),
        "imagePullSecrets": {"type": "array", "items": secret},
        "serviceMonitor": strict(json!({
            "enabled": {"type": "boolean"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        })),
        "storageClasses": {"type": "array", "items": class},
    }))
}

/// The checks a schema cannot say, with messages that say what to do.
fn validate_template() -> String {
    format!(
        r#"{{{{- define "{CHART_NAME}.validate" -}}}}
{{{{- if not (or .Values.cinder.enabled .Values.manila.enabled) -}}}}
{{{{- fail "cinder.enabled and manila.enabled are both false: this release would install no operator; enable at least one" -}}}}
{{{{- end -}}}}
{{{{- if ne .Values.namespaces.manilaDriver "{MANILA_DRIVER_NAMESPACE}" -}}}}
{{{{- fail (printf "namespaces.manilaDriver is %q: the Manila operator builds its driver's objects in {MANILA_DRIVER_NAMESPACE} whatever it is told, so this cannot change yet" .Values.namespaces.manilaDriver) -}}}}
{{{{- end -}}}}
{{{{- if ne .Values.namespaces.config "{CONFIG_NAMESPACE}" -}}}}
{{{{- fail (printf "namespaces.config is %q: both operators read their cloud.conf overrides from {CONFIG_NAMESPACE}, which they do not let change, so this cannot change yet" .Values.namespaces.config) -}}}}
{{{{- end -}}}}
{{{{- if or (eq .Values.namespaces.operators .Values.namespaces.config) (eq .Values.namespaces.operators .Values.namespaces.manilaDriver) -}}}}
{{{{- fail (printf "namespaces.operators is %q, the same as another of namespaces: the chart would declare one Namespace twice" .Values.namespaces.operators) -}}}}
{{{{- end -}}}}
{{{{- if and .Values.cinder.adoptHelmRelease.name (not .Values.cinder.enabled) -}}}}
{{{{- fail "cinder.adoptHelmRelease.name is set while cinder.enabled is false: only the Cinder operator adopts a Helm release" -}}}}
{{{{- end -}}}}
{{{{- end -}}}}
"#
    )
}

fn helpers() -> String {
    format!(
        "{GENERATED_HEADER}{{{{/* Checks of values that values.schema.json cannot express. */}}}}\n{}",
        validate_template()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_keys_are_lower_camel_case_without_the_suffix() {
        let keys: Vec<String> = (0..UPSTREAM_IMAGES.len()).map(image_key).collect();
        assert!(keys.contains(&"nodeDriverRegistrar".to_owned()), "{keys:?}");
        assert!(
            keys.contains(&"openstackCinderDriver".to_owned()),
            "{keys:?}"
        );
        assert!(keys.contains(&"livenessProbe".to_owned()), "{keys:?}");
    }

    #[test]
    fn a_block_where_none_can_go_is_an_error() {
        let o = json!({"items": [{"resources": Block::Resources.text()}]});
        let err = template_text(&o, "x").expect_err("a block as the first key of a list item");
        assert!(err.to_string().contains("none can go"), "{err}");
    }

    #[test]
    fn tokens_become_expressions_and_blocks_become_with_blocks() {
        let o = json!({"spec": {
            "affinity": Block::Affinity.text(),
            "args": ["--x", Block::Args("manila").text()],
            "ns": format!("system:serviceaccount:{}:x", Token::OperatorsNamespace.text()),
        }});
        let text = template_text(&o, "x").expect("templates");
        assert!(
            text.contains("  {{- with .Values.affinity }}\n  affinity:\n    {{- toYaml . | nindent 4 }}\n  {{- end }}\n"),
            "{text}"
        );
        assert!(
            text.contains("system:serviceaccount:{{ .Values.namespaces.operators }}:x"),
            "{text}"
        );
        assert!(text.contains("--cert-manager-issuer"), "{text}");
        assert!(!text.contains("--adopt-helm-release"), "{text}");
        assert!(!text.contains("zzhelm"), "{text}");
    }

    #[test]
    fn a_repository_with_a_tag_is_not_a_repository() {
        let re = |p: &str, s: &str| {
            // The schema's patterns, checked with the same regex dialect as Helm's (Go regexp, as the `regex` crate reads it).
            regex::Regex::new(p).expect("pattern").is_match(s)
        };
        assert!(re(REPOSITORY, "quay.io/example/csi-operator"));
        assert!(re(
            REPOSITORY,
            "registry.example.com:5000/storage/csi-operator"
        ));
        assert!(!re(REPOSITORY, "quay.io/example/csi-operator:v1"));
        assert!(!re(REPOSITORY, "Quay.io/Example"));
        assert!(re(TAG, "v0.1.0"));
        assert!(!re(TAG, "v0.1.0 "));
        assert!(re(
            IMAGE,
            "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"
        ));
        assert!(!re(IMAGE, "registry.k8s.io/sig-storage/csi-provisioner:"));
    }
}
