/**
 * Stopping and removing what runs for a pod, as upstream's killContainer /
 * killPodWithSyncResult: every container in parallel with its grace period
 * (preStop first), sidecars after the app containers in reverse order, then
 * the sandboxes. NotFound counts as done, so every operation here may be
 * repeated.
 *
 * @module
 */

import { findContainer, isRestartableInitContainer, podKey } from "../api/pod.ts";
import type { Container, LifecycleHandler, Pod } from "../api/types.ts";
import { isNotFound } from "../cri/errors.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";
import { podReference } from "../events/recorder.ts";
import type { Clock } from "../util/clock.ts";
import { cleanupPodDirs } from "../volumes/mod.ts";
import type { ManagerContext, SyncStep } from "./_context.ts";
import { errorText } from "../util/log.ts";
import { HookAction, hookPassedSteps, HookReason, runLifecycleHandler } from "./lifecycle_hooks.ts";
import { podLogsDirectory } from "./sandbox_config.ts";
import { logSymlinkPath, removeLogSymlink } from "./log_symlink.ts";
import { Annotations, type RuntimeContainer, type RuntimePodStatus } from "./types.ts";

/** Upstream's minimumGracePeriodInSeconds: a container always gets this long after SIGTERM. */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;
/** Grace period when neither the pod nor the container's annotations give one. */
const DEFAULT_GRACE_PERIOD_SECONDS = 30;

/** What killContainer knows about the container being stopped. */
interface KillSpec {
  gracePeriod: number;
  preStop: LifecycleHandler | undefined;
  container: Container;
}

function specFromPod(pod: Pod, c: RuntimeContainer, reason: string): KillSpec | undefined {
  const container = findContainer(pod, c.name)?.spec;
  if (!container) return undefined;
  let gracePeriod = pod.metadata.deletionGracePeriodSeconds ??
    pod.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  // A failed probe may carry its own, shorter grace period.
  const probe = reason === "LivenessProbe"
    ? container.livenessProbe
    : reason === "StartupProbe"
    ? container.startupProbe
    : undefined;
  if (probe?.terminationGracePeriodSeconds !== undefined) {
    gracePeriod = probe.terminationGracePeriodSeconds;
  }
  return { gracePeriod, preStop: container.lifecycle?.preStop, container };
}

async function specFromAnnotations(
  ctx: ManagerContext,
  c: RuntimeContainer,
): Promise<KillSpec> {
  const status = await ctx.runtime.containerStatus(c.id);
  const a = status.status.annotations ?? {};
  const num = (k: string) => {
    const n = Number.parseInt(a[k] ?? "", 10);
    return Number.isFinite(n) ? n : undefined;
  };
  let preStop: LifecycleHandler | undefined;
  const preStopJson = a[Annotations.preStopHandler];
  try {
    preStop = preStopJson ? JSON.parse(preStopJson) : undefined;
  } catch {
    preStop = undefined; // A garbled annotation must not block the kill.
  }
  return {
    gracePeriod: num(Annotations.podDeletionGracePeriod) ??
      num(Annotations.terminationGracePeriod) ??
      DEFAULT_GRACE_PERIOD_SECONDS,
    preStop,
    container: { name: c.name },
  };
}

/** Options for {@link killContainer}. */
export interface KillContainerOptions {
  /** Replaces the grace period (and lifts the 2s minimum below it). */
  gracePeriodOverride?: number;
  /** Why (a `KillReason`, or "FailedPostStartHook"); picks a probe's grace period. */
  reason?: string;
  /** The Killing event's message (upstream's kill message); default "Stopping container <name>". */
  message?: string;
  /** The pod IP for httpGet hooks. */
  podIP?: string;
  /** Sidecar termination order, when the whole pod is being stopped. */
  ordering?: TerminationOrdering;
}

/**
 * Stops one container as upstream's killContainer: the Killing event (when
 * the pod is known), preStop hook (while the grace period lasts; its time
 * counts against it), then its turn in the termination order, then
 * StopContainer with what is left of the grace period, at least 2s unless
 * `gracePeriodOverride` is lower.
 * @param ctx the manager context
 * @param pod the pod spec, when known (else the container's annotations are read)
 * @param c the container
 * @param opts override, kill reason, pod IP and termination order
 * @returns the preStop hook's step, if a hook ran (failed hooks carry
 *   upstream's FailedPreStopHook; they do not fail the kill)
 * @throws {Error} naming the container when the runtime fails (not for NotFound)
 */
