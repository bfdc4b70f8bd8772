import assert from "node:assert/strict";
import {
  ApiError,
  createKubeClient,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeClientOptions,
  type KubeconfigAuth,
  UserCredentials,
  WATCH_DEADLINE_SLACK_MS,
  type WatchEvent,
  WatchStreamError,
} from "../../lib/kubeapi/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { settle } from "../kit/mod.ts";

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Headers;
  body: string;
}

/** An in-process apiserver stand-in on 127.0.0.1 that records requests. */
function serve(handler: (req: Request, seen: Seen) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const s: Seen = {
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: req.method === "GET" ? "" : await req.text(),
    };
    seen.push(s);
    return await handler(req, s);
  });
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

function auth(server: string, token = "t0ken"): KubeconfigAuth {
  return {
    path: "/test/kubeconfig",
    context: "test",
    cluster: "test",
    server,
    insecureSkipTLSVerify: false,
    credentials: new UserCredentials({ source: "test", fixed: { token } }),
  };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

function client(server: string, extra: Partial<KubeClientOptions> = {}) {
  return createKubeClient({ kubeconfig: auth(server), userAgent: "denolet/test", ...extra });
}

Deno.test("get() sends a GET with token, user agent, Accept and query", async () => {
  const srv = serve(() => json({ kind: "Node", metadata: { name: "n1" } }));
  const c = client(srv.url);
  try {
    const node = await c.get<{ metadata: { name: string } }>("/api/v1/nodes/n1", {
      query: { resourceVersion: "0" },
    });
    assert.equal(node.metadata.name, "n1");
    const s = srv.seen[0]!;
    assert.equal(s.method, "GET");
    assert.equal(s.path, "/api/v1/nodes/n1");
    assert.deepEqual(s.query, { resourceVersion: "0" });
    assert.equal(s.headers.get("authorization"), "Bearer t0ken");
    assert.equal(s.headers.get("user-agent"), "denolet/test");
    assert.equal(s.headers.get("accept"), "application/json");
    assert.equal(s.headers.get("content-type"), null);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("list() returns items and the list resourceVersion, [] for null items", async () => {
  let items: unknown = [{ metadata: { name: "a" } }];
  const srv = serve(() => json({ kind: "PodList", metadata: { resourceVersion: "42" }, items }));
  const c = client(srv.url);
  try {
    const list = await c.list<{ metadata: { name: string } }>("/api/v1/pods", {
      query: { fieldSelector: "spec.nodeName=n1" },
    });
    assert.deepEqual(list.items.map((p) => p.metadata.name), ["a"]);
    assert.equal(list.metadata.resourceVersion, "42");
    assert.equal(srv.seen[0]!.query.fieldSelector, "spec.nodeName=n1");
    items = null;
    assert.deepEqual((await c.list("/api/v1/pods")).items, []);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("create(), update() and delete() map to POST, PUT and DELETE with JSON bodies", async () => {
  const srv = serve((_req, s) => s.method === "DELETE" ? json({ kind: "Status" }) : json(s.body));
  const c = client(srv.url);
  try {
    await c.create("/api/v1/namespaces/ns/pods", { metadata: { name: "p" } });
    await c.update("/api/v1/namespaces/ns/pods/p", { metadata: { name: "p", x: 1 } });
    await c.delete("/api/v1/namespaces/ns/pods/p", {
      gracePeriodSeconds: 0,
      preconditions: { uid: "u1" },
    });
    await c.delete("/api/v1/namespaces/ns/pods/q");
    const [post, put, del, bare] = srv.seen;
    assert.equal(post!.method, "POST");
    assert.equal(post!.path, "/api/v1/namespaces/ns/pods");
    assert.equal(post!.headers.get("content-type"), "application/json");
    assert.deepEqual(JSON.parse(post!.body), { metadata: { name: "p" } });
    assert.equal(put!.method, "PUT");
    assert.deepEqual(JSON.parse(put!.body), { metadata: { name: "p", x: 1 } });
    assert.equal(del!.method, "DELETE");
    assert.deepEqual(JSON.parse(del!.body), {
      apiVersion: "v1",
      kind: "DeleteOptions",
      gracePeriodSeconds: 0,
      preconditions: { uid: "u1" },
    });
    assert.equal(bare!.body, "");
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("patch() sets the Content-Type of each patch type and a fieldManager for apply", async () => {
  const srv = serve(() => json({}));
  const c = client(srv.url);
  try {
    const path = "/api/v1/namespaces/ns/pods/p/status";
    await c.patch(path, { status: { phase: "Running" } }, "merge");
    await c.patch(path, { status: {} }, "strategic");
    await c.patch(path, [{ op: "replace", path: "/status/phase", value: "Failed" }], "json");
    await c.patch(path, { apiVersion: "v1", kind: "Pod" }, "apply", { query: { force: "true" } });
    assert.deepEqual(srv.seen.map((s) => [s.method, s.headers.get("content-type")]), [
      ["PATCH", "application/merge-patch+json"],
      ["PATCH", "application/strategic-merge-patch+json"],
      ["PATCH", "application/json-patch+json"],
      ["PATCH", "application/apply-patch+yaml"],
    ]);
    assert.deepEqual(JSON.parse(srv.seen[2]!.body)[0].op, "replace");
    assert.deepEqual(srv.seen[3]!.query, { force: "true", fieldManager: "denolet" });
    assert.deepEqual(srv.seen[0]!.query, {});
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("get() turns a metav1.Status error into an ApiError with its reason", async () => {
  const srv = serve((_req, s) => {
    if (s.path.endsWith("/missing")) {
      return json({
        kind: "Status",
        status: "Failure",
        reason: "NotFound",
        message: 'pods "missing" not found',
        code: 404,
      }, 404);
    }
    if (s.path.endsWith("/exists")) {
      return json({ kind: "Status", reason: "AlreadyExists", message: "exists", code: 409 }, 409);
    }
    if (s.path.endsWith("/conflict")) {
      return json({ kind: "Status", reason: "Conflict", message: "modified", code: 409 }, 409);
    }
    return new Response("upstream connect error", { status: 502 });
  });
  const c = client(srv.url);
  try {
    const err = await c.get("/api/v1/namespaces/ns/pods/missing").catch((e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 404);
    assert.equal(err.reason, "NotFound");
    assert.ok(isNotFound(err));
    assert.match(err.message, /^GET \/api\/v1\/namespaces\/ns\/pods\/missing: 404 NotFound: pods/);
    const exists = await c.create("/api/v1/namespaces/ns/pods/exists", {}).catch((e) => e);
    assert.ok(isAlreadyExists(exists) && !isConflict(exists));
    const conflict = await c.update("/api/v1/namespaces/ns/pods/conflict", {}).catch((e) => e);
    assert.ok(isConflict(conflict) && !isAlreadyExists(conflict));
    const bad = await c.get("/api/v1/other").catch((e) => e);
    assert.ok(bad instanceof ApiError);
    assert.equal(bad.status, 502);
    assert.equal(bad.reason, "InternalError");
    assert.match(bad.message, /upstream connect error/);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("get() names method and path with a cause when the connection fails", async () => {
  const srv = serve(() => json({}));
  const url = srv.url;
  await srv.close();
  const c = client(url);
  try {
    const err = await c.get("/api/v1/nodes/n1").catch((e) => e);
    assert.ok(err instanceof Error && !(err instanceof ApiError));
    assert.match(err.message, /^GET \/api\/v1\/nodes\/n1: /);
    assert.ok(err.cause !== undefined);
  } finally {
    c.close();
  }
});

Deno.test("get() times out after timeoutMs on the injected clock", async () => {
  const clock = new FakeClock();
  let arrived!: () => void;
  const arrival = new Promise<void>((r) => (arrived = r));
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  const srv = serve(async () => {
    arrived();
    await hold;
    return json({});
  });
  const c = client(srv.url, { clock, timeoutMs: 5000 });
  try {
    const pending = c.get("/api/v1/nodes/slow").catch((e: Error) => e);
    await arrival;
    clock.tick(4999);
    clock.tick(1);
    const err = (await pending) as Error;
    assert.match(String(err.message), /^GET \/api\/v1\/nodes\/slow: timed out after 5000ms/);
  } finally {
    release();
    c.close();
    await srv.close();
  }
});

Deno.test("get() stops when the caller's signal aborts", async () => {
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  let arrived!: () => void;
  const arrival = new Promise<void>((r) => (arrived = r));
  const srv = serve(async () => {
    arrived();
    await hold;
    return json({});
  });
  const c = client(srv.url);
  const ac = new AbortController();
  try {
    const pending = c.get("/api/v1/nodes/n1", { signal: ac.signal }).catch((e: Error) => e);
    await arrival;
    ac.abort(new Error("shutting down"));
    const err = (await pending) as Error;
    assert.match(String(err.message), /^GET \/api\/v1\/nodes\/n1: /);
  } finally {
    release();
    c.close();
    await srv.close();
  }
});

/** A FakeClock that reports when someone starts sleeping on it. */
class SleepWatchingClock extends FakeClock {
  sleeps: number[] = [];
  #waiters: (() => void)[] = [];
  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    this.#waiters.splice(0).forEach((w) => w());
    return super.sleep(ms, signal);
  }
  nextSleep(): Promise<void> {
    return new Promise((r) => this.#waiters.push(r));
  }
}

Deno.test("get() retries a 429 after its Retry-After delay", async () => {
  const clock = new SleepWatchingClock();
  let calls = 0;
  const srv = serve(() => {
    calls++;
    if (calls === 1) {
      return new Response(JSON.stringify({ kind: "Status", reason: "TooManyRequests" }), {
        status: 429,
        headers: { "Retry-After": "2" },
      });
    }
    return json({ ok: true });
  });
  const c = client(srv.url, { clock });
  try {
    const sleeping = clock.nextSleep();
    const pending = c.get<{ ok: boolean }>("/api/v1/nodes/n1");
    await sleeping;
    assert.deepEqual(clock.sleeps, [2000]);
    clock.tick(2000);
    assert.deepEqual(await pending, { ok: true });
    assert.equal(calls, 2);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("get() re-reads a token file once after a 401", async () => {
  const dir = await Deno.makeTempDir();
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "old\n");
  const srv = serve((req) =>
    req.headers.get("authorization") === "Bearer new"
      ? json({ ok: true })
      : json({ kind: "Status", reason: "Unauthorized", code: 401 }, 401)
  );
  const kubeconfig = auth(srv.url);
  kubeconfig.credentials = new UserCredentials({ source: "test", fixed: {}, tokenFile });
  const c = createKubeClient({ kubeconfig });
  try {
    await Deno.writeTextFile(tokenFile, "old");
    const err = await c.get("/api/v1/nodes/n1").catch((e) => e);
    assert.ok(err instanceof ApiError && err.status === 401, "still 401 with the old token");
    assert.equal(srv.seen.length, 2, "one refresh-and-retry, not a loop");
    await Deno.writeTextFile(tokenFile, "new");
    assert.deepEqual(await c.get("/api/v1/nodes/n1"), { ok: true });
    assert.deepEqual(srv.seen.map((s) => s.headers.get("authorization")), [
      "Bearer old",
      "Bearer old",
      "Bearer old",
      "Bearer new",
    ]);
  } finally {
    c.close();
    await srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("calls are rate limited to burst, then qps", async () => {
  const clock = new SleepWatchingClock();
  const srv = serve(() => json({}));
  const c = client(srv.url, { clock, qps: 2, burst: 2 });
  try {
    await c.get("/a");
    await c.get("/b");
    const sleeping = clock.nextSleep();
    const third = c.get("/c");
    await sleeping;
    assert.equal(srv.seen.length, 2, "the third call waits for a token");
    assert.deepEqual(clock.sleeps, [500]);
    clock.tick(500);
    await third;
    assert.equal(srv.seen.length, 3);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("the observer hears each call's rate limiter wait and its outcome, as client-go's metrics", async () => {
  const clock = new SleepWatchingClock();
  const srv = serve((_req, seen) => seen.path === "/missing" ? json({}, 404) : json({}));
  const waits: string[] = [];
  const results: string[] = [];
  const c = client(srv.url, {
    clock,
    qps: 2,
    burst: 1,
    observer: {
      rateLimited: (verb, host, ms) => waits.push(`${verb} ${host} ${ms}`),
      result: (code, method, host) => results.push(`${code} ${method} ${host}`),
    },
  });
  const host = new URL(srv.url).host;
  try {
    await c.get("/a");
    const sleeping = clock.nextSleep();
    const second = c.get("/missing").catch((e) => e);
    await sleeping;
    clock.tick(500);
    assert.ok(isNotFound(await second));
    assert.deepEqual(waits, [`GET ${host} 0`, `GET ${host} 500`]);
    assert.deepEqual(results, [`200 GET ${host}`, `404 GET ${host}`]);
    await srv.close();
    clock.tick(500);
    await c.delete("/gone").catch(() => {});
    assert.equal(results.at(-1), `<error> DELETE ${host}`);
  } finally {
    c.close();
    await srv.close().catch(() => {});
  }
});

Deno.test("close() makes later calls fail", async () => {
  const srv = serve(() => json({}));
  const c = client(srv.url);
  await c.get("/api/v1/nodes");
  c.close();
  await assert.rejects(c.get("/api/v1/nodes"), /GET \/api\/v1\/nodes: client is closed/);
  await srv.close();
});

Deno.test("watch() delivers events split across chunks, ERROR included, until the stream ends", async () => {
  const events = [
    { type: "ADDED", object: { metadata: { name: "a", resourceVersion: "1" } } },
    { type: "MODIFIED", object: { metadata: { name: "a", resourceVersion: "2" }, s: "}{" } },
    { type: "BOOKMARK", object: { metadata: { resourceVersion: "3" } } },
    { type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired", message: "too old" } },
  ];
  const wire = new TextEncoder().encode(events.map((e) => JSON.stringify(e) + "\n").join(""));
  const srv = serve(() => {
    // Cut the stream at awkward places: mid-key, mid-string, between events.
    const cuts = [0, 7, 40, 41, 90, 150, wire.length];
    const body = new ReadableStream<Uint8Array>({
      async start(ctrl) {
        for (let i = 0; i + 1 < cuts.length; i++) {
          ctrl.enqueue(wire.slice(cuts[i], cuts[i + 1]));
          await settle(1);
        }
        ctrl.close();
      },
    });
    return new Response(body, { headers: { "Content-Type": "application/json" } });
  });
  const c = client(srv.url);
  try {
    const got: WatchEvent<unknown>[] = [];
    await c.watch("/api/v1/pods", (e) => got.push(e), {
      query: { resourceVersion: "0", allowWatchBookmarks: "true" },
    });
    assert.deepEqual(got, events);
    assert.deepEqual(srv.seen[0]!.query, {
      resourceVersion: "0",
      allowWatchBookmarks: "true",
      watch: "true",
    });
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("watch() resolves when its signal aborts an open stream", async () => {
  let cancelled!: () => void;
  const serverSawCancel = new Promise<void>((r) => (cancelled = r));
  const srv = serve(() => {
    const body = new ReadableStream<Uint8Array>({
      start(ctrl) {
        ctrl.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{}}\n'));
      },
      cancel() {
        cancelled();
      },
    });
    return new Response(body);
  });
  const c = client(srv.url);
  const ac = new AbortController();
  try {
    const got: string[] = [];
    await c.watch("/api/v1/pods", (e) => {
      got.push(e.type);
      ac.abort();
    }, { signal: ac.signal });
    assert.deepEqual(got, ["ADDED"]);
    await serverSawCancel;
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("watch() throws a WatchStreamError, after the events it got, when an accepted stream breaks", async () => {
  const srv = serve(() => {
    const body = new ReadableStream<Uint8Array>({
      async start(ctrl) {
        ctrl.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{}}\n'));
        await settle(1);
        ctrl.error(new Error("cut"));
      },
    });
    return new Response(body);
  });
  const c = client(srv.url);
  try {
    const got: string[] = [];
    const err = await c.watch("/api/v1/pods", (e) => got.push(e.type)).catch((e) => e);
    assert.deepEqual(got, ["ADDED"]);
    assert.ok(err instanceof WatchStreamError, String(err));
    assert.match(err.message, /^GET \/api\/v1\/pods \(watch\): stream broke/);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("watch() throws an ApiError when the watch request is refused", async () => {
  const srv = serve(() => json({ kind: "Status", reason: "Forbidden", message: "no" }, 403));
  const c = client(srv.url);
  try {
    const err = await c.watch("/api/v1/secrets", () => {}).catch((e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.reason, "Forbidden");
    assert.match(err.message, /^GET \/api\/v1\/secrets: 403 Forbidden: no/);
  } finally {
    c.close();
    await srv.close();
  }
});

Deno.test("watch() ends a silent stream timeoutSeconds plus slack after it started", async () => {
  const clock = new FakeClock();
  let first!: () => void;
  const gotFirst = new Promise<void>((r) => (first = r));
  const srv = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(ctrl) {
          ctrl.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{}}\n'));
        },
      }),
    )
  );
  const c = client(srv.url, { clock });
  try {
    const got: string[] = [];
    const watching = c.watch("/api/v1/pods", (e) => {
      got.push(e.type);
      first();
    }, { query: { timeoutSeconds: "5" } });
    await gotFirst;
    clock.tick(5000 + WATCH_DEADLINE_SLACK_MS - 1);
    let ended = false;
    watching.then(() => (ended = true));
    await settle(1);
    assert.equal(ended, false, "still open before the deadline");
    clock.tick(1);
    await watching;
    assert.deepEqual(got, ["ADDED"]);
    assert.equal(srv.seen[0]!.query.timeoutSeconds, "5");
  } finally {
    c.close();
    await srv.close();
  }
});
