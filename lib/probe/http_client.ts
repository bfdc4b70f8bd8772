/**
 * One httpGet, sent as upstream's kubelet sends it with Go's net/http client:
 * a fresh connection per request, no proxy, HTTPS without certificate
 * verification, and redirects followed while they stay on the same host (at
 * most 10 requests; a redirect to another host ends the chain with its own
 * response, upstream's `RedirectChecker(false)`). The probe's and the
 * lifecycle hook's clients differ in two ways, both kept here:
 *
 * - the probe reads the last response's body (at most 10 KiB; a body Go's
 *   reader refuses fails it), the hook drops it as `discardHTTPRespBody`;
 * - the hook's transport asks for gzip (`Accept-Encoding: gzip`), the
 *   probe's does not (`DisableCompression`).
 *
 * Upstream's hook client keeps connections alive between hooks; here each
 * request has its own connection, as the probe's. That decides nothing: a
 * reused connection changes what is sent, not how an answer is read.
 *
 * Plain HTTP goes over Deno.connect, HTTPS over node:tls (`_tls.ts`); both
 * are read by `_http1.ts`, by Go's rules.
 *
 * @module
 */

import { startDeadline } from "../util/deadline.ts";
import { type ByteStream, http1Get } from "./_http1.ts";
import { connectTls, SchemeMismatchError } from "./_tls.ts";
import type { HttpProbeRequest } from "./http_request.ts";

/** Upstream reads at most 10 KiB of a probe's response body (and drops as much of a hook's). */
export const MAX_RESPONSE_BODY_BYTES = 10 * 1024;
/** Go's http.Client stops after 10 requests in one redirect chain. */
const MAX_REQUESTS = 10;
/** Go's client reads at most this much of a redirect's body before it follows it. */
const MAX_REDIRECT_BODY_BYTES = 2 * 1024;
/** The codes Go's client follows (with a Location header). */
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);
/** Request headers about a body, dropped once a 301, 302 or 303 turns the request into a bodiless GET. */
const BODY_HEADERS = ["Content-Encoding", "Content-Language", "Content-Location", "Content-Type"];

/** Which of the kubelet's two httpGet clients sends the request. */
export type HttpGetClient = "probe" | "hook";

/** Options for {@link sendHttpGet}. */
export interface HttpGetOptions {
  client: HttpGetClient;
  /** The most the whole chain may take. */
  timeoutMs: number;
  /** Cancels the request: the result is then `cancelled`, no verdict. */
  signal: AbortSignal;
}

/** How an httpGet ended. */
export type HttpGetResult =
  | {
    kind: "response";
    /** The last response's status code. */
    status: number;
    /** The last response's body, at most 10 KiB, as text (empty for the hook). */
    body: string;
  }
  | {
    kind: "error";
    /** Go's `*url.Error` text: `Get "<url>": <why>`. */
    message: string;
    /** The HTTPS handshake got an HTTP answer (Go's `ErrSchemeMismatch`). */
    schemeMismatch: boolean;
  }
  | { kind: "cancelled" };

/**
 * Sends `request` and follows its redirects by Go's client rules.
 * @param request from `buildHttpProbeRequest`
 * @param opts which client, the deadline, cancellation
 * @returns the last response, or why none came; never throws
 */
export async function sendHttpGet(
  request: HttpProbeRequest,
  opts: HttpGetOptions,
): Promise<HttpGetResult> {
  const deadline = startDeadline(opts.signal, opts.timeoutMs);
  const chain = new Chain(request, opts.client);
  try {
    for (let sent = 1;; sent++) {
      const url = chain.url;
      let step: Step;
      let reading = false;
      const conn = await open(url, deadline.signal).catch((err: unknown) =>
        err instanceof Error ? err : new Error(String(err))
      );
      if (conn instanceof Error) {
        step = { error: conn };
      } else {
        const close = () => closeQuietly(conn);
        deadline.signal.addEventListener("abort", close, { once: true });
        try {
          const head = await http1Get(conn, {
            path: url.pathname + url.search,
            host: chain.host || url.host,
            headers: chain.headerLines(),
            timeUp: () => deadline.expired,
          });
          step = chain.next(head.status, head.location, sent);
          if ("follow" in step || "stopped" in step) {
            await head.readBody("drop", MAX_REDIRECT_BODY_BYTES);
          } else if ("last" in step) {
            reading = true;
            const body = await head.readBody(
              opts.client === "probe" ? "read" : "drop",
              MAX_RESPONSE_BODY_BYTES,
            );
            if (opts.client === "probe") step.last.body = new TextDecoder().decode(body);
          }
        } catch (err) {
          step = { error: err instanceof Error ? err : new Error(String(err)), reading };
        } finally {
          deadline.signal.removeEventListener("abort", close);
          close();
        }
      }
      if ("last" in step) return step.last;
      if ("follow" in step) continue;
      if (opts.signal.aborted) return { kind: "cancelled" };
      if ("stopped" in step) return failed(`Get ${JSON.stringify(step.stopped)}`, step.why);
      if ("bad" in step) return failed(`Get ${JSON.stringify(url.href)}`, step.bad);
      const why = deadline.expired
        ? step.reading
          ? "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
          : "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        : step.error.message;
      return failed(
        `Get ${JSON.stringify(url.href)}`,
        why,
        step.error instanceof SchemeMismatchError,
      );
    }
  } finally {
    deadline.clear();
  }
}

