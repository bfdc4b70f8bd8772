/**
 * A test host address that the apiserver may proxy to: the apiserver refuses
 * to proxy `nodes/<node>/proxy/...` to a loopback or link-local node address
 * ("address not allowed"), so a test that goes through that proxy needs a node
 * address of another kind. This makes one of the test's own: a network
 * namespace with a veth pair whose host end gets `10.254.<n>.1/30` (the
 * namespace end `.2`). The agent, which runs in the host namespace, serves on
 * the host end's address; packets to it never leave the machine. `stop()`
 * deletes the namespace, which deletes the pair.
 *
 * @module
 */

import { exec } from "./_exec.ts";

/** A test host made by {@link startTestHost}. */
export interface TestHost {
  /** The address to use as the node's IP (the host end of the pair). */
  address: string;
  /** Deletes the namespace and with it the veth pair. */
  stop(): Promise<void>;
}

/**
 * Makes a network namespace and a veth pair for one test.
 * @returns the node address and how to remove it
 * @throws Error naming the `ip` command that failed (root and iproute2 are needed)
 */
export async function startTestHost(): Promise<TestHost> {
  const id = crypto.randomUUID().replaceAll("-", "").slice(0, 6);
  const ns = `denolet-th-${id}`;
  const host = `dlth${id}h`;
  const peer = `dlth${id}n`;
  // A /30 in 10.254.0.0/16 picked from the id, so two tests at once rarely collide.
  const n = parseInt(id.slice(0, 2), 16) % 250 + 1;
  const address = `10.254.${n}.1`;
  await exec("ip", ["netns", "add", ns]);
  try {
    await exec("ip", ["link", "add", host, "type", "veth", "peer", "name", peer]);
    await exec("ip", ["link", "set", peer, "netns", ns]);
    await exec("ip", ["addr", "add", `${address}/30`, "dev", host]);
    await exec("ip", ["link", "set", host, "up"]);
    await exec("ip", ["-n", ns, "addr", "add", `10.254.${n}.2/30`, "dev", peer]);
    await exec("ip", ["-n", ns, "link", "set", peer, "up"]);
  } catch (err) {
    await exec("ip", ["netns", "delete", ns]).catch(() => {});
    await exec("ip", ["link", "delete", host]).catch(() => {});
    throw err;
  }
  return {
    address,
    async stop() {
      await exec("ip", ["netns", "delete", ns]).catch(() => {});
      // Deleting the namespace deletes the peer and so the pair; this is for a pair left behind.
      await exec("ip", ["link", "delete", host]).catch(() => {});
    },
  };
}
