/**
 * The QoS and pod cgroups on real containerd + runc, made by the agent under
 * the harness's cgroup parent (`--cgroup-root`): the kubepods / burstable /
 * besteffort hierarchy, a Burstable and a BestEffort pod's cgroups with
 * upstream's limits and `--pod-max-pids` on the real filesystem, the
 * containers inside them, the QoS cpu shares following the pods, and the pod
 * cgroups removed once the pods are gone (and an orphan by housekeeping).
 * This machine's cgroups are v1 controllers beside a cgroup2 tree (hybrid):
 * limits are v1 files; the v2 writer is unit-tested on fixture trees.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { findCgroupHierarchies } from "../../lib/cm/mod.ts";
import { type AgentProcess, findPod, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

function manifest(name: string, image: string, resources: unknown): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        resources,
      }],
    },
  });
}

async function exec(cri: RuntimeService, id: string, script: string) {
  const out = await cri.execSync(id, ["sh", "-c", script], 30);
  const text = new TextDecoder();
  return { code: out.exitCode, out: text.decode(out.stdout), err: text.decode(out.stderr) };
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "QoS and pod cgroups: limits, pids.max and cleanup on real containerd (cgroupfs, v1)",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "podcgroups" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    const mounts = findCgroupHierarchies();
    const mount = (controller: string) =>
      mounts.v1.find((h) => h.controllers.includes(controller))!.path;
    const kubepods = `${rt.cgroupParent}/kubepods`;
    const file = (controller: string, rel: string, name: string) =>
      Deno.readTextFileSync(`${mount(controller)}${kubepods}/${rel}/${name}`).trim();
    // Every hierarchy the pod cgroup lives in: each v1 mount and the cgroup2 tree.
    const everywhere = (rel: string) => [
      ...mounts.v1.map((h) => `${h.path}${kubepods}/${rel}`),
      ...(mounts.unified ? [`${mounts.unified}${kubepods}/${rel}`] : []),
    ];
    try {
      agent = await startAgent({ runtime: rt, extraArgs: ["--pod-max-pids=64"] });
      const a = agent;
      // At start-up: the QoS hierarchy in every hierarchy, BestEffort at the minimum shares.
      for (const rel of ["", "burstable", "besteffort"]) {
        for (const dir of everywhere(rel)) assert.ok(exists(dir), dir);
      }
      assert.equal(file("cpu", "besteffort", "cpu.shares"), "2");

      const image = rt.images.busybox;
      await Deno.writeTextFile(
        join(a.manifestDir, "burst.json"),
        manifest("burst", image, {
          requests: { cpu: "250m", memory: "32Mi" },
          limits: { cpu: "500m", memory: "64Mi" },
        }),
      );
      await Deno.writeTextFile(join(a.manifestDir, "best.json"), manifest("best", image, {}));
      const running = (name: string) =>
        waitFor(`${name} running`, async () => {
          const pod = findPod(await a.pods(), name);
          const cs = pod?.status?.containerStatuses?.[0];
          return cs?.state.running
            ? { uid: pod!.metadata.uid!, id: cs.containerID!.replace("containerd://", "") }
            : undefined;
        }, { timeoutMs: 30_000, log: a.log });
      const burst = await running("burst");
      const best = await running("best");

      // The Burstable pod's cgroup, with upstream's limits, holds its container.
      const burstDir = `burstable/pod${burst.uid}`;
      assert.equal(file("cpu", burstDir, "cpu.shares"), "256");
      assert.equal(file("cpu", burstDir, "cpu.cfs_period_us"), "100000");
      assert.equal(file("cpu", burstDir, "cpu.cfs_quota_us"), "50000");
      assert.equal(file("memory", burstDir, "memory.limit_in_bytes"), String(64 * 1024 * 1024));
      assert.equal(file("pids", burstDir, "pids.max"), "64");
      const burstCgroup = (await exec(cri, burst.id, "cat /proc/self/cgroup")).out;
      assert.match(burstCgroup, new RegExp(`:memory:${kubepods}/${burstDir}/${burst.id}$`, "m"));
      assert.match(burstCgroup, new RegExp(`:pids:${kubepods}/${burstDir}/${burst.id}$`, "m"));

      // The BestEffort pod's: minimum shares, no quota or memory limit, the pids limit.
      const bestDir = `besteffort/pod${best.uid}`;
      assert.equal(file("cpu", bestDir, "cpu.shares"), "2");
      assert.equal(file("cpu", bestDir, "cpu.cfs_quota_us"), "-1");
      assert.equal(file("memory", bestDir, "memory.limit_in_bytes"), "9223372036854771712");
      assert.equal(file("pids", bestDir, "pids.max"), "64");
      assert.match(
        (await exec(cri, best.id, "cat /proc/self/cgroup")).out,
        new RegExp(`:cpu:${kubepods}/${bestDir}/${best.id}$`, "m"),
      );
      // pids.max holds: the pod cannot have more than 64 processes.
      const forks = await exec(cri, best.id, "for i in $(seq 80); do sleep 5 & done; wait");
      assert.match(forks.err, /fork/i, JSON.stringify(forks));

      // The Burstable QoS cgroup's shares are its pods' summed cpu requests (250m).
      assert.equal(file("cpu", "burstable", "cpu.shares"), "256");

      // An orphan pod cgroup (no such pod) is removed by housekeeping.
      const orphan = "besteffort/pod00000000-0000-0000-0000-00000000dead";
      for (const c of ["cpu", "memory"]) Deno.mkdirSync(`${mount(c)}${kubepods}/${orphan}`);
      await waitFor(
        "the orphan pod cgroup removed",
        () => everywhere(orphan).every((d) => !exists(d)),
        { timeoutMs: 20_000, log: a.log },
      );

      // Removing the manifests: the pods go, so do their cgroups; Burstable's shares drop to 2.
      await Deno.remove(join(a.manifestDir, "burst.json"));
      await Deno.remove(join(a.manifestDir, "best.json"));
      await waitFor(
        "the pod cgroups removed from every hierarchy",
        () => [...everywhere(burstDir), ...everywhere(bestDir)].every((d) => !exists(d)),
        {
          timeoutMs: 30_000,
          log: a.log,
        },
      );
      assert.equal(file("cpu", "burstable", "cpu.shares"), "2");
      assert.doesNotMatch(a.log(), /Failed to remove the pod's cgroup/);
    } finally {
      if (agent) await agent.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
