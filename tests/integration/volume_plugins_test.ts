/**
 * A static pod mounting a volume source denolet does not implement (nfs here)
 * on a real containerd + runc: it never gets a sandbox or a directory in the
 * volume's place, it stays Pending with its container Waiting
 * ContainerCreating, the agent logs upstream's FailedMount naming the volume
 * and the source on every retry, and a pod beside it runs untouched.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

const REFUSAL = /no volume plugin matched \(denolet does not implement nfs volumes\)/;

function nfsManifest(image: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "share", namespace: "default" },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      volumes: [
        { name: "scratch", emptyDir: {} },
        { name: "data", nfs: { server: "127.0.0.1", path: "/export" } },
      ],
      containers: [{
        name: "main",
        image,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        volumeMounts: [
          { name: "scratch", mountPath: "/scratch" },
          { name: "data", mountPath: "/data" },
        ],
      }],
    },
  });
}

Deno.test({
  name: "a pod mounting an nfs volume never starts; FailedMount names the volume and source",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "volplugins" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt });
      const a = agent;
      const image = rt.images.busybox;
      await Deno.writeTextFile(
        join(a.manifestDir, "web.yaml"),
        podManifest({ name: "web", image, command: ["sleep", "3600"] }),
      );
      await Deno.writeTextFile(join(a.manifestDir, "share.yaml"), nfsManifest(image));

      const webId = await waitFor("web running", async () => {
        const cs = findPod(await a.pods(), "web")?.status?.containerStatuses?.[0];
        return cs?.state.running ? cs.containerID : undefined;
      }, { timeoutMs: 30_000, log: a.log });

      // Without an apiserver the event is logged ("Event occurred"). Refused, then refused
      // again on the worker's retry after its error backoff: the refusal holds.
      const events = () =>
        a.log().split("\n").filter((l) =>
          l.includes('"Event occurred"') && l.includes('reason="FailedMount"') && REFUSAL.test(l)
        );
      await waitFor("two FailedMount events", () => events().length >= 2, {
        timeoutMs: 40_000,
        log: a.log,
      });
      const line = events()[0]!;
      assert.match(line, /object="default\/share-testnode" kind="Pod"/);
      assert.match(line, /Unable to attach or mount volumes: unmounted volumes=\[data\]/);
      assert.match(line, /failed to get Plugin from volumeSpec for volume \\?"data\\?"/);

      const share = findPod(await a.pods(), "share");
      assert.equal(share?.status?.phase, "Pending");
      const waiting = share?.status?.containerStatuses?.[0]?.state.waiting;
      assert.equal(waiting?.reason, "ContainerCreating");
      const sandboxes = await cri.listPodSandbox({
        labelSelector: { "io.kubernetes.pod.name": "share-testnode" },
      });
      assert.deepEqual(sandboxes, [], "no sandbox for the refused pod");
      // Nothing was made for it: no emptyDir in the nfs volume's place, not even the other one.
      const podDir = join(a.rootDir, "pods", share!.metadata.uid!);
      assert.equal(await Deno.stat(podDir).then(() => true, () => false), false);

      const web = findPod(await a.pods(), "web")?.status?.containerStatuses?.[0];
      assert.equal(web?.containerID, webId);
      assert.ok(web?.state.running);
      assert.equal(web?.restartCount, 0);
    } finally {
      if (agent) await agent.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
