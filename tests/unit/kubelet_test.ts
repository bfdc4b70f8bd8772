/**
 * The sync loop's own rules, with a fake runtime manager and a real PLEG over
 * fake runtime listings. (The same loop on real containerd: tests/integration.)
 */

import assert from "node:assert/strict";
import { Kubelet, type KubeletDeps, type KubeletSources } from "../../lib/agent/kubelet.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { PodUpdate } from "../../lib/config/mod.ts";
import { BackoffStore } from "../../lib/util/backoff.ts";
import type {
  KubeRuntimeManager,
  RuntimePodStatus,
  SyncPodResult,
} from "../../lib/kuberuntime/mod.ts";
import { EventChannel, GenericPleg } from "../../lib/pleg/mod.ts";
import type { ProbeManager, ProbeResultUpdate } from "../../lib/prober/mod.ts";
import { StatusManager } from "../../lib/status/mod.ts";
import { PredicateAdmitHandler, safeSysctls, SysctlAllowlist } from "../../lib/admission/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { SyncTracer } from "../../lib/trace/mod.ts";
import { silentLogger } from "../../lib/util/log.ts";
import type { Node } from "../../lib/api/cluster_types.ts";
import type { EventRecorder } from "../../lib/events/mod.ts";
import { CgroupfsManager, findCgroupHierarchies, PodCgroupManager } from "../../lib/cm/mod.ts";
import {
  advance,
  cgroupV1Tree,
  exitedContainer,
  fakePodRuntime,
  pathExists,
  podActions,
  probeResult,
  recordingEvents,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  settle,
  testPod,
  waitFor,
  withTempDir,
} from "../kit/mod.ts";

/** What the runtime holds for a running host-network pod: its sandbox "sb-<uid>". */
function runningPod(uid: string, name: string): RuntimePodStatus {
  return runtimePodStatus({
    uid,
    name,
    sandboxes: [runtimeSandbox({ id: `sb-${uid}`, hostNetwork: true })],
  });
}

/**
 * A runtime manager that records calls over a runtime the test fills by hand (an unknown
 * uid reads as an empty status, as on the real runtime).
 */
/** Failures the fake runtime manager reports, as step errors. */
interface RuntimeFaults {
  /** How many killPod calls fail (a KillContainer step error) before they succeed. */
  failedKills?: number;
  /** removePod's RemoveContainer step fails with this message, and nothing is removed. */
  removeError?: string;
}

function fakeRuntime(state: Map<string, RuntimePodStatus>, faults: RuntimeFaults = {}) {
  const calls: string[] = [];
  /** Every pod syncPod was given, in order. */
  const synced: Pod[] = [];
  /** Every killPod call: with or without a spec, and the grace period. */
  const kills: { name: string; withSpec: boolean; grace: number }[] = [];
  const runtime = fakePodRuntime({ pods: state, unknownPod: "empty" });
  const manager = {
    backoff: new BackoffStore(),
    syncPod(p: Pod) {
      calls.push(`sync ${p.metadata.name}`);
      synced.push(p);
      return Promise.resolve({
        actions: podActions({ sandboxId: "" }),
        steps: [],
        lastErrors: new Map(),
      });
    },
    killPod(p: Pod | undefined, running: RuntimePodStatus, grace: number) {
      calls.push(`kill ${running.name}`);
      kills.push({ name: running.name, withSpec: p !== undefined, grace });
      if ((faults.failedKills ?? 0) > 0) {
        faults.failedKills!--;
        const error = { reason: "KillContainerError", message: "rpc error: DeadlineExceeded" };
        return Promise.resolve([{ action: "KillContainer", target: "main", error }]);
      }
      return Promise.resolve([]);
    },
    removePod(running: RuntimePodStatus) {
      calls.push(`remove ${running.uid}`);
      if (faults.removeError !== undefined) {
        const error = { reason: "RemoveContainerError", message: faults.removeError };
        return Promise.resolve([{ action: "RemoveContainer", target: "main", error }]);
      }
      state.delete(running.uid);
      return Promise.resolve([]);
    },
    tearDownPodVolumes(uid: string) {
      calls.push(`teardown ${uid}`);
      return Promise.resolve();
    },
    getPodStatus: runtime.getPodStatus,
    listPods: runtime.listPods,
    // In-place resize: nothing is ever actuated differently here.
    isPodResizeInProgress: () => false,
    actuatedResources: () => undefined,
    removeOrphanedActuated: () => {},
  };
  return { calls, synced, kills, manager: manager as unknown as KubeRuntimeManager };
}

function setup(
  state: Map<string, RuntimePodStatus>,
  sourcesReady: () => boolean,
  extra: Partial<KubeletDeps> = {},
  faults: RuntimeFaults = {},
) {
  const clock = new FakeClock();
  const { calls, synced, kills, manager } = fakeRuntime(state, faults);
  const pleg = new GenericPleg({
    listPods: () => manager.listPods(),
    getPodStatus: (uid) => manager.getPodStatus(uid),
    clock,
  });
  const statuses = new StatusManager({ clock, logger: silentLogger });
  const kubelet = new Kubelet({
    runtime: manager,
    pleg,
    clock,
    logger: silentLogger,
    nodeName: "node",
    hostIP: "10.0.0.1",
    statuses,
    syncFrequencyMs: 60_000,
    ...extra,
  });
  // The config mux's side of the loop: tests push updates as the mux would.
  const updates = new EventChannel<PodUpdate>(100);
  const start = (more: Partial<KubeletSources> = {}) =>
    kubelet.start({ updates, seenAllSources: sourcesReady, ...more });
  return { clock, calls, synced, kills, kubelet, manager, pleg, statuses, updates, start };
}

