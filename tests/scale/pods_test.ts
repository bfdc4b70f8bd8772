/**
 * A full node: N pods created at once through a real kube-apiserver, bound to the
 * node, each a busybox `sleep` (with the service account token volume every API pod
 * gets). The node must take them all to Running while staying healthy, then take them
 * all down again, leaving nothing behind.
 *
 * - All N Running and ready, within a bound.
 * - Throughout (a poll a second, tests/scale/_health.ts): Node Ready stays True with no
 *   PLEG message and no Ready transition; the Lease's renewTime is never older than
 *   1.5 × the renew interval; `/healthz` answers 200 "ok".
 * - Per step of pods Running (50 in a full run): the PLEG relist time and the pod
 *   worker's sync time in the window (the agent's own histograms), the pod start SLI,
 *   the agent's RSS, the shims' and containerd's, the time since the creates.
 * - Deleted at once (one deletecollection): gone from the API and the runtime, no
 *   mounts and no pod directories left under the agent's root.
 *
 * The node's containerd and the agent each run in a cpu cgroup of their own, as
 * containerd.service and kubelet.service do on a systemd node: on this harness's default
 * (every process in one cpu cgroup) the ~250 shims and runc calls of a burst each take a
 * thread's share of the CPUs against the agent's event loop and the apiserver, and with
 * the runtime apart the agent still shared one autogroup (the kernel's per-session CPU
 * share) with the apiserver, etcd and the test, which no real node does.
 *
 * `DENOLET_SCALE_AGENT=upstream` runs the same test on the upstream kubelet (built by
 * tools/e2e/build.sh, configured alike: tests/e2e/_node.ts `agentKind`), for the figures to
 * compare with; its report names the agent.
 *
 * The pods are host-network: the harness's CNI bridge hands out a /24 (253 addresses),
 * fewer than 500 pods, and a bridge ADD per pod measures the CNI plugin and iptables
 * more than the agent. The slice is 20 pods; the full run 250, then 500 (stopped early,
 * with the reason recorded, if the machine's available memory falls under 4 GiB).
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import { requireRoot } from "../harness/mod.ts";
import { cpuCgroupOf, readMounts } from "../harness/mounts.ts";
import { recordSuite, suiteCount, suiteSeed } from "../kit/suite.ts";
import { waitFor } from "../kit/mod.ts";
import { busyboxPod, startNode, type TestNode } from "../e2e/_node.ts";
import { checkInvariants, snapshotBaseline } from "../faults/_invariants.ts";
import { type AdminApi, adminApi } from "./_admin.ts";
import { loadAverage, memAvailable, takeReading, watchNodeHealth, window } from "./_health.ts";

const GiB = 2 ** 30;
/** Stop adding load when the machine has less than this available. */
const MIN_AVAILABLE = 4 * GiB;
/**
 * The Lease is renewed every 0.25 × its duration: upstream's default 40 s, so every 10 s,
 * measured from the end of the last renewal; its renewTime is stamped before the PUT.
 */
const LEASE_SECONDS = 40;
const RENEW_MS = LEASE_SECONDS * 250;
/** Open files the agent may hold per running pod (its cgroups' stat files). */
const FDS_PER_POD = 24;
/** Creates in flight at once ("at once" through one client, as a Deployment's burst). */
const CREATE_CONCURRENCY = 16;

/** Which kubelet runs the node: `DENOLET_SCALE_AGENT`, denolet unless it says "upstream". */
const AGENT = (() => {
  const kind = Deno.env.get("DENOLET_SCALE_AGENT") || "denolet";
  if (kind !== "denolet" && kind !== "upstream") {
    throw new Error(`DENOLET_SCALE_AGENT: "${kind}" is neither denolet nor upstream`);
  }
  return kind;
})();
/** What the suite records call a run: `250 pods at once`, `… (upstream kubelet)`. */
const runName = (size: number) =>
  `${size} pods at once${AGENT === "upstream" ? " (upstream kubelet)" : ""}`;

