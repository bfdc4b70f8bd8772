#!/usr/bin/env bash
# Bootstraps a node with denolet:
#   install.sh [--prefix DIR] [--binary PATH] [--uninstall] [--no-start]
#
# Installs the binary (--binary, else dist/denolet, else built with `deno task compile`)
# to $PREFIX/usr/local/bin/denolet, a default KubeletConfiguration to
# $PREFIX/var/lib/kubelet/config.yaml (an existing one is kept), the static pod dir
# $PREFIX/etc/kubernetes/manifests and the unit $PREFIX/etc/systemd/system/denolet.service;
# checks containerd and its CRI plugin (never rewrites containerd's config); enables and
# starts the unit when the prefix is / and systemd runs the machine. Idempotent: a second
# run changes nothing and says so.
#
# --uninstall stops and disables the unit and removes the binary and the unit. Config,
# data (/var/lib/kubelet) and containers are left alone: KillMode=process means stopping
# the agent stops no pod.
set -euo pipefail

usage() {
  sed -n '2,3p' "$0" | sed 's/^# //' >&2
  exit 2
}

prefix=/
binary=
uninstall=false
start=true
while (($# > 0)); do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --binary=*) binary=${1#*=}; shift ;;
    --uninstall) uninstall=true; shift ;;
    --no-start) start=false; shift ;;
    -h | --help) usage ;;
    *) echo "install.sh: unknown argument: $1" >&2; usage ;;
  esac
done

src_dir=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# "" for /, so "$root/usr/..." is an absolute path either way.
root=${prefix%/}
if [[ -n "$root" && ! -d "$root" ]]; then
  echo "install.sh: --prefix $prefix: no such directory" >&2
  exit 1
fi

bin_path=$root/usr/local/bin/denolet
unit_path=$root/etc/systemd/system/denolet.service
config_path=$root/var/lib/kubelet/config.yaml
manifest_dir=$root/etc/kubernetes/manifests
containerd_config=$root/etc/containerd/config.toml

changes=0
say() { echo "install.sh: $*"; }
changed() {
  say "$*"
  changes=$((changes + 1))
}

# systemctl is only for the running machine: never for a scratch prefix, and only
# when systemd is PID 1 (sd_booted(3) checks /run/systemd/system the same way).
manage_systemd() {
  if [[ -n "$root" ]]; then
    say "not touching systemd: prefix is $prefix, not /"
    return 1
  fi
  if [[ ! -d /run/systemd/system ]]; then
    say "not touching systemd: it is not running this machine (PID 1 is $(cat /proc/1/comm 2>/dev/null || echo unknown))"
    return 1
  fi
  return 0
}

# Copies $1 to $2 with mode $3 unless $2 already has the same bytes.
install_file() {
  local from=$1 to=$2 mode=$3
  if [[ -f "$to" ]] && cmp -s "$from" "$to"; then
    return 1
  fi
  install -D -m "$mode" "$from" "$to"
  return 0
}

if $uninstall; then
  if manage_systemd; then
    if systemctl is-enabled --quiet denolet 2>/dev/null || systemctl is-active --quiet denolet; then
      # Stops only the agent: pods live in containerd's shims.
      systemctl disable --now denolet
      changed "stopped and disabled denolet.service (containers keep running)"
    fi
  fi
  for f in "$bin_path" "$unit_path"; do
    if [[ -e "$f" ]]; then
      rm -f "$f"
      changed "removed $f"
    fi
  done
  if ((changes > 0)) && [[ -z "$root" && -d /run/systemd/system ]]; then
    systemctl daemon-reload
  fi
  say "kept $config_path, $root/var/lib/kubelet and $manifest_dir"
  if ((changes == 0)); then say "nothing to uninstall"; fi
  exit 0
fi

