import assert from "node:assert/strict";
import type {
  RuntimeContainerState,
  RuntimePodStatus,
  RuntimeSandbox,
} from "../../lib/kuberuntime/types.ts";
import fc from "fast-check";
import {
  diffPod,
  diffPodSnapshots,
  EventChannel,
  generateEvents,
  GenericPleg,
  type PlegContainerState,
  type PodLifecycleEvent,
  PodStatusUnavailableError,
} from "../../lib/pleg/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";
import {
  fakePodRuntime,
  flush,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
} from "../kit/mod.ts";

function sandbox(id: string, state: RuntimeSandbox["state"], ip = ""): RuntimeSandbox {
  return runtimeSandbox({ id, state, ip });
}

function pod(
  uid: string,
  containers: [string, RuntimeContainerState][],
  sandboxes: RuntimeSandbox[] = [],
): RuntimePodStatus {
  return runtimePodStatus({
    uid,
    name: `pod-${uid}`,
    sandboxes,
    containers: containers.map(([id, state]) =>
      runtimeContainer({ name: `c-${id}`, image: "busybox" }, {
        id,
        sandboxId: sandboxes[0]?.id ?? "",
        state,
        createdAt: 1,
        imageRef: "sha256:1",
        hash: "h",
      })
    ),
  });
}

function snapshot(...pods: RuntimePodStatus[]): Map<string, RuntimePodStatus> {
  return new Map(pods.map((p) => [p.uid, p]));
}

function kinds(events: PodLifecycleEvent[]): string[] {
  return events.map((e) => `${e.podUID}/${e.data}:${e.type}`);
}

function drain(channel: EventChannel<PodLifecycleEvent>): PodLifecycleEvent[] {
  const out: PodLifecycleEvent[] = [];
  for (let e = channel.tryReceive(); e; e = channel.tryReceive()) out.push(e);
  return out;
}

Deno.test("generateEvents() follows upstream's state table for every transition", () => {
  const states: PlegContainerState[] = ["non-existent", "running", "exited", "unknown"];
  const expected: Record<string, string[]> = {
    "non-existent>running": ["ContainerStarted"],
    "non-existent>exited": ["ContainerDied"],
    "non-existent>unknown": ["ContainerChanged"],
    "running>exited": ["ContainerDied"],
    "running>unknown": ["ContainerChanged"],
    "running>non-existent": ["ContainerDied", "ContainerRemoved"],
    "exited>running": ["ContainerStarted"],
    "exited>unknown": ["ContainerChanged"],
    "exited>non-existent": ["ContainerRemoved"],
    "unknown>running": ["ContainerStarted"],
    "unknown>exited": ["ContainerDied"],
    "unknown>non-existent": ["ContainerDied", "ContainerRemoved"],
  };
  for (const from of states) {
    for (const to of states) {
      const got = generateEvents("u", "c1", from, to);
      assert.deepEqual(got.map((e) => e.type), expected[`${from}>${to}`] ?? [], `${from}>${to}`);
      for (const e of got) assert.deepEqual([e.podUID, e.data], ["u", "c1"]);
    }
  }
});

Deno.test("diffPodSnapshots() maps CRI states the way upstream's relist does", () => {
  const old = snapshot(
    pod("a", [["c1", "running"], ["c2", "created"], ["c3", "exited"]], [sandbox("s1", "ready")]),
    pod("gone", [["g1", "running"], ["g2", "exited"]], [sandbox("gs", "notready")]),
  );
  const current = snapshot(
    pod("a", [["c1", "exited"], ["c2", "exited"], ["c4", "created"], ["c5", "running"]], [
      sandbox("s1", "notready"),
    ]),
    pod("new", [["n1", "running"]], [sandbox("ns", "ready")]),
  );
  const before = structuredClone([...old]);
  assert.deepEqual(kinds(diffPodSnapshots(old, current)), [
    "a/c1:ContainerDied", // running → exited
    "a/c2:ContainerDied", // created (unknown) → exited, never seen running
    "a/c3:ContainerRemoved", // exited → gone
    "a/s1:ContainerDied", // sandbox ready → notready counts as a container dying
    "a/c4:ContainerChanged", // new container in created state
    "a/c5:ContainerStarted",
    "new/n1:ContainerStarted",
    "new/ns:ContainerStarted",
    "gone/g1:ContainerDied", // vanished while running: died, then removed
    "gone/g1:ContainerRemoved",
    "gone/g2:ContainerRemoved",
    "gone/gs:ContainerRemoved",
  ]);
  assert.deepEqual([...old], before, "inputs are not modified");
  assert.deepEqual(diffPodSnapshots(current, current), []);
});

