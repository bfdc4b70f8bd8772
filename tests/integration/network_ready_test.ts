/**
 * The runtime's NetworkReady condition on real containerd + runc: a containerd
 * with no CNI config reports NetworkReady=false; while it does, the agent runs
 * a host-network static pod but holds a pod-network one in Pending; once the
 * conflist appears (containerd reloads it on its own) that pod starts, with
 * no agent restart.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

Deno.test({
  name:
    "until containerd's network is ready only host-network pods start; pod-network pods start once it is",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "netready", podNetwork: false });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    try {
      const network = (await cri.status()).status.conditions.find((c) => c.type === "NetworkReady");
      assert.equal(network?.status, false, JSON.stringify(network));

      agent = await startAgent({ runtime: rt });
      const a = agent;
      const image = rt.images.busybox;
      const sleep = ["sleep", "3600"];
      await Deno.writeTextFile(
        join(a.manifestDir, "host.json"),
        podManifest({ name: "host", image, command: sleep, grace: 1 }),
      );
      await Deno.writeTextFile(
        join(a.manifestDir, "podnet.json"),
        podManifest({ name: "podnet", image, command: sleep, grace: 1, hostNetwork: false }),
      );
      await waitFor("the host-network pod running", async () => {
        const cs = findPod(await a.pods(), "host")?.status?.containerStatuses?.[0];
        return cs?.state.running !== undefined;
      }, { timeoutMs: 30_000, log: a.log });

      // The pod-network pod waits: Pending, no sandbox, and the agent says why.
      await waitFor("the NetworkNotReady error logged", () =>
        a.log().includes(
          "network is not ready: container runtime network not ready: NetworkReady=false",
        ), { timeoutMs: 15_000, log: a.log });
      const waiting = findPod(await a.pods(), "podnet");
      assert.equal(waiting?.status?.phase, "Pending");
      const sandboxes = await cri.listPodSandbox();
      assert.ok(
        !sandboxes.some((s) => s.metadata?.name === "podnet-testnode"),
        `no sandbox for the waiting pod: ${JSON.stringify(sandboxes.map((s) => s.metadata))}`,
      );

      await rt.installPodNetwork();
      await waitFor("the pod-network pod running once the network is ready", async () => {
        const p = findPod(await a.pods(), "podnet");
        return p?.status?.containerStatuses?.[0]?.state.running !== undefined &&
          p.status.podIP !== undefined && p.status.podIP !== "";
      }, { timeoutMs: 30_000, log: a.log });
    } finally {
      await agent?.stop();
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
