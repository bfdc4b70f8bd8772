/**
 * Image GC against a real containerd whose root (content store and snapshots: the image
 * filesystem) sits on a small tmpfs the harness mounts, filled with locally built images
 * of random data. Time is a FakeClock, so "last used" and "old enough" are set by the
 * test; the disk figures are the real ones (CRI ImageFsInfo, statfs of its mountpoint).
 * The second test runs the agent itself, flags to removed images.
 *
 * Needs root (the harness fails, never skips, without it).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  createRuntimeService,
  NamespaceMode,
  type PodSandboxConfig,
  type RuntimeService,
} from "../../lib/cri/mod.ts";
import { ImageGC, type ImageGCRuntime } from "../../lib/images/mod.ts";
import { readFsStats } from "../../lib/stats/node.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { buildFillerImage, startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { recordingEvents, waitFor } from "../kit/mod.ts";
import { testStatsProvider } from "./_manager.ts";
import { type AgentProcess, startAgent } from "./_agent.ts";

const MiB = 2 ** 20;
const MIN = 60_000;
const HIGH = 55;
const LOW = 50;

function sandboxConfig(rt: TestRuntime): PodSandboxConfig {
  const uid = crypto.randomUUID();
  return {
    metadata: { name: "image-gc", uid, namespace: "default", attempt: 0 },
    logDirectory: `${rt.dir}/pods/${uid}`,
    labels: { "io.kubernetes.pod.uid": uid },
    annotations: {},
    linux: {
      cgroupParent: rt.cgroupParent,
      securityContext: { namespaceOptions: { network: NamespaceMode.NODE } },
    },
  };
}

/** Usage of a filesystem in percent, as image GC computes it. */
function usagePercent(path: string): number {
  const fs = readFsStats(path);
  return 100 - Math.trunc(fs.availableBytes * 100 / fs.capacityBytes);
}

