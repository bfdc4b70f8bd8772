/**
 * The httpGet probe, as upstream's pkg/probe/http: a GET to
 * `scheme://host:port/path` (host defaults to the pod IP, HTTPS without
 * certificate verification), with the probe's headers plus `User-Agent:
 * kube-probe/<major>.<minor>` and `Accept: *\/*` unless it sets its own, no
 * keep-alive, no proxy. 200 ≤ code < 400 is success. Redirects are followed
 * while they stay on the same host (at most 10 requests); a redirect to
 * another host ends the chain and counts as success with the warning
 * "Probe terminated redirects". At most 10 KiB of the body is read.
 *
 * Plain HTTP goes through a small HTTP/1.1 client of our own (cheap per
 * request, full control of Host); HTTPS through node:https, the one client
 * here that can skip certificate checks per request.
 *
 * @module
 */

import https from "node:https";
import { isIP } from "node:net";
import type { Container, HTTPGetAction } from "../../api/types.ts";
import type { ProbeOutcome } from "../types.ts";
import { joinHostPort, resolveContainerPort } from "./port.ts";
import { startDeadline } from "./_deadline.ts";
import { http1Get } from "./_http1.ts";

/** Upstream reads at most 10 KiB of a probe's response body. */
export const MAX_RESPONSE_BODY_BYTES = 10 * 1024;
/** Go's http.Client stops after 10 requests in one redirect chain. */
const MAX_REQUESTS = 10;
/** The codes Go's client follows (with a Location header). */
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);

/** A probe request before it is sent. */
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
 * Builds the request an httpGet probe sends (upstream's
 * NewRequestForHTTPGetAction).
 * @param action the probe's httpGet
 * @param container the container (named ports)
 * @param podIP the default host
 * @param userAgent sent unless the probe sets User-Agent
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

interface Response {
  status: number;
  location: string | undefined;
  body: string;
}

class ProbeTimeout extends Error {}

/** One GET, reading at most {@link MAX_RESPONSE_BODY_BYTES} of the body. */
async function getOnce(
  url: URL,
  headers: Map<string, string[]>,
  host: string,
  signal: AbortSignal,
): Promise<Response> {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    // A same-host redirect may name any scheme; Go's transport speaks these two.
    throw new Error(`unsupported protocol scheme ${JSON.stringify(url.protocol.slice(0, -1))}`);
  }
  const secure = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!secure) {
    const lines: [string, string][] = [];
    for (const [name, values] of headers) for (const v of values) lines.push([name, v]);
    const res = await http1Get({
      hostname,
      port: Number(url.port || 80),
      path: url.pathname + url.search,
      host: host || url.host,
      headers: lines,
      maxBody: MAX_RESPONSE_BODY_BYTES,
      signal,
    });
    return { status: res.status, location: res.location, body: new TextDecoder().decode(res.body) };
  }
  return await getTls(url, hostname, headers, host, signal);
}

/**
 * One GET over TLS through node:https: unlike Deno.connectTls it can skip
 * certificate verification, as upstream's probe does.
 */
