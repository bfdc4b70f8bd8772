/**
 * A fault-injecting proxy on a CRI socket: the agent's `--container-runtime-endpoint`
 * points at it, it points at the test's containerd, and in between it forwards bytes
 * (one pair of unix connections per agent connection) while it delays, stalls or
 * resets them, as a slow or flaky runtime would.
 *
 * It does not decode gRPC. It only follows the HTTP/2 frame headers the agent sends
 * ({@link FrameScanner}), so it knows when a chunk opens a new call (a HEADERS frame on
 * a stream it has not seen): that is the moment a reset hurts most, after the runtime
 * got a call and before its answer reached the agent.
 *
 * ```
 *   agent ──unix──► proxy socket ── per chunk: decide(mode) ──► containerd socket
 *                                   pass | delay n ms | stall the connection n ms
 *                                   | reset (before or after forwarding the chunk)
 * ```
 *
 * Modes switch at run time ({@link CriProxy.setMode}); {@link CriProxy.stall} and
 * {@link CriProxy.resetAll} are one-shot faults. Every random choice comes from the
 * seeded generator the proxy was given, so a run replays from its seed (as far as the
 * moments chunks arrive at allow).
 *
 * @module
 */

/** The client connection preface of HTTP/2 (RFC 9113 §3.4), before the first frame. */
export const CLIENT_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/** HTTP/2 frame types this proxy looks at (RFC 9113 §6). */
export const FrameType = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, GOAWAY: 7 } as const;

/** An HTTP/2 frame header (RFC 9113 §4.1); the payload is not kept. */
export interface FrameHeader {
  length: number;
  type: number;
  flags: number;
  streamId: number;
}

/**
 * Follows the frame headers in one direction of an HTTP/2 connection, across chunks
 * split anywhere (inside the preface, a header or a payload).
 */
export class FrameScanner {
  #preface: number;
  #header = new Uint8Array(9);
  #headerFill = 0;
  #skip = 0;

  /** @param opts `client: true` for the agent's direction, which starts with the preface */
  constructor(opts: { client: boolean }) {
    this.#preface = opts.client ? CLIENT_PREFACE.length : 0;
  }

