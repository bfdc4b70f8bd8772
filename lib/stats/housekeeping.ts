/**
 * Per-container housekeeping, as cAdvisor does it for the kubelet: each
 * container has its own timer; a tick reads the container's cgroup and stores a
 * compact sample in the container's ring (the last 2 minutes by default). The
 * interval is 10s stretched by jitter (cAdvisor: `jitter(interval, 1.0)`, a
 * delay in [interval, 2×interval)), and with dynamic housekeeping it doubles,
 * up to 15s, while a container's figures do not change. The node has its own
 * entry ({@link NODE_ID}) fed from /proc.
 *
 * The first sample is taken on the next timer turn after {@link Housekeeper.track}.
 * Nothing here writes anything; a tick only reads cgroup and /proc files. The
 * cgroup files a tick reads stay open between ticks (a {@link CgroupFileCache}
 * owned by the entry) and are closed when the entry is untracked.
 *
 * @module
 */

import { type CgroupStats, isCgroupNotFound } from "../cgroup/mod.ts";
import { type CgroupFileCache, cgroupFileCache, withCachedReads } from "../cgroup/mod.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { ringCapacity, SampleRing } from "./ring_buffer.ts";
import { alignedDelay } from "../util/tick.ts";

/** The id under which the node itself is tracked (cAdvisor's root container). */
export const NODE_ID = "/";

/** Columns of a sample row, in order. Units: ms, ns, bytes, counts, µs (PSI totals). */
export const SAMPLE_FIELDS = [
  "timestampMs",
  "cpuUsageNs",
  "cpuUserNs",
  "cpuSystemNs",
  "cpuPeriods",
  "cpuThrottledPeriods",
  "cpuThrottledNs",
  "memoryUsageBytes",
  "memoryWorkingSetBytes",
  "memoryRssBytes",
  "memoryCacheBytes",
  "memoryPageFaults",
  "memoryMajorPageFaults",
  "memoryLimitBytes",
  "memoryOomKills",
  "memoryLimitHits",
  "ioReadBytes",
  "ioWriteBytes",
  "ioReadOps",
  "ioWriteOps",
  "pidsCurrent",
  "pidsMax",
  "cpuPressureSomeUs",
  "memoryPressureSomeUs",
  "memoryPressureFullUs",
  "ioPressureSomeUs",
  "ioPressureFullUs",
] as const;

/** A column name. */
export type SampleField = typeof SAMPLE_FIELDS[number];

/**
 * A decoded sample: absent values are absent keys; an unlimited memory or pids
 * limit is `Infinity`. IO is summed over devices.
 */
export type Sample =
  & { timestampMs: number }
  & Partial<Record<Exclude<SampleField, "timestampMs">, number>>;

/** Numbers per sample row. */
export const SAMPLE_WIDTH: number = SAMPLE_FIELDS.length;

const FIELD = Object.fromEntries(SAMPLE_FIELDS.map((name, i) => [name, i])) as Record<
  SampleField,
  number
>;

/**
 * Encodes a cgroup reading into a sample row (NaN where absent).
 * @param stats the reading
 * @param timestampMs when it was taken
 * @returns the row, SAMPLE_WIDTH numbers
 */
export function encodeSample(stats: CgroupStats, timestampMs: number): Float64Array {
  // Straight-line stores by column index: every container, every tick.
  const row = new Float64Array(SAMPLE_WIDTH).fill(NaN);
  row[0] = timestampMs;
  const { cpu, memory, io, pids, pressure } = stats;
  if (cpu !== undefined) {
    row[1] = cpu.usageNs;
    put(row, 2, cpu.userNs);
    put(row, 3, cpu.systemNs);
    put(row, 4, cpu.periods);
    put(row, 5, cpu.throttledPeriods);
    put(row, 6, cpu.throttledNs);
  }
  if (memory !== undefined) {
    row[7] = memory.usageBytes;
    row[8] = memory.workingSetBytes;
    put(row, 9, memory.rssBytes);
    put(row, 10, memory.cacheBytes);
    put(row, 11, memory.pageFaults);
    put(row, 12, memory.majorPageFaults);
    put(row, 13, memory.limitBytes);
    put(row, 14, memory.oomKills);
    put(row, 15, memory.limitHits);
  }
  if (io !== undefined) {
    let readBytes = 0, writeBytes = 0, readOps = 0, writeOps = 0;
    for (const d of io) {
      readBytes += d.readBytes;
      writeBytes += d.writeBytes;
      readOps += d.readOps;
      writeOps += d.writeOps;
    }
    row[16] = readBytes;
    row[17] = writeBytes;
    row[18] = readOps;
    row[19] = writeOps;
  }
  if (pids !== undefined) {
    row[20] = pids.current;
    put(row, 21, pids.max);
  }
  if (pressure !== undefined) {
    put(row, 22, pressure.cpu?.some.totalUs);
    put(row, 23, pressure.memory?.some.totalUs);
    put(row, 24, pressure.memory?.full?.totalUs);
    put(row, 25, pressure.io?.some.totalUs);
    put(row, 26, pressure.io?.full?.totalUs);
  }
  return row;
}

