/**
 * `runtimeClassName` on a real containerd: the RuntimeClass's handler reaches
 * RunPodSandbox (containerd's second runtime, `test-handler`, runs the sandbox under
 * its own runc root); a handler containerd does not have, a RuntimeClass that does not
 * exist, and a RuntimeClass without an apiserver each fail the sandbox with
 * FailedCreatePodSandBox and leave nothing running, as upstream. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import type { KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { startTestRuntime, TEST_RUNTIME_HANDLER } from "../harness/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { FakePodObjects, hostNetworkPod, pathExists, recordingEvents } from "../kit/mod.ts";

Deno.test({
  name: "runtimeClassName: the RuntimeClass's handler runs the sandbox; unknown ones fail it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "runtimeclass" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const objects = new FakePodObjects();
      objects.runtimeClasses.set("sandboxed", {
        metadata: { name: "sandboxed" },
        handler: TEST_RUNTIME_HANDLER,
      });
      objects.runtimeClasses.set("unconfigured", {
        metadata: { name: "unconfigured" },
        handler: "unconfigured-handler",
      });
      const events = recordingEvents();
      const manager = testRuntimeManager(rt, runtime, { objects, events });
      const podOf = (name: string, runtimeClassName?: string): Pod =>
        hostNetworkPod(rt.images.busybox, {
          name,
          containers: [{ name: "main", command: ["sleep", "3600"] }],
          spec: runtimeClassName === undefined ? {} : { runtimeClassName },
        });

      await t.step(
        "a RuntimeClass with a configured handler: its handler runs the pod",
        async () => {
          const running = await runPod(runtime!, manager, podOf("sandboxed", "sandboxed"));
          const sandbox = await runtime!.podSandboxStatus(running.status.sandboxes[0]!.id);
          assert.equal(sandbox.status.runtimeHandler, TEST_RUNTIME_HANDLER);
          // The handler's own runc root holds the sandbox: containerd really used it.
          const root = `${rt.dir}/state/runc-${TEST_RUNTIME_HANDLER}/k8s.io`;
          assert.ok(
            await pathExists(`${root}/${sandbox.status.id}`),
            `${root}/${sandbox.status.id}`,
          );
          await running.cleanup();
        },
      );

      await t.step("no runtimeClassName: the default handler", async () => {
        const running = await runPod(runtime!, manager, podOf("default"));
        const sandbox = await runtime!.podSandboxStatus(running.status.sandboxes[0]!.id);
        assert.equal(sandbox.status.runtimeHandler, "");
        await running.cleanup();
      });

      const failsSandbox = async (m: KubeRuntimeManager, pod: Pod, message: RegExp) => {
        const uid = pod.metadata.uid!;
        const res = await m.syncPod(pod, await m.getPodStatus(uid), new AbortController().signal);
        const failed = res.steps.filter((s) => s.error);
        assert.deepEqual(failed.map((s) => [s.action, s.error!.reason]), [
          ["CreatePodSandbox", "CreatePodSandboxError"],
        ]);
        assert.match(failed[0]!.error!.message, message);
        const event = events.got.find((e) =>
          e.reason === "FailedCreatePodSandBox" && e.ref.name === pod.metadata.name
        );
        assert.equal(event?.type, "Warning");
        assert.match(event!.message, message);
        const status = await m.getPodStatus(uid);
        assert.deepEqual([status.sandboxes.length, status.containers.length], [0, 0]);
      };

      await t.step(
        "a handler containerd does not have: FailedCreatePodSandBox naming it",
        async () => {
          await failsSandbox(
            manager,
            podOf("unconfigured", "unconfigured"),
            /^Failed to create pod sandbox: .*no runtime for "unconfigured-handler" is configured/,
          );
        },
      );

      await t.step("a RuntimeClass that does not exist: upstream's NotFound", async () => {
        await failsSandbox(
          manager,
          podOf("missing", "missing"),
          /^Failed to create pod sandbox: runtimeclass\.node\.k8s\.io "missing" not found$/,
        );
      });

      await t.step(
        "standalone (no apiserver): refused, not run with the default handler",
        async () => {
          const standalone = testRuntimeManager(rt, runtime!, { events });
          await failsSandbox(
            standalone,
            podOf("standalone", "sandboxed"),
            /runtimeclass\.node\.k8s\.io "sandboxed" cannot be read: no apiserver \(standalone mode\)/,
          );
        },
      );
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
