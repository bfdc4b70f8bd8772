/**
 * The fault proxy's own tests: its choices (pure) and the proxy in front of a small
 * TLS server standing in for the apiserver.
 */

import assert from "node:assert/strict";
import { seededRandom } from "../kit/suite.ts";
import { freePort, waitFor } from "../kit/mod.ts";
import { makeCert, writeCa } from "../e2e/_pki.ts";
import {
  chooseFault,
  classifyRequest,
  cuttableStream,
  type Fault,
  NO_FAULTS,
  statusBody,
} from "./_api_faults.ts";
import { startApiProxy } from "./_api_proxy.ts";

const url = (s: string) => new URL(`https://h${s}`);

Deno.test("classifyRequest() tells watches, status and Lease writes, and the rest apart", () => {
  assert.equal(classifyRequest("GET", url("/api/v1/pods?watch=true&rv=1")), "watch");
  assert.equal(classifyRequest("GET", url("/api/v1/pods?watch=1")), "watch");
  assert.equal(classifyRequest("GET", url("/api/v1/pods")), "other");
  assert.equal(
    classifyRequest("PATCH", url("/api/v1/namespaces/a/pods/p/status")),
    "statusWrite",
  );
  assert.equal(classifyRequest("PATCH", url("/api/v1/nodes/n/status")), "statusWrite");
  assert.equal(
    classifyRequest("PUT", url("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n")),
    "statusWrite",
  );
  assert.equal(
    classifyRequest("GET", url("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n")),
    "other",
  );
  assert.equal(classifyRequest("POST", url("/api/v1/namespaces/a/pods")), "other");
  assert.equal(classifyRequest("PATCH", url("/api/v1/namespaces/a/pods/p")), "other");
});

Deno.test("chooseFault() gives 409 only to status writes and cuts only watches", () => {
  const always = (over: Partial<typeof NO_FAULTS>) => ({ ...NO_FAULTS, ...over });
  const r = () => 0.25;
  assert.deepEqual(chooseFault("statusWrite", "PATCH", always({ conflict: 1 }), r), {
    kind: "status",
    status: 409,
    afterForward: false,
  });
  assert.deepEqual(chooseFault("other", "PATCH", always({ conflict: 1 }), r), { kind: "pass" });
  assert.deepEqual(chooseFault("other", "GET", always({ watchCut: 1 }), r), { kind: "pass" });
  assert.deepEqual(
    chooseFault("watch", "GET", always({ watchCut: 1, cutMs: [1000, 3000] }), r),
    { kind: "cut", afterMs: 1500, abrupt: true },
  );
  assert.deepEqual(chooseFault("watch", "GET", always({ tooMany: 1 }), r), {
    kind: "status",
    status: 429,
    afterForward: false,
  });
  // A 500 after forwarding only for a request that changes something.
  assert.deepEqual(chooseFault("other", "GET", always({ serverError: 1 }), r), {
    kind: "status",
    status: 500,
    afterForward: false,
  });
  assert.deepEqual(chooseFault("statusWrite", "PUT", always({ serverError: 1 }), r), {
    kind: "status",
    status: 500,
    afterForward: true,
  });
});

Deno.test("chooseFault() keeps to its rates and one seed gives one sequence", () => {
  const rates = { ...NO_FAULTS, conflict: 0.1, tooMany: 0.05, serverError: 0.05 };
  const draw = (seed: number) => {
    const random = seededRandom(seed);
    return Array.from({ length: 4000 }, () => chooseFault("statusWrite", "PATCH", rates, random));
  };
  const a = draw(7);
  assert.deepEqual(a, draw(7));
  const share = (f: (x: Fault) => boolean) => a.filter(f).length / a.length;
  const conflicts = share((x) => x.kind === "status" && x.status === 409);
  const passes = share((x) => x.kind === "pass");
  assert.ok(Math.abs(conflicts - 0.1) < 0.03, `409 share ${conflicts}`);
  assert.ok(Math.abs(passes - 0.8) < 0.03, `pass share ${passes}`);
});

Deno.test("statusBody() is a metav1.Status with the code and reason", () => {
  const s = JSON.parse(statusBody(429, "GET /api/v1/pods"));
  assert.equal(s.kind, "Status");
  assert.equal(s.code, 429);
  assert.equal(s.reason, "TooManyRequests");
  assert.match(s.message, /GET \/api\/v1\/pods/);
});

/** A stream that gives one chunk and then nothing until cancelled. */
function endless(): { stream: ReadableStream<Uint8Array>; cancelled: Promise<void> } {
  let cancel!: () => void;
  const cancelled = new Promise<void>((r) => (cancel = r));
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode("{}"));
    },
    cancel: () => cancel(),
  });
  return { stream, cancelled };
}

Deno.test("cuttableStream() ends or errors the stream when cut and cancels the source", async () => {
  for (const abrupt of [false, true]) {
    const { stream, cancelled } = endless();
    const watch = cuttableStream(stream);
    const reader = watch.stream.getReader();
    assert.deepEqual(new TextDecoder().decode((await reader.read()).value), "{}");
    const next = reader.read();
    assert.equal(watch.cut(abrupt), true);
    if (abrupt) await assert.rejects(next, /cut by the fault proxy/);
    else assert.equal((await next).done, true);
    await cancelled;
    await watch.over;
    assert.equal(watch.cut(abrupt), false, "a second cut finds it over");
  }
});

