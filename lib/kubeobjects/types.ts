/**
 * The contract between pod setup (volumes, env, sandbox) and the API objects a pod
 * references: ConfigMaps, Secrets, RuntimeClasses, Services and service-account tokens.
 *
 * @module
 */

import type { ConfigMap, RuntimeClass, Secret, Service } from "../api/cluster_types.ts";

/** Per-call options of {@link PodObjects} getters. */
export interface GetObjectOptions {
  /**
   * The pod asking. The first request of a pod for an object always reads
   * it fresh (upstream's AddReference), later ones may be served from cache.
   */
  podUID?: string;
  signal?: AbortSignal;
}

/** What a projected serviceAccountToken source asks for. */
export interface ServiceAccountTokenRequest {
  /** Empty: the apiserver's own audiences. */
  audiences: string[];
  expirationSeconds: number;
  /** The pod the token is bound to (invalidated when the pod goes). */
  boundPod: { name: string; uid: string };
}

/** A token and when it expires. */
export interface ServiceAccountToken {
  token: string;
  /** RFC 3339. */
  expirationTimestamp: string;
}

/**
 * Where pods' referenced objects come from. Implementations cache; callers
 * must not mutate returned objects. Every getter may be called on every pod
 * sync.
 */
export interface PodObjects {
  /**
   * @throws {ObjectNotFoundError} when the ConfigMap does not exist
   * @throws {Error} naming the object for any other failure
   */
  getConfigMap(namespace: string, name: string, opts?: GetObjectOptions): Promise<ConfigMap>;
  /**
   * @throws {ObjectNotFoundError} when the Secret does not exist
   * @throws {Error} naming the object for any other failure
   */
  getSecret(namespace: string, name: string, opts?: GetObjectOptions): Promise<Secret>;
  /**
   * A RuntimeClass (cluster-scoped).
   * @throws {ObjectNotFoundError} (`runtimeclass.node.k8s.io "x" not found`) when it does not exist
   * @throws {Error} naming the object for any other failure
   */
  getRuntimeClass(name: string, opts?: GetObjectOptions): Promise<RuntimeClass>;
  /**
   * A token for `serviceAccount`, from cache until it needs a refresh.
   * @throws {Error} naming the service account when none can be had
   */
  getServiceAccountToken(
    namespace: string,
    serviceAccount: string,
    req: ServiceAccountTokenRequest,
    opts?: { signal?: AbortSignal },
  ): Promise<ServiceAccountToken>;
  /**
   * The Services of every namespace that have a cluster IP (headless ones may
   * be left out), for service-link env vars: upstream's serviceLister.List,
   * served from a watch, so a Service created a moment ago is there.
   */
  listServices(): readonly Service[];
  /** True once the Services were listed at least once (upstream's serviceHasSynced). */
  servicesSynced(): boolean;
  /** Drops what is cached on behalf of a pod that is gone (tokens, references). */
  forgetPod(uid: string): void;
}

/** The referenced object does not exist; the message is upstream's (`configmap "x" not found`). */
export class ObjectNotFoundError extends Error {
  /** "configmap", "secret", "serviceaccount", "runtimeclass.node.k8s.io" (upstream's group-resource). */
  readonly kind: string;
  readonly namespace: string;
  readonly objectName: string;

  /**
   * @param kind the singular lower-case kind
   * @param namespace the object's namespace
   * @param name the object's name
   * @param options the underlying API error
   */
  constructor(kind: string, namespace: string, name: string, options?: ErrorOptions) {
    super(`${kind} "${name}" not found`, options);
    this.name = "ObjectNotFoundError";
    this.kind = kind;
    this.namespace = namespace;
    this.objectName = name;
  }
}

/**
 * True when `err` says the referenced object does not exist.
 * @param err any thrown value
 * @returns whether it is an {@link ObjectNotFoundError}
 */
export function isObjectNotFound(err: unknown): err is ObjectNotFoundError {
  return err instanceof ObjectNotFoundError;
}

/** The error for a reference that cannot be resolved without an apiserver (standalone mode). */
export class NoApiServerError extends Error {
  /**
   * @param what the referenced object, e.g. `configmap "x"`
   */
  constructor(what: string) {
    super(`${what} cannot be read: no apiserver (standalone mode)`);
    this.name = "NoApiServerError";
  }
}
