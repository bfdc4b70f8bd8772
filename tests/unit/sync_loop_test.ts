/**
 * The sync loop's dispatch (lib/agent/sync_loop.ts) on its own: which input
 * reaches which handler, in which order, and what keeps the loop alive. A
 * fake clock drives the ticks; the streams are in-memory channels.
 */

import assert from "node:assert/strict";
import { SyncLoop, type SyncLoopHandlers } from "../../lib/agent/sync_loop.ts";
import type { PodUpdate } from "../../lib/config/mod.ts";
import { EventChannel, type PodLifecycleEvent } from "../../lib/pleg/mod.ts";
import type { ProbeResultUpdate } from "../../lib/prober/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";
import { flush, probeResult, testPod } from "../kit/mod.ts";

function update(op: PodUpdate["op"], name: string): PodUpdate {
  return { op, source: "file", pods: [testPod({ name, uid: name, containers: [] })] };
}

/** A loop whose handlers record what they were given, with its inputs. */
function setup(overrides: Partial<SyncLoopHandlers> = {}) {
  const clock = new FakeClock();
  const seen: string[] = [];
  const lines: string[] = [];
  const updates = new EventChannel<PodUpdate>(10);
  const plegEvents = new EventChannel<PodLifecycleEvent>(10);
  let probeListener: ((u: ProbeResultUpdate) => void) | undefined;
  let probeSubscribed = false;
  const loop = new SyncLoop({
    clock,
    logger: createLogger({ write: (l) => lines.push(l) }),
    handlers: {
      config: (u) => seen.push(`config ${u.op} ${u.pods[0]?.metadata.name}`),
      pleg: (e) => seen.push(`pleg ${e.type} ${e.podUID}`),
      sync: () => seen.push("sync"),
      housekeeping: () => seen.push("housekeeping"),
      probe: (u) => seen.push(`probe ${u.podUID}`),
      ...overrides,
    },
  });
  const start = () =>
    loop.start({
      updates,
      plegEvents,
      probeResults: (listener) => {
        probeListener = listener;
        probeSubscribed = true;
        return () => void (probeSubscribed = false);
      },
    });
  return {
    clock,
    seen,
    lines,
    updates,
    plegEvents,
    loop,
    start,
    probe: (u: ProbeResultUpdate) => probeListener?.(u),
    probeSubscribed: () => probeSubscribed,
  };
}

Deno.test("SyncLoop hands each input to its handler: each stream in arrival order, the 1s sync and 2s housekeeping ticks, probe results", async () => {
  const h = setup();
  h.start();
  h.updates.send(update("ADD", "a"));
  h.updates.send(update("UPDATE", "a"));
  h.updates.send(update("REMOVE", "a"));
  h.plegEvents.send({ podUID: "b", type: "ContainerDied", data: "c1" });
  await flush();
  // Each stream keeps its order; two streams interleave, as upstream's select does.
  assert.deepEqual(h.seen.filter((s) => s.startsWith("config")), [
    "config ADD a",
    "config UPDATE a",
    "config REMOVE a",
  ]);
  assert.deepEqual(h.seen.filter((s) => s.startsWith("pleg")), ["pleg ContainerDied b"]);
  assert.equal(h.seen.length, 4);
  h.seen.length = 0;
  h.clock.tick(999);
  assert.deepEqual(h.seen, [], "no tick before 1s");
  h.clock.tick(1);
  assert.deepEqual(h.seen, ["sync"]);
  h.clock.tick(1_000);
  assert.deepEqual(h.seen, ["sync", "sync", "housekeeping"]);
  h.probe(probeResult({ podUID: "c" }));
  assert.deepEqual(h.seen.at(-1), "probe c", "a probe result is handled at once");
  h.loop.stop();
});

Deno.test("SyncLoop runs one handler at a time: an input sent from inside a handler waits for it to return", async () => {
  const order: string[] = [];
  let h: ReturnType<typeof setup> | undefined = undefined;
  h = setup({
    config: (u) => {
      order.push(`config ${u.op} start`);
      // A PLEG event arriving meanwhile is read only after this handler returned.
      h!.plegEvents.send({ podUID: "a", type: "ContainerStarted", data: "c1" });
      order.push(`config ${u.op} end`);
    },
    pleg: (e) => order.push(`pleg ${e.type}`),
  });
  h.start();
  h.updates.send(update("ADD", "a"));
  await flush();
  assert.deepEqual(order, ["config ADD start", "config ADD end", "pleg ContainerStarted"]);
  h.loop.stop();
});

Deno.test("SyncLoop.health() is fine while any input arrives and names the silence once none has for 20s", () => {
  const h = setup();
  h.start();
  assert.equal(h.loop.health(), undefined);
  // Without ticks (as if the timers were starved), a probe result alone keeps it alive.
  h.loop.stop();
  h.clock.tick(15_000);
  h.loop.dispatch({ kind: "probe", update: probeResult({ podUID: "a" }) });
  h.clock.tick(15_000);
  assert.equal(h.loop.health(), undefined, "15s since the probe result");
  h.clock.tick(6_000);
  assert.equal(
    h.loop.health(),
    "sync loop took too long to respond: last activity 21s ago",
  );
  h.loop.dispatch({ kind: "config", update: update("RECONCILE", "a") });
  assert.equal(h.loop.health(), undefined, "a config update marks it alive again");
});

Deno.test("SyncLoop.health() measures the silence on the monotonic clock: a step of the wall clock is no silence", () => {
  const h = setup();
  h.start();
  h.loop.stop();
  h.clock.jump(6 * 3_600_000);
  assert.equal(h.loop.health(), undefined);
  h.clock.tick(21_000);
  assert.equal(h.loop.health(), "sync loop took too long to respond: last activity 21s ago");
});

Deno.test("SyncLoop logs a failing handler and goes on with the next input", async () => {
  const h = setup({
    config: (u) => {
      if (u.op === "ADD") throw new Error(`cannot add pod "default/${u.pods[0]?.metadata.name}"`);
      h.seen.push(`config ${u.op}`);
    },
  });
  h.start();
  h.updates.send(update("ADD", "bad"));
  h.updates.send(update("UPDATE", "good"));
  await flush();
  assert.deepEqual(h.seen, ["config UPDATE"]);
  assert.ok(
    h.lines.some((l) =>
      l.includes("Sync loop handler failed") && l.includes('input="config"') &&
      l.includes('cannot add pod \\"default/bad\\"')
    ),
    h.lines.join("\n"),
  );
  h.loop.stop();
});

Deno.test("SyncLoop.stop() ends the ticks, the stream reads and the probe subscription", async () => {
  const h = setup();
  h.start();
  assert.equal(h.probeSubscribed(), true);
  h.loop.stop();
  assert.equal(h.probeSubscribed(), false);
  h.updates.send(update("ADD", "late"));
  h.plegEvents.send({ podUID: "late", type: "ContainerStarted", data: "c1" });
  await flush();
  h.clock.tick(10_000);
  assert.deepEqual(h.seen, []);
});
