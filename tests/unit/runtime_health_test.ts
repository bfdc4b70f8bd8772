/**
 * RuntimeHealth reads the CRI Status conditions as upstream's updateRuntimeUp:
 * RuntimeReady for the runtime's health, NetworkReady for the network's, each
 * worded as upstream's runtimeState errors.
 */

import assert from "node:assert/strict";
import { RUNTIME_SYNC_THRESHOLD_MS, RuntimeHealth } from "../../lib/agent/runtime_health.ts";
import type { RuntimeCondition, RuntimeService, StatusResponse } from "../../lib/cri/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";

function health(answer: () => Promise<StatusResponse>, clock = new FakeClock()): RuntimeHealth {
  const runtime = { status: answer } as unknown as RuntimeService;
  return new RuntimeHealth({ runtime, clock, logger: silentLogger });
}

const ok = (type: string): RuntimeCondition => ({ type, status: true, reason: "", message: "" });
const answer = (...conditions: RuntimeCondition[]) => () =>
  Promise.resolve({ status: { conditions }, info: {} });

Deno.test("RuntimeHealth: before the first answer the network state is unknown, as upstream starts", () => {
  const h = health(answer(ok("RuntimeReady"), ok("NetworkReady")));
  assert.equal(h.networkProblem(), "network state unknown");
});

Deno.test("RuntimeHealth: NetworkReady=false is the network's problem in upstream's words; the runtime stays healthy", async () => {
  const h = health(answer(ok("RuntimeReady"), {
    type: "NetworkReady",
    status: false,
    reason: "NetworkPluginNotReady",
    message: "Network plugin returns error: cni plugin not initialized",
  }));
  await h.check();
  assert.equal(h.problem(), undefined);
  assert.equal(
    h.networkProblem(),
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
  );
});

Deno.test("RuntimeHealth: conditions the runtime does not report count as not ready (<nil>)", async () => {
  const h = health(answer());
  await h.check();
  assert.equal(h.problem(), "container runtime not ready: <nil>");
  assert.equal(h.networkProblem(), "container runtime network not ready: <nil>");
});

Deno.test("RuntimeHealth: a failed status call is not a runtime that is down until 30 s pass without an answer; the network state stays as it was", async () => {
  const clock = new FakeClock();
  let fail = false;
  const h = health(
    () =>
      fail
        ? Promise.reject(new Error("connection refused"))
        : answer(ok("RuntimeReady"), ok("NetworkReady"))(),
    clock,
  );
  await h.check();
  assert.equal(h.networkProblem(), undefined);
  fail = true;
  clock.tick(5_000);
  await h.check();
  // One slow or dropped call must not flap the node (upstream's maxWaitForContainerRuntime).
  assert.equal(h.problem(), undefined);
  clock.tick(RUNTIME_SYNC_THRESHOLD_MS - 5_000);
  assert.equal(h.problem(), undefined, "down only once the threshold is passed");
  clock.tick(1);
  assert.equal(h.problem(), "container runtime is down: connection refused");
  assert.equal(h.networkProblem(), undefined);
  fail = false;
  await h.check();
  assert.equal(h.problem(), undefined, "healthy again with the next answer");
});

Deno.test("RuntimeHealth: a runtime that never answered is down at once", async () => {
  const h = health(() => Promise.reject(new Error("connection refused")));
  await h.check();
  assert.equal(h.problem(), "container runtime is down: connection refused");
});

Deno.test("RuntimeHealth: RuntimeReady=false counts at once, and a failed call after it leaves it so", async () => {
  let reply: () => Promise<StatusResponse> = answer(ok("RuntimeReady"), ok("NetworkReady"));
  const h = health(() => reply());
  await h.check();
  reply = answer(
    { type: "RuntimeReady", status: false, reason: "Busy", message: "m" },
    ok("NetworkReady"),
  );
  await h.check();
  assert.equal(
    h.problem(),
    "container runtime not ready: RuntimeReady=false reason:Busy message:m",
  );
  reply = () => Promise.reject(new Error("deadline exceeded"));
  await h.check();
  assert.equal(
    h.problem(),
    "container runtime not ready: RuntimeReady=false reason:Busy message:m",
  );
});

Deno.test("RuntimeHealth: a step of the wall clock neither ends nor stretches the 30 s without an answer", async () => {
  const clock = new FakeClock();
  let fail = false;
  const h = health(
    () => fail ? Promise.reject(new Error("connection refused")) : answer(ok("RuntimeReady"))(),
    clock,
  );
  await h.check();
  fail = true;
  clock.jump(3_600_000);
  await h.check();
  assert.equal(h.problem(), undefined, "an hour's step forward is not 30 s without an answer");
  clock.jump(-7_200_000);
  clock.tick(RUNTIME_SYNC_THRESHOLD_MS + 1);
  assert.equal(h.problem(), "container runtime is down: connection refused");
});
