/**
 * The eviction manager on real memory and a real containerd, wired to the
 * kubelet as the agent wires it (lib/agent/eviction.ts): with
 * `evictionHard: memory.available` set just below what the node has now (read
 * off the stats provider's own Summary, the node working set the signal uses),
 * a BestEffort pod holding a bounded 768 MiB crosses it and is evicted through
 * the pod workers — Failed, reason Evicted, upstream's message — while a
 * Guaranteed pod keeps running; MemoryPressure goes True, then False after the
 * pressure transition period.
 *
 * The pods are apiserver pods (no config source annotation): a static pod is
 * critical, and upstream never evicts one, so the standalone agent's own pods
 * cannot show this. The margin (384 MiB either way) absorbs other memory use
 * on a shared machine; the allocation is the hog's own `dd` buffer, held while
 * its output pipe is full and freed when the container is killed.
 */

import assert from "node:assert/strict";
import { createEvictionManager } from "../../lib/agent/eviction.ts";
import type { EvictionManager } from "../../lib/eviction/mod.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { realClock } from "../../lib/util/clock.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { recordingEvents } from "../kit/events.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";
import { evictionOptions, type EvictionTestNode, startEvictionNode } from "./_eviction.ts";

const Mi = 2 ** 20;
const MARGIN = 384 * Mi;
const ALLOCATION_MI = 768;

Deno.test({
  name: "a BestEffort memory hog is evicted before a Guaranteed pod; MemoryPressure comes and goes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt: TestRuntime = await startTestRuntime({ name: "eviction" });
    let node: EvictionTestNode | undefined;
    let eviction: EvictionManager | undefined;
    try {
      node = await startEvictionNode(rt);
      const { stats: provider, kubelet: k, manager, runtime, add, phase } = node;

      const steady = hostNetworkPod(rt.images.busybox, {
        name: "steady",
        containers: [{
          name: "main",
          command: ["sleep", "3600"],
          resources: {
            requests: { cpu: "100m", memory: "64Mi" },
            limits: { cpu: "100m", memory: "64Mi" },
          },
        }],
      });
      add(steady);
      await waitFor("the Guaranteed pod running", () => phase(steady) === "Running" || undefined, {
        timeoutMs: 30_000,
      });

      const available = async () => {
        const s = await provider.summary({ onlyCpuAndMemory: true });
        const bytes = s.node.memory?.availableBytes;
        assert.ok(bytes !== undefined, "the Summary reports the node's available memory");
        return bytes;
      };
      const now = await available();
      assert.ok(now > 2 * ALLOCATION_MI * Mi, `only ${now} bytes available`);
      const threshold = Math.floor((now - MARGIN) / Mi);
      const events = recordingEvents();
      eviction = createEvictionManager({
        opts: evictionOptions(rt, [
          `--eviction-hard=memory.available<${threshold}Mi`,
          "--eviction-pressure-transition-period=10s",
        ]),
        clock: realClock,
        logger: silentLogger,
        nodeName: "test-node",
        events,
        stats: provider,
        runtime,
        kubelet: () => k,
      });
      node.useEviction(eviction);
      eviction.start();

      const hog = hostNetworkPod(rt.images.busybox, {
        name: "hog",
        containers: [{
          name: "main",
          command: ["sh", "-c", `dd if=/dev/zero bs=${ALLOCATION_MI}M count=1 | sleep 3600`],
        }],
      });
      add(hog);
      const evicted = await waitFor("the hog evicted", () => {
        const s = k.statuses.getPodStatus(hog.metadata.uid!);
        return s?.phase === "Failed" ? s : undefined;
      }, { timeoutMs: 60_000 });
      assert.equal(evicted.reason, "Evicted");
      assert.match(
        evicted.message ?? "",
        new RegExp(
          `^The node was low on resource: memory\\. Threshold quantity: ${threshold}Mi, available: \\d+(Ki|Mi)?\\. ` +
            "Container main was using \\d+(Ki|Mi)?, request is 0, has larger consumption of memory\\. $",
        ),
      );
      assert.ok(eviction.isUnderMemoryPressure(), "MemoryPressure while the hog was evicted");
      assert.deepEqual(
        events.got.filter((e) => e.reason === "Evicted").map((
          e,
        ) => [e.ref.name, e.type, e.message]),
        [["hog", "Warning", evicted.message]],
      );
      // Its containers are stopped: the memory is the node's again.
      const stopped = await manager.getPodStatus(hog.metadata.uid!);
      assert.deepEqual(stopped.containers.filter((c) => c.state === "running"), []);
      // Under memory pressure a BestEffort pod is refused; a Guaranteed one is not.
      assert.deepEqual(eviction.admit(hostNetworkPod(rt.images.busybox, { name: "late" })), {
        admit: false,
        reason: "Evicted",
        message: "The node had condition: [MemoryPressure]. ",
      });
      assert.deepEqual(eviction.admit(steady), { admit: true });

      await waitFor("MemoryPressure gone", () => !eviction!.isUnderMemoryPressure() || undefined, {
        timeoutMs: 60_000,
      });
      assert.equal(phase(steady), "Running", "the Guaranteed pod was not evicted");
    } finally {
      await eviction?.stop();
      await node?.close();
      await rt.stop();
    }
  },
});
