/**
 * The node under test: denolet or the upstream kubelet, joined to the conformance
 * cluster as {@link NODE} with one KubeletConfiguration for both (written by
 * {@link kubeletConfig}); flags differ only where the two name a thing differently.
 *
 * The upstream kubelet would set six host sysctls at start (vm.overcommit_memory,
 * kernel.panic_on_oops, …; container_manager_linux.go setupKernelTunables) on a machine
 * that others share. So it runs in a mount namespace of its own in which those six
 * /proc/sys files are bind-mounted read-only files holding the values it wants, with
 * `protectKernelDefaults: true` besides, so a value it disliked would stop it instead
 * of being written. Its root dir is made a shared mount first: the volumes it mounts in
 * its namespace (secrets, configmaps, …) then propagate to the host's, where containerd
 * runs.
 *
 * @module
 */

import { exec, processArgs } from "../../tests/harness/_exec.ts";
import type { TestRuntime } from "../../tests/harness/mod.ts";
import { unmountUnder } from "../../tests/harness/mounts.ts";
import { type Proc, spawn, stopProc } from "../../tests/e2e/_procs.ts";
import { NODE } from "../../tests/e2e/_node.ts";
import { startAgent } from "../../tests/integration/_agent.ts";
import { freePort } from "../../tests/kit/mod.ts";

/** Which kubelet runs the node. */
export type KubeletKind = "denolet" | "upstream";

/** A running node agent. */
export interface NodeAgent {
  kind: KubeletKind;
  /** Everything it logged so far (read from its log file for the upstream kubelet). */
  log(): string;
  /** Stops it (SIGTERM) and removes its directories; idempotent. */
  stop(): Promise<void>;
}

/** What {@link startKubelet} needs. */
export interface StartKubeletOptions {
  kind: KubeletKind;
  runtime: TestRuntime;
  /** The node IP (a test host address: the apiserver will not proxy to loopback). */
  nodeIP: string;
  kubeconfig: string;
  /** The cluster CA, which client certificates to the kubelet's port must chain to. */
  caFile: string;
  /** The upstream kubelet binary (for `kind: "upstream"`). */
  kubeletBin: string;
  /** Scratch directory for the config and the upstream kubelet's state. */
  dir: string;
}

/**
 * The KubeletConfiguration both kubelets get: the harness's runtime and cgroup parent,
 * webhook authn/authz trusting the cluster CA (as kubeadm sets it), the secure port on
 * every address, and the host settings of this machine (hybrid cgroups, no swap
 * accounting, its sysctls protected).
 */
export function kubeletConfig(
  opts: { runtime: TestRuntime; caFile: string; port: number; healthzPort: number; logs: string },
): Record<string, unknown> {
  return {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: opts.caFile },
    },
    authorization: { mode: "Webhook" },
    address: "0.0.0.0",
    port: opts.port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: opts.healthzPort,
    containerRuntimeEndpoint: opts.runtime.endpoint,
    cgroupDriver: "cgroupfs",
    cgroupRoot: opts.runtime.cgroupParent,
    podLogsDir: opts.logs,
    clusterDomain: "cluster.local",
    // This machine's cgroups are v1 controllers beside an empty v2 tree.
    failCgroupV1: false,
    failSwapOn: false,
    protectKernelDefaults: true,
  };
}

/**
 * Starts the chosen kubelet; resolves once it runs (the caller waits for Node Ready).
 *
 * @throws Error with its log when it exits during start-up
 */
