/**
 * A minimal HTTP/1.1 GET over a connection of its own (TCP, or TLS over TCP), read
 * by the rules of Go's net/http client: the status line, the header fields, 1xx
 * answers skipped, the body's framing, at most so many bytes of the body.
 *
 * Why not node:http or fetch: a probe is one request on a fresh connection
 * (`Connection: close`), and at tens of probes a second the general clients'
 * per-request machinery was most of the prober's CPU (measured: ~1.6 ms of
 * CPU per cold node:http request, ~1.2 ms for fetch, ~0.9 ms for this); and
 * their parsers are not Go's, so they answer hostile servers otherwise than
 * upstream's kubelet.
 *
 * @module
 */

import { concatBytes } from "../util/bytes.ts";

/** A response's head, and its body still to be read (or not). */
export interface Http1Head {
  status: number;
  /** The Location header, when present. */
  location: string | undefined;
  /**
   * Reads the body, once.
   * @param use what the body is for
   * @param max the most bytes read
   * @returns at most `max` bytes of the (de-chunked) body; what was read of a dropped one
   * @throws {Http1Error} for a body Go's reader refuses, when `use` is "read"
   */
  readBody(use: BodyUse, max: number): Promise<Uint8Array>;
}

/** A connection http1Get talks over: a Deno.Conn, or a TLS socket adapted to this. */
export interface ByteStream {
  /** Reads into `p`; the count, or null at end of stream. */
  read(p: Uint8Array): Promise<number | null>;
  /** Writes from `p`; the count written. */
  write(p: Uint8Array): Promise<number>;
  /** Closes the connection; pending reads end or fail. */
  close(): void;
}

/**
 * What a body is for:
 * - `read`: its bytes are wanted; a body Go's reader refuses (short, badly
 *   chunked) is an error, as for the probe's `io.ReadAll`;
 * - `drop`: as Go's client does with a body nobody reads (a redirect's, a
 *   hook's): read and thrown away, errors ignored, and not read at all when
 *   its Content-Length is over the limit.
 */
export type BodyUse = "read" | "drop";

/** Options for {@link http1Get}. */
export interface Http1GetOptions {
  /** Path and query, starting with "/". */
  path: string;
  /** The Host header value. */
  host: string;
  /** Further header lines, in order (no Host, no Connection). */
  headers: readonly (readonly [string, string])[];
  /**
   * Whether the request's time is up; asked before every read. Closing the
   * connection at the deadline is not enough on its own: bytes already queued
   * (our TLS socket may queue megabytes at once) are read without a turn of the
   * event loop, so the timer that would close it cannot run until they are.
   */
  timeUp(): boolean;
}

