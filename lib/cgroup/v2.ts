/**
 * Reading one cgroup of the cgroup2 tree (Documentation/admin-guide/
 * cgroup-v2.rst). Used for v2 machines, and on hybrid machines for what only
 * the v2 side has (PSI) or when a v1 controller is missing.
 *
 * @module
 */

import { parseFlatKeyed, parseIoStat, parsePressure, parseSingleValue } from "./parse.ts";
import { readCgroupFile, readCgroupLimit, readCgroupParsed } from "./read_file.ts";
import type {
  CpuStats,
  DeviceIo,
  MemoryStats,
  PidsStats,
  Pressure,
  PressureLine,
} from "./types.ts";

// Housekeeping parses ~11 files per cgroup per tick, memory.stat with ~50
// lines of which five are used. The fast paths below take the kernel's exact
// layout without a string or array per line; on anything else they hand the
// text to the general parser in parse.ts, so answers and errors never differ.

const TAB = 9;
const NEWLINE = 10;
const SPACE = 32;
const MINUS = 45;
const ZERO = 48;
const NINE = 57;
const DEL = 127;

/**
 * Picks some keys of a flat keyed file ("key value" lines: cpu.stat,
 * memory.stat, memory.events, v1 cpuacct.stat and memory.oom_control),
 * giving what `parseFlatKeyed(text, file).get(key)` gives for each key.
 * @param text file content
 * @param file path, for errors
 * @param keys the keys wanted
 * @returns one value per key, undefined where the key is absent
 * @throws {StatsParseError} on an empty file or a line that is not "key integer"
 */
export function pickFlatKeyed(
  text: string,
  file: string,
  keys: readonly string[],
): (number | undefined)[] {
  const out = new Array<number | undefined>(keys.length).fill(undefined);
  const len = text.length;
  let entries = 0;
  let i = 0;
  while (i < len) {
    let c = text.charCodeAt(i);
    while (c === SPACE || c === TAB) c = text.charCodeAt(++i);
    if (c === NEWLINE) {
      i++;
      continue;
    }
    if (i >= len) break;
    const keyStart = i;
    while (c > SPACE && c < DEL) c = text.charCodeAt(++i);
    const keyLength = i - keyStart;
    if (c !== SPACE && c !== TAB) return pickSlowly(text, file, keys);
    while (c === SPACE || c === TAB) c = text.charCodeAt(++i);
    const valueStart = i;
    if (c === MINUS) c = text.charCodeAt(++i);
    const digits = i;
    while (c >= ZERO && c <= NINE) c = text.charCodeAt(++i);
    if (i === digits) return pickSlowly(text, file, keys);
    const valueEnd = i;
    while (c === SPACE || c === TAB) c = text.charCodeAt(++i);
    if (i < len && c !== NEWLINE) return pickSlowly(text, file, keys);
    i++;
    entries++;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (key.length === keyLength && text.startsWith(key, keyStart)) {
        out[k] = Number(text.slice(valueStart, valueEnd));
        break;
      }
    }
  }
  return entries === 0 ? pickSlowly(text, file, keys) : out;
}

function pickSlowly(text: string, file: string, keys: readonly string[]): (number | undefined)[] {
  const values = parseFlatKeyed(text, file);
  return keys.map((k) => values.get(k));
}

/** A PSI file as the kernel writes it: "some …" and, on most files, "full …". */
const PSI_FILE = new RegExp(
  "^some avg10=(\\d+\\.\\d+) avg60=(\\d+\\.\\d+) avg300=(\\d+\\.\\d+) total=(\\d+)\n" +
    "(?:full avg10=(\\d+\\.\\d+) avg60=(\\d+\\.\\d+) avg300=(\\d+\\.\\d+) total=(\\d+)\n)?$",
);

/**
 * Parses a PSI file; same answers and errors as `parsePressure`.
 * @param text file content
 * @param file path, for errors
 * @returns the "some" line and, when present, the "full" line
 * @throws {StatsParseError} when the "some" line is missing or a line is malformed
 */