Deno.test("handleHousekeeping() leaves unknown runtime pods alone until every source was seen", async () => {
  const state = new Map([["orphan-uid", runningPod("orphan-uid", "orphan")]]);
  let ready = false;
  const { clock, calls, kubelet, start } = setup(state, () => ready);
  start();
  await advance(clock, 2_100);
  await advance(clock, 2_100);
  assert.ok(!calls.some((c) => c.startsWith("kill")), `killed before sources were ready: ${calls}`);

  ready = true;
  await advance(clock, 2_100);
  await advance(clock, 1_000);
  assert.ok(calls.includes("kill orphan"), `orphan not killed: ${calls}`);
  assert.ok(calls.includes("remove orphan-uid"), `orphan not removed: ${calls}`);
  await kubelet.stop();
});

Deno.test("handleHousekeeping() leaves a pod with nothing running to the container GC, as upstream's runtime cache", async () => {
  const exited = runtimePodStatus({
    uid: "gone-uid",
    name: "gone",
    sandboxes: [runtimeSandbox({ id: "sb-gone-uid", hostNetwork: true, state: "notready" })],
    containers: [
      exitedContainer({ name: "main", image: "busybox" }, 0, { sandboxId: "sb-gone-uid" }),
    ],
  });
  const state = new Map([["gone-uid", exited], ["orphan-uid", runningPod("orphan-uid", "orphan")]]);
  const { clock, calls, kubelet, start } = setup(state, () => true);
  start();
  for (let i = 0; i < 3; i++) await advance(clock, 2_100);
  assert.ok(calls.includes("kill orphan"), `${calls}`);
  assert.ok(!calls.some((c) => c === "kill gone" || c === "remove gone-uid"), `${calls}`);
  await kubelet.stop();
});

Deno.test("handleHousekeeping() removes the dirs of pods nobody knows, once every source was seen", async () => {
  await withTempDir(async (rootDir) => {
    const orphan = "0f1e2d3c-4b5a-4968-8776-655443322110";
    const desired = "11111111-2222-4333-8444-555555555555";
    const running = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
    for (const uid of [orphan, desired, running]) {
      await Deno.mkdir(`${rootDir}/pods/${uid}/volumes/kubernetes.io~empty-dir/data`, {
        recursive: true,
      });
    }
    const state = new Map([[running, runningPod(running, "running")]]);
    let ready = false;
    const { clock, kubelet, start } = setup(state, () => ready, { rootDir });
    start();
    kubelet.handlePodUpdate({
      op: "ADD",
      source: "file",
      pods: [testPod({ name: "desired", uid: desired })],
    });
    await advance(clock, 2_100);
    await advance(clock, 2_100);
    assert.ok(await pathExists(`${rootDir}/pods/${orphan}`), "removed before sources were ready");
    ready = true;
    await advance(clock, 2_100);
    await waitFor(
      "the orphan's dir removed",
      async () => !(await pathExists(`${rootDir}/pods/${orphan}`)) || undefined,
      { timeoutMs: 5_000 },
    );
    await kubelet.stop();
    for (const uid of [desired, running]) {
      assert.ok(await pathExists(`${rootDir}/pods/${uid}/volumes`), `${uid} removed`);
    }
  });
});

Deno.test("handleHousekeeping() does not touch runtime pods that a source wants", async () => {
  const state = new Map([["keep-uid", runningPod("keep-uid", "keep")]]);
  const { clock, calls, kubelet, start } = setup(state, () => true);
  start();
  kubelet.handlePodUpdate({
    op: "ADD",
    source: "file",
    pods: [testPod({ name: "keep", uid: "keep-uid" })],
  });
  await advance(clock, 2_100);
  await advance(clock, 2_100);
  assert.ok(calls.includes("sync keep"));
  assert.ok(!calls.some((c) => c.startsWith("kill") || c.startsWith("remove")), `${calls}`);
  await kubelet.stop();
});

Deno.test("observeNow() relists and hands the stats provider a pod the runtime started since the last housekeeping", async () => {
  const state = new Map<string, RuntimePodStatus>();
  const observed: string[][] = [];
  const { clock, kubelet, start } = setup(state, () => true, {
    onPodsObserved: (pods) => observed.push(pods.map((p) => p.runtime.name)),
  });
  start();
  kubelet.handlePodUpdate({
    op: "ADD",
    source: "file",
    pods: [testPod({ name: "hog", uid: "hog-uid" })],
  });
  await advance(clock, 2_100);
  assert.ok(!observed.some((names) => names.includes("hog")), `${observed}`);
  // Started just now: no relist, no housekeeping yet.
  state.set("hog-uid", runningPod("hog-uid", "hog"));
  const before = observed.length;
  await kubelet.observeNow();
  assert.deepEqual(observed.slice(before), [["hog"]]);
  await kubelet.stop();
});

Deno.test("handlePodUpdate() REMOVE kills the pod, removes it and drops its status", async () => {
  const state = new Map([["gone-uid", runningPod("gone-uid", "gone")]]);
  const { clock, calls, kubelet, start } = setup(state, () => true);
  start();
  const p = testPod({ name: "gone", uid: "gone-uid" });
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [p] });
  await advance(clock, 1_100);
  assert.ok(kubelet.statuses.getPodStatus("gone-uid"), "status generated by the first sync");
  kubelet.handlePodUpdate({ op: "REMOVE", source: "file", pods: [p] });
  await advance(clock, 1_100);
  await advance(clock, 1_100);
  assert.ok(calls.includes("kill gone"), `${calls}`);
  assert.ok(calls.includes("remove gone-uid"), `${calls}`);
  assert.equal(kubelet.statuses.getPodStatus("gone-uid"), undefined);
  assert.deepEqual(kubelet.podsWithStatus(), []);
  await kubelet.stop();
});