export async function killContainer(
  ctx: ManagerContext,
  pod: Pod | undefined,
  c: RuntimeContainer,
  opts: KillContainerOptions = {},
): Promise<SyncStep[]> {
  const steps: SyncStep[] = [];
  try {
    const spec = (pod && specFromPod(pod, c, opts.reason ?? "")) ??
      await specFromAnnotations(ctx, c);
    let gracePeriod = opts.gracePeriodOverride ?? spec.gracePeriod;
    // As upstream, before the hook and the stop, whatever comes of them.
    if (pod) {
      ctx.events.event(
        podReference(pod, { name: c.name }),
        "Normal",
        EventReason.killing,
        opts.message || EventMessage.killing(c.name),
      );
    }
    if (spec.preStop && c.state === "running" && gracePeriod > 0) {
      const started = ctx.clock.now();
      steps.push(...(await runPreStopHook(ctx, c, spec, gracePeriod, pod, opts.podIP ?? "")));
      // Go truncates the seconds spent, and so do we.
      gracePeriod -= Math.floor((ctx.clock.now() - started) / 1000);
    }
    if (opts.ordering && gracePeriod > 0) {
      gracePeriod -= Math.floor(await opts.ordering.waitForTurn(c.name, gracePeriod, ctx.clock));
    }
    const floor = Math.min(opts.gracePeriodOverride ?? Infinity, MINIMUM_GRACE_PERIOD_SECONDS);
    if (gracePeriod < floor) gracePeriod = floor;
    ctx.logger.v(2).info("Killing container with a grace period", {
      container: c.name,
      containerID: c.id,
      gracePeriod,
    });
    await ctx.runtime.stopContainer(c.id, gracePeriod);
    opts.ordering?.containerTerminated(c.name);
    return steps;
  } catch (err) {
    if (isNotFound(err)) {
      opts.ordering?.containerTerminated(c.name);
      return steps;
    }
    throw new Error(`failed to kill container "${c.name}" (${c.id.slice(0, 13)})`, { cause: err });
  }
}

/**
 * Upstream executePreStopHook: waits for the hook at most `gracePeriod`
 * seconds (a hook still running then is abandoned, not awaited).
 * @returns the hook's steps, none when it did not finish in time
 */
async function runPreStopHook(
  ctx: ManagerContext,
  c: RuntimeContainer,
  spec: KillSpec,
  gracePeriod: number,
  pod: Pod | undefined,
  podIP: string,
): Promise<SyncStep[]> {
  const handler = spec.preStop!;
  const hookAbort = new AbortController();
  const hook = runLifecycleHandler(
    {
      runtime: ctx.runtime,
      clock: ctx.clock,
      containerId: c.id,
      container: spec.container,
      podIP,
      ...(pod ? { pod } : {}),
      ...(ctx.countHookHttpFallback ? { onHttpFallback: ctx.countHookHttpFallback } : {}),
    },
    handler,
    gracePeriod,
    hookAbort.signal,
  ).then(
    (outcome): SyncStep[] => hookPassedSteps(HookAction.preStop, c.name, outcome),
    (err): SyncStep[] => {
      ctx.logger.warn("PreStop hook failed", { container: c.name, err: errorText(err) });
      // Upstream keeps the hook's output out of the event, so secrets do not leak.
      return [{
        action: HookAction.preStop,
        target: c.name,
        error: { reason: HookReason.failedPreStop, message: "PreStopHook failed" },
      }];
    },
  );
  const timerAbort = new AbortController();
  const expired = ctx.clock.sleep(gracePeriod * 1000, timerAbort.signal).then(
    () => undefined,
    () => undefined,
  );
  const steps = await Promise.race([hook, expired]);
  timerAbort.abort();
  if (steps === undefined) {
    hookAbort.abort();
    ctx.logger.v(2).info("PreStop hook not completed in grace period", {
      container: c.name,
      gracePeriod,
    });
    return [];
  }
  return steps;
}

/**
 * Stops every not-yet-exited container of a pod, then every sandbox. App
 * containers stop in parallel; sidecars (restartable init containers) wait
 * for all app containers and then stop in reverse order of declaration,
 * each within what is left of its grace period (upstream 1.29+
 * `killContainersWithSyncResult` with its termination ordering).
 * @param ctx the manager context
 * @param pod the pod spec, when known
 * @param running what the runtime holds for the pod
 * @param gracePeriodOverride replaces every container's grace period
 * @param signal checked before the sandboxes are stopped
 * @returns per container its preStop step (if a hook ran) and its
 *   KillContainer step, then one step per sandbox; failed ones carry an error
 */
