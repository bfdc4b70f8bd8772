/**
 * Stopping and removing what runs for a pod, as upstream's killContainer /
 * killPodWithSyncResult: every container in parallel with its grace period
 * (preStop first), then the sandboxes. NotFound counts as done, so every
 * operation here may be repeated.
 *
 * @module
 */

import type { Container, LifecycleHandler, Pod } from "../api/types.ts";
import { isNotFound } from "../cri/errors.ts";
import { cleanupPodDirs } from "../volumes/mod.ts";
import {
  errorMessage,
  type ManagerContext,
  podKey,
  RUNTIME_REQUEST_TIMEOUT_MS,
  type SyncStep,
} from "./_context.ts";
import { runLifecycleHandler } from "./lifecycle_hooks.ts";
import { podLogsDirectory } from "./sandbox_config.ts";
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
  const container = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]
    .find((x) => x.name === c.name);
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
  const status = await ctx.runtime.containerStatus(c.id, { timeoutMs: RUNTIME_REQUEST_TIMEOUT_MS });
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

/**
 * Stops one container: preStop hook (if it runs and there is time), then
 * StopContainer with the rest of the grace period, at least 2s unless
 * `gracePeriodOverride` says otherwise.
 * @param ctx the manager context
 * @param pod the pod spec, when known (else the container's annotations are read)
 * @param c the container
 * @param opts override, kill reason and the pod IP for httpGet hooks
 * @throws {Error} naming the container when the runtime fails (not for NotFound)
 */
export async function killContainer(
  ctx: ManagerContext,
  pod: Pod | undefined,
  c: RuntimeContainer,
  opts: { gracePeriodOverride?: number; reason?: string; podIP?: string } = {},
): Promise<void> {
  try {
    const spec = (pod && specFromPod(pod, c, opts.reason ?? "")) ??
      await specFromAnnotations(ctx, c);
    let gracePeriod = spec.gracePeriod;
    if (spec.preStop && c.state === "running" && gracePeriod > 0) {
      const started = ctx.clock.now();
      try {
        await runLifecycleHandler(
          {
            runtime: ctx.runtime,
            clock: ctx.clock,
            containerId: c.id,
            container: spec.container,
            podIP: opts.podIP ?? "",
          },
          spec.preStop,
          gracePeriod,
        );
      } catch (err) {
        ctx.logger.warn("PreStop hook failed", { container: c.name, err: errorMessage(err) });
      }
      gracePeriod -= Math.floor((ctx.clock.now() - started) / 1000);
    }
    if (gracePeriod < MINIMUM_GRACE_PERIOD_SECONDS) gracePeriod = MINIMUM_GRACE_PERIOD_SECONDS;
    if (opts.gracePeriodOverride !== undefined) gracePeriod = opts.gracePeriodOverride;
    ctx.logger.v(2).info("Killing container with a grace period", {
      container: c.name,
      containerID: c.id,
      gracePeriod,
    });
    await ctx.runtime.stopContainer(c.id, gracePeriod, {
      timeoutMs: gracePeriod * 1000 + RUNTIME_REQUEST_TIMEOUT_MS,
    });
  } catch (err) {
    if (isNotFound(err)) return;
    throw new Error(`failed to kill container "${c.name}" (${c.id.slice(0, 13)})`, { cause: err });
  }
}

/**
 * Stops every not-yet-exited container of a pod in parallel, then every sandbox.
 * @param ctx the manager context
 * @param pod the pod spec, when known
 * @param running what the runtime holds for the pod
 * @param gracePeriodOverride replaces every container's grace period
 * @param signal checked before the sandboxes are stopped
 * @returns one step per container and sandbox; failed ones carry an error
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
  const steps = await Promise.all(live.map(async (c): Promise<SyncStep> => {
    try {
      await killContainer(ctx, pod, c, {
        ...(gracePeriodOverride !== undefined ? { gracePeriodOverride } : {}),
        podIP,
      });
      return { action: "KillContainer", target: c.name };
    } catch (err) {
      return {
        action: "KillContainer",
        target: c.name,
        error: { reason: "KillContainerError", message: errorMessage(err) },
      };
    }
  }));
  if (signal?.aborted) return steps;
  for (const s of running.sandboxes) {
    try {
      await ctx.runtime.stopPodSandbox(s.id, { timeoutMs: RUNTIME_REQUEST_TIMEOUT_MS });
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
            errorMessage(err)
          }`,
        },
      });
    }
  }
  return steps;
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
          error: { reason: `${action}Error`, message: errorMessage(err) },
        });}
    }
  };
  const opts = { timeoutMs: RUNTIME_REQUEST_TIMEOUT_MS };
  for (const c of running.containers) {
    if (signal?.aborted) return steps;
    await attempt("RemoveContainer", c.name, () => ctx.runtime.removeContainer(c.id, opts));
  }
  for (const s of running.sandboxes) {
    if (signal?.aborted) return steps;
    await attempt("RemovePodSandbox", s.id, () => ctx.runtime.removePodSandbox(s.id, opts));
  }
  if (steps.some((s) => s.error)) return steps;
  await attempt("RemovePodDirs", running.uid, () => cleanupPodDirs(ctx.rootDir, running.uid));
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
