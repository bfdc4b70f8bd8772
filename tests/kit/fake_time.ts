/**
 * Driving code that runs on a {@link FakeClock} from lib/util/clock.ts: letting pending
 * promise chains run, and moving time in steps so that async loops react between them.
 * No wall time passes in any of these.
 *
 * @module
 */

import type { FakeClock } from "../../lib/util/clock.ts";

/**
 * Lets resolved promises run their continuations: `rounds` microtask turns, no
 * macrotask (timers and I/O callbacks stay queued).
 *
 * @param rounds how many turns (a chain of n awaits needs about n)
 */
export async function flush(rounds = 100): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/**
 * Lets everything already queued run, macrotasks included: `turns` turns of the event
 * loop. For code that awaits settled promises from fakes (an answer that is itself a
 * resolved promise, a fetch to an in-process server).
 *
 * @param turns how many event-loop turns (a chain started by the previous turn needs one more)
 */
export async function settle(turns = 2): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Moves `clock` forward by `ms` in steps of `step`, settling after each so that loops
 * woken by a timer can arm the next one before time moves on.
 *
 * @param clock the fake clock
 * @param ms how far to move
 * @param step the largest single move (default 1 s)
 */
export async function advance(clock: FakeClock, ms: number, step = 1000): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.tick(Math.min(step, ms - t));
    await settle();
  }
}

/**
 * Moves `clock` in steps of `step` until `promise` settles, letting every ready
 * continuation run before each step.
 *
 * @param clock the fake clock
 * @param promise what to drive to completion
 * @param options `step` (default 100 ms) and `maxSteps` (default 10,000)
 * @returns what `promise` resolves to
 * @throws Error when it is still pending after `maxSteps` steps (or what it rejects with)
 */
export async function drive<T>(
  clock: FakeClock,
  promise: Promise<T>,
  options: { step?: number; maxSteps?: number } = {},
): Promise<T> {
  const step = options.step ?? 100;
  const maxSteps = options.maxSteps ?? 10_000;
  let done = false;
  const settled = promise.finally(() => (done = true));
  for (let i = 0; i < maxSteps && !done; i++) {
    await settle(1);
    if (!done) clock.tick(step);
  }
  if (!done) {
    throw new Error(`drive(): still pending after ${maxSteps} steps of ${step} fake ms`);
  }
  return await settled;
}

/**
 * Lets microtasks run until `cond` holds: the fake-clock counterpart of waitFor() from
 * ./wait.ts, for code that only waits on promises and the fake clock.
 *
 * @param what what is awaited, for the failure message
 * @param cond the condition
 * @param rounds how many microtask turns to allow (default 200)
 * @throws Error naming `what` when `cond` still fails after `rounds` turns
 */
export async function flushUntil(what: string, cond: () => boolean, rounds = 200): Promise<void> {
  for (let i = 0; i < rounds && !cond(); i++) await Promise.resolve();
  if (!cond()) throw new Error(`${what}: still not the case after ${rounds} microtask turns`);
}
