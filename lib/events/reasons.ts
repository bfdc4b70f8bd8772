/**
 * Event reasons and messages exactly as the upstream kubelet writes them
 * (pkg/kubelet/events/event.go for the reasons; the messages from where each
 * is emitted: images/image_manager.go, kuberuntime/kuberuntime_container.go,
 * kuberuntime/kuberuntime_manager.go, prober/prober.go, volumemanager,
 * kubelet_node_status.go, kubelet.go). Users and tools grep for these.
 *
 * ```ts
 * recorder.event(containerRef, "Normal", EventReason.pulling, EventMessage.pulling(image));
 * ```
 *
 * @module
 */

import { formatPod } from "../api/pod.ts";
import { formatDuration } from "../util/duration.ts";

/** Reasons (upstream's constant names in the comments). */
export const EventReason = {
  // Container events.
  /** CreatedContainer (Normal). */
  created: "Created",
  /** StartedContainer (Normal). */
  started: "Started",
  /** FailedToCreateContainer / FailedToStartContainer / FailedToPullImage (Warning). */
  failed: "Failed",
  /** KillingContainer (Normal). */
  killing: "Killing",
  /** BackOffStartContainer (Warning) and BackOffPullImage (Normal). */
  backOff: "BackOff",
  /** ExceededGracePeriod (Warning). */
  exceededGracePeriod: "ExceededGracePeriod",
  /** FailedPostStartHook (Warning). */
  failedPostStartHook: "FailedPostStartHook",
  /** FailedPreStopHook (Warning). */
  failedPreStopHook: "FailedPreStopHook",
  /** LifecycleHTTPFallback (Warning, about the pod): an HTTPS httpGet hook passed over HTTP. */
  lifecycleHTTPFallback: "LifecycleHTTPFallback",

  // Image events.
  /** PullingImage (Normal). */
  pulling: "Pulling",
  /** PulledImage (Normal). */
  pulled: "Pulled",
  /** FailedToInspectImage (Warning). */
  inspectFailed: "InspectFailed",
  /** ErrImageNeverPullPolicy (Warning). */
  errImageNeverPull: "ErrImageNeverPull",

  // Probe events.
  /** ContainerUnhealthy (Warning). */
  unhealthy: "Unhealthy",
  /** ContainerProbeWarning (Warning). */
  probeWarning: "ProbeWarning",

  // Pod-level events.
  /** FailedMountVolume (Warning). */
  failedMount: "FailedMount",
  /** FailedCreatePodSandBox (Warning). */
  failedCreatePodSandBox: "FailedCreatePodSandBox",
  /** SandboxChanged (Normal). */
  sandboxChanged: "SandboxChanged",
  /** kubelet.go's FailedToRetrieveImagePullSecret (Warning): a pull failed and a pull secret was missing. */
  failedToRetrieveImagePullSecret: "FailedToRetrieveImagePullSecret",
  /** FailedToCreatePodContainer (Warning): the pod's cgroup could not be made. */
  failedCreatePodContainer: "FailedCreatePodContainer",
  /** FailedKillPod (Warning). */
  failedKillPod: "FailedKillPod",
  /** FailedSync (Warning). */
  failedSync: "FailedSync",
  /** FailedValidation (Warning), for a manifest the kubelet rejects. */
  failedValidation: "FailedValidation",
  /** NetworkNotReady (Warning). */
  networkNotReady: "NetworkNotReady",
  /** DNSConfigForming (Warning): the pod's resolv.conf was cut to the limits (network/dns). */
  dnsConfigForming: "DNSConfigForming",
  /** MissingClusterDNS (Warning), about the pod and the node: ClusterFirst without clusterDNS. */
  missingClusterDNS: "MissingClusterDNS",
  /** active_deadline.go's reason (Normal), also the Failed pod's status reason. */
  deadlineExceeded: "DeadlineExceeded",
  /** In-place resize (events/resize.go): allocated (Normal), actuated (Normal), failed (Warning). */
  resizeStarted: "ResizeStarted",
  resizeCompleted: "ResizeCompleted",
  resizeError: "ResizeError",
  /** A resize that does not fit now (Warning) or never will on this node (Warning). */
  resizeDeferred: "ResizeDeferred",
  resizeInfeasible: "ResizeInfeasible",

  // Node events (involvedObject is the Node, namespace "default").
  /** StartingKubelet (Normal). */
  starting: "Starting",
  /** NodeReady (Normal). */
  nodeReady: "NodeReady",
  /** NodeNotReady (Normal). */
  nodeNotReady: "NodeNotReady",
  /** NodeSchedulable (Normal). */
  nodeSchedulable: "NodeSchedulable",
  /** NodeNotSchedulable (Normal). */
  nodeNotSchedulable: "NodeNotSchedulable",
  /** NodeRebooted (Warning). */
  rebooted: "Rebooted",
  /** NodeHasSufficientMemory / NodeHasInsufficientMemory (Normal), the MemoryPressure condition. */
  nodeHasSufficientMemory: "NodeHasSufficientMemory",
  nodeHasInsufficientMemory: "NodeHasInsufficientMemory",
  /** NodeHasNoDiskPressure / NodeHasDiskPressure (Normal). */
  nodeHasNoDiskPressure: "NodeHasNoDiskPressure",
  nodeHasDiskPressure: "NodeHasDiskPressure",
  /** NodeHasSufficientPID / NodeHasInsufficientPID (Normal). */
  nodeHasSufficientPID: "NodeHasSufficientPID",
  nodeHasInsufficientPID: "NodeHasInsufficientPID",
  /** NodeAllocatableEnforced (Normal). */
  nodeAllocatableEnforced: "NodeAllocatableEnforced",
  /** FailedNodeAllocatableEnforcement (Warning): a node allocatable limit the kernel refused. */
  failedNodeAllocatableEnforcement: "FailedNodeAllocatableEnforcement",
  /** InvalidDiskCapacity (Warning). */
  invalidDiskCapacity: "InvalidDiskCapacity",
  /** FreeDiskSpaceFailed (Warning): image GC freed less than it needed. */
  freeDiskSpaceFailed: "FreeDiskSpaceFailed",
  /** ImageGCFailed (Warning): image GC failed twice in a row or more. */
  imageGCFailed: "ImageGCFailed",
  /** CheckLimitsForResolvConf (Warning): the host's resolv.conf is over the limits (network/dns). */
  checkLimitsForResolvConf: "CheckLimitsForResolvConf",
  /** ContainerGCFailed (Warning): a periodic container garbage collection failed. */
  containerGCFailed: "ContainerGCFailed",
} as const;

