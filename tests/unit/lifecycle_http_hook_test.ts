/**
 * The httpGet lifecycle hook (lib/kuberuntime/lifecycle_hooks.ts over lib/probe's client)
 * against hostile servers on 127.0.0.1: each answer is judged as upstream's kubelet judges
 * it with Go's net/http client (any response passes, none fails), the HTTPS→HTTP
 * fallback with its LifecycleHTTPFallback step and event, and the timeout.
 */

import assert from "node:assert/strict";
import type { ContainerConfig } from "../../lib/cri/types.ts";
import type { Container, HTTPGetAction, Pod } from "../../lib/api/types.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import { HookError, type HookOutcome, runLifecycleHandler } from "../../lib/kuberuntime/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import {
  recordingEvents,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
  unitRuntimeManager,
  withTempDir,
} from "../kit/mod.ts";

const FIXTURES = new URL("./fixtures/kubeapi/", import.meta.url).pathname;
const encoder = new TextEncoder();

/** What the server writes on one connection: the parts in turn, then close or hang. */
interface Reply {
  parts: string[];
  /** A pause before each part after the first. */
  gapMs?: number;
  hang?: boolean;
}

/** The first bytes of a connection: a plain request's head, or "TLS" for a ClientHello. */
type Greeting = string;

/**
 * A loopback server that answers every connection with `reply(greeting)`.
 * `fn` gets the port and the greetings seen so far.
 */
async function withServer(
  reply: (greeting: Greeting) => Reply,
  fn: (port: number, seen: Greeting[]) => Promise<void>,
): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const seen: Greeting[] = [];
  const open = new Set<Deno.Conn>();
  const answer = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(65536);
    let head = "";
    for (;;) {
      const n = await conn.read(buf.subarray(head.length));
      if (n === null) return;
      if (head === "" && buf[0] === 0x16) {
        head = "TLS";
        break;
      }
      head = new TextDecoder("latin1").decode(buf.subarray(0, head.length + n));
      if (head.includes("\r\n\r\n")) break;
    }
    seen.push(head);
    const r = reply(head);
    for (const [i, part] of r.parts.entries()) {
      if (i > 0 && r.gapMs) await new Promise((done) => setTimeout(done, r.gapMs));
      await conn.write(encoder.encode(part));
    }
    if (r.hang) await conn.read(buf);
  };
  const serving = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      answer(conn).catch(() => {}).finally(() => {
        open.delete(conn);
        try {
          conn.close();
        } catch { /* closed */ }
      });
    }
  })();
  try {
    await fn((listener.addr as Deno.NetAddr).port, seen);
  } finally {
    listener.close();
    for (const conn of open) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    await serving.catch(() => {});
  }
}

const container: Container = { name: "app", image: "busybox" };
const pod = testPod({ name: "web", uid: "u1" });
const noRuntime = {} as RuntimeService;

/** Runs an httpGet hook against 127.0.0.1: its outcome, or the HookError's message. */
async function hook(
  action: HTTPGetAction,
  timeoutSeconds = 2,
): Promise<{ passed: HookOutcome } | { failed: string }> {
  try {
    const passed = await runLifecycleHandler(
      {
        runtime: noRuntime,
        clock: new FakeClock(),
        containerId: "c1",
        container,
        podIP: "127.0.0.1",
        pod,
      },
      { httpGet: action },
      timeoutSeconds,
    );
    return { passed };
  } catch (err) {
    assert.ok(err instanceof HookError, String(err));
    return { failed: err.message };
  }
}

const ok = (status = 200) => ({ parts: [`HTTP/1.1 ${status} X\r\nContent-Length: 2\r\n\r\nok`] });

Deno.test("runLifecycleHandler() passes an httpGet hook on any answer, whatever its status, and sends the hook client's headers", async () => {
  await withServer(() => ok(500), async (port, seen) => {
    const res = await hook({
      port,
      path: "/hook",
      httpHeaders: [{ name: "x-custom", value: "1" }],
    });
    assert.deepEqual(res, { passed: {} });
    const head = seen[0]!;
    assert.match(head, /^GET \/hook HTTP\/1\.1\r\n/);
    for (
      const line of [
        "User-Agent: kube-lifecycle/1.34",
        "Accept: */*",
        "Accept-Encoding: gzip",
        "X-Custom: 1",
      ]
    ) {
      assert.ok(head.includes(`\r\n${line}\r\n`), `${line} in ${JSON.stringify(head)}`);
    }
  });
});

