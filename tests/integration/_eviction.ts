/**
 * The kubelet and its eviction manager on a test runtime, wired as the agent
 * wires them (main.ts, lib/agent/eviction.ts): apiserver-style pods (no
 * config source annotation: a static pod is critical and never evicted) fed
 * to a Kubelet through its update channel, the stats provider fed by its
 * housekeeping, the eviction manager as the first admit handler, and node-level
 * reclaim through a real ContainerGC and ImageGC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createEvictionManager, type EvictionWiring } from "../../lib/agent/eviction.ts";
import { Kubelet } from "../../lib/agent/kubelet.ts";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import type { PodUpdate } from "../../lib/config/mod.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type { EvictionManager } from "../../lib/eviction/mod.ts";
import { ImageGC } from "../../lib/images/mod.ts";
import { ContainerGC, type KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { parseFlags } from "../../lib/options/mod.ts";
import { EventChannel, GenericPleg } from "../../lib/pleg/mod.ts";
import type { StatsProvider, StatsProviderOptions } from "../../lib/stats/mod.ts";
import { StatusManager } from "../../lib/status/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import type { TestRuntime } from "../harness/mod.ts";
import { recordingEvents } from "../kit/events.ts";
import { testRuntimeManager, testStatsProvider } from "./_manager.ts";

/** Options for {@link startEvictionRig}. */
export interface EvictionRigOptions {
  /** The kubelet's root dir, whose filesystem is nodefs; `<rt.dir>/kubelet` by default. */
  rootDir?: string;
  /** How often pods' volumes are walked; upstream's 1 min by default. */
  volumeStatsAggPeriodMs?: number;
  /** The stats provider's housekeeping; every second, not dynamic, by default. */
  housekeeping?: StatsProviderOptions["housekeeping"];
}

/** A running kubelet with what a test drives and reads. */
export interface EvictionRig {
  runtime: RuntimeService;
  manager: KubeRuntimeManager;
  stats: StatsProvider;
  kubelet: Kubelet;
  rootDir: string;
  /** The runtime's local images. */
  images: TestRuntime["images"];
  /** Every event the eviction manager and the collectors recorded. */
  events: ReturnType<typeof recordingEvents>;
  /** Sends a pod as the apiserver source would (ADD). */
  add(pod: Pod): void;
  /** The pod's status as the status manager holds it. */
  status(pod: Pod): PodStatus | undefined;
  /**
   * Builds the eviction manager from kubelet flags (`--root-dir` is the
   * rig's), with the rig's container and image GC as node-level reclaim, and
   * makes it the first admit handler; not started (a test may call its
   * `synchronize()` itself).
   */
  createEviction(flags: string[], extra?: Partial<EvictionWiring>): EvictionManager;
  /** {@link createEviction}, started. */
  startEviction(flags: string[], extra?: Partial<EvictionWiring>): EvictionManager;
  /** Stops everything and removes the pods' containers, sandboxes and dirs. */
  stop(): Promise<void>;
}

/**
 * Starts a Kubelet on a test runtime.
 * @param rt the test runtime
 * @param opts where the root dir is, how often volumes are walked
 * @returns the rig; the caller must `stop()` it before stopping the runtime
 */
export async function startEvictionRig(
  rt: TestRuntime,
  opts: EvictionRigOptions = {},
): Promise<EvictionRig> {
  const rootDir = opts.rootDir ?? `${rt.dir}/kubelet`;
  const podLogsDir = `${rootDir}/pod-logs`;
  const runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
  const manager = testRuntimeManager(rt, runtime, { rootDir, podLogsDir });
  const stats = await testStatsProvider(rt, runtime, {
    rootDir,
    podLogsDir,
    housekeeping: opts.housekeeping ?? { intervalMs: 1000, dynamic: false },
    ...(opts.volumeStatsAggPeriodMs !== undefined
      ? { volumeStatsAggPeriodMs: opts.volumeStatsAggPeriodMs }
      : {}),
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
    // The eviction manager is made once the test has measured the node.
    admitHandlers: [{ admit: (pod) => eviction?.admit(pod) ?? { admit: true } }],
  });
  const events = recordingEvents();
  const containerGC = new ContainerGC({
    runtime: manager,
    podState: kubelet.podWorkers,
    sourcesReady: () => kubelet.sourcesReady(),
    podLogsDir,
    clock: realClock,
    logger: silentLogger,
    events,
    nodeName: "test-node",
  });
  const imageGC = new ImageGC({
    runtime,
    imageFsStats: (signal) => stats.imageFsStats(signal ? { signal } : {}),
    policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 0, maxAgeMs: 0 },
    clock: realClock,
    nodeName: "test-node",
    events,
    logger: silentLogger,
  });
  const updates = new EventChannel<PodUpdate>(10);
  kubelet.start({ updates, seenAllSources: () => true });
  const pods: Pod[] = [];
  let stopped: Promise<void> | undefined;
  const rig: EvictionRig = {
    runtime,
    manager,
    stats,
    kubelet,
    rootDir,
    images: rt.images,
    events,
    add(pod) {
      pods.push(pod);
      updates.send({ op: "ADD", source: "api", pods: [pod] });
    },
    status: (pod) => kubelet.statuses.getPodStatus(pod.metadata.uid!),
    createEviction(flags, extra = {}) {
      const parsed = parseFlags([`--root-dir=${rootDir}`, ...flags]);
      assert.equal(parsed.kind, "run");
      eviction = createEvictionManager({
        opts: parsed.kind === "run" ? parsed.options : assert.fail("flags"),
        clock: realClock,
        logger: silentLogger,
        nodeName: "test-node",
        events,
        stats,
        runtime,
        kubelet: () => kubelet,
        containerGC,
        imageGC,
        ...extra,
      });
      return eviction;
    },
    startEviction(flags, extra) {
      const manager = rig.createEviction(flags, extra);
      manager.start();
      return manager;
    },
    stop: () =>
      stopped ??= (async () => {
        await eviction?.stop();
        await kubelet.stop();
        stats.stop();
        const signal = new AbortController().signal;
        for (const pod of pods) {
          const status = await manager.getPodStatus(pod.metadata.uid!).catch(() => undefined);
          if (!status) continue;
          await manager.killPod(pod, status, 0, signal).catch(() => {});
          await manager.removePod(await manager.getPodStatus(pod.metadata.uid!), signal)
            .catch(() => {});
        }
        runtime.close();
      })(),
  };
  return rig;
}
