/**
 * The pod's managed /etc/hosts (`<podDir>/etc-hosts`), as upstream's
 * ensureHostsFile (kubelet_pods.go): for a pod on its own network, the
 * localhost lines and the pod's IPs with its hostname (and FQDN when the pod
 * has a subdomain); for a host-network pod, the node's /etc/hosts under a
 * header of its own. Either way the pod's hostAliases follow in a section of
 * their own. The conformance tests tell a managed file by its first line,
 * `# Kubernetes-managed hosts file.`, which the host-network header does not
 * start with.
 *
 * @module
 */

import type { HostAlias } from "../api/types.ts";
import { etcHostsPath, podDir } from "./pod_dirs.ts";

const MANAGED_HEADER = "# Kubernetes-managed hosts file.\n";
const MANAGED_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n";

/**
 * The hostAliases section: a blank line, a comment, then one line per alias,
 * its IP and hostnames tab-separated.
 * @param aliases `spec.hostAliases`
 * @returns the text, "" without aliases
 */
function hostAliasesSection(aliases: readonly HostAlias[] = []): string {
  if (aliases.length === 0) return "";
  const lines = aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join("\t")}\n`);
  return `\n# Entries added by HostAliases.\n${lines.join("")}`;
}

/**
 * The hosts file of a pod with its own network, as upstream's
 * managedHostsFileContent.
 * @param podIPs the pod's IPs
 * @param hostname the pod's hostname
 * @param domain the pod's domain ("" for none)
 * @param aliases `spec.hostAliases`
 * @returns the file text
 */
export function managedHostsContent(
  podIPs: readonly string[],
  hostname: string,
  domain = "",
  aliases: readonly HostAlias[] = [],
): string {
  let text = MANAGED_HEADER +
    "127.0.0.1\tlocalhost\n" +
    "::1\tlocalhost ip6-localhost ip6-loopback\n" +
    "fe00::0\tip6-localnet\n" +
    "fe00::0\tip6-mcastprefix\n" +
    "fe00::1\tip6-allnodes\n" +
    "fe00::2\tip6-allrouters\n";
  for (const ip of podIPs) {
    text += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  }
  return text + hostAliasesSection(aliases);
}

/**
 * The hosts file of a host-network pod, as upstream's nodeHostsFileContent:
 * the node's own file, verbatim, between the header and the aliases.
 * @param nodeHosts the node's /etc/hosts text
 * @param aliases `spec.hostAliases`
 * @returns the file text
 */
export function nodeHostsContent(nodeHosts: string, aliases: readonly HostAlias[] = []): string {
  return MANAGED_HEADER_HOST_NETWORK + nodeHosts + hostAliasesSection(aliases);
}

/**
 * Writes `<podDir>/etc-hosts` (mode 0644), replacing what was there.
 * @param rootDir the kubelet root dir
 * @param uid the pod UID
 * @param content from {@link managedHostsContent} or {@link nodeHostsContent}
 * @returns the file's path
 */
export async function writeEtcHosts(
  rootDir: string,
  uid: string,
  content: string,
): Promise<string> {
  const dir = podDir(rootDir, uid);
  await Deno.mkdir(dir, { recursive: true, mode: 0o750 });
  const path = etcHostsPath(rootDir, uid);
  await Deno.writeTextFile(path, content, { mode: 0o644 });
  await Deno.chmod(path, 0o644);
  return path;
}
