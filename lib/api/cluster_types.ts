/**
 * The core/v1, coordination/v1, node/v1 and authentication/v1 object shapes denolet
 * exchanges with a kube-apiserver, beside the Pod types in `types.ts`.
 *
 * Field names and JSON shapes follow k8s.io/api exactly; only the fields
 * denolet reads or writes are declared.
 *
 * @module
 */

import type { ObjectMeta, Quantity } from "./types.ts";

/** A reference to another object (`involvedObject`, `boundObjectRef`). */
export interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** A ConfigMap. */
export interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  data?: Record<string, string>;
  /** Values are base64. */
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

/** A node.k8s.io/v1 RuntimeClass (cluster-scoped): the CRI handler pods naming it run with. */
export interface RuntimeClass {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  /** The CRI runtime handler (containerd's `runtimes.<handler>`). */
  handler: string;
  /** Added to a pod's spec by the apiserver's RuntimeClass admission, not by the kubelet. */
  overhead?: { podFixed?: Record<string, Quantity> };
}

/** A Secret. */
export interface Secret {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  /** Values are base64. */
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  type?: string;
  immutable?: boolean;
}

/** A Service (for the service-link env vars). */
export interface Service {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    clusterIP?: string;
    type?: string;
    ports?: { name?: string; port: number; protocol?: string; targetPort?: number | string }[];
  };
}

/** `spec.taints[]` of a Node. */
export interface Taint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  timeAdded?: string;
}

/** `status.conditions[]` of a Node. */
export interface NodeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** `status.addresses[]` of a Node. */
export interface NodeAddress {
  type: "Hostname" | "InternalIP" | "ExternalIP" | "InternalDNS" | "ExternalDNS";
  address: string;
}

/** `status.nodeInfo`. */
export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion: string;
  operatingSystem: string;
  architecture: string;
}

/** `status.images[]`. */
export interface ContainerImage {
  names?: string[];
  sizeBytes?: number;
}

/** A Node's spec. */
export interface NodeSpec {
  podCIDR?: string;
  podCIDRs?: string[];
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
}

/** A Node's status. */
export interface NodeStatus {
  capacity?: Record<string, Quantity>;
  allocatable?: Record<string, Quantity>;
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
  daemonEndpoints?: { kubeletEndpoint?: { Port: number } };
  nodeInfo?: NodeSystemInfo;
  images?: ContainerImage[];
  /** What the node's runtime supports (upstream NodeFeatures). */
  features?: { supplementalGroupsPolicy?: boolean };
}

/** A Node. */
export interface Node {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

/** A coordination.k8s.io/v1 Lease (the node heartbeat in kube-node-lease). */
export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    /** MicroTime: RFC 3339 with microseconds. */
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** A core/v1 Event. */
export interface Event {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  source?: { component?: string; host?: string };
  firstTimestamp?: string;
  lastTimestamp?: string;
  count?: number;
  type: "Normal" | "Warning";
  reportingComponent?: string;
  reportingInstance?: string;
}

/** An authentication.k8s.io/v1 TokenRequest (serviceaccounts/NAME/token). */
export interface TokenRequest {
  apiVersion: "authentication.k8s.io/v1";
  kind: "TokenRequest";
  metadata?: ObjectMeta;
  spec: {
    audiences: string[];
    expirationSeconds?: number;
    boundObjectRef?: { kind: string; apiVersion: string; name: string; uid: string };
  };
  status?: { token: string; expirationTimestamp: string };
}
