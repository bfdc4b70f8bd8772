/**
 * The CRI configs the agent would send for a pod, for the benchmarks' raw
 * CRI sequences: the same generated sandbox and container configs, minus
 * the agent; and {@link rawCriBatch}, those sequences run and timed.
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import type {
  ContainerConfig,
  DNSConfig,
  PodSandboxConfig,
  RuntimeService,
} from "../lib/cri/types.ts";
import { parseResolvConf } from "../lib/kuberuntime/pod_dns.ts";
import { applyPodDefaults } from "../lib/api/defaults.ts";
import { generatePodSandboxConfig } from "../lib/kuberuntime/sandbox_config.ts";
import { generateContainerConfig } from "../lib/kuberuntime/container_config.ts";
import type { TestRuntime } from "../tests/harness/mod.ts";

/**
 * Defaults the pod, gives it a fresh UID and generates its sandbox config and
 * its first container's config.
 * @param rt the runtime (cgroup parent, image)
 * @param pod the pod as a manifest gives it
 * @param logs the pod logs dir
 * @param dnsConfig the pod's resolv.conf (these host-network pods get the host's, parsed)
 * @returns the defaulted pod with its UID, and the two configs
 */
export function rawPodConfigs(
  rt: TestRuntime,
  pod: Pod,
  logs: string,
  dnsConfig: DNSConfig,
): { pod: Pod; sandboxConfig: PodSandboxConfig; containerConfig: ContainerConfig } {
  const defaulted = applyPodDefaults(pod);
  defaulted.metadata.uid = crypto.randomUUID();
  const sandboxConfig = generatePodSandboxConfig(defaulted, {
    podLogsDir: logs,
    cgroupRoot: rt.cgroupParent,
    dnsConfig,
  });
  const containerConfig = generateContainerConfig({
    pod: defaulted,
    container: defaulted.spec.containers[0]!,
    restartCount: 0,
    imageRef: rt.images.busybox,
    volumePaths: new Map(),
    memoryCapacity: 0,
  });
  return { pod: defaulted, sandboxConfig, containerConfig };
}

/**
 * The DNS config host-network pods get: the host's resolv.conf, parsed.
 * @returns the config (empty when the file cannot be read)
 */
export async function hostDnsConfig(): Promise<DNSConfig> {
  return parseResolvConf(await Deno.readTextFile("/etc/resolv.conf").catch(() => ""));
}

/**
 * One pod's RunPodSandbox + CreateContainer + StartContainer, the agent left out.
 * @param cri a client of the runtime
 * @param configs from {@link rawPodConfigs}
 * @returns the sandbox's and the started container's ids
 */
export async function startRawPod(
  cri: RuntimeService,
  { sandboxConfig, containerConfig }: ReturnType<typeof rawPodConfigs>,
): Promise<{ sandboxId: string; id: string }> {
  const sandboxId = await cri.runPodSandbox(sandboxConfig);
  const id = await cri.createContainer(sandboxId, containerConfig, sandboxConfig);
  await cri.startContainer(id);
  return { sandboxId, id };
}

/**
 * The raw CRI floor of a batch: RunPodSandbox + CreateContainer + StartContainer for
 * every pod at once, with the configs the agent would send ({@link rawPodConfigs}; the
 * host's resolv.conf, as host-network pods get), timed to each container's CRI
 * startedAt; then everything made is stopped and removed. Best run while no agent
 * watches the runtime: an agent removes sandboxes it does not know as orphans.
 * @param rt the runtime
 * @param cri a client of it
 * @param pods the pods as a manifest or the API gives them (each its own name)
 * @param logs the pod logs dir for the sandboxes
 * @returns per pod, ms from the batch's first call to its container's startedAt
 */
export async function rawCriBatch(
  rt: TestRuntime,
  cri: RuntimeService,
  pods: readonly Pod[],
  logs: string,
): Promise<number[]> {
  const hostDNS = await hostDnsConfig();
  const plans = pods.map((pod) => rawPodConfigs(rt, pod, logs, hostDNS));
  const t0 = Date.now();
  const made = await Promise.all(plans.map(async (plan) => {
    const { sandboxId, id } = await startRawPod(cri, plan);
    const started = (await cri.containerStatus(id)).status.startedAt / 1e6 - t0;
    return { sandboxId, id, started };
  }));
  // One pod at a time: 50 teardowns at once kept a StopContainer waiting over two
  // minutes on a loaded machine.
  for (const m of made) {
    await cri.stopContainer(m.id, 0);
    await cri.removeContainer(m.id);
    await cri.stopPodSandbox(m.sandboxId);
    await cri.removePodSandbox(m.sandboxId);
  }
  return made.map((m) => m.started);
}
