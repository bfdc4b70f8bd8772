/**
 * Through a real kube-apiserver, as a user sees it with kubectl: a pod whose
 * containers mount volume sources denolet does not implement (nfs, an inline
 * csi volume, a persistentVolumeClaim) stays Pending with its container
 * Waiting ContainerCreating, and `kubectl get events` shows upstream's
 * FailedMount naming every such volume and its source; a pod beside it keeps
 * running.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode, type TestNode } from "./_node.ts";

Deno.test({
  name: "a pod mounting volumes without a plugin gets FailedMount events and never starts",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    let node: TestNode | undefined;
    try {
      node = await startNode({ name: "volplugins" });
      const n = node;
      const c = n.cluster;
      const ns = await n.namespace();
      const image = n.runtime.images.busybox;
      const container = (mounts: string[]) => ({
        name: "main",
        image,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        volumeMounts: mounts.map((m) => ({ name: m, mountPath: `/mnt/${m}` })),
      });
      await n.runPod({
        metadata: { name: "web", namespace: ns },
        spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [container([])] },
      } as Pod);

      const share = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "share", namespace: ns },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          volumes: [
            { name: "scratch", emptyDir: {} },
            { name: "data", nfs: { server: "192.0.2.1", path: "/export" } },
            { name: "inline", csi: { driver: "driver.example.com" } },
            { name: "claim", persistentVolumeClaim: { claimName: "absent" } },
          ],
          containers: [container(["scratch", "data", "inline", "claim"])],
        },
      };
      const applied = await c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(share) });
      assert.equal(applied.code, 0, applied.stderr);

      const event = await waitFor("a FailedMount event for the pod", async () => {
        const list = await n.events(ns, "share", "FailedMount").catch(() => []);
        return list[0];
      }, { timeoutMs: 60_000, log: n.log });
      assert.equal(event.type, "Warning");
      assert.equal(event.involvedObject.kind, "Pod");
      assert.equal(event.source?.component, "kubelet");
      assert.equal(event.source?.host, NODE);
      assert.equal(
        event.message,
        "Unable to attach or mount volumes: unmounted volumes=[claim data inline], " +
          "unattached volumes=[], failed to process volumes=[claim data inline]: " +
          'failed to get Plugin from volumeSpec for volume "data" err=no volume plugin matched ' +
          "(denolet does not implement nfs volumes); " +
          'failed to get Plugin from volumeSpec for volume "inline" err=no volume plugin matched ' +
          "(denolet does not implement csi volumes); " +
          'failed to get Plugin from volumeSpec for volume "claim" err=no volume plugin matched ' +
          "(denolet does not implement persistentVolumeClaim volumes)",
      );

      const pod = await waitFor("share reported ContainerCreating", async () => {
        const p = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, "share"]);
        const waiting = p.status?.containerStatuses?.[0]?.state.waiting;
        return waiting?.reason === "ContainerCreating" ? p : undefined;
      }, { timeoutMs: 30_000, log: n.log });
      assert.equal(pod.status?.phase, "Pending");
      assert.equal(pod.status?.containerStatuses?.[0]?.ready, false);

      const web = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, "web"]);
      assert.equal(web.status?.phase, "Running");
      assert.equal(web.status?.containerStatuses?.[0]?.restartCount, 0);
      assert.ok(web.status?.containerStatuses?.[0]?.state.running);
    } finally {
      await node?.stop();
    }
  },
});
