/**
 * The QoS and pod cgroups on real containerd + runc, made by the agent under
 * the harness's cgroup parent (`--cgroup-root`): the kubepods / burstable /
 * besteffort hierarchy, a Burstable and a BestEffort pod's cgroups with
 * upstream's limits and `--pod-max-pids` on the real filesystem, the
 * containers inside them, the QoS cpu shares following the pods, and the pod
 * cgroups removed once the pods are gone (and an orphan by housekeeping).
 * Then the same pods under the upstream kubelet v1.37.2 and under denolet give
 * the same kubepods, QoS and pod cgroup files.
 * This machine's cgroups are v1 controllers beside a cgroup2 tree (hybrid):
 * limits are v1 files; the v2 writer is unit-tested on fixture trees.
 */

import { existsSync } from "node:fs";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { unmountUnder } from "../harness/mounts.ts";
import {
  removeLogSymlinks,
  shareRootDir,
  startUpstreamKubelet,
  type UpstreamKubelet,
  upstreamKubeletBin,
} from "../harness/upstream_kubelet.ts";
import { e2eBinDir } from "../e2e/_cluster.ts";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { CgroupfsManager, findCgroupHierarchies } from "../../lib/cm/mod.ts";
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
        for (const dir of everywhere(rel)) assert.ok(existsSync(dir), dir);
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
        () => everywhere(orphan).every((d) => !existsSync(d)),
        { timeoutMs: 20_000, log: a.log },
      );

      // Removing the manifests: the pods go, so do their cgroups; Burstable's shares drop to 2.
      await Deno.remove(join(a.manifestDir, "burst.json"));
      await Deno.remove(join(a.manifestDir, "best.json"));
      await waitFor(
        "the pod cgroups removed from every hierarchy",
        () => [...everywhere(burstDir), ...everywhere(bestDir)].every((d) => !existsSync(d)),
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

/** Three pods, one per QoS class, with an init container and a sidecar in the Burstable one. */
const QOS_PODS: Record<string, { qos: string; resources: unknown; init?: boolean }> = {
  guaranteed: { qos: "", resources: { limits: { cpu: "300m", memory: "48Mi" } } },
  burstable: {
    qos: "burstable",
    resources: {
      requests: { cpu: "250m", memory: "32Mi" },
      limits: { cpu: "500m", memory: "64Mi" },
    },
    init: true,
  },
  besteffort: { qos: "besteffort", resources: {} },
};

function qosManifest(name: string, image: string): string {
  const pod = JSON.parse(manifest(name, image, QOS_PODS[name]!.resources));
  if (QOS_PODS[name]!.init) {
    pod.spec.initContainers = [
      {
        name: "init",
        image,
        imagePullPolicy: "Never",
        command: ["true"],
        resources: { limits: { cpu: "800m", memory: "40Mi" } },
      },
      {
        name: "side",
        image,
        imagePullPolicy: "Never",
        restartPolicy: "Always",
        command: ["sleep", "3600"],
        resources: { limits: { cpu: "100m", memory: "16Mi" } },
      },
    ];
  }
  return JSON.stringify(pod);
}

/**
 * The pod and QoS cgroup files a kubelet made for the QOS_PODS, by pod name: limits in the
 * cpu, memory and pids hierarchies and which hierarchies hold the pod cgroup.
 */
function cgroupView(rt: TestRuntime, pods: Pod[]): Record<string, unknown> | undefined {
  const mounts = findCgroupHierarchies();
  const kubepods = `${rt.cgroupParent}/kubepods`;
  const read = (controller: string, rel: string, name: string) => {
    const mount = mounts.v1.find((h) => h.controllers.includes(controller))!.path;
    return Deno.readTextFileSync(`${mount}${kubepods}/${rel}/${name}`).trim();
  };
  const view: Record<string, unknown> = {
    // kubepods is limited to the node's allocatable (here: its capacity, nothing reserved).
    "kubepods cpu.shares": read("cpu", "", "cpu.shares"),
    "kubepods memory.limit_in_bytes": read("memory", "", "memory.limit_in_bytes"),
    "kubepods pids.max": read("pids", "", "pids.max"),
    "burstable cpu.shares": read("cpu", "burstable", "cpu.shares"),
    "besteffort cpu.shares": read("cpu", "besteffort", "cpu.shares"),
  };
  for (const [name, { qos }] of Object.entries(QOS_PODS)) {
    const pod = findPod(pods, name);
    if (!pod?.status?.containerStatuses?.every((c) => c.state.running)) return undefined;
    const rel = `${qos === "" ? "" : `${qos}/`}pod${pod.metadata.uid}`;
    view[name] = {
      "cpu.shares": read("cpu", rel, "cpu.shares"),
      "cpu.cfs_period_us": read("cpu", rel, "cpu.cfs_period_us"),
      "cpu.cfs_quota_us": read("cpu", rel, "cpu.cfs_quota_us"),
      "memory.limit_in_bytes": read("memory", rel, "memory.limit_in_bytes"),
      "pids.max": read("pids", rel, "pids.max"),
      hierarchies: [
        ...mounts.v1.filter((h) => existsSync(`${h.path}${kubepods}/${rel}`)).map((h) =>
          h.controllers.join(",")
        ),
        ...(mounts.unified && existsSync(`${mounts.unified}${kubepods}/${rel}`) ? ["unified"] : []),
      ],
    };
  }
  return view;
}

Deno.test({
  name: "the upstream kubelet and denolet make the same pod and QoS cgroups for the same pods",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const bin = upstreamKubeletBin(e2eBinDir());
    const rt = await startTestRuntime({ name: "cgroupsvs" });
    const scratch = await Deno.makeTempDir({ prefix: "denolet-cgroupsvs-" });
    const manifestDir = `${scratch}/manifests`;
    const rootDir = `${scratch}/root`;
    await Deno.mkdir(manifestDir);
    await Deno.mkdir(rootDir);
    await shareRootDir(rootDir);
    let upstream: UpstreamKubelet | undefined;
    let agent: AgentProcess | undefined;
    const writeManifests = async () => {
      for (const name of Object.keys(QOS_PODS)) {
        await Deno.writeTextFile(
          `${manifestDir}/${name}.json`,
          qosManifest(name, rt.images.busybox),
        );
      }
    };
    try {
      await writeManifests();
      upstream = await startUpstreamKubelet({
        bin,
        runtime: rt,
        rootDir,
        manifestDir,
        scratch,
        config: { podPidsLimit: 64 },
      });
      const u = upstream;
      const upstreamView = await waitFor(
        "the upstream kubelet running the three pods",
        async () => cgroupView(rt, await u.pods()),
        { timeoutMs: 90_000, log: u.log },
      );
      // The pods go (upstream removes their cgroups), then the QoS hierarchy it left.
      for (const name of Object.keys(QOS_PODS)) await Deno.remove(`${manifestDir}/${name}.json`);
      const cgroups = new CgroupfsManager(findCgroupHierarchies());
      const kubepods = `${rt.cgroupParent}/kubepods`;
      await waitFor("the upstream kubelet's pods and pod cgroups gone", async () => ({
        // Its /pods answers `"items": null` once no pod is left.
        pods: ((await u.pods()) ?? []).map((p) => p.metadata.name),
        cgroups: [
          ...cgroups.children(kubepods).filter((c) => c.startsWith("pod")),
          ...cgroups.children(`${kubepods}/burstable`),
          ...cgroups.children(`${kubepods}/besteffort`),
        ],
      }), {
        timeoutMs: 60_000,
        until: (seen) => seen.pods.length === 0 && seen.cgroups.length === 0,
        log: u.log,
      });
      await upstream.stop();
      upstream = undefined;
      cgroups.destroy(`${rt.cgroupParent}/kubepods`);

      await writeManifests();
      agent = await startAgent({ runtime: rt, manifestDir, extraArgs: ["--pod-max-pids=64"] });
      const a = agent;
      const denoletView = await waitFor(
        "denolet running the three pods",
        async () => cgroupView(rt, await a.pods()),
        { timeoutMs: 60_000, log: a.log },
      );
      assert.deepEqual(denoletView, upstreamView);
      // Not vacuous: the values are the limits of each class.
      const burstable = upstreamView.burstable as Record<string, string>;
      assert.equal(burstable["cpu.cfs_quota_us"], "80000");
      assert.equal(burstable["memory.limit_in_bytes"], String(80 * 1024 * 1024));
    } finally {
      await upstream?.stop().catch((err) => console.error("stopping the upstream kubelet:", err));
      await agent?.stop("SIGKILL").catch((err) => console.error("stopping denolet:", err));
      try {
        await rt.stop();
      } finally {
        await agent?.removeDirs();
        await unmountUnder(rootDir);
        await new Deno.Command("umount", { args: ["-l", rootDir] }).output();
        await removeLogSymlinks(`${rootDir}/logs`);
        await Deno.remove(scratch, { recursive: true }).catch(() => {});
      }
    }
  },
});
