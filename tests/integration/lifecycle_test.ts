/**
 * Lifecycle hooks, init containers and sidecars against a real containerd
 * (tests/harness): every container appends what happens to it to a file in
 * a hostPath directory the test reads, so the order of starts, hooks and
 * stop signals is observable. Host-network pods only. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Container, Pod, PodStatus } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type {
  KubeRuntimeManager,
  RuntimePodStatus,
  SyncPodResult,
} from "../../lib/kuberuntime/mod.ts";
import { generatePodStatus } from "../../lib/status/mod.ts";
import { BackoffStore } from "../../lib/util/backoff.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { testRuntimeManager } from "./_manager.ts";
import { hostNetworkPod, recordingEvents, shellExec, waitFor } from "../kit/mod.ts";

/**
 * A shell that logs `<name>-start`, and on SIGTERM logs `<name>-term` and
 * exits 0. The loop sleeps 1s at a time, so a TERM is handled within 1s.
 */
function logger(name: string): string[] {
  return [
    "sh",
    "-c",
    `trap 'echo ${name}-term >> /log/events; exit 0' TERM; echo ${name}-start >> /log/events; ` +
    `while true; do sleep 1; done`,
  ];
}

function makePod(
  rt: TestRuntime,
  name: string,
  logDir: string,
  spec: { containers: Partial<Container>[]; initContainers?: Partial<Container>[] },
  mutate: (p: Pod) => void = () => {},
): Pod {
  const logging = (c: Partial<Container>, i: number, prefix: string): Container => ({
    name: `${prefix}${i}`,
    volumeMounts: [{ name: "log", mountPath: "/log" }],
    ...c,
  });
  const pod = hostNetworkPod(rt.images.busybox, {
    name,
    containers: spec.containers.map((c, i) => logging(c, i, "c")),
    spec: {
      terminationGracePeriodSeconds: 10,
      volumes: [{ name: "log", hostPath: { path: logDir, type: "DirectoryOrCreate" } }],
      ...(spec.initContainers
        ? { initContainers: spec.initContainers.map((c, i) => logging(c, i, "i")) }
        : {}),
    },
  });
  mutate(pod);
  return pod;
}

