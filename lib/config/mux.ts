/**
 * The config mux (upstream pkg/kubelet/config/config.go, PodConfig with
 * incremental notifications): every source hands over its complete current
 * set of pods; the mux diffs it against what that source sent last and emits
 * what changed as {@link PodUpdate}s.
 *
 * For one source's new set, in this order (upstream's):
 * 1. `REMOVE` pods whose UID is gone;
 * 2. `ADD` pods with a new UID (stamped `kubernetes.io/config.seen` if unset);
 * 3. `UPDATE` pods whose spec, labels, annotations (bar the kubelet's own) or
 *    deletion grace period changed;
 * 4. `DELETE` pods that gained a deletion timestamp;
 * 5. an empty `ADD` the first time a source reports and nothing else was sent,
 *    so the reader learns the source is ready;
 * 6. `RECONCILE` pods where only the status changed.
 *
 * Pods are filtered first: a pod without a UID, a second pod with the same
 * namespace/name in one source, or a UID already owned by another source
 * (first source wins) is dropped with a warning.
 *
 * The apiserver source also carries mirror pods (annotation
 * `kubernetes.io/config.mirror`): the API objects the node made for its own
 * static pods. They are not pods to run, so they never become updates; the
 * mux hands the API source's complete set of them to `onMirrorPods` instead
 * (upstream keeps them apart in its pod manager for the same reason).
 *
 * A pod of the API source that gains a deletion timestamp is a `DELETE`: the
 * receiver stops it gracefully (`deletionGracePeriodSeconds`) and keeps it
 * until its containers are gone. A pod that disappears from a source, the
 * API included, is a `REMOVE`.
 *
 * @module
 */

import {
  API_SOURCE,
  ConfigAnnotations,
  configSeenTimestamp,
  isMirrorPod,
  podKey,
} from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import { jsonEqual } from "../util/json.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import { AsyncQueue } from "./_queue.ts";
import type { PodOperation, PodSetSink, PodUpdate } from "./types.ts";

/** Annotations the kubelet itself sets; a change in them is not a pod update. */
const LOCAL_ANNOTATIONS: readonly string[] = [
  ConfigAnnotations.source,
  ConfigAnnotations.mirror,
  ConfigAnnotations.seen,
];

/** Options for {@link PodConfig}. */
export interface PodConfigOptions {
  log?: Logger;
  /** Stamps `kubernetes.io/config.seen` on pods that arrive without it. */
  clock?: Clock;
  /**
   * Receives every update synchronously, in order. When set, updates are not
   * also queued for {@link PodConfig.updates}.
   */
  onUpdate?: (update: PodUpdate) => void;
  /**
   * Receives the apiserver source's complete set of mirror pods (copies)
   * every time that source delivers; mirror pods are never sent as updates.
   */
  onMirrorPods?: (pods: Pod[]) => void;
}

function withoutLocal(annotations: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations ?? {})) {
    if (!LOCAL_ANNOTATIONS.includes(k)) out[k] = v;
  }
  return out;
}

function differSemantically(existing: Pod, ref: Pod): boolean {
  const a = existing.metadata;
  const b = ref.metadata;
  return !jsonEqual(existing.spec, ref.spec) ||
    !jsonEqual(a.labels ?? {}, b.labels ?? {}) ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    a.deletionGracePeriodSeconds !== b.deletionGracePeriodSeconds ||
    !jsonEqual(withoutLocal(a.annotations), withoutLocal(b.annotations));
}

/** Merges pod sets from several sources into one stream of pod updates. */
export class PodConfig {
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #onUpdate: ((update: PodUpdate) => void) | undefined;
  readonly #onMirrorPods: ((pods: Pod[]) => void) | undefined;
  #mirrorPods: Pod[] = [];
  readonly #queue = new AsyncQueue<PodUpdate>();
  /** source → UID → the pod as last accepted. */
  readonly #pods = new Map<string, Map<string, Pod>>();
  readonly #sources = new Set<string>();
  readonly #seen = new Set<string>();

