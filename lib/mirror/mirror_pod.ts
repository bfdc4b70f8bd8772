/**
 * What a mirror pod is (upstream pkg/kubelet/pod/mirror_client.go and
 * pod_manager.go): the API object a node creates for each of its static pods
 * so the cluster can see it. It has the static pod's name, namespace, labels,
 * annotations and spec, plus the annotation `kubernetes.io/config.mirror`
 * holding the static pod's `kubernetes.io/config.hash`, and a controller
 * owner reference to the Node (the NodeRestriction admission plugin refuses a
 * node's pod without one).
 *
 * @module
 */

import type { Node } from "../api/cluster_types.ts";
import { ConfigAnnotations, podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";

/**
 * The hash a static pod's mirror must carry: its `kubernetes.io/config.hash`
 * (which every static pod has; its UID otherwise).
 * @param staticPod a static pod
 * @returns the hash
 */
export function staticPodHash(staticPod: Pod): string {
  return staticPod.metadata.annotations?.[ConfigAnnotations.hash] ?? staticPod.metadata.uid ?? "";
}

/**
 * Tells whether `mirror` is the current mirror of `staticPod`: same
 * namespace/name, and the mirror hash equals the static pod's hash
 * (upstream IsMirrorPodOf). A mirror pod being deleted is not current.
 * @param mirror a mirror pod from the apiserver
 * @param staticPod a static pod
 * @returns true when nothing needs to change
 */
export function isMirrorPodOf(mirror: Pod, staticPod: Pod): boolean {
  if (podKey(mirror) !== podKey(staticPod)) return false;
  if (mirror.metadata.deletionTimestamp) return false;
  const hash = mirror.metadata.annotations?.[ConfigAnnotations.mirror];
  return hash !== undefined && hash === staticPodHash(staticPod);
}

/**
 * Builds the object to create for a static pod's mirror pod.
 * @param staticPod the static pod; not modified
 * @param node the node's name and UID for the owner reference
 * @returns a Pod body for `POST /api/v1/namespaces/NS/pods`
 */
export function buildMirrorPod(staticPod: Pod, node: { name: string; uid: string }): Pod {
  const meta = staticPod.metadata;
  // The apiserver assigns UID, resourceVersion and times, and owns status.
  const mirror: Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: meta.name ?? "",
      namespace: meta.namespace ?? "default",
      annotations: {
        ...meta.annotations,
        [ConfigAnnotations.mirror]: staticPodHash(staticPod),
      },
      ownerReferences: [{
        apiVersion: "v1",
        kind: "Node",
        name: node.name,
        uid: node.uid,
        controller: true,
      }],
    },
    spec: structuredClone(staticPod.spec),
  };
  if (meta.labels) mirror.metadata.labels = { ...meta.labels };
  return mirror;
}

/**
 * The Node's UID, or why a mirror pod cannot be made now (upstream: no need
 * to create a mirror pod while the node is unknown or being deleted).
 * @param node the node as last read from the apiserver
 * @returns the UID, or a reason
 */
export function ownerUID(node: Node | undefined): { uid: string } | { reason: string } {
  if (!node) return { reason: "failed to get node info from the cluster" };
  if (!node.metadata.uid) return { reason: "node has no UID yet" };
  if (node.metadata.deletionTimestamp) return { reason: "node has been removed from the cluster" };
  return { uid: node.metadata.uid };
}
