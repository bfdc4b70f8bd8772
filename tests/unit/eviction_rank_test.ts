import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { localStorageViolation } from "../../lib/eviction/local_storage.ts";
import { evictionMessage, nodeConditionMessage } from "../../lib/eviction/message.ts";
import { rankPIDPressure, signalRankFuncs } from "../../lib/eviction/rank.ts";
import { makeSignalObservations } from "../../lib/eviction/signals.ts";
import type { Threshold } from "../../lib/eviction/types.ts";
import { podSummary, testPod, type TestPodFigures, testSummary } from "../kit/mod.ts";

const Mi = 2 ** 20;

function pod(
  name: string,
  opts: { memoryRequest?: string; priority?: number; storageRequest?: string } = {},
): Pod {
  const requests: Record<string, string> = {};
  if (opts.memoryRequest) requests.memory = opts.memoryRequest;
  if (opts.storageRequest) requests["ephemeral-storage"] = opts.storageRequest;
  return testPod({
    name,
    uid: name,
    containers: [{ name: "main", image: "busybox", resources: { requests } }],
    spec: opts.priority !== undefined ? { priority: opts.priority } : {},
  });
}

function statsOf(entries: [Pod, TestPodFigures][]) {
  return makeSignalObservations(testSummary({}, entries.map(([p, f]) => podSummary(p, f)))).stats;
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata.name);

Deno.test("memory ranking: usage over requests first, then lower priority, then more usage above requests", () => {
  const bestEffort = pod("besteffort");
  const withinRequest = pod("within", { memoryRequest: "500Mi" });
  const overLowPrio = pod("over-low", { memoryRequest: "10Mi", priority: -10 });
  const overBig = pod("over-big", { memoryRequest: "10Mi" });
  const noStats = pod("nostats", { memoryRequest: "1Gi", priority: 1000 });
  const stats = statsOf([
    [bestEffort, { memory: 50 * Mi }],
    [withinRequest, { memory: 400 * Mi }],
    [overLowPrio, { memory: 20 * Mi }],
    [overBig, { memory: 300 * Mi }],
  ]);
  const pods = [withinRequest, bestEffort, overBig, overLowPrio, noStats];
  signalRankFuncs(false, false)["memory.available"](pods, stats);
  assert.deepEqual(names(pods), ["nostats", "over-low", "over-big", "besteffort", "within"]);
});

Deno.test("disk ranking on one filesystem counts writable layers, logs and local volumes above requests", () => {
  const volumePod = testPod({
    name: "volume",
    uid: "volume",
    spec: {
      volumes: [{ name: "scratch", emptyDir: {} }, { name: "ram", emptyDir: { medium: "Memory" } }],
    },
  });
  const layerPod = pod("layer");
  const requested = pod("requested", { storageRequest: "1Gi" });
  const stats = statsOf([
    [volumePod, {
      containers: { main: { rootfs: Mi, logs: Mi } },
      volumes: { scratch: 100 * Mi, ram: 900 * Mi },
    }],
    [layerPod, { containers: { main: { rootfs: 50 * Mi, logs: 10 * Mi } } }],
    [requested, { containers: { main: { rootfs: 500 * Mi } } }],
  ]);
  const pods = [requested, layerPod, volumePod];
  signalRankFuncs(false, false)["nodefs.available"](pods, stats);
  // A memory-backed emptyDir is not local storage.
  assert.deepEqual(names(pods), ["volume", "layer", "requested"]);
  // With a dedicated image filesystem, imagefs counts only the writable layers.
  const onImageFs = [volumePod, layerPod];
  signalRankFuncs(true, false)["imagefs.available"](onImageFs, stats);
  assert.deepEqual(names(onImageFs), ["layer", "volume"]);
});

Deno.test("PID ranking: lower priority first, then more processes", () => {
  const a = pod("a");
  const b = pod("b");
  const high = pod("high", { priority: 100 });
  const stats = statsOf([[a, { processes: 3 }], [b, { processes: 30 }], [high, {
    processes: 300,
  }]]);
  const pods = [high, a, b];
  rankPIDPressure(pods, stats);
  assert.deepEqual(names(pods), ["b", "a", "high"]);
});

Deno.test("evictionMessage() says what was low, the threshold, what was available and who used more than requested", () => {
  const p = testPod({
    name: "hog",
    uid: "hog",
    containers: [
      { name: "eater", image: "busybox" },
      { name: "modest", image: "busybox", resources: { requests: { memory: "64Mi" } } },
    ],
  });
  const { observations, stats } = makeSignalObservations(testSummary({
    memoryAvailable: 90 * Mi,
    memoryWorkingSet: 910 * Mi,
  }, [
    podSummary(p, { containers: { eater: { memory: 300 * Mi }, modest: { memory: 10 * Mi } } }),
  ]));
  const t: Threshold = {
    signal: "memory.available",
    value: { quantity: 100 * Mi, raw: "100Mi" },
    gracePeriodMs: 0,
  };
  const { message, annotations } = evictionMessage("memory", p, stats, [t], observations);
  assert.equal(
    message,
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. " +
      "Container eater was using 300Mi, request is 0, has larger consumption of memory. ",
  );
  assert.deepEqual(annotations, {
    offending_containers: "eater",
    offending_containers_usage: "300Mi",
    starved_resource: "memory",
  });
  assert.equal(
    nodeConditionMessage(["MemoryPressure", "DiskPressure"]),
    "The node had condition: [MemoryPressure DiskPressure]. ",
  );
});

Deno.test("localStorageViolation() checks emptyDir sizeLimit, then the pod's, then a container's ephemeral-storage limit", () => {
  const p = testPod({
    containers: [
      { name: "a", image: "busybox", resources: { limits: { "ephemeral-storage": "100Mi" } } },
      { name: "b", image: "busybox", resources: { limits: { "ephemeral-storage": "100Mi" } } },
    ],
    spec: { volumes: [{ name: "cache", emptyDir: { sizeLimit: "10Mi" } }] },
  });
  const check = (f: TestPodFigures, dedicated = false) =>
    localStorageViolation(p, podSummary(p, f), dedicated);
  assert.deepEqual(check({ volumes: { cache: 11 * Mi } }), {
    signal: "emptydirfs.limit",
    message: 'Usage of EmptyDir volume "cache" exceeds the limit "10Mi". ',
  });
  assert.deepEqual(check({ volumes: { cache: 5 * Mi }, ephemeralStorage: 201 * Mi }), {
    signal: "ephemeralpodfs.limit",
    message: "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. ",
  });
  assert.deepEqual(check({ containers: { b: { rootfs: 90 * Mi, logs: 11 * Mi } } }), {
    signal: "ephemeralcontainerfs.limit",
    message: 'Container b exceeded its local ephemeral storage limit "100Mi". ',
  });
  // On a dedicated image filesystem the writable layer does not count.
  assert.equal(check({ containers: { b: { rootfs: 90 * Mi, logs: 11 * Mi } } }, true), undefined);
  assert.equal(check({ volumes: { cache: 10 * Mi }, ephemeralStorage: 200 * Mi }), undefined);
});
