/**
 * ContainerGC's selection rules over a runtime the test fills by hand: which
 * dead containers, sandboxes and pod log directories go under upstream's
 * GCPolicy (MinAge, MaxPerPodContainer, MaxContainers) and its pod state
 * (deleted, terminated, unknown), and the periodic run on a fake clock.
 */

import assert from "node:assert/strict";
import {
  ContainerGC,
  type ContainerGCOptions,
  type ContainerGCPolicy,
  type ContainerGCRuntime,
  podUIDFromLogsDirectory,
  type RuntimeContainer,
  type RuntimePodStatus,
  type RuntimeSandbox,
} from "../../lib/kuberuntime/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { PodWorkers } from "../../lib/pod_workers/mod.ts";
import {
  advance,
  flushUntil,
  pathExists,
  recordingEvents,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  settle,
  waitFor,
  withTempDir,
} from "../kit/mod.ts";

const NOW = Date.UTC(2026, 0, 1);

/** A dead instance of container `name` created `agoMs` before NOW. */
function dead(name: string, agoMs: number, sandboxId = "sb1"): RuntimeContainer {
  return runtimeContainer({ name }, {
    id: `${name}-${agoMs}`,
    sandboxId,
    state: "exited",
    createdAt: NOW - agoMs,
  });
}

/** A runtime that lists what the test put in `pods` and records what it removed. */
class FakeGCRuntime implements ContainerGCRuntime {
  pods = new Map<string, RuntimePodStatus>();
  removedContainers: string[] = [];
  removedSandboxes: string[] = [];
  symlinkCleanups = 0;
  /** Container ids whose removal fails. */
  failing = new Set<string>();
  listError: Error | undefined;

  add(pod: RuntimePodStatus): void {
    this.pods.set(pod.uid, pod);
  }

  listPods(): Promise<Map<string, RuntimePodStatus>> {
    if (this.listError) return Promise.reject(this.listError);
    const out = new Map<string, RuntimePodStatus>();
    for (const [uid, p] of this.pods) {
      const copy = structuredClone(p);
      copy.containers.sort((a, b) => b.createdAt - a.createdAt);
      copy.sandboxes.sort((a, b) => b.createdAt - a.createdAt);
      out.set(uid, copy);
    }
    return Promise.resolve(out);
  }

  removeContainer(_pod: unknown, c: RuntimeContainer): Promise<void> {
    if (this.failing.has(c.id)) return Promise.reject(new Error(`cannot remove ${c.id}`));
    this.removedContainers.push(c.id);
    for (const p of this.pods.values()) p.containers = p.containers.filter((x) => x.id !== c.id);
    return Promise.resolve();
  }

  removeSandbox(id: string): Promise<void> {
    this.removedSandboxes.push(id);
    for (const p of this.pods.values()) p.sandboxes = p.sandboxes.filter((s) => s.id !== id);
    return Promise.resolve();
  }

  cleanLogSymlinks(): Promise<string[]> {
    this.symlinkCleanups++;
    return Promise.resolve([]);
  }

  /** Ids of the containers left, sorted. */
  containerIds(): string[] {
    return [...this.pods.values()].flatMap((p) => p.containers.map((c) => c.id)).sort();
  }
}

/** Pod state: `content` and `runtime` list the UIDs whose content / runtime may go. */
function podState(content: string[] = [], runtime: string[] = content) {
  return {
    shouldPodContentBeRemoved: (uid: string) => content.includes(uid),
    shouldPodRuntimeBeRemoved: (uid: string) => runtime.includes(uid),
  };
}

function gc(
  runtime: FakeGCRuntime,
  policy: Partial<ContainerGCPolicy> = {},
  extra: Partial<ContainerGCOptions> = {},
): ContainerGC {
  return new ContainerGC({
    runtime,
    podState: podState(),
    sourcesReady: () => true,
    podLogsDir: "/nonexistent/pod-logs",
    policy: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1, ...policy },
    clock: new FakeClock(NOW),
    logger: silentLogger,
    ...extra,
  });
}

function sandbox(id: string, agoMs: number, state: RuntimeSandbox["state"]): RuntimeSandbox {
  return runtimeSandbox({ id, state, createdAt: NOW - agoMs });
}

