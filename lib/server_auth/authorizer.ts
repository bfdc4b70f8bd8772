/**
 * The kubelet's authorizers (upstream BuildAuthz): `AlwaysAllow`, and
 * `Webhook`, which asks the apiserver with a SubjectAccessReview and caches
 * the answer as the apiserver's webhook authorizer does: keyed by the whole
 * review spec, allowed answers for `cacheAuthorizedTTL`, the rest for
 * `cacheUnauthorizedTTL`, failures not at all.
 *
 * @module
 */

import type { KubeClient } from "../kubeapi/mod.ts";
import type { KubeletAuthorization } from "../options/kubelet_config.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { parseDuration } from "../util/duration.ts";
import type { Logger } from "../util/log.ts";
import { TtlCache } from "./_ttl_cache.ts";
import { DEFAULT_WEBHOOK_RETRY_BACKOFF, type RetryBackoff, withRetry } from "./_webhook_retry.ts";
import type { Attributes, Authorizer, Decision } from "./types.ts";

/** The SubjectAccessReview path (authorization.k8s.io/v1). */
export const SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
/** Upstream's default `authorization.webhook.cacheAuthorizedTTL`. */
export const DEFAULT_AUTHORIZED_TTL_MS = 300_000;
/** Upstream's default `authorization.webhook.cacheUnauthorizedTTL`. */
export const DEFAULT_UNAUTHORIZED_TTL_MS = 30_000;

/** Allows everything (`authorization.mode: AlwaysAllow`). */
export const alwaysAllow: Authorizer = {
  authorize: () => Promise.resolve({ decision: "allow", reason: "" }),
};

interface SarStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/** Options for {@link WebhookAuthorizer}. */
export interface WebhookAuthorizerOptions {
  client: KubeClient;
  /** Default {@link DEFAULT_AUTHORIZED_TTL_MS}. */
  authorizedTtlMs?: number;
  /** Default {@link DEFAULT_UNAUTHORIZED_TTL_MS}. */
  unauthorizedTtlMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Retries of failed reviews; default upstream's (500 ms ×1.5, 5 attempts). */
  retryBackoff?: RetryBackoff;
}

/** Asks SubjectAccessReview, cached (`authorization.mode: Webhook`). */
export class WebhookAuthorizer implements Authorizer {
  #client: KubeClient;
  #allowTtl: number;
  #denyTtl: number;
  #cache: TtlCache<SarStatus>;
  #logger: Logger | undefined;
  #clock: Clock;
  #backoff: RetryBackoff;
  #reviews = 0;

  constructor(opts: WebhookAuthorizerOptions) {
    this.#client = opts.client;
    this.#allowTtl = opts.authorizedTtlMs ?? DEFAULT_AUTHORIZED_TTL_MS;
    this.#denyTtl = opts.unauthorizedTtlMs ?? DEFAULT_UNAUTHORIZED_TTL_MS;
    this.#clock = opts.clock ?? realClock;
    this.#cache = new TtlCache(this.#clock);
    this.#logger = opts.logger;
    this.#backoff = opts.retryBackoff ?? DEFAULT_WEBHOOK_RETRY_BACKOFF;
  }

  /** SubjectAccessReviews sent so far, retries included. */
  get reviews(): number {
    return this.#reviews;
  }

  async authorize(attrs: Attributes): Promise<{ decision: Decision; reason: string }> {
    const spec: Record<string, unknown> = {
      resourceAttributes: {
        verb: attrs.verb,
        version: attrs.apiVersion,
        resource: attrs.resource,
        subresource: attrs.subresource,
        name: attrs.name,
      },
      user: attrs.user.name,
      groups: attrs.user.groups,
    };
    if (attrs.user.uid) spec.uid = attrs.user.uid;
    if (attrs.user.extra) spec.extra = attrs.user.extra;
    const key = JSON.stringify(spec);
    const status = await this.#cache.getOrLoad(key, async () => {
      const s = await this.#review(spec);
      this.#cache.set(key, s, s.allowed ? this.#allowTtl : this.#denyTtl);
      return s;
    });
    const decision: Decision = status.allowed ? "allow" : status.denied ? "deny" : "no-opinion";
    return { decision, reason: status.reason ?? "" };
  }

  async #review(spec: Record<string, unknown>): Promise<SarStatus> {
    try {
      const sar = await withRetry(
        () => {
          this.#reviews++;
          return this.#client.create<{ status?: SarStatus }>(SUBJECT_ACCESS_REVIEW_PATH, {
            apiVersion: "authorization.k8s.io/v1",
            kind: "SubjectAccessReview",
            spec,
          });
        },
        this.#backoff,
        this.#clock,
      );
      return sar.status ?? {};
    } catch (err) {
      this.#logger?.error("Failed to make webhook authorizer request", err);
      throw err;
    }
  }
}

/** Options for {@link buildAuthorizer}. */
export interface BuildAuthorizerOptions {
  /** The `authorization` section, defaults applied (lib/options). */
  authorization: KubeletAuthorization;
  /** The apiserver client; required for `Webhook`. */
  client?: KubeClient;
  clock?: Clock;
  logger?: Logger;
  /** Retries of failed reviews; default upstream's. */
  retryBackoff?: RetryBackoff;
}

/**
 * The authorizer of `authorization.mode`.
 * @throws Error with upstream's wording for an empty or unknown mode, or
 *   `Webhook` without a client
 */
export function buildAuthorizer(opts: BuildAuthorizerOptions): Authorizer & { reviews?: number } {
  const authz = opts.authorization;
  switch (authz.mode) {
    case "AlwaysAllow":
      return alwaysAllow;
    case "Webhook": {
      if (!opts.client) throw new Error("no client provided, cannot use webhook authorization");
      const allowed = authz.webhook?.cacheAuthorizedTTL;
      const denied = authz.webhook?.cacheUnauthorizedTTL;
      return new WebhookAuthorizer({
        client: opts.client,
        authorizedTtlMs: allowed ? parseDuration(allowed) : DEFAULT_AUTHORIZED_TTL_MS,
        unauthorizedTtlMs: denied ? parseDuration(denied) : DEFAULT_UNAUTHORIZED_TTL_MS,
        ...(opts.clock ? { clock: opts.clock } : {}),
        ...(opts.logger ? { logger: opts.logger } : {}),
        ...(opts.retryBackoff ? { retryBackoff: opts.retryBackoff } : {}),
      });
    }
    case "":
    case undefined:
      throw new Error("no authorization mode specified");
    default:
      throw new Error(`unknown authorization mode ${authz.mode}`);
  }
}
