/**
 * Eviction reaction (issue #16: "from a threshold crossed to the first pod kill, p99 ≤ 1 s
 * with the threshold notifier"). Today's part: from a memory cgroup's usage crossing the
 * threshold to the notifier's handler running, on the real kernel, in a cgroup of the
 * bench's own (tests/integration/_memcg.ts: a `cat` in the cgroup appending to a tmpfs
 * file), for both ways of watching:
 *
 * - eventfd: cgroup v1's memory thresholds (cgroup.event_control), the kernel's signal;
 * - poll: memory.usage_in_bytes read every 250 ms on the real clock (the v2 way).
 *
 * Each round: usage brought to 1 MiB under the threshold, a random pause of 0–250 ms (so
 * the crossing falls at a random phase of the poll), then t0, then 2 MiB more; the
 * time is t0 → the handler's call (an upper bound: it includes `cat` copying the first
 * MiB). Then the file is truncated, the downward crossing awaited, and the next round
 * starts.
 *
 * The whole path, "threshold crossed → first pod kill" through the eviction manager on
 * a real containerd, is bench/eviction_kill.ts.
 *
 * `deno run -A bench/eviction.ts [--rounds=N]` prints the table; `deno task bench
 * --only=eviction` runs it as part of the benchmarks.
 *
 * @module
 */

import {
  type CgroupNotifier,
  cgroupUsageReader,
  EventfdCgroupNotifier,
  PollingCgroupNotifier,
} from "../lib/eviction/cgroup_notifier.ts";
import { realClock } from "../lib/util/clock.ts";
import { createLogger } from "../lib/util/log.ts";
import { createTestMemcg, type TestMemcg } from "../tests/integration/_memcg.ts";
import { percentile } from "./_percentile.ts";

const MiB = 1024 * 1024;
/** How far above the usage at the start the threshold is. */
const HEADROOM = 32 * MiB;
const POLL_INTERVAL_MS = 250;

/** What reacts to a crossing, armed for one threshold on one cgroup. */
export interface Reaction {
  /** A name for the table. */
  name: string;
  /**
   * Arms the reaction at `threshold` bytes of usage on `memcg`.
   * @returns `next()`: resolves with performance.now() at the next reaction; `stop()`
   */
  arm(memcg: TestMemcg, threshold: number): { next(): Promise<number>; stop(): Promise<void> };
}

/** A reaction that is the notifier's handler itself. */
function notifierReaction(
  name: string,
  make: (dir: string, t: number) => CgroupNotifier,
): Reaction {
  return {
    name,
    arm(memcg, threshold) {
      const notifier = make(memcg.dir, threshold);
      const queue: number[] = [];
      let waiting: ((at: number) => void) | undefined;
      notifier.start(() => {
        const at = performance.now();
        if (waiting) {
          waiting(at);
          waiting = undefined;
        } else queue.push(at);
      });
      return {
        next: () => {
          const queued = queue.shift();
          return queued !== undefined
            ? Promise.resolve(queued)
            : new Promise<number>((resolve) => waiting = resolve);
        },
        async stop() {
          notifier.stop();
          await notifier.stopped;
        },
      };
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let id: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    id = setTimeout(() => reject(new Error(`no reaction within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(id));
}

/**
 * Times `rounds` upward crossings of one reaction.
 * @returns the reaction times in ms
 */
async function timeCrossings(memcg: TestMemcg, reaction: Reaction, rounds: number) {
  const threshold = memcg.usage() + HEADROOM;
  const armed = reaction.arm(memcg, threshold);
  const times: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      await memcg.grow(Math.max(0, threshold - MiB - memcg.usage()));
      // A random phase: otherwise every crossing comes at the same point of a poll period
      // (the round starts at the tick that saw the previous downward crossing).
      await new Promise((resolve) => setTimeout(resolve, Math.random() * POLL_INTERVAL_MS));
      const t0 = performance.now();
      await memcg.grow(2 * MiB);
      const at = await withTimeout(armed.next(), 10_000, `${reaction.name} round ${i} up`);
      times.push(at - t0);
      await memcg.shrink();
      await withTimeout(armed.next(), 10_000, `${reaction.name} round ${i} down`);
    }
  } finally {
    await armed.stop();
  }
  return times;
}

/**
 * Runs every reaction over `rounds` crossings on one test cgroup.
 * @param rounds crossings per reaction
 * @returns the report's lines (Markdown)
 */
export async function runEvictionBench(rounds = 100): Promise<string[]> {
  const log = createLogger({ write: () => {} });
  const reactions: Reaction[] = [
    notifierReaction(
      "eventfd (cgroup v1 memory threshold)",
      (dir, threshold) => new EventfdCgroupNotifier({ cgroupDir: dir, threshold, log }),
    ),
    notifierReaction(
      `poll every ${POLL_INTERVAL_MS} ms (the cgroup v2 way)`,
      (dir, threshold) =>
        new PollingCgroupNotifier({
          cgroupDir: dir,
          threshold,
          readUsage: cgroupUsageReader(dir),
          clock: realClock,
          intervalMs: POLL_INTERVAL_MS,
          log,
        }),
    ),
  ];
  const memcg = await createTestMemcg(HEADROOM * 4);
  const rows: string[] = [];
  let pollCost = NaN;
  try {
    for (const reaction of reactions) {
      const ms = await timeCrossings(memcg, reaction, rounds);
      const p = (n: number) => `${percentile(ms, n).toFixed(2)} ms`;
      rows.push(`| ${reaction.name} | ${rounds} | ${p(50)} | ${p(99)} | ${p(100)} |`);
    }
    pollCost = timePollRead(memcg.dir);
  } finally {
    await memcg.close();
  }
  return [
    `### Eviction reaction: memory threshold crossed → notifier's handler (${rounds} crossings each)`,
    "",
    "| watched by | crossings | p50 | p99 | max |",
    "|---|---|---|---|---|",
    ...rows,
    "",
    `One poll (a read of the cgroup's usage file): ${(pollCost * 1000).toFixed(1)} µs, ${
      ((pollCost / POLL_INTERVAL_MS) * 100).toFixed(3)
    }% of a core at one poll per ${POLL_INTERVAL_MS} ms (median of ${POLL_READS} reads).`,
  ];
}

const POLL_READS = 2000;

/** The median time of one usage read, in ms. */
function timePollRead(dir: string): number {
  const read = cgroupUsageReader(dir);
  const times: number[] = [];
  for (let i = 0; i < POLL_READS; i++) {
    const t0 = performance.now();
    read();
    times.push(performance.now() - t0);
  }
  return percentile(times, 50);
}

if (import.meta.main) {
  const rounds = Deno.args.find((a) => a.startsWith("--rounds="));
  console.log((await runEvictionBench(rounds ? Number(rounds.slice(9)) : undefined)).join("\n"));
}
