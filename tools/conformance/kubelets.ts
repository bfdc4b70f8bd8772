/**
 * The node under test: denolet or the upstream kubelet, joined to the conformance
 * cluster as {@link NODE} with one KubeletConfiguration for both (written by
 * {@link kubeletConfig}) and the same flags.
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

import { processArgs } from "../../tests/harness/_exec.ts";
import {
  removeLogSymlinks,
  shareRootDir,
  sysctlProtectedArgv,
} from "../../tests/harness/upstream_kubelet.ts";
import type { TestRuntime } from "../../tests/harness/mod.ts";
import { unmountUnder } from "../../tests/harness/mounts.ts";
import { isOurs, type Proc, spawn, stopProc } from "../../tests/e2e/_procs.ts";
import { NODE } from "../../tests/e2e/_node.ts";
import { freePort, waitFor } from "../../tests/kit/mod.ts";
import { runTaskOptions } from "../run_task.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/** The kubelet's secure port, as the e2e framework assumes it (framework.KubeletPort). */
export const KUBELET_PORT = 10250;

/** Which kubelet runs the node. */
export type KubeletKind = "denolet" | "upstream";

/** A running node agent. */
export interface NodeAgent {
  kind: KubeletKind;
  /** Everything it logged so far (its log file). */
  log(): string;
  /** Whether its process still runs. */
  alive(): boolean;
  /**
   * Stops it (SIGTERM, SIGKILL after 30 s) and unmounts what it left mounted under its
   * root dir, and the upstream kubelet's /var/log/containers links; idempotent.
   */
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
 * upstream's 10250 but bound to the node IP only (the e2e framework reaches the kubelet
 * through the apiserver's node proxy at port 10250, framework.KubeletPort, and a node IP
 * of each run's own keeps two runs, or another engineer's kubelet, from colliding), and the host settings of this machine (hybrid cgroups, no swap
 * accounting, its sysctls protected).
 */
export function kubeletConfig(
  opts: {
    runtime: TestRuntime;
    caFile: string;
    nodeIP: string;
    healthzPort: number;
    logs: string;
  },
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
    address: opts.nodeIP,
    port: KUBELET_PORT,
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
 * Starts the chosen kubelet as a process of its own with its output in a log file (both
 * the same way: `--config`, `--kubeconfig`, `--node-ip`, `--hostname-override`,
 * `--root-dir`, `--cert-dir`, `--v=2`); resolves once it runs (the caller waits for the
 * Node to be Ready).
 *
 * @throws Error with its log when it exits during start-up
 */
export async function startKubelet(opts: StartKubeletOptions): Promise<NodeAgent> {
  const healthzPort = freePort();
  const rootDir = `${opts.dir}/kubelet`;
  await Deno.mkdir(rootDir, { recursive: true });
  const config = `${opts.dir}/kubelet-config.json`;
  const logs = `${rootDir}/pod-logs`;
  await Deno.writeTextFile(
    config,
    JSON.stringify(kubeletConfig({ ...opts, healthzPort, logs }), null, 2),
  );
  const args = [
    `--config=${config}`,
    `--kubeconfig=${opts.kubeconfig}`,
    `--node-ip=${opts.nodeIP}`,
    `--hostname-override=${NODE}`,
    `--root-dir=${rootDir}`,
    `--cert-dir=${rootDir}/pki`,
    "--v=2",
  ];
  const log = `${opts.dir}/kubelet.log`;
  const proc: Proc = opts.kind === "denolet"
    ? {
      name: "denolet",
      bin: Deno.execPath(),
      // As `deno task run` starts it: the task's permission set and runtime flags.
      args: ["run", ...runTaskOptions(), "--quiet", `${ROOT}/main.ts`, ...args],
      log,
    }
    : await upstreamProc(opts, rootDir, args, log);
  let stopped = false;
  const agent: NodeAgent = {
    kind: opts.kind,
    log: () => {
      try {
        return Deno.readTextFileSync(log);
      } catch {
        return "";
      }
    },
    alive: () => proc.pid !== undefined && isOurs(proc.pid, opts.dir),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopProc(proc, opts.dir, 30_000);
      // The upstream kubelet's volume mounts and root-dir bind; denolet's tmpfs volumes.
      await unmountUnder(rootDir);
      if (opts.kind === "upstream") await removeLogSymlinks(logs);
    },
  };
  try {
    await spawn(proc);
    await waitFor(`${proc.name} running`, () => agent.alive() && isExec(proc), {
      timeoutMs: 10_000,
      intervalMs: 100,
      giveUp: () => processArgs(proc.pid ?? 0) === undefined ? "exited" : undefined,
      log: () => agent.log(),
    });
  } catch (err) {
    await agent.stop().catch(() => {});
    throw err;
  }
  return agent;
}

/** Whether `proc`'s PID runs its binary yet (the upstream kubelet is exec'd by unshare, sh). */
function isExec(proc: Proc): boolean {
  const argv0 = processArgs(proc.pid ?? 0)?.[0] ?? "";
  return proc.name === "kubelet" ? argv0.endsWith("kubelet") : true;
}

async function upstreamProc(
  opts: StartKubeletOptions,
  rootDir: string,
  args: string[],
  log: string,
): Promise<Proc> {
  // Shared before the namespace is made, so the copy in it is a peer of this one.
  await shareRootDir(rootDir);
  const [bin, ...argv] = await sysctlProtectedArgv(`${opts.dir}/sysctl`, opts.kubeletBin, args);
  return { name: "kubelet", bin: bin!, args: argv, log };
}
