/**
 * The agent with a `--manifest-url` source, hostPath and emptyDir volumes and
 * failing image pulls, on a real containerd + runc.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import { type AgentProcess, findPod, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

function hostPathPod(image: string, hostDir: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "from-url", namespace: "default" },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      volumes: [
        { name: "host", hostPath: { path: hostDir, type: "DirectoryOrCreate" } },
        { name: "scratch", emptyDir: {} },
      ],
      containers: [{
        name: "writer",
        image,
        imagePullPolicy: "Never",
        command: [
          "sh",
          "-c",
          "echo hello > /scratch/x && cat /scratch/x > /host/out && sleep 3600",
        ],
        volumeMounts: [
          { name: "host", mountPath: "/host" },
          { name: "scratch", mountPath: "/scratch" },
        ],
      }],
    },
  };
}

Deno.test({
  name: "agent runs pods from --manifest-url with volumes, and reports pull failures",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "sources" });
    const hostDir = await Deno.makeTempDir({ prefix: "denolet-hostpath-" });
    let body = "";
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
      if (req.headers.get("x-token") !== "secret") {
        return new Response("forbidden", { status: 403 });
      }
      return new Response(body);
    });
    let agent: AgentProcess | undefined;
    try {
      body = JSON.stringify({
        kind: "PodList",
        apiVersion: "v1",
        items: [hostPathPod(rt.images.busybox, join(hostDir, "data"))],
      });
      agent = await startAgent({
        runtime: rt,
        extraArgs: [
          `--manifest-url=http://127.0.0.1:${server.addr.port}/pods`,
          "--manifest-url-header=x-token:secret",
          "--http-check-frequency=1s",
        ],
      });
      const a = agent;

      await t.step("a pod from the URL runs, with hostPath and emptyDir mounted", async () => {
        const pod = await waitFor("from-url running", async () => {
          const p = findPod(await a.pods(), "from-url");
          return p?.status?.containerStatuses?.[0]?.state.running ? p : undefined;
        }, { timeoutMs: 30_000, log: a.log });
        assert.equal(pod.metadata.annotations?.["kubernetes.io/config.source"], "http");
        const out = await waitFor(
          "the container's write through hostPath",
          // The shell creates the file before it writes to it: wait for the line, not the file.
          () =>
            Deno.readTextFile(join(hostDir, "data", "out")).then((t) => t.trim() || undefined)
              .catch(() => undefined),
          { timeoutMs: 20_000, log: a.log },
        );
        assert.equal(out.trim(), "hello");
      });

      await t.step(
        "an image that cannot be pulled shows ErrImagePull, then ImagePullBackOff",
        async () => {
          const missing = hostPathPod(rt.images.busybox, join(hostDir, "data"));
          missing.metadata.name = "missing-image";
          missing.spec.containers[0]!.image = "127.0.0.1:1/denolet/missing:v1";
          missing.spec.containers[0]!.imagePullPolicy = "IfNotPresent";
          body = JSON.stringify({
            kind: "PodList",
            apiVersion: "v1",
            items: [hostPathPod(rt.images.busybox, join(hostDir, "data")), missing],
          });
          const reasons = new Set<string>();
          await waitFor("ImagePullBackOff after ErrImagePull", async () => {
            const p = findPod(await a.pods(), "missing-image");
            const reason = p?.status?.containerStatuses?.[0]?.state.waiting?.reason;
            if (reason) reasons.add(reason);
            return reasons.has("ErrImagePull") && reasons.has("ImagePullBackOff")
              ? true
              : undefined;
          }, { timeoutMs: 60_000, log: a.log });
          const p = findPod(await a.pods(), "missing-image")!;
          assert.equal(p.status?.phase, "Pending");
          assert.ok(
            findPod(await a.pods(), "from-url")?.status?.containerStatuses?.[0]?.state.running,
            "the other pod from the same source keeps running",
          );
        },
      );

      await t.step("a pod gone from the URL is stopped and removed", async () => {
        body = JSON.stringify({ kind: "PodList", apiVersion: "v1", items: [] });
        await waitFor("pods gone", async () => (await a.pods()).length === 0 || undefined, {
          timeoutMs: 30_000,
          log: a.log,
        });
      });
    } finally {
      if (agent) await agent.stop("SIGKILL");
      await server.shutdown();
      await rt.stop();
      await agent?.removeDirs();
      await Deno.remove(hostDir, { recursive: true }).catch(() => {});
    }
  },
});
