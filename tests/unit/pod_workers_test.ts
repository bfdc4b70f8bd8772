import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import type { RuntimePodStatus } from "../../lib/kuberuntime/types.ts";
import {
  effectiveGracePeriod,
  PodWorkers,
  type PodWorkersOptions,
  type RuntimePodSyncContext,
  type SyncContext,
  type SyncResult,
} from "../../lib/pod_workers/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";
import { type Deferred, deferred, flush, testPod } from "../kit/mod.ts";

/** Pod "pod-<uid>" with one container "c", a 30 s grace period and a version annotation. */
function makePod(uid: string, version = "v1", extra: Partial<Pod["metadata"]> = {}): Pod {
  return testPod({
    name: `pod-${uid}`,
    uid,
    containers: ["c"],
    metadata: { annotations: { version }, ...extra },
    spec: { terminationGracePeriodSeconds: 30 },
  });
}

function versionOf(ctx: SyncContext): string {
  return `${ctx.pod.metadata.uid}:${ctx.pod.metadata.annotations?.["version"]}`;
}

type Kind = "sync" | "terminating" | "terminated";

interface Call {
  kind: Kind;
  ctx: SyncContext;
  done: Deferred<SyncResult>;
}

/**
 * Pod workers whose sync functions park until the test settles them (or settle
 * at once with `auto`), recording every call and the concurrency per pod.
 */
function harness(extra: Partial<PodWorkersOptions> = {}) {
  const clock = new FakeClock();
  const calls: Call[] = [];
  const lines: string[] = [];
  const active = new Map<string, number>();
  let maxPerPod = 0;
  let maxTotal = 0;
  const auto = new Set<Kind>();
  const runtimeCalls: RuntimePodSyncContext[] = [];
  function record(kind: Kind, ctx: SyncContext): Promise<SyncResult> {
    const uid = ctx.pod.metadata.uid!;
    const n = (active.get(uid) ?? 0) + 1;
    active.set(uid, n);
    maxPerPod = Math.max(maxPerPod, n);
    maxTotal = Math.max(maxTotal, [...active.values()].reduce((a, b) => a + b, 0));
    const done = deferred<SyncResult>();
    calls.push({ kind, ctx, done });
    if (auto.has(kind)) done.resolve({ isTerminal: false });
    return done.promise.finally(() => active.set(uid, (active.get(uid) ?? 1) - 1));
  }
  const workers = new PodWorkers({
    clock,
    random: () => 0,
    logger: createLogger({ write: (l) => lines.push(l) }),
    syncPod: (ctx) => record("sync", ctx),
    syncTerminatingPod: async (ctx) => void (await record("terminating", ctx)),
    syncTerminatedPod: async (ctx) => void (await record("terminated", ctx)),
    syncTerminatingRuntimePod: (ctx) => {
      runtimeCalls.push(ctx);
      return Promise.resolve();
    },
    ...extra,
  });
  return {
    clock,
    calls,
    runtimeCalls,
    lines,
    auto,
    workers,
    of: (kind: Kind) => calls.filter((c) => c.kind === kind),
    get maxPerPod() {
      return maxPerPod;
    },
    get maxTotal() {
      return maxTotal;
    },
  };
}

/**
 * How long until the workers queue `uid` for a sync, found by stepping the
 * fake clock 1ms at a time (and taking the due pods out of the queue).
 */
function msUntilDue(h: ReturnType<typeof harness>, uid: string, limitMs = 120_000): number {
  for (let ms = 0; ms <= limitMs; ms++) {
    if (h.workers.podsDueForSync().includes(uid)) return ms;
    h.clock.tick(1);
  }
  throw new Error(`pod ${uid} not due within ${limitMs}ms`);
}

/** Rejects with the signal's reason once aborted, like a CRI call would. */
function abortable(call: Call): void {
  call.ctx.signal.addEventListener("abort", () => call.done.reject(call.ctx.signal.reason));
}

Deno.test("PodWorkers.updatePod() coalesces updates sent during a slow sync into one sync of the newest", async () => {
  const h = harness();
  h.workers.updatePod({ type: "create", pod: makePod("a", "v1") });
  await flush();
  assert.deepEqual(h.calls.map((c) => versionOf(c.ctx)), ["a:v1"]);
  for (const v of ["v2", "v3", "v4"]) h.workers.updatePod({ type: "update", pod: makePod("a", v) });
  await flush();
  assert.equal(h.calls.length, 1, "no second sync while the first runs");
  h.calls[0]!.done.resolve({ isTerminal: false });
  await flush();
  assert.deepEqual(h.calls.map((c) => versionOf(c.ctx)), ["a:v1", "a:v4"]);
  assert.equal(h.calls[1]!.ctx.updateType, "update");
  h.calls[1]!.done.resolve({ isTerminal: false });
  await flush();
  assert.equal(h.calls.length, 2, "nothing left to run");
  assert.equal(h.workers.podState("a"), "sync");
});