/** Stores a value: absent stays NaN, `null` (unlimited) is Infinity. */
function put(row: Float64Array, column: number, v: number | null | undefined): void {
  if (v !== undefined) row[column] = v === null ? Infinity : v;
}

/**
 * Decodes a sample row.
 * @param row SAMPLE_WIDTH numbers
 * @returns the sample, without the absent (NaN) columns
 */
export function decodeSample(row: ArrayLike<number>): Sample {
  const out: Record<string, number> = {};
  for (let i = 0; i < SAMPLE_WIDTH; i++) {
    const v = row[i];
    if (v !== undefined && !Number.isNaN(v)) out[SAMPLE_FIELDS[i]!] = v;
  }
  return out as Sample;
}

/**
 * CPU rate between two samples in nanocores (ns of CPU per s of wall time),
 * the Summary API's usageNanoCores.
 * @param older the earlier sample
 * @param newer the later sample
 * @returns nanocores, or undefined when a sample lacks CPU, time did not move or
 *   the counter went backwards (the cgroup was recreated)
 */
export function nanoCoresBetween(older: Sample, newer: Sample): number | undefined {
  const a = older.cpuUsageNs;
  const b = newer.cpuUsageNs;
  if (a === undefined || b === undefined) return undefined;
  return cpuRate(a, b, newer.timestampMs - older.timestampMs);
}

function cpuRate(a: number, b: number, dtMs: number): number | undefined {
  if (dtMs <= 0 || b < a) return undefined;
  return Math.round(((b - a) * 1000) / dtMs);
}

/** Reads one container's cgroup (or the node's /proc figures). */
export type Collector = () => CgroupStats;

/** Options for {@link Housekeeper}. */
export interface HousekeeperOptions {
  clock: Clock;
  /** Base interval, `--housekeeping-interval`; 10s. */
  intervalMs?: number;
  /**
   * Rounds each timer's deadline to this grid (see lib/util/tick.ts) so the
   * containers due in the same step share one wake-up; 0 (default) disables.
   */
  tickGridMs?: number;
  /** Ceiling for dynamic housekeeping; 15s (the kubelet's maxHousekeepingInterval). */
  maxIntervalMs?: number;
  /** Stretch the interval while figures do not change; true, as in the kubelet. */
  dynamic?: boolean;
  /** Each delay is interval × (1 + random × jitterFactor); 1.0 as in cAdvisor. */
  jitterFactor?: number;
  /** How long samples are kept; 2 min (cAdvisor's storage duration). */
  storageMs?: number;
  /** Random source in [0, 1), for tests. */
  random?: () => number;
  log?: Logger;
  /**
   * Keep each container's newest full reading for {@link Housekeeper.latestStats}
   * (per-device IO, PSI averages); true. It costs about 1.5 KB per container
   * in V8 objects beside the 2.8 KB ring.
   */
  keepLatestStats?: boolean;
  /**
   * Where collectors' cgroup files stay open between ticks; the process-wide
   * cache by default, `null` to open and close every file on every tick.
   */
  fileCache?: CgroupFileCache | null;
  /**
   * Read limit files (memory.max, pids.max; v1 memory.limit_in_bytes) and
   * the OOM event counters (memory.events; v1 memory.oom_control) on the
   * first tick and then every this many ticks, keeping the last value in
   * between; {@link LIMIT_REFRESH_TICKS}. 1 reads them on every tick.
   */
  limitRefreshTicks?: number;
}