# 1. The binary.
if [[ -z "$binary" ]]; then
  if [[ -x "$src_dir/dist/denolet" ]]; then
    binary=$src_dir/dist/denolet
  elif command -v deno >/dev/null 2>&1 && [[ -f "$src_dir/deno.json" ]]; then
    say "no dist/denolet: building it with deno task compile"
    (cd "$src_dir" && deno task compile)
    binary=$src_dir/dist/denolet
  else
    echo "install.sh: no binary: pass --binary PATH, or build dist/denolet with 'deno task compile'" >&2
    exit 1
  fi
fi
if [[ ! -f "$binary" ]]; then
  echo "install.sh: --binary $binary: no such file" >&2
  exit 1
fi
binary_changed=false
if install_file "$binary" "$bin_path" 0755; then
  changed "installed $bin_path"
  binary_changed=true
fi

# 2. Configuration and the static pod dir. An existing config is the operator's.
default_config() {
  cat <<'EOF'
# KubeletConfiguration written by denolet's install.sh; edit freely, it is not overwritten.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
# Must match containerd's runc SystemdCgroup option (false = cgroupfs).
cgroupDriver: cgroupfs
logging:
  format: text
EOF
}
if [[ -e "$config_path" ]]; then
  say "keeping existing $config_path"
else
  mkdir -p "$(dirname "$config_path")"
  default_config >"$config_path"
  chmod 0644 "$config_path"
  changed "wrote $config_path"
fi
if [[ ! -d "$manifest_dir" ]]; then
  mkdir -p "$manifest_dir"
  changed "created $manifest_dir"
fi

# 3. The unit.
unit_changed=false
if install_file "$src_dir/systemd/denolet.service" "$unit_path" 0644; then
  changed "installed $unit_path"
  unit_changed=true
fi

# 4. containerd: report, never rewrite.
cri_snippet() {
  cat <<'EOF'
    # /etc/containerd/config.toml (containerd 1.6/1.7, config version 2)
    version = 2
    # "cri" must not be listed here:
    disabled_plugins = []
    [plugins."io.containerd.grpc.v1.cri"]
      sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      # false matches cgroupDriver: cgroupfs in /var/lib/kubelet/config.yaml
      SystemdCgroup = false
EOF
}
containerd_ok=true
if [[ -x "$root/usr/bin/containerd" || -x "$root/usr/local/bin/containerd" ]] ||
  { [[ -z "$root" ]] && command -v containerd >/dev/null 2>&1; }; then
  if [[ -f "$containerd_config" ]]; then
    if grep -Eq '^[[:space:]]*disabled_plugins[[:space:]]*=.*"(io\.containerd\.grpc\.v1\.)?cri"' "$containerd_config"; then
      say "WARNING: $containerd_config disables the CRI plugin (disabled_plugins lists \"cri\"); denolet needs it"
      containerd_ok=false
    fi
    if grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true' "$containerd_config" &&
      grep -Eq '^cgroupDriver:[[:space:]]*cgroupfs' "$config_path"; then
      say "WARNING: containerd uses SystemdCgroup = true but $config_path has cgroupDriver: cgroupfs; make them agree"
      containerd_ok=false
    fi
  fi
else
  say "WARNING: containerd is not installed (Debian: apt-get install containerd runc); denolet needs its CRI socket"
  containerd_ok=false
fi
if ! $containerd_ok; then
  say "containerd's config was not changed; the settings denolet expects:"
  cri_snippet
fi

# 5. systemd.
if $start && manage_systemd; then
  if $unit_changed; then
    systemctl daemon-reload
  fi
  if ! systemctl is-enabled --quiet denolet 2>/dev/null; then
    systemctl enable denolet
    changed "enabled denolet.service"
  fi
  if ! systemctl is-active --quiet denolet; then
    systemctl start denolet
    changed "started denolet.service"
  elif $binary_changed || $unit_changed; then
    # Pods keep running across the restart (KillMode=process, state rebuilt from CRI).
    systemctl restart denolet
    changed "restarted denolet.service for the new binary/unit"
  fi
elif ! $start; then
  say "not starting denolet (--no-start)"
fi

if ((changes == 0)); then
  say "nothing to change: denolet is already installed"
else
  say "done ($changes change(s))"
fi