Deno.test("PodWorkers.updatePod() is never lost when it lands while a worker is winding down", async () => {
  const h = harness();
  h.workers.updatePod({ type: "create", pod: makePod("a", "v1") });
  await flush();
  // Updates sent from every microtask step after the sync settles.
  let sent = 0;
  const sendLater = async () => {
    for (let i = 0; i < 20; i++) {
      await Promise.resolve();
      h.workers.updatePod({ type: "sync", pod: makePod("a", `late${i}`) });
      sent++;
    }
  };
  h.calls[0]!.done.resolve({ isTerminal: false });
  await sendLater();
  for (let i = 1; i < 25 && h.calls.length > i - 1; i++) {
    await flush();
    h.calls[i]?.done.resolve({ isTerminal: false });
  }
  await flush();
  assert.equal(sent, 20);
  assert.equal(versionOf(h.calls.at(-1)!.ctx), "a:late19", "the last update was synced");
  assert.equal(h.maxPerPod, 1);
});

Deno.test("PodWorkers runs two pods concurrently but never one pod's syncs at once", async () => {
  const h = harness();
  h.workers.updatePod({ type: "create", pod: makePod("a", "1") });
  h.workers.updatePod({ type: "create", pod: makePod("b", "1") });
  await flush();
  h.workers.updatePod({ type: "sync", pod: makePod("a", "2") });
  h.workers.updatePod({ type: "sync", pod: makePod("b", "2") });
  await flush();
  assert.deepEqual(h.calls.map((c) => versionOf(c.ctx)), ["a:1", "b:1"]);
  h.calls[1]!.done.resolve({ isTerminal: false }); // b finishes first
  await flush();
  assert.deepEqual(h.calls.map((c) => versionOf(c.ctx)), ["a:1", "b:1", "b:2"]);
  h.workers.updatePod({ type: "sync", pod: makePod("b", "3") });
  h.calls[0]!.done.resolve({ isTerminal: false });
  await flush();
  assert.deepEqual(h.calls.map((c) => versionOf(c.ctx)), ["a:1", "b:1", "b:2", "a:2"]);
  h.calls[2]!.done.resolve({ isTerminal: false });
  h.calls[3]!.done.resolve({ isTerminal: false });
  await flush();
  assert.deepEqual(h.calls.map((c) => versionOf(c.ctx)).slice(4), ["b:3"]);
  assert.equal(h.maxPerPod, 1);
  assert.equal(h.maxTotal, 2);
});

Deno.test("PodWorkers: a throwing syncPod does not block another pod and is retried after backoff", async () => {
  const h = harness();
  h.workers.updatePod({ type: "create", pod: makePod("bad") });
  h.workers.updatePod({ type: "create", pod: makePod("good") });
  await flush();
  h.calls[0]!.done.reject(new Error("failed to pull image"));
  h.calls[1]!.done.resolve({ isTerminal: false });
  await flush();
  const t0 = h.clock.now();
  assert.ok(
    h.lines.some((l) =>
      l.includes("Error syncing pod") && l.includes('pod="default/pod-bad"') &&
      l.includes('podUID="bad"') && l.includes("failed to pull image")
    ),
  );

  // The good pod still syncs while the bad one waits.
  h.workers.updatePod({ type: "update", pod: makePod("good", "v2") });
  await flush();
  assert.equal(versionOf(h.calls[2]!.ctx), "good:v2");
  h.calls[2]!.done.resolve({ isTerminal: false });
  await flush();

  h.clock.tick(9_999);
  assert.deepEqual(h.workers.podsDueForSync(), []);
  h.clock.tick(1);
  assert.equal(h.clock.now(), t0 + 10_000);
  assert.deepEqual(h.workers.podsDueForSync(), ["bad"], "upstream backOffPeriod, no jitter");
  assert.deepEqual(h.workers.podsDueForSync(), [], "taken out of the queue");
  h.workers.updatePod({ type: "sync", pod: makePod("bad") });
  await flush();
  assert.equal(h.of("sync").filter((c) => c.ctx.pod.metadata.uid === "bad").length, 2);
  h.calls[3]!.done.resolve({ isTerminal: false });
  await flush();
  h.clock.tick(49_999);
  assert.deepEqual(h.workers.podsDueForSync(), []);
  h.clock.tick(1);
  assert.equal(h.clock.now(), t0 + 60_000);
  assert.deepEqual(h.workers.podsDueForSync(), ["good"], "resync after syncFrequency");
  assert.equal(msUntilDue(h, "bad"), 10_000, "60s after its own successful sync");
});

