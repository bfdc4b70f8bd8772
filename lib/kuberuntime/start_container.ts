/**
 * One container start, as upstream's startContainer: image → config →
 * CreateContainer → StartContainer → postStart hook. A container that was
 * created but did not start is removed again, so nothing half-made is left;
 * one whose postStart hook failed is killed (FailedPostStartHook).
 *
 * An ephemeral container starts the same way, in the pod's running sandbox,
 * with its logs beside the others'; one with a `targetContainerName` joins
 * that container's process namespace (CRI NamespaceMode TARGET).
 *
 * @module
 */

import { podKey } from "../api/pod.ts";
import type { Container, EphemeralContainer, LifecycleHandler, Pod } from "../api/types.ts";
import type { Secret } from "../api/cluster_types.ts";
import type { PodSandboxConfig } from "../cri/types.ts";
import { ImageError } from "../images/mod.ts";
import { makeTerminationLogFile, prepareSubPaths } from "../volumes/mod.ts";
import type { ManagerContext, SyncStep } from "./_context.ts";
import { errorText } from "../util/log.ts";
import { currentInstance, latestExitedInstance, podIdentity } from "./container_status.ts";
import { containerSubPaths, generateContainerConfig } from "./container_config.ts";
import { ContainerConfigError, fetchEnvObjects } from "./env.ts";
import { hashContainer } from "./hash.ts";
import { killContainer } from "./kill_pod.ts";
import { createLogSymlink, logSymlinkPath } from "./log_symlink.ts";
import {
  HookAction,
  type HookOutcome,
  hookPassedSteps,
  HookReason,
  runLifecycleHandler,
} from "./lifecycle_hooks.ts";
import { backoffKey, type RuntimePodStatus } from "./types.ts";

/** How long a postStart hook may run. */
const POST_START_TIMEOUT_SECONDS = 120;

/** The pod-level facts every container start of one sync shares. */
export interface StartTarget {
  pod: Pod;
  status: RuntimePodStatus;
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  podIPs: string[];
  volumePaths: ReadonlyMap<string, string>;
  /** The managed /etc/hosts (the node's under a header for host-network pods). */
  etcHostsPath?: string;
  /** The pod's pull secrets that could be read, for image pulls. */
  pullSecrets?: Secret[];
}

/**
 * What to start, as upstream's startSpec: a container of any kind, and for an
 * ephemeral container its own spec (for the target).
 */
export interface StartSpec {
  container: Container;
  ephemeral?: EphemeralContainer;
}

/**
 * The runtime id of an ephemeral container's target (upstream getTargetID):
 * the target's newest instance, whatever its state (the runtime refuses one
 * that does not run).
 * @returns undefined when there is no target; throws when it has no instance
 */
function targetContainerId(t: StartTarget, spec: StartSpec): string | undefined {
  const name = spec.ephemeral?.targetContainerName;
  if (!name) return undefined;
  const target = currentInstance(t.status, name);
  if (!target) throw new Error(`unable to find target container ${name}`);
  return target.id;
}

/**
 * Restart count when the runtime has no instance left (e.g. after a node
 * reboot): one past the highest `<n>.log` in the container's log directory,
 * as upstream's calcRestartCountByLogDir.
 */