/** Go's http.Transport default limit on response headers (all heads of one response). */
const MAX_HEADER_BYTES = 10 << 20;
/** The read buffer's largest size: a line at the header limit, and one read more. */
const MAX_BUFFER = MAX_HEADER_BYTES + (64 << 10);
/** Go's limit on a chunk-size line. */
const MAX_CHUNK_LINE = 4096;
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
  constructor(private conn: ByteStream, private timeUp: () => boolean) {}

  /** Reads more bytes into the buffer; false at end of stream. */
  async fill(): Promise<boolean> {
    if (this.eof) return false;
    if (this.timeUp()) throw new Http1Error("timed out");
    if (this.end === this.buf.length) {
      if (this.start > 0) {
        this.buf.copyWithin(0, this.start, this.end);
        this.end -= this.start;
        this.start = 0;
      } else {
        // Only a line grows the buffer, and no line is longer than the header limit.
        if (this.buf.length >= MAX_BUFFER) throw new Http1Error("line too long");
        const bigger = new Uint8Array(Math.min(this.buf.length * 2, MAX_BUFFER));
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

  /** One LF-terminated line (without its CRLF or LF), of at most `limit` bytes. */
  async line(limit = MAX_HEADER_BYTES): Promise<string> {
    // Bytes after `start` already searched: a long line arriving in small reads is
    // scanned once, not once per read.
    let scanned = 0;
    for (;;) {
      const i = this.buf.subarray(this.start + scanned, this.end).indexOf(10);
      if (i >= 0) {
        const lf = this.start + scanned + i;
        const line = latin1.decode(this.buf.subarray(this.start, lf));
        this.start = lf + 1;
        return line.endsWith("\r") ? line.slice(0, -1) : line;
      }
      scanned = this.end - this.start;
      if (scanned > limit) throw new Http1Error("line too long");
      if (!(await this.fill())) throw new Http1Error("unexpected EOF");
    }
  }

  /** The bytes already read and not consumed. */
  get buffered(): Uint8Array {
    return this.buf.subarray(this.start, this.end);
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
 * Sends one GET over `conn` and reads the answer's head. The caller opens and
 * closes the connection (closing it is how a read is cancelled).
 * @param conn a fresh connection to the server
 * @param o what and which headers
 * @returns the final (non-1xx) answer's status and Location, and its body to read
 * @throws {Http1Error} on a malformed response; the connection's errors as they are
 */
export async function http1Get(conn: ByteStream, o: Http1GetOptions): Promise<Http1Head> {
  let head = `GET ${o.path} HTTP/1.1\r\nHost: ${o.host}\r\n`;
  for (const [name, value] of o.headers) {
    if (/[\r\n]/.test(name + value)) {
      throw new Http1Error(`invalid header field value for ${JSON.stringify(name)}`);
    }
    head += `${name}: ${value}\r\n`;
  }
  head += "Connection: close\r\n\r\n";
  const bytes = encoder.encode(head);
  for (let written = 0; written < bytes.length;) {
    written += await conn.write(bytes.subarray(written));
  }
  const r = new Reader(conn, o.timeUp);
  const budget = { left: MAX_HEADER_BYTES };
  let answer: Head;
  // Informational (1xx) answers precede the real one; 101 ends it, as in Go's transport.
  do {
    answer = await readHead(r, budget);
  } while (answer.status >= 100 && answer.status < 200 && answer.status !== 101);
  const framing = bodyFraming(answer);
  return {
    status: answer.status,
    location: answer.headers.get("location")?.[0],
    async readBody(use, max) {
      const chunks: Uint8Array[] = [];
      if (use === "read") await readBody(r, framing, max, chunks);
      else if (typeof framing !== "number" || framing <= max) {
        // Go reads a dropped body only when its length is unknown or small enough.
        await readBody(r, framing, max, chunks).catch(() => {});
      }
      return concatBytes(chunks);
    },
  };
}

async function readBody(
  r: Reader,
  framing: "chunked" | "close" | number,
  max: number,
  chunks: Uint8Array[],
): Promise<void> {
  if (framing === "chunked") await readChunked(r, max, chunks);
  else if (framing === "close") await r.take(max, chunks);
  else {
    const want = Math.min(framing, max);
    if (await r.take(want, chunks) < want) throw new Http1Error("unexpected EOF");
  }
}

/** A response's status line and the header fields the client acts on. */
interface Head {
  status: number;
  /** HTTP/1.1 or later: Transfer-Encoding counts. */
  atLeast11: boolean;
  /** Lower-cased name → values in order, for the names in {@link KEPT_FIELDS} only. */
  headers: Map<string, string[]>;
}

/**
 * The header fields the client reads: the redirect's target and the body's framing.
 * Every other field is checked by Go's rules and dropped, so a head of millions of
 * short fields (10 MiB is allowed) costs its bytes in flight, not an object each.
 */
const KEPT_FIELDS = new Set(["location", "transfer-encoding", "content-length"]);
/** Go's token characters, the bytes a header name may have. */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z ]+$/;
/** Whether a header value has a byte Go refuses: a control other than tab, or DEL. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

async function readHead(r: Reader, budget: { left: number }): Promise<Head> {
  const line = async () => {
    const l = await r.line(budget.left);
    budget.left -= l.length + 2;
    if (budget.left < 0) {
      throw new Http1Error(`server response headers exceeded ${MAX_HEADER_BYTES} bytes; aborted`);
    }
    return l;
  };
  const statusLine = await line();
  const space = statusLine.indexOf(" ");
  if (space < 0) throw new Http1Error(`malformed HTTP response ${JSON.stringify(statusLine)}`);
  const proto = statusLine.slice(0, space);
  const code = statusLine.slice(space + 1).replace(/^ +/, "").split(" ")[0]!;
  // strconv.Atoi: an optional sign, then digits.
  if (code.length !== 3 || !/^[+-]?\d+$/.test(code) || Number(code) < 0) {
    throw new Http1Error(`malformed HTTP status code ${JSON.stringify(code)}`);
  }
  const version = /^HTTP\/(\d)\.(\d)$/.exec(proto);
  if (!version) throw new Http1Error(`malformed HTTP version ${JSON.stringify(proto)}`);
  const [major, minor] = [Number(version[1]), Number(version[2])];

  // Header lines, each field checked as soon as it is whole (as Go's readMIMEHeader);
  // a line starting with a space or tab continues the one before.
  const headers = new Map<string, string[]>();
  let field: string | undefined;
  for (;;) {
    const l = await line();
    if (/^[ \t]/.test(l)) {
      if (field === undefined) {
        throw new Http1Error(`malformed MIME header initial line: ${JSON.stringify(l)}`);
      }
      field += ` ${l.replace(/^[ \t]+|[ \t]+$/g, "")}`;
      continue;
    }
    if (field !== undefined) addField(headers, field);
    if (l === "") break;
    field = l.replace(/[ \t]+$/, "");
  }
  return { status: Number(code), atLeast11: major > 1 || (major === 1 && minor >= 1), headers };
}

/** Checks one header field (continuations joined) and keeps it when the client reads it. */
function addField(headers: Map<string, string[]>, field: string): void {
  const colon = field.indexOf(":");
  if (colon < 0) {
    throw new Http1Error(`malformed MIME header: missing colon: ${JSON.stringify(field)}`);
  }
  const name = field.slice(0, colon);
  const value = field.slice(colon + 1);
  if (!FIELD_NAME.test(name) || hasControl(value)) {
    throw new Http1Error(`malformed MIME header line: ${JSON.stringify(field)}`);
  }
  const key = name.toLowerCase();
  if (!KEPT_FIELDS.has(key)) return;
  // Of Location only the first is read; every Content-Length and Transfer-Encoding
  // counts, and Go's errors about them name them all.
  if (key === "location" && headers.has(key)) return;
  const values = headers.get(key) ?? [];
  values.push(value.replace(/^[ \t]+/, ""));
  headers.set(key, values);
}

/**
 * How the body is delimited, by Go's rules for a response: Transfer-Encoding (from
 * HTTP/1.1 on) only as exactly "chunked", Content-Length only as one decimal value (a
 * repeated one must repeat the same), nothing after 1xx, 204 and 304, else until close.
 * @returns "chunked", the length, or "close"
 * @throws {Http1Error} on a transfer coding or length Go refuses
 */
function bodyFraming(head: Head): "chunked" | "close" | number {
  const te = head.headers.get("transfer-encoding");
  let chunked = false;
  if (te && head.atLeast11) {
    if (te.length !== 1) throw new Http1Error(`too many transfer encodings: ${JSON.stringify(te)}`);
    if (te[0]!.toLowerCase() !== "chunked") {
      throw new Http1Error(`unsupported transfer encoding: ${JSON.stringify(te[0])}`);
    }
    chunked = true;
  }
  let length: number | undefined;
  const lengths = head.headers.get("content-length");
  if (lengths) {
    const first = lengths[0]!.trim();
    if (lengths.some((l) => l.trim() !== first)) {
      throw new Http1Error(
        `http: message cannot contain multiple Content-Length headers; got ${
          JSON.stringify(lengths)
        }`,
      );
    }
    if (!/^\d+$/.test(first) || BigInt(first) >= 1n << 63n) {
      throw new Http1Error(`bad Content-Length ${JSON.stringify(first)}`);
    }
    length = Number(first);
  }
  if ((head.status >= 100 && head.status < 200) || head.status === 204 || head.status === 304) {
    return 0;
  }
  if (chunked) return "chunked";
  return length ?? "close";
}

/** One chunk-size line, as Go's chunked reader takes it. */
async function chunkSize(r: Reader): Promise<number> {
  const line = await r.line(MAX_CHUNK_LINE);
  const size = line.split(";")[0]!.replace(/[ \t]+$/, "");
  if (!/^[0-9a-fA-F]{1,15}$/.test(size)) {
    throw new Http1Error(`malformed chunked encoding: chunk size ${JSON.stringify(size)}`);
  }
  return parseInt(size, 16);
}

async function crlf(r: Reader): Promise<void> {
  const got: Uint8Array[] = [];
  if (await r.take(2, got) < 2) throw new Http1Error("unexpected EOF");
  const bytes = concatBytes(got);
  if (bytes[0] !== 13 || bytes[1] !== 10) throw new Http1Error("malformed chunked encoding");
}

async function readChunked(r: Reader, max: number, chunks: Uint8Array[]): Promise<void> {
  let got = 0;
  for (;;) {
    const size = await chunkSize(r);
    if (size === 0) {
      // The trailer, to its blank line.
      while ((await r.line()) !== "");
      return;
    }
    const want = Math.min(size, max - got);
    const n = await r.take(want, chunks);
    got += n;
    if (n < want) throw new Http1Error("unexpected EOF");
    if (want < size) return; // enough for the output
    if (got >= max) {
      // Go's reader checks what it already holds past the last byte it hands out.
      const rest = r.buffered;
      if (rest.length >= 2 && (rest[0] !== 13 || rest[1] !== 10)) {
        throw new Http1Error("malformed chunked encoding");
      }
      return;
    }
    await crlf(r);
  }
}