Deno.test("runLifecycleHandler() judges hostile answers to an httpGet hook as Go's client does", async () => {
  const many = Array.from({ length: 150 }, (_, i) => `X-H${i}: v\r\n`).join("");
  // Each path's answer and whether upstream's hook passes it (checked against Go's net/http).
  const cases: Record<string, [Reply, boolean]> = {
    "/many-headers": [
      { parts: [`HTTP/1.1 404 Not Found\r\n${many}Content-Length: 0\r\n\r\n`] },
      true,
    ],
    "/1xx-then-4xx": [{
      parts: [
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 103 Early\r\n\r\n",
        "HTTP/1.1 404 No\r\n\r\n",
      ],
    }, true],
    "/signed-status": [{ parts: ["HTTP/1.1 +20 OK\r\nContent-Length: 0\r\n\r\n"] }, true],
    "/long-status": [{ parts: ["HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n"] }, false],
    "/not-http": [{ parts: ["ICY 200 OK\r\n\r\n"] }, false],
    "/control-byte": [{ parts: ["HTTP/1.1 200 OK\r\nX-C: a\x01b\r\n\r\n"] }, false],
    "/bad-length": [{ parts: ["HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok"] }, false],
    // A body is dropped unread errors and all: only the head decides.
    "/short-body": [{ parts: ["HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"] }, true],
    "/bad-chunk": [
      { parts: ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"] },
      true,
    ],
    "/empty-location": [{
      parts: ["HTTP/1.1 302 Found\r\nLocation: \r\nContent-Length: 0\r\n\r\n"],
    }, true],
    "/bad-location": [{ parts: ["HTTP/1.1 302 Found\r\nLocation: http://[::1\r\n\r\n"] }, false],
    "/nothing": [{ parts: [] }, false],
  };
  await withServer((head) => {
    const path = /^GET (\S+)/.exec(head)?.[1] ?? "";
    return cases[path]?.[0] ?? ok();
  }, async (port) => {
    for (const [path, [, passes]] of Object.entries(cases)) {
      const res = await hook({ port, path });
      assert.equal("passed" in res, passes, `${path}: ${JSON.stringify(res)}`);
    }
  });
});

Deno.test("runLifecycleHandler() follows an httpGet hook's redirects on the same host only, at most 10 requests", async () => {
  await withServer((head) => {
    const path = /^GET (\S+)/.exec(head)?.[1] ?? "";
    if (path === "/away") {
      return { parts: ["HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:1/x\r\n\r\n"] };
    }
    if (path === "/loop") return { parts: ["HTTP/1.1 301 Moved\r\nLocation: /loop\r\n\r\n"] };
    if (path === "/hop") return { parts: ["HTTP/1.1 307 Moved\r\nLocation: /there\r\n\r\n"] };
    return ok();
  }, async (port, seen) => {
    // Another host ends the chain with its 3xx: an answer, so the hook passes.
    assert.deepEqual(await hook({ port, path: "/away" }), { passed: {} });
    assert.equal(seen.length, 1);
    assert.deepEqual(await hook({ port, path: "/hop" }), { passed: {} });
    assert.match(seen[2]!, /^GET \/there /);
    assert.ok(seen[2]!.includes(`\r\nReferer: http://127.0.0.1:${port}/hop\r\n`), seen[2]!);
    const loop = await hook({ port, path: "/loop" });
    assert.ok("failed" in loop);
    assert.match(loop.failed, /failed - error: Get "\/loop": stopped after 10 redirects$/);
    assert.equal(seen.length, 13);
  });
});

Deno.test("runLifecycleHandler() fails an httpGet hook that gets no answer within its timeout, and passes one whose body never ends", async () => {
  await withServer((head) => {
    if (head.startsWith("GET /silent ")) return { parts: [], hang: true };
    return { parts: ["HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"], hang: true };
  }, async (port) => {
    let started = performance.now();
    const silent = await hook({ port, path: "/silent" }, 0.3);
    assert.ok("failed" in silent);
    assert.equal(
      silent.failed,
      `HTTP lifecycle hook (/silent) for Container "app" in Pod "web_default(u1)" failed - error: ` +
        `Get "http://127.0.0.1:${port}/silent": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    );
    assert.ok(performance.now() - started < 1_500, "the hook kept to its timeout");
    // Go's discardHTTPRespBody reads the body until it ends; the answer already passed.
    started = performance.now();
    assert.deepEqual(await hook({ port, path: "/drip" }, 0.3), { passed: {} });
    assert.ok(performance.now() - started < 1_500, "the hook kept to its timeout");
  });
});

/** A server that answers a TLS ClientHello with `tls` and a plain request with 200. */
function plainServer(tls: Reply): (greeting: Greeting) => Reply {
  return (greeting) => greeting === "TLS" ? tls : ok();
}

Deno.test("runLifecycleHandler() sends an HTTPS hook answered in plain HTTP again over HTTP, without Authorization", async () => {
  await withServer(
    plainServer({ parts: ["HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"] }),
    async (port, seen) => {
      const res = await hook({
        port,
        path: "/start",
        scheme: "HTTPS",
        httpHeaders: [{ name: "Authorization", value: "Bearer x" }, { name: "X-Keep", value: "1" }],
      });
      assert.deepEqual(res, { passed: { httpFallback: `127.0.0.1:${port}` } });
      assert.equal(seen.length, 2);
      assert.equal(seen[0], "TLS");
      assert.match(seen[1]!, /^GET \/start HTTP\/1\.1\r\n/);
      assert.ok(seen[1]!.includes("\r\nX-Keep: 1\r\n"));
      assert.ok(!/authorization/i.test(seen[1]!), seen[1]!);
    },
  );
});

Deno.test("runLifecycleHandler() falls back to HTTP only when the TLS answer starts with HTTP/, as Go's client", async () => {
  // The server's first five bytes decide, even when they come one at a time.
  await withServer(
    plainServer({ parts: ["H", "T", "T", "P", "/1.1 400 Bad Request\r\n\r\n"], gapMs: 20 }),
    async (port) => {
      const res = await hook({ port, scheme: "HTTPS" });
      assert.deepEqual(res, { passed: { httpFallback: `127.0.0.1:${port}` } });
    },
  );
  for (const answer of ["SSH-2.0-OpenSSH_9.6\r\n", "HTT", "http/1.1 400 Bad Request\r\n\r\n"]) {
    await withServer(plainServer({ parts: [answer] }), async (port, seen) => {
      const res = await hook({ port, scheme: "HTTPS" });
      assert.ok("failed" in res, `${JSON.stringify(answer)}: ${JSON.stringify(res)}`);
      assert.deepEqual(seen, ["TLS"], `${JSON.stringify(answer)}: no retry over HTTP`);
    });
  }
});

Deno.test("runLifecycleHandler() keeps the HTTPS error when the retry over HTTP gets no answer", async () => {
  await withServer(
    (greeting) =>
      greeting === "TLS" ? { parts: ["HTTP/1.1 400 Bad Request\r\n\r\n"] } : { parts: [] },
    async (port, seen) => {
      const res = await hook({ port, path: "/x", scheme: "HTTPS" });
      assert.ok("failed" in res);
      assert.match(
        res.failed,
        new RegExp(
          `failed - error: Get "https://127\\.0\\.0\\.1:${port}/x": http: server gave HTTP response to HTTPS client$`,
        ),
      );
      assert.equal(seen.length, 2);
    },
  );
});

Deno.test("runLifecycleHandler() passes an HTTPS hook without checking the server's certificate", async () => {
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    cert: await Deno.readTextFile(`${FIXTURES}server.crt`),
    key: await Deno.readTextFile(`${FIXTURES}server.key`),
  }, () => new Response("no", { status: 503 }));
  try {
    const port = (server.addr as Deno.NetAddr).port;
    assert.deepEqual(await hook({ port, scheme: "HTTPS" }), { passed: {} });
  } finally {
    await server.shutdown();
  }
});

Deno.test("runLifecycleHandler() fails an httpGet hook with neither host nor pod IP, as upstream", async () => {
  await assert.rejects(
    runLifecycleHandler(
      { runtime: noRuntime, clock: new FakeClock(), containerId: "c1", container, podIP: "", pod },
      { httpGet: { port: 80, path: "/x" } },
      1,
    ),
    /HTTP lifecycle hook \(\/x\) for Container "app" in Pod "web_default\(u1\)" failed - error: failed to find networking container/,
  );
});

Deno.test("killPod() reports a preStop hook that fell back to HTTP with a LifecycleHTTPFallback warning about the pod, and counts it", async () => {
  await withServer(plainServer({ parts: ["HTTP/1.1 400 Bad Request\r\n\r\n"] }), async (port) => {
    const events = recordingEvents();
    const runtime = {
      stopContainer: () => Promise.resolve(),
      stopPodSandbox: () => Promise.resolve(),
    } as unknown as RuntimeService;
    let counted = 0;
    const manager = unitRuntimeManager(runtime, {
      events,
      countHookHttpFallback: () => counted++,
    });
    const spec: Container = {
      name: "app",
      image: "busybox",
      lifecycle: { preStop: { httpGet: { port, scheme: "HTTPS", host: "127.0.0.1" } } },
    };
    const p: Pod = testPod({ name: "web", containers: [spec] });
    const status = runtimePodStatus({
      sandboxes: [runtimeSandbox({ ip: "10.0.0.9" })],
      containers: [runtimeContainer(spec)],
    });
    const steps = await manager.killPod(p, status);
    assert.deepEqual(steps.map((s) => [s.action, s.target, s.error?.reason]), [
      ["LifecycleHTTPFallback", `127.0.0.1:${port}`, undefined],
      ["PreStopHook", "app", undefined],
      ["KillContainer", "app", undefined],
      ["KillPodSandbox", "sb1", undefined],
    ]);
    const fallback = events.got.filter((e) => e.reason === "LifecycleHTTPFallback");
    assert.equal(fallback.length, 1);
    const { ref, type, message } = fallback[0]!;
    // About the pod, not one of its containers, as upstream's.
    assert.deepEqual([ref.kind, ref.name, ref.fieldPath], ["Pod", "web", undefined]);
    assert.equal(type, "Warning");
    assert.equal(
      message,
      `request to HTTPS lifecycle hook 127.0.0.1:${port} got HTTP response, retry with HTTP succeeded`,
    );
    assert.equal(counted, 1, "kubelet_lifecycle_handler_http_fallbacks_total");
  });
});

Deno.test("syncPod() reports a postStart hook that fell back to HTTP before the container's StartContainer step", async () => {
  await withServer(plainServer({ parts: ["HTTP/1.1 400 Bad Request\r\n\r\n"] }), async (port) => {
    await withTempDir(async (root) => {
      const events = recordingEvents();
      const runtime = {
        imageStatus: (spec: { image: string }) =>
          Promise.resolve({ id: "sha256:img", repoTags: [spec.image], repoDigests: [], size: 1 }),
        runPodSandbox: () => Promise.resolve("sb1"),
        podSandboxStatus: () =>
          Promise.resolve({ status: { id: "sb1", network: { ip: "10.0.0.2" } }, info: {} }),
        createContainer: (_sandbox: string, _config: ContainerConfig) => Promise.resolve("c1"),
        startContainer: () => Promise.resolve(),
      } as unknown as RuntimeService;
      const manager = unitRuntimeManager(runtime, {
        events,
        rootDir: `${root}/kubelet`,
        podLogsDir: `${root}/logs`,
        containerLogsDir: `${root}/containers`,
      });
      const p = testPod({
        name: "web",
        containers: [{
          name: "app",
          // Tagged: an untagged image is pulled every time.
          image: "busybox:1.36",
          lifecycle: { postStart: { httpGet: { port, scheme: "HTTPS", host: "127.0.0.1" } } },
        }],
      });
      const sync = await manager.syncPod(
        p,
        runtimePodStatus({ sandboxes: [] }),
        new AbortController().signal,
      );
      assert.deepEqual(sync.steps.slice(1).map((s) => [s.action, s.target, s.error?.reason]), [
        // As upstream: Created and Started, then the hook (and its fallback).
        ["StartContainer", "app", undefined],
        ["LifecycleHTTPFallback", `127.0.0.1:${port}`, undefined],
        ["PostStartHook", "app", undefined],
      ]);
      const reasons = events.got.map((e) => e.reason);
      assert.ok(
        reasons.includes("Started") &&
          reasons.indexOf("Started") < reasons.indexOf("LifecycleHTTPFallback"),
        `events in order: ${reasons.join(", ")}`,
      );
      assert.ok(
        events.got.some((e) => e.reason === "LifecycleHTTPFallback" && e.type === "Warning"),
      );
    }, "denolet-hook-");
  });
});
