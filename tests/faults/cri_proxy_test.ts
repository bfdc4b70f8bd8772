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
import { type CriProxy, faultSchedule, runFaultSchedule, startCriProxy } from "./_cri_proxy.ts";
import { startChurn } from "./_churn.ts";
import { checkInvariants, snapshotBaseline } from "./_invariants.ts";

/** How the finding that names the kept logs starts (it is no violation). */
const LOGS_KEPT = "the agent's log:";

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
    /** Removals the runtime refused to the agent and to the checker: not violations. */
    const refusals: string[] = [];
    const figures: Record<string, number> = {};
    try {
      const p = proxy!;
      const log = () => node.log();
      const steady = await node.namespace();
      for (const name of ["steady-a", "steady-b"]) {
        await node.runPod(busyboxPod(node.runtime, name, steady));
      }

      await t.step(
        "one 5 s stall of every call leaves the Node Ready and /healthz green",
        async () => {
          const before = await readyTransition(node);
          const flaps: string[] = [];
          const watch = watchHealth(node, flaps);
          // Just after a relist began (every second), so the stall holds one.
          await waitFor("a call on the proxy", () => p.stall(5000) > 0 || undefined, { log });
          // A status update (every 2 s) and a runtime check (every 5 s) after the stall.
          await delay(5000 + 5000);
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
        },
      );

      await t.step(
        "delays, stalls and resets during a pod churn: no flap, invariants hold after",
        async () => {
          const churned = await node.namespace();
          const baseline = await snapshotBaseline(node, [steady]);
          assert.equal(baseline.pods.size, 2, "the steady pods are the baseline");
          const before = await readyTransition(node);
          const flaps: string[] = [];
          const watch = watchHealth(node, flaps);
          const deleted = new Map<string, number>();
          const rounds = suiteCount({ slice: 1, full: 6 });
          const faultMs = suiteCount({ slice: 20_000, full: 60_000 });
          const churnRandom = seededRandom(seed + 1);
          for (let round = 1; round <= rounds; round++) {
            const churn = startChurn(node, {
              namespace: churned,
              random: churnRandom,
              maxPods: suiteCount({ slice: 4, full: 8 }),
            });
            const injected = await runFaultSchedule(p, faultSchedule(random, faultMs));
            const churnFigures = await churn.stop();
            for (const [k, v] of churnFigures.deletedAt) deleted.set(k, v);
            for (const [k, v] of Object.entries(injected)) figures[k] = (figures[k] ?? 0) + v;
            for (const k of ["created", "updated", "deleted"] as const) {
              figures[k] = (figures[k] ?? 0) + churnFigures[k];
            }
            const violations = await checkInvariants(node, {
              namespaces: [steady, churned],
              baseline,
              deleted,
              seed,
              refusals,
            });
            figures.invariantChecks = (figures.invariantChecks ?? 0) + 1;
            findings.push(...violations.map((v) => `round ${round}: ${v}`));
          }
          figures.churnPolls = await watch.stop();
          if ((await readyTransition(node)) !== before) {
            flaps.push("Ready's lastTransitionTime moved");
          }
          findings.push(...flaps.map((f) => `seed ${seed}: during faults: ${f}`));
          if (findings.length > 0) {
            // The agent's log goes with the node; keep it for the replay's diagnosis.
            const file = await Deno.makeTempFile({
              prefix: "denolet-cri-proxy-agent-",
              suffix: ".log",
            });
            await Deno.writeTextFile(file, node.log());
            const containerd = file.replace("-agent-", "-containerd-");
            await Deno.copyFile(`${node.runtime.dir}/containerd.log`, containerd).catch(() => {});
            findings.push(`${LOGS_KEPT} ${file}; containerd's: ${containerd}`);
          }
          assert.deepEqual(findings, [], findings.join("\n"));
        },
      );
    } finally {
      await node.stop();
      await proxy?.close();
      await recordSuite({
        suite: "faults",
        name: "CRI proxy: delays, stalls, resets",
        seed,
        figures: {
          ...figures,
          ...(proxy?.counts() ?? {}),
          violations: findings.filter((f) => !f.startsWith(LOGS_KEPT)).length,
          runtimeRefusals: refusals.length,
        },
        findings,
        runtimeFindings: refusals,
      });
    }
  },
});
