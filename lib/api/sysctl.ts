/**
 * Sysctl names as upstream's component-helpers/node/util/sysctl reads them:
 * the slashed spelling normalized to dots, and the kernel namespace a sysctl
 * lives in (what decides whether a pod sharing that namespace with the host
 * may set it).
 *
 * @module
 */

/** The namespace a sysctl lives in (upstream component-helpers' Namespace). */
export type SysctlNamespace = "IPC" | "Net" | "UTS" | "User" | "";

const NAME_NAMESPACE: Readonly<Record<string, SysctlNamespace>> = {
  "kernel.domainname": "UTS",
  "kernel.sem": "IPC",
  "kernel.shmall": "IPC",
  "kernel.shmmax": "IPC",
  "kernel.shmmni": "IPC",
  "kernel.shm_rmid_forced": "IPC",
  "kernel.shm": "IPC",
  "kernel.msgmax": "IPC",
  "kernel.msgmnb": "IPC",
  "kernel.msgmni": "IPC",
  "kernel.msg": "IPC",
};

const PREFIX_NAMESPACE: readonly [string, SysctlNamespace][] = [
  ["net", "Net"],
  ["fs.mqueue", "IPC"],
  ["user", "User"],
];

/**
 * `net/ipv4/conf/eth0.100/rp_filter` → `net.ipv4.conf.eth0/100.rp_filter`, as
 * upstream's NormalizeName: a slashed name has its separators swapped.
 * @param name a sysctl name
 * @returns the dotted form
 */
export function normalizeSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === ".") return name;
  return name.replace(/[./]/g, (c) => (c === "." ? "/" : "."));
}

/**
 * The namespace of a sysctl or of a prefix (without its `*`).
 * @param name a normalized sysctl name or prefix
 * @returns its namespace, "" when it is not known to be namespaced
 */
export function sysctlNamespace(name: string): SysctlNamespace {
  const exact = NAME_NAMESPACE[name];
  if (exact !== undefined) return exact;
  for (const [prefix, ns] of PREFIX_NAMESPACE) {
    if (name.startsWith(`${prefix}.`)) return ns;
  }
  return "";
}
