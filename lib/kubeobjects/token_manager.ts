/**
 * Service-account tokens through the TokenRequest API, cached as upstream's
 * token manager (pkg/kubelet/token): a token is reused until 80% of its TTL
 * has passed or it is 24 hours old (each less a jitter of up to 10 s); when a
 * refresh fails the cached token is still served until it expires.
 *
 * @module
 */

import type { TokenRequest } from "../api/cluster_types.ts";
import type { KubeClient } from "../kubeapi/types.ts";
import { isNotFound } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  ObjectNotFoundError,
  type ServiceAccountToken,
  type ServiceAccountTokenRequest,
} from "./types.ts";

/** Upstream's cap on a token's age before it is refreshed. */
export const MAX_TOKEN_TTL_MS = 24 * 3600 * 1000;
/** Upstream's largest jitter subtracted from refresh deadlines. */
export const MAX_TOKEN_JITTER_MS = 10_000;

/** A cached token with what it was requested for. */
export interface CachedToken extends ServiceAccountToken {
  expirationSeconds: number;
  podUID: string;
}

/**
 * Whether a cached token must be refreshed at `now`: past 80% of its TTL or
 * 24 h after issue, either deadline brought forward by `jitterMs`.
 * @param token the cached token
 * @param now ms since the epoch
 * @param jitterMs 0..{@link MAX_TOKEN_JITTER_MS}
 * @returns true when a new token should be requested
 */
export function tokenRequiresRefresh(token: CachedToken, now: number, jitterMs = 0): boolean {
  const exp = Date.parse(token.expirationTimestamp);
  if (Number.isNaN(exp)) return true;
  const ttlMs = token.expirationSeconds * 1000;
  const issuedAt = exp - ttlMs;
  if (now > issuedAt + MAX_TOKEN_TTL_MS - jitterMs) return true;
  // Upstream works in whole seconds: refresh within 20% of the TTL of expiry.
  return now > exp - Math.floor(token.expirationSeconds * 20 / 100) * 1000 - jitterMs;
}

/** Options for {@link TokenManager}. */
export interface TokenManagerOptions {
  client: KubeClient;
  clock: Clock;
  logger?: Logger;
  /** 0..1; Math.random by default (tests pin it). */
  random?: () => number;
}

/** Requests and caches bound service-account tokens. */
export class TokenManager {
  readonly #opts: TokenManagerOptions;
  readonly #cache = new Map<string, CachedToken>();

  /** @param opts the client, clock and jitter source */
  constructor(opts: TokenManagerOptions) {
    this.#opts = opts;
  }

  /**
   * A token for `serviceAccount` bound to the pod, cached until it needs a refresh.
   * @param namespace the service account's namespace
   * @param serviceAccount its name
   * @param req audiences, expiration and the bound pod
   * @param signal cancels the request
   * @returns the token and its expiry
   * @throws {ObjectNotFoundError} when the service account does not exist (and nothing is cached)
   * @throws {Error} naming the service account when no valid token can be had
   */
  async get(
    namespace: string,
    serviceAccount: string,
    req: ServiceAccountTokenRequest,
    signal?: AbortSignal,
  ): Promise<ServiceAccountToken> {
    const key = JSON.stringify([
      namespace,
      serviceAccount,
      [...req.audiences].sort(),
      req.expirationSeconds,
      req.boundPod.name,
      req.boundPod.uid,
    ]);
    const now = this.#opts.clock.now();
    this.#prune(now);
    const cached = this.#cache.get(key);
    const jitter = Math.floor((this.#opts.random ?? Math.random)() * MAX_TOKEN_JITTER_MS / 1000) *
      1000;
    if (cached && !tokenRequiresRefresh(cached, now, jitter)) return cached;
    const path = `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`;
    const body: TokenRequest = {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {
        audiences: req.audiences,
        expirationSeconds: req.expirationSeconds,
        boundObjectRef: {
          kind: "Pod",
          apiVersion: "v1",
          name: req.boundPod.name,
          uid: req.boundPod.uid,
        },
      },
    };
    let res: TokenRequest;
    try {
      res = await this.#opts.client.create<TokenRequest>(path, body, signal ? { signal } : {});
      if (!res.status?.token) throw new Error("the apiserver returned no token");
    } catch (err) {
      if (cached && Date.parse(cached.expirationTimestamp) > now) {
        this.#opts.logger?.warn("Couldn't update token, serving the cached one", {
          serviceAccount: `${namespace}/${serviceAccount}`,
          err: (err as Error).message,
        });
        return cached;
      }
      if (isNotFound(err)) {
        throw new ObjectNotFoundError("serviceaccount", namespace, serviceAccount, { cause: err });
      }
      throw new Error(
        `failed to fetch a token for service account "${namespace}/${serviceAccount}"${
          cached ? " (the cached one expired)" : ""
        }: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const token: CachedToken = {
      token: res.status.token,
      expirationTimestamp: res.status.expirationTimestamp,
      // The apiserver may shorten the TTL; refresh on what it granted.
      expirationSeconds: res.spec.expirationSeconds ?? req.expirationSeconds,
      podUID: req.boundPod.uid,
    };
    this.#cache.set(key, token);
    return token;
  }

  /**
   * Drops the tokens bound to a pod.
   * @param uid the pod UID
   */
  forgetPod(uid: string): void {
    for (const [key, t] of this.#cache) if (t.podUID === uid) this.#cache.delete(key);
  }

  /** Number of cached tokens (for tests and metrics). */
  get size(): number {
    return this.#cache.size;
  }

  #prune(now: number): void {
    for (const [key, t] of this.#cache) {
      if (Date.parse(t.expirationTimestamp) <= now) this.#cache.delete(key);
    }
  }
}
