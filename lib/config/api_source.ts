/**
 * The apiserver pod source (upstream pkg/kubelet/config/apiserver.go): a
 * {@link Reflector} over the pods bound to this node that hands the complete
 * current set to the mux after every change (upstream's UndeltaStore sends a
 * SET too), so one merge rule in the mux serves the file, URL and API sources
 * alike. The list/watch loop, its backoff and its relists are the reflector's.
 *
 * @module
 */

import { API_SOURCE } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import { Reflector } from "../kubeapi/reflector.ts";
import type { KubeClient } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import type { PodSetSink } from "./types.ts";

export { API_BACKOFF, MIN_WATCH_TIMEOUT_SECONDS } from "../kubeapi/reflector.ts";

/** The path the source lists and watches. */
export const PODS_PATH = "/api/v1/pods";

/** Options for {@link startApiSource}. */
export interface ApiSourceOptions {
  /** The apiserver, authenticated as the node. */
  client: KubeClient;
  /** Pods with `spec.nodeName` equal to this are the node's. */
  nodeName: string;
  /** Receives the complete set of the node's pods after every change. */
  onPods: PodSetSink;
  clock?: Clock;
  logger?: Logger;
  /** Source of randomness in [0, 1) for watch timeouts and jitter; Math.random by default. */
  random?: () => number;
}

/** A running apiserver source. */
export interface ApiSource {
  /** Resolves once the first list has been handed over (or never, if stopped before). */
  readonly synced: Promise<void>;
  /** Resolves when the list/watch loop has ended after {@link ApiSource.stop}. */
  readonly done: Promise<void>;
  /** True once the first list has been handed over (upstream's HasSynced). */
  hasSynced(): boolean;
  /** The resourceVersion the next watch would start from. */
  resourceVersion(): string;
  /** Aborts the list or watch in flight and ends the loop; idempotent. */
  stop(): void;
}

/**
 * Starts listing and watching the pods bound to `nodeName`.
 * @param opts client, node name, sink, clock and logger
 * @returns the running source; it retries on its own until stopped
 */
export function startApiSource(opts: ApiSourceOptions): ApiSource {
  return new Reflector<Pod>({
    client: opts.client,
    path: PODS_PATH,
    resource: "pods",
    query: { fieldSelector: `spec.nodeName=${opts.nodeName}` },
    onChange: opts.onPods,
    ...(opts.clock ? { clock: opts.clock } : {}),
    logger: (opts.logger ?? silentLogger).with({ source: API_SOURCE }),
    ...(opts.random ? { random: opts.random } : {}),
  });
}
