/**
 * {@link KubeClient} over HTTP: JSON in and out, every call behind the
 * `kubeAPIQPS`/`kubeAPIBurst` token bucket, a per-call timeout (watches
 * exempt), caller AbortSignals, metav1.Status errors turned into
 * {@link ApiError}, and client-go's two retries: a 429/5xx carrying
 * `Retry-After` is retried after that delay, and a 401 refreshes exec-plugin
 * or token-file credentials once.
 *
 * @module
 */

import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Credentials } from "./credentials.ts";
import type { KubeconfigAuth } from "./kubeconfig.ts";
import { TokenBucket } from "./rate_limiter.ts";
import { createTransport, type Transport, type TransportResponse } from "./transport.ts";
import type {
  CallOptions,
  DeleteOptions,
  KubeClient,
  ObjectList,
  PatchType,
  RequestObserver,
  WatchEvent,
} from "./types.ts";
import { WatchStreamError } from "./types.ts";
import { JsonObjectSplitter } from "./watch_stream.ts";
import { apiError, errorText } from "./_errors.ts";

/** Options for {@link createKubeClient}. */
export interface KubeClientOptions {
  /** The resolved kubeconfig (server, CA, credentials). */
  kubeconfig: KubeconfigAuth;
  /** `kubeAPIQPS`; default 50. `<= 0` disables the limiter. */
  qps?: number;
  /** `kubeAPIBurst`; default 100. */
  burst?: number;
  /** The User-Agent header; default `denolet`. */
  userAgent?: string;
  /** Per-call timeout in ms for everything but watches; default {@link DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Time source for the limiter, timeouts and Retry-After waits. */
  clock?: Clock;
  /** Told about each request's rate-limiter wait and outcome (metrics). */
  observer?: RequestObserver;
}

/** Default per-call timeout. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** How long past its `timeoutSeconds` a watch may stay silent before it is ended. */
export const WATCH_DEADLINE_SLACK_MS = 30_000;
/** How many times a 429/5xx with Retry-After is retried (client-go's default). */
export const MAX_RETRY_AFTER_RETRIES = 10;

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  json: "application/json-patch+json",
  apply: "application/apply-patch+yaml",
};

interface RequestSpec {
  method: string;
  path: string;
  body?: unknown;
  contentType?: string;
  opts?: CallOptions;
  watch?: boolean;
}

/**
 * Creates a REST client for the kubeconfig's apiserver.
 * @param opts kubeconfig, rate limits, user agent, timeout and clock
 * @returns a {@link KubeClient}; call `close()` when done
 */
export function createKubeClient(opts: KubeClientOptions): KubeClient {
  return new RestClient(opts);
}

/** A 2xx response whose body the caller reads, then calls `done`. */
interface Sent {
  res: TransportResponse;
  done: () => void;
}

/** A transport plus the requests using it, so a retired one closes once idle. */
interface Slot {
  transport: Transport;
  identity: string;
  inflight: number;
  retired: boolean;
}

class RestClient implements KubeClient {
  readonly #auth: KubeconfigAuth;
  readonly #limiter: TokenBucket;
  readonly #clock: Clock;
  readonly #userAgent: string;
  readonly #timeoutMs: number;
  readonly #observer: RequestObserver | undefined;
  #slot: Slot | undefined;
  #closed = false;

