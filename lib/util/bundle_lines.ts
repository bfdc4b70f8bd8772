/**
 * Where each line of the bundled agent came from, so that a bundled agent's klog caller
 * still reads `kubelet.ts:42`.
 *
 * tools/bundle.ts builds the agent into one JavaScript file (`dist/denolet.js`, the program
 * `deno task compile` puts in the binary) without a source map: Deno keeps a loaded source
 * map in memory for the life of the process, several MiB for the agent. Instead the bundle
 * carries this table, read from the source map once at build time: runs of bundle lines
 * that map to consecutive lines of one source file. {@link sourceLine} answers for one
 * line of the bundle.
 *
 * @module
 */

/** The table, as the bundle's preamble defines it (see {@link BUNDLE_LINES_KEY}). */
export interface BundleLines {
  /** The source files as the source map names them (`../lib/agent/kubelet.ts`), by index. */
  files: string[];
  /**
   * Base64 of little-endian uint16 triples, one per run, in bundle order: the run's first
   * bundle line less the previous run's first line (the first run's: its line, 1-based),
   * the file's index, the source line (1-based) of the run's first line.
   */
  runs: string;
}

/** The global symbol's key under which the bundle's preamble puts its {@link BundleLines}. */
export const BUNDLE_LINES_KEY = "denolet.bundle-lines";

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < B64.length; i++) B64_VALUE[B64.charCodeAt(i)] = i;

/**
 * One line of a source map's `mappings` decoded: its segments' fields (Base64 VLQ).
 * @throws {Error} on a character that is not Base64
 */
function segments(line: string): number[][] {
  const out: number[][] = [];
  for (const seg of line.split(",")) {
    if (seg === "") continue;
    const fields: number[] = [];
    let value = 0;
    let shift = 0;
    for (let i = 0; i < seg.length; i++) {
      const digit = B64_VALUE[seg.charCodeAt(i)] ?? -1;
      if (digit < 0) throw new Error(`source map: ${JSON.stringify(seg[i])} is not Base64 VLQ`);
      value += (digit & 31) * 2 ** shift;
      if (digit & 32) {
        shift += 5;
      } else {
        fields.push(value % 2 === 1 ? -((value - 1) / 2) : value / 2);
        value = 0;
        shift = 0;
      }
    }
    out.push(fields);
  }
  return out;
}

/**
 * The table of a source map (version 3, as esbuild writes it for `deno bundle`).
 * @param map the source map's JSON, parsed
 * @param shift lines the bundle has above where the map puts them (negative: fewer); lines
 *   moved above the first are left out
 * @returns the runs, each line's source taken from its first mapped segment
 * @throws {Error} when a figure does not fit the table's uint16s
 */
export function bundleLinesOf(
  map: { sources: string[]; mappings: string },
  shift = 0,
): BundleLines {
  const triples: number[] = [];
  let source = 0;
  let sourceLine = 0;
  let last: { bundleLine: number; source: number; sourceLine: number } | undefined;
  const lines = map.mappings.split(";");
  for (let i = 0; i < lines.length; i++) {
    let first: [number, number] | undefined;
    for (const f of segments(lines[i]!)) {
      if (f.length < 4) continue;
      source += f[1]!;
      sourceLine += f[2]!;
      first ??= [source, sourceLine];
    }
    const bundleLine = i + 1 + shift;
    if (first === undefined || bundleLine < 1) continue;
    const [src, line] = [first[0], first[1] + 1];
    if (last?.source === src && last.sourceLine + (bundleLine - last.bundleLine) === line) continue;
    const fields = [bundleLine - (last?.bundleLine ?? 0), src, line];
    if (fields.some((n) => n < 0 || n > 0xffff)) {
      throw new Error(`source map: line ${bundleLine} maps to ${fields} (beyond uint16)`);
    }
    triples.push(...fields);
    last = { bundleLine, source: src, sourceLine: line };
  }
  const bytes = new Uint8Array(triples.length * 2);
  const view = new DataView(bytes.buffer);
  triples.forEach((n, i) => view.setUint16(i * 2, n, true));
  let runs = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    runs += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return { files: map.sources, runs: btoa(runs) };
}

/** The runs decoded: first bundle lines, file indexes, source lines. */
interface Decoded {
  starts: Uint32Array;
  files: Uint16Array;
  lines: Uint16Array;
}

const decoded = new WeakMap<BundleLines, Decoded>();

function decode(table: BundleLines): Decoded {
  let d = decoded.get(table);
  if (d !== undefined) return d;
  const raw = atob(table.runs);
  const n = Math.floor(raw.length / 6);
  d = { starts: new Uint32Array(n), files: new Uint16Array(n), lines: new Uint16Array(n) };
  let start = 0;
  const u16 = (at: number) => raw.charCodeAt(at) | (raw.charCodeAt(at + 1) << 8);
  for (let i = 0; i < n; i++) {
    start += u16(i * 6);
    d.starts[i] = start;
    d.files[i] = u16(i * 6 + 2);
    d.lines[i] = u16(i * 6 + 4);
  }
  decoded.set(table, d);
  return d;
}

/**
 * The source file and line of one line of the bundle.
 * @param table the bundle's table
 * @param bundleLine a line of the bundle (1-based)
 * @returns the file (as the source map names it) and line, or undefined before the first
 *   mapped line
 */
export function sourceLine(
  table: BundleLines,
  bundleLine: number,
): { file: string; line: number } | undefined {
  const d = decode(table);
  let lo = 0;
  let hi = d.starts.length - 1;
  if (hi < 0 || bundleLine < d.starts[0]!) return undefined;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (d.starts[mid]! <= bundleLine) lo = mid;
    else hi = mid - 1;
  }
  return {
    file: table.files[d.files[lo]!] ?? "???",
    line: d.lines[lo]! + (bundleLine - d.starts[lo]!),
  };
}
