import { deepStrictEqual, ok, strictEqual } from "node:assert";
import type { Container, Pod } from "../../lib/api/types.ts";
import type { ExecSyncResponse, RuntimeService } from "../../lib/cri/types.ts";
import type { RuntimeContainer } from "../../lib/kuberuntime/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import {
  advance,
  drive,
  recordingEvents,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
  unitRuntimeManager,
} from "../kit/mod.ts";

const START = Date.UTC(2026, 0, 1);

/** What the fake runtime saw, with FakeClock times relative to the start. */
interface Call {
  op: "exec" | "stop" | "stopSandbox";
  name: string;
  at: number;
  timeout?: number;
}

/**
 * A RuntimeService that records stop and exec calls. A stopped container
 * "exits" `exitAfterMs` after its stop signal, or when its timeout runs out
 * (SIGKILL), on the fake clock.
 */
function fakeRuntime(
  clock: FakeClock,
  opts: { exitAfterMs?: Record<string, number>; hookMs?: number; hookExitCode?: number } = {},
) {
  const calls: Call[] = [];
  const nameOf = (id: string) => id.replace(/-id$/, "");
  const rt = {
    async stopContainer(id: string, timeout: number): Promise<void> {
      calls.push({ op: "stop", name: nameOf(id), at: clock.now() - START, timeout });
      const exitAfter = Math.min(opts.exitAfterMs?.[nameOf(id)] ?? 0, timeout * 1000);
      if (exitAfter > 0) await clock.sleep(exitAfter);
    },
    async execSync(id: string): Promise<ExecSyncResponse> {
      calls.push({ op: "exec", name: nameOf(id), at: clock.now() - START });
      if (opts.hookMs) await clock.sleep(opts.hookMs);
      return {
        stdout: new Uint8Array(),
        stderr: new Uint8Array(),
        exitCode: opts.hookExitCode ?? 0,
      };
    },
    stopPodSandbox(id: string): Promise<void> {
      calls.push({ op: "stopSandbox", name: id, at: clock.now() - START });
      return Promise.resolve();
    },
  };
  return { calls, runtime: rt as unknown as RuntimeService };
}

function running(spec: Container): RuntimeContainer {
  return runtimeContainer(spec, {
    createdAt: START - 60_000,
    startedAt: START - 60_000,
    image: "busybox",
  });
}

function setup(pod: Pod, clock: FakeClock, runtime: RuntimeService) {
  const manager = unitRuntimeManager(runtime, { clock });
  const specs = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  const status = runtimePodStatus({
    name: "job",
    sandboxes: [runtimeSandbox({ createdAt: START - 120_000, ip: "10.0.0.9" })],
    containers: specs.map(running),
  });
  return { manager, status };
}

function sidecarPod(grace = 30): Pod {
  return testPod({
    name: "job",
    containers: ["a1", "a2"],
    spec: {
      terminationGracePeriodSeconds: grace,
      initContainers: [
        { name: "sc1", image: "busybox", restartPolicy: "Always" },
        { name: "init2", image: "busybox" },
        { name: "sc3", image: "busybox", restartPolicy: "Always" },
      ],
    },
  });
}

Deno.test("killPod() stops app containers in parallel, then sidecars in reverse order, then the sandbox", async () => {
  const clock = new FakeClock(START);
  const pod = sidecarPod();
  const { calls, runtime } = fakeRuntime(clock, {
    exitAfterMs: { a1: 1_000, a2: 3_000, sc3: 2_000, sc1: 1_000 },
  });
  const { manager, status } = setup(pod, clock, runtime);
  // The regular init container finished long ago.
  status.containers = status.containers.map((c) =>
    c.name === "init2" ? { ...c, state: "exited" as const } : c
  );
  const steps = await drive(clock, manager.killPod(pod, status));
  deepStrictEqual(calls, [
    { op: "stop", name: "a1", at: 0, timeout: 30 },
    { op: "stop", name: "a2", at: 0, timeout: 30 },
    // sc3 waited 3s for a2; sc1 then waited for sc3 (5s in all).
    { op: "stop", name: "sc3", at: 3_000, timeout: 27 },
    { op: "stop", name: "sc1", at: 5_000, timeout: 25 },
    { op: "stopSandbox", name: "sb1", at: 6_000 },
  ]);
  deepStrictEqual(steps.filter((s) => s.error), []);
  deepStrictEqual(steps.map((s) => s.target).sort(), ["a1", "a2", "sb1", "sc1", "sc3"]);
});

Deno.test("killPod() gives sidecars at least 2s when the app containers used up the grace period", async () => {
  const clock = new FakeClock(START);
  const pod = sidecarPod(10);
  pod.spec.initContainers = [{ name: "sc1", image: "busybox", restartPolicy: "Always" }];
  pod.spec.containers = [{ name: "a1", image: "busybox" }];
  // a1 ignores SIGTERM: it dies only at the SIGKILL after its 10s.
  const { calls, runtime } = fakeRuntime(clock, { exitAfterMs: { a1: 60_000, sc1: 60_000 } });
  const { manager, status } = setup(pod, clock, runtime);
  await drive(clock, manager.killPod(pod, status));
  deepStrictEqual(calls, [
    { op: "stop", name: "a1", at: 0, timeout: 10 },
    { op: "stop", name: "sc1", at: 10_000, timeout: 2 },
    { op: "stopSandbox", name: "sb1", at: 12_000 },
  ]);
});

