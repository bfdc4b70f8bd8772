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
  DEBUGGING_PATHS,
  debuggingDisabledRoutes,
  findRoute,
  type Handler,
  healthzRoutes,
  readOnlyRoutes,
  secureRoutes,
  serve,
  type StatsSource,
} from "../../lib/server/mod.ts";
import { createLogger, silentLogger } from "../../lib/util/log.ts";
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

Deno.test("readOnlyRoutes() answers /healthz ok and the metrics in the exposition format; no /configz, as upstream's read-only port", async () => {
  const routes = readOnlyRoutes(fakeAgent());
  const healthz = await get(routes, "/healthz");
  assert.equal(healthz.status, 200);
  assert.equal(await healthz.text(), "ok");
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
    "/healthz",
    "/metrics",
    "/metrics/cadvisor",
    "/metrics/probes",
    "/metrics/resource",
    "/pods",
    "/stats/summary",
  ]);
});

/** What `path` answers through a route table, as the servers look routes up. */
async function call(
  table: { exact: Record<string, Handler>; prefixes: Record<string, Handler> },
  path: string,
  init: RequestInit = {},
): Promise<[number, string]> {
  const url = new URL(`https://node${path}`);
  const handler = findRoute(table.exact, table.prefixes, url.pathname);
  if (!handler) return [404, ""];
  const res = await handler(new Request(url, init), url);
  return [res.status, await res.text()];
}

const DEBUG_ON = {
  enableDebuggingHandlers: true,
  enableSystemLogHandler: true,
  enableDebugFlagsHandler: true,
  enableProfilingHandler: true,
  setVerbosity: () => {},
};

Deno.test("secureRoutes() with enableDebuggingHandlers off: 405 'Debug endpoints are disabled.' on every debugging path, no /configz, /pods still served", async () => {
  const mounted = () => new Response("mounted");
  const table = secureRoutes(fakeAgent(), {
    prefixes: { "/containerLogs/": mounted, "/logs/": mounted, "/run/": mounted },
  }, { ...DEBUG_ON, enableDebuggingHandlers: false });
  for (
    const path of [
      "/run/ns/p/c",
      "/exec/ns/p/c",
      "/attach/ns/p/c",
      "/portForward/ns/p",
      "/containerLogs/ns/p/c",
      "/runningpods/",
      "/debug/pprof/heap",
      "/logs/syslog",
    ]
  ) {
    assert.deepEqual(await call(table, path), [405, "Debug endpoints are disabled.\n"], path);
  }
  assert.deepEqual(Object.keys(table.upgrades).sort(), ["/attach/", "/exec/", "/portForward/"]);
  assert.equal((await call(table, "/configz"))[0], 404);
  assert.equal((await call(table, "/debug/flags/v", { method: "PUT", body: "4" }))[0], 404);
  assert.equal((await call(table, "/pods"))[0], 200);
});

Deno.test("secureRoutes() turns /logs/, /debug/pprof/ and /debug/flags/v into upstream's 405s when their settings are off", async () => {
  const mounted = () => new Response("node logs");
  const on = secureRoutes(fakeAgent(), { prefixes: { "/logs/": mounted } }, DEBUG_ON);
  assert.deepEqual(await call(on, "/logs/syslog"), [200, "node logs"]);
  assert.equal((await call(on, "/debug/pprof/"))[0], 404, "no Go profiler: not served");
  assert.equal((await call(on, "/configz"))[0], 200);
  const off = secureRoutes(fakeAgent(), { prefixes: { "/logs/": mounted } }, {
    ...DEBUG_ON,
    enableSystemLogHandler: false,
    enableProfilingHandler: false,
    enableDebugFlagsHandler: false,
  });
  assert.deepEqual(await call(off, "/logs/syslog"), [405, "logs endpoint is disabled.\n"]);
  assert.deepEqual(await call(off, "/debug/pprof/heap"), [
    405,
    "profiling endpoint is disabled.\n",
  ]);
  assert.deepEqual(await call(off, "/debug/flags/v", { method: "PUT", body: "4" }), [
    405,
    "flags endpoint is disabled.\n",
  ]);
});

Deno.test("secureRoutes() /debug/flags/v: a PUT sets the logger's verbosity as klog's setter answers; bad values 400, other methods 406", async () => {
  const log: string[] = [];
  const logger = createLogger({ verbosity: 0, write: (l) => log.push(l), caller: false });
  const detailed = logger.v(4);
  const table = secureRoutes(fakeAgent(), {}, {
    ...DEBUG_ON,
    setVerbosity: (v) => logger.setVerbosity(v),
  });
  detailed.info("before");
  assert.deepEqual(await call(table, "/debug/flags/v", { method: "PUT", body: "4" }), [
    200,
    "successfully set klog.logging.verbosity to 4\n",
  ]);
  // A logger derived before the change follows it.
  detailed.info("after");
  assert.equal(log.length, 1);
  assert.match(log[0]!, /"after"/);
  assert.deepEqual(await call(table, "/debug/flags/v", { method: "PUT", body: "x" }), [
    400,
    'strconv.ParseUint: parsing "x": invalid syntax\n',
  ]);
  assert.deepEqual(await call(table, "/debug/flags/v"), [406, "unsupported http method\n"]);
});

Deno.test("debuggingDisabledRoutes() covers upstream's eight debugging paths", () => {
  assert.deepEqual(Object.keys(debuggingDisabledRoutes()), [...DEBUGGING_PATHS]);
  assert.deepEqual([...DEBUGGING_PATHS], [
    "/run/",
    "/exec/",
    "/attach/",
    "/portForward/",
    "/containerLogs/",
    "/runningpods/",
    "/debug/pprof/",
    "/logs/",
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

Deno.test("serve(): a request target that is no URL is Go's 400, not a 500", async () => {
  const server = serve({
    name: "test",
    hostname: "127.0.0.1",
    port: 0,
    logger: silentLogger,
    routes: { "/pods": () => new Response("ok") },
  });
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    await conn.write(
      new TextEncoder().encode(
        "GET http://[/pods HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
      ),
    );
    let answer = "";
    const buf = new Uint8Array(4096);
    for (let n; (n = await conn.read(buf)) !== null;) {
      answer += new TextDecoder().decode(buf.subarray(0, n));
    }
    conn.close();
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /400 Bad Request$/);
  } finally {
    await server.shutdown();
  }
});