Deno.test("syncLoopHealth() reports a loop that stopped ticking", async () => {
  const { clock, kubelet, start } = setup(new Map(), () => true);
  start();
  await advance(clock, 1_000);
  assert.equal(kubelet.syncLoopHealth(), undefined);
  await kubelet.stop();
  clock.tick(60_000);
  assert.match(
    kubelet.syncLoopHealth() ?? "",
    /sync loop took too long to respond: last activity 6\ds ago/,
  );
});

Deno.test("syncPod() reports a new pod as ContainerCreating before the runtime works on it, and Running right after it started the container", async () => {
  const state = new Map<string, RuntimePodStatus>();
  const reported: { phase: string; main: string }[] = [];
  const { calls, kubelet, manager, statuses, start } = setup(state, () => true);
  statuses.addSink({
    statusChanged: (uid) => {
      const status = statuses.getPodStatus(uid)!;
      const main = status.containerStatuses?.[0]?.state;
      reported.push({
        phase: status.phase ?? "",
        main: main?.running ? "running" : main?.waiting?.reason ?? "",
      });
    },
    statusRemoved: () => {},
  });
  let release = () => {};
  const released = new Promise<void>((r) => release = r);
  const plain = manager.syncPod.bind(manager);
  manager.syncPod = async (p: Pod, ...rest) => {
    const result = await plain(p, ...rest) as SyncPodResult;
    calls.push(`reported before the sync ended: ${JSON.stringify(reported)}`);
    await released;
    // The runtime now runs the container the sync started.
    const running = runningPod("new-uid", "new");
    running.containers.push(runtimeContainer({ name: "main", image: "busybox" }, {
      id: "c1",
      sandboxId: "sb-new-uid",
      createdAt: 2,
      startedAt: 3,
      imageRef: "busybox",
      hash: "",
    }));
    state.set("new-uid", running);
    return { ...result, steps: [{ action: "StartContainer", target: "main" }] };
  };
  start();
  await settle();
  kubelet.handlePodUpdate({
    op: "ADD",
    source: "file",
    pods: [testPod({ name: "new", uid: "new-uid" })],
  });
  await settle();
  assert.deepEqual(reported, [{ phase: "Pending", main: "ContainerCreating" }]);
  release();
  // No clock tick: no PLEG relist has seen the container yet.
  await settle();
  assert.deepEqual(reported.at(-1), { phase: "Running", main: "running" }, `${calls}`);
  assert.equal(kubelet.statuses.getPodStatus("new-uid")?.phase, "Running");
  await kubelet.stop();
});

Deno.test("syncPod() reports a container that died before the runtime restarts it, as upstream's SyncPod", async () => {
  const pod = testPod({ name: "web", uid: "w" });
  const spec = pod.spec.containers[0]!;
  const running = runningPod("w", "web");
  running.containers.push(runtimeContainer(spec, { id: "c1", sandboxId: "sb-w", startedAt: 1 }));
  const state = new Map([["w", running]]);
  const { clock, kubelet, manager, statuses, start } = setup(state, () => true);
  const main = () => statuses.getPodStatus("w")?.containerStatuses?.[0]?.state;
  let release = () => {};
  const released = new Promise<void>((r) => release = r);
  const seenBySync: string[] = [];
  const plain = manager.syncPod.bind(manager);
  manager.syncPod = async (p: Pod, observed: RuntimePodStatus, ...rest) => {
    if (observed.containers[0]?.state === "exited") {
      // What the status said when the runtime was asked to restart the container.
      seenBySync.push(main()?.terminated ? `terminated ${main()!.terminated!.exitCode}` : "");
      await released;
    }
    return await plain(p, observed, ...rest) as SyncPodResult;
  };
  start();
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [pod] });
  await advance(clock, 2_000);
  assert.ok(main()?.running, `main should run: ${JSON.stringify(main())}`);
  state.set("w", {
    ...running,
    containers: [exitedContainer(spec, 137, { id: "c1", sandboxId: "sb-w", startedAt: 1 })],
  });
  // The next relist (within a second) sees the exit and wakes the pod's worker.
  for (let i = 0; i < 10 && seenBySync.length === 0; i++) await advance(clock, 500, 500);
  assert.deepEqual(seenBySync, ["terminated 137"]);
  release();
  await settle();
  await kubelet.stop();
});

// ---------------------------------------------------------------------------
// Each input of the sync loop, fed through the loop itself (the config
// stream, PLEG's channel, the ticks, the probe subscription).

function versioned(name: string, uid: string, version: string): Pod {
  return testPod({ name, uid, metadata: { annotations: { version } } });
}

function versionOf(p: Pod): string {
  return p.metadata.annotations?.["version"] ?? "";
}

/** A prober whose results the test emits; it probes nothing. */
function fakeProbes() {
  let listener: ((u: ProbeResultUpdate) => void) | undefined;
  const probes = {
    onResult(l: (u: ProbeResultUpdate) => void) {
      listener = l;
      return () => void (listener = undefined);
    },
    addPod() {},
    removePod() {},
    cleanupPods() {},
    readiness() {
      return undefined;
    },
    startup() {
      return undefined;
    },
    liveness() {
      return undefined;
    },
    updateContainers() {},
    stopLivenessAndStartup() {},
    stop() {},
  };
  const emit = (podUID: string) => listener?.(probeResult({ podUID }));
  return { probes: probes as unknown as ProbeManager, emit };
}