Deno.test("ContainerGC keeps the newest dead instance per container (MaxPerPodContainer 1) and never a running one", async () => {
  const rt = new FakeGCRuntime();
  rt.add(runtimePodStatus({
    uid: "u1",
    containers: [
      dead("app", 1000),
      dead("app", 2000),
      dead("app", 3000),
      dead("app", 4000),
      runtimeContainer({ name: "side" }, { id: "side-running", createdAt: NOW - 9000 }),
      dead("side", 10_000),
    ],
  }));
  await gc(rt).garbageCollect();
  assert.deepEqual(rt.containerIds(), ["app-1000", "side-10000", "side-running"]);
  // Oldest first, as upstream removes them.
  assert.deepEqual(rt.removedContainers, ["app-4000", "app-3000", "app-2000"]);
  assert.equal(rt.symlinkCleanups, 1);
});

Deno.test("ContainerGC leaves dead containers younger than MinAge out of the count", async () => {
  const rt = new FakeGCRuntime();
  rt.add(runtimePodStatus({
    containers: [
      dead("app", 10_000),
      dead("app", 30_000),
      dead("app", 120_000),
      dead("app", 180_000),
    ],
  }));
  await gc(rt, { minAgeMs: 60_000 }).garbageCollect();
  assert.deepEqual(rt.removedContainers, ["app-180000"]);
});

Deno.test("ContainerGC with MaxPerPodContainer 0 removes every dead container; -1 keeps them all", async () => {
  const containers = [dead("app", 1000), dead("app", 2000)];
  const none = new FakeGCRuntime();
  none.add(runtimePodStatus({ containers }));
  await gc(none, { maxPerPodContainer: 0 }).garbageCollect();
  assert.deepEqual(none.containerIds(), []);

  const all = new FakeGCRuntime();
  all.add(runtimePodStatus({ containers }));
  await gc(all, { maxPerPodContainer: -1 }).garbageCollect();
  assert.deepEqual(all.containerIds(), ["app-1000", "app-2000"]);
});

Deno.test("ContainerGC enforces MaxContainers by an equal share per container, then oldest first", async () => {
  const build = () => {
    const rt = new FakeGCRuntime();
    rt.add(runtimePodStatus({
      uid: "u1",
      containers: [dead("a", 1000), dead("a", 2000), dead("a", 3000), dead("a", 4000)],
    }));
    rt.add(runtimePodStatus({ uid: "u2", name: "db", containers: [dead("b", 1500)] }));
    rt.add(
      runtimePodStatus({ uid: "u3", name: "q", containers: [dead("c", 500), dead("c", 5000)] }),
    );
    return rt;
  };
  // 7 dead over 3 units, at most 4: each unit keeps floor(4/3) = 1, and 3 ≤ 4.
  const share = build();
  await gc(share, { maxPerPodContainer: -1, maxContainers: 4 }).garbageCollect();
  assert.deepEqual(share.containerIds(), ["a-1000", "b-1500", "c-500"]);

  // At most 2: one each is still 3, so the oldest of those (b, 1.5 s old) goes too.
  const oldest = build();
  await gc(oldest, { maxPerPodContainer: -1, maxContainers: 2 }).garbageCollect();
  assert.deepEqual(oldest.containerIds(), ["a-1000", "c-500"]);

  // Under the limit: nothing beyond the per-container cap.
  const under = build();
  await gc(under, { maxPerPodContainer: 2, maxContainers: 10 }).garbageCollect();
  assert.deepEqual(under.containerIds(), ["a-1000", "a-2000", "b-1500", "c-500", "c-5000"]);
});

Deno.test("ContainerGC removes every dead container and dead sandbox of a deleted pod, once all sources are ready", async () => {
  const build = () => {
    const rt = new FakeGCRuntime();
    rt.add(runtimePodStatus({
      uid: "gone",
      name: "old",
      sandboxes: [sandbox("gone-sb2", 1000, "notready"), sandbox("gone-sb1", 5000, "notready")],
      containers: [dead("app", 2000, "gone-sb2"), dead("app", 3000, "gone-sb2")],
    }));
    rt.add(runtimePodStatus({
      uid: "live",
      sandboxes: [sandbox("live-sb", 1000, "ready")],
      containers: [dead("web", 1000, "live-sb"), dead("web", 2000, "live-sb")],
    }));
    return rt;
  };
  const rt = build();
  await gc(rt, {}, { podState: podState(["gone"]) }).garbageCollect();
  assert.deepEqual(rt.containerIds(), ["web-1000"]);
  assert.deepEqual(rt.removedSandboxes.sort(), ["gone-sb1", "gone-sb2"]);

  // Before every source has been seen, a deleted pod's containers only follow the caps,
  // and a sandbox still holding a container stays.
  const early = build();
  await gc(early, {}, { podState: podState(["gone"]), sourcesReady: () => false }).garbageCollect();
  assert.deepEqual(early.containerIds(), ["app-2000", "web-1000"]);
  assert.deepEqual(early.removedSandboxes, ["gone-sb1"]);
});