Deno.test("PodWorkers backoff uses backoffMs(failures), jitter, and 1s for network-not-ready", async () => {
  const seen: number[] = [];
  const h = harness({
    random: () => 0.5,
    backoffMs: (failures) => {
      seen.push(failures);
      return failures * 1000;
    },
  });
  const fail = async (message: string) => {
    h.workers.updatePod({ type: "sync", pod: makePod("a") });
    await flush();
    h.calls.at(-1)!.done.reject(new Error(message));
    await flush();
  };
  await fail("boom");
  assert.equal(msUntilDue(h, "a"), 1250, "1s·(1 + 0.5·0.5)");
  await fail("boom");
  assert.equal(msUntilDue(h, "a"), 2500);
  await fail("network is not ready: cni config uninitialized");
  assert.equal(msUntilDue(h, "a"), 1250, "transient error base is 1s");
  assert.deepEqual(seen, [1, 2]);
});

Deno.test("PodWorkers: a kill during a sync aborts it, then terminating and terminated run once each", async () => {
  const h = harness();
  h.workers.updatePod({ type: "create", pod: makePod("a") });
  await flush();
  const first = h.calls[0]!;
  abortable(first);
  h.workers.updatePod({ type: "kill", pod: makePod("a"), gracePeriodSeconds: 5 });
  h.workers.updatePod({ type: "update", pod: makePod("a", "v2") }); // must not undo the kill
  assert.equal(first.ctx.signal.aborted, true);
  assert.equal(h.workers.podState("a"), "terminating");
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), ["sync", "terminating"]);
  const terminating = h.calls[1]!;
  assert.equal(terminating.ctx.gracePeriodSeconds, 5, "min of requested 5 and pod's 30");
  assert.equal(terminating.ctx.signal.aborted, false, "a fresh signal");
  assert.equal(versionOf(terminating.ctx), "a:v2", "the newest spec");
  terminating.done.resolve({ isTerminal: false });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), ["sync", "terminating", "terminated"]);
  assert.equal(h.workers.podState("a"), "terminated");
  h.calls[2]!.done.resolve({ isTerminal: false });
  await flush();
  h.clock.tick(3_600_000);
  assert.deepEqual(h.workers.podsDueForSync(), [], "a finished pod is never due again");
  assert.equal(h.workers.syncKnownPods(new Set()).has("a"), false, "finished: forgotten");
  assert.ok(!h.lines.some((l) => l.includes("Error syncing pod")), "a cancelled sync is no error");
});

Deno.test("PodWorkers retries a failing syncTerminatingPod and never shortens back to sync", async () => {
  const h = harness();
  h.auto.add("sync");
  h.workers.updatePod({ type: "create", pod: makePod("a") });
  await flush();
  h.workers.updatePod({ type: "kill", pod: makePod("a"), gracePeriodSeconds: 20 });
  await flush();
  h.calls[1]!.done.reject(new Error("StopContainer: deadline exceeded"));
  await flush();
  assert.equal(h.workers.podState("a"), "terminating");
  // A longer grace period is ignored; a plain resync stays a termination.
  h.workers.updatePod({ type: "kill", pod: makePod("a"), gracePeriodSeconds: 40 });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), ["sync", "terminating", "terminating"]);
  assert.equal(h.calls[2]!.ctx.gracePeriodSeconds, 20);
  // A shorter one aborts the running attempt and is used for the next.
  abortable(h.calls[2]!);
  h.workers.updatePod({ type: "kill", pod: makePod("a"), gracePeriodSeconds: 2 });
  assert.equal(h.calls[2]!.ctx.signal.aborted, true);
  await flush();
  assert.equal(h.calls[3]!.kind, "terminating");
  assert.equal(h.calls[3]!.ctx.gracePeriodSeconds, 2);
  h.calls[3]!.done.resolve({ isTerminal: false });
  await flush();
  h.calls[4]!.done.reject(new Error("unmount failed"));
  await flush();
  assert.equal(h.workers.podState("a"), "terminated");
  h.workers.updatePod({ type: "sync", pod: makePod("a") });
  await flush();
  assert.deepEqual(h.calls.slice(4).map((c) => c.kind), ["terminated", "terminated"]);
  h.calls[5]!.done.resolve({ isTerminal: false });
  await flush();
  assert.equal(h.of("sync").length, 1, "syncPod never ran again");
  assert.equal(h.workers.syncKnownPods(new Set()).has("a"), false, "finished: forgotten");
});

