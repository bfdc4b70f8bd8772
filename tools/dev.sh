#!/usr/bin/env bash
# The README's set-up and entry point: on a fresh Debian 12 machine, as root, with only
# node/npm installed, install what denolet's tests and demo need, then run one of them:
#   bash tools/dev.sh test    # the whole test suite (what .ci/run runs)
#   bash tools/dev.sh demo    # the demo
# Idempotent: packages and Deno that are already in place are not fetched again.
#
# Network: Debian's archive (apt), the npm registry (Deno itself, and the npm packages
# deno fetches for the tests) and the Go module proxy (tools/e2e/build.sh builds the e2e
# tier's etcd, kube-apiserver, kube-controller-manager, kubectl, metrics-server and the
# upstream kubelet, tools/conformance/build.sh the Conformance smoke test's e2e.test,
# ginkgo, kube-scheduler and test images' programs, from Go modules once, into
# ~/.cache/denolet/e2e; they need the machine's Go, 1.26 or newer). Nothing else.
set -euo pipefail

DENO_VERSION=2.9.6
# containerd + runc run the integration tier's private runtime; busybox-static and
# tar/gzip build its images; the CNI plugins give pods a bridge network; iproute2 and
# mount (umount) tear it down; ca-certificates lets npm and deno reach the registry;
# prometheus brings promtool and a real Prometheus to check our exposition against;
# openssl makes the e2e control plane's CA and certificates; shellcheck and systemd
# (systemd-analyze) check install.sh and the unit file; docker-registry (on loopback) and
# skopeo (which pushes to it) serve the test images of the Conformance smoke test
# (tests/e2e/conformance_smoke_test.ts, docs/conformance.md) and give the imagePullSecrets
# tests a registry that wants credentials; chromium (headless) loads the node page (/ui) in a
# real browser (tests/integration/ui_test.ts).
PACKAGES=(
  containerd runc busybox-static containernetworking-plugins
  tar gzip iproute2 mount util-linux ca-certificates prometheus openssl
  shellcheck systemd docker-registry skopeo chromium
)

cd "$(dirname "$(readlink -f "$0")")/.."

mode=${1:-test}
case "$mode" in
  test | demo) ;;
  *)
    echo "usage: bash tools/dev.sh test|demo [args...]" >&2
    exit 2
    ;;
esac
shift || true

if [[ $(id -u) -ne 0 ]]; then
  echo "tools/dev.sh: must run as root (the tests and the demo start containerd)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
missing=()
for pkg in "${PACKAGES[@]}"; do
  # Captured, not piped into grep -q: under pipefail an early-exiting grep can fail the test.
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "tools/dev.sh: installing ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
fi

deno_ok() {
  command -v deno >/dev/null 2>&1 && [[ "$(deno --version 2>/dev/null || true)" == "deno ${DENO_VERSION} "* ]]
}

if ! deno_ok; then
  echo "tools/dev.sh: installing deno ${DENO_VERSION} from npm"
  npm install -g --no-fund --no-audit "deno@${DENO_VERSION}"
  npm_root=$(npm root -g)
  # The package's postinstall links the platform binary (an optional dependency) into
  # place. npm may refuse to run install scripts (ignore-scripts / allow-scripts policy):
  # then run the same installer by hand.
  if [[ ! -x "${npm_root}/deno/deno" ]]; then
    node "${npm_root}/deno/install.cjs"
  fi
  # If the bin entry still points at the node wrapper (bin.cjs), point it at the binary:
  # the wrapper works, but costs a node start-up per call.
  bin_dir="$(npm prefix -g)/bin"
  if [[ -x "${npm_root}/deno/deno" && "$(readlink -f "${bin_dir}/deno")" != "${npm_root}/deno/deno" ]]; then
    ln -sf "${npm_root}/deno/deno" "${bin_dir}/deno"
  fi
  hash -r
  if ! deno_ok; then
    echo "tools/dev.sh: deno ${DENO_VERSION} is not usable after install:" >&2
    command -v deno >&2 || echo "deno not on PATH (${bin_dir})" >&2
    deno --version >&2 || true
    exit 1
  fi
fi
deno --version

exec deno task "$mode" "$@"
