/**
 * `activeDeadlineSeconds` on a real containerd + runc: the agent, as a user
 * runs it, fails a static pod that has been active longer than its deadline
 * with upstream's DeadlineExceeded reason and message, on time, and stops its
 * container for good (restartPolicy Always notwithstanding).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { type AgentProcess, findPod, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

const DEADLINE_SECONDS = 4;

Deno.test({
  name: "agent fails a pod past its activeDeadlineSeconds with DeadlineExceeded and stops it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "deadline" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt });
      const a = agent;
      await Deno.writeTextFile(
        join(a.manifestDir, "deadline.json"),
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "deadline", namespace: "default" },
          spec: {
            hostNetwork: true,
            restartPolicy: "Always",
            activeDeadlineSeconds: DEADLINE_SECONDS,
            terminationGracePeriodSeconds: 2,
            containers: [{
              name: "main",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"],
            }],
          },
        }),
      );
      const runningPod = await waitFor("the pod running", async () => {
        const p = findPod(await a.pods(), "deadline");
        return p?.status?.containerStatuses?.[0]?.state.running ? p : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100, log: a.log });
      const startTime = Date.parse(runningPod.status!.startTime!);
      assert.equal(runningPod.status?.phase, "Running");

      const failed = await waitFor("the pod Failed", async () => {
        const p = findPod(await a.pods(), "deadline");
        return p?.status?.phase === "Failed" ? { pod: p, at: Date.now() } : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100, log: a.log });
      const elapsed = failed.at - startTime;
      // startTime has whole seconds; the sync tick is every second (slack for a loaded machine).
      assert.ok(elapsed >= DEADLINE_SECONDS * 1000, `failed after ${elapsed}ms`);
      assert.ok(elapsed < (DEADLINE_SECONDS + 6) * 1000, `failed after ${elapsed}ms`);
      assert.equal(failed.pod.status?.reason, "DeadlineExceeded");
      assert.equal(
        failed.pod.status?.message,
        "Pod was active on the node longer than the specified deadline",
      );

      // The container is stopped (its TERM trap exits 0) and reported terminated.
      const stopped = await waitFor("the container terminated", async () => {
        const p = findPod(await a.pods(), "deadline");
        const main = p?.status?.containerStatuses?.[0];
        return main?.state.terminated ? { pod: p!, main } : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100, log: a.log });
      assert.equal(stopped.main.state.terminated?.exitCode, 0);
      assert.equal(stopped.main.restartCount, 0);
      assert.equal(stopped.pod.status?.reason, "DeadlineExceeded");
      const ready = stopped.pod.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "False");
      assert.equal(ready?.reason, "PodFailed");

      // Nothing brings it back: three sync ticks later (a negative, so a plain wait) the
      // runtime still holds the one exited container.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const containers = await cri.listContainers({});
      assert.deepEqual(
        containers.filter((c) => c.labels["io.kubernetes.container.name"] === "main")
          .map((c) => c.state),
        [2], // CONTAINER_EXITED
      );
      assert.equal(findPod(await a.pods(), "deadline")?.status?.phase, "Failed");
    } finally {
      await agent?.stop();
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