export async function startKubelet(opts: StartKubeletOptions): Promise<NodeAgent> {
  const port = freePort();
  const healthzPort = freePort();
  const rootDir = `${opts.dir}/kubelet`;
  await Deno.mkdir(rootDir, { recursive: true });
  const config = `${opts.dir}/kubelet-config.json`;
  const logs = `${rootDir}/pod-logs`;
  await Deno.writeTextFile(
    config,
    JSON.stringify(kubeletConfig({ ...opts, port, healthzPort, logs }), null, 2),
  );
  const common = [
    `--config=${config}`,
    `--kubeconfig=${opts.kubeconfig}`,
    `--node-ip=${opts.nodeIP}`,
    `--hostname-override=${NODE}`,
    "--v=2",
  ];
  if (opts.kind === "denolet") {
    const agent = await startAgent({
      runtime: opts.runtime,
      extraArgs: [...common, "--address=0.0.0.0", `--port=${port}`],
    });
    let stopped = false;
    return {
      kind: "denolet",
      log: () => agent.log(),
      async stop() {
        if (stopped) return;
        stopped = true;
        await agent.stop();
        await agent.removeDirs();
      },
    };
  }
  return await startUpstream(opts, rootDir, logs, common);
}

/** The values upstream's setupKernelTunables wants (pkg/kubelet/cm/container_manager_linux.go). */
const KERNEL_TUNABLES: Record<string, string> = {
  "vm/overcommit_memory": "1",
  "vm/panic_on_oom": "0",
  "kernel/panic": "10",
  "kernel/panic_on_oops": "1",
  "kernel/keys/root_maxkeys": "1000000",
  "kernel/keys/root_maxbytes": "25000000",
};

// In the kubelet's mount namespace: bind each fake sysctl file ($1 holds
// "<file> <target>" lines), then become the kubelet.
const NS_SCRIPT = `set -e
while read -r file target; do mount --bind -o ro "$file" "$target"; done <"$1"
shift
exec "$@"`;

async function startUpstream(
  opts: StartKubeletOptions,
  rootDir: string,
  logs: string,
  common: string[],
): Promise<NodeAgent> {
  const sysctls = `${opts.dir}/sysctl`;
  await Deno.mkdir(sysctls);
  const binds: string[] = [];
  for (const [key, value] of Object.entries(KERNEL_TUNABLES)) {
    const file = `${sysctls}/${key.replaceAll("/", "_")}`;
    await Deno.writeTextFile(file, `${value}\n`);
    binds.push(`${file} /proc/sys/${key}`);
  }
  await Deno.writeTextFile(`${sysctls}/binds`, binds.join("\n") + "\n");
  // Shared before the namespace is made, so the copy in it is a peer of this one.
  await exec("mount", ["--bind", rootDir, rootDir]);
  await exec("mount", ["--make-rshared", rootDir]);
  const proc: Proc = {
    name: "kubelet",
    bin: "unshare",
    args: [
      "--mount",
      "--propagation",
      "unchanged",
      "sh",
      "-c",
      NS_SCRIPT,
      "sh",
      `${sysctls}/binds`,
      opts.kubeletBin,
      ...common,
      `--root-dir=${rootDir}`,
      `--cert-dir=${rootDir}/pki`,
    ],
    log: `${opts.dir}/kubelet.log`,
  };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await stopProc(proc, opts.dir, 30_000);
  };
  const agent: NodeAgent = {
    kind: "upstream",
    log: () => {
      try {
        return Deno.readTextFileSync(proc.log);
      } catch {
        return "";
      }
    },
    stop,
  };
  try {
    await spawn(proc);
    // It is the kubelet (same PID, after unshare and sh exec'd) once its args name it.
    const pid = proc.pid ?? 0;
    const deadline = Date.now() + 10_000;
    while (!(processArgs(pid)?.[0] ?? "").endsWith("kubelet")) {
      if (Date.now() > deadline || processArgs(pid) === undefined) {
        throw new Error(`conformance: the upstream kubelet did not start:\n${agent.log()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  return {
    ...agent,
    async stop() {
      await stop();
      await unmountUnder(rootDir);
      await removeLogSymlinks(logs);
    },
  };
}

/**
 * Removes the upstream kubelet's `/var/log/containers` symlinks into `logs` (its
 * legacyContainerLogsDir is fixed; the host's own links are left alone).
 */
async function removeLogSymlinks(logs: string): Promise<void> {
  const dir = "/var/log/containers";
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isSymlink) continue;
      const target = await Deno.readLink(`${dir}/${entry.name}`).catch(() => "");
      if (target.startsWith(`${logs}/`)) await Deno.remove(`${dir}/${entry.name}`);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}
