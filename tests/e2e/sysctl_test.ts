/**
 * Through a real kube-apiserver, upstream's sysctl e2e tests
 * (test/e2e/common/node/sysctl.go) against denolet: a pod setting a safe
 * sysctl Succeeds and its log shows the value; a pod setting kernel.msgmax,
 * which is not allowlisted on this node, goes Failed with reason
 * SysctlForbidden and a Warning event of that reason, while a pod beside it
 * keeps running; deleting the refused pod removes its API object.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode, type TestNode } from "./_node.ts";

Deno.test({
  name:
    "sysctls through the apiserver: a safe one holds in the pod, an unallowed one fails the pod with SysctlForbidden",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    let node: TestNode | undefined;
    try {
      node = await startNode({ name: "sysctl" });
      const n = node;
      const c = n.cluster;
      const ns = await n.namespace();
      const image = n.runtime.images.busybox;
      const pod = (
        name: string,
        command: string[],
        sysctls?: { name: string; value: string }[],
      ) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: ns },
        spec: {
          nodeName: NODE,
          hostNetwork: true,
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          ...(sysctls ? { securityContext: { sysctls } } : {}),
          containers: [{ name: "test-container", image, imagePullPolicy: "Never", command }],
        },
      });
      const apply = async (p: unknown) => {
        const r = await c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(p) });
        assert.equal(r.code, 0, r.stderr);
      };
      const get = (name: string) => c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);

      await apply(pod("web", ["sleep", "3600"]));
      await apply(
        pod("safe", ["cat", "/proc/sys/kernel/shm_rmid_forced"], [
          { name: "kernel.shm_rmid_forced", value: "1" },
        ]),
      );
      await apply(
        pod("unsafe", ["sleep", "3600"], [{ name: "kernel.msgmax", value: "10000000000" }]),
      );

      // upstream: WaitForPodFailedReason(pod, "SysctlForbidden").
      const unsafe = await waitFor("unsafe Failed", async () => {
        const p = await get("unsafe");
        return p.status?.phase === "Failed" ? p : undefined;
      }, { timeoutMs: 60_000, log: n.log });
      assert.equal(unsafe.status?.reason, "SysctlForbidden");
      assert.equal(
        unsafe.status?.message,
        'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted',
      );
      const event = await waitFor("a SysctlForbidden event", async () => {
        const list = await n.events(ns, "unsafe", "SysctlForbidden").catch(() => []);
        return list[0];
      }, { timeoutMs: 30_000, log: n.log });
      assert.equal(event.type, "Warning");
      assert.equal(event.source?.component, "kubelet");
      assert.equal(event.message, 'forbidden sysctl: "kernel.msgmax" not allowlisted');

      // upstream "should support sysctls": Succeeded, and the value in the log.
      await waitFor("safe Succeeded", async () => {
        const p = await get("safe");
        return p.status?.phase === "Succeeded" ? p : undefined;
      }, { timeoutMs: 60_000, log: n.log });
      const logs = await c.kubectl(["logs", "-n", ns, "safe"]);
      assert.equal(logs.code, 0, logs.stderr);
      assert.equal(logs.stdout.trim(), "1");

      const web = await waitFor("web Running", async () => {
        const p = await get("web");
        return p.status?.phase === "Running" ? p : undefined;
      }, { timeoutMs: 30_000, log: n.log });
      assert.equal(web.status?.containerStatuses?.[0]?.restartCount, 0);

      const deleted = await c.kubectl(["delete", "pod", "-n", ns, "unsafe", "--wait=false"]);
      assert.equal(deleted.code, 0, deleted.stderr);
      await waitFor("unsafe gone from the API", async () => {
        const r = await c.kubectl(["get", "pod", "-n", ns, "unsafe"]);
        return r.code !== 0 && /NotFound/.test(r.stderr) ? true : undefined;
      }, { timeoutMs: 30_000, log: n.log });
    } finally {
      await node?.stop();
    }
  },
});