function getTls(
  url: URL,
  hostname: string,
  headers: Map<string, string[]>,
  host: string,
  signal: AbortSignal,
): Promise<Response> {
  const outgoing: Record<string, string | string[]> = {};
  for (const [name, values] of headers) outgoing[name] = values.length === 1 ? values[0]! : values;
  if (host) outgoing["Host"] = host;
  const options = {
    host: hostname,
    port: Number(url.port || 443),
    path: url.pathname + url.search,
    method: "GET",
    headers: outgoing,
    agent: false,
    rejectUnauthorized: false,
    servername: isIP(hostname) ? "" : hostname,
  };
  return new Promise<Response>((resolve, reject) => {
    let done = false;
    const settle = (fn: () => void) => {
      if (done) return;
      done = true;
      signal.removeEventListener("abort", onAbort);
      fn();
    };
    const req = https.request(options, (res) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const finish = () =>
        settle(() => {
          const body = new Uint8Array(size);
          let at = 0;
          for (const c of chunks) {
            body.set(c, at);
            at += c.length;
          }
          resolve({
            status: res.statusCode ?? 0,
            location: typeof res.headers.location === "string" ? res.headers.location : undefined,
            body: new TextDecoder().decode(body),
          });
        });
      res.on("data", (chunk: Uint8Array) => {
        if (done) return;
        const room = MAX_RESPONSE_BODY_BYTES - size;
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        chunks.push(part);
        size += part.length;
        if (size >= MAX_RESPONSE_BODY_BYTES) {
          // Enough for the output: a truncated body is not an error upstream.
          finish();
          res.destroy();
        }
      });
      res.on("end", finish);
      res.on("error", (err) => settle(() => reject(err)));
    });
    const onAbort = () => {
      settle(() => reject(new ProbeTimeout("timeout")));
      req.destroy();
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    req.on("error", (err) => settle(() => reject(err)));
    req.end();
  });
}

/**
 * Runs an httpGet probe once.
 * @param action the probe's httpGet
 * @param container the container (named ports)
 * @param podIP the default host
 * @param opts timeout, user agent, cancellation
 * @returns the outcome; never throws
 */
export async function httpGetProbe(
  action: HTTPGetAction,
  container: Container,
  podIP: string,
  opts: { timeoutSeconds: number; userAgent: string; signal: AbortSignal },
): Promise<ProbeOutcome> {
  let request: HttpProbeRequest;
  try {
    request = buildHttpProbeRequest(action, container, podIP, opts.userAgent);
  } catch (err) {
    return { result: "unknown", output: err instanceof Error ? err.message : String(err) };
  }
  const deadline = startDeadline(opts.signal, opts.timeoutSeconds * 1000);
  try {
    return await follow(request, deadline.signal, () => deadline.expired, opts.signal);
  } finally {
    deadline.clear();
  }
}

/** Sends the request and follows same-host redirects, then judges the last response. */
async function follow(
  request: HttpProbeRequest,
  signal: AbortSignal,
  expired: () => boolean,
  cancelled: AbortSignal,
): Promise<ProbeOutcome> {
  const origin = request.url.hostname;
  let url = request.url;
  let host = request.host;
  let res: Response;
  for (let sent = 1;; sent++) {
    try {
      res = await getOnce(url, request.headers, host, signal);
    } catch (err) {
      if (cancelled.aborted) return { result: "unknown", output: "probe cancelled" };
      const why = err instanceof ProbeTimeout || expired()
        ? "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        : err instanceof Error
        ? err.message
        : String(err);
      return { result: "failure", output: `Get ${JSON.stringify(url.href)}: ${why}` };
    }
    // An empty Location is no redirect (Go's client answers with the 3xx itself).
    if (!REDIRECT_CODES.has(res.status) || !res.location) break;
    let next: URL;
    try {
      next = new URL(res.location, url);
    } catch {
      return {
        result: "failure",
        output: `Get ${JSON.stringify(url.href)}: failed to parse Location header ${
          JSON.stringify(res.location)
        }`,
      };
    }
    // Another host ends the chain: its response is the answer (upstream's ErrUseLastResponse).
    if (next.hostname !== origin) break;
    if (sent >= MAX_REQUESTS) {
      return {
        result: "failure",
        output: `Get ${JSON.stringify(next.href)}: stopped after ${MAX_REQUESTS} redirects`,
      };
    }
    // Go keeps a custom Host only across relative redirects.
    if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(res.location)) host = "";
    url = next;
  }
  if (res.status >= 200 && res.status < 300) return { result: "success", output: res.body };
  if (res.status >= 300 && res.status < 400) {
    return { result: "success", output: `Probe terminated redirects, Response body: ${res.body}` };
  }
  return { result: "failure", output: `HTTP probe failed with statuscode: ${res.status}` };
}
