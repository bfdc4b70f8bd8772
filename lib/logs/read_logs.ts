/**
 * Reads a container's CRI log file into a byte stream, as upstream's
 * pkg/kubelet/kuberuntime/logs ReadLogs: tail, byte limit, since and
 * timestamps, and `follow`, which waits for new records until the container
 * stops and the file is drained, and moves on to the new file when the log is
 * rotated.
 *
 * @module
 */

import { type Clock, realClock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { CriLineParser, tailStartOffset } from "./cri_format.ts";
import type { LogReadOptions } from "./log_options.ts";
import { statOrUndefined } from "../util/fs.ts";

/** Upstream's logForceCheckPeriod: a follow re-reads at least this often, events or not. */
const FORCE_CHECK_MS = 1000;
/**
 * Output is handed on once a read gave at least this much, so a large log is
 * not one write per line.
 */
const BATCH_BYTES = 64 * 1024;
/**
 * The file is read this much at a time at first, and up to MAX_READ_BYTES
 * while reads keep filling the buffer (a backlog): each write costs the TLS
 * server more than its bytes, so a 100 MB log goes out in large writes, while
 * a follow that waits for new lines keeps small buffers. 1 MiB pieces cost
 * less CPU still, but held ~20 MB more RSS while a 146 MB log streamed.
 */
const MIN_READ_BYTES = 64 * 1024;
const MAX_READ_BYTES = 512 * 1024;
/** Pieces up to this long are copied in a loop, not through a view (see Output). */
const SHORT_COPY = 256;
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

/** Options for {@link openContainerLog}. */
export interface OpenContainerLogOptions {
  /** The log file (CRI ContainerStatus logPath). */
  path: string;
  /** What to read. */
  options: LogReadOptions;
  /**
   * Whether the container still runs (upstream asks CRI ContainerStatus);
   * a follow ends at the end of the file once this says no.
   */
  isRunning(signal: AbortSignal): Promise<boolean>;
  /** Ends the stream (a follow too) when aborted, e.g. the request's signal when the client goes away. */
  signal?: AbortSignal;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Opens a container's log and returns its selected content as a stream.
 * The file is opened before this returns, so a missing file is an error
 * here, not a broken stream. Cancelling the stream closes the file and the
 * watcher and ends any wait.
 * @param o the file, options and the running check
 * @returns the stream of log bytes
 * @throws Error naming the file when it cannot be opened
 */
export async function openContainerLog(
  o: OpenContainerLogOptions,
): Promise<ReadableStream<Uint8Array>> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(o.path, { read: true });
  } catch (err) {
    throw new Error(`failed to open log file "${o.path}": ${(err as Error).message}`, {
      cause: err,
    });
  }
  let start: number;
  try {
    start = await tailStartOffset(file, o.options.tail);
    await file.seek(start, Deno.SeekMode.Start);
  } catch (err) {
    file.close();
    throw new Error(`failed to read log file "${o.path}": ${(err as Error).message}`, {
      cause: err,
    });
  }
  const abort = new AbortController();
  const stop = () => abort.abort();
  if (o.signal?.aborted) stop();
  o.signal?.addEventListener("abort", stop, { once: true });
  const chunks = readRecords(o, file, abort.signal);
  const done = () => o.signal?.removeEventListener("abort", stop);
  // After cancel() the stream is closed: a pull still in flight must not touch it.
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (cancelled) return;
        if (next.done) {
          done();
          controller.close();
        } else controller.enqueue(next.value);
      } catch (err) {
        done();
        if (cancelled) return;
        (o.logger ?? silentLogger).error("Failed to read container log", err, { path: o.path });
        controller.error(err);
      }
    },
    async cancel() {
      cancelled = true;
      done();
      abort.abort();
      await chunks.return(undefined);
    },
  }, { highWaterMark: 0 });
}

/**
 * The output of one request: the byte limit, and batches built in one
 * buffer, so each byte is copied once on its way out.
 */
class Output {
  #buf = new Uint8Array(MIN_READ_BYTES);
  #size = 0;
  /** What a fresh batch buffer holds: one read's content, the read buffer's size. */
  capacity = MIN_READ_BYTES;
  #remain: number;
  #timestamps: boolean;

  constructor(opts: LogReadOptions) {
    this.#remain = opts.bytes < 0 ? Infinity : opts.bytes;
    this.#timestamps = opts.timestamps;
  }

