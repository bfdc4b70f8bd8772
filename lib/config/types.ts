/**
 * The values that flow from pod sources through the config mux to the sync
 * loop, named after upstream's kubetypes.PodUpdate.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";

/**
 * What a {@link PodUpdate} tells the sync loop to do with its pods:
 * - `ADD`: pods new to the node;
 * - `UPDATE`: spec, labels or annotations changed for a known UID;
 * - `REMOVE`: gone from their source, stop and forget them;
 * - `RECONCILE`: only the status changed (the kubelet owns status, so it re-syncs it);
 * - `DELETE`: a deletion timestamp appeared (graceful delete).
 */
export type PodOperation = "ADD" | "UPDATE" | "REMOVE" | "RECONCILE" | "DELETE";

/** One notification from the mux: an operation on some pods of one source. */
export interface PodUpdate {
  op: PodOperation;
  /** Copies: the receiver may keep or mutate them. */
  pods: Pod[];
  /** The source the pods came from ("file", "http", "api"). */
  source: string;
}

/** A manifest a source could not use, reported so the rest keeps running. */
export interface SourceError {
  /** "file" or "http". */
  source: string;
  /** The file path or URL. */
  file: string;
  /** Why it was rejected, naming the document or field where known. */
  reason: string;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * Receives a source's complete current set of pods (upstream's SET
 * operation). Called whenever the source re-reads, changed or not; the mux
 * works out what changed.
 */
export type PodSetSink = (pods: Pod[]) => void;

/** Receives a source's per-manifest errors. */
export type SourceErrorSink = (err: SourceError) => void;
