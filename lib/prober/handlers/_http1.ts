/**
 * A minimal HTTP/1.1 GET over a plain TCP connection, for httpGet probes.
 *
 * Why not node:http or fetch: a probe is one request on a fresh connection
 * (`Connection: close`), and at tens of probes a second the general clients'
 * per-request machinery was most of the prober's CPU (measured: ~1.6 ms of
 * CPU per cold node:http request, ~1.2 ms for fetch, ~0.9 ms for this). It
 * reads the status line, the headers the prober needs and at most `maxBody`
 * bytes of the body (Content-Length, chunked, or until close).
 *
 * @module
 */

/** What the prober needs of a response. */
export interface Http1Response {
  status: number;
  /** The Location header, when present. */
  location: string | undefined;
  /** At most `maxBody` bytes of the (de-chunked) body. */
  body: Uint8Array;
}

/** Options for {@link http1Get}. */
export interface Http1GetOptions {
  hostname: string;
  port: number;
  /** Path and query, starting with "/". */
  path: string;
  /** The Host header value. */
  host: string;
  /** Further header lines, in order (no Host, no Connection). */
  headers: readonly (readonly [string, string])[];
  maxBody: number;
  signal: AbortSignal;
}

/** Go's http.Transport default limit on response headers. */
const MAX_HEADER_BYTES = 1 << 20;
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** A malformed response, or a request that cannot be written. */
export class Http1Error extends Error {}

/** Buffered reads from the connection. */
class Reader {
  buf = new Uint8Array(4096);
  start = 0;
  end = 0;
  eof = false;
  constructor(private conn: Deno.Conn) {}

  /** Reads more bytes into the buffer; false at end of stream. */
  async fill(): Promise<boolean> {
    if (this.eof) return false;
    if (this.end === this.buf.length) {
      if (this.start > 0) {
        this.buf.copyWithin(0, this.start, this.end);
        this.end -= this.start;
        this.start = 0;
      } else {
        const bigger = new Uint8Array(this.buf.length * 2);
        bigger.set(this.buf.subarray(0, this.end));
        this.buf = bigger;
      }
    }
    const n = await this.conn.read(this.buf.subarray(this.end));
    if (n === null) {
      this.eof = true;
      return false;
    }
    this.end += n;
    return true;
  }

  /** One CRLF-terminated line (without it). */
  async line(): Promise<string> {
    for (;;) {
      const i = this.buf.subarray(this.start, this.end).indexOf(10);
      if (i >= 0) {
        const line = latin1.decode(this.buf.subarray(this.start, this.start + i));
        this.start += i + 1;
        return line.endsWith("\r") ? line.slice(0, -1) : line;
      }
      if (this.end - this.start > MAX_HEADER_BYTES) throw new Http1Error("line too long");
      if (!(await this.fill())) throw new Http1Error("unexpected EOF");
    }
  }

  /** Up to `n` bytes, fewer only at end of stream. */
  async take(n: number, into: Uint8Array[]): Promise<number> {
    let got = 0;
    while (got < n) {
      if (this.start === this.end && !(await this.fill())) break;
      const k = Math.min(n - got, this.end - this.start);
      into.push(this.buf.slice(this.start, this.start + k));
      this.start += k;
      got += k;
    }
    return got;
  }
}

/**
 * Sends one GET and reads the answer.
 * @param o where, what, headers, body limit, cancellation
 * @returns status, Location and the start of the body
 * @throws {Http1Error} on a malformed response; the connection's errors as they are
 */
export async function http1Get(o: Http1GetOptions): Promise<Http1Response> {
  let head = `GET ${o.path} HTTP/1.1\r\nHost: ${o.host}\r\n`;
  for (const [name, value] of o.headers) {
    if (/[\r\n]/.test(name + value)) {
      throw new Http1Error(`invalid header field value for ${JSON.stringify(name)}`);
    }
    head += `${name}: ${value}\r\n`;
  }
  head += "Connection: close\r\n\r\n";
  const conn = await Deno.connect({ hostname: o.hostname, port: o.port, signal: o.signal });
  const onAbort = () => {
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  o.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const bytes = encoder.encode(head);
    for (let written = 0; written < bytes.length;) {
      written += await conn.write(bytes.subarray(written));
    }
    const r = new Reader(conn);
    let status: number;
    let headers: Map<string, string>;
    // Informational (1xx) answers precede the real one.
    do {
      ({ status, headers } = await readHead(r));
    } while (status >= 100 && status < 200);
    const chunks: Uint8Array[] = [];
    const bodyless = status === 204 || status === 304;
    if (!bodyless) {
      if (headers.get("transfer-encoding")?.toLowerCase().includes("chunked")) {
        await readChunked(r, o.maxBody, chunks);
      } else {
        const length = headers.get("content-length");
        await r.take(
          length === undefined ? o.maxBody : Math.min(Number(length), o.maxBody),
          chunks,
        );
      }
    }
    return { status, location: headers.get("location"), body: concat(chunks) };
  } finally {
    o.signal.removeEventListener("abort", onAbort);
    onAbort();
  }
}

async function readHead(r: Reader): Promise<{ status: number; headers: Map<string, string> }> {
  const statusLine = await r.line();
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine);
  if (!m) throw new Http1Error(`malformed HTTP response ${JSON.stringify(statusLine)}`);
  const headers = new Map<string, string>();
  let size = statusLine.length;
  for (;;) {
    const line = await r.line();
    if (line === "") break;
    size += line.length;
    if (size > MAX_HEADER_BYTES) throw new Http1Error("server response headers exceeded 1 MiB");
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Http1Error(`malformed MIME header line: ${line}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return { status: Number(m[1]), headers };
}

async function readChunked(r: Reader, max: number, chunks: Uint8Array[]): Promise<void> {
  let got = 0;
  while (got < max) {
    const sizeLine = await r.line();
    const size = parseInt(sizeLine.split(";")[0]!.trim(), 16);
    if (!Number.isFinite(size) || size < 0) throw new Http1Error("malformed chunked encoding");
    if (size === 0) return;
    const want = Math.min(size, max - got);
    got += await r.take(want, chunks);
    if (want < size) return; // enough for the output
    await r.line();
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
