/**
 * Reading one cgroup of the cgroup2 tree (Documentation/admin-guide/
 * cgroup-v2.rst). Used for v2 machines, and on hybrid machines for what only
 * the v2 side has (PSI) or when a v1 controller is missing.
 *
 * @module
 */

import { parseFlatKeyed, parseIoStat, parsePressure, parseSingleValue } from "./parse.ts";
import { readCgroupText } from "./read_file.ts";
import type { CpuStats, DeviceIo, MemoryStats, PidsStats, Pressure } from "./types.ts";

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

function readKeys(file: string, keys: readonly string[]): (number | undefined)[] | undefined {
  const text = readCgroupText(file);
  return text === undefined ? undefined : pickFlatKeyed(text, file, keys);
}

function readValue(file: string): number | null | undefined {
  const text = readCgroupText(file);
  return text === undefined ? undefined : parseSingleValue(text, file);
}

const CPU_KEYS = [
  "usage_usec",
  "user_usec",
  "system_usec",
  "nr_periods",
  "nr_throttled",
  "throttled_usec",
] as const;
const MEMORY_KEYS = ["anon", "file", "inactive_file", "pgfault", "pgmajfault"] as const;
const EVENT_KEYS = ["oom_kill", "max"] as const;

/**
 * Reads cpu.stat (usage_usec, user_usec, system_usec, nr_periods, nr_throttled,
 * throttled_usec).
 * @param dir the cgroup directory
 * @returns CPU figures in ns, or undefined when cpu.stat is absent
 */
export function readCpuV2(dir: string): CpuStats | undefined {
  const stat = readKeys(`${dir}/cpu.stat`, CPU_KEYS);
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

/**
 * Reads memory.current, memory.stat, memory.max and memory.events. In the root
 * cgroup, which has no memory.current, usage is anon + file from memory.stat
 * (what runc reports for the root, so cAdvisor's root working set matches).
 * @param dir the cgroup directory
 * @returns memory figures, or undefined when the memory controller is absent
 */
export function readMemoryV2(dir: string): MemoryStats | undefined {
  const [anon, file, inactiveFile, faults, majorFaults] = readKeys(
    `${dir}/memory.stat`,
    MEMORY_KEYS,
  ) ?? [];
  let usage = readValue(`${dir}/memory.current`);
  if (usage === undefined || usage === null) {
    if (anon === undefined || file === undefined) return undefined;
    usage = anon + file;
  }
  const memory: MemoryStats = {
    usageBytes: usage,
    workingSetBytes: Math.max(0, usage - (inactiveFile ?? 0)),
  };
  if (anon !== undefined) memory.rssBytes = anon;
  if (file !== undefined) memory.cacheBytes = file;
  if (faults !== undefined) memory.pageFaults = faults;
  if (majorFaults !== undefined) memory.majorPageFaults = majorFaults;
  const limit = readValue(`${dir}/memory.max`);
  if (limit !== undefined) memory.limitBytes = limit;
  const [oomKills, limitHits] = readKeys(`${dir}/memory.events`, EVENT_KEYS) ?? [];
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
  const file = `${dir}/io.stat`;
  const text = readCgroupText(file);
  return text === undefined ? undefined : parseIoStatFast(text, file);
}

/**
 * Reads pids.current and pids.max.
 * @param dir the cgroup directory
 * @returns process counts, or undefined when the pids controller is absent
 */
export function readPidsV2(dir: string): PidsStats | undefined {
  const current = readValue(`${dir}/pids.current`);
  if (current === undefined || current === null) return undefined;
  const pids: PidsStats = { current };
  const max = readValue(`${dir}/pids.max`);
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
  const cpu = readPressureFile(`${dir}/cpu.pressure`);
  const memory = readPressureFile(`${dir}/memory.pressure`);
  const io = readPressureFile(`${dir}/io.pressure`);
  if (!cpu && !memory && !io) return undefined;
  const out: { cpu?: Pressure; memory?: Pressure; io?: Pressure } = {};
  if (cpu) out.cpu = cpu;
  if (memory) out.memory = memory;
  if (io) out.io = io;
  return out;
}

function readPressureFile(file: string): Pressure | undefined {
  const text = readCgroupText(file);
  return text === undefined ? undefined : parsePressureFast(text, file);
}
