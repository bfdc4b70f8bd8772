/**
 * The CRI client against a real containerd (tests/harness): a pod sandbox and a
 * container through their whole lifecycle, error classification, deadlines,
 * cancellation, images, and reconnecting after containerd restarts.
 *
 * Needs root: the harness starts a private containerd + runc, and fails the
 * test (never skips it) when it cannot.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  ContainerState,
  createRuntimeService,
  GrpcCode,
  isDeadlineExceeded,
  isNotFound,
  isUnavailable,
  NamespaceMode,
  type PodSandboxConfig,
  PodSandboxState,
  type RuntimeService,
} from "../../lib/cri/mod.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { waitFor } from "../kit/mod.ts";

const decoder = new TextDecoder();
/** A container id that no runtime has: 64 hex digits, like containerd's. */
const MISSING_ID = "0".repeat(64);

function sandboxConfig(rt: TestRuntime): PodSandboxConfig {
  const uid = crypto.randomUUID();
  return {
    metadata: { name: "cri-client", uid, namespace: "default", attempt: 0 },
    // Host network and no hostname: runc cannot set a hostname without a
    // private UTS namespace.
    logDirectory: `${rt.dir}/pods/${uid}`,
    labels: { "io.kubernetes.pod.uid": uid, "io.kubernetes.pod.name": "cri-client" },
    annotations: { "denolet.test/case": "lifecycle" },
    linux: {
      cgroupParent: rt.cgroupParent,
      securityContext: { namespaceOptions: { network: NamespaceMode.NODE } },
    },
  };
}

/** Calls version() until it succeeds, for at most `ms`; returns the attempts made. */
async function versionWithin(cri: RuntimeService, ms: number): Promise<number> {
  let attempts = 0;
  await waitFor("CRI Version() to answer", async () => {
    attempts++;
    await cri.version({ timeoutMs: 2000 });
    return true;
  }, { timeoutMs: ms, intervalMs: 200 });
  return attempts;
}