Deno.test("killPod() runs preStop before the stop signal and charges its time to the grace period", async () => {
  const clock = new FakeClock(START);
  const pod = sidecarPod(30);
  pod.spec.initContainers = [];
  pod.spec.containers = [{
    name: "a1",
    image: "busybox",
    lifecycle: { preStop: { exec: { command: ["sh", "-c", "sleep 5"] } } },
  }];
  const { calls, runtime } = fakeRuntime(clock, { hookMs: 5_000 });
  const { manager, status } = setup(pod, clock, runtime);
  const steps = await drive(clock, manager.killPod(pod, status));
  deepStrictEqual(calls, [
    { op: "exec", name: "a1", at: 0 },
    { op: "stop", name: "a1", at: 5_000, timeout: 25 },
    { op: "stopSandbox", name: "sb1", at: 5_000 },
  ]);
  deepStrictEqual(steps.map((s) => [s.action, s.target, s.error]), [
    ["PreStopHook", "a1", undefined],
    ["KillContainer", "a1", undefined],
    ["KillPodSandbox", "sb1", undefined],
  ]);
});

Deno.test("killPod() stops a container 2s after a preStop hook that outlived the grace period", async () => {
  const clock = new FakeClock(START);
  const pod = sidecarPod(5);
  pod.spec.initContainers = [];
  pod.spec.containers = [{
    name: "a1",
    image: "busybox",
    lifecycle: { preStop: { exec: { command: ["sleep", "100"] } } },
  }];
  const { calls, runtime } = fakeRuntime(clock, { hookMs: 100_000 });
  const { manager, status } = setup(pod, clock, runtime);
  const steps = await drive(clock, manager.killPod(pod, status));
  deepStrictEqual(calls.slice(0, 2), [
    { op: "exec", name: "a1", at: 0 },
    { op: "stop", name: "a1", at: 5_000, timeout: 2 },
  ]);
  // A hook cut off by the grace period reports nothing; only the kill is a step.
  deepStrictEqual(steps.map((s) => s.action), ["KillContainer", "KillPodSandbox"]);
});

/** One app container "a1" whose preStop hook fails, grace period 30 s. */
function failingPreStopPod(): Pod {
  const pod = sidecarPod(30);
  pod.spec.initContainers = [];
  pod.spec.containers = [{
    name: "a1",
    image: "busybox",
    lifecycle: { preStop: { exec: { command: ["false"] } } },
  }];
  return pod;
}

Deno.test("killPod() reports a failed preStop hook as FailedPreStopHook and still stops the container", async () => {
  const clock = new FakeClock(START);
  const pod = failingPreStopPod();
  const { calls, runtime } = fakeRuntime(clock, { hookExitCode: 1 });
  const { manager, status } = setup(pod, clock, runtime);
  const steps = await drive(clock, manager.killPod(pod, status));
  deepStrictEqual(steps[0], {
    action: "PreStopHook",
    target: "a1",
    error: { reason: "FailedPreStopHook", message: "PreStopHook failed" },
  });
  deepStrictEqual(steps[1], { action: "KillContainer", target: "a1" });
  strictEqual(calls.find((c) => c.op === "stop")?.timeout, 30);
});

Deno.test("killPod() records Killing as the kill begins: before the preStop hook and its FailedPreStopHook", async () => {
  const clock = new FakeClock(START);
  const pod = failingPreStopPod();
  const { runtime } = fakeRuntime(clock, { hookExitCode: 1, hookMs: 5_000 });
  const events = recordingEvents();
  const manager = unitRuntimeManager(runtime, { clock, events });
  const status = runtimePodStatus({
    name: "job",
    sandboxes: [runtimeSandbox({ createdAt: START - 120_000, ip: "10.0.0.9" })],
    containers: pod.spec.containers.map(running),
  });
  const kill = manager.killPod(pod, status);
  // The hook runs for 5 s: the Killing event is there already.
  await advance(clock, 1_000);
  deepStrictEqual(events.got.map((e) => [e.reason, e.message, e.ref.fieldPath]), [
    ["Killing", "Stopping container a1", "spec.containers{a1}"],
  ]);
  await drive(clock, kill);
  deepStrictEqual(events.got.map((e) => e.reason), ["Killing", "FailedPreStopHook"]);
});

Deno.test("killPod() with a zero grace period override skips preStop and ordering", async () => {
  const clock = new FakeClock(START);
  const pod = sidecarPod();
  pod.spec.containers[0]!.lifecycle = { preStop: { exec: { command: ["true"] } } };
  const { calls, runtime } = fakeRuntime(clock, { exitAfterMs: { a2: 3_000 } });
  const { manager, status } = setup(pod, clock, runtime);
  await drive(clock, manager.killPod(pod, status, 0));
  ok(!calls.some((c) => c.op === "exec"), "no preStop hook");
  for (const c of calls.filter((x) => x.op === "stop")) {
    strictEqual(c.at, 0, `${c.name} was stopped at once`);
    strictEqual(c.timeout, 0);
  }
});

Deno.test("killPod() without sidecars stops every container at once", async () => {
  const clock = new FakeClock(START);
  const pod = sidecarPod();
  pod.spec.initContainers = [{ name: "init2", image: "busybox" }];
  const { calls, runtime } = fakeRuntime(clock, { exitAfterMs: { a1: 4_000, init2: 1_000 } });
  const { manager, status } = setup(pod, clock, runtime);
  await drive(clock, manager.killPod(pod, status));
  deepStrictEqual(
    calls.filter((c) => c.op === "stop").map((c) => [c.name, c.at]),
    [["a1", 0], ["a2", 0], ["init2", 0]],
  );
});
