# shellcheck shell=bash
# What the Go builds of tools/e2e/build.sh and tools/conformance/build.sh share; sourced by
# both (not run on its own): the toolchain lookup, the build environment and Kubernetes'
# version stamp. Both builds must use the same environment and flags, or the packages they
# share (most of k8s.io/kubernetes) compile twice instead of coming from the Go build cache.

# go_mod_version GO_MOD MODULE: the version GO_MOD requires of MODULE (empty when none).
go_mod_version() {
  awk -v module="$2" '$1 == module && $2 ~ /^v/ { print $2; exit }' "$1"
}

# go_setup: sets go_bin to the Go toolchain (on PATH, else /usr/local/go/bin/go) or exits,
# and exports the build environment: no cgo (small static binaries), -trimpath (no local
# paths baked in) added to the caller's GOFLAGS (which are kept, e.g. -mod=mod).
go_setup() {
  go_bin="$(command -v go || true)"
  [[ -n "$go_bin" ]] || go_bin=/usr/local/go/bin/go
  if [[ ! -x "$go_bin" ]]; then
    echo "$0: no Go toolchain (not on PATH, not at /usr/local/go/bin/go)" >&2
    exit 1
  fi
  export CGO_ENABLED=0
  case " ${GOFLAGS:-} " in
    *" -trimpath "*) ;;
    *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" ;;
  esac
}

# go_ldflags: stripped binaries (no symbol table, no DWARF).
go_ldflags="-s -w"

# k8s_ldflags VERSION: go_ldflags plus the version a Kubernetes binary reports (/version,
# `kubectl version`, the apiserver's skew checks), stamped at link time as upstream's
# hack/lib/version.sh does; without it they say v0.0.0-master.
k8s_ldflags() {
  local version=$1 minor flags=$go_ldflags pkg
  minor="${version#v1.}"
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  echo "$flags"
}

# elapsed START: the seconds since START (a value of $SECONDS), as "Ns".
elapsed() { echo "$((SECONDS - $1))s"; }
