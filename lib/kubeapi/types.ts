/**
 * The contract between denolet and a kube-apiserver: a small path-based REST
 * client. Everything that talks to the apiserver (pod source, node status,
 * lease, status manager, mirror pods, events, volume sources) takes a
 * {@link KubeClient}; only `lib/kubeapi/` knows about HTTP, TLS, kubeconfig
 * and `@kubernetes/client-node`.
 *
 * Paths are apiserver paths: `/api/v1/namespaces/NS/pods/NAME/status`,
 * `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/NODE`.
 *
 * @module
 */

import type { ObjectMeta } from "../api/types.ts";

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Query parameters (`fieldSelector`, `resourceVersion`, `dryRun`, ...). */
  query?: Record<string, string>;
}

/** The Content-Type of a PATCH. */
export type PatchType = "merge" | "strategic" | "json" | "apply";

/** What a list returns: the items and the list's resourceVersion. */
export interface ObjectList<T> {
  items: T[];
  metadata: { resourceVersion?: string; continue?: string };
}

/** One watch event; BOOKMARK objects carry only metadata.resourceVersion. */
export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  /** For ERROR: a metav1.Status (`code` 410 means the resourceVersion is gone). */
  object: T & { metadata?: ObjectMeta; code?: number; reason?: string; message?: string };
}

/** `DeleteOptions` as the apiserver takes it in a DELETE body. */
export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: "Orphan" | "Background" | "Foreground";
}

/**
 * Told about every request a {@link KubeClient} sends, as client-go's metric
 * adapters are (the `rest_client_*` metrics).
 */
export interface RequestObserver {
  /** How long a request waited for the client-side rate limiter. */
  rateLimited(verb: string, host: string, waitedMs: number): void;
  /** A request's outcome: its HTTP status code, or `<error>` when no response came. */
  result(code: string, method: string, host: string): void;
}

/**
 * A REST client for one apiserver, authenticated as the node.
 * Every call is rate limited (`kubeAPIQPS`/`kubeAPIBurst`); failures throw
 * {@link ApiError} (an HTTP status from the apiserver) or an Error naming the
 * method and path (connection failures, with `cause`).
 */
export interface KubeClient {
  get<T>(path: string, opts?: CallOptions): Promise<T>;
  list<T>(path: string, opts?: CallOptions): Promise<ObjectList<T>>;
  create<T>(path: string, body: unknown, opts?: CallOptions): Promise<T>;
  /** PUT. */
  update<T>(path: string, body: unknown, opts?: CallOptions): Promise<T>;
  patch<T>(path: string, body: unknown, type: PatchType, opts?: CallOptions): Promise<T>;
  delete(path: string, body?: DeleteOptions, opts?: CallOptions): Promise<void>;
  /**
   * Streams watch events for `path` (query must include `watch=1`-style
   * parameters other than `watch` itself, e.g. resourceVersion,
   * allowWatchBookmarks, fieldSelector, timeoutSeconds). Resolves when the
   * server ends the stream or `opts.signal` aborts; throws on HTTP errors.
   */
  watch<T>(
    path: string,
    onEvent: (event: WatchEvent<T>) => void,
    opts?: CallOptions,
  ): Promise<void>;
  /** Closes connections; later calls fail. */
  close(): void;
}

/** An error status returned by the apiserver (a metav1.Status). */
export class ApiError extends Error {
  /** HTTP status (404, 409, 410, 422, 429, 500, ...). */
  readonly status: number;
  /** metav1.Status reason (`NotFound`, `AlreadyExists`, `Conflict`, `Expired`, `Invalid`, ...). */
  readonly reason: string;
  constructor(message: string, status: number, reason: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ApiError";
    this.status = status;
    this.reason = reason;
  }
}

/**
 * The stream of a watch the apiserver had accepted broke: a reset, a GOAWAY, a proxy or
 * load balancer cutting it. The events delivered before stand. client-go's
 * StreamWatcher ends the watch quietly on such an error, as on EOF, and its reflector
 * resumes at once from the last resourceVersion.
 */
export class WatchStreamError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WatchStreamError";
  }
}

/** True when `err` is an {@link ApiError} with HTTP status 404. */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404;
}

/** True when `err` is an {@link ApiError} with HTTP status 409 and reason AlreadyExists. */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason === "AlreadyExists";
}

/** True when `err` is an {@link ApiError} with HTTP status 409 and reason Conflict. */
export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason !== "AlreadyExists";
}

/** True when `err` is an {@link ApiError} with HTTP status 410 (resourceVersion too old). */
export function isGone(err: unknown): boolean {
  return err instanceof ApiError && err.status === 410;
}