Deno.test("GenericPleg.relist() sends events and fetches status only for changed or new pods", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const pleg = new GenericPleg({ ...rt, clock });
  rt.pods = snapshot(
    pod("a", [["c1", "running"]], [sandbox("s1", "ready", "10.0.0.5")]),
    pod("b", [["c2", "exited"]]),
  );
  await pleg.relist();
  assert.deepEqual(rt.statusCalls.sort(), ["a", "b"]);
  assert.deepEqual(kinds(drain(pleg.events())), [
    "a/c1:ContainerStarted",
    "a/s1:ContainerStarted",
    "b/c2:ContainerDied",
  ]);
  assert.equal(pleg.getPodStatus("a").status?.containers[0]?.state, "running");

  rt.statusCalls = [];
  clock.tick(1000);
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, [], "nothing changed, no status calls");
  assert.deepEqual(drain(pleg.events()), []);

  // c3 appears in "created" state: ContainerChanged is computed (so the cache is
  // refreshed) but not delivered.
  rt.pods.set("a", pod("a", [["c3", "created"], ["c1", "running"]], [sandbox("s1", "ready")]));
  clock.tick(1000);
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, ["a"]);
  assert.deepEqual(drain(pleg.events()), []);
  assert.equal(pleg.getPodStatus("a").status?.containers.length, 2);
  assert.equal(pleg.getPodStatus("a").timestamp, clock.now());

  // b disappears: removal is sent and its cache entry dropped without a status call.
  rt.pods.delete("b");
  rt.statusCalls = [];
  clock.tick(1000);
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, []);
  assert.deepEqual(kinds(drain(pleg.events())), ["b/c2:ContainerRemoved"]);
  assert.deepEqual(pleg.getPodStatus("b"), { status: undefined, timestamp: 0 });
});

Deno.test("GenericPleg.relist() keeps a pod IP after its sandbox lost the network", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const pleg = new GenericPleg({ ...rt, clock });
  rt.pods = snapshot(pod("a", [["c1", "running"]], [sandbox("s1", "ready", "10.0.0.5")]));
  await pleg.relist();
  rt.pods = snapshot(pod("a", [["c1", "exited"]], [sandbox("s1", "notready", "")]));
  clock.tick(1000);
  await pleg.relist();
  const cached = pleg.getPodStatus("a").status;
  assert.equal(cached?.sandboxes[0]?.state, "notready");
  assert.equal(cached?.sandboxes[0]?.ip, "10.0.0.5");
});

Deno.test("GenericPleg start() retries after a failing listPods and health reflects only successful relists", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const lines: string[] = [];
  const durations: number[] = [];
  const pleg = new GenericPleg({
    ...rt,
    clock,
    logger: createLogger({ write: (l) => lines.push(l) }),
    onRelistDuration: (ms) => durations.push(ms),
  });
  rt.listError = new Error("connection refused");
  pleg.start();
  await flush();
  assert.equal(rt.listCalls, 1);
  assert.deepEqual(pleg.healthy(), { ok: false, message: "pleg has yet to be successful" });
  assert.ok(lines.some((l) => l.includes("Unable to retrieve pods") && l.includes("refused")));
  assert.deepEqual(durations, [0], "a failed relist is timed too");

  clock.tick(1000);
  await flush();
  assert.equal(rt.listCalls, 2);
  assert.equal(pleg.healthy().ok, false);

  rt.listError = undefined;
  rt.pods = snapshot(pod("a", [["c1", "running"]]));
  clock.tick(1000);
  await flush();
  assert.equal(rt.listCalls, 3);
  assert.deepEqual(pleg.healthy(), { ok: true, message: "" });
  assert.deepEqual(kinds(drain(pleg.events())), ["a/c1:ContainerStarted"]);
  assert.equal(durations.length, 3);
  await pleg.stop();
  clock.tick(5000);
  await flush();
  assert.equal(rt.listCalls, 3, "no relist after stop()");
});

