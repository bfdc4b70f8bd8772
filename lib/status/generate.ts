/**
 * The pod status the kubelet reports, from the pod, what the runtime holds
 * and what the last sync could not do: upstream `generateAPIPodStatus`
 * (kubelet_pods.go) together with the status manager's normalisation
 * (times kept while nothing changed, start time kept, seconds precision).
 *
 * @module
 */

import type {
  Container,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
  ResourceRequirements,
} from "../api/types.ts";
import { podSandboxChanged } from "../kuberuntime/container_status.ts";
import type { ContainerInBackoff, RuntimePodStatus } from "../kuberuntime/types.ts";
import { metaTime } from "../util/time.ts";
import {
  containersReadyCondition,
  initializedCondition,
  KUBELET_CONDITIONS,
  podReadyCondition,
  withTransitionTimes,
} from "./conditions.ts";
import { convertContainerStatuses } from "./container_statuses.ts";
import { getPhase, isTerminalPhase } from "./phase.ts";
import { podQOSClass } from "../api/qos.ts";

/** Everything {@link generatePodStatus} reads. */
export interface GeneratePodStatusInput {
  pod: Pod;
  runtime: RuntimePodStatus;
  /** Containers the planner held back (reported as waiting, CrashLoopBackOff). */
  inBackoff: readonly ContainerInBackoff[];
  /**
   * Why the executor could not start a container (ErrImagePull,
   * ImagePullBackOff, ErrImageNeverPull, CreateContainerError, ...), by
   * container name. Like upstream's reason cache, keep an entry until that
   * container starts.
   */
  lastErrors?: ReadonlyMap<string, { reason: string; message: string }> | undefined;
  /** The status last reported for this pod (the status manager's copy). */
  previous?: PodStatus | undefined;
  /** Readiness probe results by container id. */
  readiness?: ReadonlyMap<string, boolean> | undefined;
  /**
   * Startup probe results by container id: a container with a startup probe
   * is `started` only once it succeeded (gates `ready` and sidecars'
   * Initialized).
   */
  startup?: ReadonlyMap<string, "success" | "failure"> | undefined;
  /** The node's IP. */
  hostIP?: string | undefined;
  /** True once the pod worker has decided the pod is done (terminating). */
  podIsTerminal?: boolean | undefined;
  /**
   * A pod sync handler asked for the pod to be evicted (upstream
   * `ShouldEvict`, e.g. the active deadline): the phase is Failed with this
   * reason and message.
   */
  evict?: { reason: string; message: string } | undefined;
  /**
   * In-place resize: what the kubelet actuated per container (`pod` is then
   * the allocated pod); container statuses report `resources` and
   * `allocatedResources` when given.
   */
  actuated?: ((name: string) => ResourceRequirements | undefined) | undefined;
  /** PodResizePending / PodResizeInProgress (lib/allocation), reported after others' conditions. */
  resizeConditions?: readonly PodCondition[] | undefined;
  /** Epoch ms. */
  now: number;
}

/**
 * Generates the pod status. Pure.
 * @param input see {@link GeneratePodStatusInput}
 * @returns a fresh PodStatus, times in RFC 3339 with second precision
 */
