/**
 * What the HTTP fuzz tests share: a raw HTTP/1.1 exchange over a TCP or TLS socket (the
 * request exactly as given, bytes nobody's client would send), and readings of an agent
 * process (RSS, open file descriptors) or of this one (live memory) to show memory stays
 * bounded.
 *
 * @module
 */

import v8 from "node:v8";
import vm from "node:vm";

const latin1 = new TextDecoder("latin1");

/** What came back on a raw exchange. */
export interface RawAnswer {
  /** The status code, or undefined when the server closed (or went quiet) without one. */
  status: number | undefined;
  /** The status line and headers, as received (latin-1). */
  head: string;
  /** The start of the body (what arrived with the head). */
  body: string;
  /** Why there is no status: "closed", "timeout" or the socket's error. */
  error?: string;
}

/** Where a raw request goes. */
export interface RawTarget {
  port: number;
  /** Over TLS, trusting `caCerts`, presenting `cert`/`key` when given. */
  tls?: { caCerts: string[]; cert?: string; key?: string };
}

/**
 * Opens a connection to 127.0.0.1.
 * @param target port and TLS settings
 * @returns the connection
 */
export async function connectRaw(target: RawTarget): Promise<Deno.Conn> {
  if (!target.tls) return await Deno.connect({ hostname: "127.0.0.1", port: target.port });
  const { caCerts, cert, key } = target.tls;
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: target.port,
    caCerts,
    ...(cert && key ? { cert, key } : {}),
  });
  await conn.handshake();
  return conn;
}

/**
 * Sends `request` as it is and reads until the end of the response head.
 * @param target where to send it
 * @param request the bytes of the request
 * @param timeoutMs how long the server may take to answer
 * @returns the status and head, or why there is none
 */
export async function rawExchange(
  target: RawTarget,
  request: Uint8Array,
  timeoutMs = 10_000,
): Promise<RawAnswer> {
  let conn: Deno.Conn;
  try {
    conn = await connectRaw(target);
  } catch (err) {
    return { status: undefined, head: "", body: "", error: `connect: ${(err as Error).message}` };
  }
  const timer = setTimeout(() => {
    try {
      conn.close();
    } catch { /* closed */ }
  }, timeoutMs);
  const started = Date.now();
  let received = new Uint8Array(0);
  let error: string | undefined;
  try {
    // The server may answer (and close) before all of a huge request is written.
    const writing = (async () => {
      for (let at = 0; at < request.length;) at += await conn.write(request.subarray(at));
    })().catch(() => {});
    const buf = new Uint8Array(16 * 1024);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      const next = new Uint8Array(received.length + n);
      next.set(received);
      next.set(buf.subarray(0, n), received.length);
      received = next;
      if (latin1.decode(received).includes("\r\n\r\n")) break;
    }
    await Promise.race([writing, new Promise((r) => setTimeout(r, 0))]);
  } catch (err) {
    error = Date.now() - started >= timeoutMs ? "timeout" : (err as Error).message;
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
  const text = latin1.decode(received);
  const end = text.indexOf("\r\n\r\n");
  const head = end < 0 ? text : text.slice(0, end);
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  return {
    status: m ? Number(m[1]) : undefined,
    head,
    body: end < 0 ? "" : text.slice(end + 4),
    ...(m ? {} : { error: error ?? (received.length ? "no status line" : "closed") }),
  };
}

/**
 * A process's resident set, from /proc/<pid>/status.
 * @param pid the process
 * @returns VmRSS in bytes
 * @throws Error when the process is gone
 */
export async function rssBytes(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

let collect: (() => void) | undefined;

/**
 * This process's live memory: the JS heap in use and the buffers outside it, after a
 * full garbage collection, so that garbage V8 has not yet collected (and the room it
 * keeps to grow into) does not count. The collector is reached through node:v8 and
 * node:vm, so no `--v8-flags=--expose-gc` is needed.
 * @returns heapUsed + external in bytes
 */
export function liveBytes(): number {
  if (!collect) {
    v8.setFlagsFromString("--expose-gc");
    collect = vm.runInNewContext("gc") as () => void;
  }
  collect();
  const { heapUsed, external } = Deno.memoryUsage();
  return heapUsed + external;
}

/**
 * How many file descriptors a process has open.
 * @param pid the process
 * @returns the count of /proc/<pid>/fd entries
 */
export async function openFds(pid: number): Promise<number> {
  let n = 0;
  for await (const _ of Deno.readDir(`/proc/${pid}/fd`)) n++;
  return n;
}

/**
 * A process's TCP connections to a port: its sockets (by inode, from /proc/<pid>/fd)
 * that /proc/<pid>/net/tcp and tcp6 list with that remote port, listeners and
 * TIME_WAIT left out. Tells a client's connections apart from the server's ends of
 * them when both live in one process.
 * @param pid the process
 * @param port the remote port
 * @returns how many are open
 */
export async function connectionsTo(pid: number, port: number): Promise<number> {
  const inodes = new Set<string>();
  for await (const e of Deno.readDir(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(await Deno.readLink(`/proc/${pid}/fd/${e.name}`));
      if (m) inodes.add(m[1]!);
    } catch { /* closed meanwhile */ }
  }
  let n = 0;
  for (const table of ["tcp", "tcp6"]) {
    const lines = (await Deno.readTextFile(`/proc/${pid}/net/${table}`)).split("\n").slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      // local_address rem_address st ... inode (the tenth field)
      const remPort = parseInt(f[2]?.split(":")[1] ?? "", 16);
      if (remPort === port && f[3] !== "0A" && inodes.has(f[9] ?? "")) n++;
    }
  }
  return n;
}

/**
 * A process's open file descriptors by kind ("socket", "anon_inode:[eventfd]", a file's
 * directory), to say what a growing count is.
 * @param pid the process
 * @returns kind → count
 */
export async function fdKinds(pid: number): Promise<Record<string, number>> {
  const kinds: Record<string, number> = {};
  for await (const e of Deno.readDir(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = await Deno.readLink(`/proc/${pid}/fd/${e.name}`);
    } catch {
      continue;
    }
    const kind = target.replace(/:\[\d+\]$/, "").replace(/\/[^/]*$/, "/");
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

/** A fast-check failure in a line or two: the counterexample and what was wrong. */
export function propertyFailure(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const lines = e.message.split("\n");
  const example = lines.find((l) => l.startsWith("Counterexample:")) ?? lines[0]!;
  const cause = e.cause instanceof Error
    ? e.cause.message
    : lines.find((l) => l.startsWith("seed "));
  return `${cause ?? e.message}\n${example.slice(0, 1000)}`;
}
