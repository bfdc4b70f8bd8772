/**
 * Which sysctls a pod may set, as upstream's pkg/kubelet/sysctl: the safe set
 * (each entry only from the kernel version that namespaces it) plus the node's
 * `allowedUnsafeSysctls`; anything else is refused at admission with
 * SysctlForbidden. A namespaced sysctl is also refused when the pod shares that
 * namespace with the host (hostNetwork for net.*, hostIPC for IPC sysctls).
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import type { PodAdmitHandler, PodAdmitResult } from "./types.ts";
import { normalizeSysctlName, type SysctlNamespace, sysctlNamespace } from "../api/sysctl.ts";

/** Upstream's admission reason. */
export const SYSCTL_FORBIDDEN_REASON = "SysctlForbidden";

/** Upstream's safe sysctls, with the kernel that namespaces those that need one. */
const SAFE_SYSCTLS: readonly { name: string; kernel?: [number, number] }[] = [
  { name: "kernel.shm_rmid_forced" },
  { name: "net.ipv4.ip_local_port_range" },
  { name: "net.ipv4.tcp_syncookies" },
  { name: "net.ipv4.ping_group_range" },
  { name: "net.ipv4.ip_unprivileged_port_start" },
  { name: "net.ipv4.ip_local_reserved_ports", kernel: [3, 16] },
  { name: "net.ipv4.tcp_keepalive_time", kernel: [4, 5] },
  { name: "net.ipv4.tcp_fin_timeout", kernel: [4, 6] },
  { name: "net.ipv4.tcp_keepalive_intvl", kernel: [4, 5] },
  { name: "net.ipv4.tcp_keepalive_probes", kernel: [4, 5] },
  { name: "net.ipv4.tcp_rmem", kernel: [4, 15] },
  { name: "net.ipv4.tcp_wmem", kernel: [4, 15] },
  { name: "net.ipv4.tcp_slow_start_after_idle", kernel: [4, 15] },
  { name: "net.ipv4.tcp_notsent_lowat", kernel: [4, 6] },
];

/** Upstream's sysctl pattern: dotted or slashed names, optionally ending in `*`. */
const SYSCTL_PATTERN_TEXT =
  "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]";
const SYSCTL_PATTERN = new RegExp(`^${SYSCTL_PATTERN_TEXT}$`);
const SYSCTL_MAX_LENGTH = 253;

/**
 * Upstream's safe sysctls for a kernel (getSafeSysctlAllowlist).
 * @param kernelRelease e.g. `6.1.0-18-amd64`; unparsable keeps only the unconditional ones
 * @returns the names
 */
export function safeSysctls(kernelRelease: string): string[] {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  const have = m ? [Number(m[1]), Number(m[2])] as const : undefined;
  return SAFE_SYSCTLS.filter((s) => {
    if (!s.kernel) return true;
    if (!have) return false;
    return have[0] > s.kernel[0] || (have[0] === s.kernel[0] && have[1] >= s.kernel[1]);
  }).map((s) => s.name);
}

/** Admits a pod only when every sysctl it sets is allowed (upstream's patternAllowlist). */
export class SysctlAllowlist implements PodAdmitHandler {
  readonly #names = new Map<string, SysctlNamespace>();
  readonly #prefixes = new Map<string, SysctlNamespace>();

  /**
   * @param patterns the safe set plus `allowedUnsafeSysctls` (names or `prefix*`)
   * @throws {Error} for a malformed pattern or one not known to be namespaced,
   *   with upstream's wording (the kubelet then refuses to start)
   */
  constructor(patterns: readonly string[]) {
    for (const pattern of patterns) {
      if (pattern.length > SYSCTL_MAX_LENGTH || !SYSCTL_PATTERN.test(pattern)) {
        throw new Error(
          `sysctl "${pattern}" must have at most ${SYSCTL_MAX_LENGTH} characters and match regex ${SYSCTL_PATTERN_TEXT}`,
        );
      }
      let name = normalizeSysctlName(pattern);
      const star = name.indexOf("*");
      const prefixed = star !== -1;
      if (prefixed) name = name.slice(0, star);
      const ns = sysctlNamespace(name);
      if (ns === "") throw new Error(`the sysctls "${name}" are not known to be namespaced`);
      (prefixed ? this.#prefixes : this.#names).set(name, ns);
    }
  }

  /**
   * Why a sysctl is refused for a pod, or undefined when it is allowed.
   * @param sysctl the name as the pod spells it
   * @param host which namespaces the pod shares with the host
   * @returns upstream's error text, or undefined
   */
  check(
    sysctl: string,
    host: { network: boolean; ipc: boolean; users: boolean },
  ): string | undefined {
    const name = normalizeSysctlName(sysctl);
    let ns = this.#names.get(name);
    if (ns === undefined) {
      for (const [prefix, pns] of this.#prefixes) {
        if (name.startsWith(prefix)) {
          ns = pns;
          break;
        }
      }
    }
    if (ns === undefined) return `"${name}" not allowlisted`;
    const shared = (ns === "IPC" && host.ipc) || (ns === "Net" && host.network) ||
      (ns === "User" && host.users);
    return shared ? `"${name}" not allowed with host ${ns} enabled` : undefined;
  }

  /**
   * @param pod the pod being admitted
   * @returns refused with SysctlForbidden at the first sysctl not allowed
   */
  admit(pod: Pod): PodAdmitResult {
    const host = {
      network: pod.spec.hostNetwork === true,
      ipc: pod.spec.hostIPC === true,
      users: pod.spec.hostUsers !== false,
    };
    for (const s of pod.spec.securityContext?.sysctls ?? []) {
      const why = this.check(s.name, host);
      if (why !== undefined) {
        return {
          admit: false,
          reason: SYSCTL_FORBIDDEN_REASON,
          message: `forbidden sysctl: ${why}`,
        };
      }
    }
    return { admit: true };
  }
}