export async function killPod(
  ctx: ManagerContext,
  pod: Pod | undefined,
  running: RuntimePodStatus,
  gracePeriodOverride?: number,
  signal?: AbortSignal,
): Promise<SyncStep[]> {
  const podIP = running.sandboxes.find((s) => s.state === "ready")?.ip ||
    (ctx.hostIPs[0] ?? "");
  const live = running.containers.filter((c) => c.state !== "exited");
  const ordering = pod && (pod.spec.initContainers ?? []).some(isRestartableInitContainer)
    ? new TerminationOrdering(pod, live.map((c) => c.name))
    : undefined;
  const perContainer = await Promise.all(live.map(async (c): Promise<SyncStep[]> => {
    try {
      const hookSteps = await killContainer(ctx, pod, c, {
        ...(gracePeriodOverride !== undefined ? { gracePeriodOverride } : {}),
        ...(ordering ? { ordering } : {}),
        podIP,
      });
      return [...hookSteps, { action: "KillContainer", target: c.name }];
    } catch (err) {
      return [{
        action: "KillContainer",
        target: c.name,
        error: { reason: "KillContainerError", message: errorText(err) },
      }];
    }
  }));
  const steps = perContainer.flat();
  if (signal?.aborted) return steps;
  for (const s of running.sandboxes) {
    try {
      await ctx.runtime.stopPodSandbox(s.id);
      steps.push({ action: "KillPodSandbox", target: s.id });
    } catch (err) {
      if (isNotFound(err)) {
        steps.push({ action: "KillPodSandbox", target: s.id });
        continue;
      }
      steps.push({
        action: "KillPodSandbox",
        target: s.id,
        error: {
          reason: "KillPodSandboxError",
          message: `failed to stop sandbox ${s.id.slice(0, 13)} of pod "${podKey(running)}": ${
            errorText(err)
          }`,
        },
      });
    }
  }
  return steps;
}

/**
 * Upstream's terminationOrdering: who must be gone before a container may
 * get its stop signal. App containers wait for nobody; each sidecar waits
 * for every app container and for the sidecar declared after it. A
 * container that is not running counts as gone from the start.
 *
 * ```
 *   app1 ─┐
 *   app2 ─┼──► sidecarN ──► ... ──► sidecar2 ──► sidecar1
 *   app3 ─┘   (declared last)                  (declared first)
 * ```
 */
export class TerminationOrdering {
  readonly #gone = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  readonly #prereqs = new Map<string, Promise<void>[]>();

  /**
   * @param pod the pod being stopped
   * @param runningNames names of its containers that still run
   */
  constructor(pod: Pod, runningNames: readonly string[]) {
    const runningSet = new Set(runningNames);
    const track = (name: string) => {
      const entry = Promise.withResolvers<void>();
      this.#gone.set(name, entry);
      if (!runningSet.has(name)) entry.resolve();
      return entry.promise;
    };
    const apps = pod.spec.containers.map((c) => track(c.name));
    let later: Promise<void> | undefined;
    for (const ic of [...(pod.spec.initContainers ?? [])].reverse()) {
      const gone = track(ic.name);
      if (!isRestartableInitContainer(ic)) continue;
      this.#prereqs.set(ic.name, later ? [...apps, later] : apps);
      later = gone;
    }
  }

  /**
   * Waits until it is the container's turn, or the grace period ran out.
   * @param name the container
   * @param gracePeriodSeconds the most to wait; 0 waits not at all
   * @param clock the clock the grace period runs on
   * @returns the seconds waited (fractional)
   */
  async waitForTurn(name: string, gracePeriodSeconds: number, clock: Clock): Promise<number> {
    const prereqs = this.#prereqs.get(name) ?? [];
    if (gracePeriodSeconds <= 0 || prereqs.length === 0) return 0;
    const start = clock.now();
    const timer = new AbortController();
    await Promise.race([
      Promise.all(prereqs),
      clock.sleep(gracePeriodSeconds * 1000, timer.signal).catch(() => {}),
    ]);
    timer.abort();
    return (clock.now() - start) / 1000;
  }

