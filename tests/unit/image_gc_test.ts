import assert from "node:assert/strict";
import type { Container, Image, ImageSpec, StatusResponse } from "../../lib/cri/types.ts";
import {
  formatSize,
  IMAGE_GC_PERIOD_MS,
  ImageGC,
  ImageGCError,
  type ImageGCPolicy,
  type ImageGCRuntime,
} from "../../lib/images/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { flush, recordingEvents } from "../kit/mod.ts";

const MIN = 60_000;
const MiB = 2 ** 20;

/** A runtime holding images and containers the test sets; RemoveImage drops the image. */
function fakeImageRuntime() {
  const rt = {
    images: [] as Image[],
    /** Image id per container. */
    containers: [] as string[],
    removed: [] as string[],
    removeError: new Map<string, Error>(),
    sandboxImage: undefined as string | undefined,
    listImages: () => Promise.resolve(structuredClone(rt.images)),
    listContainers: () =>
      Promise.resolve(rt.containers.map((imageRef, i) => ({ id: `c${i}`, imageRef } as Container))),
    removeImage: (spec: ImageSpec) => {
      const err = rt.removeError.get(spec.image);
      if (err) return Promise.reject(err);
      rt.removed.push(spec.image);
      rt.images = rt.images.filter((i) => i.id !== spec.image);
      return Promise.resolve();
    },
    status: (): Promise<StatusResponse> =>
      Promise.resolve({
        status: { conditions: [] },
        info: rt.sandboxImage === undefined
          ? {}
          : { config: JSON.stringify({ sandboxImage: rt.sandboxImage }) },
      }),
  };
  return rt satisfies ImageGCRuntime;
}

function image(id: string, size: number, extra: Partial<Image> = {}): Image {
  return { id, repoTags: [], repoDigests: [], size, username: "", pinned: false, ...extra };
}

function setup(policy: Partial<ImageGCPolicy> = {}, fs = { capacityBytes: 0, availableBytes: 0 }) {
  const runtime = fakeImageRuntime();
  const clock = new FakeClock();
  const events = recordingEvents();
  const removedFor: string[] = [];
  const gc = new ImageGC({
    runtime,
    imageFsStats: () => Promise.resolve({ ...fs }),
    policy: {
      highThresholdPercent: 90,
      lowThresholdPercent: 80,
      minAgeMs: 0,
      maxAgeMs: 0,
      ...policy,
    },
    clock,
    nodeName: "node-a",
    events,
    onImageRemoved: (reason) => removedFor.push(reason),
  });
  return { runtime, clock, events, gc, fs, removedFor };
}

Deno.test("ImageGC refuses a policy upstream refuses", () => {
  const mk = (high: number, low: number) => () =>
    new ImageGC({
      runtime: fakeImageRuntime(),
      imageFsStats: () => Promise.resolve({}),
      policy: { highThresholdPercent: high, lowThresholdPercent: low, minAgeMs: 0, maxAgeMs: 0 },
      clock: new FakeClock(),
      nodeName: "n",
    });
  assert.throws(mk(101, 80), /invalid HighThresholdPercent 101, must be in range \[0-100\]/);
  assert.throws(mk(90, -1), /invalid LowThresholdPercent -1/);
  assert.throws(
    mk(70, 80),
    /LowThresholdPercent 80 can not be higher than HighThresholdPercent 70/,
  );
  assert.doesNotThrow(mk(80, 80));
});

Deno.test("detectImages() records first detection, last use and forgets vanished images", async () => {
  // Full: free 1000·20% = 200 bytes.
  const { runtime, clock, gc } = setup({ minAgeMs: MIN }, {
    capacityBytes: 1000,
    availableBytes: 0,
  });
  runtime.images = [image("i0", 100), image("i1", 100), image("i2", 100)];
  runtime.containers = ["i1"];
  assert.deepEqual([...await gc.detectImages()], ["i1"]);
  // The container is gone (an exited one would still count, as upstream's GetPods(all)).
  clock.tick(MIN);
  runtime.containers = [];
  await gc.detectImages();
  clock.tick(MIN);
  // i1 was last used at the start, i0 and i2 never: they go first, and free enough.
  await gc.garbageCollect();
  assert.deepEqual(runtime.removed, ["i0", "i2"]);
  // Vanished images are forgotten: i1, removed and pulled again, is new (younger than minAge).
  runtime.images = [];
  await gc.detectImages();
  runtime.images = [image("i1", 200)];
  runtime.removed = [];
  await assert.rejects(gc.garbageCollect(), /freed 0 bytes/);
  assert.deepEqual(runtime.removed, []);
});