  /** @param opts logger, clock and an optional update callback */
  constructor(opts: PodConfigOptions = {}) {
    this.#log = opts.log ?? silentLogger;
    this.#clock = opts.clock ?? realClock;
    this.#onUpdate = opts.onUpdate;
    this.#onMirrorPods = opts.onMirrorPods;
  }

  /**
   * Registers a source (so {@link seenAllSources} waits for it) and returns
   * the function it hands its complete pod set to.
   * @param source the source name ("file", "http", "api")
   * @returns the source's sink; each call is a full SET of that source's pods
   */
  channel(source: string): PodSetSink {
    this.#sources.add(source);
    return (pods) => void this.set(source, pods);
  }

  /**
   * Replaces a source's pods with `pods` and emits what changed.
   * @param source the source name; registered if new
   * @param pods the source's complete current set; copied, not kept
   * @returns the updates emitted, in order
   */
  set(source: string, pods: Pod[]): PodUpdate[] {
    if (source === API_SOURCE) pods = this.#takeMirrorPods(pods);
    this.#sources.add(source);
    const firstSet = !this.#seen.has(source);
    this.#seen.add(source);
    const old = this.#pods.get(source) ?? new Map<string, Pod>();
    const next = new Map<string, Pod>();
    const out: Record<PodOperation, Pod[]> = {
      ADD: [],
      UPDATE: [],
      DELETE: [],
      REMOVE: [],
      RECONCILE: [],
    };
    for (const ref of this.#filter(source, pods, old)) {
      const uid = ref.metadata.uid as string;
      const existing = old.get(uid);
      if (ref === existing) {
        // The API object version the mux already holds: nothing to compare.
        next.set(uid, existing);
        continue;
      }
      ref.metadata.annotations = {
        ...ref.metadata.annotations,
        [ConfigAnnotations.source]: source,
      };
      if (!existing) {
        if (!ref.metadata.annotations[ConfigAnnotations.seen]) {
          ref.metadata.annotations[ConfigAnnotations.seen] = configSeenTimestamp(this.#clock.now());
        }
        next.set(uid, ref);
        out.ADD.push(ref);
        continue;
      }
      if (!differSemantically(existing, ref)) {
        next.set(uid, existing);
        // It now stands for this version, so the next delivery of it skips the comparison.
        const version = ref.metadata.resourceVersion;
        if (version !== undefined) existing.metadata.resourceVersion = version;
        if (!jsonEqual(existing.status ?? {}, ref.status ?? {})) {
          // The kubelet owns pod status, so a status change from a source only asks for a re-sync.
          existing.status = ref.status ?? {};
          out.RECONCILE.push(existing);
        }
        continue;
      }
      // Keep the kubelet's own annotations (first-seen time above all) from the existing pod.
      for (const key of LOCAL_ANNOTATIONS) {
        const value = existing.metadata.annotations?.[key];
        if (value !== undefined) ref.metadata.annotations[key] = value;
      }
      next.set(uid, ref);
      (ref.metadata.deletionTimestamp ? out.DELETE : out.UPDATE).push(ref);
    }
    for (const [uid, pod] of old) if (!next.has(uid)) out.REMOVE.push(pod);
    this.#pods.set(source, next);

    const updates: PodUpdate[] = [];
    const emit = (op: PodOperation, list: Pod[], always = false) => {
      if (list.length === 0 && !always) return;
      const update: PodUpdate = { op, source, pods: list.map((p) => structuredClone(p)) };
      updates.push(update);
      if (this.#onUpdate) this.#onUpdate(update);
      else this.#queue.push(update);
    };
    emit("REMOVE", out.REMOVE);
    emit("ADD", out.ADD);
    emit("UPDATE", out.UPDATE);
    emit("DELETE", out.DELETE);
    if (firstSet && !out.ADD.length && !out.UPDATE.length && !out.DELETE.length) {
      emit("ADD", [], true);
    }
    emit("RECONCILE", out.RECONCILE);
    return updates;
  }

  /**
   * The updates as an async stream (unless an `onUpdate` callback was given);
   * ends after {@link close}.
   * @returns the stream; meant for one reader
   */
  updates(): AsyncIterable<PodUpdate> {
    return this.#queue;
  }

  /**
   * Tells whether every registered source has delivered at least once; until
   * then the node must not clean up pods it cannot yet see a source for.
   * @returns true once all sources reported
   */
  seenAllSources(): boolean {
    return [...this.#sources].every((s) => this.#seen.has(s));
  }

  /**
   * Tells whether the named sources have each delivered at least once.
   * @param sources source names
   * @returns true when all of them have
   */
  seenSources(...sources: string[]): boolean {
    return sources.every((s) => this.#seen.has(s));
  }

  /** @returns the registered source names */
  sources(): string[] {
    return [...this.#sources];
  }

  /**
   * Every pod the mux currently holds, from all sources.
   * @returns copies, in source registration order
   */
  mergedState(): Pod[] {
    return [...this.#pods.values()].flatMap((m) => [...m.values()].map((p) => structuredClone(p)));
  }

  /**
   * The apiserver source's mirror pods as last delivered.
   * @returns copies
   */
  mirrorPods(): Pod[] {
    return this.#mirrorPods.map((p) => structuredClone(p));
  }

  /** Ends the {@link updates} stream. */
  close(): void {
    this.#queue.close();
  }

  /** Keeps the API source's mirror pods apart and hands them on; returns the rest. */
  #takeMirrorPods(pods: Pod[]): Pod[] {
    const mirrors: Pod[] = [];
    const rest: Pod[] = [];
    for (const pod of pods) (isMirrorPod(pod) ? mirrors : rest).push(pod);
    this.#mirrorPods = mirrors.map((p) => structuredClone(p));
    if (this.#onMirrorPods) {
      try {
        this.#onMirrorPods(this.mirrorPods());
      } catch (err) {
        // A failing mirror pod consumer must not keep the node's own pods from the sync loop.
        this.#log.error("Mirror pod sink failed", err, { source: API_SOURCE });
      }
    }
    return rest;
  }

  /**
   * The pods of a source's set that may be accepted: copies of the inputs,
   * except that an API pod at the resourceVersion the mux holds is the held
   * pod itself (the apiserver changes the version on every write, so such a
   * pod is unchanged; every watch event delivers the whole set again).
   */
  #filter(source: string, pods: Pod[], old: ReadonlyMap<string, Pod>): Pod[] {
    const names = new Set<string>();
    const kept: Pod[] = [];
    for (const input of pods) {
      const held = input.metadata?.uid ? old.get(input.metadata.uid) : undefined;
      const version = input.metadata?.resourceVersion;
      const pod =
        source === API_SOURCE && held && version && held.metadata.resourceVersion === version
          ? held
          : structuredClone(input);
      const uid = pod.metadata?.uid;
      const fields = { source, pod: podKey(pod), podUID: uid };
      if (!uid) {
        this.#log.warn("Pod has no UID, ignoring", fields);
        continue;
      }
      if (names.has(podKey(pod))) {
        this.#log.warn("Pod failed validation due to duplicate pod name, ignoring", fields);
        continue;
      }
      const owner = this.#ownerOf(uid, source);
      if (owner !== undefined) {
        this.#log.warn("Pod UID already comes from another source, ignoring", { ...fields, owner });
        continue;
      }
      names.add(podKey(pod));
      kept.push(pod);
    }
    return kept;
  }

  #ownerOf(uid: string, except: string): string | undefined {
    for (const [source, pods] of this.#pods) if (source !== except && pods.has(uid)) return source;
    return undefined;
  }
}