export function generatePodStatus(input: GeneratePodStatusInput): PodStatus {
  const { pod, runtime } = input;
  // The status manager's copy if we have one, else what the API server holds.
  const old: PodStatus = input.previous ?? pod.status ?? {};
  const apiStatus: PodStatus = pod.status ?? {};
  const nowText = metaTime(input.now);

  const reasons = new Map<string, { reason: string; message: string }>(input.lastErrors ?? []);
  for (const b of input.inBackoff) reasons.set(b.name, { reason: b.reason, message: b.message });
  const convert = (
    containers: readonly Container[],
    previous: ContainerStatus[] | undefined,
    kind: { isInit?: boolean; isEphemeral?: boolean } = {},
  ) =>
    convertContainerStatuses({
      pod,
      runtime,
      containers,
      isInit: kind.isInit === true,
      isEphemeral: kind.isEphemeral === true,
      previous,
      reasons,
      readiness: input.readiness,
      startup: input.startup,
      actuated: input.actuated,
    });
  const containerStatuses = convert(pod.spec.containers, old.containerStatuses);
  const initContainerStatuses = convert(pod.spec.initContainers ?? [], old.initContainerStatuses, {
    isInit: true,
  });
  // Reported, but they count for neither the phase nor readiness (upstream).
  const ephemerals = pod.spec.ephemeralContainers ?? [];
  const ephemeralContainerStatuses = convert(ephemerals, old.ephemeralContainerStatuses, {
    isEphemeral: true,
  });

  let phase = getPhase(pod, initContainerStatuses, containerStatuses, input.podIsTerminal === true);
  // A terminal phase, once reported, sticks.
  if (!isTerminalPhase(phase)) {
    if (isTerminalPhase(old.phase) && old.phase) phase = old.phase;
    else if (isTerminalPhase(apiStatus.phase) && apiStatus.phase) phase = apiStatus.phase;
  }

  const status: PodStatus = { phase };
  if (phase === old.phase) {
    // The reason and message belong to the phase; keep them while it holds.
    const reason = old.reason || apiStatus.reason;
    const message = old.message || apiStatus.message;
    if (reason) status.reason = reason;
    if (message) status.message = message;
  }
  if (input.evict) {
    phase = status.phase = "Failed";
    status.reason = input.evict.reason;
    status.message = input.evict.message;
  }
  // The apiserver's terminal phase is final.
  if (isTerminalPhase(apiStatus.phase) && apiStatus.phase) phase = status.phase = apiStatus.phase;

  const all = [...initContainerStatuses, ...containerStatuses];
  const containersReady = containersReadyCondition(pod, all, phase);
  // Conditions others own (readiness gates among them) are kept, from the API object.
  const foreign = (apiStatus.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.includes(c.type));
  const readyToStart: PodCondition = {
    type: "PodReadyToStartContainers",
    status: podSandboxChanged(pod, runtime).changed ? "False" : "True",
  };
  const initialized = initializedCondition(pod, initContainerStatuses, containerStatuses, phase);
  const kubeletConditions: PodCondition[] = [
    readyToStart,
    initialized,
    // Readiness gates look at the conditions before Ready, as upstream's list is built.
    podReadyCondition(pod, containersReady, [...foreign, readyToStart, initialized]),
    containersReady,
    { type: "PodScheduled", status: "True" },
  ];
  // PodObservedGenerationTracking (GA): each condition says which spec it was computed from.
  const generation = pod.metadata.generation;
  if (generation !== undefined && generation > 0) {
    for (const c of kubeletConditions) c.observedGeneration = generation;
  }
  status.conditions = [
    ...foreign,
    ...(input.resizeConditions ?? []).map((c) => ({ ...c })),
    ...withTransitionTimes(kubeletConditions, old.conditions, nowText),
  ];

  const hostIP = input.hostIP ?? old.hostIP;
  if (hostIP) {
    status.hostIP = hostIP;
    status.hostIPs = [{ ip: hostIP }];
  }
  const podIPs = sandboxIPs(runtime);
  if (podIPs.length === 0 && pod.spec.hostNetwork && hostIP) podIPs.push(hostIP);
  if (podIPs[0] !== undefined) {
    status.podIP = podIPs[0];
    status.podIPs = podIPs.map((ip) => ({ ip }));
  }
  status.startTime = old.startTime ?? nowText;
  if ((pod.spec.initContainers ?? []).length > 0) {
    status.initContainerStatuses = initContainerStatuses;
  }
  status.containerStatuses = containerStatuses;
  if (ephemerals.length > 0) status.ephemeralContainerStatuses = ephemeralContainerStatuses;
  status.qosClass = podQOSClass(pod);
  return status;
}

/**
 * The pod's IPs from its newest sandbox while it is ready: the primary IP,
 * then the first additional IP of the other family (dual stack).
 */
function sandboxIPs(runtime: RuntimePodStatus): string[] {
  const newest = runtime.sandboxes[0];
  if (newest === undefined || newest.state !== "ready" || newest.ip === "") return [];
  const isV6 = (ip: string) => ip.includes(":");
  const other = newest.additionalIps.find((ip) => ip !== "" && isV6(ip) !== isV6(newest.ip));
  return other === undefined ? [newest.ip] : [newest.ip, other];
}
