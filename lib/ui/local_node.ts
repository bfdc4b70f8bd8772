/**
 * The node as the agent computes it, for the page when there is no Node
 * object (standalone mode, or before registration): lib/nodestatus's
 * buildNodeStatus over the machine, the configuration, the runtime's
 * readiness and the eviction manager's verdicts, kept from one call to the
 * next so that transition times stay put as they would on a registered Node.
 *
 * @module
 */

import type { NodeStatus } from "../api/cluster_types.ts";
import type { VersionResponse } from "../cri/types.ts";
import {
  type AllocatableOptions,
  buildNodeStatus,
  kubeletVersionString,
} from "../nodestatus/mod.ts";
import type { MachineInfo } from "../stats/mod.ts";
import type { Clock } from "../util/clock.ts";
import { VERSION } from "../util/version.ts";

/** Options for {@link LocalNodeStatus}. */
export interface LocalNodeStatusOptions {
  nodeName: string;
  /** The Hostname address. */
  hostname: string;
  nodeIPs: readonly string[];
  /** `--port`. */
  kubeletPort: number;
  machine: MachineInfo;
  /** maxPods, the reservations and hard eviction thresholds (the flags and config). */
  allocatable: AllocatableOptions;
  clock: Clock;
  /** The CRI Version call; asked until it first answers. */
  runtimeVersion: () => Promise<Pick<VersionResponse, "runtimeName" | "runtimeVersion">>;
  /** Why the node is not ready, in upstream's words; [] when ready. */
  notReadyReasons: () => readonly string[];
  /** The eviction manager's verdicts. */
  pressure?: () => { memory?: boolean; disk?: boolean; pid?: boolean };
}

/** The Node status the agent would post, recomputed on each call. */
export class LocalNodeStatus {
  readonly #opts: LocalNodeStatusOptions;
  #previous: NodeStatus | undefined;
  #runtime: string | undefined;

  /** @param opts machine facts, settings and the readiness callbacks */
  constructor(opts: LocalNodeStatusOptions) {
    this.#opts = opts;
  }

  /**
   * The status now.
   * @returns capacity, allocatable, conditions and node info
   * @throws {Error} naming the field when a reservation or threshold is malformed
   */
  async status(): Promise<NodeStatus> {
    const o = this.#opts;
    if (this.#runtime === undefined) {
      try {
        const v = await o.runtimeVersion();
        this.#runtime = `${v.runtimeName}://${v.runtimeVersion}`;
      } catch {
        // Asked again next time; upstream's wording meanwhile.
      }
    }
    const built = buildNodeStatus({
      ...o.allocatable,
      nodeName: o.nodeName,
      machine: o.machine,
      previous: this.#previous,
      now: o.clock.now(),
      nodeIPs: o.nodeIPs,
      hostname: o.hostname,
      kubeletPort: o.kubeletPort,
      containerRuntimeVersion: this.#runtime ?? "containerd://Unknown",
      kubeletVersion: kubeletVersionString(VERSION),
      notReadyReasons: o.notReadyReasons(),
      ...(o.pressure ? { pressure: o.pressure() } : {}),
    });
    this.#previous = built.status;
    return built.status;
  }
}
