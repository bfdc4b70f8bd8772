/**
 * Drop-in both ways on real containerd: the upstream kubelet (v1.37.2, built by
 * tools/e2e/build.sh) runs static pods; it stops; denolet starts on the same root
 * dir, manifests and pod logs dir and adopts every sandbox and container (same IDs,
 * restart count 0, nothing killed, nothing started); it stops; the upstream kubelet
 * starts again and adopts them back the same way.
 *
 * One manifest sets `metadata.uid` (both kubelets keep it), the other does not (both
 * derive upstream's UID from the manifest's content, path and node name).
 */
import assert from "node:assert/strict";
import { startTestRuntime } from "../harness/mod.ts";
import { unmountUnder } from "../harness/mounts.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { RuntimeService } from "../../lib/cri/types.ts";
import type { Pod } from "../../lib/api/types.ts";
import { e2eBinDir } from "../e2e/_cluster.ts";
import { findPod, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";
import {
  podWorkerRuns,
  removeLogSymlinks,
  shareRootDir,
  startUpstreamKubelet,
  type UpstreamKubelet,
  upstreamKubeletBin,
} from "../harness/upstream_kubelet.ts";

const POD_NAMES = ["web", "hostweb"];

function manifest(
  name: string,
  uid: string | undefined,
  image: string,
  hostNetwork: boolean,
): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", ...(uid ? { uid } : {}) },
    spec: {
      hostNetwork,
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: "main", image, imagePullPolicy: "Never", command: ["sleep", "3600"] },
        {
          name: "side",
          image,
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
          ports: [{ name: "http", containerPort: 8080 }],
          lifecycle: { preStop: { exec: { command: ["true"] } } },
        },
      ],
    },
  });
}

/** Every sandbox and container of the test pods, as containerd has them. */
async function runtimeView(cri: RuntimeService) {
  const sandboxes = (await cri.listPodSandbox()).filter((s) =>
    POD_NAMES.some((n) => s.labels["io.kubernetes.pod.name"] === `${n}-testnode`)
  );
  const containers = (await cri.listContainers()).filter((c) =>
    sandboxes.some((s) => s.id === c.podSandboxId)
  );
  return {
    sandboxes: sandboxes.map((s) => `${s.id} ${s.state}`).sort(),
    containers: containers.map((c) =>
      `${c.id} ${c.metadata.name} state=${c.state} restartCount=${
        c.annotations["io.kubernetes.container.restartCount"]
      } hash=${c.annotations["io.kubernetes.container.hash"]}`
    ).sort(),
  };
}

/** Each test pod's containers as a kubelet reports them: name → [ID, restartCount, ready]. */
function reported(pods: Pod[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const name of POD_NAMES) {
    const pod = findPod(pods, name);
    const statuses = pod?.status?.containerStatuses ?? [];
    if (statuses.length !== 2) return undefined;
    for (const cs of statuses) {
      if (!cs.state?.running || !cs.ready) return undefined;
      out[`${name}/${cs.name}`] = `${cs.containerID} restartCount=${cs.restartCount}`;
    }
  }
  return out;
}

Deno.test({
  name: "denolet adopts the upstream kubelet's pods and hands them back, no container restarted",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const bin = upstreamKubeletBin(e2eBinDir());
    const rt = await startTestRuntime({ name: "adopt" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    const scratch = await Deno.makeTempDir({ prefix: "denolet-adopt-" });
    const manifestDir = `${scratch}/manifests`;
    const rootDir = `${scratch}/root`;
    await Deno.mkdir(manifestDir);
    await Deno.mkdir(rootDir);
    await shareRootDir(rootDir);
    const image = rt.images.busybox;
    await Deno.writeTextFile(
      `${manifestDir}/web.json`,
      manifest("web", undefined, image, false),
    );
    await Deno.writeTextFile(
      `${manifestDir}/hostweb.json`,
      manifest("hostweb", "7d2e5a60-3f4c-4e8d-b0a1-2c3d4e5f6a7b", image, true),
    );
    const upstreamOpts = { bin, runtime: rt, rootDir, manifestDir, scratch };
    let upstream: UpstreamKubelet | undefined;
    let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
    try {
      upstream = await startUpstreamKubelet(upstreamOpts);
      const u1 = upstream;
      const before = await waitFor(
        "the upstream kubelet running both pods",
        async () => reported(await u1.pods()),
        { timeoutMs: 90_000, log: u1.log },
      );
      const runtimeBefore = await runtimeView(cri);
      assert.equal(runtimeBefore.containers.length, 4, JSON.stringify(runtimeBefore));
      await upstream.stop();
      upstream = undefined;

      // Every pod resynced each 5 s, as the upstream kubelet here (podWorkerRuns).
      agent = await startAgent({
        runtime: rt,
        manifestDir,
        rootDir,
        extraArgs: ["--sync-frequency=5s"],
      });
      const a = agent;
      const adopted = await waitFor(
        "denolet reporting both pods running",
        async () => reported(await a.pods()),
        { timeoutMs: 60_000, log: a.log },
      );
      assert.deepEqual(adopted, before, "denolet reports upstream's containers, none restarted");
      // /pods answers from the runtime before the first sync has decided anything: wait
      // for two pod worker runs per pod (podWorkerRuns), by then every kill or start
      // denolet would make has been made.
      await waitFor("denolet's first sync of both pods", async () => {
        const resp = await fetch(`http://127.0.0.1:${a.readOnlyPort}/metrics`);
        return podWorkerRuns(await resp.text()) >= 2 * POD_NAMES.length;
      }, { timeoutMs: 30_000, log: a.log });
      assert.deepEqual(reported(await a.pods()), before, "and still after its first syncs");
      assert.deepEqual(await runtimeView(cri), runtimeBefore, "nothing killed or started");
      const status = await agent.stop("SIGTERM");
      assert.equal(status.code, 0, agent.log().split("\n").slice(-20).join("\n"));
      agent = undefined;

      upstream = await startUpstreamKubelet(upstreamOpts);
      const u2 = upstream;
      const back = await waitFor(
        "the upstream kubelet reporting both pods again",
        async () => reported(await u2.pods()),
        { timeoutMs: 90_000, log: u2.log },
      );
      assert.deepEqual(back, before, "upstream reports the same containers, none restarted");
      await waitFor(
        "the upstream kubelet's first sync of both pods",
        async () => podWorkerRuns(await u2.metrics()) >= 2 * POD_NAMES.length,
        { timeoutMs: 30_000, log: u2.log },
      );
      assert.deepEqual(reported(await u2.pods()), before, "and after its first syncs");
      assert.deepEqual(await runtimeView(cri), runtimeBefore, "nothing killed or started");
    } finally {
      // Each step whatever the one before did: a kubelet that failed to stop must not
      // leave containerd and its shims running.
      await upstream?.stop().catch((err) => console.error("stopping the upstream kubelet:", err));
      await agent?.stop("SIGKILL").catch((err) => console.error("stopping denolet:", err));
      cri.close();
      try {
        await rt.stop();
      } finally {
        await unmountUnder(rootDir);
        await new Deno.Command("umount", { args: ["-l", rootDir] }).output();
        await removeLogSymlinks(`${rootDir}/logs`);
        await Deno.remove(scratch, { recursive: true }).catch(() => {});
      }
    }
  },
});
