/**
 * {@link PodObjects} over a {@link KubeClient}: ConfigMaps, Secrets and RuntimeClasses read
 * with GET and kept in a TTL cache, which is upstream's
 * `configMapAndSecretChangeDetectionStrategy: Cache` (default TTL one minute).
 * As upstream, a pod's first request for an object reads it fresh, a
 * NotFound is cached like an object, an immutable object is never read
 * again, and concurrent requests share one GET.
 * Services come from a list and watch of every namespace's non-headless
 * Services, started with the object (upstream's Service informer with its
 * `spec.clusterIP!=None` field selector). Tokens come from the {@link TokenManager}.
 *
 * @module
 */

import type { ConfigMap, RuntimeClass, Secret, Service } from "../api/cluster_types.ts";
import { Reflector } from "../kubeapi/reflector.ts";
import type { KubeClient } from "../kubeapi/types.ts";
import { isNotFound } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { TokenManager } from "./token_manager.ts";
import {
  type GetObjectOptions,
  ObjectNotFoundError,
  type PodObjects,
  type ServiceAccountToken,
  type ServiceAccountTokenRequest,
} from "./types.ts";

/** Upstream's default TTL of the object cache. */
export const DEFAULT_OBJECT_TTL_MS = 60_000;
/** The Services every pod's env may name: all namespaces, headless ones left out as upstream does. */
export const SERVICES_PATH = "/api/v1/services";
const SERVICES_SELECTOR = "spec.clusterIP!=None";

/** Options for {@link ApiPodObjects}. */
export interface ApiPodObjectsOptions {
  client: KubeClient;
  clock: Clock;
  logger?: Logger;
  /** How long a read object (or NotFound) is served from cache; default one minute. */
  ttlMs?: number;
  /** Jitter source for token refreshes (tests pin it). */
  random?: () => number;
}

interface Entry {
  fetchedAt: number;
  /** undefined: the object does not exist. */
  value: unknown;
  /** Pods that have read this entry since it was fetched. */
  pods: Set<string>;
}

/** ConfigMaps, Secrets, Services and tokens from the apiserver, cached. */
export class ApiPodObjects implements PodObjects {
  readonly #opts: ApiPodObjectsOptions;
  readonly #ttl: number;
  readonly #entries = new Map<string, Entry>();
  readonly #inflight = new Map<string, Promise<Entry>>();
  /** Pods that referenced each key, so entries go when the last pod goes. */
  readonly #refs = new Map<string, Set<string>>();
  readonly #tokens: TokenManager;
  readonly #services: Reflector<Service>;

