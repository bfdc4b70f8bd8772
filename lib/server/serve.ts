/**
 * The HTTP plumbing under the agent's servers: exact-path and prefix routes,
 * a JSON helper and a server that turns a failing handler into a 500.
 *
 * @module
 */

import type { Logger } from "../util/log.ts";

/** A route handler. */
export type Handler = (req: Request, url: URL) => Response | Promise<Response>;

/** A running server. */
export interface RunningServer {
  /** The bound port (useful with port 0). */
  port: number;
  shutdown(): Promise<void>;
}

/** JSON response helper. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/**
 * A plain-text reply, as Go's http.Error and go-restful's WriteError send them. The body
 * goes out as given: http.Error ends it with a newline, go-restful does not.
 * @param status the HTTP status
 * @param text the body
 * @param headers extra headers, e.g. `Allow` or `Retry-After`
 * @returns the response
 */
export function textResponse(
  status: number,
  text: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(text, {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "x-content-type-options": "nosniff",
      ...headers,
    },
  });
}

/**
 * The route of `path`: an exact route, else the longest matching prefix.
 * @returns the handler, or undefined (a 404)
 */
export function findRoute<T>(
  exact: Record<string, T>,
  prefixes: Record<string, T>,
  path: string,
): T | undefined {
  if (Object.hasOwn(exact, path)) return exact[path];
  let best: string | undefined;
  for (const prefix of Object.keys(prefixes)) {
    if (path.startsWith(prefix) && (best === undefined || prefix.length > best.length)) {
      best = prefix;
    }
  }
  return best === undefined ? undefined : prefixes[best];
}

/** Options for {@link serve}. */
export interface ServeOptions {
  hostname: string;
  port: number;
  /** Exact paths. */
  routes: Record<string, Handler>;
  /** Path prefixes (`/exec/`), for paths no exact route has. */
  prefixes?: Record<string, Handler>;
  logger: Logger;
  /** A name for logs ("healthz", "read-only"). */
  name: string;
}

/**
 * Starts a plain HTTP server for exact-path and prefix routes.
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
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        // A request target that is no URL ("http://[/pods"): Go's server answers 400.
        return new Response("400 Bad Request", { status: 400 });
      }
      const handler = findRoute(routes, opts.prefixes ?? {}, url.pathname);
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