/**
 * Limits are re-read every 6th tick (about a minute at 10s), and on the tick
 * after a failed one. cAdvisor likewise keeps limits out of its per-tick
 * stats read: they are part of a container's spec, read when the container
 * is created and refreshed by GetInfo at most every 5s, not by
 * housekeeping. Limits change only when a container is updated (in-place
 * resize), so a sample may show the old limit for up to this many ticks.
 * The OOM event counters (memory.events, v1 memory.oom_control) go with them:
 * runc's stats, which cAdvisor's housekeeping reads, do not read those files
 * at all (v2's container_memory_failcnt stays 0 upstream); ours are at most
 * this many ticks late.
 */
export const LIMIT_REFRESH_TICKS = 6;

interface Entry {
  collect: Collector;
  ring: SampleRing;
  timer?: Timer;
  intervalMs: number;
  /** Ticks since the limits were last read (see {@link LIMIT_REFRESH_TICKS}). */
  sinceLimits: number;
  last?: CgroupStats;
  /** The newest sample decoded, until the next push: every scrape asks for it. */
  latest?: Sample;
  lastError?: unknown;
}

/** One timer and one sample ring per tracked container. */
export class Housekeeper {
  readonly #clock: Clock;
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #dynamic: boolean;
  readonly #jitter: number;
  readonly #grid: number;
  readonly #capacity: number;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #keepLatest: boolean;
  readonly #files: CgroupFileCache | null;
  readonly #limitTicks: number;
  readonly #entries = new Map<string, Entry>();

  /** @param opts clock, interval, jitter and storage duration */
  constructor(opts: HousekeeperOptions) {
    this.#clock = opts.clock;
    this.#baseMs = opts.intervalMs ?? 10_000;
    this.#maxMs = Math.max(this.#baseMs, opts.maxIntervalMs ?? 15_000);
    this.#dynamic = opts.dynamic ?? true;
    this.#jitter = opts.jitterFactor ?? 1.0;
    this.#grid = opts.tickGridMs ?? 0;
    this.#capacity = ringCapacity(opts.storageMs ?? 120_000, this.#baseMs);
    this.#random = opts.random ?? Math.random;
    this.#log = opts.log ?? silentLogger;
    this.#keepLatest = opts.keepLatestStats ?? true;
    this.#files = opts.fileCache === undefined ? cgroupFileCache : opts.fileCache;
    this.#limitTicks = Math.max(1, Math.floor(opts.limitRefreshTicks ?? LIMIT_REFRESH_TICKS));
  }

  /** Samples kept per container. */
  get capacity(): number {
    return this.#capacity;
  }

