/**
 * The apiserver's faults (issue #17), on one node whose agent talks to kube-apiserver
 * through the fault proxy (./_api_proxy.ts):
 *
 * 1. the apiserver stopped (5 min in a full run, 20 s in the slice) while static pods
 *    are created and deleted from the manifest dir and the API pods run on, etcd
 *    compacted meanwhile; then started again: the Lease renews, the Node is Ready,
 *    static pods get their mirror pods, statuses converge, nothing restarted;
 * 2. the proxy answering 409 (status and Lease writes), 429 and 500 and cutting
 *    watches while pods churn through the apiserver: statuses converge, no healthy pod
 *    restarts, nothing runs twice;
 * 3. etcd compacted past every watch of the agent and every watch cut: each reflector
 *    is told 410 Gone, relists, and the node keeps following the apiserver.
 *
 * The apiserver runs without a watch cache for pods and services (the agent's two
 * watches), so a resumed watch reaches etcd and meets its compaction, as every watch
 * does after an apiserver restart; and with the node lifecycle controller, so an
 * outage past the Lease's 40 s shows as the Node's Ready going Unknown and back.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import type { Lease, Node } from "../../lib/api/cluster_types.ts";
import { requireRoot } from "../harness/mod.ts";
import { delay, waitFor } from "../kit/mod.ts";
import { recordSuite, seededRandom, suiteCount, suiteSeed } from "../kit/suite.ts";
import { CONTROLLERS } from "../e2e/_cluster.ts";
import { busyboxPod, NODE, startNode, type TestNode } from "../e2e/_node.ts";
import { type ApiProxy, startApiProxyFor } from "./_api_proxy.ts";
import { NO_FAULTS } from "./_api_faults.ts";
import { startChurn } from "./_churn.ts";
import { bareId, checkInvariants, observe, snapshotBaseline } from "./_invariants.ts";

const seed = suiteSeed();
/** How long the apiserver stays down. */
const OUTAGE_MS = suiteCount({ slice: 20_000, full: 300_000 });
/** How long pods churn while the proxy misbehaves. */
const ERRORS_MS = suiteCount({ slice: 20_000, full: 180_000 });
/** Rounds of compaction past every watch. */
const COMPACTIONS = suiteCount({ slice: 1, full: 5 });
/** API pods that must run through everything untouched. */
const STEADY_PODS = suiteCount({ slice: 2, full: 4 });
/** The static pods present at most. */
const MAX_STATIC = suiteCount({ slice: 3, full: 5 });

/** While the proxy misbehaves: per request. */
const ERROR_RATES = {
  ...NO_FAULTS,
  conflict: 0.2,
  tooMany: 0.05,
  serverError: 0.05,
  // A watch not cut lives for minutes: most are cut, within seconds, but past the
  // reflectors' one-second rule (a watch ended sooner without an event is a failure,
  // relisted after a backoff step, upstream's as ours).
  watchCut: 0.9,
  cutMs: [1_500, 5_000] as const,
};

const RELIST = /Watch of (\w+) closed: resourceVersion too old, relisting/g;

/** The resources whose reflectors relisted in `log`, with how often. */
function relists(log: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of log.matchAll(RELIST)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + 1);
  return out;
}

function readyCondition(node: Node | undefined) {
  return node?.status?.conditions?.find((c) => c.type === "Ready");
}

/**
 * The static pods against the runtime and their mirror pods: each present one runs
 * once and its mirror pod says so; each removed one runs nowhere and has no mirror.
 * (The shared checker reads pods by API UID, which a static pod's containers lack.)
 */
async function staticViolations(
  node: TestNode,
  ns: string,
  present: ReadonlySet<string>,
  removed: ReadonlySet<string>,
): Promise<string[]> {
  const o = await observe(node, [ns], new Map());
  const out: string[] = [];
  const runningOf = (name: string) =>
    o.containers.filter((c) => c.namespace === ns && c.podName === name && c.state === "running");
  for (const name of present) {
    const running = runningOf(name);
    if (running.length !== 1) out.push(`static pod ${name}: ${running.length} running containers`);
    const mirror = o.pods.find((p) => p.metadata.namespace === ns && p.metadata.name === name);
    if (mirror === undefined) {
      out.push(`static pod ${name} has no mirror pod`);
      continue;
    }
    const st = mirror.status?.containerStatuses?.find((s) => s.name === "main");
    if (mirror.status?.phase !== "Running" || bareId(st?.containerID) !== running[0]?.id) {
      out.push(
        `mirror pod ${name}: phase ${mirror.status?.phase}, container ${
          bareId(st?.containerID)
        }; the runtime runs ${running.map((c) => c.id).join(",") || "nothing"}`,
      );
    }
  }
  for (const name of removed) {
    if (runningOf(name).length > 0) out.push(`removed static pod ${name} still runs`);
    if (o.pods.some((p) => p.metadata.namespace === ns && p.metadata.name === name)) {
      out.push(`removed static pod ${name} still has a mirror pod`);
    }
  }
  return out;
}