Deno.test("config ADD and UPDATE from the sources' stream sync the pod with its newest spec", async () => {
  // An empty runtime: no PLEG event of the first relist adds a sync.
  const state = new Map<string, RuntimePodStatus>();
  const { clock, kubelet, synced, updates, start } = setup(state, () => true);
  start();
  updates.send({ op: "ADD", source: "file", pods: [versioned("web", "web-uid", "v1")] });
  await advance(clock, 1_000);
  assert.deepEqual(synced.map(versionOf), ["v1"]);
  updates.send({ op: "UPDATE", source: "file", pods: [versioned("web", "web-uid", "v2")] });
  await advance(clock, 1_000);
  assert.deepEqual(synced.map(versionOf), ["v1", "v2"]);
  assert.equal(versionOf(kubelet.podManager.get("web-uid")!), "v2");
  assert.equal(kubelet.podsWithStatus()[0]?.status?.phase, "Pending");
  await kubelet.stop();
});

Deno.test("config updates are handled in arrival order: ADD, UPDATE then REMOVE in one burst leaves the pod killed and forgotten", async () => {
  const state = new Map([["web-uid", runningPod("web-uid", "web")]]);
  const { clock, calls, kubelet, updates, start } = setup(state, () => true);
  start();
  updates.send({ op: "ADD", source: "file", pods: [versioned("web", "web-uid", "v1")] });
  updates.send({ op: "UPDATE", source: "file", pods: [versioned("web", "web-uid", "v2")] });
  updates.send({ op: "REMOVE", source: "file", pods: [versioned("web", "web-uid", "v2")] });
  for (let i = 0; i < 3; i++) await advance(clock, 1_000);
  assert.equal(kubelet.podManager.get("web-uid"), undefined);
  assert.ok(calls.includes("kill web"), `${calls}`);
  assert.ok(calls.includes("remove web-uid"), `${calls}`);
  assert.deepEqual(kubelet.podsWithStatus(), []);
  await kubelet.stop();
});

Deno.test("config DELETE keeps the pod known, kills it within deletionGracePeriodSeconds, and reports it terminated once reclaimed", async () => {
  const state = new Map([["db-uid", runningPod("db-uid", "db")]]);
  const { clock, calls, kills, kubelet, updates, start } = setup(state, () => true);
  start();
  const apiPod = testPod({ name: "db", uid: "db-uid" });
  updates.send({ op: "ADD", source: "api", pods: [apiPod] });
  await advance(clock, 1_000);
  assert.equal(kubelet.canBeDeleted("db-uid"), false);
  const deleting: Pod = {
    ...apiPod,
    metadata: {
      ...apiPod.metadata,
      deletionTimestamp: "2026-01-01T00:00:00Z",
      deletionGracePeriodSeconds: 5,
    },
  };
  updates.send({ op: "DELETE", source: "api", pods: [deleting] });
  for (let i = 0; i < 3; i++) await advance(clock, 1_000);
  assert.deepEqual(kills, [{ name: "db", withSpec: true, grace: 5 }]);
  assert.ok(calls.includes("remove db-uid"), `${calls}`);
  assert.ok(kubelet.podManager.get("db-uid"), "known until its API object goes");
  assert.equal(kubelet.canBeDeleted("db-uid"), true);
  assert.equal(kubelet.podsWithStatus()[0]?.status?.phase, "Failed", "the terminal status");
  await kubelet.stop();
});

/**
 * Sends `pod` from the API, then its deletion (grace period 5 s), with 3 s of fake time
 * for the kill and the terminated sync.
 */
async function addThenDelete(clock: FakeClock, updates: EventChannel<PodUpdate>, pod: Pod) {
  updates.send({ op: "ADD", source: "api", pods: [pod] });
  await advance(clock, 1_000);
  const deleting: Pod = {
    ...pod,
    metadata: {
      ...pod.metadata,
      deletionTimestamp: "2026-01-01T00:00:00Z",
      deletionGracePeriodSeconds: 5,
    },
  };
  updates.send({ op: "DELETE", source: "api", pods: [deleting] });
  for (let i = 0; i < 3; i++) await advance(clock, 1_000);
}

Deno.test("a deleted pod may leave the API once stopped with its volumes gone, though the runtime refuses to remove its containers (left to the GC)", async () => {
  const state = new Map([["db-uid", runningPod("db-uid", "db")]]);
  const { clock, calls, kubelet, updates, start } = setup(state, () => true, {}, {
    removeError: "cannot delete running task",
  });
  start();
  await addThenDelete(clock, updates, testPod({ name: "db", uid: "db-uid" }));
  const order = calls.filter((c) => /^(kill|teardown|remove) /.test(c));
  assert.deepEqual(order, ["kill db", "teardown db-uid", "remove db-uid"]);
  assert.ok(state.has("db-uid"), "the runtime kept what it refused to remove");
  assert.equal(kubelet.canBeDeleted("db-uid"), true);
  assert.equal(kubelet.podsWithStatus()[0]?.status?.phase, "Failed", "the terminal status");
  await kubelet.stop();
});

Deno.test("a failed kill fails the terminating sync: FailedKillPod, retried, and the API object stays until a kill succeeds", async () => {
  const state = new Map([["db-uid", runningPod("db-uid", "db")]]);
  const events = recordingEvents();
  const { clock, kills, kubelet, updates, start } = setup(state, () => true, { events }, {
    failedKills: 1,
  });
  start();
  await addThenDelete(clock, updates, testPod({ name: "db", uid: "db-uid" }));
  assert.equal(kills.length, 1);
  const failed = events.got.filter((e) => e.reason === "FailedKillPod");
  assert.deepEqual(failed.map((e) => [e.type, e.message]), [[
    "Warning",
    "error killing pod: KillContainer main: rpc error: DeadlineExceeded",
  ]]);
  assert.equal(kubelet.canBeDeleted("db-uid"), false);
  assert.equal(kubelet.podWorkers.podState("db-uid"), "terminating");
  // The worker's backoff after a failed sync, then the second kill succeeds.
  for (let i = 0; i < 16; i++) await advance(clock, 1_000);
  assert.equal(kills.length, 2);
  assert.equal(kubelet.canBeDeleted("db-uid"), true);
  await kubelet.stop();
});