export function parsePressureFast(text: string, file: string): Pressure {
  const m = PSI_FILE.exec(text);
  if (m === null) return parsePressure(text, file);
  const some = {
    avg10: Number(m[1]),
    avg60: Number(m[2]),
    avg300: Number(m[3]),
    totalUs: Number(m[4]),
  };
  if (m[5] === undefined) return { some };
  const full = {
    avg10: Number(m[5]),
    avg60: Number(m[6]),
    avg300: Number(m[7]),
    totalUs: Number(m[8]),
  };
  return { some, full };
}

/** One io.stat line with the keys every kernel since 5.x writes, in its order. */
const IO_LINE =
  /(\d+):(\d+) rbytes=(\d+) wbytes=(\d+) rios=(\d+) wios=(\d+)(?: dbytes=\d+ dios=\d+)?\n/y;

/**
 * Parses v2 io.stat; same answers and errors as `parseIoStat`.
 * @param text file content
 * @param file path, for errors
 * @returns per-device counters
 * @throws {StatsParseError} on a malformed line
 */
export function parseIoStatFast(text: string, file: string): DeviceIo[] {
  const out: DeviceIo[] = [];
  IO_LINE.lastIndex = 0;
  while (IO_LINE.lastIndex < text.length) {
    const m = IO_LINE.exec(text);
    if (m === null) return parseIoStat(text, file);
    const major = Number(m[1]);
    const minor = Number(m[2]);
    // A device listed twice is merged by the general parser: leave it that.
    if (out.some((d) => d.major === major && d.minor === minor)) return parseIoStat(text, file);
    out.push({
      major,
      minor,
      readBytes: Number(m[3]),
      writeBytes: Number(m[4]),
      readOps: Number(m[5]),
      writeOps: Number(m[6]),
    });
  }
  return out;
}

// Byte-level twins of the fast paths above, for files read through held
// handles: they parse the read buffer without decoding it into a string.
// Each declines (undefined) on anything but the kernel's plain layout or on a
// number longer than 15 digits (which might not be exact as a running
// product), so the text parsers decide every other case.

const DOT = 46;

/** Digits from `at` as an integer; end index in `parsed.end`; undefined past 15 digits. */
function digitsAt(
  b: Uint8Array,
  at: number,
  n: number,
  parsed: { end: number },
): number | undefined {
  let v = 0;
  let i = at;
  while (i < n && b[i]! >= ZERO && b[i]! <= NINE) v = v * 10 + (b[i++]! - ZERO);
  if (i === at || i - at > 15) return undefined;
  parsed.end = i;
  return v;
}

const cursorAt = { end: 0 };

/**
 * As {@link pickFlatKeyed} on the decoded bytes, or undefined to have the text parsed.
 * @param b the bytes
 * @param n how many of them
 * @param keys the keys wanted
 * @returns one value per key, or undefined when the text parser must decide
 */
export function pickFlatKeyedBytes(
  b: Uint8Array,
  n: number,
  keys: readonly string[],
): (number | undefined)[] | undefined {
  const out = new Array<number | undefined>(keys.length).fill(undefined);
  let entries = 0;
  let i = 0;
  while (i < n) {
    let c = b[i]!;
    while ((c === SPACE || c === TAB) && i < n) c = b[++i]!;
    if (i >= n) break;
    if (c === NEWLINE) {
      i++;
      continue;
    }
    const keyStart = i;
    while (c > SPACE && c < DEL && i < n) c = b[++i]!;
    const keyLength = i - keyStart;
    if (i >= n || (c !== SPACE && c !== TAB)) return undefined;
    while ((c === SPACE || c === TAB) && i < n) c = b[++i]!;
    const negative = c === MINUS && i < n;
    if (negative) i++;
    let v = digitsAt(b, i, n, cursorAt);
    if (v === undefined) return undefined;
    if (negative) v = -v;
    i = cursorAt.end;
    c = b[i]!;
    while ((c === SPACE || c === TAB) && i < n) c = b[++i]!;
    if (i < n && c !== NEWLINE) return undefined;
    i++;
    entries++;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (key.length !== keyLength) continue;
      let j = 0;
      while (j < keyLength && b[keyStart + j] === key.charCodeAt(j)) j++;
      if (j === keyLength) {
        out[k] = v;
        break;
      }
    }
  }
  return entries === 0 ? undefined : out;
}