/** The sizes run, in order: `DENOLET_SCALE_SIZES` (e.g. "250") overrides a full run's. */
const SIZES = suiteCount({
  slice: [20],
  full: Deno.env.get("DENOLET_SCALE_SIZES")?.split(",").map(Number) ?? [250, 500],
});
for (const size of SIZES) {
  if (!Number.isInteger(size) || size < 1) {
    throw new Error(`DENOLET_SCALE_SIZES: ${size} is not a pod count`);
  }
}

Deno.test({
  name: `scale: ${
    SIZES.join(", then ")
  } pods created at once all run on a healthy node, then all go`,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    // A size runs only when the one before it held: a node that could not take 250
    // pods says nothing more at 500, and the machine is shared.
    let failed: { size: number; err: unknown } | undefined;
    for (const size of SIZES) {
      if (failed) {
        await recordSuite({
          suite: "scale",
          name: runName(size),
          seed: suiteSeed(),
          figures: { pods: size, notRun: `${failed.size} pods did not hold` },
        });
        continue;
      }
      const ok = await t.step(`${size} pods`, async () => {
        try {
          await scale(size);
        } catch (err) {
          failed = { size, err };
          throw err;
        }
      });
      if (!ok && !failed) failed = { size, err: new Error(`${size} pods failed`) };
    }
  },
});

