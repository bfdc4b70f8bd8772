/**
 * Container statuses as the API shows them, from the runtime's instances,
 * the previous status and the reasons the last sync could not start a
 * container. Upstream `convertToAPIContainerStatuses` (kubelet_pods.go) plus
 * the probe manager's `ready`/`started` fields.
 *
 * @module
 */

import { isRestartableInitContainer } from "../api/pod.ts";
import type { Container, ContainerState, ContainerStatus, Pod } from "../api/types.ts";
import { shouldContainerBeRestarted } from "../kuberuntime/container_status.ts";
import type { RuntimeContainer, RuntimePodStatus } from "../kuberuntime/types.ts";
import { optionalMetaTime } from "../util/time.ts";
import { statusResources } from "./container_resources.ts";
import type { ResourceRequirements } from "../api/types.ts";

/** The runtime name in `containerID` (`containerd://<id>`). */
export const RUNTIME_NAME = "containerd";

/** Default waiting reasons, as upstream spells them. */
export const WaitingReason = {
  containerCreating: "ContainerCreating",
  podInitializing: "PodInitializing",
} as const;

/** Upstream `ContainerReasonStatusUnknown`. */
export const CONTAINER_STATUS_UNKNOWN = "ContainerStatusUnknown";

/** Why the last sync did not (re)start a container, by container name. */
export type StartFailures = ReadonlyMap<string, { reason: string; message: string }>;

/** What {@link convertContainerStatuses} needs. */
export interface ConvertOptions {
  pod: Pod;
  runtime: RuntimePodStatus;
  /** The specs to report on (init, app or ephemeral containers). */
  containers: readonly Container[];
  isInit: boolean;
  /**
   * Ephemeral containers: run once, so only one that never ran waits (with
   * the reason it could not start); never ready, no `started` (upstream's
   * probe manager leaves their statuses alone).
   */
  isEphemeral?: boolean;
  /** The previously reported statuses of the same kind. */
  previous: readonly ContainerStatus[] | undefined;
  /** Start failures and CrashLoopBackOff, by container name. */
  reasons: StartFailures;
  /** Readiness by container id. */
  readiness: ReadonlyMap<string, boolean> | undefined;
  /** Startup probe results by container id (only containers with a startup probe). */
  startup?: ReadonlyMap<string, "success" | "failure"> | undefined;
  /**
   * In-place resize: what the kubelet actuated per container name. When
   * given, each container with a runtime instance reports `resources` and
   * `allocatedResources` (the `pod` is the allocated pod), as upstream does.
   */
  actuated?: ((name: string) => ResourceRequirements | undefined) | undefined;
}

/**
 * Formats a container id as the API does.
 * @param id the CRI container id
 * @returns `containerd://<id>`
 */
export function apiContainerId(id: string): string {
  return `${RUNTIME_NAME}://${id}`;
}

function convertInstance(rc: RuntimeContainer, old: ContainerStatus | undefined): ContainerStatus {
  const containerID = apiContainerId(rc.id);
  const status: ContainerStatus = {
    name: rc.name,
    state: {},
    lastState: {},
    ready: false,
    restartCount: rc.restartCount,
    image: rc.image,
    imageID: rc.imageRef,
    containerID,
  };
  switch (rc.state) {
    case "running": {
      const startedAt = optionalMetaTime(rc.startedAt);
      status.state = { running: startedAt ? { startedAt } : {} };
      break;
    }
    case "exited": {
      const terminated: NonNullable<ContainerState["terminated"]> = {
        exitCode: rc.exitCode,
        containerID,
      };
      if (rc.reason) terminated.reason = rc.reason;
      if (rc.message) terminated.message = rc.message;
      const startedAt = optionalMetaTime(rc.startedAt);
      if (startedAt) terminated.startedAt = startedAt;
      const finishedAt = optionalMetaTime(rc.finishedAt);
      if (finishedAt) terminated.finishedAt = finishedAt;
      status.state = { terminated };
      break;
    }
    default:
      if (rc.state === "unknown" && old?.state.running !== undefined) {
        // It ran and vanished: report it as stopped, not as never started,
        // so a run-once pod is not taken for one that must start again.
        status.state = {
          terminated: {
            exitCode: 137,
            reason: CONTAINER_STATUS_UNKNOWN,
            message: "The container could not be located when the pod was terminated",
          },
        };
        status.restartCount = old.restartCount + 1;
      } else {
        status.state = { waiting: {} }; // created, or unknown: waiting to run
      }
  }
  return status;
}

/**
 * Builds the statuses for one kind of container. App and ephemeral
 * containers come back sorted by name and init containers in spec order, as
 * upstream returns them.
 * @param options see {@link ConvertOptions}
 * @returns one status per spec container
 */
