#!/usr/bin/env bash
# The image's build stage (Containerfile), also run by CI: builds the product binary, the
# operators and `render` without the emulators (`--no-default-features` leaves out the `lab`
# feature), with the release profile, and refuses a binary that links kube-sim, openstack-sim
# or the testbed. Usage: hack/build-product.sh OUT_DIR
set -euo pipefail
out=${1:?usage: hack/build-product.sh OUT_DIR}
cd "$(dirname "$0")/.."
# Its own target directory: the feature set differs from the workspace build, and sharing
# target/ would replace target/release/csi-operator (the lab binary the benchmarks run).
target=${CARGO_TARGET_DIR:-target}/product
cargo build --locked --release --no-default-features -p csi-operator --target-dir "$target"
bin=$target/release/csi-operator

symbols=$(nm "$bin" | wc -l)
if (( symbols < 1000 )); then
    echo "$bin has $symbols symbols: stripped, so the check below would prove nothing" >&2
    exit 1
fi
if nm "$bin" | grep -E -m3 'kube_sim|openstack_sim|testbed' ||
    strings "$bin" | grep -E -m3 'crates/(kube-sim|openstack-sim|testbed)/'; then
    echo "$bin links emulator code (above): the image must not" >&2
    exit 1
fi
mkdir -p "$out"
cp "$bin" "$out/csi-operator"
"$out/csi-operator" --version
echo "product binary: $(stat -c %s "$out/csi-operator") bytes, no emulator symbols"