Deno.test("a container the runtime still reports running after a successful kill keeps the pod terminating (CRI violation)", async () => {
  const main = runtimeContainer({ name: "main", image: "busybox" }, { sandboxId: "sb-db-uid" });
  const pod = runtimePodStatus({
    uid: "db-uid",
    name: "db",
    sandboxes: [runtimeSandbox({ id: "sb-db-uid", hostNetwork: true })],
    containers: [main],
  });
  const state = new Map([["db-uid", pod]]);
  const { clock, calls, kubelet, updates, start } = setup(state, () => true);
  start();
  await addThenDelete(clock, updates, testPod({ name: "db", uid: "db-uid" }));
  assert.ok(calls.includes("kill db"), `${calls}`);
  assert.equal(kubelet.podWorkers.podState("db-uid"), "terminating");
  assert.equal(kubelet.canBeDeleted("db-uid"), false);
  // Once the runtime reports it exited, the retried sync completes.
  state.set("db-uid", { ...pod, containers: [{ ...main, state: "exited", finishedAt: 1 }] });
  for (let i = 0; i < 16; i++) await advance(clock, 1_000);
  assert.equal(kubelet.canBeDeleted("db-uid"), true);
  await kubelet.stop();
});

Deno.test("config RECONCILE syncs the pod again", async () => {
  // An empty runtime: no PLEG event of the first relist adds a sync.
  const state = new Map<string, RuntimePodStatus>();
  const { clock, kubelet, synced, updates, start } = setup(state, () => true);
  start();
  const p = testPod({ name: "web", uid: "web-uid" });
  updates.send({ op: "ADD", source: "api", pods: [p] });
  await advance(clock, 1_000);
  assert.equal(synced.length, 1);
  updates.send({ op: "RECONCILE", source: "api", pods: [p] });
  await advance(clock, 1_000);
  assert.equal(synced.length, 2);
  await kubelet.stop();
});

Deno.test("a PLEG event syncs its pod; ContainerRemoved and events of unknown pods do not", async () => {
  // An empty runtime: no PLEG event of the first relist adds a sync.
  const state = new Map<string, RuntimePodStatus>();
  const { clock, kubelet, pleg, synced, updates, start } = setup(state, () => true);
  start();
  updates.send({ op: "ADD", source: "file", pods: [testPod({ name: "web", uid: "web-uid" })] });
  await advance(clock, 1_000);
  assert.equal(synced.length, 1);
  pleg.events().send({ podUID: "web-uid", type: "ContainerRemoved", data: "c1" });
  pleg.events().send({ podUID: "other-uid", type: "ContainerDied", data: "c2" });
  await advance(clock, 1_000);
  assert.equal(synced.length, 1, "ignored");
  pleg.events().send({ podUID: "web-uid", type: "ContainerDied", data: "c1" });
  await advance(clock, 1_000);
  assert.equal(synced.length, 2);
  await kubelet.stop();
});

Deno.test("the sync tick resyncs a pod once syncFrequency (with up to 50% jitter) has passed, not before", async () => {
  // An empty runtime: no PLEG event of the first relist adds a sync.
  const state = new Map<string, RuntimePodStatus>();
  const { clock, kubelet, synced, updates, start } = setup(state, () => true);
  start();
  updates.send({ op: "ADD", source: "file", pods: [testPod({ name: "web", uid: "web-uid" })] });
  await advance(clock, 1_000);
  assert.equal(synced.length, 1);
  for (let s = 1; s < 59; s++) await advance(clock, 1_000);
  assert.equal(synced.length, 1, "not due before 60s");
  for (let s = 59; s < 92; s++) await advance(clock, 1_000);
  assert.equal(synced.length, 2, "due within 60s·[1, 1.5)");
  await kubelet.stop();
});

Deno.test("the sync tick retries a failed sync after the workers' backoff", async () => {
  // An empty runtime: no PLEG event of the first relist adds a sync.
  const state = new Map<string, RuntimePodStatus>();
  const { clock, kubelet, manager, synced, updates, start } = setup(state, () => true);
  const plain = manager.syncPod.bind(manager);
  manager.syncPod = async (...args) => {
    const result = await plain(...args);
    if (synced.length > 1) return result;
    return {
      ...result,
      steps: [{
        action: "StartContainer",
        target: "main",
        error: { reason: "ErrImagePull", message: "pull access denied" },
      }],
    };
  };
  start();
  updates.send({ op: "ADD", source: "file", pods: [testPod({ name: "web", uid: "web-uid" })] });
  await advance(clock, 1_000);
  assert.equal(synced.length, 1);
  for (let s = 1; s < 9; s++) await advance(clock, 1_000);
  assert.equal(synced.length, 1, "not retried before 10s");
  for (let s = 9; s < 17; s++) await advance(clock, 1_000);
  assert.equal(synced.length, 2, "retried within 10s·[1, 1.5)");
  await kubelet.stop();
});

