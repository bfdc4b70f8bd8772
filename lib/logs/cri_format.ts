/**
 * The CRI container log format, as the runtime writes it and upstream's
 * pkg/kubelet/kuberuntime/logs reads it: one record per line,
 * `<RFC3339Nano timestamp> <stdout|stderr> <tag> <content>`, where the tag's
 * first `:`-separated field is `P` for a partial line (a long line the runtime
 * split; the pieces are joined by writing them without their newline) or `F`.
 *
 * @module
 */

/** The stream a log record came from. */
export type LogStream = "stdout" | "stderr";

/** One parsed record; `content` views the line's bytes, it is not a copy. */
export interface LogRecord {
  /** The timestamp text as the runtime wrote it. */
  timestamp: string;
  /** Epoch ms of the timestamp, floored. */
  timeMs: number;
  stream: LogStream;
  /** True for a `P` record: its content carries no newline of its own. */
  partial: boolean;
  /** The content; a full line's ends in its newline, a partial line's has it trimmed. */
  content: Uint8Array;
}

const SPACE = 0x20;
const NEWLINE = 0x0a;
const ascii = new TextDecoder("latin1");

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))$/;

/** A parsed RFC 3339 time: epoch ms (floored) and the text Go would format it as. */
export interface ParsedTime {
  ms: number;
  /** Go's RFC3339Nano rendering: trailing zeros of the fraction dropped, a zero offset as `Z`. */
  text: string;
}

/**
 * Parses an RFC 3339 time with an optional fraction of up to 9 digits, as Go's
 * `time.Parse(time.RFC3339Nano, ...)` accepts it.
 * @param text the time
 * @returns the time, or undefined when the text is not one
 */
export function parseRfc3339(text: string): ParsedTime | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = "", zone = "Z", sign, oh = "0", om = "0"] = m;
  const month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) {
    return undefined;
  }
  const local = Date.UTC(Number(y), month - 1, day, hour, minute, second);
  if (new Date(local).getUTCDate() !== day) return undefined;
  const offsetMin = zone === "Z" ? 0 : (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const ms = local - offsetMin * 60_000 + Number(`${frac}000`.slice(0, 3));
  const trimmed = frac.replace(/0+$/, "");
  const offsetText = offsetMin === 0 ? "Z" : zone;
  return { ms, text: `${text.slice(0, 19)}${trimmed ? `.${trimmed}` : ""}${offsetText}` };
}

const ZERO = 0x30;
const isDigit = (b: number | undefined) => b !== undefined && b >= ZERO && b <= 0x39;
/** The shape of `YYYY-MM-DDTHH:MM:SS`: true where a digit goes, else the separator. */
const SECONDS_SHAPE: (true | number)[] = [..."dddd-dd-ddTdd:dd:dd"].map((c) =>
  c === "d" ? true : c.charCodeAt(0)
);

/**
 * The line {@link CriLineParser.scan} read last, described in place: the
 * content is `buf[contentStart, contentEnd)` of the buffer it scanned.
 */
export interface ScannedLine {
  /** The timestamp text (Go's rendering), or "" when the parser was built without it. */
  timestamp: string;
  /** Epoch ms of the timestamp, floored. */
  timeMs: number;
  stream: LogStream;
  partial: boolean;
  contentStart: number;
  contentEnd: number;
}

/**
 * Parses CRI log lines. It works on bytes and remembers the last whole
 * second it converted, since consecutive lines mostly share it: a follow of
 * a large log parses millions of lines, so {@link scan} allocates nothing
 * per line (no record, no view of the line).
 */
export class CriLineParser {
  readonly #withText: boolean;
  #second = new Uint8Array(19);
  #secondMs = Number.NaN;
  /** The last line {@link scan} accepted; overwritten by the next call. */
  readonly line: ScannedLine = {
    timestamp: "",
    timeMs: 0,
    stream: "stdout",
    partial: false,
    contentStart: 0,
    contentEnd: 0,
  };

