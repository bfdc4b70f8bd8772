/**
 * A TLS connection for httpGet over HTTPS, as a {@link ByteStream} for
 * `_http1.ts`, so HTTPS answers are read by the same rules as plain HTTP ones.
 *
 * Certificates are not verified, as upstream's probe and hook clients
 * (`InsecureSkipVerify`): node:tls is the one TLS client here that can skip
 * verification per connection. It runs over a stream of ours on a TCP socket,
 * which lets it see the server's first bytes: Go's client calls a failed
 * handshake whose first five bytes were `HTTP/` "server gave HTTP response to
 * HTTPS client" (net/http `ErrSchemeMismatch`), the error on which upstream's
 * lifecycle hook retries over HTTP.
 *
 * @module
 */

import net, { isIP } from "node:net";
import { Duplex } from "node:stream";
import tls from "node:tls";
import type { ByteStream } from "./_http1.ts";

/** The TLS handshake got an answer in plain HTTP (Go's net/http `ErrSchemeMismatch`). */
export class SchemeMismatchError extends Error {
  constructor() {
    super("http: server gave HTTP response to HTTPS client");
    this.name = "SchemeMismatchError";
  }
}

const HTTP_PREFIX = [...new TextEncoder().encode("HTTP/")];

/**
 * Opens a TLS connection to `hostname:port` without verifying the server's
 * certificate; SNI only for a name, not an IP, as Go's client. Writes are
 * queued until the handshake is done; a failed handshake fails the next read.
 * @param hostname name or IP (IPv6 without brackets)
 * @param port the port
 * @returns the connection
 */
export function connectTls(hostname: string, port: number): ByteStream {
  const raw = net.connect({ host: hostname, port });
  /** The server's first bytes, up to five: what Go's TLS client checks a bad record against. */
  const first: number[] = [];
  let rawOpen = true;
  let rawChanged: (() => void) | undefined;
  const transport = new Duplex({
    read() {},
    write(chunk: Uint8Array, _encoding, done) {
      raw.write(chunk, done);
    },
    final(done) {
      raw.end();
      done();
    },
  });
  raw.on("data", (chunk: Uint8Array) => {
    for (let i = 0; i < chunk.length && first.length < 5; i++) first.push(chunk[i]!);
    rawChanged?.();
    transport.push(chunk);
  });
  const rawGone = (err?: Error) => {
    rawOpen = false;
    rawChanged?.();
    if (err) transport.destroy(err);
    else transport.push(null);
  };
  raw.on("end", () => rawGone());
  raw.on("close", () => rawGone());
  raw.on("error", (err) => rawGone(err));

  /** Whether the first bytes are, or may still become, `HTTP/`. */
  const maybeHttp = () => first.every((b, i) => b === HTTP_PREFIX[i]);
  /** The error to report: a handshake failed on `HTTP/` is Go's scheme mismatch. */
  const classify = async (err: Error): Promise<Error> => {
    // TLS gives up on the first byte that is no record type; Go waits for a record's five.
    while (first.length < 5 && maybeHttp() && rawOpen) {
      await new Promise<void>((resolve) => (rawChanged = resolve));
      rawChanged = undefined;
    }
    return first.length === 5 && maybeHttp() ? new SchemeMismatchError() : err;
  };

  const socket = tls.connect({
    socket: transport,
    rejectUnauthorized: false,
    servername: isIP(hostname) ? "" : hostname,
  });
  const queue: Uint8Array[] = [];
  let ended = false;
  let failure: Promise<Error> | undefined;
  let wake: (() => void) | undefined;
  const notify = () => wake?.();
  socket.on("data", (chunk: Uint8Array) => {
    queue.push(chunk);
    notify();
  });
  socket.on("end", () => {
    ended = true;
    notify();
  });
  socket.on("close", () => {
    ended = true;
    notify();
  });
  socket.on("error", (err: Error) => {
    failure ??= classify(err);
    notify();
  });

  return {
    async read(p: Uint8Array): Promise<number | null> {
      for (;;) {
        const head = queue[0];
        if (head) {
          const n = Math.min(head.length, p.length);
          p.set(head.subarray(0, n));
          if (n === head.length) queue.shift();
          else queue[0] = head.subarray(n);
          return n;
        }
        if (failure) throw await failure;
        if (ended) return null;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
    write(p: Uint8Array): Promise<number> {
      // Buffered by the TLS socket until the handshake is done; its failure shows on read.
      socket.write(p);
      return Promise.resolve(p.length);
    },
    close(): void {
      ended = true;
      queue.length = 0;
      socket.destroy();
      raw.destroy();
      notify();
    },
  };
}
