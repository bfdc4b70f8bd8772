/**
 * A checkpointed record of each pod's container resources, by pod UID and
 * container name: upstream's allocation `state` (pkg/kubelet/allocation/state).
 * The kubelet keeps two: what it *allocated* to each pod (admission and
 * accepted resizes; `denolet_allocated_pods_state`) and what the runtime has
 * *actuated* (container starts and UpdateContainerResources;
 * `denolet_actuated_pods_state`). Both survive a restart of the agent, so a resize in
 * flight is neither forgotten nor applied twice.
 *
 * The file is JSON of our own (upstream's checkpoint carries a checksum of a
 * Go encoding; an upstream kubelet's file is not read): written whole to a
 * temporary file and renamed over the old one, so a crash leaves the old or
 * the new record, never half of one.
 *
 * @module
 */

import type { ResourceRequirements } from "../api/types.ts";
import type { Logger } from "../util/log.ts";

/** One pod's record: container name → its resources, and the pod-level resources. */
export interface PodResourceInfo {
  containers: Record<string, ResourceRequirements>;
  /** `spec.resources`, when the pod sets them. */
  podLevel?: ResourceRequirements;
}

/** The file's shape. */
interface CheckpointFile {
  pods: Record<string, PodResourceInfo>;
}

/** Options for {@link ResourceState}. */
export interface ResourceStateOptions {
  /** The checkpoint file; in memory only when unset (tests). */
  path?: string;
  logger?: Logger;
}

/**
 * Container resources by pod and container, kept in memory and written
 * through to a checkpoint file on every change.
 *
 * Contract: getters return copies the caller may keep; a failed write is
 * logged and the in-memory record still changes (as upstream, the next
 * change writes again).
 */
export class ResourceState {
  readonly #path: string | undefined;
  readonly #logger: Logger | undefined;
  #pods = new Map<string, PodResourceInfo>();

  /** @param opts the checkpoint file and where write failures are logged */
  constructor(opts: ResourceStateOptions = {}) {
    this.#path = opts.path;
    this.#logger = opts.logger;
    if (this.#path) this.#load(this.#path);
  }

  /**
   * A pod's record.
   * @param uid the pod UID
   * @returns a copy, or undefined when none was stored
   */
  getPod(uid: string): PodResourceInfo | undefined {
    const info = this.#pods.get(uid);
    return info ? structuredClone(info) : undefined;
  }

  /**
   * One container's resources.
   * @param uid the pod UID
   * @param name the container name
   * @returns a copy, or undefined when none was stored
   */
  getContainer(uid: string, name: string): ResourceRequirements | undefined {
    const r = this.#pods.get(uid)?.containers[name];
    return r ? structuredClone(r) : undefined;
  }

  /**
   * Replaces a pod's record.
   * @param uid the pod UID
   * @param info container name → resources, and the pod-level resources
   */
  setPod(uid: string, info: PodResourceInfo): void {
    this.#pods.set(uid, structuredClone(info));
    this.#save();
  }

  /**
   * Sets one container's resources, keeping the pod's others.
   * @param uid the pod UID
   * @param name the container name
   * @param resources its resources
   */
  setContainer(uid: string, name: string, resources: ResourceRequirements): void {
    const info = this.#pods.get(uid) ?? { containers: {} };
    info.containers[name] = structuredClone(resources);
    this.#pods.set(uid, info);
    this.#save();
  }

  /**
   * Forgets a pod.
   * @param uid the pod UID
   */
  removePod(uid: string): void {
    if (this.#pods.delete(uid)) this.#save();
  }

  /**
   * Forgets every pod not in `keep`.
   * @param keep the UIDs still known
   */
  removeOrphans(keep: ReadonlySet<string>): void {
    let changed = false;
    for (const uid of [...this.#pods.keys()]) {
      if (keep.has(uid)) continue;
      this.#pods.delete(uid);
      changed = true;
    }
    if (changed) this.#save();
  }

  /** The UIDs with a record. */
  uids(): string[] {
    return [...this.#pods.keys()];
  }

  #load(path: string): void {
    let text: string;
    try {
      text = Deno.readTextFileSync(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) {
        this.#logger?.warn("Failed to read resource checkpoint", { path, err: String(err) });
      }
      return;
    }
    try {
      const file = JSON.parse(text) as CheckpointFile;
      for (const [uid, info] of Object.entries(file.pods ?? {})) this.#pods.set(uid, info);
    } catch (err) {
      // As upstream, a corrupt checkpoint is dropped: pods are re-admitted as they come.
      this.#logger?.warn("Ignoring a corrupt resource checkpoint", { path, err: String(err) });
    }
  }

  #save(): void {
    if (!this.#path) return;
    const file: CheckpointFile = { pods: Object.fromEntries(this.#pods) };
    const tmp = `${this.#path}.tmp`;
    try {
      Deno.writeTextFileSync(tmp, JSON.stringify(file));
      Deno.renameSync(tmp, this.#path);
    } catch (err) {
      this.#logger?.warn("Failed to write resource checkpoint", {
        path: this.#path,
        err: String(err),
      });
    }
  }
}
