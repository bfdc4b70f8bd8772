/**
 * Structured logging in the kubelet's spirit (`klog.InfoS`): a message plus
 * key/value pairs, with a verbosity level. Output is one line per record on
 * stderr, klog-style text by default or JSON.
 *
 * @module
 */

/** Key/values attached to a record; `undefined` values are dropped. */
export type Fields = Record<string, unknown>;

/** A structured logger. */
export interface Logger {
  /** Logs at verbosity 0 unless `v` is raised with {@link Logger.v}. */
  info(msg: string, fields?: Fields): void;
  /** Logs an error with its cause chain. */
  error(msg: string, err: unknown, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  /** A logger that only prints when the configured verbosity is ≥ `level`. */
  v(level: number): Logger;
  /** A logger whose records all carry `fields`. */
  with(fields: Fields): Logger;
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  verbosity?: number;
  format?: "text" | "json";
  /** Where lines go; stderr by default. */
  write?: (line: string) => void;
}

const encoder = new TextEncoder();

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  let text = err.message;
  let cause = err.cause;
  while (cause instanceof Error) {
    if (!text.includes(cause.message)) text += `: ${cause.message}`;
    cause = cause.cause;
  }
  return text;
}

function quote(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  return JSON.stringify(value) ?? "null";
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** klog's header: `I1130 15:04:05.000000 1234 denolet] `. */
function header(severity: string, now: Date): string {
  return `${severity}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())} ${
    pad(now.getUTCHours())
  }:${pad(now.getUTCMinutes())}:${pad(now.getUTCSeconds())}.${
    pad(now.getUTCMilliseconds(), 3)
  }000 ${Deno.pid} denolet] `;
}

/**
 * Creates a logger.
 * @param opts verbosity, format and sink
 * @returns the root logger
 */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const verbosity = opts.verbosity ?? 0;
  const format = opts.format ?? "text";
  const write = opts.write ??
    ((line: string) => Deno.stderr.writeSync(encoder.encode(line + "\n")));

  function emit(severity: "I" | "W" | "E", level: number, msg: string, fields: Fields): void {
    const now = new Date();
    if (format === "json") {
      const rec: Fields = { ts: now.getTime() / 1000, v: level, msg };
      if (severity === "E") rec.err = fields.err;
      for (const [k, val] of Object.entries(fields)) if (val !== undefined) rec[k] = val;
      write(JSON.stringify(rec));
      return;
    }
    let line = header(severity, now) + JSON.stringify(msg);
    for (const [k, val] of Object.entries(fields)) {
      if (val !== undefined) line += ` ${k}=${quote(val)}`;
    }
    write(line);
  }

  function make(level: number, base: Fields): Logger {
    const enabled = level <= verbosity;
    return {
      info: (msg, fields) => enabled && emit("I", level, msg, { ...base, ...fields }),
      warn: (msg, fields) => enabled && emit("W", level, msg, { ...base, ...fields }),
      error: (msg, err, fields) =>
        emit("E", level, msg, { ...base, ...fields, err: errorText(err) }),
      v: (l) => make(l, base),
      with: (fields) => make(level, { ...base, ...fields }),
    };
  }
  return make(0, {});
}

/** A logger that drops everything, for tests. */
export const silentLogger: Logger = createLogger({ write: () => {} });