/** Matches the ASCII `literal` at `at`; the index after it, or -1. */
function literalAt(b: Uint8Array, at: number, n: number, literal: string): number {
  if (at + literal.length > n) return -1;
  for (let j = 0; j < literal.length; j++) if (b[at + j] !== literal.charCodeAt(j)) return -1;
  return at + literal.length;
}

/** "D+.D+" as Number() reads it: an exact integer ÷ 10^k rounds as the decimal does. */
function decimalAt(b: Uint8Array, at: number, n: number): number | undefined {
  const whole = digitsAt(b, at, n, cursorAt);
  if (whole === undefined || b[cursorAt.end] !== DOT || cursorAt.end >= n) return undefined;
  const fracStart = cursorAt.end + 1;
  const frac = digitsAt(b, fracStart, n, cursorAt);
  const places = cursorAt.end - fracStart;
  if (frac === undefined || cursorAt.end - at > 16) return undefined;
  return (whole * 10 ** places + frac) / 10 ** places;
}

/** One "<kind> avg10=… avg60=… avg300=… total=…\n" line from `at`, or undefined. */
function pressureLineAt(
  b: Uint8Array,
  at: number,
  n: number,
  kind: string,
): PressureLine | undefined {
  let i = literalAt(b, at, n, kind);
  if (i < 0 || (i = literalAt(b, i, n, " avg10=")) < 0) return undefined;
  const avg10 = decimalAt(b, i, n);
  if (avg10 === undefined || (i = literalAt(b, cursorAt.end, n, " avg60=")) < 0) return undefined;
  const avg60 = decimalAt(b, i, n);
  if (avg60 === undefined || (i = literalAt(b, cursorAt.end, n, " avg300=")) < 0) return undefined;
  const avg300 = decimalAt(b, i, n);
  if (avg300 === undefined || (i = literalAt(b, cursorAt.end, n, " total=")) < 0) return undefined;
  const totalUs = digitsAt(b, i, n, cursorAt);
  if (totalUs === undefined || b[cursorAt.end] !== NEWLINE || cursorAt.end >= n) return undefined;
  cursorAt.end++;
  return { avg10, avg60, avg300, totalUs };
}

/**
 * As {@link parsePressureFast} on the decoded bytes, or undefined to have the text parsed.
 * @param b the bytes
 * @param n how many of them
 * @returns the PSI lines, or undefined when the text parser must decide
 */
export function parsePressureBytes(b: Uint8Array, n: number): Pressure | undefined {
  const some = pressureLineAt(b, 0, n, "some");
  if (some === undefined) return undefined;
  if (cursorAt.end === n) return { some };
  const full = pressureLineAt(b, cursorAt.end, n, "full");
  return full === undefined || cursorAt.end !== n ? undefined : { some, full };
}

/**
 * As `parseSingleValue` on the decoded bytes, or undefined to have the text parsed.
 * @param b the bytes
 * @param n how many of them
 * @returns the number, null for "max", or undefined when the text parser must decide
 */
export function singleValueBytes(b: Uint8Array, n: number): number | null | undefined {
  let end = n;
  while (end > 0 && (b[end - 1] === NEWLINE || b[end - 1] === SPACE)) end--;
  if (end === 0 || b[0] === SPACE || b[0] === NEWLINE) return undefined;
  if (end === 3 && literalAt(b, 0, 3, "max") === 3) return null;
  const negative = b[0] === MINUS;
  const v = digitsAt(b, negative ? 1 : 0, end, cursorAt);
  if (v === undefined || cursorAt.end !== end) return undefined;
  return negative ? -v : v;
}

