import assert from "node:assert/strict";
import type { PodStatus } from "../../lib/api/types.ts";
import { mergePodStatus } from "../../lib/status/_status_rules.ts";

const disruption = {
  type: "DisruptionTarget",
  status: "True" as const,
  reason: "TerminationByKubelet",
  message: "The node was low on resource: memory. ",
};

Deno.test("mergePodStatus() sends an eviction's DisruptionTarget with the move to Failed once no container runs", () => {
  const api: PodStatus = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
  const stopped: PodStatus = {
    phase: "Failed",
    reason: "Evicted",
    conditions: [disruption],
    containerStatuses: [{
      name: "main",
      image: "busybox",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 137 } },
      lastState: {},
    }],
  };
  const merged = mergePodStatus(api, stopped, "2026-01-01T00:00:00Z");
  assert.deepEqual(merged.conditions?.find((c) => c.type === "DisruptionTarget"), disruption);
  // Not while a container still runs (the status set before the kill), as upstream.
  const running: PodStatus = {
    ...stopped,
    containerStatuses: [{ ...stopped.containerStatuses![0]!, state: { running: {} } }],
  };
  assert.equal(
    (mergePodStatus(api, running, "2026-01-01T00:00:00Z").conditions ?? []).some((c) =>
      c.type === "DisruptionTarget"
    ),
    false,
  );
});
