/**
 * Registering the Node, as upstream's registerWithAPIServer: build the
 * initial Node (default labels, `--node-labels`, `--register-with-taints`,
 * full status), POST it; when it already exists, GET it and reconcile what
 * the kubelet owns on it (the default labels, the attach/detach annotation,
 * hugepage capacities) with one status patch; retry with backoff until it
 * works.
 *
 * @module
 */

import type { Node, NodeStatus, Taint } from "../api/cluster_types.ts";
import { isAlreadyExists, type KubeClient } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { nodePatch } from "./patch.ts";
import { restrictedNodeLabels, restrictedNodeLabelsMessage } from "../options/mod.ts";

export { restrictedNodeLabels };

/** Where Nodes live. */
export const NODES_PATH = "/api/v1/nodes";

/** The annotation that hands volume attach/detach to the controller manager. */
export const CONTROLLER_MANAGED_ATTACH_DETACH =
  "volumes.kubernetes.io/controller-managed-attach-detach";

/** The labels the kubelet owns and keeps in step on an existing Node (upstream's defaultLabels). */
export const DEFAULT_NODE_LABELS: readonly string[] = [
  "kubernetes.io/hostname",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/instance-type",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "node.kubernetes.io/windows-build",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
];

/** Thrown at start when `--node-labels` holds labels the node may not set. */
export class NodeLabelError extends Error {
  /** The offending label keys. */
  readonly labels: string[];
  /** @param labels the offending keys */
  constructor(labels: string[]) {
    super(restrictedNodeLabelsMessage(labels));
    this.name = "NodeLabelError";
    this.labels = labels;
  }
}

/** What the initial Node is made of. */
export interface InitialNodeOptions {
  nodeName: string;
  /** The kubernetes.io/hostname label: the hostname, or `--hostname-override`. */
  hostname: string;
  /** GOOS, "linux". */
  operatingSystem: string;
  /** GOARCH ("amd64", "arm64"). */
  architecture: string;
  /** `--node-labels`; they override the defaults, as upstream. */
  nodeLabels?: Readonly<Record<string, string>>;
  /** `--register-with-taints`. */
  registerWithTaints?: readonly Taint[];
  /** The status to register with. */
  status: NodeStatus;
}

/**
 * The Node denolet registers (upstream's initialNode).
 * @param opts name, labels, taints and status
 * @returns the Node
 * @throws {NodeLabelError} when `nodeLabels` holds labels the node may not set
 */
export function initialNode(opts: InitialNodeOptions): Node {
  const restricted = restrictedNodeLabels(opts.nodeLabels ?? {});
  if (restricted.length > 0) throw new NodeLabelError(restricted);
  const node: Node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: opts.nodeName,
      labels: {
        "kubernetes.io/hostname": opts.hostname,
        "kubernetes.io/os": opts.operatingSystem,
        "kubernetes.io/arch": opts.architecture,
        "beta.kubernetes.io/os": opts.operatingSystem,
        "beta.kubernetes.io/arch": opts.architecture,
        ...opts.nodeLabels,
      },
      annotations: { [CONTROLLER_MANAGED_ATTACH_DETACH]: "true" },
    },
    spec: {},
    status: structuredClone(opts.status),
  };
  if (opts.registerWithTaints && opts.registerWithTaints.length > 0) {
    node.spec!.taints = opts.registerWithTaints.map((t) => ({ ...t }));
  }
  return node;
}

/**
 * What registration changes on a Node that already exists: the default
 * labels the initial Node sets are set to its values, the
 * attach/detach annotation is set, and hugepage capacities follow the
 * machine. Everything else (other labels, taints, spec) is left as found.
 * @param initial the Node denolet would have created
 * @param existing the Node the apiserver holds
 * @returns the reconciled Node and whether it differs from `existing`
 */
export function reconcileExistingNode(
  initial: Node,
  existing: Node,
): { node: Node; changed: boolean } {
  const node = structuredClone(existing);
  let changed = false;
  const labels = { ...node.metadata.labels };
  for (const key of DEFAULT_NODE_LABELS) {
    // A default label the initial Node lacks (a zone set by a cloud
    // controller, say) is someone else's to manage.
    const want = initial.metadata.labels?.[key];
    if (want === undefined || labels[key] === want) continue;
    if (want !== "") labels[key] = want;
    else if (key in labels) delete labels[key];
    else continue;
    changed = true;
  }
  node.metadata.labels = labels;
  const wantAnno = initial.metadata.annotations?.[CONTROLLER_MANAGED_ATTACH_DETACH];
  if (
    wantAnno !== undefined &&
    node.metadata.annotations?.[CONTROLLER_MANAGED_ATTACH_DETACH] !== wantAnno
  ) {
    node.metadata.annotations = {
      ...node.metadata.annotations,
      [CONTROLLER_MANAGED_ATTACH_DETACH]: wantAnno,
    };
    changed = true;
  }
  const status: NodeStatus = { ...node.status };
  for (const field of ["capacity", "allocatable"] as const) {
    const have = { ...status[field] };
    const want = initial.status?.[field] ?? {};
    for (const k of Object.keys(have)) {
      if (k.startsWith("hugepages-") && !(k in want)) {
        delete have[k];
        changed = true;
      }
    }
    for (const [k, v] of Object.entries(want)) {
      if (k.startsWith("hugepages-") && String(have[k]) !== String(v)) {
        have[k] = v;
        changed = true;
      }
    }
    status[field] = have;
  }
  node.status = status;
  return { node, changed };
}

