/**
 * A step of the wall clock (FakeClock.jump: now() moves, timers keep their remaining
 * delays, monotonic() does not move) must not stall or fail what measures intervals:
 * PLEG's cache and health, the pod workers' queue, the sync loop's health, the eviction
 * manager's transition period. Upstream gets this from Go's monotonic clock reading.
 * Found by tests/faults/clock_test.ts: after a step back, a pod update waited for the
 * wall clock to catch up (the cache wanted a relist newer than the worker's last sync).
 */

import assert from "node:assert/strict";
import { GenericPleg } from "../../lib/pleg/mod.ts";
import { WorkQueue } from "../../lib/pod_workers/work_queue.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { fakePodRuntime, runtimePodStatus, settle } from "../kit/mod.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

Deno.test("FakeClock.jump() steps now() either way and fires nothing; monotonic() moves only with tick()", () => {
  const clock = new FakeClock();
  const fired: number[] = [];
  clock.setTimeout(() => fired.push(clock.now()), 1_000);
  const [now, mono] = [clock.now(), clock.monotonic()];
  clock.jump(-10 * MINUTE);
  clock.jump(2 * HOUR);
  assert.deepEqual(fired, []);
  assert.equal(clock.now(), now + 110 * MINUTE);
  assert.equal(clock.monotonic(), mono);
  clock.tick(1_000);
  assert.deepEqual(fired, [now + 110 * MINUTE + 1_000], "the timer kept its remaining delay");
  assert.equal(clock.monotonic(), mono + 1_000);
});

Deno.test("GenericPleg: a relist after the wall clock stepped back answers a status wanted newer than a sync before the step", async () => {
  const clock = new FakeClock();
  const runtime = fakePodRuntime();
  runtime.pods.set("u1", runtimePodStatus({ uid: "u1" }));
  const pleg = new GenericPleg({
    listPods: () => runtime.listPods(),
    getPodStatus: (uid) => runtime.getPodStatus(uid),
    clock,
  });
  await pleg.relist();
  // A pod worker's sync ends here; it wants a status newer than that.
  clock.tick(100);
  const syncEnd = clock.monotonic();
  clock.jump(-10 * MINUTE);
  let answered = false;
  void pleg.waitNewerThan("u1", syncEnd).then(() => (answered = true));
  clock.tick(1_000);
  await pleg.relist();
  await settle();
  assert.ok(answered, "the worker waits for the wall clock to catch up");
  assert.equal(pleg.healthy().ok, true);
});

Deno.test("GenericPleg stays healthy when the wall clock steps forward past its threshold", async () => {
  const clock = new FakeClock();
  const runtime = fakePodRuntime();
  const pleg = new GenericPleg({
    listPods: () => runtime.listPods(),
    getPodStatus: (uid) => runtime.getPodStatus(uid),
    clock,
  });
  await pleg.relist();
  clock.jump(5 * HOUR);
  assert.deepEqual(pleg.healthy(), { ok: true, message: "" });
  clock.tick(181_000);
  assert.equal(pleg.healthy().ok, false, "a relist that really stopped still fails health");
});

Deno.test("WorkQueue: a pod due in 10 s is due 10 s later whichever way the wall clock steps", () => {
  for (const step of [-30 * MINUTE, 6 * HOUR]) {
    const clock = new FakeClock();
    const queue = new WorkQueue(clock);
    queue.enqueue("u1", 10_000);
    clock.jump(step);
    clock.tick(9_000);
    assert.deepEqual(queue.takeDue(), [], `step ${step}: due early`);
    clock.tick(1_000);
    assert.deepEqual(queue.takeDue(), ["u1"], `step ${step}: not due`);
  }
});