Deno.test("ContainerGC keeps a live pod's newest sandbox and every ready or occupied one", async () => {
  const rt = new FakeGCRuntime();
  rt.add(runtimePodStatus({
    uid: "u1",
    sandboxes: [
      sandbox("newest-dead", 1000, "notready"),
      sandbox("occupied", 2000, "notready"),
      sandbox("empty", 3000, "notready"),
      sandbox("ready-old", 4000, "ready"),
    ],
    containers: [runtimeContainer({ name: "app" }, { id: "app-run", sandboxId: "occupied" })],
  }));
  await gc(rt).garbageCollect();
  assert.deepEqual(rt.removedSandboxes, ["empty"]);
});

Deno.test("deleteAllUnusedContainers() also empties a terminated pod that is not deleted", async () => {
  const build = () => {
    const rt = new FakeGCRuntime();
    rt.add(runtimePodStatus({
      uid: "done",
      sandboxes: [sandbox("done-sb", 1000, "notready")],
      containers: [dead("job", 1000, "done-sb"), dead("job", 2000, "done-sb")],
    }));
    return rt;
  };
  // Terminated (runtime may go) but not deleted (content stays).
  const state = podState([], ["done"]);
  const periodic = build();
  await gc(periodic, {}, { podState: state }).garbageCollect();
  assert.deepEqual(periodic.containerIds(), ["job-1000"]);
  assert.deepEqual(periodic.removedSandboxes, []);

  const reclaim = build();
  await gc(reclaim, {}, { podState: state }).deleteAllUnusedContainers();
  assert.deepEqual(reclaim.containerIds(), []);
  assert.deepEqual(reclaim.removedSandboxes, ["done-sb"]);
});

Deno.test("ContainerGC removes the log directories of pods that are gone, once all sources are ready", async () => {
  await withTempDir(async (dir) => {
    for (const d of ["default_web_u1", "default_old_u2", "u3"]) {
      await Deno.mkdir(`${dir}/${d}/app`, { recursive: true });
      await Deno.writeTextFile(`${dir}/${d}/app/0.log`, "x\n");
    }
    const rt = new FakeGCRuntime();
    let ready = false;
    const collector = gc(rt, {}, {
      podLogsDir: dir,
      podState: podState(["u2", "u3"]),
      sourcesReady: () => ready,
    });
    await collector.garbageCollect();
    assert.ok(await pathExists(`${dir}/default_old_u2`), "kept until all sources are ready");
    ready = true;
    await collector.garbageCollect();
    assert.ok(await pathExists(`${dir}/default_web_u1/app/0.log`));
    assert.ok(!await pathExists(`${dir}/default_old_u2`));
    assert.ok(!await pathExists(`${dir}/u3`));
    assert.equal(rt.symlinkCleanups, 2);
  });
  assert.equal(podUIDFromLogsDirectory("ns_name_1234-abcd"), "1234-abcd");
  assert.equal(podUIDFromLogsDirectory("1234-abcd"), "1234-abcd");
});

Deno.test("ContainerGC counts a failed removal as done and reports what failed", async () => {
  const rt = new FakeGCRuntime();
  rt.add(
    runtimePodStatus({ containers: [dead("app", 1000), dead("app", 2000), dead("app", 3000)] }),
  );
  rt.failing.add("app-3000");
  await gc(rt).garbageCollect();
  // The stuck one is not replaced by a newer one: the policy's count is kept.
  assert.deepEqual(rt.containerIds(), ["app-1000", "app-3000"]);

  rt.listError = new Error("runtime down");
  await assert.rejects(gc(rt).garbageCollect(), /evicting containers: runtime down/);
});

Deno.test("ContainerGC.start() collects at once and then every minute; a failure is a ContainerGCFailed event", async () => {
  const rt = new FakeGCRuntime();
  const clock = new FakeClock(NOW);
  const events = recordingEvents();
  rt.add(runtimePodStatus({ containers: [dead("app", 1000), dead("app", 2000)] }));
  // Sources not ready: no pod log directory is read, so every step is a promise of the fakes.
  const collector = gc(rt, {}, { clock, events, nodeName: "node1", sourcesReady: () => false });
  collector.start();
  await settle();
  assert.deepEqual(rt.removedContainers, ["app-2000"]);

  rt.pods.get("u1")!.containers.push(dead("app", 500));
  await advance(clock, 59_000);
  assert.deepEqual(rt.removedContainers, ["app-2000"], "not before the minute");
  await advance(clock, 1000);
  assert.deepEqual(rt.removedContainers, ["app-2000", "app-1000"]);

  rt.listError = new Error("runtime down");
  await advance(clock, 60_000);
  assert.equal(events.got.length, 1);
  assert.equal(events.got[0]!.type, "Warning");
  assert.equal(events.got[0]!.reason, "ContainerGCFailed");
  assert.equal(events.got[0]!.ref.name, "node1");
  assert.match(events.got[0]!.message, /runtime down/);
  await collector.stop();
  await advance(clock, 120_000);
  assert.equal(events.got.length, 1, "no run after stop()");
});