async function scale(size: number): Promise<void> {
  requireRoot();
  const seed = suiteSeed();
  const step = size < 50 ? 10 : 50;
  const findings: string[] = [];
  const figures: Record<string, number | string> = {
    pods: size,
    agent: AGENT,
    hostNetwork: "true",
    runtimeCpuCgroup: "own",
  };
  const startAvailable = memAvailable();
  assert.ok(
    startAvailable > MIN_AVAILABLE,
    `seed ${seed}: only ${Math.round(startAvailable / 2 ** 20)} MiB available; not starting`,
  );
  const node = await startNode({
    name: `scale-${size}`,
    config: { maxPods: size + 10, nodeLeaseDurationSeconds: LEASE_SECONDS },
    runtimeOwnCpuCgroup: true,
    agentOwnCpuCgroup: true,
    agentKind: AGENT,
  });
  // Where the agent runs, from its own /proc entry.
  figures.agentCpuCgroup = cpuCgroupOf(node.agent.pid) ?? "";
  assert.match(String(figures.agentCpuCgroup), /-agent$/, "the agent is not in its own cpu cgroup");
  const api = await adminApi(node.cluster);
  const cri = createRuntimeService({ endpoint: node.runtime.endpoint });
  try {
    const ns = await node.namespace();
    const health = watchNodeHealth(node, api, { leaseAgeBoundMs: RENEW_MS * 1.5 });
    const log = () => node.log();
    let stoppedEarly: string | undefined;
    let running = 0;
    try {
      // Up: every pod created, then polled to Running; a reading at each step.
      const first = await takeReading(node);
      figures["agentRssMiB@0"] = window(first, first).agentRssMiB;
      const t0 = Date.now();
      figures.createdAt = health.elapsed();
      await createPods(api, node, ns, size);
      figures.createMs = Date.now() - t0;
      let last = first;
      let nextStep = step;
      const deadline = t0 + Math.max(120_000, size * 3_000);
      while (running < size) {
        const pods = await listPods(api, ns).catch(() => undefined);
        if (pods) running = pods.filter(isRunningReady).length;
        if (running >= nextStep) {
          const reached = Math.min(size, Math.floor(running / step) * step);
          // A `/metrics` that does not answer under load is a finding, not the end of
          // the run: the Lease, `/healthz` and the deletes still get measured.
          const reading = await takeReading(node).catch((err: Error) => {
            findings.push(
              `${health.elapsed()} /metrics at ${running} Running: ${err.name}: ${err.message}`,
            );
            return undefined;
          });
          nextStep = reached + step;
          if (reading) {
            const w = window(last, reading);
            figures[`@${reached}`] = `${running} Running at ${
              ((reading.at - t0) / 1000).toFixed(1)
            } s; relist ${w.relistMeanMs} ms mean (${
              Number.isFinite(w.relistMaxLeMs) ? `all ≤ ${w.relistMaxLeMs} ms` : "some > 10 s"
            }, ${w.relists}); sync ${w.syncMeanMs} ms mean (${w.syncs}); start SLI ${w.startMeanS} s mean (${w.starts}); agent ${w.agentRssMiB} MiB, ${w.agentCpuS} s CPU (${w.agentCores} cores); shims ${w.shimRssMiB} MiB (${w.shims}); containerd ${w.containerdRssMiB} MiB; available ${w.memAvailableMiB} MiB`;
            last = reading;
          }
        }
        if (running >= size) break;
        if (health.memAvailable() < MIN_AVAILABLE) {
          stoppedEarly = `memory: ${
            Math.round(health.memAvailable() / 2 ** 20)
          } MiB available at ${running} pods Running`;
          break;
        }
        if (Date.now() > deadline) {
          stoppedEarly = `time: ${running} of ${size} Running after ${(Date.now() - t0) / 1000} s`;
          break;
        }
        await new Promise((r) => setTimeout(r, 1_000));
      }
      figures.allRunningMs = running >= size ? Date.now() - t0 : "not reached";
      figures.upAgentCpuS = window(first, last).agentCpuS;
      figures.running = running;

      if (!stoppedEarly) {
        // Steady: the node holding N pods, no starts in flight; ten relists measured, then
        // the invariants (API status == runtime, nothing twice, no restart since).
        const baseline = await snapshotBaseline(node, [ns]);
        const before = await takeReading(node);
        const after = await waitFor("ten relists at full load", async () => {
          const r = await takeReading(node);
          return r.relistCount - before.relistCount >= 10 ? r : undefined;
        }, { timeoutMs: 120_000, intervalMs: 1_000, log });
        const w = window(before, after);
        figures.steadyRelistMeanMs = w.relistMeanMs;
        figures.steadyRelistMaxLeMs = Number.isFinite(w.relistMaxLeMs)
          ? w.relistMaxLeMs
          : "> 10000";
        figures.steadySyncMeanMs = w.syncMeanMs;
        figures.steadyAgentRssMiB = w.agentRssMiB;
        figures.steadyAgentCores = w.agentCores;
        figures.steadyShimRssMiB = w.shimRssMiB;
        figures.steadyContainerdRssMiB = w.containerdRssMiB;
        figures.shimMiBPerPod = Math.round(w.shimRssMiB / Math.max(1, w.shims) * 10) / 10;
        figures.loadAverage = loadAverage();
        // Housekeeping keeps each cgroup's ~11 stat files open (lib/cgroup/read_file.ts):
        // about 22 per one-container pod at full load; they must all go with the pods
        // (the check after the delete holds the default 1024).
        const violations = await checkInvariants(node, {
          namespaces: [ns],
          baseline,
          seed,
          bounds: { maxFds: 1024 + FDS_PER_POD * size },
        });
        figures.invariantChecks = 1;
        findings.push(...violations.map((v) => `at full load: ${v}`));
      }

      // Down: one deletecollection; gone from the API and the runtime.
      const beforeDelete = await takeReading(node);
      const td = Date.now();
      figures.deletedAt = health.elapsed();
      await api.delete(`/api/v1/namespaces/${ns}/pods`);
      await waitFor("every pod gone from the API and the runtime", async () => {
        const [pods, sandboxes, containers] = await Promise.all([
          listPods(api, ns),
          cri.listPodSandbox({ labelSelector: { "io.kubernetes.pod.namespace": ns } }),
          cri.listContainers({ labelSelector: { "io.kubernetes.pod.namespace": ns } }),
        ]);
        return pods.length + sandboxes.length + containers.length === 0 ||
          undefined;
      }, { timeoutMs: Math.max(120_000, size * 3_000), intervalMs: 1_000, log });
      figures.allGoneMs = Date.now() - td;
      figures.downAgentCpuS = window(beforeDelete, await takeReading(node)).agentCpuS;
      const leftovers = await waitFor("no mounts or pod dirs left under the agent's root", () => {
        const left = leftoversUnder(node);
        return left.length === 0 ? left : undefined;
      }, { timeoutMs: 60_000, intervalMs: 1_000, log }).catch(() => leftoversUnder(node));
      figures.cleanMs = Date.now() - td;
      findings.push(...leftovers.map((l) => `left after delete: ${l}`));
      const deleted = new Map(Array.from({ length: size }, (_, i) => [`${ns}/p-${i}`, td]));
      const violations = await checkInvariants(node, { namespaces: [ns], deleted, seed });
      figures.invariantChecks = Number(figures.invariantChecks ?? 0) + 1;
      findings.push(...violations.map((v) => `after delete: ${v}`));
    } finally {
      const report = await health.stop();
      figures.healthPolls = report.polls;
      figures.maxLeaseAgeMs = report.maxLeaseAgeMs;
      figures.maxApiReadMs = report.maxApiMs;
      figures.maxHealthzMs = report.maxHealthzMs;
      figures.maxHealthzAt = report.maxHealthzAt;
      figures.leaseBoundMs = RENEW_MS * 1.5;
      figures.apiPollErrors = report.apiErrors;
      if (report.firstApiError) figures.firstApiPollError = report.firstApiError.slice(0, 300);
      figures.minAvailableMiB = Math.round(report.minMemAvailable / 2 ** 20);
      findings.push(...report.readyFindings, ...report.leaseFindings, ...report.healthzFindings);
      if (report.slowHealthz.length) figures.slowHealthz = report.slowHealthz.join("; ");
      if (stoppedEarly) figures.stoppedEarly = stoppedEarly;
      await recordSuite({ suite: "scale", name: runName(size), seed, figures, findings });
      await keepAgentLog(node, size);
    }
    assert.equal(stoppedEarly, undefined, `seed ${seed}: stopped early (${stoppedEarly})`);
    assert.equal(running, size, `seed ${seed}: ${running} of ${size} Running`);
    assert.deepEqual(findings, [], `seed ${seed}: ${findings.length} findings`);
  } finally {
    cri.close();
    api.close();
    await node.stop();
  }
}

