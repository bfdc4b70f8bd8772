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

/**
 * Parses one line of a CRI log file.
 * @param line the line's bytes, with or without its newline
 * @returns the record, or a reason why the line is not one (upstream skips such lines)
 */
export function parseCriLine(line: Uint8Array): LogRecord | string {
  const s1 = line.indexOf(SPACE);
  if (s1 < 0) return "timestamp is not found";
  const timestamp = ascii.decode(line.subarray(0, s1));
  const time = parseRfc3339(timestamp);
  if (!time) return `unexpected timestamp format "RFC3339Nano": ${timestamp}`;
  const s2 = line.indexOf(SPACE, s1 + 1);
  if (s2 < 0) return "stream type is not found";
  const stream = ascii.decode(line.subarray(s1 + 1, s2));
  if (stream !== "stdout" && stream !== "stderr") return `unexpected stream type "${stream}"`;
  const s3 = line.indexOf(SPACE, s2 + 1);
  if (s3 < 0) return "log tag is not found";
  const tag = line.subarray(s2 + 1, s3);
  const colon = tag.indexOf(0x3a);
  const first = colon < 0 ? tag : tag.subarray(0, colon);
  const partial = first.length === 1 && first[0] === 0x50; // "P"
  let end = line.length;
  if (partial && end > s3 + 1 && line[end - 1] === NEWLINE) end--;
  return {
    timestamp: time.text,
    timeMs: time.ms,
    stream,
    partial,
    content: line.subarray(Math.min(s3 + 1, end), end),
  };
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