  constructor(opts: KubeClientOptions) {
    this.#auth = opts.kubeconfig;
    this.#clock = opts.clock ?? realClock;
    this.#limiter = new TokenBucket({
      qps: opts.qps ?? 50,
      burst: opts.burst ?? 100,
      clock: this.#clock,
    });
    this.#userAgent = opts.userAgent ?? "denolet";
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#observer = opts.observer;
  }

  get<T>(path: string, opts?: CallOptions): Promise<T> {
    return this.#json<T>({ method: "GET", path, ...withOpts(opts) });
  }

  async list<T>(path: string, opts?: CallOptions): Promise<ObjectList<T>> {
    const list = await this.#json<Partial<ObjectList<T>>>({
      method: "GET",
      path,
      ...withOpts(opts),
    });
    return { items: list?.items ?? [], metadata: list?.metadata ?? {} };
  }

  create<T>(path: string, body: unknown, opts?: CallOptions): Promise<T> {
    return this.#json<T>({ method: "POST", path, body, ...withOpts(opts) });
  }

  update<T>(path: string, body: unknown, opts?: CallOptions): Promise<T> {
    return this.#json<T>({ method: "PUT", path, body, ...withOpts(opts) });
  }

  patch<T>(path: string, body: unknown, type: PatchType, opts?: CallOptions): Promise<T> {
    let o = opts;
    if (type === "apply" && !opts?.query?.fieldManager) {
      // The apiserver rejects an apply patch without a field manager.
      o = { ...opts, query: { ...opts?.query, fieldManager: this.#userAgent.split("/")[0]! } };
    }
    return this.#json<T>({
      method: "PATCH",
      path,
      body,
      contentType: PATCH_CONTENT_TYPES[type],
      ...withOpts(o),
    });
  }

  async delete(path: string, body?: DeleteOptions, opts?: CallOptions): Promise<void> {
    const spec: RequestSpec = { method: "DELETE", path, ...withOpts(opts) };
    if (body !== undefined) {
      spec.body = { apiVersion: "v1", kind: "DeleteOptions", ...body };
    }
    await this.#json<unknown>(spec);
  }

  async watch<T>(
    path: string,
    onEvent: (event: WatchEvent<T>) => void,
    opts?: CallOptions,
  ): Promise<void> {
    const query: Record<string, string> = { ...opts?.query, watch: "true" };
    // The apiserver ends a watch after timeoutSeconds; if that end never
    // arrives (a silently dropped connection), stop waiting a little later so
    // the caller re-watches instead of hanging.
    const deadline = new AbortController();
    const timeoutSeconds = Number(query.timeoutSeconds);
    const timer = query.timeoutSeconds !== undefined && Number.isFinite(timeoutSeconds)
      ? this.#clock.setTimeout(
        () => deadline.abort(),
        timeoutSeconds * 1000 + WATCH_DEADLINE_SLACK_MS,
      )
      : undefined;
    const signal = opts?.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
    let sent: Sent | undefined;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    try {
      sent = await this.#send({
        method: "GET",
        path,
        opts: { ...opts, query, signal },
        watch: true,
      });
      reader = sent.res.body?.getReader();
      const splitter = new JsonObjectSplitter();
      for (;;) {
        if (!reader) break;
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (signal.aborted) return;
          throw new WatchStreamError(`GET ${path} (watch): stream broke: ${errorText(err)}`, {
            cause: err,
          });
        }
        const { done, value } = chunk;
        if (done) break;
        for (const text of splitter.push(value)) {
          let event: WatchEvent<T>;
          try {
            event = JSON.parse(text);
          } catch (err) {
            throw new Error(`GET ${path} (watch): invalid event JSON: ${err}`, { cause: err });
          }
          onEvent(event);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof Error && err.message.startsWith(`GET ${path}`)) throw err;
      throw new Error(`GET ${path} (watch): ${errorText(err)}`, { cause: err });
    } finally {
      timer?.cancel();
      await reader?.cancel().catch(() => {});
      sent?.done();
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#slot) {
      this.#slot.retired = true;
      this.#slot.transport.close();
      this.#slot = undefined;
    }
  }

  /** Sends a request and parses its JSON answer (undefined for an empty body). */
  async #json<T>(spec: RequestSpec): Promise<T> {
    const { res, done } = await this.#send(spec);
    let text: string;
    try {
      text = await this.#readText(res, spec);
    } finally {
      done();
    }
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new Error(`${spec.method} ${spec.path}: invalid JSON in response: ${err}`, {
        cause: err,
      });
    }
  }

  async #readText(res: TransportResponse, spec: RequestSpec): Promise<string> {
    try {
      return await res.text();
    } catch (err) {
      throw new Error(`${spec.method} ${spec.path}: reading response: ${errorText(err)}`, {
        cause: err,
      });
    }
  }

  /**
   * Rate limits, authenticates and sends; returns a 2xx response with its body
   * unread and `done` to call once it is read (stops the timeout, frees the
   * connection slot), or throws ApiError / a connection Error naming method
   * and path.
   */
  async #send(spec: RequestSpec): Promise<Sent> {
    const { method, path } = spec;
    const callerSignal = spec.opts?.signal;
    const url = new URL(this.#auth.server + path);
    for (const [k, v] of Object.entries(spec.opts?.query ?? {})) url.searchParams.set(k, v);
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    let refreshedAuth = false;
    for (let attempt = 0;; attempt++) {
      if (this.#closed) throw new Error(`${method} ${path}: client is closed`);
      const queuedAt = this.#clock.now();
      await this.#limiter.wait(callerSignal);
      this.#observer?.rateLimited(method, url.host, this.#clock.now() - queuedAt);
      let creds: Credentials;
      try {
        creds = await this.#auth.credentials.get();
      } catch (err) {
        throw new Error(`${method} ${path}: ${errorText(err)}`, { cause: err });
      }
      const headers: Record<string, string> = {
        "Accept": "application/json",
        "User-Agent": this.#userAgent,
      };
      if (spec.contentType !== undefined || body !== undefined) {
        headers["Content-Type"] = spec.contentType ?? "application/json";
      }
      if (creds.token !== undefined) headers["Authorization"] = `Bearer ${creds.token}`;
      else if (creds.basicAuth !== undefined) {
        const { username, password } = creds.basicAuth;
        headers["Authorization"] = `Basic ${btoa(`${username}:${password}`)}`;
      }
      const slot = this.#slotFor(creds);
      const timeout = new AbortController();
      const timer = spec.watch ? undefined : this.#clock.setTimeout(
        () =>
          timeout.abort(new DOMException(`timed out after ${this.#timeoutMs}ms`, "TimeoutError")),
        this.#timeoutMs,
      );
      const signal = callerSignal
        ? AbortSignal.any([callerSignal, timeout.signal])
        : timeout.signal;
      slot.inflight++;
      let res: TransportResponse;
      try {
        res = await slot.transport.send({ method, url, headers, signal, ...bodyField(body) });
      } catch (err) {
        this.#observer?.result("<error>", method, url.host);
        timer?.cancel();
        this.#release(slot);
        const why = timeout.signal.aborted ? String(timeout.signal.reason.message) : errorText(err);
        throw new Error(`${method} ${path}: ${why}`, { cause: err });
      }
      this.#observer?.result(String(res.status), method, url.host);
      if (res.status >= 200 && res.status < 300) {
        // The body is read by the caller; the timer keeps guarding that read.
        let released = false;
        const done = () => {
          if (released) return;
          released = true;
          timer?.cancel();
          this.#release(slot);
        };
        return { res, done };
      }
      let text = "";
      try {
        text = await this.#readText(res, spec);
      } finally {
        timer?.cancel();
        this.#release(slot);
      }
      const retryAfter = Number(res.header("Retry-After"));
      if (
        (res.status === 429 || res.status >= 500) && res.header("Retry-After") !== null &&
        Number.isFinite(retryAfter) && attempt < MAX_RETRY_AFTER_RETRIES
      ) {
        await this.#clock.sleep(Math.max(1, retryAfter) * 1000, callerSignal);
        continue;
      }
      if (res.status === 401 && !refreshedAuth && this.#auth.credentials.invalidate()) {
        refreshedAuth = true;
        continue;
      }
      throw apiError(method, path, res, text);
    }
  }

  /** The transport for the credentials' TLS identity; a new cert retires the old one. */
  #slotFor(creds: Credentials): Slot {
    const identity = `${creds.cert ?? ""}\0${creds.key ?? ""}`;
    if (this.#slot?.identity === identity) return this.#slot;
    const old = this.#slot;
    const tls: Parameters<typeof createTransport>[0] = {
      insecureSkipVerify: this.#auth.insecureSkipTLSVerify,
    };
    if (this.#auth.caCert !== undefined) tls.caCert = this.#auth.caCert;
    if (creds.cert !== undefined && creds.key !== undefined) {
      tls.cert = creds.cert;
      tls.key = creds.key;
    }
    if (this.#auth.proxyUrl !== undefined) tls.proxyUrl = this.#auth.proxyUrl;
    this.#slot = { transport: createTransport(tls), identity, inflight: 0, retired: false };
    if (old) {
      old.retired = true;
      if (old.inflight === 0) old.transport.close();
    }
    return this.#slot;
  }

  #release(slot: Slot): void {
    slot.inflight--;
    if (slot.retired && slot.inflight === 0 && slot !== this.#slot) slot.transport.close();
  }
}

function withOpts(opts: CallOptions | undefined): { opts?: CallOptions } {
  return opts === undefined ? {} : { opts };
}

function bodyField(body: string | undefined): { body?: string } {
  return body === undefined ? {} : { body };
}
