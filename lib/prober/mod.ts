/**
 * Probes: liveness, readiness and startup probes of every container, with
 * upstream's timing, thresholds and gating, and the exec, httpGet,
 * tcpSocket and grpc handlers.
 *
 * ```ts
 * const probes = new ProbeManager({ runtime, clock, logger, hostIP });
 * probes.onResult((u) => wakePod(u.podUID));      // a result changed: sync the pod
 * probes.addPod(pod);                            // on ADD
 * // in syncPod, before computing actions:
 * const verdicts = { liveness: probes.liveness(uid), startup: probes.startup(uid) };
 * // after the sync, with the runtime status it used:
 * probes.updateContainers(pod, runtime);
 * const ready = probes.readiness(uid), started = probes.started(uid);
 * probes.removePod(uid);                         // when the pod is gone
 * const text = probes.renderProbeMetrics();      // GET /metrics/probes
 * ```
 *
 * @module
 */

export {
  DEFAULT_PROBE_USER_AGENT,
  ProbeManager,
  type ProbeManagerOptions,
  type ProbeResultListener,
} from "./manager.ts";
export { type ContainerView, MAX_PROBE_ATTEMPTS, ProbeWorker, type WorkerHost } from "./worker.ts";
export { ProbeMetrics, type ProbeSeriesLabels } from "./metrics.ts";
export {
  execProbe,
  grpcProbe,
  httpGetProbe,
  MAX_PROBE_OUTPUT_BYTES,
  runProbe,
  tcpSocketProbe,
} from "./handlers/mod.ts";
export {
  PROBE_DEFAULTS,
  type ProbeOutcome,
  type ProbeResultKind,
  type ProbeResultUpdate,
  type ProbeResultView,
  type ProbeRunner,
  type ProbeTarget,
  type ProbeTiming,
  probeTiming,
  type ProbeType,
  type ProbeVerdict,
} from "./types.ts";
