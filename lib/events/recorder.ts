/**
 * Event recorders: {@link ApiEventRecorder} writes core/v1 Events to the
 * apiserver as client-go's EventBroadcaster does for the kubelet;
 * {@link LogEventRecorder} only logs them (standalone mode).
 *
 * ```
 * event() ──► bounded queue (1000, drops when full) ──► sender (one at a time)
 *                                                         │ correlate: aggregate / count / spam filter
 *                                                         ├─► POST  /api/v1/namespaces/NS/events
 *                                                         └─► PATCH /api/v1/namespaces/NS/events/NAME {count,…}
 * ```
 *
 * @module
 */

import type { Event, ObjectReference } from "../api/cluster_types.ts";
import { ApiError, isNotFound, type KubeClient } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { EventRecorder, EventType } from "./types.ts";
import { EventCorrelator } from "./_correlator.ts";
import { metaTime } from "../util/time.ts";

/**
 * The reference upstream's kubelet uses for its Node's events: kind Node,
 * the node name as name and UID, no namespace (so events land in "default").
 * @param nodeName the node's name
 * @returns the involvedObject
 */
export function nodeReference(nodeName: string): ObjectReference {
  return { kind: "Node", name: nodeName, uid: nodeName };
}

/**
 * A reference to a pod, or to one of its containers (`fieldPath`
 * `spec.containers{NAME}`, `spec.initContainers{NAME}` or
 * `spec.ephemeralContainers{NAME}`), as upstream builds it.
 * @param pod the pod's metadata, and its spec when it is at hand
 * @param container a container name, and whether it is an init container
 *   (when unset, the pod's spec tells which list declares it)
 * @returns the involvedObject
 */
export function podReference(
  pod: {
    metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
    spec?: {
      initContainers?: readonly { name: string }[];
      ephemeralContainers?: readonly { name: string }[];
    };
  },
  container?: { name: string; init?: boolean },
): ObjectReference {
  const ref: ObjectReference = {
    kind: "Pod",
    apiVersion: "v1",
    namespace: pod.metadata.namespace ?? "default",
    name: pod.metadata.name ?? "",
  };
  if (pod.metadata.uid !== undefined) ref.uid = pod.metadata.uid;
  if (pod.metadata.resourceVersion !== undefined) {
    ref.resourceVersion = pod.metadata.resourceVersion;
  }
  if (container) {
    const declares = (list: readonly { name: string }[] | undefined) =>
      (list ?? []).some((c) => c.name === container.name);
    const init = container.init ?? declares(pod.spec?.initContainers);
    const kind = init
      ? "initContainers"
      : container.init === undefined && declares(pod.spec?.ephemeralContainers)
      ? "ephemeralContainers"
      : "containers";
    ref.fieldPath = `spec.${kind}{${container.name}}`;
  }
  return ref;
}

function logEvent(
  log: Logger,
  object: ObjectReference,
  type: EventType,
  reason: string,
  msg: string,
): void {
  // The fields of upstream's StartStructuredLogging ("Event occurred").
  log.info("Event occurred", {
    object: object.namespace ? `${object.namespace}/${object.name}` : object.name,
    fieldPath: object.fieldPath,
    kind: object.kind,
    apiVersion: object.apiVersion,
    type,
    reason,
    message: msg,
  });
}

/**
 * A recorder for standalone mode: every event becomes a log line at
 * verbosity 2, so users without an apiserver still see them.
 */
export class LogEventRecorder implements EventRecorder {
  #log: Logger;
  /** @param logger where events go (logged at `v(level)`) @param level verbosity, 2 by default */
  constructor(logger: Logger, level = 2) {
    this.#log = logger.v(level);
  }
  /** Logs the event. */
  event(object: ObjectReference, type: EventType, reason: string, message: string): void {
    logEvent(this.#log, object, type, reason, message);
  }
}

/** What {@link ApiEventRecorder} needs. */
export interface ApiEventRecorderOptions {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /** `source.component` and `reportingComponent`; "kubelet". */
  component?: string;
  /** `source.host` and `reportingInstance`: the node name. */
  host: string;
  /** Events held while the sender is behind (upstream's broadcaster buffers 1000). */
  queueSize?: number;
  /** Attempts per event while the apiserver is unreachable (upstream 12). */
  maxTries?: number;
  /** Wait between attempts (upstream 10s). */
  retryDelayMs?: number;
}

interface Queued {
  event: Event;
  at: number;
}

/** Writes Events to the apiserver in the background; `event()` never waits. */
export class ApiEventRecorder implements EventRecorder {
  #o: ApiEventRecorderOptions;
  #component: string;
  #queue: Queued[] = [];
  #queueSize: number;
  #correlator = new EventCorrelator();
  #sending: Promise<void> | undefined;
  #started = false;
  #stopped = false;
  #abort = new AbortController();
  #lastNanos = 0n;
  #dropped = 0;

