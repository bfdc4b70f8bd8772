/**
 * What runs, read back from the runtime: CRI sandboxes and containers grouped
 * by the `io.kubernetes.pod.uid` label into {@link RuntimePodStatus} values.
 *
 * `listPods` is the cheap snapshot PLEG takes every second (two List calls);
 * `getPodStatus` adds one status call per sandbox and container for the
 * details (IPs, timestamps, exit codes) that status generation needs.
 *
 * @module
 */

import type {
  Container as CriContainer,
  ContainerStatus as CriContainerStatus,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxStatus,
  RuntimeService,
} from "../cri/types.ts";
import { ContainerState, NamespaceMode, PodSandboxState } from "../cri/types.ts";
import { isNotFound } from "../cri/errors.ts";
import type {
  RuntimeContainer,
  RuntimeContainerResources,
  RuntimeContainerState,
  RuntimePodStatus,
  RuntimeSandbox,
} from "./types.ts";
import { Annotations, Labels } from "./types.ts";
import { type ContainerLogTailReader, terminationMessage } from "./termination_message.ts";

const STATES: Record<number, RuntimeContainerState> = {
  [ContainerState.CONTAINER_CREATED]: "created",
  [ContainerState.CONTAINER_RUNNING]: "running",
  [ContainerState.CONTAINER_EXITED]: "exited",
};

/**
 * CRI nanosecond timestamps to epoch ms (0 stays 0).
 * @param ns nanoseconds since the epoch
 * @returns milliseconds
 */
export function nsToMs(ns: number | undefined): number {
  return ns ? Math.floor(ns / 1e6) : 0;
}

function restartCountOf(annotations: Record<string, string> | undefined): number {
  const n = Number.parseInt(annotations?.[Annotations.restartCount] ?? "", 10);
  return Number.isFinite(n) && n >= 0 ? n : 0;
}

