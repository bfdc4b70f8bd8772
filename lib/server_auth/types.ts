/**
 * Who a request to the kubelet's server comes from, and the authorization
 * question it raises (apiserver's user.Info and authorizer.Attributes).
 *
 * @module
 */

/** An authenticated (or anonymous) user. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** Upstream's anonymous user (apiserver `anonymous.NewAuthenticator`). */
export const ANONYMOUS_USER = "system:anonymous";
/** The group of the anonymous user. */
export const UNAUTHENTICATED_GROUP = "system:unauthenticated";
/** The group every authenticated user is given (apiserver `AuthenticatedGroupAdder`). */
export const AUTHENTICATED_GROUP = "system:authenticated";

/** The parts of a request that authentication reads. */
export interface RequestCredentials {
  /** Request headers (a fetch `Headers`, or node's lower-cased header object). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /**
   * The client's certificate chain as the TLS layer saw it, DER, leaf first;
   * empty when the client sent none.
   */
  peerCertificates: Uint8Array[];
}

/** An answer of an authenticator: a user, or none with an error or not. */
export type AuthenticationResult =
  | { user: UserInfo; error?: undefined }
  | { user?: undefined; error?: Error };

/** Authenticates a request (apiserver `authenticator.Request`). */
export interface Authenticator {
  authenticate(req: RequestCredentials): Promise<AuthenticationResult>;
}

/** The authorization question for one request (a resource request on `nodes`). */
export interface Attributes {
  user: UserInfo;
  verb: string;
  resource: "nodes";
  /** The node's name. */
  name: string;
  subresource: string;
  apiVersion: "v1";
  path: string;
}

/** An authorizer's decision (apiserver `authorizer.Decision`). */
export type Decision = "allow" | "deny" | "no-opinion";

/** Decides on {@link Attributes} (apiserver `authorizer.Authorizer`). */
export interface Authorizer {
  /** @throws when the decision could not be made (a failed SubjectAccessReview). */
  authorize(attrs: Attributes): Promise<{ decision: Decision; reason: string }>;
}

/** Reads one header from either header form. */
export function headerValue(
  headers: RequestCredentials["headers"],
  name: string,
): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(", ") : v;
}
