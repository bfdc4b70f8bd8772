/**
 * The pod's `imagePullSecrets` as upstream's getPullSecretsForPod reads them before
 * each sync: every named Secret that can be read, in spec order; the names that
 * cannot are kept, so a sync whose pull failed can say which were missing
 * (FailedToRetrieveImagePullSecret).
 *
 * @module
 */

import type { Secret } from "../api/cluster_types.ts";
import type { Pod } from "../api/types.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";
import { podReference } from "../events/recorder.ts";
import type { EventRecorder } from "../events/types.ts";
import { NoApiServerError, type PodObjects } from "../kubeobjects/mod.ts";
import type { SyncStep } from "./_context.ts";
import { errorText, type Logger } from "../util/log.ts";

/** What {@link getPullSecrets} found. */
export interface PodPullSecrets {
  /** The Secrets read, in spec order. */
  secrets: Secret[];
  /** Names that could not be read (missing, forbidden, or no apiserver). */
  missing: string[];
}

/**
 * Reads the pod's pull secrets; a Secret that cannot be read is logged and named in
 * `missing`, never fatal: the pull may still work without it.
 * @param objects the API objects source; undefined in standalone mode
 * @param pod the pod
 * @param logger for the "Unable to retrieve pull secret" line
 * @param signal cancels the reads
 * @returns the secrets and the names not found
 */
export async function getPullSecrets(
  objects: PodObjects | undefined,
  pod: Pod,
  logger: Logger,
  signal?: AbortSignal,
): Promise<PodPullSecrets> {
  const out: PodPullSecrets = { secrets: [], missing: [] };
  const namespace = pod.metadata.namespace ?? "";
  for (const ref of pod.spec.imagePullSecrets ?? []) {
    // The API allows entries without a name; upstream skips them without a word.
    if (!ref.name) continue;
    try {
      if (!objects) throw new NoApiServerError(`secret "${ref.name}"`);
      const opts = {
        ...(pod.metadata.uid ? { podUID: pod.metadata.uid } : {}),
        ...(signal ? { signal } : {}),
      };
      out.secrets.push(await objects.getSecret(namespace, ref.name, opts));
    } catch (err) {
      logger.info("Unable to retrieve pull secret, the image pull may not succeed.", {
        secret: `${namespace}/${ref.name}`,
        err: errorText(err),
      });
      out.missing.push(ref.name);
    }
  }
  return out;
}

/**
 * Upstream's FailedToRetrieveImagePullSecret: when a sync tried a pull that failed and
 * some pull secrets were missing, one Warning event about the pod names them.
 * @param events the recorder
 * @param pod the pod
 * @param missing the names {@link getPullSecrets} could not read
 * @param steps the sync's steps
 */
export function recordMissingPullSecrets(
  events: EventRecorder,
  pod: Pod,
  missing: readonly string[],
  steps: readonly SyncStep[],
): void {
  if (missing.length === 0) return;
  // A sync held back by pull backoff did not pull, so it says nothing again.
  const pullFailed = steps.some((s) =>
    s.action === "StartContainer" && s.error?.reason === "ErrImagePull"
  );
  if (!pullFailed) return;
  events.event(
    podReference(pod),
    "Warning",
    EventReason.failedToRetrieveImagePullSecret,
    EventMessage.missingPullSecrets(missing),
  );
}