/** The probe kinds as upstream prints them in Unhealthy messages. */
export type ProbeKind = "Liveness" | "Readiness" | "Startup";

/** Go's `%q` of a string (close enough: JSON escaping). */
function q(s: string): string {
  return JSON.stringify(s);
}

/** Messages, as upstream formats them. */
export const EventMessage = {
  /** Pulling: `Pulling image "busybox"`. */
  pulling: (image: string) => `Pulling image ${q(image)}`,
  /**
   * Pulled after a pull: `Successfully pulled image "x" in 1.2s (1.5s including
   * waiting). Image size: 123 bytes.` (sizes from the runtime's image status).
   */
  pulled: (image: string, pullMs: number, totalMs: number, sizeBytes: number) =>
    `Successfully pulled image ${q(image)} in ${formatDuration(pullMs)} (${
      formatDuration(totalMs)
    } including waiting). Image size: ${sizeBytes} bytes.`,
  /**
   * Pulled when no pull was needed, as upstream words it with KubeletEnsureSecretPulledImages
   * (on by default since v1.35; denolet verifies nothing, as its `NeverVerify` policy).
   */
  alreadyPresent: (image: string) =>
    `Container image ${q(image)} already present on machine and can be accessed by the pod`,
  /** Failed (reason `Failed`): the pull error. */
  failedToPull: (image: string, err: string) => `Failed to pull image ${q(image)}: ${err}`,
  /**
   * Failed (reason `Failed`) that follows a pull or create error, with the
   * waiting reason or runtime message: "Error: ErrImagePull",
   * "Error: ImagePullBackOff", "Error: ErrImageNeverPull".
   */
  error: (reasonOrMessage: string) => `Error: ${reasonOrMessage}`,
  /** ErrImageNeverPull. */
  neverPull: (image: string) =>
    `Container image ${q(image)} is not present with pull policy of Never`,
  /** FailedToRetrieveImagePullSecret: the pull secrets that could not be read, by name. */
  missingPullSecrets: (names: readonly string[]) =>
    `Unable to retrieve some image pull secrets (${
      names.join(", ")
    }); attempting to pull the image may not succeed.`,
  /** InspectFailed. */
  inspectFailed: (image: string, err: string) => `Failed to inspect image ${q(image)}: ${err}`,
  /** BackOff on an image (type Normal). */
  backOffPull: (image: string) => `Back-off pulling image ${q(image)}`,
  /** BackOff on a crashing container (type Warning). */
  backOffRestart: (container: string, pod: { name: string; namespace: string; uid: string }) =>
    `Back-off restarting failed container ${container} in pod ${formatPod(pod)}`,
  /** Created. */
  created: (container: string) => `Created container ${container}`,
  /** Started. */
  started: (container: string) => `Started container ${container}`,
  /** Killing, the default message. */
  killing: (container: string) => `Stopping container ${container}`,
  /** Killing after a failed liveness probe. */
  killingLiveness: (container: string) =>
    `Container ${container} failed liveness probe, will be restarted`,
  /** Killing after a failed startup probe. */
  killingStartup: (container: string) =>
    `Container ${container} failed startup probe, will be restarted`,
  /** Killing after a spec change. */
  killingChanged: (container: string) =>
    `Container ${container} definition changed, will be restarted`,
  /** Unhealthy: `Liveness probe failed: HTTP probe failed with statuscode: 500`. */
  probeFailed: (kind: ProbeKind, output: string) => `${kind} probe failed: ${output}`,
  /** Unhealthy when the probe could not run. */
  probeErrored: (kind: ProbeKind, err: string) => `${kind} probe errored: ${err}`,
  /** ProbeWarning. */
  probeWarning: (kind: ProbeKind, output: string) => `${kind} probe warning: ${output}`,
  /** LifecycleHTTPFallback (lifecycle/handlers.go), naming the hook's host:port. */
  lifecycleHTTPFallback: (host: string) =>
    `request to HTTPS lifecycle hook ${host} got HTTP response, retry with HTTP succeeded`,
  /** FailedMount for one volume: `MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`. */
  mountSetUpFailed: (volume: string, err: string) =>
    `MountVolume.SetUp failed for volume ${q(volume)} : ${err}`,
  /**
   * FailedMount when the pod's volumes are not all mounted (kubelet.go SyncPod around
   * WaitForAttachAndMount's error; the lists as Go's `%v` of a sorted []string).
   */
  unableToMount: (
    unmounted: readonly string[],
    unattached: readonly string[],
    failedToProcess: readonly string[],
    err: string,
  ) =>
    `Unable to attach or mount volumes: unmounted volumes=[${
      unmounted.join(" ")
    }], unattached volumes=[${unattached.join(" ")}], failed to process volumes=[${
      failedToProcess.join(" ")
    }]: ${err}`,
  /** FailedCreatePodSandBox. */
  failedCreateSandbox: (err: string) => `Failed to create pod sandbox: ${err}`,
  /** SandboxChanged. */
  sandboxChanged: () => "Pod sandbox changed, it will be killed and re-created.",
  /** FailedKillPod. */
  failedKillPod: (err: string) => `error killing pod: ${err}`,
  /** DeadlineExceeded, also the Failed pod's status message. */
  deadlineExceeded: () => "Pod was active on the node longer than the specified deadline",
  /** ExceededGracePeriod. */
  exceededGracePeriod: () =>
    "Container runtime did not kill the pod within specified grace period.",
  /** Starting (on the Node). */
  starting: () => "Starting kubelet.",
  /** NodeReady, NodeNotReady and the other condition events: `Node n1 status is now: NodeReady`. */
  nodeStatus: (node: string, reason: string) => `Node ${node} status is now: ${reason}`,
  /** Rebooted. */
  rebooted: (node: string, bootID: string) => `Node ${node} has been rebooted, boot id: ${bootID}`,
  /** NodeAllocatableEnforced. */
  allocatableEnforced: () => "Updated Node Allocatable limit across pods",
} as const;
