/**
 * ProbeManager on a FakeClock with a scripted probe runner: startup gating,
 * the started/ready/liveness/startup views, change notifications, pod IPs,
 * metrics and the worker lifecycle.
 */

import assert from "node:assert/strict";
import type { Container, Pod } from "../../lib/api/types.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import type { RuntimeContainerState, RuntimePodStatus } from "../../lib/kuberuntime/mod.ts";
import {
  ProbeManager,
  type ProbeOutcome,
  type ProbeResultUpdate,
  type ProbeRunner,
  type ProbeTarget,
  type ProbeType,
} from "../../lib/prober/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { flush, runtimeContainer, runtimePodStatus, runtimeSandbox, testPod } from "../kit/mod.ts";

const UID = "uid-1";
const ok: ProbeOutcome = { result: "success", output: "ok" };
const bad: ProbeOutcome = { result: "failure", output: "bad" };
const exec = { exec: { command: ["true"] } };

type Respond = (
  type: ProbeType,
  container: string,
  signal: AbortSignal,
) => ProbeOutcome | Promise<ProbeOutcome>;

function makePod(containers: Container[], mutate: (p: Pod) => void = () => {}): Pod {
  const pod = testPod({ namespace: "ns", uid: UID, containers });
  mutate(pod);
  return pod;
}

interface FakeContainer {
  name: string;
  id: string;
  state?: RuntimeContainerState;
  exitCode?: number;
}

/** A manager whose probes answer from `respond`, recording `Type container id` per probe. */
function setup(respond: Respond, random = () => 0) {
  const clock = new FakeClock();
  const calls: string[] = [];
  const targets: ProbeTarget[] = [];
  const runProbe: ProbeRunner = (probe, target, signal) => {
    const c = target.container;
    const type: ProbeType = c.livenessProbe === probe
      ? "Liveness"
      : c.readinessProbe === probe
      ? "Readiness"
      : "Startup";
    calls.push(`${type} ${c.name} ${target.containerId}`);
    targets.push(target);
    return Promise.resolve(respond(type, c.name, signal));
  };
  const manager = new ProbeManager({
    runtime: {} as RuntimeService,
    clock,
    runProbe,
    random,
    hostIP: "192.0.2.10",
  });
  const updates: ProbeResultUpdate[] = [];
  manager.onResult((u) => updates.push(u));
  const runtime = (containers: FakeContainer[], hostNetwork = false): RuntimePodStatus =>
    runtimePodStatus({
      uid: UID,
      namespace: "ns",
      sandboxes: [runtimeSandbox({ id: "sb", ip: hostNetwork ? "" : "10.88.0.7", hostNetwork })],
      containers: containers.map((c) =>
        runtimeContainer({ name: c.name, image: "busybox" }, {
          id: c.id,
          sandboxId: "sb",
          state: c.state ?? "running",
          createdAt: 1,
          startedAt: clock.now(),
          exitCode: c.exitCode ?? 0,
          imageRef: "busybox",
          hash: "h",
        })
      ),
    });
  const tick = async (ms: number) => {
    clock.tick(ms);
    await manager.settled();
  };
  return { clock, manager, calls, targets, updates, runtime, tick };
}

