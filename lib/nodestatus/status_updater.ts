/**
 * Writing the Node's status, as upstream's updateNodeStatus: read the Node,
 * compute the new status from it, and PATCH `nodes/NAME/status` only when
 * something other than a heartbeat changed or `nodeStatusReportFrequency`
 * has passed since the last write; up to five tries per round
 * (nodeStatusUpdateRetry), the first read served from the apiserver's cache
 * (resourceVersion=0, as upstream's first try reads its informer).
 *
 * @module
 */

import type { Node, NodeStatus, ObjectReference } from "../api/cluster_types.ts";
import type { EventRecorder } from "../events/types.ts";
import type { KubeClient } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { type BuiltNodeStatus, nodeStatusChanged, type NodeStatusEvent } from "./node_status.ts";
import { nodeStatusPatch } from "./patch.ts";
import { NODES_PATH } from "./registration.ts";

/** Upstream's nodeStatusUpdateRetry. */
export const NODE_STATUS_UPDATE_RETRY = 5;

/** Options for {@link NodeStatusUpdater}. */
export interface NodeStatusUpdaterOptions {
  client: KubeClient;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  events: EventRecorder;
  /** Computes the status from the one the apiserver holds. */
  compute: (previous: NodeStatus | undefined) => BuiltNodeStatus | Promise<BuiltNodeStatus>;
  /** `nodeStatusReportFrequency` (5m): the longest time between two writes. */
  reportFrequencyMs: number;
  /** Tries per round; {@link NODE_STATUS_UPDATE_RETRY} by default. */
  retries?: number;
}

/** What one round did. */
export type UpdateOutcome = "patched" | "unchanged";

/**
 * The reference events about the Node are recorded against (upstream's
 * nodeRef: the UID is the node name).
 * @param nodeName the Node's name
 * @returns the reference
 */
export function nodeReference(nodeName: string): ObjectReference {
  return { kind: "Node", name: nodeName, uid: nodeName, namespace: "" };
}

/**
 * Records node status events against the Node.
 * @param events the recorder
 * @param nodeName the Node's name
 * @param list the events
 */
export function recordNodeEvents(
  events: EventRecorder,
  nodeName: string,
  list: readonly NodeStatusEvent[],
): void {
  const ref = nodeReference(nodeName);
  for (const e of list) events.event(ref, e.type, e.reason, e.message);
}

/** Computes and writes the Node's status; one round at a time. */
export class NodeStatusUpdater {
  readonly #opts: NodeStatusUpdaterOptions;
  readonly #path: string;
  #node: Node | undefined;
  #lastReport = Number.NEGATIVE_INFINITY;

  /** @param opts client, node name, clock, how to compute the status */
  constructor(opts: NodeStatusUpdaterOptions) {
    this.#opts = opts;
    this.#path = `${NODES_PATH}/${encodeURIComponent(opts.nodeName)}`;
  }

  /** The latest Node read or written; undefined before the first. */
  node(): Node | undefined {
    return this.#node;
  }

  /**
   * Sets the Node as registration left it. A Node registered with a full
   * status counts as a report, so the next round writes only on change.
   * @param node the registered Node
   * @param reported whether its status was written just now (a create)
   */
  setNode(node: Node, reported: boolean): void {
    this.#node = node;
    if (reported) this.#lastReport = this.#opts.clock.now();
  }

  /**
   * One round: up to `retries` tries, no waiting between them (as upstream).
   * @returns whether a PATCH was sent
   * @throws {Error} naming the Node when every try failed, with the last error as cause
   */
  async update(): Promise<UpdateOutcome> {
    const retries = this.#opts.retries ?? NODE_STATUS_UPDATE_RETRY;
    let last: unknown;
    for (let i = 0; i < retries; i++) {
      try {
        return await this.#tryUpdate(i);
      } catch (err) {
        last = err;
        this.#opts.logger.error("Error updating node status, will retry", err, {
          node: this.#opts.nodeName,
          try: i + 1,
        });
      }
    }
    throw new Error(
      `update node status of "${this.#opts.nodeName}" exceeds retry count (${retries})`,
      { cause: last },
    );
  }

  async #tryUpdate(tryNumber: number): Promise<UpdateOutcome> {
    const { client, clock } = this.#opts;
    let original: Node;
    try {
      original = await client.get<Node>(
        this.#path,
        tryNumber === 0 ? { query: { resourceVersion: "0" } } : undefined,
      );
    } catch (err) {
      throw new Error(`error getting node "${this.#opts.nodeName}"`, { cause: err });
    }
    this.#node = original;
    const built = await this.#opts.compute(original.status);
    const now = clock.now();
    const reportDue = now >= this.#lastReport + this.#opts.reportFrequencyMs;
    if (!reportDue && !nodeStatusChanged(original.status, built.status)) return "unchanged";
    const statusPatch = nodeStatusPatch(original.status, built.status);
    if (!statusPatch) return "unchanged";
    let patched: Node;
    try {
      patched = await client.patch<Node>(
        `${this.#path}/status`,
        { status: statusPatch },
        "strategic",
      );
    } catch (err) {
      throw new Error(`error patching status of node "${this.#opts.nodeName}"`, { cause: err });
    }
    this.#node = patched;
    this.#lastReport = now;
    // Recorded once the change is written, so a failed try records nothing twice.
    recordNodeEvents(this.#opts.events, this.#opts.nodeName, built.events);
    return "patched";
  }
}