  /**
   * Starts housekeeping a container; a no-op when it is already tracked.
   * @param id container id (or {@link NODE_ID})
   * @param collect reads its cgroup; may throw (logged, the timer keeps going)
   */
  track(id: string, collect: Collector): void {
    if (this.#entries.has(id)) return;
    const entry: Entry = {
      collect,
      ring: new SampleRing(this.#capacity, SAMPLE_WIDTH),
      intervalMs: this.#baseMs,
      sinceLimits: 0,
    };
    this.#entries.set(id, entry);
    entry.timer = this.#clock.setTimeout(() => this.#tick(id, entry), 0);
  }

  /**
   * Stops housekeeping a container, drops its samples and closes the files
   * only it kept open.
   * @param id container id
   * @returns whether it was tracked
   */
  untrack(id: string): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    entry.timer?.cancel();
    this.#entries.delete(id);
    this.#files?.release(entry);
    return true;
  }

  /**
   * Makes the tracked set equal to `wanted`: starts the new, stops the gone.
   * @param wanted collectors by container id
   */
  reconcile(wanted: ReadonlyMap<string, Collector>): void {
    for (const id of [...this.#entries.keys()]) if (!wanted.has(id)) this.untrack(id);
    for (const [id, collect] of wanted) this.track(id, collect);
  }

  /** Ids being housekept. */
  ids(): string[] {
    return [...this.#entries.keys()];
  }

  /**
   * The samples of a container, oldest first.
   * @param id container id
   * @returns decoded samples; [] when untracked or not sampled yet
   */
  samples(id: string): Sample[] {
    const ring = this.#entries.get(id)?.ring;
    if (!ring) return [];
    const out: Sample[] = [];
    for (let i = 0; i < ring.length; i++) out.push(decodeSample(ring.at(i)!));
    return out;
  }

  /**
   * The newest sample, decoded once per tick: callers must not mutate it.
   * @param id container id
   * @returns the sample, or undefined
   */
  latest(id: string): Sample | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.latest === undefined) {
      const row = entry.ring.at(-1);
      if (row !== undefined) entry.latest = decodeSample(row);
    }
    return entry.latest;
  }

  /**
   * The newest full reading (per-device IO, PSI averages). Callers must not
   * mutate it.
   * @param id container id
   */
  latestStats(id: string): CgroupStats | undefined {
    return this.#entries.get(id)?.last;
  }

  /**
   * The error of the last tick, if it failed.
   * @param id container id
   */
  lastError(id: string): unknown {
    return this.#entries.get(id)?.lastError;
  }

  /**
   * CPU usage rate from the two newest samples.
   * @param id container id
   * @returns nanocores, or undefined with fewer than two usable samples
   */
  usageNanoCores(id: string): number | undefined {
    const ring = this.#entries.get(id)?.ring;
    if (!ring || ring.length < 2) return undefined;
    // Two cells of two rows, read in place: every scrape asks this of every entry.
    const cpu = FIELD.cpuUsageNs;
    const a = ring.value(-2, cpu)!;
    const b = ring.value(-1, cpu)!;
    const dtMs = ring.value(-1, 0)! - ring.value(-2, 0)!;
    return Number.isNaN(a) || Number.isNaN(b) ? undefined : cpuRate(a, b, dtMs);
  }

  /**
   * Bytes held for a container: its ring plus an estimate of the last full
   * reading (its JSON size, a fair proxy for a small object of numbers).
   * @param id container id
   */
  footprintBytes(id: string): number {
    const entry = this.#entries.get(id);
    if (!entry) return 0;
    return entry.ring.byteLength + (entry.last ? JSON.stringify(entry.last).length : 0);
  }

  /** Stops every timer and closes every file kept open for a collector. */
  stop(): void {
    for (const id of this.ids()) this.untrack(id);
  }

  /**
   * Reads every tracked cgroup now, between its timer's ticks (the timers keep
   * their schedule): upstream's stats "no older than now" for the eviction
   * manager (summaryProvider.Get(ctx, updateStats=true)).
   */
  refresh(): void {
    for (const [id, entry] of this.#entries) this.#sample(id, entry);
  }

  #tick(id: string, entry: Entry): void {
    if (this.#entries.get(id) !== entry) return;
    this.#sample(id, entry);
    entry.timer = this.#clock.setTimeout(() => this.#tick(id, entry), this.#nextDelay(entry));
  }

  #sample(id: string, entry: Entry): void {
    try {
      const files = this.#files;
      // The first tick, every Nth, and the one after a failure read limits.
      const reuseLimits = entry.sinceLimits > 0 && entry.sinceLimits < this.#limitTicks &&
        !("lastError" in entry);
      entry.sinceLimits = reuseLimits ? entry.sinceLimits + 1 : 1;
      const stats = files
        ? withCachedReads(files, entry, entry.collect, { reuseLimits })
        : entry.collect();
      entry.ring.push(encodeSample(stats, this.#clock.now()));
      delete entry.latest;
      if (this.#keepLatest) entry.last = stats;
      delete entry.lastError;
    } catch (err) {
      entry.lastError = err;
      // A vanished cgroup is routine between container exit and untrack.
      if (isCgroupNotFound(err)) this.#log.v(4).info("cgroup gone", { containerID: id });
      else this.#log.error("housekeeping failed", err, { containerID: id });
    }
  }

  #nextDelay(entry: Entry): number {
    const ring = entry.ring;
    if (this.#dynamic && ring.length >= 2) {
      // Same test as cAdvisor's StatsEq: everything but the timestamp unchanged.
      let same = true;
      for (let i = 1; i < SAMPLE_WIDTH && same; i++) {
        same = Object.is(ring.value(-2, i), ring.value(-1, i));
      }
      entry.intervalMs = same ? Math.min(entry.intervalMs * 2, this.#maxMs) : this.#baseMs;
    }
    const delay = Math.round(entry.intervalMs * (1 + this.#random() * this.#jitter));
    return alignedDelay(this.#clock.now(), delay, this.#grid);
  }
}