Deno.test("cuttableStream() passes a stream through unchanged and is over when it ends", async () => {
  const watch = cuttableStream(new Response("abc").body!);
  assert.equal(await new Response(watch.stream).text(), "abc");
  await watch.over;
  assert.equal(watch.cut(true), false);
});

Deno.test("the fault proxy forwards, injects its faults, cuts watches and pauses", async () => {
  const pki = await Deno.makeTempDir({ prefix: "denolet-fault-proxy-" });
  const upstreamAbort = new AbortController();
  let upstream: Deno.HttpServer | undefined;
  let proxy: ReturnType<typeof startApiProxy> | undefined;
  let client: Deno.HttpClient | undefined;
  try {
    await writeCa(pki);
    await makeCert(pki, "server", {
      subject: "/CN=s",
      usage: "serverAuth",
      sans: ["IP:127.0.0.1"],
    });
    await makeCert(pki, "client", { subject: "/CN=c" });
    const read = (f: string) => Deno.readTextFile(`${pki}/${f}`);
    const [ca, cert, key] = [
      await read("ca.crt"),
      await read("server.crt"),
      await read("server.key"),
    ];
    const seen: string[] = [];
    const upstreamPort = freePort();
    upstream = Deno.serve({
      hostname: "127.0.0.1",
      port: upstreamPort,
      cert,
      key,
      signal: upstreamAbort.signal,
      onListen: () => {},
    }, async (req) => {
      const u = new URL(req.url);
      seen.push(`${req.method} ${u.pathname}${u.search} ${await req.text()}`);
      if (u.searchParams.get("watch") === "true") {
        const { stream } = endless();
        return new Response(stream);
      }
      return Response.json({ ok: true });
    });
    proxy = startApiProxy({
      upstream: `https://127.0.0.1:${upstreamPort}`,
      caCert: ca,
      serverCert: cert,
      serverKey: key,
      clientCert: await read("client.crt"),
      clientKey: await read("client.key"),
      random: seededRandom(1),
    });
    client = Deno.createHttpClient({ caCerts: [ca] });
    const c = client;
    const get = (path: string, init: RequestInit = {}) =>
      fetch(`${proxy!.url}${path}`, { ...init, client: c });

    const plain = await get("/api/v1/pods?limit=1");
    assert.deepEqual(await plain.json(), { ok: true });
    const put = await get("/api/v1/nodes/n/status", { method: "PATCH", body: '{"a":1}' });
    assert.equal(put.status, 200);
    await put.body?.cancel();
    assert.deepEqual(seen, ["GET /api/v1/pods?limit=1 ", 'PATCH /api/v1/nodes/n/status {"a":1}']);

    proxy.setFaults({ ...NO_FAULTS, tooMany: 1 });
    const busy = await get("/api/v1/pods");
    assert.equal(busy.status, 429);
    assert.equal(busy.headers.get("Retry-After"), "1");
    assert.equal((await busy.json()).reason, "TooManyRequests");
    proxy.setFaults({ ...NO_FAULTS, conflict: 1 });
    const conflict = await get("/api/v1/namespaces/a/pods/p/status", { method: "PUT", body: "{}" });
    assert.equal(conflict.status, 409);
    await conflict.body?.cancel();
    assert.equal(seen.length, 2, "a refused request does not reach the apiserver");

    proxy.setFaults({ ...NO_FAULTS, watchCut: 1, cutMs: [50, 50] });
    const watch = await get("/api/v1/pods?watch=true");
    const reader = watch.body!.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), "{}");
    // Clean or abrupt: either way the stream stops.
    await reader.read().then((r) => assert.equal(r.done, true), () => {});
    assert.equal(proxy.counts().watchCuts, 1);
    proxy.setFaults(NO_FAULTS);
    const open = await get("/api/v1/pods?watch=true");
    const openReader = open.body!.getReader();
    await openReader.read();
    assert.equal(proxy.cutWatches(), 1);
    await openReader.read().then((r) => assert.equal(r.done, true), () => {});
    assert.equal(proxy.counts().watchCuts, 2);

    proxy.setFaults(NO_FAULTS);
    await proxy.pause();
    await assert.rejects(get("/api/v1/pods"));
    proxy.resume();
    const back = await waitFor("the proxy listening again", async () => {
      const res = await get("/api/v1/pods");
      return res.status === 200 ? await res.json() : undefined;
    }, { timeoutMs: 5_000 });
    assert.deepEqual(back, { ok: true });
    assert.deepEqual(
      { conflicts: proxy.counts().conflicts, tooMany: proxy.counts().tooMany },
      { conflicts: 1, tooMany: 1 },
    );
  } finally {
    client?.close();
    await proxy?.stop();
    upstreamAbort.abort();
    await upstream?.finished;
    await Deno.remove(pki, { recursive: true });
  }
});
