/**
 * The HTTP pod source (upstream pkg/kubelet/config/http.go): polls
 * `--manifest-url` every `checkFrequencyMs` (upstream's `httpCheckFrequency`,
 * 20s) and hands the mux the pods it serves.
 *
 * The body may be a single Pod, a PodList, or multi-document YAML of either.
 * As upstream: a body identical to the last one is not re-parsed and sends
 * nothing; an empty body sends an empty set (so the source counts as seen)
 * and is reported; a failed request, a non-200 status or a body that does not
 * decode and validate as a whole is reported and the last good set stays.
 *
 * @module
 */

import type { Clock, Timer } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import { staticPodsFromManifest } from "./static_pod.ts";
import { HTTP_SOURCE } from "../api/pod.ts";
import type { PodSetSink, SourceErrorSink } from "./types.ts";

/** Upstream's default `httpCheckFrequency`. */
export const DEFAULT_HTTP_CHECK_FREQUENCY_MS = 20_000;

/** Options for {@link HttpSource}. */
export interface HttpSourceOptions {
  /** `--manifest-url`. */
  url: string;
  /** `--manifest-url-header` values, sent with every request. */
  headers?: HeadersInit;
  /** The node's name, for static pod names. */
  nodeName: string;
  /** Receives the complete pod set when the served manifest changes. */
  onPods: PodSetSink;
  /** Receives every failed poll. */
  onError?: SourceErrorSink;
  clock?: Clock;
  log?: Logger;
  /** Poll period; default 20s. */
  checkFrequencyMs?: number;
  /** Per-request timeout; default 10s. */
  timeoutMs?: number;
  /** The fetch implementation; the global one by default. */
  fetch?: typeof fetch;
}

/** Polls a manifest URL; see the module doc. */
/** Logged for a static pod whose UID cannot be upstream's (lib/config/static_pod.ts). */
const OWN_UID_WARNING = "Static pod UID is not the one the upstream kubelet derives for this " +
  "manifest; the upstream kubelet would not adopt its containers";

export class HttpSource {
  readonly #opts: HttpSourceOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** UIDs already warned about by {@link OWN_UID_WARNING}, so each is logged once. */
  readonly #ownUIDsWarned = new Set<string>();
  readonly #abort = new AbortController();
  #timer: Timer | undefined;
  #lastBody: string | undefined;
  #polling: Promise<void> | undefined;
  #lastLogged: string | undefined;

  /** @param opts url, headers, node name, sinks and timing */
  constructor(opts: HttpSourceOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = (opts.log ?? silentLogger).with({ source: HTTP_SOURCE, url: opts.url });
  }

  /**
   * Polls once, then every `checkFrequencyMs`.
   * @returns once the first poll finished
   */
  async start(): Promise<void> {
    await this.poll();
    if (this.#abort.signal.aborted) return;
    this.#timer = this.#clock.setInterval(
      () => void this.poll(),
      this.#opts.checkFrequencyMs ?? DEFAULT_HTTP_CHECK_FREQUENCY_MS,
    );
  }

  /**
   * Fetches the URL once and hands over the pods if the body changed. A poll
   * requested while one runs joins it.
   * @returns once the poll finished; never rejects
   */
  poll(): Promise<void> {
    this.#polling ??= this.#pollOnce().finally(() => (this.#polling = undefined));
    return this.#polling;
  }

  /** Stops polling and aborts a request under way. */
  stop(): void {
    this.#timer?.cancel();
    this.#abort.abort(new Error("http source stopped"));
  }

  async #pollOnce(): Promise<void> {
    const url = this.#opts.url;
    let body: string;
    try {
      const signal = AbortSignal.any([
        this.#abort.signal,
        AbortSignal.timeout(this.#opts.timeoutMs ?? 10_000),
      ]);
      const init: RequestInit = { signal };
      if (this.#opts.headers !== undefined) init.headers = this.#opts.headers;
      const res = await (this.#opts.fetch ?? fetch)(url, init);
      body = await res.text();
      if (res.status !== 200) {
        return this.#fail(`${url}: ${res.status} ${res.statusText}`.trimEnd());
      }
    } catch (err) {
      if (this.#abort.signal.aborted) return;
      return this.#fail(`request failed: ${err instanceof Error ? err.message : err}`, err);
    }
    if (body.length === 0) {
      this.#lastBody = body;
      this.#send([]);
      return this.#fail(`zero-length data received from ${url}`);
    }
    if (body === this.#lastBody) return;
    // Remember the body before decoding, as upstream does: a bad body is reported once, not per poll.
    this.#lastBody = body;
    try {
      const pods = staticPodsFromManifest(body, {
        nodeName: this.#opts.nodeName,
        source: "http",
        origin: url,
        now: this.#clock.now(),
        onOwnUID: (pod, podUID) => this.#warnOwnUID(pod, podUID),
      });
      this.#lastLogged = undefined;
      this.#send(pods);
    } catch (err) {
      this.#fail(err instanceof Error ? err.message : String(err), err);
    }
  }

  #send(pods: Parameters<PodSetSink>[0]): void {
    if (this.#abort.signal.aborted) return;
    try {
      this.#opts.onPods(pods);
    } catch (err) {
      this.#log.error("Failed to hand over pods", err);
    }
  }

  #warnOwnUID(pod: string, podUID: string): void {
    if (this.#ownUIDsWarned.has(podUID)) return;
    this.#ownUIDsWarned.add(podUID);
    this.#log.warn(OWN_UID_WARNING, { pod, podUID });
  }

  #fail(reason: string, cause?: unknown): void {
    if (this.#lastLogged !== reason) {
      this.#log.error("Failed to read pods from URL", cause ?? reason);
    }
    this.#lastLogged = reason;
    try {
      this.#opts.onError?.({ source: HTTP_SOURCE, file: this.#opts.url, reason, cause });
    } catch (err) {
      this.#log.error("Manifest error callback failed", err);
    }
  }
}
