/** tools/test.ts: which builds a planned run needs before its tests start, and what it reads from their output. */

import assert from "node:assert/strict";
import { buildsFor, planRuns, RunOutput } from "../../tools/test.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
const E2E = { script: "tools/e2e/build.sh", blocking: true };
const CONFORMANCE = { script: "tools/conformance/build.sh", blocking: false };

Deno.test("buildsFor(): the e2e tier builds the control plane, then the Conformance smoke test's binaries", () => {
  const runs = planRuns(["unit", "integration", "e2e"], ROOT);
  assert.deepEqual(runs.map((run) => buildsFor(run, ROOT)), [[], [E2E], [E2E, CONFORMANCE]]);
});

Deno.test("buildsFor(): a file or directory selects the builds of the tests it holds", () => {
  const builds = (...paths: string[]) => buildsFor({ label: "x", paths }, ROOT);
  assert.deepEqual(builds(`${ROOT}/tests/e2e/server_test.ts`), [E2E]);
  assert.deepEqual(builds(`${ROOT}/tests/e2e/conformance_smoke_test.ts`), [E2E, CONFORMANCE]);
  assert.deepEqual(builds(`${ROOT}/tests/e2e/`), [E2E, CONFORMANCE]);
  assert.deepEqual(builds(`${ROOT}/tests`), [E2E, CONFORMANCE]);
  assert.deepEqual(builds(`${ROOT}/tests/integration/adopt_upstream_test.ts`), [E2E]);
  assert.deepEqual(builds(`${ROOT}/tests/integration/pods_test.ts`), []);
  assert.deepEqual(builds(`${ROOT}/tests/unit`), []);
  assert.deepEqual(builds(`${ROOT}/tests/e2e_other`), []);
});

Deno.test("buildsFor(): the long suites' slices build the control plane", () => {
  const runs = planRuns(["faults", "fuzz", "scale"], ROOT);
  assert.deepEqual(runs.map((run) => run.paths), [["tests/faults"], ["tests/fuzz"], [
    "tests/scale",
  ]]);
  assert.deepEqual(runs.map((run) => buildsFor(run, ROOT)), [[E2E], [E2E], [E2E]]);
});

Deno.test("RunOutput reads the summary and the tests the FAILURES section names", () => {
  const output = new RunOutput();
  const lines = [
    "a ... \x1b[0m\x1b[31mFAILED\x1b[0m (1ms)",
    " ERRORS ",
    "",
    "a \x1b[0m\x1b[38;5;245m=> ./f_test.ts:1:6\x1b[0m",
    "error: Error: boom",
    "\x1b[0m\x1b[1m\x1b[37m\x1b[41m FAILURES \x1b[0m",
    "",
    "a \x1b[0m\x1b[38;5;245m=> ./f_test.ts:1:6\x1b[0m",
    "b ... s1 \x1b[0m\x1b[38;5;245m=> ./f_test.ts:2:39\x1b[0m",
    "",
    "\x1b[0m\x1b[31mFAILED\x1b[0m | 1 passed | 2 failed (1 step) \x1b[0m\x1b[38;5;245m(21ms)\x1b[0m",
    "error: Test failed",
  ];
  for (const line of lines) output.line(line);
  assert.deepEqual(output.summary, { passed: 1, failed: 2, ignored: 0 });
  assert.deepEqual(output.failures, ["a => ./f_test.ts:1:6", "b ... s1 => ./f_test.ts:2:39"]);
});
