/**
 * lib/server's routes over a fake agent: the URLs, bodies, content types and
 * status codes the healthz and read-only servers answer with.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { EXPOSITION_CONTENT_TYPE } from "../../lib/metrics/mod.ts";
import { defaultKubeletConfiguration } from "../../lib/options/mod.ts";
import {
  type AgentProvider,
  healthzRoutes,
  readOnlyRoutes,
  secureRoutes,
  serve,
  type StatsSource,
} from "../../lib/server/mod.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { testPod } from "../kit/mod.ts";

function fakeAgent(overrides: Partial<AgentProvider> = {}): AgentProvider {
  const pod: Pod = { ...testPod({ containers: ["c"] }), status: { phase: "Running" } };
  const stats = {
    summary: () => Promise.reject(new Error("no stats in this test")),
    snapshot: () => Promise.reject(new Error("no stats in this test")),
  } as unknown as StatsSource;
  return {
    podsWithStatus: () => [pod],
    runningPods: () => [],
    healthChecks: [],
    kubeletConfig: defaultKubeletConfiguration(),
    stats,
    renderMetrics: () => "agent_metric 1\n",
    renderProbeMetrics: () => "prober_probe_total 2\n",
    ...overrides,
  };
}

async function get(
  routes: ReturnType<typeof readOnlyRoutes>,
  path: string,
): Promise<Response> {
  const url = new URL(`http://node${path}`);
  const handler = routes[url.pathname];
  assert.ok(handler, `no route for ${url.pathname}`);
  return await handler(new Request(url), url);
}

Deno.test("readOnlyRoutes() serves /pods as a v1 PodList of the pods with their status", async () => {
  const res = await get(readOnlyRoutes(fakeAgent()), "/pods");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.equal(body.kind, "PodList");
  assert.equal(body.apiVersion, "v1");
  assert.deepEqual(body.metadata, {});
  assert.equal(body.items[0].metadata.uid, "u1");
  assert.equal(body.items[0].status.phase, "Running");
});

Deno.test("secureRoutes() serves /runningpods/ as a v1 PodList, GET only; the read-only port does not", async () => {
  const running: Pod = {
    metadata: { name: "web", namespace: "prod", uid: "u1" },
    spec: { containers: [{ name: "app", image: "busybox", resources: {} }] },
    status: {},
  };
  const routes = secureRoutes(fakeAgent({ runningPods: () => [running] })).exact;
  const res = await get(routes, "/runningpods/");
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(await res.json(), {
    kind: "PodList",
    apiVersion: "v1",
    metadata: {},
    items: [running],
  });
  const url = new URL("http://node/runningpods/");
  const post = await routes["/runningpods/"]!(new Request(url, { method: "POST" }), url);
  assert.deepEqual([post.status, post.headers.get("allow"), await post.text()], [
    405,
    "GET",
    "Method Not Allowed",
  ]);
  assert.equal(readOnlyRoutes(fakeAgent())["/runningpods/"], undefined);
});

Deno.test("readOnlyRoutes() answers /healthz ok, /configz as JSON and the metrics in the exposition format", async () => {
  const routes = readOnlyRoutes(fakeAgent());
  const healthz = await get(routes, "/healthz");
  assert.equal(healthz.status, 200);
  assert.equal(await healthz.text(), "ok");
  const configz = await get(routes, "/configz");
  assert.equal(configz.headers.get("content-type"), "application/json");
  assert.equal((await configz.json()).kubeletconfig.kind, "KubeletConfiguration");
  for (
    const [path, text] of [["/metrics", "agent_metric 1\n"], [
      "/metrics/probes",
      "prober_probe_total 2\n",
    ]] as const
  ) {
    const res = await get(routes, path);
    assert.equal(res.headers.get("content-type"), EXPOSITION_CONTENT_TYPE, path);
    assert.equal(await res.text(), text, path);
  }
  assert.deepEqual(Object.keys(routes).sort(), [
    "/configz",
    "/healthz",
    "/metrics",
    "/metrics/cadvisor",
    "/metrics/probes",
    "/metrics/resource",
    "/pods",
    "/stats/summary",
  ]);
});

Deno.test("healthzRoutes() runs ping and the agent's checks; a failing one answers 500 naming it", async () => {
  const loop: { problem?: string } = {};
  const routes = healthzRoutes(fakeAgent({
    healthChecks: [{ name: "syncloop", check: () => loop.problem }],
  }));
  const ok = await get(routes, "/healthz");
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), "ok");
  const verbose = await get(routes, "/healthz?verbose");
  assert.equal(await verbose.text(), "[+]ping ok\n[+]syncloop ok\nhealthz check passed\n");
  loop.problem = "sync loop took too long to respond";
  const failed = await get(routes, "/healthz");
  assert.equal(failed.status, 500);
  assert.equal(
    await failed.text(),
    "[+]ping ok\n[-]syncloop failed: sync loop took too long to respond\nhealthz check failed\n",
  );
});

Deno.test("serve() answers 404 for unknown paths and 500 naming the error for a failing handler", async () => {
  const server = serve({
    name: "test",
    hostname: "127.0.0.1",
    port: 0,
    logger: silentLogger,
    routes: { "/boom": () => Promise.reject(new Error("kaboom")) },
  });
  try {
    const missing = await fetch(`http://127.0.0.1:${server.port}/nope`);
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), "404 page not found\n");
    const boom = await fetch(`http://127.0.0.1:${server.port}/boom`);
    assert.equal(boom.status, 500);
    assert.equal(await boom.text(), "internal error: kaboom\n");
  } finally {
    await server.shutdown();
  }
});
