/**
 * Pod admission in standalone mode on real containerd + runc: without an
 * apiserver the node checked is the one denolet would register, so
 * `--max-pods` and the node's labels hold for static pods. A pod over the
 * limit goes Failed with OutOfpods and gets no sandbox; the pod already
 * running is untouched.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

Deno.test({
  name:
    "standalone: a static pod over --max-pods is rejected with OutOfpods and the running one is untouched",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "admission" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt, extraArgs: ["--max-pods=1"] });
      const a = agent;
      const image = rt.images.busybox;
      const sleep = ["sleep", "3600"];
      await Deno.writeTextFile(
        join(a.manifestDir, "first.json"),
        podManifest({ name: "first", image, command: sleep, grace: 1 }),
      );
      const firstId = await waitFor("first running", async () => {
        const cs = findPod(await a.pods(), "first")?.status?.containerStatuses?.[0];
        return cs?.state.running ? cs.containerID : undefined;
      }, { timeoutMs: 30_000, log: a.log });

      await Deno.writeTextFile(
        join(a.manifestDir, "second.json"),
        podManifest({ name: "second", image, command: sleep, grace: 1 }),
      );
      const second = await waitFor("second Failed", async () => {
        const p = findPod(await a.pods(), "second");
        return p?.status?.phase === "Failed" ? p : undefined;
      }, { timeoutMs: 30_000, log: a.log });
      assert.equal(second.status?.reason, "OutOfpods");
      assert.equal(
        second.status?.message,
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1",
      );
      assert.match(a.log(), /reason="OutOfpods"/);

      const sandboxes = await cri.listPodSandbox();
      assert.deepEqual(
        sandboxes.map((s) => s.metadata.name).sort(),
        ["first-testnode"],
        "no sandbox for the rejected pod",
      );
      const first = findPod(await a.pods(), "first")?.status?.containerStatuses?.[0];
      assert.equal(first?.containerID, firstId, "the admitted pod keeps its container");
      assert.ok(first?.state.running, "and it still runs");
    } finally {
      await agent?.stop();
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
