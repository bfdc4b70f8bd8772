/**
 * Structured logging in the kubelet's spirit (`klog.InfoS`): a message plus
 * key/value pairs, with a verbosity level. Output is one line per record on
 * stderr, in one of upstream's two formats:
 *
 * - `text` (klog's header and its key=value rules):
 *   `I1130 15:04:05.000000    1234 kubelet.ts:42] "msg" pod="ns/name" restarts=3`
 * - `json` (component-base/logs/json, a zap encoder):
 *   `{"ts":1764515045000.123,"caller":"kubelet.ts:42","msg":"msg","v":0,"pod":"ns/name"}`
 *
 * Use upstream's key names: `pod` ("namespace/name"), `podUID`, `containerName`.
 *
 * @module
 */

import { BUNDLE_LINES_KEY, type BundleLines, sourceLine } from "./bundle_lines.ts";

/** Key/values attached to a record; `undefined` values are dropped. */
export type Fields = Record<string, unknown>;

/** A structured logger. */
export interface Logger {
  /** Logs at verbosity 0 unless `v` is raised with {@link Logger.v}. */
  info(msg: string, fields?: Fields): void;
  /** Logs an error with its cause chain, whatever the verbosity (as klog.ErrorS). */
  error(msg: string, err: unknown, fields?: Fields): void;
  /** Logs a warning; gated by verbosity like {@link Logger.info}. */
  warn(msg: string, fields?: Fields): void;
  /** A logger that only prints when the configured verbosity is ≥ `level`. */
  v(level: number): Logger;
  /** A logger whose records all carry `fields`. */
  with(fields: Fields): Logger;
}

/** The logger {@link createLogger} returns: its verbosity can change while it runs. */
export interface RootLogger extends Logger {
  /** Sets `--v` for this logger and every logger derived from it (`/debug/flags/v`). */
  setVerbosity(level: number): void;
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** `--v`: records at a higher level are dropped before any formatting. */
  verbosity?: number;
  /** `--logging-format`: `text` (klog) by default. */
  format?: "text" | "json";
  /** Where lines go (without the newline); stderr by default. */
  write?: (line: string) => void;
  /** Wall time in epoch milliseconds, fractions allowed; for tests. */
  now?: () => number;
  /** The PID shown in text headers; `Deno.pid` by default. */
  pid?: number;
  /** Whether to find the caller's file:line (one `Error` stack per printed record). */
  caller?: boolean;
}

const encoder = new TextEncoder();
const THIS_URL = import.meta.url;
const THIS_PATH = new URL(import.meta.url).pathname;
/** How a bundle's line table names this module. */
const THIS_FILE = /(^|\/)lib\/util\/log\.ts$/;
/** Frames inside this module (emit, the method) plus the caller's, with slack. */
const CALLER_FRAMES = 5;

function writeStderr(line: string): void {
  const bytes = encoder.encode(line + "\n");
  // writeSync may write less than asked on a full pipe.
  let off = 0;
  while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
}

/** Epoch ms with sub-millisecond digits, so the header can show microseconds. */
function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * An error's message with its causes' messages appended (each once), eight causes deep
 * at most, so a chain that loops back ends.
 * @param err anything thrown
 * @returns one line of text
 */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  let text = err.message;
  for (let c = err.cause, i = 0; c instanceof Error && i < 8; c = c.cause, i++) {
    if (!text.includes(c.message)) text += `: ${c.message}`;
  }
  return text;
}

/** The bundled agent's line table (tools/bundle.ts's preamble), when this runs bundled. */
function bundleLines(): BundleLines | undefined {
  return (globalThis as Record<symbol, BundleLines | undefined>)[Symbol.for(BUNDLE_LINES_KEY)];
}

/** The V8 call-site API (not in lib.deno); Deno maps positions back to the .ts source. */
interface CallSite {
  getFileName(): string | null | undefined;
  getLineNumber(): number | null;
}
interface V8ErrorConstructor {
  prepareStackTrace?: ((err: Error, sites: CallSite[]) => unknown) | undefined;
  stackTraceLimit: number;
  captureStackTrace(target: object): void;
}

/**
 * The first stack frame outside this module, as `file.ts:line` (zap's short
 * caller). Only called for records that are printed. Structured call sites
 * skip formatting the whole trace as text, the bulk of `new Error().stack`'s cost.
 */
