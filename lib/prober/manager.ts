/**
 * The probe manager, as upstream's prober_manager.go plus its results
 * managers: one {@link ProbeWorker} per (pod, container, probe type), results
 * cached per container id, listeners told when a result changes, and the
 * `started`/`ready` values status generation needs.
 *
 * The sync loop drives it: {@link ProbeManager.addPod} when a pod is
 * admitted, {@link ProbeManager.updateContainers} after each sync with the
 * runtime status it used, {@link ProbeManager.removePod} when the pod is gone;
 * a result change ({@link ProbeManager.onResult}) should wake the pod's
 * worker.
 *
 * @module
 */

import { isRestartableInitContainer, podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { RuntimeService } from "../cri/types.ts";
import type { RuntimePodStatus } from "../kuberuntime/types.ts";
import { kubeUserAgent } from "../probe/mod.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { runProbe as defaultRunProbe } from "./handlers/mod.ts";
import { ProbeMetrics } from "./metrics.ts";
import type {
  ProbeResultKind,
  ProbeResultUpdate,
  ProbeResultView,
  ProbeRunner,
  ProbeType,
  ProbeVerdict,
} from "./types.ts";
import { ProbeWorker, type WorkerHost } from "./worker.ts";
import {
  containerSpec,
  containerViews,
  isStarted,
  type PodProbes as PodEntry,
  PROBE_TYPES,
  readyView,
  resultsView,
  SPEC_FIELD,
  startedView,
  verdicts,
  workerKey,
} from "./_pod_probes.ts";
import type { EventRecorder } from "../events/types.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";
import { podReference } from "../events/recorder.ts";

/** `kube-probe/<major>.<minor>` (lib/probe `kubeUserAgent`). */
export const DEFAULT_PROBE_USER_AGENT = kubeUserAgent("probe");

/** Options for {@link ProbeManager}. */
export interface ProbeManagerOptions {
  /** Runs exec probes (CRI ExecSync). */
  runtime: RuntimeService;
  /** Timers of every worker; the real clock by default. */
  clock?: Clock;
  logger?: Logger;
  /** The node IP: the pod IP of host-network pods (127.0.0.1 when empty). */
  hostIP?: string;
  /** Default {@link DEFAULT_PROBE_USER_AGENT}. */
  userAgent?: string;
  /** Runs one probe; the real handlers by default (tests pass fakes). */
  runProbe?: ProbeRunner;
  /** In [0, 1): spreads first probes soon after start-up; Math.random by default. */
  random?: () => number;
  /** Unhealthy events for failed probes; dropped when unset. */
  events?: EventRecorder;
}

/** A listener for result changes; must not throw or block. */
export type ProbeResultListener = (update: ProbeResultUpdate) => void;

/** Probes every container that has probes, and keeps their results. */
export class ProbeManager {
  readonly #opts: ProbeManagerOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #runProbe: ProbeRunner;
  readonly #random: () => number;
  readonly #started: number;
  readonly #pods = new Map<string, PodEntry>();
  readonly #listeners = new Set<ProbeResultListener>();
  readonly #metrics = new ProbeMetrics();

  /** @param opts runtime, clock, logger, node IP and test seams */
  constructor(opts: ProbeManagerOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.logger ?? silentLogger;
    this.#runProbe = opts.runProbe ?? defaultRunProbe;
    this.#random = opts.random ?? Math.random;
    this.#started = this.#clock.monotonic();
  }

  /**
   * Starts workers for every probe of the pod's containers and sidecars
   * (restartable init containers). Calling it again for a known pod updates
   * the pod (e.g. its deletion timestamp) and starts only missing workers.
   * @param pod the pod; `metadata.uid` is required
   */
  addPod(pod: Pod): void {
    this.#startWorkers(this.#entry(pod));
  }

  /**
   * Stops the pod's workers and forgets its results (no change is reported).
   * @param uid the pod's UID
   */
  removePod(uid: string): void {
    const entry = this.#pods.get(uid);
    if (!entry) return;
    this.#pods.delete(uid);
    for (const w of [...entry.workers.values()]) w.stop();
  }

  /**
   * Stops the liveness and startup workers of a pod that is terminating, so
   * no probe kills a container that is shutting down (upstream's
   * StopLivenessAndStartup); readiness keeps being probed.
   * @param uid the pod's UID
   */
  stopLivenessAndStartup(uid: string): void {
    const entry = this.#pods.get(uid);
    if (!entry) return;
    for (const w of [...entry.workers.values()]) if (w.type !== "Readiness") w.stop();
  }

  /**
   * Removes every pod not in `desired` (housekeeping, as upstream's CleanupPods).
   * @param desired the UIDs that should keep their probes
   */
  cleanupPods(desired: ReadonlySet<string>): void {
    for (const uid of [...this.#pods.keys()]) if (!desired.has(uid)) this.removePod(uid);
  }

  /**
   * Tells the workers which container instances the runtime holds. A new
   * container id resets its workers; a stopped container is no longer
   * probed; a started container that is not ready yet gets a readiness probe
   * at once (upstream's UpdatePodStatus). Adds the pod when it is unknown.
   * @param pod the pod spec
   * @param runtime its runtime status (as the sync used it)
   */
  updateContainers(pod: Pod, runtime: RuntimePodStatus): void {
    const known = this.#pods.has(pod.metadata.uid!);
    const entry = this.#entry(pod);
    const views = containerViews(runtime);
    entry.views = views;
    const sandbox = runtime.sandboxes[0];
    if (sandbox) {
      entry.podIP = sandbox.hostNetwork || pod.spec.hostNetwork
        ? this.#opts.hostIP || "127.0.0.1"
        : sandbox.ip;
    }
    // Only for a pod seen here first, and after the views, so its workers
    // probe at once what they find. A known pod's workers that ended (or
    // were stopped for termination) stay ended, as upstream's.
    if (!known) this.#startWorkers(entry);
    for (const [name, view] of views) {
      if (view.state !== "running" || !isStarted(entry, name, view.id)) continue;
      if (entry.results.Readiness.get(view.id)?.result === "success") continue;
      entry.workers.get(workerKey(name, "Readiness"))?.trigger();
    }
  }

  /**
   * Liveness verdicts by container id, for the planner (a failure means kill).
   * @param uid the pod's UID
   * @returns a snapshot; ids without a verdict are absent
   */
  liveness(uid: string): ReadonlyMap<string, ProbeVerdict> {
    return verdicts(this.#pods.get(uid), "Liveness");
  }

  /**
   * Startup verdicts by container id, for the planner; a startup probe that
   * has not decided yet has no entry.
   * @param uid the pod's UID
   * @returns a snapshot
   */
  startup(uid: string): ReadonlyMap<string, ProbeVerdict> {
    return verdicts(this.#pods.get(uid), "Startup");
  }

  /**
   * The container status `started` by container id, for every container the
   * last {@link updateContainers} saw: running, and its startup probe passed
   * (or it has none).
   * @param uid the pod's UID
   * @returns a snapshot
   */
  started(uid: string): ReadonlyMap<string, boolean> {
    return startedView(this.#pods.get(uid));
  }

  /**
   * The container status `ready` by container id, for every container the
   * last {@link updateContainers} saw, as upstream's UpdatePodStatus: an app
   * container or sidecar is ready when started, running and its readiness
   * probe passed (or it has none); a regular init container once it exited 0.
   * @param uid the pod's UID
   * @returns a snapshot
   */
  readiness(uid: string): ReadonlyMap<string, boolean> {
    return readyView(this.#pods.get(uid));
  }

  /**
   * Registers a listener for result changes (including the initial result a
   * new container gets), as upstream's results-manager updates channel.
   * @param listener called synchronously with each change
   * @returns a function that unregisters it
   */
  onResult(listener: ProbeResultListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /**
   * Every probe's result for the current instance of its container (the node page).
   * @param uid the pod's UID
   * @returns one entry per running probe worker; [] for an unknown pod
   */
  results(uid: string): ProbeResultView[] {
    return resultsView(this.#pods.get(uid));
  }

  /** @returns `/metrics/probes`: prober_probe_total and prober_probe_duration_seconds */
  renderProbeMetrics(): string {
    return this.#metrics.render();
  }

  /** How many workers run, over all pods. */
  get workerCount(): number {
    let n = 0;
    for (const e of this.#pods.values()) n += e.workers.size;
    return n;
  }

  /** Resolves when no probe of any worker is in flight (tests, shutdown). */
  async settled(): Promise<void> {
    // A finished probe may queue another (a missed tick): wait until none runs.
    for (;;) {
      const busy = [...this.#pods.values()].flatMap((e) => [...e.workers.values()])
        .filter((w) => w.busy);
      if (busy.length === 0) return;
      await Promise.all(busy.map((w) => w.idle));
    }
  }

  /** Stops every worker of every pod. */
  stop(): void {
    for (const uid of [...this.#pods.keys()]) this.removePod(uid);
  }

  /** The pod's entry, created when new; always holding the latest pod object. */
  #entry(pod: Pod): PodEntry {
    const uid = pod.metadata.uid!;
    let entry = this.#pods.get(uid);
    if (!entry) {
      entry = {
        pod,
        workers: new Map(),
        views: new Map(),
        results: { Liveness: new Map(), Readiness: new Map(), Startup: new Map() },
        podIP: "",
      };
      this.#pods.set(uid, entry);
    }
    entry.pod = pod;
    return entry;
  }

  /** Starts a worker for each probe of the containers and sidecars that has none. */
  #startWorkers(entry: PodEntry): void {
    const spec = entry.pod.spec;
    const probed = [
      ...spec.containers,
      ...(spec.initContainers ?? []).filter(isRestartableInitContainer),
    ];
    for (const c of probed) {
      for (const type of PROBE_TYPES) {
        const probe = c[SPEC_FIELD[type]];
        const key = workerKey(c.name, type);
        if (!probe || entry.workers.has(key)) continue;
        const worker = new ProbeWorker(type, probe, this.#host(entry, c.name, type));
        entry.workers.set(key, worker);
        const periodMs = worker.timing.periodSeconds * 1000;
        // Right after an agent restart every worker would probe at once: spread them.
        const recent = this.#clock.monotonic() - this.#started < periodMs;
        worker.start(recent ? Math.floor(this.#random() * periodMs) : 0);
      }
    }
  }

  #host(entry: PodEntry, name: string, type: ProbeType): WorkerHost {
    const uid = entry.pod.metadata.uid!;
    const metricKey = `${uid}/${name}/${type}`;
    const spec = () => containerSpec(entry.pod, name);
    const labels = () => ({
      probeType: type,
      container: name,
      pod: entry.pod.metadata.name ?? "",
      namespace: entry.pod.metadata.namespace ?? "default",
      podUID: uid,
    });
    const log = this.#log.with({
      pod: podKey(entry.pod),
      podUID: uid,
      containerName: name,
    });
    return {
      clock: this.#clock,
      logger: log,
      runProbe: this.#runProbe,
      container: () => entry.views.get(name),
      isStarted: (id) => isStarted(entry, name, id),
      deleting: () => entry.pod.metadata.deletionTimestamp !== undefined,
      willRestart: () => {
        const c = spec();
        return (c !== undefined && isRestartableInitContainer(c)) ||
          entry.pod.spec.restartPolicy !== "Never";
      },
      target: (containerId) => ({
        podName: podKey(entry.pod),
        container: spec() ?? { name },
        containerId,
        podIP: entry.podIP,
        userAgent: this.#opts.userAgent ?? DEFAULT_PROBE_USER_AGENT,
        runtime: this.#opts.runtime,
      }),
      onUnhealthy: (probeType, output, errored) =>
        this.#opts.events?.event(
          podReference(entry.pod, { name }),
          "Warning",
          EventReason.unhealthy,
          errored
            ? EventMessage.probeErrored(probeType, output)
            : EventMessage.probeFailed(probeType, output),
        ),
      setResult: (containerId, result, output) =>
        this.#setResult(entry, name, type, containerId, result, output),
      removeResult: (containerId) => {
        if (entry.results[type].get(containerId)?.container === name) {
          entry.results[type].delete(containerId);
        }
      },
      recordProbe: (result, seconds) => this.#metrics.record(metricKey, labels(), result, seconds),
      onStopped: () => {
        entry.workers.delete(workerKey(name, type));
        this.#metrics.forget(metricKey);
      },
    };
  }

  #setResult(
    entry: PodEntry,
    name: string,
    type: ProbeType,
    containerId: string,
    result: ProbeResultKind,
    output: string,
  ): void {
    const cache = entry.results[type];
    const previous = cache.get(containerId)?.result;
    if (previous === result) return;
    cache.set(containerId, { result, container: name, output });
    const grace = containerSpec(entry.pod, name)?.[SPEC_FIELD[type]]?.terminationGracePeriodSeconds;
    const update: ProbeResultUpdate = {
      podUID: entry.pod.metadata.uid!,
      container: name,
      containerId,
      probeType: type,
      result: result,
      previous,
      output,
      ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }),
    };
    if (type === "Startup" && result === "success") {
      // Started: readiness need not wait for its next period (upstream gets
      // there through the sync this change causes).
      entry.workers.get(workerKey(name, "Readiness"))?.trigger();
    }
    for (const listener of this.#listeners) {
      try {
        listener(update);
      } catch (err) {
        this.#log.error("Probe result listener failed", err, { podUID: update.podUID });
      }
    }
  }
}
