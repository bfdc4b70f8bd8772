/**
 * `supplementalGroupsPolicy: Strict` needs a runtime that reports the feature
 * (the Node's `status.features.supplementalGroupsPolicy`); containerd 1.6
 * reports none, so such pods are refused as upstream's predicate admit handler
 * refuses them. `Merge` (the default) is what the runtime does anyway.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import type { PodAdmitHandler, PodAdmitResult } from "./types.ts";

/** Upstream's SupplementalGroupsPolicyNotSupported reason. */
export const SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED = "SupplementalGroupsPolicyNotSupported";

/** Refuses Strict on a runtime without support for it. */
export class SupplementalGroupsPolicyAdmitHandler implements PodAdmitHandler {
  readonly #strictSupported: boolean;

  /** @param strictSupported whether the runtime reports the SupplementalGroupsPolicy feature */
  constructor(strictSupported: boolean) {
    this.#strictSupported = strictSupported;
  }

  /**
   * @param pod the pod being admitted
   * @returns refused for Strict when the runtime cannot honour it
   */
  admit(pod: Pod): PodAdmitResult {
    const policy = pod.spec.securityContext?.supplementalGroupsPolicy;
    if (policy !== "Strict" || this.#strictSupported) return { admit: true };
    return {
      admit: false,
      reason: SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED,
      message: "SupplementalGroupsPolicy=Strict is not supported in this node",
    };
  }
}