function failed(op: string, why: string, schemeMismatch = false): HttpGetResult {
  return { kind: "error", message: `${op}: ${why}`, schemeMismatch };
}

/** What one request of the chain came to. */
type Step =
  | { last: { kind: "response"; status: number; body: string } }
  | { follow: URL }
  | { stopped: string; why: string }
  | { bad: string }
  | { error: Error; reading?: boolean };

/** A redirect chain: where the next request goes, with which Host and headers. */
class Chain {
  url: URL;
  host: string;
  readonly #origin: string;
  readonly #initial: Map<string, string[]>;
  #headers: Map<string, string[]>;
  #keepBodyHeaders = true;

  constructor(request: HttpProbeRequest, client: HttpGetClient) {
    this.url = request.url;
    this.host = request.host;
    this.#origin = request.url.hostname;
    this.#initial = new Map(request.headers);
    // Go's hook transport asks for gzip itself unless the request names an encoding or a range.
    const named = (name: string) => Boolean(this.#initial.get(name)?.[0]);
    if (client === "hook" && !named("Accept-Encoding") && !named("Range")) {
      this.#initial.set("Accept-Encoding", ["gzip"]);
    }
    this.#headers = this.#initial;
  }

  /**
   * The header lines Go writes: User-Agent once (its first value; none when
   * empty), every value of every other header.
   */
  headerLines(): [string, string][] {
    const lines: [string, string][] = [];
    for (const [name, values] of this.#headers) {
      if (name === "User-Agent") {
        if (values[0]) lines.push([name, values[0]]);
        continue;
      }
      for (const v of values) lines.push([name, v]);
    }
    return lines;
  }

  /**
   * Decides on an answer as Go's client and upstream's redirect checker do,
   * and moves the chain on when it follows a redirect.
   * @param status the answer's status
   * @param location its Location header
   * @param sent how many requests the chain has sent, this one included
   */
  next(status: number, location: string | undefined, sent: number): Step {
    const last = { last: { kind: "response" as const, status, body: "" } };
    // An empty Location is no redirect (Go's client answers with the 3xx itself).
    if (!REDIRECT_CODES.has(status) || !location) return last;
    let next: URL;
    try {
      next = new URL(location, this.url);
    } catch {
      return { bad: `failed to parse Location header ${JSON.stringify(location)}` };
    }
    // Another host ends the chain: its response is the answer (upstream's ErrUseLastResponse).
    if (next.hostname !== this.#origin) return last;
    if (sent >= MAX_REQUESTS) {
      return { stopped: location, why: `stopped after ${MAX_REQUESTS} redirects` };
    }
    // Go keeps a custom Host only across relative redirects.
    if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(location)) this.host = "";
    // 301, 302 and 303 make the request a bodiless GET: headers about a body go.
    if (status === 301 || status === 302 || status === 303) this.#keepBodyHeaders = false;
    const headers = new Map(this.#initial);
    if (!this.#keepBodyHeaders) { for (const name of BODY_HEADERS) headers.delete(name); }
    // The Referer is the last URL, unless one was given or this leaves HTTPS for HTTP.
    if (!headers.has("Referer") && !(this.url.protocol === "https:" && next.protocol === "http:")) {
      headers.set("Referer", [this.url.href]);
    }
    this.#headers = headers;
    this.url = next;
    return { follow: next };
  }
}

/** A connection of its own to the URL's host: TCP, or TLS over TCP. */
async function open(url: URL, signal: AbortSignal): Promise<ByteStream> {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    // A same-host redirect may name any scheme; Go's transport speaks these two.
    throw new Error(`unsupported protocol scheme ${JSON.stringify(url.protocol.slice(0, -1))}`);
  }
  signal.throwIfAborted();
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (url.protocol === "https:") return connectTls(hostname, Number(url.port || 443));
  return await Deno.connect({ hostname, port: Number(url.port || 80), signal });
}

function closeQuietly(conn: ByteStream): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}
