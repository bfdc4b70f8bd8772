/**
 * In-place resize through a real kube-apiserver's `pods/resize` subresource,
 * as upstream's pod_resize e2e tests check it (test/e2e/common/node/
 * pod_resize.go): the pod reports each container's `resources` and
 * `allocatedResources`; a resize patch bumps the generation, the kubelet
 * actuates it (a NotRequired container keeps running with new cgroup
 * values, a RestartContainer one restarts once), `status.observedGeneration`
 * catches up and no resize condition is left; a resize that does not fit the
 * node beside another pod is Deferred with PodResizePending and a
 * ResizeDeferred event, and goes through once that pod is deleted.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { ContainerStatus, Pod } from "../../lib/api/types.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode, type TestNode } from "./_node.ts";
import { findCgroupHierarchies } from "../../lib/cm/mod.ts";

const MI = 2 ** 20;

Deno.test({
  name:
    "pods/resize through the apiserver: actuated in place or by restart, status resources, Deferred when it does not fit",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    let node: TestNode | undefined;
    try {
      node = await startNode({ name: "resize" });
      const n = node;
      const c = n.cluster;
      const ns = await n.namespace();
      const image = n.runtime.images.busybox;
      type Policy = "NotRequired" | "RestartContainer";
      const policy = (cpu: Policy, memory: Policy) => [
        { resourceName: "cpu", restartPolicy: cpu },
        { resourceName: "memory", restartPolicy: memory },
      ];
      await n.runPod({
        metadata: { name: "rs", namespace: ns },
        spec: {
          nodeName: NODE,
          hostNetwork: true,
          restartPolicy: "OnFailure",
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "c1",
              image,
              imagePullPolicy: "Never",
              command: ["sleep", "3600"],
              resources: {
                requests: { cpu: "20m", memory: "35Mi" },
                limits: { cpu: "30m", memory: "45Mi" },
              },
              resizePolicy: policy("NotRequired", "NotRequired"),
            },
            {
              name: "c2",
              image,
              imagePullPolicy: "Never",
              command: ["sleep", "3600"],
              resources: { requests: { cpu: "20m", memory: "35Mi" }, limits: { memory: "45Mi" } },
              resizePolicy: policy("NotRequired", "RestartContainer"),
            },
          ],
        },
      });
      const get = () => c.kubectlJson<Pod>(["get", "pod", "-n", ns, "rs"]);
      const statusOf = (p: Pod, name: string) =>
        p.status?.containerStatuses?.find((s) => s.name === name) as ContainerStatus;
      const cgroup = async (container: string, v1: string, v2: string) => {
        const script = `cat /sys/fs/cgroup/${v2} 2>/dev/null || cat /sys/fs/cgroup/${v1}`;
        const r = await c.kubectl([
          "exec",
          "-n",
          ns,
          "rs",
          "-c",
          container,
          "--",
          "sh",
          "-c",
          script,
        ]);
        assert.equal(r.code, 0, r.stderr);
        return r.stdout.trim();
      };
      const patch = async (body: unknown) => {
        const r = await c.kubectl([
          "patch",
          "pod",
          "-n",
          ns,
          "rs",
          "--subresource=resize",
          "--type=strategic",
          "-p",
          JSON.stringify(body),
        ]);
        assert.equal(r.code, 0, r.stderr);
      };
      const settled = (generation: number) =>
        waitFor(`generation ${generation} actuated`, async () => {
          const p = await get();
          const resizing = p.status?.conditions?.some((x) => x.type.startsWith("PodResize"));
          const ready = p.status?.conditions?.some((x) =>
            x.type === "Ready" && x.status === "True"
          );
          return p.metadata.generation === generation &&
              p.status?.observedGeneration === generation && !resizing && ready
            ? p
            : undefined;
        }, { timeoutMs: 60_000, log: n.log });

      const created = await settled(1);
      // The pod's own cgroup (Burstable, under the harness's --cgroup-root): its memory limit
      // is the sum of the containers' (upstream's ResourceConfigForPod), and follows a resize.
      const memoryMount = findCgroupHierarchies().v1.find((h) => h.controllers.includes("memory"));
      const podMemory = () =>
        Deno.readTextFileSync(
          `${
            memoryMount!.path
          }${n.runtime.cgroupParent}/kubepods/burstable/pod${created.metadata.uid}/memory.limit_in_bytes`,
        ).trim();
      if (memoryMount) assert.equal(podMemory(), String(90 * MI));
      const c1 = statusOf(created, "c1");
      assert.deepEqual(c1.resources, {
        requests: { cpu: "20m", memory: "35Mi" },
        limits: { cpu: "30m", memory: "45Mi" },
      });
      assert.deepEqual(c1.allocatedResources, { cpu: "20m", memory: "35Mi" });
      assert.deepEqual(statusOf(created, "c2").resources, {
        requests: { cpu: "20m", memory: "35Mi" },
        limits: { memory: "45Mi" },
      });
      assert.equal(
        await cgroup("c1", "memory/memory.limit_in_bytes", "memory.max"),
        String(45 * MI),
      );

      // Resize: c1 in place (cpu and memory), c2's memory by restart.
      await patch({
        spec: {
          containers: [
            {
              name: "c1",
              resources: {
                requests: { cpu: "25m", memory: "40Mi" },
                limits: { cpu: "35m", memory: "50Mi" },
              },
            },
            {
              name: "c2",
              resources: { requests: { cpu: "20m", memory: "40Mi" }, limits: { memory: "50Mi" } },
            },
          ],
        },
      });
      const resized = await settled(2);
      const r1 = statusOf(resized, "c1");
      const r2 = statusOf(resized, "c2");
      assert.deepEqual(r1.resources, {
        requests: { cpu: "25m", memory: "40Mi" },
        limits: { cpu: "35m", memory: "50Mi" },
      });
      assert.deepEqual(r1.allocatedResources, { cpu: "25m", memory: "40Mi" });
      assert.equal(r1.restartCount, 0);
      assert.equal(r1.containerID, c1.containerID, "c1 was resized in place");
      assert.equal(r2.restartCount, 1, "c2 was restarted for its memory");
      assert.deepEqual(r2.resources, {
        requests: { cpu: "20m", memory: "40Mi" },
        limits: { memory: "50Mi" },
      });
      assert.equal(
        await cgroup("c1", "memory/memory.limit_in_bytes", "memory.max"),
        String(50 * MI),
      );
      assert.match(await cgroup("c1", "cpu/cpu.cfs_quota_us", "cpu.max"), /^3500\b/);
      assert.equal(
        await cgroup("c2", "memory/memory.limit_in_bytes", "memory.max"),
        String(50 * MI),
      );
      if (memoryMount) assert.equal(podMemory(), String(100 * MI), "the pod cgroup follows");
      const started = await waitFor("a ResizeCompleted event", async () => {
        const list = await n.events(ns, "rs", "ResizeCompleted").catch(() => []);
        return list[0];
      }, { timeoutMs: 30_000, log: n.log });
      assert.equal(started.type, "Normal");
      assert.match(started.message ?? "", /^Pod resize completed: \{"containers":\[/);

      // The apiserver refuses more than the node's allocatable; a resize that fits the
      // node but not beside another pod is Deferred, and goes through once that pod is gone.
      await n.runPod({
        metadata: { name: "hog", namespace: ns },
        spec: {
          nodeName: NODE,
          hostNetwork: true,
          terminationGracePeriodSeconds: 0,
          containers: [{
            name: "hog",
            image,
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
            resources: { requests: { cpu: "1900m" } },
          }],
        },
      });
      await patch({
        spec: {
          containers: [{
            name: "c1",
            resources: { requests: { cpu: "200m" }, limits: { cpu: "200m" } },
          }],
        },
      });
      const deferred = await waitFor("PodResizePending", async () => {
        const p = await get();
        const cond = p.status?.conditions?.find((x) => x.type === "PodResizePending");
        return cond && p.status?.observedGeneration === 3 ? { p, cond } : undefined;
      }, { timeoutMs: 60_000, log: n.log });
      assert.equal(deferred.cond.reason, "Deferred");
      assert.equal(deferred.cond.status, "True");
      assert.equal(deferred.cond.observedGeneration, 3);
      assert.equal(
        deferred.cond.message,
        "Node didn't have enough resource: cpu, requested: 220, used: 1900, capacity: 2000",
      );
      assert.deepEqual(statusOf(deferred.p, "c1").allocatedResources, {
        cpu: "25m",
        memory: "40Mi",
      });
      assert.match(await cgroup("c1", "cpu/cpu.cfs_quota_us", "cpu.max"), /^3500\b/);
      const warning = await waitFor("a ResizeDeferred event", async () => {
        const list = await n.events(ns, "rs", "ResizeDeferred").catch(() => []);
        return list[0];
      }, { timeoutMs: 30_000, log: n.log });
      assert.equal(warning.type, "Warning");

      const del = await c.kubectl(["delete", "pod", "-n", ns, "hog", "--wait=false"]);
      assert.equal(del.code, 0, del.stderr);
      const retried = await settled(3);
      assert.deepEqual(statusOf(retried, "c1").allocatedResources, {
        cpu: "200m",
        memory: "40Mi",
      });
      assert.equal(statusOf(retried, "c1").restartCount, 0);
      assert.match(await cgroup("c1", "cpu/cpu.cfs_quota_us", "cpu.max"), /^20000\b/);
    } finally {
      await node?.stop();
    }
  },
});
