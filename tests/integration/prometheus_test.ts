/**
 * The Prometheus endpoints against real consumers: `promtool check metrics`
 * on each, and a real Prometheus (Debian's `prometheus` package) scraping them
 * every second from a test server, all on 127.0.0.1. One busybox pod runs on
 * the harness's containerd so that container series are present. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { instrumentRuntime, KubeletMetrics } from "../../lib/metrics/mod.ts";
import { statsHandlers } from "../../lib/server/mod.ts";
import type { StatsProvider } from "../../lib/stats/mod.ts";
import { exec, startTestRuntime } from "../harness/mod.ts";
import { freePort, hostNetworkPod, waitFor } from "../kit/mod.ts";
import { testRuntimeManager, testStatsProvider } from "./_manager.ts";

const PATHS = ["/metrics/resource", "/metrics/cadvisor", "/metrics"];

Deno.test({
  name:
    "promtool accepts, and a real Prometheus scrapes, /metrics/resource, /metrics/cadvisor and /metrics",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "prometheus" });
    const metrics = new KubeletMetrics();
    let runtime: RuntimeService | undefined;
    let provider: StatsProvider | undefined;
    let server: Deno.HttpServer | undefined;
    let prom: Deno.ChildProcess | undefined;
    const dir = await Deno.makeTempDir({ prefix: "denolet-prom-" });
    try {
      runtime = instrumentRuntime(
        createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 }),
        metrics,
      );
      const manager = testRuntimeManager(rt, runtime);
      provider = await testStatsProvider(rt, runtime);
      const pod = hostNetworkPod(rt.images.busybox, {
        name: 'we"ird\\name',
        namespace: "prom",
        containers: [{ name: "sleeper", command: ["sleep", "3600"] }],
      });
      const uid = pod.metadata.uid!;
      await manager.syncPod(pod, await manager.getPodStatus(uid), new AbortController().signal);
      provider.reconcile([{ pod, runtime: await manager.getPodStatus(uid) }]);

      const routes = statsHandlers(provider, () => metrics.render());
      const port = freePort();
      server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, async (req) => {
        const url = new URL(req.url);
        const h = routes[url.pathname];
        return h ? await h(req, url) : new Response("not found", { status: 404 });
      });
      // Housekeeping samples the new container within its 1 s interval.
      await waitFor("the sleeper's series in /metrics/cadvisor", async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics/cadvisor`)).text();
        return /container="sleeper"/.test(text);
      }, { timeoutMs: 20_000 });

      for (const path of PATHS) {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        const text = await res.text();
        assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
        const check = await exec("promtool", ["check", "metrics"], {
          stdin: text,
          allowFailure: true,
        });
        assert.equal(check.code, 0, `promtool on ${path}: ${check.stdout}${check.stderr}`);
        if (path === "/metrics/cadvisor") assert.match(text, /container="sleeper"/);
        if (path === "/metrics") assert.match(text, /operation_type="run_podsandbox"/);
      }

      const promPort = freePort();
      const jobs = PATHS.map((p) =>
        `  - job_name: "${p.slice(1).replaceAll("/", "_")}"\n` +
        `    metrics_path: "${p}"\n` +
        `    static_configs:\n      - targets: ["127.0.0.1:${port}"]\n`
      ).join("");
      await Deno.writeTextFile(
        `${dir}/prometheus.yml`,
        `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n${jobs}`,
      );
      prom = new Deno.Command("/usr/bin/prometheus", {
        args: [
          `--config.file=${dir}/prometheus.yml`,
          `--storage.tsdb.path=${dir}/data`,
          `--web.listen-address=127.0.0.1:${promPort}`,
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();

      const api = `http://127.0.0.1:${promPort}/api/v1`;
      type Target = { labels: { job: string }; health: string; lastError: string };
      const targets = await waitFor("Prometheus scraping all three targets", async () => {
        const body = await (await fetch(`${api}/targets`)).json();
        return body.data.activeTargets as Target[];
      }, {
        timeoutMs: 60_000,
        intervalMs: 500,
        until: (ts) => ts.length === 3 && ts.every((t) => t.health === "up"),
      });
      assert.equal(targets.length, 3, JSON.stringify(targets));
      for (const t of targets) assert.equal(t.health, "up", `${t.labels.job}: ${t.lastError}`);
      const up = await (await fetch(`${api}/query?query=up`)).json();
      const results = up.data.result as { metric: { job: string }; value: [number, string] }[];
      assert.deepEqual(
        results.map((r) => [r.metric.job, r.value[1]]).sort(),
        [["metrics", "1"], ["metrics_cadvisor", "1"], ["metrics_resource", "1"]],
      );
    } finally {
      if (prom) {
        prom.kill("SIGTERM");
        await prom.status;
      }
      await server?.shutdown();
      provider?.stop();
      runtime?.close();
      await rt.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
