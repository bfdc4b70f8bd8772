/**
 * Node-pressure eviction on real memory, through a real kube-apiserver: with
 * `evictionHard: memory.available` set just below what the machine has now, a
 * BestEffort pod holding a bounded few hundred MiB crosses it; the eviction
 * manager evicts that pod (Failed, reason Evicted, upstream's message, an
 * Evicted event) and not the Guaranteed one; the Node reports MemoryPressure
 * (and the node lifecycle controller taints it) until the memory is back,
 * then False after the pressure transition period.
 *
 * The threshold is computed from the agent's own /stats/summary (the same
 * node working set the signal uses), just before the allocation: other memory
 * use on a shared machine (page cache of builds and tests) moves it by a few
 * hundred MiB, so the margin is 384 MiB either way and the allocation 768 MiB. The memory is the hog's own (a `dd` buffer held while
 * its output pipe is full), freed when its container is killed.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Node, Taint } from "../../lib/api/cluster_types.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { Summary } from "../../lib/stats/summary_types.ts";
import { waitFor } from "../kit/mod.ts";
import { CONTROLLERS } from "./_cluster.ts";
import { busyboxPod, NODE, startNode } from "./_node.ts";

const Mi = 2 ** 20;
const MARGIN = 384 * Mi;
const ALLOCATION_MI = 768;

Deno.test({
  name:
    "a BestEffort memory hog is evicted before a Guaranteed pod, with MemoryPressure on the Node",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({
      name: "eviction",
      cluster: { controllers: [...CONTROLLERS, "node-lifecycle-controller"] },
      config: {
        nodeStatusUpdateFrequency: "2s",
        evictionPressureTransitionPeriod: "20s",
        // Replaced below, once the machine's memory is known; nothing to evict until then.
        evictionHard: { "memory.available": "1Mi" },
      },
    });
    try {
      const { cluster: c, runtime: rt } = node;
      const log = () => node.log();
      const ns = await node.namespace();
      const getNode = () => c.kubectlJson<Node>(["get", "node", NODE]);
      const getPod = (name: string) => c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);
      const condition = (n: Node, type: string) =>
        n.status?.conditions?.find((x) => x.type === type);
      const pod = (name: string, command: string[], resources?: Record<string, string>): Pod =>
        busyboxPod(rt, name, ns, {
          container: {
            command,
            ...(resources ? { resources: { requests: resources, limits: resources } } : {}),
          },
        });
      const available = async () => {
        const resp = await fetch(`http://127.0.0.1:${node.agent.readOnlyPort}/stats/summary`);
        const summary = (await resp.json()) as Summary;
        const bytes = summary.node.memory?.availableBytes;
        assert.ok(bytes !== undefined, "the Summary reports the node's available memory");
        return bytes;
      };

      await t.step("the threshold is set just below the memory available now", async () => {
        await node.runPod(pod("steady", ["sleep", "3600"], { cpu: "100m", memory: "64Mi" }));
        const now = await available();
        assert.ok(now > 2 * ALLOCATION_MI * Mi, `only ${now} bytes available`);
        const threshold = Math.floor((now - MARGIN) / Mi);
        const config = `${node.scratch}/kubelet.yaml`;
        const kc = JSON.parse(await Deno.readTextFile(config));
        kc.evictionHard = { "memory.available": `${threshold}Mi` };
        await Deno.writeTextFile(config, JSON.stringify(kc));
        await node.restartAgent();
        await waitFor(
          "the agent's Summary after the restart",
          () => available().catch(() => undefined),
          {
            timeoutMs: 30_000,
            log,
          },
        );
        const after = await available();
        assert.ok(
          after > threshold * Mi,
          `memory fell below the threshold before the hog ran: ${after} < ${threshold}Mi`,
        );
      });

      await t.step(
        "the BestEffort hog is evicted, Failed with upstream's reason and message",
        async () => {
          const hog = pod("hog", [
            "sh",
            "-c",
            // dd's buffer stays resident while it waits to write into a pipe nobody reads.
            `dd if=/dev/zero bs=${ALLOCATION_MI}M count=1 | sleep 3600`,
          ]);
          const res = await c.kubectl(["apply", "-f", "-"], {
            stdin: JSON.stringify({ apiVersion: "v1", kind: "Pod", ...hog }),
          });
          assert.equal(res.code, 0, `kubectl apply hog: ${res.stderr}`);
          const evicted = await waitFor("the hog evicted", async () => {
            const p = await getPod("hog").catch(() => undefined);
            return p?.status?.phase === "Failed" ? p : undefined;
          }, { timeoutMs: 90_000, log });
          assert.equal(evicted.status?.reason, "Evicted");
          assert.match(
            evicted.status?.message ?? "",
            /^The node was low on resource: memory\. Threshold quantity: \d+Mi, available: \d+(Ki|Mi)?\. Container main was using \d+(Ki|Mi)?, request is 0, has larger consumption of memory\. $/,
          );
          assert.deepEqual(
            evicted.status?.conditions?.filter((x) => x.type === "DisruptionTarget").map((x) => [
              x.status,
              x.reason,
            ]),
            [["True", "TerminationByKubelet"]],
          );
          const events = await node.events(ns, "hog", "Evicted");
          assert.equal(events[0]?.type, "Warning");
          assert.equal(events[0]?.message, evicted.status?.message);
        },
      );

      await t.step("the Node reports MemoryPressure and is tainted for it", async () => {
        const n = await waitFor("MemoryPressure=True and its taint", async () => {
          const got = await getNode().catch(() => undefined);
          const taint = got?.spec?.taints?.find((x: Taint) =>
            x.key === "node.kubernetes.io/memory-pressure"
          );
          return got && condition(got, "MemoryPressure")?.status === "True" && taint
            ? got
            : undefined;
        }, { timeoutMs: 30_000, log });
        assert.equal(condition(n, "MemoryPressure")?.reason, "KubeletHasInsufficientMemory");
      });

      await t.step("the Guaranteed pod keeps running", async () => {
        const steady = await getPod("steady");
        assert.equal(steady.status?.phase, "Running");
      });

      await t.step("MemoryPressure goes False after the transition period", async () => {
        const n = await waitFor("MemoryPressure=False", async () => {
          const got = await getNode().catch(() => undefined);
          return got && condition(got, "MemoryPressure")?.status === "False" ? got : undefined;
        }, { timeoutMs: 90_000, log });
        assert.equal(condition(n, "MemoryPressure")?.reason, "KubeletHasSufficientMemory");
        assert.equal((await getPod("steady")).status?.phase, "Running");
      });
    } finally {
      await node.stop();
    }
  },
});
