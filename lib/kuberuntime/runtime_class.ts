/**
 * The CRI runtime handler a pod's sandbox runs with, as upstream's RuntimeClass
 * manager's LookupRuntimeHandler: no `runtimeClassName` (or an empty one) is the
 * runtime's default handler (""); otherwise the named RuntimeClass's `handler`, read
 * from the apiserver. A RuntimeClass that does not exist fails the sandbox with the
 * apiserver's NotFound text (`runtimeclass.node.k8s.io "x" not found`), as upstream;
 * the pod stays Pending and the next sync tries again.
 *
 * Without an apiserver (standalone mode) upstream has no RuntimeClass manager and runs
 * such a pod with the default handler; denolet refuses it instead, rather than run a
 * pod that asked for another runtime (gVisor, Kata) under the default one.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import { isObjectNotFound, NoApiServerError, type PodObjects } from "../kubeobjects/mod.ts";

/**
 * The runtime handler for a pod's sandbox.
 * @param objects the API objects source; undefined in standalone mode
 * @param pod the pod
 * @param signal cancels the read
 * @returns the handler, "" for the runtime's default
 * @throws {Error} `runtimeclass.node.k8s.io "x" not found`, `failed to lookup RuntimeClass x: …`,
 *   or a NoApiServerError in standalone mode
 */
export async function lookupRuntimeHandler(
  objects: PodObjects | undefined,
  pod: Pod,
  signal?: AbortSignal,
): Promise<string> {
  const name = pod.spec.runtimeClassName;
  if (!name) return "";
  if (!objects) throw new NoApiServerError(`runtimeclass.node.k8s.io "${name}"`);
  try {
    const opts = {
      ...(pod.metadata.uid ? { podUID: pod.metadata.uid } : {}),
      ...(signal ? { signal } : {}),
    };
    return (await objects.getRuntimeClass(name, opts)).handler;
  } catch (err) {
    if (isObjectNotFound(err)) throw err;
    throw new Error(`failed to lookup RuntimeClass ${name}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