Deno.test("housekeeping, once every source was seen, drops statuses of pods no source wants and hands the desired pods on", async () => {
  let ready = false;
  const state = new Map([["keep-uid", runningPod("keep-uid", "keep")]]);
  const { clock, kubelet, statuses, updates, start } = setup(state, () => ready);
  const housekept: string[][] = [];
  start({ onHousekeeping: (pods) => housekept.push(pods.map((p) => p.metadata.name ?? "")) });
  statuses.setPodStatus(testPod({ name: "stale", uid: "stale-uid" }), { phase: "Running" });
  updates.send({ op: "ADD", source: "file", pods: [testPod({ name: "keep", uid: "keep-uid" })] });
  await advance(clock, 2_000);
  await advance(clock, 2_000);
  assert.deepEqual(housekept, [], "not before every source was seen");
  assert.ok(statuses.getPodStatus("stale-uid"));
  ready = true;
  await advance(clock, 2_000);
  assert.deepEqual(housekept.at(-1), ["keep"]);
  assert.equal(statuses.getPodStatus("stale-uid"), undefined);
  assert.ok(statuses.getPodStatus("keep-uid"), "a desired pod keeps its status");
  await kubelet.stop();
});

Deno.test("a probe result syncs its pod; results for unknown pods are ignored", async () => {
  // An empty runtime: no PLEG event of the first relist adds a sync.
  const state = new Map<string, RuntimePodStatus>();
  const { probes, emit } = fakeProbes();
  const { clock, kubelet, synced, updates, start } = setup(state, () => true, { probes });
  start();
  updates.send({ op: "ADD", source: "file", pods: [testPod({ name: "web", uid: "web-uid" })] });
  await advance(clock, 1_000);
  assert.equal(synced.length, 1);
  emit("other-uid");
  await advance(clock, 1_000);
  assert.equal(synced.length, 1);
  emit("web-uid");
  await advance(clock, 1_000);
  assert.equal(synced.length, 2);
  await kubelet.stop();
});

/** A node with room for 1 cpu and 3 pods. */
const SMALL_NODE: Node = {
  metadata: { name: "node", labels: { "kubernetes.io/os": "linux" } },
  status: { allocatable: { cpu: "1", memory: "1Gi", pods: "3" } },
};

function cpuPod(name: string, cpu: string, created: string): Pod {
  return testPod({
    name,
    uid: `${name}-uid`,
    metadata: { creationTimestamp: created },
    spec: {
      nodeName: "node",
      containers: [{ name: "main", image: "busybox", resources: { requests: { cpu } } }],
    },
  });
}

Deno.test("admission rejects, oldest first, the pod that does not fit: it goes Failed with upstream's reason and an event, is never synced, and leaves the others running", async () => {
  const events = recordingEvents();
  const { clock, kubelet, synced, updates, start } = setup(new Map(), () => true, {
    events,
    admitHandlers: [new PredicateAdmitHandler(() => SMALL_NODE)],
  });
  start();
  // Sent newest first: admission still takes "first" (the older) before "second".
  updates.send({
    op: "ADD",
    source: "api",
    pods: [
      cpuPod("second", "600m", "2026-01-01T00:00:02Z"),
      cpuPod("first", "600m", "2026-01-01T00:00:01Z"),
    ],
  });
  await advance(clock, 1_000);
  const rejected = kubelet.statuses.getPodStatus("second-uid");
  assert.equal(rejected?.phase, "Failed");
  assert.equal(rejected?.reason, "OutOfcpu");
  assert.equal(
    rejected?.message,
    "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000",
  );
  assert.deepEqual(events.got.map((e) => [e.ref.name, e.type, e.reason]), [[
    "second",
    "Warning",
    "OutOfcpu",
  ]]);
  assert.deepEqual(synced.map((p) => p.metadata.name), ["first"]);
  assert.equal(kubelet.statuses.getPodStatus("first-uid")?.phase, "Pending");

  // The rejected pod does not count: a third that fits beside "first" is admitted.
  updates.send({
    op: "ADD",
    source: "api",
    pods: [cpuPod("third", "400m", "2026-01-01T00:00:03Z")],
  });
  updates.send({
    op: "UPDATE",
    source: "api",
    pods: [cpuPod("second", "600m", "2026-01-01T00:00:02Z")],
  });
  await advance(clock, 1_000);
  assert.deepEqual(synced.map((p) => p.metadata.name).sort(), ["first", "third"]);
  assert.equal(
    kubelet.statuses.getPodStatus("second-uid")?.phase,
    "Failed",
    "an update does not revive it",
  );

  // Deleted through the API, it may go at once: nothing of it ever ran.
  const deleting = cpuPod("second", "600m", "2026-01-01T00:00:02Z");
  deleting.metadata.deletionTimestamp = "2026-01-01T00:01:00Z";
  updates.send({ op: "DELETE", source: "api", pods: [deleting] });
  await advance(clock, 1_000);
  assert.equal(kubelet.canBeDeleted("second-uid"), true);
  await kubelet.stop();
});

Deno.test("a pod the runtime already runs (admitted before a restart) that no longer fits is rejected, never synced, and stopped and removed by housekeeping", async () => {
  const state = new Map([["big-uid", runningPod("big-uid", "big")]]);
  const { clock, calls, kills, kubelet, synced, updates, start } = setup(state, () => true, {
    admitHandlers: [new PredicateAdmitHandler(() => SMALL_NODE)],
  });
  start();
  updates.send({ op: "ADD", source: "api", pods: [cpuPod("big", "2", "2026-01-01T00:00:01Z")] });
  for (let i = 0; i < 4; i++) await advance(clock, 1_000);
  assert.equal(kubelet.statuses.getPodStatus("big-uid")?.reason, "OutOfcpu");
  assert.deepEqual(synced, []);
  assert.deepEqual(kills.map((k) => k.name), ["big"]);
  assert.ok(calls.includes("remove big-uid"), `${calls}`);
  await kubelet.stop();
});