  /** @param opts client, clock, logger and the source identity */
  constructor(opts: ApiEventRecorderOptions) {
    this.#o = opts;
    this.#component = opts.component ?? "kubelet";
    this.#queueSize = opts.queueSize ?? 1000;
  }

  /** Events dropped because the queue was full. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Events waiting to be sent. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Starts sending (events recorded before start wait in the queue). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#kick();
  }

  /** Stops sending; queued events are dropped. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error("event recorder stopped"));
    await this.#sending;
    this.#queue = [];
  }

  /** Resolves once the queue is empty and nothing is in flight (for tests and shutdown). */
  async flush(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  /** Queues an event; never blocks, never throws. */
  event(object: ObjectReference, type: EventType, reason: string, message: string): void {
    logEvent(this.#o.logger.v(3), object, type, reason, message);
    if (this.#stopped) return;
    if (this.#queue.length >= this.#queueSize) {
      this.#dropped++;
      // Log the first drop of a burst and then every 100th, not every one.
      if (this.#dropped % 100 === 1) {
        this.#o.logger.warn("Event queue full, dropping events", {
          dropped: this.#dropped,
          reason,
          object: object.name,
        });
      }
      return;
    }
    this.#queue.push({
      event: this.#makeEvent(object, type, reason, message),
      at: this.#o.clock.now(),
    });
    this.#kick();
  }

  /** `<name>.<hex unixnano>`, strictly increasing so two events in one millisecond differ. */
  #eventName(objectName: string): string {
    let nanos = BigInt(this.#o.clock.now()) * 1_000_000n;
    if (nanos <= this.#lastNanos) nanos = this.#lastNanos + 1n;
    this.#lastNanos = nanos;
    return `${objectName}.${nanos.toString(16)}`;
  }

  #makeEvent(object: ObjectReference, type: EventType, reason: string, message: string): Event {
    const t = metaTime(this.#o.clock.now());
    return {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        name: this.#eventName(object.name ?? ""),
        namespace: object.namespace || "default",
      },
      involvedObject: { ...object },
      reason,
      message,
      source: { component: this.#component, host: this.#o.host },
      firstTimestamp: t,
      lastTimestamp: t,
      count: 1,
      type,
      reportingComponent: this.#component,
      reportingInstance: this.#o.host,
    };
  }

  #kick(): void {
    if (!this.#started || this.#stopped || this.#sending || this.#queue.length === 0) return;
    this.#sending = this.#drain().finally(() => {
      this.#sending = undefined;
      // An event queued in the last step of a drain must not wait for the next one.
      this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0 && !this.#stopped) {
      const next = this.#queue.shift()!;
      const c = this.#correlator.correlate(
        next.event,
        next.at,
        () => this.#eventName(next.event.involvedObject.name ?? ""),
      );
      if (c.skip) {
        this.#o.logger.v(4).info("Event dropped by the spam filter", {
          reason: next.event.reason,
          object: next.event.involvedObject.name,
        });
        continue;
      }
      await this.#send(c.event, c.key, c.patch);
    }
  }

  /** Writes one event, retrying while the apiserver is unreachable (bounded). */
  async #send(
    event: Event,
    key: string,
    patch: Record<string, unknown> | undefined,
  ): Promise<void> {
    const { client, clock, logger } = this.#o;
    const maxTries = this.#o.maxTries ?? 4;
    const delay = this.#o.retryDelayMs ?? 5_000;
    const ns = event.metadata.namespace!;
    const signal = this.#abort.signal;
    for (let attempt = 1; attempt <= maxTries; attempt++) {
      try {
        let written: Event | undefined;
        if (patch) {
          try {
            written = await client.patch<Event>(
              `/api/v1/namespaces/${ns}/events/${event.metadata.name}`,
              patch,
              "strategic",
              { signal },
            );
          } catch (err) {
            // The event expired (events have a TTL): create it afresh below.
            if (!isNotFound(err)) throw err;
          }
        }
        if (!written) {
          const body: Event = { ...event, metadata: { ...event.metadata } };
          delete body.metadata.resourceVersion;
          written = await client.create<Event>(`/api/v1/namespaces/${ns}/events`, body, { signal });
        }
        this.#correlator.written(key, written);
        return;
      } catch (err) {
        if (this.#stopped) return;
        if (err instanceof ApiError) {
          // The apiserver refused this event: retrying will not change its mind.
          const level = err.reason === "AlreadyExists" ? logger.v(5) : logger;
          level.info("Server rejected event (will not retry!)", {
            reason: event.reason,
            object: event.involvedObject.name,
            err,
          });
          return;
        }
        if (attempt === maxTries) {
          logger.info("Unable to write event, giving up", {
            reason: event.reason,
            attempts: attempt,
            err,
          });
          return;
        }
        logger.v(2).info("Unable to write event (may retry after sleeping)", {
          reason: event.reason,
          err,
        });
        try {
          await clock.sleep(delay, signal);
        } catch {
          return; // stopped
        }
      }
    }
  }
}
