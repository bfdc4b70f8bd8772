import assert from "node:assert/strict";
import { makeSignalObservations } from "../../lib/eviction/signals.ts";
import { podSummary, testPod, testSummary } from "../kit/mod.ts";

const Mi = 2 ** 20;

Deno.test("makeSignalObservations() reads every signal off the Summary as upstream", () => {
  const pod = testPod({ uid: "p1" });
  const summary = testSummary({
    timeMs: 5_000,
    memoryAvailable: 300 * Mi,
    memoryWorkingSet: 700 * Mi,
    podsAvailable: 100 * Mi,
    podsWorkingSet: 400 * Mi,
    nodefs: { available: 10 * Mi, capacity: 100 * Mi, inodesFree: 50, inodes: 1000 },
    imagefs: { available: 20 * Mi, capacity: 200 * Mi },
    maxPid: 4194304,
    curproc: 400,
  }, [podSummary(pod, { memory: 5 * Mi })]);
  const { observations, stats } = makeSignalObservations(summary);
  assert.deepEqual(Object.fromEntries(observations), {
    "memory.available": { available: 300 * Mi, capacity: 1000 * Mi, timeMs: 5_000 },
    "allocatableMemory.available": { available: 100 * Mi, capacity: 500 * Mi, timeMs: 5_000 },
    "nodefs.available": { available: 10 * Mi, capacity: 100 * Mi, timeMs: 5_000 },
    "nodefs.inodesFree": { available: 50, capacity: 1000, timeMs: 5_000 },
    "imagefs.available": { available: 20 * Mi, capacity: 200 * Mi, timeMs: 5_000 },
    "pid.available": { available: 4194304 - 400, capacity: 4194304, timeMs: 5_000 },
  });
  assert.equal(stats(pod)?.memory?.workingSetBytes, 5 * Mi);
  assert.equal(stats(testPod({ uid: "other" })), undefined);
});

Deno.test("makeSignalObservations() leaves out a signal whose figures are missing", () => {
  const { observations } = makeSignalObservations(
    testSummary({ memoryWorkingSet: 700 * Mi, maxPid: 100 }),
  );
  assert.deepEqual([...observations.keys()], []);
});
