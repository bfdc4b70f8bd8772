/**
 * Pod sources and the config mux: where the node learns which pods it should
 * run. Static pods come from manifest files (`--pod-manifest-path`) and a URL
 * (`--manifest-url`), the cluster's pods from the apiserver (list + watch of
 * `spec.nodeName=<node>`); each source hands its complete set to
 * {@link PodConfig}, which emits ADD/UPDATE/REMOVE/RECONCILE/DELETE updates
 * for the sync loop and keeps the apiserver's mirror pods apart.
 *
 * `startPodSources` wires it all from the flags; the parts are exported too:
 *
 * ```ts
 * import { FileSource, PodConfig } from "./lib/config/mod.ts";
 * const config = new PodConfig({ log });
 * const files = new FileSource({
 *   path: "/etc/kubernetes/manifests",
 *   nodeName: "node-1",
 *   onPods: config.channel("file"),
 *   onError: (e) => log.warn("bad manifest", { file: e.file, reason: e.reason }),
 * });
 * await files.start();
 * for await (const update of config.updates()) handle(update);
 * ```
 *
 * @module
 */

export type { PodOperation, PodSetSink, PodUpdate, SourceError, SourceErrorSink } from "./types.ts";
export {
  ManifestError,
  type ManifestPod,
  parseManifest,
  parseManifestDocuments,
  type ParseManifestOptions,
} from "./manifest.ts";
export {
  InvalidPodError,
  makeStaticPod,
  staticPodName,
  type StaticPodOptions,
  staticPodsFromManifest,
  staticPodUID,
} from "./static_pod.ts";
export {
  DEFAULT_FILE_CHECK_FREQUENCY_MS,
  FileSource,
  type FileSourceOptions,
} from "./file_source.ts";
export {
  DEFAULT_HTTP_CHECK_FREQUENCY_MS,
  HttpSource,
  type HttpSourceOptions,
} from "./http_source.ts";
export {
  API_BACKOFF,
  type ApiSource,
  type ApiSourceOptions,
  MIN_WATCH_TIMEOUT_SECONDS,
  PODS_PATH,
  startApiSource,
} from "./api_source.ts";
export { PodConfig, type PodConfigOptions } from "./mux.ts";
export { type PodSources, type PodSourcesOptions, startPodSources } from "./sources.ts";