  /**
   * Reads one chunk.
   * @param chunk the bytes, in order after the previous chunk
   * @returns the headers of the frames that begin (their header completes) in this chunk
   */
  push(chunk: Uint8Array): FrameHeader[] {
    const frames: FrameHeader[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.#preface > 0) {
        const n = Math.min(this.#preface, chunk.length - i);
        this.#preface -= n;
        i += n;
      } else if (this.#skip > 0) {
        const n = Math.min(this.#skip, chunk.length - i);
        this.#skip -= n;
        i += n;
      } else {
        const n = Math.min(9 - this.#headerFill, chunk.length - i);
        this.#header.set(chunk.subarray(i, i + n), this.#headerFill);
        this.#headerFill += n;
        i += n;
        if (this.#headerFill === 9) {
          const h = this.#header;
          const frame = {
            length: (h[0]! << 16) | (h[1]! << 8) | h[2]!,
            type: h[3]!,
            flags: h[4]!,
            streamId: ((h[5]! & 0x7f) << 24 | h[6]! << 16 | h[7]! << 8 | h[8]!) >>> 0,
          };
          frames.push(frame);
          this.#skip = frame.length;
          this.#headerFill = 0;
        }
      }
    }
    return frames;
  }
}

/**
 * What the proxy does, switchable at run time:
 * - `pass`: forward every byte at once;
 * - `delay`: hold each chunk (either direction) a random time in [minMs, maxMs];
 * - `stall`: each new call, with `probability`, holds its whole connection `ms`;
 * - `reset`: each new call, with `probability`, destroys its connection, before or
 *   (as likely) just after the call reaches the runtime.
 */
export type FaultMode =
  | { kind: "pass" }
  | { kind: "delay"; minMs: number; maxMs: number }
  | { kind: "stall"; probability: number; ms: number }
  | { kind: "reset"; probability: number };

/** What to do with one chunk. */
export type ChunkAction =
  | { kind: "forward"; delayMs: number }
  | { kind: "stall"; ms: number }
  /** `afterMs`: when the chunk is forwarded first, how long the runtime has it before the reset. */
  | { kind: "reset"; forwardFirst: boolean; afterMs: number };

/**
 * Decides a chunk's fate. Pure but for `random`; draws nothing in `pass` mode, and in
 * `stall`/`reset` only for chunks that open calls, so a quiet connection does not move
 * the generator.
 * @param mode the proxy's current mode
 * @param chunk `fromAgent` for the agent's direction; `newCalls` is how many calls the
 *   chunk opens (HEADERS frames on new streams)
 * @param random the seeded generator
 * @returns the action
 */
export function decide(
  mode: FaultMode,
  chunk: { fromAgent: boolean; newCalls: number },
  random: () => number,
): ChunkAction {
  switch (mode.kind) {
    case "pass":
      return { kind: "forward", delayMs: 0 };
    case "delay":
      return {
        kind: "forward",
        delayMs: Math.round(mode.minMs + random() * (mode.maxMs - mode.minMs)),
      };
    case "stall":
    case "reset": {
      if (!chunk.fromAgent || chunk.newCalls === 0) return { kind: "forward", delayMs: 0 };
      // One draw per call the chunk opens: the chance is per call, not per chunk.
      let hit = false;
      for (let i = 0; i < chunk.newCalls; i++) hit = random() < mode.probability || hit;
      if (!hit) return { kind: "forward", delayMs: 0 };
      return mode.kind === "stall"
        ? { kind: "stall", ms: mode.ms }
        : random() < 0.5
        ? { kind: "reset", forwardFirst: false, afterMs: 0 }
        : { kind: "reset", forwardFirst: true, afterMs: Math.round(random() * 50) };
    }
  }
}

/** What the proxy did so far. */
export interface ProxyCounts {
  /** Agent connections accepted. */
  connections: number;
  /** Calls seen (HEADERS frames opening a stream, from the agent). */
  calls: number;
  /** Chunks held by the delay mode. */
  delayed: number;
  /** Connections stalled (by the mode or {@link CriProxy.stall}). */
  stalls: number;
  /** Connections destroyed (by the mode or {@link CriProxy.resetAll}). */
  resets: number;
}

/** A running proxy. */
export interface CriProxy {
  /** The endpoint to hand the agent: `unix:///…/cri-proxy.sock`. */
  endpoint: string;
  setMode(mode: FaultMode): void;
  mode(): FaultMode;
  /**
   * Holds every open connection's traffic, both ways, for `ms` from now.
   * @returns how many connections were stalled
   */
  stall(ms: number): number;
  /**
   * Destroys every open connection now.
   * @returns how many were destroyed
   */
  resetAll(): number;
  counts(): ProxyCounts;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Options for {@link startCriProxy}. */
export interface CriProxyOptions {
  /** The socket to listen on (a path; removed first if present). */
  path: string;
  /** The runtime's endpoint, `unix:///…` or a path. */
  upstream: string;
  /** The seeded generator every fault is drawn from. */
  random: () => number;
  /** The starting mode (default pass). */
  mode?: FaultMode;
}

interface Link {
  agent: Deno.UnixConn;
  runtime: Deno.UnixConn;
  /** No byte moves either way before this (epoch ms). */
  holdUntil: number;
  closed: boolean;
  seenStreams: Set<number>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/**
 * Starts a proxy listening on `opts.path`.
 * @param opts the two sockets, the generator and the first mode
 * @returns the proxy
 */
export async function startCriProxy(opts: CriProxyOptions): Promise<CriProxy> {
  const upstreamPath = opts.upstream.replace(/^unix:\/\//, "");
  await Deno.remove(opts.path).catch(() => {});
  const listener = Deno.listen({ transport: "unix", path: opts.path });
  let mode: FaultMode = opts.mode ?? { kind: "pass" };
  const links = new Set<Link>();
  const counts: ProxyCounts = { connections: 0, calls: 0, delayed: 0, stalls: 0, resets: 0 };
  const pumps = new Set<Promise<void>>();

  const destroy = (link: Link) => {
    if (link.closed) return;
    link.closed = true;
    links.delete(link);
    for (const c of [link.agent, link.runtime]) {
      try {
        c.close();
      } catch {
        // already closed
      }
    }
  };

  const stallLink = (link: Link, ms: number) => {
    link.holdUntil = Math.max(link.holdUntil, Date.now() + ms);
    counts.stalls++;
  };

  /** Moves one direction's bytes until either side closes. */
  const pump = async (link: Link, fromAgent: boolean) => {
    const [src, dst] = fromAgent ? [link.agent, link.runtime] : [link.runtime, link.agent];
    const scanner = new FrameScanner({ client: fromAgent });
    try {
      for (;;) {
        const buf = new Uint8Array(64 * 1024);
        const n = await src.read(buf);
        if (n === null || link.closed) break;
        const chunk = buf.subarray(0, n);
        let newCalls = 0;
        for (const f of scanner.push(chunk)) {
          if (fromAgent && f.type === FrameType.HEADERS && !link.seenStreams.has(f.streamId)) {
            link.seenStreams.add(f.streamId);
            newCalls++;
          }
        }
        counts.calls += newCalls;
        const action = decide(mode, { fromAgent, newCalls }, opts.random);
        if (action.kind === "reset") {
          if (action.forwardFirst) {
            await writeAll(dst, chunk);
            await sleep(action.afterMs);
          }
          counts.resets++;
          destroy(link);
          break;
        }
        if (action.kind === "stall") stallLink(link, action.ms);
        if (action.kind === "forward" && action.delayMs > 0) {
          counts.delayed++;
          await sleep(action.delayMs);
        }
        while (!link.closed && Date.now() < link.holdUntil) {
          await sleep(link.holdUntil - Date.now());
        }
        if (link.closed) break;
        await writeAll(dst, chunk);
      }
    } catch {
      // A reset (ours or a side's) ends both directions.
    }
    destroy(link);
  };

  const accept = async () => {
    for await (const agent of listener) {
      let runtime: Deno.UnixConn;
      try {
        runtime = await Deno.connect({ transport: "unix", path: upstreamPath });
      } catch {
        // The runtime is down: the agent sees its connection refused, as it would.
        agent.close();
        continue;
      }
      counts.connections++;
      const link: Link = { agent, runtime, holdUntil: 0, closed: false, seenStreams: new Set() };
      links.add(link);
      for (const fromAgent of [true, false]) {
        const p = pump(link, fromAgent);
        pumps.add(p);
        void p.finally(() => pumps.delete(p));
      }
    }
  };
  const accepting = accept().catch(() => {});

  return {
    endpoint: `unix://${opts.path}`,
    setMode(m) {
      mode = m;
    },
    mode: () => mode,
    stall(ms) {
      for (const link of links) stallLink(link, ms);
      return links.size;
    },
    resetAll() {
      const n = links.size;
      for (const link of [...links]) destroy(link);
      counts.resets += n;
      return n;
    },
    counts: () => ({ ...counts }),
    async close() {
      listener.close();
      await accepting;
      for (const link of [...links]) destroy(link);
      await Promise.all([...pumps]);
      await Deno.remove(opts.path).catch(() => {});
    },
  };
}

/** One step of a fault schedule: a mode held for a while, or a one-shot fault. */
export type FaultStep =
  | { kind: "mode"; mode: FaultMode; forMs: number }
  | { kind: "stall"; ms: number }
  | { kind: "resetAll" };

function shuffled<T>(xs: T[], random: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The longest stall: one slow call, well under PLEG's 3 min and the runtime's 30 s. */
export const MAX_STALL_MS = 5000;

/**
 * A seeded schedule of faults filling `durationMs`: pauses in pass mode between windows
 * of delays, stalls or resets, and one-shot stalls and resets of every connection.
 * @param random the seeded generator
 * @param durationMs how long the faults go on, pauses included
 * @returns the steps in order (pass windows included)
 */
export function faultSchedule(random: () => number, durationMs: number): FaultStep[] {
  const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));
  const steps: FaultStep[] = [];
  let total = 0;
  const hold = (mode: FaultMode, forMs: number) => {
    steps.push({ kind: "mode", mode, forMs });
    total += forMs;
  };
  // Every kind by turns, in a fresh random order each turn, so a short run has them all.
  let turn: number[] = [];
  while (total < durationMs) {
    if (turn.length === 0) turn = shuffled([0, 1, 2, 3, 4], random);
    hold({ kind: "pass" }, between(500, 2500));
    const window = between(2000, 6000);
    switch (turn.shift()) {
      case 0:
        hold({ kind: "delay", minMs: 0, maxMs: between(20, 300) }, window);
        break;
      case 1:
        hold({ kind: "stall", probability: between(5, 20) / 100, ms: between(500, 3000) }, window);
        break;
      case 2:
        hold({ kind: "reset", probability: between(5, 20) / 100 }, window);
        break;
      case 3:
        steps.push({ kind: "stall", ms: between(1000, MAX_STALL_MS) });
        break;
      default:
        steps.push({ kind: "resetAll" });
    }
  }
  return steps;
}

/** What {@link runFaultSchedule} injected, by kind. */
export interface ScheduleFigures {
  delayWindows: number;
  stallWindows: number;
  resetWindows: number;
  oneShotStalls: number;
  oneShotResets: number;
}

/**
 * Plays a schedule on a proxy, in real time, and leaves it in pass mode.
 * @param proxy the proxy
 * @param steps from {@link faultSchedule}
 * @returns how many faults of each kind were injected
 */
export async function runFaultSchedule(
  proxy: CriProxy,
  steps: readonly FaultStep[],
): Promise<ScheduleFigures> {
  const figures: ScheduleFigures = {
    delayWindows: 0,
    stallWindows: 0,
    resetWindows: 0,
    oneShotStalls: 0,
    oneShotResets: 0,
  };
  for (const step of steps) {
    if (step.kind === "stall") {
      proxy.stall(step.ms);
      figures.oneShotStalls++;
    } else if (step.kind === "resetAll") {
      proxy.resetAll();
      figures.oneShotResets++;
    } else {
      proxy.setMode(step.mode);
      if (step.mode.kind !== "pass") figures[`${step.mode.kind}Windows`]++;
      // The window's length is the fault itself.
      await sleep(step.forMs);
    }
  }
  proxy.setMode({ kind: "pass" });
  return figures;
}
