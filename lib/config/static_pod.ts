/**
 * Turns a decoded manifest pod into the static pod the node runs, the way
 * upstream's pkg/kubelet/config/common.go (applyDefaults) does:
 *
 * - UID: kept when the manifest sets one; otherwise upstream's: FNV-128a of
 *   go-spew's dump of the decoded, defaulted internal pod, then
 *   `host:<nodeName>` `file:<path>` (or `url:<url>`), computed by
 *   upstream_uid.ts, so the upstream kubelet and denolet name the same
 *   manifest's pod alike and adopt each other's containers. An unchanged file
 *   keeps its pod UID across re-reads and restarts; any edit, rename or node
 *   rename yields a new UID (the old pod is removed, the new one added). A pod
 *   holding a value that dump cannot be reproduced for (a creationTimestamp)
 *   gets the md5 of its canonical JSON with the same suffix instead: stable,
 *   but not upstream's.
 * - name suffixed `-<nodeName>` (lowercased), namespace `default` when absent,
 *   `spec.nodeName` set, phase Pending;
 * - annotations `kubernetes.io/config.hash` (the UID),
 *   `kubernetes.io/config.source` and `kubernetes.io/config.seen`;
 * - file pods tolerate every NoExecute taint (`operator: Exists`) so node
 *   problems never evict them.
 *
 * Then upstream's API defaults and validation apply.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { ConfigAnnotations, configSeenTimestamp } from "../api/pod.ts";
import type { Pod, Toleration } from "../api/types.ts";
import { applyPodDefaults } from "../api/defaults.ts";
import { validatePod } from "../api/validation.ts";
import { canonicalJson } from "../util/json.ts";
import { ManifestError, parseManifestDocuments } from "./manifest.ts";
import { upstreamStaticPodUID } from "./upstream_uid.ts";

/** Options for {@link makeStaticPod}. */
export interface StaticPodOptions {
  /** The node's name; lowercased for the pod name suffix. */
  nodeName: string;
  /** "file" or "http": recorded in `kubernetes.io/config.source`. */
  source: "file" | "http";
  /** The manifest file path, or the manifest URL. */
  origin: string;
  /** Epoch ms for `kubernetes.io/config.seen`. */
  now: number;
  /**
   * Called for a pod whose derived UID cannot be upstream's (see the module
   * doc), so the source can say that the upstream kubelet will not adopt it.
   */
  onOwnUID?: (pod: string, uid: string) => void;
}

/** A static pod that failed validation; `errors` are upstream-worded field errors. */
export class InvalidPodError extends Error {
  /** The field errors from {@link validatePod}. */
  readonly errors: string[];

  /**
   * @param pod the pod's name as written in the manifest
   * @param errors the validation errors
   */
  constructor(pod: string, errors: string[]) {
    super(`invalid pod ${JSON.stringify(pod)}: ${errors.join("; ")}`);
    this.name = "InvalidPodError";
    this.errors = errors;
  }
}

/**
 * The UID of a static pod that does not set one: upstream's (see
 * upstream_uid.ts), or, for a pod holding a value upstream's dump cannot be
 * reproduced for, the md5 of the canonical JSON with the same source suffix
 * (see the module doc).
 * @param pod the API-defaulted pod, before the static pod changes
 * @param namespace the namespace the manifest itself sets ("" when none)
 * @param opts node name, source kind and origin
 * @returns 32 hex digits, and whether it is upstream's
 */
export function staticPodUID(
  pod: Pod,
  namespace: string,
  opts: Pick<StaticPodOptions, "nodeName" | "source" | "origin">,
): { uid: string; upstream: boolean } {
  const source = { kind: opts.source, nodeName: opts.nodeName, origin: opts.origin };
  const upstream = upstreamStaticPodUID(pod, namespace, source);
  if (upstream !== undefined) return { uid: upstream, upstream: true };
  const hash = createHash("md5").update(canonicalJson(pod));
  if (opts.source === "file") hash.update(`host:${opts.nodeName}`).update(`file:${opts.origin}`);
  else hash.update(`url:${opts.origin}`);
  return { uid: hash.digest("hex"), upstream: false };
}

/**
 * The static pod name upstream generates: `<name>-<lowercased node name>`.
 * @param name the manifest's pod name
 * @param nodeName the node's name
 * @returns the pod name on this node
 */
export function staticPodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

const NO_EXECUTE_TOLERATION: Toleration = { operator: "Exists", effect: "NoExecute" };

function withNoExecuteToleration(tolerations: Toleration[] | undefined): Toleration[] {
  const rest = (tolerations ?? []).filter((t) =>
    !(t.operator === "Exists" && t.effect === "NoExecute" && !t.key)
  );
  return [...rest, NO_EXECUTE_TOLERATION];
}

/**
 * Builds the static pod the node runs from a decoded manifest pod, and
 * validates it.
 * @param manifest the pod as decoded from the manifest; not modified
 * @param opts node name, source, origin and time
 * @returns the defaulted, named, annotated static pod
 * @throws {InvalidPodError} when the pod has no name or fails validation
 */
export function makeStaticPod(manifest: Pod, opts: StaticPodOptions): Pod {
  const name = manifest.metadata?.name;
  // Upstream refuses a nameless static pod before anything else: the suffix would name it "-node".
  if (!name) throw new InvalidPodError("", ["metadata.name: Required value"]);
  // Validate the raw shape first so defaulting never walks a malformed spec
  // (e.g. `containers: "web"`); the result is validated again below.
  const shapeErrors = validatePod(manifest);
  if (shapeErrors.length > 0) throw new InvalidPodError(name, shapeErrors);
  const defaulted = applyPodDefaults(manifest);
  let uid = manifest.metadata.uid;
  if (!uid) {
    const derived = staticPodUID(defaulted, manifest.metadata.namespace ?? "", opts);
    uid = derived.uid;
    if (!derived.upstream) opts.onOwnUID?.(name, uid);
  }
  const pod: Pod = {
    ...defaulted,
    metadata: {
      ...defaulted.metadata,
      uid,
      name: staticPodName(name, opts.nodeName),
      annotations: {
        ...defaulted.metadata.annotations,
        [ConfigAnnotations.hash]: uid,
        [ConfigAnnotations.source]: opts.source,
        [ConfigAnnotations.seen]: configSeenTimestamp(opts.now),
      },
    },
    spec: {
      ...defaulted.spec,
      nodeName: opts.nodeName,
      ...(opts.source === "file"
        ? { tolerations: withNoExecuteToleration(defaulted.spec.tolerations) }
        : {}),
    },
    status: { phase: "Pending" },
  };
  const errors = validatePod(pod);
  if (errors.length > 0) throw new InvalidPodError(name, errors);
  return pod;
}

/**
 * Decodes a manifest and turns every pod in it into a static pod; the whole
 * manifest is rejected if any document is bad, so a half-applied file never runs.
 * @param text the manifest file's text or the URL's body
 * @param opts as for {@link makeStaticPod}; lists are accepted for http
 * @returns the static pods
 * @throws {ManifestError} naming the file, the document and the reason (an
 *   {@link InvalidPodError} as `cause` when validation failed)
 */
export function staticPodsFromManifest(text: string, opts: StaticPodOptions): Pod[] {
  const docs = parseManifestDocuments(text, {
    file: opts.origin,
    allowList: opts.source === "http",
  });
  return docs.map(({ pod, document }) => {
    try {
      return makeStaticPod(pod, opts);
    } catch (err) {
      if (!(err instanceof InvalidPodError)) throw err;
      throw new ManifestError(opts.origin, document, err.message, { cause: err });
    }
  });
}
