/**
 * Container log rotation, as upstream's ContainerLogManager
 * (pkg/kubelet/logs/container_log_manager.go): every 10 s, each running
 * container whose log has reached `containerLogMaxSize` gets its log renamed
 * to `<log>.<YYYYMMDD-hhmmss>` and the runtime reopens a fresh one
 * (CRI ReopenContainerLog); older rotated files are gzipped to `<name>.gz`,
 * and the oldest removed so at most `containerLogMaxFiles` files remain,
 * the live log included.
 *
 * @module
 */

import { intValue } from "../api/quantity.ts";
import type { RuntimeService } from "../cri/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { parseDuration } from "../util/duration.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { statOrUndefined } from "../util/fs.ts";

/** Upstream's logMonitorPeriod / containerLogMonitorInterval default. */
export const LOG_MONITOR_PERIOD_MS = 10_000;
/** Upstream's containerLogMaxSize default, 10Mi. */
export const DEFAULT_CONTAINER_LOG_MAX_SIZE = 10 * 1024 * 1024;
/** Upstream's containerLogMaxFiles default. */
export const DEFAULT_CONTAINER_LOG_MAX_FILES = 5;

const COMPRESS_SUFFIX = ".gz";
const TMP_SUFFIX = ".tmp";

/** A running container and where its log is. */
export interface RunningContainerLog {
  /** The runtime's container id. */
  id: string;
  /** The log file (CRI ContainerStatus logPath). */
  logPath: string;
}

/** Options for {@link ContainerLogManager}. */
export interface ContainerLogManagerOptions {
  /** CRI ReopenContainerLog. */
  runtime: { reopenContainerLog(containerId: string): Promise<void> };
  /** The running containers and their log paths, asked each round. */
  listRunningContainers(): Promise<RunningContainerLog[]>;
  clock: Clock;
  logger?: Logger;
  /** `containerLogMaxSize` in bytes; default 10Mi. */
  maxSize?: number;
  /** `containerLogMaxFiles`; default 5, at least 2. */
  maxFiles?: number;
  /** The round's period; default {@link LOG_MONITOR_PERIOD_MS}. */
  periodMs?: number;
}

/** CRI ContainerState RUNNING. */
const CONTAINER_RUNNING = 1;

/** The kubelet configuration fields that make the rotation policy. */
export interface ContainerLogRotationConfig {
  /** A quantity, e.g. "10Mi". */
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  /** A duration, e.g. "10s". */
  containerLogMonitorInterval?: string;
}

/**
 * The manager's policy options from the kubelet configuration.
 * @param config `containerLogMaxSize`, `containerLogMaxFiles`, `containerLogMonitorInterval`
 * @returns `maxSize` (bytes), `maxFiles` and `periodMs`, each only when configured
 * @throws Error when the size or the interval does not parse
 */
export function rotationPolicy(
  config: ContainerLogRotationConfig,
): Pick<ContainerLogManagerOptions, "maxSize" | "maxFiles" | "periodMs"> {
  return {
    ...(config.containerLogMaxSize !== undefined
      ? { maxSize: intValue(config.containerLogMaxSize) }
      : {}),
    ...(config.containerLogMaxFiles !== undefined ? { maxFiles: config.containerLogMaxFiles } : {}),
    ...(config.containerLogMonitorInterval !== undefined
      ? { periodMs: parseDuration(config.containerLogMonitorInterval) }
      : {}),
  };
}

/**
 * The running containers and their log paths, as upstream's rotation round
 * finds them: ListContainers, then each container's log path from
 * ContainerStatus. A container's log path is fixed when it is created (CRI
 * `log_path` under its sandbox's `log_directory`), so it is asked once per
 * container, not at every round as upstream does (110 containers every 10 s
 * were most of the CRI calls of a steady node); a container that left the
 * list is forgotten. A container that went away between the list and its
 * status is skipped.
 * @param runtime the CRI runtime
 * @returns a {@link ContainerLogManagerOptions.listRunningContainers}
 */
