/**
 * Tearing a runtime's workloads down: tasks and containers through containerd's own API,
 * then whatever survived it (shims whose containerd was killed, container processes in
 * our cgroups). Processes are only ever picked by a mark that ties them to this runtime:
 * a shim's `-address <our socket>` argument, or membership of our cgroup parent.
 *
 * @module
 */

import { isAlive, listPids, processArgs, signalPid, waitGone } from "./_exec.ts";
import type { RuntimePaths } from "./config.ts";
import { ctr } from "./containerd.ts";
import { cgroupProcs } from "./mounts.ts";

function lines(text: string): string[] {
  return text.split("\n").map((line) => line.trim()).filter((line) => line !== "");
}

/**
 * Stops and removes every pod sandbox through CRI, as the kubelet would: containerd then
 * runs CNI DEL (releasing the address, the veth and libcni's cache entry) and unmounts
 * the sandbox's network namespace. Containers of a sandbox go with it.
 *
 * @param endpoint the CRI endpoint
 * @returns error messages for sandboxes CRI could not stop or remove
 */
export async function removePodsViaCri(endpoint: string): Promise<string[]> {
  // Loaded lazily: a broken CRI client must not keep the harness from starting, and
  // ctr-based clean-up still follows when this fails.
  const { createRuntimeService, isNotFound } = await import("../../lib/cri/mod.ts");
  const cri = createRuntimeService({ endpoint, timeoutMs: 30_000, shortTimeoutMs: 10_000 });
  const problems: string[] = [];
  try {
    for (const sandbox of await cri.listPodSandbox()) {
      try {
        await cri.stopPodSandbox(sandbox.id);
        await cri.removePodSandbox(sandbox.id);
      } catch (err) {
        if (!isNotFound(err)) {
          problems.push(`sandbox ${sandbox.id}: ${err instanceof Error ? err.message : err}`);
        }
      }
    }
  } catch (err) {
    problems.push(`listing sandboxes: ${err instanceof Error ? err.message : err}`);
  } finally {
    cri.close();
  }
  return problems;
}

/** Where libcni caches each attachment's result (containerd does not move it). */
const CNI_CACHE = "/var/lib/cni/results";

/**
 * Deletes libcni cache entries that CNI DEL did not get to (a sandbox killed rather than
 * stopped): those of our network, and the loopback entries of our containers.
 *
 * @param networkName our CNI network's name (unique per runtime)
 * @param containerIds ids of containers this runtime ran
 */
export function removeCniCache(networkName: string, containerIds: readonly string[]): void {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(CNI_CACHE)];
  } catch {
    return;
  }
  const loopback = new Set(containerIds.map((id) => `cni-loopback-${id}-lo`));
  for (const entry of entries) {
    if (entry.name.startsWith(`${networkName}-`) || loopback.has(entry.name)) {
      Deno.removeSync(`${CNI_CACHE}/${entry.name}`);
    }
  }
}

/**
 * Kills and deletes every task and removes every container, in every namespace of the
 * containerd at `paths.socket` (CRI's sandboxes and containers live in `k8s.io`).
 *
 * @param paths the runtime's paths
 * @param containerIds collects the id of every container found
 * @returns error messages for anything containerd refused (tear-down goes on regardless)
 */
export async function removeWorkloads(
  paths: RuntimePaths,
  containerIds: string[],
): Promise<string[]> {
  const problems: string[] = [];
  const namespaces = await ctr(paths, ["namespaces", "ls", "-q"], { allowFailure: true });
  if (namespaces.code !== 0) return [`listing namespaces: ${namespaces.stderr.trim()}`];
  for (const ns of lines(namespaces.stdout)) {
    const tasks = await ctr(paths, ["-n", ns, "tasks", "ls", "-q"], { allowFailure: true });
    for (const id of lines(tasks.stdout)) {
      // --force kills a running task before deleting it.
      const rm = await ctr(paths, ["-n", ns, "tasks", "rm", "-f", id], { allowFailure: true });
      if (rm.code !== 0 && !/not found/i.test(rm.stderr)) {
        problems.push(`task ${ns}/${id}: ${rm.stderr.trim()}`);
      }
    }
    const containers = await ctr(paths, ["-n", ns, "containers", "ls", "-q"], {
      allowFailure: true,
    });
    for (const id of lines(containers.stdout)) {
      containerIds.push(id);
      const rm = await ctr(paths, ["-n", ns, "containers", "rm", id], { allowFailure: true });
      if (rm.code !== 0 && !/not found/i.test(rm.stderr)) {
        problems.push(`container ${ns}/${id}: ${rm.stderr.trim()}`);
      }
    }
  }
  return problems;
}

/**
 * PIDs of the runc shims serving the containerd at `paths.socket`: each shim is started
 * with `-address <socket>`, which no other containerd's shims carry.
 *
 * @param paths the runtime's paths
 */
export function findShims(paths: RuntimePaths): number[] {
  return listPids().filter((pid) => {
    const args = processArgs(pid);
    if (args === undefined || !(args[0] ?? "").includes("containerd-shim")) return false;
    const at = args.indexOf("-address");
    return at >= 0 && args[at + 1] === paths.socket;
  });
}

/**
 * Kills what the runtime left running once containerd itself is gone: container processes
 * in cgroup parent `cgroupParent`, then this runtime's shims.
 *
 * @param paths the runtime's paths
 * @param cgroupParent the runtime's cgroup parent
 * @throws Error listing processes that survived SIGKILL
 */
export async function killLeftovers(paths: RuntimePaths, cgroupParent: string): Promise<void> {
  const targets = new Set<number>();
  // Repeat: a process may fork while we collect, and shims reap and exit as we go.
  for (let round = 0; round < 5; round++) {
    const found = [...cgroupProcs(cgroupParent), ...findShims(paths)].filter(isAlive);
    if (found.length === 0) break;
    for (const pid of found) {
      targets.add(pid);
      signalPid(pid, "SIGKILL");
    }
    await waitGone(found, 2_000);
  }
  const survivors = [...targets].filter(isAlive);
  if (survivors.length > 0) {
    throw new Error(
      `harness: processes of ${paths.socket} survived SIGKILL: ${survivors.join(", ")}`,
    );
  }
}