  /** @param opts `timestamps`: fill in the timestamp text (else it is "") */
  constructor(opts: { timestamps?: boolean } = {}) {
    this.#withText = opts.timestamps ?? true;
  }

  /**
   * Parses one line.
   * @param line the line's bytes, with or without its newline
   * @returns the record, or why the line is not one (upstream skips such lines)
   */
  parse(line: Uint8Array): LogRecord | string {
    const err = this.scan(line, 0, line.length);
    if (err !== undefined) return err;
    const l = this.line;
    return {
      timestamp: l.timestamp,
      timeMs: l.timeMs,
      stream: l.stream,
      partial: l.partial,
      content: line.subarray(l.contentStart, l.contentEnd),
    };
  }

  /**
   * Parses the line `buf[start, end)` into {@link line}.
   * @param buf bytes holding the line (with or without its newline)
   * @returns undefined when it is a record, else why it is not one
   */
  scan(buf: Uint8Array, start: number, end: number): string | undefined {
    const s1 = indexOfSpace(buf, start, end);
    if (s1 < 0) return "timestamp is not found";
    const timeMs = this.#time(buf, start, s1);
    if (timeMs === undefined) {
      return `unexpected timestamp format "RFC3339Nano": ${ascii.decode(buf.subarray(start, s1))}`;
    }
    const s2 = indexOfSpace(buf, s1 + 1, end);
    if (s2 < 0) return "stream type is not found";
    let stream: LogStream;
    if (s2 - s1 === 7 && matches(buf, s1 + 1, STDOUT)) stream = "stdout";
    else if (s2 - s1 === 7 && matches(buf, s1 + 1, STDERR)) stream = "stderr";
    else return `unexpected stream type "${ascii.decode(buf.subarray(s1 + 1, s2))}"`;
    const s3 = indexOfSpace(buf, s2 + 1, end);
    if (s3 < 0) return "log tag is not found";
    // The tag's first ':'-separated field; later fields are for the future.
    const partial = buf[s2 + 1] === 0x50 && (s3 === s2 + 2 || buf[s2 + 2] === 0x3a);
    let contentEnd = end;
    if (partial && contentEnd > s3 + 1 && buf[contentEnd - 1] === NEWLINE) contentEnd--;
    const l = this.line;
    l.timestamp = this.#withText ? goTimeText(ascii.decode(buf.subarray(start, s1))) : "";
    l.timeMs = timeMs;
    l.stream = stream;
    l.partial = partial;
    l.contentStart = Math.min(s3 + 1, contentEnd);
    l.contentEnd = contentEnd;
    return undefined;
  }

  /** Epoch ms of the RFC 3339 time in buf[start, end), or undefined when it is not one. */
  #time(buf: Uint8Array, start: number, end: number): number | undefined {
    if (end - start < 20) return undefined;
    // Most lines share the previous line's second, whose shape was checked then.
    const second = this.#second;
    let same = !Number.isNaN(this.#secondMs);
    for (let i = 0; same && i < 19; i++) if (second[i] !== buf[start + i]) same = false;
    if (!same) {
      for (let i = 0; i < 19; i++) {
        const b = buf[start + i]!;
        const want = SECONDS_SHAPE[i]!;
        if (want === true ? !isDigit(b) : b !== want) return undefined;
      }
      const n = (from: number, len: number) => {
        let v = 0;
        for (let i = start + from; i < start + from + len; i++) v = v * 10 + buf[i]! - ZERO;
        return v;
      };
      const y = n(0, 4), mo = n(5, 2), d = n(8, 2), h = n(11, 2), mi = n(14, 2), sec = n(17, 2);
      if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return undefined;
      const ms = Date.UTC(y, mo - 1, d, h, mi, sec);
      if (new Date(ms).getUTCDate() !== d) return undefined;
      this.#second.set(buf.subarray(start, start + 19));
      this.#secondMs = ms;
    }
    let i = start + 19;
    let fracMs = 0;
    if (buf[i] === 0x2e) {
      const from = ++i;
      while (i < end && isDigit(buf[i])) i++;
      if (i === from || i - from > 9) return undefined;
      for (let k = from; k < from + 3; k++) fracMs = fracMs * 10 + (k < i ? buf[k]! - ZERO : 0);
    }
    let offsetMs = 0;
    if (buf[i] === 0x5a && i + 1 === end) { // "Z"
    } else if ((buf[i] === 0x2b || buf[i] === 0x2d) && i + 6 === end && buf[i + 3] === 0x3a) {
      if (![1, 2, 4, 5].every((k) => isDigit(buf[i + k]))) return undefined;
      const oh = (buf[i + 1]! - ZERO) * 10 + buf[i + 2]! - ZERO;
      const om = (buf[i + 4]! - ZERO) * 10 + buf[i + 5]! - ZERO;
      offsetMs = (buf[i] === 0x2d ? -1 : 1) * (oh * 60 + om) * 60_000;
    } else return undefined;
    return this.#secondMs - offsetMs + fracMs;
  }
}

