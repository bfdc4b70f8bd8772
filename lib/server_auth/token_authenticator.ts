/**
 * Bearer-token authentication through the apiserver's TokenReview
 * (`authentication.webhook.enabled`), with upstream's cache in front
 * (apiserver token/cache as the delegating authenticator builds it): an
 * authenticated answer and an unauthenticated one are both kept for
 * `cacheTTL`; errors (the call failed, or the review carries
 * `status.error`) are not cached. Tokens are kept only as SHA-256 digests.
 *
 * @module
 */

import type { KubeClient } from "../kubeapi/mod.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { TtlCache } from "./_ttl_cache.ts";
import { DEFAULT_WEBHOOK_RETRY_BACKOFF, type RetryBackoff, withRetry } from "./_webhook_retry.ts";
import type { UserInfo } from "./types.ts";

/** The TokenReview path (authentication.k8s.io/v1). */
export const TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews";
/** Upstream's default `authentication.webhook.cacheTTL`. */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 120_000;

interface TokenReview {
  status?: {
    authenticated?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
    error?: string;
  };
}

/** A token's verdict: a user, or none with an error or not. */
export type TokenResult = { user: UserInfo; error?: undefined } | {
  user?: undefined;
  error?: Error;
};

/** Options for {@link TokenReviewAuthenticator}. */
export interface TokenReviewAuthenticatorOptions {
  client: KubeClient;
  /** `authentication.webhook.cacheTTL` in ms; default 2 minutes. */
  cacheTtlMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Retries of failed reviews; default upstream's (500 ms ×1.5, 5 attempts). */
  retryBackoff?: RetryBackoff;
}

/** Authenticates bearer tokens with TokenReview, cached. */
export class TokenReviewAuthenticator {
  #client: KubeClient;
  #ttl: number;
  #cache: TtlCache<TokenResult>;
  #logger: Logger | undefined;
  #clock: Clock;
  #backoff: RetryBackoff;
  #reviews = 0;

  constructor(opts: TokenReviewAuthenticatorOptions) {
    this.#client = opts.client;
    this.#ttl = opts.cacheTtlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
    this.#clock = opts.clock ?? realClock;
    this.#cache = new TtlCache(this.#clock);
    this.#logger = opts.logger;
    this.#backoff = opts.retryBackoff ?? DEFAULT_WEBHOOK_RETRY_BACKOFF;
  }

  /** TokenReviews sent so far, retries included (what the cache saves is visible here). */
  get reviews(): number {
    return this.#reviews;
  }

  /** Authenticates one token. */
  async authenticateToken(token: string): Promise<TokenResult> {
    const digest = new Uint8Array(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)),
    );
    const key = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    return this.#cache.getOrLoad(key, async () => {
      const result = await this.#review(token);
      if (!result.error) this.#cache.set(key, result, this.#ttl);
      return result;
    });
  }

  async #review(token: string): Promise<TokenResult> {
    let review: TokenReview;
    try {
      review = await withRetry(
        () => {
          this.#reviews++;
          return this.#client.create<TokenReview>(TOKEN_REVIEW_PATH, {
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenReview",
            spec: { token },
          });
        },
        this.#backoff,
        this.#clock,
      );
    } catch (err) {
      this.#logger?.error("Failed to make webhook authenticator request", err);
      return { error: err instanceof Error ? err : new Error(String(err)) };
    }
    const status = review.status ?? {};
    if (!status.authenticated) {
      return status.error ? { error: new Error(status.error) } : {};
    }
    const u = status.user ?? {};
    const user: UserInfo = { name: u.username ?? "", groups: [...(u.groups ?? [])] };
    if (u.uid) user.uid = u.uid;
    if (u.extra) user.extra = structuredClone(u.extra);
    return { user };
  }
}
