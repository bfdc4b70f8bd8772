/**
 * The agent's HTTP servers: `/healthz` on the healthz port and the read-only
 * server (`/pods`, later `/stats/*` and `/metrics/*`) on `--read-only-port`.
 *
 * Handlers are plain functions from a Request to a Response so that the
 * authenticated 10250 server can reuse them later.
 *
 * @module
 */

import type { Logger } from "../util/log.ts";

/** A named health check: returns undefined when healthy, else the reason. */
export interface HealthCheck {
  name: string;
  check(): string | undefined;
}

/** A route handler. */
export type Handler = (req: Request, url: URL) => Response | Promise<Response>;

/** A running server. */
export interface RunningServer {
  /** The bound port (useful with port 0). */
  port: number;
  shutdown(): Promise<void>;
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

/** JSON response helper. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** Options for {@link serve}. */
export interface ServeOptions {
  hostname: string;
  port: number;
  routes: Record<string, Handler>;
  logger: Logger;
  /** A name for logs ("healthz", "read-only"). */
  name: string;
}

/**
 * Starts a server for exact-path routes.
 * @param opts where to bind and what to serve
 * @returns the running server
 * @throws {Error} naming the address when it cannot bind
 */
export function serve(opts: ServeOptions): RunningServer {
  const { routes, logger } = opts;
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: opts.hostname,
      port: opts.port,
      onListen: () => {},
    }, async (req) => {
      const url = new URL(req.url);
      const handler = routes[url.pathname];
      if (!handler) return new Response("404 page not found\n", { status: 404 });
      try {
        return await handler(req, url);
      } catch (err) {
        logger.error("HTTP handler failed", err, { server: opts.name, path: url.pathname });
        return new Response(`internal error: ${(err as Error).message}\n`, { status: 500 });
      }
    });
  } catch (err) {
    throw new Error(`cannot serve ${opts.name} on ${opts.hostname}:${opts.port}`, { cause: err });
  }
  const port = server.addr.port;
  logger.info("Serving", { server: opts.name, address: `${opts.hostname}:${port}` });
  return { port, shutdown: () => server.shutdown() };
}
