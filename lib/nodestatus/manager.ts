/**
 * {@link NodeStatusManager}: the Node's whole life on the apiserver side,
 * started and stopped as one. At start it renews the Lease right away (as
 * upstream, concurrently with registration), registers the Node in the
 * background, then writes the status right after registration and every
 * `nodeStatusUpdateFrequency`.
 *
 * @module
 */

import type { ContainerImage, Node, NodeStatus, Taint } from "../api/cluster_types.ts";
import type { VersionResponse } from "../cri/types.ts";
import type { EventRecorder } from "../events/types.ts";
import type { KubeClient } from "../kubeapi/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { everyAligned } from "../util/tick.ts";
import { VERSION } from "../util/version.ts";
import { computeNodeResources } from "./allocatable.ts";
import { NodeLeaseController } from "./lease.ts";
import type { MachineInfo } from "../stats/mod.ts";
import { buildNodeStatus, type BuiltNodeStatus, kubeletVersionString } from "./node_status.ts";
import {
  awaitExistingNode,
  initialNode,
  NodeLabelError,
  type RegisteredNode,
  registerNode,
  restrictedNodeLabels,
} from "./registration.ts";
import { NodeStatusUpdater, recordNodeEvents } from "./status_updater.ts";

/** Configuration, with upstream's defaults. */
export interface NodeStatusSettings {
  /** `maxPods` (110). */
  maxPods: number;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  /** `evictionHard` ({memory.available: 100Mi, nodefs.available: 10%, ...}). */
  evictionHard: Record<string, string>;
  registerWithTaints: Taint[];
  /** `registerNode` (true): false waits for a Node someone else creates and only updates its status. */
  registerNode: boolean;
  /** `--node-labels`. */
  nodeLabels: Record<string, string>;
  /** `nodeStatusUpdateFrequency` (10s). */
  updateFrequencyMs: number;
  /** `nodeStatusReportFrequency` (5m). */
  reportFrequencyMs: number;
  /** `nodeLeaseDurationSeconds` (40). */
  leaseDurationSeconds: number;
  /** `--port` (10250). */
  kubeletPort: number;
  /** `nodeStatusMaxImages` (50; -1 for all). */
  maxImages: number;
  /** Aligns the status timer to this grid (lib/util/tick.ts); 0 disables. */
  tickGridMs: number;
  /** `localStorageCapacityIsolation` (true): false reports no ephemeral-storage. */
  localStorageCapacityIsolation: boolean;
}

/** Upstream's defaults for {@link NodeStatusSettings}. */
export const DEFAULT_NODE_STATUS_SETTINGS: Readonly<NodeStatusSettings> = Object.freeze({
  maxPods: 110,
  kubeReserved: {},
  systemReserved: {},
  evictionHard: {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
  },
  registerWithTaints: [],
  registerNode: true,
  nodeLabels: {},
  updateFrequencyMs: 10_000,
  reportFrequencyMs: 300_000,
  leaseDurationSeconds: 40,
  kubeletPort: 10250,
  maxImages: 50,
  tickGridMs: 0,
  localStorageCapacityIsolation: true,
});

/** The runtime's readiness, in upstream's words when it is not ready. */
export interface RuntimeReadiness {
  ok: boolean;
  /** Why not ("container runtime is down", "PLEG is not healthy: …"). */
  message?: string;
  /** Several reasons; the Ready message aggregates them as upstream ("[a, b]"). */
  reasons?: string[];
}

