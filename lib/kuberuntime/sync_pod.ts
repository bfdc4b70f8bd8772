/**
 * Carries out one sync of one pod, in upstream SyncPod's numbered steps:
 *
 *   1. compute the plan (`computePodActions`, pure);
 *   2. kill the pod if its sandbox changed, else kill unwanted containers,
 *      then resize running containers in place (`resize_pod.ts`);
 *   3. create the sandbox if needed (volumes first; the handler of the pod's
 *      RuntimeClass); read the pod's pull secrets; volumes whose content
 *      follows API objects (configMap, secret, downwardAPI, projected) are
 *      set up again on every sync, so edits and token rotation reach
 *      running containers;
 *   4. start ephemeral containers never started before (`kubectl debug`);
 *      before the init containers, so a pod stuck initializing can be
 *      debugged, as upstream;
 *   5. start init containers: the next regular one, sidecars to (re)start;
 *   6. start the app containers.
 *
 * Every container start runs its postStart hook before the next container
 * starts. Every step is recorded in the result instead of thrown; a failed
 * kill or sandbox stops the sync (the next one retries), a failed container
 * start does not stop the others (except a regular init container's). Hook
 * outcomes are steps of their own (`PostStartHook`, `PreStopHook`): worth an
 * event, never a failed sync by themselves. An aborted signal (the pod is
 * being killed) cancels a call in flight that would create or start something
 * (RunPodSandbox, CreateContainer, StartContainer, a pull, a volume's API
 * reads), as upstream's cancelled context does, so a slow runtime or CNI plugin
 * does not hold up the pod's termination; the sync stops after it.
 *
 * @module
 */

import { isRestartableInitContainer, podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import { EventMessage } from "../events/reasons.ts";
import {
  hasApiVolumes,
  managedHostsContent,
  nodeHostsContent,
  NoVolumePluginError,
  setUpPodVolumes,
  VolumeError,
  writeEtcHosts,
} from "../volumes/mod.ts";
import type { ManagerContext, SyncStep } from "./_context.ts";
import { errorText } from "../util/log.ts";
import {
  computePodActions,
  type ComputePodActionsInput,
  type ProbeResult,
} from "./compute_pod_actions.ts";
import { planRecord } from "./plan_reasons.ts";
import { currentSync } from "../trace/mod.ts";
import { podIdentity } from "./container_status.ts";
import { killContainer, killPod } from "./kill_pod.ts";
import { isHookStep } from "./lifecycle_hooks.ts";
import { generatePodSandboxConfig } from "./sandbox_config.ts";
import { podDNS, podHostnameAndDomain } from "./pod_dns.ts";
import { startContainer, type StartSpec, type StartTarget } from "./start_container.ts";
import type { PodActions, RuntimePodStatus } from "./types.ts";
import { recordBackOffEvent, recordDNSWarnings, recordStepEvent } from "./_events.ts";
import { logSymlinkPath, removeLogSymlink } from "./log_symlink.ts";
import { getPullSecrets, recordMissingPullSecrets } from "./pull_secrets.ts";
import { lookupRuntimeHandler } from "./runtime_class.ts";
import { resizePod } from "./resize_pod.ts";
import { resourceInfoForPod } from "../allocation/mod.ts";

/** Probe verdicts the planner weighs, by container id. */
export interface ProbeResults {
  liveness?: ReadonlyMap<string, ProbeResult>;
  startup?: ReadonlyMap<string, ProbeResult>;
}

/** What one sync did. */
export interface SyncPodResult {
  /** The plan that was carried out. */
  actions: PodActions;
  /** Every step tried, in order. */
  steps: SyncStep[];
  /** Per container name, why it is not running now (for its waiting state). */
  lastErrors: Map<string, { reason: string; message: string }>;
}

/** The node's hosts file, which host-network pods get under the managed header. */
const NODE_ETC_HOSTS = "/etc/hosts";

/** The text of the host's resolv.conf ("" when resolvConf is ""). */
async function readResolvConf(path: string): Promise<string> {
  if (!path) return "";
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new Error(`failed to read resolv.conf "${path}"`, { cause: err });
  }
}

/**
 * Syncs a pod towards its spec. Never throws for a failing pod.
 * @param ctx the manager context
 * @param pod the desired pod
 * @param status the pod's full runtime status (from getPodStatus: exit times matter for backoff)
 * @param signal stops the sync between CRI calls
 * @param probes liveness/startup verdicts
 * @returns the plan, the steps and the per-container errors
 */