  /**
   * Starts the Services' list and watch; {@link ApiPodObjects.stop} ends it.
   * @param opts the client, clock and TTL
   */
  constructor(opts: ApiPodObjectsOptions) {
    this.#opts = opts;
    this.#ttl = opts.ttlMs ?? DEFAULT_OBJECT_TTL_MS;
    this.#services = new Reflector<Service>({
      client: opts.client,
      path: SERVICES_PATH,
      resource: "services",
      query: { fieldSelector: SERVICES_SELECTOR },
      clock: opts.clock,
      ...(opts.logger ? { logger: opts.logger } : {}),
      ...(opts.random ? { random: opts.random } : {}),
    });
    this.#tokens = new TokenManager({
      client: opts.client,
      clock: opts.clock,
      ...(opts.logger ? { logger: opts.logger } : {}),
      ...(opts.random ? { random: opts.random } : {}),
    });
  }

  /** @inheritdoc */
  getConfigMap(namespace: string, name: string, opts?: GetObjectOptions): Promise<ConfigMap> {
    return this.#getObject<ConfigMap>("configmap", namespace, name, opts);
  }

  /** @inheritdoc */
  getSecret(namespace: string, name: string, opts?: GetObjectOptions): Promise<Secret> {
    return this.#getObject<Secret>("secret", namespace, name, opts);
  }

  /** @inheritdoc */
  async getRuntimeClass(name: string, opts?: GetObjectOptions): Promise<RuntimeClass> {
    const path = `/apis/node.k8s.io/v1/runtimeclasses/${name}`;
    const what = `runtimeclass.node.k8s.io "${name}"`;
    const entry = await this.#read(`runtimeclasses/${name}`, opts?.podUID, async () => {
      try {
        return await this.#opts.client.get<RuntimeClass>(
          path,
          opts?.signal ? { signal: opts.signal } : {},
        );
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw new Error(`failed to get ${what}`, { cause: err });
      }
    });
    if (entry.value === undefined) {
      throw new ObjectNotFoundError("runtimeclass.node.k8s.io", "", name);
    }
    return entry.value as RuntimeClass;
  }

  /** @inheritdoc */
  getServiceAccountToken(
    namespace: string,
    serviceAccount: string,
    req: ServiceAccountTokenRequest,
    opts?: { signal?: AbortSignal },
  ): Promise<ServiceAccountToken> {
    return this.#tokens.get(namespace, serviceAccount, req, opts?.signal);
  }

  /** @inheritdoc */
  listServices(): readonly Service[] {
    return this.#services.list();
  }

  /** @inheritdoc */
  servicesSynced(): boolean {
    return this.#services.hasSynced();
  }

  /** Ends the Services' watch; waits for its loop to end. */
  async stop(): Promise<void> {
    this.#services.stop();
    await this.#services.done;
  }

  /** @inheritdoc */
  forgetPod(uid: string): void {
    this.#tokens.forgetPod(uid);
    for (const [key, pods] of this.#refs) {
      pods.delete(uid);
      this.#entries.get(key)?.pods.delete(uid);
      if (pods.size === 0) {
        this.#refs.delete(key);
        this.#entries.delete(key);
      }
    }
  }

  async #getObject<T>(
    kind: "configmap" | "secret",
    namespace: string,
    name: string,
    opts: GetObjectOptions | undefined,
  ): Promise<T> {
    const plural = kind === "configmap" ? "configmaps" : "secrets";
    const path = `/api/v1/namespaces/${namespace}/${plural}/${name}`;
    const entry = await this.#read(`${plural}/${namespace}/${name}`, opts?.podUID, async () => {
      try {
        return await this.#opts.client.get<T>(path, opts?.signal ? { signal: opts.signal } : {});
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw new Error(`failed to get ${kind} "${namespace}/${name}"`, { cause: err });
      }
    });
    if (entry.value === undefined) throw new ObjectNotFoundError(kind, namespace, name);
    return entry.value as T;
  }

  /** The cached entry when fresh and already read by this pod, else a (shared) fetch. */
  async #read(
    key: string,
    podUID: string | undefined,
    fetch: () => Promise<unknown>,
  ): Promise<Entry> {
    if (podUID) {
      const refs = this.#refs.get(key) ?? new Set<string>();
      refs.add(podUID);
      this.#refs.set(key, refs);
    }
    const now = this.#opts.clock.now();
    const cached = this.#entries.get(key);
    // An immutable object never changes, so upstream never reads it again.
    const immutable = (cached?.value as { immutable?: boolean } | undefined)?.immutable === true;
    if (
      cached && (immutable || now - cached.fetchedAt < this.#ttl) &&
      (immutable || podUID === undefined || cached.pods.has(podUID))
    ) {
      if (podUID) cached.pods.add(podUID);
      return cached;
    }
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = fetch().then((value) => {
        // Pods that had read the old value keep being served from the new one.
        const pods = new Set(this.#entries.get(key)?.pods);
        const entry: Entry = { fetchedAt: this.#opts.clock.now(), value, pods };
        this.#entries.set(key, entry);
        return entry;
      }).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    const entry = await pending;
    if (podUID) entry.pods.add(podUID);
    return entry;
  }
}
