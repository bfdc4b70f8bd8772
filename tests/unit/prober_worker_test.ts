/**
 * ProbeWorker's rules, one per test, on a FakeClock with a scripted handler
 * and a fake manager side (WorkerHost). Startup gating and the views the
 * planner reads are tested through the manager in prober_manager_test.ts.
 */

import assert from "node:assert/strict";
import type { Probe } from "../../lib/api/types.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import {
  type ContainerView,
  type ProbeOutcome,
  type ProbeResultKind,
  probeTiming,
  type ProbeType,
  ProbeWorker,
  type WorkerHost,
} from "../../lib/prober/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";

const ok: ProbeOutcome = { result: "success", output: "ok" };
const bad: ProbeOutcome = { result: "failure", output: "bad" };

/** A worker with a fake manager side whose state the test changes. */
function setup(type: ProbeType, probe: Probe = {}) {
  const clock = new FakeClock();
  const env = {
    clock,
    view: undefined as ContainerView | undefined,
    started: true,
    deleting: false,
    willRestart: true,
    respond: (_signal: AbortSignal): ProbeOutcome | Promise<ProbeOutcome> => ok,
    /** Container ids probed, in order. */
    calls: [] as string[],
    results: new Map<string, ProbeResultKind>(),
    /** Every setResult, as `id=result`. */
    sets: [] as string[],
    recorded: [] as ProbeResultKind[],
    stoppedCalls: 0,
    /** Makes `id` the running container, started now. */
    run(id: string, state: ContainerView["state"] = "running") {
      env.view = { id, state, startedAt: clock.now(), exitCode: 0 };
    },
    async tick(ms: number) {
      clock.tick(ms);
      await worker.idle;
      await worker.idle;
    },
  };
  const host: WorkerHost = {
    clock,
    logger: silentLogger,
    runProbe: (_probe, target, signal) => {
      env.calls.push(target.containerId);
      return Promise.resolve(env.respond(signal));
    },
    container: () => env.view,
    isStarted: () => env.started,
    deleting: () => env.deleting,
    willRestart: () => env.willRestart,
    target: (containerId) => ({
      podName: "ns/web",
      container: { name: "app" },
      containerId,
      podIP: "10.0.0.1",
      userAgent: "kube-probe/1.29",
      runtime: {} as RuntimeService,
    }),
    setResult: (id, result) => {
      env.results.set(id, result);
      env.sets.push(`${id}=${result}`);
    },
    removeResult: (id) => void env.results.delete(id),
    recordProbe: (result) => void env.recorded.push(result),
    onStopped: () => void env.stoppedCalls++,
  };
  const worker = new ProbeWorker(type, { exec: { command: ["true"] }, ...probe }, host);
  return { env, worker };
}

Deno.test("ProbeWorker sets the initial result per type: readiness failure, liveness success, startup unknown", async () => {
  for (
    const [type, initial] of [
      ["Readiness", "failure"],
      ["Liveness", "success"],
      ["Startup", "unknown"],
    ] as const
  ) {
    const { env, worker } = setup(type, { initialDelaySeconds: 100 });
    env.started = type !== "Startup";
    env.run("c1");
    worker.start(0);
    await worker.idle;
    assert.deepEqual(env.sets, [`c1=${initial}`], type);
    assert.deepEqual(env.calls, [], `${type}: within the initial delay nothing is probed`);
    worker.stop();
  }
});

Deno.test("ProbeWorker probes at once and then every periodSeconds (default 10)", async () => {
  const { env, worker } = setup("Liveness");
  assert.equal(worker.timing.periodSeconds, 10);
  env.run("c1");
  worker.start(0);
  await worker.idle;
  assert.equal(env.calls.length, 1);
  await env.tick(9_999);
  assert.equal(env.calls.length, 1);
  await env.tick(1);
  assert.equal(env.calls.length, 2);
  await env.tick(20_000);
  assert.equal(env.calls.length, 4);
  worker.stop();
});