function findCaller(): string {
  const E = Error as unknown as V8ErrorConstructor;
  const prepare = E.prepareStackTrace;
  const limit = E.stackTraceLimit;
  const holder: { stack?: unknown } = {};
  let stack: unknown;
  E.prepareStackTrace = (_err, sites) => sites;
  E.stackTraceLimit = CALLER_FRAMES;
  try {
    E.captureStackTrace(holder);
    // V8 calls prepareStackTrace lazily, on the first read of `stack`.
    stack = holder.stack;
  } finally {
    E.prepareStackTrace = prepare;
    E.stackTraceLimit = limit;
  }
  const sites = Array.isArray(stack) ? stack as CallSite[] : [];
  const table = bundleLines();
  for (const site of sites) {
    const file = site.getFileName();
    if (!file) continue;
    if (file === THIS_URL || file === THIS_PATH) {
      // Bundled, every frame is in the bundle: its table tells this module's from the rest.
      const at = table && sourceLine(table, site.getLineNumber() ?? 0);
      if (at === undefined || THIS_FILE.test(at.file)) continue;
      return `${at.file.slice(at.file.lastIndexOf("/") + 1)}:${at.line}`;
    }
    return `${file.slice(file.lastIndexOf("/") + 1)}:${site.getLineNumber() ?? 0}`;
  }
  return "???:1";
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** klog's header: `I1130 15:04:05.000000    1234 file.ts:42] ` in local time. */
function textHeader(severity: string, nowMs: number, pid: number, caller: string): string {
  const d = new Date(Math.floor(nowMs));
  const micros = Math.floor((nowMs - Math.floor(nowMs / 1000) * 1000) * 1000);
  return `${severity}${pad(d.getMonth() + 1)}${pad(d.getDate())} ${pad(d.getHours())}:${
    pad(d.getMinutes())
  }:${pad(d.getSeconds())}.${pad(micros, 6)} ${String(pid).padStart(7)} ${caller}] `;
}

/**
 * A value as klog's text format writes it: strings quoted (multi-line ones as
 * klog's `<` block), numbers and booleans bare, errors by message, null as
 * `<nil>`. Objects are JSON (klog prints Go's `%+v`, which has no JS analogue).
 */
function textValue(value: unknown): string {
  switch (typeof value) {
    case "number":
    case "boolean":
    case "bigint":
      return String(value);
    case "string":
      return quoteString(value);
  }
  if (value === null) return "<nil>";
  if (value instanceof Error) return quoteString(errorText(value));
  if (value instanceof Date) return quoteString(value.toISOString());
  return JSON.stringify(value) ?? quoteString(String(value));
}

function quoteString(s: string): string {
  if (!s.includes("\n")) return JSON.stringify(s);
  // klog prints multi-line strings as an indented block so they stay readable.
  const body = s.replace(/\n$/, "").split("\n").map((l) => `\t${l}`).join("\n");
  return `<\n${body}\n >`;
}

/** A value for the JSON format: errors become their message, the rest is JSON. */
function jsonValue(value: unknown): unknown {
  if (value instanceof Error) return errorText(value);
  if (typeof value === "bigint") return Number(value);
  return value;
}

type Severity = "I" | "W" | "E";

/**
 * Creates a logger.
 * @param opts verbosity, format and sink
 * @returns the root logger
 */
export function createLogger(opts: LoggerOptions = {}): RootLogger {
  let verbosity = opts.verbosity ?? 0;
  const format = opts.format ?? "text";
  const write = opts.write ?? writeStderr;
  const now = opts.now ?? preciseNow;
  const pid = opts.pid ?? Deno.pid;
  const withCaller = opts.caller ?? true;

  function emit(
    severity: Severity,
    level: number,
    msg: string,
    base: Fields,
    fields: Fields | undefined,
    err?: unknown,
  ): void {
    const ts = now();
    const caller = withCaller ? findCaller() : "denolet";
    const merged = fields === undefined ? base : { ...base, ...fields };
    if (format === "json") {
      // Key order as zap writes it: ts, caller, msg, then v (info) or err (error).
      const rec: Fields = { ts, caller, msg };
      if (severity === "E") rec.err = errorText(err);
      else rec.v = level;
      for (const [k, val] of Object.entries(merged)) {
        if (val !== undefined && !(k in rec)) rec[k] = jsonValue(val);
      }
      write(JSON.stringify(rec));
      return;
    }
    let line = textHeader(severity, ts, pid, caller) + JSON.stringify(msg);
    // klog.ErrorS puts err right after the message.
    if (severity === "E") line += ` err=${quoteString(errorText(err))}`;
    for (const [k, val] of Object.entries(merged)) {
      if (val !== undefined) line += ` ${k}=${textValue(val)}`;
    }
    write(line);
  }

  function make(level: number, base: Fields): Logger {
    return {
      info: (msg, fields) => {
        if (level <= verbosity) emit("I", level, msg, base, fields);
      },
      warn: (msg, fields) => {
        if (level <= verbosity) emit("W", level, msg, base, fields);
      },
      error: (msg, err, fields) => emit("E", level, msg, base, fields, err),
      v: (l) => make(l, base),
      with: (fields) => make(level, { ...base, ...fields }),
    };
  }
  return {
    ...make(0, {}),
    setVerbosity: (level) => {
      verbosity = level;
    },
  };
}

/** A logger that drops everything, for tests. */
export const silentLogger: Logger = createLogger({ write: () => {}, caller: false });
