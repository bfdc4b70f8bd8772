/**
 * Parsers for the kernel's cgroup file formats (Documentation/admin-guide/
 * cgroup-v2.rst "Interface Files" and cgroup-v1/*.rst). Each takes the text and
 * the file's path, and throws {@link StatsParseError} naming the file when the
 * text is not in the expected format. They never read anything themselves.
 *
 * @module
 */

import { StatsParseError } from "./errors.ts";
import type { DeviceIo, Pressure, PressureLine } from "./types.ts";

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;

/**
 * Parses one non-negative integer, as in cgroup files holding a single count.
 * @param value the token
 * @param file the file it came from, for the error
 * @returns the number
 * @throws {StatsParseError} when `value` is not an integer
 */
export function parseInteger(value: string, file: string): number {
  if (!INTEGER.test(value)) throw new StatsParseError(file, `expected an integer, got "${value}"`);
  return Number(value);
}

/**
 * Parses a single-value file that may say "max" (memory.max, pids.max).
 * @param text file content
 * @param file path, for errors
 * @returns the number, or `null` for "max"
 * @throws {StatsParseError} on an empty or non-numeric file
 */
export function parseSingleValue(text: string, file: string): number | null {
  const value = text.trim();
  if (value === "") throw new StatsParseError(file, "file is empty");
  if (value === "max") return null;
  return parseInteger(value, file);
}

/**
 * Parses a flat keyed file: one "key value" pair per line (cpu.stat,
 * memory.stat, memory.events, v1 memory.oom_control, cpuacct.stat).
 * @param text file content
 * @param file path, for errors
 * @returns the values by key
 * @throws {StatsParseError} on an empty file or a line that is not "key integer"
 */
export function parseFlatKeyed(text: string, file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const parts = line.split(/\s+/);
    if (parts.length !== 2) {
      throw new StatsParseError(file, `expected "key value", got "${line}"`);
    }
    out.set(parts[0]!, parseInteger(parts[1]!, file));
  }
  if (out.size === 0) throw new StatsParseError(file, "file is empty");
  return out;
}

/**
 * Parses one PSI line: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0".
 * @param fields the line split on spaces, without the leading kind
 * @param file path, for errors
 */
function parsePressureLine(fields: string[], file: string): PressureLine {
  const values = new Map<string, string>();
  for (const field of fields) {
    const eq = field.indexOf("=");
    if (eq <= 0) throw new StatsParseError(file, `expected key=value, got "${field}"`);
    values.set(field.slice(0, eq), field.slice(eq + 1));
  }
  const get = (key: string, pattern: RegExp): number => {
    const value = values.get(key);
    if (value === undefined) throw new StatsParseError(file, `missing ${key}=`);
    if (!pattern.test(value)) throw new StatsParseError(file, `bad ${key}="${value}"`);
    return Number(value);
  };
  return {
    avg10: get("avg10", DECIMAL),
    avg60: get("avg60", DECIMAL),
    avg300: get("avg300", DECIMAL),
    totalUs: get("total", INTEGER),
  };
}

/**
 * Parses a PSI file (cpu.pressure, memory.pressure, io.pressure,
 * /proc/pressure/*).
 * @param text file content
 * @param file path, for errors
 * @returns the "some" line and, when present, the "full" line
 * @throws {StatsParseError} when the "some" line is missing or a line is malformed
 */
export function parsePressure(text: string, file: string): Pressure {
  let some: PressureLine | undefined;
  let full: PressureLine | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const [kind, ...fields] = line.split(/\s+/);
    if (kind === "some") some = parsePressureLine(fields, file);
    else if (kind === "full") full = parsePressureLine(fields, file);
    else throw new StatsParseError(file, `unknown pressure line "${line}"`);
  }
  if (!some) throw new StatsParseError(file, 'no "some" line');
  return full ? { some, full } : { some };
}

function parseDevice(token: string, file: string): [number, number] {
  const m = /^(\d+):(\d+)$/.exec(token);
  if (!m) throw new StatsParseError(file, `expected MAJOR:MINOR, got "${token}"`);
  return [Number(m[1]), Number(m[2])];
}

