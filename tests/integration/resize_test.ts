/**
 * In-place resize on a real containerd + runc: the runtime manager syncs a
 * running pod whose allocation changed. A container whose resizePolicy is
 * NotRequired gets its new cpu shares, CFS quota and memory limit through
 * CRI UpdateContainerResources — read back from inside it, in the cgroup
 * files the Conformance suite reads — and keeps its container id and restart
 * count; a container whose memory policy is RestartContainer is restarted
 * with the new limit. The runtime's ContainerStatus reports the new values.
 * Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { Pod, ResourceRequirements } from "../../lib/api/types.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";

const SLEEP = ["sleep", "3600"];

/** Reads a container's cpu quota, cpu shares (v1 only) and memory limit from inside it. */
async function cgroupValues(
  read: (c: string, cmd: string[]) => Promise<string>,
  container: string,
): Promise<{ quota: string; shares: string | undefined; memory: string }> {
  const script = "if [ -f /sys/fs/cgroup/cgroup.controllers ]; then " +
    "echo v2; head -n1 /sys/fs/cgroup/cpu.max; echo -; head -n1 /sys/fs/cgroup/memory.max; " +
    "else echo v1; head -n1 /sys/fs/cgroup/cpu/cpu.cfs_quota_us; " +
    "head -n1 /sys/fs/cgroup/cpu/cpu.shares; head -n1 /sys/fs/cgroup/memory/memory.limit_in_bytes; fi";
  const [layout, quota, shares, memory] = (await read(container, ["sh", "-c", script])).trim()
    .split("\n");
  return {
    // v2's cpu.max is "<quota> <period>".
    quota: (quota ?? "").split(" ")[0]!,
    shares: layout === "v1" ? shares : undefined,
    memory: memory ?? "",
  };
}

function withResources(pod: Pod, name: string, resources: ResourceRequirements): Pod {
  const copy = structuredClone(pod);
  copy.spec.containers.find((c) => c.name === name)!.resources = resources;
  return copy;
}

Deno.test({
  name:
    "in-place resize on containerd: NotRequired changes the cgroup without a restart, RestartContainer restarts",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "resize" });
    const runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    try {
      const manager = testRuntimeManager(rt, runtime);
      const pod = hostNetworkPod(rt.images.busybox, { name: "resize", namespace: "rs" });
      const base = pod.spec.containers[0]!;
      pod.spec.restartPolicy = "Always";
      pod.spec.containers = [
        {
          ...base,
          name: "inplace",
          command: SLEEP,
          resources: {
            requests: { cpu: "20m", memory: "35Mi" },
            limits: { cpu: "30m", memory: "45Mi" },
          },
          resizePolicy: [
            { resourceName: "cpu", restartPolicy: "NotRequired" },
            { resourceName: "memory", restartPolicy: "NotRequired" },
          ],
        },
        {
          ...base,
          name: "restart",
          command: SLEEP,
          resources: { requests: { cpu: "20m", memory: "35Mi" }, limits: { memory: "45Mi" } },
          resizePolicy: [
            { resourceName: "cpu", restartPolicy: "NotRequired" },
            { resourceName: "memory", restartPolicy: "RestartContainer" },
          ],
        },
      ];
      const running = await runPod(runtime, manager, pod);
      const before = new Map(running.status.containers.map((c) => [c.name, c]));
      const signal = new AbortController().signal;

      await t.step("the cgroup starts with the spec's values", async () => {
        const v = await cgroupValues(running.read, "inplace");
        assert.equal(v.quota, "3000");
        if (v.shares !== undefined) assert.equal(v.shares, "20");
        assert.equal(v.memory, String(45 * 2 ** 20));
      });

      await t.step("a NotRequired resize updates the running container in place", async () => {
        let resized = withResources(pod, "inplace", {
          requests: { cpu: "25m", memory: "40Mi" },
          limits: { cpu: "35m", memory: "50Mi" },
        });
        resized = withResources(resized, "restart", {
          requests: { cpu: "25m", memory: "35Mi" },
          limits: { memory: "45Mi" },
        });
        const status = await manager.getPodStatus(pod.metadata.uid!);
        assert.ok(manager.isPodResizeInProgress(resized, status));
        const res = await manager.syncPod(resized, status, signal);
        assert.deepEqual(res.steps.filter((s) => s.error), []);
        assert.ok(res.steps.some((s) => s.action === "ResizePodInPlace"));
        assert.deepEqual(res.actions.containersToKill, []);

        const v = await cgroupValues(running.read, "inplace");
        assert.equal(v.quota, "3500");
        if (v.shares !== undefined) assert.equal(v.shares, "25");
        assert.equal(v.memory, String(50 * 2 ** 20));
        // Only cpu changed for the RestartContainer-on-memory container: updated in place.
        const r = await cgroupValues(running.read, "restart");
        if (r.shares !== undefined) assert.equal(r.shares, "25");
        assert.equal(r.memory, String(45 * 2 ** 20));

        const after = await manager.getPodStatus(pod.metadata.uid!);
        for (const name of ["inplace", "restart"]) {
          const c = after.containers.find((x) => x.name === name)!;
          assert.equal(c.id, before.get(name)!.id, `${name} kept its container`);
          assert.equal(c.restartCount, 0);
        }
        assert.ok(!manager.isPodResizeInProgress(resized, after));
        // containerd reports what it applied; the status is built from it.
        const reported = after.containers.find((x) => x.name === "inplace")!.resources;
        assert.deepEqual(reported, {
          cpuRequest: 25,
          cpuLimit: 35,
          memoryLimit: 50 * 2 ** 20,
        });
        pod.spec = resized.spec;
      });

      await t.step(
        "a RestartContainer memory resize restarts that container with the new limit",
        async () => {
          const resized = withResources(pod, "restart", {
            requests: { cpu: "25m", memory: "40Mi" },
            limits: { memory: "50Mi" },
          });
          const status = await manager.getPodStatus(pod.metadata.uid!);
          const res = await manager.syncPod(resized, status, signal);
          assert.deepEqual(res.steps.filter((s) => s.error), []);
          assert.deepEqual(res.actions.containersToKill.map((k) => k.name), ["restart"]);
          const after = await waitFor(
            "the restarted container running",
            () => manager.getPodStatus(pod.metadata.uid!),
            {
              timeoutMs: 20_000,
              until: (s) =>
                s.containers.find((c) => c.name === "restart")?.state === "running" &&
                s.containers.find((c) => c.name === "restart")?.id !== before.get("restart")!.id,
            },
          );
          const restarted = after.containers.find((c) => c.name === "restart")!;
          assert.equal(restarted.restartCount, 1);
          const id = restarted.id;
          const out = await runtime.execSync(id, [
            "sh",
            "-c",
            "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
          ], 10);
          assert.equal(new TextDecoder().decode(out.stdout).trim(), String(50 * 2 ** 20));
          const inplace = after.containers.find((c) => c.name === "inplace")!;
          assert.equal(inplace.id, before.get("inplace")!.id, "the other container kept running");
        },
      );

      await running.cleanup();
    } finally {
      runtime.close();
      await rt.stop();
    }
  },
});
