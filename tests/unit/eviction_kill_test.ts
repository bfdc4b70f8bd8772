import assert from "node:assert/strict";
import type { PodStatus } from "../../lib/api/types.ts";
import { killPodNow } from "../../lib/agent/eviction.ts";
import { PodWorkers, type SyncContext } from "../../lib/pod_workers/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { recordingEvents } from "../kit/events.ts";
import { type Deferred, deferred, drive, flush, testPod } from "../kit/mod.ts";

function workers(terminating: (ctx: SyncContext) => Promise<void>) {
  const clock = new FakeClock();
  const podWorkers = new PodWorkers({
    clock,
    random: () => 0,
    syncPod: () => Promise.resolve({ isTerminal: false }),
    syncTerminatingPod: terminating,
    syncTerminatedPod: () => Promise.resolve(),
    syncTerminatingRuntimePod: () => Promise.resolve(),
  });
  return { clock, podWorkers };
}

const pod = testPod({ uid: "hog", spec: { terminationGracePeriodSeconds: 30 } });

Deno.test("killPodNow() kills through the pod workers with evict, the grace period and the status override, and waits for the stop", async () => {
  const seen: SyncContext[] = [];
  const stop: Deferred<void> = deferred();
  const { clock, podWorkers } = workers((ctx) => {
    seen.push(ctx);
    return stop.promise;
  });
  podWorkers.updatePod({ type: "create", pod });
  await flush();
  const events = recordingEvents();
  let done = false;
  const kill = killPodNow(() => podWorkers, clock, events)(pod, {
    evict: true,
    gracePeriodSeconds: 1,
    statusFn: (s: PodStatus) => {
      s.phase = "Failed";
      s.reason = "Evicted";
    },
  }).then(() => (done = true));
  await flush();
  assert.equal(seen.length, 1);
  const ctx = seen[0]!;
  assert.equal(ctx.evicted, true);
  assert.equal(ctx.gracePeriodSeconds, 1);
  const status: PodStatus = { phase: "Running" };
  ctx.statusFn?.(status);
  assert.deepEqual(status, { phase: "Failed", reason: "Evicted" });
  assert.equal(done, false, "waits for the containers to stop");
  stop.resolve();
  await drive(clock, kill);
  assert.equal(done, true);
  assert.equal(podWorkers.podState("hog"), "terminated");
  assert.deepEqual(events.got, []);
  await drive(
    clock,
    (async () => {
      while (!podWorkers.podIsFinished("hog")) await flush();
    })(),
  );
  podWorkers.stop();
  await podWorkers.stopped();
});

Deno.test("killPodNow() gives up after 1.5× the grace period (10 s at least) with ExceededGracePeriod", async () => {
  const { clock, podWorkers } = workers(() => new Promise(() => {}));
  podWorkers.updatePod({ type: "create", pod });
  await flush();
  const events = recordingEvents();
  const kill = killPodNow(() => podWorkers, clock, events)(pod, {
    evict: true,
    gracePeriodSeconds: 1,
    statusFn: () => {},
  });
  const outcome = kill.then(() => "stopped", (err) => (err as Error).message);
  clock.tick(9_999);
  await flush();
  clock.tick(1);
  assert.equal(await outcome, "timeout waiting to kill pod");
  assert.deepEqual(events.got.map((e) => [e.type, e.reason]), [["Warning", "ExceededGracePeriod"]]);
  podWorkers.stop();
});
