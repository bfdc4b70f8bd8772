/**
 * Wall-clock steps (an NTP step, an operator's `date -s`, a VM resumed) under the
 * agent's pieces, on the injected clock: FakeClock.jump() moves now() without firing
 * timers, as a step moves Date.now() while a process's timers keep their remaining
 * delays. Seeded random jumps forward (hours) and back (minutes) under the sync loop
 * and pod workers, PLEG, CrashLoopBackOff, the eviction manager's transition period and
 * the status manager: nothing throws, nothing spins (timers and syncs bounded after a
 * jump), PLEG and the sync loop stay healthy, a pod update is still synced at once,
 * backoff stays within its bounds.
 *
 * Upstream is immune to most of this: Go's time.Now() carries a monotonic reading that
 * Since/Sub/Before use, so intervals and orderings ignore steps. Ours use
 * Clock.monotonic() for the same.
 */

import assert from "node:assert/strict";
import { Kubelet } from "../../lib/agent/kubelet.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import { EvictionManager } from "../../lib/eviction/manager.ts";
import { parseThresholdConfig } from "../../lib/eviction/thresholds.ts";
import { ProbeWorker, type WorkerHost } from "../../lib/prober/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { PodUpdate } from "../../lib/config/mod.ts";
import type { KubeRuntimeManager, RuntimePodStatus } from "../../lib/kuberuntime/mod.ts";
import { EventChannel, GenericPleg } from "../../lib/pleg/mod.ts";
import { StatusManager } from "../../lib/status/mod.ts";
import {
  BackoffStore,
  DEFAULT_BACKOFF_INITIAL_MS,
  DEFAULT_BACKOFF_MAX_MS,
  isInBackoff,
} from "../../lib/util/backoff.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import {
  advance,
  fakePodRuntime,
  podActions,
  recordingEvents,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
  testSummary,
} from "../kit/mod.ts";
import { recordSuite, seededRandom, suiteCount, suiteSeed } from "../kit/suite.ts";

const seed = suiteSeed();
const HOUR = 3_600_000;
const MINUTE = 60_000;

/** A jump: forward up to a day, or back up to half an hour. */
function randomJump(random: () => number): number {
  return random() < 0.5
    ? Math.round((1 + random() * 23) * HOUR)
    : -Math.round((1 + random() * 29) * MINUTE);
}

const fmt = (ms: number) => `${ms > 0 ? "+" : ""}${(ms / MINUTE).toFixed(1)} min`;

/** A runtime manager over a fake runtime that records each sync by pod name. */
function fakeManager(state: Map<string, RuntimePodStatus>) {
  const syncs: string[] = [];
  const runtime = fakePodRuntime({ pods: state, unknownPod: "empty" });
  const manager = {
    backoff: new BackoffStore(),
    syncPod(p: Pod) {
      syncs.push(p.metadata.name!);
      return Promise.resolve({
        actions: podActions({ sandboxId: "" }),
        steps: [],
        lastErrors: new Map(),
      });
    },
    killPod: () => Promise.resolve([]),
    removePod: () => Promise.resolve([]),
    tearDownPodVolumes: () => Promise.resolve(),
    getPodStatus: runtime.getPodStatus,
    listPods: runtime.listPods,
    isPodResizeInProgress: () => false,
    actuatedResources: () => undefined,
    removeOrphanedActuated: () => {},
  };
  return { syncs, manager: manager as unknown as KubeRuntimeManager };
}

