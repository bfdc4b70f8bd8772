/**
 * What the long suites (tests/faults, tests/fuzz, tests/scale) share: whether this is a
 * full run (`deno task faults|fuzz|scale`, tools/suite.ts) or the short slice the
 * default test run and CI take, the seed every random choice derives from, and the
 * report each test adds its figures to.
 *
 * - `DENOLET_SUITE=full` selects the full run; anything else (or unset) the slice.
 * - `DENOLET_SEED` fixes the seed (an unsigned 32-bit integer); a slice without one uses
 *   {@link SLICE_SEED}, so CI's slice is the same every run, and a full run without one
 *   draws a fresh seed and prints it.
 * - `DENOLET_SUITE_REPORT` names a JSON-lines file {@link recordSuite} appends to;
 *   tools/suite.ts sets it and turns it into the run's Markdown report.
 *
 * ```ts
 * import { suiteCount, suiteSeed, recordSuite } from "../kit/suite.ts";
 *
 * const seed = suiteSeed();
 * const kills = suiteCount({ slice: 5, full: 100 });
 * // ... on failure, name the seed: `seed ${seed}: pod x started twice`
 * await recordSuite({ suite: "faults", name: "agent SIGKILL", seed, figures: { kills } });
 * ```
 *
 * @module
 */

/** The seed of every slice run without DENOLET_SEED: CI repeats the same cases. */
export const SLICE_SEED = 20261202;

/** Which run this is: the full suite or the slice CI takes. */
export type SuiteMode = "full" | "slice";

/** @returns "full" under `DENOLET_SUITE=full`, else "slice" */
export function suiteMode(): SuiteMode {
  return Deno.env.get("DENOLET_SUITE") === "full" ? "full" : "slice";
}

/**
 * Picks a count (or any size) by the run's mode.
 * @param sizes the slice's and the full run's
 * @returns the one for this run
 */
export function suiteCount<T>(sizes: { slice: T; full: T }): T {
  return suiteMode() === "full" ? sizes.full : sizes.slice;
}

let drawn: number | undefined;

/**
 * The run's seed: DENOLET_SEED when set, else {@link SLICE_SEED} for a slice, else
 * one drawn once per process (and printed, so a failure can be replayed).
 * @throws Error when DENOLET_SEED is not an unsigned 32-bit integer
 */
export function suiteSeed(): number {
  const raw = Deno.env.get("DENOLET_SEED");
  if (raw !== undefined && raw !== "") {
    const seed = Number(raw);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new Error(`DENOLET_SEED must be an unsigned 32-bit integer, not "${raw}"`);
    }
    return seed;
  }
  if (suiteMode() === "slice") return SLICE_SEED;
  if (drawn === undefined) {
    drawn = crypto.getRandomValues(new Uint32Array(1))[0]!;
    console.log(`suite seed ${drawn} (replay with DENOLET_SEED=${drawn})`);
  }
  return drawn;
}

/**
 * A small seeded generator (mulberry32) for the suites' own random choices (moments
 * of a fault, which pod to touch); property tests take the seed into fast-check.
 * @param seed from {@link suiteSeed}
 * @returns a function giving floats in [0, 1)
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One test's entry in a suite's report. */
export interface SuiteRecord {
  /** faults, fuzz or scale. */
  suite: string;
  /** The test or scenario, as the report's row names it. */
  name: string;
  seed: number;
  /** What was done and measured: counts, durations (ms), sizes (bytes). */
  figures: Record<string, number | string>;
  /** Invariant violations, crashes, or other findings; empty when clean. */
  findings?: string[];
  /**
   * What the runtime did wrong, seen by the checks but no fault of the agent's (a removal
   * the runtime refuses to everyone, tests/faults/_invariants.ts): reported, not violations.
   */
  runtimeFindings?: string[];
}

/**
 * Appends a record to the report file tools/suite.ts named; without one (a plain
 * `deno task test` run) prints it as one JSON line so the figures still show.
 * @param record the test's figures
 */
export async function recordSuite(record: SuiteRecord): Promise<void> {
  const line = JSON.stringify({ ...record, mode: suiteMode(), at: new Date().toISOString() });
  const file = Deno.env.get("DENOLET_SUITE_REPORT");
  if (file === undefined || file === "") {
    console.log(`suite record ${line}`);
    return;
  }
  await Deno.writeTextFile(file, `${line}\n`, { append: true });
}
