/**
 * A small WebSocket client for the kubelet's channel protocols
 * (`v4.channel.k8s.io`, `v5.channel.k8s.io`): every binary message starts
 * with its channel byte (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; 255
 * closes a channel in v5). It speaks plain TCP or TLS with a client
 * certificate, which the runtime's streaming server and the agent's secure
 * port need respectively, so one client measures both paths. Deno's own
 * WebSocket cannot present a client certificate.
 *
 * @module
 */

import { concatBytes } from "../lib/util/bytes.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const OP_CONTINUATION = 0x0, OP_BINARY = 0x2, OP_CLOSE = 0x8, OP_PING = 0x9, OP_PONG = 0xa;

/** TLS material for an `https:` URL. */
export interface ClientTls {
  /** PEM of the CA that signed the server's certificate. */
  caCert: string;
  /** PEM client certificate and key. */
  cert: string;
  key: string;
}

/** Options for {@link ChannelSocket.open}. */
export interface OpenOptions {
  /** `http:` or `https:` URL of the upgrade endpoint. */
  url: URL;
  /** The subprotocols offered, best first. */
  protocols: string[];
  tls?: ClientTls;
  /** Called with each message's channel and payload (a view, valid during the call). */
  onMessage(channel: number, payload: Uint8Array): void;
}

async function acceptKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", enc.encode(key + GUID));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

/** A bytes buffer read from the connection, consumed from the front. */
class ReadBuffer {
  buf = new Uint8Array(256 * 1024);
  start = 0;
  end = 0;

  get length(): number {
    return this.end - this.start;
  }

  /** Room for at least `n` more bytes at the end: compacts, or grows when it must. */
  reserve(n: number): Uint8Array {
    if (this.buf.length - this.end < n) {
      const live = this.length;
      if (this.buf.length - live >= n) {
        this.buf.copyWithin(0, this.start, this.end);
      } else {
        const next = new Uint8Array(Math.max(this.buf.length * 2, live + n));
        next.set(this.buf.subarray(this.start, this.end));
        this.buf = next;
      }
      this.start = 0;
      this.end = live;
    }
    return this.buf.subarray(this.end);
  }
}

/** One client connection speaking a channel protocol. */
export class ChannelSocket {
  readonly #conn: Deno.Conn;
  readonly #in: ReadBuffer;
  readonly #onMessage: (channel: number, payload: Uint8Array) => void;
  #writing: Promise<void> = Promise.resolve();
  #closeSent = false;
  /** The subprotocol the server chose. */
  readonly protocol: string;
  /** Settles when the server closed the connection (or it failed). */
  readonly done: Promise<void>;

  private constructor(
    conn: Deno.Conn,
    input: ReadBuffer,
    protocol: string,
    onMessage: (channel: number, payload: Uint8Array) => void,
  ) {
    this.#conn = conn;
    this.#in = input;
    this.protocol = protocol;
    this.#onMessage = onMessage;
    this.done = this.#readLoop();
  }

