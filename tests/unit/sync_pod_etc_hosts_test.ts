/**
 * A pod whose /etc/hosts cannot be written (the root dir full or read-only; here its
 * `pods` dir is a file, so the write fails the same way without a special filesystem)
 * reports it on its containers as upstream does: CreateContainerConfigError with the
 * path and reason, and a Failed event, rather than waiting in ContainerCreating with
 * nothing but a log line. Found by tests/faults/disk_test.ts.
 */

import assert from "node:assert/strict";
import { type FakeCriServer, startFakeCriServer } from "../../lib/cri/_fake_server.ts";
import { createRuntimeService, PodSandboxState } from "../../lib/cri/mod.ts";
import {
  recordingEvents,
  runtimePodStatus,
  testPod,
  unitRuntimeManager,
  withTempDir,
} from "../kit/mod.ts";

/** A runtime that runs sandboxes and holds no containers. */
function startRuntime(): Promise<FakeCriServer> {
  // deno-lint-ignore no-explicit-any
  let sandbox: any;
  return startFakeCriServer({
    ImageStatus: (req) => ({ image: { id: "sha256:img", repoTags: [req.image.image], size: 1 } }),
    RunPodSandbox: (req) => {
      sandbox = req.config;
      return { podSandboxId: "sb1" };
    },
    PodSandboxStatus: () => ({
      status: {
        id: "sb1",
        metadata: sandbox.metadata,
        state: PodSandboxState.SANDBOX_READY,
        createdAt: Date.now() * 1e6,
        labels: sandbox.labels,
        annotations: sandbox.annotations,
      },
    }),
  });
}

Deno.test("syncPod() reports an /etc/hosts it cannot write as CreateContainerConfigError on the containers, with a Failed event", async () => {
  const fake = await startRuntime();
  const cri = createRuntimeService({ endpoint: fake.endpoint, timeoutMs: 5_000 });
  try {
    await withTempDir(async (root) => {
      await Deno.mkdir(`${root}/kubelet`);
      await Deno.writeTextFile(`${root}/kubelet/pods`, "not a directory");
      const events = recordingEvents();
      const manager = unitRuntimeManager(cri, {
        rootDir: `${root}/kubelet`,
        podLogsDir: `${root}/logs`,
        events,
      });
      const pod = testPod({
        containers: [{ name: "a", image: "busybox:1.36" }, { name: "b", image: "busybox:1.36" }],
        spec: { hostNetwork: true },
      });
      const result = await manager.syncPod(
        pod,
        runtimePodStatus({ sandboxes: [] }),
        new AbortController().signal,
      );
      assert.deepEqual([...result.lastErrors.keys()], ["a", "b"]);
      for (const error of result.lastErrors.values()) {
        assert.equal(error.reason, "CreateContainerConfigError");
        assert.match(
          error.message,
          new RegExp(`failed to write /etc/hosts .*${root}/kubelet/pods`),
        );
      }
      const failed = events.got.filter((e) => e.reason === "Failed");
      assert.deepEqual(failed.map((e) => e.ref.fieldPath), [
        "spec.containers{a}",
        "spec.containers{b}",
      ]);
      assert.match(failed[0]!.message, /^Error: failed to write \/etc\/hosts/);
    });
  } finally {
    cri.close();
    await fake.close();
  }
});
