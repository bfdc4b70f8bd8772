/**
 * The CRI configs the agent would send for a pod, for the benchmarks' raw
 * CRI sequences: the same generated sandbox and container configs, minus
 * the agent.
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import type { ContainerConfig, DNSConfig, PodSandboxConfig } from "../lib/cri/types.ts";
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
 * @returns the two configs
 */
export function rawPodConfigs(
  rt: TestRuntime,
  pod: Pod,
  logs: string,
  dnsConfig: DNSConfig,
): { sandboxConfig: PodSandboxConfig; containerConfig: ContainerConfig } {
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
  return { sandboxConfig, containerConfig };
}
