/**
 * The tcpSocket probe, as upstream's pkg/probe/tcp: success when a TCP
 * connection opens within the timeout (it is closed at once), failure
 * otherwise, with the dial error as output.
 *
 * @module
 */

import type { Container, TCPSocketAction } from "../../api/types.ts";
import type { ProbeOutcome } from "../types.ts";
import { resolveContainerPort } from "../../probe/mod.ts";
import { joinHostPort } from "../../util/net.ts";
import { startDeadline } from "../../util/deadline.ts";

/**
 * Runs a tcpSocket probe once.
 * @param action the probe's tcpSocket
 * @param container the container (named ports)
 * @param podIP the default host
 * @param opts timeout and cancellation
 * @returns the outcome; never throws
 */
export async function tcpSocketProbe(
  action: TCPSocketAction,
  container: Container,
  podIP: string,
  opts: { timeoutSeconds: number; signal: AbortSignal },
): Promise<ProbeOutcome> {
  let port: number;
  try {
    port = resolveContainerPort(action.port, container);
  } catch (err) {
    return { result: "unknown", output: err instanceof Error ? err.message : String(err) };
  }
  const host = action.host || podIP;
  const addr = joinHostPort(host, port);
  const deadline = startDeadline(opts.signal, opts.timeoutSeconds * 1000);
  try {
    const conn = await Deno.connect({ hostname: host, port, signal: deadline.signal });
    conn.close();
    return { result: "success", output: "" };
  } catch (err) {
    if (opts.signal.aborted) return { result: "unknown", output: "probe cancelled" };
    const why = deadline.expired ? "i/o timeout" : err instanceof Error ? err.message : String(err);
    return { result: "failure", output: `dial tcp ${addr}: ${why}` };
  } finally {
    deadline.clear();
  }
}
