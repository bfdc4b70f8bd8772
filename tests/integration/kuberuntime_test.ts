/**
 * The pod runtime executor against a real containerd (tests/harness): pods
 * started, restarted with CrashLoopBackOff, replaced on a spec change, killed
 * with their grace period and removed. Host-network pods only, so no traffic
 * leaves the node. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Container, Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import {
  hashContainer,
  KubeRuntimeManager,
  type RuntimePodStatus,
} from "../../lib/kuberuntime/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { readLogTail } from "../../lib/logs/mod.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { TEST_NODE } from "./_manager.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";

function makePod(
  rt: TestRuntime,
  name: string,
  containers: Partial<Container>[],
  mutate: (p: Pod) => void = () => {},
): Pod {
  const pod = hostNetworkPod(rt.images.busybox, {
    name,
    containers: containers.map((c, i) => ({ name: `c${i}`, ...c })),
    spec: { terminationGracePeriodSeconds: 2 },
  });
  mutate(pod);
  return pod;
}

/** Polls the pod's status until `pred` holds (real containers take real time). */
function statusWhere(
  manager: KubeRuntimeManager,
  uid: string,
  pred: (s: RuntimePodStatus) => boolean,
  what: string,
  ms = 20_000,
): Promise<RuntimePodStatus> {
  return waitFor(what, () => manager.getPodStatus(uid), {
    timeoutMs: ms,
    intervalMs: 200,
    until: pred,
  });
}

function failedSteps(steps: { error?: unknown }[]) {
  return steps.filter((s) => s.error);
}

