/** tests/kit/suite.ts and tools/suite.ts: the long suites' mode, seed and report. */

import assert from "node:assert/strict";
import { seededRandom, SLICE_SEED, suiteCount, suiteSeed } from "../kit/suite.ts";
import { formatReport } from "../../tools/suite.ts";

function withEnv(env: Record<string, string | undefined>, fn: () => void): void {
  const old = Object.fromEntries(Object.keys(env).map((k) => [k, Deno.env.get(k)]));
  const set = (e: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(e)) {
      v === undefined ? Deno.env.delete(k) : Deno.env.set(k, v);
    }
  };
  set(env);
  try {
    fn();
  } finally {
    set(old);
  }
}

Deno.test("suite kit: a slice takes the slice's size and the fixed seed; a full run the full size and DENOLET_SEED", () => {
  withEnv({ DENOLET_SUITE: undefined, DENOLET_SEED: undefined }, () => {
    assert.equal(suiteCount({ slice: 5, full: 100 }), 5);
    assert.equal(suiteSeed(), SLICE_SEED);
  });
  withEnv({ DENOLET_SUITE: "full", DENOLET_SEED: "42" }, () => {
    assert.equal(suiteCount({ slice: 5, full: 100 }), 100);
    assert.equal(suiteSeed(), 42);
  });
  withEnv({ DENOLET_SEED: "-1" }, () => assert.throws(() => suiteSeed(), /DENOLET_SEED/));
});

Deno.test("seededRandom(): the same seed gives the same sequence, in [0, 1)", () => {
  const a = seededRandom(7), b = seededRandom(7), c = seededRandom(8);
  const xs = Array.from({ length: 100 }, a);
  assert.deepEqual(xs, Array.from({ length: 100 }, b));
  assert.notDeepEqual(xs, Array.from({ length: 100 }, c));
  assert.ok(xs.every((x) => x >= 0 && x < 1));
});

Deno.test("formatReport(): a row per record, findings counted", () => {
  const text = formatReport("faults", 9, [
    {
      suite: "faults",
      name: "agent SIGKILL",
      seed: 9,
      figures: { kills: 100 },
      mode: "full",
      at: "",
    },
    {
      suite: "faults",
      name: "containerd restart",
      seed: 9,
      figures: { restarts: 3 },
      findings: ["pod a|b started twice", "healthz said:\n  runtime down"],
      mode: "full",
      at: "",
    },
  ], { code: 1, summary: "FAILED | 1 passed | 1 failed" });
  assert.match(text, /^# faults: full run, seed 9/);
  assert.match(text, /\| agent SIGKILL \| kills: 100 \| none \|/);
  assert.match(
    text,
    /\| containerd restart \| restarts: 3 \| pod a\\\|b started twice; healthz said: ⏎ runtime down \|/,
  );
  assert.match(text, /2 records, 2 findings\./);
  assert.doesNotMatch(text, /about the runtime/);
});

Deno.test("formatReport(): the runtime's findings listed apart, not counted as findings", () => {
  const text = formatReport("faults", 9, [{
    suite: "faults",
    name: "CRI proxy",
    seed: 9,
    figures: { resets: 3 },
    runtimeFindings: ["container c1 of deleted pod ns/a not collected: refused"],
    mode: "full",
    at: "",
  }], { code: 0, summary: "ok | 1 passed | 0 failed" });
  assert.match(text, /\| CRI proxy \| resets: 3 \| none \|/);
  assert.match(text, /1 records, 0 findings\./);
  assert.match(
    text,
    /## Findings about the runtime \(not violations\)\n\n- CRI proxy: container c1 of deleted pod ns\/a not collected: refused\n/,
  );
});