Deno.test({
  name: "the agent rides out an apiserver outage, its errors and etcd compaction",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const random = seededRandom(seed);
    let proxy: ApiProxy | undefined;
    let node: TestNode | undefined;
    try {
      node = await startNode({
        name: "fapi",
        cluster: {
          apiserverArgs: ["--watch-cache-sizes=pods#0,services#0"],
          controllers: [...CONTROLLERS, "node-lifecycle-controller"],
        },
        agentServer: async (c) =>
          (proxy = await startApiProxyFor(c, NODE, seededRandom((seed ^ 0x5bd1e995) >>> 0))).url,
      });
      const n = node;
      const p = proxy!;
      const c = n.cluster;
      const log = () => n.log();
      const steady = await n.namespace();
      const churned = await n.namespace();
      const statics = await n.namespace();
      for (let i = 0; i < STEADY_PODS; i++) {
        await n.runPod(busyboxPod(n.runtime, `steady-${i}`, steady));
      }
      const lease = () => c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
      const getNode = () => c.kubectlJson<Node>(["get", "node", NODE]);

      await t.step(
        `the apiserver down for ${OUTAGE_MS / 1000} s while static pods churn`,
        async () => {
          // Static pods, written to the manifest dir; the file source names them <name>-<node>.
          let serial = 0;
          const present = new Set<string>();
          const removed = new Set<string>();
          const writeStatic = async () => {
            const name = `static-${serial++}`;
            const pod = busyboxPod(n.runtime, name, statics);
            await Deno.writeTextFile(
              `${n.agent.manifestDir}/${name}.json`,
              JSON.stringify({ apiVersion: "v1", kind: "Pod", ...pod }),
            );
            present.add(`${name}-${NODE}`);
          };
          const removeStatic = async () => {
            const full = [...present][Math.floor(random() * present.size)]!;
            await Deno.remove(`${n.agent.manifestDir}/${full.slice(0, -NODE.length - 1)}.json`);
            present.delete(full);
            removed.add(full);
          };
          await writeStatic();
          await writeStatic();
          const staticsConverge = (what: string) =>
            waitFor(what, () => staticViolations(n, statics, present, removed), {
              until: (v) => v.length === 0,
              timeoutMs: 60_000,
              log,
            });
          await staticsConverge("the first static pods and their mirror pods running");
          const baseline = await snapshotBaseline(n, [steady]);
          assert.equal(baseline.pods.size, STEADY_PODS, `seed ${seed}: steady pods not healthy`);
          const logMark = log().length;

          await p.pause();
          await c.stopApiserver();
          const downAt = Date.now();
          // Past every watch of the agent: each resumes from a compacted resourceVersion.
          await c.compactEtcd();
          let created = 0;
          let deleted = 0;
          while (Date.now() - downAt < OUTAGE_MS) {
            // The pause between two changes is itself the random moment.
            await delay(1_000 + Math.floor(random() * 3_000));
            if (present.size === 0 || (present.size < MAX_STATIC && random() < 0.5)) {
              await writeStatic();
              created++;
            } else {
              await removeStatic();
              deleted++;
            }
          }
          // The agent followed its manifests with the apiserver away.
          await waitFor("the agent running the static pods it has", async () => {
            const names = (await n.agent.pods()).filter((x) =>
              x.metadata.namespace === statics && x.status?.phase === "Running"
            ).map((x) => x.metadata.name);
            return [...present].every((x) => names.includes(x)) &&
              [...removed].every((x) => !names.includes(x));
          }, { timeoutMs: 30_000, log });
          const leaseBefore = (await lease().catch(() => undefined))?.spec.renewTime;
          await c.startApiserver();
          p.resume();
          const upAt = Date.now();
          const since = (t0: number) => Date.now() - t0;

          const renewed = await waitFor("the Lease renewed", async () => {
            const l = await lease();
            return Date.parse(l.spec.renewTime ?? "") > upAt - 1_000 ? l : undefined;
          }, { timeoutMs: 60_000, log });
          assert.notEqual(renewed.spec.renewTime, leaseBefore);
          const leaseMs = since(upAt);
          const ready = await waitFor("the Node Ready", async () => {
            const node = await getNode();
            return readyCondition(node)?.status === "True" ? node : undefined;
          }, { timeoutMs: 60_000, log });
          const readyMs = since(upAt);
          await staticsConverge("the static pods' mirror pods converged");
          const staticMs = since(upAt);
          // The pod watch is back: it resumes from a compacted resourceVersion, is told
          // 410 Gone, relists (after its backoff step, up to a minute) and follows again.
          await c.kubectl(["create", "-f", "-"], {
            stdin: JSON.stringify({
              apiVersion: "v1",
              kind: "Pod",
              ...busyboxPod(n.runtime, "after-outage", steady),
            }),
          });
          await waitFor("after-outage Running", async () => {
            const x = await c.kubectlJson<Pod>(["get", "pod", "-n", steady, "after-outage"]);
            return x.status?.phase === "Running" || undefined;
          }, { timeoutMs: 120_000, log });
          const apiFollowedMs = since(upAt);
          const violations = await checkInvariants(n, {
            namespaces: [steady],
            baseline,
            seed,
          });
          const invariantsMs = since(upAt);
          const seen = relists(log().slice(logMark));
          await recordSuite({
            suite: "faults",
            name: "apiserver down while static pods churn",
            seed,
            figures: {
              outageMs: OUTAGE_MS,
              staticCreated: created,
              staticDeleted: deleted,
              compactions: 1,
              relists: [...seen].map(([r, k]) => `${r} ${k}`).join(", "),
              leaseRenewedMs: leaseMs,
              nodeReadyMs: readyMs,
              nodeReadyReason: readyCondition(ready)?.reason ?? "",
              staticConvergedMs: staticMs,
              apiPodRunningMs: apiFollowedMs,
              invariantsHeldMs: invariantsMs,
              invariantChecks: 1,
              violations: violations.length,
            },
            findings: violations,
          });
          assert.deepEqual(violations, [], violations.join("\n"));
          // The compaction was past every watch: each reflector relisted.
          assert.ok(seen.has("pods"), `seed ${seed}: the pod watch did not relist after 410`);
        },
      );

      await t.step("the apiserver answering 409, 429, 500 and cutting watches", async () => {
        const baseline = await snapshotBaseline(n, [steady]);
        const before = p.counts();
        p.setFaults(ERROR_RATES);
        // The watches open now began before the faults: cut them so the next ones draw too.
        p.cutWatches();
        const churn = startChurn(n, { namespace: churned, random, maxPods: 5 });
        await delay(ERRORS_MS);
        const result = await churn.stop();
        // The faults stay on: statuses must converge through them.
        const stoppedAt = Date.now();
        // A watch refused with 429 or 500 waits a backoff step (up to a minute after
        // repeated ones, as client-go's), and then the pods start.
        const notRunning = await waitFor("every pod the churn left Running and ready", async () => {
          const list = await c.kubectlJson<{ items: Pod[] }>(["get", "pods", "-n", churned]);
          return list.items.filter((x) =>
            x.metadata.deletionTimestamp === undefined &&
            (x.status?.phase !== "Running" ||
              !(x.status.containerStatuses ?? []).every((st) => st.ready))
          ).map((x) => `${x.metadata.name} ${x.status?.phase}`);
        }, { until: (left) => left.length === 0, timeoutMs: 120_000, log }).catch((err) => [
          String(err.message),
        ]);
        const runningMs = Date.now() - stoppedAt;
        const violations = await checkInvariants(n, {
          namespaces: [steady, churned],
          baseline,
          deleted: result.deletedAt,
          seed,
        });
        violations.push(...notRunning.map((x) => `seed ${seed}: not running: ${x}`));
        const convergedMs = Date.now() - stoppedAt;
        p.setFaults(NO_FAULTS);
        const after = p.counts();
        const diff = (k: keyof typeof after) => after[k] - before[k];
        await recordSuite({
          suite: "faults",
          name: "apiserver 409/429/500 and watch cuts during churn",
          seed,
          figures: {
            churnMs: ERRORS_MS,
            requests: diff("requests"),
            watches: diff("watches"),
            conflicts: diff("conflicts"),
            tooMany: diff("tooMany"),
            serverErrors: diff("serverErrors"),
            serverErrorsAfterForward: diff("serverErrorsAfterForward"),
            watchCuts: diff("watchCuts"),
            faultsInjected: diff("conflicts") + diff("tooMany") + diff("serverErrors") +
              diff("watchCuts"),
            podsCreated: result.created,
            podsUpdated: result.updated,
            podsDeleted: result.deleted,
            podsRunningMs: runningMs,
            invariantsHeldMs: convergedMs,
            invariantChecks: 1,
            violations: violations.length,
          },
          findings: violations,
        });
        assert.ok(
          diff("watchCuts") > 0 && diff("conflicts") + diff("tooMany") > 0,
          `seed ${seed}: too few faults landed`,
        );
        assert.deepEqual(violations, [], violations.join("\n"));
      });

      await t.step("etcd compacted past every watch, each watch cut", async () => {
        const baseline = await snapshotBaseline(n, [steady]);
        const deleted = new Map<string, number>();
        let compactions = 0;
        let cuts = 0;
        let total = new Map<string, number>();
        for (let round = 0; round < COMPACTIONS; round++) {
          // A pod to follow, so the pod watch has moved since the last round.
          const name = `after-compaction-${round}`;
          await n.runPod(busyboxPod(n.runtime, name, churned));
          if (round > 0) {
            const gone = `after-compaction-${round - 1}`;
            await c.kubectl(["delete", "pod", "-n", churned, gone, "--wait=false"]);
            deleted.set(`${churned}/${gone}`, Date.now());
          }
          // A random moment, and past the reflectors' one-second rule: a watch cut
          // within a second of its start counts as failed and relists without a 410.
          await delay(1_000 + Math.floor(random() * 2_000));
          const mark = log().length;
          // Until both watches were told 410: a pod event the agent saw after the
          // compaction puts its pod watch past it again, so a round may take a retry.
          const seen = await waitFor(`round ${round}: both reflectors relisted`, async () => {
            for (const i of [0, 1]) {
              await c.kubectl([
                ...["create", "configmap", `bump-${round}-${compactions}-${i}`, "-n", churned],
                "--from-literal=k=v",
              ]);
            }
            await c.compactEtcd();
            compactions++;
            cuts += p.cutWatches();
            const s = await waitFor("the relists", () => relists(log().slice(mark)), {
              until: (m) => m.has("pods") && m.has("services"),
              // A relist waits its backoff step: up to a minute after repeated ones.
              timeoutMs: 75_000,
            }).catch(() => undefined);
            return s;
          }, { timeoutMs: 240_000, intervalMs: 100, log });
          for (const [r, k] of seen) total.set(r, (total.get(r) ?? 0) + k);
        }
        // Still following the apiserver: a new pod runs, the last one goes.
        const last = `after-compaction-${COMPACTIONS - 1}`;
        await c.kubectl(["delete", "pod", "-n", churned, last, "--wait=false"]);
        deleted.set(`${churned}/${last}`, Date.now());
        await c.kubectl(["create", "-f", "-"], {
          stdin: JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            ...busyboxPod(n.runtime, "after-compactions", churned),
          }),
        });
        const createdAt = Date.now();
        // The pod watch relisted last after its backoff step: allow for it.
        await waitFor("after-compactions Running", async () => {
          const x = await c.kubectlJson<Pod>(["get", "pod", "-n", churned, "after-compactions"]);
          return x.status?.phase === "Running" || undefined;
        }, { timeoutMs: 120_000, log });
        const followedMs = Date.now() - createdAt;
        const violations = await checkInvariants(n, {
          namespaces: [steady, churned],
          baseline,
          deleted,
          seed,
        });
        total = new Map([...total].sort());
        await recordSuite({
          suite: "faults",
          name: "etcd compaction past every watch",
          seed,
          figures: {
            rounds: COMPACTIONS,
            compactions,
            watchCuts: cuts,
            relists: [...total].map(([r, k]) => `${r} ${k}`).join(", "),
            newPodRunningMs: followedMs,
            invariantChecks: 1,
            violations: violations.length,
          },
          findings: violations,
        });
        assert.deepEqual(violations, [], violations.join("\n"));
        const pod = await c.kubectlJson<Pod>(["get", "pod", "-n", churned, "after-compactions"]);
        assert.equal(pod.status?.phase, "Running");
      });
    } finally {
      await node?.stop();
      await proxy?.stop();
    }
  },
});