/** Options for {@link NodeStatusManager}. */
export interface NodeStatusManagerOptions {
  /** Registration. */
  client: KubeClient;
  /**
   * Node status and Lease writes: upstream's heartbeat client, never rate
   * limited; `client` when not given.
   */
  heartbeatClient?: KubeClient;
  nodeName: string;
  /** The Hostname address and kubernetes.io/hostname label; nodeName by default. */
  hostname?: string;
  clock: Clock;
  logger: Logger;
  events: EventRecorder;
  machineInfo: MachineInfo;
  /** `--node-ip` or the detected IP; "a,b" for dual-stack; "" for none. */
  nodeIP: string;
  options?: Partial<NodeStatusSettings>;
  /** Whether the node can run pods now; called every status round. */
  runtimeReady: () => RuntimeReadiness;
  /** The CRI Version call (containerRuntimeVersion is `runtimeName://runtimeVersion`). */
  runtimeVersion: () => Promise<Pick<VersionResponse, "runtimeName" | "runtimeVersion">>;
  /** Images on the node, largest first; status.images is left out without it. */
  images?: () => Promise<ContainerImage[]>;
  /** The eviction manager's verdicts; no pressure without it. */
  pressure?: () => { memory?: boolean; disk?: boolean; pid?: boolean };
  /** Overrides the kubeletVersion (see kubeletVersionString). */
  kubeletVersion?: string;
}

/** Registers the Node, keeps its status and its Lease current. */
export class NodeStatusManager {
  /** Resolves with the Node once registered (created or adopted); rejects only if stopped first. */
  readonly registered: Promise<Node>;
  readonly #opts: NodeStatusManagerOptions;
  readonly #settings: NodeStatusSettings;
  readonly #updater: NodeStatusUpdater;
  readonly #lease: NodeLeaseController;
  readonly #abort = new AbortController();
  #resolve!: (node: Node) => void;
  #reject!: (err: unknown) => void;
  #timer: Timer | undefined;
  #started = false;
  #inFlight: Promise<void> | undefined;
  #again = false;
  #runtimeName = "containerd";
  /** The events of the last initial Node, recorded if the create succeeds. */
  #pending: BuiltNodeStatus["events"] = [];

