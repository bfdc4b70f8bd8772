/**
 * Apiserver mode (`--kubeconfig`): the parts of the agent that talk to the
 * cluster, built and stopped together — the REST client, the event
 * recorder, node registration with status and Lease, the pod status
 * writer and mirror pods. The sync loop stays in
 * {@link import("./kubelet.ts").Kubelet}; the status writer is a sink of its
 * status manager.
 *
 * @module
 */

import { isStaticPod } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { Node } from "../api/cluster_types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { RuntimeService } from "../cri/types.ts";
import type { AgentOptions } from "../options/mod.ts";
import {
  createKubeClient,
  type CredentialProvider,
  type KubeClient,
  loadKubeconfig,
  type RequestObserver,
} from "../kubeapi/mod.ts";
import { type ApiEventRecorder, EventMessage, EventReason, nodeReference } from "../events/mod.ts";
import { nodeImages, NodeStatusManager, type RuntimeReadiness } from "../nodestatus/mod.ts";
import type { MachineInfo } from "../stats/mod.ts";
import { type ApiPodRef, ApiStatusWriter, type StatusManager } from "../status/mod.ts";
import { MirrorPodManager } from "../mirror/mod.ts";
import { VERSION } from "../util/version.ts";
import { TICK_GRID_MS } from "../util/tick.ts";

/** The User-Agent of every apiserver request. */
export const USER_AGENT =
  `denolet/${VERSION} (${Deno.build.os}/${Deno.build.arch}) kubernetes/denolet`;

/** What {@link connectCluster} needs from the rest of the agent. */
export interface ClusterOptions {
  /** From {@link createClusterClients}; closed by {@link Cluster.stop}. */
  client: KubeClient;
  /** The event recorder (pod events are recorded before this starts). */
  events: ApiEventRecorder;
  /** The events' own client, closed by {@link Cluster.stop}. */
  eventsClient: KubeClient;
  /** Node status and Lease writes (never rate limited), closed by {@link Cluster.stop}. */
  heartbeatClient: KubeClient;
  opts: AgentOptions;
  nodeName: string;
  nodeIP: string;
  clock: Clock;
  logger: Logger;
  runtime: RuntimeService;
  /** The machine's facts, read once at start-up. */
  machineInfo: MachineInfo;
  /** Runtime and PLEG health, in upstream's words; undefined parts are healthy. */
  readiness: () => RuntimeReadiness;
  /** The kubelet's status manager; the apiserver writer becomes its sink. */
  statuses: StatusManager;
  /** True once a pod deleted through the API has had its resources reclaimed. */
  canBeDeleted: (uid: string) => boolean;
  /** The pod manager's view of a pod (API pods carry the status the watch last saw). */
  desiredPod: (uid: string) => Pod | undefined;
  /** True once every pod source delivered its first set. */
  sourcesReady: () => boolean;
  /** The eviction manager's verdicts (MemoryPressure, DiskPressure, PIDPressure). */
  pressure?: () => { memory?: boolean; disk?: boolean; pid?: boolean };
}

/** The running apiserver-mode parts. */
export interface Cluster {
  client: KubeClient;
  events: ApiEventRecorder;
  nodeStatus: NodeStatusManager;
  statusWriter: ApiStatusWriter;
  mirrors: MirrorPodManager;
  /** The Node as last read or written, for hostIP and mirror pod owners. */
  node(): Node | undefined;
  /** Called every housekeeping pass with the desired pods: brings the mirror pods in line. */
  housekeeping(pods: Pod[]): void;
  /** Stops the loops, flushes statuses and events, closes the client. */
  stop(): Promise<void>;
}

/** Where a pod's status is written, with the status the apiserver holds. */
function apiPodRef(pod: Pod): ApiPodRef {
  return {
    namespace: pod.metadata.namespace ?? "default",
    name: pod.metadata.name ?? "",
    uid: pod.metadata.uid!,
    ...(pod.status ? { status: pod.status } : {}),
  };
}

/**
 * Builds the three apiserver clients from `--kubeconfig`, loaded once, as
 * upstream does: one for everything but events (kubeAPIQPS/kubeAPIBurst), one
 * for events (eventRecordQPS/eventBurst), so a burst of events never delays a
 * status write, and the heartbeat client for node status and Lease writes:
 * never rate limited, and timed out after the shorter of
 * nodeStatusUpdateFrequency and the lease duration, so a busy node still
 * renews its Lease. They share the kubeconfig's credentials, or `credentials`
 * (the rotating client certificate) in their place.
 * @param opts the agent's options
 * @param clock the clock
 * @param observer told about every request of the three clients (the rest_client_* metrics)
 * @param credentials replaces the kubeconfig user's credentials
 * @returns the clients
 * @throws Error naming the kubeconfig when it cannot be loaded
 */