Deno.test("clock jumps: the sync loop, pod workers and PLEG stay healthy, sync updates at once and do not spin", async () => {
  const random = seededRandom(seed);
  const jumps = suiteCount({ slice: 20, full: 200 });
  const clock = new FakeClock();
  const names = ["a", "b", "c"];
  const pods = names.map((name) => testPod({ name, uid: `uid-${name}` }));
  const state = new Map(names.map((name) => [
    `uid-${name}`,
    runtimePodStatus({
      uid: `uid-${name}`,
      name,
      sandboxes: [runtimeSandbox({ id: `sb-${name}`, hostNetwork: true })],
    }),
  ]));
  const { syncs, manager } = fakeManager(state);
  const pleg = new GenericPleg({
    listPods: () => manager.listPods(),
    getPodStatus: (uid) => manager.getPodStatus(uid),
    clock,
  });
  const kubelet = new Kubelet({
    runtime: manager,
    pleg,
    clock,
    logger: silentLogger,
    nodeName: "node",
    hostIP: "10.0.0.1",
    statuses: new StatusManager({ clock, logger: silentLogger }),
    syncFrequencyMs: 10_000,
  });
  const updates = new EventChannel<PodUpdate>(100);
  kubelet.start({ updates, seenAllSources: () => true });
  const findings: string[] = [];
  let checks = 0;
  try {
    kubelet.handlePodUpdate({ op: "ADD", source: "file", pods });
    await advance(clock, 15_000);
    const timersBefore = clock.pendingTimers;
    for (let i = 0; i < jumps; i++) {
      const jump = randomJump(random);
      const at = `seed ${seed}: jump ${i} (${fmt(jump)})`;
      clock.jump(jump);
      // Health is read at any moment (by /healthz and the node's Ready condition).
      assert.equal(pleg.healthy().ok, true, `${at}: PLEG ${pleg.healthy().message}`);
      assert.equal(kubelet.syncLoopHealth(), undefined, `${at}: sync loop unhealthy`);
      // An update right after the jump is synced within a couple of seconds.
      const pod = pods[i % pods.length]!;
      const changed: Pod = {
        ...pod,
        metadata: { ...pod.metadata, annotations: { jump: String(i) } },
      };
      pods[i % pods.length] = changed;
      const before = syncs.length;
      kubelet.handlePodUpdate({ op: "UPDATE", source: "file", pods: [changed] });
      await advance(clock, 3_000);
      assert.ok(
        syncs.slice(before).includes(pod.metadata.name!),
        `${at}: the update of ${pod.metadata.name} was not synced within 3 s: ${
          syncs.slice(before)
        }`,
      );
      // Nothing spins and nothing stops: a pod resyncs 10 s·[1, 1.5) after its last
      // sync, seen by the next 1 s tick, so the pod just updated resyncs within 16 s
      // and no pod syncs more than twice in them; no timers pile up.
      const settled = syncs.length;
      await advance(clock, 16_000);
      const more = syncs.length - settled;
      assert.ok(more <= 2 * names.length, `${at}: ${more} syncs in 16 s`);
      assert.ok(more >= 1, `${at}: no resync in 16 s`);
      assert.ok(
        clock.pendingTimers <= timersBefore + 2,
        `${at}: ${clock.pendingTimers} timers pending, ${timersBefore} before the jumps`,
      );
      assert.equal(pleg.healthy().ok, true, `${at}: PLEG ${pleg.healthy().message}`);
      checks += 6;
    }
  } catch (err) {
    findings.push(err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    await kubelet.stop();
    await recordSuite({
      suite: "faults",
      name: "clock jumps: sync loop, pod workers, PLEG",
      seed,
      figures: { faults: jumps, checks, syncs: syncs.length },
      findings,
    });
  }
});

Deno.test("clock jumps: CrashLoopBackOff stays between its initial and maximum delay and ends within jump + delay", async () => {
  const random = seededRandom(seed ^ 0x5eed);
  const cases = suiteCount({ slice: 500, full: 20_000 });
  const findings: string[] = [];
  let checks = 0;
  try {
    for (let i = 0; i < cases; i++) {
      const clock = new FakeClock();
      const store = new BackoffStore();
      const key = "pod_main";
      // A few crashes, each restarted when its backoff allows, with jumps between.
      let finishedAt = clock.now();
      for (let crash = 0; crash < 1 + Math.floor(random() * 8); crash++) {
        const jump = random() < 0.3 ? randomJump(random) : 0;
        clock.jump(jump);
        const at = `seed ${seed}: case ${i} crash ${crash} (jump ${fmt(jump)})`;
        const entry = store.next(key, finishedAt, clock.now());
        assert.ok(
          entry.delayMs >= DEFAULT_BACKOFF_INITIAL_MS && entry.delayMs <= DEFAULT_BACKOFF_MAX_MS,
          `${at}: delay ${entry.delayMs}`,
        );
        // The restart waits at most the delay plus how far the clock went back.
        const bound = entry.delayMs + Math.max(0, -jump);
        let waited = 0;
        while (isInBackoff(store.state.get(key), finishedAt, clock.now())) {
          clock.tick(1_000);
          waited += 1_000;
          assert.ok(waited <= bound + 1_000, `${at}: still in backoff after ${waited} ms`);
        }
        checks += 2;
        // It runs a random while (sometimes long enough to reset the backoff), then crashes.
        clock.tick(Math.floor(random() * 15 * MINUTE));
        finishedAt = clock.now();
      }
      store.gc(clock.now());
    }
  } catch (err) {
    findings.push(err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    await recordSuite({
      suite: "faults",
      name: "clock jumps: CrashLoopBackOff",
      seed,
      figures: { cases, checks },
      findings,
    });
  }
});

Deno.test("clock jumps: a probe keeps its period and the probe count stays bounded", async () => {
  const random = seededRandom(seed ^ 0x9e0b);
  const jumps = suiteCount({ slice: 20, full: 200 });
  const clock = new FakeClock();
  const periodSeconds = 1 + Math.floor(random() * 10);
  let probes = 0;
  const host: WorkerHost = {
    clock,
    logger: silentLogger,
    runProbe: () => {
      probes++;
      return Promise.resolve({ result: "success", output: "" });
    },
    container: () => ({ id: "c1", state: "running", startedAt: clock.now(), exitCode: 0 }),
    isStarted: () => true,
    deleting: () => false,
    willRestart: () => true,
    target: (containerId) => ({
      podName: "ns/web",
      container: { name: "app" },
      containerId,
      podIP: "10.0.0.1",
      userAgent: "kube-probe/1.37",
      runtime: {} as RuntimeService,
    }),
    setResult: () => {},
    removeResult: () => {},
    recordProbe: () => {},
    onStopped: () => {},
  };
  const worker = new ProbeWorker("Liveness", { exec: { command: ["true"] }, periodSeconds }, host);
  const findings: string[] = [];
  let checks = 0;
  try {
    worker.start(0);
    await advance(clock, 30_000);
    const timers = clock.pendingTimers;
    for (let i = 0; i < jumps; i++) {
      const jump = randomJump(random);
      const at = `seed ${seed}: jump ${i} (${fmt(jump)}), period ${periodSeconds}s`;
      clock.jump(jump);
      const before = probes;
      const window = 10 * periodSeconds * 1000;
      await advance(clock, window, periodSeconds * 1000);
      const ran = probes - before;
      // One per period (the last may fall on the window's edge); none missed, no burst.
      assert.ok(ran >= 9 && ran <= 11, `${at}: ${ran} probes in ${window} ms`);
      assert.equal(clock.pendingTimers, timers, `${at}: timers`);
      assert.equal(worker.stopped, false, `${at}: the worker stopped`);
      checks += 3;
    }
  } catch (err) {
    findings.push(err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    worker.stop();
    await recordSuite({
      suite: "faults",
      name: "clock jumps: probes",
      seed,
      figures: { faults: jumps, checks, probes },
      findings,
    });
  }
});

Deno.test("clock jumps: the eviction manager's pressure transition period lasts its length whatever the wall clock does", async () => {
  const random = seededRandom(seed ^ 0xe71c);
  const cases = suiteCount({ slice: 20, full: 500 });
  const Mi = 2 ** 20;
  const transitionMs = 30_000;
  const findings: string[] = [];
  let checks = 0;
  try {
    for (let i = 0; i < cases; i++) {
      const clock = new FakeClock();
      let available = 50 * Mi;
      const manager = new EvictionManager({
        config: {
          thresholds: parseThresholdConfig({
            evictionHard: { "memory.available": "100Mi" },
            evictionSoft: {},
            evictionSoftGracePeriod: {},
            evictionMinimumReclaim: {},
            enforcePodsAllocatable: false,
          }),
          pressureTransitionPeriodMs: transitionMs,
          maxPodGracePeriodSeconds: 0,
          localStorageCapacityIsolation: true,
        },
        clock,
        logger: silentLogger,
        nodeName: "testnode",
        events: recordingEvents(),
        summary: () =>
          Promise.resolve(
            testSummary({
              timeMs: clock.now(),
              memoryAvailable: available,
              memoryWorkingSet: 1000 * Mi - available,
            }),
          ),
        activePods: () => [],
        killPod: () => Promise.resolve(),
        podCleanedUp: () => true,
      });
      // Pressure, then recovery; the wall clock steps somewhere in the period.
      await manager.synchronize();
      available = 500 * Mi;
      const stepAt = Math.floor(random() * transitionMs);
      const jump = randomJump(random);
      const at = `seed ${seed}: case ${i} (${fmt(jump)} at ${stepAt} ms)`;
      let elapsed = 0;
      for (; elapsed < transitionMs + 5_000; elapsed += 1_000) {
        if (elapsed <= stepAt && stepAt < elapsed + 1_000) clock.jump(jump);
        await manager.synchronize();
        const expected = elapsed < transitionMs;
        assert.equal(manager.isUnderMemoryPressure(), expected, `${at}: at ${elapsed} ms`);
        checks++;
        clock.tick(1_000);
      }
    }
  } catch (err) {
    findings.push(err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    await recordSuite({
      suite: "faults",
      name: "clock jumps: eviction transition period",
      seed,
      figures: { faults: cases, checks },
      findings,
    });
  }
});