Deno.test("garbageCollect() frees least recently used first, down to the low threshold", async () => {
  // 95% used of 1000 bytes: free 1000·20% − 50 = 150 bytes.
  const { runtime, clock, gc, events } = setup({}, { capacityBytes: 1000, availableBytes: 50 });
  runtime.images = ["a", "b", "c", "d"].map((id) => image(id, 100));
  for (const id of ["c", "a", "d", "b"]) {
    runtime.containers = [id];
    await gc.detectImages();
    clock.tick(MIN);
  }
  runtime.containers = [];
  await gc.garbageCollect();
  // c (used first) and a free 200 ≥ 150; d and b stay.
  assert.deepEqual(runtime.removed, ["c", "a"]);
  assert.deepEqual(events.got, []);
});

Deno.test("garbageCollect() breaks ties in last use by first detection", async () => {
  const { runtime, clock, gc } = setup({}, { capacityBytes: 1000, availableBytes: 50 });
  runtime.images = [image("late", 1000)];
  await gc.detectImages();
  clock.tick(MIN);
  runtime.images = [image("early", 1000), image("late", 1000), image("later", 1000)];
  await gc.detectImages();
  // "late" was detected first: among never-used images it goes first, and alone is enough.
  clock.tick(MIN);
  await gc.garbageCollect();
  assert.deepEqual(runtime.removed, ["late"]);
});

Deno.test("garbageCollect() does nothing below the high threshold", async () => {
  // 40% used.
  const { runtime, clock, gc } = setup({}, { capacityBytes: 1000, availableBytes: 600 });
  runtime.images = [image("a", 100)];
  await gc.detectImages();
  clock.tick(10 * MIN);
  await gc.garbageCollect();
  assert.deepEqual(runtime.removed, []);
});

Deno.test("garbageCollect() triggers at exactly the high threshold (integer percent, as upstream)", async () => {
  // available 105/1000 → 100 − trunc(10.5) = 90% ≥ 90.
  const { runtime, clock, gc } = setup({}, { capacityBytes: 1000, availableBytes: 105 });
  runtime.images = [image("a", 95), image("b", 100)];
  await gc.detectImages();
  clock.tick(MIN);
  await gc.garbageCollect();
  // amountToFree = 200 − 105 = 95: "a" alone.
  assert.deepEqual(runtime.removed, ["a"]);
});

Deno.test("garbageCollect() never removes images in use, pinned, or the runtime's sandbox image", async () => {
  const { runtime, clock, gc, events } = setup({}, { capacityBytes: 1000, availableBytes: 50 });
  runtime.sandboxImage = "denolet/pause:test";
  runtime.images = [
    image("used", 500),
    image("pinned", 500, { pinned: true }),
    image("pause", 500, { repoTags: ["docker.io/denolet/pause:test"] }),
    image("free", 10),
  ];
  runtime.containers = ["used"];
  await gc.detectImages();
  clock.tick(10 * MIN);
  await assert.rejects(
    gc.garbageCollect(),
    (err) => err instanceof ImageGCError && /freed 10 bytes/.test(err.message),
  );
  assert.deepEqual(runtime.removed, ["free"]);
  assert.equal(events.got.length, 1);
});

Deno.test("garbageCollect() leaves images younger than the minimum age", async () => {
  const { runtime, clock, gc } = setup({ minAgeMs: 2 * MIN }, {
    capacityBytes: 1000,
    availableBytes: 50,
  });
  runtime.images = [image("old", 100)];
  await gc.detectImages();
  clock.tick(MIN);
  runtime.images = [image("old", 100), image("new", 100)];
  clock.tick(MIN + 1);
  // "old" is 2 min 1 ms old, "new" was first seen just now.
  await assert.rejects(gc.garbageCollect(), /freed 100 bytes/);
  assert.deepEqual(runtime.removed, ["old"]);
  clock.tick(2 * MIN);
  await assert.rejects(gc.garbageCollect());
  assert.deepEqual(runtime.removed, ["old", "new"]);
});

Deno.test("garbageCollect() with a maximum age removes long-unused images whatever the disk", async () => {
  const { runtime, clock, gc, removedFor } = setup({ maxAgeMs: 10 * MIN, minAgeMs: MIN }, {
    capacityBytes: 1000,
    availableBytes: 900,
  });
  runtime.images = [image("stale", 100), image("recent", 100), image("running", 100)];
  runtime.containers = ["stale", "running"];
  gc.start();
  await flush();
  runtime.containers = ["running"];
  clock.tick(5 * MIN); // the 5-minute rounds: "stale" last used at 0
  await flush();
  runtime.containers = ["recent", "running"];
  clock.tick(5 * MIN); // "recent" used at 10 min; agent up exactly maxAge: nothing yet
  await flush();
  assert.deepEqual(runtime.removed, []);
  runtime.containers = ["running"];
  clock.tick(5 * MIN); // 15 min: "stale" unused 15 min > 10
  await flush();
  assert.deepEqual(runtime.removed, ["stale"]);
  assert.deepEqual(removedFor, ["age"]);
  clock.tick(5 * MIN); // 20 min: "recent" unused exactly 10 min
  await flush();
  assert.deepEqual(runtime.removed, ["stale"]);
  clock.tick(5 * MIN); // 25 min: unused 15 min
  await flush();
  assert.deepEqual(runtime.removed, ["stale", "recent"]);
  await gc.stop();
});

