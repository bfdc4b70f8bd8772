/**
 * `enforceNodeAllocatable` on the real cgroup filesystem, under the harness's
 * own cgroup parent (`denolet-test-*`): with `pods`, kubepods gets cpu.shares,
 * a memory limit and pids.max from the capacity less kubeReserved and
 * systemReserved; with `system-reserved` and `kube-reserved` the reserved
 * cgroups (made by the test under its parent, as an operator would make them)
 * get their reservations; without `pods` kubepods gets the whole capacity;
 * a reserved cgroup that does not exist stops the agent, as upstream.
 * This machine is hybrid: the limits are v1 files.
 */

import assert from "node:assert/strict";
import { startTestRuntime } from "../harness/mod.ts";
import { createCgroupParent } from "../harness/mounts.ts";
import { findCgroupHierarchies } from "../../lib/cm/mod.ts";
import { readMachineInfo } from "../../lib/stats/mod.ts";
import { type AgentProcess, startAgent } from "./_agent.ts";

const PAGE = 4096;
const MI = 1024 ** 2;

Deno.test({
  name:
    "enforceNodeAllocatable: kubepods and the reserved cgroups get upstream's limits (cgroupfs, v1)",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "nodealloc" });
    const mounts = findCgroupHierarchies();
    const read = (controller: string, cgroup: string, name: string) => {
      const mount = mounts.v1.find((h) => h.controllers.includes(controller))!.path;
      return Deno.readTextFileSync(`${mount}${cgroup}/${name}`).trim();
    };
    const kubepods = `${rt.cgroupParent}/kubepods`;
    const systemCg = `${rt.cgroupParent}/system`;
    const kubeCg = `${rt.cgroupParent}/kube`;
    const root = await Deno.makeTempDir({ prefix: "denolet-root-" });
    const machine = await readMachineInfo({ rootDir: root });
    // The kernel keeps a memory limit in whole pages.
    const pages = (bytes: number) => String(Math.floor(bytes / PAGE) * PAGE);
    const agents: AgentProcess[] = [];
    const start = async (args: string[]) => {
      const a = await startAgent({ runtime: rt, extraArgs: args });
      agents.push(a);
      return a;
    };
    const refusedDir = await Deno.makeTempDir({ prefix: "denolet-root-" });
    try {
      // Missing reserved cgroup: the agent stops at start-up, naming it.
      await assert.rejects(
        startAgent({
          runtime: rt,
          manifestDir: refusedDir,
          rootDir: refusedDir,
          extraArgs: [
            "--kube-reserved=memory=256Mi",
            "--enforce-node-allocatable=pods,kube-reserved",
            `--kube-reserved-cgroup=${kubeCg}`,
          ],
        }),
        /Failed to enforce Kube Reserved Cgroup Limits on .*\/kube.*does not exist/,
      );

      createCgroupParent(systemCg);
      createCgroupParent(kubeCg);
      const a = await start([
        "--kube-reserved=memory=512Mi,cpu=500m,pid=1000",
        "--system-reserved=memory=256Mi,cpu=250m",
        "--enforce-node-allocatable=pods,system-reserved,kube-reserved",
        `--system-reserved-cgroup=${systemCg}`,
        `--kube-reserved-cgroup=${kubeCg}`,
      ]);
      // kubepods: capacity − kubeReserved − systemReserved (eviction thresholds not held back).
      const milliCPU = machine.numCores * 1000 - 750;
      assert.equal(read("cpu", kubepods, "cpu.shares"), String(Math.trunc(milliCPU * 1024 / 1000)));
      assert.equal(
        read("memory", kubepods, "memory.limit_in_bytes"),
        pages(machine.memoryCapacityBytes - 768 * MI),
      );
      assert.equal(read("pids", kubepods, "pids.max"), String(machine.maxPid! - 1000));
      // The reserved cgroups get their reservations.
      assert.equal(read("memory", systemCg, "memory.limit_in_bytes"), String(256 * MI));
      assert.equal(read("cpu", systemCg, "cpu.shares"), "256");
      assert.equal(read("pids", systemCg, "pids.max"), "max");
      assert.equal(read("memory", kubeCg, "memory.limit_in_bytes"), String(512 * MI));
      assert.equal(read("cpu", kubeCg, "cpu.shares"), "512");
      assert.equal(read("pids", kubeCg, "pids.max"), "1000");
      // Upstream's Node events (logged in standalone mode).
      for (
        const message of [
          "Updated Node Allocatable limit across pods",
          `Updated limits on system reserved cgroup ${systemCg}`,
          `Updated limits on kube reserved cgroup ${kubeCg}`,
        ]
      ) {
        assert.ok(
          a.log().split("\n").some((l) =>
            l.includes("NodeAllocatableEnforced") && l.includes(message)
          ),
          message,
        );
      }
      await a.stop();

      // Without `pods`, kubepods is set to the whole capacity (the default shares would starve it).
      const b = await start([
        "--kube-reserved=memory=512Mi,cpu=500m",
        "--enforce-node-allocatable=",
      ]);
      assert.equal(read("cpu", kubepods, "cpu.shares"), String(machine.numCores * 1024));
      assert.equal(
        read("memory", kubepods, "memory.limit_in_bytes"),
        pages(machine.memoryCapacityBytes),
      );
      assert.equal(read("pids", kubepods, "pids.max"), String(machine.maxPid));
      await b.stop();
    } finally {
      for (const a of agents) {
        await a.stop().catch(() => {});
        await a.removeDirs();
      }
      await rt.stop();
      await Deno.remove(root, { recursive: true });
      await Deno.remove(refusedDir, { recursive: true });
    }
  },
});
