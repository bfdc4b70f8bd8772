/**
 * The cluster benchmark: a batch of 30 pods created through a real apiserver
 * (image present), timed from the create request to "Running" seen by a
 * watch, against the same batch of raw CRI sequences run concurrently on the
 * same containerd; and the agent's RSS in apiserver mode with those 30 pods.
 *
 * Target: agent p99 ≤ 1.1 × raw p99 + 1 s; RSS ≤ 100 MB.
 *
 * `deno run -A bench/cluster.ts` prints the markdown lines (needs root and
 * the binaries of tools/e2e/build.sh); bench/mod.ts calls {@link runClusterBench}.
 *
 * @module
 */

import { startTestRuntime, type TestRuntime } from "../tests/harness/mod.ts";
import { startAgent } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";
import { startCluster } from "../tests/e2e/_cluster.ts";
import { createRuntimeService, type RuntimeService } from "../lib/cri/mod.ts";
import { rawCriBatch } from "./_raw_configs.ts";
import { createKubeClient, loadKubeconfig } from "../lib/kubeapi/mod.ts";
import type { Pod } from "../lib/api/types.ts";
import { percentile } from "./_percentile.ts";
import { rssMb } from "./_proc.ts";

const PODS = 30;

function podSpec(name: string, image: string, hostNetwork: boolean): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      nodeName: "testnode",
      hostNetwork,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
      }],
    },
  };
}

/** The raw CRI floor of the batch, all sequences at once ({@link rawCriBatch}). */
function rawBatch(rt: TestRuntime, cri: RuntimeService, logs: string): Promise<number[]> {
  const pods = Array.from({ length: PODS }, (_, i) => {
    const pod = podSpec(`raw-${i}`, rt.images.busybox, true);
    pod.metadata.namespace = "bench";
    return pod;
  });
  return rawCriBatch(rt, cri, pods, logs);
}

/**
 * Runs the benchmark.
 * @returns markdown lines for docs/benchmarks.md
 */
export async function runClusterBench(): Promise<string[]> {
  const cluster = await startCluster();
  const rt = await startTestRuntime({ name: "bench-cluster" });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 120_000 });
  const logs = await Deno.makeTempDir({ prefix: "denolet-bench-raw-" });
  const admin = createKubeClient({
    kubeconfig: await loadKubeconfig(cluster.adminKubeconfig),
    qps: 0,
  });
  const kubeconfig = await cluster.nodeKubeconfig("testnode");
  // The raw batches run while the agent is not: it would remove their
  // sandboxes as orphans. Warm containerd once, then raw, agent, raw.
  await rawBatch(rt, cri, logs);
  const raw1 = await rawBatch(rt, cri, logs);
  let raw2: number[] = [];
  const agent = await startAgent({
    runtime: rt,
    extraArgs: [
      `--kubeconfig=${kubeconfig}`,
      "--node-ip=127.0.0.1",
      "--v=0",
      "--housekeeping-interval=10s",
      "--file-check-frequency=20s",
    ],
  });
  const ns = "bench";
  const lines: string[] = [];
  const abort = new AbortController();
  try {
    await waitFor("node Ready", async () => {
      const n = await admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        "/api/v1/nodes/testnode",
      ).catch(() => undefined);
      return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
        ? true
        : undefined;
    }, { timeoutMs: 60_000, log: agent.log });
    await admin.create("/api/v1/namespaces", { metadata: { name: ns } });
    await waitFor("service account and root CA in the namespace", async () => {
      await admin.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`);
      await admin.get(`/api/v1/namespaces/${ns}/configmaps/kube-root-ca.crt`);
      return true;
    }, { timeoutMs: 60_000 });

    const runningAt = new Map<string, number>();
    const list = await admin.list<Pod>(`/api/v1/namespaces/${ns}/pods`);
    const watching = admin.watch<Pod>(
      `/api/v1/namespaces/${ns}/pods`,
      (ev) => {
        const p = ev.object;
        const name = p.metadata?.name;
        if (name && p.status?.phase === "Running" && !runningAt.has(name)) {
          runningAt.set(name, Date.now());
        }
      },
      { signal: abort.signal, query: { resourceVersion: list.metadata.resourceVersion ?? "" } },
    ).catch(() => {});
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: PODS }, (_, i) =>
        admin.create(
          `/api/v1/namespaces/${ns}/pods`,
          podSpec(`pod-${i}`, rt.images.busybox, true),
        )),
    );
    await waitFor(`${PODS} pods Running`, () => runningAt.size === PODS || undefined, {
      timeoutMs: 180_000,
    });
    const agentTimes = [...runningAt.values()].map((t) => t - t0);
    // RSS while the batch settles (the peak: 30 starts at once), then with
    // the 30 pods running steadily (after 20 s), each the max of 5 s samples.
    let peakRss = rssMb(agent.pid);
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 5_000));
      peakRss = Math.max(peakRss, rssMb(agent.pid));
    }
    let maxRss = 0;
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, 5_000));
      maxRss = Math.max(maxRss, rssMb(agent.pid));
    }
    abort.abort();
    await watching;
    await admin.delete(`/api/v1/namespaces/${ns}`);
    await waitFor("pods gone", async () => {
      const pods = await agent.pods();
      return pods.filter((p) => p.metadata.namespace === ns).length === 0 || undefined;
    }, { timeoutMs: 180_000 });
    await agent.stop("SIGTERM");
    raw2 = await rawBatch(rt, cri, logs);

    const rawP99 = Math.max(percentile(raw1, 99), percentile(raw2, 99));
    const agentP99 = percentile(agentTimes, 99);
    const limit = 1.1 * rawP99 + 1000;
    lines.push(
      `### Batch of ${PODS} pods created through the apiserver (image present)`,
      "",
      "| | p50 | p99 |",
      "|---|---|---|",
      `| raw CRI batch before the agent ran (all ${PODS} sequences at once) | ${
        percentile(raw1, 50).toFixed(0)
      } ms | ${percentile(raw1, 99).toFixed(0)} ms |`,
      `| raw CRI batch after the agent stopped | ${percentile(raw2, 50).toFixed(0)} ms | ${
        percentile(raw2, 99).toFixed(0)
      } ms |`,
      `| denolet: create request → Running seen by a watch | ${
        percentile(agentTimes, 50).toFixed(0)
      } ms | ${agentP99.toFixed(0)} ms |`,
      "",
      `Target p99 ≤ 1.1 × raw p99 (the slower raw run) + 1 s = ${limit.toFixed(0)} ms: ${
        agentP99 <= limit ? "met" : "missed"
      }. Agent RSS with ${PODS} pods running (apiserver mode, max over 30 s from 20 s after the batch): ${
        maxRss.toFixed(1)
      } MB (target ≤ 100 MB: ${
        maxRss <= 100 ? "met" : "missed"
      }); peak in the first 20 s, while the batch settled: ${peakRss.toFixed(1)} MB.`,
      "",
    );
  } finally {
    abort.abort();
    await agent.stop("SIGTERM");
    admin.close();
    cri.close();
    await rt.stop();
    await cluster.stop();
    await agent.removeDirs();
    await Deno.remove(logs, { recursive: true }).catch(() => {});
  }
  return lines;
}

if (import.meta.main) {
  console.log((await runClusterBench()).join("\n"));
}
