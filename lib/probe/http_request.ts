/**
 * The request an httpGet action makes, for probes and lifecycle hooks alike
 * (upstream's pkg/probe/http `NewRequestForHTTPGetAction`): `scheme://host:port/path`
 * with the host defaulting to the pod IP, the action's headers plus
 * `User-Agent: kube-<purpose>/<major>.<minor>` and `Accept: *\/*` unless it
 * sets its own.
 *
 * @module
 */

import type { Container, HTTPGetAction } from "../api/types.ts";
import { VERSION } from "../util/version.ts";
import { joinHostPort } from "../util/net.ts";
import { resolveContainerPort } from "./port.ts";

/** The agent's own `<major>.<minor>`, as upstream takes it from the kubelet's version. */
const USER_AGENT_VERSION = VERSION.replace(/^v(\d+)\.(\d+)\..*$/, "$1.$2");

/**
 * Upstream's `kube-<purpose>/<major>.<minor>` user agent.
 * @param purpose "probe" for probes, "lifecycle" for hooks
 * @returns e.g. `kube-lifecycle/1.34`
 */
export function kubeUserAgent(purpose: "probe" | "lifecycle"): string {
  return `kube-${purpose}/${USER_AGENT_VERSION}`;
}

/** An httpGet request before it is sent. */
export interface HttpProbeRequest {
  url: URL;
  /** Canonical header name → values (Go's http.Header), without Host. */
  headers: Map<string, string[]>;
  /** The Host to send instead of the URL's ("" for the URL's). */
  host: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Go's textproto.CanonicalMIMEHeaderKey: `x-custom-header` → `X-Custom-Header`. */
function canonicalHeaderName(name: string): string {
  if (!TOKEN.test(name)) return name;
  return name.toLowerCase().replace(
    /(^|-)([a-z])/g,
    (_m, sep: string, c: string) => sep + c.toUpperCase(),
  );
}

/**
 * Builds the request an httpGet probe or hook sends (upstream's
 * NewRequestForHTTPGetAction).
 * @param action the probe's or hook's httpGet
 * @param container the container (named ports)
 * @param podIP the default host
 * @param userAgent sent unless the action sets User-Agent ({@link kubeUserAgent})
 * @returns the request
 * @throws {RangeError} when the port cannot be resolved
 * @throws {TypeError} when no valid URL can be made
 */
export function buildHttpProbeRequest(
  action: HTTPGetAction,
  container: Container,
  podIP: string,
  userAgent: string,
): HttpProbeRequest {
  const scheme = (action.scheme ?? "HTTP").toLowerCase() || "http";
  const host = action.host || podIP;
  const port = resolveContainerPort(action.port, container);
  const path = action.path ?? "";
  const url = new URL(
    `${scheme}://${joinHostPort(host, port)}${path.startsWith("/") ? path : `/${path}`}`,
  );
  const headers = new Map<string, string[]>();
  for (const h of action.httpHeaders ?? []) {
    const name = canonicalHeaderName(h.name);
    const values = headers.get(name);
    if (values) values.push(h.value);
    else headers.set(name, [h.value]);
  }
  if (!headers.has("User-Agent")) headers.set("User-Agent", [userAgent]);
  if (!headers.has("Accept")) headers.set("Accept", ["*/*"]);
  else if (headers.get("Accept")![0] === "") headers.delete("Accept");
  const hostHeader = headers.get("Host")?.[0] ?? "";
  headers.delete("Host");
  return { url, headers, host: hostHeader };
}