  /**
   * @param opts client, node, machine facts, callbacks and settings
   * @throws {NodeLabelError} when `nodeLabels` holds labels a node may not set
   * @throws {Error} naming the field when a reservation or threshold is malformed
   */
  constructor(opts: NodeStatusManagerOptions) {
    this.#opts = opts;
    this.#settings = { ...DEFAULT_NODE_STATUS_SETTINGS, ...opts.options };
    const restricted = restrictedNodeLabels(this.#settings.nodeLabels);
    if (restricted.length > 0) throw new NodeLabelError(restricted);
    // Fail at start, not at the first status round, on a bad reservation.
    computeNodeResources(opts.machineInfo, this.#settings);
    this.registered = new Promise<Node>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Nobody may be waiting when a stop rejects it.
    this.registered.catch(() => {});
    this.#updater = new NodeStatusUpdater({
      client: opts.heartbeatClient ?? opts.client,
      nodeName: opts.nodeName,
      clock: opts.clock,
      logger: opts.logger,
      events: opts.events,
      compute: (previous) => this.#compute(previous),
      reportFrequencyMs: this.#settings.reportFrequencyMs,
    });
    this.#lease = new NodeLeaseController({
      client: opts.heartbeatClient ?? opts.client,
      nodeName: opts.nodeName,
      clock: opts.clock,
      logger: opts.logger,
      leaseDurationSeconds: this.#settings.leaseDurationSeconds,
      nodeUID: () => this.#updater.node()?.metadata.uid,
    });
  }

  /** The latest Node known (after registration), for hostIP, allocatable and mirror pod owners. */
  node(): Node | undefined {
    return this.#updater.node();
  }

  /** The Lease as last written. */
  lease(): ReturnType<NodeLeaseController["latest"]> {
    return this.#lease.latest();
  }

  /** Starts the Lease, registration and the status loop; returns at once. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#lease.start();
    void this.#register();
  }

  /** Stops every loop; an unfinished registration rejects `registered`. */
  async stop(): Promise<void> {
    this.#abort.abort(new Error(`node status manager of "${this.#opts.nodeName}" stopped`));
    this.#timer?.cancel();
    this.#reject(this.#abort.signal.reason);
    await Promise.all([this.#lease.stop(), this.#inFlight]);
  }

  /**
   * Runs a status round now (after a readiness change, say). Rounds never
   * overlap: called during one, it runs one more right after, which sees
   * what changed since the running one started. Never throws.
   * @returns when the round (and a follow-up it asked for) is over
   */
  syncNow(): Promise<void> {
    if (this.#inFlight) {
      this.#again = true;
      return this.#inFlight;
    }
    this.#inFlight = (async () => {
      do {
        this.#again = false;
        await this.#round();
      } while (this.#again);
    })().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  async #round(): Promise<void> {
    if (this.#abort.signal.aborted || !this.#updater.node()) return;
    try {
      await this.#updater.update();
    } catch (err) {
      this.#opts.logger.error("Unable to update node status", err, { node: this.#opts.nodeName });
    }
  }

  async #register(): Promise<void> {
    let result: RegisteredNode;
    try {
      const retry = {
        client: this.#opts.client,
        clock: this.#opts.clock,
        logger: this.#opts.logger,
        signal: this.#abort.signal,
      };
      result = this.#settings.registerNode
        ? await registerNode({ ...retry, initialNode: () => this.#initialNode() })
        : await awaitExistingNode(retry, this.#opts.nodeName);
    } catch (err) {
      if (!this.#abort.signal.aborted) {
        this.#opts.logger.error("Node registration stopped", err, { node: this.#opts.nodeName });
      }
      this.#reject(err);
      return;
    }
    if (this.#abort.signal.aborted) return;
    this.#updater.setNode(result.node, result.created);
    if (result.created) recordNodeEvents(this.#opts.events, this.#opts.nodeName, this.#pending);
    this.#resolve(result.node);
    this.#timer = everyAligned(
      this.#opts.clock,
      this.#settings.updateFrequencyMs,
      this.#settings.tickGridMs,
      () => void this.syncNow(),
    );
    await this.syncNow();
  }

  async #initialNode(): Promise<Node> {
    const built = await this.#compute(undefined);
    this.#pending = built.events;
    const o = this.#opts;
    return initialNode({
      nodeName: o.nodeName,
      hostname: o.hostname ?? o.nodeName,
      operatingSystem: o.machineInfo.operatingSystem,
      architecture: o.machineInfo.architecture,
      nodeLabels: this.#settings.nodeLabels,
      registerWithTaints: this.#settings.registerWithTaints,
      status: built.status,
    });
  }

  async #compute(previous: NodeStatus | undefined): Promise<BuiltNodeStatus> {
    const o = this.#opts;
    let runtimeVersion = "Unknown";
    try {
      const v = await o.runtimeVersion();
      this.#runtimeName = v.runtimeName || this.#runtimeName;
      runtimeVersion = v.runtimeVersion || runtimeVersion;
    } catch (err) {
      o.logger.v(2).info("Container runtime version unavailable", { err });
    }
    let images: ContainerImage[] | undefined;
    if (o.images) {
      try {
        images = await o.images();
      } catch (err) {
        // Upstream reports an empty list when the image list fails.
        o.logger.error("Error getting image list", err);
        images = [];
      }
    }
    const ready = o.runtimeReady();
    const reasons = ready.ok
      ? []
      : ready.reasons?.length
      ? ready.reasons
      : [ready.message || "container runtime is down"];
    return buildNodeStatus({
      ...this.#settings,
      nodeName: o.nodeName,
      machine: o.machineInfo,
      previous,
      now: o.clock.now(),
      nodeIPs: o.nodeIP.split(",").map((s) => s.trim()).filter((s) => s !== ""),
      hostname: o.hostname ?? o.nodeName,
      containerRuntimeVersion: `${this.#runtimeName}://${runtimeVersion}`,
      kubeletVersion: o.kubeletVersion ?? kubeletVersionString(VERSION),
      notReadyReasons: reasons,
      pressure: o.pressure?.() ?? {},
      images,
    });
  }
}
