/**
 * Loopback pieces for the streaming proxy tests: a fake runtime streaming
 * server (Deno.listen) that answers an upgrade with 101 and then echoes, a
 * node:http server whose `upgrade` event goes to a handler, and a raw TCP
 * client.
 *
 * @module
 */

import { createServer, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One connection the fake runtime accepted. */
export interface BackendConn {
  /** The request head it received (up to and without the blank line). */
  head: string;
  /** Bytes received after the head, so far. */
  received(): string;
  /** Resolves when the peer closed its side (read returned EOF or failed). */
  closed: Promise<void>;
  write(text: string): Promise<void>;
  close(): void;
}

/** A fake runtime streaming server. */
export interface FakeBackend {
  url(path: string): URL;
  /** Resolves with the next accepted connection once its head is read. */
  next(): Promise<BackendConn>;
  close(): Promise<void>;
}

/**
 * Starts a fake streaming server: it reads each request head, answers
 * `101 Switching Protocols` and, when `echo`, sends every byte back.
 */
export function startFakeBackend(opts: { echo?: boolean } = {}): FakeBackend {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const waiting: ((c: BackendConn) => void)[] = [];
  const ready: BackendConn[] = [];
  const conns = new Set<Deno.Conn>();
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      serve(conn).finally(() => conns.delete(conn));
    }
  })();

  async function serve(conn: Deno.Conn): Promise<void> {
    let text = "";
    const buf = new Uint8Array(64 * 1024);
    let closedResolve!: () => void;
    const closed = new Promise<void>((r) => (closedResolve = r));
    let head: string | undefined;
    let body = "";
    let isClosed = false;
    const backend: BackendConn = {
      get head() {
        return head ?? "";
      },
      received: () => body,
      closed,
      async write(t) {
        await conn.write(enc.encode(t));
      },
      close() {
        if (isClosed) return;
        isClosed = true;
        try {
          conn.close();
        } catch { /* already closed */ }
      },
    };
    try {
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        const chunk = dec.decode(buf.subarray(0, n));
        if (head === undefined) {
          text += chunk;
          const end = text.indexOf("\r\n\r\n");
          if (end < 0) continue;
          head = text.slice(0, end);
          body = text.slice(end + 4);
          await conn.write(enc.encode("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\n\r\n"));
          if (opts.echo && body) await conn.write(enc.encode(body));
          const waiter = waiting.shift();
          if (waiter) waiter(backend);
          else ready.push(backend);
          continue;
        }
        body += chunk;
        if (opts.echo) await conn.write(buf.slice(0, n));
      }
    } catch {
      // reset by the proxy
    } finally {
      closedResolve();
      backend.close();
    }
  }

  return {
    url: (path) => new URL(`http://127.0.0.1:${port}${path}`),
    next: () => {
      const c = ready.shift();
      return c ? Promise.resolve(c) : new Promise((r) => waiting.push(r));
    },
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await accepting.catch(() => {});
    },
  };
}

/** A node:http server whose upgrade requests go to `onUpgrade`. */
export async function startUpgradeServer(
  onUpgrade: (req: IncomingMessage, socket: Duplex, head: Uint8Array) => void | Promise<void>,
  onRequest?: Parameters<typeof createServer>[0],
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = onRequest ? createServer(onRequest) : createServer();
  server.on("upgrade", (req, socket, head) => void onUpgrade(req, socket, head));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A raw TCP client. */
export class RawClient {
  #buf = new Uint8Array(64 * 1024);
  text = "";
  eof = false;
  private constructor(readonly conn: Deno.Conn) {}

  static async connect(port: number): Promise<RawClient> {
    return new RawClient(await Deno.connect({ hostname: "127.0.0.1", port }));
  }

  async send(text: string): Promise<void> {
    await this.conn.write(enc.encode(text));
  }

  /** Reads until `pred(text)` holds or the peer closes; returns the text. */
  async readUntil(pred: (text: string) => boolean): Promise<string> {
    while (!pred(this.text) && !this.eof) {
      let n: number | null;
      try {
        n = await this.conn.read(this.#buf);
      } catch {
        n = null;
      }
      if (n === null) this.eof = true;
      else this.text += dec.decode(this.#buf.subarray(0, n));
    }
    return this.text;
  }

  /** Reads until the peer closes. */
  readToEnd(): Promise<string> {
    return this.readUntil(() => false);
  }

  close(): void {
    try {
      this.conn.close();
    } catch { /* closed */ }
  }
}

/** An upgrade request head as a client sends it. */
export function upgradeRequest(path: string, extra: Record<string, string> = {}): string {
  const headers = {
    Host: "node.example:10250",
    Connection: "Upgrade",
    Upgrade: "SPDY/3.1",
    "X-Stream-Protocol-Version": "v4.channel.k8s.io",
    ...extra,
  };
  return `POST ${path} HTTP/1.1\r\n` +
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n";
}

/** Polls `pred` every 10 ms until it holds (network events take real time). */
export async function until(pred: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
