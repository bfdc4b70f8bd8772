#!/usr/bin/env bash
# Builds what the conformance run (tools/conformance/mod.ts) needs beyond the e2e control
# plane and the upstream kubelet (the reference node, built by tools/e2e/build.sh, which the
# task runs first): the upstream e2e test binary (`e2e.test`), the ginkgo CLI that runs it,
# kube-scheduler, agnhost (the test image most Conformance tests start) and nonewprivs (the
# setuid helper of the nonewprivs image), all with `go build` / `go test -c` from Go
# modules only.
#
# The versions live in tools/conformance/go.mod: the same k8s.io/kubernetes version and
# replace lines as tools/e2e/go.mod, plus the tools above and the test-only modules of
# k8s.io/kubernetes/test/e2e (`go get -t`). ginkgo is held at the version k8s.io/kubernetes
# requires, as e2e.test and the CLI must agree on it. The test runner (tools/test.ts) runs
# this before the e2e tier, whose Conformance smoke test (tests/e2e/conformance_smoke_test.ts)
# needs all of it; the Go lookup, environment and version stamp are tools/_go.sh's.
#
# Binaries go beside the e2e ones, keyed by the Kubernetes version:
#   ${DENOLET_CACHE:-$HOME/.cache/denolet}/e2e/<k8s-version>/{e2e.test,ginkgo,kube-scheduler,agnhost,nonewprivs}
# A binary already there is not built again; each is built in a temp dir and renamed into
# place. Every compile runs under `nice -n 19`: this machine's cores are shared.
#
#   bash tools/conformance/build.sh              # build what is missing
#   bash tools/conformance/build.sh --print-dir  # print the binary dir and exit
set -euo pipefail

# All in one function, read whole before it runs: editing this file during a long build
# must not change what the running shell executes next.
main() {
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  # shellcheck source=tools/_go.sh
  source "$here/../_go.sh"

  k8s_version="$(go_mod_version "$here/go.mod" k8s.io/kubernetes)"
  ginkgo_version="$(go_mod_version "$here/go.mod" github.com/onsi/ginkgo/v2)"
  if [[ -z "$k8s_version" || -z "$ginkgo_version" ]]; then
    echo "build.sh: cannot read the k8s.io/kubernetes or ginkgo version from $here/go.mod" >&2
    exit 1
  fi

  out="${DENOLET_CACHE:-$HOME/.cache/denolet}/e2e/$k8s_version"
  if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$out"
    exit 0
  fi

  # One `go build` for the commands (they share most packages); e2e.test is a `go test -c`.
  declare -A cmd_pkg=(
    [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
    [agnhost]=k8s.io/kubernetes/test/images/agnhost
    [ginkgo]=github.com/onsi/ginkgo/v2/ginkgo
    [nonewprivs]=k8s.io/kubernetes/test/images/nonewprivs
  )
  missing_cmds=()
  for t in kube-scheduler agnhost ginkgo nonewprivs; do
    [[ -x "$out/$t" ]] || missing_cmds+=("$t")
  done
  need_e2e=0
  [[ -x "$out/e2e.test" ]] || need_e2e=1
  if [[ ${#missing_cmds[@]} -eq 0 && $need_e2e -eq 0 ]]; then
    echo "conformance binaries: up to date in $out (kubernetes $k8s_version, ginkgo $ginkgo_version)"
    exit 0
  fi

  # As tools/e2e/build.sh (tools/_go.sh), so the Go build cache it filled is reused for the
  # packages these share with kube-apiserver and the kubelet.
  go_setup
  ldflags="$(k8s_ldflags "$k8s_version")"
  mkdir -p "$out"
  tmp="$(mktemp -d "$out/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT

  echo "conformance binaries: building into $out with $("$go_bin" version)"
  if [[ ${#missing_cmds[@]} -gt 0 ]]; then
    pkgs=()
    for t in "${missing_cmds[@]}"; do pkgs+=("${cmd_pkg[$t]}"); done
    echo "  ${missing_cmds[*]} (kubernetes $k8s_version, ginkgo $ginkgo_version)"
    start=$SECONDS
    (cd "$here" && nice -n 19 "$go_bin" build -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}")
    for t in "${missing_cmds[@]}"; do
      mv -f "$tmp/$t" "$out/$t"
      echo "  built $t ($(du -h "$out/$t" | cut -f1))"
    done
    echo "  commands done in $(elapsed "$start")"
  fi
  if [[ $need_e2e -eq 1 ]]; then
    echo "  e2e.test (go test -c k8s.io/kubernetes/test/e2e)"
    start=$SECONDS
    (cd "$here" && nice -n 19 "$go_bin" test -c -ldflags="$ldflags" -o "$tmp/e2e.test" k8s.io/kubernetes/test/e2e)
    mv -f "$tmp/e2e.test" "$out/e2e.test"
    echo "  built e2e.test ($(du -h "$out/e2e.test" | cut -f1)) in $(elapsed "$start")"
  fi
  echo "conformance binaries: ready in $out"
}

main "$@"