async function restartCountFromLogs(logDir: string): Promise<number> {
  let max = -1;
  try {
    for await (const e of Deno.readDir(logDir)) {
      const m = /^(\d+)\.log(\.\d+)?$/.exec(e.name);
      if (m) max = Math.max(max, Number(m[1]));
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return max + 1;
}

/**
 * Starts one container of a pod, recording the outcome instead of throwing.
 * @param ctx the manager context
 * @param t the pod, sandbox and shared paths
 * @param spec the container spec (and the ephemeral container's own)
 * @param signal cancels an image pull, and the CreateContainer or StartContainer call
 *   in flight (the pod is being killed)
 * @param onStep given each step as it happens (its events then come in upstream's order
 *   and time: Started before the postStart hook runs, FailedPostStartHook before the kill)
 * @returns the steps. A container that started has a StartContainer step
 *   without error first (its Created and Started events), then any steps
 *   of its postStart hook; when the hook failed, a PostStartHook step with
 *   FailedPostStartHook, the KillContainer step, and a last StartContainer
 *   step with PostStartHookError. A container that did not start has one
 *   StartContainer step whose error carries upstream's reason.
 */
export async function startContainer(
  ctx: ManagerContext,
  t: StartTarget,
  spec: StartSpec,
  signal?: AbortSignal,
  onStep?: (step: SyncStep) => void,
): Promise<SyncStep[]> {
  const { container } = spec;
  const id = podIdentity(t.pod);
  const what = `container "${container.name}" of pod "${podKey(id)}"`;
  const call = signal ? { signal } : {};
  const steps: SyncStep[] = [];
  const push = (...more: SyncStep[]): SyncStep[] => {
    for (const step of more) {
      steps.push(step);
      onStep?.(step);
    }
    return steps;
  };
  const fail = (reason: string, message: string): SyncStep[] =>
    push({ action: "StartContainer", target: container.name, error: { reason, message } });

  // A restart of a container that exited before moves its backoff on (upstream doBackOff).
  const exited = latestExitedInstance(t.status, container.name);
  if (exited) {
    const key = backoffKey(id, container.name, hashContainer(container));
    ctx.backoff.next(key, exited.finishedAt || ctx.clock.now(), ctx.clock.now());
  }

  let image;
  try {
    image = await ctx.images.ensureImage(
      t.pod,
      container,
      signal,
      t.sandboxConfig,
      t.pullSecrets,
    );
  } catch (err) {
    if (err instanceof ImageError) return fail(err.reason, err.message);
    return fail("ErrImagePull", `failed to get the image of ${what}: ${errorText(err)}`);
  }

  let config;
  try {
    const current = t.status.containers.find((c) => c.name === container.name);
    const logDir = `${t.sandboxConfig.logDirectory ?? ""}/${container.name}`;
    const restartCount = current ? current.restartCount + 1 : await restartCountFromLogs(logDir);
    const targetId = targetContainerId(t, spec);
    const envObjects = await fetchEnvObjects(t.pod, container, ctx.objects, signal);
    const terminationLogPath = await makeTerminationLogFile(ctx.rootDir, id.uid, container.name);
    config = generateContainerConfig({
      pod: t.pod,
      container,
      restartCount,
      imageRef: image.imageRef,
      volumePaths: t.volumePaths,
      terminationLogPath,
      memoryCapacity: ctx.memoryCapacity,
      seccomp: ctx.seccomp,
      nodeAllocatable: ctx.nodeAllocatable,
      ...(envObjects ? { envObjects } : {}),
      // Upstream records these as an InvalidEnvironmentVariableNames event.
      onInvalidEnvKeys: (message) =>
        ctx.logger.warn("InvalidEnvironmentVariableNames", {
          pod: podKey(id),
          podUID: id.uid,
          container: container.name,
          message,
        }),
      nodeName: ctx.nodeName,
      hostIPs: ctx.hostIPs,
      podIPs: t.podIPs,
      ...(t.podIPs[0] ? { podIP: t.podIPs[0] } : {}),
      ...(ctx.hostIPs[0] ? { hostIP: ctx.hostIPs[0] } : {}),
      ...(t.etcHostsPath ? { etcHostsPath: t.etcHostsPath } : {}),
      ...(image.uid !== undefined ? { imageUid: image.uid } : {}),
      ...(targetId !== undefined ? { targetContainerId: targetId } : {}),
    });
    // After the config, as upstream's makeMounts after the env: subPathExpr needs it.
    await prepareSubPaths(
      container.name,
      containerSubPaths(container, config.envs ?? []),
      t.volumePaths,
    );
  } catch (err) {
    const reason = err instanceof ContainerConfigError ? err.reason : "CreateContainerConfigError";
    return fail(reason, `failed to generate the config of ${what}: ${errorText(err)}`);
  }

  let containerId: string;
  try {
    containerId = await ctx.runtime.createContainer(t.sandboxId, config, t.sandboxConfig, call);
  } catch (err) {
    return fail("CreateContainerError", `failed to create ${what}: ${errorText(err)}`);
  }
  // As upstream: a created container runs with its spec's resources.
  ctx.actuated.setContainer(id.uid, container.name, container.resources ?? {});

  try {
    await ctx.runtime.startContainer(containerId, call);
  } catch (err) {
    // Roll back: a created-but-never-started container would only confuse the next plan.
    await ctx.runtime.removeContainer(containerId).catch((rmErr) =>
      ctx.logger.warn("Failed to remove a container that did not start", {
        container: container.name,
        containerID: containerId,
        err: errorText(rmErr),
      })
    );
    return fail("RunContainerError", `failed to start ${what}: ${errorText(err)}`);
  }
  await createLogSymlink(
    ctx.containerLogsDir,
    logSymlinkPath(ctx.containerLogsDir, id, container.name, containerId),
    `${t.sandboxConfig.logDirectory ?? ""}/${config.logPath}`,
    ctx.logger,
  );
  ctx.logger.v(2).info("Started container", {
    pod: podKey(id),
    podUID: id.uid,
    container: container.name,
    containerID: containerId,
  });

  const postStart = container.lifecycle?.postStart;
  // The container did start: its Created and Started events come first, then what the
  // hook brought (upstream records both before it runs the hook).
  push({ action: "StartContainer", target: container.name });
  if (!postStart) return steps;
  const hook = await runPostStartHook(ctx, t, container, postStart, containerId, signal);
  if ("passed" in hook) {
    return push(...hookPassedSteps(HookAction.postStart, container.name, hook.passed));
  }
  const hookError = hook.failed;
  // Upstream kills a container whose postStart failed; the next sync restarts it (with backoff).
  const running = {
    id: containerId,
    sandboxId: t.sandboxId,
    name: container.name,
    state: "running" as const,
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: "",
    message: "",
    image: container.image ?? "",
    imageRef: image.imageRef,
    restartCount: config.metadata.attempt,
    hash: hashContainer(container),
  };
  push({
    action: HookAction.postStart,
    target: container.name,
    // Upstream keeps the hook's output out of the event: it may hold secrets.
    error: { reason: HookReason.failedPostStart, message: "PostStartHook failed" },
  });
  try {
    push(
      ...await killContainer(ctx, t.pod, running, {
        reason: HookReason.failedPostStart,
        // Upstream's Killing message for this kill is the reason itself.
        message: HookReason.failedPostStart,
        podIP: t.podIPs[0] ?? "",
      }),
      { action: "KillContainer", target: container.name },
    );
  } catch (err) {
    push({
      action: "KillContainer",
      target: container.name,
      error: { reason: "KillContainerError", message: errorText(err) },
    });
  }
  return push({
    action: "StartContainer",
    target: container.name,
    error: { reason: HookReason.postStartHookError, message: hookError },
  });
}

/**
 * Runs a postStart hook right after StartContainer, before anything else of
 * the pod starts.
 * @returns what the hook reported, or upstream's failure message
 */
async function runPostStartHook(
  ctx: ManagerContext,
  t: StartTarget,
  container: Container,
  handler: LifecycleHandler,
  containerId: string,
  signal: AbortSignal | undefined,
): Promise<{ passed: HookOutcome } | { failed: string }> {
  try {
    const passed = await runLifecycleHandler(
      {
        runtime: ctx.runtime,
        clock: ctx.clock,
        containerId,
        container,
        podIP: t.podIPs[0] ?? "",
        pod: t.pod,
        ...(ctx.countHookHttpFallback ? { onHttpFallback: ctx.countHookHttpFallback } : {}),
      },
      handler,
      POST_START_TIMEOUT_SECONDS,
      signal,
    );
    return { passed };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    ctx.logger.warn("Failed to execute PostStartHook", { container: container.name, err: message });
    return { failed: message };
  }
}