async function events(logDir: string): Promise<string[]> {
  try {
    return (await Deno.readTextFile(`${logDir}/events`)).split("\n").filter((l) => l !== "");
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
}

/**
 * Waits until the pod's containers logged `n` events: a logger() logs its start only
 * once its TERM trap is installed.
 */
function loggedAtLeast(logDir: string, n: number): Promise<string[]> {
  return waitFor(`${n} events in ${logDir}/events`, () => events(logDir), {
    timeoutMs: 10_000,
    intervalMs: 100,
    until: (logged) => logged.length >= n,
  });
}

/** What one round of {@link syncUntil} saw. */
interface Round {
  runtime: RuntimePodStatus;
  result: SyncPodResult;
  status: PodStatus;
}

/**
 * Syncs the pod every 300ms, as the pod workers would, until `done` holds
 * for the runtime status read before a sync (real containers take real time).
 */
async function syncUntil(
  manager: KubeRuntimeManager,
  pod: Pod,
  done: (runtime: RuntimePodStatus, previous: PodStatus | undefined) => boolean,
  what: string,
  ms = 60_000,
): Promise<Round[]> {
  const rounds: Round[] = [];
  const signal = new AbortController().signal;
  let previous: PodStatus | undefined;
  await waitFor(what, async () => {
    const runtime = await manager.getPodStatus(pod.metadata.uid!);
    if (done(runtime, previous)) return { done: true, containers: runtime.containers };
    const result = await manager.syncPod(pod, runtime, signal);
    previous = generatePodStatus({
      pod,
      runtime,
      inBackoff: result.actions.inBackoff,
      lastErrors: result.lastErrors,
      previous,
      now: Date.now(),
    });
    rounds.push({ runtime, result, status: previous });
    return { done: false, containers: runtime.containers };
  }, { timeoutMs: ms, intervalMs: 300, until: (seen) => seen.done });
  return rounds;
}

const isRunning = (s: RuntimePodStatus, name: string) =>
  s.containers.find((c) => c.name === name)?.state === "running";

Deno.test({
  name: "Lifecycle hooks, init containers and sidecars behave as upstream on containerd",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "lifecycle" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const recorded = recordingEvents();
      /** The events recorded about one pod: [reason, message]. */
      const eventsOf = (pod: Pod) =>
        recorded.got.filter((e) => e.ref.name === pod.metadata.name).map((e) => [
          e.reason,
          e.message,
        ]);
      const manager = testRuntimeManager(rt, runtime, {
        events: recorded,
        // Short restart backoff so a crash-looping init container gets through quickly,
        // yet longer than a sync round on a loaded machine (the test must see it held).
        backoff: new BackoffStore({ initialMs: 2_000, maxMs: 4_000 }),
      });
      const signal = new AbortController().signal;
      const cleanup = async (pod: Pod) => {
        const uid = pod.metadata.uid!;
        await manager.killPod(pod, await manager.getPodStatus(uid), 0, signal);
        await manager.removePod(await manager.getPodStatus(uid), signal);
      };

      await t.step(
        "postStart runs before the next container starts; preStop before SIGTERM",
        async () => {
          const logDir = `${rt.dir}/hooks`;
          const pod = makePod(rt, "hooks", logDir, {
            containers: [
              {
                command: logger("c0"),
                lifecycle: {
                  // Slow enough that c1 would start first if postStart did not block.
                  postStart: shellExec("sleep 1; echo c0-poststart >> /log/events"),
                  preStop: shellExec("echo c0-prestop >> /log/events"),
                },
              },
              { command: logger("c1") },
            ],
          });
          const res = await manager.syncPod(
            pod,
            await manager.getPodStatus(pod.metadata.uid!),
            signal,
          );
          assert.deepEqual(res.steps.map((s) => [s.action, s.target, s.error?.reason]), [
            ["CreatePodSandbox", res.steps[0]!.target, undefined],
            ["StartContainer", "c0", undefined],
            ["PostStartHook", "c0", undefined],
            ["StartContainer", "c1", undefined],
          ]);
          await syncUntil(manager, pod, (s) => isRunning(s, "c0") && isRunning(s, "c1"), "running");
          await loggedAtLeast(logDir, 3);
          assert.deepEqual(await events(logDir), ["c0-start", "c0-poststart", "c1-start"]);

          const killed = await manager.killPod(pod, await manager.getPodStatus(pod.metadata.uid!));
          assert.deepEqual(killed.filter((s) => s.error), []);
          assert.ok(killed.some((s) => s.action === "PreStopHook" && s.target === "c0"));
          const log = await events(logDir);
          assert.ok(
            log.indexOf("c0-prestop") >= 0 && log.indexOf("c0-prestop") < log.indexOf("c0-term"),
            `preStop must come before TERM: ${log}`,
          );
          assert.ok(log.includes("c1-term"), `${log}`);
          // As upstream: Killing is recorded as the kill begins, before the preStop hook.
          assert.deepEqual(eventsOf(pod).filter(([r]) => r === "Killing").sort(), [
            ["Killing", "Stopping container c0"],
            ["Killing", "Stopping container c1"],
          ]);
          await manager.removePod(await manager.getPodStatus(pod.metadata.uid!), signal);
        },
      );

      await t.step(
        "a failing postStart kills the container and reports FailedPostStartHook",
        async () => {
          const logDir = `${rt.dir}/hookfail`;
          const pod = makePod(rt, "hookfail", logDir, {
            containers: [{ command: logger("c0"), lifecycle: { postStart: shellExec("exit 3") } }],
          }, (p) => (p.spec.terminationGracePeriodSeconds = 2));
          const res = await manager.syncPod(
            pod,
            await manager.getPodStatus(pod.metadata.uid!),
            signal,
          );
          // Upstream's order of events: Created, Started, FailedPostStartHook, Killing.
          assert.deepEqual(res.steps.slice(1).map((s) => [s.action, s.error?.reason]), [
            ["StartContainer", undefined],
            ["PostStartHook", "FailedPostStartHook"],
            ["KillContainer", undefined],
            ["StartContainer", "PostStartHookError"],
          ]);
          assert.equal(res.steps[2]!.error?.message, "PostStartHook failed");
          // (The image manager's Pulled and the DNS warning aside.)
          const kinds = new Set(["Created", "Started", "FailedPostStartHook", "Killing"]);
          assert.deepEqual(eventsOf(pod).filter(([r]) => kinds.has(r!)), [
            ["Created", "Created container c0"],
            ["Started", "Started container c0"],
            ["FailedPostStartHook", "PostStartHook failed"],
            ["Killing", "FailedPostStartHook"],
          ]);
          const err = res.lastErrors.get("c0");
          assert.equal(err?.reason, "PostStartHookError");
          assert.match(
            err?.message ?? "",
            /^Exec lifecycle hook \(\[sh -c exit 3\]\) for Container "c0" in Pod "hookfail_default\(.+\)" failed - error: command 'sh -c exit 3' exited with 3: /,
          );
          const after = await manager.getPodStatus(pod.metadata.uid!);
          assert.equal(after.containers[0]?.state, "exited");
          await cleanup(pod);
        },
      );

      await t.step(
        "init containers run in order and a failing one is retried until it succeeds",
        async () => {
          const logDir = `${rt.dir}/init`;
          const pod = makePod(rt, "init", logDir, {
            initContainers: [
              { command: ["sh", "-c", "echo i0 >> /log/events"] },
              {
                // Fails twice, then succeeds, counting its runs in a file.
                command: [
                  "sh",
                  "-c",
                  "n=$(cat /log/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > /log/count; " +
                  "echo i1-$n >> /log/events; [ $n -ge 3 ]",
                ],
              },
            ],
            containers: [{ command: logger("c0") }],
          });
          const rounds = await syncUntil(manager, pod, (s) => isRunning(s, "c0"), "app running");
          await loggedAtLeast(logDir, 5);
          assert.deepEqual(await events(logDir), ["i0", "i1-1", "i1-2", "i1-3", "c0-start"]);
          // On the way: the failed init container waited in CrashLoopBackOff, the app in PodInitializing.
          const held = rounds.find((r) => r.result.actions.inBackoff.some((b) => b.name === "i1"));
          assert.ok(held, "i1 was held in CrashLoopBackOff at least once");
          const i1 = held.status.initContainerStatuses?.find((c) => c.name === "i1");
          assert.equal(i1?.state.waiting?.reason, "CrashLoopBackOff");
          assert.equal(i1?.lastState.terminated?.reason, "Error");
          assert.equal(held.status.phase, "Pending");
          const app = held.status.containerStatuses?.find((c) => c.name === "c0");
          assert.equal(app?.state.waiting?.reason, "PodInitializing");
          const cond = held.status.conditions?.find((c) => c.type === "Initialized");
          assert.equal(cond?.reason, "ContainersNotInitialized");
          assert.equal(cond?.message, "containers with incomplete status: [i1]");
          await cleanup(pod);
        },
      );

      await t.step(
        "sidecars start in order and stop in reverse order after the app containers",
        async () => {
          const logDir = `${rt.dir}/sidecars`;
          const pod = makePod(rt, "sidecars", logDir, {
            initContainers: [
              { command: logger("sc0"), restartPolicy: "Always" },
              { command: logger("sc1"), restartPolicy: "Always" },
            ],
            containers: [{ command: logger("c0") }],
          });
          await syncUntil(
            manager,
            pod,
            (s) => isRunning(s, "c0") && isRunning(s, "i0") && isRunning(s, "i1"),
            "all running",
          );
          await loggedAtLeast(logDir, 3);
          assert.deepEqual(await events(logDir), ["sc0-start", "sc1-start", "c0-start"]);
          const started = Date.now();
          const killed = await manager.killPod(pod, await manager.getPodStatus(pod.metadata.uid!));
          assert.deepEqual(killed.filter((s) => s.error), []);
          assert.deepEqual((await events(logDir)).slice(3), ["c0-term", "sc1-term", "sc0-term"]);
          assert.ok(Date.now() - started < 10_000, "within the grace period");
          await manager.removePod(await manager.getPodStatus(pod.metadata.uid!), signal);
        },
      );

      await t.step("a Job-like pod with a sidecar reaches Succeeded", async () => {
        const logDir = `${rt.dir}/job`;
        const pod = makePod(rt, "job", logDir, {
          initContainers: [{ command: logger("sc0"), restartPolicy: "Always" }],
          containers: [{ command: ["sh", "-c", "sleep 1; echo c0-done >> /log/events"] }],
        }, (p) => (p.spec.restartPolicy = "Never"));
        const rounds = await syncUntil(
          manager,
          pod,
          (_s, previous) => previous?.phase === "Succeeded",
          "Succeeded",
        );
        const last = await manager.getPodStatus(pod.metadata.uid!);
        const sidecar = last.containers.find((c) => c.name === "i0");
        assert.equal(sidecar?.state, "exited", "the sidecar was stopped");
        assert.equal(last.containers.find((c) => c.name === "c0")?.exitCode, 0);
        assert.ok(rounds.some((r) => r.result.actions.killPod && !r.result.actions.createSandbox));
        assert.deepEqual(await events(logDir), ["sc0-start", "c0-done", "sc0-term"]);
        await cleanup(pod);
      });
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