Deno.test("GenericPleg.healthy() goes bad when a relist stalls past the 3m threshold", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  let stall = false;
  let inFlight = 0;
  let maxInFlight = 0;
  const listPods = (signal: AbortSignal) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const done = () => inFlight--;
    if (!stall) return rt.listPods(signal).finally(done);
    return new Promise<Map<string, RuntimePodStatus>>((_, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason));
    }).finally(done);
  };
  const pleg = new GenericPleg({ ...rt, listPods, clock });
  pleg.start();
  await flush();
  assert.equal(pleg.healthy().ok, true);
  stall = true;
  clock.tick(1000); // the next relist starts and hangs
  await flush();
  void pleg.relist(); // a manual relist waits behind the hung one
  clock.tick(179_000);
  await flush();
  assert.equal(maxInFlight, 1, "relists never overlap");
  assert.deepEqual(pleg.healthy(), { ok: true, message: "" }, "exactly at the threshold is ok");
  clock.tick(1000);
  assert.deepEqual(pleg.healthy(), {
    ok: false,
    message: "pleg was last seen active 3m1s ago; threshold is 3m0s",
  });
  await pleg.stop();
  assert.equal(inFlight, 0, "stop() aborted the hung relist");
});

Deno.test("GenericPleg.relist() retries a pod whose status fetch failed and sends its events only then", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const pleg = new GenericPleg({ ...rt, clock });
  rt.pods = snapshot(pod("a", [["c1", "running"]]), pod("b", [["c2", "running"]]));
  rt.statusError.set("a", new Error("ContainerStatus: deadline exceeded"));
  await pleg.relist();
  assert.deepEqual(kinds(drain(pleg.events())), ["b/c2:ContainerStarted"]);
  assert.ok(pleg.getPodStatus("a").error instanceof Error);
  await assert.rejects(pleg.waitNewerThan("a", 0), PodStatusUnavailableError);

  rt.statusError.clear();
  rt.statusCalls = [];
  clock.tick(1000);
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, ["a"], "only the failed pod is inspected again");
  assert.deepEqual(kinds(drain(pleg.events())), ["a/c1:ContainerStarted"]);
  assert.equal(pleg.getPodStatus("a").error, undefined);
});

Deno.test("GenericPleg drops events when the buffer is full and logs each drop", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const lines: string[] = [];
  const pleg = new GenericPleg({
    ...rt,
    clock,
    eventCapacity: 2,
    logger: createLogger({ write: (l) => lines.push(l) }),
  });
  rt.pods = snapshot(pod("a", [["c1", "running"], ["c2", "running"], ["c3", "running"]]));
  await pleg.relist();
  assert.equal(pleg.events().length, 2);
  assert.equal(pleg.droppedEvents, 1);
  assert.equal(lines.filter((l) => l.includes("Event channel is full")).length, 1);
  assert.deepEqual(kinds(drain(pleg.events())), ["a/c1:ContainerStarted", "a/c2:ContainerStarted"]);
});

Deno.test("GenericPleg.waitNewerThan() waits for a relist after minTime", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const pleg = new GenericPleg({ ...rt, clock });
  rt.pods = snapshot(pod("a", [["c1", "running"]]));
  await pleg.relist();
  const syncedAt = clock.now();

  const seen: { a?: RuntimePodStatus | undefined; absent?: RuntimePodStatus | undefined } = {};
  void pleg.waitNewerThan("a", syncedAt).then((s) => (seen.a = s));
  void pleg.waitNewerThan("absent", syncedAt).then((s) => (seen.absent = s));
  await flush();
  assert.equal("a" in seen, false, "the cached status is not newer than minTime");

  // Unchanged pod: no status call, but the relist's global timestamp satisfies the wait.
  clock.tick(1000);
  rt.statusCalls = [];
  await pleg.relist();
  await flush();
  assert.deepEqual(rt.statusCalls, []);
  assert.equal(seen.a?.uid, "a");
  assert.ok("absent" in seen && seen.absent === undefined, "nothing runs for that pod");

  const ctl = new AbortController();
  const waiting = pleg.waitNewerThan("a", clock.now(), ctl.signal);
  ctl.abort(new Error("worker stopped"));
  await assert.rejects(waiting, /worker stopped/);

  // Already satisfied: resolves without a relist.
  assert.equal((await pleg.waitNewerThan("a", syncedAt))?.uid, "a");
});

Deno.test("EventChannel.next() hands items to a waiting receiver and ends after close()", async () => {
  const ch = new EventChannel<number>(1);
  const waiting = ch.next();
  assert.equal(ch.send(1), true);
  assert.deepEqual(await waiting, { value: 1, done: false });
  assert.equal(ch.send(2), true);
  assert.equal(ch.send(3), false, "full");
  ch.close();
  assert.deepEqual(await ch.next(), { value: 2, done: false });
  assert.deepEqual(await ch.next(), { value: undefined, done: true });
  const ctl = new AbortController();
  const open = new EventChannel<number>(1);
  const pending = open.next(ctl.signal);
  ctl.abort(new Error("bye"));
  await assert.rejects(pending, /bye/);
});