/** What registration returns. */
export interface RegisteredNode {
  /** The Node as the apiserver holds it. */
  node: Node;
  /** True when this agent created it, false when it adopted an existing one. */
  created: boolean;
}

/** Options for {@link registerNode}. */
export interface RegisterNodeOptions {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /** Builds the initial Node; called before every attempt so its status is fresh. */
  initialNode: () => Node | Promise<Node>;
  /** Stops the retries; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The first wait after a failure (upstream: 100ms, doubling). */
  initialBackoffMs?: number;
  /** The longest wait (upstream: 7s). */
  maxBackoffMs?: number;
}

/**
 * One attempt: create, or adopt and reconcile.
 * @param client the apiserver
 * @param node the initial Node
 * @param logger where to log
 * @returns the Node as the apiserver holds it, and whether this call created it
 * @throws {Error} naming the Node when the apiserver refuses or cannot be reached
 */
export async function tryRegisterNode(
  client: KubeClient,
  node: Node,
  logger: Logger,
): Promise<RegisteredNode> {
  const name = node.metadata.name!;
  try {
    return { node: await client.create<Node>(NODES_PATH, node), created: true };
  } catch (err) {
    if (!isAlreadyExists(err)) {
      throw new Error(`unable to register node "${name}" with API server`, { cause: err });
    }
  }
  const path = `${NODES_PATH}/${encodeURIComponent(name)}`;
  let existing: Node;
  try {
    existing = await client.get<Node>(path);
  } catch (err) {
    throw new Error(`unable to register node "${name}": get existing node`, { cause: err });
  }
  logger.info("Node was previously registered", { node: name });
  const { node: wanted, changed } = reconcileExistingNode(node, existing);
  const patch = changed ? nodePatch(existing, wanted) : undefined;
  if (!patch) return { node: existing, created: false };
  try {
    // Upstream patches labels through the status subresource too: it is the
    // one a node is always allowed to patch, and it keeps the spec untouched.
    const patched = await client.patch<Node>(`${path}/status`, patch, "strategic");
    return { node: patched, created: false };
  } catch (err) {
    throw new Error(`unable to reconcile existing node "${name}"`, { cause: err });
  }
}

/**
 * Registers the Node, retrying with backoff until it works.
 * @param opts client, clock, logger and how to build the Node
 * @returns the registered Node, and whether it was created or adopted
 * @throws the signal's reason when aborted
 * @throws {NodeLabelError} when the labels can never be accepted
 */
export function registerNode(opts: RegisterNodeOptions): Promise<RegisteredNode> {
  let name: string | undefined;
  return retryWithBackoff(
    opts,
    async () => {
      const node = await opts.initialNode();
      name = node.metadata.name;
      opts.logger.info("Attempting to register node", { node: name });
      const registered = await tryRegisterNode(opts.client, node, opts.logger);
      opts.logger.info("Successfully registered node", { node: name });
      return registered;
    },
    "Unable to register node with API server, will retry",
    () => name,
  );
}

/**
 * `registerNode: false`: the Node is not this agent's to create (an operator or a
 * controller makes it). Waits, with registration's backoff, until it exists; as upstream,
 * the agent then only updates its status, and changes nothing of its labels or spec.
 * @param opts client, clock, logger; `initialNode` only gives the name
 * @param name the Node's name
 * @returns the Node as the apiserver holds it (`created: false`)
 * @throws the signal's reason when aborted
 */
export function awaitExistingNode(
  opts: Omit<RegisterNodeOptions, "initialNode">,
  name: string,
): Promise<RegisteredNode> {
  const path = `${NODES_PATH}/${encodeURIComponent(name)}`;
  return retryWithBackoff(
    opts,
    async () => {
      try {
        return { node: await opts.client.get<Node>(path), created: false };
      } catch (err) {
        throw new Error(`error getting node "${name}" (registerNode is false)`, { cause: err });
      }
    },
    "Unable to update node status, will retry",
    () => name,
  );
}

async function retryWithBackoff(
  opts: Omit<RegisterNodeOptions, "initialNode">,
  attempt: () => Promise<RegisteredNode>,
  failure: string,
  nodeName: () => string | undefined,
): Promise<RegisteredNode> {
  let wait = opts.initialBackoffMs ?? 100;
  const max = opts.maxBackoffMs ?? 7000;
  for (;;) {
    opts.signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (err) {
      // A label the node may not set never gets better by retrying.
      if (err instanceof NodeLabelError) throw err;
      opts.logger.error(failure, err, { node: nodeName(), retryIn: `${wait}ms` });
    }
    await opts.clock.sleep(wait, opts.signal);
    wait = Math.min(wait * 2, max);
  }
}
