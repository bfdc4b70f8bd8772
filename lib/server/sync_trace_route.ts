/**
 * `GET /debug/pods/{namespace}/{name}/syncs`: the pod's sync trace as JSON
 * (lib/trace `PodSyncTrace`, the shape documented in lib/trace/types.ts).
 * denolet's own route: on the read-only port, and on the secure port with
 * the debugging handlers on, where lib/server_auth checks it as upstream
 * checks any path it has no subresource for: `nodes/proxy`.
 *
 * @module
 */

import type { PodSyncTrace } from "../trace/mod.ts";
import { type Handler, json, textResponse } from "./serve.ts";

/** The route's prefix. */
export const SYNC_TRACE_PREFIX = "/debug/pods/";

/**
 * Builds the handler.
 * @param lookup the pod's trace by namespace and name
 * @returns a prefix handler for {@link SYNC_TRACE_PREFIX}
 */
export function syncTraceHandler(
  lookup: (namespace: string, name: string) => PodSyncTrace | undefined,
): Handler {
  return (req, url) => {
    let parts: string[];
    try {
      parts = url.pathname.slice(SYNC_TRACE_PREFIX.length).split("/").map(decodeURIComponent);
    } catch {
      // An escape that decodes to no UTF-8 (`%c0%af`) or is no escape (`%zz`).
      return textResponse(400, "400 Bad Request\n");
    }
    if (parts.length !== 3 || parts[2] !== "syncs" || !parts[0] || !parts[1]) {
      return textResponse(404, "404 page not found\n");
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return textResponse(405, "Method Not Allowed", { allow: "GET, HEAD" });
    }
    const trace = lookup(parts[0], parts[1]);
    if (!trace) return textResponse(404, `no sync recorded for pod "${parts[0]}/${parts[1]}"\n`);
    return json(trace);
  };
}