Deno.test("GenericPleg.relist() drops the failed cache entry of a pod that vanished before a retry", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const pleg = new GenericPleg({ ...rt, clock });
  rt.pods = snapshot(pod("a", [["c1", "running"]]));
  rt.statusError.set("a", new Error("ContainerStatus: not found"));
  await pleg.relist();
  assert.equal(pleg.cache.has("a"), true);
  rt.pods.clear();
  rt.statusCalls = [];
  clock.tick(1000);
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, []);
  assert.equal(pleg.cache.has("a"), false);
  assert.deepEqual(drain(pleg.events()), [], "it was never reported, so nothing to remove");
  assert.equal(await pleg.waitNewerThan("a", 0), undefined);
});

Deno.test("GenericPleg.start() after stop() keeps a single relist timer", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  const pleg = new GenericPleg({ ...rt, clock });
  pleg.start();
  void pleg.stop();
  pleg.start();
  await flush();
  const before = rt.listCalls;
  clock.tick(1000);
  await flush();
  assert.equal(rt.listCalls, before + 1);
  await pleg.stop();
});

Deno.test("GenericPleg.requestReinspect() fetches a pod's status at the next relist though no container event happened", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime({ pods: snapshot(pod("a", [["c1", "running"]])) });
  const pleg = new GenericPleg({ ...rt, clock });
  await pleg.relist();
  rt.statusCalls = [];
  // A resize changed the container's resources: no lifecycle event shows it.
  rt.pods.get("a")!.containers[0]!.resources = { cpuRequest: 25 };
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, []);
  pleg.requestReinspect("a");
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, ["a"]);
  assert.deepEqual(pleg.getPodStatus("a").status?.containers[0]?.resources, { cpuRequest: 25 });
  // Once: the relist after that fetches nothing again.
  rt.statusCalls = [];
  await pleg.relist();
  assert.deepEqual(rt.statusCalls, []);
});

Deno.test("diffPod() gives the state table's events for any two snapshots of a pod, unchanged ones included", () => {
  // The oracle: every id of both snapshots (old first), mapped to PLEG states as
  // upstream's relist does, through generateEvents.
  const stateOf = (p: RuntimePodStatus | undefined, id: string): PlegContainerState => {
    const c = p?.containers.find((x) => x.id === id);
    if (c) return c.state === "running" ? "running" : c.state === "exited" ? "exited" : "unknown";
    const s = p?.sandboxes.find((x) => x.id === id);
    return s ? (s.state === "ready" ? "running" : "exited") : "non-existent";
  };
  const oracle = (old?: RuntimePodStatus, current?: RuntimePodStatus) => {
    const ids = new Set<string>();
    for (const p of [old, current]) {
      for (const x of [...(p?.containers ?? []), ...(p?.sandboxes ?? [])]) ids.add(x.id);
    }
    return [...ids].flatMap((id) =>
      generateEvents("u", id, stateOf(old, id), stateOf(current, id))
    );
  };
  const containerState = fc.constantFrom<RuntimeContainerState>(
    "running",
    "exited",
    "created",
    "unknown",
  );
  const snapshotOf = fc.option(
    fc.record({
      containers: fc.uniqueArray(fc.tuple(fc.constantFrom("c1", "c2", "c3"), containerState), {
        selector: ([id]) => id,
        maxLength: 3,
      }),
      sandboxes: fc.uniqueArray(
        fc.tuple(
          fc.constantFrom("s1", "s2"),
          fc.constantFrom<RuntimeSandbox["state"]>("ready", "notready"),
        ),
        { selector: ([id]) => id, maxLength: 2 },
      ),
    }).map(({ containers, sandboxes }) =>
      pod("u", containers, sandboxes.map(([id, state]) => sandbox(id, state)))
    ),
    { nil: undefined },
  );
  fc.assert(
    fc.property(snapshotOf, snapshotOf, fc.boolean(), (old, current, same) => {
      // Half the cases: the current snapshot a copy of the old, as most relists find.
      const now = same && old ? structuredClone(old) : current;
      assert.deepEqual(diffPod("u", old, now), oracle(old, now));
    }),
    { numRuns: 2000, seed: 20261203 },
  );
});