Deno.test({
  name: "createRuntimeService() drives a real containerd through CRI v1",
  async fn(t) {
    const rt = await startTestRuntime({ name: "cri-client" });
    const cri = createRuntimeService({ endpoint: rt.endpoint });
    try {
      await t.step("version() reports the runtime and CRI v1", async () => {
        const v = await cri.version();
        assert.equal(v.runtimeName, "containerd");
        assert.equal(v.runtimeApiVersion, "v1");
        assert.ok(v.runtimeVersion.length > 0);
      });

      await t.step("status() reports RuntimeReady", async () => {
        const s = await cri.status();
        const ready = s.status.conditions.find((c) => c.type === "RuntimeReady");
        assert.equal(ready?.status, true);
      });

      await t.step(
        "imageStatus() finds the busybox image and returns undefined for a missing one",
        async () => {
          const busybox = await cri.imageStatus({ image: rt.images.busybox });
          assert.ok(busybox, "busybox image is present");
          assert.match(busybox.id, /^sha256:[0-9a-f]{64}$/);
          assert.ok(busybox.size > 0);
          assert.equal(
            await cri.imageStatus({ image: "docker.io/denolet/absent:none" }),
            undefined,
          );
          const images = await cri.listImages();
          assert.ok(images.some((i) => i.id === busybox.id));
          const fs = await cri.imageFsInfo();
          assert.ok(fs.imageFilesystems.length > 0);
        },
      );

      await t.step("a sandbox and a container go through their whole lifecycle", async () => {
        const config = sandboxConfig(rt);
        const podId = await cri.runPodSandbox(config);
        assert.match(podId, /^[0-9a-f]{64}$/);

        const pod = await cri.podSandboxStatus(podId);
        assert.equal(pod.status.state, PodSandboxState.SANDBOX_READY);
        assert.equal(pod.status.metadata.uid, config.metadata.uid);
        assert.equal(pod.status.labels["io.kubernetes.pod.uid"], config.metadata.uid);
        assert.equal(pod.status.linux?.namespaces?.options?.network, NamespaceMode.NODE);
        assert.ok(pod.status.createdAt > 1.6e18, "createdAt is in ns since the epoch");
        const pods = await cri.listPodSandbox({
          labelSelector: { "io.kubernetes.pod.uid": config.metadata.uid },
        });
        assert.deepEqual(pods.map((p) => p.id), [podId]);

        const containerId = await cri.createContainer(podId, {
          metadata: { name: "sleeper", attempt: 0 },
          image: { image: rt.images.busybox },
          command: ["sleep", "3600"],
          envs: [{ key: "GREETING", value: "hi" }],
          logPath: "sleeper/0.log",
          labels: { "io.kubernetes.container.name": "sleeper" },
          annotations: { "io.kubernetes.container.restartCount": "0" },
        }, config);
        let status = (await cri.containerStatus(containerId)).status;
        assert.equal(status.state, ContainerState.CONTAINER_CREATED);

        await cri.startContainer(containerId);
        status = (await cri.containerStatus(containerId)).status;
        assert.equal(status.state, ContainerState.CONTAINER_RUNNING);
        assert.equal(status.metadata.name, "sleeper");
        assert.equal(status.labels["io.kubernetes.container.name"], "sleeper");
        assert.equal(status.annotations["io.kubernetes.container.restartCount"], "0");
        assert.ok(status.startedAt >= status.createdAt);
        assert.equal(status.finishedAt, 0);
        assert.match(status.imageRef, /sha256:[0-9a-f]{64}/);

        const running = await cri.listContainers({
          podSandboxId: podId,
          state: { state: ContainerState.CONTAINER_RUNNING },
        });
        assert.deepEqual(running.map((c) => c.id), [containerId]);
        assert.equal(running[0]?.podSandboxId, podId);

        const hi = await cri.execSync(containerId, [
          "sh",
          "-c",
          "echo $GREETING; echo oops >&2; exit 3",
        ], 10);
        assert.equal(decoder.decode(hi.stdout), "hi\n");
        assert.equal(decoder.decode(hi.stderr), "oops\n");
        assert.equal(hi.exitCode, 3);

        await assert.rejects(
          cri.execSync(containerId, ["sleep", "10"], 0, { timeoutMs: 300 }),
          (err) => isDeadlineExceeded(err),
        );
        const abort = new AbortController();
        setTimeout(() => abort.abort(new Error("test gave up")), 200);
        await assert.rejects(
          cri.execSync(containerId, ["sleep", "10"], 0, { signal: abort.signal }),
          (err: { code?: number; cause?: unknown }) =>
            err.code === GrpcCode.CANCELLED && err.cause instanceof Error &&
            err.cause.message === "test gave up",
        );

        const stats = await cri.listContainerStats({ podSandboxId: podId });
        const mine = stats.find((s) => s.attributes.id === containerId);
        assert.ok(mine, "stats list our container");
        assert.equal(mine.attributes.metadata.name, "sleeper");
        assert.ok((mine.cpu?.usageCoreNanoSeconds?.value ?? 0) > 0);
        assert.ok((mine.memory?.workingSetBytes?.value ?? 0) > 0);
        const one = await cri.containerStats(containerId);
        assert.equal(one.attributes.id, containerId);

        await cri.stopContainer(containerId, 2);
        status = (await cri.containerStatus(containerId)).status;
        assert.equal(status.state, ContainerState.CONTAINER_EXITED);
        assert.ok(status.finishedAt >= status.startedAt);
        await cri.removeContainer(containerId);
        await assert.rejects(cri.containerStatus(containerId), (err) => isNotFound(err));

        await cri.stopPodSandbox(podId);
        assert.equal(
          (await cri.podSandboxStatus(podId)).status.state,
          PodSandboxState.SANDBOX_NOTREADY,
        );
        await cri.removePodSandbox(podId);
        assert.deepEqual(await cri.listPodSandbox({ id: podId }), []);
      });

      await t.step("calls about a missing container fail with isNotFound naming it", async () => {
        await assert.rejects(cri.stopContainer(MISSING_ID, 0), (err) => {
          assert.ok(isNotFound(err));
          assert.match(
            String((err as Error).message),
            new RegExp(`^StopContainer "${MISSING_ID}": rpc error: code = NotFound desc = `),
          );
          return true;
        });
        await assert.rejects(cri.containerStatus(MISSING_ID), (err) => isNotFound(err));
      });

      await t.step("the client reconnects after containerd restarts", async () => {
        await cri.version();
        await rt.restart();
        // The channel redials on the next call; allow its reconnect backoff (≤ 3 s).
        const attempts = await versionWithin(cri, 10_000);
        assert.ok(attempts >= 1);
        const images = await cri.listImages();
        assert.ok(images.length >= 2, "state survived the restart");
      });

      await t.step("calls fail with isUnavailable once containerd is gone", async () => {
        await rt.stop();
        await assert.rejects(cri.version(), (err) => isUnavailable(err));
      });

      await t.step("close() makes later calls fail", async () => {
        cri.close();
        await assert.rejects(
          cri.version(),
          (err: { code?: number }) => err.code === GrpcCode.CANCELLED,
        );
      });
    } finally {
      cri.close();
      await rt.stop(); // safe to repeat
    }
  },
});