export async function syncPod(
  ctx: ManagerContext,
  pod: Pod,
  status: RuntimePodStatus,
  signal: AbortSignal,
  probes: ProbeResults = {},
): Promise<SyncPodResult> {
  // As upstream's InitializeActuatedPod: a pod first synced (or adopted)
  // counts as running with its allocated resources.
  const uid = pod.metadata.uid!;
  if (ctx.actuated.getPod(uid) === undefined) ctx.actuated.setPod(uid, resourceInfoForPod(pod));
  const input: ComputePodActionsInput = {
    pod,
    status,
    backoff: ctx.backoff.state,
    now: ctx.clock.now(),
    actuated: new Map(Object.entries(ctx.actuated.getPod(uid)?.containers ?? {})),
    ...(probes.liveness ? { liveness: probes.liveness } : {}),
    ...(probes.startup ? { startup: probes.startup } : {}),
  };
  const actions = computePodActions(input);
  const trace = currentSync();
  trace?.plan(planRecord(input, actions));
  const result: SyncPodResult = { actions, steps: [], lastErrors: new Map() };
  const id = podIdentity(pod);
  const log = ctx.logger.with({ pod: podKey(id), podUID: id.uid });
  const record = (step: SyncStep) => {
    result.steps.push(step);
    trace?.step(step);
    recordStepEvent(ctx.events, pod, step);
    if (step.error && step.action === "StartContainer") {
      result.lastErrors.set(step.target, step.error);
    }
    if (step.error) {
      log.warn("Sync step failed", { step: step.action, target: step.target, ...step.error });
    }
  };
  const aborted = () => {
    if (!signal.aborted) return false;
    record({
      action: "SyncPod",
      target: podKey(id),
      error: { reason: "Aborted", message: `sync of pod "${podKey(id)}" was cancelled` },
    });
    return true;
  };
  for (const held of actions.inBackoff) {
    result.lastErrors.set(held.name, { reason: held.reason, message: held.message });
    if (held.reason === "CrashLoopBackOff") recordBackOffEvent(ctx.events, pod, held.name);
  }

  // Step 2: kill the pod, or the containers the plan no longer wants.
  if (actions.killPod) {
    const steps = await killPod(ctx, pod, status, undefined, signal);
    steps.forEach(record);
    if (steps.some((s) => s.error && !isHookStep(s))) return result;
    if (actions.createSandbox) await purgeInitContainers(ctx, pod, status);
  } else {
    const podIP = status.sandboxes.find((s) => s.id === actions.sandboxId)?.ip ?? "";
    for (const k of actions.containersToKill) {
      if (aborted()) return result;
      const running = status.containers.find((c) => c.id === k.containerId);
      if (!running) continue;
      try {
        const opts = k.gracePeriodSeconds === undefined
          ? { reason: k.reason, message: k.message, podIP }
          : {
            reason: k.reason,
            message: k.message,
            podIP,
            gracePeriodOverride: k.gracePeriodSeconds,
          };
        (await killContainer(ctx, pod, running, opts)).forEach(record);
        record({ action: "KillContainer", target: k.name });
      } catch (err) {
        record({
          action: "KillContainer",
          target: k.name,
          error: { reason: "KillContainerError", message: errorText(err) },
        });
        return result;
      }
    }
    // Upstream does this after creating a sandbox; with a new sandbox there is
    // nothing running to resize, so right after the kills is the same place.
    if (actions.containersToUpdate && !aborted()) {
      const step = await resizePod(ctx, pod, actions.containersToUpdate);
      record(step);
      if (step.error) return result;
    }
  }
  const nothingToStart = actions.initContainersToStart.length === 0 &&
    actions.containersToStart.length === 0 && actions.ephemeralContainersToStart.length === 0;
  if (!actions.createSandbox && nothingToStart) {
    // Refresh API-backed volume content for the running containers (not for
    // a finished pod); a failure is reported but stops nothing that runs.
    const running = status.containers.some((c) => c.state === "running");
    if (running && hasApiVolumes(pod) && !aborted()) {
      await setUpVolumes(ctx, pod, record, signal);
    }
    return result;
  }
  if (aborted()) return result;

  // Step 3: volumes, then the sandbox; the pull secrets for the image pulls to come.
  const target = await prepareSandbox(ctx, pod, status, actions, record, signal);
  if (!target || aborted()) return result;
  const pullSecrets = await getPullSecrets(ctx.objects, pod, log, signal);
  target.pullSecrets = pullSecrets.secrets;
  try {
    return await startContainers();
  } finally {
    recordMissingPullSecrets(ctx.events, pod, pullSecrets.missing, result.steps);
  }

  /** Steps 4 to 6. */
  async function startContainers(): Promise<SyncPodResult> {
    // Step 4: ephemeral containers; one failing holds back nothing (the next
    // sync tries it again, as it still has no instance).
    const ephemerals = pod.spec.ephemeralContainers ?? [];
    for (const idx of actions.ephemeralContainersToStart) {
      const spec = ephemerals[idx];
      if (!spec) continue;
      if (aborted()) return result;
      await start({ container: spec, ephemeral: spec });
    }

    // Step 5: init containers in order (the next regular one, sidecars to
    // (re)start). A regular one that fails to start ends the sync; a sidecar
    // that fails does not hold back the rest (upstream skips it).
    const inits = pod.spec.initContainers ?? [];
    for (const idx of actions.initContainersToStart) {
      const spec = inits[idx];
      if (!spec) continue;
      const failed = await start({ container: spec });
      if (aborted() || (failed && !isRestartableInitContainer(spec))) return result;
    }

    // Step 6: the app containers; one failing does not hold back the others.
    for (const idx of actions.containersToStart) {
      const spec = pod.spec.containers[idx];
      if (!spec) continue;
      if (aborted()) return result;
      await start({ container: spec });
    }
    return result;
  }

  /** Starts one container (postStart included); true when it failed. */
  async function start(spec: StartSpec): Promise<boolean> {
    const steps = await startContainer(ctx, target!, spec, signal, record);
    return steps.some((s) => s.action === "StartContainer" && s.error);
  }
}