Deno.test("a terminal pod is not admitted again (a Succeeded pod after a restart stays as it is)", async () => {
  const events = recordingEvents();
  const { clock, kubelet, updates, start } = setup(new Map(), () => true, {
    events,
    admitHandlers: [new PredicateAdmitHandler(() => SMALL_NODE)],
  });
  start();
  const done = cpuPod("done", "5", "2026-01-01T00:00:01Z");
  done.status = { phase: "Succeeded" };
  updates.send({ op: "ADD", source: "api", pods: [done] });
  await advance(clock, 1_000);
  assert.deepEqual(events.got, []);
  await kubelet.stop();
});

Deno.test("while the runtime's network is not ready a pod-network pod waits with NetworkNotReady; a host-network pod syncs", async () => {
  const events = recordingEvents();
  let network: string | undefined =
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized";
  const { clock, kubelet, synced, updates, start } = setup(new Map(), () => true, {
    events,
    networkProblem: () => network,
  });
  start();
  const onPodNetwork = testPod({ name: "web", uid: "web-uid" });
  const onHost = testPod({
    name: "host",
    uid: "host-uid",
    spec: { hostNetwork: true, containers: [{ name: "main", image: "busybox" }] },
  });
  updates.send({ op: "ADD", source: "api", pods: [onPodNetwork, onHost] });
  await advance(clock, 1_000);
  assert.deepEqual(synced.map((p) => p.metadata.name), ["host"]);
  const notReady = events.got.find((e) => e.reason === "NetworkNotReady");
  assert.equal(notReady?.type, "Warning");
  assert.equal(notReady?.ref.name, "web");
  assert.equal(notReady?.message, `network is not ready: ${network}`);
  assert.equal(kubelet.statuses.getPodStatus("web-uid")?.phase, "Pending");

  // Ready again: the workers retry the transient error within about a second.
  network = undefined;
  for (let i = 0; i < 3; i++) await advance(clock, 1_000);
  assert.ok(synced.some((p) => p.metadata.name === "web"), `${synced.map((p) => p.metadata.name)}`);
  await kubelet.stop();
});

/** An event recorder that keeps what it is given. */
function recordedEvents() {
  const seen: { reason: string; message: string; type: string; name: string }[] = [];
  const events: EventRecorder = {
    event: (ref, type, reason, message) =>
      seen.push({ reason, message, type, name: ref.name ?? "" }),
  };
  return { seen, events };
}

Deno.test("the sync tick fails a pod past its activeDeadlineSeconds with DeadlineExceeded and stops its containers", async () => {
  const state = new Map([["job-uid", runningPod("job-uid", "job")]]);
  const { seen, events } = recordedEvents();
  const { clock, kills, kubelet, statuses, synced, updates, start } = setup(
    state,
    () => true,
    { events },
  );
  start();
  const pod = testPod({ name: "job", uid: "job-uid" });
  pod.spec.activeDeadlineSeconds = 30;
  pod.spec.terminationGracePeriodSeconds = 7;
  updates.send({ op: "ADD", source: "api", pods: [pod] });
  // Nothing else wakes the pod (its resync is 60s away): only the deadline does.
  for (let s = 0; s < 29; s++) await advance(clock, 1_000);
  const runtimeSyncs = synced.length;
  assert.ok(runtimeSyncs >= 1);
  assert.deepEqual(kills, []);
  assert.notEqual(statuses.getPodStatus("job-uid")?.phase, "Failed");
  for (let s = 29; s < 32; s++) await advance(clock, 1_000);
  assert.deepEqual(kills, [{ name: "job", withSpec: true, grace: 7 }]);
  const status = statuses.getPodStatus("job-uid");
  assert.equal(status?.phase, "Failed");
  assert.equal(status?.reason, "DeadlineExceeded");
  assert.equal(status?.message, "Pod was active on the node longer than the specified deadline");
  assert.equal(synced.length, runtimeSyncs, "a pod past its deadline is not synced by the runtime");
  assert.deepEqual(seen[0], {
    reason: "DeadlineExceeded",
    message: "Pod was active on the node longer than the specified deadline",
    type: "Normal",
    name: "job",
  });
  await kubelet.stop();
});

Deno.test("a pod that ended on its own and is not deleted has its volumes torn down once terminated; its containers stay", async () => {
  const pod = testPod({ name: "job", uid: "job-uid", spec: { restartPolicy: "Never" } });
  const state = new Map([["job-uid", {
    ...runningPod("job-uid", "job"),
    containers: [exitedContainer(pod.spec.containers[0]!, 0, { sandboxId: "sb-job-uid" })],
  }]]);
  const { clock, calls, kubelet, statuses, updates, start } = setup(state, () => true);
  start();
  updates.send({ op: "ADD", source: "api", pods: [pod] });
  for (let s = 0; s < 3; s++) await advance(clock, 1_000);
  assert.equal(statuses.getPodStatus("job-uid")?.phase, "Succeeded");
  assert.equal(kubelet.podWorkers.podState("job-uid"), "terminated");
  // Stopped (the sandbox), then its volumes go; nothing is removed from the runtime.
  assert.deepEqual(calls.filter((c) => !c.startsWith("sync")), ["kill job", "teardown job-uid"]);
  assert.ok(state.has("job-uid"));
  await kubelet.stop();
});