Deno.test({
  name: "KubeRuntimeManager runs, restarts, replaces, kills and removes pods on containerd",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "kuberuntime" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const rootDir = `${rt.dir}/kubelet`;
      const podLogsDir = `${rt.dir}/pod-logs`;
      const manager = new KubeRuntimeManager({
        runtime,
        clock: realClock,
        logger: silentLogger,
        rootDir,
        podLogsDir,
        cgroupRoot: rt.cgroupParent,
        nodeName: "test-node",
        hostIPs: ["127.0.0.1"],
        ...TEST_NODE,
        readLogTail,
      });
      const signal = new AbortController().signal;

      await t.step(
        "a host-network busybox pod runs, and a second sync plans nothing",
        async (st) => {
          const pod = makePod(rt, "sleeper", [{ command: ["sleep", "3600"] }], (p) => {
            p.spec.volumes = [{ name: "scratch", emptyDir: {} }];
            p.spec.containers[0]!.volumeMounts = [{ name: "scratch", mountPath: "/scratch" }];
          });
          const uid = pod.metadata.uid!;
          const first = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          assert.deepEqual(failedSteps(first.steps), []);
          assert.equal(first.actions.createSandbox, true);
          assert.deepEqual(first.steps.map((s) => s.action), [
            "CreatePodSandbox",
            "StartContainer",
          ]);
          const status = await statusWhere(
            manager,
            uid,
            (s) => s.containers[0]?.state === "running",
            "running",
          );
          assert.equal(status.sandboxes[0]!.hostNetwork, true);
          assert.equal(status.containers[0]!.hash, hashContainer(pod.spec.containers[0]!));
          const second = await manager.syncPod(pod, status, signal);
          assert.deepEqual(second.actions, {
            killPod: false,
            createSandbox: false,
            sandboxId: status.sandboxes[0]!.id,
            attempt: status.sandboxes[0]!.attempt,
            initContainersToStart: [],
            containersToStart: [],
            ephemeralContainersToStart: [],
            containersToKill: [],
            inBackoff: [],
          });
          assert.deepEqual(second.steps, []);
          const listed = await manager.listPods(signal);
          assert.equal(listed.get(uid)?.containers.length, 1);
          // The sandbox's log directory exists; the emptyDir was made under the root dir.
          await Deno.stat(`${podLogsDir}/default_sleeper_${uid}`);
          await Deno.stat(`${rootDir}/pods/${uid}/volumes/kubernetes.io~empty-dir/scratch`);

          await st.step("removePod() cleans up containers, sandboxes and directories", async () => {
            const killed = await manager.killPod(pod, status, 0, signal);
            assert.deepEqual(failedSteps(killed), []);
            const removed = await manager.removePod(await manager.getPodStatus(uid), signal);
            assert.deepEqual(failedSteps(removed), []);
            assert.equal((await manager.listPods(signal)).has(uid), false);
            await assert.rejects(Deno.stat(`${rootDir}/pods/${uid}`), Deno.errors.NotFound);
            await assert.rejects(
              Deno.stat(`${podLogsDir}/default_sleeper_${uid}`),
              Deno.errors.NotFound,
            );
          });
        },
      );

      await t.step(
        "a container that exits 1 is restarted, then held in CrashLoopBackOff",
        async () => {
          const pod = makePod(rt, "crasher", [{ command: ["sh", "-c", "exit 1"] }]);
          const uid = pod.metadata.uid!;
          const first = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          assert.deepEqual(failedSteps(first.steps), []);
          let status = await statusWhere(
            manager,
            uid,
            (s) => s.containers[0]?.state === "exited",
            "first exit",
          );
          assert.equal(status.containers[0]!.exitCode, 1);
          const restart = await manager.syncPod(pod, status, signal);
          assert.deepEqual(restart.actions.containersToStart, [0]);
          assert.deepEqual(failedSteps(restart.steps), []);
          status = await statusWhere(
            manager,
            uid,
            (s) => s.containers.length === 2 && s.containers[0]!.state === "exited",
            "second exit",
          );
          assert.equal(status.containers[0]!.restartCount, 1);
          const held = await manager.syncPod(pod, status, signal);
          assert.deepEqual(held.actions.containersToStart, []);
          assert.equal(held.actions.inBackoff[0]?.name, "c0");
          assert.equal(held.actions.inBackoff[0]?.reason, "CrashLoopBackOff");
          assert.equal(held.lastErrors.get("c0")?.reason, "CrashLoopBackOff");
          assert.deepEqual(held.steps, []);
          await manager.killPod(pod, status, 0, signal);
          await manager.removePod(await manager.getPodStatus(uid), signal);
        },
      );

      await t.step(
        "an image change kills the old container and starts one with the new hash; a command change does not",
        async () => {
          const pod = makePod(rt, "changer", [{ command: ["sleep", "3600"] }]);
          const uid = pod.metadata.uid!;
          await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          const before = await statusWhere(
            manager,
            uid,
            (s) => s.containers[0]?.state === "running",
            "running",
          );
          // Only name and image are hashed, as upstream's HashContainer: a command change
          // (like any field the apiserver defaults) keeps the running container.
          const recommanded: Pod = structuredClone(pod);
          recommanded.spec.containers[0]!.command = ["sleep", "3601"];
          const kept = await manager.syncPod(recommanded, before, signal);
          assert.deepEqual(kept.actions.containersToKill, []);
          assert.deepEqual(kept.steps, []);
          const changed: Pod = structuredClone(pod);
          changed.spec.containers[0]!.image = rt.images.pause;
          delete changed.spec.containers[0]!.command;
          const res = await manager.syncPod(changed, before, signal);
          assert.equal(res.actions.containersToKill[0]?.reason, "SpecChanged");
          assert.deepEqual(res.steps.map((s) => [s.action, s.error?.reason]), [
            ["KillContainer", undefined],
            ["StartContainer", undefined],
          ]);
          const after = await statusWhere(
            manager,
            uid,
            (s) =>
              s.containers[0]?.state === "running" &&
              s.containers[0].id !== before.containers[0]!.id,
            "replacement",
          );
          assert.equal(after.containers[0]!.hash, hashContainer(changed.spec.containers[0]!));
          assert.equal(after.containers[1]!.state, "exited");
          await manager.killPod(changed, after, 0, signal);
          await manager.removePod(await manager.getPodStatus(uid), signal);
        },
      );

      await t.step(
        "killPod() honours the grace period: TERM-trapping exits fast, TERM-ignoring is killed after it",
        async () => {
          const pod = makePod(rt, "killer", [
            {
              name: "polite",
              command: [
                "sh",
                "-c",
                "trap 'exit 0' TERM; touch /trapped; while true; do sleep 1; done",
              ],
            },
            {
              name: "stubborn",
              command: ["sh", "-c", "trap '' TERM; touch /trapped; while true; do sleep 1; done"],
            },
          ], (p) => (p.spec.terminationGracePeriodSeconds = 4));
          const uid = pod.metadata.uid!;
          await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          const running = await statusWhere(
            manager,
            uid,
            (s) => s.containers.length === 2 && s.containers.every((c) => c.state === "running"),
            "both running",
          );
          // Each shell touches /trapped once its trap is installed.
          for (const c of running.containers) {
            await waitFor(`${c.name}'s TERM trap`, async () => {
              const r = await runtime!.execSync(c.id, ["test", "-f", "/trapped"], 5);
              return r.exitCode === 0;
            }, { timeoutMs: 10_000, intervalMs: 100 });
          }
          const started = Date.now();
          const steps = await manager.killPod(pod, running, undefined, signal);
          const took = Date.now() - started;
          assert.deepEqual(failedSteps(steps), []);
          const done = await manager.getPodStatus(uid);
          const polite = done.containers.find((c) => c.name === "polite")!;
          const stubborn = done.containers.find((c) => c.name === "stubborn")!;
          assert.equal(polite.exitCode, 0);
          assert.ok(
            polite.finishedAt - started < 3000,
            `polite took ${polite.finishedAt - started}ms`,
          );
          assert.equal(stubborn.exitCode, 137);
          assert.ok(
            stubborn.finishedAt - started >= 3500,
            `stubborn died after ${stubborn.finishedAt - started}ms`,
          );
          assert.ok(took < 15_000, `killPod took ${took}ms`);
          assert.equal(done.sandboxes[0]!.state, "notready");
          // Idempotent: killing again is all success.
          assert.deepEqual(failedSteps(await manager.killPod(pod, done, undefined, signal)), []);
          await manager.removePod(done, signal);
        },
      );

      await t.step(
        "a pod-network pod gets its hostname, managed /etc/hosts and downward-API env",
        async () => {
          const pod = makePod(rt, "netpod", [{
            command: ["sleep", "3600"],
            env: [
              { name: "MY_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              { name: "GREETING", value: "hi from $(MY_IP)" },
            ],
          }], (p) => (p.spec.hostNetwork = false));
          const uid = pod.metadata.uid!;
          const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          assert.deepEqual(failedSteps(res.steps), []);
          const status = await statusWhere(
            manager,
            uid,
            (s) => s.containers[0]?.state === "running",
            "running",
          );
          const ip = status.sandboxes[0]!.ip;
          assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
          const exec = async (cmd: string[]) =>
            new TextDecoder().decode(
              (await runtime!.execSync(status.containers[0]!.id, cmd, 10)).stdout,
            );
          assert.equal((await exec(["hostname"])).trim(), "netpod");
          const hosts = await exec(["cat", "/etc/hosts"]);
          assert.ok(hosts.startsWith("# Kubernetes-managed hosts file.\n"), hosts);
          assert.ok(hosts.endsWith(`\n${ip}\tnetpod\n`), hosts);
          assert.equal((await exec(["sh", "-c", "echo $GREETING"])).trim(), `hi from ${ip}`);
          await manager.killPod(pod, status, 0, signal);
          await manager.removePod(await manager.getPodStatus(uid), signal);
        },
      );

      await t.step(
        "a container whose start fails is rolled back and reported as RunContainerError",
        async () => {
          const pod = makePod(rt, "badcmd", [{ command: ["/no/such/binary"] }]);
          const uid = pod.metadata.uid!;
          const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          const err = res.lastErrors.get("c0");
          assert.equal(err?.reason, "RunContainerError");
          assert.match(
            err?.message ?? "",
            /^failed to start container "c0" of pod "default\/badcmd": /,
          );
          const status = await manager.getPodStatus(uid);
          assert.equal(status.containers.length, 0);
          await manager.killPod(pod, status, 0, signal);
          await manager.removePod(await manager.getPodStatus(uid), signal);
        },
      );

      await t.step(
        "a missing image with pull policy Never fails with ErrImageNeverPull",
        async () => {
          const pod = makePod(rt, "neverpull", [{ image: "denolet.test/missing:1" }]);
          const uid = pod.metadata.uid!;
          const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
          const err = res.lastErrors.get("c0");
          assert.equal(err?.reason, "ErrImageNeverPull");
          assert.equal(
            err?.message,
            'Container image "denolet.test/missing:1" is not present with pull policy of Never',
          );
          // The sandbox was made; nothing half-created is left for the container.
          const status = await manager.getPodStatus(uid);
          assert.equal(status.sandboxes.length, 1);
          assert.equal(status.containers.length, 0);
          await manager.killPod(pod, status, 0, signal);
          await manager.removePod(await manager.getPodStatus(uid), signal);
        },
      );
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