Deno.test("ProbeWorker waits initialDelaySeconds from the container's start", async () => {
  const { env, worker } = setup("Liveness", { initialDelaySeconds: 25, periodSeconds: 10 });
  env.run("c1");
  worker.start(0);
  await env.tick(10_000);
  await env.tick(10_000);
  assert.deepEqual(env.calls, [], "20s after the start is within the 25s delay");
  await env.tick(10_000);
  assert.deepEqual(env.calls, ["c1"]);
  worker.stop();
});

Deno.test("ProbeWorker waits for a container before probing and sets nothing meanwhile", async () => {
  const { env, worker } = setup("Readiness", { periodSeconds: 1 });
  worker.start(0);
  await env.tick(3_000);
  assert.deepEqual(env.calls, []);
  assert.deepEqual(env.sets, []);
  env.run("c1");
  await env.tick(1_000);
  assert.deepEqual(env.sets, ["c1=failure", "c1=success"]);
  worker.stop();
});

Deno.test("ProbeWorker publishes a liveness failure only after failureThreshold failures in a row", async () => {
  const { env, worker } = setup("Liveness", { periodSeconds: 1, failureThreshold: 3 });
  const script = [bad, bad, ok, bad, bad, bad];
  env.respond = () => script.shift() ?? ok;
  env.run("c1");
  worker.start(0);
  await worker.idle;
  for (let i = 0; i < 4; i++) await env.tick(1_000);
  assert.equal(env.results.get("c1"), "success", "the run of failures was broken by a success");
  await env.tick(1_000);
  assert.equal(env.results.get("c1"), "failure");
  assert.deepEqual(env.sets, ["c1=success", "c1=success", "c1=failure"]);
  worker.stop();
});

Deno.test("ProbeWorker holds after a published liveness failure until a new container appears", async () => {
  const { env, worker } = setup("Liveness", { periodSeconds: 1, failureThreshold: 1 });
  env.respond = () => bad;
  env.run("c1");
  worker.start(0);
  await worker.idle;
  assert.equal(env.results.get("c1"), "failure");
  await env.tick(5_000);
  assert.deepEqual(env.calls, ["c1"], "no probe while on hold");
  env.respond = () => ok;
  env.run("c2");
  await env.tick(1_000);
  assert.deepEqual(env.calls, ["c1", "c2"]);
  assert.equal(env.results.has("c1"), false, "the old container's result is dropped");
  assert.equal(env.results.get("c2"), "success");
  worker.stop();
});

Deno.test("ProbeWorker needs successThreshold successes in a row for readiness; liveness and startup use 1", async () => {
  const { env, worker } = setup("Readiness", { periodSeconds: 1, successThreshold: 2 });
  env.run("c1");
  worker.start(0);
  await worker.idle;
  assert.equal(env.results.get("c1"), "failure");
  await env.tick(1_000);
  assert.equal(env.results.get("c1"), "success");
  worker.stop();
  assert.equal(probeTiming({ successThreshold: 3 }, "Liveness").successThreshold, 1);
  assert.equal(probeTiming({ successThreshold: 3 }, "Startup").successThreshold, 1);
  assert.deepEqual(probeTiming({}, "Readiness"), {
    initialDelaySeconds: 0,
    timeoutSeconds: 1,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 3,
  });
});

Deno.test("ProbeWorker starts over for a restarted container (new id): initial result, counters reset", async () => {
  const { env, worker } = setup("Readiness", { periodSeconds: 1, successThreshold: 2 });
  env.run("c1");
  worker.start(0);
  await worker.idle; // one success on c1
  env.run("c2");
  await env.tick(1_000); // one success on c2: not two in a row on the same container
  assert.equal(env.results.get("c2"), "failure");
  assert.equal(env.results.has("c1"), false);
  await env.tick(1_000);
  assert.equal(env.results.get("c2"), "success");
  worker.stop();
});

