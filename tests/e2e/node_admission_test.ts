/**
 * Through a real kube-apiserver, what a user sees with kubectl: the Node's
 * status.images (the runtime's images, largest first, capped by
 * nodeStatusMaxImages), its Ready condition following the runtime's
 * NetworkReady (upstream's KubeletNotReady reason and message; pod-network
 * pods wait with NetworkNotReady while host-network pods run), and pods
 * rejected at admission (OutOfcpu, NodeAffinity): Failed with upstream's
 * reason, message and event, the other pods untouched.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Node, NodeCondition } from "../../lib/api/cluster_types.ts";
import type { Container, Pod } from "../../lib/api/types.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode } from "./_node.ts";

Deno.test({
  name: "status.images, Ready and NetworkReady, and admission rejections through the apiserver",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({ name: "admission", config: { nodeStatusMaxImages: 1 } });
    try {
      const { cluster: c, runtime: rt, log } = node;
      const ns = await node.namespace();
      const getNode = () => c.kubectlJson<Node>(["get", "node", NODE]);
      const ready = (n: Node): NodeCondition | undefined =>
        n.status?.conditions?.find((x) => x.type === "Ready");
      const container = (resources?: Container["resources"]): Container => ({
        name: "main",
        image: rt.images.busybox,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        ...(resources ? { resources } : {}),
      });
      const pod = (name: string, spec: Partial<Pod["spec"]> = {}): Pod => ({
        metadata: { name, namespace: ns },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [container()],
          ...spec,
        },
      });
      const apply = async (p: Pod) => {
        const res = await c.kubectl(["apply", "-f", "-"], {
          stdin: JSON.stringify({ apiVersion: "v1", kind: "Pod", ...p }),
        });
        assert.equal(res.code, 0, `kubectl apply ${p.metadata.name}: ${res.stderr}`);
      };
      const getPod = (name: string) => c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);

      await t.step(
        "status.images lists the largest image only (nodeStatusMaxImages: 1)",
        async () => {
          const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
          let largest;
          try {
            largest = (await cri.listImages()).sort((a, b) => b.size - a.size)[0]!;
          } finally {
            cri.close();
          }
          const images = await waitFor(
            "status.images",
            async () => (await getNode()).status?.images,
            {
              timeoutMs: 30_000,
              log,
            },
          );
          assert.deepEqual(images, [{
            names: [...largest.repoDigests, ...largest.repoTags],
            sizeBytes: largest.size,
          }]);
          const r = ready(await getNode());
          assert.equal(r?.reason, "KubeletReady");
          assert.equal(r?.message, "kubelet is posting ready status");
        },
      );

      await t.step(
        "admission: a pod asking for more cpu than the node has goes Failed with OutOfcpu; the others run",
        async () => {
          await node.runPod(
            pod("small", { containers: [container({ requests: { cpu: "10m" } })] }),
          );
          await apply(pod("huge", { containers: [container({ requests: { cpu: "1000" } })] }));
          const rejected = await waitFor("huge Failed", async () => {
            const p = await getPod("huge");
            return p.status?.phase === "Failed" ? p : undefined;
          }, { timeoutMs: 30_000, log });
          assert.equal(rejected.status?.reason, "OutOfcpu");
          const allocatable = (await getNode()).status?.allocatable?.cpu;
          assert.match(
            rejected.status?.message ?? "",
            /^Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: 10, capacity: \d+$/,
            `allocatable cpu ${allocatable}`,
          );
          assert.equal(rejected.status?.containerStatuses, undefined, "nothing of it ran");
          const event = await waitFor(
            "the OutOfcpu event",
            async () => (await node.events(ns, "huge")).find((e) => e.reason === "OutOfcpu"),
            {
              timeoutMs: 30_000,
              log,
            },
          );
          assert.equal(event.type, "Warning");
          assert.match(event.message, /^Node didn't have enough resource: cpu, requested: 1000000/);
          assert.equal((await getPod("small")).status?.phase, "Running");

          // A nodeSelector the node does not match, bound past the scheduler.
          await apply(pod("elsewhere", { nodeSelector: { "disk": "ssd" } }));
          const misplaced = await waitFor("elsewhere Failed", async () => {
            const p = await getPod("elsewhere");
            return p.status?.phase === "Failed" ? p : undefined;
          }, { timeoutMs: 30_000, log });
          assert.equal(misplaced.status?.reason, "NodeAffinity");
          assert.equal(
            misplaced.status?.message,
            "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
          );

          // A rejected pod is deleted at once: nothing of it needs reclaiming.
          const del = await c.kubectl(["delete", "pod", "-n", ns, "huge", "--timeout=30s"]);
          assert.equal(del.code, 0, `kubectl delete huge: ${del.stderr}\n${log()}`);
        },
      );

      await t.step(
        "NetworkReady=false makes the node NotReady; pod-network pods wait, host-network pods run",
        async () => {
          await rt.removePodNetwork();
          const notReady = await waitFor("node NotReady", async () => {
            const r = ready(await getNode());
            return r?.status === "False" ? r : undefined;
          }, { timeoutMs: 45_000, log });
          assert.equal(notReady.reason, "KubeletNotReady");
          assert.match(
            notReady.message ?? "",
            /^container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:/,
          );

          await apply(pod("podnet"));
          await node.runPod(pod("hostnet", { hostNetwork: true }));
          const event = await waitFor(
            "the NetworkNotReady event",
            async () =>
              (await node.events(ns, "podnet")).find((e) => e.reason === "NetworkNotReady"),
            {
              timeoutMs: 30_000,
              log,
            },
          );
          assert.equal(event.type, "Warning");
          assert.match(
            event.message,
            /^network is not ready: container runtime network not ready:/,
          );
          assert.equal((await getPod("podnet")).status?.phase, "Pending");

          await rt.installPodNetwork();
          await waitFor("node Ready again", async () => ready(await getNode())?.status === "True", {
            timeoutMs: 45_000,
            log,
          });
          await waitFor(
            "podnet Running",
            async () => (await getPod("podnet")).status?.phase === "Running",
            {
              timeoutMs: 45_000,
              log,
            },
          );
        },
      );
    } finally {
      await node.stop();
    }
  },
});