  get size(): number {
    return this.#size;
  }

  /** Adds one record's output, `src[start, end)`; false when the byte limit is reached. */
  write(
    src: Uint8Array,
    start: number,
    end: number,
    timestamp: string,
    atLineStart: boolean,
  ): boolean {
    if (this.#timestamps && atLineStart) {
      const ts = encoder.encode(`${timestamp} `);
      this.#push(ts, 0, ts.length);
    }
    this.#push(src, start, end);
    return this.#remain > 0;
  }

  #push(src: Uint8Array, start: number, end: number) {
    const n = Math.min(end - start, this.#remain);
    if (n <= 0) return;
    if (this.#size + n > this.#buf.length) {
      const bigger = new Uint8Array(Math.max(this.#buf.length * 2, this.#size + n));
      bigger.set(this.#buf.subarray(0, this.#size));
      this.#buf = bigger;
    }
    const buf = this.#buf;
    const at = this.#size;
    // A short piece is copied byte by byte: a view for set() would cost more
    // than the copy, and one per line is garbage a large log makes millions of.
    if (n <= SHORT_COPY) { for (let i = 0; i < n; i++) buf[at + i] = src[start + i]!; }
    else buf.set(src.subarray(start, start + n), at);
    this.#size += n;
    this.#remain -= n;
  }

  /** The batch so far; the next batch starts in a fresh buffer (the consumer owns this one). */
  take(): Uint8Array {
    const out = this.#buf.subarray(0, this.#size);
    this.#buf = new Uint8Array(this.capacity);
    this.#size = 0;
    return out;
  }
}

/** Wakes a follow when anything in the log's directory changes. */
class DirWatch {
  #watcher: Deno.FsWatcher;
  #iter: AsyncIterator<Deno.FsEvent>;
  #pending: Promise<unknown> | undefined;

  constructor(dir: string) {
    this.#watcher = Deno.watchFs(dir, { recursive: false });
    this.#iter = this.#watcher[Symbol.asyncIterator]();
  }

  /** Resolves at the next event (one pending read is kept across calls). */
  next(): Promise<unknown> {
    this.#pending ??= this.#iter.next().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  close() {
    try {
      this.#watcher.close();
    } catch { /* already closed */ }
  }
}

async function* readRecords(
  o: OpenContainerLogOptions,
  first: Deno.FsFile,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array, void, undefined> {
  const opts = o.options;
  const clock = o.clock ?? realClock;
  const logger = o.logger ?? silentLogger;
  const out = new Output(opts);
  const parser = new CriLineParser({ timestamps: opts.timestamps });
  const limited = opts.tail >= 0 && !opts.follow;
  let linesLeft = opts.tail;
  let atLineStart = true;
  let running = true;
  let file = first;
  let ino = (await file.stat()).ino;
  let watch: DirWatch | undefined;
  /** The log's new file after a rotation, read once the old one is drained. */
  let next: { file: Deno.FsFile; ino: number | null } | undefined;
  // buf[0, carry) holds the start of a line whose end is not read yet.
  let buf = new Uint8Array(MIN_READ_BYTES);
  let carry = 0;

  /** The line buf[start, end) of the file; false when the output is complete. */
  const line = (buf: Uint8Array, start: number, end: number): boolean => {
    if (limited && linesLeft <= 0) return false;
    const err = parser.scan(buf, start, end);
    if (err !== undefined) {
      logger.warn("Failed when parsing line in log file", { path: o.path, err });
      return true;
    }
    const rec = parser.line;
    if (
      rec.timeMs >= opts.sinceMs &&
      !out.write(buf, rec.contentStart, rec.contentEnd, rec.timestamp, atLineStart)
    ) {
      return false;
    }
    if (limited) linesLeft--;
    atLineStart = rec.contentEnd === rec.contentStart || buf[rec.contentEnd - 1] === NEWLINE;
    return !(limited && linesLeft <= 0);
  };

  try {
    if (limited && linesLeft === 0) return;
    for (;;) {
      if (signal.aborted) return;
      if (carry === buf.length) {
        const bigger = new Uint8Array(buf.length * 2);
        bigger.set(buf);
        buf = bigger;
      }
      const n = await file.read(buf.subarray(carry));
      if (n === null) {
        if (!opts.follow) {
          // The last line has no newline: upstream writes it as it is.
          if (carry > 0) line(buf, 0, carry);
          if (out.size > 0) yield out.take();
          return;
        }
        if (out.size > 0) yield out.take();
        if (next) {
          // The old file is drained now: go on with the new one.
          file.close();
          ({ file, ino } = next);
          next = undefined;
          carry = 0;
          continue;
        }
        if (!running) return;
        if (!watch) {
          // A write between our last read and the watch would be missed: read once more.
          watch = new DirWatch(dirname(o.path));
          continue;
        }
        try {
          running = await waitForChange(o, watch, clock, signal);
        } catch (err) {
          // A CRI call the client's departure cut short is no failure.
          if (signal.aborted) return;
          throw err;
        }
        if (signal.aborted) return;
        // A rotation renamed our file away and the runtime made a new one. The
        // runtime may still have written to the old one after our last read
        // (until its reopen took effect): read it to its end before moving on.
        const now = await statOrUndefined(o.path);
        if (now && now.ino !== ino) {
          const opened = await Deno.open(o.path, { read: true }).catch(() => undefined);
          if (opened) next = { file: opened, ino: now.ino };
        }
        continue;
      }
      const filled = carry + n;
      const from = eachLine(buf, filled, line);
      if (from < 0) {
        if (out.size > 0) yield out.take();
        return;
      }
      buf.copyWithin(0, from, filled);
      carry = filled - from;
      if (filled === buf.length && buf.length < MAX_READ_BYTES) {
        // The read filled the buffer: there is a backlog, read it in larger pieces.
        const bigger = new Uint8Array(buf.length * 2);
        bigger.set(buf.subarray(0, carry));
        buf = bigger;
        out.capacity = bigger.length;
      }
      if (out.size >= BATCH_BYTES) yield out.take();
    }
  } finally {
    watch?.close();
    next?.file.close();
    file.close();
  }
}

/**
 * Hands each complete line of `buf[0, filled)` to `line`. A plain function,
 * not part of the generator, so that V8 optimizes this loop (it runs for
 * every line of a large log) as it does any hot function.
 * @returns where the unfinished last line starts, or -1 once `line` said the output is complete
 */
function eachLine(
  buf: Uint8Array,
  filled: number,
  line: (buf: Uint8Array, start: number, end: number) => boolean,
): number {
  let from = 0;
  for (let nl = buf.indexOf(NEWLINE); nl >= 0 && nl < filled; nl = buf.indexOf(NEWLINE, from)) {
    if (!line(buf, from, nl + 1)) return -1;
    from = nl + 1;
  }
  return from;
}

/**
 * Waits for a change in the log's directory or upstream's force-check period,
 * after checking that the container still runs.
 * @returns false when the container no longer runs
 */
async function waitForChange(
  o: OpenContainerLogOptions,
  watch: DirWatch,
  clock: Clock,
  signal: AbortSignal,
): Promise<boolean> {
  if (!await o.isRunning(signal)) return false;
  const timer = new AbortController();
  const aborted = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true, signal: timer.signal });
  });
  try {
    await Promise.race([
      watch.next(),
      clock.sleep(FORCE_CHECK_MS, timer.signal).catch(() => {}),
      aborted,
    ]);
  } finally {
    timer.abort();
  }
  return true;
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

/**
 * The end of a stopped container's log, as upstream's
 * readLastStringFromContainerLogs gets it: the last `lines` records of both
 * streams (the CRI prefixes dropped, partial lines joined), of which only the
 * last `maxBytes` bytes are kept.
 * @param path the log file (CRI ContainerStatus logPath)
 * @param lines how many lines from the end
 * @param maxBytes how many bytes from the end of those lines
 * @returns the bytes
 * @throws Error naming the file when it cannot be read
 */
export async function readLogTail(
  path: string,
  lines: number,
  maxBytes: number,
): Promise<Uint8Array> {
  const stream = await openContainerLog({
    path,
    options: { tail: lines, bytes: -1, sinceMs: 0, follow: false, timestamps: false },
    isRunning: () => Promise.resolve(false),
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    chunks.push(chunk);
    size += chunk.length;
    // Only the last maxBytes count: drop whole chunks that fall before them.
    while (chunks.length > 1 && size - chunks[0]!.length >= maxBytes) {
      size -= chunks.shift()!.length;
    }
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return all.subarray(Math.max(0, size - maxBytes));
}