Deno.test("ProbeWorker does not probe a stopped container, marks it failed, and ends when it will not restart", async () => {
  const { env, worker } = setup("Readiness", { periodSeconds: 1 });
  env.run("c1");
  worker.start(0);
  await worker.idle;
  assert.equal(env.results.get("c1"), "success");
  env.run("c1", "exited");
  await env.tick(3_000);
  assert.deepEqual(env.calls, ["c1"]);
  assert.equal(env.results.get("c1"), "failure");
  assert.equal(worker.stopped, false, "restartPolicy Always: the container comes back");
  env.willRestart = false;
  await env.tick(1_000);
  assert.equal(worker.stopped, true);
  assert.equal(env.stoppedCalls, 1);
  assert.equal(env.results.has("c1"), false, "a stopped worker drops its result");
  assert.equal(env.clock.pendingTimers, 0);
});

Deno.test("ProbeWorker sets liveness to success and stops when the pod is being deleted", async () => {
  const { env, worker } = setup("Liveness", { periodSeconds: 1 });
  env.respond = () => bad;
  env.run("c1");
  env.deleting = true;
  worker.start(0);
  await worker.idle;
  assert.deepEqual(env.calls, []);
  assert.deepEqual(
    env.sets,
    ["c1=success", "c1=success"],
    "initial, then the quiet-shutdown success",
  );
  assert.equal(worker.stopped, true);
});

Deno.test("ProbeWorker never overlaps itself: ticks during a hung probe collapse into one later probe", async () => {
  const { env, worker } = setup("Liveness", { periodSeconds: 1 });
  const release = Promise.withResolvers<ProbeOutcome>();
  env.respond = () => release.promise;
  env.run("c1");
  worker.start(0);
  for (let i = 0; i < 5; i++) env.clock.tick(1_000);
  await Promise.resolve();
  assert.deepEqual(env.calls, ["c1"], "five ticks while the first probe hangs start nothing");
  env.respond = () => ok;
  release.resolve(ok);
  await worker.idle;
  await worker.idle;
  assert.deepEqual(env.calls, ["c1", "c1"], "the missed ticks run one probe right after");
  worker.stop();
});

Deno.test("ProbeWorker's hung probe does not hold up another worker, and stop() cancels it", async () => {
  const hung = setup("Liveness", { periodSeconds: 1 });
  let aborted = false;
  hung.env.respond = (signal) =>
    new Promise<ProbeOutcome>((resolve) =>
      signal.addEventListener("abort", () => {
        aborted = true;
        resolve({ result: "unknown", output: "cancelled" });
      })
    );
  hung.env.run("c1");
  const other = setup("Readiness", { periodSeconds: 1 });
  other.env.run("c2");
  hung.worker.start(0);
  other.worker.start(0);
  for (let i = 0; i < 3; i++) {
    hung.env.clock.tick(1_000);
    await other.env.tick(1_000);
  }
  assert.deepEqual(hung.env.calls, ["c1"]);
  assert.equal(other.env.calls.length, 4);
  hung.worker.stop();
  await hung.worker.idle;
  assert.equal(aborted, true);
  assert.deepEqual(hung.env.recorded, [], "a cancelled probe is not counted");
  other.worker.stop();
});

Deno.test("ProbeWorker retries a probe that cannot run 3 times, then throws the result away", async () => {
  const { env, worker } = setup("Readiness", { periodSeconds: 1 });
  env.respond = () => ({ result: "unknown", output: "no such port" });
  env.run("c1");
  worker.start(0);
  await worker.idle;
  assert.deepEqual(env.calls, ["c1", "c1", "c1"]);
  assert.deepEqual(env.sets, ["c1=failure"], "only the initial result");
  assert.deepEqual(env.recorded, ["unknown"]);
  worker.stop();
});

Deno.test("ProbeWorker.start() delays the first probe by the jitter it is given", async () => {
  const { env, worker } = setup("Liveness", { periodSeconds: 10 });
  env.run("c1");
  worker.start(4_000);
  await env.tick(3_999);
  assert.deepEqual(env.calls, []);
  await env.tick(1);
  assert.deepEqual(env.calls, ["c1"]);
  await env.tick(10_000);
  assert.equal(env.calls.length, 2);
  worker.stop();
  assert.equal(env.clock.pendingTimers, 0);
});
