/**
 * lib/server's bridge from node:http to fetch-style handlers, over a plain
 * node:http server on loopback: request bodies, streamed responses that wait
 * for a slow client, a client that hangs up cancelling the stream, and a
 * body's end kept apart from its last chunk.
 */

import assert from "node:assert/strict";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { handleNodeRequest, type Handler, writeFetchResponse } from "../../lib/server/mod.ts";
import { waitFor } from "../kit/mod.ts";

async function serveWith(
  handler: Handler | undefined,
): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    void handleNodeRequest(req, res, { handler });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

Deno.test("bridge: the request's method, path, query, headers and body reach the handler", async () => {
  const s = await serveWith(async (req, url) =>
    Response.json({
      method: req.method,
      path: url.pathname,
      q: url.searchParams.get("q"),
      header: req.headers.get("x-test"),
      body: await req.text(),
    }, { status: 201, headers: { "x-answer": "yes" } })
  );
  try {
    const res = await fetch(`${s.url}/run/ns/pod/c?q=1`, {
      method: "POST",
      headers: { "x-test": "abc" },
      body: "cmd=ls",
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("x-answer"), "yes");
    assert.deepEqual(await res.json(), {
      method: "POST",
      path: "/run/ns/pod/c",
      q: "1",
      header: "abc",
      body: "cmd=ls",
    });
  } finally {
    await s.close();
  }
});

Deno.test("bridge: no handler is Go's 404, a throwing handler a 500, HEAD has no body", async () => {
  const none = await serveWith(undefined);
  const failing = await serveWith(() => {
    throw new Error("boom");
  });
  const ok = await serveWith(() => new Response("hello"));
  try {
    const res404 = await fetch(`${none.url}/nope`);
    assert.equal(res404.status, 404);
    assert.equal(await res404.text(), "404 page not found\n");
    const res500 = await fetch(`${failing.url}/x`);
    assert.equal(res500.status, 500);
    assert.match(await res500.text(), /boom/);
    const head = await fetch(`${ok.url}/x`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  } finally {
    await Promise.all([none.close(), failing.close(), ok.close()]);
  }
});

Deno.test("bridge: a streamed body is read only as fast as the client reads, and a hang-up cancels it", async () => {
  const chunk = new Uint8Array(64 * 1024).fill(120);
  let pulled = 0;
  let cancelled: unknown;
  let aborted = false;
  const s = await serveWith((req) => {
    req.signal.addEventListener("abort", () => (aborted = true));
    return new Response(
      new ReadableStream<Uint8Array>({
        pull(c) {
          pulled += chunk.length;
          c.enqueue(chunk);
        },
        cancel(reason) {
          cancelled = reason ?? "cancelled";
        },
      }, { highWaterMark: 0 }),
    );
  });
  const socket = net.connect(s.port, "127.0.0.1");
  try {
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write("GET /containerLogs/ns/pod/c?follow=true HTTP/1.1\r\nHost: x\r\n\r\n");
    let received = 0;
    socket.once("data", (d: Uint8Array) => {
      received += d.length;
      // Stop reading: the kernel buffers fill and node's write() starts returning false.
      socket.pause();
    });
    // An endless source: without backpressure the server would pull without bound.
    let last = -1;
    await waitFor("the server to stop pulling from a stream the client does not read", () => {
      const steady = pulled === last && pulled > 0;
      last = pulled;
      return steady;
    }, { timeoutMs: 20_000, intervalMs: 300 });
    assert.ok(received > 0);
    assert.ok(pulled < 64 * 1024 * 1024, `pulled ${pulled} bytes for a paused client`);
    socket.destroy();
    await waitFor("the stream cancelled after the hang-up", () => cancelled !== undefined);
    assert.ok(aborted, "req.signal aborted");
  } finally {
    socket.destroy();
    await s.close();
  }
});

Deno.test("bridge: a body's end is sent only once its last chunk is on the socket", async () => {
  // A ServerResponse that holds each write's callback, as a socket not yet written would.
  const calls: string[] = [];
  const pending: (() => void)[] = [];
  const listeners = new Map<string, () => void>();
  const res = {
    destroyed: false,
    writableFinished: false,
    writeHead: () => calls.push("head"),
    flushHeaders: () => {},
    write(value: Uint8Array, cb: () => void) {
      calls.push(`write ${new TextDecoder().decode(value)}`);
      pending.push(cb);
      return true;
    },
    end: () => calls.push("end"),
    once: (event: string, fn: () => void) => listeners.set(event, fn),
    off: (event: string) => listeners.delete(event),
  };
  const req = { method: "GET" };
  const done = writeFetchResponse(
    req as unknown as IncomingMessage,
    res as unknown as ServerResponse,
    new Response("container is alive\n"),
  );
  await waitFor("the chunk written", () => pending.length === 1);
  // The apiserver's WebSocket log copy loses data that arrives with the end of the body.
  assert.deepEqual(calls, ["head", "write container is alive\n"]);
  pending[0]!();
  await done;
  assert.deepEqual(calls, ["head", "write container is alive\n", "end"]);
});

Deno.test("bridge: TRACE, a method a fetch Request cannot carry, is a 405, not a 500", async () => {
  const s = await serveWith(() => new Response("ok"));
  try {
    for (const method of ["TRACE"]) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(s.port, "127.0.0.1", () => {
          socket.write(`${method} /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`);
        });
        let out = "";
        socket.on("data", (d: Uint8Array) => (out += new TextDecoder().decode(d)));
        socket.on("end", () => resolve(out));
        socket.on("error", reject);
      });
      assert.match(answer, /^HTTP\/1\.1 405 /, method);
      assert.match(answer, /\r\n\r\n12\r\nMethod Not Allowed\r\n0\r\n\r\n$/, method);
    }
  } finally {
    await s.close();
  }
});