/** The byte and text parsers of one key set, made once so a read allocates no closure. */
interface KeyParsers {
  bytes: (b: Uint8Array, n: number) => (number | undefined)[] | undefined;
  text: (text: string, file: string) => (number | undefined)[];
}

/**
 * Both parsers of a key set, for {@link readKeys}.
 * @param keys the keys wanted
 * @returns the parsers
 */
export function keyParsers(keys: readonly string[]): KeyParsers {
  return {
    bytes: (b, n) => pickFlatKeyedBytes(b, n, keys),
    text: (text, file) => pickFlatKeyed(text, file, keys),
  };
}

function readKeys(
  dir: string,
  name: string,
  parsers: KeyParsers,
): (number | undefined)[] | undefined {
  return readCgroupParsed(dir, name, parsers.bytes, parsers.text);
}

function readValue(dir: string, name: string): number | null | undefined {
  return readCgroupParsed(dir, name, singleValueBytes, parseSingleValue);
}

/** A limit: housekeeping may answer it from its last read (see readCgroupLimit). */
function readLimit(dir: string, name: string): number | null | undefined {
  const text = readCgroupLimit(dir, name);
  return text === undefined ? undefined : parseSingleValue(text, `${dir}/${name}`);
}

/**
 * Reads keys of a flat-keyed file on the limits' cadence (see
 * readCgroupLimit): the OOM event counters, v2 memory.events and v1
 * memory.oom_control. runc's stats, and so cAdvisor's housekeeping, do not
 * read those files at all; we keep their counts, up to a limit refresh late.
 * @param dir the cgroup directory
 * @param name the file
 * @param keys the keys wanted
 * @returns one value per key, or undefined when the file is absent
 */
export function readSlowKeys(
  dir: string,
  name: string,
  keys: readonly string[],
): (number | undefined)[] | undefined {
  const text = readCgroupLimit(dir, name);
  return text === undefined ? undefined : pickFlatKeyed(text, `${dir}/${name}`, keys);
}

const CPU_KEYS = keyParsers([
  "usage_usec",
  "user_usec",
  "system_usec",
  "nr_periods",
  "nr_throttled",
  "throttled_usec",
]);
const MEMORY_KEYS = keyParsers(["anon", "file", "inactive_file", "pgfault", "pgmajfault"]);
const EVENT_KEYS = ["oom_kill", "max"];

/**
 * Reads cpu.stat (usage_usec, user_usec, system_usec, nr_periods, nr_throttled,
 * throttled_usec).
 * @param dir the cgroup directory
 * @returns CPU figures in ns, or undefined when cpu.stat is absent
 */
export function readCpuV2(dir: string): CpuStats | undefined {
  const stat = readKeys(dir, "cpu.stat", CPU_KEYS);
  const usage = stat?.[0];
  if (!stat || usage === undefined) return undefined;
  const [, user, system, periods, throttled, throttledUs] = stat;
  const cpu: CpuStats = { usageNs: usage * 1000 };
  if (user !== undefined) cpu.userNs = user * 1000;
  if (system !== undefined) cpu.systemNs = system * 1000;
  // The nr_*/throttled_* keys appear only when the cpu controller is enabled.
  if (periods !== undefined) cpu.periods = periods;
  if (throttled !== undefined) cpu.throttledPeriods = throttled;
  if (throttledUs !== undefined) cpu.throttledNs = throttledUs * 1000;
  return cpu;
}

/** memory.stat counters that v1 and v2 name differently but mean the same. */
export interface MemoryCounters {
  inactiveFile: number | undefined;
  rss: number | undefined;
  cache: number | undefined;
  faults: number | undefined;
  majorFaults: number | undefined;
}