  /**
   * Connects, upgrades and starts reading.
   * @throws Error with the server's status line and body when it does not upgrade
   */
  static async open(opts: OpenOptions): Promise<ChannelSocket> {
    const { url } = opts;
    const hostname = url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    let conn: Deno.Conn;
    if (url.protocol === "https:") {
      conn = await Deno.connectTls({
        hostname,
        port,
        caCerts: opts.tls ? [opts.tls.caCert] : [],
        ...(opts.tls ? { cert: opts.tls.cert, key: opts.tls.key } : {}),
      });
    } else {
      const tcp = await Deno.connect({ hostname, port });
      tcp.setNoDelay(true); // as the agent's proxy sets it on its runtime side
      conn = tcp;
    }
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    const head = [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `Host: ${url.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
      `Sec-WebSocket-Protocol: ${opts.protocols.join(", ")}`,
    ].join("\r\n") + "\r\n\r\n";
    try {
      await writeAll(conn, enc.encode(head));
      const input = new ReadBuffer();
      let headEnd = -1;
      while (headEnd < 0) {
        const n = await conn.read(input.reserve(4096));
        if (n === null) throw new Error("connection closed during the handshake");
        input.end += n;
        headEnd = findHeadEnd(input.buf.subarray(0, input.end));
      }
      const response = dec.decode(input.buf.subarray(0, headEnd));
      input.start = headEnd + 4;
      const [status = "", ...lines] = response.split("\r\n");
      const headers = new Map(lines.map((l) => {
        const i = l.indexOf(":");
        return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()] as const;
      }));
      if (!/^HTTP\/1\.1 101 /.test(status)) {
        const body = dec.decode(input.buf.subarray(input.start, input.end));
        throw new Error(`${url.pathname}: ${status} ${body}`.trim());
      }
      if (headers.get("sec-websocket-accept") !== await acceptKey(key)) {
        throw new Error(`${url.pathname}: wrong Sec-WebSocket-Accept for key ${key}:\n${response}`);
      }
      return new ChannelSocket(
        conn,
        input,
        headers.get("sec-websocket-protocol") ?? "",
        opts.onMessage,
      );
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  /** Sends one binary message on `channel`; messages are written in call order. */
  send(channel: number, data: Uint8Array): Promise<void> {
    const payload = new Uint8Array(data.length + 1);
    payload[0] = channel;
    payload.set(data, 1);
    return this.#queue(frame(OP_BINARY, payload));
  }

  /** Sends a close message (once), then closes the connection after the server's reply or 2 s. */
  async close(): Promise<void> {
    if (!this.#closeSent) {
      this.#closeSent = true;
      await this.#queue(frame(OP_CLOSE, new Uint8Array([0x03, 0xe8]))).catch(() => {});
    }
    let id: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.done, new Promise<void>((r) => (id = setTimeout(r, 2000)))]);
    clearTimeout(id);
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }

  #queue(bytes: Uint8Array): Promise<void> {
    const written = this.#writing.then(() => writeAll(this.#conn, bytes));
    // A failed write fails its caller's promise; the queue goes on for the next.
    this.#writing = written.catch(() => {});
    return written;
  }

  async #readLoop(): Promise<void> {
    const input = this.#in;
    let pieces: Uint8Array[] = [];
    try {
      for (;;) {
        // Parse every complete frame in the buffer.
        for (;;) {
          const b = input.buf;
          const at = input.start;
          if (input.length < 2) break;
          const fin = (b[at]! & 0x80) !== 0;
          const op = b[at]! & 0x0f;
          let len = b[at + 1]! & 0x7f;
          let off = 2;
          if (len === 126) {
            if (input.length < 4) break;
            len = (b[at + 2]! << 8) | b[at + 3]!;
            off = 4;
          } else if (len === 127) {
            if (input.length < 10) break;
            len = Number(new DataView(b.buffer, b.byteOffset + at + 2, 8).getBigUint64(0));
            off = 10;
          }
          if (input.length < off + len) {
            input.reserve(off + len - input.length);
            break;
          }
          const payload = input.buf.subarray(input.start + off, input.start + off + len);
          input.start += off + len;
          if (op === OP_PING) {
            void this.#queue(frame(OP_PONG, payload.slice())).catch(() => {});
          } else if (op === OP_CLOSE) {
            if (!this.#closeSent) {
              this.#closeSent = true;
              await this.#queue(frame(OP_CLOSE, payload.slice(0, 2))).catch(() => {});
            }
            return;
          } else if (op === OP_BINARY || op === OP_CONTINUATION || op === 0x1) {
            if (fin && pieces.length === 0) {
              if (payload.length > 0) this.#onMessage(payload[0]!, payload.subarray(1));
            } else {
              pieces.push(payload.slice());
              if (fin) {
                const whole = concatBytes(pieces);
                pieces = [];
                if (whole.length > 0) this.#onMessage(whole[0]!, whole.subarray(1));
              }
            }
          }
        }
        if (input.start === input.end) input.start = input.end = 0;
        const n = await this.#conn.read(input.reserve(64 * 1024));
        if (n === null) return;
        input.end += n;
      }
    } catch {
      // reset: the session is over
    } finally {
      try {
        this.#conn.close();
      } catch { /* already closed */ }
    }
  }
}

/** A masked client frame (RFC 6455 §5.2) with FIN set. */
function frame(op: number, payload: Uint8Array): Uint8Array {
  const n = payload.length;
  const ext = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const out = new Uint8Array(2 + ext + 4 + n);
  out[0] = 0x80 | op;
  if (ext === 0) out[1] = 0x80 | n;
  else if (ext === 2) {
    out[1] = 0x80 | 126;
    out[2] = n >> 8;
    out[3] = n & 0xff;
  } else {
    out[1] = 0x80 | 127;
    new DataView(out.buffer).setBigUint64(2, BigInt(n));
  }
  const maskAt = 2 + ext;
  const mask = crypto.getRandomValues(new Uint8Array(4));
  out.set(mask, maskAt);
  const body = maskAt + 4;
  for (let i = 0; i < n; i++) out[body + i] = payload[i]! ^ mask[i & 3]!;
  return out;
}

function findHeadEnd(bytes: Uint8Array): number {
  for (let i = 3; i < bytes.length; i++) {
    if (
      bytes[i] === 0x0a && bytes[i - 1] === 0x0d && bytes[i - 2] === 0x0a && bytes[i - 3] === 0x0d
    ) {
      return i - 3;
    }
  }
  return -1;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}
