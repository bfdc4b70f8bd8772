/**
 * Mirror pods: the API objects through which a cluster sees a node's static
 * pods. {@link MirrorPodManager} creates one per static pod (owned by the
 * Node), replaces it when the static pod changes or someone deletes it, and
 * removes it when the static pod goes; {@link MirrorPodManager.mirrorPodFor}
 * tells the status manager which API object carries a static pod's status.
 *
 * ```ts
 * import { MirrorPodManager } from "./lib/mirror/mod.ts";
 * const mirrors = new MirrorPodManager({ client, nodeName, node: () => lastNode, logger });
 * // config mux: onMirrorPods: (pods) => mirrors.setMirrorPods(pods)
 * // every sync tick and after each pod update:
 * void mirrors.reconcile(kubelet.podManager.pods());
 * ```
 *
 * @module
 */

export { buildMirrorPod, isMirrorPodOf, ownerUID, staticPodHash } from "./mirror_pod.ts";
export {
  MIRROR_RETRY,
  MirrorPodManager,
  type MirrorPodManagerOptions,
} from "./mirror_pod_manager.ts";
