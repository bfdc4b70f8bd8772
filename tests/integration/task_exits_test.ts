/**
 * containerd's task exits (lib/cri/task_exits.ts) against a real containerd: a
 * container stopped out of band is reported by its ID with its exit time, at once; a
 * PLEG whose period is ten minutes, woken by them, sends the ContainerDied within
 * seconds; the watch subscribes again after containerd restarts. Host-network pods
 * only. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type TaskExit, watchTaskExits } from "../../lib/cri/mod.ts";
import { GenericPleg, type PodLifecycleEvent } from "../../lib/pleg/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { requireRoot, startTestRuntime } from "../harness/mod.ts";
import { waitFor } from "../kit/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";

function sleeper(name: string, image: string): Pod {
  return {
    metadata: { name, namespace: "default", uid: crypto.randomUUID() },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "app", image, imagePullPolicy: "Never", command: ["sleep", "1000"] }],
    },
  };
}

Deno.test({
  name:
    "containerd's task exits: reported at once, wake a PLEG with a 10 min period, survive a restart",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const rt = await startTestRuntime({ name: "exits" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    const manager = testRuntimeManager(rt, cri);
    const exits: TaskExit[] = [];
    const watch = new AbortController();
    const events: PodLifecycleEvent[] = [];
    const pleg = new GenericPleg({
      listPods: (signal) => manager.listPods(signal),
      getPodStatus: (uid, signal) => manager.getPodStatus(uid, signal),
      clock: realClock,
      periodMs: 600_000,
    });
    const watching = watchTaskExits({
      endpoint: rt.endpoint,
      onExit: (exit) => {
        exits.push(exit);
        pleg.containerExited(exit.containerId);
      },
      clock: realClock,
      logger: silentLogger,
      signal: watch.signal,
      backoff: { initialMs: 200, maxMs: 1000 },
    });
    const collecting = (async () => {
      for await (const e of pleg.events()) events.push(e);
    })();
    const pods: Awaited<ReturnType<typeof runPod>>[] = [];
    try {
      pods.push(await runPod(cri, manager, sleeper("first", rt.images.busybox)));
      pleg.start();
      await waitFor("the PLEG's first relist", () => pleg.healthy().ok || undefined);

      const stopAndWait = async (pod: (typeof pods)[number]) => {
        const id = pod.status.containers[0]!.id;
        const stopped = Date.now();
        await cri.stopContainer(id, 0);
        const exit = await waitFor(
          `the exit of ${id}`,
          () => exits.find((e) => e.containerId === id),
          { timeoutMs: 5_000, intervalMs: 20 },
        );
        const died = await waitFor(
          `ContainerDied of ${id}, long before the PLEG's period`,
          () => events.find((e) => e.type === "ContainerDied" && e.data === id),
          { timeoutMs: 5_000, intervalMs: 20 },
        );
        const status = (await cri.containerStatus(id)).status;
        return { id, exit, died, stopped, finishedAt: status.finishedAt / 1e6 };
      };

      await t.step("a container stopped out of band: its exit, then ContainerDied", async () => {
        const { exit, finishedAt, stopped } = await stopAndWait(pods[0]!);
        // SIGKILL's exit status, at the time CRI reports it finished.
        assert.equal(exit.exitStatus, 137);
        assert.ok(Math.abs(exit.exitedAt - finishedAt) < 1000, `${exit.exitedAt} vs ${finishedAt}`);
        assert.ok(exit.exitedAt >= stopped - 1000);
      });

      await t.step("after containerd restarts, the watch subscribes again", async () => {
        await rt.restart();
        pods.push(await runPod(cri, manager, sleeper("second", rt.images.busybox)));
        // The stream broke with the restart; the next exit arrives on a new one.
        await stopAndWait(pods[1]!);
      });
    } finally {
      watch.abort();
      await watching;
      await pleg.stop();
      pleg.events().close();
      await collecting;
      for (const p of pods) await p.cleanup().catch(() => {});
      cri.close();
      await rt.stop();
    }
  },
});
