/**
 * The pods the runtime is running, as the minimal API pods the kubelet's
 * `/runningpods/` serves (upstream's GetRunningPods: the runtime's pods with
 * only ready sandboxes and running containers, each through
 * kubecontainer.Pod.ToAPIPod).
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import type { RuntimePodStatus } from "./types.ts";

/**
 * The running pods as API pods: UID, name and namespace, and each running
 * container's name and image; nothing else. A pod is listed when it has a
 * ready sandbox or a running container; pods come newest first (by the
 * oldest ready sandbox, as upstream orders them), containers newest first.
 * @param pods the runtime's pods (e.g. PLEG's last relist); not mutated
 * @returns the API pods
 */
export function runningApiPods(pods: Iterable<RuntimePodStatus>): Pod[] {
  const listed: { createdAt: number; pod: Pod }[] = [];
  for (const p of pods) {
    const sandboxes = p.sandboxes.filter((s) => s.state === "ready");
    const containers = p.containers.filter((c) => c.state === "running");
    if (sandboxes.length === 0 && containers.length === 0) continue;
    const createdAt = sandboxes.length === 0 ? 0 : Math.min(...sandboxes.map((s) => s.createdAt));
    listed.push({
      createdAt,
      pod: {
        metadata: { name: p.name, namespace: p.namespace, uid: p.uid },
        spec: {
          containers: [...containers]
            .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .map((c) => ({
              name: c.name,
              ...(c.image === "" ? {} : { image: c.image }),
              resources: {},
            })),
        },
        status: {},
      },
    });
  }
  return listed.sort((a, b) => b.createdAt - a.createdAt).map((x) => x.pod);
}
