/**
 * Authentication and authorization of the kubelet's secure port, as
 * upstream's kubelet server does them, and the node:https listener that
 * applies them to every request:
 *
 * - {@link buildAuthenticator}: client certificates against
 *   `authentication.x509.clientCAFile`, bearer tokens through TokenReview
 *   (cached for `cacheTTL`), anonymous only when enabled.
 * - {@link buildAuthorizer}: `AlwaysAllow`, or `Webhook` through
 *   SubjectAccessReview (cached for `cacheAuthorizedTTL` /
 *   `cacheUnauthorizedTTL`) on `nodes/<node>` with upstream's subresources.
 * - {@link createRequestFilter}: the per-request gate, 401/403/500 as upstream.
 * - {@link resolveTlsOptions}: `tlsMinVersion`/`tlsCipherSuites` within what
 *   Deno's node:tls honours, refusing what it would silently ignore.
 * - {@link startSecureListener}: the listener; routes are mounted through
 *   {@link SecureRoutes}.
 *
 * ```ts
 * import { ensureSelfSignedCert, ServingCertificate } from "./lib/certs/mod.ts";
 * import * as auth from "./lib/server_auth/mod.ts";
 * const files = await ensureSelfSignedCert({ certDir, host: hostname, ips: nodeIPs });
 * const servingCert = await ServingCertificate.load({ ...files, logger });
 * servingCert.start();
 * const tls = auth.resolveTlsOptions({ tlsMinVersion, tlsCipherSuites });
 * tls.warnings.forEach((w) => logger.warn(w));
 * const filter = auth.createRequestFilter({
 *   authenticator: await auth.buildAuthenticator({ authentication, client }),
 *   authorizer: auth.buildAuthorizer({ authorization, client }),
 *   nodeName,
 * });
 * const listener = await auth.startSecureListener({
 *   address, port, servingCert, tls, filter, routes: { onRequest, onUpgrade },
 * });
 * ```
 *
 * @module
 */

export * from "./types.ts";
export { DEFAULT_WEBHOOK_RETRY_BACKOFF, type RetryBackoff } from "./_webhook_retry.ts";
export {
  apiVerb,
  isSubpath,
  requestAttributes,
  type RequestAttributesOptions,
  subresourcesFor,
} from "./attributes.ts";
export {
  bearerToken,
  buildAuthenticator,
  type BuildAuthenticatorOptions,
  DelegatingAuthenticator,
  type DelegatingAuthenticatorOptions,
  websocketToken,
} from "./authenticator.ts";
export {
  DEFAULT_TOKEN_CACHE_TTL_MS,
  TOKEN_REVIEW_PATH,
  type TokenResult,
  TokenReviewAuthenticator,
  type TokenReviewAuthenticatorOptions,
} from "./token_authenticator.ts";
export { X509Authenticator, type X509AuthenticatorOptions } from "./x509_authenticator.ts";
export {
  alwaysAllow,
  buildAuthorizer,
  type BuildAuthorizerOptions,
  DEFAULT_AUTHORIZED_TTL_MS,
  DEFAULT_UNAUTHORIZED_TTL_MS,
  SUBJECT_ACCESS_REVIEW_PATH,
  WebhookAuthorizer,
  type WebhookAuthorizerOptions,
} from "./authorizer.ts";
export {
  createRequestFilter,
  type FilterInput,
  type FilterResult,
  type RequestFilter,
  type RequestFilterOptions,
} from "./filter.ts";
export { type ResolvedTls, resolveTlsOptions, type TlsSettings } from "./tls_options.ts";
export {
  peerCertificates,
  type SecureListener,
  type SecureListenerOptions,
  type SecureRoutes,
  startSecureListener,
} from "./listener.ts";
