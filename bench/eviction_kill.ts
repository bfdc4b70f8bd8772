/**
 * Eviction reaction, the whole path (issue #16: "from a threshold crossed to the
 * first pod kill, p99 ≤ 1 s with the threshold notifier"): a real
 * EvictionManager built by the agent's own createEvictionManager (lib/agent/
 * eviction.ts), on a kubelet driving a real containerd (tests/integration/
 * _eviction.ts), with the stats provider at the agent's default housekeeping
 * (`--housekeeping-interval=10s`, dynamic).
 *
 * The threshold is `allocatableMemory.available` on the bench's own pods cgroup
 * (`<runtime's cgroup parent>/kubepods`, limited by the bench to its usage + 512 MiB,
 * as enforceNodeAllocatable would limit it): `--eviction-hard=memory.available<256Mi`,
 * whose allocatable copy is met once the pods' working set grows by 256 MiB. Each
 * round a BestEffort pod allocates 384 MiB (`dd bs=384M count=1 | sleep`, its buffer
 * held while the pipe is full); nothing outside the test's cgroups is written.
 *
 * - t0, the crossing: the first moment the pods' cgroup's working set (its
 *   usage − inactive_file, as the Summary computes it), read by the bench every
 *   millisecond or so from the moment the pod is sent, is above limit − 256 MiB;
 * - t1, the kill: the eviction manager's kill update (evict set) reaching the
 *   kubelet's pod workers (upstream killPodNow's UpdatePod).
 *
 * Ways of watching, each over the same rounds:
 * - off: no notifier; the manager's 10 s rounds alone (upstream's default,
 *   kernelMemcgNotification false);
 * - poll: the agent's default wiring (memoryCgroups; kernelMemcgNotification
 *   off → each memory threshold's cgroup read every 500 ms: the root for
 *   memory.available, read only, and the pods' cgroup for its allocatable copy);
 * - eventfd: a cgroup v1 memory threshold on the pods' cgroup for
 *   allocatableMemory.available only (never on the machine's root cgroup).
 *
 * The manager's first round, a round a notifier triggered and the round after an
 * eviction's cleanup read every cgroup at the call (the agent's
 * `summary({ fresh: true })`, upstream's summaryProvider.Get(ctx, updateStats=true));
 * the 10 s rounds read housekeeping's samples.
 *
 * Between rounds the bench waits for MemoryPressure to go (transition period 0 s),
 * since a BestEffort pod is refused under it, and for the stats to stop showing
 * the last pod: a new manager's first round on a stale sample evicts the next pod
 * before it allocates anything.
 *
 * `deno run -A bench/eviction_kill.ts [--rounds=N]`; `deno task bench --only=eviction-kill`.
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import { cgroupRefFromPath, detectCgroupLayout, readCgroupStats } from "../lib/cgroup/mod.ts";
import type { EvictionManager, ThresholdNotifier } from "../lib/eviction/mod.ts";
import { createMemoryNotifiers } from "../lib/eviction/memory_threshold_notifier.ts";
import type { UpdatePodOptions } from "../lib/pod_workers/types.ts";
import { realClock } from "../lib/util/clock.ts";
import { silentLogger } from "../lib/util/log.ts";
import { startTestRuntime } from "../tests/harness/mod.ts";
import { createCgroupParent } from "../tests/harness/mounts.ts";
import { recordingEvents } from "../tests/kit/events.ts";
import { hostNetworkPod, waitFor } from "../tests/kit/mod.ts";
import { type EvictionRig, startEvictionRig } from "../tests/integration/_eviction.ts";
import { percentile } from "./_percentile.ts";

const Mi = 2 ** 20;
const THRESHOLD_MI = 256;
/** The pods' cgroup's limit above its usage at the start. */
const LIMIT_HEADROOM = 512 * Mi;
const ALLOCATION_MI = 384;
const HOUSEKEEPING_MS = 10_000;

/** A way of watching the threshold between the manager's rounds. */
export type Watch = "off" | "poll" | "eventfd";
const WATCHES: Watch[] = ["off", "poll", "eventfd"];

