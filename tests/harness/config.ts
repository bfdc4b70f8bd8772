/**
 * The private containerd's configuration (config version 2) and its CNI network, both
 * kept inside the runtime's temporary directory so nothing on the host is shared.
 *
 * @module
 */

import { exec, shellQuote } from "./_exec.ts";
import { CNI_BIN_DIR } from "./require_root.ts";

/** Paths of one private containerd, all under its temporary directory. */
export interface RuntimePaths {
  dir: string;
  root: string;
  state: string;
  socket: string;
  config: string;
  log: string;
  cniConfDir: string;
  cniDataDir: string;
  /** runc's state directory, so `runc list` of another containerd never sees ours. */
  runcRoot: string;
}

/**
 * The layout of a runtime directory.
 *
 * @param dir the runtime's temporary directory
 */
export function runtimePaths(dir: string): RuntimePaths {
  return {
    dir,
    root: `${dir}/root`,
    state: `${dir}/state`,
    socket: `${dir}/containerd.sock`,
    config: `${dir}/config.toml`,
    log: `${dir}/containerd.log`,
    cniConfDir: `${dir}/cni/net.d`,
    cniDataDir: `${dir}/cni/ipam`,
    runcRoot: `${dir}/state/runc`,
  };
}

/** Options for {@link containerdConfig}. */
export interface ContainerdConfigOptions {
  paths: RuntimePaths;
  sandboxImage: string;
  snapshotter: string;
  /**
   * Registries reached over plain http: host (`127.0.0.1:5000`) → endpoint URL
   * (`http://127.0.0.1:5000`). containerd 1.6 speaks https to any host it has no
   * mirror entry for.
   */
  plainHttpRegistries?: Readonly<Record<string, string>>;
  /** The runc binary of the default handler (its shim's `BinaryName`); runc on the PATH by default. */
  runcBinary?: string;
}

/** The test runtime's second CRI runtime handler (runc under its own root). */
export const TEST_RUNTIME_HANDLER = "test-handler";

/** Plugins a test runtime never uses; skipping them makes start-up faster and quieter. */
const DISABLED_PLUGINS = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  // Would create /opt/containerd on the host.
  "io.containerd.internal.v1.opt",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
];

function toml(value: string): string {
  return JSON.stringify(value);
}

/**
 * containerd's config.toml for a private test runtime.
 *
 * @returns the TOML text
 */
export function containerdConfig(opts: ContainerdConfigOptions): string {
  const { paths } = opts;
  const cri = `plugins."io.containerd.grpc.v1.cri"`;
  return `version = 2
root = ${toml(paths.root)}
state = ${toml(paths.state)}
disabled_plugins = [${DISABLED_PLUGINS.map(toml).join(", ")}]

[grpc]
  address = ${toml(paths.socket)}

[ttrpc]
  address = ${toml(`${paths.socket}.ttrpc`)}

[debug]
  level = "info"

[${cri}]
  sandbox_image = ${toml(opts.sandboxImage)}
  # This machine lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  # Keep pod network namespaces under our state dir, not the host's /var/run/netns.
  netns_mounts_under_state_dir = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

  [${cri}.containerd]
    snapshotter = ${toml(opts.snapshotter)}
    default_runtime_name = "runc"

    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ${toml(paths.runcRoot)}${
    opts.runcBinary ? `\n        BinaryName = ${toml(opts.runcBinary)}` : ""
  }

    # A second handler for RuntimeClass tests, named as upstream's e2e suite expects
    # (PreconfiguredRuntimeClassHandler): runc again, under a runc root of its own so a
    # test can tell which handler ran a sandbox.
    [${cri}.containerd.runtimes.${TEST_RUNTIME_HANDLER}]
      runtime_type = "io.containerd.runc.v2"

      [${cri}.containerd.runtimes.${TEST_RUNTIME_HANDLER}.options]
        SystemdCgroup = false
        Root = ${toml(`${paths.runcRoot}-${TEST_RUNTIME_HANDLER}`)}

  [${cri}.cni]
    bin_dir = ${toml(CNI_BIN_DIR)}
    conf_dir = ${toml(paths.cniConfDir)}
    max_conf_num = 1
${
    Object.entries(opts.plainHttpRegistries ?? {}).map(([host, endpoint]) => `
  [${cri}.registry.mirrors.${toml(host)}]
    endpoint = [${toml(endpoint)}]
`).join("")
  }`;
}

/** The pod network of one runtime. */
export interface PodNetwork {
  /** CNI network name. */
  name: string;
  /** Linux bridge interface (≤ 15 characters), removed again by stop(). */
  bridge: string;
  /** IPv4 /24 the bridge hands out. */
  subnet: string;
}

/**
 * Picks a pod network for runtime `id`: a unique bridge name and a 10.88.x.0/24 subnet
 * that no interface on this host uses yet.
 *
 * @param id the runtime's short random id (hex)
 */
export async function choosePodNetwork(id: string): Promise<PodNetwork> {
  const { stdout } = await exec("ip", ["-4", "-o", "addr", "show"]);
  const used = new Set<number>();
  for (const match of stdout.matchAll(/inet 10\.88\.(\d+)\./g)) used.add(Number(match[1]));
  const free: number[] = [];
  for (let x = 100; x < 255; x++) if (!used.has(x)) free.push(x);
  const third = free[Math.floor(Math.random() * free.length)];
  if (third === undefined) throw new Error("harness: no free 10.88.x.0/24 subnet for pods");
  return {
    name: `denolet-test-${id}`,
    bridge: `dnt${id}`.slice(0, 15),
    subnet: `10.88.${third}.0/24`,
  };
}

/**
 * The CNI conflist: a bridge with host-local addresses (state kept in our dir), then
 * loopback. containerd also brings up `lo` itself, which needs the loopback binary too.
 * No masquerading and no port mapping, so no iptables rules are left behind.
 *
 * @param net the network from {@link choosePodNetwork}
 * @param dataDir host-local's state directory
 * @returns the JSON text
 */
export function cniConfList(net: PodNetwork, dataDir: string): string {
  return JSON.stringify(
    {
      cniVersion: "0.4.0",
      name: net.name,
      plugins: [
        {
          type: "bridge",
          bridge: net.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            ranges: [[{ subnet: net.subnet }]],
            routes: [{ dst: "0.0.0.0/0" }],
            dataDir,
          },
        },
        { type: "loopback" },
      ],
    },
    null,
    2,
  );
}

/**
 * A runc wrapper whose `create` (of a sandbox's pause container or of a container)
 * waits while the file `gate` exists, after touching `<gate>.held`: a test holds the
 * runtime's RunPodSandbox and StartContainer calls (containerd's CreateContainer runs
 * no runc) as a slow runtime or CNI would.
 * Every other runc call goes straight through.
 * @param gate the file that holds creates while it exists
 * @param runc the real runc
 * @returns the script's text
 */
export function gatedRuncScript(gate: string, runc: string): string {
  return `#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = create ]; then
    if [ -e ${shellQuote(gate)} ]; then
      touch ${shellQuote(`${gate}.held`)}
      while [ -e ${shellQuote(gate)} ]; do sleep 0.05; done
    fi
    break
  fi
done
exec ${shellQuote(runc)} "$@"
`;
}
