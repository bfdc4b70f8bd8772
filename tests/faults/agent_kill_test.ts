/**
 * Fault suite (issue #17): the agent SIGKILLed at seeded random moments of a pod churn
 * through the apiserver (creates, updates, deletes), aimed by turns at volume set-up, an
 * image pull and a termination, and started again on the same dirs; every invariant of
 * tests/faults/_invariants.ts is checked after each restart. A full run kills it 100
 * times; the slice a handful.
 */

import assert from "node:assert/strict";
import { suiteCount, suiteSeed } from "../kit/suite.ts";
import { runFaultRounds } from "./_rounds.ts";

Deno.test({
  name: "faults: SIGKILL of the agent during a pod churn, restarted on the same dirs",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seed = suiteSeed();
    const { violations } = await runFaultRounds({
      name: "agent SIGKILL during churn",
      nodeName: "agentkill",
      seed,
      rounds: suiteCount({ slice: 4, full: 100 }),
      inject: (node) => node.restartAgent({ kill: true }).then(() => {}),
    });
    assert.deepEqual(violations, [], `seed ${seed}:\n${violations.join("\n")}`);
  },
});