Deno.test("ProbeManager reports a container not ready until its readiness probe passes, probing it as soon as it runs", async () => {
  const t = setup(() => ok);
  const pod = makePod([{ name: "app", readinessProbe: exec }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  assert.deepEqual([...t.manager.readiness(UID)], [["c1", false]]);
  await t.manager.settled();
  assert.deepEqual(t.calls, ["Readiness app c1"], "probed at once, not after a period");
  assert.deepEqual([...t.manager.readiness(UID)], [["c1", true]]);
  assert.deepEqual([...t.manager.started(UID)], [["c1", true]]);
  assert.deepEqual(
    t.updates.map((u) => [u.probeType, u.result, u.previous]),
    [["Readiness", "failure", undefined], ["Readiness", "success", "failure"]],
  );
  t.manager.stop();
});

Deno.test("ProbeManager's startup probe gates liveness and readiness, and stops probing once it passed", async () => {
  let up = false;
  const t = setup((type) => (type === "Startup" ? (up ? ok : bad) : ok));
  const pod = makePod([{
    name: "app",
    startupProbe: { ...exec, periodSeconds: 1, failureThreshold: 30 },
    livenessProbe: { ...exec, periodSeconds: 1 },
    readinessProbe: { ...exec, periodSeconds: 1 },
  }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  await t.tick(1_000);
  await t.tick(1_000);
  assert.deepEqual(t.calls, ["Startup app c1", "Startup app c1"]);
  assert.deepEqual([...t.manager.started(UID)], [["c1", false]]);
  assert.deepEqual([...t.manager.readiness(UID)], [["c1", false]]);
  assert.deepEqual([...t.manager.startup(UID)], [], "no verdict while still below the threshold");
  assert.deepEqual([...t.manager.liveness(UID)], [["c1", "success"]]);
  up = true;
  t.calls.length = 0;
  await t.tick(1_000);
  assert.deepEqual(t.calls, ["Startup app c1", "Readiness app c1"], "readiness runs right away");
  assert.deepEqual([...t.manager.started(UID)], [["c1", true]]);
  assert.deepEqual([...t.manager.startup(UID)], [["c1", "success"]]);
  assert.deepEqual([...t.manager.readiness(UID)], [["c1", true]]);
  t.calls.length = 0;
  await t.tick(1_000);
  assert.deepEqual(t.calls.sort(), ["Liveness app c1", "Readiness app c1"]);
  t.manager.stop();
});

Deno.test("ProbeManager reports startup failure after failureThreshold and stops probing that container", async () => {
  const t = setup(() => bad);
  const pod = makePod([{
    name: "app",
    startupProbe: { ...exec, periodSeconds: 1, failureThreshold: 2 },
  }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  await t.tick(1_000);
  await t.tick(1_000);
  assert.deepEqual([...t.manager.startup(UID)], [["c1", "failure"]]);
  await t.tick(5_000);
  assert.equal(t.calls.length, 2);
  t.manager.updateContainers(
    pod,
    t.runtime([{ name: "app", id: "c2" }, { name: "app", id: "c1", state: "exited" }]),
  );
  await t.tick(1_000);
  assert.deepEqual([...t.manager.startup(UID)], [], "the new container starts undecided");
  assert.equal(t.calls.at(-1), "Startup app c2");
  t.manager.stop();
});

Deno.test("ProbeManager.onResult() reports changes only, with the probe's terminationGracePeriodSeconds", async () => {
  const script = [ok, ok, bad];
  const t = setup(() => script.shift() ?? ok);
  const pod = makePod([{
    name: "app",
    livenessProbe: {
      ...exec,
      periodSeconds: 1,
      failureThreshold: 1,
      terminationGracePeriodSeconds: 5,
    },
  }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  for (let i = 0; i < 3; i++) await t.tick(1_000);
  assert.deepEqual(
    t.updates.map((u) => ({ ...u })),
    [
      {
        podUID: UID,
        container: "app",
        containerId: "c1",
        probeType: "Liveness",
        result: "success",
        previous: undefined,
        output: "",
        terminationGracePeriodSeconds: 5,
      },
      {
        podUID: UID,
        container: "app",
        containerId: "c1",
        probeType: "Liveness",
        result: "failure",
        previous: "success",
        output: "bad",
        terminationGracePeriodSeconds: 5,
      },
    ],
  );
  assert.deepEqual([...t.manager.liveness(UID)], [["c1", "failure"]]);
  t.manager.stop();
});

Deno.test("ProbeManager keeps a hung probe from delaying other containers' probes", async () => {
  let cancelled = 0;
  const t = setup((_type, container, signal) =>
    container === "stuck"
      ? new Promise<ProbeOutcome>((resolve) =>
        signal.addEventListener("abort", () => {
          cancelled++;
          resolve(ok);
        })
      )
      : ok
  );
  const probe = { ...exec, periodSeconds: 1 };
  const pod = makePod([{ name: "stuck", livenessProbe: probe }, {
    name: "fine",
    livenessProbe: probe,
  }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(
    pod,
    t.runtime([{ name: "stuck", id: "s1" }, { name: "fine", id: "f1" }]),
  );
  for (let i = 0; i < 4; i++) {
    t.clock.tick(1_000);
    await flush(10);
  }
  assert.equal(t.calls.filter((c) => c.startsWith("Liveness fine")).length, 4);
  assert.equal(t.calls.filter((c) => c.startsWith("Liveness stuck")).length, 1);
  t.manager.removePod(UID);
  await t.manager.settled();
  assert.equal(cancelled, 1);
  assert.equal(t.manager.workerCount, 0);
  assert.equal(t.clock.pendingTimers, 0);
});

Deno.test("ProbeManager probes the host IP of host-network pods and the sandbox IP of others", async () => {
  const t = setup(() => ok);
  const pod = makePod([{ name: "app", livenessProbe: exec }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }], true));
  await t.tick(10_000);
  assert.equal(t.targets.at(-1)?.podIP, "192.0.2.10");
  assert.equal(t.targets.at(-1)?.userAgent, "kube-probe/1.34");
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }], false));
  await t.tick(10_000);
  assert.equal(t.targets.at(-1)?.podIP, "10.88.0.7");
  t.manager.stop();
});

Deno.test("ProbeManager probes sidecars and reports a regular init container ready once it exited 0", async () => {
  const t = setup(() => ok);
  const pod = makePod([{ name: "app" }], (p) => {
    p.spec.initContainers = [
      { name: "setup" },
      { name: "proxy", restartPolicy: "Always", readinessProbe: exec },
    ];
  });
  t.manager.addPod(pod);
  assert.equal(t.manager.workerCount, 1);
  t.manager.updateContainers(
    pod,
    t.runtime([
      { name: "app", id: "a1" },
      { name: "proxy", id: "p1" },
      { name: "setup", id: "s1", state: "exited", exitCode: 0 },
    ]),
  );
  await t.manager.settled();
  assert.deepEqual(t.calls, ["Readiness proxy p1"]);
  assert.deepEqual(Object.fromEntries(t.manager.readiness(UID)), { a1: true, p1: true, s1: true });
  assert.deepEqual(Object.fromEntries(t.manager.started(UID)), { a1: true, p1: true, s1: false });
  t.manager.stop();
});

Deno.test("ProbeManager spreads first probes over the period right after start-up only", async () => {
  const t = setup(() => ok, () => 0.5);
  const probe = { ...exec, periodSeconds: 10 };
  const first = makePod([{ name: "app", livenessProbe: probe }]);
  t.manager.addPod(first);
  t.manager.updateContainers(first, t.runtime([{ name: "app", id: "c1" }]));
  await t.tick(4_999);
  assert.deepEqual(t.calls, []);
  await t.tick(1);
  assert.deepEqual(t.calls, ["Liveness app c1"]);
  t.manager.removePod(UID);
  // Long after start-up a new pod's worker probes at once (here: first seen
  // through updateContainers, so it already knows its container).
  await t.tick(60_000);
  t.calls.length = 0;
  t.manager.updateContainers(first, t.runtime([{ name: "app", id: "c2" }]));
  await t.manager.settled();
  assert.deepEqual(t.calls, ["Liveness app c2"]);
  t.manager.stop();
});

Deno.test("ProbeManager.stopLivenessAndStartup() keeps readiness, and pod deletion silences liveness", async () => {
  const t = setup(() => bad);
  const probe = { ...exec, periodSeconds: 1, failureThreshold: 1 };
  const pod = makePod([{ name: "app", livenessProbe: probe, readinessProbe: { ...probe } }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  t.manager.stopLivenessAndStartup(UID);
  assert.equal(t.manager.workerCount, 1);
  assert.deepEqual([...t.manager.liveness(UID)], []);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  assert.equal(t.manager.workerCount, 1, "a later sync does not bring liveness back");

  const t2 = setup(() => bad);
  t2.manager.addPod(pod);
  const deleting = makePod(pod.spec.containers, (p) => {
    p.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
  });
  t2.manager.updateContainers(deleting, t2.runtime([{ name: "app", id: "c1" }]));
  await t2.tick(1_000);
  assert.equal(t2.manager.workerCount, 1, "the liveness worker ended");
  assert.equal(t2.calls.filter((c) => c.startsWith("Liveness")).length, 0);
  assert.equal(
    t2.updates.some((u) => u.probeType === "Liveness" && u.result === "failure"),
    false,
  );
  t.manager.stop();
  t2.manager.stop();
});

Deno.test("ProbeManager.cleanupPods() removes pods no longer desired", () => {
  const t = setup(() => ok);
  t.manager.addPod(makePod([{ name: "app", livenessProbe: exec }]));
  t.manager.cleanupPods(new Set([UID]));
  assert.equal(t.manager.workerCount, 1);
  t.manager.cleanupPods(new Set());
  assert.equal(t.manager.workerCount, 0);
  assert.deepEqual([...t.manager.readiness(UID)], []);
});

Deno.test("ProbeManager.renderProbeMetrics() counts probes by type and result, and forgets removed pods", async () => {
  const script = [ok, ok, bad];
  const t = setup(() => script.shift() ?? { result: "unknown", output: "?" });
  const pod = makePod([{ name: "app", livenessProbe: { ...exec, periodSeconds: 1 } }]);
  t.manager.addPod(pod);
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  for (let i = 0; i < 4; i++) await t.tick(1_000);
  const text = t.manager.renderProbeMetrics();
  const base = 'container="app",namespace="ns",pod="web",pod_uid="uid-1",probe_type="Liveness"';
  assert.ok(text.includes("# TYPE prober_probe_total counter"), text);
  assert.ok(text.includes(`prober_probe_total{${base},result="successful"} 2\n`), text);
  assert.ok(text.includes(`prober_probe_total{${base},result="failed"} 1\n`), text);
  assert.ok(text.includes(`prober_probe_total{${base},result="unknown"} 1\n`), text);
  assert.ok(
    text.includes(
      'prober_probe_duration_seconds_count{container="app",namespace="ns",pod="web",probe_type="Liveness"} 3\n',
    ),
    text,
  );
  t.manager.removePod(UID);
  assert.equal(t.manager.renderProbeMetrics(), "");
});

Deno.test("ProbeManager.results() gives each probe's result and output for the current container", async () => {
  const t = setup((type) => (type === "Liveness" ? bad : ok));
  const pod = makePod([{
    name: "app",
    livenessProbe: { ...exec, periodSeconds: 1, failureThreshold: 1 },
    readinessProbe: { ...exec, periodSeconds: 1 },
  }]);
  t.manager.addPod(pod);
  assert.deepEqual(
    t.manager.results(UID).map((r) => [r.probeType, r.result]),
    [["Liveness", "unknown"], ["Readiness", "unknown"]],
    "no container yet",
  );
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c1" }]));
  await t.tick(1_000);
  await t.tick(1_000);
  assert.deepEqual(t.manager.results(UID), [
    { container: "app", probeType: "Liveness", result: "failure", output: "bad" },
    { container: "app", probeType: "Readiness", result: "success", output: "ok" },
  ]);
  // A new instance starts from the initial results, which carry no output.
  t.manager.updateContainers(pod, t.runtime([{ name: "app", id: "c2", state: "created" }]));
  assert.deepEqual(
    t.manager.results(UID).map((r) => [r.result, r.output]),
    [["unknown", ""], ["unknown", ""]],
  );
  assert.deepEqual(t.manager.results("other"), []);
  t.manager.stop();
});