export async function createClusterClients(
  opts: AgentOptions,
  clock: Clock,
  observer?: RequestObserver,
  credentials?: CredentialProvider,
): Promise<{ api: KubeClient; events: KubeClient; heartbeat: KubeClient }> {
  const loaded = await loadKubeconfig(opts.kubeconfig, { clock });
  const kubeconfig = credentials ? { ...loaded, credentials } : loaded;
  const common = {
    kubeconfig,
    userAgent: USER_AGENT,
    clock,
    ...(observer ? { observer } : {}),
  };
  return {
    api: createKubeClient({ ...common, qps: opts.kubeAPIQPS, burst: opts.kubeAPIBurst }),
    events: createKubeClient({
      ...common,
      qps: opts.config.eventRecordQPS ?? 50,
      burst: opts.config.eventBurst ?? 100,
    }),
    heartbeat: createKubeClient({
      ...common,
      qps: 0,
      timeoutMs: Math.min(opts.nodeStatusUpdateFrequencyMs, opts.nodeLeaseDurationSeconds * 1000),
    }),
  };
}

/**
 * Builds the apiserver-mode parts and starts them. Registration runs in the
 * background: the agent runs static pods while the apiserver is unreachable.
 * @param o the client, the agent's options and hooks
 * @returns the running parts
 */
export function connectCluster(o: ClusterOptions): Cluster {
  const { opts, nodeName, clock, logger, client, events, eventsClient, heartbeatClient } = o;
  const nodeStatus = new NodeStatusManager({
    client,
    heartbeatClient,
    nodeName,
    ...(opts.hostnameOverride ? { hostname: opts.hostnameOverride } : {}),
    clock,
    logger,
    events,
    machineInfo: o.machineInfo,
    nodeIP: o.nodeIP,
    runtimeReady: o.readiness,
    runtimeVersion: () => o.runtime.version(),
    images: async () => nodeImages(await o.runtime.listImages()),
    ...(o.pressure ? { pressure: o.pressure } : {}),
    options: {
      maxPods: opts.maxPods,
      kubeReserved: opts.kubeReserved,
      systemReserved: opts.systemReserved,
      evictionHard: opts.evictionHard,
      localStorageCapacityIsolation: opts.localStorageCapacityIsolation,
      registerWithTaints: opts.registerWithTaints,
      registerNode: opts.registerNode,
      nodeLabels: opts.nodeLabels,
      updateFrequencyMs: opts.nodeStatusUpdateFrequencyMs,
      reportFrequencyMs: opts.nodeStatusReportFrequencyMs,
      leaseDurationSeconds: opts.nodeLeaseDurationSeconds,
      kubeletPort: opts.port,
      maxImages: opts.nodeStatusMaxImages,
      tickGridMs: TICK_GRID_MS,
    },
  });
  const mirrors = new MirrorPodManager({
    client,
    nodeName,
    node: () => nodeStatus.node(),
    sourcesReady: o.sourcesReady,
    logger,
    clock,
  });
  const statusWriter = new ApiStatusWriter({
    statuses: o.statuses,
    client,
    clock,
    logger,
    // A static pod's status goes to its mirror pod; an API pod's to itself,
    // compared against the status its watch last delivered.
    resolveApiPod: (pod) => {
      const target = isStaticPod(pod)
        ? mirrors.mirrorPodFor(pod)
        : o.desiredPod(pod.metadata.uid!) ?? pod;
      return target?.metadata.uid ? apiPodRef(target) : undefined;
    },
    canBeDeleted: o.canBeDeleted,
  });

  events.start();
  nodeStatus.start();
  statusWriter.start();
  events.event(nodeReference(nodeName), "Normal", EventReason.starting, EventMessage.starting());
  nodeStatus.registered.then(
    (node) => logger.info("Node registered", { node: nodeName, uid: node.metadata.uid }),
    () => {/* stopped before registration; nothing to report */},
  );

  return {
    client,
    events,
    nodeStatus,
    statusWriter,
    mirrors,
    node: () => nodeStatus.node(),
    housekeeping(pods) {
      void mirrors.reconcile(pods.filter(isStaticPod));
    },
    async stop() {
      mirrors.stop();
      await nodeStatus.stop();
      await statusWriter.stop();
      await events.stop();
      client.close();
      eventsClient.close();
      heartbeatClient.close();
    },
  };
}
