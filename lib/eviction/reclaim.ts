/**
 * Node-level reclaim per signal (upstream buildSignalToNodeReclaimFuncs, no
 * split writable-layer filesystem): disk signals remove dead containers, then
 * unused images; with a dedicated image filesystem nodefs has nothing to
 * reclaim at node level; memory and pids have none.
 *
 * @module
 */

import type { ContainerGC, ImageGC, Signal } from "./types.ts";

/** One node-level reclaim step. */
export type ReclaimFunc = (signal?: AbortSignal) => Promise<void>;

/**
 * The reclaim steps for a signal, in upstream's order.
 * @param signal the signal whose threshold is met
 * @param dedicatedImageFs the image filesystem is not the node's
 * @param gc the container and image GC, when the agent has them
 * @returns the steps (none for memory and pids)
 */
export function nodeReclaimFuncs(
  signal: Signal,
  dedicatedImageFs: boolean,
  gc: { containerGC?: ContainerGC | undefined; imageGC?: ImageGC | undefined },
): ReclaimFunc[] {
  const disk = signal.startsWith("nodefs.") || signal.startsWith("imagefs.") ||
    signal.startsWith("containerfs.");
  if (!disk || (dedicatedImageFs && signal.startsWith("nodefs."))) return [];
  const { containerGC, imageGC } = gc;
  return [
    ...(containerGC ? [(a?: AbortSignal) => containerGC.deleteAllUnusedContainers(a)] : []),
    ...(imageGC ? [(a?: AbortSignal) => imageGC.deleteUnusedImages(a)] : []),
  ];
}
