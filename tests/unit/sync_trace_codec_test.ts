/**
 * The sync trace's byte encoding (lib/trace/_bytes.ts, _codec.ts): a finished
 * sync reads back as it was recorded, field for field and in types.ts's
 * order, whatever its numbers and strings; a pod's ring keeps its syncs in
 * order and gives room back as it drops them.
 */

import { deepStrictEqual, ok, strictEqual, throws } from "node:assert";
import fc from "fast-check";
import { ByteReader, ByteWriter } from "../../lib/trace/_bytes.ts";
import { readSync, SyncRing, writeSync } from "../../lib/trace/_codec.ts";
import { currentSync, type SyncRecord, SyncTracer } from "../../lib/trace/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";

const T0 = Date.UTC(2026, 11, 2, 5, 21, 3, 120);

/** A sync with every optional field set, its keys in types.ts's order. */
function fullSync(): SyncRecord {
  return {
    seq: 4711,
    kind: "terminating",
    startedAt: T0,
    endedAt: T0 + 340,
    triggers: [
      { at: T0 - 5, source: "pleg", detail: "ContainerDied 3f2a0123456789" },
      { at: T0 - 1, source: "kill", detail: "eviction" },
    ],
    plan: {
      killPod: true,
      createSandbox: false,
      start: ["init", "main"],
      kill: [{ name: "side", reason: "Unhealthy", message: "liveness probe failed" }],
      backoff: [{
        name: "main",
        reason: "CrashLoopBackOff",
        message: "back-off 40s restarting failed container=main pod=web_default(u1)",
        until: T0 + 37_000,
      }],
      update: ["db"],
      reasons: ["kill pod: it is being deleted", "hold main: CrashLoopBackOff for 40s"],
    },
    calls: [
      { at: T0 + 1, rpc: "stopContainer", args: "id=3f2a012345678 timeout=30s", ms: 12.3 },
      { at: T0 + 20, rpc: "removeContainer", args: "", ms: 0, error: "not found: 3f2a" },
    ],
    steps: [
      { action: "KillContainer", target: "side" },
      { action: "KillPodSandbox", target: "sb1", error: { reason: "Failed", message: "boom" } },
    ],
    status: {
      phase: "Failed",
      reason: "Evicted",
      message: "The node was low on resource: memory.",
      containers: [
        {
          name: "main",
          state: "terminated",
          reason: "Error",
          message: "exit status 3",
          exitCode: 3,
          restartCount: 4,
          lastExitCode: 1,
        },
        { name: "side", state: "waiting", restartCount: 0 },
      ],
    },
    error: 'sync of pod "default/web" failed',
    truncated: 7,
  };
}

function roundTrip(s: SyncRecord): SyncRecord {
  const w = new ByteWriter();
  writeSync(w, s);
  const r = new ByteReader(w.bytes.subarray(0, w.length));
  const back = readSync(r);
  strictEqual(r.pos, w.length, "read every byte written");
  return back;
}

Deno.test("a sync with every field reads back equal, its JSON unchanged", () => {
  const s = fullSync();
  const back = roundTrip(s);
  deepStrictEqual(back, s);
  strictEqual(JSON.stringify(back), JSON.stringify(s));
});

Deno.test("a running sync without any optional field reads back without them", () => {
  const s: SyncRecord = {
    seq: 1,
    kind: "sync",
    startedAt: T0,
    triggers: [{ at: T0, source: "resync", detail: "periodic resync" }],
    calls: [],
    steps: [],
  };
  const back = roundTrip(s);
  deepStrictEqual(back, s);
  deepStrictEqual(Object.keys(back), ["seq", "kind", "startedAt", "triggers", "calls", "steps"]);
});

Deno.test("a value outside a closed set (a source types.ts does not list yet) reads back as itself", () => {
  const s = fullSync();
  // deno-lint-ignore no-explicit-any
  (s.triggers[0] as any).source = "future-source";
  // deno-lint-ignore no-explicit-any
  (s.status!.containers[1] as any).state = "paused";
  deepStrictEqual(roundTrip(s), s);
});

Deno.test("every number and string reads back exactly (fractions, -0, NaN, lone surrogates, a BOM)", () => {
  const strings = fc.oneof(
    fc.string({ unit: "binary", maxLength: 300 }),
    fc.constantFrom("", "\uFEFFbom", "\uD83D", "a\uDC00b", "…", "日本語", "x".repeat(1000)),
  );
  const numbers = fc.oneof(
    fc.double(),
    fc.integer(),
    fc.constantFrom(-0, 2 ** 50, 2 ** 50 + 1, 2 ** 53, -(2 ** 60), T0, T0 + 0.5),
  );
  fc.assert(
    fc.property(numbers, numbers, numbers, strings, (at, base, ms, text) => {
      const w = new ByteWriter();
      w.number(at, base);
      w.tenths(ms);
      w.str(text);
      w.number(at);
      const r = new ByteReader(w.bytes.subarray(0, w.length));
      ok(Object.is(r.number(base), at), `${at} against ${base}`);
      ok(Object.is(r.tenths(), ms), `${ms} ms`);
      strictEqual(r.str(), text);
      ok(Object.is(r.number(), at));
      strictEqual(r.pos, w.length);
    }),
    { seed: 20, numRuns: 2_000 },
  );
});

