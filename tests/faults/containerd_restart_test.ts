/**
 * Fault suite (issue #17): containerd SIGKILLed at seeded random moments of a pod churn
 * through the apiserver (aimed by turns at volume set-up, an image pull and a
 * termination) and started again on the same root and state, while the agent keeps
 * running; every invariant of tests/faults/_invariants.ts is checked after each restart,
 * among them that no container was started twice and no steady pod restarted.
 */

import assert from "node:assert/strict";
import { suiteCount, suiteSeed } from "../kit/suite.ts";
import { runFaultRounds } from "./_rounds.ts";

Deno.test({
  name: "faults: containerd SIGKILLed and restarted during a pod churn",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seed = suiteSeed();
    const { violations } = await runFaultRounds({
      name: "containerd SIGKILL during churn",
      nodeName: "ctrdkill",
      seed,
      rounds: suiteCount({ slice: 4, full: 40 }),
      inject: (node) => node.runtime.restart(undefined, { kill: true }),
    });
    assert.deepEqual(violations, [], `seed ${seed}:\n${violations.join("\n")}`);
  },
});
