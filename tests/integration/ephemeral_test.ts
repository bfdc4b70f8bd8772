/**
 * Ephemeral containers (`kubectl debug`) on a real containerd: added to a
 * running pod (or one stuck in an init container), started once in its
 * sandbox, in the process namespace of the container they target, logged
 * beside the others, never restarted, and stopped with the pod. Host-network
 * pods only. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { EphemeralContainer, Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type { KubeRuntimeManager, RuntimePodStatus } from "../../lib/kuberuntime/mod.ts";
import { generatePodStatus } from "../../lib/status/mod.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";
import { testRuntimeManager } from "./_manager.ts";

/** Polls the pod's runtime status until `pred` holds. */
function statusWhere(
  manager: KubeRuntimeManager,
  uid: string,
  pred: (s: RuntimePodStatus) => boolean,
  what: string,
): Promise<RuntimePodStatus> {
  return waitFor(what, () => manager.getPodStatus(uid), {
    timeoutMs: 20_000,
    intervalMs: 200,
    until: pred,
  });
}

const stateOf = (s: RuntimePodStatus, name: string) =>
  s.containers.find((c) => c.name === name)?.state;

/** The text lines of a CRI-format log file ("<time> <stream> <tag> <text>"). */
async function logLines(path: string): Promise<string[]> {
  const text = await Deno.readTextFile(path);
  return text.split("\n").filter((l) => l !== "").map((l) => l.split(" ").slice(3).join(" "));
}

Deno.test({
  name: "ephemeral containers start in a running pod, see their target's processes, run once",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "ephemeral" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const manager = testRuntimeManager(rt, runtime);
      const signal = new AbortController().signal;
      const pod: Pod = hostNetworkPod(rt.images.busybox, {
        name: "debugged",
        containers: [{ name: "main", command: ["sleep", "3600"] }],
        spec: { terminationGracePeriodSeconds: 2 },
      });
      const uid = pod.metadata.uid!;
      const debuggerOf = (
        name: string,
        command: string[],
        target = "main",
      ): EphemeralContainer => ({
        name,
        image: rt.images.busybox,
        imagePullPolicy: "Never",
        targetContainerName: target,
        command,
      });
      const first = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
      assert.deepEqual(first.steps.filter((s) => s.error), []);
      await statusWhere(manager, uid, (s) => stateOf(s, "main") === "running", "main running");

      await t.step("a debugger targeting main runs in main's pid namespace", async () => {
        pod.spec.ephemeralContainers = [debuggerOf("dbg", ["sh", "-c", "ps; echo done"])];
        const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
        assert.deepEqual(res.actions.ephemeralContainersToStart, [0]);
        assert.deepEqual(res.steps, [{ action: "StartContainer", target: "dbg" }]);
        const status = await statusWhere(
          manager,
          uid,
          (s) => stateOf(s, "dbg") === "exited",
          "dbg exited",
        );
        const dbg = status.containers.find((c) => c.name === "dbg")!;
        assert.equal(dbg.exitCode, 0);
        assert.equal(dbg.restartCount, 0);
        const lines = await logLines(`${rt.dir}/pod-logs/default_debugged_${uid}/dbg/0.log`);
        // main's sleep is PID 1 of the namespace the debugger joined.
        assert.ok(
          lines.some((l) => /^\s*1\s.*sleep 3600$/.test(l)),
          `ps output:\n${lines.join("\n")}`,
        );
        assert.equal(lines.at(-1), "done");
        const api = generatePodStatus({ pod, runtime: status, inBackoff: [], now: Date.now() });
        assert.equal(api.phase, "Running");
        assert.equal(api.ephemeralContainerStatuses?.[0]?.state.terminated?.exitCode, 0);
      });

      await t.step("an exited debugger is never started again", async () => {
        const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
        assert.deepEqual(res.actions.ephemeralContainersToStart, []);
        assert.deepEqual(res.steps, []);
      });

      await t.step("a debugger whose target has no instance fails with the reason", async () => {
        pod.spec.ephemeralContainers!.push(debuggerOf("lost", ["true"], "ghost"));
        const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
        assert.deepEqual(res.lastErrors.get("lost"), {
          reason: "CreateContainerConfigError",
          message: 'failed to generate the config of container "lost" of pod "default/debugged": ' +
            "unable to find target container ghost",
        });
        pod.spec.ephemeralContainers!.pop();
      });

      await t.step("a running debugger is stopped with the pod", async () => {
        pod.spec.ephemeralContainers!.push(debuggerOf("shell", ["sleep", "3600"]));
        const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
        assert.deepEqual(res.actions.ephemeralContainersToStart, [1]);
        const running = await statusWhere(
          manager,
          uid,
          (s) => stateOf(s, "shell") === "running",
          "shell running",
        );
        const steps = await manager.killPod(pod, running, 0, signal);
        assert.deepEqual(steps.filter((s) => s.error), []);
        const stopped = await manager.getPodStatus(uid);
        assert.deepEqual(stopped.containers.map((c) => c.state), ["exited", "exited", "exited"]);
        await manager.removePod(stopped, signal);
      });

      await t.step("a pod stuck in an init container can be debugged", async () => {
        const stuck = hostNetworkPod(rt.images.busybox, {
          name: "stuck",
          containers: [{ name: "app", command: ["true"] }],
          spec: { terminationGracePeriodSeconds: 2 },
        });
        stuck.spec.initContainers = [{
          name: "wait",
          image: rt.images.busybox,
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
        }];
        const id = stuck.metadata.uid!;
        await manager.syncPod(stuck, await manager.getPodStatus(id), signal);
        await statusWhere(manager, id, (s) => stateOf(s, "wait") === "running", "init running");
        stuck.spec.ephemeralContainers = [debuggerOf("dbg", ["sh", "-c", "ps"], "wait")];
        const res = await manager.syncPod(stuck, await manager.getPodStatus(id), signal);
        assert.deepEqual(res.actions.initContainersToStart, []);
        assert.deepEqual(res.steps, [{ action: "StartContainer", target: "dbg" }]);
        await statusWhere(manager, id, (s) => stateOf(s, "dbg") === "exited", "dbg exited");
        const lines = await logLines(`${rt.dir}/pod-logs/default_stuck_${id}/dbg/0.log`);
        assert.ok(lines.some((l) => /^\s*1\s.*sleep 3600$/.test(l)), lines.join("\n"));
        const running = await manager.getPodStatus(id);
        assert.equal(stateOf(running, "app"), undefined);
        await manager.killPod(stuck, running, 0, signal);
        await manager.removePod(await manager.getPodStatus(id), signal);
      });
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
