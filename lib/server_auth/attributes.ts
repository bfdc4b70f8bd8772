/**
 * Upstream's mapping of a kubelet request to authorization attributes
 * (pkg/kubelet/server/auth.go `GetRequestAttributes`): always `nodes/<node>`,
 * the verb from the HTTP method, and the subresource from the path.
 *
 * @module
 */

import type { Attributes, UserInfo } from "./types.ts";

/**
 * The API verb of an HTTP method. As upstream, only these five map; any
 * other method (HEAD, OPTIONS, ...) gets the empty verb, which authorizers
 * deny unless they allow every verb.
 */
export function apiVerb(method: string): string {
  switch (method) {
    case "POST":
      return "create";
    case "GET":
      return "get";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return "delete";
    default:
      return "";
  }
}

/** Whether `path` is `prefix` or below it (upstream `isSubpath`). */
export function isSubpath(path: string, prefix: string): boolean {
  const p = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  return path === p || (path.startsWith(p) && path[p.length] === "/");
}

/**
 * The subresources a request is checked against, in order; the request is
 * allowed when any one is. With fine-grained authorization (upstream's
 * KubeletFineGrainedAuthz, on by default since 1.33) `/pods`, `/runningpods`,
 * `/healthz`, `/configz` and `/statusz` are first checked as their own
 * subresource, then as `proxy`; `/stats`, `/metrics`, `/logs`, `/checkpoint`
 * have their own; everything else is `proxy`.
 */
export function subresourcesFor(path: string, fineGrained = true): string[] {
  const out: string[] = [];
  if (fineGrained) {
    if (isSubpath(path, "/pods")) out.push("pods");
    else if (isSubpath(path, "/healthz")) out.push("healthz");
    else if (isSubpath(path, "/configz")) out.push("configz");
    else if (isSubpath(path, "/statusz")) out.push("statusz");
    else if (isSubpath(path, "/runningpods/")) out.push("pods");
  }
  if (isSubpath(path, "/stats")) out.push("stats");
  else if (isSubpath(path, "/metrics")) out.push("metrics");
  else if (isSubpath(path, "/logs")) out.push("log");
  else if (isSubpath(path, "/checkpoint")) out.push("checkpoint");
  else out.push("proxy");
  return out;
}

/** Options for {@link requestAttributes}. */
export interface RequestAttributesOptions {
  user: UserInfo;
  method: string;
  /** The URL path, without the query. */
  path: string;
  nodeName: string;
  /** Upstream's KubeletFineGrainedAuthz; default true. */
  fineGrained?: boolean;
}

/** The attributes to authorize, one per subresource of {@link subresourcesFor}. */
export function requestAttributes(opts: RequestAttributesOptions): Attributes[] {
  const verb = apiVerb(opts.method);
  return subresourcesFor(opts.path, opts.fineGrained).map((subresource) => ({
    user: opts.user,
    verb,
    resource: "nodes",
    name: opts.nodeName,
    subresource,
    apiVersion: "v1",
    path: opts.path,
  }));
}
