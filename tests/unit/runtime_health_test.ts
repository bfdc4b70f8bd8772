/**
 * RuntimeHealth reads the CRI Status conditions as upstream's updateRuntimeUp:
 * RuntimeReady for the runtime's health, NetworkReady for the network's, each
 * worded as upstream's runtimeState errors.
 */

import assert from "node:assert/strict";
import { RuntimeHealth } from "../../lib/agent/runtime_health.ts";
import type { RuntimeCondition, RuntimeService, StatusResponse } from "../../lib/cri/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";

function health(answer: () => Promise<StatusResponse>): RuntimeHealth {
  const runtime = { status: answer } as unknown as RuntimeService;
  return new RuntimeHealth({ runtime, clock: new FakeClock(), logger: silentLogger });
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

Deno.test("RuntimeHealth: a failed status call marks the runtime down and leaves the network state as it was", async () => {
  let fail = false;
  const h = health(() =>
    fail
      ? Promise.reject(new Error("connection refused"))
      : answer(ok("RuntimeReady"), ok("NetworkReady"))()
  );
  await h.check();
  assert.equal(h.networkProblem(), undefined);
  fail = true;
  await h.check();
  assert.equal(h.problem(), "container runtime is down: connection refused");
  assert.equal(h.networkProblem(), undefined);
});