export function listRunningContainerLogs(
  runtime: Pick<RuntimeService, "listContainers" | "containerStatus">,
): () => Promise<RunningContainerLog[]> {
  /** Log path by container id; "" for a container without one. */
  let known = new Map<string, string>();
  return async () => {
    const containers = await runtime.listContainers({ state: { state: CONTAINER_RUNNING } });
    const out: RunningContainerLog[] = [];
    const listed = new Map<string, string>();
    for (const c of containers) {
      let logPath = known.get(c.id);
      if (logPath === undefined) {
        try {
          const { status } = await runtime.containerStatus(c.id);
          if (status.state !== CONTAINER_RUNNING) continue; // stopped since the list: asked again
          logPath = status.logPath ?? "";
        } catch {
          continue; // gone since the list; the next round will not see it
        }
      }
      listed.set(c.id, logPath);
      if (logPath) out.push({ id: c.id, logPath });
    }
    known = listed;
    return out;
  };
}

/** Rotates the logs of running containers. */
export class ContainerLogManager {
  readonly #opts: ContainerLogManagerOptions;
  readonly #logger: Logger;
  readonly #maxSize: number;
  readonly #maxFiles: number;
  #timer: Timer | undefined;
  #round: Promise<void> | undefined;

  /**
   * @param opts the runtime, the container list, clock and policy
   * @throws Error when maxFiles < 2 or maxSize < 0, as upstream
   */
  constructor(opts: ContainerLogManagerOptions) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger).with({ component: "container-log-manager" });
    this.#maxFiles = opts.maxFiles ?? DEFAULT_CONTAINER_LOG_MAX_FILES;
    this.#maxSize = opts.maxSize ?? DEFAULT_CONTAINER_LOG_MAX_SIZE;
    if (this.#maxFiles <= 1) throw new Error(`invalid MaxFiles ${this.#maxFiles}, must be > 1`);
    if (this.#maxSize < 0) throw new Error(`invalid MaxSize ${this.#maxSize}, must be >= 0`);
  }

  /** Starts the periodic rounds (a round still running when the next is due is not doubled). */
  start(): void {
    if (this.#timer) return;
    this.#timer = this.#opts.clock.setInterval(() => {
      this.#round ??= this.rotateLogs().finally(() => (this.#round = undefined));
    }, this.#opts.periodMs ?? LOG_MONITOR_PERIOD_MS);
  }

  /** Stops the rounds and waits for a running one to finish. */
  async stop(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#round;
  }

  /**
   * One round: rotates every running container's log that has reached the
   * size. A failure with one container is logged and does not stop the others.
   */
  async rotateLogs(): Promise<void> {
    let containers: RunningContainerLog[];
    try {
      containers = await this.#opts.listRunningContainers();
    } catch (err) {
      this.#logger.error("Failed to list running containers for log rotation", err);
      return;
    }
    for (const c of containers) {
      try {
        await this.#rotateIfNeeded(c);
      } catch (err) {
        this.#logger.error("Failed to rotate log for container", err, {
          containerID: c.id,
          path: c.logPath,
        });
      }
    }
  }

  /**
   * Removes a container's log files, as upstream's Clean when the container
   * is removed (see {@link cleanContainerLogs}).
   * @param logPath the container's log path
   */
  clean(logPath: string): Promise<void> {
    return cleanContainerLogs(logPath);
  }

  async #rotateIfNeeded(c: RunningContainerLog): Promise<void> {
    let info = await statOrUndefined(c.logPath);
    if (!info) {
      // A rollback that failed (or a crash between rename and reopen) can
      // leave no live log: ask the runtime for a fresh one.
      await this.#opts.runtime.reopenContainerLog(c.id);
      info = await statOrUndefined(c.logPath);
      if (!info) throw new Error(`log file "${c.logPath}" is still missing after reopening`);
    }
    if (info.size < this.#maxSize) return;
    await this.#rotate(c);
  }

  async #rotate(c: RunningContainerLog): Promise<void> {
    let logs = await this.#cleanupUnused(await rotatedFiles(c.logPath));
    logs = await this.#removeExcess(logs);
    for (const l of logs) {
      if (!l.endsWith(COMPRESS_SUFFIX)) await compress(l);
    }
    const rotated = `${c.logPath}.${timestamp(this.#opts.clock.now())}`;
    try {
      await Deno.rename(c.logPath, rotated);
    } catch (err) {
      throw new Error(`failed to rotate log "${c.logPath}" to "${rotated}"`, { cause: err });
    }
    try {
      await this.#opts.runtime.reopenContainerLog(c.id);
    } catch (err) {
      // Put the log back so the next round can try again.
      await Deno.rename(rotated, c.logPath).catch((renameErr) =>
        this.#logger.error("Failed to rename rotated log back", renameErr, {
          rotatedLog: rotated,
          newLog: c.logPath,
          containerID: c.id,
        })
      );
      throw new Error(`failed to reopen container log "${c.id}"`, { cause: err });
    }
    this.#logger.v(4).info("Rotated container log", { containerID: c.id, path: rotated });
  }

  /** Drops temporary files and uncompressed copies of compressed ones (a crash mid-compress). */
  async #cleanupUnused(logs: string[]): Promise<string[]> {
    const all = new Set(logs);
    const inUse: string[] = [];
    for (const l of logs) {
      const unused = l.endsWith(TMP_SUFFIX) ||
        (!l.endsWith(COMPRESS_SUFFIX) && all.has(l + COMPRESS_SUFFIX));
      if (unused) await removeIfExists(l);
      else inUse.push(l);
    }
    return inUse;
  }

  /**
   * Keeps the newest maxFiles-2 rotated files: with the file rotated now and
   * the new live log that makes maxFiles. Oldest go first, so a reader of a
   * newer one is not cut off.
   */
  async #removeExcess(logs: string[]): Promise<string[]> {
    const sorted = [...logs].sort();
    const keep = Math.max(0, this.#maxFiles - 2);
    const excess = Math.max(0, sorted.length - keep);
    for (const l of sorted.slice(0, excess)) await Deno.remove(l);
    return sorted.slice(excess);
  }
}

