/**
 * Drop-in both ways for an API pod, against a real apiserver: denolet runs a pod bound to
 * its node; it stops; the upstream kubelet (built by tools/e2e/build.sh) starts on the same
 * root dir, manifests, kubeconfig and node IP and adopts the pod's containers (same IDs,
 * restart count 0, in its own report and in the API's status); it stops; denolet starts
 * again and adopts them back the same way.
 */
import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { e2eBinDir } from "./_cluster.ts";
import { NODE, startNode } from "./_node.ts";
import { waitFor } from "../kit/mod.ts";
import {
  podWorkerRuns,
  removeLogSymlinks,
  shareRootDir,
  startUpstreamKubelet,
  type UpstreamKubelet,
  upstreamKubeletBin,
} from "../harness/upstream_kubelet.ts";

/** The pod's containers as a status reports them: name → "ID restartCount=N", all running and ready. */
function running(pod: Pod | undefined): Record<string, string> | undefined {
  const statuses = pod?.status?.containerStatuses ?? [];
  if (statuses.length !== 2) return undefined;
  const out: Record<string, string> = {};
  for (const cs of statuses) {
    if (!cs.state?.running || !cs.ready) return undefined;
    out[cs.name] = `${cs.containerID} restartCount=${cs.restartCount}`;
  }
  return out;
}

Deno.test({
  name: "an API pod passes from denolet to the upstream kubelet and back, no container restarted",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const bin = upstreamKubeletBin(e2eBinDir());
    // Every pod resynced each 5 s, as the upstream kubelet here (podWorkerRuns).
    const node = await startNode({ name: "adopt", config: { syncFrequency: "5s" } });
    const { rootDir, manifestDir } = node.agent;
    let upstream: UpstreamKubelet | undefined;
    let shared = false;
    try {
      const ns = await node.namespace();
      const image = node.runtime.images.busybox;
      // No service account token volume: this test is about containers, not volume adoption.
      const spec = {
        nodeName: NODE,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 2,
        containers: ["main", "side"].map((name) => ({
          name,
          image,
          imagePullPolicy: "Never" as const,
          command: ["sleep", "3600"],
        })),
      };
      await node.runPod({ metadata: { name: "api", namespace: ns }, spec });
      const apiPod = () => node.cluster.kubectlJson<Pod>(["get", "pod", "-n", ns, "api"]);
      const before = running(await apiPod());
      assert.ok(before, "the pod runs under denolet");

      const stopped = await node.agent.stop();
      assert.equal(stopped.code, 0, node.log().split("\n").slice(-20).join("\n"));
      await shareRootDir(rootDir);
      shared = true;
      const kubeconfig = node.agentArgs.find((a) => a.startsWith("--kubeconfig="))!;
      upstream = await startUpstreamKubelet({
        bin,
        runtime: node.runtime,
        rootDir,
        manifestDir,
        scratch: node.scratch,
        args: [kubeconfig, `--node-ip=${node.nodeIP}`],
      });
      const u = upstream;
      const findApi = (pods: Pod[]) =>
        pods.find((p) => p.metadata.namespace === ns && p.metadata.name === "api");
      const adopted = await waitFor(
        "the upstream kubelet reporting the pod running",
        async () => running(findApi(await u.pods())),
        { timeoutMs: 90_000, log: u.log },
      );
      assert.deepEqual(adopted, before, "upstream reports denolet's containers, none restarted");
      await waitFor(
        "the upstream kubelet's first sync of the pod",
        async () => podWorkerRuns(await u.metrics()) >= 2 * 1,
        { timeoutMs: 30_000, log: u.log },
      );
      assert.deepEqual(running(findApi(await u.pods())), before, "and after its first sync");
      assert.deepEqual(running(await apiPod()), before, "the API status is unchanged");
      await upstream.stop();
      upstream = undefined;

      const agent = await node.restartAgent();
      const back = await waitFor(
        "denolet reporting the pod running again",
        async () => running(findApi(await agent.pods())),
        { timeoutMs: 60_000, log: agent.log },
      );
      assert.deepEqual(back, before, "denolet reports the same containers, none restarted");
      await waitFor("denolet's first sync of the pod", async () => {
        const resp = await fetch(`http://127.0.0.1:${agent.readOnlyPort}/metrics`);
        return podWorkerRuns(await resp.text()) >= 2 * 1;
      }, { timeoutMs: 30_000, log: agent.log });
      assert.deepEqual(running(findApi(await agent.pods())), back, "and after its first sync");
      assert.deepEqual(running(await apiPod()), before, "the API status is unchanged");
    } finally {
      await upstream?.stop().catch((err) => console.error("stopping the upstream kubelet:", err));
      if (shared) await new Deno.Command("umount", { args: ["-l", rootDir] }).output();
      await removeLogSymlinks(`${rootDir}/logs`);
      await node.stop();
    }
  },
});
