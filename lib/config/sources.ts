/**
 * Wiring for the agent: builds the mux and starts the sources that the flags
 * configure (upstream's makePodSourceConfig), so `main.ts` stays free of logic.
 *
 * @module
 */

import { API_SOURCE, FILE_SOURCE, HTTP_SOURCE } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { KubeClient } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import { startApiSource } from "./api_source.ts";
import { FileSource } from "./file_source.ts";
import { HttpSource } from "./http_source.ts";
import { PodConfig } from "./mux.ts";
import type { PodUpdate, SourceErrorSink } from "./types.ts";

/** Options for {@link startPodSources}, named after the kubelet flags. */
export interface PodSourcesOptions {
  nodeName: string;
  /** `--pod-manifest-path`; empty for no file source. */
  podManifestPath: string;
  /** `--manifest-url`; empty for no HTTP source. */
  manifestUrl: string;
  /** `--manifest-url-header`, each name with all its values. */
  manifestUrlHeader?: Record<string, string[]>;
  /** `--file-check-frequency` in ms; default 20s. */
  fileCheckFrequencyMs?: number;
  /** `--http-check-frequency` in ms; default 20s. */
  httpCheckFrequencyMs?: number;
  clock?: Clock;
  logger?: Logger;
  /**
   * Receives every pod update, synchronously and in order; without it, the
   * updates queue for `config.updates()`.
   */
  onUpdate?: (update: PodUpdate) => void;
  /** Receives every rejected manifest (besides the log). */
  onError?: SourceErrorSink;
  /** Watch the manifest path for changes; default true. */
  watch?: boolean;
  /**
   * The apiserver (`--kubeconfig`): when set, the pods bound to `nodeName`
   * are listed and watched as the "api" source.
   */
  client?: KubeClient;
  /** Receives the API source's mirror pods after every change there. */
  onMirrorPods?: (pods: Pod[]) => void;
}

/** The running sources and their mux. */
export interface PodSources {
  /** The mux; its merged state is every pod the sources currently hold. */
  readonly config: PodConfig;
  /** Resolves once every configured source delivered its first set. */
  readonly ready: Promise<void>;
  /**
   * True once every configured source delivered (always true with none), so
   * that cleaning up pods no source mentions is safe.
   */
  seenAllSources(): boolean;
  /** Stops polling and watching. */
  stop(): void;
}

/**
 * Creates the mux and starts the file, HTTP and apiserver sources that are
 * configured.
 * @param opts flags, node name, update sink, clock and logger
 * @returns the running sources; their first reads continue in the background
 */
export function startPodSources(opts: PodSourcesOptions): PodSources {
  const log = opts.logger ?? silentLogger;
  const clock = opts.clock ?? realClock;
  const config = new PodConfig({
    log,
    clock,
    ...(opts.onUpdate ? { onUpdate: opts.onUpdate } : {}),
    ...(opts.onMirrorPods ? { onMirrorPods: opts.onMirrorPods } : {}),
  });
  const stoppers: (() => void)[] = [];
  const starts: Promise<void>[] = [];
  const common = { nodeName: opts.nodeName, clock, log };
  const onError = opts.onError ? { onError: opts.onError } : {};
  if (opts.podManifestPath) {
    log.info("Adding static pod path", { path: opts.podManifestPath });
    const file = new FileSource({
      ...common,
      ...onError,
      path: opts.podManifestPath,
      onPods: config.channel(FILE_SOURCE),
      ...(opts.fileCheckFrequencyMs ? { checkFrequencyMs: opts.fileCheckFrequencyMs } : {}),
      ...(opts.watch === false ? { watch: false } : {}),
    });
    starts.push(file.start());
    stoppers.push(() => file.stop());
  }
  if (opts.manifestUrl) {
    log.info("Adding pod URL with HTTP header", {
      url: opts.manifestUrl,
      headers: Object.keys(opts.manifestUrlHeader ?? {}),
    });
    const headers = new Headers();
    for (const [name, values] of Object.entries(opts.manifestUrlHeader ?? {})) {
      for (const value of values) headers.append(name, value);
    }
    const http = new HttpSource({
      ...common,
      ...onError,
      url: opts.manifestUrl,
      headers,
      onPods: config.channel(HTTP_SOURCE),
      ...(opts.httpCheckFrequencyMs ? { checkFrequencyMs: opts.httpCheckFrequencyMs } : {}),
    });
    starts.push(http.start());
    stoppers.push(() => http.stop());
  }
  if (opts.client) {
    log.info("Adding apiserver pod source", { node: opts.nodeName });
    const api = startApiSource({
      client: opts.client,
      nodeName: opts.nodeName,
      onPods: config.channel(API_SOURCE),
      clock,
      logger: log,
    });
    // While the apiserver cannot be listed, `ready` stays pending and cleanup waits, as upstream's sourcesReady.
    starts.push(api.synced);
    stoppers.push(() => api.stop());
  }
  return {
    config,
    ready: Promise.all(starts).then(() => {}),
    seenAllSources: () => config.seenAllSources(),
    stop: () => stoppers.forEach((stop) => stop()),
  };
}
