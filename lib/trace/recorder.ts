/**
 * The sync trace's recorder: per pod, the last N syncs (a ring), and the
 * async context that lets the seams (the CRI decorator, the executor's steps,
 * the status manager) add to the sync that is running without a parameter
 * threaded through every call.
 *
 * ```
 *  sync loop handler ──noteTrigger(uid)──► pending triggers (≤ 8 per pod)
 *  pod worker ──run(pod, kind, fn)──► SyncRecord (takes the pending triggers)
 *        │ AsyncLocalStorage: currentSync() inside fn and what it awaits
 *        ├─ instrumentRuntime ──► call(rpc, args, ms, error)
 *        ├─ syncPod ────────────► plan(), step()
 *        └─ StatusManager ──────► status()
 *  ring of `depth` records per pod UID, dropped by retain() with the pod
 * ```
 *
 * Bounded: `depth` records per pod, {@link MAX_CALLS} calls and
 * {@link MAX_STEPS} steps per record, every string cut at {@link MAX_TEXT};
 * a finished record is kept as bytes in the pod's {@link SyncRing} (_codec.ts),
 * outside the V8 heap, and read back only when the trace is served.
 * A timer started inside a sync (a probe worker) keeps the sync's context:
 * once the sync ends its context is emptied, so late calls record nothing.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import type { Pod, PodStatus } from "../api/types.ts";
import type { Clock } from "../util/clock.ts";
import { clip, MAX_TEXT } from "./_clip.ts";
import { SyncRing } from "./_codec.ts";
import { statusRecord } from "./status_record.ts";
import type {
  PlanRecord,
  PodSyncTrace,
  StepRecord,
  SyncKind,
  SyncRecord,
  SyncTrigger,
  TriggerSource,
} from "./types.ts";

/** Runtime calls kept per sync; more are counted in `truncated`. */
export const MAX_CALLS = 64;
/** Steps kept per sync. */
export const MAX_STEPS = 64;
/** Pending triggers kept per pod between two syncs (the newest). */
export const MAX_TRIGGERS = 8;
export { clip, MAX_TEXT };

/** The sync being recorded, as the seams see it. */
export interface ActiveSync {
  /** A CRI call that took `ms` finished now (failed, when `error` is given). */
  call(rpc: string, args: string, ms: number, error?: unknown): void;
  /** The planner's plan (once per sync). */
  plan(plan: PlanRecord): void;
  /** The executor carried out a step. */
  step(step: StepRecord): void;
  /** The status the sync wrote (the last one wins). */
  status(status: PodStatus): void;
}

/** What the async context holds: emptied when the sync ends. */
interface Slot {
  record: SyncRecord | undefined;
  clock: Clock;
}

const storage = new AsyncLocalStorage<Slot>();

const recorder: ActiveSync = {
  call(rpc, args, ms, error) {
    const slot = storage.getStore();
    const record = slot?.record;
    if (!slot || !record) return;
    if (record.calls.length >= MAX_CALLS) {
      record.truncated = (record.truncated ?? 0) + 1;
      return;
    }
    record.calls.push({
      at: Math.round(slot.clock.now() - ms),
      rpc,
      args: clip(args),
      ms: Math.round(ms * 10) / 10,
      ...(error !== undefined ? { error: clip(errorLine(error)) } : {}),
    });
  },
  plan(plan) {
    const record = storage.getStore()?.record;
    if (!record) return;
    record.plan = {
      ...plan,
      kill: plan.kill.map((k) => ({
        name: k.name,
        reason: clip(k.reason),
        message: clip(k.message),
      })),
      backoff: plan.backoff.map((b) => ({
        name: b.name,
        reason: clip(b.reason),
        message: clip(b.message),
        until: b.until,
      })),
      reasons: plan.reasons.map(clip),
    };
  },
  step(step) {
    const record = storage.getStore()?.record;
    if (!record || record.steps.length >= MAX_STEPS) return;
    record.steps.push({
      action: step.action,
      target: clip(step.target),
      ...(step.error
        ? { error: { reason: clip(step.error.reason), message: clip(step.error.message) } }
        : {}),
    });
  },
  status(status) {
    const record = storage.getStore()?.record;
    if (record) record.status = statusRecord(status);
  },
};

/**
 * The sync running in this async context, if one is being traced.
 * @returns the recorder, or undefined outside a traced sync (cheap to call)
 */
export function currentSync(): ActiveSync | undefined {
  return storage.getStore()?.record ? recorder : undefined;
}