Deno.test({
  name:
    "ImageGC on a real containerd frees unused images least recently used first down to the low threshold, keeping the in-use and sandbox images",
  async fn() {
    const rt = await startTestRuntime({ name: "image-gc", rootSizeBytes: 80 * MiB });
    const cri: RuntimeService = createRuntimeService({ endpoint: rt.endpoint });
    const stats = await testStatsProvider(rt, cri);
    try {
      const fillers = [];
      for (const n of [1, 2, 3, 4]) {
        const image = await buildFillerImage(`docker.io/denolet/filler-${n}:test`, 4 * MiB, rt.dir);
        await rt.importImage(image);
        fillers.push(image);
      }
      const ids = new Map<string, string>();
      for (const i of await cri.listImages()) ids.set(i.repoTags[0]!, i.id);
      const id = (ref: string) => ids.get(ref)!;
      const [f1, f2, f3, f4] = fillers.map((f) => id(f.ref)) as [string, string, string, string];
      const busybox = id(rt.images.busybox);
      const pause = id(rt.images.pause);
      // containerd 1.6 pins nothing: the sandbox image is kept by name, not by this flag.
      assert.equal((await cri.listImages()).find((i) => i.id === pause)?.pinned, false);

      const removed: string[] = [];
      const runtime: ImageGCRuntime = {
        listImages: (f, o) => cri.listImages(f, o),
        listContainers: (f, o) => cri.listContainers(f, o),
        status: (o) => cri.status(o),
        removeImage: async (spec, o) => {
          await cri.removeImage(spec, o);
          removed.push(spec.image);
        },
      };
      const clock = new FakeClock(Date.now());
      const events = recordingEvents();
      const gc = new ImageGC({
        runtime,
        imageFsStats: (signal) => stats.imageFsStats(signal ? { signal } : {}),
        policy: {
          highThresholdPercent: HIGH,
          lowThresholdPercent: LOW,
          minAgeMs: 2 * MIN,
          maxAgeMs: 0,
        },
        clock,
        nodeName: "test-node",
        events,
      });

      // A running pod keeps busybox in use.
      const config = sandboxConfig(rt);
      const podId = await cri.runPodSandbox(config);
      const keeper = await cri.createContainer(podId, {
        metadata: { name: "keeper", attempt: 0 },
        image: { image: rt.images.busybox },
        command: ["sleep", "3600"],
        logPath: "keeper.log",
      }, config);
      await cri.startContainer(keeper);
      await gc.detectImages();

      // Each filler used by a container for a moment, a minute apart: 3, 1, 4, 2.
      for (
        const [n, ref] of [[3, fillers[2]!.ref], [1, fillers[0]!.ref], [4, fillers[3]!.ref], [
          2,
          fillers[1]!.ref,
        ]] as const
      ) {
        clock.tick(MIN);
        const c = await cri.createContainer(podId, {
          metadata: { name: `user-${n}`, attempt: 0 },
          image: { image: ref },
          command: ["/filler"],
          logPath: `user-${n}.log`,
        }, config);
        assert.ok((await gc.detectImages()).has(id(ref)), `filler-${n} counts as in use`);
        await cri.removeContainer(c);
      }
      clock.tick(5 * MIN); // every image is now older than imageMinimumGCAge

      // Fill the rest past the high threshold so that freeing to the low one takes filler-3
      // and half of filler-1 (by the sizes the runtime reports, as upstream counts).
      const sizes = new Map((await cri.listImages()).map((i) => [i.id, i.size]));
      const fs = await stats.imageFsStats();
      const capacity = fs.capacityBytes!;
      const wantAvailable = Math.trunc(capacity * (100 - LOW) / 100) -
        (sizes.get(f3)! + sizes.get(f1)! / 2);
      const padding = fs.availableBytes! - wantAvailable;
      assert.ok(padding > 0, `the images alone fill ${usagePercent(rt.root)}%: too much`);
      await Deno.writeFile(`${rt.root}/padding`, new Uint8Array(padding));
      const before = usagePercent(rt.root);
      assert.ok(before >= HIGH, `usage ${before}% reaches the high threshold ${HIGH}%`);

      await gc.garbageCollect();
      assert.deepEqual(removed, [f3, f1], "filler-3 then filler-1, then enough");
      assert.deepEqual(events.got, []);
      const left = new Set((await cri.listImages()).map((i) => i.id));
      for (const kept of [f4, f2, busybox, pause]) assert.ok(left.has(kept), kept);
      // containerd frees the content and snapshots of a removed image.
      await waitFor(`usage at most ${LOW}%`, () => usagePercent(rt.root) <= LOW, {
        timeoutMs: 10_000,
        intervalMs: 100,
      });

      // Under disk pressure the eviction manager asks for every unused image.
      await gc.deleteUnusedImages();
      assert.deepEqual(removed, [f3, f1, f4, f2]);
      assert.deepEqual(
        new Set((await cri.listImages()).map((i) => i.id)),
        new Set([busybox, pause]),
      );
    } finally {
      stats.stop();
      cri.close();
      await rt.stop();
    }
  },
});

Deno.test({
  name:
    "the agent collects images at start-up by --image-gc-high-threshold on the runtime's image filesystem",
  async fn() {
    const rt = await startTestRuntime({ name: "image-gc-agent", rootSizeBytes: 64 * MiB });
    const cri = createRuntimeService({ endpoint: rt.endpoint });
    let agent: AgentProcess | undefined;
    try {
      const filler = await buildFillerImage("docker.io/denolet/filler-a:test", 4 * MiB, rt.dir);
      await rt.importImage(filler);
      const refs = async () => (await cri.listImages()).flatMap((i) => i.repoTags);
      assert.ok((await refs()).includes(filler.ref));
      // Images, content and snapshots fill well over 10% of 64 MiB.
      assert.ok(usagePercent(rt.root) >= 10, `usage ${usagePercent(rt.root)}%`);
      agent = await startAgent({
        runtime: rt,
        extraArgs: [
          "--image-gc-high-threshold=10",
          "--image-gc-low-threshold=5",
          "--minimum-image-ttl-duration=0s",
        ],
      });
      const a = agent;
      // The first collection runs as the agent starts: no pod uses busybox or the filler;
      // the sandbox image stays.
      await waitFor("busybox and the filler removed", async () => {
        const now = await refs();
        return !now.includes(filler.ref) && !now.includes(rt.images.busybox);
      }, { timeoutMs: 30_000, log: a.log });
      assert.deepEqual(await refs(), [rt.images.pause]);
      assert.match(a.log(), /Removing image to free bytes/);
    } finally {
      if (agent) await agent.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