interface Round {
  /** t0 → t1, ms. */
  reactionMs: number;
  /** Pod sent → t0, ms (start-up and allocation). */
  startMs: number;
}

/**
 * Runs the rounds for each way of watching on one runtime and kubelet.
 * @param rounds evictions per way of watching
 * @returns the report's lines (Markdown)
 */
export async function runEvictionKillBench(
  rounds = 4,
  watches: readonly Watch[] = WATCHES,
): Promise<string[]> {
  const rt = await startTestRuntime({ name: "evbench" });
  const layout = detectCgroupLayout();
  const memMount = layout.v1.memory ?? layout.unified;
  if (memMount === undefined) throw new Error("no memory cgroup hierarchy");
  const kubepods = `${rt.cgroupParent}/kubepods`;
  const ref = cgroupRefFromPath(kubepods);
  const workingSet = () => readCgroupStats(layout, ref).memory?.workingSetBytes ?? NaN;
  const results = new Map<Watch, Round[]>();
  let node: EvictionRig | undefined;
  let limit = 0;
  const loadBefore = Deno.loadavg()[0]!;
  try {
    // The pods' cgroup and its limit, before the stats provider first reads it.
    createCgroupParent(kubepods);
    const usageFile = layout.v1.memory !== undefined ? "memory.usage_in_bytes" : "memory.current";
    const usage0 = Number(Deno.readTextFileSync(`${memMount}${kubepods}/${usageFile}`).trim());
    limit = Math.ceil((usage0 + LIMIT_HEADROOM) / 4096) * 4096;
    Deno.writeTextFileSync(
      `${memMount}${kubepods}/${
        layout.v1.memory !== undefined ? "memory.limit_in_bytes" : "memory.max"
      }`,
      String(limit),
    );
    node = await startEvictionRig(rt, { housekeeping: { intervalMs: HOUSEKEEPING_MS } });
    const crossingWs = limit - THRESHOLD_MI * Mi;
    for (const watch of watches) {
      results.set(
        watch,
        await watchRounds(node, watch, rounds, { kubepods, layout, crossingWs, workingSet }),
      );
    }
  } finally {
    await node?.stop();
    await rt.stop();
  }
  const loadAfter = Deno.loadavg()[0]!;
  const rows = watches.map((w) => {
    const r = results.get(w)!;
    const ms = r.map((x) => x.reactionMs);
    const s = (v: number) => `${(v / 1000).toFixed(2)} s`;
    return `| ${w} | ${r.length} | ${s(percentile(ms, 50))} | ${s(percentile(ms, 99))} | ${
      s(Math.min(...ms))
    } | ${s(percentile(r.map((x) => x.startMs), 50))} |`;
  });
  return [
    `### Eviction reaction: pods' working set crosses allocatableMemory.available → kill update to the pod workers (${rounds} evictions each)`,
    "",
    `Real containerd, createEvictionManager, housekeeping every ${
      HOUSEKEEPING_MS / 1000
    } s (dynamic); pods' cgroup limit ${
      (limit / Mi).toFixed(0)
    } MiB, threshold ${THRESHOLD_MI}Mi, ` +
    `a BestEffort pod allocating ${ALLOCATION_MI} MiB per round. 1-min load ${
      loadBefore.toFixed(1)
    } → ${loadAfter.toFixed(1)}.`,
    "",
    "| notifier | evictions | p50 | p99 | min | pod sent → crossing (p50) |",
    "|---|---|---|---|---|---|",
    ...rows,
    "",
  ];
}

interface Where {
  kubepods: string;
  layout: ReturnType<typeof detectCgroupLayout>;
  crossingWs: number;
  workingSet: () => number;
}