function errorLine(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A pod's ring and its pending triggers. */
interface PodTraces {
  uid: string;
  key: string;
  /**
   * The finished syncs, oldest first, as bytes outside the V8 heap: 110 pods
   * × 20 pod starts take 0.9 MB so, 4.4 MB of heap as JSON text (issue #20's
   * 5 MB; bench/sync_trace.ts).
   */
  done: SyncRing;
  /** The syncs being filled (one at a time: a pod's worker runs one sync at a time). */
  running: SyncRecord[];
  pending: SyncTrigger[];
  /** What the previous sync held back and until when; for the next unasked sync's trigger. */
  lastBackoff: { name: string; until: number }[];
  lastFailed: boolean;
}

/** The pod a sync is about. */
export interface TracedPod {
  uid: string;
  namespace: string;
  name: string;
}

/**
 * A pod as the trace names it.
 * @param pod an API pod
 * @returns its UID, namespace and name ("" where unset)
 */
export function tracedPod(pod: Pod): TracedPod {
  return {
    uid: pod.metadata.uid ?? "",
    namespace: pod.metadata.namespace ?? "",
    name: pod.metadata.name ?? "",
  };
}

/** Options for {@link SyncTracer}. */
export interface SyncTracerOptions {
  /** Syncs kept per pod; 0 turns tracing off. */
  depth: number;
  clock: Clock;
}

/**
 * Keeps the last `depth` syncs of every pod. With depth 0 every method is a
 * no-op and `run` calls its function directly.
 */
export class SyncTracer {
  readonly depth: number;
  readonly #clock: Clock;
  readonly #pods = new Map<string, PodTraces>();
  /** `namespace/name` → the newest UID seen under it. */
  readonly #byKey = new Map<string, string>();
  #seq = 0;

  constructor(opts: SyncTracerOptions) {
    this.depth = Math.max(0, Math.trunc(opts.depth));
    this.#clock = opts.clock;
  }

  /** False when `--sync-trace-depth=0`. */
  get enabled(): boolean {
    return this.depth > 0;
  }

  /**
   * Records why a pod's worker is being woken; the pod's next sync takes
   * every trigger noted since its previous one (updates coalesce).
   * @param pod the pod
   * @param source what woke it
   * @param detail a short description
   */
  noteTrigger(pod: TracedPod, source: TriggerSource, detail: string): void {
    if (!this.enabled) return;
    const traces = this.#traces(pod);
    traces.pending.push({ at: this.#clock.now(), source, detail: clip(detail) });
    if (traces.pending.length > MAX_TRIGGERS) traces.pending.shift();
  }

  /**
   * Runs one sync of a pod with recording on.
   * @param pod the pod synced
   * @param kind which of the worker's syncs
   * @param fn the sync
   * @returns what `fn` returns; its error is recorded and rethrown
   */
  async run<T>(pod: TracedPod, kind: SyncKind, fn: () => Promise<T>): Promise<T> {
    if (!this.enabled) return await fn();
    const traces = this.#traces(pod);
    const now = this.#clock.now();
    const triggers = traces.pending.length > 0
      ? traces.pending
      : [this.#implicitTrigger(traces, now)];
    traces.pending = [];
    const record: SyncRecord = {
      seq: ++this.#seq,
      kind,
      startedAt: now,
      triggers,
      calls: [],
      steps: [],
    };
    traces.running.push(record);
    this.#bound(traces);
    const slot: Slot = { record, clock: this.#clock };
    try {
      return await storage.run(slot, fn);
    } catch (err) {
      record.error = clip(errorLine(err));
      throw err;
    } finally {
      slot.record = undefined;
      record.endedAt = this.#clock.now();
      traces.lastBackoff = record.plan?.backoff.map((b) => ({ name: b.name, until: b.until })) ??
        [];
      traces.lastFailed = record.error !== undefined;
      const at = traces.running.indexOf(record);
      if (at >= 0) {
        traces.running.splice(at, 1);
        traces.done.push(record);
        this.#bound(traces);
      }
    }
  }

  /** Drops a pod's oldest finished syncs beyond `depth` (a running one is never dropped). */
  #bound(traces: PodTraces): void {
    while (traces.done.count > 0 && traces.done.count + traces.running.length > this.depth) {
      traces.done.dropOldest();
    }
  }

  /**
   * A sync nobody asked for is the worker's own resync (or a retry after an
   * error); when the previous sync held a container back whose backoff has
   * passed by now, that is what this sync is for.
   */
  #implicitTrigger(traces: PodTraces, now: number): SyncTrigger {
    const expired = traces.lastBackoff.filter((b) => b.until <= now);
    if (expired.length > 0) {
      return {
        at: now,
        source: "backoff-expired",
        detail: `back-off of ${expired.map((b) => b.name).join(", ")} expired`,
      };
    }
    return {
      at: now,
      source: "resync",
      detail: traces.lastFailed ? "retry after error" : "periodic resync",
    };
  }

  #traces(pod: TracedPod): PodTraces {
    let traces = this.#pods.get(pod.uid);
    if (!traces) {
      traces = {
        uid: pod.uid,
        key: `${pod.namespace}/${pod.name}`,
        done: new SyncRing(),
        running: [],
        pending: [],
        lastBackoff: [],
        lastFailed: false,
      };
      this.#pods.set(pod.uid, traces);
      this.#byKey.set(traces.key, pod.uid);
    }
    return traces;
  }

  /**
   * Drops the traces of pods for which `keep` is false (pods gone from the
   * node and from the workers).
   * @param keep true for a UID whose trace stays
   */
  retain(keep: (uid: string) => boolean): void {
    for (const [uid, traces] of this.#pods) {
      if (keep(uid)) continue;
      this.#pods.delete(uid);
      if (this.#byKey.get(traces.key) === uid) this.#byKey.delete(traces.key);
    }
  }

  /** How many pods have a trace (for tests and the benchmark). */
  get podCount(): number {
    return this.#pods.size;
  }

  /**
   * The trace of the pod now known under `namespace/name` (the newest UID).
   * @param namespace the pod's namespace
   * @param name the pod's name
   * @returns a copy safe to serialize, or undefined when no sync was recorded
   */
  trace(namespace: string, name: string): PodSyncTrace | undefined {
    const uid = this.#byKey.get(`${namespace}/${name}`);
    const traces = uid === undefined ? undefined : this.#pods.get(uid);
    if (!traces) return undefined;
    return {
      pod: traces.key,
      uid: traces.uid,
      depth: this.depth,
      syncs: [...traces.done.records(), ...traces.running.map((s) => structuredClone(s))],
    };
  }
}
