/**
 * A kubelet on a test runtime, wired for the eviction manager as the agent wires
 * it (lib/agent/eviction.ts): the runtime manager, the stats provider told of
 * the pods after each relist, the pod workers, and the eviction manager's admit
 * handler first. Pods are added as apiserver pods (no config source annotation):
 * a static pod is critical, and upstream never evicts one.
 *
 * ```ts
 * const node = await startEvictionNode(rt);
 * const eviction = createEvictionManager({ ..., stats: node.stats, kubelet: () => node.kubelet });
 * node.useEviction(eviction);
 * node.add(pod);
 * // ...
 * await eviction.stop();
 * await node.close(); // kubelet, stats, the pods, the CRI client; not the runtime
 * ```
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import { Kubelet } from "../../lib/agent/kubelet.ts";
import type { PodUpdate } from "../../lib/config/mod.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type { EvictionManager } from "../../lib/eviction/mod.ts";
import type { KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { parseFlags } from "../../lib/options/mod.ts";
import type { AgentOptions } from "../../lib/options/mod.ts";
import { EventChannel, GenericPleg } from "../../lib/pleg/mod.ts";
import type { StatsProvider, StatsProviderOptions } from "../../lib/stats/mod.ts";
import { StatusManager } from "../../lib/status/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import type { TestRuntime } from "../harness/mod.ts";
import { testRuntimeManager, testStatsProvider } from "./_manager.ts";

/** A kubelet with a stats provider on a test runtime. */
export interface EvictionTestNode {
  /** The CRI client the kubelet uses. */
  runtime: RuntimeService;
  /** The runtime manager the kubelet drives. */
  manager: KubeRuntimeManager;
  stats: StatsProvider;
  kubelet: Kubelet;
  /** Makes `eviction` the kubelet's first admit handler (it is built once the node is measured). */
  useEviction(eviction: EvictionManager): void;
  /** Sends an apiserver ADD of the pod. */
  add(pod: Pod): void;
  /** The pod's phase as the status manager has it. */
  phase(pod: Pod): string | undefined;
  /** Stops the kubelet and the stats, kills and removes every pod added, closes the CRI client. */
  close(): Promise<void>;
}

/** Options for {@link startEvictionNode}. */
export interface EvictionTestNodeOptions {
  /** The stats provider's housekeeping; every second, not dynamic, by default. */
  housekeeping?: StatsProviderOptions["housekeeping"];
}

/**
 * Starts the kubelet (its pod workers, PLEG and status manager) and the stats
 * provider on `rt`.
 * @param rt the test runtime
 * @param opts housekeeping
 * @returns the node
 */
export async function startEvictionNode(
  rt: TestRuntime,
  opts: EvictionTestNodeOptions = {},
): Promise<EvictionTestNode> {
  const runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
  const manager = testRuntimeManager(rt, runtime);
  const stats = await testStatsProvider(rt, runtime, {
    podLogsDir: rt.dir,
    housekeeping: opts.housekeeping ?? { intervalMs: 1000, dynamic: false },
  });
  const pleg = new GenericPleg({
    listPods: (signal) => manager.listPods(signal),
    getPodStatus: (uid, signal) => manager.getPodStatus(uid, signal),
    clock: realClock,
    logger: silentLogger,
  });
  let eviction: EvictionManager | undefined;
  const kubelet = new Kubelet({
    runtime: manager,
    pleg,
    clock: realClock,
    logger: silentLogger,
    nodeName: "test-node",
    hostIP: "127.0.0.1",
    statuses: new StatusManager({ clock: realClock, logger: silentLogger }),
    syncFrequencyMs: 60_000,
    onPodsObserved: (observed) => stats.reconcile(observed),
    admitHandlers: [{ admit: (pod) => eviction?.admit(pod) ?? { admit: true } }],
  });
  const updates = new EventChannel<PodUpdate>(10);
  kubelet.start({ updates, seenAllSources: () => true });
  const pods: Pod[] = [];
  return {
    runtime,
    manager,
    stats,
    kubelet,
    useEviction: (e) => void (eviction = e),
    add(pod) {
      pods.push(pod);
      updates.send({ op: "ADD", source: "api", pods: [pod] });
    },
    phase: (pod) => kubelet.statuses.getPodStatus(pod.metadata.uid!)?.phase,
    async close() {
      await kubelet.stop();
      stats.stop();
      const signal = new AbortController().signal;
      for (const pod of pods) {
        const status = await manager.getPodStatus(pod.metadata.uid!).catch(() => undefined);
        if (!status) continue;
        await manager.killPod(pod, status, 0, signal).catch(() => {});
        await manager.removePod(await manager.getPodStatus(pod.metadata.uid!), signal).catch(
          () => {},
        );
      }
      runtime.close();
    },
  };
}

/**
 * The agent's options from flags, with the root dir under the test runtime's.
 * @param rt the test runtime
 * @param flags e.g. `--eviction-hard=memory.available<100Mi`
 * @returns the options
 * @throws {Error} when the flags do not parse to a run
 */
export function evictionOptions(rt: TestRuntime, flags: string[]): AgentOptions {
  const parsed = parseFlags([`--root-dir=${rt.dir}`, ...flags]);
  if (parsed.kind !== "run") throw new Error(`flags ${flags.join(" ")}: ${parsed.kind}`);
  return parsed.options;
}