/**
 * A run with a report file keeps the agent's log next to it (`scale-<N>-agent.log`, or
 * `scale-<N>-upstream-kubelet.log`), for the figures' why; without one (a plain slice)
 * nothing is kept.
 */
async function keepAgentLog(node: TestNode, size: number): Promise<void> {
  const report = Deno.env.get("DENOLET_SUITE_REPORT");
  if (!report) return;
  const name = AGENT === "upstream" ? "upstream-kubelet" : "agent";
  await Deno.writeTextFile(`${dirname(report)}/scale-${size}-${name}.log`, node.log());
}

/** Creates pods `p-0` … `p-<n-1>`, {@link CREATE_CONCURRENCY} requests in flight. */
async function createPods(api: AdminApi, node: TestNode, ns: string, n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const pod = busyboxPod(node.runtime, `p-${i}`, ns, { spec: { hostNetwork: true } });
      await api.post(`/api/v1/namespaces/${ns}/pods`, { apiVersion: "v1", kind: "Pod", ...pod });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, n) }, worker));
}

async function listPods(api: AdminApi, ns: string): Promise<Pod[]> {
  return (await api.get<{ items: Pod[] }>(`/api/v1/namespaces/${ns}/pods`)).items;
}

function isRunningReady(p: Pod): boolean {
  return p.status?.phase === "Running" &&
    (p.status.containerStatuses ?? []).length > 0 &&
    (p.status.containerStatuses ?? []).every((s) => s.ready);
}

/** Mounts under the agent's root and pod directories it has not removed. */
function leftoversUnder(node: TestNode): string[] {
  const root = node.agent.rootDir;
  const left = readMounts().filter((m) => m.mountPoint.startsWith(`${root}/`)).map((m) =>
    `mount ${m.mountPoint}`
  );
  try {
    for (const e of Deno.readDirSync(`${root}/pods`)) left.push(`pod dir ${root}/pods/${e.name}`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return left;
}
