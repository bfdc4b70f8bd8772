/**
 * The same mutated pods as the manifest fuzz test, created through a real kube-apiserver
 * and bound to the node: the apiserver refuses most; the ones it lets through reach the
 * agent, which must run them or fail them the way upstream does (a status and an event),
 * without crashing or stalling, while good pods alongside keep their containers.
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import type { Pod } from "../../lib/api/types.ts";
import { recordSuite, suiteCount, suiteSeed } from "../kit/suite.ts";
import { waitFor } from "../kit/mod.ts";
import { busyboxPod, NODE, startNode, type TestNode } from "../e2e/_node.ts";
import { mutatedPodArb, preview } from "./_arbitraries.ts";

/** Waiting reasons that mean "not decided yet", not a failure the agent reports. */
const PENDING_REASONS = new Set(["ContainerCreating", "PodInitializing"]);

/** The good pods' containers: name → container ID and restart count, from the API. */
async function goodBaseline(
  node: TestNode,
  ns: string,
  names: string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of names) {
    const pod = await node.cluster.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);
    const s = pod.status?.containerStatuses?.[0];
    if (!s?.containerID || !s.state.running) throw new Error(`${name} is not running`);
    out.set(name, `${s.containerID}/${s.restartCount}`);
  }
  return out;
}

/** A mutated pod made creatable: a unique name, the test's namespace, bound to the node. */
function asApiPod(pod: unknown, name: string, ns: string): Record<string, unknown> {
  const p =
    (pod !== null && typeof pod === "object" && !Array.isArray(pod) ? { ...pod } : {}) as Record<
      string,
      unknown
    >;
  const meta = p.metadata !== null && typeof p.metadata === "object" && !Array.isArray(p.metadata)
    ? { ...p.metadata as Record<string, unknown> }
    : {};
  p.metadata = { ...meta, name, namespace: ns };
  if (p.spec !== null && typeof p.spec === "object" && !Array.isArray(p.spec)) {
    p.spec = { ...p.spec as Record<string, unknown>, nodeName: NODE };
  }
  return p;
}

/**
 * Whether the agent has decided about a pod it was given: it started it (startTime), or
 * failed it (phase Failed), or reports a container waiting for a reason of its own.
 * @returns the decision in words, or undefined while the agent has not touched it
 */
function decision(pod: Pod): string | undefined {
  const status = pod.status;
  if (!status) return undefined;
  if (status.phase === "Failed") return `Failed: ${status.reason ?? ""}`;
  const waiting = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]
    .map((s) => s.state.waiting?.reason)
    .find((r) => r !== undefined && !PENDING_REASONS.has(r));
  if (waiting) return `waiting: ${waiting}`;
  if (status.phase === "Running" || status.phase === "Succeeded") return status.phase;
  return undefined;
}

Deno.test({
  name: "fuzz: mutated pods through a real kube-apiserver to the agent, next to good pods",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seed = suiteSeed();
    const batches = suiteCount({ slice: 1, full: 8 });
    const perBatch = suiteCount({ slice: 10, full: 20 });
    const node = await startNode({ name: "fuzz-api" });
    const findings: string[] = [];
    const refusals = new Map<string, number>();
    const counts = {
      generated: 0,
      "refused by the apiserver": 0,
      admitted: 0,
      running: 0,
      failed: 0,
    };
    try {
      const c = node.cluster;
      const ns = await node.namespace();
      const good = ["good-a", "good-b"];
      for (const name of good) await node.runPod(busyboxPod(node.runtime, name, ns));
      const baseline = await goodBaseline(node, ns, good);
      const samples = fc.sample(mutatedPodArb(node.runtime.images.busybox), {
        seed: seed ^ 0xa91,
        numRuns: batches * perBatch,
      });
      for (let b = 0; b < batches; b++) {
        const names: string[] = [];
        const sent = new Map<string, string>();
        for (const [i, m] of samples.slice(b * perBatch, (b + 1) * perBatch).entries()) {
          const name = `fz-${b}-${i}`;
          counts.generated++;
          const text = JSON.stringify(asApiPod(m.pod, name, ns));
          sent.set(name, m.mutations.map((x) => `${x.kind} ${x.path.join(".")}`).join("; "));
          const res = await c.kubectl(["create", "-f", "-", "-o", "name"], { stdin: text });
          if (res.code === 0) names.push(name);
          else {
            counts["refused by the apiserver"]++;
            const reason = res.stderr.replace(/"[^"]*"/g, '"…"').slice(0, 160);
            refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
          }
        }
        // The unmutated pod of the first case: the apiserver must take it, else the
        // generator, not the agent, is what this batch tested.
        const control = `fz-${b}-control`;
        const res = await c.kubectl(["create", "-f", "-", "-o", "name"], {
          stdin: JSON.stringify(asApiPod(samples[b * perBatch]!.base, control, ns)),
        });
        if (res.code !== 0) {
          findings.push(`seed ${seed}: the unmutated pod was refused: ${res.stderr}`);
        } else names.push(control);
        counts.admitted += names.length;

        // Each admitted pod gets a decision from the agent, and a failure has an event.
        for (const name of names) {
          const pod = await waitFor(`the agent deciding about ${name}`, async () => {
            const p = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);
            return decision(p) ? p : undefined;
          }, { timeoutMs: 90_000, log: () => node.log() }).catch((err) => {
            findings.push(
              `seed ${seed}: ${(err as Error).message.split("\n")[0]} (${preview(sent.get(name))})`,
            );
            return undefined;
          });
          if (!pod) continue;
          const d = decision(pod)!;
          if (d === "Running" || d === "Succeeded") counts.running++;
          else {
            counts.failed++;
            const events = await waitFor(`an event about ${name} (${d})`, async () => {
              const list = await node.events(ns, name);
              return list.some((e) => e.source?.component === "kubelet") ? list : undefined;
            }, { timeoutMs: 30_000 }).catch(() => undefined);
            if (!events) {
              findings.push(
                `seed ${seed}: ${name} is ${d} without a kubelet event (${
                  preview(sent.get(name))
                })`,
              );
            }
          }
        }

        const [status, body] = await node.agent.healthz();
        if (status !== 200 || body.trim() !== "ok") {
          findings.push(
            `seed ${seed}: batch ${b}: /healthz answered ${status} ${body.slice(0, 200)}`,
          );
        }
        const now = await goodBaseline(node, ns, good).catch((err) => err as Error);
        if (now instanceof Error) findings.push(`seed ${seed}: batch ${b}: ${now.message}`);
        else {
          for (const [name, before] of baseline) {
            if (now.get(name) !== before) {
              findings.push(
                `seed ${seed}: batch ${b}: ${name} went from ${before} to ${now.get(name)}`,
              );
            }
          }
        }
        if (names.length > 0) {
          const res = await c.kubectl([
            "delete",
            "pod",
            "-n",
            ns,
            "--wait=true",
            "--timeout=120s",
            ...names,
          ]);
          if (res.code !== 0) {
            findings.push(`seed ${seed}: batch ${b}: delete failed: ${res.stderr.slice(0, 300)}`);
          }
        }
        if (findings.length > 0) break;
      }
      await recordSuite({
        suite: "fuzz",
        name: "mutated pods through kube-apiserver (real agent)",
        seed,
        figures: {
          batches,
          ...counts,
          "apiserver refusals (most common)": [...refusals].sort((x, y) => y[1] - x[1]).slice(0, 5)
            .map(([r, n]) => `${n}× ${r}`).join(" | "),
        },
        findings,
      });
      assert.deepEqual(findings, []);
    } finally {
      await node.stop();
    }
  },
});