Deno.test("a record's times and durations are written small: a pod start's call in under 64 bytes", () => {
  const w = new ByteWriter();
  w.number(T0 + 12, T0);
  w.tenths(94.2);
  strictEqual(w.length, 3, "a time 12 ms after the start and 94.2 ms: one and two bytes");
  const s = fullSync();
  const one = new ByteWriter();
  writeSync(one, { ...s, calls: [s.calls[0]!] });
  const two = new ByteWriter();
  writeSync(two, s);
  ok(two.length - one.length < 64, `${two.length - one.length} bytes for a call`);
  ok(two.length * 2 < JSON.stringify(s).length, `${two.length} bytes vs its JSON`);
});

Deno.test("a string repeated within a scope is written once, and only there", () => {
  const w = new ByteWriter();
  w.beginScope();
  w.str("sandbox=0123456789abc");
  const once = w.length;
  w.str("sandbox=0123456789abc");
  strictEqual(w.length - once, 1, "the second time: its number, one byte");
  w.endScope();
  w.str("sandbox=0123456789abc");
  strictEqual(w.length - once - 1, once, "after the scope: written out again");
  const r = new ByteReader(w.bytes.subarray(0, w.length));
  r.beginScope();
  deepStrictEqual([r.str(), r.str()], ["sandbox=0123456789abc", "sandbox=0123456789abc"]);
  r.endScope();
  strictEqual(r.str(), "sandbox=0123456789abc");
  // Outside a scope a reader has no strings to refer to.
  throws(() => new ByteReader(w.bytes.subarray(once, once + 1)).str(), RangeError);
});

Deno.test("reading bytes that end early fails loudly", () => {
  const w = new ByteWriter();
  writeSync(w, fullSync());
  throws(() => readSync(new ByteReader(w.bytes.subarray(0, w.length - 3))), RangeError);
});

Deno.test("SyncRing keeps its syncs oldest first and gives room back as it drops them", () => {
  const ring = new SyncRing();
  ring.dropOldest(); // empty: nothing to drop
  strictEqual(ring.count, 0);
  const big = fullSync();
  big.plan!.reasons = Array.from({ length: 40 }, (_, i) => `reason ${i} `.repeat(20));
  for (let i = 1; i <= 5; i++) ring.push({ ...big, seq: i });
  const full = ring.byteLength;
  deepStrictEqual(ring.records().map((s) => s.seq), [1, 2, 3, 4, 5]);
  ring.dropOldest();
  ring.dropOldest();
  strictEqual(ring.count, 3);
  strictEqual(ring.byteLength, (full / 5) * 3, "every sync is the same size here");
  deepStrictEqual(ring.records(), [3, 4, 5].map((seq) => ({ ...big, seq })));
  // Small syncs replace the big ones: the buffer shrinks with them.
  const small: SyncRecord = {
    seq: 9,
    kind: "sync",
    startedAt: T0,
    triggers: [],
    calls: [],
    steps: [],
  };
  for (let i = 0; i < 3; i++) {
    ring.push(small);
    ring.dropOldest();
  }
  deepStrictEqual(ring.records(), [small, small, small]);
  ok(ring.byteLength < 100, `${ring.byteLength} bytes`);
});

Deno.test("SyncTracer serves a finished sync as it was recorded, the running one as it stands", async () => {
  const clock = new FakeClock(T0);
  const tracer = new SyncTracer({ depth: 3, clock });
  const pod = { uid: "u1", namespace: "default", name: "web" };
  tracer.noteTrigger(pod, "config", "ADD from source file");
  await tracer.run(pod, "sync", () => {
    const t = currentSync()!;
    t.call("createContainer", "sandbox=0123456789abc name=main image=busybox", 94.25);
    t.step({ action: "StartContainer", target: "main" });
    clock.tick(12.5);
    return Promise.resolve();
  });
  let during: SyncRecord[] = [];
  await tracer.run(pod, "terminating", () => {
    during = tracer.trace("default", "web")!.syncs;
    return Promise.resolve();
  });
  deepStrictEqual(during, [
    {
      seq: 1,
      kind: "sync",
      startedAt: T0,
      endedAt: T0 + 12.5,
      triggers: [{ at: T0, source: "config", detail: "ADD from source file" }],
      calls: [{
        at: T0 - 94,
        rpc: "createContainer",
        args: "sandbox=0123456789abc name=main image=busybox",
        ms: 94.3,
      }],
      steps: [{ action: "StartContainer", target: "main" }],
    },
    {
      seq: 2,
      kind: "terminating",
      startedAt: T0 + 12.5,
      triggers: [{ at: T0 + 12.5, source: "resync", detail: "periodic resync" }],
      calls: [],
      steps: [],
    },
  ]);
});

Deno.test("SyncTracer keeps at most `depth` syncs of a pod across many", async () => {
  const tracer = new SyncTracer({ depth: 20, clock: new FakeClock(T0) });
  const pod = { uid: "u1", namespace: "default", name: "web" };
  for (let i = 0; i < 500; i++) {
    await tracer.run(pod, "sync", () => {
      currentSync()!.call("containerStatus", `id=${i}`, i / 10);
      return Promise.resolve();
    });
  }
  const syncs = tracer.trace("default", "web")!.syncs;
  deepStrictEqual(syncs.map((s) => s.seq), Array.from({ length: 20 }, (_, i) => 481 + i));
  deepStrictEqual(syncs.at(-1)!.calls[0]!.args, "id=499");
});