function deviceEntry(byDevice: Map<string, DeviceIo>, major: number, minor: number): DeviceIo {
  const key = `${major}:${minor}`;
  let entry = byDevice.get(key);
  if (!entry) {
    entry = { major, minor, readBytes: 0, writeBytes: 0, readOps: 0, writeOps: 0 };
    byDevice.set(key, entry);
  }
  return entry;
}

/**
 * Parses v2 io.stat: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353
 * dbytes=0 dios=0". An empty file is valid (no IO yet).
 * @param text file content
 * @param file path, for errors
 * @returns per-device counters
 * @throws {StatsParseError} on a malformed line
 */
export function parseIoStat(text: string, file: string): DeviceIo[] {
  const byDevice = new Map<string, DeviceIo>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const [dev, ...fields] = line.split(/\s+/);
    const [major, minor] = parseDevice(dev!, file);
    const entry = deviceEntry(byDevice, major, minor);
    for (const field of fields) {
      const eq = field.indexOf("=");
      if (eq <= 0) throw new StatsParseError(file, `expected key=value, got "${field}"`);
      const value = parseInteger(field.slice(eq + 1), file);
      switch (field.slice(0, eq)) {
        case "rbytes":
          entry.readBytes = value;
          break;
        case "wbytes":
          entry.writeBytes = value;
          break;
        case "rios":
          entry.readOps = value;
          break;
        case "wios":
          entry.writeOps = value;
          break;
          // dbytes/dios (discard) and newer keys are not part of our model.
      }
    }
  }
  return [...byDevice.values()];
}

/**
 * Parses a v1 blkio file ("8:0 Read 4096" lines, then "Total N"). An empty file
 * is valid (no IO, or a kernel that lists nothing).
 * @param text file content
 * @param file path, for errors
 * @param into per-device entries to add to (bytes and ops come from two files)
 * @param kind whether the numbers are bytes or operations
 * @throws {StatsParseError} on a malformed line
 */
export function parseBlkioInto(
  text: string,
  file: string,
  into: Map<string, DeviceIo>,
  kind: "bytes" | "ops",
): void {
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const parts = line.split(/\s+/);
    if (parts[0] === "Total") continue;
    if (parts.length !== 3) {
      throw new StatsParseError(file, `expected "MAJOR:MINOR Op value", got "${line}"`);
    }
    const [major, minor] = parseDevice(parts[0]!, file);
    const value = parseInteger(parts[2]!, file);
    const entry = deviceEntry(into, major, minor);
    if (parts[1] === "Read") {
      if (kind === "bytes") entry.readBytes = value;
      else entry.readOps = value;
    } else if (parts[1] === "Write") {
      if (kind === "bytes") entry.writeBytes = value;
      else entry.writeOps = value;
    }
    // Sync, Async, Discard and Total rows split or repeat Read/Write.
  }
}

/** One line of /proc/PID/cgroup. */
export interface ProcCgroupEntry {
  hierarchyId: number;
  /** Empty for the cgroup2 line ("0::/path"); named hierarchies keep their "name=" prefix. */
  controllers: string[];
  path: string;
}

/**
 * Parses /proc/PID/cgroup ("hierarchy-ID:controller-list:cgroup-path" lines).
 * @param text file content
 * @param file path, for errors
 * @returns one entry per line
 * @throws {StatsParseError} on an empty file or a malformed line
 */
export function parseProcCgroup(text: string, file: string): ProcCgroupEntry[] {
  const out: ProcCgroupEntry[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const first = line.indexOf(":");
    const second = line.indexOf(":", first + 1);
    if (first <= 0 || second < 0) {
      throw new StatsParseError(file, `expected "id:controllers:path", got "${line}"`);
    }
    const controllers = line.slice(first + 1, second);
    out.push({
      hierarchyId: parseInteger(line.slice(0, first), file),
      controllers: controllers === "" ? [] : controllers.split(","),
      path: line.slice(second + 1),
    });
  }
  if (out.length === 0) throw new StatsParseError(file, "file is empty");
  return out;
}