Deno.test("PodWorkers: a terminated pod ignores later updates for its UID until syncKnownPods forgets it", async () => {
  const h = harness();
  h.auto.add("sync").add("terminating").add("terminated");
  h.workers.updatePod({ type: "create", pod: makePod("a") });
  await flush();
  h.workers.updatePod({ type: "kill", pod: makePod("a") });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), ["sync", "terminating", "terminated"]);
  assert.equal(h.calls[1]!.ctx.gracePeriodSeconds, 30, "the pod's own grace period");
  for (const type of ["update", "sync", "kill"] as const) {
    h.workers.updatePod({ type, pod: makePod("a", "again") });
  }
  await flush();
  assert.equal(h.calls.length, 3, "finished: nothing runs again");
  assert.equal(h.workers.podState("a"), "terminated");
  // Still desired: the history is kept, so the UID cannot start again.
  assert.equal(h.workers.syncKnownPods(new Set(["a"])).get("a")?.state, "terminated");

  // A create for the same UID (a static pod with a fixed UID) only asks for a restart...
  h.workers.updatePod({ type: "create", pod: makePod("a", "again") });
  await flush();
  assert.equal(h.calls.length, 3);
  // ...which the next syncKnownPods honours by forgetting the finished worker.
  assert.equal(h.workers.syncKnownPods(new Set(["a"])).has("a"), false);
  assert.equal(h.workers.podState("a"), undefined);
  h.workers.updatePod({ type: "create", pod: makePod("a", "v2") });
  await flush();
  assert.equal(versionOf(h.calls[3]!.ctx), "a:v2");
  assert.equal(h.workers.podState("a"), "sync");
});

Deno.test("PodWorkers.syncKnownPods() terminates undesired pods and forgets them once finished", async () => {
  const h = harness();
  h.auto.add("terminating").add("terminated");
  h.workers.updatePod({ type: "create", pod: makePod("keep") });
  h.workers.updatePod({ type: "create", pod: makePod("drop") });
  await flush();
  const dropSync = h.calls.find((c) => c.ctx.pod.metadata.uid === "drop")!;
  abortable(dropSync);
  const known = h.workers.syncKnownPods(new Set(["keep"]));
  assert.deepEqual(known.get("keep"), {
    state: "sync",
    orphan: false,
    hasConfig: true,
    static: false,
  });
  assert.equal(known.get("drop")?.orphan, true);
  assert.equal(known.get("drop")?.state, "terminating");
  assert.equal(dropSync.ctx.signal.aborted, true, "the running sync is cancelled");
  await flush();
  const term = h.of("terminating");
  assert.equal(term.length, 1);
  assert.equal(term[0]!.ctx.pod.metadata.uid, "drop");
  assert.equal(term[0]!.ctx.gracePeriodSeconds, 30);

  const after = h.workers.syncKnownPods(new Set(["keep"]));
  assert.deepEqual([...after.keys()], ["keep"]);
  assert.equal(h.workers.podState("drop"), undefined);
  assert.equal(h.workers.podState("keep"), "sync");
});

Deno.test("PodWorkers moves a pod whose syncPod reports it terminal through termination", async () => {
  const h = harness();
  h.auto.add("terminating").add("terminated");
  h.workers.updatePod({ type: "create", pod: makePod("job") });
  await flush();
  h.calls[0]!.done.resolve({ isTerminal: true });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), ["sync", "terminating", "terminated"]);
  assert.equal(h.calls[1]!.ctx.gracePeriodSeconds, 30);
  assert.equal(h.workers.syncKnownPods(new Set()).has("job"), false, "finished: forgotten");
});

Deno.test("PodWorkers.updatePod() starts termination for a deletion timestamp with the apiserver's grace period", async () => {
  const h = harness();
  h.auto.add("terminating");
  h.workers.updatePod({
    type: "update",
    pod: makePod("a", "v1", {
      deletionTimestamp: "2026-01-01T00:00:00Z",
      deletionGracePeriodSeconds: 0,
    }),
  });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), ["terminating", "terminated"]);
  assert.equal(h.calls[0]!.ctx.gracePeriodSeconds, 1, "never below 1");
});