/**
 * Upstream's rotated-file suffix: Go's `20060102-150405` of the clock's time,
 * in local time as Go formats `time.Now()`.
 * @param ms epoch ms
 * @returns e.g. `20260101-120000`
 */
export function timestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-` +
    `${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** `<log>.*` in the log's directory: what upstream's Glob(log + ".*") matches. */
/**
 * Removes a container's live log and its rotated files (`<log>*`), as
 * upstream's log manager Clean does before the container is removed: the
 * runtime removes the container, not its log. Missing files are fine.
 * @param logPath the container's log path (CRI ContainerStatus.logPath)
 */
export async function cleanContainerLogs(logPath: string): Promise<void> {
  for (const f of [logPath, ...await rotatedFiles(logPath)]) await removeIfExists(f);
}

async function rotatedFiles(logPath: string): Promise<string[]> {
  const slash = logPath.lastIndexOf("/");
  const dir = slash <= 0 ? "/" : logPath.slice(0, slash);
  const prefix = `${logPath.slice(slash + 1)}.`;
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.name.startsWith(prefix)) out.push(`${dir}/${e.name}`);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

/** gzips `log` to `log.gz` through a temporary file, then removes `log`. */
async function compress(log: string): Promise<void> {
  const tmp = log + TMP_SUFFIX;
  try {
    // Streamed: a rotated file is up to containerLogMaxSize, which need not sit in memory.
    const src = await Deno.open(log, { read: true });
    const dst = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o644 });
    await src.readable.pipeThrough(new CompressionStream("gzip")).pipeTo(dst.writable);
    await Deno.rename(tmp, log + COMPRESS_SUFFIX);
  } catch (err) {
    await removeIfExists(tmp).catch(() => {});
    throw new Error(`failed to compress log "${log}"`, { cause: err });
  }
  await Deno.remove(log);
}

async function removeIfExists(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}
