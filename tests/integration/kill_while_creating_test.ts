/**
 * A pod killed while the runtime is still creating its sandbox or starting its
 * container: the agent cancels the call in flight (as upstream's cancelled context
 * does) instead of waiting for a slow runtime or CNI plugin, and what the runtime
 * made after all is stopped.
 * Real containerd + runc, with the harness's gated runc holding `runc create`.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { ContainerState, createRuntimeService, PodSandboxState } from "../../lib/cri/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { pathExists, waitFor } from "../kit/mod.ts";

/** The harness's static pod manifest with an init container first. */
function withInit(name: string, image: string, initCommand: string[]): string {
  const pod = JSON.parse(podManifest({ name, image, command: ["sleep", "3600"], grace: 1 }));
  pod.spec.initContainers = [{
    name: "init",
    image,
    imagePullPolicy: "Never",
    command: initCommand,
  }];
  return JSON.stringify(pod);
}

Deno.test({
  name: "a static pod removed while the runtime creates its sandbox or container ends at once",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "gate", runcCreateGate: true });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    const gate = rt.createGate!;
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt });
      const a = agent;
      const busybox = rt.images.busybox;
      const manifest = (name: string) => join(a.manifestDir, `${name}.json`);

      /** Removes the pod while `runc create` is held; its sync must end with the gate shut. */
      const removeWhileHeld = async (name: string, step: string) => {
        await waitFor(
          "runc create held",
          async () => await pathExists(`${gate}.held`) || undefined,
          {
            timeoutMs: 30_000,
            log: a.log,
          },
        );
        await Deno.remove(manifest(name));
        const pod = `pod="default/${name}-testnode"`;
        const line = await waitFor(`${name}'s sync cancelled`, () => {
          return a.log().split("\n").find((l) =>
            l.includes('"Sync exited with context cancellation"') && l.includes(pod)
          );
        }, { timeoutMs: 15_000, log: a.log });
        assert.ok(await pathExists(gate), "the gate was still shut when the sync ended");
        const failed = a.log().split("\n").find((l) =>
          l.includes('"Sync step failed"') && l.includes(pod) && l.includes(`step="${step}"`)
        );
        assert.match(failed ?? "", /cancelled/, `no cancelled ${step} before ${line}`);

        // Let the runtime finish what it was asked: whatever it made for the pod after
        // all is stopped (the container GC removes it within its minute, as upstream's).
        await Deno.remove(gate);
        await Deno.remove(`${gate}.held`);
        await waitFor(`everything of ${name} stopped`, async () => {
          const ours = (l: Record<string, string>) =>
            l["io.kubernetes.pod.name"] === `${name}-testnode`;
          const sandboxes = (await cri.listPodSandbox()).filter((s) => ours(s.labels));
          const containers = (await cri.listContainers()).filter((c) => ours(c.labels));
          // Exited, not just not running: one still being created (CONTAINER_CREATED) is
          // in the middle of the start the runtime was asked for.
          return sandboxes.every((s) => s.state !== PodSandboxState.SANDBOX_READY) &&
              containers.every((c) => c.state === ContainerState.CONTAINER_EXITED) || undefined;
        }, { timeoutMs: 60_000, intervalMs: 500, log: a.log });
      };

      await t.step("RunPodSandbox held, then the pod removed", async () => {
        await Deno.writeTextFile(gate, "");
        await Deno.writeTextFile(
          manifest("sandbox-held"),
          podManifest({ name: "sandbox-held", image: busybox, command: ["sleep", "3600"] }),
        );
        await removeWhileHeld("sandbox-held", "CreatePodSandbox");
      });

      await t.step("StartContainer held, then the pod removed", async () => {
        // The gate shuts while the init container runs, so the app container's start (its
        // `runc create`; containerd's CreateContainer makes no runc call) is held.
        await Deno.writeTextFile(
          manifest("container-held"),
          withInit("container-held", busybox, [
            "sleep",
            "5",
          ]),
        );
        await waitFor("the init container running", async () => {
          const running = await cri.listContainers({
            state: { state: ContainerState.CONTAINER_RUNNING },
          });
          return running.some((c) =>
            c.labels["io.kubernetes.pod.name"] === "container-held-testnode" &&
            c.labels["io.kubernetes.container.name"] === "init"
          ) || undefined;
        }, { timeoutMs: 30_000, intervalMs: 100, log: a.log });
        await Deno.writeTextFile(gate, "");
        await removeWhileHeld("container-held", "StartContainer");
      });

      await t.step("the agent goes on: a pod written now runs", async () => {
        await Deno.writeTextFile(
          manifest("after"),
          podManifest({ name: "after", image: busybox, command: ["sleep", "3600"] }),
        );
        await waitFor("the next pod running", async () => {
          const p = findPod(await a.pods(), "after");
          return p?.status?.phase === "Running" || undefined;
        }, { timeoutMs: 30_000, log: a.log });
      });
    } finally {
      await agent?.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
