# Generated from crates/cluster-storage/assets and manifests/openshift; do not edit.
# Regenerate: UPDATE_MANIFESTS=1 cargo test -p csi-operator --test kubernetes_manifests
{{/* Checks of values that values.schema.json cannot express. */}}
{{- define "openstack-csi-operators.validate" -}}
{{- if not (or .Values.cinder.enabled .Values.manila.enabled) -}}
{{- fail "cinder.enabled and manila.enabled are both false: this release would install no operator; enable at least one" -}}
{{- end -}}
{{- if ne .Values.namespaces.manilaDriver "openshift-manila-csi-driver" -}}
{{- fail (printf "namespaces.manilaDriver is %q: the Manila operator builds its driver's objects in openshift-manila-csi-driver whatever it is told, so this cannot change yet" .Values.namespaces.manilaDriver) -}}
{{- end -}}
{{- if ne .Values.namespaces.config "openshift-config" -}}
{{- fail (printf "namespaces.config is %q: both operators read their cloud.conf overrides from openshift-config, which they do not let change, so this cannot change yet" .Values.namespaces.config) -}}
{{- end -}}
{{- if or (eq .Values.namespaces.operators .Values.namespaces.config) (eq .Values.namespaces.operators .Values.namespaces.manilaDriver) -}}
{{- fail (printf "namespaces.operators is %q, the same as another of namespaces: the chart would declare one Namespace twice" .Values.namespaces.operators) -}}
{{- end -}}
{{- if and .Values.cinder.adoptHelmRelease.name (not .Values.cinder.enabled) -}}
{{- fail "cinder.adoptHelmRelease.name is set while cinder.enabled is false: only the Cinder operator adopts a Helm release" -}}
{{- end -}}
{{- end -}}