async function watchRounds(
  node: EvictionRig,
  watch: Watch,
  rounds: number,
  where: Where,
): Promise<Round[]> {
  const kills = new Map<string, number>();
  const k = node.kubelet;
  let notifiers: ThresholdNotifier[] | undefined;
  const how = watch;
  if (how === "off") notifiers = [];
  if (how === "eventfd") {
    notifiers = createMemoryNotifiers({
      thresholds: [{
        signal: "allocatableMemory.available",
        value: { quantity: THRESHOLD_MI * Mi },
        gracePeriodMs: 0,
      }],
      podCgroupRoot: where.kubepods,
      layout: where.layout,
      // Called only once the manager is started.
      handler: (message) => eviction.trigger(message),
      clock: realClock,
      log: silentLogger,
      pollOnly: false,
    });
  }
  const eviction: EvictionManager = node.createEviction([
    `--eviction-hard=memory.available<${THRESHOLD_MI}Mi`,
    "--eviction-pressure-transition-period=0s",
  ], {
    events: recordingEvents(),
    kubelet: () => ({
      podWorkers: {
        updatePod: (u: UpdatePodOptions) => {
          if (u.type === "kill" && u.evict) kills.set(u.pod.metadata.uid!, performance.now());
          k.podWorkers.updatePod(u);
        },
        podIsFinished: (uid: string) => k.podWorkers.podIsFinished(uid),
      },
      allocatedActivePods: () => k.allocatedActivePods(),
    }),
    ...(notifiers
      ? { notifiers }
      : { memoryCgroups: { layout: where.layout, podCgroupRoot: where.kubepods } }),
  });
  eviction.start();
  const out: Round[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      // A clean start: no pressure, and the stats no longer show the last hog.
      await waitFor(`${watch}: MemoryPressure gone`, async () => {
        if (eviction.isUnderMemoryPressure()) return undefined;
        const s = await node.stats.summary({ onlyCpuAndMemory: true });
        const ws = s.node.systemContainers?.find((c) => c.name === "pods")?.memory
          ?.workingSetBytes;
        return (ws !== undefined && ws < where.crossingWs) || undefined;
      }, { timeoutMs: 90_000, intervalMs: 100 });
      const hog: Pod = hostNetworkPod(node.images.busybox, {
        name: `hog-${watch}-${i}`,
        containers: [{
          name: "main",
          command: ["sh", "-c", `dd if=/dev/zero bs=${ALLOCATION_MI}M count=1 | sleep 3600`],
        }],
      });
      const uid = hog.metadata.uid!;
      const sent = performance.now();
      node.add(hog);
      const t0 = await crossing(where, 60_000).catch((err) => {
        const st = k.statuses.getPodStatus(uid);
        throw new Error(`${watch} round ${i}: hog ${JSON.stringify(st)}`, {
          cause: err,
        });
      });
      const t1 = await waitFor(`${watch} round ${i}: the hog killed`, () => kills.get(uid), {
        timeoutMs: 90_000,
        intervalMs: 20,
      });
      out.push({ reactionMs: t1 - t0, startMs: t0 - sent });
      console.error(`eviction-kill: ${watch} round ${i}: ${(t1 - t0).toFixed(0)} ms`);
      await waitFor(`${watch} round ${i}: the hog Failed and finished`, () => {
        return (node.status(hog)?.phase === "Failed" && k.podWorkers.podIsFinished(uid)) ||
          undefined;
      }, { timeoutMs: 60_000, intervalMs: 100 });
    }
  } finally {
    await eviction.stop();
  }
  return out;
}

/** Reads the pods' working set until it is above the crossing; returns when it was read. */
async function crossing(where: Where, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    let ws = NaN;
    try {
      ws = where.workingSet();
    } catch {
      // not made yet
    }
    const at = performance.now();
    if (ws > where.crossingWs) return at;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`the pods' working set did not cross ${where.crossingWs} in ${timeoutMs} ms`);
}

if (import.meta.main) {
  const rounds = Deno.args.find((a) => a.startsWith("--rounds="));
  const watches = Deno.args.find((a) => a.startsWith("--watches="));
  console.log(
    (await runEvictionKillBench(
      rounds ? Number(rounds.slice(9)) : undefined,
      watches ? watches.slice(10).split(",") as Watch[] : undefined,
    )).join("\n"),
  );
}
