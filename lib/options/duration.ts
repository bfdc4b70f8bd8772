/**
 * Go-style durations ("20s", "1m30s", "500ms", "2h"), as kubelet flags and
 * KubeletConfiguration fields spell them.
 *
 * @module
 */

const UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration into milliseconds.
 * @param text e.g. "1m30s"; "0" is allowed
 * @returns milliseconds
 * @throws {Error} naming the text when it is not a duration
 */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  let match: RegExpExecArray | null;
  while ((match = re.exec(s)) !== null) {
    total += Number(match[1]) * (UNITS[match[2]!] ?? NaN);
    pos = re.lastIndex;
  }
  if (pos === 0 || pos !== s.length || Number.isNaN(total)) {
    throw new Error(`invalid duration "${text}": want e.g. "20s", "1m30s", "500ms"`);
  }
  return total;
}

/**
 * Parses a Go duration that may carry a sign ("-1m", "+5s"), as
 * `time.ParseDuration` does for KubeletConfiguration fields, where a negative
 * value can mean "disabled" (e.g. volumeStatsAggPeriod).
 * @param text e.g. "-1m30s"
 * @returns milliseconds, negative for a leading "-"
 * @throws {Error} naming the text when it is not a duration
 */
export function parseSignedDuration(text: string): number {
  const s = text.trim();
  if (s.startsWith("-")) return -parseDuration(s.slice(1));
  if (s.startsWith("+")) return parseDuration(s.slice(1));
  return parseDuration(s);
}

/**
 * Formats milliseconds the way Go prints a duration ("3m0s", "1.5s", "-10s").
 * @param ms milliseconds
 * @returns the Go spelling
 */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 0) return `-${formatDuration(-ms)}`;
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
