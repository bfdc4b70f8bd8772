/**
 * Go-style durations ("20s", "1m30s", "500ms", "2h"): kubelet flags and
 * KubeletConfiguration fields are spelled so, and upstream's messages print
 * them so (CrashLoopBackOff's "back-off 5m0s", the image pull event's
 * "in 1.234s", PLEG's health message), which users and tools grep for.
 * Durations are milliseconds here, as everywhere in denolet.
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
 * Formats milliseconds exactly as Go's `time.Duration.String()` prints the
 * same duration: "0s"; under a second in the largest of ns, µs, ms that fits
 * ("250ms", "1.5µs"); else hours and minutes as integers, shown from the
 * largest non-zero one down, and seconds with up to nine fractional digits,
 * trailing zeros dropped ("1.5s", "1m0s", "2h0m0s", "1.234567s").
 * @param ms milliseconds; the fraction counts down to the nanosecond
 * @returns the Go spelling
 */
export function formatDuration(ms: number): string {
  if (ms < 0) return `-${formatDuration(-ms)}`;
  // Integer nanoseconds, exact for any whole number of ms a double holds.
  const whole = Math.trunc(ms);
  const ns = BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
  if (ns === 0n) return "0s";
  if (ns < 1_000n) return `${ns}ns`;
  if (ns < 1_000_000n) return `${decimal(ns, 3)}µs`;
  if (ns < 1_000_000_000n) return `${decimal(ns, 6)}ms`;
  const seconds = `${decimal(ns % 60_000_000_000n, 9)}s`;
  const minutes = ns / 60_000_000_000n;
  if (minutes === 0n) return seconds;
  const hours = minutes / 60n;
  if (hours === 0n) return `${minutes}m${seconds}`;
  return `${hours}h${minutes % 60n}m${seconds}`;
}

/** `value / 10^digits` in decimal, without trailing fractional zeros (Go's fmtFrac + fmtInt). */
function decimal(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  const fraction = (value % scale).toString().padStart(digits, "0").replace(/0+$/, "");
  return fraction === "" ? `${value / scale}` : `${value / scale}.${fraction}`;
}
