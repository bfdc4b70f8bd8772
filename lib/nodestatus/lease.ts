/**
 * The node heartbeat Lease `kube-node-lease/NODE`, as upstream's lease
 * controller (component-helpers/apimachinery/lease):
 *
 * ```
 * every renewInterval (0.25 × leaseDurationSeconds, after the last sync ends):
 *   latest known? ── PUT renewed copy (≤5 tries; Conflict → GET again) ── ok → done
 *        │ no / failed
 *        ▼
 *   ensure: GET ── NotFound → POST a new Lease
 *        │ error: wait 200ms, 400ms, … 7s and ensure again (until it works)
 *        ▼
 *   adopted an existing Lease? → PUT a renewed copy
 * ```
 *
 * Renewing sets holderIdentity, leaseDurationSeconds and renewTime (a
 * MicroTime) and, once the Node's UID is known, an ownerReference to the
 * Node so that deleting the Node deletes its Lease.
 *
 * @module
 */

import type { Lease } from "../api/cluster_types.ts";
import { isConflict, isNotFound, type KubeClient } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { microTime } from "../util/time.ts";

/** The namespace node leases live in. */
export const NODE_LEASE_NAMESPACE = "kube-node-lease";

/** Upstream's maxUpdateRetries. */
const MAX_UPDATE_RETRIES = 5;

/** Options for {@link NodeLeaseController}. */
export interface NodeLeaseOptions {
  client: KubeClient;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  /** `nodeLeaseDurationSeconds` (40). */
  leaseDurationSeconds?: number;
  /** Renew period; 0.25 × the duration by default (10s for 40s). */
  renewIntervalMs?: number;
  /** The Node's UID once registered, for the ownerReference. */
  nodeUID?: () => string | undefined;
  /** The first wait when the Lease cannot be read or created (200ms). */
  initialBackoffMs?: number;
  /** The longest such wait (7s). */
  maxBackoffMs?: number;
}

/** Keeps the node's Lease renewed. */
export class NodeLeaseController {
  readonly #opts: NodeLeaseOptions;
  readonly #collection: string;
  readonly #path: string;
  #latest: Lease | undefined;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;

  /** @param opts client, node name, clock, duration and backoff */
  constructor(opts: NodeLeaseOptions) {
    this.#opts = opts;
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`;
    this.#path = `${this.#collection}/${encodeURIComponent(opts.nodeName)}`;
  }

  /** The Lease as last read or written. */
  latest(): Lease | undefined {
    return this.#latest;
  }

  get #durationSeconds(): number {
    return this.#opts.leaseDurationSeconds ?? 40;
  }

  /** Starts renewing: a sync now, then one renew interval after each sync ends. */
  start(): void {
    if (this.#abort) return;
    const abort = new AbortController();
    this.#abort = abort;
    const interval = this.#opts.renewIntervalMs ?? this.#durationSeconds * 250;
    this.#loop = (async () => {
      while (!abort.signal.aborted) {
        await this.sync(abort.signal);
        await this.#opts.clock.sleep(interval, abort.signal).catch(() => {});
      }
    })();
  }

  /** Stops renewing; the Lease is left to expire, as upstream leaves it. */
  async stop(): Promise<void> {
    this.#abort?.abort(new Error("node lease controller stopped"));
    await this.#loop;
    this.#abort = undefined;
    this.#loop = undefined;
  }

  /**
   * One round: renew the known Lease, else ensure it exists (with backoff)
   * and renew it. Never throws; failures are logged and retried next round.
   * @param signal stops the backoff
   */
  async sync(signal?: AbortSignal): Promise<void> {
    if (this.#latest) {
      if (await this.#retryUpdate(this.#latest, signal)) return;
      this.#opts.logger.info(
        "Failed to update lease using latest lease, fallback to ensure lease",
        {
          node: this.#opts.nodeName,
        },
      );
    }
    const ensured = await this.#backoffEnsure(signal);
    if (!ensured) return;
    this.#latest = ensured.lease;
    if (!ensured.created) await this.#retryUpdate(ensured.lease, signal);
  }

  #renewed(base: Lease | undefined): Lease {
    const lease: Lease = base ? structuredClone(base) : {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: this.#opts.nodeName, namespace: NODE_LEASE_NAMESPACE },
      spec: {},
    };
    lease.spec.holderIdentity = this.#opts.nodeName;
    lease.spec.leaseDurationSeconds = this.#durationSeconds;
    lease.spec.renewTime = microTime(this.#opts.clock.now());
    const uid = this.#opts.nodeUID?.();
    if (uid && (lease.metadata.ownerReferences ?? []).length === 0) {
      lease.metadata.ownerReferences = [{
        apiVersion: "v1",
        kind: "Node",
        name: this.#opts.nodeName,
        uid,
      }];
    }
    return lease;
  }

  async #ensure(): Promise<{ lease: Lease; created: boolean }> {
    try {
      return { lease: await this.#opts.client.get<Lease>(this.#path), created: false };
    } catch (err) {
      if (!isNotFound(err)) {
        throw new Error(`get lease ${NODE_LEASE_NAMESPACE}/${this.#opts.nodeName}`, {
          cause: err,
        });
      }
    }
    try {
      const lease = await this.#opts.client.create<Lease>(
        this.#collection,
        this.#renewed(undefined),
      );
      return { lease, created: true };
    } catch (err) {
      throw new Error(`create lease ${NODE_LEASE_NAMESPACE}/${this.#opts.nodeName}`, {
        cause: err,
      });
    }
  }

  async #backoffEnsure(
    signal: AbortSignal | undefined,
  ): Promise<{ lease: Lease; created: boolean } | undefined> {
    let wait = (this.#opts.initialBackoffMs ?? 200) / 2;
    const max = this.#opts.maxBackoffMs ?? 7000;
    for (;;) {
      if (signal?.aborted) return undefined;
      try {
        return await this.#ensure();
      } catch (err) {
        wait = Math.min(wait * 2, max);
        this.#opts.logger.error("Failed to ensure lease exists, will retry", err, {
          node: this.#opts.nodeName,
          interval: `${wait}ms`,
        });
      }
      try {
        await this.#opts.clock.sleep(wait, signal);
      } catch {
        return undefined;
      }
    }
  }

  async #retryUpdate(base: Lease, signal: AbortSignal | undefined): Promise<boolean> {
    let current = base;
    for (let i = 0; i < MAX_UPDATE_RETRIES; i++) {
      if (signal?.aborted) return false;
      try {
        this.#latest = await this.#opts.client.update<Lease>(this.#path, this.#renewed(current));
        return true;
      } catch (err) {
        this.#opts.logger.error("Failed to update lease", err, { node: this.#opts.nodeName });
        // Someone else wrote the Lease: renew on top of their version.
        if (isConflict(err)) {
          const ensured = await this.#backoffEnsure(signal);
          if (!ensured) return false;
          current = ensured.lease;
        }
      }
    }
    return false;
  }
}