Deno.test("GenericPleg.relistSoon() relists at once, once more after one in flight, 200 ms apart at least", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  let hold: (() => void) | undefined;
  const listPods = (signal: AbortSignal) => {
    if (!hold) return rt.listPods(signal);
    return new Promise<Map<string, RuntimePodStatus>>((resolve) => {
      const go = hold!;
      hold = () => (go(), resolve(rt.listPods(signal)));
    });
  };
  const pleg = new GenericPleg({ ...rt, listPods, clock });
  pleg.relistSoon();
  await flush();
  assert.equal(rt.listCalls, 0, "nothing while stopped");
  pleg.start();
  await flush();
  assert.equal(rt.listCalls, 1);

  // Half-way through the period, a container dies: the relist comes now, with its event.
  clock.tick(400);
  rt.pods = snapshot(pod("a", [["c1", "exited"]]));
  pleg.relistSoon();
  await flush();
  assert.equal(rt.listCalls, 2);
  assert.deepEqual(kinds(drain(pleg.events())), ["a/c1:ContainerDied"]);
  // The period starts over from there: not at the old tick, a full period later.
  clock.tick(600);
  await flush();
  assert.equal(rt.listCalls, 2);
  clock.tick(400);
  await flush();
  assert.equal(rt.listCalls, 3);

  // Three deaths while a relist is in flight: one more relist after it, 200 ms after the
  // start of the one before, not three.
  hold = () => {};
  clock.tick(1000);
  await flush();
  assert.equal(rt.listCalls, 3, "the relist waits on its list call");
  pleg.relistSoon();
  pleg.relistSoon();
  pleg.relistSoon();
  const release = hold;
  hold = undefined;
  release();
  await flush();
  assert.equal(rt.listCalls, 4);
  clock.tick(199);
  await flush();
  assert.equal(rt.listCalls, 4);
  clock.tick(1);
  await flush();
  assert.equal(rt.listCalls, 5);

  // A death 50 ms after a relist began waits out the gap; a second one adds nothing.
  clock.tick(50);
  pleg.relistSoon();
  pleg.relistSoon();
  await flush();
  assert.equal(rt.listCalls, 5);
  clock.tick(149);
  await flush();
  assert.equal(rt.listCalls, 5);
  clock.tick(1);
  await flush();
  assert.equal(rt.listCalls, 6);
  // Then the period, from that relist.
  clock.tick(999);
  await flush();
  assert.equal(rt.listCalls, 6);
  clock.tick(1);
  await flush();
  assert.equal(rt.listCalls, 7);
  await pleg.stop();
});

Deno.test("GenericPleg.containerExited() relists each gap until the runtime lists the container exited, for 2 s at most", async () => {
  const clock = new FakeClock();
  const rt = fakePodRuntime();
  rt.pods = snapshot(pod("a", [["c1", "running"]]), pod("b", [["c2", "running"]]));
  const pleg = new GenericPleg({ ...rt, clock });
  pleg.start();
  await flush();
  assert.equal(rt.listCalls, 1);
  drain(pleg.events());

  // The exit event comes before the runtime's own listing shows it.
  clock.tick(300);
  pleg.containerExited("c1");
  await flush();
  assert.equal(rt.listCalls, 2);
  clock.tick(200);
  await flush();
  assert.equal(rt.listCalls, 3, "still running: again after the gap");
  rt.pods = snapshot(pod("a", [["c1", "exited"]]), pod("b", [["c2", "running"]]));
  clock.tick(200);
  await flush();
  assert.equal(rt.listCalls, 4);
  assert.deepEqual(kinds(drain(pleg.events())), ["a/c1:ContainerDied"]);
  clock.tick(999);
  await flush();
  assert.equal(rt.listCalls, 4, "then the period");

  // An exit the runtime never shows: relists every gap for 2 s, then only the period.
  clock.tick(1);
  await flush();
  assert.equal(rt.listCalls, 5);
  pleg.containerExited("c2");
  await flush();
  assert.equal(rt.listCalls, 5, "within the gap of the relist that just ran");
  for (let t = 0; t < 2400; t += 200) {
    clock.tick(200);
    await flush();
  }
  const settled = rt.listCalls;
  assert.equal(settled, 5 + 11, "one each 200 ms from 0.2 to 2.2 s");
  // The last one ran at 2.2 s: the next is the period's, at 3.2 s.
  clock.tick(799);
  await flush();
  assert.equal(rt.listCalls, settled, "no more relists for it");
  clock.tick(1);
  await flush();
  assert.equal(rt.listCalls, settled + 1);
  await pleg.stop();
});