Deno.test("ContainerGC.start() collects again once pods are first synced, not a period later", async () => {
  const rt = new FakeGCRuntime();
  const clock = new FakeClock(NOW);
  // An exited container and a stopped sandbox of a pod deleted while the agent was down.
  rt.add(runtimePodStatus({
    uid: "gone",
    containers: [dead("app", 1000)],
    sandboxes: [sandbox("sb1", 2000, "notready")],
  }));
  let synced = false;
  const firstSync = Promise.withResolvers<void>();
  const collector = gc(rt, {}, {
    clock,
    sourcesReady: () => synced,
    podState: {
      shouldPodContentBeRemoved: () => synced,
      shouldPodRuntimeBeRemoved: () => synced,
      firstSync: () => firstSync.promise,
    },
  });
  collector.start();
  await settle();
  assert.deepEqual(rt.containerIds(), ["app-1000"], "before the sync nothing of it may go");

  await advance(clock, 5_000);
  synced = true;
  firstSync.resolve();
  // The collection's last step, after its read of the (missing) pod logs directory.
  await waitFor("the collection on the first sync", () => rt.symlinkCleanups === 2 || undefined, {
    intervalMs: 1,
    timeoutMs: 5_000,
  });
  assert.deepEqual(rt.removedContainers, ["app-1000"]);
  assert.deepEqual(rt.removedSandboxes, ["sb1"]);

  // Then every period after that collection, as before.
  rt.add(runtimePodStatus({ uid: "later", containers: [dead("app", 500)] }));
  await advance(clock, 59_000);
  assert.deepEqual(rt.removedContainers, ["app-1000"], "not before the period");
  await advance(clock, 1000);
  assert.deepEqual(rt.removedContainers, ["app-1000", "app-500"]);
  await collector.stop();
});

Deno.test("ContainerGC refuses a negative MinAge, as upstream's NewContainerGC", () => {
  assert.throws(() => gc(new FakeGCRuntime(), { minAgeMs: -1 }), RangeError);
});

Deno.test("PodWorkers tell GC what may go: unknown pods only once synced, a deleted pod once terminated", async () => {
  const workers = new PodWorkers({
    syncPod: () => new Promise(() => {}),
    syncTerminatingPod: () => Promise.resolve(),
    syncTerminatedPod: () => Promise.resolve(),
    syncTerminatingRuntimePod: () => Promise.resolve(),
    clock: new FakeClock(NOW),
  });
  assert.equal(workers.shouldPodContentBeRemoved("x"), false);
  assert.equal(workers.shouldPodRuntimeBeRemoved("x"), false);
  workers.updatePod({
    type: "create",
    pod: { metadata: { name: "p", namespace: "default", uid: "p1" }, spec: { containers: [] } },
  });
  workers.syncKnownPods(new Set(["p1"]));
  assert.equal(workers.shouldPodContentBeRemoved("x"), true, "unknown once synced");
  assert.equal(workers.shouldPodRuntimeBeRemoved("x"), true);
  assert.equal(workers.shouldPodContentBeRemoved("p1"), false, "a pod being synced keeps all");
  assert.equal(workers.shouldPodRuntimeBeRemoved("p1"), false);
  workers.updatePod({
    type: "update",
    pod: {
      metadata: {
        name: "d",
        namespace: "default",
        uid: "d1",
        deletionTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: { containers: [] },
    },
  });
  await flushUntil("the deleted pod terminated", () => workers.shouldPodRuntimeBeRemoved("d1"));
  assert.equal(workers.shouldPodContentBeRemoved("d1"), true);
  // A pod killed without deletion (a terminal phase, say) keeps its content.
  workers.updatePod({
    type: "kill",
    pod: { metadata: { name: "k", namespace: "default", uid: "k1" }, spec: { containers: [] } },
  });
  await flushUntil("the killed pod terminated", () => workers.shouldPodRuntimeBeRemoved("k1"));
  assert.equal(workers.shouldPodContentBeRemoved("k1"), false);
  workers.stop();
});