/** Removes every init container instance, so a new sandbox runs them all again. */
async function purgeInitContainers(ctx: ManagerContext, pod: Pod, status: RuntimePodStatus) {
  const names = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
  for (const c of status.containers) {
    if (!names.has(c.name)) continue;
    await ctx.runtime.removeContainer(c.id).catch((err) =>
      ctx.logger.warn("Failed to remove init container", {
        container: c.name,
        err: errorText(err),
      })
    );
    await removeLogSymlink(logSymlinkPath(ctx.containerLogsDir, status, c.name, c.id), ctx.logger);
  }
}

/** Sets up (or refreshes) the pod's volumes; undefined after recording a FailedMount. */
async function setUpVolumes(
  ctx: ManagerContext,
  pod: Pod,
  record: (s: SyncStep) => void,
  signal?: AbortSignal,
): Promise<Map<string, string> | undefined> {
  try {
    return await setUpPodVolumes(pod, {
      rootDir: ctx.rootDir,
      clock: ctx.clock,
      mounter: ctx.mounter,
      allocatable: ctx.nodeAllocatable,
      ...(ctx.objects ? { objects: ctx.objects } : {}),
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    // A volume without a plugin is what upstream's WaitForAttachAndMount reports at once;
    // a plugin's failure is its reconciler's `MountVolume.SetUp failed for volume ...`.
    const message = err instanceof NoVolumePluginError
      ? EventMessage.unableToMount(err.volumeNames, [], err.volumeNames, err.reasons)
      : err instanceof VolumeError && err.volume && err.cause !== undefined
      ? EventMessage.mountSetUpFailed(err.volume, errorText(err.cause))
      : errorText(err);
    record({
      action: "MountVolume",
      target: podKey(podIdentity(pod)),
      error: { reason: "FailedMount", message },
    });
    return undefined;
  }
}

/**
 * Sets up volumes and the pod's sandbox (creating it when the plan says so)
 * and gathers what container starts need. Returns undefined after recording
 * the failure.
 */
async function prepareSandbox(
  ctx: ManagerContext,
  pod: Pod,
  status: RuntimePodStatus,
  actions: PodActions,
  record: (s: SyncStep) => void,
  signal: AbortSignal,
): Promise<StartTarget | undefined> {
  const id = podIdentity(pod);
  const volumePaths = await setUpVolumes(ctx, pod, record, signal);
  if (!volumePaths) return undefined;
  let sandboxConfig;
  let runtimeHandler;
  try {
    // Upstream looks the handler up while forming the config (NamespacesForPod), so an
    // unknown RuntimeClass fails it the same way.
    runtimeHandler = await lookupRuntimeHandler(ctx.objects, pod);
    const dns = podDNS(pod, ctx.dns, await readResolvConf(ctx.dns.resolvConf));
    recordDNSWarnings(ctx.events, ctx.logger, ctx.nodeName, pod, dns.warnings);
    sandboxConfig = generatePodSandboxConfig(pod, {
      ...ctx.sandbox,
      podLogsDir: ctx.podLogsDir,
      attempt: actions.attempt,
      dnsConfig: dns.config,
      runtimeHandler,
    });
    if (sandboxConfig.logDirectory) {
      await Deno.mkdir(sandboxConfig.logDirectory, { recursive: true, mode: 0o755 });
    }
  } catch (err) {
    // Upstream's createPodSandbox fails (FailedCreatePodSandBox event) when it
    // cannot form the config of a new sandbox; for an existing one the sync
    // just fails.
    record(
      actions.createSandbox
        ? {
          action: "CreatePodSandbox",
          target: podKey(id),
          error: {
            reason: "CreatePodSandboxError",
            message: `Failed to create pod sandbox: ${errorText(err)}`,
          },
        }
        : {
          action: "ConfigPodSandbox",
          target: podKey(id),
          error: {
            reason: "ConfigPodSandboxError",
            message: `failed to generate the sandbox config of pod "${podKey(id)}": ${
              errorText(err)
            }`,
          },
        },
    );
    return undefined;
  }

  let sandboxId = actions.sandboxId;
  let podIPs: string[];
  if (actions.createSandbox) {
    try {
      if (runtimeHandler) {
        ctx.logger.info("Running pod with runtime handler", { pod: podKey(id), runtimeHandler });
      }
      sandboxId = await ctx.runtime.runPodSandbox(sandboxConfig, runtimeHandler, { signal });
      record({ action: "CreatePodSandbox", target: sandboxId });
    } catch (err) {
      record({
        action: "CreatePodSandbox",
        target: podKey(id),
        error: {
          reason: "CreatePodSandboxError",
          message: `Failed to create pod sandbox: ${errorText(err)}`,
        },
      });
      return undefined;
    }
    try {
      const s = (await ctx.runtime.podSandboxStatus(sandboxId)).status;
      podIPs = [s.network?.ip ?? "", ...(s.network?.additionalIps ?? []).map((a) => a.ip)]
        .filter((ip) => ip !== "");
    } catch (err) {
      record({
        action: "CreatePodSandbox",
        target: sandboxId,
        error: {
          reason: "CreatePodSandboxError",
          message: `failed to get the status of the new sandbox of pod "${podKey(id)}": ${
            errorText(err)
          }`,
        },
      });
      return undefined;
    }
  } else {
    const s = status.sandboxes.find((x) => x.id === sandboxId);
    podIPs = s ? [s.ip, ...s.additionalIps].filter((ip) => ip !== "") : [];
  }
  const spec = pod.spec;
  if (spec.hostNetwork) podIPs = [...ctx.hostIPs];

  const target: StartTarget = { pod, status, sandboxId, sandboxConfig, podIPs, volumePaths };
  // Upstream's shouldMountHostsFile: a host-network pod gets the node's file;
  // a pod on its own network only once its IP is known.
  if (spec.hostNetwork || podIPs.length > 0) {
    try {
      let content: string;
      if (spec.hostNetwork) {
        content = nodeHostsContent(await Deno.readTextFile(NODE_ETC_HOSTS), spec.hostAliases);
      } else {
        const name = podHostnameAndDomain(pod, ctx.sandbox.clusterDomain ?? "");
        content = managedHostsContent(podIPs, name.hostname, name.domain, spec.hostAliases);
      }
      target.etcHostsPath = await writeEtcHosts(ctx.rootDir, id.uid, content);
    } catch (err) {
      // Upstream writes the file while forming each container's config, so a full or
      // read-only root dir shows on the containers (CreateContainerConfigError, a
      // Failed event), not only in the log; the first init container stands for the
      // rest, as its failure holds them back.
      const message = `failed to write /etc/hosts of pod "${podKey(id)}": ${errorText(err)}`;
      const known = (name: string | undefined): name is string => name !== undefined;
      const inits = actions.initContainersToStart.map((i) => spec.initContainers?.[i]?.name)
        .filter(known);
      const names = inits.length > 0
        ? inits.slice(0, 1)
        : actions.containersToStart.map((i) => spec.containers[i]?.name).filter(known);
      for (const name of names) {
        record({
          action: "StartContainer",
          target: name,
          error: { reason: "CreateContainerConfigError", message },
        });
      }
      if (names.length === 0) {
        record({
          action: "ConfigPodSandbox",
          target: podKey(id),
          error: { reason: "ConfigPodSandboxError", message },
        });
      }
      return undefined;
    }
  }
  return target;
}
