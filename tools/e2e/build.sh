#!/usr/bin/env bash
# Builds the control plane that the end-to-end tier (tests/e2e) starts: kube-apiserver,
# kube-controller-manager and kubectl from k8s.io/kubernetes, and etcd from
# go.etcd.io/etcd/server/v3, with `go build` from Go modules only; and the upstream
# kubelet, which the integration tier's adoption test (tests/integration/
# adopt_upstream_test.ts) hands pods to and takes them back from.
#
# The versions live in the go.mod files beside this script (tools/e2e/go.mod for
# Kubernetes, tools/e2e/etcd/go.mod for etcd, tools/e2e/metrics-server/go.mod for
# metrics-server, whose k8s.io dependencies differ from Kubernetes' own); this script
# reads them from there, so a version bump is `go get -tool ...@vX` in that folder and
# nothing else.
#
# Binaries are cached outside the repo, keyed by the Kubernetes version:
#   ${DENOLET_CACHE:-$HOME/.cache/denolet}/e2e/<k8s-version>/{kube-apiserver,kube-controller-manager,kubectl,kubelet,etcd,metrics-server}
# A binary already there is not built again. Each build goes to a temp dir inside the
# cache dir and is renamed into place, so an interrupted build never leaves half a
# binary under the final name. The Go lookup, build environment and version stamp are
# tools/_go.sh's, shared with tools/conformance/build.sh.
#
#   bash tools/e2e/build.sh              # build what is missing
#   bash tools/e2e/build.sh --print-dir  # print the binary dir and exit
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/_go.sh
source "$here/../_go.sh"

k8s_version="$(go_mod_version "$here/go.mod" k8s.io/kubernetes)"
etcd_version="$(go_mod_version "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)"
ms_version="$(go_mod_version "$here/metrics-server/go.mod" sigs.k8s.io/metrics-server)"
if [[ -z "$k8s_version" || -z "$etcd_version" || -z "$ms_version" ]]; then
  echo "build.sh: cannot read the k8s.io/kubernetes, etcd server or metrics-server version from $here/go.mod, $here/etcd/go.mod, $here/metrics-server/go.mod" >&2
  exit 1
fi

out="${DENOLET_CACHE:-$HOME/.cache/denolet}/e2e/$k8s_version"
if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$out"
  exit 0
fi

k8s_tools=(kube-apiserver kube-controller-manager kubectl kubelet)
missing_k8s=()
for t in "${k8s_tools[@]}"; do
  [[ -x "$out/$t" ]] || missing_k8s+=("$t")
done
need_etcd=0
[[ -x "$out/etcd" ]] || need_etcd=1
need_ms=0
[[ -x "$out/metrics-server" ]] || need_ms=1
if [[ ${#missing_k8s[@]} -eq 0 && $need_etcd -eq 0 && $need_ms -eq 0 ]]; then
  echo "e2e binaries: up to date in $out (kubernetes $k8s_version, etcd $etcd_version, metrics-server $ms_version)"
  exit 0
fi

go_setup
mkdir -p "$out"
tmp="$(mktemp -d "$out/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "e2e binaries: building into $out with $("$go_bin" version)"
if [[ ${#missing_k8s[@]} -gt 0 ]]; then
  pkgs=()
  for t in "${missing_k8s[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$t"); done
  echo "  kubernetes $k8s_version: ${missing_k8s[*]} (one go build; about 25 min on 2 cores from a cold cache)"
  start=$SECONDS
  # One `go build` for all of them: the packages they share compile once. Version-stamped
  # (k8s_ldflags in tools/_go.sh).
  (cd "$here" && "$go_bin" build -ldflags="$(k8s_ldflags "$k8s_version")" -o "$tmp/" "${pkgs[@]}")
  for t in "${missing_k8s[@]}"; do
    mv -f "$tmp/$t" "$out/$t"
    echo "  built $t ($(du -h "$out/$t" | cut -f1))"
  done
  echo "  kubernetes done in $(elapsed "$start")"
fi
if [[ $need_etcd -eq 1 ]]; then
  echo "  etcd $etcd_version"
  start=$SECONDS
  (cd "$here/etcd" && "$go_bin" build -ldflags="$go_ldflags" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
  mv -f "$tmp/etcd" "$out/etcd"
  echo "  built etcd ($(du -h "$out/etcd" | cut -f1)) in $(elapsed "$start")"
fi
if [[ $need_ms -eq 1 ]]; then
  echo "  metrics-server $ms_version"
  start=$SECONDS
  # Stamped as metrics-server's Makefile does, so its /version and logs name the release.
  ms_ldflags="$go_ldflags -X k8s.io/client-go/pkg/version.gitVersion=$ms_version"
  (cd "$here/metrics-server" && "$go_bin" build -ldflags="$ms_ldflags" -o "$tmp/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server)
  mv -f "$tmp/metrics-server" "$out/metrics-server"
  echo "  built metrics-server ($(du -h "$out/metrics-server" | cut -f1)) in $(elapsed "$start")"
fi
echo "e2e binaries: ready in $out"
