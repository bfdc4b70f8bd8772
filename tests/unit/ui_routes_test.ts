/**
 * The node page's routes as lib/server registers them: the page with a
 * Content-Security-Policy that admits exactly its inline script and style,
 * and `/ui/data` built from the agent.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { defaultKubeletConfiguration } from "../../lib/options/mod.ts";
import { type AgentProvider, readOnlyRoutes, type StatsSource } from "../../lib/server/mod.ts";
import {
  NODE_PAGE_SCRIPT,
  NODE_PAGE_STYLE,
  type NodePageData,
  type NodePageSource,
} from "../../lib/ui/mod.ts";
import { testPod } from "../kit/mod.ts";

const NOW = Date.parse("2026-12-02T05:00:00Z");

function provider(nodePage?: NodePageSource): AgentProvider {
  return {
    podsWithStatus: () => [],
    runningPods: () => [],
    healthChecks: [],
    kubeletConfig: defaultKubeletConfiguration(),
    stats: {} as StatsSource,
    renderMetrics: () => "",
    renderProbeMetrics: () => "",
    ...(nodePage ? { nodePage } : {}),
  };
}

function source(): NodePageSource & { asked: unknown[] } {
  const pod: Pod = {
    ...testPod({ name: "web", uid: "u1", containers: ["main"] }),
    status: {
      phase: "Running",
      containerStatuses: [{
        name: "main",
        containerID: "containerd://abc",
        state: { running: {} },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: "busybox",
        imageID: "",
      }],
    },
  };
  const asked: unknown[] = [];
  return {
    asked,
    nodeName: "node<1>",
    now: () => NOW,
    node: () => Promise.resolve({ source: "local", status: { capacity: { cpu: "2" } } }),
    pods: () => [pod],
    probes: () => [],
    samples: (of) => {
      asked.push(of);
      return [{ timestampMs: NOW - 1_000, memoryWorkingSetBytes: 5 }, {
        timestampMs: NOW,
        memoryWorkingSetBytes: 10,
      }];
    },
  };
}

async function call(routes: ReturnType<typeof readOnlyRoutes>, path: string, method = "GET") {
  const url = new URL(`http://node${path}`);
  const handler = routes[path];
  assert.ok(handler, `no route for ${path}`);
  return await handler(new Request(url, { method }), url);
}

async function sha256(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return btoa(String.fromCharCode(...new Uint8Array(d)));
}

Deno.test("readOnlyRoutes() serves /ui only when the agent gives it a node page source", () => {
  assert.equal(readOnlyRoutes(provider())["/ui"], undefined);
  assert.ok(readOnlyRoutes(provider(source()))["/ui"]);
  assert.ok(readOnlyRoutes(provider(source()))["/ui/data"]);
});

Deno.test("/ui serves the page, its inline script and style admitted by hash and nothing else", async () => {
  const res = await call(readOnlyRoutes(provider(source())), "/ui");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
  const html = await res.text();
  assert.ok(html.includes(`<script>${NODE_PAGE_SCRIPT}</script>`));
  assert.ok(html.includes(`<style>${NODE_PAGE_STYLE}</style>`));
  assert.ok(html.includes("denolet · node&#60;1&#62;"), "the node name is escaped");
  assert.ok(!/src=|href="http/.test(html), "nothing loaded from elsewhere");
  const csp = res.headers.get("content-security-policy") ?? "";
  assert.ok(csp.includes("default-src 'none'"), csp);
  assert.ok(csp.includes(`script-src 'sha256-${await sha256(NODE_PAGE_SCRIPT)}'`), csp);
  assert.ok(csp.includes(`style-src 'sha256-${await sha256(NODE_PAGE_STYLE)}'`), csp);
  assert.ok(csp.includes("connect-src 'self'"), csp);
  // The data is fetched relative to the page, so the page also works behind the node proxy.
  assert.ok(NODE_PAGE_SCRIPT.includes(`fetch("ui/data"`));
});

Deno.test("/ui/data builds the page's data from the agent's pods, probes and samples", async () => {
  const src = source();
  const res = await call(readOnlyRoutes(provider(src)), "/ui/data");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const data = await res.json() as NodePageData;
  assert.equal(data.node.source, "local");
  assert.deepEqual(data.node.capacity, { cpu: "2" });
  assert.deepEqual(data.pods.map((p) => p.name), ["web"]);
  assert.equal(data.pods[0]!.containers[0]!.memory?.points, 2);
  assert.deepEqual(src.asked, [{ containerID: "abc" }, { podUID: "u1" }, "node"]);
});

Deno.test("/ui and /ui/data answer 405 to anything but GET and HEAD", async () => {
  const routes = readOnlyRoutes(provider(source()));
  for (const path of ["/ui", "/ui/data"]) {
    const res = await call(routes, path, "POST");
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "GET, HEAD");
    await res.body?.cancel();
  }
});
