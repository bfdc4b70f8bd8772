/**
 * How bytes reach the apiserver. The default is `fetch` over a
 * `Deno.HttpClient` carrying the cluster CA and the client certificate
 * (HTTP/2 when the server offers it, so watches share one connection). Deno's
 * HttpClient cannot skip certificate verification, so a kubeconfig with
 * `insecure-skip-tls-verify: true` goes through `node:https` instead.
 *
 * @module
 */

import type http from "node:http";
import type https from "node:https";

/** node:http(s) load on first use: most kubeconfigs never need them. */
let nodeModules:
  | Promise<[typeof http, typeof https, typeof import("node:stream").Readable]>
  | undefined;
function loadNodeModules() {
  nodeModules ??= Promise.all([import("node:http"), import("node:https"), import("node:stream")])
    .then(([h, s, st]) => [h.default, s.default, st.Readable]);
  return nodeModules;
}

/** One HTTP request as the REST client builds it. */
export interface TransportRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

/** The parts of a response the REST client reads. */
export interface TransportResponse {
  status: number;
  statusText: string;
  header(name: string): string | null;
  /** The whole body as text (native reads: cheaper than reading `body` from JS). */
  text(): Promise<string>;
  /** The body as a stream, for watches; use either this or `text()`. */
  body: ReadableStream<Uint8Array> | null;
}

/** Sends requests over pooled connections with one TLS identity. */
export interface Transport {
  send(req: TransportRequest): Promise<TransportResponse>;
  /** Drops pooled connections. */
  close(): void;
}

/** TLS settings of a transport. */
export interface TlsSettings {
  /** PEM CA bundle; the system roots when absent. */
  caCert?: string;
  /** PEM client certificate chain (with `key`). */
  cert?: string;
  /** PEM private key of `cert`. */
  key?: string;
  /** Skip server certificate verification (kubeconfig `insecure-skip-tls-verify`). */
  insecureSkipVerify?: boolean;
  /** HTTP(S) proxy URL (kubeconfig `proxy-url`). */
  proxyUrl?: string;
}

/**
 * Creates the transport for `tls`: fetch + Deno.HttpClient, or node:https
 * when verification must be skipped.
 * @param tls CA, client identity, verification and proxy settings
 * @returns a transport the caller must close
 * @throws Error when Deno rejects the PEM material (names the failing option)
 */
export function createTransport(tls: TlsSettings): Transport {
  if (tls.insecureSkipVerify) return new NodeTransport(tls);
  return new FetchTransport(tls);
}

class FetchTransport implements Transport {
  readonly #client: Deno.HttpClient;

  constructor(tls: TlsSettings) {
    const opts: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {};
    if (tls.caCert !== undefined) opts.caCerts = [tls.caCert];
    if (tls.cert !== undefined && tls.key !== undefined) {
      opts.cert = tls.cert;
      opts.key = tls.key;
    }
    if (tls.proxyUrl !== undefined) opts.proxy = { url: tls.proxyUrl };
    try {
      this.#client = Deno.createHttpClient(opts as Deno.CreateHttpClientOptions);
    } catch (err) {
      throw new Error(`cannot create HTTP client (CA, client certificate or key): ${err}`, {
        cause: err,
      });
    }
  }

  async send(req: TransportRequest): Promise<TransportResponse> {
    const init: RequestInit & { client: Deno.HttpClient } = {
      method: req.method,
      headers: req.headers,
      signal: req.signal,
      client: this.#client,
    };
    if (req.body !== undefined) init.body = req.body;
    const res = await fetch(req.url, init);
    return {
      status: res.status,
      statusText: res.statusText,
      header: (name) => res.headers.get(name),
      text: () => res.text(),
      body: res.body,
    };
  }

  close(): void {
    this.#client.close();
  }
}

class NodeTransport implements Transport {
  readonly #tls: TlsSettings;
  #agent: https.Agent | undefined;
  #closed = false;

  constructor(tls: TlsSettings) {
    this.#tls = tls;
  }

  async send(req: TransportRequest): Promise<TransportResponse> {
    const [http, https, Readable] = await loadNodeModules();
    if (this.#closed) throw new Error("transport is closed");
    if (this.#agent === undefined) {
      const opts: https.AgentOptions = { keepAlive: true, rejectUnauthorized: false };
      if (this.#tls.caCert !== undefined) opts.ca = this.#tls.caCert;
      if (this.#tls.cert !== undefined && this.#tls.key !== undefined) {
        opts.cert = this.#tls.cert;
        opts.key = this.#tls.key;
      }
      this.#agent = new https.Agent(opts);
    }
    const agent = this.#agent;
    return await new Promise((resolve, reject) => {
      const mod = req.url.protocol === "http:" ? http : https;
      const headers: Record<string, string> = { ...req.headers };
      if (req.body !== undefined) {
        headers["Content-Length"] = String(new TextEncoder().encode(req.body).length);
      }
      const cr = mod.request(req.url, {
        method: req.method,
        headers,
        agent: req.url.protocol === "http:" ? undefined : agent,
        signal: req.signal,
      }, (res) => {
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          header: (name) => {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
          },
          get body() {
            return Readable.toWeb(res) as ReadableStream<Uint8Array>;
          },
          text: () =>
            new Promise<string>((ok, fail) => {
              let text = "";
              res.setEncoding("utf8");
              res.on("data", (chunk: string) => (text += chunk));
              res.on("end", () => ok(text));
              res.on("error", fail);
            }),
        });
      });
      cr.on("error", reject);
      if (req.body !== undefined) cr.write(req.body);
      cr.end();
    });
  }

  close(): void {
    this.#closed = true;
    this.#agent?.destroy();
  }
}
