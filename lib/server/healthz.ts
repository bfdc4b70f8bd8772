/**
 * `/healthz` as upstream's healthz package answers it.
 *
 * @module
 */

import type { Handler } from "./serve.ts";

/** A named health check: returns undefined when healthy, else the reason. */
export interface HealthCheck {
  name: string;
  check(): string | undefined;
}

/**
 * Answers `/healthz` as upstream's healthz does: "ok" with 200 when every
 * check passes; otherwise 500 with one `[-]name failed: reason` line per
 * failing check. `?verbose` lists passing checks too.
 * @param checks the checks to run on each request
 * @returns the handler
 */
export function healthzHandler(checks: readonly HealthCheck[]): Handler {
  return (_req, url) => {
    const lines: string[] = [];
    let failed = false;
    for (const c of checks) {
      const reason = c.check();
      if (reason !== undefined) {
        failed = true;
        lines.push(`[-]${c.name} failed: ${reason}`);
      } else lines.push(`[+]${c.name} ok`);
    }
    const verbose = url.searchParams.has("verbose");
    if (!failed) {
      return new Response(verbose ? lines.join("\n") + "\nhealthz check passed\n" : "ok");
    }
    return new Response(lines.join("\n") + "\nhealthz check failed\n", { status: 500 });
  };
}
