/** The sync loop's pod measurements (lib/agent/_observe.ts). */

import assert from "node:assert/strict";
import { PodStartTracker, runningCounts } from "../../lib/agent/_observe.ts";
import type { PodStatus } from "../../lib/api/types.ts";
import type { RuntimeContainer } from "../../lib/kuberuntime/mod.ts";
import { runtimeContainer, runtimePodStatus, runtimeSandbox } from "../kit/mod.ts";

function status(...running: boolean[]): PodStatus {
  return {
    containerStatuses: running.map((r, i) => ({
      name: `c${i}`,
      state: r ? { running: { startedAt: "2026-01-01T00:00:00Z" } } : { waiting: {} },
      lastState: {},
      ready: r,
      restartCount: 0,
      image: "busybox",
      imageID: "",
    })),
  };
}

Deno.test("PodStartTracker reports a pod's start once, when all its containers run, from when it was first seen", () => {
  const t = new PodStartTracker();
  t.seen("a", 1_000);
  t.seen("a", 5_000); // seen again (an UPDATE): the first time counts
  assert.equal(t.started("a", status(true, false), 6_000), undefined, "one still waiting");
  assert.equal(t.started("a", status(), 6_000), undefined, "no container status yet");
  assert.equal(t.started("a", status(true, true), 7_500), 6_500);
  assert.equal(t.started("a", status(true, true), 9_000), undefined, "only once");
  t.seen("b", 1_000);
  t.forget("b");
  assert.equal(t.started("b", status(true), 2_000), undefined, "forgotten before it started");
});

Deno.test("runningCounts() counts pods with a ready sandbox and containers by state", () => {
  const pod = (ready: boolean, states: RuntimeContainer["state"][]) =>
    runtimePodStatus({
      sandboxes: [runtimeSandbox({ state: ready ? "ready" : "notready" })],
      containers: states.map((state) =>
        runtimeContainer({ name: "c", image: "busybox" }, { state })
      ),
    });
  assert.deepEqual(
    runningCounts([pod(true, ["running", "exited"]), pod(false, ["exited"]), pod(true, [])]),
    { pods: 2, containersByState: { running: 1, exited: 2 } },
  );
});
