/**
 * The node's IP, as upstream picks it when `--node-ip` is not given: the
 * first global unicast address of an interface that is up (upstream prefers
 * the default route's interface; without route access we take the first
 * non-loopback IPv4, then IPv6).
 *
 * @module
 */

/**
 * Chooses the node IP.
 * @param flag the `--node-ip` value ("" when unset)
 * @param interfaces the host's interfaces (Deno.networkInterfaces())
 * @returns the IP, or "" when the host has none but loopback
 */
export function chooseNodeIP(
  flag: string,
  interfaces: readonly Deno.NetworkInterfaceInfo[],
): string {
  if (flag) return flag;
  const global = interfaces.filter((i) =>
    !i.address.startsWith("127.") && i.address !== "::1" && !i.address.startsWith("fe80:")
  );
  return (global.find((i) => i.family === "IPv4") ?? global[0])?.address ?? "";
}