Deno.test("an UPDATE that sets activeDeadlineSeconds on a running pod fails it once the pod has run that long", async () => {
  const state = new Map([["web-uid", runningPod("web-uid", "web")]]);
  const { clock, kills, kubelet, statuses, updates, start } = setup(state, () => true);
  start();
  const pod = testPod({ name: "web", uid: "web-uid" });
  updates.send({ op: "ADD", source: "api", pods: [pod] });
  for (let s = 0; s < 10; s++) await advance(clock, 1_000);
  assert.deepEqual(kills, []);
  // Started 10s ago: 15s leaves 5 more seconds.
  const updated: Pod = { ...pod, spec: { ...pod.spec, activeDeadlineSeconds: 15 } };
  updates.send({ op: "UPDATE", source: "api", pods: [updated] });
  for (let s = 0; s < 3; s++) await advance(clock, 1_000);
  assert.deepEqual(kills, []);
  for (let s = 3; s < 7; s++) await advance(clock, 1_000);
  assert.equal(kills.length, 1);
  assert.equal(statuses.getPodStatus("web-uid")?.reason, "DeadlineExceeded");
  await kubelet.stop();
});

Deno.test("a pod refused at admission goes Failed with the reason and a Warning event, is never synced, and others run", async () => {
  const events = recordingEvents();
  const { clock, calls, kubelet, start } = setup(new Map(), () => true, {
    admitHandlers: [new SysctlAllowlist(safeSysctls("6.1"))],
    events,
  });
  start();
  const bad = testPod({ name: "bad", uid: "bad-uid" });
  bad.spec.securityContext = { sysctls: [{ name: "kernel.msgmax", value: "10000" }] };
  const good = testPod({ name: "good", uid: "good-uid" });
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [bad, good] });
  await advance(clock, 1_100);
  kubelet.handlePodUpdate({ op: "UPDATE", source: "file", pods: [bad] });
  await advance(clock, 1_100);

  const message = 'forbidden sysctl: "kernel.msgmax" not allowlisted';
  const status = kubelet.statuses.getPodStatus("bad-uid");
  assert.equal(status?.phase, "Failed");
  assert.equal(status?.reason, "SysctlForbidden");
  assert.equal(status?.message, `Pod was rejected: ${message}`);
  assert.deepEqual(
    events.got.map((e) => [e.ref.name, e.type, e.reason, e.message]),
    [["bad", "Warning", "SysctlForbidden", message]],
  );
  assert.ok(calls.includes("sync good"), `${calls}`);
  assert.ok(!calls.includes("sync bad"), `${calls}`);

  kubelet.handlePodUpdate({ op: "REMOVE", source: "file", pods: [bad] });
  await advance(clock, 2_100);
  assert.ok(!kubelet.podsWithStatus().some((p) => p.metadata.name === "bad"));
  await kubelet.stop();
});

Deno.test("a pod's cgroup is made before its sync; one that cannot be made fails the sync with FailedCreatePodContainer", async () => {
  await withTempDir(async (root) => {
    cgroupV1Tree(root);
    const podCgroups = new PodCgroupManager({
      cgroupRoot: "/",
      cgroupDriver: "cgroupfs",
      cgroupsPerQOS: true,
      podPidsLimit: 50,
      cgroups: new CgroupfsManager(findCgroupHierarchies(root)),
      logger: silentLogger,
    });
    podCgroups.start();
    // No BestEffort pod cgroup can be made: a file stands where its parent should be.
    Deno.removeSync(`${root}/memory/kubepods/besteffort`);
    Deno.writeTextFileSync(`${root}/memory/kubepods/besteffort`, "");
    const { seen, events } = recordedEvents();
    const { clock, kubelet, synced, updates, start } = setup(new Map(), () => true, {
      events,
      podCgroups,
    });
    start();
    const burstable = testPod({
      name: "burst",
      uid: "burst-uid",
      containers: [{ name: "main", image: "busybox", resources: { requests: { cpu: "500m" } } }],
    });
    const bestEffort = testPod({ name: "best", uid: "best-uid" });
    updates.send({ op: "ADD", source: "api", pods: [burstable, bestEffort] });
    await advance(clock, 1_000);
    assert.deepEqual(synced.map((p) => p.metadata.name), ["burst"]);
    assert.equal(
      Deno.readTextFileSync(`${root}/pids/kubepods/burstable/podburst-uid/pids.max`),
      "50",
    );
    assert.equal(Deno.readTextFileSync(`${root}/cpu/kubepods/burstable/cpu.shares`), "512");
    const failed = seen.find((e) => e.reason === "FailedCreatePodContainer");
    assert.equal(failed?.type, "Warning");
    assert.equal(failed?.name, "best");
    assert.match(
      failed!.message,
      /^unable to ensure pod container exists: failed to create container for \/kubepods\/besteffort\/podbest-uid: cannot create cgroup /,
    );
    await kubelet.stop();
  });
});

Deno.test("the sync trace records each worker sync with its triggers and drops a removed pod's", async () => {
  const state = new Map([["t-uid", runningPod("t-uid", "traced")]]);
  // The tracer reads the time only for its records: its own clock will do.
  const trace = new SyncTracer({ depth: 5, clock: new FakeClock() });
  const { clock: c, kubelet, start } = setup(state, () => true, { trace });
  start();
  const p = testPod({ name: "traced", uid: "t-uid" });
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [p] });
  await advance(c, 1_100);
  const first = trace.trace("default", "traced")!.syncs[0]!;
  assert.equal(first.kind, "sync");
  assert.deepEqual(first.triggers.map((t) => [t.source, t.detail]), [[
    "config",
    "ADD from source file",
  ]]);
  assert.ok(first.status?.phase, "the status the sync wrote");
  kubelet.handlePodUpdate({ op: "REMOVE", source: "file", pods: [p] });
  await advance(c, 1_100);
  const kinds = trace.trace("default", "traced")!.syncs.map((s) => s.kind);
  assert.ok(kinds.includes("terminating"), `${kinds}`);
  await advance(c, 2_100);
  await advance(c, 2_100);
  assert.equal(trace.trace("default", "traced"), undefined, "dropped with the pod");
  await kubelet.stop();
});