Deno.test("PodWorkers kills an orphaned runtime pod once and then forgets it", async () => {
  const h = harness();
  h.auto.add("terminating");
  const running: RuntimePodStatus = {
    uid: "orphan",
    name: "old",
    namespace: "default",
    sandboxes: [],
    containers: [],
  };
  const synthetic = makePod("orphan");
  h.workers.updatePod({ type: "sync", pod: synthetic, runningPod: running });
  await flush();
  assert.equal(h.calls.length + h.runtimeCalls.length, 0, "runtime pods can only be killed");
  h.workers.updatePod({ type: "kill", pod: synthetic, runningPod: running });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.kind), [], "no spec: syncTerminatingPod never runs");
  assert.equal(h.runtimeCalls.length, 1, "syncTerminatingRuntimePod runs once");
  assert.equal(h.runtimeCalls[0]!.runningPod, running);
  assert.equal(h.runtimeCalls[0]!.gracePeriodSeconds, 30);
  assert.equal(h.runtimeCalls[0]!.updateType, "kill");
  assert.equal(h.workers.podState("orphan"), undefined, "no syncTerminatedPod, no history");
});

Deno.test("PodWorkers passes the runtime status newer than the last sync when given a podStatus source", async () => {
  const asked: [string, number][] = [];
  const status: RuntimePodStatus = {
    uid: "a",
    name: "p",
    namespace: "d",
    sandboxes: [],
    containers: [],
  };
  const h = harness({
    podStatus: (uid, minTime) => {
      asked.push([uid, minTime]);
      return Promise.resolve(status);
    },
  });
  h.auto.add("sync");
  h.workers.updatePod({ type: "create", pod: makePod("a") });
  await flush();
  h.clock.tick(500);
  const firstEnd = h.clock.now();
  h.workers.updatePod({ type: "sync", pod: makePod("a") });
  await flush();
  assert.deepEqual(asked, [["a", 0], ["a", firstEnd - 500]]);
  assert.equal(h.calls[0]!.ctx.podStatus, status);
});

Deno.test("PodWorkers starts a static pod only after the old UID of the same name terminated", async () => {
  const h = harness();
  h.auto.add("sync").add("terminated");
  const staticPod = (uid: string) =>
    makePod(uid, "v", { name: "etcd", annotations: { "kubernetes.io/config.source": "file" } });
  h.workers.updatePod({ type: "create", pod: staticPod("old") });
  await flush();
  h.workers.updatePod({ type: "create", pod: staticPod("new") });
  await flush();
  assert.deepEqual(h.calls.map((c) => c.ctx.pod.metadata.uid), ["old"], "new waits");
  assert.equal(msUntilDue(h, "new"), 10_000);
  h.workers.updatePod({ type: "kill", pod: staticPod("old") });
  await flush();
  h.calls[1]!.done.resolve({ isTerminal: false }); // old's syncTerminatingPod
  await flush();
  h.workers.updatePod({ type: "sync", pod: staticPod("new") });
  await flush();
  assert.deepEqual(h.calls.map((c) => `${c.kind}:${c.ctx.pod.metadata.uid}`), [
    "sync:old",
    "terminating:old",
    "terminated:old",
    "sync:new",
  ]);
});

Deno.test("PodWorkers.stop() aborts running syncs and stopped() waits for them", async () => {
  const h = harness();
  h.workers.updatePod({ type: "create", pod: makePod("a") });
  await flush();
  abortable(h.calls[0]!);
  h.workers.stop();
  assert.equal(h.calls[0]!.ctx.signal.aborted, true);
  await h.workers.stopped();
  h.workers.updatePod({ type: "update", pod: makePod("a", "v2") });
  await flush();
  assert.equal(h.calls.length, 1, "no work after stop()");
});

Deno.test("effectiveGracePeriod() only shrinks and never goes below 1", () => {
  const pod = makePod("a");
  assert.deepEqual(effectiveGracePeriod(0, pod), { seconds: 30, shortened: false });
  assert.deepEqual(effectiveGracePeriod(0, pod, 10), { seconds: 10, shortened: false });
  assert.deepEqual(effectiveGracePeriod(10, pod, 20), { seconds: 10, shortened: false });
  assert.deepEqual(effectiveGracePeriod(10, pod, 3), { seconds: 3, shortened: true });
  assert.deepEqual(effectiveGracePeriod(10, pod, 0), { seconds: 1, shortened: true });
  const deleting = makePod("a", "v", { deletionGracePeriodSeconds: 7 });
  assert.deepEqual(effectiveGracePeriod(0, deleting, 9), { seconds: 7, shortened: false });
  const bare: Pod = { metadata: { uid: "b" }, spec: { containers: [] } };
  assert.deepEqual(effectiveGracePeriod(0, bare), { seconds: 30, shortened: false });
});