Deno.test("garbageCollect() with maximum age 0 removes nothing for age", async () => {
  const { runtime, clock, gc } = setup({}, { capacityBytes: 1000, availableBytes: 900 });
  runtime.images = [image("a", 100)];
  await gc.detectImages();
  clock.tick(1000 * MIN);
  await gc.garbageCollect();
  assert.deepEqual(runtime.removed, []);
});

Deno.test("garbageCollect() that frees too little warns FreeDiskSpaceFailed as upstream words it", async () => {
  const capacity = 10 * 1024 * MiB;
  const { runtime, clock, gc, events } = setup({}, {
    capacityBytes: capacity,
    availableBytes: capacity / 20,
  });
  runtime.images = [image("a", 500 * MiB)];
  await gc.detectImages();
  clock.tick(MIN);
  const expected = "Insufficient free disk space on the node's image filesystem" +
    " (95% of 10.0 GiB used). Failed to free sufficient space by deleting unused images (freed 524288000 bytes)." +
    " Investigate disk usage, as it could be used by active images, logs, volumes, or other data.";
  await assert.rejects(gc.garbageCollect(), { name: "ImageGCError", message: expected });
  assert.deepEqual(events.got, [{
    ref: { kind: "Node", name: "node-a", uid: "node-a" },
    type: "Warning",
    reason: "FreeDiskSpaceFailed",
    message: expected,
  }]);
});

Deno.test("garbageCollect() with an unknown capacity warns InvalidDiskCapacity", async () => {
  const { gc, events } = setup({}, { capacityBytes: 0, availableBytes: 0 });
  await assert.rejects(gc.garbageCollect(), /invalid capacity 0 on image filesystem/);
  assert.equal(events.got[0]?.reason, "InvalidDiskCapacity");
});

Deno.test("garbageCollect() reports removal errors and keeps going", async () => {
  const { runtime, clock, gc } = setup({}, { capacityBytes: 1000, availableBytes: 0 });
  runtime.images = [image("a", 100), image("b", 100)];
  runtime.removeError.set("a", new Error("image a is busy"));
  await gc.detectImages();
  clock.tick(MIN);
  await assert.rejects(
    gc.garbageCollect(),
    /wanted to free 200 bytes, but freed 100 bytes space with errors in image deletion: image a is busy/,
  );
  assert.deepEqual(runtime.removed, ["b"]);
});

Deno.test("deleteUnusedImages() removes every unused image old enough, none in use or pinned", async () => {
  const { runtime, clock, gc } = setup({ minAgeMs: 3000 });
  runtime.images = [image("a", 1), image("b", 2), image("c", 3), image("p", 4, { pinned: true })];
  runtime.containers = ["c"];
  gc.start(); // detection runs even with the thresholds' defaults
  await flush();
  await gc.deleteUnusedImages();
  assert.deepEqual(runtime.removed, []);
  clock.tick(3000);
  await gc.deleteUnusedImages();
  assert.deepEqual(runtime.removed.sort(), ["a", "b"]);
  await gc.stop();
});

Deno.test("start() with high threshold 100 and no maximum age only detects", async () => {
  const { runtime, clock, gc } = setup({ highThresholdPercent: 100 }, {
    capacityBytes: 1000,
    availableBytes: 0,
  });
  assert.equal(gc.enabled, false);
  runtime.images = [image("a", 1)];
  gc.start();
  clock.tick(3 * IMAGE_GC_PERIOD_MS);
  await flush();
  assert.deepEqual(runtime.removed, []);
  await gc.stop();
});

Deno.test("start() collects now and every 5 minutes; repeated failures warn ImageGCFailed", async () => {
  const { runtime, clock, gc, events, fs } = setup({}, { capacityBytes: 1000, availableBytes: 0 });
  runtime.images = [image("a", 1)];
  gc.start();
  await flush();
  // The first failure (freed 1 of 200) only logs besides its FreeDiskSpaceFailed.
  assert.deepEqual(events.got.map((e) => e.reason), ["FreeDiskSpaceFailed"]);
  clock.tick(IMAGE_GC_PERIOD_MS);
  await flush();
  assert.deepEqual(events.got.map((e) => e.reason), [
    "FreeDiskSpaceFailed",
    "FreeDiskSpaceFailed",
    "ImageGCFailed",
  ]);
  fs.availableBytes = 1000;
  clock.tick(IMAGE_GC_PERIOD_MS);
  await flush();
  assert.equal(events.got.length, 3);
  await gc.stop();
});

Deno.test("formatSize() prints sizes as upstream's formatSize", () => {
  assert.equal(formatSize(512), "512 B");
  assert.equal(formatSize(1536), "1.5 KiB");
  assert.equal(formatSize(10 * 2 ** 30), "10.0 GiB");
  assert.equal(formatSize(3 * 2 ** 40), "3.0 TiB");
});
