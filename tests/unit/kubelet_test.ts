/**
 * The sync loop's own rules, with a fake runtime manager and a real PLEG over
 * fake runtime listings. (The same loop on real containerd: tests/integration.)
 */

import assert from "node:assert/strict";
import { Kubelet, type KubeletDeps } from "../../lib/agent/kubelet.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { PodUpdate } from "../../lib/config/mod.ts";
import { BackoffStore } from "../../lib/kuberuntime/backoff.ts";
import type {
  KubeRuntimeManager,
  RuntimePodStatus,
  SyncPodResult,
} from "../../lib/kuberuntime/mod.ts";
import { EventChannel, GenericPleg } from "../../lib/pleg/mod.ts";
import { StatusManager } from "../../lib/status/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";

function pod(name: string, uid: string): Pod {
  return {
    metadata: { name, namespace: "default", uid },
    spec: { containers: [{ name: "main", image: "busybox" }] },
  };
}

function runningPod(uid: string, name: string): RuntimePodStatus {
  return {
    uid,
    name,
    namespace: "default",
    sandboxes: [{
      id: `sb-${uid}`,
      state: "ready",
      attempt: 0,
      createdAt: 1,
      ip: "",
      additionalIps: [],
      hostNetwork: true,
    }],
    containers: [],
  };
}

/** A runtime manager that records calls and holds a mutable runtime state. */
function fakeRuntime(state: Map<string, RuntimePodStatus>) {
  const calls: string[] = [];
  const manager = {
    backoff: new BackoffStore(),
    syncPod(p: Pod) {
      calls.push(`sync ${p.metadata.name}`);
      return Promise.resolve({
        actions: {
          killPod: false,
          createSandbox: false,
          sandboxId: "",
          attempt: 0,
          initContainersToStart: [],
          containersToStart: [],
          containersToKill: [],
          inBackoff: [],
        },
        steps: [],
        lastErrors: new Map(),
      });
    },
    killPod(_p: Pod | undefined, running: RuntimePodStatus) {
      calls.push(`kill ${running.name}`);
      return Promise.resolve([]);
    },
    removePod(running: RuntimePodStatus) {
      calls.push(`remove ${running.uid}`);
      state.delete(running.uid);
      return Promise.resolve([]);
    },
    getPodStatus(uid: string) {
      return Promise.resolve(
        state.get(uid) ?? { uid, name: "", namespace: "", sandboxes: [], containers: [] },
      );
    },
    listPods() {
      return Promise.resolve(new Map(state));
    },
  };
  return { calls, manager: manager as unknown as KubeRuntimeManager };
}

async function settle(clock: FakeClock, ms = 0): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
  if (ms > 0) clock.tick(ms);
  for (let i = 0; i < 50; i++) await new Promise((r) => setTimeout(r, 0));
}

function setup(
  state: Map<string, RuntimePodStatus>,
  sourcesReady: () => boolean,
  extra: Partial<KubeletDeps> = {},
) {
  const clock = new FakeClock();
  const { calls, manager } = fakeRuntime(state);
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
  const start = () => kubelet.start({ updates, seenAllSources: sourcesReady });
  return { clock, calls, kubelet, manager, statuses, updates, start };
}

Deno.test("handleHousekeeping() leaves unknown runtime pods alone until every source was seen", async () => {
  const state = new Map([["orphan-uid", runningPod("orphan-uid", "orphan")]]);
  let ready = false;
  const { clock, calls, kubelet, start } = setup(state, () => ready);
  start();
  await settle(clock, 2_100);
  await settle(clock, 2_100);
  assert.ok(!calls.some((c) => c.startsWith("kill")), `killed before sources were ready: ${calls}`);

  ready = true;
  await settle(clock, 2_100);
  await settle(clock, 1_000);
  assert.ok(calls.includes("kill orphan"), `orphan not killed: ${calls}`);
  assert.ok(calls.includes("remove orphan-uid"), `orphan not removed: ${calls}`);
  await kubelet.stop();
});

Deno.test("handleHousekeeping() does not touch runtime pods that a source wants", async () => {
  const state = new Map([["keep-uid", runningPod("keep-uid", "keep")]]);
  const { clock, calls, kubelet, start } = setup(state, () => true);
  start();
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [pod("keep", "keep-uid")] });
  await settle(clock, 2_100);
  await settle(clock, 2_100);
  assert.ok(calls.includes("sync keep"));
  assert.ok(!calls.some((c) => c.startsWith("kill") || c.startsWith("remove")), `${calls}`);
  await kubelet.stop();
});

Deno.test("handlePodUpdate() REMOVE kills the pod, removes it and drops its status", async () => {
  const state = new Map([["gone-uid", runningPod("gone-uid", "gone")]]);
  const { clock, calls, kubelet, start } = setup(state, () => true);
  start();
  const p = pod("gone", "gone-uid");
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [p] });
  await settle(clock, 1_100);
  assert.ok(kubelet.statuses.getPodStatus("gone-uid"), "status generated by the first sync");
  kubelet.handlePodUpdate({ op: "REMOVE", source: "file", pods: [p] });
  await settle(clock, 1_100);
  await settle(clock, 1_100);
  assert.ok(calls.includes("kill gone"), `${calls}`);
  assert.ok(calls.includes("remove gone-uid"), `${calls}`);
  assert.equal(kubelet.statuses.getPodStatus("gone-uid"), undefined);
  assert.deepEqual(kubelet.podsWithStatus(), []);
  await kubelet.stop();
});

Deno.test("syncLoopHealth() reports a loop that stopped ticking", async () => {
  const { clock, kubelet, start } = setup(new Map(), () => true);
  start();
  await settle(clock, 1_000);
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
  const { clock, calls, kubelet, manager, statuses, start } = setup(state, () => true);
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
    running.containers.push({
      id: "c1",
      sandboxId: "sb-new-uid",
      name: "main",
      state: "running",
      createdAt: 2,
      startedAt: 3,
      finishedAt: 0,
      exitCode: 0,
      reason: "",
      message: "",
      image: "busybox",
      imageRef: "busybox",
      restartCount: 0,
      hash: "",
    });
    state.set("new-uid", running);
    return { ...result, steps: [{ action: "StartContainer", target: "main" }] };
  };
  start();
  await settle(clock);
  kubelet.handlePodUpdate({ op: "ADD", source: "file", pods: [pod("new", "new-uid")] });
  await settle(clock);
  assert.deepEqual(reported, [{ phase: "Pending", main: "ContainerCreating" }]);
  release();
  // No clock tick: no PLEG relist has seen the container yet.
  await settle(clock);
  assert.deepEqual(reported.at(-1), { phase: "Running", main: "running" }, `${calls}`);
  assert.equal(kubelet.statuses.getPodStatus("new-uid")?.phase, "Running");
  await kubelet.stop();
});
