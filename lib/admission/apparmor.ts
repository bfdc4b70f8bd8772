/**
 * Refuses pods that ask for AppArmor on a node without it, as upstream's
 * AppArmor admit handler (lifecycle/handlers.go, security/apparmor): reason
 * "AppArmor", message "Cannot enforce AppArmor: ...".
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import { appArmorProfileOf, requiresAppArmor } from "../kuberuntime/mod.ts";
import type { PodAdmitHandler, PodAdmitResult } from "./types.ts";

/** Upstream's AppArmorNotAdmittedReason. */
export const APPARMOR_NOT_ADMITTED_REASON = "AppArmor";

/**
 * Whether the host enforces AppArmor, as upstream reads it: the securityfs
 * directory exists and the module parameter says Y.
 * @returns true when AppArmor is enabled
 */
export function hostAppArmorEnabled(): boolean {
  try {
    Deno.statSync("/sys/kernel/security/apparmor");
    return Deno.readTextFileSync("/sys/module/apparmor/parameters/enabled").startsWith("Y");
  } catch {
    return false;
  }
}

/** Admits a pod needing AppArmor only on a host that has it. */
export class AppArmorAdmitHandler implements PodAdmitHandler {
  readonly #hostError: string | undefined;

  /** @param enabled whether the host enforces AppArmor (see {@link hostAppArmorEnabled}) */
  constructor(enabled: boolean) {
    this.#hostError = enabled ? undefined : "AppArmor is not enabled on the host";
  }

  /**
   * @param pod the pod being admitted
   * @returns refused with reason AppArmor when the host cannot enforce a profile it names
   */
  admit(pod: Pod): PodAdmitResult {
    // Upstream rechecks only pods not yet running.
    if (pod.status?.phase !== undefined && pod.status.phase !== "Pending") return { admit: true };
    if (!requiresAppArmor(pod)) return { admit: true };
    let why = this.#hostError;
    if (why === undefined) {
      const spec = pod.spec;
      for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
        const p = appArmorProfileOf(pod, c);
        if (p?.type === "Localhost" && (p.localhostProfile ?? "").trim() === "") {
          why = `invalid empty AppArmor profile name: "${p.localhostProfile ?? ""}"`;
          break;
        }
      }
    }
    return why === undefined ? { admit: true } : {
      admit: false,
      reason: APPARMOR_NOT_ADMITTED_REASON,
      message: `Cannot enforce AppArmor: ${why}`,
    };
  }
}
