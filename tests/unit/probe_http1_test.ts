/**
 * lib/probe's HTTP/1.1 reader and client against answers that never end: what one
 * request may cost in memory and time (a head up to Go's 10 MiB limit, a long line
 * in small reads), and that its connection is closed however the answer ends, over
 * HTTP and HTTPS.
 */

import assert from "node:assert/strict";
import { type ByteStream, Http1Error, http1Get } from "../../lib/probe/_http1.ts";
import {
  buildHttpProbeRequest,
  type HttpGetClient,
  type HttpGetResult,
  sendHttpGet,
} from "../../lib/probe/mod.ts";
import { waitFor } from "../kit/mod.ts";

const encoder = new TextEncoder();
const FIXTURES = new URL("./fixtures/kubeapi/", import.meta.url).pathname;
const GET = { path: "/", host: "h", headers: [], timeUp: () => false };
const MiB = 2 ** 20;

/**
 * A connection that answers with `first`, then `rest` over and over (or ends, when
 * there is none).
 */
function endless(first: string, rest = ""): ByteStream & { reads: number } {
  const head = encoder.encode(first);
  const body = encoder.encode(rest.repeat(Math.ceil(65536 / (rest.length || 1))));
  let at = -head.length;
  return {
    reads: 0,
    read(p) {
      this.reads++;
      if (at >= 0 && body.length === 0) return Promise.resolve(null);
      const [src, from] = at < 0 ? [head, head.length + at] : [body, at % body.length];
      const n = Math.min(src.length - from, p.length);
      p.set(src.subarray(from, from + n));
      at += n;
      return Promise.resolve(n);
    },
    write: (p) => Promise.resolve(p.length),
    close() {},
  };
}

Deno.test("http1Get() reads a head of endless short fields to Go's 10 MiB limit, keeping none but the first Location", async () => {
  const conn = endless("HTTP/1.1 200 OK\r\n", "X-a: b\r\nLocation: /x\r\n");
  const start = Deno.memoryUsage().heapUsed;
  let peak = start;
  const read = conn.read.bind(conn);
  conn.read = (p) => {
    peak = Math.max(peak, Deno.memoryUsage().heapUsed);
    return read(p);
  };
  await assert.rejects(
    http1Get(conn, GET),
    (err) =>
      err instanceof Http1Error &&
      err.message === "server response headers exceeded 10485760 bytes; aborted",
  );
  // Kept as strings, these ~950,000 fields took ~67 MiB of heap; keeping every Location, ~57.
  assert.ok(peak - start < 12 * MiB, `heap grew ${Math.round((peak - start) / MiB)} MiB`);
});

Deno.test("http1Get() stops once its time is up, though the connection never makes it wait", async () => {
  // As with our TLS socket's queued megabytes: every read answers at once, so the
  // deadline's timer could not run until all were read.
  const conn = endless("HTTP/1.1 200 OK\r\n", "X-a: b\r\n");
  await assert.rejects(http1Get(conn, { ...GET, timeUp: () => conn.reads >= 10 }), /timed out/);
  assert.equal(conn.reads, 10);
});

Deno.test("http1Get() searches a long header line arriving in small reads once, not once per read", async () => {
  const line = "v".repeat(2 * MiB);
  const conn = endless(`HTTP/1.1 204 No Content\r\nX-Long: ${line}\r\n\r\n`);
  const started = performance.now();
  const read = conn.read.bind(conn);
  // 32,768 reads of 64 bytes: searched from the line's start each time, a 1 MiB line
  // took 10 s here (this one ~40 s); searched once, this one takes well under a second.
  conn.read = (p) => {
    if (performance.now() - started > 10_000) throw new Error("still reading after 10 s");
    return read(p.subarray(0, 64));
  };
  const head = await http1Get(conn, GET);
  assert.equal(head.status, 204);
  assert.ok(conn.reads > 30_000);
});

Deno.test("http1Get() refuses a header line longer than Go's 10 MiB limit", async () => {
  const conn = endless("HTTP/1.1 200 OK\r\nX: ", "v");
  await assert.rejects(http1Get(conn, GET), /line too long/);
});

