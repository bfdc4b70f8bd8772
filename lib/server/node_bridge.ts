/**
 * The bridge from node:http's IncomingMessage/ServerResponse (what the
 * node:https secure listener hands over) to our fetch-style {@link Handler}:
 * the request body as a ReadableStream, the response body written as the
 * handler's stream yields it, no faster than the client reads, and a client
 * that goes away cancels the stream and aborts `req.signal`.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../util/log.ts";
import type { Handler } from "./serve.ts";

/** Options for {@link handleNodeRequest}. */
export interface BridgeOptions {
  /** The handler, or undefined for a 404. */
  handler: Handler | undefined;
  logger?: Logger;
  /** A name for logs ("secure"). */
  name?: string;
}

function requestHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // A header fetch refuses (a bad name or value) is dropped, not fatal to the request.
    }
  }
  return headers;
}

function requestBody(req: IncomingMessage): ReadableStream<Uint8Array> {
  // Pulled on demand, so a slow handler pauses the socket instead of buffering the body.
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.pause();
      req.on("data", (chunk: Uint8Array) => {
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.once("end", () => {
        done = true;
        controller.close();
      });
      req.once("error", (err) => {
        done = true;
        controller.error(err);
      });
    },
    pull() {
      if (!done) req.resume();
    },
    cancel() {
      done = true;
      req.destroy();
    },
  }, { highWaterMark: 1 });
}

/**
 * Builds the fetch Request of a node request. `signal` aborts when the
 * client goes away before the response is complete.
 */
export function toFetchRequest(req: IncomingMessage, signal: AbortSignal): Request {
  let url: URL;
  try {
    url = new URL(req.url ?? "/", `https://${req.headers.host ?? "kubelet"}`);
  } catch {
    // A Host header that is no host: the path is what routes, so keep it.
    url = new URL(req.url ?? "/", "https://kubelet");
  }
  const method = req.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(url, {
    method,
    headers: requestHeaders(req),
    signal,
    ...(hasBody ? { body: requestBody(req), duplex: "half" } : {}),
  } as RequestInit);
}

function waitWritable(res: ServerResponse): Promise<boolean> {
  // true: drained, write on; false: the client went away.
  return new Promise((resolve) => {
    const onDrain = () => {
      res.off("close", onClose);
      resolve(true);
    };
    const onClose = () => {
      res.off("drain", onDrain);
      resolve(false);
    };
    res.once("drain", onDrain);
    res.once("close", onClose);
  });
}

/**
 * Waits for a write's callback (its bytes handed to the socket), or for the
 * connection to close first.
 */
function untilWrittenOrClosed(res: ServerResponse, write: Promise<unknown>): Promise<unknown> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const onClose = () => resolve(undefined);
    res.once("close", onClose);
    write.then(() => {
      res.off("close", onClose);
      resolve(undefined);
    });
  });
}

/**
 * Writes a fetch Response to a node ServerResponse. A body stream is read
 * one chunk at a time and the next chunk is read only once node has taken
 * the last (backpressure); when the client closes the connection first the
 * stream is cancelled, which is how a following handler learns to stop.
 *
 * The end of a body goes out only once its last chunk is on the socket, so
 * the two travel apart (two TLS records), as upstream's flushing writer sends
 * them: the apiserver's WebSocket copy of a stream (wsstream's messageCopy,
 * `kubectl logs` over WebSockets) drops the bytes of a read that also
 * returns EOF, which Go's chunked reader does when the terminating chunk came
 * with the data.
 * @returns once the response is written or the client has gone
 */
export async function writeFetchResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of response.headers) headers[k] = v;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  res.writeHead(response.status, response.statusText || undefined, headers);
  const body = response.body;
  if (!body || req.method === "HEAD") {
    await body?.cancel().catch(() => {});
    res.end();
    return;
  }
  // A follower (logs -f) must see the status line before its first chunk arrives.
  res.flushHeaders();
  const reader = body.getReader();
  let gone = false;
  const onClose = () => {
    if (!res.writableFinished) {
      gone = true;
      reader.cancel().catch(() => {});
    }
  };
  res.once("close", onClose);
  let lastWrite: Promise<unknown> = Promise.resolve();
  try {
    while (!gone) {
      const { done, value } = await reader.read();
      if (done) break;
      if (gone || res.destroyed) break;
      let accepted = true;
      lastWrite = new Promise((resolve) => accepted = res.write(value, resolve));
      if (!accepted && !(await waitWritable(res))) break;
    }
    await untilWrittenOrClosed(res, lastWrite);
  } catch (err) {
    if (!gone) {
      // A stream that fails midway cannot change the status any more: cut the connection
      // so the client sees a truncated body, not a complete one.
      res.destroy(err as Error);
      return;
    }
  } finally {
    res.off("close", onClose);
  }
  if (gone || res.destroyed) {
    await reader.cancel().catch(() => {});
    return;
  }
  res.end();
}

/**
 * Serves one node request with a fetch-style handler: 404 without one, 500
 * (logged) when the handler throws.
 */
export async function handleNodeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  opts: BridgeOptions,
): Promise<void> {
  const aborted = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) aborted.abort(new Error("client closed the connection"));
  });
  if (!opts.handler) return await writeFetchResponse(req, res, notFound());
  // A method fetch's Request refuses to carry (TRACE, TRACK) is no handler's: Go's server
  // hands it to the routes, whose methods are GET, POST and PUT, so refuse it as they do.
  if (FORBIDDEN_METHODS.has((req.method ?? "").toUpperCase())) {
    return await writeFetchResponse(req, res, methodNotAllowed());
  }
  const request = toFetchRequest(req, aborted.signal);
  const url = new URL(request.url);
  let response: Response;
  try {
    response = await opts.handler(request, url);
  } catch (err) {
    opts.logger?.error("HTTP handler failed", err, {
      server: opts.name ?? "",
      path: url.pathname,
    });
    response = new Response(`internal error: ${(err as Error).message}\n`, { status: 500 });
  }
  await writeFetchResponse(req, res, response);
}

/** Methods `new Request()` throws on (the fetch standard's forbidden methods). */
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);

function methodNotAllowed(): Response {
  return new Response("Method Not Allowed", {
    status: 405,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

/** Go's net/http NotFound, which upstream's mux answers unknown paths with. */
export function notFound(): Response {
  return new Response("404 page not found\n", {
    status: 404,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
