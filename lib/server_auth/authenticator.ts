/**
 * The kubelet's request authenticator as upstream builds it
 * (cmd/kubelet/app/auth.go → apiserver DelegatingAuthenticatorConfig):
 * client certificate first, then the bearer token of the Authorization
 * header, then a token in a WebSocket subprotocol; whoever answers first wins
 * and the user gets `system:authenticated`. When none answers and none
 * failed, the request is anonymous if `authentication.anonymous.enabled`;
 * a failure (bad certificate, rejected token) is never turned into anonymous.
 *
 * @module
 */

import type { KubeClient } from "../kubeapi/mod.ts";
import type { KubeletAuthentication } from "../options/kubelet_config.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { parseDuration } from "../util/duration.ts";
import type { Logger } from "../util/log.ts";
import type { RetryBackoff } from "./_webhook_retry.ts";
import { DEFAULT_TOKEN_CACHE_TTL_MS, TokenReviewAuthenticator } from "./token_authenticator.ts";
import {
  ANONYMOUS_USER,
  AUTHENTICATED_GROUP,
  type AuthenticationResult,
  type Authenticator,
  headerValue,
  type RequestCredentials,
  UNAUTHENTICATED_GROUP,
  type UserInfo,
} from "./types.ts";
import { X509Authenticator } from "./x509_authenticator.ts";

const WEBSOCKET_TOKEN_PREFIX = "base64url.bearer.authorization.k8s.io.";

/** The bearer token of an `Authorization` header (apiserver bearertoken). */
export function bearerToken(headers: RequestCredentials["headers"]): string | undefined {
  const auth = headerValue(headers, "authorization")?.trim();
  if (!auth) return undefined;
  const parts = auth.split(" ");
  if (parts.length < 2 || parts[0]?.toLowerCase() !== "bearer") return undefined;
  return parts[1] || undefined;
}

/**
 * The token a WebSocket client puts in `Sec-WebSocket-Protocol`
 * (`base64url.bearer.authorization.k8s.io.<base64url token>`), only on a
 * WebSocket upgrade (apiserver websocket.ProtocolAuthenticator).
 */
export function websocketToken(headers: RequestCredentials["headers"]): string | undefined {
  const connection = headerValue(headers, "connection")?.toLowerCase() ?? "";
  const upgrade = headerValue(headers, "upgrade")?.toLowerCase() ?? "";
  if (!connection.split(",").some((t) => t.trim() === "upgrade") || upgrade !== "websocket") {
    return undefined;
  }
  for (const proto of (headerValue(headers, "sec-websocket-protocol") ?? "").split(",")) {
    const p = proto.trim();
    if (!p.startsWith(WEBSOCKET_TOKEN_PREFIX)) continue;
    const encoded = p.slice(WEBSOCKET_TOKEN_PREFIX.length);
    try {
      const b64 = encoded.replaceAll("-", "+").replaceAll("_", "/");
      const bytes = Uint8Array.from(
        atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)),
        (c) => c.charCodeAt(0),
      );
      const token = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      return token || undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Options for {@link DelegatingAuthenticator}. */
export interface DelegatingAuthenticatorOptions {
  /** Client certificates; none means certificates are ignored. */
  x509?: X509Authenticator;
  /** Bearer tokens; none means tokens are ignored (`authentication.webhook.enabled: false`). */
  tokens?: TokenReviewAuthenticator;
  /** `authentication.anonymous.enabled`. */
  anonymous: boolean;
}

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  // apiserver AuthenticatedGroupAdder: not for anonymous, not twice.
  if (
    user.name === ANONYMOUS_USER || user.groups.includes(AUTHENTICATED_GROUP) ||
    user.groups.includes(UNAUTHENTICATED_GROUP)
  ) return user;
  return { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] };
}

/** Upstream's union of authenticators for the kubelet. */
export class DelegatingAuthenticator implements Authenticator {
  readonly #opts: DelegatingAuthenticatorOptions;

  constructor(opts: DelegatingAuthenticatorOptions) {
    this.#opts = opts;
  }

  /** TokenReviews sent (0 without webhook authentication). */
  get tokenReviews(): number {
    return this.#opts.tokens?.reviews ?? 0;
  }

  async authenticate(req: RequestCredentials): Promise<AuthenticationResult> {
    const errors: Error[] = [];
    const { x509, tokens } = this.#opts;
    if (x509) {
      const r = await x509.authenticate(req);
      if (r.user) return { user: withAuthenticatedGroup(r.user) };
      if (r.error) errors.push(r.error);
    }
    if (tokens) {
      for (const token of [bearerToken(req.headers), websocketToken(req.headers)]) {
        if (token === undefined) continue;
        const r = await tokens.authenticateToken(token);
        if (r.user) return { user: withAuthenticatedGroup(r.user) };
        errors.push(r.error ?? new Error("invalid bearer token"));
      }
    }
    if (errors.length) return { error: new AggregateErrorMessage(errors) };
    if (this.#opts.anonymous) {
      return { user: { name: ANONYMOUS_USER, groups: [UNAUTHENTICATED_GROUP] } };
    }
    return {};
  }
}

/** Several authenticators' failures in one error, joined as upstream's aggregate. */
class AggregateErrorMessage extends Error {
  constructor(readonly errors: Error[]) {
    super(
      errors.length === 1 ? errors[0]!.message : `[${errors.map((e) => e.message).join(", ")}]`,
    );
    this.name = "AuthenticationError";
  }
}

/** Options for {@link buildAuthenticator}. */
export interface BuildAuthenticatorOptions {
  /** The `authentication` section, defaults applied (lib/options). */
  authentication: KubeletAuthentication;
  /** The apiserver client; required when the webhook is enabled. */
  client?: KubeClient;
  clock?: Clock;
  logger?: Logger;
  /** Retries of failed TokenReviews; default upstream's. */
  retryBackoff?: RetryBackoff;
}

/**
 * Builds the authenticator from the kubelet configuration, as upstream's
 * BuildAuthn: x509 when a client CA file is set, TokenReview when the webhook
 * is enabled (which needs an apiserver client), anonymous when enabled.
 * @throws Error when the webhook is enabled without a client, when no method
 *   is configured at all, or when the client CA file cannot be read
 */
export async function buildAuthenticator(
  opts: BuildAuthenticatorOptions,
): Promise<DelegatingAuthenticator> {
  const authn = opts.authentication;
  const clock = opts.clock ?? realClock;
  const built: DelegatingAuthenticatorOptions = { anonymous: authn.anonymous?.enabled === true };
  const caFile = authn.x509?.clientCAFile ?? "";
  if (caFile) {
    const x509Opts = {
      clientCAFile: caFile,
      clock,
      ...(opts.logger ? { logger: opts.logger } : {}),
    };
    built.x509 = await X509Authenticator.create(x509Opts);
  }
  if (authn.webhook?.enabled) {
    if (!opts.client) throw new Error("no client provided, cannot use webhook authentication");
    const ttl = authn.webhook.cacheTTL;
    built.tokens = new TokenReviewAuthenticator({
      client: opts.client,
      cacheTtlMs: ttl ? parseDuration(ttl) : DEFAULT_TOKEN_CACHE_TTL_MS,
      clock,
      ...(opts.logger ? { logger: opts.logger } : {}),
      ...(opts.retryBackoff ? { retryBackoff: opts.retryBackoff } : {}),
    });
  }
  if (!built.x509 && !built.tokens && !built.anonymous) {
    throw new Error("no authentication method configured");
  }
  return new DelegatingAuthenticator(built);
}
