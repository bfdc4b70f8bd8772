/**
 * Gives the C heap's free pages back to the OS, now and then.
 *
 * Deno's own code (HTTP/2 for CRI, fetch and TLS for the apiserver, file
 * operations on its thread pool, V8's compiler threads) allocates with glibc
 * malloc. After a burst of work, say 30 pods started at once, much of that is
 * freed but stays in malloc's arenas, because glibc returns memory only from
 * the top of an arena. Measured on a node agent with 30 pods: 18.8 MB of its
 * 68.8 MB anonymous RSS was such free memory, and `malloc_trim(0)` gave it
 * back (docs/benchmarks.md). The trimmer calls it on a timer.
 *
 * Where there is no glibc (no `libc.so.6`, or no `malloc_trim` in it) the
 * trimmer does nothing.
 *
 * @module
 */

import type { Clock, Timer } from "./clock.ts";
import type { Logger } from "./log.ts";
import { everyAligned } from "./tick.ts";

/** How often the trimmer runs: a trim of an idle heap costs well under a millisecond. */
export const HEAP_TRIM_PERIOD_MS = 10_000;

type Libc = Deno.DynamicLibrary<{ malloc_trim: { parameters: ["usize"]; result: "i32" } }>;

let libc: Libc | null | undefined;

function openLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    libc = Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } });
  } catch {
    libc = null;
  }
  return libc;
}

/**
 * Returns every arena's free pages to the OS (glibc `malloc_trim(0)`).
 * @returns true when memory was released, false when none was or there is no glibc
 */
export function trimHeap(): boolean {
  const lib = openLibc();
  return lib !== null && lib.symbols.malloc_trim(0n) === 1;
}

/** Options for {@link HeapTrimmer}. */
export interface HeapTrimmerOptions {
  clock: Clock;
  logger: Logger;
  /** Default {@link HEAP_TRIM_PERIOD_MS}. */
  periodMs?: number;
  /** Aligns the timer to this grid (lib/util/tick.ts); 0 disables. */
  tickGridMs?: number;
  /** The trim itself; {@link trimHeap} unless a test injects one. */
  trim?: () => boolean;
}

/** Calls {@link trimHeap} every period. */
export class HeapTrimmer {
  #opts: HeapTrimmerOptions;
  #timer: Timer | undefined;

  /** @param opts clock, logger and period */
  constructor(opts: HeapTrimmerOptions) {
    this.#opts = opts;
  }

  /** Starts the timer; does nothing where there is no glibc. Idempotent. */
  start(): void {
    const { clock, logger, periodMs = HEAP_TRIM_PERIOD_MS, tickGridMs = 0 } = this.#opts;
    const trim = this.#opts.trim ?? (openLibc() ? trimHeap : undefined);
    if (this.#timer || !trim) return;
    this.#timer = everyAligned(clock, periodMs, tickGridMs, () => {
      const start = performance.now();
      const released = trim();
      logger.v(5).info("Trimmed the C heap", {
        released,
        ms: Math.round((performance.now() - start) * 100) / 100,
      });
    });
  }

  /** Stops the timer. */
  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