export function convertContainerStatuses(options: ConvertOptions): ContainerStatus[] {
  const { pod, runtime, containers, isInit, reasons } = options;
  const hasInit = (pod.spec.initContainers ?? []).length > 0;
  const defaultReason = hasInit ? WaitingReason.podInitializing : WaitingReason.containerCreating;
  const oldByName = new Map((options.previous ?? []).map((s) => [s.name, s]));
  const statuses = new Map<string, ContainerStatus>();

  for (const c of containers) {
    const old = oldByName.get(c.name);
    if (old?.state.terminated !== undefined) {
      statuses.set(c.name, structuredClone(old));
      continue;
    }
    statuses.set(c.name, {
      name: c.name,
      state: { waiting: { reason: defaultReason } },
      lastState: old ? structuredClone(old.lastState) : {},
      ready: false,
      restartCount: old?.restartCount ?? 0,
      image: c.image ?? "",
      imageID: "",
    });
  }

  // A container that was running and has vanished from the runtime stopped;
  // showing it as waiting would send the pod back to Pending.
  for (const c of containers) {
    if (runtime.containers.some((rc) => rc.name === c.name)) continue;
    const old = oldByName.get(c.name);
    const status = statuses.get(c.name);
    if (!old || old.state.terminated || !old.state.running || !status) continue;
    if (status.state.waiting?.reason !== defaultReason || status.lastState.terminated) continue;
    status.lastState = {
      terminated: {
        exitCode: 137,
        reason: CONTAINER_STATUS_UNKNOWN,
        message:
          "The container could not be located when the pod was deleted.  The container used to be Running",
      },
    };
    if (!pod.metadata.deletionTimestamp) status.restartCount += 1;
  }

  // Newest instance is the state; the one before it is lastState.
  const seen = new Map<string, number>();
  for (const rc of runtime.containers) {
    const existing = statuses.get(rc.name);
    const count = seen.get(rc.name) ?? 0;
    if (existing === undefined || count >= 2) continue;
    const converted = convertInstance(rc, oldByName.get(rc.name));
    const spec = options.actuated && containers.find((c) => c.name === rc.name);
    if (count === 0 && spec) {
      converted.resources = statusResources(
        spec,
        rc,
        oldByName.get(rc.name),
        options.actuated!(rc.name),
      );
      const requests = spec.resources?.requests;
      if (requests !== undefined) converted.allocatedResources = structuredClone(requests);
    }
    if (count === 0) statuses.set(rc.name, converted);
    else existing.lastState = converted.state;
    seen.set(rc.name, count + 1);
  }

  // A container the next sync will (re)start but could not this time is
  // waiting, with the reason (CrashLoopBackOff, ErrImagePull, ...).
  for (const c of containers) {
    const current = runtime.containers.find((rc) => rc.name === c.name);
    // A regular init container that succeeded is done; a sidecar restarts whatever its exit code.
    if (
      isInit && !isRestartableInitContainer(c) && current?.state === "exited" &&
      current.exitCode === 0
    ) continue;
    if (
      options.isEphemeral ? current !== undefined : !shouldContainerBeRestarted(pod, c, runtime)
    ) {
      continue;
    }
    const why = reasons.get(c.name);
    const status = statuses.get(c.name);
    if (!why || !status) continue;
    if (status.state.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: why.reason, message: why.message } };
  }

  for (const c of containers) {
    const status = statuses.get(c.name);
    if (status && !options.isEphemeral) setReadiness(status, c, isInit, options);
  }
  const ordered = containers.flatMap((c) => statuses.get(c.name) ?? []);
  return isInit
    ? ordered
    : ordered.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The probe manager's part (upstream `UpdatePodStatus`): a container is
 * started while running once its startup probe succeeded (at once without
 * one); a started app container or sidecar is ready with a passing (or no)
 * readiness probe; a regular init container is ready once it exited 0.
 */
function setReadiness(
  status: ContainerStatus,
  spec: Container,
  isInit: boolean,
  options: Pick<ConvertOptions, "readiness" | "startup">,
): void {
  const id = status.containerID?.replace(/^[^:]+:\/\//, "") ?? "";
  const running = status.state.running !== undefined;
  status.started = running &&
    (spec.startupProbe === undefined || options.startup?.get(id) === "success");
  if (isInit && spec.restartPolicy !== "Always") {
    status.ready = status.state.terminated?.exitCode === 0;
    return;
  }
  const verdict = options.readiness?.get(id);
  status.ready = status.started && (verdict ?? spec.readinessProbe === undefined);
}