/**
 * The first space in buf[from, end), or -1. A plain loop: the fields it
 * crosses are a few bytes long, shorter than a call to indexOf costs.
 */
function indexOfSpace(buf: Uint8Array, from: number, end: number): number {
  for (let i = from; i < end; i++) if (buf[i] === SPACE) return i;
  return -1;
}

const STDOUT = new TextEncoder().encode("stdout");
const STDERR = new TextEncoder().encode("stderr");

function matches(line: Uint8Array, at: number, word: Uint8Array): boolean {
  for (let i = 0; i < word.length; i++) if (line[at + i] !== word[i]) return false;
  return true;
}

/** An RFC 3339 time as Go's RFC3339Nano formats it: no trailing fraction zeros, Z for +00:00. */
function goTimeText(text: string): string {
  const zone = text.endsWith("Z") ? "Z" : text.slice(-6);
  let body = text.slice(0, text.length - zone.length);
  if (body.length > 19) body = body.replace(/0+$/, "").replace(/\.$/, "");
  return body + (zone === "+00:00" || zone === "-00:00" ? "Z" : zone);
}

/**
 * Parses one line of a CRI log file (a convenience over {@link CriLineParser}).
 * @param line the line's bytes, with or without its newline
 * @returns the record, or a reason why the line is not one (upstream skips such lines)
 */
export function parseCriLine(line: Uint8Array): LogRecord | string {
  return new CriLineParser().parse(line);
}

/**
 * Where the last `lines` lines of a file start, as upstream's
 * FindTailLineStartIndex: counts newlines backwards in 1 KiB blocks.
 * @param file an open file (its position is moved)
 * @param lines how many lines; negative means all (offset 0)
 * @returns the byte offset to start reading at
 */
export async function tailStartOffset(file: Deno.FsFile, lines: number): Promise<number> {
  if (lines < 0) return 0;
  const BLOCK = 1024;
  const size = (await file.stat()).size;
  let left = 0;
  let count = 0;
  let buf = new Uint8Array(0);
  for (let right = size; right > 0 && count <= lines; right -= BLOCK) {
    left = Math.max(0, right - BLOCK);
    buf = new Uint8Array(right - left);
    await file.seek(left, Deno.SeekMode.Start);
    await readFull(file, buf);
    for (const b of buf) if (b === NEWLINE) count++;
  }
  let i = 0;
  for (; count > lines; count--) i = buf.indexOf(NEWLINE, i) + 1;
  return left + i;
}

/** Fills `buf` from the file's position; short only at end of file. */
async function readFull(file: Deno.FsFile, buf: Uint8Array): Promise<number> {
  let n = 0;
  while (n < buf.length) {
    const got = await file.read(buf.subarray(n));
    if (got === null) break;
    n += got;
  }
  return n;
}
