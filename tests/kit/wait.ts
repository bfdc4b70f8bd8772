/**
 * Waiting on real things (containers, daemons, sockets) in integration and e2e tests,
 * and in the benchmarks and demo that drive a real agent: one poll with a deadline.
 * Unit tests never wait on the wall clock; they drive a FakeClock (./fake_time.ts).
 *
 * @module
 */

/** Options for {@link waitFor}. */
export interface WaitForOptions<T> {
  /** How long to keep polling (default 30 s). */
  timeoutMs?: number;
  /** The pause between two polls (default 250 ms). */
  intervalMs?: number;
  /**
   * When given, `check` returns an observation and this decides whether it is the one
   * awaited; the timeout error then shows the last observation. Without it, any value but
   * `undefined` and `false` ends the wait.
   */
  until?: (observed: T) => boolean;
  /**
   * A reason to stop before the deadline, asked after each failed poll (e.g. "exited" for
   * a process that died while it was awaited). A reason fails the wait at once.
   */
  giveUp?: () => string | undefined;
  /** A log whose last {@link LOG_TAIL_LINES} lines the timeout error quotes. */
  log?: () => string;
}

/** How much of a log a failed wait quotes. */
export const LOG_TAIL_LINES = 60;

/** What a failed {@link waitFor} throws: it names what was awaited and what was seen last. */
export class WaitTimeoutError extends Error {
  override name = "WaitTimeoutError";
}

/**
 * Polls `check` until it answers, then returns its answer. A `check` that throws counts
 * as "not yet" (a daemon still starting refuses connections); its last error is reported.
 *
 * ```ts
 * import { waitFor } from "./wait.ts";
 *
 * const health = await waitFor("the daemon healthy", async () => {
 *   const res = await fetch("http://127.0.0.1:10248/healthz");
 *   return { status: res.status, body: await res.text() };
 * }, { timeoutMs: 60_000, until: (seen) => seen.status === 200 });
 * ```
 *
 * @param what what is awaited, for the error message ("web Running")
 * @param check one poll: the awaited value, or `undefined`/`false` while not there yet
 * @param options timeout, interval, an `until` test of the observation, a log to quote
 * @returns the first answer of `check` that ends the wait (without `until`, never
 *   `undefined` or `false`)
 * @throws WaitTimeoutError naming `what`, the time waited, the last value `check`
 *   returned or threw, and the tail of `log`
 */
export function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options: WaitForOptions<T> & { until: (observed: T) => boolean },
): Promise<T>;
export function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options?: WaitForOptions<T>,
): Promise<Exclude<T, undefined | false>>;
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options: WaitForOptions<T> = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const intervalMs = options.intervalMs ?? 250;
  const started = Date.now();
  let polls = 0;
  let last: { value: T } | { error: unknown } | undefined;
  for (;;) {
    polls++;
    try {
      const value = await check();
      last = { value };
      const done = options.until ? options.until(value) : value !== undefined && value !== false;
      if (done) return value;
    } catch (error) {
      last = { error };
    }
    const reason = options.giveUp?.();
    const waited = Date.now() - started;
    if (reason !== undefined || waited > timeoutMs) {
      const why = reason ?? `timed out after ${waited} ms (${polls} polls)`;
      throw new WaitTimeoutError(
        `waiting for ${what}: ${why}; last ${describe(last)}${logTail(options.log)}`,
      );
    }
    await delay(intervalMs);
  }
}

/**
 * Resolves after `ms`. Only for a wait that is itself the property under test (how long
 * something takes, or that nothing happens for a while); say so where it is used.
 *
 * @param ms how long
 */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function describe(last: { value: unknown } | { error: unknown } | undefined): string {
  if (last === undefined) return "poll never ran";
  if ("error" in last) {
    return `poll threw: ${last.error instanceof Error ? last.error.message : String(last.error)}`;
  }
  return `observed: ${show(last.value)}`;
}

function show(value: unknown): string {
  if (value === undefined) return "undefined";
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 2_000 ? `${text.slice(0, 2_000)}… (${text.length} chars)` : text;
}

function logTail(log: (() => string) | undefined): string {
  if (log === undefined) return "";
  const lines = log().trimEnd().split("\n").slice(-LOG_TAIL_LINES).join("\n");
  return `\n--- log (last ${LOG_TAIL_LINES} lines) ---\n${lines}`;
}

/** A promise and the functions that settle it, for fakes the test answers by hand. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

/** A fresh {@link Deferred}. */
export function deferred<T>(): Deferred<T> {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  return { promise, resolve, reject };
}