/** What a server writes on every connection: a prefix, then `endless` forever, or nothing. */
interface Hostile {
  name: string;
  prefix: string;
  endless?: string;
}

const HOSTILE: Hostile[] = [
  { name: "an endless body", prefix: "HTTP/1.1 200 OK\r\n\r\n", endless: "b" },
  { name: "endless header fields", prefix: "HTTP/1.1 200 OK\r\n", endless: "X-a: b\r\n" },
  { name: "an endless header line", prefix: "HTTP/1.1 200 OK\r\nX: ", endless: "v" },
  {
    name: "endless chunks",
    prefix: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    endless: "1\r\nb\r\n",
  },
  { name: "nothing", prefix: "" },
];

async function openFds(): Promise<number> {
  let n = 0;
  for await (const _ of Deno.readDir("/proc/self/fd")) n++;
  return n;
}

/**
 * Loopback servers, plain and TLS, answering every connection with `hostile`'s
 * bytes until the client goes; `fn` gets their ports. Returns when every
 * connection the servers took has ended.
 */
async function withServers(
  hostile: () => Hostile,
  fn: (ports: { HTTP: number; HTTPS: number }) => Promise<unknown>,
): Promise<void> {
  const plain = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const secure = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(`${FIXTURES}server.crt`),
    key: await Deno.readTextFile(`${FIXTURES}server.key`),
  });
  const answers: Promise<void>[] = [];
  const answer = async (conn: Deno.Conn) => {
    try {
      const buf = new Uint8Array(4096);
      let head = "";
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) return;
        head += new TextDecoder().decode(buf.subarray(0, n));
      }
      const { prefix, endless } = hostile();
      await conn.write(encoder.encode(prefix));
      if (endless === undefined) {
        await conn.read(buf); // until the client closes
        return;
      }
      const more = encoder.encode(endless.repeat(Math.ceil(65536 / endless.length)));
      for (;;) await conn.write(more);
    } catch {
      // The client closed.
    } finally {
      conn.close();
    }
  };
  const accepting = [plain, secure].map(async (listener) => {
    for await (const conn of listener) answers.push(answer(conn));
  });
  try {
    await fn({
      HTTP: (plain.addr as Deno.NetAddr).port,
      HTTPS: (secure.addr as Deno.NetAddr).port,
    });
  } finally {
    plain.close();
    secure.close();
    await Promise.all(accepting);
    await Promise.all(answers);
  }
}

function get(
  port: number,
  scheme: "HTTP" | "HTTPS",
  client: HttpGetClient,
  timeoutMs: number,
): Promise<HttpGetResult> {
  const request = buildHttpProbeRequest(
    { port, path: "/", scheme },
    { name: "app", image: "busybox" },
    "127.0.0.1",
    "kube-probe/1.37",
  );
  return sendHttpGet(request, { client, timeoutMs, signal: new AbortController().signal });
}

Deno.test("sendHttpGet() ends within its timeout and closes its connection however an endless answer ends, over HTTP and HTTPS", async () => {
  let hostile = HOSTILE[0]!;
  const timeoutMs = 300;
  // The first TLS connection sets up what every later one shares.
  await withServers(() => hostile, (ports) => get(ports.HTTPS, "HTTPS", "probe", timeoutMs));
  const before = await openFds();
  await withServers(() => hostile, async (ports) => {
    for (const h of HOSTILE) {
      hostile = h;
      for (const scheme of ["HTTP", "HTTPS"] as const) {
        for (const client of ["probe", "hook"] as const) {
          const started = performance.now();
          const res = await get(ports[scheme], scheme, client, timeoutMs);
          const took = performance.now() - started;
          const what = `${client} over ${scheme} against ${h.name}: ${JSON.stringify(res)}`;
          assert.ok(took < timeoutMs + 500, `${what} took ${Math.round(took)} ms`);
          assert.notEqual(res.kind, "cancelled", what);
        }
      }
    }
  });
  // Every server end has seen ours close; the last descriptors go as their closes
  // finish (node:net closes a handle a moment after destroy()).
  await waitFor("the client's descriptors closed", openFds, {
    timeoutMs: 2_000,
    intervalMs: 20,
    until: (open) => open <= before,
  });
});