  /**
   * Marks a container as gone, letting the ones that wait for it proceed.
   * @param name the container
   */
  containerTerminated(name: string): void {
    this.#gone.get(name)?.resolve();
  }
}
/**
 * Removes every container and sandbox of a pod, then its directories under
 * the root dir and its log directory. For pods gone for good.
 * @param ctx the manager context
 * @param running what the runtime holds for the pod
 * @param signal stops between calls
 * @returns one step per object; failed ones carry an error
 */
export async function removePod(
  ctx: ManagerContext,
  running: RuntimePodStatus,
  signal?: AbortSignal,
): Promise<SyncStep[]> {
  const steps: SyncStep[] = [];
  const attempt = async (action: string, target: string, fn: () => Promise<void>) => {
    try {
      await fn();
      steps.push({ action, target });
    } catch (err) {
      if (isNotFound(err)) steps.push({ action, target });
      else {steps.push({
          action,
          target,
          error: { reason: `${action}Error`, message: errorText(err) },
        });}
    }
  };
  for (const c of running.containers) {
    if (signal?.aborted) return steps;
    await attempt("RemoveContainer", c.name, () => removeContainer(ctx, running, c));
  }
  for (const s of running.sandboxes) {
    if (signal?.aborted) return steps;
    await attempt("RemovePodSandbox", s.id, () => ctx.runtime.removePodSandbox(s.id));
  }
  if (steps.some((s) => s.error)) return steps;
  await attempt(
    "RemovePodDirs",
    running.uid,
    () => cleanupPodDirs(ctx.rootDir, running.uid, ctx.mounter),
  );
  // Its cached tokens and object references go with it.
  ctx.objects?.forgetPod(running.uid);
  if (running.name && running.namespace) {
    const logDir = podLogsDirectory(ctx.podLogsDir, running);
    await attempt("RemovePodLogs", logDir, async () => {
      try {
        await Deno.remove(logDir, { recursive: true });
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    });
  }
  return steps;
}

/**
 * Removes one container as upstream's removeContainer: its log files (the
 * live log and its rotated ones) and its /var/log/containers symlink, then
 * the container. A container in an unknown state is stopped first, as
 * upstream's GC does (it might still run). NotFound counts as removed.
 * @param ctx the manager context
 * @param pod the pod's name and namespace (the symlink's name; "" skips it)
 * @param c the container
 * @throws {Error} naming the container when the runtime or a file removal fails
 */
export async function removeContainer(
  ctx: ManagerContext,
  pod: { name: string; namespace: string },
  c: RuntimeContainer,
): Promise<void> {
  const what = `container "${c.name}" (${c.id.slice(0, 13)})`;
  ctx.logger.v(4).info("Removing container", { container: c.name, containerID: c.id });
  if (c.state === "unknown") {
    // Upstream: "Container is in unknown state, try killing it before removal".
    await killContainer(ctx, undefined, c, { reason: "Unknown" });
  }
  let logPath = "";
  try {
    logPath = (await ctx.runtime.containerStatus(c.id)).status.logPath ?? "";
  } catch (err) {
    if (!isNotFound(err)) {
      throw new Error(`failed to get the status of ${what}`, { cause: err });
    }
  }
  try {
    if (logPath) await ctx.cleanContainerLogs?.(logPath);
  } catch (err) {
    throw new Error(`failed to remove the log of ${what}`, { cause: err });
  }
  if (pod.name && pod.namespace) {
    await removeLogSymlink(logSymlinkPath(ctx.containerLogsDir, pod, c.name, c.id), ctx.logger);
  }
  try {
    await ctx.runtime.removeContainer(c.id);
  } catch (err) {
    if (!isNotFound(err)) throw new Error(`failed to remove ${what}`, { cause: err });
  }
}

/**
 * Removes a sandbox as upstream's GC does: stopped first (the kubelet should
 * have stopped it, but a sandbox left running would keep its network), then
 * removed. NotFound counts as done.
 * @param ctx the manager context
 * @param id the sandbox id
 * @throws {Error} naming the sandbox when the runtime fails
 */
export async function removeSandbox(ctx: ManagerContext, id: string): Promise<void> {
  ctx.logger.v(4).info("Removing sandbox", { sandboxID: id });
  try {
    await ctx.runtime.stopPodSandbox(id);
    await ctx.runtime.removePodSandbox(id);
  } catch (err) {
    if (!isNotFound(err)) {
      throw new Error(`failed to remove sandbox ${id.slice(0, 13)}`, { cause: err });
    }
  }
}