function newestFirst<T extends { createdAt: number; id: string }>(a: T, b: T): number {
  return b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * A listed CRI sandbox as a {@link RuntimeSandbox} (no IP or network mode:
 * the list call does not carry them).
 * @param s the CRI sandbox
 * @returns the runtime sandbox
 */
export function sandboxFromList(s: PodSandbox): RuntimeSandbox {
  return {
    id: s.id,
    state: s.state === PodSandboxState.SANDBOX_READY ? "ready" : "notready",
    attempt: s.metadata?.attempt ?? 0,
    createdAt: nsToMs(s.createdAt),
    ip: "",
    additionalIps: [],
    hostNetwork: false,
  };
}

/**
 * A CRI sandbox status as a {@link RuntimeSandbox}, with IPs and network mode.
 * @param s the CRI sandbox status
 * @returns the runtime sandbox
 */
export function sandboxFromStatus(s: PodSandboxStatus): RuntimeSandbox {
  const hostNetwork = s.linux?.namespaces?.options?.network === NamespaceMode.NODE;
  return {
    id: s.id,
    state: s.state === PodSandboxState.SANDBOX_READY ? "ready" : "notready",
    attempt: s.metadata?.attempt ?? 0,
    createdAt: nsToMs(s.createdAt),
    ip: hostNetwork ? "" : s.network?.ip ?? "",
    additionalIps: hostNetwork ? [] : (s.network?.additionalIps ?? []).map((a) => a.ip),
    hostNetwork,
  };
}

/**
 * A listed CRI container as a {@link RuntimeContainer}; times other than
 * createdAt, exit code and reason are zero (the list call lacks them).
 * @param c the CRI container
 * @returns the runtime container
 */
export function containerFromList(c: CriContainer): RuntimeContainer {
  return {
    id: c.id,
    sandboxId: c.podSandboxId,
    name: c.labels?.[Labels.containerName] ?? c.metadata?.name ?? "",
    state: STATES[c.state] ?? "unknown",
    createdAt: nsToMs(c.createdAt),
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: "",
    message: "",
    image: c.image?.image ?? "",
    imageRef: c.imageRef ?? "",
    restartCount: restartCountOf(c.annotations),
    hash: c.annotations?.[Annotations.containerHash] ?? "",
  };
}

/** Upstream cm's MinShares: the kernel's floor of cpu.shares. */
const MIN_SHARES = 2;

/**
 * Millicores from cpu shares, as upstream's SharesToMilliCPU (rounded up).
 * @param shares cpu.shares
 * @returns millicores, 0 below the kernel's minimum
 */
export function sharesToMilliCPU(shares: number): number {
  return shares >= MIN_SHARES ? Math.ceil((shares * 1000) / 1024) : 0;
}

/**
 * Millicores from a CFS quota and period, as upstream's QuotaToMilliCPU.
 * @param quota cfs_quota_us (-1 for none)
 * @param period cfs_period_us
 * @returns millicores, 0 for no quota
 */
export function quotaToMilliCPU(quota: number, period: number): number {
  if (quota === -1 || period <= 0) return 0;
  return Math.trunc((quota * 1000) / period);
}

/**
 * The resources a runtime reports for a container, in the API's units
 * (upstream `toKubeContainerResources`).
 * @param linux CRI ContainerStatus.resources.linux
 * @returns the resources, or undefined when the runtime reported none
 */
export function runtimeContainerResources(
  linux: LinuxContainerResources | undefined,
): RuntimeContainerResources | undefined {
  if (!linux) return undefined;
  const out: RuntimeContainerResources = {};
  if ((linux.cpuPeriod ?? 0) > 0) {
    const milli = quotaToMilliCPU(linux.cpuQuota ?? 0, linux.cpuPeriod!);
    if (milli > 0) out.cpuLimit = milli;
  }
  if ((linux.cpuShares ?? 0) > 0) {
    const milli = sharesToMilliCPU(linux.cpuShares!);
    if (milli > 0) out.cpuRequest = milli;
  }
  if ((linux.memoryLimitInBytes ?? 0) > 0) out.memoryLimit = linux.memoryLimitInBytes!;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * A CRI container status as a {@link RuntimeContainer}.
 * @param s the CRI container status
 * @param sandboxId the sandbox it belongs to (not in the status message)
 * @returns the runtime container
 */
export function containerFromStatus(s: CriContainerStatus, sandboxId: string): RuntimeContainer {
  return {
    id: s.id,
    sandboxId,
    name: s.labels?.[Labels.containerName] ?? s.metadata?.name ?? "",
    state: STATES[s.state] ?? "unknown",
    createdAt: nsToMs(s.createdAt),
    startedAt: nsToMs(s.startedAt),
    finishedAt: nsToMs(s.finishedAt),
    exitCode: s.exitCode ?? 0,
    reason: s.reason ?? "",
    message: s.message ?? "",
    image: s.image?.image ?? "",
    imageRef: s.imageRef ?? "",
    restartCount: restartCountOf(s.annotations),
    hash: s.annotations?.[Annotations.containerHash] ?? "",
    ...withResources(runtimeContainerResources(s.resources?.linux)),
  };
}

function withResources(r: RuntimeContainerResources | undefined) {
  return r ? { resources: r } : {};
}

/**
 * Groups listed sandboxes and containers by pod UID, newest first; objects
 * without our pod UID label are not ours and are skipped.
 * @param sandboxes listed sandboxes
 * @param containers listed containers
 * @returns pod UID → runtime pod status
 */
export function groupPods(
  sandboxes: PodSandbox[],
  containers: CriContainer[],
): Map<string, RuntimePodStatus> {
  const pods = new Map<string, RuntimePodStatus>();
  const podFor = (labels: Record<string, string> | undefined) => {
    const uid = labels?.[Labels.podUID];
    if (!uid) return undefined;
    let pod = pods.get(uid);
    if (!pod) {
      pod = {
        uid,
        name: labels[Labels.podName] ?? "",
        namespace: labels[Labels.podNamespace] ?? "",
        sandboxes: [],
        containers: [],
      };
      pods.set(uid, pod);
    }
    return pod;
  };
  for (const s of sandboxes) podFor(s.labels)?.sandboxes.push(sandboxFromList(s));
  for (const c of containers) {
    if (!c.labels?.[Labels.containerName]) continue;
    podFor(c.labels)?.containers.push(containerFromList(c));
  }
  for (const pod of pods.values()) {
    pod.sandboxes.sort(newestFirst);
    pod.containers.sort(newestFirst);
  }
  return pods;
}

/**
 * Lists every pod the runtime holds for us (two CRI calls).
 * @param runtime the CRI runtime
 * @param signal cancels the calls
 * @returns pod UID → runtime pod status (exit codes and times other than createdAt are 0)
 */
export async function listPods(
  runtime: RuntimeService,
  signal?: AbortSignal,
): Promise<Map<string, RuntimePodStatus>> {
  const opts = signal ? { signal } : {};
  const [sandboxes, containers] = await Promise.all([
    runtime.listPodSandbox({}, opts),
    runtime.listContainers({}, opts),
  ]);
  return groupPods(sandboxes, containers);
}

/**
 * The full status of one pod: its sandboxes with IPs and network mode, its
 * containers with times, exit codes and reasons, and an exited container's
 * termination message (termination_message.ts). Objects that vanish between
 * the list and the status call are left out.
 * @param runtime the CRI runtime
 * @param uid the pod UID
 * @param readLogTail reads a log's end (FallbackToLogsOnError messages)
 * @param signal cancels the calls
 * @returns the pod's runtime status (empty lists when nothing runs)
 * @throws {CriError} when a list call fails
 */
export async function getPodStatus(
  runtime: RuntimeService,
  uid: string,
  readLogTail: ContainerLogTailReader,
  signal?: AbortSignal,
): Promise<RuntimePodStatus> {
  const opts = signal ? { signal } : {};
  const selector = { labelSelector: { [Labels.podUID]: uid } };
  const [sandboxes, containers] = await Promise.all([
    runtime.listPodSandbox(selector, opts),
    runtime.listContainers(selector, opts),
  ]);
  const first = sandboxes[0]?.labels ?? containers[0]?.labels ?? {};
  const status: RuntimePodStatus = {
    uid,
    name: first[Labels.podName] ?? "",
    namespace: first[Labels.podNamespace] ?? "",
    sandboxes: [],
    containers: [],
  };
  const sandboxResults = await Promise.allSettled(
    sandboxes.map((s) => runtime.podSandboxStatus(s.id, opts)),
  );
  sandboxResults.forEach((r, i) => {
    // A sandbox removed since the list is simply gone; keep what the list said otherwise.
    if (r.status === "fulfilled") status.sandboxes.push(sandboxFromStatus(r.value.status));
    else if (!isNotFound(r.reason)) status.sandboxes.push(sandboxFromList(sandboxes[i]!));
  });
  const ours = containers.filter((c) => c.labels?.[Labels.containerName]);
  const containerResults = await Promise.allSettled(
    ours.map(async (c) => {
      const { status } = await runtime.containerStatus(c.id, opts);
      return { ...status, message: await terminationMessage(status, readLogTail) };
    }),
  );
  containerResults.forEach((r, i) => {
    const listed = ours[i]!;
    if (r.status === "fulfilled") {
      status.containers.push(containerFromStatus(r.value, listed.podSandboxId));
    } else if (!isNotFound(r.reason)) status.containers.push(containerFromList(listed));
  });
  status.sandboxes.sort(newestFirst);
  status.containers.sort(newestFirst);
  if (signal?.aborted) throw signal.reason;
  return status;
}