/**
 * Memory figures from usage and memory.stat counters, the same for v1 and v2:
 * working set is usage minus inactive file pages (cAdvisor's rule), never below 0.
 * @param usage bytes in use
 * @param c the counters present (absent ones are left out)
 * @returns the figures, without limit or event counts
 */
export function memoryStats(usage: number, c: MemoryCounters): MemoryStats {
  const memory: MemoryStats = {
    usageBytes: usage,
    workingSetBytes: Math.max(0, usage - (c.inactiveFile ?? 0)),
  };
  if (c.rss !== undefined) memory.rssBytes = c.rss;
  if (c.cache !== undefined) memory.cacheBytes = c.cache;
  if (c.faults !== undefined) memory.pageFaults = c.faults;
  if (c.majorFaults !== undefined) memory.majorPageFaults = c.majorFaults;
  return memory;
}

/**
 * Reads memory.current, memory.stat, memory.max and memory.events. In the root
 * cgroup, which has no memory.current, usage is anon + file from memory.stat
 * (what runc reports for the root, so cAdvisor's root working set matches).
 * @param dir the cgroup directory
 * @returns memory figures, or undefined when the memory controller is absent
 */
export function readMemoryV2(dir: string): MemoryStats | undefined {
  const [anon, file, inactiveFile, faults, majorFaults] =
    readKeys(dir, "memory.stat", MEMORY_KEYS) ?? [];
  let usage = readValue(dir, "memory.current");
  if (usage === undefined || usage === null) {
    if (anon === undefined || file === undefined) return undefined;
    usage = anon + file;
  }
  const memory = memoryStats(usage, { inactiveFile, rss: anon, cache: file, faults, majorFaults });
  const limit = readLimit(dir, "memory.max");
  if (limit !== undefined) memory.limitBytes = limit;
  const [oomKills, limitHits] = readSlowKeys(dir, "memory.events", EVENT_KEYS) ?? [];
  if (oomKills !== undefined) memory.oomKills = oomKills;
  if (limitHits !== undefined) memory.limitHits = limitHits;
  return memory;
}

/**
 * Reads io.stat.
 * @param dir the cgroup directory
 * @returns per-device counters, or undefined when io.stat is absent
 */
export function readIoV2(dir: string): DeviceIo[] | undefined {
  const text = readCgroupFile(dir, "io.stat");
  return text === undefined ? undefined : parseIoStatFast(text, `${dir}/io.stat`);
}

/**
 * Reads pids.current and pids.max.
 * @param dir the cgroup directory
 * @returns process counts, or undefined when the pids controller is absent
 */
export function readPidsV2(dir: string): PidsStats | undefined {
  const current = readValue(dir, "pids.current");
  if (current === undefined || current === null) return undefined;
  const pids: PidsStats = { current };
  const max = readLimit(dir, "pids.max");
  if (max !== undefined) pids.max = max;
  return pids;
}

/**
 * Reads cpu.pressure, memory.pressure and io.pressure (Linux ≥ 4.20 with PSI).
 * @param dir the cgroup directory
 * @returns the files that exist, or undefined when none does
 */
export function readPressure(
  dir: string,
): { cpu?: Pressure; memory?: Pressure; io?: Pressure } | undefined {
  const cpu = readPressureFile(dir, "cpu.pressure");
  const memory = readPressureFile(dir, "memory.pressure");
  const io = readPressureFile(dir, "io.pressure");
  if (!cpu && !memory && !io) return undefined;
  const out: { cpu?: Pressure; memory?: Pressure; io?: Pressure } = {};
  if (cpu) out.cpu = cpu;
  if (memory) out.memory = memory;
  if (io) out.io = io;
  return out;
}

function readPressureFile(dir: string, name: string): Pressure | undefined {
  return readCgroupParsed(dir, name, parsePressureBytes, parsePressureFast);
}
